//! The real `cronctl history-writer`, its standard input one end of a `SOCK_SEQPACKET` pair as
//! the daemon gives it: outcomes from several threads, a SIGKILL mid-way, queries answered on
//! passed connections, a broken store, a full disk, and random messages.

mod faults;
mod random;

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crond::history::{
    Asked, End, Fields, LogMessage, MAX_MESSAGE, Mail, Outcome, Query, Ran, Result as Slot, Trigger,
};
use crond::sys::seqpacket;

/// A writer started on a store, and the daemon's end of its socket.
#[derive(Debug)]
pub struct Writer {
    pub child: Child,
    pub socket: Arc<OwnedFd>,
}

impl Writer {
    pub fn start(store: &Path, extra: &[&str]) -> Writer {
        let (ours, theirs) = seqpacket::pair(1 << 20).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_cronctl"))
            .arg("history-writer")
            .arg("--store")
            .arg(store)
            .args(["--host", "test-host", "--journal", "none"])
            .args(extra)
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        Writer {
            child,
            socket: Arc::new(ours),
        }
    }

    /// Sends `message`, waiting while the writer's queue is full.
    pub fn send(&self, message: &[u8]) {
        send_on(&self.socket, message).unwrap();
    }

    /// Sends a query with a connection of ours passed beside it: the client's end.
    pub fn ask(&self, query: &Query) -> UnixStream {
        let (client, passed) = UnixStream::pair().unwrap();
        send_passing(&self.socket, &query.encode(), &passed);
        client
    }

    /// The writer's answer to `query`, whole.
    pub fn answer(&self, query: &Query) -> String {
        let mut client = self.ask(query);
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        answer
    }

    /// The log lines the writer sent back so far.
    pub fn logs(&self) -> Vec<LogMessage> {
        let mut buf = vec![0u8; MAX_MESSAGE];
        let mut lines = Vec::new();
        loop {
            let _ = nix_nonblocking(&self.socket);
            match seqpacket::recv(self.socket.as_fd(), &mut buf) {
                Ok((n, _)) if n > 0 => {
                    let fields = Fields::parse(&buf[..n]).unwrap();
                    assert_eq!(fields.kind(), Some(&b"log"[..]));
                    lines.push(LogMessage::decode(&fields).unwrap());
                }
                _ => return lines,
            }
        }
    }

    /// Closes our end: the writer commits and exits 0.
    pub fn close(self) {
        let Writer { mut child, socket } = self;
        drop(socket);
        let status = wait_for(&mut child, Duration::from_secs(10));
        assert_eq!(status.code(), Some(0), "the writer's exit");
    }
}

/// Makes `fd` non-blocking (reads of the writer's log lines must not wait): the flag is the
/// open socket's, shared by every descriptor of it.
fn nix_nonblocking(fd: &OwnedFd) -> std::io::Result<()> {
    UnixStream::from(fd.try_clone()?).set_nonblocking(true)
}

/// Sends `message` with `passed` beside it, retrying while the writer's queue is full.
pub fn send_passing(socket: &OwnedFd, message: &[u8], passed: &UnixStream) {
    loop {
        match seqpacket::send_passing(socket.as_fd(), message, Some(passed.as_fd())) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1))
            }
            other => return other.unwrap(),
        }
    }
}

/// Sends `message` on `socket`, retrying while the receiver's queue is full; an error when no
/// one holds the other end.
pub fn send_on(socket: &OwnedFd, message: &[u8]) -> std::io::Result<()> {
    loop {
        match seqpacket::send(socket.as_fd(), message) {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                std::thread::sleep(Duration::from_millis(1))
            }
            other => return other,
        }
    }
}

pub fn wait_for(child: &mut Child, within: Duration) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(start.elapsed() < within, "the writer did not exit");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// An hour ago, the same for the whole run of the tests: outcomes' times count from it (the
/// writer prunes what is older than its `--keep-days`).
pub fn base_ms() -> i64 {
    static BASE: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *BASE.get_or_init(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        now.as_millis() as i64 / 1000 * 1000 - 3_600_000
    })
}

/// An outcome of `entry` run as `user` (crontab of `owner`), started `at_ms` after
/// [`base_ms`].
pub fn outcome(entry: &str, user: &str, owner: Option<u32>, at_ms: i64, head: Vec<u8>) -> Outcome {
    Outcome {
        entry: entry.into(),
        place: format!("crontabs/{user}:1"),
        user: user.into(),
        owner_uid: owner,
        command: "true".into(),
        trigger: Trigger::Schedule,
        slot: None,
        host: "test-host".into(),
        at_ms: base_ms() + at_ms,
        cluster: None,
        attempt: None,
        result: Slot::Ran(Ran {
            ended_ms: base_ms() + at_ms + 10,
            end: End::Exited(0),
            timed_out: false,
            user_us: 0,
            system_us: 0,
            max_rss_kib: 0,
            output_bytes: head.len() as u64,
            head,
            tail: Vec::new(),
            mail: Mail::None,
        }),
    }
}

pub fn query(asked: Asked, all: bool, uid: u32, name: Option<&str>) -> Query {
    Query {
        asked,
        json: false,
        wide: false,
        all,
        uid,
        name: name.map(str::to_string),
        now_ms: 0,
        zone: "UTC".into(),
        max_answer: 1 << 20,
    }
}

pub fn history(entry: Option<&str>, limit: u32) -> Asked {
    Asked::History {
        entry: entry.map(str::to_string),
        user: None,
        failed: false,
        since_ms: None,
        limit,
    }
}

pub fn store_in(dir: &Path) -> PathBuf {
    dir.join("history.db")
}

/// The store opened beside the writer (or after it): SQL straight on the file.
pub fn open_db(path: &Path) -> rusqlite::Connection {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.busy_timeout(Duration::from_secs(5)).unwrap();
    conn
}

pub fn count(conn: &rusqlite::Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn an_outcome_is_stored_and_a_query_answered_on_its_passed_connection() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let writer = Writer::start(&store, &[]);
    writer.send(
        &outcome(
            "3f2a9c01b7d4",
            "alice",
            Some(1000),
            1_000,
            b"hello\n".to_vec(),
        )
        .encode(),
    );
    writer.send(&outcome("aaaa00000001", "bob", Some(1001), 2_000, Vec::new()).encode());
    let answer = writer.answer(&query(history(None, 100), false, 1000, Some("alice")));
    assert!(answer.starts_with("OK\nRUN "), "{answer}");
    assert!(answer.contains("3f2a9c01b7d4"), "{answer}");
    assert!(
        !answer.contains("aaaa00000001"),
        "bob's entry shown to alice: {answer}"
    );
    assert!(answer.ends_with("1 outcome listed. Pass --wide for more columns.\n"));
    let logs = Asked::Logs {
        entry: "3f2a".into(),
        run: None,
        raw: false,
    };
    assert_eq!(
        writer.answer(&query(logs.clone(), false, 1000, Some("alice"))),
        "OK\nhello\n"
    );
    // Bob asks for alice's run: the same words as for a run that does not exist.
    assert_eq!(
        writer.answer(&query(logs, false, 1001, Some("bob"))),
        "ERROR no such run\n"
    );
    writer.close();
    // Mode 0600, the -wal and -shm too while they are there.
    use std::os::unix::fs::PermissionsExt;
    for entry in std::fs::read_dir(dir.path()).unwrap() {
        let meta = entry.unwrap().metadata().unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    }
}

#[test]
fn outcomes_sent_a_second_before_a_sigkill_are_in_the_store_and_it_keeps_going() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut writer = Writer::start(&store, &[]);
    // A few first, then a pause: what came before the socket went idle is committed too.
    let mut sent: Vec<(String, i64, Instant)> = Vec::new();
    for i in 0..300 {
        writer.send(&outcome("ffff00000000", "alice", Some(1000), i, Vec::new()).encode());
        sent.push(("ffff00000000".into(), i, Instant::now()));
    }
    std::thread::sleep(Duration::from_millis(1_200));
    let stop = Arc::new(AtomicBool::new(false));
    // Four threads, each sending its own entry's outcomes (at_ms numbers them), each
    // remembering when each send returned.
    let senders: Vec<_> = (0..4)
        .map(|t| {
            let socket = Arc::new(writer.socket.try_clone().unwrap());
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut sent = Vec::new();
                for i in 0..2_500i64 {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let entry = format!("{:012x}", 0xa000 + t);
                    let o = outcome(&entry, "alice", Some(1000), i, vec![b'x'; 200]);
                    if send_on(&socket, &o.encode()).is_err() {
                        break;
                    }
                    sent.push((entry, i, Instant::now()));
                    std::thread::sleep(Duration::from_micros(1_600));
                }
                sent
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(3_500));
    writer.child.kill().unwrap();
    let killed = Instant::now();
    wait_for(&mut writer.child, Duration::from_secs(5));
    stop.store(true, Ordering::Relaxed);
    sent.extend(senders.into_iter().flat_map(|s| s.join().unwrap()));
    let before = sent
        .iter()
        .filter(|(_, _, at)| killed.duration_since(*at) > Duration::from_secs(1))
        .count();
    assert!(
        before > 1_000,
        "only {before} sent a second before the kill"
    );
    let conn = open_db(&store);
    let check: String = conn
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let mut missing = 0;
    for (entry, i, at) in &sent {
        if killed.duration_since(*at) <= Duration::from_secs(1) {
            continue;
        }
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM runs WHERE entry = ?1 AND at_ms = ?2",
                rusqlite::params![entry, base_ms() + i],
                |r| r.get(0),
            )
            .unwrap();
        missing += usize::from(n != 1);
    }
    assert_eq!(missing, 0, "of {before} sent more than 1 s before the kill");
    let stored = count(&conn, "SELECT count(*) FROM runs");
    drop(conn);
    // Most of what was sent is in, not only the part more than 1 s old.
    assert!(
        stored as usize >= before,
        "{stored} stored, {before} sent in time"
    );
    // Started again on the same file, it goes on.
    let writer = Writer::start(&store, &[]);
    writer.send(&outcome("bbbb00000001", "alice", Some(1000), 5, Vec::new()).encode());
    writer.close();
    let conn = open_db(&store);
    assert_eq!(count(&conn, "SELECT count(*) FROM runs"), stored + 1);
}

#[test]
fn a_stuck_client_does_not_hold_up_the_intake_and_too_many_queries_are_told_busy() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let writer = Writer::start(&store, &["--keep-runs", "100000"]);
    // Enough rows that a wide answer of them all is more than a socket's buffer.
    for i in 0..3_000 {
        writer.send(&outcome("cccc00000001", "alice", None, i, Vec::new()).encode());
    }
    let mut wide = query(history(None, 10_000), true, 0, None);
    wide.wide = true;
    wide.max_answer = 8 << 20;
    // Twelve clients that never read: at most four answers are being written (their threads
    // blocked on full sockets), at most four wait their turn, the others are told at once
    // that the writer is busy.
    let stuck: Vec<UnixStream> = (0..12).map(|_| writer.ask(&wide)).collect();
    std::thread::sleep(Duration::from_millis(500));
    let (mut writing, mut waiting, mut busy) = (0, 0, 0);
    for client in &stuck {
        client.set_nonblocking(true).unwrap();
        let mut start = [0u8; 11];
        match (&*client).read(&mut start) {
            Ok(11) if &start == b"ERROR busy\n" => busy += 1,
            Ok(n) if start[..n].starts_with(b"OK\n") => writing += 1,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => waiting += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        writing, 4,
        "{writing} writing, {waiting} waiting, {busy} busy"
    );
    assert!(
        waiting <= 4 && busy >= 4,
        "{writing} writing, {waiting} waiting, {busy} busy"
    );
    // Outcomes still reach the file within a second.
    writer.send(&outcome("dddd00000001", "alice", None, 9, Vec::new()).encode());
    let conn = open_db(&store);
    let deadline = Instant::now() + Duration::from_secs(1);
    while count(
        &conn,
        "SELECT count(*) FROM runs WHERE entry = 'dddd00000001'",
    ) == 0
    {
        assert!(
            Instant::now() < deadline,
            "the outcome was not committed within 1 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(stuck);
    writer.close();
}
