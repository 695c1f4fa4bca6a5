//! The control socket, one of the daemon's owners (`--control-socket`, default
//! `/run/crond.sock`: `cronctl list`, `run`, `status`), served from the reactor's poll as the
//! metrics endpoint is: non-blocking connections, a pool with a bound, deadlines. It keeps its
//! listener and connections and nothing of the daemon: it answers from a [`Snapshot`] made
//! (by [`snapshot`], from the scheduler's [`EntryState`]s in the sources' order, which the
//! reactor hands it) only for what a request wants, and returns the runs asked for
//! ([`RunOrder`]); the reactor has the scheduler start each (`Scheduler::run_now`: the RUN line,
//! then the one launch path) and tells it what became of it ([`ControlServer::ran`]). What a
//! request means, who may see what and the answers' text are `crate::control`'s (pure).
//!
//! Any local user may connect (mode 0666); each connection is told apart by its credentials
//! (`SO_PEERCRED`, read at accept: the kernel's, not the client's word). Bounds: at most
//! [`MAX_CONNECTIONS`] at once, of which [`ROOT_RESERVED`] only root's connections may take and
//! at most [`MAX_PER_USER`] per other user; a request line of `control::MAX_REQUEST` bytes
//! within [`REQUEST_DEADLINE_MS`] of the accept; [`DEADLINE_MS`] to the last byte of the
//! answer; answers of `control::MAX_ANSWER_USER` bytes (root's `MAX_ANSWER_ROOT`); at most
//! [`USER_REQUESTS_PER_S`] answered per second to users other than root (a request past it
//! waits its turn, within its deadline). A connection past a bound is answered `ERROR busy`
//! when its socket takes it at once, and closed, and the listener rests [`BUSY_PAUSE_MS`]. At
//! most [`ACCEPTS_PER_WAKE`] accepts per wake-up: the loop goes on to its timers and signals
//! between.

use std::os::fd::BorrowedFd;

use std::path::PathBuf;

use super::Error;
use super::effects::Effects;
use super::flow::Launched;
use super::scheduler::EntryState;
use crate::control::{self, EntryView, Peer, Ran, Request, Snapshot, StatusView, Want};
use crate::log::lines;
use crate::schedule::Zone;
use crate::sys::listen::{Listener, Stream};
use crate::sys::poll::Interest;
use crate::sys::pump::{Filled, FlushError, Flushed, Pump};
use crate::timeline::EntryId;

/// Connections served at once.
pub(super) const MAX_CONNECTIONS: usize = 16;

/// Of [`MAX_CONNECTIONS`], how many only root's connections may take: users holding every
/// other slot can't keep root out.
pub(super) const ROOT_RESERVED: usize = 4;

/// Connections one user other than root may hold at once.
pub(super) const MAX_PER_USER: usize = 4;

/// From the accept to the end of the request line.
pub(super) const REQUEST_DEADLINE_MS: i64 = 2_000;

/// From the accept to the last byte of the answer.
pub(super) const DEADLINE_MS: i64 = 5_000;

/// Requests of users other than root answered per second, all such users together (each `list`
/// looks at every entry).
pub(super) const USER_REQUESTS_PER_S: u32 = 5;

/// Connections accepted per wake-up of the loop.
pub(super) const ACCEPTS_PER_WAKE: usize = 16;

/// After a wake-up that turned a user's connection away (`busy`), how long the listener is not
/// polled: connections wait in the kernel's backlog meanwhile (root's among them, served first
/// once accepted), so a user who connects without end makes the daemon accept at most
/// [`ACCEPTS_PER_WAKE`] per pause rather than spin.
pub(super) const BUSY_PAUSE_MS: i64 = 100;

/// How much of a request is read at once.
const READ_CHUNK: usize = 1024;

/// Answers made of this many entries or more give their memory back to the system afterwards
/// (as a reload that freed memory does).
const LARGE_ANSWER_ENTRIES: usize = 1_000;

/// What a descriptor of the server is, in the poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Listener,
    /// A connection, by its position as of [`ControlServer::fds`].
    Connection(usize),
}

/// A run asked for through the socket, for the loop to start.
#[derive(Debug, Clone)]
pub(super) struct RunOrder {
    /// What [`ControlServer::ran`] is told back.
    pub(super) ticket: u64,
    pub(super) entry: EntryId,
    /// `FILE:LINE`.
    pub(super) place: String,
    pub(super) peer: Peer,
}

#[derive(Debug)]
enum State {
    /// The request line is coming.
    Reading,
    /// Read, waiting for the per-second budget of users' requests.
    Asked(Request),
    /// A run was handed to the loop under this ticket.
    Running(u64),
    /// The answer is queued in the pump.
    Replying,
}

#[derive(Debug)]
struct Connection {
    stream: Stream,
    peer: Peer,
    request: Vec<u8>,
    pump: Pump,
    state: State,
    accepted_ms: i64,
}

impl Connection {
    fn deadline_ms(&self) -> i64 {
        self.accepted_ms
            + match self.state {
                State::Reading => REQUEST_DEADLINE_MS,
                _ => DEADLINE_MS,
            }
    }

    fn reply(&mut self, answer: &[u8]) {
        self.pump.queue(answer);
        self.state = State::Replying;
    }
}

/// How many users' requests were answered in the current second.
#[derive(Debug, Default)]
struct Budget {
    second: i64,
    used: u32,
}

impl Budget {
    fn take(&mut self, now_ms: i64) -> bool {
        let second = now_ms.div_euclid(1000);
        if second != self.second {
            self.second = second;
            self.used = 0;
        }
        if self.used >= USER_REQUESTS_PER_S {
            return false;
        }
        self.used += 1;
        true
    }
}

/// The control socket's listener and connections.
#[derive(Debug)]
pub(super) struct ControlServer {
    listener: Listener,
    connections: Vec<Connection>,
    next_ticket: u64,
    budget: Budget,
    /// When the daemon started (epoch ms) and its pid, for `status`.
    started_ms: i64,
    pid: i32,
    /// The listener rests until then (epoch ms) after turning a user away; `None`: it doesn't.
    paused_until_ms: Option<i64>,
    /// Entries the snapshots held since the last [`ControlServer::take_freed`].
    made: usize,
}

/// How the reactor answers: the snapshot of what a request wants for a peer, made when a
/// request needs it.
pub(super) type SnapshotFn<'a> = &'a dyn Fn(&Peer, &Want<'_>) -> Snapshot;

impl ControlServer {
    pub(super) fn new(listener: Listener, started_ms: i64) -> ControlServer {
        ControlServer {
            listener,
            connections: Vec::new(),
            next_ticket: 0,
            budget: Budget::default(),
            started_ms,
            pid: std::process::id() as i32,
            paused_until_ms: None,
            made: 0,
        }
    }

    /// The control socket at `place` (`Options::control_socket`: the path, and whether it was
    /// given; `None`: off). A given one that can't be made stops the start; the default one is
    /// logged and left out.
    pub(super) fn listen(
        place: Option<(PathBuf, bool)>,
        started_ms: i64,
        fx: &mut dyn Effects,
    ) -> Result<Option<ControlServer>, Error> {
        let Some((path, given)) = place else {
            return Ok(None);
        };
        match crate::sys::listen::listen_unix_for_all(&path) {
            Ok(listener) => {
                fx.info(lines::control_socket_line(&path));
                Ok(Some(ControlServer::new(listener, started_ms)))
            }
            Err(e) if given => Err(Error::Io("--control-socket", e)),
            Err(e) => {
                fx.error(lines::no_control_socket_line(&path, &e));
                Ok(None)
            }
        }
    }

    /// The daemon as `status` shows it at `now_ms`, before the entries are counted for the
    /// asker: the local `zone`, and `running` job children in all.
    pub(super) fn status(&self, now_ms: i64, zone: &Zone, running: usize) -> StatusView {
        StatusView {
            version: env!("CARGO_PKG_VERSION"),
            pid: self.pid,
            started_ms: self.started_ms,
            now_ms,
            zone: zone.clone(),
            entries: 0,
            running,
            own_only: false,
        }
    }

    /// Whether answers made of many entries were sent since the last call: their memory is to
    /// go back to the system.
    pub(super) fn take_freed(&mut self) -> bool {
        std::mem::take(&mut self.made) >= LARGE_ANSWER_ENTRIES
    }

    /// The descriptors to poll: the listener while a slot is free, then each connection
    /// (readable while its request comes, writable while its answer goes; a connection waiting
    /// for the loop or the budget is not polled).
    pub(super) fn fds(&self) -> Vec<(Token, BorrowedFd<'_>, Interest)> {
        let mut fds = Vec::with_capacity(self.connections.len() + 1);
        if self.connections.len() < MAX_CONNECTIONS && self.paused_until_ms.is_none() {
            fds.push((Token::Listener, self.listener.fd(), Interest::Read));
        }
        for (i, c) in self.connections.iter().enumerate() {
            match c.state {
                State::Reading => fds.push((Token::Connection(i), c.stream.fd(), Interest::Read)),
                State::Replying => fds.push((Token::Connection(i), c.stream.fd(), Interest::Write)),
                State::Asked(_) | State::Running(_) => {}
            }
        }
        fds
    }

    /// How long the loop may sleep: until the next deadline, or the next second when a
    /// request waits for the budget.
    pub(super) fn timeout_ms(&self, now_ms: i64) -> Option<u32> {
        let waiting = self
            .connections
            .iter()
            .any(|c| matches!(c.state, State::Asked(_)));
        let next_second = waiting.then(|| (now_ms.div_euclid(1000) + 1) * 1000);
        self.connections
            .iter()
            .map(Connection::deadline_ms)
            .chain(next_second)
            .chain(self.paused_until_ms)
            .min()
            .map(|at| at.saturating_sub(now_ms).clamp(0, i64::from(u32::MAX)) as u32)
    }

    /// Serves what `ready` (tokens of [`ControlServer::fds`] from the same state) says can go
    /// on, answers the requests that are whole, drops connections past their deadline, and
    /// accepts new ones into free slots. Returns the runs asked for: the loop starts each and
    /// calls [`ControlServer::ran`].
    pub(super) fn serve(
        &mut self,
        ready: &[Token],
        now_ms: i64,
        snapshot: SnapshotFn<'_>,
    ) -> Vec<RunOrder> {
        let mut orders = Vec::new();
        let mut keep = Vec::with_capacity(self.connections.len());
        for (i, mut c) in std::mem::take(&mut self.connections)
            .into_iter()
            .enumerate()
        {
            let go_on = !ready.contains(&Token::Connection(i)) || self.step(&mut c);
            if go_on && now_ms < c.deadline_ms() {
                keep.push(c);
            }
        }
        self.connections = keep;
        if self.paused_until_ms.is_some_and(|until| now_ms >= until) {
            self.paused_until_ms = None;
        }
        if ready.contains(&Token::Listener) && self.paused_until_ms.is_none() {
            self.accept(now_ms);
        }
        self.answer(now_ms, snapshot, &mut orders);
        orders
    }

    /// What became of the run `order` asked for (`None`: its entry is gone since): the
    /// answer goes to its connection.
    pub(super) fn ran(&mut self, order: &RunOrder, launched: Option<Launched>) {
        let answer = match launched {
            Some(launched) => control::ran_answer(&order.place, &ran(launched)),
            None => control::error_answer("the entry is gone (its crontab changed)"),
        };
        if let Some(c) = self
            .connections
            .iter_mut()
            .find(|c| matches!(c.state, State::Running(t) if t == order.ticket))
        {
            c.reply(&answer);
            // Most answers fit the socket's buffer.
            let _ = c.pump.flush(&mut c.stream);
        }
    }

    /// Accepts waiting connections while slots are free (at most [`ACCEPTS_PER_WAKE`]); one
    /// past a bound is told `ERROR busy` and closed at once.
    fn accept(&mut self, now_ms: i64) {
        for _ in 0..ACCEPTS_PER_WAKE {
            if self.connections.len() >= MAX_CONNECTIONS {
                return;
            }
            let Ok(Some(mut stream)) = self.listener.accept() else {
                return;
            };
            let Ok(cred) = stream.peer_credentials() else {
                continue;
            };
            let uid = cred.uid.0;
            if uid != 0 && !self.user_may_connect(uid) {
                // What the client sent is read first (what is there now): a socket closed
                // with unread bytes is reset, and the client would not see the answer.
                let mut pump = Pump::new(control::MAX_REQUEST, usize::MAX);
                let _ = pump.fill(&mut stream, control::MAX_REQUEST, &mut |_| true);
                pump.queue(&control::error_answer(
                    "busy: too many connections to the control socket; try again",
                ));
                let _ = pump.flush(&mut stream);
                self.paused_until_ms = Some(now_ms + BUSY_PAUSE_MS);
                continue;
            }
            let name = match uid {
                0 => Some(b"root".to_vec()),
                _ => crate::sys::user::User::resolve_uid(cred.uid)
                    .ok()
                    .flatten()
                    .map(|u| u.name),
            };
            let mut c = Connection {
                stream,
                peer: Peer {
                    uid,
                    pid: cred.pid,
                    name,
                },
                request: Vec::new(),
                pump: Pump::new(READ_CHUNK, usize::MAX),
                state: State::Reading,
                accepted_ms: now_ms,
            };
            // The request is usually there already: read in this same wake-up.
            if self.step(&mut c) {
                self.connections.push(c);
            }
        }
    }

    /// Whether a connection of `uid` (not root) may take a slot: one of the unreserved ones,
    /// and fewer than [`MAX_PER_USER`] of that user's.
    fn user_may_connect(&self, uid: u32) -> bool {
        let users = self.connections.iter().filter(|c| c.peer.uid != 0).count();
        let own = self
            .connections
            .iter()
            .filter(|c| c.peer.uid == uid)
            .count();
        users < MAX_CONNECTIONS - ROOT_RESERVED && own < MAX_PER_USER
    }

    /// One step of a connection: read what came (parsing the request when its line is whole),
    /// or write what can go. `false`: done, close.
    fn step(&mut self, c: &mut Connection) -> bool {
        match c.state {
            State::Replying => {
                return match c.pump.flush(&mut c.stream) {
                    Ok(Flushed::Partly) => true,
                    Ok(Flushed::All) | Err(FlushError::Closed | FlushError::Io(_)) => false,
                    Err(FlushError::Backlog(_)) => false,
                };
            }
            State::Asked(_) | State::Running(_) => return true,
            State::Reading => {}
        }
        let request = &mut c.request;
        let mut whole = false;
        let filled = c.pump.fill(&mut c.stream, usize::MAX, &mut |chunk| {
            let room = control::MAX_REQUEST + 1 - request.len();
            request.extend_from_slice(&chunk[..chunk.len().min(room)]);
            whole = request.contains(&b'\n') || request.len() > control::MAX_REQUEST;
            !whole
        });
        let ended = match filled {
            Ok(Filled::Open) => false,
            Ok(Filled::End) => true,
            Err(_) => return false,
        };
        // A client that closed its side after a request without `\n` is answered too.
        let half_closed = ended && !c.request.is_empty();
        if !whole && !half_closed {
            return !ended;
        }
        let parsed = match c.request.iter().position(|&b| b == b'\n') {
            Some(end) => control::parse_request(&c.request[..end]),
            None if c.request.len() > control::MAX_REQUEST => Err(format!(
                "a request is one line of at most {} bytes",
                control::MAX_REQUEST
            )),
            None => control::parse_request(&c.request),
        };
        c.request = Vec::new();
        match parsed {
            Ok(request) => {
                c.state = State::Asked(request);
                true
            }
            Err(e) => {
                c.reply(&control::error_answer(&e));
                self.step(c)
            }
        }
    }

    /// Answers the requests that are read, root's first, users' within the budget.
    fn answer(&mut self, now_ms: i64, snapshot: SnapshotFn<'_>, orders: &mut Vec<RunOrder>) {
        let mut order: Vec<usize> = (0..self.connections.len()).collect();
        order.sort_by_key(|&i| self.connections[i].peer.uid != 0);
        let mut done = Vec::new();
        for i in order {
            let c = &self.connections[i];
            let State::Asked(request) = &c.state else {
                continue;
            };
            if !c.peer.is_root() && !self.budget.take(now_ms) {
                continue;
            }
            let request = request.clone();
            let c = &mut self.connections[i];
            let snap = snapshot(&c.peer, &request.want(&c.peer));
            self.made += snap.entries.len();
            match &request {
                Request::Run { target } => match control::find(&snap, target) {
                    Ok(entry) => {
                        let ticket = self.next_ticket;
                        self.next_ticket += 1;
                        orders.push(RunOrder {
                            ticket,
                            entry: EntryId(entry.id),
                            place: entry.place(),
                            peer: c.peer.clone(),
                        });
                        c.state = State::Running(ticket);
                        continue;
                    }
                    Err(answer) => c.reply(&answer),
                },
                _ => c.reply(&control::render(&request, &snap, &c.peer)),
            }
            done.push(i);
        }
        // Most answers fit the socket's buffer: sent now; a connection whose peer is gone ends.
        let mut gone = Vec::new();
        for i in done {
            if !self.step_at(i) {
                gone.push(i);
            }
        }
        for i in gone.into_iter().rev() {
            self.connections.remove(i);
        }
    }

    fn step_at(&mut self, i: usize) -> bool {
        let c = &mut self.connections[i];
        match c.pump.flush(&mut c.stream) {
            Ok(Flushed::Partly) => true,
            Ok(Flushed::All) | Err(_) => false,
        }
    }
}

/// What a launch did, as the asker is told.
fn ran(launched: Launched) -> Ran {
    match launched {
        Launched::Started(pid) => Ran::Started(pid.0),
        Launched::Skipped => Ran::Skipped,
        Launched::Waiting => Ran::Waiting,
        Launched::Failed { .. } => Ran::Queued,
    }
}

/// What the daemon knows, for `peer`: of `entries` (the scheduler's, in the sources' order),
/// those they may see that the request wants, each with its next run, last run and running
/// jobs (at most `want.max_entries`, the rest counted), and the status (the entries and jobs
/// they may see, counted; root's jobs as `status` has them, @reboot ones included). Only the
/// entries made cost more than a look.
pub(super) fn snapshot<'a>(
    peer: &Peer,
    want: &Want<'_>,
    entries: impl Iterator<Item = EntryState<'a>>,
    status: StatusView,
) -> Snapshot {
    let (mut made, mut omitted, mut seen, mut seen_running) = (Vec::new(), 0, 0, 0);
    for state in entries {
        let job = state.job;
        if !control::may_see(peer, job.user(), job.owner.uid.map(|u| u.0)) {
            continue;
        }
        seen += 1;
        seen_running += state.running as usize;
        if !want.wants(state.id.0, &job.owner.tab, job.line(), job.user()) {
            continue;
        }
        if made.len() >= want.max_entries {
            omitted += 1;
            continue;
        }
        let mut running: Vec<i32> = state.pids().iter().map(|p| p.0).collect();
        running.sort_unstable();
        made.push(EntryView {
            id: state.id.0,
            tab: job.owner.tab.clone(),
            line: job.line(),
            user: job.user().to_vec(),
            schedule: job.schedule_text().to_vec(),
            cron_tz: state.cron_tz.map(|z| z.name().to_string()),
            zone: state.cron_tz.unwrap_or(&status.zone).clone(),
            next_s: state.next_ms().map(|ms| ms.div_euclid(1000)),
            last: state.last,
            running,
            policy: job.env().policy(),
            command: job.command().to_vec(),
        });
    }
    let own_only = !peer.is_root();
    let status = StatusView {
        entries: seen,
        running: if own_only {
            seen_running
        } else {
            status.running
        },
        own_only,
        ..status
    };
    Snapshot {
        status,
        entries: made,
        omitted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        (ControlServer::new(listener, 0), path, dir)
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
        }
    }

    /// Serves whatever is ready now, as the loop would after a poll.
    fn turn(s: &mut ControlServer, now_ms: i64) -> Vec<RunOrder> {
        let mut registry = crate::sys::poll::Registry::new();
        for (token, fd, interest) in s.fds() {
            registry.add(token, fd, interest);
        }
        let ready: Vec<Token> = registry.wait(Some(100)).unwrap().iter().collect();
        s.serve(&ready, now_ms, &empty)
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
                    id: i,
                    tab: "/etc/cron.d/big".into(),
                    line: i as u32,
                    user: b"root".to_vec(),
                    schedule: b"* * * * *".to_vec(),
                    cron_tz: None,
                    zone: crate::schedule::Zone::utc(),
                    next_s: None,
                    last: None,
                    running: Vec::new(),
                    policy: Default::default(),
                    command: vec![b'x'; 200],
                })
                .collect();
            snap
        };
        let serve = |s: &mut ControlServer, now_ms: i64| {
            let mut registry = crate::sys::poll::Registry::new();
            for (token, fd, interest) in s.fds() {
                registry.add(token, fd, interest);
            }
            let ready: Vec<Token> = registry.wait(Some(0)).unwrap().iter().collect();
            s.serve(&ready, now_ms, &big);
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
        let held: Vec<UnixStream> = (0..MAX_CONNECTIONS - ROOT_RESERVED)
            .map(|_| UnixStream::connect(&path).unwrap())
            .collect();
        turn(&mut s, 1_000);
        assert_eq!(s.connections.len(), MAX_CONNECTIONS - ROOT_RESERVED);
        for (i, c) in s.connections.iter_mut().enumerate() {
            c.peer.uid = 1000 + (i / MAX_PER_USER) as u32;
        }
        assert!(!s.user_may_connect(5000), "the users' slots are full");
        s.connections.truncate(MAX_CONNECTIONS - ROOT_RESERVED - 1);
        assert!(s.user_may_connect(5000));
        assert!(!s.user_may_connect(1000), "1000 holds four");
        drop(held);
    }

    #[test]
    fn users_requests_past_the_budget_wait_for_the_next_second() {
        let mut budget = Budget::default();
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
        client.write_all(b"run 7\n").unwrap();
        let entry = |peer: &Peer, want: &Want<'_>| {
            let mut snap = empty(peer, want);
            snap.entries.push(EntryView {
                id: 7,
                tab: "crontabs/alice".into(),
                line: 3,
                user: b"alice".to_vec(),
                schedule: b"@daily".to_vec(),
                cron_tz: None,
                zone: crate::schedule::Zone::utc(),
                next_s: None,
                last: None,
                running: Vec::new(),
                policy: Default::default(),
                command: b"date".to_vec(),
            });
            snap
        };
        let mut registry = crate::sys::poll::Registry::new();
        for (token, fd, interest) in s.fds() {
            registry.add(token, fd, interest);
        }
        let ready: Vec<Token> = registry.wait(Some(100)).unwrap().iter().collect();
        let orders = s.serve(&ready, 1_000, &entry);
        assert_eq!(orders.len(), 1);
        assert_eq!(
            (orders[0].entry, orders[0].place.as_str()),
            (EntryId(7), "crontabs/alice:3")
        );
        assert!(
            s.fds().iter().all(|(t, _, _)| *t == Token::Listener),
            "not polled meanwhile"
        );
        s.ran(&orders[0], Some(Launched::Started(crate::types::Pid(99))));
        turn(&mut s, 1_100);
        assert_eq!(
            answer_of(client),
            "OK\nstarted crontabs/alice:3: job pid 99\n"
        );
        // Its entry gone by the time the scheduler is asked: said so.
        let mut client = UnixStream::connect(&path).unwrap();
        client.write_all(b"run 7\n").unwrap();
        let mut registry = crate::sys::poll::Registry::new();
        for (token, fd, interest) in s.fds() {
            registry.add(token, fd, interest);
        }
        let ready: Vec<Token> = registry.wait(Some(100)).unwrap().iter().collect();
        let orders = s.serve(&ready, 2_000, &entry);
        s.ran(&orders[0], None);
        turn(&mut s, 2_100);
        assert!(answer_of(client).starts_with("ERROR the entry is gone"));
    }

    #[test]
    fn a_snapshot_holds_what_the_asker_may_see_and_the_request_wants_in_the_order_given() {
        use crate::daemon::clock::{Clock, FakeClock};
        use crate::daemon::effects::Recorded;
        use crate::daemon::flow::change_of;
        use crate::daemon::scheduler::Scheduler;
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let dir = tempfile::tempdir().unwrap();
        let mut sched = Scheduler::new(clock.now(), Zone::utc(), dir.path().to_path_buf());
        let now_ms = clock.now().as_millisecond();
        let text = "0 3 * * * a\n@hourly b\n*/5 * * * * c\n";
        let ids = sched.apply(change_of(text), now_ms, &mut fx);
        let Some(Launched::Started(pid)) = sched.run_now(ids[1], "root", clock.now(), &mut fx)
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
            snapshot(peer, want, entries, status.clone())
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
        let counts =
            |snap: &Snapshot| (snap.entries.len(), snap.status.entries, snap.status.running);
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
}
