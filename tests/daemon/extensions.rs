//! The extensions no cron has (crontab.5 "Extensions"), end to end on the real daemon: a
//! time limit that ends a whole process group; runs that skip or wait while the entry's last
//! run is going; runs missed while the daemon was down or the machine slept, made up once; an
//! entry with `H`, at the minute cronnext resolves it to.
//! Time is libfaketime's, ten times faster, starting seconds before 10:00 (the jobs themselves
//! run in real time: a real `sleep 8` spans more than a fake minute).

use std::process::Command;

use crate::support::daemon::{
    Crond, START, Tree, cpu_ticks, current_user, require_root, user_with_home, wait_for_file,
};
use crate::support::mail::mail_user;

/// The fake `HH:MM:SS` of each log line that contains `needle`.
fn times_of(crond: &Crond, needle: &str) -> Vec<String> {
    crond
        .log_text()
        .lines()
        .filter(|l| l.contains(needle))
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect()
}

/// Waits (real time, at most `secs`) until a process with the command line `line` runs
/// (`running`) or none does: a process killed while the daemon runs is gone once its parent
/// (init, for what a job left) reaps it.
fn wait_until(line: &str, running_: bool, secs: u64, log: &dyn Fn() -> String) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while running(line) != running_ {
        assert!(
            std::time::Instant::now() < deadline,
            "{line:?} running: {} after {secs} s; the log:\n{}",
            !running_,
            log()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Whether a process whose command line is exactly `line` exists.
fn running(line: &str) -> bool {
    Command::new("pgrep")
        .args(["-x", "-f", line])
        .status()
        .expect("run pgrep")
        .success()
}

#[test]
fn root_a_job_past_its_time_limit_gets_sigterm_then_its_whole_group_sigkill_and_the_mail_says_so() {
    let user = mail_user();
    let tree = Tree::new();
    // The shell and both sleeps ignore SIGTERM: only the SIGKILL ten seconds later ends them,
    // the one in the background too (it is in the shell's process group).
    let command = "echo started; trap '' TERM; sleep 7301 & sleep 7302; echo never";
    tree.user_crontab(
        &user.name,
        &format!("CRON_TIMEOUT=2s\n0 10 * * * {command}\n"),
        0o600,
        &user.name,
    );
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(&format!("({}) CMD ({command})", user.name), 15);
    assert!(running("sleep 7301") && running("sleep 7302"));
    crond.wait_for_log(
        &format!(
            "({}) TIMEOUT ({command}) after 2s: SIGTERM to its process group",
            user.name
        ),
        15,
    );
    assert!(
        running("sleep 7301") && running("sleep 7302"),
        "SIGTERM is ignored"
    );
    crond.wait_for_log(
        &format!(
            "({}) TIMEOUT ({command}) 10s after SIGTERM: SIGKILL to its process group",
            user.name
        ),
        20,
    );
    let mut mail = user.wait_for_mail(1);
    assert_eq!(mail.len(), 1);
    let m = mail.remove(0);
    assert_eq!(m.body, b"started\n");
    let subject = m.header_str("Subject").replace('\n', "");
    assert!(
        subject.ends_with(&format!(
            "{command} (timed out after 2s) (killed by signal 9)"
        )),
        "{subject}"
    );
    assert!(!running("sleep 7301"), "the background sleep was killed");
    assert!(!running("sleep 7302"));
}

#[test]
fn root_what_a_shell_leaves_in_its_process_group_gets_the_time_limit_after_the_job_has_ended() {
    require_root();
    let tree = Tree::new();
    let user = user_with_home("g", &tree.path().join("out"));
    let heard = tree.out("heard");
    // Both shells exit at once and leave a process in their group: one that ends on SIGTERM
    // (and says it heard it), one that ignores it. The sleeps' lengths are this run's own, so
    // that a sleep some other run left can't be taken for them.
    let (beside, ignoring) = (
        format!("sleep {}", 1_000_000 + std::process::id()),
        format!("sleep {}", 2_000_000 + std::process::id()),
    );
    let hears = format!(
        "(trap 'echo got TERM > {}; exit 0' TERM; {beside} & wait) >/dev/null 2>&1 & exit 0",
        heard.display()
    );
    let ignores = &format!("(trap '' TERM; {ignoring}) >/dev/null 2>&1 & exit 0");
    // 20 s of the fake clock are 2 s of real time: time enough for the shells to start their
    // processes and exit on a loaded machine.
    tree.user_crontab(
        &user.name,
        &format!("CRON_TIMEOUT=20s\nMAILTO=\"\"\n0 10 * * * {hears}\n0 10 * * * {ignores}\n"),
        0o600,
        &user.name,
    );
    let crond = Crond::start(&tree, 1, &["-L", "3"]);
    let end = |command: &str| format!("({}) END ({command})", user.name);
    let timeout = |command: &str, what: &str| format!("({}) TIMEOUT ({command}) {what}", user.name);
    let term = "after 20s: SIGTERM to its process group";
    let kill = "10s after SIGTERM: SIGKILL to its process group";
    // The job ends when its shell exits, as before: END first, the limit later.
    crond.wait_for_log(&end(&hears), 15);
    crond.wait_for_log(&end(ignores), 5);
    // Started by the subshells, which may run after their shell has exited.
    wait_until(&beside, true, 10, &|| crond.log_text());
    wait_until(&ignoring, true, 10, &|| crond.log_text());
    crond.wait_for_log(&timeout(&hears, term), 15);
    assert_eq!(wait_for_file(&heard, 5), "got TERM\n");
    // The sleep beside the trap had the SIGTERM too.
    wait_until(&beside, false, 10, &|| crond.log_text());
    crond.wait_for_log(&timeout(ignores, term), 5);
    assert!(running(&ignoring), "SIGTERM is ignored");
    crond.wait_for_log(&timeout(ignores, kill), 20);
    wait_until(&ignoring, false, 10, &|| crond.log_text());
    // Both job children end once their group is empty.
    crond.wait_for_no_children(10);
    let log = crond.log_text();
    let at = |needle: &str| log.find(needle).expect(needle);
    assert!(at(&end(&hears)) < at(&timeout(&hears, term)), "{log}");
    assert!(at(&end(ignores)) < at(&timeout(ignores, term)), "{log}");
    // Whether the first group also gets the SIGKILL depends on how soon init reaps the
    // subshell that exited on SIGTERM (a zombie is still a member): not asserted.
}

#[test]
fn root_with_a_time_limit_a_run_lasts_while_its_group_does_and_overlap_skip_sees_it() {
    require_root();
    let tree = Tree::new();
    let me = current_user();
    // The shell exits at once; the sleep it leaves in its group lasts past 10:01 (fake time,
    // ten times faster) and well within the limit: the run is still going at 10:01, so that
    // run is skipped; once the group is empty the run ends, and 10:02 runs.
    let command = "sleep 7 >/dev/null 2>&1 & exit 0";
    tree.user_crontab(
        &me,
        &format!("CRON_TIMEOUT=1h\nCRON_OVERLAP=skip\n* * * * * {command}\n"),
        0o600,
        &me,
    );
    let crond = Crond::start(&tree, 1, &[]);
    let skip = crond.wait_for_log(&format!("({me}) SKIP ({command})"), 20);
    assert!(skip.ends_with("still running since 10:00"), "{skip}");
    crond.wait_for_log(" 10:02:00 ", 20);
    crond.wait_for_log(&format!("({me}) CMD ({command})"), 5);
    let starts = times_of(&crond, &format!("({me}) CMD ({command})"));
    assert_eq!(starts, ["10:00:00", "10:02:00"], "{}", crond.log_text());
    assert!(
        !crond.log_text().contains("TIMEOUT"),
        "{}",
        crond.log_text()
    );
}

#[test]
fn root_with_overlap_skip_a_run_due_while_the_last_one_runs_is_skipped_and_logged() {
    require_root();
    let tree = Tree::new();
    let me = current_user();
    tree.user_crontab(&me, "CRON_OVERLAP=skip\n* * * * * sleep 8\n", 0o600, &me);
    // 10:00 starts it; it runs until about 10:01:20 (fake), so 10:01 is skipped; 10:02 runs.
    let crond = Crond::start(&tree, 1, &[]);
    let skip = crond.wait_for_log(&format!("({me}) SKIP (sleep 8)"), 20);
    assert!(skip.ends_with("still running since 10:00"), "{skip}");
    crond.wait_for_log(" 10:02:00 ", 20);
    crond.wait_for_log(&format!("({me}) CMD (sleep 8)"), 5);
    let starts = times_of(&crond, &format!("({me}) CMD (sleep 8)"));
    assert_eq!(starts, ["10:00:00", "10:02:00"], "{}", crond.log_text());
    assert_eq!(times_of(&crond, "SKIP").len(), 1);
}

#[test]
fn root_with_overlap_queue_a_run_due_while_the_last_one_runs_starts_when_it_ends() {
    require_root();
    let tree = Tree::new();
    let me = current_user();
    let ends = tree.out("ends");
    tree.user_crontab(
        &me,
        &format!(
            "CRON_OVERLAP=queue\n* * * * * sleep 8; echo end >> {}\n",
            ends.display()
        ),
        0o600,
        &me,
    );
    let command = format!("sleep 8; echo end >> {}", ends.display());
    let crond = Crond::start(&tree, 1, &[]);
    let wait = crond.wait_for_log(&format!("({me}) WAIT ({command})"), 20);
    assert!(
        wait.ends_with("still running since 10:00: starts when it ends"),
        "{wait}"
    );
    // The waiting run starts when the first ends (about 10:01:20), not at a minute boundary;
    // at 10:02 it is still going, so that run waits in turn.
    let again = crond.wait_for_log("still running since 10:01: starts when it ends", 20);
    assert!(again.contains(" 10:02:00 "), "{again}");
    let starts = times_of(&crond, &format!("({me}) CMD ({command})"));
    assert_eq!(starts.len(), 2, "{}", crond.log_text());
    assert_eq!(starts[0], "10:00:00");
    assert!(
        starts[1].starts_with("10:01:") && starts[1] != "10:01:00",
        "the second run started when the first ended: {}",
        crond.log_text()
    );
    let first_end = std::fs::read_to_string(&ends).unwrap();
    assert_eq!(first_end.lines().count(), 1, "the first run had ended");
}

#[test]
fn root_with_missed_once_a_run_missed_while_the_daemon_was_down_runs_once_at_start_up() {
    require_root();
    let tree = Tree::new();
    let me = current_user();
    let (once, skipped) = (tree.out("once"), tree.out("skipped"));
    tree.user_crontab(
        &me,
        &format!(
            "0 * * * * echo ran >> {}\nCRON_MISSED=once\n0 * * * * echo ran >> {}\n",
            skipped.display(),
            once.display()
        ),
        0o600,
        &me,
    );
    let mut crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(&format!("({me}) CMD (echo ran >> {})", once.display()), 15);
    crond.wait_for_no_children(10);
    crond.stop();
    let state = std::fs::read_to_string(tree.state_dir().join("handled")).unwrap();
    assert!(state.starts_with("crond-handled 1\n"), "{state}");

    // Down from 10:00 to 13:30: 11:00, 12:00 and 13:00 were missed.
    let crond = Crond::start_at(&tree, 2, "2026-11-21 13:30:00", &[]);
    let missed = crond.wait_for_log(&format!("({me}) MISSED ("), 15);
    assert!(
        missed.ends_with(&format!(
            "(echo ran >> {}) due at 2026-11-21 11:00 and not run: runs once now",
            once.display()
        )),
        "{missed}"
    );
    crond.wait_for_log(&format!("({me}) CMD (echo ran >> {})", once.display()), 15);
    crond.wait_for_no_children(10);
    assert_eq!(std::fs::read_to_string(&once).unwrap(), "ran\nran\n");
    assert_eq!(
        std::fs::read_to_string(&skipped).unwrap(),
        "ran\n",
        "without CRON_MISSED=once a missed run stays missed"
    );
    assert_eq!(
        times_of(&crond, "MISSED").len(),
        1,
        "one run for three missed"
    );
}

#[test]
fn root_a_state_file_the_daemon_did_not_write_is_ignored_and_logged() {
    require_root();
    let tree = Tree::new();
    let me = current_user();
    let once = tree.out("once");
    tree.user_crontab(
        &me,
        &format!(
            "CRON_MISSED=once\n0 * * * * echo ran >> {}\n",
            once.display()
        ),
        0o600,
        &me,
    );
    std::fs::create_dir(tree.state_dir()).unwrap();
    let file = tree.state_dir().join("handled");
    // What the daemon would write for 08:00, but writable by everyone.
    std::fs::write(&file, "crond-handled 1\n29920800\n").unwrap();
    std::fs::set_permissions(&file, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    let crond = Crond::start_at(&tree, 1, "2026-11-21 10:30:00", &[]);
    let warning = crond.wait_for_log("handled ignored", 15);
    assert!(
        warning.contains("writable by others (mode 666)"),
        "{warning}"
    );
    crond.wait_for_log(" loaded from ", 5);
    assert!(!crond.log_text().contains("MISSED"), "{}", crond.log_text());
}

#[test]
fn root_with_missed_once_a_resume_after_hours_makes_up_a_run_the_clock_rules_skip() {
    require_root();
    let tree = Tree::new();
    // A jump of more than three hours starts afresh: without `once` nothing runs for the
    // hours the machine slept.
    tree.write_file(
        &tree.cron_d().join("resume"),
        "30 * * * * root true plain\nCRON_MISSED=once\n30 * * * * root true once\n",
        0o644,
    );
    let crond = Crond::start_steppable(&tree, 1, "2026-11-21 09:59:50", &[]);
    crond.wait_for_log(" loaded from ", 10);
    crond.set_clock(&tree, "2026-11-21 15:00:10");
    // "clock set: Afresh(..)" when the SIGHUP is read first, "clock late: Afresh(..)" when the
    // timer is: a step this soon after the start can land while the daemon still arms its timer
    // from the time it started at (seen on CI under load). Either way it starts afresh.
    crond.wait_for_log(": Afresh(", 10);
    let missed = crond.wait_for_log("(root) MISSED (true once)", 10);
    assert!(
        missed.ends_with("due at 2026-11-21 10:30 and not run: runs once now"),
        "{missed}"
    );
    crond.wait_for_log("(root) CMD (true once)", 10);
    crond.wait_for_no_children(10);
    assert!(
        !crond.log_text().contains("CMD (true plain)"),
        "{}",
        crond.log_text()
    );
}

/// `curl` fetching `url`, through the Unix socket `unix` when given.
pub(crate) fn curl(unix: Option<&std::path::Path>, url: &str) -> String {
    let mut c = Command::new("curl");
    c.args(["--silent", "--show-error", "--fail", "--max-time", "10"]);
    if let Some(path) = unix {
        c.arg("--unix-socket").arg(path);
    }
    let out = c.arg(url).output().expect("run curl (Debian package curl)");
    assert!(
        out.status.success(),
        "curl {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The value of the sample named exactly `series` in an exposition.
pub(crate) fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// The labels of the per-entry series of the entry at `place` (FILE:LINE): its id as `cronctl
/// list` shows it, and its place.
fn labels(tree: &Tree, place: &str) -> String {
    let socket = crate::control::socket_of(tree);
    let listed = crate::control::ids(&crate::control::cronctl(None, &socket, &["list", "--json"]));
    let (_, id) = (listed.iter())
        .find(|(entry, _)| entry == place)
        .unwrap_or_else(|| panic!("{place} in {listed:?}"));
    assert_eq!(id.len(), 12, "{id}");
    format!("{{entry=\"{id}\",place=\"{place}\"}}")
}

#[test]
fn root_the_metrics_endpoint_counts_runs_failures_timeouts_and_skips_for_a_real_http_client() {
    require_root();
    let tree = Tree::new();
    let me = current_user();
    tree.user_crontab(
        &me,
        "0 10 * * * true\n0 10 * * * exit 3\nCRON_TIMEOUT=1s\n0 10 * * * sleep 30\n\
         CRON_OVERLAP=skip\nCRON_TIMEOUT=\n0-1 10 * * * sleep 8\n",
        0o600,
        &me,
    );
    let socket = tree.path().join("metrics.sock");
    let crond = Crond::start(
        &tree,
        1,
        &["--metrics", &format!("unix:{}", socket.display())],
    );
    crond.wait_for_log("metrics served at unix:", 10);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&socket).unwrap().permissions());
    assert_eq!(
        mode & 0o777,
        0o600,
        "only root may read it without --metrics-group"
    );
    // 10:00 starts four jobs; at 10:01 the sleeper still runs and its second run is skipped.
    crond.wait_for_log(&format!("({me}) SKIP (sleep 8)"), 20);
    crond.wait_for_log(&format!("({me}) TIMEOUT (sleep 30) 10s after SIGTERM"), 20);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let text = loop {
        let text = curl(Some(&socket), "http://localhost/metrics");
        if sample(&text, "crond_jobs_running") == Some(0.0) || std::time::Instant::now() > deadline
        {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(sample(&text, "crond_runs_total"), Some(4.0), "{text}");
    assert_eq!(sample(&text, "crond_failures_total"), Some(2.0), "{text}");
    assert_eq!(sample(&text, "crond_timeouts_total"), Some(1.0), "{text}");
    assert_eq!(sample(&text, "crond_skipped_total"), Some(1.0), "{text}");
    assert_eq!(sample(&text, "crond_jobs_running"), Some(0.0), "{text}");
    assert_eq!(
        sample(&text, "crond_run_duration_seconds_count"),
        Some(4.0),
        "{text}"
    );
    let spool = tree.spool();
    let tab = spool.file_name().unwrap().to_string_lossy();
    // Each entry by the id `cronctl list` shows, and where it is written.
    let labels = |line: u32| labels(&tree, &format!("{tab}/{me}:{line}"));
    for line in [1, 7] {
        let series = format!("crond_last_success_timestamp_seconds{}", labels(line));
        assert!(sample(&text, &series).is_some(), "{series} in {text}");
    }
    let never = format!("crond_last_success_timestamp_seconds{}", labels(2));
    assert!(sample(&text, &never).is_none(), "exit 3 never succeeded");
    // Each entry's last status: exit 3's, and the skipped slot's -1 after the sleeper's 0.
    let status = |line: u32| sample(&text, &format!("crond_last_status{}", labels(line)));
    assert_eq!(status(2), Some(3.0), "{text}");
    assert_eq!(status(1), Some(0.0), "{text}");
    assert_eq!(
        sample(&text, "crond_not_run_total{reason=\"overlap\"}"),
        Some(1.0),
        "{text}"
    );
    assert!(curl(Some(&socket), "http://localhost/").contains("crond_runs_total"));
}

#[test]
fn root_a_job_whose_shell_cannot_start_is_logged_and_counted_as_a_failed_run() {
    require_root();
    let tree = Tree::new();
    let user = user_with_home("f", &tree.path().join("out"));
    tree.user_crontab(
        &user.name,
        "SHELL=/nonexistent/sh\n0 10 * * * true\n",
        0o600,
        &user.name,
    );
    let socket = tree.path().join("metrics.sock");
    let crond = Crond::start(
        &tree,
        1,
        &["--metrics", &format!("unix:{}", socket.display())],
    );
    crond.wait_for_log("metrics served at unix:", 10);
    let line = crond.wait_for_log("can't run /nonexistent/sh", 20);
    assert!(
        line.ends_with(&format!(
            "({}) ERROR (can't run /nonexistent/sh: No such file or directory (os error 2))",
            user.name
        )),
        "{line}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let text = loop {
        let text = curl(Some(&socket), "http://localhost/metrics");
        if sample(&text, "crond_jobs_running") == Some(0.0) || std::time::Instant::now() > deadline
        {
            break text;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(sample(&text, "crond_runs_total"), Some(1.0), "{text}");
    assert_eq!(sample(&text, "crond_failures_total"), Some(1.0), "{text}");
    assert!(
        !crond.log_text().contains(&format!("({}) CMD (", user.name)),
        "{}",
        crond.log_text()
    );
}

#[test]
fn root_the_metrics_endpoint_on_a_loopback_port_answers_http_and_refuses_other_paths() {
    require_root();
    let tree = Tree::new();
    // A free port: bind one, let it go, give it to the daemon.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let crond = Crond::start(&tree, 1, &["--metrics", &format!("127.0.0.1:{port}")]);
    crond.wait_for_log("metrics served at 127.0.0.1:", 10);
    let text = curl(None, &format!("http://127.0.0.1:{port}/metrics"));
    assert_eq!(sample(&text, "crond_runs_total"), Some(0.0), "{text}");
    let status = Command::new("curl")
        .args([
            "--silent",
            "--output",
            "/dev/null",
            "--write-out",
            "%{http_code}",
        ])
        .arg(format!("http://127.0.0.1:{port}/other"))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&status.stdout), "404");
    // A client that connects and says nothing does not hold the daemon: others are served.
    let _silent = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let text = curl(None, &format!("http://127.0.0.1:{port}/metrics"));
    assert!(text.contains("crond_jobs_running 0"), "{text}");
    // Sixteen connections at once at most: the seventeenth waits in the backlog (neither
    // accepted nor closed) and is answered once the silent ones reach their deadline.
    let silent: Vec<_> = (0..15)
        .map(|_| std::net::TcpStream::connect(("127.0.0.1", port)).unwrap())
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let mut extra = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    extra
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    std::io::Write::write_all(&mut extra, b"GET /metrics HTTP/1.0\r\n\r\n").unwrap();
    let mut answer = String::new();
    std::io::Read::read_to_string(&mut extra, &mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
    let text = curl(None, &format!("http://127.0.0.1:{port}/metrics"));
    assert!(text.contains("crond_jobs_running 0"), "{text}");
    drop(silent);
}

/// A port no one listens on now (bound, let go, given to the daemon).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `curl URL` as `nobody` (any local user).
fn curl_as_nobody(url: &str) -> String {
    let out = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "curl",
        ])
        .args([
            "--silent",
            "--show-error",
            "--fail",
            "--max-time",
            "10",
            url,
        ])
        .output()
        .expect("run setpriv curl");
    assert!(
        out.status.success(),
        "curl {url} as nobody: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn root_over_tcp_any_user_gets_no_per_entry_series_unless_the_flag_says_so_and_the_unix_socket_has_them()
 {
    require_root();
    let tree = Tree::new();
    tree.write_file(&tree.system_crontab(), "* * * * * root true\n", 0o644);
    let socket = tree.path().join("metrics.sock");
    let place = format!("{}:1", tree.system_crontab().display());
    for (n, flag) in [(1, None), (2, Some("--metrics-entries-on-tcp"))] {
        let port = free_port();
        let unix = format!("unix:{}", socket.display());
        let tcp = format!("127.0.0.1:{port}");
        let mut args = vec!["--metrics", &unix, "--metrics", &tcp];
        args.extend(flag);
        let mut crond = Crond::start(&tree, n, &args);
        let served = crond.wait_for_log(&format!("metrics served at {tcp}"), 10);
        crond.wait_for_log("(root) CMD (true)", 20);
        crond.wait_for_no_children(10);
        let series = format!(
            "crond_last_success_timestamp_seconds{}",
            labels(&tree, &place)
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let text = loop {
            let text = curl(Some(&socket), "http://localhost/metrics");
            if sample(&text, &series).is_some() || std::time::Instant::now() > deadline {
                break text;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        };
        assert!(
            sample(&text, &series).is_some(),
            "the Unix socket: {series} in {text}"
        );
        let seen = curl_as_nobody(&format!("http://{tcp}/metrics"));
        assert_eq!(sample(&seen, "crond_runs_total"), Some(1.0), "{seen}");
        match flag {
            None => {
                assert!(
                    served.contains("(totals only: no per-entry series on TCP)"),
                    "{served}"
                );
                assert!(!seen.contains("entry="), "{seen}");
                assert!(!seen.contains("crond_last_success"), "{seen}");
                let path = tree.system_crontab();
                assert!(!seen.contains(path.to_str().unwrap()), "{seen}");
            }
            Some(_) => {
                assert!(served.contains("any local user can read them"), "{served}");
                assert!(sample(&seen, &series).is_some(), "{series} in {seen}");
            }
        }
        crond.stop();
    }
}

/// Not a test: the other user's client for
/// `root_idle_connections_another_user_holds_on_the_tcp_port_neither_starve_the_unix_socket_nor_spin_the_daemon`,
/// which runs this binary again as `nobody` with `CROND_TEST_HOLD="PORT SECONDS"` (without it,
/// this does nothing). It keeps 40 connections to the port open for SECONDS, sends nothing,
/// opens a new one for each the daemon closes, and prints how many the daemon closed.
#[test]
#[ignore = "a helper process of a metrics test"]
fn hold_idle_metrics_connections() {
    use std::io::Read;
    use std::os::fd::AsFd;
    let Ok(spec) = std::env::var("CROND_TEST_HOLD") else {
        return;
    };
    let (port, seconds) = spec.split_once(' ').unwrap();
    let (port, seconds): (u16, u64) = (port.parse().unwrap(), seconds.parse().unwrap());
    let connect = || {
        let s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_nonblocking(true).unwrap();
        s
    };
    let mut held: Vec<std::net::TcpStream> = (0..40).map(|_| connect()).collect();
    let mut closed = 0u64;
    let end = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while std::time::Instant::now() < end {
        let ready: Vec<bool> = {
            let mut fds: Vec<nix::poll::PollFd<'_>> = held
                .iter()
                .map(|s| nix::poll::PollFd::new(s.as_fd(), nix::poll::PollFlags::POLLIN))
                .collect();
            nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(100u16)).unwrap();
            fds.iter().map(|f| f.any().unwrap_or(false)).collect()
        };
        for (i, ready) in ready.into_iter().enumerate() {
            let mut byte = [0u8; 1];
            if ready
                && !matches!(held[i].read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
            {
                closed += 1;
                held[i] = connect();
            }
        }
    }
    // The report to the test that started this process, which reads its stdout.
    #[allow(clippy::print_stdout)]
    {
        println!("held: closed by the daemon {closed}");
    }
}

/// How many times the daemon slept in the kernel and was woken (voluntary context switches).
fn wake_ups(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("voluntary_ctxt_switches:"))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// `GET /metrics` over the Unix socket `path`: whether a whole 200 answer came.
fn scrape_unix(path: &std::path::Path) -> bool {
    use std::io::{Read, Write};
    let Ok(mut s) = std::os::unix::net::UnixStream::connect(path) else {
        return false;
    };
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    let mut answer = String::new();
    s.write_all(b"GET /metrics HTTP/1.0\r\n\r\n").is_ok()
        && s.read_to_string(&mut answer).is_ok()
        && answer.starts_with("HTTP/1.1 200 OK\r\n")
        && answer.contains("crond_jobs_running 0\n")
}

#[test]
#[allow(clippy::print_stdout)] // the figures measured, for the reader of the test's output
fn root_idle_connections_another_user_holds_on_the_tcp_port_neither_starve_the_unix_socket_nor_spin_the_daemon()
 {
    require_root();
    const HOLD_S: u64 = 12;
    let tree = Tree::new();
    let socket = tree.path().join("metrics.sock");
    let port = free_port();
    let (unix, tcp) = (
        format!("unix:{}", socket.display()),
        format!("127.0.0.1:{port}"),
    );
    // Real time: the connections' deadlines are the daemon's, in its clock.
    let crond = Crond::start_fast(&tree, 1, START, 1, &["--metrics", &unix, "--metrics", &tcp]);
    crond.wait_for_log(&format!("metrics served at {tcp}"), 10);
    let holder = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "extensions::hold_idle_metrics_connections"])
        .args(["--ignored", "--nocapture", "--test-threads", "1"])
        .env("CROND_TEST_HOLD", format!("{port} {HOLD_S}"))
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("run this test binary as nobody");
    std::thread::sleep(std::time::Duration::from_secs(1));
    let (ticks, wakes, since) = (
        cpu_ticks(crond.pid()),
        wake_ups(crond.pid()),
        std::time::Instant::now(),
    );
    let mut ok = 0;
    for _ in 0..40 {
        ok += usize::from(scrape_unix(&socket));
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    // A TCP client waits behind the held connections in the backlog, and is served.
    let tcp_since = std::time::Instant::now();
    let tcp_text = curl(None, &format!("http://{tcp}/metrics"));
    let tcp_wait = tcp_since.elapsed();
    let (ticks, wakes, seconds) = (
        cpu_ticks(crond.pid()) - ticks,
        wake_ups(crond.pid()) - wakes,
        since.elapsed().as_secs_f64(),
    );
    let out = holder.wait_with_output().unwrap();
    let out = String::from_utf8_lossy(&out.stdout);
    let closed: u64 = out
        .lines()
        .find_map(|l| l.split("held: closed by the daemon ").nth(1))
        .unwrap_or_else(|| panic!("the holder's report in {out}"))
        .parse()
        .unwrap();
    let hz: f64 = String::from_utf8(
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    // The figures (`--nocapture` shows them); only the counts are asserted, never a time.
    println!(
        "40 idle connections held by nobody: Unix scrapes {ok}/40; daemon CPU {ticks} ticks in \
         {seconds:.1} s ({:.2} % of a core); {wakes} wake-ups; {closed} held connections \
         accepted and closed in {HOLD_S} s; a TCP scrape waited {:.1} s",
        ticks as f64 / hz / seconds * 100.0,
        tcp_wait.as_secs_f64()
    );
    assert_eq!(ok, 40, "every scrape of the Unix socket is answered");
    assert_eq!(
        sample(&tcp_text, "crond_jobs_running"),
        Some(0.0),
        "{tcp_text}"
    );
    // 16 slots, freed 2 s after their accept: at most 16 accepts per 2 s (no accept-and-close
    // of the rest, which wait in the backlog).
    let most = 16 * (HOLD_S / 2 + 2);
    assert!(
        closed <= most,
        "{closed} held connections accepted and closed, more than {most}"
    );
}

#[test]
fn root_a_metrics_socket_is_made_only_in_a_directory_no_one_else_can_change() {
    require_root();
    let tree = Tree::new();
    let set_mode = |p: &std::path::Path, m: u32| {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(m)).unwrap()
    };
    let open = tree.path().join("open");
    std::fs::create_dir(&open).unwrap();
    set_mode(&open, 0o777);
    let private = tree.path().join("private");
    std::fs::create_dir(&private).unwrap();
    let link = tree.path().join("link");
    std::os::unix::fs::symlink(&private, &link).unwrap();
    // Others could rename the socket away and put a link to another file in its place before
    // the group is set; a symlink could be changed to point elsewhere.
    for (n, dir, why) in [
        (
            1,
            &open,
            format!("{}: writable by group or others (mode 777)", open.display()),
        ),
        (
            2,
            &link,
            format!(
                "{}: a symlink (give the directory's real path)",
                link.display()
            ),
        ),
    ] {
        let socket = dir.join("metrics.sock");
        let mut crond = Crond::start(
            &tree,
            n,
            &[
                "--metrics",
                &format!("unix:{}", socket.display()),
                "--metrics-group",
                "nogroup",
            ],
        );
        let status = crate::support::daemon::wait_with_timeout(crond.child.as_mut().unwrap(), 10);
        crond.child = None;
        assert!(!status.success());
        let log = crond.log_text();
        assert!(log.contains(&format!("--metrics: {why}")), "{log}");
        assert!(!socket.exists() && !private.join("metrics.sock").exists());
    }
    // A sticky directory is fine: others can't rename or remove the daemon's socket there.
    let sticky = tree.path().join("sticky");
    std::fs::create_dir(&sticky).unwrap();
    set_mode(&sticky, 0o1777);
    let socket = sticky.join("metrics.sock");
    let crond = Crond::start(
        &tree,
        3,
        &["--metrics", &format!("unix:{}", socket.display())],
    );
    crond.wait_for_log("metrics served at unix:", 10);
    assert!(curl(Some(&socket), "http://localhost/metrics").contains("crond_jobs_running 0"));
}

#[test]
fn root_a_state_directory_in_one_others_can_write_is_neither_read_nor_written_whatever_is_swapped_in()
 {
    require_root();
    let tree = Tree::new();
    let me = current_user();
    let once = tree.out("once");
    tree.user_crontab(
        &me,
        &format!(
            "CRON_MISSED=once\n0 * * * * echo ran >> {}\n",
            once.display()
        ),
        0o600,
        &me,
    );
    // A state directory as the daemon makes it, with the file it wrote at 08:00, but in a
    // directory anyone may write: the file could be an old copy put back to replay runs.
    let open = tree.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let state = open.join("state");
    std::fs::create_dir(&state).unwrap();
    let written = "crond-handled 1\n29920800\n";
    std::fs::write(state.join("handled"), written).unwrap();
    let state_arg = state.to_str().unwrap();
    let mut crond = Crond::start_at(&tree, 1, "2026-11-21 10:30:00", &["--state-dir", state_arg]);
    let warning = crond.wait_for_log("handled ignored", 15);
    assert!(
        warning.contains(&format!(
            "{}: writable by group or others (mode 777)",
            open.display()
        )),
        "{warning}"
    );
    crond.wait_for_log(" loaded from ", 5);
    crond.wait_for_log(&format!("can't write {}/handled: ", state.display()), 5);
    // nobody swaps the directory for a symlink to another of root's.
    let victim = tree.path().join("victim");
    std::fs::create_dir(&victim).unwrap();
    let swap = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "sh",
            "-c",
        ])
        .arg(format!(
            "mv {0}/state {0}/old && ln -s {1} {0}/state",
            open.display(),
            victim.display()
        ))
        .status()
        .unwrap();
    assert!(swap.success());
    crond.stop();
    let log = crond.log_text();
    assert!(!log.contains(") MISSED ("), "{log}");
    assert_eq!(
        std::fs::read_dir(&victim).unwrap().count(),
        0,
        "nothing written through the link"
    );
    assert_eq!(
        std::fs::read_to_string(open.join("old/handled")).unwrap(),
        written
    );
    assert!(!open.join("old/handled.new").exists());
}

#[test]
fn root_every_five_seconds_runs_six_times_in_thirty_seconds_beside_a_minute_entry() {
    require_root();
    let tree = Tree::new();
    let me = current_user();
    tree.user_crontab(
        &me,
        "@every 5s echo tick\n* * * * * echo minute\n",
        0o600,
        &me,
    );
    // The daemon starts at 09:59:50 (fake, ten times faster): ticks at :55, :00, :05, ...
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" 10:00:3", 20);
    crond.wait_for_log(&format!("({me}) CMD (echo tick)"), 5);
    let seconds = |needle: &str| -> Vec<i64> {
        times_of(&crond, needle)
            .iter()
            .map(|t| {
                let p: Vec<i64> = t.split(':').map(|x| x.parse().unwrap()).collect();
                p[0] * 3600 + p[1] * 60 + p[2] - (9 * 3600 + 59 * 60 + 50)
            })
            .collect()
    };
    let ticks = seconds(&format!("({me}) CMD (echo tick)"));
    let within_30: Vec<i64> = ticks.iter().copied().filter(|&t| t <= 30).collect();
    assert_eq!(within_30.len(), 6, "ticks at {ticks:?} s after the start");
    for pair in ticks.windows(2) {
        assert!((4..=6).contains(&(pair[1] - pair[0])), "{ticks:?}");
    }
    // The minute entry keeps its rule: 10:00 only, once.
    assert_eq!(
        times_of(&crond, &format!("({me}) CMD (echo minute)")),
        ["10:00:00"]
    );
}

#[test]
fn root_with_metrics_group_the_socket_is_readable_by_that_group_only() {
    require_root();
    let tree = Tree::new();
    let socket = tree.path().join("metrics.sock");
    let crond = Crond::start(
        &tree,
        1,
        &[
            "--metrics",
            &format!("unix:{}", socket.display()),
            "--metrics-group",
            "nogroup",
        ],
    );
    crond.wait_for_log("metrics served at unix:", 10);
    let meta = std::fs::metadata(&socket).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(meta.mode() & 0o777, 0o660);
    let nogroup = crond::sys::user::group_id("nogroup")
        .unwrap()
        .expect("Debian's nogroup");
    assert_eq!((meta.uid(), meta.gid()), (0, nogroup.0));
    assert!(curl(Some(&socket), "http://localhost/metrics").contains("crond_jobs_running 0"));
}

#[test]
fn root_an_entry_with_h_fires_at_the_minute_cronnext_resolves_it_to() {
    require_root();
    let tree = Tree::new();
    let file = tree.cron_d().join("spread");
    tree.write_file(&file, "H 10 * * * root true hashed\n", 0o644);
    // cronnext reads the file by the path crond reads it by, so it hashes the same entry.
    let out = Command::new(env!("CARGO_BIN_EXE_cronnext"))
        .args(["--system", "--tz", "UTC", "--after", "2026-11-21T09:59:00Z"])
        .arg(&file)
        .output()
        .expect("run cronnext");
    let printed = String::from_utf8(out.stdout).unwrap();
    // `2026-11-21T10:MM:00+00:00 root [H: MM 10 * * *] true hashed`
    let minute: u32 = printed
        .split("[H: ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no resolved fields in {printed:?}"));
    assert!(
        printed.starts_with(&format!("2026-11-21T10:{minute:02}:00+00:00 ")),
        "{printed}"
    );
    // Started ten seconds (one real second) before that minute: it fires as it begins.
    let start = match minute {
        0 => "2026-11-21 09:59:50".to_string(),
        m => format!("2026-11-21 10:{:02}:50", m - 1),
    };
    let crond = Crond::start_at(&tree, 1, &start, &[]);
    crond.wait_for_log("(root) CMD (true hashed)", 15);
    let fired = times_of(&crond, "(root) CMD (true hashed)");
    assert_eq!(fired.len(), 1, "{}", crond.log_text());
    assert!(
        fired[0].starts_with(&format!("10:{minute:02}:")),
        "{}",
        crond.log_text()
    );
}
