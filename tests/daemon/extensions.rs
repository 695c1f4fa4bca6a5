//! The extensions no cron has (crontab.5 "Extensions"), end to end on the real daemon: a
//! time limit that ends a whole process group. Time is libfaketime's, ten times faster,
//! starting seconds before 10:00; every job here fires at 10:00.

use std::process::Command;

use crate::support::daemon::{Crond, Tree};
use crate::support::mail::mail_user;

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
