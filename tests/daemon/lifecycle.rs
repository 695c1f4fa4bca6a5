//! The real `crond`'s life: one instance per pid file, a clean stop on SIGTERM that leaves
//! running jobs alone, @reboot once per boot (marker file), detaching without `-f`.
//! These need no root: every path is overridden and jobs run as the current user.

use std::process::Command;
use std::time::Duration;

use crate::support::daemon::*;
use crate::support::fork_limit::ForkLimit;

#[test]
fn a_second_daemon_cannot_start_on_the_same_pid_file() {
    let tree = Tree::new();
    let crond = Crond::start(&tree, 1, &[]);
    // The first line names the version and the pid file.
    let first = crond.wait_for_log("INFO (", 10);
    assert!(
        first.ends_with(&format!(
            "(CRON) INFO (crond {} started (pid file {}))",
            env!("CARGO_PKG_VERSION"),
            tree.pid_file().display()
        )),
        "{first}"
    );
    let second = tree
        .daemon_args(&mut Command::new(env!("CARGO_BIN_EXE_crond")))
        .output()
        .expect("run a second crond");
    assert_eq!(second.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&second.stderr),
        format!(
            "crond: can't lock {}, otherpid may be {}\n",
            tree.pid_file().display(),
            crond.pid()
        )
    );
    assert_eq!(
        std::fs::read_to_string(tree.pid_file()).expect("pid file"),
        format!("{}\n", crond.pid())
    );
}

/// A daemon whose job has just started and sleeps a second before writing `after`.
fn start_with_a_sleeping_job(tree: &Tree) -> (Crond, std::path::PathBuf) {
    let after = tree.out("after");
    let me = current_user();
    tree.user_crontab(
        &me,
        &format!("0 10 * * * sleep 1; echo done > {}\n", after.display()),
        0o600,
        &me,
    );
    let crond = Crond::start(tree, 1, &[]);
    crond.wait_for_log(&format!("({me}) CMD (sleep 1;"), 15);
    (crond, after)
}

#[test]
fn sigterm_stops_the_daemon_cleanly_and_running_jobs_finish() {
    let tree = Tree::new();
    let (mut crond, after) = start_with_a_sleeping_job(&tree);
    let status = crond.stop();
    assert_eq!(status.code(), Some(0), "a clean exit");
    assert!(crond.log_text().contains("(CRON) INFO (Shutting down)"));
    assert!(
        crond
            .log_text()
            .contains("(CRON) INFO (1 job still running; it finishes on its own)"),
        "the daemon knew its job was still running"
    );
    assert!(!after.exists(), "the job is still sleeping");
    assert_eq!(
        wait_for_file(&after, 10),
        "done\n",
        "the job outlived the daemon"
    );
}

#[test]
fn a_clean_stop_removes_the_pid_file_and_the_control_sockets_but_not_anothers() {
    let tree = Tree::new();
    let socket = tree.pid_file().with_file_name("crond.sock");
    let private = tree.pid_file().with_file_name("crond.private.sock");
    let mut crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    for path in [&tree.pid_file(), &socket, &private] {
        assert!(path.exists(), "{} while it runs", path.display());
    }
    assert_eq!(crond.stop().code(), Some(0));
    for path in [&tree.pid_file(), &socket, &private] {
        assert!(!path.exists(), "{} after a clean stop", path.display());
    }
    // A socket put in its place by someone else (another daemon's) is left alone.
    let mut crond = Crond::start(&tree, 2, &[]);
    crond.wait_for_log(" loaded from ", 10);
    std::fs::remove_file(&socket).expect("remove");
    let other = std::os::unix::net::UnixListener::bind(&socket).expect("bind");
    assert_eq!(crond.stop().code(), Some(0));
    assert!(socket.exists(), "another's socket stays");
    drop(other);
}

#[test]
fn reboot_jobs_run_once_across_a_restart() {
    let tree = Tree::new();
    let boot = tree.out("boot");
    let me = current_user();
    tree.user_crontab(
        &me,
        &format!("@reboot echo boot >> {}\n", boot.display()),
        0o600,
        &me,
    );
    let mut first = Crond::start(&tree, 1, &[]);
    first.wait_for_log("(CRON) INFO (Running @reboot jobs)", 10);
    assert_eq!(wait_for_file(&boot, 10), "boot\n");
    assert_eq!(first.stop().code(), Some(0));

    let second = Crond::start(&tree, 2, &[]);
    second.wait_for_log(
        "(CRON) INFO (Skipping @reboot jobs -- not system startup)",
        10,
    );
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(std::fs::read_to_string(&boot).expect("boot"), "boot\n");
}

#[test]
fn without_minus_f_the_daemon_detaches_and_writes_its_pid() {
    let tree = Tree::new();
    let status = Command::new(env!("CARGO_BIN_EXE_crond"))
        .args(["--log", "stderr"])
        .arg("--spool-dir")
        .arg(tree.spool())
        .arg("--system-crontab")
        .arg(tree.system_crontab())
        .arg("--cron-d")
        .arg(tree.cron_d())
        .arg("--pid-file")
        .arg(tree.pid_file())
        .arg("--reboot-marker")
        .arg(tree.reboot_marker())
        .status()
        .expect("run crond");
    assert!(
        status.success(),
        "the parent exits 0 once the child is on its own"
    );
    let pid = std::fs::read_to_string(tree.pid_file()).expect("pid file");
    let pid = pid.trim();
    // Stops the detached daemon even when an assertion below fails.
    struct Term<'a>(&'a str);
    impl Drop for Term<'_> {
        fn drop(&mut self) {
            let _ = Command::new("kill").args(["-TERM", self.0]).status();
        }
    }
    let _term = Term(pid);
    assert!(
        std::path::Path::new(&format!("/proc/{pid}")).exists(),
        "the daemon {pid} runs"
    );
    // The child calls setsid right after the parent has written its pid and exited.
    let session = || {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
        let after_name = stat.rsplit(')').next().expect("stat").to_string();
        after_name
            .split_whitespace()
            .nth(3)
            .expect("session")
            .to_string()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while session() != pid && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(session(), pid, "it leads its own session");
}

#[test]
fn a_non_root_daemon_without_every_path_refuses_to_start() {
    if is_root() {
        // As root the daemon would start on the real paths: check the rule the other way.
        let out = Command::new(env!("CARGO_BIN_EXE_crond"))
            .args(["-x"])
            .output()
            .expect("run crond");
        assert_eq!(out.status.code(), Some(1), "a bad flag is refused");
        return;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_crond"))
        .args(["-f", "--spool-dir", "/tmp"])
        .output()
        .expect("run crond");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be run as root"));
}

#[test]
fn jobs_inherit_no_daemon_descriptors_and_the_daemon_keeps_one_thread() {
    let tree = Tree::new();
    let fds = tree.out("fds");
    let me = current_user();
    tree.user_crontab(
        &me,
        &format!("0 10 * * * ls -l /proc/$$/fd > {}\n", fds.display()),
        0o600,
        &me,
    );
    let crond = Crond::start(&tree, 1, &[]);
    let listed = wait_for_file(&fds, 15);
    // The daemon's signal pipe is a socket, inotify and the timer are anon inodes, the lock is
    // the pid file: none may reach a job (the shell's own redirections may show up).
    for line in listed.lines().filter(|l| l.contains("->")) {
        assert!(
            !line.contains("socket:")
                && !line.contains("anon_inode:")
                && !line.contains("crond.pid"),
            "a daemon descriptor leaked into the job: {line}\n{listed}"
        );
    }
    assert!(
        listed.lines().filter(|l| l.contains("->")).count() >= 3,
        "{listed}"
    );
    let status = std::fs::read_to_string(format!("/proc/{}/status", crond.pid())).expect("status");
    assert!(
        status.lines().any(|l| l == "Threads:\t1"),
        "the daemon is single-threaded:\n{status}"
    );
    // No zombie children left behind once the job has ended.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        crond.job_children(),
        Vec::<u32>::new(),
        "every job child was reaped"
    );
}

#[test]
fn a_killed_daemons_running_jobs_do_not_hold_its_pid_file_lock() {
    let tree = Tree::new();
    let (mut crond, after) = start_with_a_sleeping_job(&tree);
    // SIGKILL: nothing in the daemon unlocks; only the job children could still hold the lock.
    let mut child = crond.child.take().expect("running");
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    let next = Crond::start(&tree, 2, &[]);
    next.wait_for_log(" loaded from ", 5);
    assert!(
        !after.exists(),
        "the job was still running when the new daemon took the lock"
    );
    assert_eq!(wait_for_file(&after, 10), "done\n");
}

#[test]
fn a_backlog_past_the_boundary_is_carried_over_and_nothing_is_lost_or_doubled() {
    const JOBS: usize = 3000;
    let tree = Tree::new();
    let seq = tree.out("seq");
    let me = current_user();
    let mut text = String::new();
    for i in 0..JOBS {
        text.push_str(&format!("0 10 * * * echo {i} >> {}\n", seq.display()));
    }
    text.push_str(&format!("1 10 * * * echo late >> {}\n", seq.display()));
    tree.user_crontab(&me, &text, 0o600, &me);
    // One fake minute per real second: starting 3000 jobs takes several of them.
    let crond = Crond::start_fast(&tree, 1, "2026-11-21 09:59:59", 60, &[]);
    crond.wait_for_log("jobs not started last minute: they start first now", 60);
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    // Wait until every line is there, then a little longer for any double run to show.
    while std::fs::read_to_string(&seq)
        .unwrap_or_default()
        .lines()
        .count()
        <= JOBS
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_millis(500));
    let lines: Vec<String> = std::fs::read_to_string(&seq)
        .expect("seq")
        .lines()
        .map(str::to_string)
        .collect();
    assert!(
        lines.len() > JOBS,
        "only {} of {} lines",
        lines.len(),
        JOBS + 1
    );
    let mut numbers: Vec<usize> = lines
        .iter()
        .filter(|l| *l != "late")
        .map(|l| l.parse().expect("a number"))
        .collect();
    numbers.sort_unstable();
    assert_eq!(
        numbers,
        (0..JOBS).collect::<Vec<_>>(),
        "each job exactly once"
    );
    assert_eq!(lines.iter().filter(|l| *l == "late").count(), 1);
}

#[test]
fn the_daemon_tells_systemd_when_it_is_ready_and_when_it_stops() {
    use std::os::unix::net::UnixDatagram;
    let tree = Tree::new();
    let me = current_user();
    tree.user_crontab(&me, "0 0 1 1 * true\n", 0o600, &me);
    let socket_path = tree.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).expect("bind the notify socket");
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    struct KillOnDrop(std::process::Child);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let mut child = KillOnDrop(
        tree.daemon_args(&mut Command::new(env!("CARGO_BIN_EXE_crond")))
            .env("NOTIFY_SOCKET", &socket_path)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("start crond"),
    );
    let mut buf = [0u8; 512];
    let n = socket.recv(&mut buf).expect("READY=1 within 10 s");
    let ready = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(
        ready.starts_with("READY=1\nSTATUS=1 entry from "),
        "{ready:?}"
    );
    let kill = Command::new("kill")
        .args(["-TERM", &child.0.id().to_string()])
        .status()
        .expect("kill");
    assert!(kill.success());
    let n = socket.recv(&mut buf).expect("STOPPING=1 within 10 s");
    assert_eq!(String::from_utf8_lossy(&buf[..n]), "STOPPING=1");
    assert_eq!(wait_with_timeout(&mut child.0, 10).code(), Some(0));
}

#[test]
fn root_when_fork_fails_the_daemon_waits_logs_once_a_minute_and_recovers_without_doubling() {
    require_root();
    let tree = Tree::new();
    let runs = tree.out("runs");
    let (wrapper, user) = ForkLimit::wrapper();
    let lines: String = (0..20)
        .map(|i| format!("* * * * * {user} echo {i} >> {}\n", runs.display()))
        .collect();
    tree.write_file(&tree.cron_d().join("many"), &lines, 0o644);
    // Thirty fake seconds (three real) before 10:00.
    let crond = Crond::start_wrapped(&tree, 1, "2026-11-21 09:59:30", wrapper, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let limit = ForkLimit::on(crond.pid());
    // Every fork fails (EAGAIN) from here.
    limit.set(true);
    // Through 10:00 and 10:01 (fake), where every entry is due twice.
    crond.wait_for_log("more failed attempt", 20);
    let failing = crond.log_text();
    limit.set(false);
    crond.wait_for_log("(CRON) INFO (fork works again after ", 10);
    // Each entry once: the run of 10:01 merged into the one of 10:00 still waiting its turn
    // (of the one whose fork was being retried at 10:01, the run of 10:00 was given up and
    // the run of 10:01 took its place).
    wait_for_runs(&crond, &runs, 20, 10);
    assert_eq!(
        sorted_runs(&runs),
        (0..20).collect::<Vec<u32>>(),
        "each entry once"
    );
    // While forks failed: the first failure logged at once, then one line a minute with the
    // count, never a line per attempt (the old loop wrote 899 lines in 9 s).
    let fork_lines = failing.lines().filter(|l| l.contains("can't fork")).count();
    assert!((2..=3).contains(&fork_lines), "{failing}");
    assert!(
        failing.contains("jobs wait and are retried every second"),
        "{failing}"
    );
}

#[test]
fn root_a_run_whose_forks_fail_past_its_entrys_next_slot_is_recorded_fork_failed_then_it_runs() {
    require_root();
    if ForkLimit::pids_cgroup_root().is_none() {
        panic!("this test needs a pids cgroup (cgroup v1's pids, or v2 with pids enabled)");
    }
    let tree = Tree::new();
    let runs = tree.out("runs");
    let command = format!("echo ran >> {}", runs.display());
    let line = format!("* * * * * root {command}\n");
    tree.write_file(&tree.cron_d().join("one"), &line, 0o644);
    let metrics = tree.path().join("metrics.sock");
    let serve = format!("unix:{}", metrics.display());
    // Thirty fake seconds (three real) before 10:00; the history writer starts before the
    // limit, outside the daemon's group.
    let crond = Crond::start_at(&tree, 1, "2026-11-21 09:59:30", &["--metrics", &serve]);
    crond.wait_for_log(" loaded from ", 10);
    let limit = ForkLimit::on(crond.pid());
    limit.set(true);
    // 10:00's run is retried every second until 10:01 comes: then it is given up, and 10:01's
    // run takes its place in the queue.
    let given_up = crond.wait_for_log(&format!("(root) FORK FAILED ({command})"), 20);
    limit.set(false);
    assert!(
        given_up.contains(" due at 10:00, no process for it in ")
            && given_up.ends_with(" until 10:01: not started, its next run takes its place"),
        "{given_up}"
    );
    // Forks work again: the entry runs (10:01's run, and each one after).
    crate::support::daemon::wait_for_file(&runs, 10);
    let socket = crate::control::socket_of(&tree);
    let rows = crate::history::history(None, &socket, &["--failed"], 1);
    let row = &rows[0];
    assert_eq!(row["status"], "not-run", "{row}");
    assert_eq!(row["reason"], "fork-failed", "{row}");
    assert_eq!(row["trigger"], "schedule", "{row}");
    assert_eq!(row["slot"], "2026-11-21T10:00:00+00:00", "{row}");
    let words = row["words"].as_str().unwrap();
    assert!(
        words.starts_with("no process could be made for it from 10:00 to 10:01 (")
            && words.ends_with(" tries): Resource temporarily unavailable (os error 11)"),
        "{words}"
    );
    let rows = crate::history::history(None, &socket, &["--limit", "2"], 2);
    let ran = rows
        .iter()
        .find(|r| r["slot"] == "2026-11-21T10:01:00+00:00");
    assert_eq!(ran.map(|r| &r["status"]), Some(&"ok".into()), "{rows:#?}");
    let text = crate::extensions::curl(Some(&metrics), "http://localhost/metrics");
    let counted = crate::extensions::sample(&text, "crond_not_run_total{reason=\"fork-failed\"}");
    assert_eq!(counted, Some(1.0), "{text}");
}

#[test]
fn root_when_a_job_childs_own_fork_fails_the_run_goes_back_in_the_queue_and_runs_once() {
    require_root();
    if ForkLimit::pids_cgroup_root().is_none() {
        panic!("this test needs a pids cgroup (cgroup v1's pids, or v2 with pids enabled)");
    }
    let tree = Tree::new();
    let runs = tree.out("runs");
    // One entry: with more, the daemon's fork of a second job child would fail while the first
    // one lives (both count against the same limit), and which failure came first would decide
    // the words of the log.
    tree.write_file(
        &tree.cron_d().join("one"),
        &format!("0 10 * * * root echo 0 >> {}\n", runs.display()),
        0o644,
    );
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let limit = ForkLimit::on(crond.pid());
    // The daemon and one job child: the daemon's fork works while no child runs, and that
    // child's own (its shell's) never does.
    limit.allow(2);
    // Through 10:00 and 10:01 (fake), the run of 10:00 failing and put back again and again.
    crond.wait_for_log("more failed attempt", 20);
    let failing = crond.log_text();
    limit.set(false);
    crond.wait_for_log("(CRON) INFO (fork works again after ", 10);
    wait_for_runs(&crond, &runs, 1, 10);
    // Give a doubled run the time to show.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        std::fs::read_to_string(&runs).unwrap(),
        "0\n",
        "the run once: not lost, not doubled"
    );
    // While the child's forks failed: no run was logged as started, and the failures were
    // logged as the daemon's own are: the first at once, then one line a minute with the count,
    // each naming the job child.
    assert!(!failing.contains("(root) CMD ("), "{failing}");
    let fork_lines: Vec<&str> = failing
        .lines()
        .filter(|l| l.contains("can't fork"))
        .collect();
    assert!((2..=3).contains(&fork_lines.len()), "{failing}");
    assert!(
        fork_lines
            .iter()
            .all(|l| l.contains("no process for the job in its job child")),
        "{failing}"
    );
}

#[test]
fn root_at_the_edge_of_a_pids_limit_forks_that_fail_and_work_in_turn_write_a_few_lines_a_minute() {
    require_root();
    if ForkLimit::pids_cgroup_root().is_none() {
        panic!("this test needs a pids cgroup (cgroup v1's pids, or v2 with pids enabled)");
    }
    let tree = Tree::new();
    let runs = tree.out("runs");
    let lines: String = (0..20)
        .map(|i| format!("0 10 * * * root echo {i} >> {}\n", runs.display()))
        .collect();
    tree.write_file(&tree.cron_d().join("many"), &lines, 0o644);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let limit = ForkLimit::on(crond.pid());
    // The daemon, a job child and one more: some forks fail (the daemon's of a second child, or
    // a child's of its shell while another child lives), some work, in turn.
    limit.allow(3);
    wait_for_runs(&crond, &runs, 20, 60);
    // The minute after: the failures counted in one line.
    crond.wait_for_log("more failed attempt", 20);
    // Give a doubled run the time to show.
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        sorted_runs(&runs),
        (0..20).collect::<Vec<u32>>(),
        "each run once"
    );
    // Two lines a second before (a failure, then a recovery, for every job). Now, in each
    // minute (by the lines' stamps), at most two of each kind: the count of the minute before
    // and the first failure of a new series; the recovery owed by the minute before and one
    // of this minute.
    let log = crond.log_text();
    let per_minute = |what: &str| {
        let mut minutes: std::collections::BTreeMap<String, usize> = Default::default();
        for line in log.lines().filter(|l| l.contains(what)) {
            let minute = line.split_whitespace().nth(2).unwrap()[..5].to_string();
            *minutes.entry(minute).or_default() += 1;
        }
        minutes
    };
    let failed = per_minute("can't fork");
    let works = per_minute("fork works again");
    assert!(!failed.is_empty() && !works.is_empty(), "{log}");
    assert!(failed.values().all(|&n| n <= 2), "{failed:?}\n{log}");
    assert!(works.values().all(|&n| n <= 2), "{works:?}\n{log}");
}

/// Waits up to `secs` for the file the jobs append their number to to hold `n` lines.
fn wait_for_runs(crond: &Crond, runs: &std::path::Path, n: usize, secs: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::fs::read_to_string(runs).map_or(0, |t| t.lines().count()) < n {
        assert!(
            std::time::Instant::now() < deadline,
            "fewer than {n} runs in {secs} s: {}",
            crond.log_text()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The numbers the jobs appended to `runs`, sorted.
fn sorted_runs(runs: &std::path::Path) -> Vec<u32> {
    let mut ran: Vec<u32> = std::fs::read_to_string(runs)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    ran.sort();
    ran
}

/// The fake minute (`HH:MM`) of each `CMD` line with `command` in the log: when the job child
/// started it, by the daemon's clock (jobs themselves get a clean environment and real time).
fn minutes_run(crond: &Crond, command: &str) -> Vec<String> {
    let needle = format!("(root) CMD ({command}");
    crond
        .log_text()
        .lines()
        .filter(|l| l.contains(&needle))
        .filter_map(|l| l.split_whitespace().nth(2).map(|t| t[..5].to_string()))
        .collect()
}

fn wait_for_minutes(crond: &Crond, command: &str, count: usize, secs: u64) -> Vec<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let seen = minutes_run(crond, command);
        if seen.len() >= count {
            return seen;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{count} runs of {command:?} expected, saw {seen:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// A daemon on a steppable clock with the cron.d file `text` (its wildcard entry's command is
/// `true wildcard`), run until that entry has run at 10:00, then the clock set `to`, and the
/// daemon's word that it saw the step.
fn stepped_after_ten_oclock(text: &str, to: &str) -> (Tree, Crond) {
    require_root();
    let tree = Tree::new();
    tree.write_file(&tree.cron_d().join("step"), text, 0o644);
    let crond = Crond::start_steppable(&tree, 1, "2026-11-21 09:59:50", &[]);
    assert_eq!(wait_for_minutes(&crond, "true wildcard", 1, 10), ["10:00"]);
    crond.set_clock(&tree, to);
    crond.wait_for_log("clock set: ", 10);
    (tree, crond)
}

/// A wildcard and a fixed 10:00 entry that both ran at 10:00, then the clock stepped to `to`.
fn both_ran_at_ten_then_stepped(to: &str) -> (Tree, Crond) {
    require_root();
    let tree = Tree::new();
    tree.write_file(
        &tree.cron_d().join("step"),
        "* * * * * root true wildcard\n0 10 * * * root true fixed\n",
        0o644,
    );
    let crond = Crond::start_steppable(&tree, 1, "2026-11-21 09:59:50", &[]);
    assert_eq!(wait_for_minutes(&crond, "true wildcard", 1, 10), ["10:00"]);
    // Its CMD line logged before the step, so it carries the time it ran at.
    assert_eq!(wait_for_minutes(&crond, "true fixed", 1, 10), ["10:00"]);
    crond.set_clock(&tree, to);
    crond.wait_for_log("clock set: ", 10);
    (tree, crond)
}

#[test]
fn root_after_the_clock_is_set_back_half_an_hour_wildcard_entries_run_in_the_repeated_minutes() {
    // Back 30 minutes, in the middle of the minute (10:00:0x → 09:30:30).
    let (_tree, crond) = both_ran_at_ten_then_stepped("2026-11-21 09:30:30");
    // Debian's rule, applied when the change is noticed: the wildcard entry runs for the
    // current minute at once, then in each repeated minute (09:31...); the fixed-time entry
    // ran once (that it is not repeated when 10:00 comes round: the two-minute test below).
    assert_eq!(
        wait_for_minutes(&crond, "true wildcard", 3, 20),
        ["10:00", "09:30", "09:31"]
    );
    assert_eq!(minutes_run(&crond, "true fixed"), ["10:00"]);
    assert!(
        crond
            .log_text()
            .contains("SIGHUP: reloading every crontab and reading the clock")
    );
}

#[test]
fn root_after_the_clock_is_set_back_two_minutes_a_fixed_time_is_not_repeated_when_it_comes_round() {
    let (_tree, crond) = both_ran_at_ten_then_stepped("2026-11-21 09:58:30");
    // The wildcard runs in every repeated minute, 10:00 included, and goes on at 10:01; the
    // fixed-time entry of 10:00 ran before the step and does not run again.
    assert_eq!(
        wait_for_minutes(&crond, "true wildcard", 5, 25),
        ["10:00", "09:58", "09:59", "10:00", "10:01"]
    );
    assert_eq!(minutes_run(&crond, "true fixed"), ["10:00"]);
}

#[test]
fn root_after_the_clock_is_set_forward_three_minutes_every_skipped_minute_runs_at_once() {
    let (_tree, crond) = stepped_after_ten_oclock(
        "* * * * * root true wildcard\n2 10 * * * root true fixed\n",
        "2026-11-21 10:03:30",
    );
    // 10:01, 10:02 and 10:03 each run once, at once (so all logged at 10:03), and the fixed
    // entry of 10:02 with them. (Each job child logs its own CMD line: the fixed entry's may
    // come after the last wildcard's.)
    assert_eq!(
        wait_for_minutes(&crond, "true wildcard", 4, 10),
        ["10:00", "10:03", "10:03", "10:03"]
    );
    assert_eq!(wait_for_minutes(&crond, "true fixed", 1, 10), ["10:03"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        (
            minutes_run(&crond, "true wildcard").len(),
            minutes_run(&crond, "true fixed").len()
        ),
        (4, 1),
        "nothing more"
    );
}

#[test]
fn a_daemon_restarted_in_the_minute_it_was_killed_in_does_not_run_that_minute_again() {
    let tree = Tree::new();
    let me = current_user();
    tree.user_crontab(
        &me,
        "0 10 * * * true once\n* * * * * true every\n",
        0o600,
        &me,
    );
    let mut first = Crond::start(&tree, 1, &[]);
    first.wait_for_log("CMD (true once)", 10);
    first.wait_for_log("CMD (true every)", 10);
    // SIGKILL just after the boundary's jobs started, a new daemon in the same minute (10:00:05).
    let mut child = first.child.take().expect("running");
    child.kill().expect("SIGKILL");
    child.wait().expect("wait");
    let second = Crond::start_at(&tree, 2, "2026-11-21 10:00:05", &[]);
    second.wait_for_log(" loaded from ", 10);
    // Half a fake minute later, still 10:00: nothing of 10:00 ran again; at 10:01 the
    // wildcard entry runs (the daemon is alive and on time), the fixed one does not.
    second.wait_for_log("CMD (true every)", 15);
    let log = second.log_text();
    assert!(!log.contains("CMD (true once)"), "{log}");
    let minutes: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("CMD (true every)"))
        .filter_map(|l| l.split_whitespace().nth(2))
        .collect();
    assert!(
        minutes.iter().all(|t| t.starts_with("10:01")),
        "{minutes:?}"
    );
}

#[test]
fn root_sigterm_with_a_hundred_running_jobs_leaves_them_running_and_releases_the_lock() {
    require_root();
    let tree = Tree::new();
    let done = tree.out("done");
    let lines: String = (0..100)
        .map(|i| format!("0 10 * * * root sleep 2; echo {i} >> {}\n", done.display()))
        .collect();
    tree.write_file(&tree.cron_d().join("hundred"), &lines, 0o644);
    let mut crond = Crond::start(&tree, 1, &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while crond.log_text().matches("(root) CMD (sleep 2").count() < 100 {
        assert!(
            std::time::Instant::now() < deadline,
            "the jobs did not all start"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let status = crond.stop();
    assert!(status.success(), "{status:?}");
    assert!(
        crond
            .log_text()
            .contains("100 jobs still running; they finish on their own")
    );
    // The lock is free at once: a new daemon starts while the jobs still run.
    let next = Crond::start(&tree, 2, &[]);
    next.wait_for_log(" loaded from ", 5);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::fs::read_to_string(&done).map_or(0, |t| t.lines().count()) < 100 {
        assert!(
            std::time::Instant::now() < deadline,
            "the jobs did not all finish"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn root_after_the_clock_is_set_forward_half_an_hour_skipped_fixed_times_run_once_and_wildcards_do_not()
 {
    let (_tree, crond) = stepped_after_ten_oclock(
        "* * * * * root true wildcard\n15 10 * * * root true fixed\n",
        "2026-11-21 10:30:30",
    );
    // 6 to 180 minutes forward: the wildcard entry runs for the current minute only, the
    // fixed-time entry of 10:15 once, now.
    assert_eq!(
        wait_for_minutes(&crond, "true wildcard", 2, 10),
        ["10:00", "10:30"]
    );
    assert_eq!(wait_for_minutes(&crond, "true fixed", 1, 10), ["10:30"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        minutes_run(&crond, "true wildcard").len(),
        2,
        "nothing more"
    );
}

#[test]
fn root_after_the_clock_is_set_forward_five_hours_the_daemon_starts_afresh() {
    let (_tree, crond) = stepped_after_ten_oclock(
        "* * * * * root true wildcard\n15 10 * * * root true fixed\n",
        "2026-11-21 15:00:30",
    );
    // More than 3 hours: the current minute runs, nothing skipped is caught up.
    assert_eq!(
        wait_for_minutes(&crond, "true wildcard", 2, 10),
        ["10:00", "15:00"]
    );
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(minutes_run(&crond, "true fixed").is_empty());
}

#[test]
fn root_after_the_clock_is_set_back_five_hours_the_daemon_starts_afresh() {
    let (_tree, crond) = stepped_after_ten_oclock(
        "* * * * * root true wildcard\n0 5 * * * root true fixed\n",
        "2026-11-21 05:00:30",
    );
    // More than 3 hours back: the current minute runs, wildcard and fixed-time entries alike,
    // and the day goes on from there.
    assert_eq!(
        wait_for_minutes(&crond, "true wildcard", 3, 15),
        ["10:00", "05:00", "05:01"]
    );
    assert_eq!(minutes_run(&crond, "true fixed"), ["05:00"]);
}

#[test]
fn root_a_clock_set_back_onto_a_minute_boundary_runs_that_minute_once() {
    let (_tree, crond) =
        stepped_after_ten_oclock("* * * * * root true wildcard\n", "2026-11-21 09:31:00");
    // The step's own minute runs once, at once; the next one at its time.
    assert_eq!(
        wait_for_minutes(&crond, "true wildcard", 3, 15),
        ["10:00", "09:31", "09:32"]
    );
}

#[test]
fn root_the_kernels_notice_that_the_clock_was_set_wakes_the_daemon_at_once() {
    // The one path libfaketime can't fake: the real clock is set (to itself, a step of a few
    // microseconds, harmless to the rest of the machine; it needs CAP_SYS_TIME), and the
    // kernel cancels the daemon's timer (TFD_TIMER_CANCEL_ON_SET), which wakes it.
    require_root();
    let tree = Tree::new();
    let crond = Crond::start_at(&tree, 1, "2026-11-21 09:59:00", &[]);
    crond.wait_for_log(" loaded from ", 10);
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_REALTIME).expect("read the clock");
    nix::time::clock_settime(nix::time::ClockId::CLOCK_REALTIME, now)
        .expect("set the clock (root needs CAP_SYS_TIME)");
    let line = crond.wait_for_log("the system clock was set: no minute gained or lost", 5);
    // At once, not at the next minute the timer was armed for.
    assert!(line.contains(" 09:59:"), "{line}");
}
