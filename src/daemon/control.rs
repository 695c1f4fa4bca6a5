//! The control socket, one of the daemon's owners (`--control-socket`, default
//! `/run/crond.sock`: `cronctl list`, `run`, `status`), served from the reactor's poll as the
//! metrics endpoint is: non-blocking connections, a table with bounds, deadlines. It keeps its
//! listeners and connections and nothing of the daemon: it answers from a [`Snapshot`] made
//! (by [`snapshot`], from the scheduler's [`EntryState`]s in the sources' order, which the
//! reactor hands it) only for what a request wants, and returns the runs asked for
//! ([`RunOrder`]); the reactor has the scheduler start each (`Scheduler::run_now`: the RUN line,
//! then the one launch path) and tells it what became of it ([`ControlServer::ran`]). What a
//! request means, who may see what and the answers' text are `crate::control`'s (pure).
//!
//! Two sockets. The shared one (mode 0666) takes any local user; each connection is told apart
//! by its credentials (`SO_PEERCRED`, read at accept: the kernel's, not the client's word). The
//! private one beside it ([`private_path`], mode 0600, the daemon's own user's) takes only root
//! and the daemon's user: no queue of another user's connections can stand in front of them,
//! in the kernel's backlog or in the table. `cronctl` tries the private one first.
//!
//! Bounds: at most [`MAX_CONNECTIONS`] at once, of which [`RESERVED`] only the private
//! socket's and root's connections may take and at most [`MAX_PER_USER`] per other user; at most
//! [`SHARED_ACCEPTS_PER_S`] accepts a second on the shared socket and [`ACCEPTS_PER_WAKE`] per
//! wake-up of the loop (past them, connections wait in the kernel's backlog: a user who floods
//! the shared socket costs the daemon a bounded number of accepts a second, whatever their
//! rate); a request line of `control::MAX_REQUEST` bytes within [`REQUEST_DEADLINE_MS`] of the
//! accept; [`DEADLINE_MS`] to the last byte of the answer; answers of
//! `control::MAX_ANSWER_USER` bytes (root's `MAX_ANSWER_ROOT`); at most [`USER_REQUESTS_PER_S`]
//! answered per second to users other than root (a request past it waits its turn, within its
//! deadline). A user's connection past a bound is answered `ERROR busy` when its socket takes it
//! at once, and closed; such connections are counted by uid and logged once a minute
//! ([`TURNED_AWAY_LOG_MS`]).
//!
//! A user's name is looked up (passwd, through NSS: with LDAP a directory query) only when one
//! of their requests is answered, and kept [`NAME_TTL_MS`]: never per connection.
//!
//! The table can't be corrupted by the order in which connections end: a connection that is
//! done is marked so where it ends, and the table keeps the others in one pass at the end of the
//! turn (no removal by position).

use std::collections::BTreeMap;
use std::os::fd::BorrowedFd;
use std::path::PathBuf;

use super::Error;
use super::effects::Effects;
use super::flow::Launched;
use super::scheduler::EntryState;
use crate::control::{
    self, EntryView, Peer, Ran, Request, Snapshot, StatusView, Want, private_path,
};
use crate::log::lines;
use crate::schedule::Zone;
use crate::sys::listen::{Listener, Stream};
use crate::sys::poll::Interest;
use crate::sys::pump::{Filled, FlushError, Flushed, Pump};
use crate::timeline::EntryId;

/// Connections served at once.
pub(super) const MAX_CONNECTIONS: usize = 16;

/// Of [`MAX_CONNECTIONS`], how many only root's connections and the private socket's may take:
/// users holding every other slot can't keep root out.
pub(super) const RESERVED: usize = 4;

/// Connections one user other than root may hold at once.
pub(super) const MAX_PER_USER: usize = 4;

/// From the accept to the end of the request line.
pub(super) const REQUEST_DEADLINE_MS: i64 = 2_000;

/// From the accept to the last byte of the answer.
pub(super) const DEADLINE_MS: i64 = 5_000;

/// Requests of users other than root answered per second, all such users together (each `list`
/// looks at every entry).
pub(super) const USER_REQUESTS_PER_S: u32 = 5;

/// Connections accepted per wake-up of the loop, from each socket.
pub(super) const ACCEPTS_PER_WAKE: usize = 16;

/// Connections accepted per second from the shared socket. Past it the shared listener is not
/// polled until the next second: its connections wait in the kernel's backlog (or are refused
/// there when it is full), and a flood costs the daemon this many accepts a second at most.
pub(super) const SHARED_ACCEPTS_PER_S: u32 = 200;

/// How often the connections turned away are logged (counted by uid meanwhile).
pub(super) const TURNED_AWAY_LOG_MS: i64 = 60_000;

/// How long a uid's name, once looked up, is used before it is looked up again.
pub(super) const NAME_TTL_MS: i64 = 5_000;

/// Names kept at once (all dropped when full: a lookup is cheap, the bound is what matters).
const NAMES_KEPT: usize = 256;

/// How much of a request is read at once.
const READ_CHUNK: usize = 1024;

/// Answers made of this many entries or more give their memory back to the system afterwards
/// (as a reload that freed memory does).
const LARGE_ANSWER_ENTRIES: usize = 1_000;

/// What a descriptor of the server is, in the poll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    /// The shared socket's listener.
    Listener,
    /// The private socket's listener.
    Private,
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
    /// Answered, or the peer is gone: dropped at the end of the turn.
    Done,
}

#[derive(Debug)]
struct Connection {
    stream: Stream,
    /// Its name is filled in when a request of theirs is answered ([`Names`]).
    peer: Peer,
    /// Came through the private socket: root's, or the daemon's own user's.
    private: bool,
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

    /// Root's or the private socket's: served first, in the reserved slots, without the
    /// users' budget.
    fn trusted(&self) -> bool {
        self.private || self.peer.is_root()
    }

    fn reply(&mut self, answer: &[u8]) {
        self.pump.queue(answer);
        self.state = State::Replying;
    }

    /// Writes what the socket takes of the answer; done when all of it went, or the peer is
    /// gone.
    fn flush(&mut self) {
        match self.pump.flush(&mut self.stream) {
            Ok(Flushed::Partly) => {}
            Ok(Flushed::All)
            | Err(FlushError::Closed | FlushError::Io(_) | FlushError::Backlog(_)) => {
                self.state = State::Done
            }
        }
    }
}

/// So many events in the current second, at most `limit`.
#[derive(Debug)]
struct PerSecond {
    second: i64,
    used: u32,
    limit: u32,
}

impl PerSecond {
    fn new(limit: u32) -> PerSecond {
        PerSecond {
            second: i64::MIN,
            used: 0,
            limit,
        }
    }

    fn roll(&mut self, now_ms: i64) {
        let second = now_ms.div_euclid(1000);
        if second != self.second {
            self.second = second;
            self.used = 0;
        }
    }

    /// Whether one more may be taken at `now_ms`, without taking it.
    fn left(&mut self, now_ms: i64) -> bool {
        self.roll(now_ms);
        self.used < self.limit
    }

    fn take(&mut self, now_ms: i64) -> bool {
        let left = self.left(now_ms);
        self.used += u32::from(left);
        left
    }

    /// The start of the next second, when the budget is spent in this one.
    fn spent_until_ms(&self) -> Option<i64> {
        (self.used >= self.limit).then(|| (self.second + 1) * 1000)
    }
}

/// uid → name, as passwd has it, for [`NAME_TTL_MS`]; a uid has a name here only when that name
/// is the uid's both ways (`getpwuid`, then `getpwnam` of the name gives the uid back): a
/// system file's line runs as the uid its user field names, so a uid whose name belongs to
/// another uid in another NSS source sees none of those lines.
#[derive(Debug)]
struct Names {
    kept: BTreeMap<u32, (Option<Vec<u8>>, i64)>,
    look_up: fn(u32) -> Option<Vec<u8>>,
}

impl Names {
    fn new(look_up: fn(u32) -> Option<Vec<u8>>) -> Names {
        Names {
            kept: BTreeMap::new(),
            look_up,
        }
    }

    fn name_of(&mut self, uid: u32, now_ms: i64) -> Option<Vec<u8>> {
        if let Some((name, at)) = self.kept.get(&uid)
            && now_ms >= *at
            && now_ms - at < NAME_TTL_MS
        {
            return name.clone();
        }
        if self.kept.len() >= NAMES_KEPT {
            self.kept.clear();
        }
        let name = (self.look_up)(uid);
        self.kept.insert(uid, (name.clone(), now_ms));
        name
    }
}

/// The name of `uid` that names it back (see [`Names`]), as passwd has them now.
fn passwd_name(uid: u32) -> Option<Vec<u8>> {
    use crate::sys::user::{Uid, User};
    named_back(
        uid,
        |uid| User::resolve_uid(Uid(uid)).ok().flatten().map(|u| u.name),
        |name| User::resolve_name(name).ok().flatten().map(|u| u.uid.0),
    )
}

/// The name `by_uid` gives `uid`, when `by_name` gives that name back as `uid`; root is `root`.
fn named_back(
    uid: u32,
    by_uid: impl Fn(u32) -> Option<Vec<u8>>,
    by_name: impl Fn(&[u8]) -> Option<u32>,
) -> Option<Vec<u8>> {
    if uid == 0 {
        return Some(b"root".to_vec());
    }
    let name = by_uid(uid)?;
    (by_name(&name) == Some(uid)).then_some(name)
}

/// Connections turned away since the last log line, by uid.
#[derive(Debug, Default)]
struct TurnedAway {
    /// When the first of them was turned away.
    since_ms: Option<i64>,
    by_uid: BTreeMap<u32, u64>,
}

impl TurnedAway {
    fn count(&mut self, uid: u32, now_ms: i64) {
        self.since_ms.get_or_insert(now_ms);
        *self.by_uid.entry(uid).or_default() += 1;
    }

    /// When the count is to be logged.
    fn due_ms(&self) -> Option<i64> {
        self.since_ms.map(|since| since + TURNED_AWAY_LOG_MS)
    }

    /// The count, once a minute.
    fn log(&mut self, now_ms: i64, fx: &mut dyn Effects) {
        if self.due_ms().is_some_and(|due| now_ms >= due) {
            let counts: Vec<(u32, u64)> = std::mem::take(&mut self.by_uid).into_iter().collect();
            self.since_ms = None;
            fx.error(lines::control_turned_away_line(&counts));
        }
    }
}

/// The control socket's listeners and connections.
#[derive(Debug)]
pub(super) struct ControlServer {
    shared: Listener,
    private: Option<Listener>,
    connections: Vec<Connection>,
    next_ticket: u64,
    /// Users' requests answered this second.
    budget: PerSecond,
    /// Accepts on the shared socket this second.
    accepts: PerSecond,
    names: Names,
    turned_away: TurnedAway,
    /// When the daemon started (epoch ms) and its pid, for `status`.
    started_ms: i64,
    pid: i32,
    /// Entries the snapshots held since the last [`ControlServer::take_freed`].
    made: usize,
}

/// How the reactor answers: the snapshot of what a request wants for a peer, made when a
/// request needs it.
pub(super) type SnapshotFn<'a> = &'a dyn Fn(&Peer, &Want<'_>) -> Snapshot;

impl ControlServer {
    pub(super) fn new(
        shared: Listener,
        private: Option<Listener>,
        started_ms: i64,
    ) -> ControlServer {
        ControlServer {
            shared,
            private,
            connections: Vec::new(),
            next_ticket: 0,
            budget: PerSecond::new(USER_REQUESTS_PER_S),
            accepts: PerSecond::new(SHARED_ACCEPTS_PER_S),
            names: Names::new(passwd_name),
            turned_away: TurnedAway::default(),
            started_ms,
            pid: std::process::id() as i32,
            made: 0,
        }
    }

    /// The control socket at `place` (`Options::control_socket`: the path, and whether it was
    /// given; `None`: off), and the private one beside it. A given one that can't be made stops
    /// the start; the default one is logged and left out. A private socket that can't be made
    /// is logged, and the shared one served alone.
    pub(super) fn listen(
        place: Option<(PathBuf, bool)>,
        started_ms: i64,
        fx: &mut dyn Effects,
    ) -> Result<Option<ControlServer>, Error> {
        let Some((path, given)) = place else {
            return Ok(None);
        };
        let shared = match crate::sys::listen::listen_unix_for_all(&path) {
            Ok(listener) => listener,
            Err(e) if given => return Err(Error::Io("--control-socket", e)),
            Err(e) => {
                fx.error(lines::no_control_socket_line(&path, &e));
                return Ok(None);
            }
        };
        let private_path = private_path(&path);
        let private = match crate::sys::listen::listen_unix(&private_path, None) {
            Ok(listener) => Some(listener),
            Err(e) => {
                fx.error(lines::no_control_socket_line(&private_path, &e));
                None
            }
        };
        fx.info(lines::control_socket_line(&path));
        Ok(Some(ControlServer::new(shared, private, started_ms)))
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

    /// The descriptors to poll: the private listener while a slot is free, the shared one
    /// while a slot is free and its accepts of this second are not spent, then each connection
    /// (readable while its request comes, writable while its answer goes; a connection waiting
    /// for the loop or the budget is not polled).
    pub(super) fn fds(&self) -> Vec<(Token, BorrowedFd<'_>, Interest)> {
        let mut fds = Vec::with_capacity(self.connections.len() + 2);
        if self.connections.len() < MAX_CONNECTIONS {
            if let Some(private) = &self.private {
                fds.push((Token::Private, private.fd(), Interest::Read));
            }
            if self.accepts.spent_until_ms().is_none() {
                fds.push((Token::Listener, self.shared.fd(), Interest::Read));
            }
        }
        for (i, c) in self.connections.iter().enumerate() {
            match c.state {
                State::Reading => fds.push((Token::Connection(i), c.stream.fd(), Interest::Read)),
                State::Replying => fds.push((Token::Connection(i), c.stream.fd(), Interest::Write)),
                State::Asked(_) | State::Running(_) | State::Done => {}
            }
        }
        fds
    }

    /// How long the loop may sleep: until the next deadline, the next second when a request
    /// waits for the budget or the shared socket's accepts are spent, or the log of the
    /// connections turned away.
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
            .chain(self.accepts.spent_until_ms())
            .chain(self.turned_away.due_ms())
            .min()
            .map(|at| at.saturating_sub(now_ms).clamp(0, i64::from(u32::MAX)) as u32)
    }

    /// Serves what `ready` (tokens of [`ControlServer::fds`] from the same state) says can go
    /// on, accepts new connections into free slots, answers the requests that are whole, and
    /// drops the connections that are done or past their deadline. Returns the runs asked for:
    /// the loop starts each and calls [`ControlServer::ran`].
    pub(super) fn serve(
        &mut self,
        ready: &[Token],
        now_ms: i64,
        snapshot: SnapshotFn<'_>,
        fx: &mut dyn Effects,
    ) -> Vec<RunOrder> {
        // A new second gives the shared socket its accepts back (polled again from here).
        self.accepts.roll(now_ms);
        for (i, c) in self.connections.iter_mut().enumerate() {
            if ready.contains(&Token::Connection(i)) {
                step(c);
            }
        }
        if ready.contains(&Token::Private) {
            self.accept(true, now_ms);
        }
        if ready.contains(&Token::Listener) {
            self.accept(false, now_ms);
        }
        let mut orders = Vec::new();
        self.answer(now_ms, snapshot, &mut orders);
        self.connections
            .retain(|c| !matches!(c.state, State::Done) && now_ms < c.deadline_ms());
        self.turned_away.log(now_ms, fx);
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
            // Most answers fit the socket's buffer; a connection done here is dropped at the
            // end of the next turn.
            c.flush();
        }
    }

    /// Accepts waiting connections of the private socket (`private`) or the shared one while
    /// slots are free (at most [`ACCEPTS_PER_WAKE`], and for the shared one within
    /// [`SHARED_ACCEPTS_PER_S`]); a user's connection past a bound is told `ERROR busy` and
    /// closed at once.
    fn accept(&mut self, private: bool, now_ms: i64) {
        for _ in 0..ACCEPTS_PER_WAKE {
            if self.connections.len() >= MAX_CONNECTIONS || (!private && !self.accepts.take(now_ms))
            {
                return;
            }
            let listener = match (private, &self.private) {
                (true, Some(listener)) => listener,
                (true, None) => return,
                (false, _) => &self.shared,
            };
            let Ok(Some(mut stream)) = listener.accept() else {
                return;
            };
            let Ok(cred) = stream.peer_credentials() else {
                continue;
            };
            let uid = cred.uid.0;
            if !private && uid != 0 && !self.user_may_connect(uid) {
                turn_away(&mut stream);
                self.turned_away.count(uid, now_ms);
                continue;
            }
            let mut c = Connection {
                stream,
                peer: Peer {
                    uid,
                    pid: cred.pid,
                    name: None,
                },
                private,
                request: Vec::new(),
                pump: Pump::new(READ_CHUNK, usize::MAX),
                state: State::Reading,
                accepted_ms: now_ms,
            };
            // The request is usually there already: read in this same wake-up.
            step(&mut c);
            self.connections.push(c);
        }
    }

    /// Whether a connection of `uid` (not root) may take a slot: one of the unreserved ones,
    /// and fewer than [`MAX_PER_USER`] of that user's.
    fn user_may_connect(&self, uid: u32) -> bool {
        let live = || {
            self.connections
                .iter()
                .filter(|c| !matches!(c.state, State::Done))
        };
        let users = live().filter(|c| !c.trusted()).count();
        let own = live().filter(|c| !c.trusted() && c.peer.uid == uid).count();
        users < MAX_CONNECTIONS - RESERVED && own < MAX_PER_USER
    }

    /// Answers the requests that are read, the trusted connections' first, users' within the
    /// budget (in the order they came).
    fn answer(&mut self, now_ms: i64, snapshot: SnapshotFn<'_>, orders: &mut Vec<RunOrder>) {
        for trusted in [true, false] {
            for c in self
                .connections
                .iter_mut()
                .filter(|c| c.trusted() == trusted)
            {
                let State::Asked(request) = &c.state else {
                    continue;
                };
                if !trusted && !self.budget.take(now_ms) {
                    continue;
                }
                let request = request.clone();
                c.peer.name = self.names.name_of(c.peer.uid, now_ms);
                let snap = snapshot(&c.peer, &request.want(&c.peer));
                self.made += snap.entries.len();
                match &request {
                    Request::Run { target } => match control::find(&snap, target) {
                        Ok(entry) => {
                            orders.push(RunOrder {
                                ticket: self.next_ticket,
                                entry: EntryId(entry.id),
                                place: entry.place(),
                                peer: c.peer.clone(),
                            });
                            c.state = State::Running(self.next_ticket);
                            self.next_ticket += 1;
                            continue;
                        }
                        Err(answer) => c.reply(&answer),
                    },
                    _ => c.reply(&control::render(&request, &snap, &c.peer)),
                }
                // Most answers fit the socket's buffer: sent now.
                c.flush();
            }
        }
    }
}

/// Tells a connection past a bound `ERROR busy`, as far as its socket takes it at once; it is
/// closed when dropped. What the client sent is read first (what is there now): a socket closed
/// with unread bytes is reset, and the client would not see the answer.
fn turn_away(stream: &mut Stream) {
    let mut pump = Pump::new(control::MAX_REQUEST, usize::MAX);
    let _ = pump.fill(stream, control::MAX_REQUEST, &mut |_| true);
    pump.queue(&control::error_answer(
        "busy: too many connections to the control socket; try again",
    ));
    let _ = pump.flush(stream);
}

/// One step of a connection: read what came (parsing the request when its line is whole),
/// or write what can go. It is marked done when it is answered or its peer is gone.
fn step(c: &mut Connection) {
    match c.state {
        State::Replying => return c.flush(),
        State::Asked(_) | State::Running(_) | State::Done => return,
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
        Err(_) => {
            c.state = State::Done;
            return;
        }
    };
    // A client that closed its side after a request without `\n` is answered too.
    let half_closed = ended && !c.request.is_empty();
    if !whole && !half_closed {
        if ended {
            c.state = State::Done;
        }
        return;
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
        Ok(request) => c.state = State::Asked(request),
        Err(e) => {
            c.reply(&control::error_answer(&e));
            c.flush();
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
        }
    }

    /// Serves whatever is ready now, as the loop would after a poll.
    fn turn(s: &mut ControlServer, now_ms: i64) -> Vec<RunOrder> {
        let mut registry = crate::sys::poll::Registry::new();
        for (token, fd, interest) in s.fds() {
            registry.add(token, fd, interest);
        }
        let ready: Vec<Token> = registry.wait(Some(100)).unwrap().iter().collect();
        s.serve(&ready, now_ms, &empty, &mut Recorded::default())
    }

    /// An `@daily` entry of alice's crontab, as a snapshot shows it.
    fn alices(id: u64, line: u32, command: &[u8]) -> EntryView {
        EntryView {
            id,
            tab: "crontabs/alice".into(),
            line,
            user: b"alice".to_vec(),
            schedule: b"@daily".to_vec(),
            cron_tz: None,
            zone: crate::schedule::Zone::utc(),
            next_s: None,
            last: None,
            running: Vec::new(),
            policy: Default::default(),
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
        client.write_all(b"run 7\n").unwrap();
        let entry = |peer: &Peer, want: &Want<'_>| {
            let mut snap = empty(peer, want);
            snap.entries.push(alices(7, 3, b"date"));
            snap
        };
        let mut registry = crate::sys::poll::Registry::new();
        for (token, fd, interest) in s.fds() {
            registry.add(token, fd, interest);
        }
        let ready: Vec<Token> = registry.wait(Some(100)).unwrap().iter().collect();
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
        let orders = s.serve(&ready, 2_000, &entry, &mut Recorded::default());
        s.ran(&orders[0], None);
        turn(&mut s, 2_100);
        assert!(answer_of(client).starts_with("ERROR the entry is gone"));
    }

    #[test]
    fn a_snapshot_holds_what_the_asker_may_see_and_the_request_wants_in_the_order_given() {
        use crate::daemon::clock::{Clock, FakeClock};
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

    /// Serves what is ready, with `snapshot`; each run asked for is started as pid 99.
    fn turn_with(s: &mut ControlServer, now_ms: i64, snapshot: SnapshotFn<'_>) -> Recorded {
        let mut registry = crate::sys::poll::Registry::new();
        for (token, fd, interest) in s.fds() {
            registry.add(token, fd, interest);
        }
        let ready: Vec<Token> = registry.wait(Some(0)).unwrap().iter().collect();
        let mut fx = Recorded::default();
        for order in s.serve(&ready, now_ms, snapshot, &mut fx) {
            s.ran(&order, Some(Launched::Started(crate::types::Pid(99))));
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
        turn_with(&mut s, 1_000, &empty);
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
        turn_with(&mut s, 1_000, &empty);
        assert_eq!(s.connections.len(), MAX_CONNECTIONS - RESERVED);
        let mut root = UnixStream::connect(&private).unwrap();
        root.write_all(b"status\n").unwrap();
        turn_with(&mut s, 1_100, &empty);
        assert!(answer_of(root).starts_with("OK\n"));
        drop(held);
    }

    #[test]
    fn a_users_connections_past_the_bounds_are_turned_away_at_once_counted_and_logged_each_minute()
    {
        require_root();
        let (mut s, path, _, _dir) = two_sockets();
        let held: Vec<UnixStream> = (0..MAX_PER_USER)
            .map(|_| crate::sys::listen::connect_as(&path, 1000).unwrap())
            .collect();
        turn_with(&mut s, 1_000, &empty);
        let mut fifth = crate::sys::listen::connect_as(&path, 1000).unwrap();
        fifth.write_all(b"status\n").unwrap();
        let fx = turn_with(&mut s, 1_100, &empty);
        assert!(answer_of(fifth).starts_with("ERROR busy"));
        assert!(fx.logged("turned away").is_empty(), "not before the minute");
        // The listener is polled again at once: no pause for others.
        assert!(s.fds().iter().any(|(t, _, _)| *t == Token::Listener));
        let another = crate::sys::listen::connect_as(&path, 1000).unwrap();
        turn_with(&mut s, 1_200, &empty);
        assert!(answer_of(another).starts_with("ERROR busy"));
        drop(held);
        let fx = turn_with(&mut s, 1_100 + TURNED_AWAY_LOG_MS, &empty);
        assert_eq!(
            fx.logged("turned away"),
            [
                "(CRON) ERROR (control socket: 2 connections turned away (busy) in the last minute (uid 1000: 2))"
            ]
        );
        let fx = turn_with(&mut s, 2_100 + 2 * TURNED_AWAY_LOG_MS, &empty);
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
            turn_with(&mut s, 1_000 + i, &empty);
        }
        assert_eq!(s.accepts.used - before, SHARED_ACCEPTS_PER_S);
        assert!(
            s.fds().iter().all(|(t, _, _)| *t != Token::Listener),
            "not polled for the rest of the second"
        );
        assert!(s.fds().iter().any(|(t, _, _)| *t == Token::Private));
        assert_eq!(s.timeout_ms(1_040), Some(960));
        turn_with(&mut s, 2_000, &empty);
        assert!(
            s.fds().iter().any(|(t, _, _)| *t == Token::Listener),
            "polled again in the next second"
        );
        turn_with(&mut s, 2_001, &empty);
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
        }

        #[derive(Debug, Clone, Copy)]
        enum Piece {
            Status,
            List,
            /// A list too large for the socket's buffer.
            Big,
            Run,
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
                    Piece::Run => b"run 7\n".to_vec(),
                    Piece::RunMissing => b"run 8\n".to_vec(),
                    Piece::Half => b"sta".to_vec(),
                    Piece::Rest => b"tus\n".to_vec(),
                    Piece::Junk => b"\xff\x00 nonsense\n".to_vec(),
                    Piece::TooLong => vec![b'x'; control::MAX_REQUEST + 1],
                }
            }
        }

        fn act() -> impl Strategy<Value = Act> {
            let piece = prop_oneof![
                Just(Piece::Status),
                Just(Piece::List),
                Just(Piece::Big),
                Just(Piece::Run),
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
            ]
        }

        /// What the harness's entries are: entry 7 of alice's, and for a `big` list enough of
        /// them to fill the socket's buffer several times.
        fn snapshot_of(peer: &Peer, want: &Want<'_>) -> Snapshot {
            let mut snap = empty(peer, want);
            let view = |id: u64| alices(id, id as u32, &[b'c'; 150]);
            let n = match want.pattern {
                Some("big") => 4_000,
                _ if want.wants(7, "crontabs/alice", 7, b"alice") => 1,
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

            /// The one answer the server may give: to the request as it was sent.
            fn expected(&self, half_closed: bool) -> Option<Vec<u8>> {
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
                    Err(e) => return Some(control::error_answer(&e)),
                };
                let mut peer = self.peer.clone();
                peer.name = passwd_name(peer.uid);
                let snap = snapshot_of(&peer, &request.want(&peer));
                Some(match &request {
                    Request::Run { target } => match control::find(&snap, target) {
                        Ok(entry) => control::ran_answer(&entry.place(), &Ran::Started(99)),
                        Err(answer) => answer,
                    },
                    _ => control::render(&request, &snap, &peer),
                })
            }
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
                        turn_with(&mut s, now_ms, &snapshot_of);
                    }
                }
            }
            // The end: every client reads at every turn until the server has closed all.
            for _ in 0..200 {
                now_ms += 50;
                turn_with(&mut s, now_ms, &snapshot_of);
                for c in &mut clients {
                    c.read(now_ms);
                }
            }
            prop_assert!(s.connections.is_empty(), "every connection ends");
            let busy = control::error_answer(
                "busy: too many connections to the control socket; try again",
            );
            for (c, &half) in clients.iter().zip(&half_closed) {
                if c.left {
                    continue;
                }
                prop_assert!(c.ended_ms.is_some(), "closed by the server: {c:?}");
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
                let whole = c.received == expected;
                // Only a reader too slow for the deadline gets part of its answer.
                let cut = expected.starts_with(&c.received)
                    && c.ended_ms.unwrap() - c.connected_ms >= DEADLINE_MS;
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
}
