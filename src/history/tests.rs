use super::*;

fn ran() -> Outcome {
    Outcome {
        entry: "0123456789ab".into(),
        place: "crontabs/alice:3".into(),
        user: "alice".into(),
        owner_uid: Some(1000),
        command: "backup --all".into(),
        trigger: Trigger::Schedule,
        slot: Some(1_795_000_000),
        host: "web1".into(),
        at_ms: 1_795_000_000_120,
        cluster: None,
        attempt: None,
        result: Result::Ran(Ran {
            ended_ms: 1_795_000_002_000,
            end: End::Exited(3),
            timed_out: false,
            user_us: 1200,
            system_us: 300,
            max_rss_kib: 4096,
            output_bytes: 11,
            head: b"hello\n\x00\x1b[31m".to_vec(),
            tail: Vec::new(),
            mail: Mail::Failed("the MTA exited 75".into()),
        }),
    }
}

fn round_trip(outcome: &Outcome) -> Outcome {
    let bytes = outcome.encode();
    assert!(bytes.len() <= MAX_MESSAGE, "{}", bytes.len());
    let fields = Fields::parse(&bytes).unwrap();
    assert_eq!(fields.kind(), Some(&b"outcome"[..]));
    Outcome::decode(&fields).unwrap()
}

#[test]
fn every_kind_of_outcome_reads_back_as_it_was_written() {
    let outcome = ran();
    assert_eq!(round_trip(&outcome), outcome);
    assert!(outcome.failed());
    let mut ok = ran();
    if let Result::Ran(r) = &mut ok.result {
        r.end = End::Exited(0);
        r.mail = Mail::Sent;
    }
    assert!(!ok.failed());
    assert_eq!(round_trip(&ok), ok);
    let mut signaled = ran();
    if let Result::Ran(r) = &mut signaled.result {
        r.end = End::Signaled(9);
        r.timed_out = true;
        r.mail = Mail::None;
    }
    assert_eq!(round_trip(&signaled), signaled);
    for reason in Reason::ALL {
        assert_eq!(Reason::parse(reason.code()), Some(reason));
        let not_run = Outcome {
            owner_uid: None,
            slot: None,
            trigger: Trigger::Manual,
            result: Result::NotRun {
                reason,
                words: "its previous run (since 10:01) is still running\nsecond line".into(),
            },
            ..ran()
        };
        assert_eq!(not_run.failed(), reason != Reason::OtherHost);
        assert_eq!(round_trip(&not_run), not_run);
    }
    for trigger in Trigger::ALL {
        assert_eq!(Trigger::parse(trigger.code()), Some(trigger));
    }
    for minute in [Some(1_795_000_000), None] {
        let clustered = Outcome {
            cluster: Some(ClusterRun {
                cluster: "prod".into(),
                entry: EntryKey(0x0123_4567_89ab_cdef),
                minute,
            }),
            ..ran()
        };
        assert_eq!(round_trip(&clustered), clustered);
    }
    let retried = Outcome {
        attempt: Some(Attempt { number: 2, of: 4 }),
        ..ran()
    };
    assert_eq!(round_trip(&retried), retried);
}

#[test]
fn a_message_never_passes_its_bound_the_outputs_ends_give_room() {
    let mut big = ran();
    big.command = "é".repeat(MAX_COMMAND);
    if let Result::Ran(r) = &mut big.result {
        r.head = vec![b'h'; 150 * 1024];
        r.tail = vec![b't'; 150 * 1024];
        r.output_bytes = 10 << 20;
    }
    let back = round_trip(&big);
    assert!(back.command.len() <= MAX_COMMAND && back.command.starts_with('é'));
    let Result::Ran(r) = back.result else {
        panic!()
    };
    assert!(r.head.len() > 100 * 1024 && r.head.iter().all(|&b| b == b'h'));
    assert!(r.tail.iter().all(|&b| b == b't'));
    assert_eq!(r.output_bytes, 10 << 20);
}

#[test]
fn broken_messages_are_errors_never_a_panic() {
    let good = ran().encode();
    for cut in 0..good.len() {
        let _ = Fields::parse(&good[..cut]).map(|f| Outcome::decode(&f));
    }
    assert!(matches!(
        Fields::parse(b"kind 7\noutcome"),
        Err(WireError::Framing(0))
    ));
    assert!(Fields::parse(b"kind 99999999999999999999999\n").is_err());
    let no_entry = b"kind 7\noutcome\nentry 1\na\nuser 1\na\n";
    let fields = Fields::parse(no_entry).unwrap();
    assert_eq!(Outcome::decode(&fields), Err(WireError::Missing("trigger")));
    // A field a reader does not know is skipped.
    let mut grown = ran().encode();
    grown.extend_from_slice(b"future 3\nabc\n");
    assert_eq!(
        Outcome::decode(&Fields::parse(&grown).unwrap()).unwrap(),
        ran()
    );
}

#[test]
fn a_query_reads_back_and_says_who_may_see_what() {
    let query = Query {
        asked: Asked::History {
            entry: Some("0123".into()),
            user: Some("bob".into()),
            failed: true,
            since_ms: Some(5),
            limit: 100,
        },
        json: true,
        wide: false,
        all: false,
        uid: 1000,
        name: Some("alice".into()),
        now_ms: 99,
        zone: "Europe/Paris".into(),
        max_answer: 1 << 20,
    };
    let bytes = query.encode();
    assert_eq!(
        Query::decode(&Fields::parse(&bytes).unwrap()),
        Ok(query.clone())
    );
    let logs = Query {
        asked: Asked::Logs {
            entry: "0123456789ab".into(),
            run: Some(42),
            raw: true,
        },
        ..query.clone()
    };
    assert_eq!(
        Query::decode(&Fields::parse(&logs.encode()).unwrap()),
        Ok(logs)
    );
    assert!(query.may_see("alice", Some(1000)));
    assert!(!query.may_see("alice", Some(1001)));
    assert!(query.may_see("alice", None));
    assert!(!query.may_see("bob", None));
    let root = Query {
        all: true,
        uid: 0,
        ..query
    };
    assert!(root.may_see("bob", Some(7)));
}

#[test]
fn the_head_and_tail_of_an_output_hold_it_all_when_it_fits() {
    let text: Vec<u8> = (0..100u8).collect();
    let read_at = |from: u64, buf: &mut [u8]| {
        let from = from as usize;
        let n = buf.len().min(text.len().saturating_sub(from)).min(7);
        buf[..n].copy_from_slice(&text[from..from + n]);
        n
    };
    assert_eq!(head_and_tail(100, 50, read_at), (text.clone(), Vec::new()));
    let (head, tail) = head_and_tail(100, 10, read_at);
    assert_eq!(head, text[..10]);
    assert_eq!(tail, text[90..]);
    assert_eq!(head_and_tail(100, 0, read_at), (Vec::new(), Vec::new()));
    let log = LogMessage {
        level: 3,
        text: "history: the store was set aside".into(),
    };
    assert_eq!(
        LogMessage::decode(&Fields::parse(&log.encode()).unwrap()),
        Ok(log)
    );
    let gap = Gap {
        from_ms: 1,
        to_ms: 2,
        lost: 3,
        why: "the history writer was down".into(),
    };
    assert_eq!(Gap::decode(&Fields::parse(&gap.encode()).unwrap()), Ok(gap));
}
