//! `CRON_RETRY` across a restart of the real daemon under libfaketime: a retry waiting for its
//! time when the daemon stops is kept in the state directory's `retries` and runs after the
//! start as the same attempt of the same slot; one whose time passed while the daemon was down
//! is recorded missed (without `CRON_MISSED=once`), not started.

use serde_json::Value;

use crate::control::socket_of;
use crate::history::history;
use crate::support::daemon::*;

/// Root's system entry at 10:00 with two retries two minutes apart: its job appends a line to
/// `runs` and fails the first time, succeeds after.
fn install(tree: &Tree) -> std::path::PathBuf {
    let runs = tree.out("runs");
    let script = format!(
        "echo ran >> {r}; test $(wc -l < {r}) -gt 1",
        r = runs.display()
    );
    let text = format!("CRON_RETRY=2\nCRON_RETRY_DELAY=120\n0 10 * * * root {script}\n");
    tree.write_file(&tree.system_crontab(), &text, 0o644);
    runs
}

/// The first daemon, from 09:59:50: its 10:00 run fails and its retry waits for 10:02; then
/// it is stopped (SIGTERM) with the retry waiting, and the state file keeps it.
fn fail_and_stop(tree: &Tree) {
    let mut crond = Crond::start(tree, 1, &[]);
    crond.wait_for_log(") RETRY (", 20);
    let line = crond.wait_for_log(") RETRY (", 1);
    assert!(line.contains("attempt 2/3 at 10:02:0"), "{line}");
    let status = crond.stop();
    assert!(status.success(), "{status:?}");
    let kept = std::fs::read_to_string(tree.state_dir().join("retries")).unwrap();
    assert!(kept.starts_with("crond-retries 1\n"), "{kept:?}");
    assert_eq!(kept.lines().count(), 2, "{kept:?}");
    assert!(kept.contains(" schedule 2/3 "), "{kept:?}");
}

/// `(attempt, attempts, status, reason)` of each history row, newest first.
fn attempts(rows: &[Value]) -> Vec<(i64, i64, String, String)> {
    rows.iter()
        .map(|r| {
            (
                r["attempt"].as_i64().unwrap_or(0),
                r["attempts"].as_i64().unwrap_or(0),
                r["status"].as_str().unwrap().to_string(),
                r["reason"].as_str().unwrap_or("-").to_string(),
            )
        })
        .collect()
}

#[test]
fn root_a_retry_waiting_when_the_daemon_stops_runs_after_a_restart_as_the_same_slot() {
    require_root();
    let tree = Tree::new();
    let runs = install(&tree);
    fail_and_stop(&tree);
    // Started again at 10:01, before the retry's time: it waits for 10:02 and runs then.
    let crond = Crond::start_at(&tree, 2, "2026-11-21 10:01:00", &[]);
    let kept = crond.wait_for_log(") RETRY (", 10);
    assert!(
        kept.contains("attempt 2/3 at 10:02:0") && kept.contains("kept across a restart"),
        "{kept}"
    );
    let socket = socket_of(&tree);
    let rows = history(None, &socket, &[], 2);
    assert_eq!(
        attempts(&rows),
        [
            (2, 3, "ok".into(), "-".into()),
            (1, 3, "exit 1".into(), "-".into())
        ]
    );
    assert_eq!(rows[0]["slot"], rows[1]["slot"]);
    assert!(
        rows[0]["slot"].as_str().unwrap().contains("T10:00:00"),
        "{rows:#?}"
    );
    assert_eq!(rows[0]["trigger"], "schedule");
    // It started at its time, 10:02 (the fake clock's zone is UTC), not at the start.
    let started_s = rows[0]["at_ms"].as_i64().unwrap() / 1000;
    assert!(
        (1_795_255_320..1_795_255_330).contains(&started_s),
        "{rows:#?}"
    );
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 2);
}

#[test]
fn root_a_retry_whose_time_passed_while_the_daemon_was_down_is_recorded_missed_not_run() {
    require_root();
    let tree = Tree::new();
    let runs = install(&tree);
    fail_and_stop(&tree);
    // Started again at 10:05: its retry was due at 10:02, and CRON_MISSED is skip.
    let crond = Crond::start_at(&tree, 2, "2026-11-21 10:05:00", &[]);
    let dropped = crond.wait_for_log(") RETRY DROPPED (", 10);
    assert!(
        dropped.contains("attempt 2/3 was due at 10:02:0")
            && dropped.contains("while the daemon was down: not started"),
        "{dropped}"
    );
    let rows = history(None, &socket_of(&tree), &[], 2);
    assert_eq!(
        attempts(&rows),
        [
            (2, 3, "not-run".into(), "missed".into()),
            (1, 3, "exit 1".into(), "-".into())
        ]
    );
    assert_eq!(rows[0]["slot"], rows[1]["slot"]);
    // A few fake seconds more: nothing started it.
    crond.wait_for_log(" loaded from ", 5);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 1);
    let kept = std::fs::read_to_string(tree.state_dir().join("retries")).unwrap();
    assert_eq!(kept, "crond-retries 1\n", "consumed");
}
