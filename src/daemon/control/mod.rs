//! The control socket, one of the daemon's owners (`--control-socket`, default
//! `/run/crond.sock`: `cronctl list`, `show`, `run`, `pause`, `resume`, `status`), served from
//! the reactor's poll as the metrics endpoint is: non-blocking connections, a table with bounds,
//! deadlines. It keeps its listeners and connections and nothing of the daemon: it answers from
//! a [`Snapshot`] made (by [`snapshot`], from the scheduler's [`EntryState`]s in the sources'
//! order, which the reactor hands it) only for what a request wants, and returns the runs asked
//! for ([`RunOrder`]); the reactor has the scheduler start each (`Scheduler::run_now`: the RUN
//! line, then the one launch path) and tells it what became of it ([`ControlServer::ran`]).
//! Pauses and resumes go the same way ([`PauseOrder`], taken by [`ControlServer::take_pauses`],
//! carried out by `Scheduler::pause`, answered by [`ControlServer::paused`]). What a request
//! means, who may see what and the answers' text are `crate::control`'s (pure).
//!
//! A run whose job child was forked is parked: its connection waits, without holding the loop,
//! for what the child says on the pipe the reactor handed it (`control::report`: the job
//! started as its user, or why not; with `--wait`, how it ended), polled here beside the
//! connection. It is answered once: by the child's word, by the end of the pipe without it,
//! after [`REPORT_DEADLINE_MS`] without word of the start, or when the daemon stops
//! ([`ControlServer::stopping`]); a client that leaves meanwhile is let go. Parked connections
//! keep their slots (a user's count against [`MAX_PER_USER`]), and at most [`MAX_PARKED`] are
//! parked at once: a run asked for past it is answered `ERROR busy`.
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
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;

use super::Error;
use super::effects::Effects;
use super::handoff::Launched;
use super::scheduler::EntryState;
use crate::cluster::entry_id::{EntryKey, Identity, LOCAL_ID_DIGITS, LocalId, LocalIds};
use crate::control::{
    self, Detail, EntryView, Peer, Ran, Request, Snapshot, StatusView, Target, Want, private_path,
};
use crate::control::{asked, report};
use crate::history::Query;
use crate::job::report::Said;
use crate::log::messages;
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

/// From the accept to the last byte of the answer (for a parked run: from its answer).
pub(super) const DEADLINE_MS: i64 = 5_000;

/// How long a parked run waits for its job child to say whether the job started (`cronctl`
/// waits longer).
pub(super) const REPORT_DEADLINE_MS: i64 = 20_000;

/// Runs parked at once, waiting for their job children: half the table, so that `--wait`s of
/// long jobs leave room for everything else.
pub(super) const MAX_PARKED: usize = MAX_CONNECTIONS / 2;

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
    /// The report pipe of a parked connection, by the connection's position.
    Report(usize),
}

/// A pause or a resume asked for through the socket, for the loop to hand the scheduler.
#[derive(Debug, Clone)]
pub(super) struct PauseOrder {
    /// What [`ControlServer::paused`] is told back.
    pub(super) ticket: u64,
    pub(super) what: Pausing,
    /// `pause` (else `resume`).
    pub(super) pause: bool,
    pub(super) peer: Peer,
}

/// What a pause or a resume names.
#[derive(Debug, Clone)]
pub(super) enum Pausing {
    /// A loaded entry, as the asker named it (the answer shows it).
    Loaded {
        entry: EntryId,
        view: Box<EntryView>,
    },
    /// Root's resume of a whole id no loaded entry has (one removed from its crontab while it
    /// was paused).
    Gone(LocalId),
}

/// The order for a `pause` (`pause`) or `resume` of `target` by `peer`, from `snap`, or the
/// answer that refuses it.
fn pause_order(
    snap: &Snapshot,
    target: &Target,
    pause: bool,
    peer: &Peer,
    ticket: u64,
) -> Result<PauseOrder, Vec<u8>> {
    let named = snap.entries.iter().any(|e| e.is(target));
    let what = match (control::find(snap, target), target) {
        (Ok(entry), _) => Pausing::Loaded {
            entry: EntryId(entry.slot),
            view: Box::new(entry.clone()),
        },
        (Err(_), Target::Id(digits))
            if !pause && !named && peer.is_root() && digits.len() == LOCAL_ID_DIGITS =>
        {
            match u64::from_str_radix(digits, 16) {
                Ok(id) => Pausing::Gone(LocalId(id)),
                Err(_) => return Err(control::error_answer("not an id")),
            }
        }
        (Err(answer), _) => return Err(answer),
    };
    Ok(PauseOrder {
        ticket,
        what,
        pause,
        peer: peer.clone(),
    })
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
    /// `--wait`: the answer waits for the job's end.
    pub(super) wait: bool,
}

#[derive(Debug)]
enum State {
    /// The request line is coming.
    Reading,
    /// Read, waiting for the per-second budget of users' requests.
    Asked(Request),
    /// A run was handed to the loop under this ticket.
    Running(u64),
    /// A pause or a resume was handed to the loop under this ticket.
    Pausing(u64),
    /// Its job child was forked: waiting for what it says.
    Parked(Parked),
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
    /// When it was parked, or answered after it was: its deadlines count from then.
    parked_ms: Option<i64>,
}

/// A run whose job child was forked, waiting for what the child says on its report pipe.
#[derive(Debug)]
struct Parked {
    /// `FILE:LINE`.
    place: String,
    wait: bool,
    /// The pipe's read end (non-blocking).
    report: std::fs::File,
    /// What came of a line not whole yet.
    heard: Vec<u8>,
    /// The child said the job started (a `--wait` waits on for the end).
    started: bool,
    /// The client shut its writing side: its socket is not watched for its leaving.
    half_closed: bool,
}

impl Connection {
    fn deadline_ms(&self) -> i64 {
        let since = self.parked_ms.unwrap_or(self.accepted_ms);
        match &self.state {
            State::Reading => since + REQUEST_DEADLINE_MS,
            // `--wait`: as long as the job runs.
            State::Parked(p) if p.started => i64::MAX,
            State::Parked(_) => since + REPORT_DEADLINE_MS,
            _ => since + DEADLINE_MS,
        }
    }

    /// Whether it holds a run: handed to the loop, or parked.
    fn holds_run(&self) -> bool {
        matches!(self.state, State::Running(_) | State::Parked(_))
    }

    /// Answers a parked run at `now_ms` (the answer's deadline counts from then).
    fn reply_parked(&mut self, answer: &[u8], now_ms: i64) {
        self.parked_ms = Some(now_ms);
        self.reply(answer);
        self.flush();
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
            fx.error(messages::control_turned_away_line(&counts));
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
    /// The sockets' paths and which files they are, removed at a clean stop.
    bound: Vec<(PathBuf, (u64, u64))>,
    /// `history` and `logs` questions, each with its client's connection, for the history
    /// writer ([`ControlServer::take_asks`]).
    asks: Vec<(OwnedFd, Query)>,
    /// The pauses and resumes of this turn, for the scheduler ([`ControlServer::take_pauses`]).
    pauses: Vec<PauseOrder>,
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
            bound: Vec::new(),
            asks: Vec::new(),
            pauses: Vec::new(),
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
                fx.error(messages::no_control_socket_line(&path, &e));
                return Ok(None);
            }
        };
        let private_path = private_path(&path);
        let private = match crate::sys::listen::listen_unix(&private_path, None) {
            Ok(listener) => Some(listener),
            Err(e) => {
                fx.error(messages::no_control_socket_line(&private_path, &e));
                None
            }
        };
        fx.info(messages::control_socket_line(&path));
        let has_private = private.is_some();
        let mut server = ControlServer::new(shared, private, started_ms);
        let paths = [Some(path), has_private.then_some(private_path)];
        for path in paths.into_iter().flatten() {
            if let Ok(identity) = crate::sys::listen::unix_identity(&path) {
                server.bound.push((path, identity));
            }
        }
        Ok(Some(server))
    }

    /// At a clean stop: the sockets go, when they are still the ones this daemon made.
    pub(super) fn remove_sockets(&self) {
        for (path, identity) in &self.bound {
            let _ = crate::sys::listen::remove_unix(path, *identity);
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

    /// The descriptors to poll: the private listener while a slot is free, the shared one
    /// while a slot is free and its accepts of this second are not spent, then each connection
    /// (readable while its request comes, writable while its answer goes; a connection waiting
    /// for the loop or the budget is not polled).
    pub(super) fn fds(&self) -> Vec<(Token, BorrowedFd<'_>, Interest)> {
        let mut fds = Vec::with_capacity(2 * self.connections.len() + 2);
        if self.connections.len() < MAX_CONNECTIONS {
            if let Some(private) = &self.private {
                fds.push((Token::Private, private.fd(), Interest::Read));
            }
            if self.accepts.spent_until_ms().is_none() {
                fds.push((Token::Listener, self.shared.fd(), Interest::Read));
            }
        }
        for (i, c) in self.connections.iter().enumerate() {
            match &c.state {
                State::Reading => fds.push((Token::Connection(i), c.stream.fd(), Interest::Read)),
                State::Replying => fds.push((Token::Connection(i), c.stream.fd(), Interest::Write)),
                // The pipe, and the client's side: one that leaves is let go.
                State::Parked(p) => {
                    fds.push((Token::Report(i), p.report.as_fd(), Interest::Read));
                    if !p.half_closed {
                        fds.push((Token::Connection(i), c.stream.fd(), Interest::Read));
                    }
                }
                State::Asked(_) | State::Running(_) | State::Pausing(_) | State::Done => {}
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
            // A `--wait` whose job runs has none.
            .filter(|&at| at != i64::MAX)
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
            if ready.contains(&Token::Report(i)) {
                hear(c, now_ms);
            }
            if ready.contains(&Token::Connection(i)) {
                step(c);
            }
            if let State::Parked(p) = &c.state
                && now_ms >= c.deadline_ms()
            {
                let answer = report::no_word_answer(&p.place, REPORT_DEADLINE_MS / 1000);
                c.reply_parked(&answer, now_ms);
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

    /// What became of the run `order` asked for (`None`: its entry is gone since), at
    /// `now_ms`; `report`: the read end of the pipe its job child was handed. A forked child's
    /// connection is parked until the child says what became of the job; any other answer
    /// goes to its connection now.
    pub(super) fn ran(
        &mut self,
        order: &RunOrder,
        launched: Option<Launched>,
        report: Option<OwnedFd>,
        now_ms: i64,
    ) {
        let Some(c) = self
            .connections
            .iter_mut()
            .find(|c| matches!(c.state, State::Running(t) if t == order.ticket))
        else {
            return;
        };
        let answer = match (launched, report) {
            (Some(Launched::Started(_)), Some(report)) => {
                c.state = State::Parked(Parked {
                    place: order.place.clone(),
                    wait: order.wait,
                    report: std::fs::File::from(report),
                    heard: Vec::new(),
                    started: false,
                    half_closed: false,
                });
                c.parked_ms = Some(now_ms);
                return;
            }
            (Some(launched), _) => control::ran_answer(&order.place, &ran(launched)),
            (None, _) => control::error_answer("the entry is gone (its crontab changed)"),
        };
        {
            c.reply(&answer);
            // Most answers fit the socket's buffer; a connection done here is dropped at the
            // end of the next turn.
            c.flush();
        }
    }

    /// The pauses and resumes asked for this turn: the loop hands each to the scheduler and
    /// calls [`ControlServer::paused`].
    pub(super) fn take_pauses(&mut self) -> Vec<PauseOrder> {
        std::mem::take(&mut self.pauses)
    }

    /// What became of the pause or resume `order` asked for: `None`, its entry is gone since;
    /// `Ok(changed)`, done (or so already); `Err`, why not.
    pub(super) fn paused(&mut self, order: &PauseOrder, done: Option<Result<bool, String>>) {
        let Some(c) = self
            .connections
            .iter_mut()
            .find(|c| matches!(c.state, State::Pausing(t) if t == order.ticket))
        else {
            return;
        };
        let answer = match (done, &order.what) {
            (Some(Ok(changed)), Pausing::Loaded { view, .. }) => {
                control::pause_answer(view, order.pause, changed)
            }
            (Some(Ok(true)), Pausing::Gone(id)) => control::gone_resumed_answer(*id),
            (Some(Ok(false)), Pausing::Gone(id)) => control::error_answer(&format!(
                "no entry id {id} that you may see (see cronctl list), and no such id paused"
            )),
            (Some(Err(why)), _) => control::error_answer(&why),
            (None, _) => control::error_answer("the entry is gone (its crontab changed)"),
        };
        c.reply(&answer);
        c.flush();
    }

    /// The `history` and `logs` questions of this turn, each with its client's connection:
    /// the loop passes them to the history writer, which answers them.
    pub(super) fn take_asks(&mut self) -> Vec<(OwnedFd, Query)> {
        std::mem::take(&mut self.asks)
    }

    /// The daemon stops: each run still waited for is told so, as far as its socket takes the
    /// answer at once (the connections close with the daemon).
    pub(super) fn stopping(&mut self, now_ms: i64) {
        for c in &mut self.connections {
            if let State::Parked(p) = &c.state {
                let answer = report::stopping_answer(&p.place, p.started);
                c.reply_parked(&answer, now_ms);
            }
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
                parked_ms: None,
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
        let mut parked = self.connections.iter().filter(|c| c.holds_run()).count();
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
                    Request::Run { .. } if parked >= MAX_PARKED => c.reply(&control::error_answer(
                        &format!("busy: {MAX_PARKED} runs already wait for their jobs; try again"),
                    )),
                    Request::Run { target, wait } => match control::find(&snap, target) {
                        Ok(entry) => {
                            parked += 1;
                            orders.push(RunOrder {
                                ticket: self.next_ticket,
                                entry: EntryId(entry.slot),
                                place: entry.place(),
                                peer: c.peer.clone(),
                                wait: *wait,
                            });
                            c.state = State::Running(self.next_ticket);
                            self.next_ticket += 1;
                            continue;
                        }
                        Err(answer) => c.reply(&answer),
                    },
                    Request::Pause { target, pause } => {
                        match pause_order(&snap, target, *pause, &c.peer, self.next_ticket) {
                            Ok(order) => {
                                self.pauses.push(order);
                                c.state = State::Pausing(self.next_ticket);
                                self.next_ticket += 1;
                                continue;
                            }
                            Err(answer) => c.reply(&answer),
                        }
                    }
                    Request::History(_) | Request::Logs(_) => {
                        let asked = match &request {
                            Request::History(h) => Ok(h),
                            Request::Logs(l) => Err(l),
                            _ => unreachable!("matched above"),
                        };
                        let zone = &snap.status.zone;
                        match asked::question(asked, &snap, &c.peer, now_ms, zone) {
                            Ok(query) => match c.stream.handed_over() {
                                Ok(fd) => {
                                    self.asks.push((fd, query));
                                    c.state = State::Done;
                                    continue;
                                }
                                Err(e) => c.reply(&control::error_answer(&e.to_string())),
                            },
                            Err(answer) => c.reply(&answer),
                        }
                    }
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
/// or write what can go; of a parked one, whether its client is still there. It is marked
/// done when it is answered or its peer is gone.
fn step(c: &mut Connection) {
    match c.state {
        State::Replying => return c.flush(),
        State::Parked(_) => return watch_client(c),
        State::Asked(_) | State::Running(_) | State::Pausing(_) | State::Done => return,
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

/// A parked connection's socket is readable: its client sent more after the request (read
/// and dropped), shut its writing side (it still reads the answer: the socket is no longer
/// watched), or left. A client that left is let go, and its job child's pipe closed (what the
/// child says then is lost, and the job goes on).
fn watch_client(c: &mut Connection) {
    let mut pump = Pump::new(READ_CHUNK, 0);
    let filled = pump.fill(&mut c.stream, control::MAX_REQUEST, &mut |_| true);
    let State::Parked(p) = &mut c.state else {
        return;
    };
    match filled {
        Ok(Filled::Open) => {}
        Ok(Filled::End) if !crate::sys::poll::hung_up(c.stream.fd()) => p.half_closed = true,
        Ok(Filled::End) | Err(_) => c.state = State::Done,
    }
}

/// A parked connection's pipe is readable: each whole line its job child wrote is heard, and
/// the first that settles the run answers it; the end of the pipe before that answers that the
/// child said nothing more.
fn hear(c: &mut Connection, now_ms: i64) {
    let State::Parked(p) = &mut c.state else {
        return;
    };
    let heard = &mut p.heard;
    let filled = c
        .pump
        .fill(&mut p.report, crate::job::report::MAX_SAID, &mut |chunk| {
            heard.extend_from_slice(chunk);
            true
        });
    let mut answer = None;
    while answer.is_none()
        && let Some(end) = p.heard.iter().position(|&b| b == b'\n')
    {
        let line: Vec<u8> = p.heard.drain(..=end).collect();
        let Some(said) = Said::parse(&line[..end]) else {
            continue;
        };
        p.started |= matches!(said, Said::Started { .. });
        answer = report::said_answer(&p.place, &said, p.wait);
    }
    if p.heard.len() > crate::job::report::MAX_SAID {
        p.heard.clear();
    }
    let ended = !matches!(filled, Ok(Filled::Open));
    if answer.is_none() && ended {
        answer = Some(report::silent_answer(&p.place, p.started));
    }
    if let Some(answer) = answer {
        c.reply_parked(&answer, now_ms);
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

/// Which entries are paused, as the reactor asks the owners that know: on this host (the
/// scheduler's, by id), and in a cluster (the cluster link's, by cluster, user and key).
#[derive(Clone, Copy)]
pub(super) struct PausedFn<'a> {
    pub(super) here: &'a dyn Fn(LocalId) -> bool,
    pub(super) cluster: &'a dyn Fn(&str, &[u8], EntryKey) -> bool,
}

/// What `show` adds for the entry of `state`: its environment, its next runs after the next
/// (read in its `CRON_TZ`, else in `host_zone`) and whether its cluster said it is paused.
fn detail(
    state: &EntryState<'_>,
    host_zone: &Zone,
    cluster: &Option<(String, EntryKey)>,
    paused: &dyn Fn(&str, &[u8], EntryKey) -> bool,
) -> Detail {
    let job = state.job;
    let zone = state.cron_tz.unwrap_or(host_zone);
    let mut later = Vec::new();
    let mut at = state.next_ms().map(|ms| ms.div_euclid(1000));
    while let Some(s) = at
        && later.len() + 1 < control::NEXT_RUNS
    {
        at = match state.every_s {
            Some(every) => Some(s + i64::from(every)),
            None => jiff::Timestamp::from_second(s)
                .ok()
                .and_then(|t| state.schedule.next_after(t, zone))
                .map(|t| t.as_second()),
        };
        later.extend(at);
    }
    Detail {
        system: job.owner.uid.is_none(),
        env: job
            .env()
            .iter()
            .map(|(name, value)| (name.to_vec(), value.to_vec()))
            .collect(),
        later,
        paused: cluster
            .as_ref()
            .is_some_and(|(name, key)| paused(name, job.user(), *key)),
    }
}

/// One entry as a request sees it: `id` its id on this host, `key` in a cluster; read in
/// `host_zone` unless it has its own.
fn view(
    state: &EntryState<'_>,
    id: LocalId,
    key: EntryKey,
    want: &Want<'_>,
    host_zone: &Zone,
    paused: PausedFn<'_>,
) -> EntryView {
    let job = state.job;
    let policy = job.env().policy();
    // As the scheduler tells a run's cluster: never an `@every` entry's.
    let cluster = job
        .env()
        .get(b"CRON_CLUSTER")
        .filter(|_| policy.clustered && state.every_s.is_none())
        .map(|name| (String::from_utf8_lossy(name).into_owned(), key));
    let detail = want
        .detail
        .then(|| detail(state, host_zone, &cluster, paused.cluster));
    let mut running: Vec<i32> = state.pids().iter().map(|p| p.0).collect();
    running.sort_unstable();
    EntryView {
        id,
        slot: state.id.0,
        tab: job.owner.tab.clone(),
        line: job.line(),
        user: job.user().to_vec(),
        schedule: job.schedule_text().to_vec(),
        cron_tz: state.cron_tz.map(|z| z.name().to_string()),
        zone: state.cron_tz.unwrap_or(host_zone).clone(),
        next_s: state.next_ms().map(|ms| ms.div_euclid(1000)),
        // The last run for a list, the few kept for a look at the one entry.
        runs: match want.target {
            Some(_) => state.last.to_vec(),
            None => state.last.last().cloned().into_iter().collect(),
        },
        detail,
        running,
        policy,
        cluster,
        paused: (paused.here)(id),
        command: job.command().to_vec(),
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
    paused: PausedFn<'_>,
) -> Snapshot {
    let (mut made, mut omitted, mut seen, mut seen_running) = (Vec::new(), 0, 0, 0);
    let mut ids = LocalIds::default();
    for state in entries {
        let job = state.job;
        if !control::may_see(peer, job.user(), job.owner.uid.map(|u| u.0)) {
            continue;
        }
        seen += 1;
        seen_running += state.running as usize;
        if !want.entries {
            continue;
        }
        // Every entry the asker sees is counted among its file's identical ones, wanted or
        // not: identical entries have one user, so they are all seen or all hidden.
        let identity = Identity {
            schedule: state.schedule,
            zone: state.cron_tz.map(Zone::name),
            user: job.user(),
            command: job.command(),
        };
        let name = job.env().get(b"CRON_ID");
        let id = ids.next(&identity, state.every_s, &job.owner.tab, name);
        if !want.wants(id, &job.owner.tab, job.line(), job.user()) {
            continue;
        }
        if made.len() >= want.max_entries {
            omitted += 1;
            continue;
        }
        made.push(view(&state, id, identity.key(), want, &status.zone, paused));
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
        not_loaded: Vec::new(),
    }
}

#[cfg(test)]
mod tests;
