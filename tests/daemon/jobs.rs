//! The real `crond` runs jobs: as the crontab's user with that user's groups and a clean
//! environment, at the times the files say, including files changed while it runs.
//! Time is libfaketime's, ten times faster, starting ten seconds before 10:00.

use crate::support::daemon::*;

#[test]
fn root_a_user_job_runs_as_that_user_with_its_groups_and_a_clean_environment() {
    require_root();
    let tree = Tree::new();
    let home = tree.path().join("out");
    let user = user_with_home("u", &home);
    let ids = tree.out("ids");
    let env = tree.out("env");
    // Nothing from PAM (the machine's /etc/environment and locale are not read here; the PAM
    // tests show what PAM adds).
    tree.use_pam_files("", None);
    tree.user_crontab(
        &user.name,
        &format!(
            "FOO=bar\n0 10 * * * (id -u; id -G) > {}\n0 10 * * * env > {}\n",
            ids.display(),
            env.display()
        ),
        0o600,
        &user.name,
    );
    let _crond = Crond::start(&tree, 1, &[]);
    let text = wait_for_file(&ids, 15);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines, [user.uid(), user.groups()]);
    assert!(
        user.groups().split(' ').count() >= 2,
        "the user has a supplementary group"
    );
    assert_eq!(
        uid_of(&ids).to_string(),
        user.uid(),
        "the file is the user's"
    );

    let env = wait_for_file(&env, 15);
    let mut vars: Vec<&str> = env.lines().filter(|l| !l.starts_with("PWD=")).collect();
    vars.sort();
    let mut expected = vec![
        "FOO=bar".to_string(),
        format!("HOME={}", home.display()),
        format!("LOGNAME={}", user.name),
        "PATH=/usr/bin:/bin".to_string(),
        "SHELL=/bin/sh".to_string(),
        format!("USER={}", user.name),
    ];
    expected.sort();
    // dash adds nothing but PWD (dropped above), so the environment is exactly this.
    assert_eq!(vars, expected);
}

#[test]
fn root_a_user_taken_out_of_a_group_runs_its_next_job_without_it() {
    require_root();
    let tree = Tree::new();
    let home = tree.path().join("out");
    let user = user_with_home("g", &home);
    let ids = tree.out("ids");
    tree.use_pam_files("", None);
    // Two runs a fake minute apart (six real seconds).
    tree.user_crontab(
        &user.name,
        &format!("0,1 10 * * * id -G >> {}\n", ids.display()),
        0o600,
        &user.name,
    );
    let _crond = Crond::start(&tree, 1, &[]);
    let before = user.groups();
    let first = wait_for_file(&ids, 15);
    assert_eq!(first.lines().collect::<Vec<_>>(), [before.as_str()]);
    // The daemon looked the user up for the first run; the second, a minute later, takes the
    // group database as it is then.
    user.leave_group("users");
    let after = user.groups();
    // One group fewer (`user_with_home` puts the user in `users`).
    assert_eq!(
        after.split(' ').count() + 1,
        before.split(' ').count(),
        "{after}"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let mut text = first;
    while text.lines().count() < 2 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
        text = std::fs::read_to_string(&ids).unwrap();
    }
    assert_eq!(
        text.lines().collect::<Vec<_>>(),
        [before.as_str(), after.as_str()]
    );
}

#[test]
fn root_a_crontab_edited_while_the_daemon_runs_fires_at_the_new_time() {
    require_root();
    let tree = Tree::new();
    let old = tree.out("old");
    let new = tree.out("new");
    tree.user_crontab(
        "root",
        &format!("1 10 * * * echo old > {}\n", old.display()),
        0o600,
        "root",
    );
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log("running with inotify support", 10);
    tree.user_crontab(
        "root",
        &format!("2 10 * * * echo new > {}\n", new.display()),
        0o600,
        "root",
    );
    crond.wait_for_log("(root) RELOAD (spool/root)", 10);
    assert_eq!(wait_for_file(&new, 30), "new\n");
    let log = crond.log_text();
    assert!(
        log.contains(&format!("(root) CMD (echo new > {})", new.display())),
        "{log}"
    );
    assert!(
        !old.exists(),
        "the replaced entry must not run at its old time"
    );
    assert!(
        log.contains("Nov 21 10:02:00"),
        "the job started at 10:02:00 exactly: {log}"
    );
}

#[test]
fn root_a_dropped_in_cron_d_file_is_picked_up_and_dpkg_leftovers_are_not() {
    require_root();
    let tree = Tree::new();
    let sys = tree.out("sys");
    let dropped = tree.out("dropped");
    let leftover = tree.out("leftover");
    tree.write_file(
        &tree.system_crontab(),
        &format!(
            "SHELL=/bin/sh\n0 10 * * * root echo sys > {}\n",
            sys.display()
        ),
        0o644,
    );
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log("running with inotify support", 10);
    tree.write_file(
        &tree.cron_d().join("dropin"),
        &format!("1 10 * * * root echo dropped > {}\n", dropped.display()),
        0o644,
    );
    tree.write_file(
        &tree.cron_d().join("dropin.dpkg-old"),
        &format!("1 10 * * * root echo leftover > {}\n", leftover.display()),
        0o644,
    );
    crond.wait_for_log(
        &format!(
            "(*system*dropin) RELOAD ({})",
            tree.cron_d().join("dropin").display()
        ),
        10,
    );
    assert_eq!(wait_for_file(&sys, 15), "sys\n");
    assert_eq!(wait_for_file(&dropped, 20), "dropped\n");
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert!(!leftover.exists(), "a .dpkg-old file must not be read");
    assert!(!crond.log_text().contains("dpkg-old"));
}

#[test]
fn root_a_daemon_that_cannot_drop_privileges_never_runs_the_job() {
    require_root();
    let tree = Tree::new();
    let ran = tree.out("ran");
    // The daemon runs as nobody; /etc/crontab (root's, readable) asks for a root job.
    tree.write_file(
        &tree.system_crontab(),
        &format!("0 10 * * * root id -u > {}\n", ran.display()),
        0o644,
    );
    let crond = Crond::start_wrapped(
        &tree,
        1,
        START,
        &[
            "setpriv",
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--",
        ],
        &[],
    );
    crond.wait_for_log(
        "(root) ERROR (can't drop privileges, job not run: not running as root: can't change user)",
        15,
    );
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(!ran.exists(), "the job must not run as the wrong user");
}

#[test]
fn a_job_in_the_spring_forward_gap_runs_once_at_three_oclock() {
    let tree = Tree::new();
    let gap = tree.out("gap");
    let me = current_user();
    tree.user_crontab(
        &me,
        &format!(
            "CRON_TZ=America/New_York\n30 2 * * * date -u +\\%H:\\%M >> {}\n",
            gap.display()
        ),
        0o600,
        &me,
    );
    // 01:59:50 EST; ten seconds later the clocks in New York jump to 03:00 EDT (07:00 UTC).
    let crond = Crond::start_at(&tree, 1, "2026-03-08 06:59:50", &[]);
    let line = crond.wait_for_log(&format!("({me}) CMD (date -u"), 15);
    assert!(line.starts_with("Mar  8 07:00:00"), "{line}");
    wait_for_file(&gap, 10);
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(crond.log_text().matches(") CMD (").count(), 1, "once");
}

#[test]
fn random_delay_postpones_a_job_by_the_daemons_factor_of_its_minutes() {
    let tree = Tree::new();
    let me = current_user();
    let (base, late) = (tree.out("base"), tree.out("late"));
    tree.user_crontab(
        &me,
        &format!(
            "0 10 * * * date +\\%s > {}\nRANDOM_DELAY=1\n0 10 * * * date +\\%s > {}\n",
            base.display(),
            late.display()
        ),
        0o600,
        &me,
    );
    let crond = Crond::start(&tree, 1, &[]);
    let line = crond.wait_for_log("RANDOM_DELAY will be scaled with factor", 10);
    let percent: i64 = line
        .split("factor ")
        .nth(1)
        .and_then(|rest| rest.split('%').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no factor in {line:?}"));
    assert!((0..100).contains(&percent), "{line}");
    // The delayed job waits in the daemon's queue (its clock runs ten times faster under
    // libfaketime); fake clocks of forked and exec'd processes drift apart, so compare the
    // kernel's modification times of the two files, which are real time: 60 s x factor, at x10.
    wait_for_file(&base, 10);
    wait_for_file(&late, 15);
    let mtime = |p: &std::path::Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let real = mtime(&late)
        .duration_since(mtime(&base))
        .unwrap_or_default()
        .as_secs_f64();
    let expected = 60.0 * percent as f64 / 100.0 / 10.0;
    assert!(
        (real - expected).abs() <= 0.35,
        "delayed by {real:.2} s real, expected about {expected:.2} s ({percent}% of a minute at x10)"
    );
}

#[test]
fn root_with_minus_s_a_job_logs_at_most_a_thousand_output_lines_then_a_count() {
    require_root();
    let tree = Tree::new();
    tree.write_file(
        &tree.cron_d().join("chatty"),
        "0 10 * * * root seq 5000\n",
        0o644,
    );
    let crond = Crond::start(&tree, 1, &["-s"]);
    crond.wait_for_log("(root) CMDEND (seq 5000)", 20);
    let log = crond.log_text();
    let outs: Vec<&str> = log
        .lines()
        .filter_map(|l| l.split_once(") CMDOUT (").map(|(_, m)| m))
        .collect();
    assert_eq!(outs.len(), 1_001, "{}", outs.len());
    assert_eq!(outs[0], "1)");
    assert_eq!(outs[999], "1000)");
    assert_eq!(outs[1000], "[4000 more lines of output not logged])");
}

#[test]
fn root_a_name_given_to_another_uid_after_the_load_does_not_run_the_old_file() {
    require_root();
    let tree = Tree::new();
    let home = tree.path().join("out");
    let user = user_with_home("m", &home);
    let ran = tree.out("ran");
    tree.user_crontab(
        &user.name,
        &format!("0 10 * * * id -u > {}\n", ran.display()),
        0o600,
        &user.name,
    );
    // A minute of fake time (six real seconds) before the job is due.
    let crond = Crond::start_at(&tree, 1, "2026-11-21 09:59:00", &[]);
    crond.wait_for_log(" loaded from ", 10);
    let old: u32 = user.uid().parse().unwrap();
    let mut new = old + 7919;
    while std::process::Command::new("getent")
        .args(["passwd", &new.to_string()])
        .output()
        .unwrap()
        .status
        .success()
    {
        new += 1;
    }
    // The name now means another account (as when a user is deleted and the name reused).
    let status = std::process::Command::new("usermod")
        .args(["-u", &new.to_string(), &user.name])
        .status()
        .unwrap();
    assert!(status.success());
    crond.wait_for_log(
        &format!(
            "({0}) ERROR (spool/{0} was loaded for uid {old}, but the name is now uid {new}; \
             job not run)",
            user.name
        ),
        15,
    );
    assert!(!ran.exists(), "the job did not run as the new account");
}

#[test]
fn root_a_system_entry_for_an_unknown_user_is_reported_at_load_with_its_file_and_line() {
    require_root();
    let tree = Tree::new();
    let ok = tree.out("ok");
    let file = tree.cron_d().join("pkg");
    tree.write_file(
        &file,
        &format!(
            "0 10 * * * root echo ok > {}\n0 10 * * * nosuchuser9 true\n",
            ok.display()
        ),
        0o644,
    );
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(
        &format!(
            "(*system*pkg) WARNING ({}:2:1: no such user 'nosuchuser9' (the entry runs once it \
             exists))",
            file.display()
        ),
        10,
    );
    // At its time the entry is refused by a line that names the file; the other one runs.
    crond.wait_for_log(
        &format!(
            "(nosuchuser9) ERROR (getpwnam() failed - user unknown; entry of {} not run)",
            file.display()
        ),
        15,
    );
    assert_eq!(wait_for_file(&ok, 15), "ok\n");
}

/// Starts the daemon until its RANDOM_DELAY factor is 1% or more: a delay of 1440 minutes is
/// then over 14 minutes, so a run due at 10:00 is still waiting well after it. A draw under 1%
/// is started again (the chance of five in a row is 10^-10).
fn start_with_a_delay_factor_of_one_percent_or_more(tree: &Tree) -> Crond {
    for n in 1..6 {
        let mut crond = Crond::start(tree, n, &[]);
        let line = crond.wait_for_log("RANDOM_DELAY will be scaled with factor", 10);
        if !line.contains("factor 0%") {
            return crond;
        }
        crond.stop();
    }
    panic!("five factors under 1%");
}

#[test]
fn an_edit_keeps_the_entries_it_did_not_change_with_their_waiting_runs() {
    let tree = Tree::new();
    let me = current_user();
    let (a, b) = (tree.out("a"), tree.out("b"));
    let text = |b_says: &str| {
        format!(
            "RANDOM_DELAY=1440\n0 10 * * * echo a > {}\n0 10 * * * echo {b_says} > {}\n",
            a.display(),
            b.display()
        )
    };
    tree.user_crontab(&me, &text("b"), 0o600, &me);
    let crond = start_with_a_delay_factor_of_one_percent_or_more(&tree);
    crond.wait_for_log(" loaded from ", 10);
    std::thread::sleep(std::time::Duration::from_secs(2));
    // Only the changed line's run is cancelled; the other entry stays, and so does its run.
    tree.user_crontab(&me, &text("b2"), 0o600, &me);
    let cancelled = format!("({me}) INFO (1 run waiting for its RANDOM_DELAY cancelled");
    crond.wait_for_log(&cancelled, 10);
    std::fs::remove_file(tree.spool().join(&me)).unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while crond.log_text().matches(&cancelled).count() < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the unchanged entry's run was not waiting any more:\n{}",
            crond.log_text()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(!a.exists() && !b.exists());
}

#[test]
fn a_run_waiting_for_its_random_delay_is_cancelled_when_its_crontab_goes() {
    let tree = Tree::new();
    let me = current_user();
    let ran = tree.out("ran");
    let text = format!(
        "RANDOM_DELAY=1440\n0 10 * * * echo ran > {}\n",
        ran.display()
    );
    tree.user_crontab(&me, &text, 0o600, &me);
    let crond = start_with_a_delay_factor_of_one_percent_or_more(&tree);
    crond.wait_for_log(" loaded from ", 10);
    // Two real seconds are twenty fake ones: 10:00 has passed and the run is waiting.
    std::thread::sleep(std::time::Duration::from_secs(2));
    std::fs::remove_file(tree.spool().join(&me)).unwrap();
    crond.wait_for_log(
        &format!("({me}) INFO (1 run waiting for its RANDOM_DELAY cancelled: spool/{me} changed)"),
        10,
    );
    assert!(!ran.exists());
    // No process waits on the run's behalf: the daemon has no children.
    assert_eq!(
        crond.job_children(),
        Vec::<u32>::new(),
        "the daemon's children"
    );
}

#[test]
fn root_a_user_deleted_while_their_job_runs_changes_nothing_for_that_run() {
    require_root();
    let tree = Tree::new();
    let home = tree.path().join("out");
    let mut user = Some(user_with_home("d", &home));
    let name = user.as_ref().unwrap().name.clone();
    let done = tree.out("done");
    tree.user_crontab(
        &name,
        &format!(
            "0 10 * * * sleep 1; echo still here; id -u > {}\n",
            done.display()
        ),
        0o600,
        &name,
    );
    let crond = Crond::start(&tree, 1, &["-s"]);
    crond.wait_for_log(&format!("({name}) CMD (sleep 1"), 15);
    let uid = user.as_ref().unwrap().uid();
    drop(user.take()); // userdel while the job sleeps
    // The run ends as it began: as the uid it started with, its output logged, CMDEND.
    assert_eq!(wait_for_file(&done, 15).trim(), uid);
    crond.wait_for_log(&format!("({name}) CMDOUT (still here)"), 10);
    crond.wait_for_log(&format!("({name}) CMDEND (sleep 1"), 10);
}

#[test]
fn root_cronies_dash_runs_the_job_without_its_log_lines_and_only_for_root_and_system_files() {
    require_root();
    let tree = Tree::new();
    let home = tree.path().join("out");
    let user = user_with_home("q", &home);
    let (root_quiet, system_quiet, loud) = (tree.out("rq"), tree.out("sq"), tree.out("loud"));
    let (user_quiet, user_loud) = (tree.out("uq"), tree.out("ul"));
    tree.user_crontab(
        "root",
        &format!(
            "-0 10 * * * echo ran > {}\n0 10 * * * echo ran > {}\n",
            root_quiet.display(),
            loud.display()
        ),
        0o600,
        "root",
    );
    tree.write_file(
        &tree.cron_d().join("quiet"),
        &format!("-0 10 * * * root echo ran > {}\n", system_quiet.display()),
        0o644,
    );
    tree.user_crontab(
        &user.name,
        &format!(
            "-0 10 * * * echo ran > {}\n0 10 * * * echo ran > {}\n",
            user_quiet.display(),
            user_loud.display()
        ),
        0o600,
        &user.name,
    );
    // cronie's logging (-s) and Debian's start and end lines (-L 3): every line a job can log.
    let crond = Crond::start(&tree, 1, &["-s", "-L", "3"]);
    let error = crond.wait_for_log("may use '-' (no CMD log line)", 10);
    assert!(error.contains(&user.name), "{error}");
    for ran in [&root_quiet, &system_quiet, &loud, &user_loud] {
        wait_for_file(ran, 15);
    }
    crond.wait_for_log(
        &format!("(root) CMDEND (echo ran > {})", loud.display()),
        10,
    );
    crond.wait_for_no_children(10);
    let log = crond.log_text();
    for quiet in [&root_quiet, &system_quiet] {
        let command = format!("(echo ran > {})", quiet.display());
        assert!(!log.contains(&command), "{command} was logged:\n{log}");
    }
    for line in ["CMD", "END", "CMDEND"] {
        let loud_line = format!("(root) {line} (echo ran > {})", loud.display());
        assert!(log.contains(&loud_line), "no {loud_line:?} in\n{log}");
    }
    // A user's crontab may not hide a job: that line is an error, its neighbour runs.
    assert!(!user_quiet.exists());
}

#[test]
fn root_a_job_starts_with_every_signal_at_its_default_even_when_the_daemon_inherited_some_ignored()
{
    require_root();
    let tree = Tree::new();
    let status = tree.out("status");
    tree.write_file(
        &tree.cron_d().join("signals"),
        &format!(
            "0 10 * * * root grep -E '^Sig(Ign|Blk):' /proc/self/status > {}\n",
            status.display()
        ),
        0o644,
    );
    // The daemon's parent ignores SIGUSR1, SIGQUIT and SIGHUP, as nohup or a careless init
    // script would; ignored signals survive fork and exec.
    let crond = Crond::start_wrapped(
        &tree,
        1,
        START,
        &["sh", "-c", "trap '' USR1 QUIT HUP; exec \"$@\"", "sh"],
        &[],
    );
    let ignored = std::fs::read_to_string(format!("/proc/{}/status", crond.pid())).unwrap();
    assert!(
        ignored
            .lines()
            .any(|l| l.starts_with("SigIgn:") && !l.ends_with("0000000000000000")),
        "the daemon itself ignores something:\n{ignored}"
    );
    let text = wait_for_file(&status, 15);
    let mask = |name: &str| {
        let line = text.lines().find(|l| l.starts_with(name)).expect(name);
        u64::from_str_radix(line[name.len()..].trim(), 16).expect("a hex mask")
    };
    assert_eq!(mask("SigBlk:"), 0, "blocked in the job: {text}");
    // Signals 32 and 33 are glibc's own (thread cancellation, set*id broadcast), which no
    // program can set through glibc; glibc's posix_spawn leaves them ignored in what it starts.
    let glibc_internal = (1 << 31) | (1 << 32);
    assert_eq!(
        mask("SigIgn:") & !glibc_internal,
        0,
        "ignored in the job: {text}"
    );
}

/// How many lines of `text` hold `needle`.
fn count(text: &str, needle: &str) -> usize {
    text.lines().filter(|l| l.contains(needle)).count()
}

/// Waits until `path` has at least `lines` lines; returns its text.
fn wait_for_lines(path: &std::path::Path, lines: usize, secs: u64) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= lines {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{} has fewer than {lines} lines within {secs} s: {text:?}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn root_a_home_that_does_not_exist_is_a_notice_once_per_entry_and_load_and_the_job_runs_in_root() {
    require_root();
    let tree = Tree::new();
    // As www-data's /var/www without a web server, or nobody's /nonexistent.
    let user = user_with_home("h", &tree.path().join("no-such-home"));
    let pwd = tree.out("pwd");
    let text = format!("* * * * * pwd >> {}\n", pwd.display());
    tree.user_crontab(&user.name, &text, 0o600, &user.name);
    // Twenty fake seconds per real one: three runs in about ten seconds.
    let crond = Crond::start_fast(&tree, 1, "2026-11-21 09:59:55", 20, &[]);
    let ran = wait_for_lines(&pwd, 3, 30);
    assert!(ran.lines().all(|l| l == "/"), "the job runs in /: {ran:?}");
    // Each job child logs before its shell starts, so after three runs all three have spoken.
    let log = crond.log_text();
    let notice = format!(
        "({}) NOTICE (chdir({}) failed: No such file or directory (os error 2); spool/{}:1 runs \
         in / (not logged again until its file is reloaded))",
        user.name,
        tree.path().join("no-such-home").display(),
        user.name
    );
    assert_eq!(count(&log, &notice), 1, "{log}");
    assert_eq!(
        count(&log, "chdir("),
        1,
        "nothing more on the other runs: {log}"
    );
    assert_eq!(count(&log, "ERROR"), 0, "{log}");

    // A reload of the file: its entries' next run says it once more.
    tree.user_crontab(&user.name, &format!("# edited\n{text}"), 0o600, &user.name);
    crond.wait_for_log(&format!("({}) RELOAD (spool/{})", user.name, user.name), 10);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while count(&crond.log_text(), "NOTICE (chdir(") < 2 {
        assert!(std::time::Instant::now() < deadline, "{}", crond.log_text());
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let after = wait_for_lines(&pwd, ran.lines().count() + 2, 30)
        .lines()
        .count();
    let log = crond.log_text();
    assert_eq!(
        count(&log, "NOTICE (chdir("),
        2,
        "after {after} runs: {log}"
    );
    assert_eq!(count(&log, "ERROR"), 0, "{log}");
}

#[test]
fn root_a_job_of_a_large_file_runs_with_its_own_command_and_output() {
    require_root();
    let tree = Tree::new();
    let ran = tree.out("ran");
    // Past 64 KiB of packed text (the commands and their time fields), one entry due among a
    // thousand that are not.
    let mut text = String::from("SHELL=/bin/sh\n");
    for i in 0..1_000 {
        text.push_str(&format!(
            "0 0 1 1 * root : never due {i} {}\n",
            "x".repeat(80)
        ));
    }
    text.push_str(&format!(
        "0 10 * * * root echo ran > {}; echo out of the big file\n",
        ran.display()
    ));
    assert!(text.len() > 90 * 1024);
    tree.write_file(&tree.cron_d().join("big"), &text, 0o644);
    let crond = Crond::start(&tree, 1, &["-s"]);
    let command = format!("echo ran > {}; echo out of the big file", ran.display());
    crond.wait_for_log(&format!("(root) CMDEND ({command})"), 20);
    assert_eq!(wait_for_file(&ran, 5), "ran\n");
    let log = crond.log_text();
    assert!(log.contains(&format!("(root) CMD ({command})")), "{log}");
    assert!(log.contains("(root) CMDOUT (out of the big file)"), "{log}");
}
