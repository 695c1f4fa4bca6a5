//! `cronctl pause ENTRY` and `cronctl resume ENTRY` end to end: the real daemon under
//! libfaketime (started seconds before a minute boundary), the real `cronctl`, a real user who
//! may pause their own entries only; the pause kept across a restart of the daemon.

use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use crate::control::{cronctl, ids, scrubbed_show, scrubbed_table, socket_of, stdout};
use crate::history::history;
use crate::support::daemon::*;
use crate::support::golden::{Scrub, assert_golden};

/// What `cronctl ARGS` (as `user`, `None`: root) printed, as a transcript shows it.
fn transcript(user: Option<&str>, socket: &Path, args: &[&str]) -> String {
    let o: Output = cronctl(user, socket, args);
    let who = user.map_or(String::new(), |u| format!("({u}) "));
    let mut text = format!("$ {who}cronctl {}\n", args.join(" "));
    text.push_str(&stdout(&o));
    text.push_str(&String::from_utf8_lossy(&o.stderr));
    if !o.status.success() {
        text.push_str(&format!(
            "(exit status {})\n",
            o.status.code().unwrap_or(-1)
        ));
    }
    text
}

/// Waits (real time, at most `secs`) until the file at `path` has `lines` lines.
fn wait_for_lines(path: &Path, lines: usize, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= lines {
            return;
        }
        assert!(Instant::now() < deadline, "{}: {text:?}", path.display());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `status` and `reason` of each history row of entry `id`, newest first.
fn outcomes(socket: &Path, id: &str, count: usize) -> Vec<(String, String)> {
    history(None, socket, &[id], count)
        .iter()
        .map(|r| {
            let reason = r["reason"].as_str().unwrap_or("-").to_string();
            (r["status"].as_str().unwrap().to_string(), reason)
        })
        .collect()
}

#[test]
fn root_a_paused_entry_does_not_run_at_the_boundary_stays_paused_across_a_restart_and_runs_once_resumed()
 {
    require_root();
    let tree = Tree::new();
    let (held, other) = (tree.out("held"), tree.out("other"));
    let text = format!(
        "* * * * * root echo ran >> {}\n* * * * * root echo ran >> {}\n",
        held.display(),
        other.display()
    );
    tree.write_file(&tree.system_crontab(), &text, 0o644);
    // Thirty fake seconds (three real ones) before 10:00.
    let mut crond = Crond::start_at(&tree, 1, "2026-11-21 09:59:30", &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let place = format!("{}:1", tree.system_crontab().display());
    let paused = cronctl(None, &socket, &["pause", &place]);
    assert!(paused.status.success(), "{paused:?}");
    let id = ids(&cronctl(None, &socket, &["list", "--json"]))
        .into_iter()
        .find(|(entry, _)| *entry == place)
        .unwrap()
        .1;
    assert!(
        stdout(&paused).starts_with(&format!("{id}: paused")),
        "{paused:?}"
    );
    // 10:00 passes: the other entry ran, the paused one did not, and its slot says why.
    wait_for_lines(&other, 1, 10);
    let paused_slot = ("not-run".to_string(), "paused".to_string());
    assert_eq!(
        outcomes(&socket, &id, 1),
        std::slice::from_ref(&paused_slot)
    );
    assert!(!held.exists(), "a paused entry ran");
    crond.wait_for_log(&format!("PAUSE (echo ran >> {}", held.display()), 5);
    // A new daemon, before 10:01: the pause holds.
    crond.stop();
    let mut crond = Crond::start_at(&tree, 2, "2026-11-21 10:00:30", &[]);
    crond.wait_for_log(" loaded from ", 10);
    let listed = stdout(&cronctl(None, &socket, &["list", "--json"]));
    let row = listed.lines().find(|l| l.contains(&id)).unwrap();
    assert!(row.contains("\"paused\":true"), "{row}");
    wait_for_lines(&other, 2, 10);
    assert_eq!(
        outcomes(&socket, &id, 2),
        [paused_slot.clone(), paused_slot]
    );
    assert!(!held.exists(), "a paused entry ran after a restart");
    // Resumed: its next slot runs.
    let resumed = cronctl(None, &socket, &["resume", &id]);
    assert_eq!(
        stdout(&resumed).lines().next(),
        Some(format!("{id}: resumed: its scheduled runs start again").as_str()),
        "{resumed:?}"
    );
    wait_for_lines(&held, 1, 10);
    assert_eq!(std::fs::read_to_string(&held).unwrap(), "ran\n");
    crond.stop();
}

#[test]
fn root_cronctl_pause_and_resume_say_what_they_paused_a_user_only_their_own_and_list_and_show_say_so()
 {
    require_root();
    let tree = Tree::new();
    // A user of every Debian system: a name of the same length in each run.
    let u = "nobody";
    tree.user_crontab(u, "0 3 * * * echo nightly backup\n", 0o600, u);
    tree.write_file(
        &tree.system_crontab(),
        "30 4 * * * root echo root-only\n",
        0o644,
    );
    // Real speed from a second past a minute: the times left read the same through the test.
    let crond = Crond::start_fast(&tree, 1, "2026-11-21 10:01:05", 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let spool = tree.spool();
    let tab = format!("{}/{u}", spool.file_name().unwrap().to_string_lossy());
    let mine = format!("{tab}:1");
    let system = tree.system_crontab().display().to_string();
    let roots = format!("{system}:1");
    let dir = tree.path().display().to_string();
    let mut words = Scrub::new().replace(&dir, "/tmp/crond-testXXXXXX");
    for (entry, id) in ids(&cronctl(None, &socket, &["list", "--json"])) {
        let file = if entry.contains("crontab:") {
            "sys"
        } else {
            "usr"
        };
        words = words.replace(id, format!("id-{file}-00001"));
    }
    let user = Some(u);
    let said: String = [
        transcript(user, &socket, &["pause", &mine]),
        transcript(user, &socket, &["pause", &mine]),
        transcript(user, &socket, &["pause", &roots]),
        transcript(None, &socket, &["pause", &format!("{tab}:7")]),
    ]
    .concat();
    assert_golden("cronctl-pause-local.txt", &words.apply(&said));
    let listed = stdout(&cronctl(None, &socket, &["list"]));
    assert_golden("cronctl-list-paused.txt", &scrubbed_table(&listed, &words));
    let shown = cronctl(user, &socket, &["show", &mine]);
    assert!(shown.status.success(), "{shown:?}");
    let head = stdout(&shown);
    let head = head.split("\nEnvironment").next().unwrap();
    assert_golden("cronctl-show-paused.txt", &scrubbed_show(head, &words));
    let said: String = [
        transcript(None, &socket, &["resume", &mine]),
        transcript(user, &socket, &["resume", &mine]),
    ]
    .concat();
    assert_golden("cronctl-resume-local.txt", &words.apply(&said));
    let logged = crond.log_text();
    assert!(
        logged.contains(") PAUSE (echo nightly backup) "),
        "{logged}"
    );
    assert!(
        logged.contains(") RESUME (echo nightly backup) "),
        "{logged}"
    );
    // Kept where the daemon keeps its state: root's, not writable by others.
    let kept = tree.state_dir().join("paused");
    assert_eq!(uid_of(&kept), 0);
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "crond-paused 1\n");
}
