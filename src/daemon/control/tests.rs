//! The control socket's server on real sockets: answers, bounds, the private socket, and random
//! interleavings of clients.

use super::*;
use crate::cluster::entry_id::LocalId;
use crate::daemon::effects::Recorded;
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;

/// A server on a socket in a temporary directory, and a way to connect to it.
fn server() -> (ControlServer, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    // Its mode as meant, whatever umask another test's bind had set meanwhile.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let path = dir.path().join("crond.sock");
    let listener = crate::sys::listen::listen_unix_for_all(&path).unwrap();
    (ControlServer::new(listener, None, 0), path, dir)
}

fn empty(peer: &Peer, _: &Want<'_>) -> Snapshot {
    Snapshot {
        status: StatusView {
            version: "test",
            pid: 1,
            started_ms: 0,
            now_ms: 60_000,
            zone: crate::schedule::Zone::utc(),
            entries: 0,
            running: 0,
            own_only: !peer.is_root(),
        },
        entries: Vec::new(),
        omitted: 0,
        not_loaded: Vec::new(),
    }
}

/// The tokens of `s` ready within `wait_ms`, as the loop's poll would give them.
fn ready_now(s: &ControlServer, wait_ms: u32) -> Vec<Token> {
    let mut registry = crate::sys::poll::Registry::new();
    for (token, fd, interest) in s.fds() {
        registry.add(token, fd, interest);
    }
    registry.wait(Some(wait_ms)).unwrap().iter().collect()
}

/// Serves whatever is ready now, as the loop would after a poll.
fn turn(s: &mut ControlServer, now_ms: i64) -> Vec<RunOrder> {
    let ready = ready_now(s, 100);
    s.serve(&ready, now_ms, &empty, &mut Recorded::default())
}

/// An `@daily` entry of alice's crontab, as a snapshot shows it.
fn alices(id: u64, line: u32, command: &[u8]) -> EntryView {
    EntryView {
        id: LocalId(id),
        slot: id,
        tab: "crontabs/alice".into(),
        line,
        user: b"alice".to_vec(),
        schedule: b"@daily".to_vec(),
        cron_tz: None,
        zone: crate::schedule::Zone::utc(),
        next_s: None,
        runs: Vec::new(),
        detail: None,
        running: Vec::new(),
        policy: Default::default(),
        cluster: None,
        paused: false,
        command: command.to_vec(),
    }
}

fn answer_of(mut client: UnixStream) -> String {
    client.set_nonblocking(true).unwrap();
    let mut out = String::new();
    let _ = client.read_to_string(&mut out);
    out
}

#[test]
fn a_request_is_answered_in_the_wake_up_that_accepts_it_and_the_connection_closed() {
    let (mut s, path, _dir) = server();
    let mut client = UnixStream::connect(&path).unwrap();
    client.write_all(b"status\n").unwrap();
    turn(&mut s, 1_000);
    let answer = answer_of(client);
    assert!(answer.starts_with("OK\ncrond test, pid 1\n"), "{answer}");
    assert!(s.connections.is_empty());
}

#[test]
fn a_request_past_four_kibibytes_or_without_an_end_by_its_deadline_is_closed() {
    let (mut s, path, _dir) = server();
    let mut long = UnixStream::connect(&path).unwrap();
    long.write_all(&vec![b'x'; control::MAX_REQUEST + 10])
        .unwrap();
    let mut slow = UnixStream::connect(&path).unwrap();
    slow.write_all(b"sta").unwrap();
    turn(&mut s, 1_000);
    assert!(answer_of(long).starts_with("ERROR a request is one line of at most 4096"));
    assert_eq!(s.connections.len(), 1, "the slow one waits");
    turn(&mut s, 1_000 + REQUEST_DEADLINE_MS);
    assert!(s.connections.is_empty(), "closed at its deadline");
    let mut got = String::new();
    slow.read_to_string(&mut got).unwrap();
    assert_eq!(got, "", "closed without an answer");
}

#[test]
fn an_answer_its_client_never_reads_is_dropped_at_the_deadline_without_holding_the_loop() {
    let (mut s, path, _dir) = server();
    let mut client = UnixStream::connect(&path).unwrap();
    client.write_all(b"list --json\n").unwrap();
    // Two mebibytes of answer: more than the socket takes at once.
    let big = |peer: &Peer, want: &Want<'_>| {
        let mut snap = empty(peer, want);
        snap.entries = (0..8_000)
            .map(|i| EntryView {
                id: LocalId(i),
                slot: i,
                tab: "/etc/cron.d/big".into(),
                line: i as u32,
                user: b"root".to_vec(),
                schedule: b"* * * * *".to_vec(),
                cron_tz: None,
                zone: crate::schedule::Zone::utc(),
                next_s: None,
                runs: Vec::new(),
                detail: None,
                running: Vec::new(),
                policy: Default::default(),
                cluster: None,
                paused: false,
                command: vec![b'x'; 200],
            })
            .collect();
        snap
    };
    let serve = |s: &mut ControlServer, now_ms: i64| {
        let ready = ready_now(s, 0);
        s.serve(&ready, now_ms, &big, &mut Recorded::default());
    };
    serve(&mut s, 1_000);
    assert_eq!(s.connections.len(), 1);
    assert!(matches!(s.connections[0].state, State::Replying));
    assert!(s.connections[0].pump.unsent() > 0, "the socket is full");
    // Each wake-up writes what the socket takes (nothing) and goes on.
    serve(&mut s, 3_000);
    assert_eq!(s.connections.len(), 1);
    serve(&mut s, 1_000 + DEADLINE_MS);
    assert!(s.connections.is_empty(), "dropped at its deadline");
    drop(client);
}

#[test]
fn root_keeps_its_reserved_slots_and_one_user_gets_at_most_four() {
    let (mut s, path, _dir) = server();
    // The test runs as one uid: play users by rewriting the peers of held connections.
    let held: Vec<UnixStream> = (0..MAX_CONNECTIONS - RESERVED)
        .map(|_| UnixStream::connect(&path).unwrap())
        .collect();
    turn(&mut s, 1_000);
    assert_eq!(s.connections.len(), MAX_CONNECTIONS - RESERVED);
    for (i, c) in s.connections.iter_mut().enumerate() {
        c.peer.uid = 1000 + (i / MAX_PER_USER) as u32;
    }
    assert!(!s.user_may_connect(5000), "the users' slots are full");
    s.connections.truncate(MAX_CONNECTIONS - RESERVED - 1);
    assert!(s.user_may_connect(5000));
    assert!(!s.user_may_connect(1000), "1000 holds four");
    drop(held);
}

#[test]
fn users_requests_past_the_budget_wait_for_the_next_second() {
    let mut budget = PerSecond::new(USER_REQUESTS_PER_S);
    for _ in 0..USER_REQUESTS_PER_S {
        assert!(budget.take(10_500));
    }
    assert!(!budget.take(10_999));
    assert!(budget.take(11_000));
}

#[test]
fn a_run_is_handed_to_the_loop_and_its_answer_goes_back_to_the_asker() {
    let (mut s, path, _dir) = server();
    let mut client = UnixStream::connect(&path).unwrap();
    client.write_all(b"run 000000000007\n").unwrap();
    let entry = |peer: &Peer, want: &Want<'_>| {
        let mut snap = empty(peer, want);
        snap.entries.push(alices(7, 3, b"date"));
        snap
    };
    let ready = ready_now(&s, 100);
    let orders = s.serve(&ready, 1_000, &entry, &mut Recorded::default());
    assert_eq!(orders.len(), 1);
    assert_eq!(
        (orders[0].entry, orders[0].place.as_str()),
        (EntryId(7), "crontabs/alice:3")
    );
    assert!(
        s.fds().iter().all(|(t, _, _)| *t == Token::Listener),
        "not polled meanwhile"
    );
    // Forked: parked until its job child says the job started.
    let (read_end, write_end) = Recorded::default().report_pipe().unwrap();
    let started = Some(Launched::Started(crate::types::Pid(99)));
    s.ran(&orders[0], started, Some(read_end), 1_000);
    turn(&mut s, 1_100);
    assert_eq!(s.connections.len(), 1, "parked");
    let mut child = std::fs::File::from(write_end);
    child.write_all(b"started 4242 alice\n").unwrap();
    turn(&mut s, 1_200);
    assert_eq!(
        answer_of(client),
        "OK\nstarted crontabs/alice:3 as alice, pid 4242\n"
    );
    // Without a pipe (none could be made), the fork's answer.
    let mut client = UnixStream::connect(&path).unwrap();
    client.write_all(b"run 000000000007\n").unwrap();
    let ready = ready_now(&s, 100);
    let orders = s.serve(&ready, 1_500, &entry, &mut Recorded::default());
    s.ran(&orders[0], started, None, 1_500);
    turn(&mut s, 1_600);
    assert_eq!(
        answer_of(client),
        "OK\nstarted crontabs/alice:3: job pid 99\n"
    );
    // Its entry gone by the time the scheduler is asked: said so.
    let mut client = UnixStream::connect(&path).unwrap();
    client.write_all(b"run 000000000007\n").unwrap();
    let ready = ready_now(&s, 100);
    let orders = s.serve(&ready, 2_000, &entry, &mut Recorded::default());
    s.ran(&orders[0], None, None, 2_000);
    turn(&mut s, 2_100);
    assert!(answer_of(client).starts_with("ERROR the entry is gone"));
}

/// A run of entry 7 asked for and forked at `now_ms`, parked: the client, and the job
/// child's end of the pipe.
fn parked_run(
    s: &mut ControlServer,
    path: &std::path::Path,
    request: &[u8],
    now_ms: i64,
) -> (UnixStream, std::fs::File) {
    let mut client = UnixStream::connect(path).unwrap();
    client.write_all(request).unwrap();
    let entry = |peer: &Peer, want: &Want<'_>| {
        let mut snap = empty(peer, want);
        snap.entries.push(alices(7, 3, b"date"));
        snap
    };
    let ready = ready_now(s, 100);
    let mut orders = s.serve(&ready, now_ms, &entry, &mut Recorded::default());
    let Some(order) = orders.pop() else {
        return (client, tempfile::tempfile().unwrap());
    };
    let (read_end, write_end) = Recorded::default().report_pipe().unwrap();
    let started = Some(Launched::Started(crate::types::Pid(99)));
    s.ran(&order, started, Some(read_end), now_ms);
    (client, std::fs::File::from(write_end))
}

#[test]
fn a_parked_run_is_answered_by_its_child_or_the_pipes_end_or_its_deadline_and_once() {
    let (mut s, path, _dir) = server();
    // --wait: the start is not the answer; the end is, with the job's status.
    let (client, mut child) = parked_run(&mut s, &path, b"run --wait 000000000007\n", 1_000);
    child.write_all(b"started 4242 alice\n").unwrap();
    turn(&mut s, 1_100);
    assert_eq!(s.connections.len(), 1, "still parked");
    assert_eq!(s.timeout_ms(1_100), None, "no deadline while the job runs");
    child.write_all(b"exited 3 2100\nexited 4 10\n").unwrap();
    turn(&mut s, 9_000);
    assert_eq!(
        answer_of(client),
        "EXIT 3\ncrontabs/alice:3 exited with status 3 after 2.1s\n"
    );
    // The child ends without a word: said so.
    let (client, child) = parked_run(&mut s, &path, b"run 000000000007\n", 10_000);
    drop(child);
    turn(&mut s, 10_100);
    assert_eq!(
        answer_of(client),
        "ERROR crontabs/alice:3: its job child ended without starting the job (see crond's \
         log)\n"
    );
    // No word within the deadline.
    let (client, _child) = parked_run(&mut s, &path, b"run 000000000007\n", 20_000);
    turn(&mut s, 20_000 + REPORT_DEADLINE_MS);
    assert!(
        answer_of(client).contains("has not said within 20 s"),
        "answered at the deadline"
    );
    assert!(s.connections.is_empty());
}

#[test]
fn a_client_that_leaves_a_parked_run_is_let_go_and_the_daemon_stopping_answers_the_others() {
    let (mut s, path, _dir) = server();
    let (client, child) = parked_run(&mut s, &path, b"run --wait 000000000007\n", 1_000);
    drop(client);
    turn(&mut s, 1_100);
    assert!(s.connections.is_empty(), "let go");
    drop(child);
    let (client, mut child) = parked_run(&mut s, &path, b"run --wait 000000000007\n", 2_000);
    child.write_all(b"started 4242 alice\n").unwrap();
    turn(&mut s, 2_100);
    s.stopping(3_000);
    assert_eq!(
        answer_of(client),
        "ERROR crond is stopping while crontabs/alice:3 runs: the job goes on; its end is in \
         crond's log\n"
    );
}

#[test]
fn at_most_half_the_table_is_parked_and_a_run_past_it_is_answered_busy() {
    let (mut s, path, _dir) = server();
    let parked: Vec<_> = (0..MAX_PARKED as i64)
        .map(|i| parked_run(&mut s, &path, b"run --wait 000000000007\n", 1_000 + i))
        .collect();
    assert_eq!(s.connections.len(), MAX_PARKED);
    let (client, _) = parked_run(&mut s, &path, b"run --wait 000000000007\n", 2_000);
    assert_eq!(
        answer_of(client),
        "ERROR busy: 8 runs already wait for their jobs; try again\n"
    );
    // Anything else is still answered.
    let mut other = UnixStream::connect(&path).unwrap();
    other.write_all(b"status\n").unwrap();
    turn(&mut s, 2_100);
    assert!(answer_of(other).starts_with("OK\ncrond test"));
    drop(parked);
}

#[test]
fn a_snapshot_holds_what_the_asker_may_see_and_the_request_wants_in_the_order_given() {
    use crate::daemon::clock::{Clock, FakeClock};
    use crate::daemon::handoff::change_of;
    use crate::daemon::scheduler::Scheduler;
    let clock = FakeClock::at("2026-11-27T10:00:30Z");
    let mut fx = Recorded::default();
    let dir = tempfile::tempdir().unwrap();
    let mut sched = Scheduler::new(clock.now(), Zone::utc(), dir.path().to_path_buf());
    let now_ms = clock.now().as_millisecond();
    let text = "0 3 * * * a\n@hourly b\n*/5 * * * * c\n";
    let ids = sched.apply(change_of(text), now_ms, &mut fx);
    let Some(Launched::Started(pid)) = sched.run_now(ids[1], "root", None, clock.now(), &mut fx)
    else {
        panic!("{:?}", fx.lines)
    };
    let request = |line: &str| control::parse_request(line.as_bytes()).unwrap();
    let (root, alice, bob) = (peer(0, "root"), peer(1000, "alice"), peer(1001, "bob"));
    let status = StatusView {
        running: sched.running_len(),
        ..empty(&root, &request("status").want(&root)).status
    };
    let make = |peer: &Peer, want: &Want<'_>| {
        let entries = ids.iter().filter_map(|&id| sched.entry_state(id));
        let paused = PausedFn {
            here: &|_| false,
            cluster: &|_, _, _| false,
        };
        snapshot(peer, want, entries, status.clone(), paused)
    };
    let list = request("list");
    let snap = make(&alice, &list.want(&alice));
    let places: Vec<String> = snap.entries.iter().map(EntryView::place).collect();
    assert_eq!(
        places,
        ["crontabs/alice:1", "crontabs/alice:2", "crontabs/alice:3"]
    );
    let b = &snap.entries[1];
    assert_eq!(
        (&b.schedule[..], &b.running[..]),
        (&b"@hourly"[..], &[pid.0][..])
    );
    let three: jiff::Timestamp = "2026-11-28T03:00:00Z".parse().unwrap();
    assert_eq!(snap.entries[0].next_s, Some(three.as_second()));
    let counts = |snap: &Snapshot| (snap.entries.len(), snap.status.entries, snap.status.running);
    assert_eq!(counts(&snap), (3, 3, 1));
    assert!(snap.status.own_only);
    assert_eq!(counts(&make(&bob, &list.want(&bob))), (0, 0, 0));
    // A status makes no entry, a run the one it names; a list past the bound counts the rest.
    assert_eq!(
        counts(&make(&root, &request("status").want(&root))),
        (0, 3, 1)
    );
    let run = request("run crontabs/alice:3");
    let snap = make(&root, &run.want(&root));
    assert_eq!(snap.entries.len(), 1);
    assert_eq!(snap.entries[0].command, b"c");
    let mut two = list.want(&root);
    two.max_entries = 2;
    let snap = make(&root, &two);
    assert_eq!((snap.entries.len(), snap.omitted), (2, 1));
}

fn peer(uid: u32, name: &str) -> Peer {
    Peer {
        uid,
        pid: 1,
        name: Some(name.as_bytes().to_vec()),
    }
}

/// A server on both sockets in a directory users may pass through (0711), as the daemon's.
fn two_sockets() -> (ControlServer, PathBuf, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
    let path = dir.path().join("crond.sock");
    let shared = crate::sys::listen::listen_unix_for_all(&path).unwrap();
    let private = crate::sys::listen::listen_unix(&private_path(&path), None).unwrap();
    let server = ControlServer::new(shared, Some(private), 0);
    (server, path.clone(), private_path(&path), dir)
}

/// Serves what is ready, with `snapshot`; each run asked for is started as pid 99, whose job
/// child's end of the report pipe goes into `children`.
fn turn_with(
    s: &mut ControlServer,
    now_ms: i64,
    snapshot: SnapshotFn<'_>,
    children: &mut Vec<std::fs::File>,
) -> Recorded {
    let ready = ready_now(s, 0);
    let mut fx = Recorded::default();
    for order in s.serve(&ready, now_ms, snapshot, &mut fx) {
        let (read_end, write_end) = fx.report_pipe().unwrap();
        let started = Some(Launched::Started(crate::types::Pid(99)));
        s.ran(&order, started, Some(read_end), now_ms);
        children.push(std::fs::File::from(write_end));
    }
    fx
}

/// These tests play other users, which needs root.
fn require_root() {
    assert_eq!(
        crate::sys::user::effective_uid().0,
        0,
        "this test needs root; run the suite as root, or leave such tests out visibly with \
         --skip"
    );
}

#[test]
fn a_users_request_and_roots_answered_in_the_same_turn_are_both_answered() {
    require_root();
    let (mut s, path, _, _dir) = two_sockets();
    // The user's connection comes first, so it sits before root's in the table; root's is
    // answered first.
    let mut user = crate::sys::listen::connect_as(&path, 1000).unwrap();
    user.write_all(b"status\n").unwrap();
    let mut root = UnixStream::connect(&path).unwrap();
    root.write_all(b"status\n").unwrap();
    let mut other = crate::sys::listen::connect_as(&path, 1001).unwrap();
    other.write_all(b"status\n").unwrap();
    turn_with(&mut s, 1_000, &empty, &mut Vec::new());
    assert!(s.connections.is_empty(), "all three answered and closed");
    for (who, client) in [("user", user), ("root", root), ("other", other)] {
        let answer = answer_of(client);
        assert!(answer.starts_with("OK\ncrond test"), "{who}: {answer}");
    }
}

#[test]
fn the_private_socket_takes_root_and_not_a_user_and_is_served_first() {
    require_root();
    let (mut s, path, private, _dir) = two_sockets();
    let refused = crate::sys::listen::connect_as(&private, 1000).unwrap_err();
    assert_eq!(refused.kind(), std::io::ErrorKind::PermissionDenied);
    // Users hold every slot they may; root's private connection still gets one.
    let held: Vec<UnixStream> = (0..(MAX_CONNECTIONS - RESERVED) as u32)
        .map(|i| crate::sys::listen::connect_as(&path, 1000 + i / 4).unwrap())
        .collect();
    turn_with(&mut s, 1_000, &empty, &mut Vec::new());
    assert_eq!(s.connections.len(), MAX_CONNECTIONS - RESERVED);
    let mut root = UnixStream::connect(&private).unwrap();
    root.write_all(b"status\n").unwrap();
    turn_with(&mut s, 1_100, &empty, &mut Vec::new());
    assert!(answer_of(root).starts_with("OK\n"));
    drop(held);
}

#[test]
fn a_users_connections_past_the_bounds_are_turned_away_at_once_counted_and_logged_each_minute() {
    require_root();
    let (mut s, path, _, _dir) = two_sockets();
    let held: Vec<UnixStream> = (0..MAX_PER_USER)
        .map(|_| crate::sys::listen::connect_as(&path, 1000).unwrap())
        .collect();
    turn_with(&mut s, 1_000, &empty, &mut Vec::new());
    let mut fifth = crate::sys::listen::connect_as(&path, 1000).unwrap();
    fifth.write_all(b"status\n").unwrap();
    let fx = turn_with(&mut s, 1_100, &empty, &mut Vec::new());
    assert!(answer_of(fifth).starts_with("ERROR busy"));
    assert!(fx.logged("turned away").is_empty(), "not before the minute");
    // The listener is polled again at once: no pause for others.
    assert!(s.fds().iter().any(|(t, _, _)| *t == Token::Listener));
    let another = crate::sys::listen::connect_as(&path, 1000).unwrap();
    turn_with(&mut s, 1_200, &empty, &mut Vec::new());
    assert!(answer_of(another).starts_with("ERROR busy"));
    drop(held);
    let fx = turn_with(&mut s, 1_100 + TURNED_AWAY_LOG_MS, &empty, &mut Vec::new());
    assert_eq!(
        fx.logged("turned away"),
        [
            "(CRON) ERROR (control socket: 2 connections turned away (busy) in the last minute (uid 1000: 2))"
        ]
    );
    let fx = turn_with(
        &mut s,
        2_100 + 2 * TURNED_AWAY_LOG_MS,
        &empty,
        &mut Vec::new(),
    );
    assert!(fx.logged("turned away").is_empty(), "nothing new: no line");
}

#[test]
fn the_shared_socket_takes_at_most_its_accepts_a_second_and_then_rests_until_the_next() {
    require_root();
    let (mut s, path, _, _dir) = two_sockets();
    // One user's flood: four held, the rest turned away as they are accepted.
    let clients: Vec<UnixStream> = (0..SHARED_ACCEPTS_PER_S + 40)
        .map(|_| crate::sys::listen::connect_as(&path, 1000).unwrap())
        .collect();
    let before = s.accepts.used;
    for i in 0..40 {
        turn_with(&mut s, 1_000 + i, &empty, &mut Vec::new());
    }
    assert_eq!(s.accepts.used - before, SHARED_ACCEPTS_PER_S);
    assert!(
        s.fds().iter().all(|(t, _, _)| *t != Token::Listener),
        "not polled for the rest of the second"
    );
    assert!(s.fds().iter().any(|(t, _, _)| *t == Token::Private));
    assert_eq!(s.timeout_ms(1_040), Some(960));
    turn_with(&mut s, 2_000, &empty, &mut Vec::new());
    assert!(
        s.fds().iter().any(|(t, _, _)| *t == Token::Listener),
        "polled again in the next second"
    );
    turn_with(&mut s, 2_001, &empty, &mut Vec::new());
    assert_eq!(s.accepts.second, 2);
    assert!(s.accepts.used > 0, "taken again in the next second");
    drop(clients);
}

#[test]
fn a_name_is_the_uids_only_when_it_names_the_uid_back_and_is_looked_up_once_a_while() {
    // One name in two sources: getpwuid(5001) says admin, getpwnam(admin) says 1001.
    let by_uid = |uid| match uid {
        1001 | 5001 => Some(b"admin".to_vec()),
        _ => None,
    };
    let by_name = |name: &[u8]| (name == b"admin").then_some(1001);
    assert_eq!(named_back(1001, by_uid, by_name), Some(b"admin".to_vec()));
    assert_eq!(named_back(5001, by_uid, by_name), None);
    assert_eq!(named_back(7, by_uid, by_name), None);
    assert_eq!(named_back(0, by_uid, by_name), Some(b"root".to_vec()));

    static LOOKS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    fn counted(_: u32) -> Option<Vec<u8>> {
        LOOKS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Some(b"alice".to_vec())
    }
    let mut names = Names::new(counted);
    for ms in 0..NAME_TTL_MS {
        assert_eq!(names.name_of(1000, 10_000 + ms), Some(b"alice".to_vec()));
    }
    assert_eq!(LOOKS.load(std::sync::atomic::Ordering::Relaxed), 1);
    names.name_of(1000, 10_000 + NAME_TTL_MS);
    assert_eq!(LOOKS.load(std::sync::atomic::Ordering::Relaxed), 2);
    for uid in 0..NAMES_KEPT as u32 * 3 {
        names.name_of(uid, 20_000);
        assert!(names.kept.len() <= NAMES_KEPT);
    }
}

mod interleavings {
    //! Random interleavings of clients against the real server on real sockets: connects
    //! by several uids (root among them, on either socket), requests sent whole or in
    //! pieces, half-closes, clients that go away, slow readers, answers too large for the
    //! socket, `busy` answers, and turns of the loop at random times. The server never
    //! panics; each client gets at most one answer, which is the whole answer to its
    //! request or `busy` (cut only for a reader too slow for its deadline); a request sent
    //! early enough is answered; and in the end every connection is closed.

    use super::*;
    use proptest::prelude::*;

    /// Who connects: root on the private socket, root on the shared one, or one of three
    /// users.
    const WHO: [(u32, bool); 5] = [
        (0, true),
        (0, false),
        (1000, false),
        (1001, false),
        (1002, false),
    ];

    #[derive(Debug, Clone)]
    enum Act {
        Connect(usize),
        /// A connect and a request at once, as `cronctl` does.
        Ask(usize, Piece),
        /// Bytes to the `n`th client (modulo those there).
        Send(usize, Piece),
        HalfClose(usize),
        Drop(usize),
        Read(usize),
        /// A turn of the loop this many ms after the last.
        Turn(i64),
        /// The `n`th job child (modulo those started) says something on its pipe, or closes it.
        Say(usize, Word),
    }

    /// What a job child of a parked run does.
    #[derive(Debug, Clone, Copy)]
    enum Word {
        Started,
        Failed,
        Exited,
        Garbage,
        Close,
    }

    impl Word {
        fn said(self) -> Option<Said> {
            match self {
                Word::Started => Some(Said::Started {
                    pid: 4242,
                    user: "alice".into(),
                }),
                Word::Failed => Some(Said::NotStarted {
                    why: crate::history::Reason::NotStarted,
                    reason: "user alice unknown".into(),
                }),
                Word::Exited => Some(Said::Ended {
                    end: crate::job::report::End::Exited(3),
                    duration_ms: 2_100,
                }),
                Word::Garbage | Word::Close => None,
            }
        }
    }

    #[derive(Debug, Clone, Copy)]
    enum Piece {
        Status,
        List,
        /// A list too large for the socket's buffer.
        Big,
        Run,
        RunWait,
        RunMissing,
        Half,
        Rest,
        Junk,
        TooLong,
    }

    impl Piece {
        fn bytes(self) -> Vec<u8> {
            match self {
                Piece::Status => b"status\n".to_vec(),
                Piece::List => b"list\n".to_vec(),
                Piece::Big => b"list --json big\n".to_vec(),
                Piece::Run => b"run 000000000007\n".to_vec(),
                Piece::RunWait => b"run --wait 000000000007\n".to_vec(),
                Piece::RunMissing => b"run 000000000008\n".to_vec(),
                Piece::Half => b"sta".to_vec(),
                Piece::Rest => b"tus\n".to_vec(),
                Piece::Junk => b"\xff\x00 nonsense\n".to_vec(),
                Piece::TooLong => vec![b'x'; control::MAX_REQUEST + 1],
            }
        }
    }

    fn act() -> impl Strategy<Value = Act> {
        let word = prop_oneof![
            Just(Word::Started),
            Just(Word::Failed),
            Just(Word::Exited),
            Just(Word::Garbage),
            Just(Word::Close),
        ];
        let piece = prop_oneof![
            Just(Piece::Status),
            Just(Piece::List),
            Just(Piece::Big),
            Just(Piece::Run),
            Just(Piece::RunWait),
            Just(Piece::RunMissing),
            Just(Piece::Half),
            Just(Piece::Rest),
            Just(Piece::Junk),
            Just(Piece::TooLong),
        ];
        prop_oneof![
            2 => (0..WHO.len()).prop_map(Act::Connect),
            4 => (0..WHO.len(), piece.clone()).prop_map(|(w, p)| Act::Ask(w, p)),
            4 => (0..64usize, piece).prop_map(|(n, p)| Act::Send(n, p)),
            1 => (0..64usize).prop_map(Act::HalfClose),
            1 => (0..64usize).prop_map(Act::Drop),
            2 => (0..64usize).prop_map(Act::Read),
            4 => (0..250i64).prop_map(Act::Turn),
            3 => (0..64usize, word).prop_map(|(n, w)| Act::Say(n, w)),
        ]
    }

    /// What the harness's entries are: entry 7 of alice's, and for a `big` list enough of
    /// them to fill the socket's buffer several times.
    fn snapshot_of(peer: &Peer, want: &Want<'_>) -> Snapshot {
        let mut snap = empty(peer, want);
        let view = |id: u64| alices(id, id as u32, &[b'c'; 150]);
        let n = match want.pattern {
            Some("big") => 4_000,
            _ if want.wants(LocalId(7), "crontabs/alice", 7, b"alice") => 1,
            _ => 0,
        };
        snap.entries = (7..7 + n).map(view).take(want.max_entries).collect();
        snap
    }

    #[derive(Debug)]
    struct Client {
        stream: Option<UnixStream>,
        peer: Peer,
        sent: Vec<u8>,
        /// When the request became whole (ms of the harness's clock).
        whole_at: Option<i64>,
        connected_ms: i64,
        received: Vec<u8>,
        ended_ms: Option<i64>,
        /// Left before the end (dropped): nothing is required of its answer.
        left: bool,
    }

    impl Client {
        fn read(&mut self, now_ms: i64) {
            let Some(stream) = &mut self.stream else {
                return;
            };
            let mut buf = [0u8; 65536];
            loop {
                match stream.read(&mut buf) {
                    Ok(0) => {
                        self.ended_ms.get_or_insert(now_ms);
                        self.stream = None;
                        return;
                    }
                    Ok(n) => self.received.extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                    Err(_) => {
                        self.ended_ms.get_or_insert(now_ms);
                        self.stream = None;
                        return;
                    }
                }
            }
        }

        /// The request as the server reads it, and whether it is whole yet.
        fn request(&self) -> Option<&[u8]> {
            match self.sent.iter().position(|&b| b == b'\n') {
                Some(end) => Some(&self.sent[..end]),
                None if self.sent.len() > control::MAX_REQUEST => Some(&self.sent),
                None => None,
            }
        }

        /// The answers the server may give: to the request as it was sent (a run's: any its
        /// job child can bring about, the one the child's first settling word brings).
        fn expected(&self, half_closed: bool) -> Option<Vec<Vec<u8>>> {
            let line = match self.request() {
                Some(line) => line,
                None if half_closed && !self.sent.is_empty() => &self.sent,
                None => return None,
            };
            let parsed = if line.len() > control::MAX_REQUEST {
                Err(format!(
                    "a request is one line of at most {} bytes",
                    control::MAX_REQUEST
                ))
            } else {
                control::parse_request(line)
            };
            let request = match parsed {
                Ok(request) => request,
                Err(e) => return Some(vec![control::error_answer(&e)]),
            };
            let mut peer = self.peer.clone();
            peer.name = passwd_name(peer.uid);
            let snap = snapshot_of(&peer, &request.want(&peer));
            Some(match &request {
                Request::Run { target, wait } => match control::find(&snap, target) {
                    Ok(entry) => run_answers(&entry.place(), *wait),
                    Err(answer) => vec![answer],
                },
                _ => vec![control::render(&request, &snap, &peer)],
            })
        }
    }

    /// Every answer a parked run of `place` may get.
    fn run_answers(place: &str, wait: bool) -> Vec<Vec<u8>> {
        let words = [Word::Started, Word::Failed, Word::Exited];
        let mut answers: Vec<Vec<u8>> = words
            .iter()
            .filter_map(|w| report::said_answer(place, &w.said()?, wait))
            .collect();
        answers.extend([
            report::silent_answer(place, false),
            report::silent_answer(place, true),
            report::no_word_answer(place, REPORT_DEADLINE_MS / 1000),
            control::error_answer(&format!(
                "busy: {MAX_PARKED} runs already wait for their jobs; try again"
            )),
        ]);
        answers
    }

    fn play(acts: &[Act]) -> Result<(), TestCaseError> {
        // Other tests of this process install signal handlers and start children: a
        // signal taken on this thread would end a poll early (EINTR, nothing ready), a turn
        // of the loop would see nothing, and the harness's clock would move past deadlines
        // the real loop would not have slept through. Blocked here, they go to another
        // thread.
        use nix::sys::signal::{SigSet, SigmaskHow, pthread_sigmask};
        pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&SigSet::all()), None).unwrap();
        let (mut s, path, private, _dir) = two_sockets();
        let mut clients: Vec<Client> = Vec::new();
        let mut half_closed: Vec<bool> = Vec::new();
        let mut children: Vec<Option<std::fs::File>> = Vec::new();
        let mut now_ms = 1_000;
        let pick = |n: usize, len: usize| (len > 0).then(|| n % len);
        let asks = acts.iter().flat_map(|act| match *act {
            Act::Ask(who, piece) => vec![Act::Connect(who), Act::Send(usize::MAX, piece)],
            ref other => vec![other.clone()],
        });
        for act in asks {
            match act {
                Act::Ask(..) => unreachable!("made two acts above"),
                Act::Connect(who) => {
                    let (uid, on_private) = WHO[who];
                    let at = if on_private { &private } else { &path };
                    let stream = if uid == 0 {
                        UnixStream::connect(at)
                    } else {
                        crate::sys::listen::connect_as(at, uid)
                    };
                    // A full backlog refuses: nothing to check of that client.
                    let Ok(stream) = stream else { continue };
                    stream.set_nonblocking(true).unwrap();
                    clients.push(Client {
                        stream: Some(stream),
                        peer: Peer {
                            uid,
                            pid: std::process::id() as i32,
                            name: None,
                        },
                        sent: Vec::new(),
                        whole_at: None,
                        connected_ms: now_ms,
                        received: Vec::new(),
                        ended_ms: None,
                        left: false,
                    });
                    half_closed.push(false);
                }
                Act::Send(n, piece) => {
                    let n = if n == usize::MAX {
                        clients.len().wrapping_sub(1)
                    } else {
                        n
                    };
                    let Some(i) = pick(n, clients.len()) else {
                        continue;
                    };
                    let c = &mut clients[i];
                    if half_closed[i] || c.whole_at.is_some() {
                        continue;
                    }
                    let Some(stream) = &mut c.stream else {
                        continue;
                    };
                    if stream.write_all(&piece.bytes()).is_ok() {
                        c.sent.extend_from_slice(&piece.bytes());
                        if c.request().is_some() {
                            c.whole_at = Some(now_ms);
                        }
                    }
                }
                Act::HalfClose(n) => {
                    let Some(i) = pick(n, clients.len()) else {
                        continue;
                    };
                    if let Some(stream) = &clients[i].stream {
                        let _ = stream.shutdown(std::net::Shutdown::Write);
                        half_closed[i] = true;
                        if !clients[i].sent.is_empty() {
                            clients[i].whole_at.get_or_insert(now_ms);
                        }
                    }
                }
                Act::Drop(n) => {
                    let Some(i) = pick(n, clients.len()) else {
                        continue;
                    };
                    clients[i].stream = None;
                    clients[i].left = true;
                }
                Act::Read(n) => {
                    let Some(i) = pick(n, clients.len()) else {
                        continue;
                    };
                    clients[i].read(now_ms);
                }
                Act::Turn(ms) => {
                    now_ms += ms;
                    let mut started = Vec::new();
                    turn_with(&mut s, now_ms, &snapshot_of, &mut started);
                    children.extend(started.into_iter().map(Some));
                }
                Act::Say(n, word) => {
                    let Some(i) = pick(n, children.len()) else {
                        continue;
                    };
                    let Some(child) = &mut children[i] else {
                        continue;
                    };
                    let line = match word {
                        Word::Close => {
                            children[i] = None;
                            continue;
                        }
                        Word::Garbage => "nonsense\n".to_string(),
                        w => w.said().expect("a word").line(),
                    };
                    // A pipe whose reader is gone: the line is lost, as the child's would be.
                    let _ = child.write_all(line.as_bytes());
                }
            }
        }
        // The job children end: their pipes close.
        children.clear();
        // The end: every client reads at every turn until the server has closed all.
        for _ in 0..200 {
            now_ms += 50;
            turn_with(&mut s, now_ms, &snapshot_of, &mut Vec::new());
            for c in &mut clients {
                c.read(now_ms);
            }
        }
        prop_assert!(s.connections.is_empty(), "every connection ends");
        let busy =
            control::error_answer("busy: too many connections to the control socket; try again");
        for (c, &half) in clients.iter().zip(&half_closed) {
            if c.left {
                continue;
            }
            // Every connection ended on the server's side (above). The client may not see the
            // end of file: a child another test of this process forked meanwhile holds a copy
            // of the server's descriptor until it execs or exits.
            let ended_ms = c.ended_ms.unwrap_or(now_ms);
            if c.received.is_empty() {
                // Unanswered: only a request not whole, or whole too late for its
                // deadline (the read's by 2 s, the answer's by 5 s after the accept,
                // with users' requests waiting at most three seconds for the budget).
                if let Some(at) = c.whole_at {
                    prop_assert!(
                        at - c.connected_ms > 1_000,
                        "a request whole at {at} ms, connected at {} ms, got no answer",
                        c.connected_ms
                    );
                }
                continue;
            }
            if c.received == busy {
                prop_assert!(c.peer.uid != 0, "root is never busy");
                continue;
            }
            let expected = c.expected(half);
            prop_assert!(expected.is_some(), "an answer to no request: {c:?}");
            let expected = expected.unwrap();
            let whole = expected.contains(&c.received);
            // Only a reader too slow for the deadline gets part of its answer.
            let cut = expected.iter().any(|e| e.starts_with(&c.received))
                && ended_ms - c.connected_ms >= DEADLINE_MS;
            prop_assert!(
                whole || cut,
                "not the one answer to its request: got {} bytes, {:?}…",
                c.received.len(),
                String::from_utf8_lossy(&c.received[..c.received.len().min(80)])
            );
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn any_interleaving_of_clients_gets_each_request_at_most_one_whole_answer(
            acts in proptest::collection::vec(act(), 1..60)
        ) {
            require_root();
            play(&acts)?;
        }
    }
}

/// One turn of the loop for pauses: what is ready served from `sched`'s entries, each pause
/// or resume asked for handed to `sched`, and its answer sent.
fn turn_pausing(
    s: &mut ControlServer,
    sched: &mut crate::daemon::scheduler::Scheduler,
    entries: &[EntryId],
    fx: &mut Recorded,
    now_ms: i64,
) {
    let ready = ready_now(s, 100);
    {
        let status = StatusView {
            now_ms: 1_000,
            ..empty(
                &peer(0, "root"),
                &control::parse_request(b"status")
                    .unwrap()
                    .want(&peer(0, "root")),
            )
            .status
        };
        let sched = &*sched;
        let make = |peer: &Peer, want: &Want<'_>| {
            let states = entries.iter().filter_map(|&id| sched.entry_state(id));
            let paused = PausedFn {
                here: &|id| sched.is_paused(id),
                cluster: &|_, _, _| false,
            };
            snapshot(peer, want, states, status.clone(), paused)
        };
        s.serve(&ready, now_ms, &make, fx);
    }
    for order in s.take_pauses() {
        let asked_by = order.peer.describe();
        let done = match &order.what {
            Pausing::Loaded { entry, .. } => sched.pause(*entry, order.pause, &asked_by, fx),
            Pausing::Gone(id) => Some(sched.resume_gone(*id, &asked_by, fx)),
        }
        .map(|done| done.map_err(|refused| refused.to_string()));
        s.paused(&order, done);
    }
    turn(s, now_ms + 100);
}

/// `line` asked by uid `uid` (root: `None`), answered in one turn of the loop.
fn ask_pausing(
    (s, path): (&mut ControlServer, &std::path::Path),
    sched: &mut crate::daemon::scheduler::Scheduler,
    entries: &[EntryId],
    (uid, line): (Option<u32>, &str),
    fx: &mut Recorded,
    now_ms: i64,
) -> String {
    let mut client = match uid {
        Some(uid) => crate::sys::listen::connect_as(path, uid).unwrap(),
        None => UnixStream::connect(path).unwrap(),
    };
    client.write_all(format!("{line}\n").as_bytes()).unwrap();
    turn_pausing(s, sched, entries, fx, now_ms);
    answer_of(client)
}

#[test]
fn a_user_pauses_and_resumes_their_own_entry_not_anothers_and_root_any() {
    require_root();
    use crate::daemon::clock::{Clock, FakeClock};
    use crate::daemon::handoff::change_of;
    use crate::daemon::scheduler::Scheduler;
    let clock = FakeClock::at("2026-11-27T10:00:30Z");
    let mut fx = Recorded::default();
    let state = tempfile::tempdir().unwrap();
    let mut sched = Scheduler::new(clock.now(), Zone::utc(), state.path().to_path_buf());
    let now_ms = clock.now().as_millisecond();
    let ids = sched.apply(
        change_of("0 3 * * * backup\n@hourly sync\n"),
        now_ms,
        &mut fx,
    );
    sched.name_entries(ids.iter().copied());
    let (mut s, path, _, _dir) = two_sockets();
    // A second apart: users' requests are answered within a budget a second.
    let mut turn_ms = 0;
    let mut ask = |uid: Option<u32>, line: &str, sched: &mut Scheduler| {
        turn_ms += 1_000;
        ask_pausing((&mut s, &path), sched, &ids, (uid, line), &mut fx, turn_ms)
    };
    // Alice's entries (uid 1000): another user can't pause them, nor learn they exist.
    let (alice, bob) = (Some(1000), Some(1001));
    assert_eq!(
        ask(bob, "pause crontabs/alice:1", &mut sched),
        "ERROR no entry crontabs/alice:1 that you may see (see cronctl list)\n"
    );
    let listed = ask(None, "list --json", &mut sched);
    assert!(!listed.contains("\"paused\":true"), "{listed}");
    // Alice can; what is paused is said, with the entry.
    let answer = ask(alice, "pause crontabs/alice:1", &mut sched);
    let id = answer
        .lines()
        .nth(1)
        .unwrap()
        .split(':')
        .next()
        .unwrap()
        .to_string();
    assert_eq!(
        answer,
        format!(
            "OK\n{id}: paused: its scheduled runs do not start until cronctl resume {id}\n  \
             crontabs/alice:1  alice  backup\n"
        )
    );
    assert_eq!(
        ask(alice, &format!("pause {id}"), &mut sched),
        format!(
            "OK\n{id}: was paused already (cronctl resume {id} resumes it)\n  \
             crontabs/alice:1  alice  backup\n"
        )
    );
    // Shown.
    let listed = ask(alice, "list --json", &mut sched);
    assert_eq!(listed.matches("\"paused\":true").count(), 1, "{listed}");
    let table = ask(alice, "list", &mut sched);
    let row = table.lines().find(|l| l.contains("alice:1")).unwrap();
    assert!(row.contains("  paused  "), "{table}");
    let shown = ask(alice, "show crontabs/alice:1", &mut sched);
    let said = format!("  state     not running: paused on this host (cronctl resume {id})\n");
    assert!(shown.contains(&said), "{shown}");
    // Bob can't resume it; root can, and then it is said not paused.
    assert!(ask(bob, &format!("resume {id}"), &mut sched).starts_with("ERROR no entry id "));
    assert_eq!(
        ask(None, &format!("resume {id}"), &mut sched),
        format!(
            "OK\n{id}: resumed: its scheduled runs start again\n  crontabs/alice:1  alice  backup\n"
        )
    );
    assert_eq!(
        ask(alice, "resume crontabs/alice:1", &mut sched),
        format!("OK\n{id}: was not paused\n  crontabs/alice:1  alice  backup\n")
    );
    // Root pauses any entry; an unknown one is an error.
    let answer = ask(None, "pause crontabs/alice:2", &mut sched);
    assert!(answer.starts_with("OK\n"), "{answer}");
    let second = answer[3..15].to_string();
    assert_eq!(
        ask(None, "pause crontabs/alice:9", &mut sched),
        "ERROR no entry crontabs/alice:9 that you may see (see cronctl list)\n"
    );
    assert!(ask(None, "pause nonsense", &mut sched).starts_with("ERROR \"nonsense\" is neither"));
    // Each change kept in the state file (the effects': the scheduler's own tests and the
    // daemon's read real ones).
    let kept = fx.paused[state.path()].as_ref().unwrap();
    let kept: Vec<String> = kept.iter().map(LocalId::to_string).collect();
    assert_eq!(kept, std::slice::from_ref(&second));
    // Its line removed while paused: its id stays; root's resume of the whole id lets it go, a
    // user's is no such entry.
    let mut gone = change_of("");
    gone.remove = vec![ids[1]];
    sched.apply(gone, now_ms, &mut fx);
    let mut ask = |uid: Option<u32>, line: &str, sched: &mut Scheduler| {
        turn_ms += 1_000;
        ask_pausing((&mut s, &path), sched, &ids, (uid, line), &mut fx, turn_ms)
    };
    let resume = format!("resume {second}");
    assert!(ask(alice, &resume, &mut sched).starts_with("ERROR no entry id "));
    assert_eq!(
        ask(None, &resume, &mut sched),
        format!("OK\n{second}: resumed (no entry of this host has this id now)\n")
    );
    assert!(ask(None, &resume, &mut sched).starts_with("ERROR no entry id "));
    assert!(ask(None, &format!("pause {second}"), &mut sched).starts_with("ERROR no entry id "));
    assert_eq!(fx.paused[state.path()], Ok(Default::default()));
    let logged = fx.logged(" PAUSE (");
    assert_eq!(logged.len(), 2, "{:?}", fx.lines);
    assert!(logged[0].contains("asked by "), "{logged:?}");
    assert!(logged[0].contains(" (uid 1000, pid "), "{logged:?}");
}
