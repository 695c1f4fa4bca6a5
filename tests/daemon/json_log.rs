//! `--log-format json` on the real daemon: every line it writes is one object that matches the
//! schema crond(8) documents (`crond::log::json::KEYS`, `EVENTS`), and a job's lines carry its
//! facts. Time is libfaketime's, ten times faster, starting seconds before 10:00.

use crond::log::json::{EVENTS, KEYS, Kind, LEVELS};
use serde_json::{Map, Value};

use crate::support::daemon::{Crond, Tree, current_user, require_root};

/// The log's lines as objects, each checked against the schema.
fn checked_objects(text: &str) -> Vec<Map<String, Value>> {
    text.lines().map(checked).collect()
}

fn checked(line: &str) -> Map<String, Value> {
    let value: Value =
        serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    let object = value.as_object().expect("an object").clone();
    for (name, value) in &object {
        let key = (KEYS.iter().find(|k| k.name == name))
            .unwrap_or_else(|| panic!("unknown key {name}: {line}"));
        let right = match key.kind {
            Kind::String => value.is_string(),
            Kind::Integer => value.is_i64(),
        };
        assert!(right, "{name} is not a {:?}: {line}", key.kind);
    }
    for key in KEYS.iter().filter(|k| k.always) {
        assert!(object.contains_key(key.name), "no {}: {line}", key.name);
    }
    assert!(
        LEVELS.contains(&object["level"].as_str().unwrap()),
        "{line}"
    );
    if let Some(event) = object.get("event") {
        assert!(EVENTS.contains(&event.as_str().unwrap()), "{line}");
    }
    let time = object["time"].as_str().unwrap();
    assert!(
        time.starts_with("2026-11-21T") && time.ends_with("+00:00"),
        "RFC 3339 in the daemon's zone: {time}"
    );
    object
}

fn events<'o>(objects: &'o [Map<String, Value>], name: &str) -> Vec<&'o Map<String, Value>> {
    objects.iter().filter(|o| o["event"] == name).collect()
}

#[test]
fn root_with_log_format_json_every_message_is_one_object_and_a_job_carries_its_facts() {
    require_root();
    let tree = Tree::new();
    let me = current_user();
    // A job with output that fails, one that succeeds quietly, and a bad line.
    let tab = "# a comment\n0 10 * * * echo hi; exit 3\n0 10 * * * true\n61 10 * * * bad\n";
    tree.user_crontab(&me, tab, 0o600, &me);
    // `-s` is what a `--crontab` daemon implies: output as CMDOUT, and cronie's CMDEND as text.
    let crond = Crond::start(&tree, 1, &["-s", "--log-format", "json"]);
    crond.wait_for_log("\"event\":\"END\",\"message\":\"true\"", 20);
    crond.wait_for_log("\"event\":\"END\",\"message\":\"echo hi; exit 3\"", 20);
    // A reload: the file changes.
    tree.user_crontab(&me, "0 11 * * * true\n", 0o600, &me);
    crond.wait_for_log("\"event\":\"RELOAD\"", 20);
    let objects = checked_objects(&crond.log_text());

    let spool = tree.spool();
    let entry = format!("{}/{me}:2", spool.file_name().unwrap().to_string_lossy());
    let cmd = (events(&objects, "CMD").into_iter())
        .find(|o| o["entry"] == entry.as_str())
        .expect("the failing job's CMD");
    assert_eq!(cmd["user"], me.as_str());
    assert_eq!(cmd["command"], "echo hi; exit 3");
    let pid = cmd["pid"].as_u64().expect("the job's pid");
    assert!(cmd["source"].as_str().unwrap().starts_with("CRON["));
    // Output lines name their job as its other lines do.
    let out = events(&objects, "CMDOUT");
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0]["message"], "hi");
    assert_eq!(out[0]["entry"], entry.as_str());
    assert_eq!(out[0]["command"], "echo hi; exit 3");
    assert_eq!(out[0]["pid"].as_u64(), Some(pid));
    // One end per run, with its status: END (whatever -L says), never cronie's CMDEND too.
    let ends = events(&objects, "END");
    assert_eq!(ends.len(), 2, "{ends:?}");
    assert!(events(&objects, "CMDEND").is_empty(), "{objects:?}");
    let end = ends.iter().find(|o| o["entry"] == entry.as_str()).unwrap();
    assert_eq!(end["exit_status"], 3);
    assert_eq!(end["pid"].as_u64(), Some(pid));
    assert!(end["duration_ms"].is_u64());
    // The entry's id, as `cronctl list` and the history give it, on every line of its job.
    let id = end["id"].as_str().expect("an id");
    assert_eq!(id.len(), 12, "{end:?}");
    assert!(
        objects
            .iter()
            .filter(|o| o.get("entry").and_then(|v| v.as_str()) == Some(entry.as_str()))
            .all(|o| o.get("id").and_then(|v| v.as_str()) == Some(id)),
        "{objects:?}"
    );
    // The bad line, and the reload, are the user's.
    let error = events(&objects, "ERROR");
    let bad = format!("{}/{me}:4:", spool.display());
    assert!(
        error
            .iter()
            .any(|o| o["user"] == me.as_str() && o["message"].as_str().unwrap().starts_with(&bad)),
        "{error:?}"
    );
    assert_eq!(events(&objects, "RELOAD")[0]["user"], me.as_str());
    // The daemon's own lines name no user (the text log's `(CRON)`).
    let own: Vec<_> = (objects.iter())
        .filter(|o| o["source"].as_str().unwrap().starts_with("cron[") && o["event"] == "INFO")
        .collect();
    assert!(own.len() >= 2, "{objects:?}");
    for o in own {
        assert!(!o.contains_key("user"), "{o:?}");
    }
    assert!(
        (objects.iter()).any(|o| o["message"] == "2 entries loaded from 2 files"),
        "{objects:?}"
    );
}
