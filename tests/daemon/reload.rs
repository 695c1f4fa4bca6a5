//! Changes reach the real `crond` without inotify too: Debian's per-minute mtime check (`-i`)
//! and SIGHUP, which reloads every file at once.

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
