//! `CRON_NOTIFY` end to end on the real daemon, with the real MTA (exim4, read back from
//! /var/mail/USER): `failure` mails the run that failed and not the one that succeeded;
//! `change` mails the first failure and the first success after failures, once each; the
//! daemon's `--notify` is the default a file's `CRON_NOTIFY` overrides. Time is libfaketime's.

use std::time::Duration;

use crate::support::daemon::{Crond, START, Tree};
use crate::support::mail::{TestUser, mail_user};

fn install(tree: &Tree, user: &TestUser, text: &str) {
    tree.user_crontab(&user.name, text, 0o600, &user.name);
}

/// Waits until the log has `count` lines containing `needle`.
fn wait_for_count(crond: &Crond, needle: &str, count: usize, secs: u64) {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    while crond.log_text().matches(needle).count() < count {
        assert!(
            std::time::Instant::now() < deadline,
            "fewer than {count} lines with {needle:?} within {secs} s; the log:\n{}",
            crond.log_text()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn root_cron_notify_failure_mails_the_failed_run_and_not_the_successful_one() {
    let user = mail_user();
    let tree = Tree::new();
    install(
        &tree,
        &user,
        "CRON_NOTIFY=failure\n0 10 * * * echo fine\n0 10 * * * echo broken; exit 4\n",
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    wait_for_count(&crond, &format!("({}) END (", user.name), 2, 20);
    let mails = user.wait_for_mail(1);
    user.assert_no_more_than(1);
    assert_eq!(mails.len(), 1);
    assert_eq!(mails[0].body, b"broken\n");
    assert!(
        mails[0].header_str("Subject").ends_with("(exit status 4)"),
        "{:?}",
        mails[0].header_str("Subject")
    );
}

#[test]
fn root_the_daemons_notify_default_holds_where_the_file_sets_no_cron_notify() {
    let user = mail_user();
    let tree = Tree::new();
    install(
        &tree,
        &user,
        "0 10 * * * echo quiet\nCRON_NOTIFY=always\n0 10 * * * echo loud\n",
    );
    let crond = Crond::start(&tree, 1, &["-L", "3", "--notify", "never"]);
    wait_for_count(&crond, &format!("({}) END (", user.name), 2, 20);
    let mails = user.wait_for_mail(1);
    user.assert_no_more_than(1);
    assert_eq!(mails[0].body, b"loud\n");
}

#[test]
fn root_cron_notify_change_mails_the_first_failure_and_the_recovery_once_each() {
    let user = mail_user();
    let tree = Tree::new();
    let count = tree.path().join("out").join("count");
    std::fs::write(&count, "0").unwrap();
    crate::support::daemon::chown(&count, &user.name);
    // Runs 1 succeeds, 2 and 3 fail, 4 to 6 succeed: mail for 2 and for 4 only.
    let script = format!(
        "n=$(cat {c}); n=$((n+1)); echo $n > {c}; \
         case $n in 2|3) echo failed $n; exit 1;; *) echo ok $n;; esac",
        c = count.display()
    );
    install(
        &tree,
        &user,
        &format!("CRON_NOTIFY=change\n* * * * * {script}\n"),
    );
    let crond = Crond::start_fast(&tree, 1, START, 30, &["-L", "3"]);
    wait_for_count(&crond, &format!("({}) END (", user.name), 6, 60);
    let mails = user.wait_for_mail(2);
    user.assert_no_more_than(2);
    let bodies: Vec<&[u8]> = mails.iter().map(|m| m.body.as_slice()).collect();
    assert_eq!(bodies, [&b"failed 2\n"[..], &b"ok 4\n"[..]]);
}

/// A loopback HTTP server that answers 200 to everything: the request lines it read.
pub(crate) fn ping_server() -> (u16, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            kept.lock().unwrap().push(line.trim_end().to_string());
            let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
        }
    });
    (port, seen)
}

#[test]
fn root_cron_ping_pings_the_start_and_the_exit_status_as_the_job_and_failure_skips_a_success() {
    let user = mail_user();
    let tree = Tree::new();
    let (port, seen) = ping_server();
    install(
        &tree,
        &user,
        &format!(
            "MAILTO=\"\"\nCRON_PING=http://127.0.0.1:{port}/a\n0 10 * * * echo broke; exit 3\n\
             CRON_NOTIFY=failure\nCRON_PING=http://127.0.0.1:{port}/b\n0 10 * * * true\n"
        ),
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    wait_for_count(&crond, &format!("({}) END (", user.name), 2, 20);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    let mut seen: Vec<String> = seen.lock().unwrap().clone();
    seen.sort();
    assert_eq!(seen.len(), 2, "{seen:?}; the log:\n{}", crond.log_text());
    assert!(seen[0].starts_with("GET /a/start?rid="), "{seen:?}");
    assert!(seen[1].starts_with("POST /a/3?rid="), "{seen:?}");
    let rid = |line: &str| line.split("rid=").nth(1).unwrap().to_string();
    assert_eq!(rid(&seen[0]), rid(&seen[1]), "one run, one rid");
}

#[test]
fn root_a_slot_skipped_for_an_overlap_pings_fail_with_its_reason_as_the_user_and_never_sends_none()
{
    let user = mail_user();
    let tree = Tree::new();
    let (port, seen) = ping_server();
    // Each run lasts 8 s (80 fake): 10:00's is running at 10:01, whose slot is skipped.
    install(
        &tree,
        &user,
        &format!(
            "MAILTO=\"\"\nCRON_OVERLAP=skip\nCRON_NOTIFY=failure\n\
             CRON_PING=http://127.0.0.1:{port}/o\n* * * * * sleep 8\n\
             CRON_NOTIFY=never\nCRON_PING=http://127.0.0.1:{port}/n\n* * * * * sleep 8 \n"
        ),
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    wait_for_count(&crond, &format!("({}) SKIP (sleep 8", user.name), 2, 20);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    let seen: Vec<String> = seen.lock().unwrap().clone();
    // The successful 10:00 runs send nothing under either policy; the skipped 10:01 slot
    // sends its failure under `failure`, with the reason, and nothing under `never`.
    let [fail] = &seen[..] else {
        panic!("{seen:?}; the log:\n{}", crond.log_text())
    };
    assert!(fail.starts_with("POST /o/fail?rid="), "{fail}");
    let log = crond.log_text();
    assert!(!log.contains("NOTIFY"), "{log}");
}

#[test]
fn root_under_cron_notify_failure_a_slot_skipped_for_an_overlap_is_mailed_as_the_user_with_why() {
    let user = mail_user();
    let tree = Tree::new();
    // Each run lasts 8 s (80 fake) and prints nothing: 10:00's is running at 10:01, whose slot
    // is skipped. Under `failure` that slot is mailed; under `always` a mail carries output,
    // as in every cron, and a slot that did not run has none.
    install(
        &tree,
        &user,
        "CRON_OVERLAP=skip\nCRON_NOTIFY=failure\n* * * * * sleep 8\n\
         CRON_NOTIFY=always\n* * * * * sleep 8 \n",
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    wait_for_count(&crond, &format!("({}) SKIP (sleep 8", user.name), 2, 20);
    let mails = user.wait_for_mail(1);
    std::thread::sleep(Duration::from_secs(2));
    user.assert_no_more_than(1);
    let mail = &mails[0];
    let subject = mail.header_str("Subject").replace("\n ", " ");
    assert!(
        subject.starts_with(&format!("Cron <{}@", user.name))
            && subject.ends_with("> sleep 8 (did not run: overlap)"),
        "{subject}"
    );
    let body = String::from_utf8_lossy(&mail.body);
    assert!(
        body.starts_with("crond did not start its run of "),
        "{body}"
    );
    assert!(body.contains(":01 "), "the 10:01 slot: {body}");
    assert!(body.contains("still running"), "the reason's words: {body}");
    let socket = crate::control::socket_of(&tree);
    // Both entries' 10:01 slots were skipped; the mail names the first's (line 3).
    let rows = crate::history::history(None, &socket, &["--failed"], 2);
    let row = rows
        .iter()
        .find(|r| r["place"].as_str().unwrap().ends_with(":3"))
        .unwrap_or_else(|| panic!("{rows:#?}"));
    let (entry, place) = (
        row["entry"].as_str().unwrap(),
        row["place"].as_str().unwrap(),
    );
    assert!(
        body.contains(&format!(
            "Entry {entry} ({place}). Its runs: cronctl history {entry}\n"
        )),
        "{body}"
    );
    // Sent by the user, not root: exim makes the one who submitted it the envelope sender.
    let sender = mail.header_str("Return-path");
    assert!(
        sender.starts_with(&format!("<{}@", user.name)),
        "Return-path: {sender}"
    );
    assert!(!crond.log_text().contains("MAIL ("), "{}", crond.log_text());
}

#[test]
fn root_a_slot_tried_again_pings_one_start_and_its_last_end_under_one_rid() {
    let user = mail_user();
    let tree = Tree::new();
    let (port, seen) = ping_server();
    let dir = tree.path().join("out").join("rid");
    std::fs::create_dir(&dir).unwrap();
    crate::support::daemon::chown(&dir, &user.name);
    // Fails the first time (leaving a marker), succeeds the second.
    let script = format!(
        "if [ -e {m} ]; then true; else touch {m}; exit 1; fi",
        m = dir.join("marker").display()
    );
    install(
        &tree,
        &user,
        &format!(
            "MAILTO=\"\"\nCRON_RETRY=2\nCRON_RETRY_DELAY=1\n\
             CRON_PING=http://127.0.0.1:{port}/r\n0 10 * * * {script}\n"
        ),
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    wait_for_count(&crond, &format!("({}) END (", user.name), 2, 30);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().len() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(2));
    let mut seen: Vec<String> = seen.lock().unwrap().clone();
    seen.sort();
    // The first attempt's start; its failure, to be retried, says nothing; the second
    // attempt's success ends the same run.
    assert_eq!(seen.len(), 2, "{seen:?}; the log:\n{}", crond.log_text());
    assert!(seen[0].starts_with("GET /r/start?rid="), "{seen:?}");
    assert!(seen[1].contains(" /r?rid="), "{seen:?}");
    let rid = |line: &str| line.split("rid=").nth(1).unwrap().to_string();
    assert_eq!(rid(&seen[0]), rid(&seen[1]), "one slot, one rid");
}

#[test]
fn root_cron_retry_runs_a_failed_job_again_as_the_same_slot_and_mails_only_its_last_attempt() {
    let user = mail_user();
    let tree = Tree::new();
    // The job fails the first time (it leaves a marker) and succeeds the second.
    let dir = tree.path().join("out").join("retry");
    std::fs::create_dir(&dir).unwrap();
    crate::support::daemon::chown(&dir, &user.name);
    let marker = dir.join("marker");
    let script = format!(
        "if [ -e {m} ]; then echo second; else touch {m}; echo first; exit 1; fi",
        m = marker.display()
    );
    install(
        &tree,
        &user,
        &format!("CRON_RETRY=2\nCRON_RETRY_DELAY=1\n0 10 * * * {script}\n"),
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    wait_for_count(&crond, &format!("({}) END (", user.name), 2, 30);
    let log = crond.log_text();
    assert_eq!(log.matches(") RETRY (").count(), 1, "{log}");
    assert!(log.contains("attempt 2/3 at 10:00:0"), "{log}");
    // One mail: the second attempt's, which succeeded; the failed first one's output is in
    // the history only.
    let mails = user.wait_for_mail(1);
    user.assert_no_more_than(1);
    assert_eq!(mails[0].body, b"second\n");
    let socket = crate::control::socket_of(&tree);
    let rows = crate::history::history(None, &socket, &[], 2);
    let field = |row: &serde_json::Value, name: &str| row[name].clone();
    // Newest first: attempt 2 (ok), then attempt 1 (exit 1), one slot, 10:00.
    let attempts: Vec<(i64, i64, String)> = rows
        .iter()
        .map(|r| {
            (
                field(r, "attempt").as_i64().unwrap(),
                field(r, "attempts").as_i64().unwrap(),
                field(r, "status").as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(attempts, [(2, 3, "ok".into()), (1, 3, "exit 1".into())]);
    assert_eq!(field(&rows[0], "slot"), field(&rows[1], "slot"));
    assert_eq!(field(&rows[0], "entry"), field(&rows[1], "entry"));
    assert!(
        field(&rows[0], "slot")
            .as_str()
            .unwrap()
            .contains("T10:00:00"),
        "{rows:#?}"
    );
    for row in &rows {
        assert_eq!(field(row, "trigger"), "schedule");
    }
    let table = crate::control::stdout(&crate::control::cronctl(None, &socket, &["history"]));
    assert!(table.contains("ok (attempt 2/3)"), "{table}");
    assert!(table.contains("exit 1 (attempt 1/3)"), "{table}");
}
