use super::*;
use crond::history::{Asked, Ran, Reason, Trigger};

fn zone() -> Zone {
    Zone::get("Europe/Paris").unwrap()
}

fn query(json: bool, wide: bool, max_answer: u64) -> Query {
    Query {
        asked: Asked::History {
            entry: None,
            user: None,
            failed: false,
            since_ms: None,
            limit: 100,
        },
        json,
        wide,
        all: true,
        uid: 0,
        name: None,
        now_ms: 0,
        zone: "Europe/Paris".into(),
        max_answer,
    }
}

/// 2026-12-01 10:00:00 UTC.
const AT: i64 = 1_796_119_200_000;

/// Run `run`, started at `at_ms` (a run's end is moved with it).
fn stored(run: i64, at_ms: i64, mut result: Slot) -> Stored {
    if let Slot::Ran(r) = &mut result {
        r.ended_ms += at_ms - AT;
    }
    Stored {
        run,
        outcome: Outcome {
            entry: "3f2a9c01b7d4".into(),
            place: "crontabs/alice:3".into(),
            user: "alice".into(),
            owner_uid: Some(1000),
            command: "backup --all".into(),
            trigger: Trigger::Schedule,
            slot: Some(at_ms / 1000),
            host: "web-01.example.org".into(),
            at_ms,
            cluster: None,
            attempt: None,
            result,
        },
    }
}

fn ran(exit: End, ms: i64) -> Slot {
    Slot::Ran(Ran {
        ended_ms: AT + ms,
        end: exit,
        timed_out: false,
        user_us: 1_200_000,
        system_us: 300_000,
        max_rss_kib: 12_800,
        output_bytes: 1_536,
        head: Vec::new(),
        tail: Vec::new(),
        mail: Mail::Sent,
    })
}

fn listing() -> Listing {
    Listing {
        rows: vec![
            stored(
                14,
                AT + 180_000,
                Slot::NotRun {
                    reason: Reason::Overlap,
                    words: "run 13 (pid 4242) was still running".into(),
                },
            ),
            stored(13, AT + 120_000, ran(End::Signaled(9), 61_000)),
            stored(12, AT + 60_000, ran(End::Exited(3), 2_100)),
            stored(11, AT, ran(End::Exited(0), 35)),
        ],
        gaps: vec![(
            1,
            Gap {
                from_ms: AT + 10_000,
                to_ms: AT + 20_000,
                lost: 12,
                why: "the store was set aside".into(),
            },
        )],
        note: None,
    }
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

#[test]
fn the_table_lists_runs_newest_first_with_gaps_in_time_order() {
    let got = text(history(&query(false, false, 1 << 20), &listing(), &zone()));
    assert_eq!(
        got,
        "OK
RUN  TIME                 ENTRY         RESULT            TOOK   HOST
14   2026-12-01 11:03:00  3f2a9c01b7d4  not run: overlap  -      web-01.example.org
13   2026-12-01 11:02:00  3f2a9c01b7d4  SIGKILL           1m01s  web-01.example.org
12   2026-12-01 11:01:00  3f2a9c01b7d4  exit 3            2.1s   web-01.example.org
-- 12 outcomes not recorded: the store was set aside --
11   2026-12-01 11:00:00  3f2a9c01b7d4  ok                35ms   web-01.example.org

4 outcomes listed, 1 gap. Pass --wide for more columns.
"
    );
    for line in got.lines() {
        assert!(line.chars().count() <= TABLE_WIDTH, "{line}");
    }
}

#[test]
fn the_wide_table_has_every_column_and_the_reasons_words() {
    let mut l = listing();
    l.gaps.clear();
    l.rows.truncate(2);
    let got = text(history(&query(false, true, 1 << 20), &l, &zone()));
    assert_eq!(
        got,
        "OK
RUN  TIME                 ENTRY         RESULT                                                 TOOK   HOST                USER   TRIGGER   SLOT              CPU   RSS  OUTPUT  MAIL  PLACE
14   2026-12-01 11:03:00  3f2a9c01b7d4  not run: overlap: run 13 (pid 4242) was still running  -      web-01.example.org  alice  schedule  2026-12-01 11:03  -     -    -       -     crontabs/alice:3
13   2026-12-01 11:02:00  3f2a9c01b7d4  SIGKILL                                                1m01s  web-01.example.org  alice  schedule  2026-12-01 11:02  1.5s  12M  1.5K    sent  crontabs/alice:3

2 outcomes listed.
"
    );
}

#[test]
fn a_long_host_is_cut_to_fit_and_control_characters_are_spelled_out() {
    let mut l = listing();
    l.gaps.clear();
    l.rows.truncate(1);
    l.rows[0].outcome.host = format!("evil\x1b[2J{}", "h".repeat(80));
    let got = text(history(&query(false, false, 1 << 20), &l, &zone()));
    let row = got.lines().nth(2).unwrap();
    assert!(row.contains("evil\\x1b[2Jhhh"), "{row}");
    assert!(
        row.ends_with('…') && row.chars().count() == TABLE_WIDTH,
        "{row}"
    );
    assert!(!got.contains('\x1b'));
}

#[test]
fn no_outcome_is_a_count_of_zero() {
    let got = text(history(
        &query(false, false, 1 << 20),
        &Listing::default(),
        &zone(),
    ));
    assert_eq!(got, "OK\n0 outcomes listed.\n");
}

#[test]
fn an_answer_stays_within_its_bound_and_says_what_it_left_out() {
    let mut l = listing();
    l.gaps.clear();
    let rows: Vec<Stored> = (0..2_000)
        .map(|i| stored(i, AT - i * 60_000, ran(End::Exited(0), 10)))
        .collect();
    l.rows = rows;
    for json in [false, true] {
        let got = text(history(&query(json, false, 16_384), &l, &zone()));
        assert!(got.len() <= 16_384, "{}", got.len());
        let listed = got.lines().filter(|l| l.contains("3f2a9c01b7d4")).count();
        let note = if json {
            format!("{{\"not_shown\":{}}}", 2_000 - listed)
        } else {
            format!("({} more outcomes not shown", 2_000 - listed)
        };
        assert!(got.contains(&note), "{got}");
    }
}

#[test]
fn json_has_one_object_per_line_with_every_field_but_the_output() {
    let got = text(history(&query(true, false, 1 << 20), &listing(), &zone()));
    let lines: Vec<&str> = got.lines().collect();
    assert_eq!(lines[0], "OK");
    assert_eq!(
        lines[1],
        r#"{"run":14,"entry":"3f2a9c01b7d4","place":"crontabs/alice:3","user":"alice","owner_uid":1000,"command":"backup --all","trigger":"schedule","slot":"2026-12-01T11:03:00+01:00","host":"web-01.example.org","time":"2026-12-01T11:03:00+01:00","at_ms":1796119380000,"status":"not-run","failed":true,"reason":"overlap","words":"run 13 (pid 4242) was still running"}"#
    );
    assert_eq!(
        lines[2],
        r#"{"run":13,"entry":"3f2a9c01b7d4","place":"crontabs/alice:3","user":"alice","owner_uid":1000,"command":"backup --all","trigger":"schedule","slot":"2026-12-01T11:02:00+01:00","host":"web-01.example.org","time":"2026-12-01T11:02:00+01:00","at_ms":1796119320000,"status":"SIGKILL","failed":true,"ended_ms":1796119381000,"duration_ms":61000,"exit":null,"signal":"SIGKILL","timed_out":false,"user_us":1200000,"system_us":300000,"max_rss_kib":12800,"output_bytes":1536,"mail":"sent","mail_words":null}"#
    );
    assert_eq!(
        lines[4],
        r#"{"gap":true,"from":"2026-12-01T11:00:10+01:00","to":"2026-12-01T11:00:20+01:00","from_ms":1796119210000,"to_ms":1796119220000,"lost":12,"why":"the store was set aside"}"#
    );
    for line in &lines[1..] {
        serde_json::from_str::<serde_json::Value>(line).unwrap();
    }
}

fn output(head: &[u8], tail: &[u8], total: u64) -> Stored {
    let mut s = stored(7, AT, ran(End::Exited(0), 10));
    if let Slot::Ran(r) = &mut s.outcome.result {
        r.head = head.to_vec();
        r.tail = tail.to_vec();
        r.output_bytes = total;
    }
    s
}

#[test]
fn logs_are_the_head_what_was_not_kept_and_the_tail() {
    let q = query(false, false, 1 << 20);
    let run = output(b"first\x1b[31m red\r\n", b"last line\n", 5_000);
    assert_eq!(
        text(logs(&q, "3f2a", Some(&run), false)),
        "OK\nfirst\\033[31m red\\r\n[... 4974 bytes not kept ...]\nlast line\n"
    );
    assert_eq!(
        logs(&q, "3f2a", Some(&run), true),
        b"OK\nfirst\x1b[31m red\r\n[... 4974 bytes not kept ...]\nlast line\n".to_vec()
    );
    // Characters that would drive a terminal without showing: spelled out; other text kept.
    let tricky = "caf\u{e9} \u{202e}evil\u{9b}2J".as_bytes().to_vec();
    let mut tricky_bytes = tricky.clone();
    tricky_bytes.extend_from_slice(b" \x9b\xe9\n");
    let run = output(&tricky_bytes, b"", tricky_bytes.len() as u64);
    let mut want = b"OK\ncaf\xc3\xa9 \\u{202e}evil\\u{009b}2J \\x9b".to_vec();
    want.extend_from_slice(b"\xe9\n");
    assert_eq!(logs(&q, "3f2a", Some(&run), false), want);
    // A head that does not end a line: the note starts one.
    let run = output(b"abc", b"xyz", 100);
    assert_eq!(
        text(logs(&q, "3f2a", Some(&run), false)),
        "OK\nabc\n[... 94 bytes not kept ...]\nxyz"
    );
}

#[test]
fn logs_of_a_slot_that_did_not_run_or_of_no_run_are_errors() {
    let q = query(false, false, 1 << 20);
    let not_run = stored(
        9,
        AT,
        Slot::NotRun {
            reason: Reason::Overlap,
            words: "run 8 was\nstill running".into(),
        },
    );
    assert_eq!(
        text(logs(&q, "3f2a9c01b7d4", Some(&not_run), false)),
        "ERROR run 9 of 3f2a9c01b7d4 did not run: overlap: run 8 was\\x0astill running\n"
    );
    assert_eq!(text(logs(&q, "3f2a", None, false)), "ERROR no such run\n");
}

#[test]
fn logs_stay_within_the_answers_bound() {
    let q = query(false, false, 4_096);
    let run = output(&[b'x'; 60_000], b"", 60_000);
    let got = text(logs(&q, "3f2a", Some(&run), true));
    assert!(got.len() <= 4_096);
    assert!(got.ends_with(&format!(
        "\n[... {} more bytes not shown ...]\n",
        60_000 - (4_096 - 200 - 3)
    )));
}

#[test]
fn an_ambiguous_prefix_lists_its_candidates() {
    let found = Found::Several(vec![
        ("abcd00000001".into(), "crontabs/alice:3".into()),
        ("abcd00000002".into(), "crontabs/alice:4".into()),
    ]);
    assert_eq!(
        text(ambiguous("abcd", &found)),
        "ERROR the id prefix abcd names more than one entry: abcd00000001 (crontabs/alice:3), \
         abcd00000002 (crontabs/alice:4); give more digits\n"
    );
}

#[test]
fn durations_sizes_and_signals_read_as_words() {
    assert_eq!(took(35), "35ms");
    assert_eq!(took(2_100), "2.1s");
    assert_eq!(took(42_000), "42s");
    assert_eq!(took(3_725_000), "1h02m");
    assert_eq!(bytes(512), "512B");
    assert_eq!(bytes(1_536), "1.5K");
    assert_eq!(bytes(200 << 20), "200M");
    assert_eq!(signal_name(9), "SIGKILL");
    assert_eq!(signal_name(15), "SIGTERM");
    assert_eq!(signal_name(64), "signal 64");
}

#[test]
fn a_cluster_entrys_runs_elsewhere_have_no_number_and_a_note_ends_the_list() {
    let mut l = listing();
    l.rows[0].run = 0;
    l.rows[0].outcome.cluster = Some(crond::history::ClusterRun {
        cluster: "web".into(),
        entry: crond::cluster::entry_id::EntryKey(0xfeed),
        minute: Some(1),
    });
    l.note = Some("the cluster database could not be read (refused)".into());
    let table = text(history(&query(false, false, 1 << 20), &l, &zone()));
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[2].starts_with("-  "), "{table}");
    assert_eq!(
        lines.last(),
        Some(&"(the cluster database could not be read (refused))"),
        "{table}"
    );
    let json = text(history(&query(true, false, 1 << 20), &l, &zone()));
    let lines: Vec<&str> = json.lines().collect();
    assert!(
        lines[1].starts_with(r#"{"run":null,"#)
            && lines[1].contains(r#""cluster":"web","cluster_entry":"000000000000feed""#),
        "{json}"
    );
    assert_eq!(
        lines.last(),
        Some(&r#"{"note":"the cluster database could not be read (refused)"}"#)
    );
}

#[test]
fn the_attempts_of_a_retried_slot_say_which_they_are_in_the_table_and_in_json() {
    use crond::history::Attempt;
    let mut first = stored(21, AT, ran(End::Exited(1), 40));
    first.outcome.attempt = Some(Attempt { number: 1, of: 3 });
    let mut second = stored(22, AT + 1_040, ran(End::Exited(0), 35));
    second.outcome.attempt = Some(Attempt { number: 2, of: 3 });
    second.outcome.slot = first.outcome.slot;
    let l = Listing {
        rows: vec![second, first],
        gaps: Vec::new(),
        note: None,
    };
    let got = text(history(&query(false, false, 1 << 20), &l, &zone()));
    assert_eq!(
        got,
        "OK
RUN  TIME                 ENTRY         RESULT                TOOK  HOST
22   2026-12-01 11:00:01  3f2a9c01b7d4  ok (attempt 2/3)      35ms  web-01.example.org
21   2026-12-01 11:00:00  3f2a9c01b7d4  exit 1 (attempt 1/3)  40ms  web-01.example.org

2 outcomes listed. Pass --wide for more columns.
"
    );
    let json = text(history(&query(true, false, 1 << 20), &l, &zone()));
    let lines: Vec<&str> = json.lines().skip(1).collect();
    assert!(
        lines[0].contains(
            r#""trigger":"schedule","attempt":2,"attempts":3,"slot":"2026-12-01T11:00:00+01:00""#
        ),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains(r#""attempt":1,"attempts":3"#),
        "{}",
        lines[1]
    );
}
