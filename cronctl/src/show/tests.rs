use super::*;

/// The daemon's answer to `show` (after its status line), its last runs from memory.
const TABLE: &str = "0123456789ab  crontabs/alice:3
  line      */30 * * * * false
  state     scheduled

Environment (as the crontab sets it):
  MAILTO=a@example.com

Next runs:
  2026-11-21 10:30  in 28min

Last runs (newest first, since crond loaded the entry):
  2026-11-21 10:01:05  1s ago        exit 1    took 5ms";

/// What the table keeps of the daemon's answer: all before its last runs.
fn before_last_runs() -> &'static str {
    TABLE.split("\nLast runs (").next().unwrap()
}

/// The history's answer to `history --json`: a slot that did not run (with a control
/// character in its words), a gap, a run.
fn history() -> String {
    [
        r#"{"run":3,"entry":"0123456789ab","trigger":"schedule","host":"vm1","time":"2026-11-21T10:30:00+01:00","at_ms":1,"status":"not-run","failed":true,"reason":"user-unknown","words":"user bob\u001b[2J unknown"}"#,
        r#"{"gap":true,"from":"x","to":"y","from_ms":0,"to_ms":1,"lost":2,"why":"the writer was not running"}"#,
        r#"{"run":2,"entry":"0123456789ab","trigger":"manual","host":"vm1","time":"2026-11-21T10:01:05+01:00","at_ms":1,"status":"exit 1","failed":true,"ended_ms":6,"duration_ms":1500,"exit":1}"#,
    ]
    .join("\n")
}

#[test]
fn the_id_is_read_from_an_entrys_answer_and_a_place_that_did_not_load_has_none() {
    assert_eq!(entry_id(TABLE, false), Some("0123456789ab"));
    let json = r#"{"id":"0123456789ab","entry":"crontabs/alice:3","runs":[]}"#;
    assert_eq!(entry_id(json, true), Some("0123456789ab"));
    let not_loaded = "crontabs/alice:3\n  state     not loaded: bad minute";
    assert_eq!(entry_id(not_loaded, false), None);
    assert_eq!(
        entry_id(r#"{"id":null,"entry":"crontabs/alice:3"}"#, true),
        None
    );
    assert_eq!(entry_id(r#"{"id":"0123456789abc"}"#, true), None);
    assert_eq!(entry_id("0123456789ab  crontabs/alice:3\n", false), None);
    assert_eq!(
        history_request("0123456789ab"),
        "history --json --limit 5 0123456789ab"
    );
}

#[test]
fn the_last_runs_are_the_historys_with_their_trigger_result_reason_words_and_host() {
    let shown = with_history(TABLE, false, Ok(&history()));
    let expected = format!(
        "{}\nLast runs (newest first, from the run history):
  RUN  TIME                 TRIGGER   TOOK  HOST  RESULT
  3    2026-11-21 10:30:00  schedule  -     vm1   not run: user-unknown: user bob\\x1b[2J unknown
  -- 2 outcomes not recorded: the writer was not running --
  2    2026-11-21 10:01:05  manual    1.5s  vm1   exit 1",
        before_last_runs()
    );
    assert_eq!(shown, expected);
    assert!(!shown.contains('\u{1b}'), "no escape reaches the terminal");
    let none = with_history(TABLE, false, Ok(""));
    assert!(
        none.ends_with("\nLast runs (newest first, from the run history):\n  (none)"),
        "{none}"
    );
}

#[test]
fn without_the_history_the_daemons_last_runs_stay_and_one_line_says_why() {
    let off = with_history(
        TABLE,
        false,
        Err("the daemon keeps no history (crond --history off)"),
    );
    let expected = format!(
        "{}\nLast runs (newest first, since crond loaded the entry):
  (not from the run history: the daemon keeps no history (crond --history off))
  2026-11-21 10:01:05  1s ago        exit 1    took 5ms",
        before_last_runs()
    );
    assert_eq!(off, expected);
    let garbled = with_history(TABLE, false, Ok("0 outcomes listed."));
    assert!(
        garbled.contains(
            "\n  (not from the run history: its answer is not the JSON lines cronctl reads)\n"
        ),
        "{garbled}"
    );
    // A place that did not load has no last runs: its answer is as the daemon gave it.
    let not_loaded = "crontabs/alice:3\n  state     not loaded: bad minute";
    assert_eq!(with_history(not_loaded, false, Ok("")), not_loaded);
}

#[test]
fn show_json_gets_the_historys_objects_or_why_there_are_none() {
    let object = r#"{"id":"0123456789ab","runs":[],"not_running":null}"#;
    let shown = with_history(object, true, Ok(&history()));
    let v: Value = serde_json::from_str(&shown).expect("one object");
    assert_eq!(v["history"].as_array().unwrap().len(), 3);
    assert_eq!(v["history"][0]["reason"], "user-unknown");
    assert_eq!(v["history"][2]["exit"], 1);
    assert_eq!(v["history_error"], Value::Null);
    assert_eq!(v["runs"], serde_json::json!([]));
    let empty: Value = serde_json::from_str(&with_history(object, true, Ok(""))).unwrap();
    assert_eq!(empty["history"], serde_json::json!([]));
    let off = with_history(object, true, Err("the \"history\" is off"));
    let v: Value = serde_json::from_str(&off).expect("one object");
    assert_eq!(v["history"], Value::Null);
    assert_eq!(v["history_error"], "the \"history\" is off");
    let garbled: Value = serde_json::from_str(&with_history(object, true, Ok("not json"))).unwrap();
    assert_eq!(
        garbled["history_error"],
        "its answer is not the JSON lines cronctl reads"
    );
}
