//! The protocol's tests: requests, who sees what, and the answers' text and bounds.

use super::*;
use crate::job::report::{End, Said};
use crate::metrics::Outcome;

fn peer(uid: u32, name: Option<&str>) -> Peer {
    Peer {
        uid,
        pid: 4242,
        name: name.map(|n| n.as_bytes().to_vec()),
    }
}

fn paris() -> Zone {
    Zone::new(
        "Europe/Paris",
        jiff::tz::TimeZone::get("Europe/Paris").unwrap(),
    )
}

/// 2026-11-27 09:00 UTC, 10:00 in Paris.
const NINE_UTC: i64 = 1_795_770_000;

fn entry(id: u64, tab: &str, line: u32, user: &str) -> EntryView {
    EntryView {
        id: LocalId(id),
        slot: id,
        tab: tab.into(),
        line,
        user: user.as_bytes().to_vec(),
        schedule: b"*/5 * * * mon-fri".to_vec(),
        cron_tz: None,
        zone: paris(),
        next_s: Some(NINE_UTC),
        runs: Vec::new(),
        detail: None,
        running: Vec::new(),
        policy: Policy::default(),
        cluster: None,
        paused: false,
        command: b"date".to_vec(),
    }
}

pub(super) fn snapshot(entries: Vec<EntryView>) -> Snapshot {
    Snapshot {
        status: StatusView {
            version: "0.1.0",
            pid: 77,
            started_ms: (NINE_UTC - 3_725) * 1000,
            now_ms: NINE_UTC * 1000,
            zone: paris(),
            entries: entries.len(),
            running: 1,
            own_only: false,
        },
        entries,
        omitted: 0,
        not_loaded: Vec::new(),
    }
}

fn text(answer: Vec<u8>) -> String {
    String::from_utf8(answer).unwrap()
}

#[test]
fn requests_are_one_line_of_words_and_anything_else_is_an_error_that_says_why() {
    assert_eq!(
        parse_request(b"list"),
        Ok(Request::List {
            format: Format::Table,
            wide: false,
            pattern: None
        })
    );
    assert_eq!(
        parse_request(b"list --json alice\r"),
        Ok(Request::List {
            format: Format::Json,
            wide: false,
            pattern: Some("alice".into())
        })
    );
    assert_eq!(
        parse_request(b"status --json"),
        Ok(Request::Status {
            format: Format::Json
        })
    );
    assert_eq!(
        parse_request(b"run crontabs/alice:3"),
        Ok(Request::Run {
            target: Target::Place {
                tab: "crontabs/alice".into(),
                line: 3
            },
            wait: false
        })
    );
    assert_eq!(
        parse_request(b"run --wait crontabs/alice:3"),
        Ok(Request::Run {
            target: Target::Place {
                tab: "crontabs/alice".into(),
                line: 3
            },
            wait: true
        })
    );
    assert_eq!(
        parse_request(b"run /etc/cron.d/php:12"),
        Ok(Request::Run {
            target: Target::Place {
                tab: "/etc/cron.d/php".into(),
                line: 12
            },
            wait: false
        })
    );
    assert_eq!(
        parse_request(b"run 55A1"),
        Ok(Request::Run {
            target: Target::Id("55a1".into()),
            wait: false
        })
    );
    assert_eq!(
        parse_request(b"pause crontabs/alice:3"),
        Ok(Request::Pause {
            target: Target::Place {
                tab: "crontabs/alice".into(),
                line: 3
            },
            pause: true
        })
    );
    assert_eq!(
        parse_request(b"resume 55A1"),
        Ok(Request::Pause {
            target: Target::Id("55a1".into()),
            pause: false
        })
    );
    for (bad, says) in [
        (&b""[..], "empty"),
        (b"delete everything", "unknown request"),
        (b"pause", "neither"),
        (b"resume web root 0123456789abcdef", "neither"),
        (b"pause 12", "not an id"),
        (b"run", "neither"),
        (b"run crontabs/alice", "neither"),
        (b"run --wait", "neither"),
        (b"run :3", "neither"),
        (b"run crontabs/alice:x", "neither"),
        (b"run 99999999999999999999999", "not an id"),
        (b"list a b", "unexpected"),
        (b"list --yaml", "unexpected"),
        (b"status now", "unexpected"),
        (b"list \xff", "UTF-8"),
    ] {
        let e = parse_request(bad).unwrap_err();
        assert!(e.contains(says), "{bad:?}: {e}");
    }
}

#[test]
fn root_sees_everything_and_a_user_only_what_runs_as_them() {
    let root = peer(0, Some("root"));
    let alice = peer(1000, Some("alice"));
    let ghost = peer(4321, None);
    assert!(may_see(&root, b"alice", Some(1000)));
    assert!(may_see(&root, b"www-data", None));
    assert!(may_see(&alice, b"alice", Some(1000)));
    assert!(
        may_see(&alice, b"alice", None),
        "a system file's line for alice"
    );
    assert!(!may_see(&alice, b"bob", None));
    assert!(!may_see(&alice, b"root", None));
    assert!(
        !may_see(&alice, b"alice", Some(1001)),
        "a crontab checked for another uid that now has alice's name"
    );
    assert!(
        !may_see(&ghost, b"", None),
        "no passwd entry: no system line"
    );
    assert!(
        may_see(&ghost, b"", Some(4321)),
        "a uid without a passwd entry sees the crontab checked for it (a --crontab daemon's)"
    );
    assert!(!may_see(&ghost, b"alice", Some(1000)));
}

#[test]
fn an_entry_another_user_may_not_see_is_not_found_in_the_same_words_as_one_that_does_not_exist() {
    // The daemon filters the snapshot by the asker first: bob's entry is not in alice's.
    let alice_sees = snapshot(vec![entry(1, "crontabs/alice", 3, "alice")]);
    let hidden = find(
        &alice_sees,
        &Target::Place {
            tab: "crontabs/bob".into(),
            line: 1,
        },
    )
    .unwrap_err();
    let absent = find(
        &alice_sees,
        &Target::Place {
            tab: "crontabs/bob".into(),
            line: 2,
        },
    )
    .unwrap_err();
    assert_eq!(
        text(hidden).replace(":1 ", ":2 "),
        text(absent),
        "the same words"
    );
    assert_eq!(
        find(&alice_sees, &Target::Id(LocalId(1).to_string()))
            .unwrap()
            .line,
        3
    );
}

#[test]
fn the_table_shows_each_entrys_place_schedule_next_and_last_run_and_escapes_what_a_crontab_says() {
    let mut a = entry(1, "crontabs/alice", 3, "alice");
    a.runs = vec![LastRun {
        started_ms: (NINE_UTC - 600) * 1000,
        duration_ms: 75_000,
        outcome: Outcome::Failed,
        said: None,
    }];
    a.running = vec![501, 502];
    a.policy = a.policy.with(b"CRON_OVERLAP", b"skip").unwrap();
    a.policy = a.policy.with(b"CRON_TIMEOUT", b"90s").unwrap();
    let mut b = entry(2, "/etc/cron.d/php", 12, "www-data");
    b.cron_tz = Some("UTC".into());
    b.zone = Zone::utc();
    b.command = b"echo \x1b[31mred\x1b[0m".to_vec();
    b.next_s = None;
    let answer = text(render(
        &Request::List {
            format: Format::Table,
            wide: false,
            pattern: None,
        },
        &snapshot(vec![a, b]),
        &peer(0, Some("root")),
    ));
    let lines: Vec<&str> = answer.lines().collect();
    assert_eq!(lines[0], "OK");
    assert!(lines[1].starts_with("NEXT  "), "{answer}");
    // Sorted by next run, the one with none last; times in the host's zone, spans beside.
    for cell in [
        "alice:3",
        "2026-11-27 10:00",
        "10min ago",
        "running",
        "000000000001",
    ] {
        assert!(lines[2].contains(cell), "{cell:?} in {:?}", lines[2]);
    }
    assert!(lines[3].contains("php:12"), "{answer}");
    assert!(lines[3].contains("echo \\x1b[31m"), "{}", lines[3]);
    assert_eq!(lines[5], "2 entries listed. Pass --wide for more columns.");
    assert!(!answer.contains('\x1b'));
}

#[test]
fn a_request_wants_in_its_snapshot_only_the_entries_it_shows_or_runs() {
    let root = peer(0, Some("root"));
    let status = parse_request(b"status").unwrap();
    assert!(
        !status
            .want(&root)
            .wants(LocalId(1), "crontabs/alice", 3, b"alice")
    );
    let list = parse_request(b"list www").unwrap();
    let want = list.want(&root);
    assert!(want.wants(LocalId(2), "/etc/cron.d/php", 12, b"www-data"));
    assert!(want.wants(LocalId(2), "/etc/cron.d/www", 1, b"root"));
    assert!(!want.wants(LocalId(1), "crontabs/alice", 3, b"alice"));
    assert_eq!(want.max_entries, MAX_ANSWER_ROOT / MIN_ENTRY_BYTES);
    assert_eq!(
        parse_request(b"list")
            .unwrap()
            .want(&peer(1000, Some("alice")))
            .max_entries,
        MAX_ANSWER_USER / MIN_ENTRY_BYTES
    );
    let run = parse_request(b"run crontabs/alice:3").unwrap();
    let want = run.want(&root);
    assert!(want.wants(LocalId(9), "crontabs/alice", 3, b"alice"));
    assert!(!want.wants(LocalId(9), "crontabs/alice", 4, b"alice"));
    assert!(!want.wants(LocalId(9), "crontabs/alicia", 3, b"alicia"));
    let by_id = parse_request(b"run 000000000009").unwrap();
    assert!(by_id.want(&root).wants(LocalId(9), "x", 1, b"x"));
    assert!(!by_id.want(&root).wants(LocalId(8), "x", 1, b"x"));
}

#[test]
fn the_json_list_is_one_object_per_entry_with_every_field() {
    let mut a = entry(7, "crontabs/alice", 3, "alice");
    a.cron_tz = Some("Europe/Paris".into());
    a.runs = vec![LastRun {
        started_ms: (NINE_UTC - 61) * 1000,
        duration_ms: 1_500,
        outcome: Outcome::Succeeded,
        said: Some(Said::Ended {
            end: End::Exited(0),
            duration_ms: 1_490,
        }),
    }];
    a.running = vec![9];
    a.command = b"printf '%s\\n' \"\xff\"".to_vec();
    let answer = text(render(
        &Request::List {
            format: Format::Json,
            wide: false,
            pattern: None,
        },
        &snapshot(vec![a, entry(8, "crontabs/alice", 4, "alice")]),
        &peer(1000, Some("alice")),
    ));
    let mut lines = answer.lines();
    assert_eq!(lines.next(), Some("OK"));
    let objects: Vec<serde_json::Value> = lines.map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(objects.len(), 2);
    let o = &objects[0];
    assert_eq!(o["id"], "000000000007");
    assert_eq!(o["entry"], "crontabs/alice:3");
    assert_eq!(o["file"], "crontabs/alice");
    assert_eq!(o["line"], 3);
    assert_eq!(o["user"], "alice");
    assert_eq!(o["schedule"], "*/5 * * * mon-fri");
    assert_eq!(o["cron_tz"], "Europe/Paris");
    assert_eq!(o["zone"], "Europe/Paris");
    assert_eq!(o["next"], "2026-11-27T10:00:00+01:00");
    assert_eq!(o["next_utc"], "2026-11-27T09:00:00+00:00");
    assert_eq!(o["last"], "2026-11-27T09:58:59+01:00");
    assert_eq!(o["last_result"], "ok");
    assert_eq!(o["last_duration_ms"], 1500);
    assert_eq!(o["running"], serde_json::json!([9]));
    assert_eq!(o["overlap"], "allow");
    assert_eq!(o["missed"], "skip");
    assert_eq!(o["timeout_s"], serde_json::Value::Null);
    assert_eq!(o["cluster"], false);
    assert_eq!(o["command"], "printf '%s\\n' \"\u{fffd}\"");
    assert_eq!(objects[1]["last"], serde_json::Value::Null);
}

#[test]
fn a_list_longer_than_the_bound_is_cut_at_an_entry_and_says_how_many_were_left_out() {
    let many: Vec<EntryView> = (0..20_000)
        .map(|i| entry(i, "/etc/cron.d/big", i as u32 + 1, "alice"))
        .collect();
    let mut snap = snapshot(many);
    // The daemon made 20,000 and counted 500 more past the snapshot's bound.
    snap.omitted = 500;
    let alice = peer(1000, Some("alice"));
    for format in [Format::Table, Format::Json] {
        let answer = text(render(
            &Request::List {
                format,
                wide: false,
                pattern: None,
            },
            &snap,
            &alice,
        ));
        assert!(answer.len() <= MAX_ANSWER_USER, "{}", answer.len());
        let last = answer.lines().last().unwrap();
        let more = answer.lines().find(|l| l.starts_with('(')).unwrap_or(last);
        let left_out: usize = match format {
            Format::Table => more
                .strip_prefix('(')
                .and_then(|l| l.split(' ').next())
                .unwrap()
                .parse()
                .unwrap(),
            Format::Json => serde_json::from_str::<serde_json::Value>(last).unwrap()["not_shown"]
                .as_u64()
                .unwrap() as usize,
        };
        // OK and the last line; a table's header, blank line and count.
        let shown = answer.lines().count() - 2 - 3 * usize::from(format == Format::Table);
        assert!(left_out > 0);
        assert_eq!(
            shown + left_out,
            20_000 + 500,
            "{format:?}: the omitted count too"
        );
    }
    let root = text(render(
        &Request::List {
            format: Format::Json,
            wide: false,
            pattern: None,
        },
        &snap,
        &peer(0, None),
    ));
    let last: serde_json::Value = serde_json::from_str(root.lines().last().unwrap()).unwrap();
    assert_eq!(
        last["not_shown"], 500,
        "root's bound is larger: only the omitted are left out"
    );
}

#[test]
fn status_says_version_uptime_entries_running_clock_and_zone() {
    let mut snap = snapshot(vec![entry(1, "crontabs/alice", 3, "alice")]);
    snap.status.own_only = true;
    let table = text(render(
        &Request::Status {
            format: Format::Table,
        },
        &snap,
        &peer(1000, Some("alice")),
    ));
    for line in [
        "OK\n",
        "crond 0.1.0, pid 77\n",
        "up 1h02m (since 2026-11-27T08:57:55+01:00)\n",
        "entries: 1 (yours)\n",
        "jobs running: 1 (yours)\n",
        "clock: 2026-11-27T10:00:00+01:00 (2026-11-27T09:00:00+00:00)\n",
        "zone: Europe/Paris\n",
    ] {
        assert!(table.contains(line), "{line:?} in {table}");
    }
    let json = text(render(
        &Request::Status {
            format: Format::Json,
        },
        &snap,
        &peer(1000, Some("alice")),
    ));
    let o: serde_json::Value = serde_json::from_str(json.lines().nth(1).unwrap()).unwrap();
    assert_eq!(o["uptime_s"], 3725);
    assert_eq!(o["entries"], 1);
    assert_eq!(o["own_only"], true);
    assert_eq!(o["zone"], "Europe/Paris");
}

#[test]
fn a_runs_answer_says_what_became_of_it_and_an_error_is_one_line() {
    assert_eq!(
        text(ran_answer("crontabs/alice:3", &Ran::Started(77))),
        "OK\nstarted crontabs/alice:3: job pid 77\n"
    );
    assert!(text(ran_answer("x:1", &Ran::Skipped)).starts_with("ERROR x:1 is running"));
    assert!(text(ran_answer("x:1", &Ran::Waiting)).starts_with("OK\n"));
    assert_eq!(text(error_answer("two\nlines")), "ERROR two lines\n");
}

#[test]
fn the_private_socket_is_named_beside_the_shared_one() {
    let private = |p: &str| private_path(Path::new(p)).display().to_string();
    assert_eq!(private("/run/crond.sock"), "/run/crond.private.sock");
    assert_eq!(private("/tmp/x/ctl"), "/tmp/x/ctl.private");
}

#[test]
fn c1_bidirectional_and_invisible_characters_are_spelled_out_in_the_table_and_in_json() {
    let mut e = entry(1, "crontabs/bob", 1, "bob");
    // U+009B (CSI), U+202E (right-to-left override), U+2066, U+200B.
    e.command = "true # \u{9b}31mRED \u{202e} evil \u{2066}x\u{200b}"
        .as_bytes()
        .to_vec();
    let ask = |format| {
        text(render(
            &Request::List {
                format,
                wide: false,
                pattern: None,
            },
            &snapshot(vec![e.clone()]),
            &peer(0, Some("root")),
        ))
    };
    let table = ask(Format::Table);
    assert!(table.contains("\\x9b31mRED \\u{202e"), "{table}");
    let wide = text(render(
        &Request::List {
            format: Format::Table,
            wide: true,
            pattern: None,
        },
        &snapshot(vec![e.clone()]),
        &peer(0, Some("root")),
    ));
    assert!(
        wide.contains("\\x9b31mRED \\u{202e} evil \\u{2066}x\\u{200b}"),
        "{wide}"
    );
    let json = ask(Format::Json);
    assert!(
        json.contains(r#"\u009b31mRED \u202e evil \u2066x\u200b"#),
        "{json}"
    );
    for answer in [table, json] {
        assert!(
            !answer.contains(['\u{9b}', '\u{202e}', '\u{2066}', '\u{200b}']),
            "{answer}"
        );
    }
}

#[test]
fn show_says_why_an_entry_does_not_run_first_a_pause_then_no_time_a_refused_run_an_overlap() {
    use super::show::why_not_running;
    let mut e = entry(1, "crontabs/alice", 3, "alice");
    let mut detail = Detail::default();
    assert_eq!(why_not_running(&e, &detail), None);
    e.policy = e.policy.with(b"CRON_OVERLAP", b"skip").unwrap();
    e.running = vec![42];
    assert_eq!(
        why_not_running(&e, &detail).as_deref(),
        Some("a run of it is running, and CRON_OVERLAP=skip starts no other beside it")
    );
    e.runs = vec![LastRun {
        started_ms: 0,
        duration_ms: 3,
        outcome: Outcome::Failed,
        said: Some(Said::NotStarted {
            why: crate::history::Reason::UserUnknown,
            reason: "PAM refused the session: Authentication failure".into(),
        }),
    }];
    assert_eq!(
        why_not_running(&e, &detail).as_deref(),
        Some("its last run did not run: PAM refused the session: Authentication failure")
    );
    e.next_s = None;
    assert_eq!(
        why_not_running(&e, &detail).as_deref(),
        Some("its schedule has no time to come")
    );
    let key: crate::cluster::entry_id::EntryKey = "0123456789abcdef".parse().unwrap();
    e.cluster = Some(("nightly".into(), key));
    detail.paused = true;
    assert_eq!(
        why_not_running(&e, &detail).as_deref(),
        Some("paused in cluster nightly (cronctl resume nightly alice 0123456789abcdef)")
    );
}

#[test]
fn show_is_asked_by_id_or_place_with_or_without_json_and_wants_its_detail() {
    let show = parse_request(b"show --json crontabs/alice:3").unwrap();
    assert!(matches!(
        &show,
        Request::Show {
            format: Format::Json,
            target: Target::Place { line: 3, .. }
        }
    ));
    let want = show.want(&peer(0, None));
    assert!(want.detail && want.target.is_some());
    let by_id = parse_request(b"show 55a1").unwrap();
    assert!(matches!(
        by_id,
        Request::Show {
            format: Format::Table,
            ..
        }
    ));
    let run = parse_request(b"run 55a1").unwrap();
    assert!(!run.want(&peer(0, None)).detail);
    assert!(parse_request(b"show").is_err());
    assert!(parse_request(b"show --json").is_err());
}

#[test]
fn what_did_not_load_is_shown_to_root_and_to_the_user_of_its_crontab_and_as_asked() {
    let bad = |tab: &str, line: Option<u32>, user: Option<&str>, uid: Option<u32>| NotLoaded {
        tab: tab.into(),
        line,
        user: user.map(|u| u.as_bytes().to_vec()),
        checked_uid: uid,
        reason: "column 1: bad minute".into(),
        orphan: false,
    };
    let all = vec![
        bad("crontabs/alice", Some(4), Some("alice"), None),
        bad("/etc/cron.d/php", Some(2), None, None),
        bad("/app/crontab", None, Some("app"), Some(1500)),
    ];
    let list = Request::List {
        format: Format::Table,
        wide: false,
        pattern: None,
    };
    let places = |peer: &Peer, request: &Request| -> Vec<String> {
        let want = request.want(peer);
        want.not_loaded(peer, all.clone())
            .iter()
            .map(NotLoaded::place)
            .collect()
    };
    assert_eq!(places(&peer(0, None), &list).len(), 3);
    assert_eq!(
        places(&peer(1000, Some("alice")), &list),
        ["crontabs/alice:4"]
    );
    assert_eq!(places(&peer(1500, None), &list), ["/app/crontab"]);
    assert!(places(&peer(1001, Some("bob")), &list).is_empty());
    let show = |text: &str| parse_request(format!("show {text}").as_bytes()).unwrap();
    assert_eq!(
        places(&peer(0, None), &show("crontabs/alice:4")),
        ["crontabs/alice:4"]
    );
    assert!(places(&peer(0, None), &show("crontabs/alice:5")).is_empty());
    assert_eq!(
        places(&peer(0, None), &show("/app/crontab:9")),
        ["/app/crontab"]
    );
    assert!(places(&peer(0, None), &show("55a1")).is_empty());
    let status = Request::Status {
        format: Format::Table,
    };
    assert!(places(&peer(0, None), &status).is_empty());
}

#[test]
fn show_of_an_entry_at_every_bound_stays_within_a_users_answer_and_says_what_it_left_out() {
    let mut e = entry(1, "crontabs/alice", 3, "alice");
    // A command at the parser's bound and a system file's many long variables, all in bytes
    // that are shown escaped (the most room each takes).
    e.command = vec![0x01; 131_072];
    e.detail = Some(Detail {
        env: (0..10_000)
            .map(|i| (format!("V{i}").into_bytes(), vec![0x01; 1_000]))
            .collect(),
        ..Detail::default()
    });
    let alice = peer(1000, Some("alice"));
    for format in [Format::Table, Format::Json] {
        let request = Request::Show {
            target: Target::Place {
                tab: "crontabs/alice".into(),
                line: 3,
            },
            format,
        };
        let answer = text(render(&request, &snapshot(vec![e.clone()]), &alice));
        assert!(
            answer.len() <= MAX_ANSWER_USER,
            "{format:?}: {} bytes",
            answer.len()
        );
        match format {
            Format::Table => assert!(answer.contains("  (9900 more variables not shown)\n")),
            Format::Json => {
                let v: serde_json::Value =
                    serde_json::from_str(answer.lines().nth(1).unwrap()).unwrap();
                assert_eq!(v["env_not_shown"], 9_900);
                assert_eq!(v["env"].as_array().unwrap().len(), 100);
                assert_eq!(v["command"].as_str().unwrap().chars().count(), 131_072);
            }
        }
    }
}
