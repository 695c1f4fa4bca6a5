//! Changes reach the real `crond` without inotify too: Debian's per-minute mtime check (`-i`)
//! and SIGHUP, which reloads every file at once.

use std::io::Write;
use std::process::Command;

use crate::support::daemon::*;

#[test]
fn without_inotify_a_new_crontab_is_found_by_the_minute_check() {
    let tree = Tree::new();
    let found = tree.out("found");
    let me = current_user();
    let crond = Crond::start(&tree, 1, &["-i"]);
    crond.wait_for_log("inotify disabled (-i)", 10);
    tree.user_crontab(
        &me,
        &format!("1 10 * * * echo found > {}\n", found.display()),
        0o600,
        &me,
    );
    // The 10:00 check finds the file; its entry fires at 10:01.
    crond.wait_for_log(&format!("({me}) RELOAD (spool/{me})"), 15);
    assert_eq!(wait_for_file(&found, 20), "found\n");
}

#[test]
fn sighup_reloads_the_crontabs_at_once() {
    let tree = Tree::new();
    let me = current_user();
    let crond = Crond::start(&tree, 1, &["-i"]);
    crond.wait_for_log("inotify disabled (-i)", 10);
    tree.user_crontab(&me, "0 0 1 1 * true\n", 0o600, &me);
    let kill = Command::new("kill")
        .args(["-HUP", &crond.pid().to_string()])
        .status()
        .expect("kill -HUP");
    assert!(kill.success());
    let line = crond.wait_for_log(&format!("({me}) RELOAD (spool/{me})"), 5);
    // Read before the first minute check (10:00:00): the signal did it.
    assert!(line.contains("09:59:5"), "reloaded at once: {line}");
}

#[test]
fn root_a_crontab_installed_with_the_crontab_command_is_reloaded_with_one_line() {
    require_root();
    let tree = Tree::new();
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log("running with inotify support", 10);
    let mut install = Command::new(env!("CARGO_BIN_EXE_crontab"))
        .arg("--spool-dir")
        .arg(tree.spool())
        .args(["-u", "root", "-"])
        .stdin(std::process::Stdio::piped())
        .spawn()
        .expect("run crontab");
    let mut stdin = install.stdin.take().expect("stdin");
    stdin
        .write_all(b"0 0 1 1 * true\n")
        .expect("write the crontab");
    drop(stdin);
    assert!(install.wait().expect("wait for crontab").success());
    crond.wait_for_log("(root) RELOAD (spool/root)", 10);
    // A later change, seen after every event of the install: then count.
    tree.write_file(&tree.cron_d().join("later"), "0 0 1 1 * root true\n", 0o644);
    crond.wait_for_log("(*system*later) RELOAD (", 10);
    let log = crond.log_text();
    assert_eq!(
        log.matches("(root) RELOAD (spool/root)").count(),
        1,
        "one install, one line: {log}"
    );
}

#[test]
fn minus_l_logs_the_end_and_failures_of_jobs_as_debian_does() {
    let tree = Tree::new();
    let me = current_user();
    tree.user_crontab(&me, "0 10 * * * exit 3\n", 0o600, &me);
    let crond = Crond::start(&tree, 1, &["-L", "15"]);
    let cmd = crond.wait_for_log(&format!("({me}) CMD ([",), 15);
    assert!(cmd.ends_with("] exit 3)"), "-L 8 puts the pid in: {cmd}");
    crond.wait_for_log(&format!("({me}) END (["), 10);
    let failed = crond.wait_for_log("(CRON) error (grandchild #", 10);
    assert!(failed.ends_with("failed with exit status 3)"), "{failed}");
}

fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(status.success(), "kill {signal} {pid}");
}

#[test]
fn after_the_inotify_queue_overflows_the_daemon_reloads_and_checks_every_minute() {
    let tree = Tree::new();
    let found = tree.out("found");
    let me = current_user();
    let crond = Crond::start_at(&tree, 1, "2026-11-21 09:58:30", &[]);
    crond.wait_for_log("running with inotify support", 10);
    // While the daemon is stopped nothing reads the queue: more events than the kernel keeps
    // (three per file: create, close-write, delete) pile up.
    let max: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_queued_events")
        .expect("read max_queued_events")
        .trim()
        .parse()
        .expect("a number");
    send_signal(crond.pid(), "-STOP");
    for i in 0..max / 2 {
        let file = tree.spool().join(format!("tmp.{i}"));
        std::fs::write(&file, "").expect("write");
        std::fs::remove_file(&file).expect("remove");
    }
    send_signal(crond.pid(), "-CONT");
    let line = crond.wait_for_log("inotify queue overflowed", 10);
    assert!(
        line.ends_with(
            "(CRON) INFO (inotify queue overflowed: reloading everything, then checking files \
             every minute)"
        ),
        "{line}"
    );
    // The reload of everything follows that line: let it finish (a fake 10 s, still before
    // 10:00), so the file below is new to it.
    std::thread::sleep(std::time::Duration::from_secs(1));
    tree.user_crontab(
        &me,
        &format!("1 10 * * * echo found > {}\n", found.display()),
        0o600,
        &me,
    );
    // No watch any more: the next minute's check finds the file (at second 0, not at once),
    // and its entry fires at 10:01.
    let reload = crond.wait_for_log(&format!("({me}) RELOAD (spool/{me})"), 15);
    let time = reload.split_whitespace().nth(2).unwrap_or_default();
    assert!(
        time.ends_with(":00") || time.ends_with(":01"),
        "found by the minute check: {reload}"
    );
    assert_eq!(wait_for_file(&found, 20), "found\n");
    assert_eq!(
        crond.log_text().matches("inotify queue overflowed").count(),
        1,
        "logged once"
    );
}

/// A one-line edit of a large system file (1,500 lines: the reload parses the whole file again
/// and keeps the unchanged entries as they were, `daemon::reuse`): the changed entry fires at
/// its new time, the unchanged ones before and after it fire at theirs, each once.
#[test]
fn root_a_one_line_edit_of_a_large_system_file_fires_the_changed_entry_and_keeps_the_rest() {
    require_root();
    let tree = Tree::new();
    let (a, b, c) = (tree.out("a"), tree.out("b"), tree.out("c"));
    let file = |c_minute: &str| {
        let mut text = String::new();
        for i in 0..1_500 {
            let line = match i {
                100 => format!("1 10 * * * root echo a >> {}\n", a.display()),
                700 => format!("{c_minute} * * * root echo c >> {}\n", c.display()),
                1_400 => format!("3 10 * * * root echo b >> {}\n", b.display()),
                _ if i % 250 == 0 => format!("V{i}=x\n"),
                _ => format!("0 0 1 1 * root true {i}\n"),
            };
            text.push_str(&line);
        }
        text
    };
    let path = tree.cron_d().join("big");
    tree.write_file(&path, &file("0 12"), 0o644);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    // Replaced by a rename, as an editor does.
    let new = tree.path().join("big.new");
    tree.write_file(&new, &file("2 10"), 0o644);
    std::fs::rename(&new, &path).expect("rename");
    crond.wait_for_log(&format!("(*system*big) RELOAD ({})", path.display()), 10);
    assert_eq!(wait_for_file(&a, 30), "a\n");
    assert_eq!(wait_for_file(&c, 30), "c\n");
    assert_eq!(wait_for_file(&b, 30), "b\n");
    let log = crond.log_text();
    for (minute, what) in [("10:01", "a"), ("10:02", "c"), ("10:03", "b")] {
        let cmd = format!("CMD (echo {what} >> ");
        let at: Vec<&str> = log.lines().filter(|l| l.contains(&cmd)).collect();
        assert_eq!(at.len(), 1, "{what} ran once: {log}");
        assert!(
            at[0].contains(&format!("{minute}:00")),
            "{what} at {minute}: {log}"
        );
    }
}
