use super::*;
use crond::history::Query;

/// An outcome of `entry` by `user` (crontab of `owner`) at `at_ms` that exited `exit`, with
/// `out` bytes of output kept.
pub fn ran(
    entry: &str,
    user: &str,
    owner: Option<u32>,
    at_ms: i64,
    exit: i32,
    out: usize,
) -> Outcome {
    Outcome {
        entry: entry.into(),
        place: format!("crontabs/{user}:3"),
        user: user.into(),
        owner_uid: owner,
        command: "echo hello".into(),
        trigger: Trigger::Schedule,
        slot: Some(at_ms / 1000 / 60 * 60),
        host: "h1".into(),
        at_ms,
        cluster: None,
        attempt: None,
        result: Slot::Ran(Ran {
            ended_ms: at_ms + 2_100,
            end: End::Exited(exit),
            timed_out: false,
            user_us: 1_500,
            system_us: 500,
            max_rss_kib: 2_048,
            output_bytes: out as u64,
            head: vec![b'x'; out],
            tail: Vec::new(),
            mail: Mail::Sent,
        }),
    }
}

pub fn not_run(entry: &str, user: &str, owner: Option<u32>, at_ms: i64) -> Outcome {
    Outcome {
        result: Slot::NotRun {
            reason: Reason::Overlap,
            words: "the previous run (pid 12) was still running".into(),
        },
        ..ran(entry, user, owner, at_ms, 0, 0)
    }
}

const ALL: Seen<'static> = Seen {
    all: true,
    uid: 0,
    name: None,
};

fn open() -> (tempfile::TempDir, Store, Reader) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let store = Store::open(&path).unwrap();
    let reader = Reader::open(&path).unwrap();
    (dir, store, reader)
}

fn listed(reader: &Reader, ask: &HistoryAsk<'_>, seen: Seen<'_>) -> Vec<(String, i64)> {
    let listing = reader.history(ask, seen).unwrap();
    listing
        .rows
        .iter()
        .map(|s| (s.outcome.entry.clone(), s.outcome.at_ms))
        .collect()
}

fn every(limit: u32) -> HistoryAsk<'static> {
    HistoryAsk {
        entry: None,
        user: None,
        failed: false,
        since_ms: None,
        limit,
    }
}

fn prune(store: &mut Store, bounds: &Bounds, now_ms: i64) {
    while store.prune_step(bounds, now_ms).unwrap() {}
}

#[test]
fn an_outcome_reads_back_as_it_was_sent_with_its_output_and_run_number() {
    let (_dir, mut store, reader) = open();
    let mut first = ran("aaaa00000001", "alice", Some(1000), 1_000_000, 3, 10);
    if let Slot::Ran(r) = &mut first.result {
        r.tail = b"the end\n".to_vec();
        r.end = End::Signaled(9);
        r.timed_out = true;
        r.mail = Mail::Failed("sendmail exited 75".into());
    }
    let second = not_run("aaaa00000001", "alice", Some(1000), 2_000_000);
    store
        .insert(&[Item::Outcome(first.clone()), Item::Outcome(second.clone())])
        .unwrap();
    let listing = reader.history(&every(10), ALL).unwrap();
    // Newest first; the listing has no output.
    assert_eq!(listing.rows.len(), 2);
    assert_eq!(listing.rows[0].outcome, second);
    assert_eq!(listing.rows[1].run, 1);
    let got = reader.run("aaaa00000001", Some(1), ALL).unwrap().unwrap();
    assert_eq!(got.outcome, first);
    // Without a number: the last run that ran (the newer one did not run).
    let last = reader.run("aaaa00000001", None, ALL).unwrap().unwrap();
    assert_eq!(last.run, 1);
    assert_eq!(reader.run("aaaa00000001", Some(9), ALL).unwrap(), None);
}

#[test]
fn each_asker_sees_only_their_crontabs_and_their_system_lines() {
    let (_dir, mut store, reader) = open();
    store
        .insert(&[
            Item::Outcome(ran("aaaa00000001", "alice", Some(1000), 1, 0, 0)),
            Item::Outcome(ran("bbbb00000001", "bob", Some(1001), 2, 0, 0)),
            // A system line run as alice: hers to see by name.
            Item::Outcome(ran("cccc00000001", "alice", None, 3, 0, 0)),
            // A system line run as root.
            Item::Outcome(ran("dddd00000001", "root", None, 4, 0, 0)),
            // A crontab of bob's uid whose line runs as alice (a renamed account): bob's.
            Item::Outcome(ran("eeee00000001", "alice", Some(1001), 5, 0, 0)),
        ])
        .unwrap();
    let alice = Seen {
        all: false,
        uid: 1000,
        name: Some("alice"),
    };
    let entries = |seen| -> Vec<String> {
        listed(&reader, &every(100), seen)
            .into_iter()
            .map(|(e, _)| e)
            .collect()
    };
    assert_eq!(entries(alice), ["cccc00000001", "aaaa00000001"]);
    let no_name = Seen {
        all: false,
        uid: 1001,
        name: None,
    };
    assert_eq!(entries(no_name), ["eeee00000001", "bbbb00000001"]);
    assert_eq!(entries(ALL).len(), 5);
    // The same rule as `Query::may_see`, row by row.
    let query = Query {
        asked: crond::history::Asked::Logs {
            entry: String::new(),
            run: None,
            raw: false,
        },
        json: false,
        wide: false,
        all: false,
        uid: 1000,
        name: Some("alice".into()),
        now_ms: 0,
        zone: "UTC".into(),
        max_answer: 1 << 20,
    };
    let every_row = reader.history(&every(100), ALL).unwrap().rows;
    let by_rule: Vec<&str> = every_row
        .iter()
        .filter(|s| query.may_see(&s.outcome.user, s.outcome.owner_uid))
        .map(|s| s.outcome.entry.as_str())
        .collect();
    assert_eq!(entries(Seen::of(&query)), by_rule);
    // Nor may alice read another's run by its number.
    assert_eq!(reader.run("bbbb00000001", Some(2), alice).unwrap(), None);
}

#[test]
fn an_id_prefix_names_one_visible_entry_or_lists_the_candidates() {
    let (_dir, mut store, reader) = open();
    store
        .insert(&[
            Item::Outcome(ran("abcd00000001", "alice", Some(1000), 1, 0, 0)),
            Item::Outcome(ran("abcd00000002", "bob", Some(1001), 2, 0, 0)),
            Item::Outcome(ran("abce00000003", "alice", Some(1000), 3, 0, 0)),
        ])
        .unwrap();
    let alice = Seen {
        all: false,
        uid: 1000,
        name: Some("alice"),
    };
    // Bob's entry does not make alice's prefix ambiguous, nor is it named to her.
    assert_eq!(
        reader.resolve("abcd", alice).unwrap(),
        Found::One("abcd00000001".into())
    );
    assert_eq!(
        reader.resolve("ABCD", ALL).unwrap(),
        Found::Several(vec![
            ("abcd00000001".into(), "crontabs/alice:3".into()),
            ("abcd00000002".into(), "crontabs/bob:3".into()),
        ])
    );
    assert_eq!(
        reader.resolve("abcd00000002", alice).unwrap(),
        Found::Nothing
    );
    assert_eq!(
        reader.resolve("abc", ALL).unwrap(),
        Found::Several(vec![
            ("abcd00000001".into(), "crontabs/alice:3".into()),
            ("abcd00000002".into(), "crontabs/bob:3".into()),
            ("abce00000003".into(), "crontabs/alice:3".into()),
        ])
    );
    assert_eq!(reader.resolve("ffff", ALL).unwrap(), Found::Nothing);
}

#[test]
fn failed_since_user_and_limit_narrow_the_list() {
    let (_dir, mut store, reader) = open();
    let items: Vec<Item> = (0..20)
        .map(|i| {
            let exit = if i % 4 == 0 { 1 } else { 0 };
            let user = if i % 2 == 0 { "alice" } else { "bob" };
            Item::Outcome(ran("aaaa00000001", user, None, i * 1000, exit, 0))
        })
        .chain([Item::Outcome(not_run("aaaa00000001", "bob", None, 25_000))])
        .collect();
    store.insert(&items).unwrap();
    let ask = HistoryAsk {
        failed: true,
        since_ms: Some(8_000),
        ..every(100)
    };
    let at: Vec<i64> = listed(&reader, &ask, ALL).iter().map(|r| r.1).collect();
    assert_eq!(at, [25_000, 16_000, 12_000, 8_000]);
    let ask = HistoryAsk {
        user: Some("bob"),
        ..every(3)
    };
    let at: Vec<i64> = listed(&reader, &ask, ALL).iter().map(|r| r.1).collect();
    assert_eq!(at, [25_000, 19_000, 17_000]);
}

#[test]
fn gaps_are_listed_within_the_time_the_list_covers() {
    let (_dir, mut store, reader) = open();
    let gap = |from_ms, to_ms| {
        Item::Gap(Gap {
            from_ms,
            to_ms,
            lost: 12,
            why: "the store was set aside".into(),
        })
    };
    let mut items: Vec<Item> = (0..10)
        .map(|i| Item::Outcome(ran("aaaa00000001", "alice", None, i * 1000, 0, 0)))
        .collect();
    items.push(gap(500, 700));
    items.push(gap(5_500, 5_700));
    store.insert(&items).unwrap();
    let all = reader.history(&every(100), ALL).unwrap();
    assert_eq!(all.gaps.len(), 2);
    assert_eq!(all.gaps[0].1.to_ms, 5_700);
    // The three newest rows reach back to 7,000: the gaps are older.
    assert!(reader.history(&every(3), ALL).unwrap().gaps.is_empty());
    assert_eq!(reader.history(&every(5), ALL).unwrap().gaps.len(), 1);
}

#[test]
fn rows_older_than_keep_days_go_and_the_rest_stay() {
    let (_dir, mut store, reader) = open();
    let day = 86_400_000;
    let now = 100 * day;
    let items: Vec<Item> = (0..1_200)
        .map(|i| Item::Outcome(ran("aaaa00000001", "alice", None, now - i * day / 30, 0, 0)))
        .chain([Item::Gap(Gap {
            from_ms: now - 40 * day,
            to_ms: now - 40 * day,
            lost: 1,
            why: "x".into(),
        })])
        .collect();
    store.insert(&items).unwrap();
    let bounds = Bounds {
        keep_days: 30,
        keep_runs: 100_000,
        max_size: u64::MAX,
    };
    prune(&mut store, &bounds, now);
    let rows = listed(&reader, &every(10_000), ALL);
    // 30 days of one row every 48 minutes: 900 rows, the one at exactly 30 days included.
    assert_eq!(rows.len(), 901);
    assert!(rows.iter().all(|r| r.1 >= now - 30 * day));
    assert!(reader.history(&every(10_000), ALL).unwrap().gaps.is_empty());
}

#[test]
fn an_entry_keeps_its_newest_keep_runs_rows() {
    let (_dir, mut store, reader) = open();
    let items: Vec<Item> = (0..1_300)
        .flat_map(|i| {
            [
                Item::Outcome(ran("aaaa00000001", "alice", None, i, 0, 0)),
                Item::Outcome(ran("bbbb00000001", "alice", None, i, 0, 0)),
            ]
        })
        .take(2_100)
        .collect();
    store.insert(&items).unwrap();
    let bounds = Bounds {
        keep_days: 30,
        keep_runs: 1_000,
        max_size: u64::MAX,
    };
    prune(&mut store, &bounds, 0);
    let ask = |entry| HistoryAsk {
        entry: Some(entry),
        ..every(10_000)
    };
    let a = listed(&reader, &ask("aaaa00000001"), ALL);
    assert_eq!(a.len(), 1_000);
    assert_eq!((a[0].1, a[999].1), (1_049, 50));
    assert_eq!(listed(&reader, &ask("bbbb00000001"), ALL).len(), 1_000);
}

#[test]
fn one_users_flood_of_output_never_pushes_out_another_users_history() {
    let (_dir, mut store, reader) = open();
    let flood: Vec<Item> = (0..10_000)
        .map(|i| {
            Item::Outcome(ran(
                "aaaa00000001",
                "mallory",
                Some(1002),
                1_000 + i,
                0,
                4_096,
            ))
        })
        .collect();
    // Bob's rows are older than all of mallory's: oldest-first alone would take them first.
    let bob: Vec<Item> = (0..10)
        .map(|i| Item::Outcome(ran("bbbb00000001", "bob", Some(1001), i, 0, 100)))
        .collect();
    store.insert(&bob).unwrap();
    store.insert(&flood).unwrap();
    let max_size = 4 << 20;
    let bounds = Bounds {
        keep_days: 30,
        keep_runs: 1_000_000,
        max_size,
    };
    prune(&mut store, &bounds, 0);
    let bob_ask = HistoryAsk {
        user: Some("bob"),
        ..every(10_000)
    };
    assert_eq!(listed(&reader, &bob_ask, ALL).len(), 10);
    let mallory = listed(&reader, &every(10_000), ALL).len() - 10;
    // Mallory keeps up to her share (half of 4 MiB), her newest rows.
    let row = 4_096 + "echo hello".len() as u64 + ROW_OVERHEAD as u64;
    assert_eq!(mallory as u64, (max_size / 2) / row);
    let (total,): (i64,) = store
        .conn
        .query_row("SELECT sum(size) FROM runs", [], |r| Ok((r.get(0)?,)))
        .unwrap();
    assert!(total as u64 <= max_size);
    let newest = listed(&reader, &every(1), ALL);
    assert_eq!(newest[0].1, 1_000 + 9_999);
}

#[test]
fn a_file_that_is_not_a_database_is_refused_as_broken() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    assert!(matches!(Store::open(&path), Err(StoreError::Broken(_))));
    let aside = set_aside(&path, 1_700_000_000).unwrap();
    assert_eq!(aside, dir.path().join("history.db.broken-1700000000"));
    assert!(aside.exists() && !path.exists());
    Store::open(&path).unwrap();
}

#[test]
fn a_store_of_the_first_version_gains_the_cluster_columns_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let old = ran("aaaa00000001", "alice", Some(1000), 1_000_000, 0, 4);
    Store::open(&path)
        .unwrap()
        .insert(&[Item::Outcome(old.clone())])
        .unwrap();
    // What the first version made: the same tables without the cluster's columns.
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE runs DROP COLUMN cluster_minute; ALTER TABLE runs DROP COLUMN cluster_entry;
         ALTER TABLE runs DROP COLUMN cluster; ALTER TABLE runs DROP COLUMN attempt;
         ALTER TABLE runs DROP COLUMN attempts; PRAGMA user_version=1;",
    )
    .unwrap();
    drop(conn);
    let mut store = Store::open(&path).unwrap();
    let clustered = Outcome {
        cluster: Some(crond::history::ClusterRun {
            cluster: "web".into(),
            entry: crond::cluster::entry_id::EntryKey(0xfeed),
            minute: Some(2_000),
        }),
        ..ran("aaaa00000002", "alice", Some(1000), 2_000_000, 0, 4)
    };
    store.insert(&[Item::Outcome(clustered.clone())]).unwrap();
    let reader = Reader::open(&path).unwrap();
    let listing = reader.history(&every(10), ALL).unwrap();
    let got: Vec<&Outcome> = listing.rows.iter().map(|s| &s.outcome).collect();
    let strip = |o: &Outcome| {
        let mut o = o.clone();
        if let Slot::Ran(r) = &mut o.result {
            r.head.clear();
            r.tail.clear();
        }
        o
    };
    assert_eq!(got, [&strip(&clustered), &strip(&old)]);
    let version: i64 = rusqlite::Connection::open(&path)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let latest = reader.latest_cluster_record("aaaa00000002", ALL).unwrap();
    assert_eq!(latest.map(|s| s.run), Some(2));
    assert_eq!(
        reader.latest_cluster_record("aaaa00000001", ALL).unwrap(),
        None
    );
}

#[test]
fn a_store_of_the_second_version_gains_the_attempt_columns_and_keeps_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.db");
    let old = ran("aaaa00000001", "alice", Some(1000), 1_000_000, 1, 4);
    Store::open(&path)
        .unwrap()
        .insert(&[Item::Outcome(old.clone())])
        .unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "ALTER TABLE runs DROP COLUMN attempt; ALTER TABLE runs DROP COLUMN attempts;
         PRAGMA user_version=2;",
    )
    .unwrap();
    drop(conn);
    let mut store = Store::open(&path).unwrap();
    let retried = Outcome {
        attempt: Some(crond::history::Attempt { number: 2, of: 3 }),
        ..ran("aaaa00000001", "alice", Some(1000), 1_010_000, 0, 4)
    };
    store.insert(&[Item::Outcome(retried.clone())]).unwrap();
    let reader = Reader::open(&path).unwrap();
    let listing = reader.history(&every(10), ALL).unwrap();
    let attempts: Vec<_> = listing.rows.iter().map(|s| s.outcome.attempt).collect();
    assert_eq!(attempts, [retried.attempt, None]);
}
