//! Changes reach the real `crond` without inotify too: Debian's per-minute mtime check (`-i`)
//! and SIGHUP, which reloads every file at once.

mod common_daemon;

use std::process::Command;

use common_daemon::*;

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
