//! The run history end to end: the real daemon, its real writer (`cronctl history-writer`) and
//! SQLite file, real users, the real `cronctl`; each outcome read back through the control
//! socket as a user reads it, and from the file with the sqlite3 command.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::control::{cronctl, scrubbed_table, socket_of, stdout};
use crate::support::daemon::*;
use crate::support::golden::{Scrub, assert_golden};
use crate::support::user::TestUser;

/// The store of a test daemon: `history.db` in its state directory.
fn store(tree: &Tree) -> PathBuf {
    tree.state_dir().join("history.db")
}

/// `cronctl history --json ARGS` as `user`, until it lists `count` outcomes (10 s at most).
pub(crate) fn history(
    user: Option<&str>,
    socket: &Path,
    args: &[&str],
    count: usize,
) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let mut all = vec!["history", "--json"];
        all.extend(args);
        let o = cronctl(user, socket, &all);
        assert!(o.status.success(), "{o:?}");
        let text = stdout(&o);
        let rows: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l:?} in {text:?}")))
            .collect();
        if rows.len() >= count || Instant::now() > deadline {
            assert_eq!(rows.len(), count, "{rows:#?}");
            return rows;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// What the sqlite3 command prints for `sql` on the store (opened read-only, so that a look
/// before the writer made it never makes it).
fn try_sqlite(store: &Path, sql: &str) -> Result<String, String> {
    let o = Command::new("sqlite3")
        .args(["-readonly", "-cmd", ".timeout 5000"])
        .arg(store)
        .arg(sql)
        .output()
        .expect("run sqlite3");
    match o.status.success() {
        true => Ok(String::from_utf8_lossy(&o.stdout).trim().to_string()),
        false => Err(format!("{o:?}")),
    }
}

fn sqlite(store: &Path, sql: &str) -> String {
    try_sqlite(store, sql).unwrap()
}

#[test]
fn root_every_run_is_recorded_with_its_end_resources_and_output_and_read_back_by_history_and_logs()
{
    require_root();
    let tree = Tree::new();
    let user = TestUser::create("hru", &[]);
    let u = &user.name;
    let text = format!(
        "0 0 1 1 * {u} echo hello; echo world >&2; exit 3\n\
         0 0 1 1 * {u} head -c 100000 /dev/zero | tr '\\0' x; echo; echo the end\n\
         0 0 1 1 * {u} kill -KILL $$\n\
         0 0 1 1 * nosuchuser-hru true\n"
    );
    tree.write_file(&tree.system_crontab(), &text, 0o644);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let system = tree.system_crontab().display().to_string();
    for line in 1..=4 {
        let o = cronctl(None, &socket, &["run", &format!("{system}:{line}")]);
        assert!(o.status.code().is_some(), "{o:?}");
    }
    let rows = history(None, &socket, &[], 4);
    let at = |line: u32| {
        rows.iter()
            .find(|r| r["place"] == format!("{system}:{line}"))
            .unwrap_or_else(|| panic!("line {line} in {rows:#?}"))
    };
    let (failed, big, killed, unknown) = (at(1), at(2), at(3), at(4));
    assert_eq!(failed["exit"], 3);
    assert_eq!(failed["status"], "exit 3");
    assert_eq!(failed["trigger"], "manual");
    assert_eq!(failed["user"], u.as_str());
    assert_eq!(
        failed["output_bytes"], 12,
        "hello and world, stderr with stdout"
    );
    assert!(failed["max_rss_kib"].as_u64().unwrap() > 0, "{failed}");
    assert!(failed["ended_ms"].as_i64() >= failed["at_ms"].as_i64());
    assert_eq!(big["status"], "ok");
    assert_eq!(big["output_bytes"], 100_000 + 1 + 8);
    assert_eq!(killed["signal"], "SIGKILL", "{killed}");
    assert_eq!(unknown["status"], "not-run");
    assert_eq!(unknown["reason"], "user-unknown");
    assert_eq!(
        unknown["words"],
        "user nosuchuser-hru unknown (no passwd entry)"
    );
    // Every entry's id is the one `cronctl list` shows.
    let listed = stdout(&cronctl(None, &socket, &["list", "--json"]));
    for row in &rows {
        let id = row["entry"].as_str().unwrap();
        assert!(
            listed.contains(&format!("\"id\":\"{id}\"")),
            "{id} in {listed}"
        );
    }
    // The output kept: the first and last 32 KiB, the middle counted.
    let id = big["entry"].as_str().unwrap();
    let logs = cronctl(None, &socket, &["logs", id]);
    assert!(logs.status.success(), "{logs:?}");
    let logs = stdout(&logs);
    assert!(logs.starts_with(&"x".repeat(1000)), "{}", &logs[..100]);
    assert!(
        logs.ends_with("x\nthe end\n"),
        "{}",
        &logs[logs.len() - 100..]
    );
    let kept = 2 * 32 * 1024;
    let marker = format!("[... {} bytes not kept ...]", 100_009 - kept);
    assert!(logs.contains(&marker), "{marker} in the logs");
    let short = stdout(&cronctl(
        None,
        &socket,
        &["logs", at(1)["entry"].as_str().unwrap()],
    ));
    assert_eq!(short, "hello\nworld\n");
    // The file: root's alone, whole.
    let store = store(&tree);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&store).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    assert_eq!(sqlite(&store, "PRAGMA integrity_check"), "ok");
}

#[test]
fn root_a_user_reads_the_history_and_output_of_their_own_entries_only() {
    require_root();
    let tree = Tree::new();
    let alice = TestUser::create("hra", &[]);
    let bob = TestUser::create("hrb", &[]);
    tree.user_crontab(
        &alice.name,
        "0 0 1 1 * echo alice-secret\n",
        0o600,
        &alice.name,
    );
    tree.user_crontab(&bob.name, "0 0 1 1 * echo bob-secret\n", 0o600, &bob.name);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log("2 entries loaded", 10);
    let socket = socket_of(&tree);
    for who in [&alice.name, &bob.name] {
        let place = format!("spool/{who}:1");
        let o = cronctl(Some(who), &socket, &["run", &place]);
        assert!(o.status.success(), "{o:?}");
    }
    let all = history(None, &socket, &[], 2);
    let own = history(Some(&alice.name), &socket, &[], 1);
    assert_eq!(own[0]["user"], alice.name.as_str());
    let bobs = all.iter().find(|r| r["user"] == bob.name.as_str()).unwrap();
    let bobs_id = bobs["entry"].as_str().unwrap();
    // Bob's entry, by its id or its place, is no one's to Alice: the same words as none.
    let o = cronctl(Some(&alice.name), &socket, &["logs", bobs_id]);
    assert!(!o.status.success(), "{o:?}");
    assert!(!stdout(&o).contains("bob-secret"));
    let o = cronctl(Some(&alice.name), &socket, &["history", bobs_id]);
    assert!(!stdout(&o).contains(bobs_id), "{o:?}");
    let o = cronctl(
        Some(&alice.name),
        &socket,
        &["logs", own[0]["entry"].as_str().unwrap()],
    );
    assert_eq!(stdout(&o), "alice-secret\n");
    // Nobody but root reads the file.
    let o = Command::new("setpriv")
        .arg(format!("--reuid={}", alice.name))
        .args(["--regid=65534", "--clear-groups", "cat"])
        .arg(store(&tree))
        .output()
        .unwrap();
    assert!(!o.status.success(), "{o:?}");
}

#[test]
fn root_a_slot_skipped_for_an_overlap_is_recorded_with_its_scheduled_minute() {
    require_root();
    let tree = Tree::new();
    let text = "CRON_OVERLAP=skip\n* * * * * root sleep 200\n";
    tree.write_file(&tree.system_crontab(), text, 0o644);
    let crond = Crond::start_at(&tree, 1, "2026-11-21 10:00:55", &[]);
    crond.wait_for_log("SKIP (sleep 200)", 20);
    let socket = socket_of(&tree);
    let rows = history(None, &socket, &["--failed"], 1);
    let skipped = &rows[0];
    assert_eq!(skipped["status"], "not-run");
    assert_eq!(skipped["reason"], "overlap");
    assert_eq!(skipped["trigger"], "schedule");
    // 10:02 on the fake clock, the slot that did not run.
    assert_eq!(skipped["slot"], "2026-11-21T10:02:00+00:00", "{skipped}");
    let words = skipped["words"].as_str().unwrap();
    assert!(words.contains("10:01"), "{words}");
}

#[test]
fn root_a_queued_run_released_later_than_cron_late_is_recorded_late_and_not_started() {
    require_root();
    let tree = Tree::new();
    let (flag, ends) = (tree.out("flag"), tree.out("ends"));
    // The first run takes 10 s (100 fake), each one after it 7 s (70 fake).
    let command = format!(
        "if [ -e {flag} ]; then sleep 7; else touch {flag}; sleep 10; fi; echo end >> {ends}",
        flag = flag.display(),
        ends = ends.display()
    );
    let text = format!("CRON_OVERLAP=queue\nCRON_LATE=20s\n* * * * * root {command}\n");
    tree.write_file(&tree.system_crontab(), &text, 0o644);
    let metrics = tree.path().join("metrics.sock");
    let serve = format!("unix:{}", metrics.display());
    let crond = Crond::start_at(&tree, 1, "2026-11-21 10:00:55", &["--metrics", &serve]);
    // 10:01's run ends near 10:02:40; 10:02's run waited for it, and would start 40 s after
    // its time: past CRON_LATE.
    let late = crond.wait_for_log(&format!("(root) LATE ({command})"), 30);
    assert!(
        late.contains(" due at 10:02, ") && late.ends_with(" late: not started (CRON_LATE)"),
        "{late}"
    );
    let socket = socket_of(&tree);
    let rows = history(None, &socket, &["--failed"], 1);
    let row = &rows[0];
    assert_eq!(row["status"], "not-run", "{row}");
    assert_eq!(row["reason"], "late", "{row}");
    assert_eq!(row["slot"], "2026-11-21T10:02:00+00:00", "{row}");
    let words = row["words"].as_str().unwrap();
    assert!(
        words.starts_with("would have started ")
            && words.ends_with(" after its time (CRON_LATE=20s)"),
        "{words}"
    );
    // 10:03's run starts at its time and ends near 10:04:10; 10:04's run waited for it, and
    // starts 10 s after its time: within CRON_LATE.
    let started = format!("(root) CMD ({command})");
    let deadline = Instant::now() + Duration::from_secs(30);
    while crond.log_text().matches(&started).count() < 3 {
        assert!(Instant::now() < deadline, "{}", crond.log_text());
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = crond.log_text();
    let waited = format!("(root) WAIT ({command}) still running since 10:03");
    assert!(log.contains(&waited), "{log}");
    assert_eq!(log.matches(" LATE (").count(), 1, "{log}");
    // 10:01's and 10:03's runs ended (10:04's ended 10:03's wait); 10:02's never started.
    assert_eq!(std::fs::read_to_string(&ends).unwrap(), "end\nend\n");
    let text = crate::extensions::curl(Some(&metrics), "http://localhost/metrics");
    let counted = crate::extensions::sample(&text, "crond_not_run_total{reason=\"late\"}");
    assert_eq!(counted, Some(1.0), "{text}");
}

/// How many outcomes the store holds of each slot, in the slots' order.
fn per_slot(store: &Path) -> Vec<usize> {
    if !store.exists() {
        return Vec::new();
    }
    try_sqlite(
        store,
        "SELECT count(*) FROM runs GROUP BY slot ORDER BY slot",
    )
    .unwrap_or_default()
    .lines()
    .map(|n| n.parse().unwrap())
    .collect()
}

/// Waits until the store holds `counts` per slot (20 s at most).
fn wait_for_slots(store: &Path, counts: &[usize]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while per_slot(store) != counts {
        assert!(
            Instant::now() < deadline,
            "{:?}, not {counts:?}",
            per_slot(store)
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn root_the_writer_killed_keeps_what_it_took_and_one_killed_in_a_burst_comes_back_whole() {
    require_root();
    let tree = Tree::new();
    let jobs = 1000;
    let text: String = (0..jobs)
        .map(|i| format!("* * * * * root : {i}\n"))
        .collect();
    tree.write_file(&tree.cron_d().join("burst"), &text, 0o644);
    // Ten times real speed: 10:01 comes 0.2 s after the start, 10:02 6 s later, 10:03 6 more.
    let started = Instant::now();
    let crond = Crond::start_at(&tree, 1, "2026-11-21 10:00:58", &["--no-pam"]);
    crond.wait_for_log("1000 entries loaded", 10);
    let store = store(&tree);
    // The 10:01 burst, every run recorded; then the writer killed between two bursts: what
    // it took is kept.
    wait_for_slots(&store, &[jobs]);
    let first = crond.history_writer();
    let kill = |pid: u32| {
        let status = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    };
    kill(first);
    let second = {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let pid = crond.history_writer();
            if pid != first {
                break pid;
            }
            assert!(Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // (Read again while the new writer opens the file: a look may find it busy.)
    wait_for_slots(&store, &[jobs]);
    assert_eq!(sqlite(&store, "PRAGMA integrity_check"), "ok");
    // Killed again in the middle of the 10:02 burst: the store stays whole, a gap says so,
    // and the 10:03 burst is recorded whole by the writer started after.
    let burst = Duration::from_millis(6_200 + 150);
    std::thread::sleep(burst.saturating_sub(started.elapsed()));
    kill(second);
    let deadline = Instant::now() + Duration::from_secs(30);
    while per_slot(&store).get(2) != Some(&jobs) {
        assert!(Instant::now() < deadline, "{:?}", per_slot(&store));
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(sqlite(&store, "PRAGMA integrity_check"), "ok");
    let counts = per_slot(&store);
    assert!(counts[1] <= jobs, "{counts:?}");
    let log = crond.log_text();
    assert_eq!(log.matches("history writer (pid").count(), 2, "{log}");
    let gaps: usize = sqlite(&store, "SELECT count(*) FROM gaps").parse().unwrap();
    assert!(gaps >= 2, "{gaps} gaps");
    // Of the 10:02 burst, what the store lacks was in the writer's hands or said lost.
    let unsent = log.matches("was not recorded in the history").count();
    assert!(
        counts[1] + unsent <= jobs,
        "{counts:?} and {unsent} said lost"
    );
}

#[test]
fn root_a_named_entry_keeps_its_id_and_its_history_when_its_line_is_edited() {
    require_root();
    let tree = Tree::new();
    let user = TestUser::create("hrn", &[]);
    let u = &user.name;
    let text = |line: &str| format!("CRON_ID=backup\n{line}\nCRON_ID=\n0 0 1 1 * echo plain\n");
    tree.user_crontab(u, &text("0 0 1 1 * echo one"), 0o600, u);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let place = format!("spool/{u}:2");
    assert!(cronctl(None, &socket, &["run", &place]).status.success());
    let first = history(None, &socket, &[], 1);
    let id = first[0]["entry"].as_str().unwrap().to_string();
    // Another schedule and command on the named line: the same entry, the same id.
    std::thread::sleep(Duration::from_millis(1100));
    tree.user_crontab(u, &text("30 5 * * * echo two"), 0o600, u);
    crond.wait_for_log("RELOAD", 10);
    let listed = stdout(&cronctl(None, &socket, &["list", "--json"]));
    let row = listed
        .lines()
        .find(|l| l.contains(&format!("\"entry\":\"{place}\"")))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(row.contains(&format!("\"id\":\"{id}\"")), "{row}");
    assert!(row.contains("echo two"), "{row}");
    assert!(cronctl(None, &socket, &["run", &id]).status.success());
    let both = history(None, &socket, &[&id], 2);
    let commands: Vec<&str> = both
        .iter()
        .map(|r| r["command"].as_str().unwrap())
        .collect();
    assert_eq!(commands, ["echo two", "echo one"]);
    // The unnamed line below has an id of its own, made of its line.
    assert!(!listed.contains(&format!("\"id\":\"{id}\",\"entry\":\"spool/{u}:4\"")));
}

#[test]
fn root_the_daemon_killed_in_a_burst_leaves_every_run_it_started_recorded() {
    require_root();
    let tree = Tree::new();
    let jobs = 1000;
    let text: String = (0..jobs)
        .map(|i| format!("* * * * * root sleep 1; : {i}\n"))
        .collect();
    tree.write_file(&tree.cron_d().join("burst"), &text, 0o644);
    let crond = Crond::start_at(&tree, 1, "2026-11-21 10:00:58", &["--no-pam"]);
    crond.wait_for_log("1000 entries loaded", 10);
    let writer = crond.history_writer();
    // SIGKILL to the daemon in the middle of the 10:01 burst.
    crond.wait_for_log("CMD (sleep 1; : 300)", 20);
    let status = Command::new("kill")
        .args(["-KILL", &crond.pid().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    // The job children it started go on and record their runs; the writer ends when the last
    // of them has closed the socket.
    let deadline = Instant::now() + Duration::from_secs(60);
    while Path::new(&format!("/proc/{writer}")).exists() {
        assert!(
            Instant::now() < deadline,
            "the writer outlived every sender"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = crond.log_text();
    let started = log.matches(" CMD (sleep 1; : ").count();
    let unsent = log.matches("was not recorded in the history").count();
    assert!(started > 300 && started <= jobs, "{started} started");
    let store = store(&tree);
    assert_eq!(sqlite(&store, "PRAGMA integrity_check"), "ok");
    let recorded: usize = sqlite(&store, "SELECT count(*) FROM runs").parse().unwrap();
    assert_eq!(recorded + unsent, started, "{unsent} said lost");
}

/// Every `YYYY-MM-DD HH:MM:SS` of `text` made the same.
pub(crate) fn fixed_times(text: &str) -> String {
    let bytes = text.as_bytes();
    let shape = b"dddd-dd-dd dd:dd:dd";
    let mut out = String::new();
    let mut at = 0;
    while at < text.len() {
        let rest = &bytes[at..];
        let is_time = rest.len() >= shape.len()
            && shape.iter().zip(rest).all(|(&s, &b)| match s {
                b'd' => b.is_ascii_digit(),
                s => s == b,
            });
        if is_time {
            out.push_str("2026-11-21 10:00:00");
            at += shape.len();
        } else {
            let c = text[at..].chars().next().unwrap();
            out.push(c);
            at += c.len_utf8();
        }
    }
    out
}

#[test]
fn root_cronctl_history_lists_each_outcome_newest_first_as_a_user_reads_it() {
    require_root();
    let tree = Tree::new();
    tree.user_crontab(
        "root",
        "0 0 1 1 * echo hi; exit 3\n0 0 1 1 * true\n",
        0o600,
        "root",
    );
    tree.write_file(
        &tree.system_crontab(),
        "0 0 1 1 * nosuchuser-hrg true\n",
        0o644,
    );
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log("3 entries loaded", 10);
    let socket = socket_of(&tree);
    let system = tree.system_crontab().display().to_string();
    // One at a time, each recorded before the next: the runs' numbers are their order.
    let places = [
        "spool/root:1".to_string(),
        "spool/root:2".into(),
        format!("{system}:1"),
    ];
    for (n, place) in places.iter().enumerate() {
        let o = cronctl(None, &socket, &["run", "--wait", place]);
        assert!(o.status.code().is_some(), "{o:?}");
        history(None, &socket, &[], n + 1);
    }
    let rows = history(None, &socket, &[], 3);
    let mut words = Scrub::new()
        .replace(tree.path().display().to_string(), "/tmp/T")
        .replace(
            String::from_utf8_lossy(&crond::sys::hostname()).into_owned(),
            "host",
        );
    for (row, name) in rows
        .iter()
        .zip(["cccccccccccc", "bbbbbbbbbbbb", "aaaaaaaaaaaa"])
    {
        words = words.replace(row["entry"].as_str().unwrap(), name);
    }
    let table = stdout(&cronctl(None, &socket, &["history"]));
    assert!(table.lines().all(|l| l.chars().count() <= 100), "{table}");
    let shown = scrubbed_table(&fixed_times(&table), &words);
    assert_golden("cronctl-history-local.txt", &shown);
}

/// The part of `cronctl show`'s answer that lists the last runs.
fn last_runs_part(shown: &str) -> &str {
    let at = shown
        .find("\nLast runs (")
        .unwrap_or_else(|| panic!("{shown}"));
    &shown[at..]
}

#[test]
fn root_cronctl_show_lists_the_last_runs_from_the_history_also_after_the_daemon_restarts() {
    require_root();
    let tree = Tree::new();
    let flag = tree.out("ran-once");
    let line = format!(
        "0 0 1 1 * test -e {0} || {{ touch {0}; exit 3; }}\n",
        flag.display()
    );
    tree.user_crontab("root", &line, 0o600, "root");
    tree.write_file(
        &tree.system_crontab(),
        "0 0 1 1 * nosuchuser-hrs true\n",
        0o644,
    );
    let start = "2026-11-21 10:01:05";
    let mut crond = Crond::start_fast(&tree, 1, start, 1, &[]);
    crond.wait_for_log("2 entries loaded", 10);
    let socket = socket_of(&tree);
    let system = format!("{}:1", tree.system_crontab().display());
    // Exit 3, then 0; and a slot whose user passwd does not know.
    for (n, place) in ["spool/root:1", "spool/root:1", &system].iter().enumerate() {
        let o = cronctl(None, &socket, &["run", "--wait", place]);
        assert!(o.status.code().is_some(), "{o:?}");
        history(None, &socket, &[], n + 1);
    }
    let host = String::from_utf8_lossy(&crond::sys::hostname()).into_owned();
    let words = Scrub::new()
        .replace(tree.path().display().to_string(), "/tmp/T")
        .replace(format!("  {host}  "), "  host  ");
    let before = stdout(&cronctl(None, &socket, &["show", "spool/root:1"]));
    let mut ids = Scrub::new();
    for (_, id) in crate::control::ids(&cronctl(None, &socket, &["list", "--json"])) {
        ids = ids.replace(id, "0123456789ab");
    }
    let golden = crate::control::scrubbed_show(&ids.apply(&before), &words);
    assert_golden("cronctl-show-history.txt", &golden);
    let unknown = stdout(&cronctl(None, &socket, &["show", &system]));
    assert!(
        unknown
            .contains("  not run: user-unknown: user nosuchuser-hrs unknown (no passwd entry)\n"),
        "{unknown}"
    );
    // Stopped and started again on the same state directory and store: the daemon remembers
    // no run of the entry, the history has them all.
    crond.stop();
    let crond = Crond::start_fast(&tree, 2, start, 1, &[]);
    crond.wait_for_log("2 entries loaded", 10);
    let after = stdout(&cronctl(None, &socket, &["show", "spool/root:1"]));
    assert_eq!(last_runs_part(&after), last_runs_part(&before));
    assert_eq!(last_runs_part(&after).lines().count(), 5, "{after}");
    let json = stdout(&cronctl(None, &socket, &["show", "--json", "spool/root:1"]));
    let object: Value = serde_json::from_str(json.trim_end()).expect("one object");
    assert_eq!(
        object["runs"],
        serde_json::json!([]),
        "none since this load"
    );
    let results: Vec<&str> = (object["history"].as_array().unwrap().iter())
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(results, ["ok", "exit 3"]);
    assert_eq!(object["history_error"], Value::Null);
}

#[test]
fn root_cronctl_show_without_a_history_lists_the_daemons_last_runs_and_says_why() {
    require_root();
    let tree = Tree::new();
    tree.user_crontab("root", "0 0 1 1 * exit 3\n", 0o600, "root");
    let crond = Crond::start(&tree, 1, &["--history", "off"]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let o = cronctl(None, &socket, &["run", "--wait", "spool/root:1"]);
    assert_eq!(o.status.code(), Some(3), "{o:?}");
    // The daemon keeps the run once it has reaped its job child, a moment after `--wait`
    // has the job's end.
    crond.wait_for_no_children(10);
    let shown = stdout(&cronctl(None, &socket, &["show", "spool/root:1"]));
    let part = last_runs_part(&shown);
    let lines: Vec<&str> = part.lines().skip(1).collect();
    assert_eq!(
        lines[..2],
        [
            "Last runs (newest first, since crond loaded the entry):",
            "  (not from the run history: the daemon keeps no history (crond --history off))",
        ],
        "{shown}"
    );
    assert!(lines[2].contains("exit 3"), "{shown}");
    let json = stdout(&cronctl(None, &socket, &["show", "--json", "spool/root:1"]));
    let object: Value = serde_json::from_str(json.trim_end()).expect("one object");
    assert_eq!(object["history"], Value::Null);
    assert_eq!(
        object["history_error"],
        "the daemon keeps no history (crond --history off)"
    );
    assert_eq!(object["runs"][0]["exit"], 3);
}
