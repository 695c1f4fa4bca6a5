//! The daemon's side of cluster mode (docs/cluster.md): with `--cluster-db`, a run of an entry
//! under `CRON_CLUSTER=NAME` is not started when it comes up; it is parked
//! ([`Parked`](crate::cluster::parked::Parked)) and a `RUN` request goes to the helper process
//! (`cronctl helper`), which claims the run in PostgreSQL and answers `GO` or `NO`. The daemon
//! never waits: the answer comes through the poll loop like any other event, and a run without
//! an answer in 2 minutes (a stuck helper) is not run. The helper is a child of the daemon,
//! started before the crontabs are loaded and again 5 s after it is lost; the daemon holds no
//! database code and starts no thread.

mod quiet;

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::rc::Rc;

use super::clock;
use super::effects::{Effects, NotRun};
use super::handoff::{Claim, ClusterEntry, Granted, Launched, Run};
use crate::cluster::entry_id::EntryKey;
use crate::cluster::parked::{ANSWER_WAIT_MS, Answered, MAX_PARKED, MAX_PARKED_PER_USER, Parked};
use crate::cluster::wire::{self, Denied, FromHelper, Loaded, MAX_LISTED, RunKey, ToHelper};
use crate::history::Reason;
use crate::log::Level;
use crate::log::messages;
use crate::schedule::Zone;
use crate::sys::poll::Interest;
use crate::sys::process::Exit;
use crate::sys::pump::{Filled, FlushError, Pump};
use crate::sys::user::Uid;
use crate::timeline::{EntryId, UtcMinute};

/// How long the daemon waits before it starts a lost helper again.
const RESTART_AFTER_MS: i64 = 5_000;

/// What the daemon writes to a helper that does not read is dropped with the helper beyond this.
const MAX_UNSENT: usize = 1 << 20;

/// How much of the helper's answers is read at once.
const READ_CHUNK: usize = 16 * 1024;

/// The most bytes of `ENTRY` lines in one list: 10,000 entries ([`MAX_LISTED`]) of up to 400
/// bytes; at least 2,700 whose owner, place and command are at their bounds.
const MAX_LIST_BYTES: usize = 4 << 20;

/// The most of a list that waits unsent at once: it is sent a piece at a time as the helper
/// reads, so that a list never costs the helper its socket ([`MAX_UNSENT`]).
const LIST_PIECE: usize = MAX_UNSENT / 2;

/// How long a stopping daemon waits for the helper's socket to take its last lines.
const STOP_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// The helper process and the socket to it.
#[derive(Debug)]
struct Helper {
    pid: u32,
    socket: UnixStream,
    read: wire::LineReader,
    pump: Pump,
}

/// Cluster mode's state in the daemon, one of its owners: the helper, the parked runs and
/// the keys of the runs started here. It never sees the scheduler: the reactor hands it each
/// run that comes up with the run's cluster identity, and hands what it grants back.
#[derive(Debug)]
pub(super) struct ClusterLink {
    program: PathBuf,
    args: Vec<OsString>,
    helper: Option<Helper>,
    /// When a lost helper is started again.
    restart_at_ms: Option<i64>,
    parked: Parked<Run>,
    /// Cluster runs started here, by job child pid, for their `END`.
    started: HashMap<i32, RunKey>,
    /// Runs the helper said `GO` to whose fork failed: back in the queue, not claimed again.
    granted: HashMap<(EntryId, UtcMinute), RunKey>,
    /// Runs the helper took over without a request (`TAKE`), with their attempt, until the
    /// reactor takes them.
    taken: Vec<(RunKey, u32)>,
    /// Why nothing proves the database is what answers, until it is logged (once, when the
    /// helper first starts).
    unproven: Option<String>,
    /// The runs not started said a minute at a time, and the entries known to be paused.
    quiet: quiet::Quiet,
    /// The cluster entries loaded here, as the `ENTRY` and `LOADED` lines that list them to
    /// the helper (empty before the first list).
    listed: Rc<str>,
    /// Files were loaded since the entries were last listed.
    list_stale: bool,
    /// The helper does not have the list yet (it changed, or the helper started since).
    list_unsent: bool,
    /// A list being sent, and how much of it is queued: a newer list waits until its last
    /// line is queued, so that the helper never takes lines of two lists for one.
    sending: Option<(Rc<str>, usize)>,
}

impl ClusterLink {
    /// The link for `--cluster-db CONNINFO`; the helper starts with [`ClusterLink::start_helper`].
    pub(super) fn new(
        program: PathBuf,
        conninfo: &str,
        host: &str,
        keep_days: Option<u32>,
        keep_runs: Option<u32>,
        lease_s: Option<u32>,
    ) -> ClusterLink {
        let mut args: Vec<OsString> = vec![
            "helper".into(),
            "--db".into(),
            conninfo.into(),
            "--host".into(),
            host.into(),
        ];
        if let Some(days) = keep_days {
            args.extend(["--keep-days".into(), days.to_string().into()]);
        }
        if let Some(runs) = keep_runs {
            args.extend(["--keep-runs".into(), runs.to_string().into()]);
        }
        if let Some(seconds) = lease_s {
            args.extend(["--lease".into(), seconds.to_string().into()]);
        }
        // The daemon checked the setting at start; the default user does not matter here.
        let unproven = crate::cluster::conninfo::parse(conninfo, "root")
            .ok()
            .and_then(|info| info.unauthenticated_server());
        ClusterLink {
            program,
            args,
            helper: None,
            restart_at_ms: Some(0),
            parked: Parked::default(),
            started: HashMap::new(),
            granted: HashMap::new(),
            taken: Vec::new(),
            unproven,
            quiet: quiet::Quiet::default(),
            listed: Rc::from(""),
            list_stale: true,
            list_unsent: false,
            sending: None,
        }
    }

    /// The descriptors to poll: the socket (readable; writable too while something waits to
    /// be sent).
    pub(super) fn fds(&self) -> Vec<(BorrowedFd<'_>, Interest)> {
        match &self.helper {
            None => Vec::new(),
            Some(h) if h.pump.unsent() == 0 => vec![(h.socket.as_fd(), Interest::Read)],
            Some(h) => vec![
                (h.socket.as_fd(), Interest::Read),
                (h.socket.as_fd(), Interest::Write),
            ],
        }
    }

    /// When the loop must wake for the link: an answer's deadline or the helper's restart.
    pub(super) fn next_deadline_ms(&self) -> Option<i64> {
        [
            self.parked.next_deadline_ms(),
            self.restart_at_ms,
            self.quiet.due_ms(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Whether `pid` is the helper's.
    pub(super) fn is_helper(&self, pid: i32) -> bool {
        self.helper.as_ref().is_some_and(|h| h.pid as i32 == pid)
    }

    fn send(&mut self, message: &ToHelper) -> Result<(), String> {
        let Some(helper) = self.helper.as_mut() else {
            return Err("the cluster helper is not running".into());
        };
        helper.pump.queue(message.encode().as_bytes());
        flush(helper)
    }
}

/// Reads the helper's lines (its socket blocking, with a timeout) until `STOPPED`: its `LOG`s
/// are logged, any other answer is of no use to a daemon that starts nothing more.
fn await_stopped(helper: &mut Helper, fx: &mut dyn Effects) {
    let mut chunk = [0u8; 4096];
    loop {
        let n = match std::io::Read::read(&mut helper.socket, &mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        for line in helper.read.push(&chunk[..n]) {
            match line.and_then(|line| FromHelper::decode(&line)) {
                Ok(FromHelper::Stopped) => return,
                Ok(FromHelper::Log { error, text }) => {
                    let level = if error { Level::Error } else { Level::Info };
                    fx.log(level, messages::helper_said_line(error, &text));
                }
                Ok(_) | Err(_) => {}
            }
        }
    }
}

/// Writes what the socket takes now.
fn flush(helper: &mut Helper) -> Result<(), String> {
    match helper.pump.flush(&mut helper.socket) {
        Ok(_) => Ok(()),
        Err(FlushError::Closed) => Err("the cluster helper closed its socket".into()),
        Err(FlushError::Backlog(n)) => Err(format!("the cluster helper has not read {n} bytes")),
        Err(FlushError::Io(e)) => Err(format!("can't write to the cluster helper: {e}")),
    }
}

/// The helper program by default: `cronctl` beside the running crond, else /usr/sbin/cronctl.
pub(super) fn default_helper() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("cronctl")))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("/usr/sbin/cronctl"))
}

impl ClusterLink {
    /// Starts the helper if it is time to (at start-up, and [`RESTART_AFTER_MS`] after a loss).
    pub(super) fn start_helper(&mut self, now_ms: i64, fx: &mut dyn Effects) {
        if let Some(why) = self.unproven.take() {
            fx.log(Level::Warning, messages::cluster_db_unproven_line(&why));
        }
        if self.helper.is_some() || self.restart_at_ms.is_none_or(|at| at > now_ms) {
            return;
        }
        self.restart_at_ms = None;
        match fx.spawn_helper(&self.program, &self.args) {
            Ok((pid, socket)) => {
                fx.info(messages::helper_started_line(pid));
                self.list_unsent = true;
                self.sending = None;
                self.helper = Some(Helper {
                    pid,
                    socket,
                    read: wire::LineReader::default(),
                    pump: Pump::new(READ_CHUNK, MAX_UNSENT),
                });
            }
            Err(e) => {
                self.restart_at_ms = Some(now_ms + RESTART_AFTER_MS);
                fx.error(messages::helper_unstarted_line(&self.program, &e));
            }
        }
    }

    /// The helper is gone (`why`): every run waiting for its answer is not run, and it is
    /// started again in [`RESTART_AFTER_MS`].
    fn helper_lost(&mut self, why: &str, now_ms: i64, zone: &Zone, fx: &mut dyn Effects) {
        if let Some(helper) = self.helper.take()
            && helper.pid != 0
        {
            fx.kill(helper.pid);
        }
        self.restart_at_ms = Some(now_ms + RESTART_AFTER_MS);
        let abandoned = self.parked.abandon();
        fx.error(messages::helper_lost_line(why));
        for (run, _) in abandoned {
            self.not_run(&run, "the cluster helper was lost".into(), now_ms, zone, fx);
        }
    }

    /// A run that comes up, with its cluster identity (`entry`, from the scheduler): a local
    /// run goes back to be started as any other; a cluster run is parked for the helper's
    /// answer (or refused and logged), or, granted before, is to be started again.
    pub(super) fn claim(
        &mut self,
        run: Run,
        entry: ClusterEntry,
        now_ms: i64,
        zone: &Zone,
        fx: &mut dyn Effects,
    ) -> Claim {
        let (Some(entry_key), Some(id)) = (entry, run.job.entry) else {
            return Claim::Local(run);
        };
        if let Some(key) = self.granted.remove(&(id, run.due)) {
            return Claim::Granted(Granted { run, key });
        }
        let job = &run.job.job;
        let key = RunKey {
            cluster: String::from_utf8_lossy(job.env().get(b"CRON_CLUSTER").unwrap_or_default())
                .into_owned(),
            owner: job.user().to_vec(),
            entry: entry_key,
            minute: run.due.start_second(),
        };
        // A user's own crontab draws on a share of its own; root's and system files' don't.
        let share = job
            .owner
            .uid
            .filter(|uid| *uid != Uid::ROOT)
            .map(|uid| uid.0);
        let seq = match self.parked.park(run, key.clone(), share, now_ms) {
            Ok(seq) => seq,
            Err(run) => {
                let why = match share {
                    Some(_) if self.parked.len() < MAX_PARKED => format!(
                        "not run: {MAX_PARKED_PER_USER} runs of this user's crontab wait for \
                         the cluster database already"
                    ),
                    _ => {
                        format!("not run: {MAX_PARKED} runs wait for the cluster database already")
                    }
                };
                log_run(&run, &why, zone, fx);
                return Claim::Taken;
            }
        };
        if let Err(e) = self.send(&ToHelper::Run { seq, key }) {
            self.helper_lost(&e, now_ms, zone, fx);
        }
        Claim::Taken
    }

    /// What became of a granted run the scheduler was given: started (its `END` goes back when
    /// it is reaped), skipped or left waiting: the helper is told (`FORKED`, queued: the
    /// caller flushes once for all the runs of its turn, [`ClusterLink::flush_queued`]), so
    /// that it marks more runs started; its fork failed: it waits in the queue, marked so that
    /// it is not claimed again, and is told when it forks.
    pub(super) fn launched(&mut self, key: RunKey, launched: Launched) {
        match launched {
            Launched::Started(pid) => {
                self.started.insert(pid.0, key.clone());
            }
            Launched::Skipped | Launched::Waiting => {}
            Launched::Failed { entry, due } => {
                if let Some(entry) = entry {
                    self.granted.insert((entry, due), key);
                }
                return;
            }
        }
        if let Some(helper) = self.helper.as_mut() {
            helper
                .pump
                .queue(ToHelper::Forked { key }.encode().as_bytes());
        }
    }

    /// A granted run whose fork kept failing was given up (its entry's next run came): its
    /// claim is acted on, as for a run skipped (`FORKED`, queued: the caller flushes), and no
    /// longer kept for a start again.
    pub(super) fn given_up(&mut self, entry: EntryId, due: UtcMinute) {
        let Some(key) = self.granted.remove(&(entry, due)) else {
            return;
        };
        if let Some(helper) = self.helper.as_mut() {
            helper
                .pump
                .queue(ToHelper::Forked { key }.encode().as_bytes());
        }
    }

    /// The runs the helper took over without a request since the last call (`TAKE`: their host
    /// stopped or died before starting them): each is to be started as granted, or, when its
    /// entry is no longer loaded here, said acted on ([`ClusterLink::launched`]).
    pub(super) fn take_taken(&mut self) -> Vec<(RunKey, u32)> {
        std::mem::take(&mut self.taken)
    }

    /// The daemon is stopping and starts no more runs: the helper is told (`STOP`, after the
    /// `FORKED`s queued), so that the runs it marked started that were never forked (granted
    /// and not reached, or whose forks failed) become claims again, which other hosts take over
    /// instead of ending them `unknown`. The daemon may exit next, so it waits for the
    /// helper's `STOPPED` (and logs what it says before it), [`STOP_WAIT`] at most.
    pub(super) fn stopping(&mut self, fx: &mut dyn Effects) {
        let Some(helper) = self.helper.as_mut() else {
            return;
        };
        helper.pump.queue(ToHelper::Stop.encode().as_bytes());
        let blocking = helper.socket.set_nonblocking(false).is_ok()
            && helper.socket.set_write_timeout(Some(STOP_WAIT)).is_ok()
            && helper.socket.set_read_timeout(Some(STOP_WAIT)).is_ok();
        // Not taken or not answered in time: the helper sees the socket close instead, and
        // those runs end as `unknown` (as after a kill).
        if blocking && flush(helper).is_ok() {
            await_stopped(helper, fx);
        }
        let _ = helper.socket.set_nonblocking(true);
    }

    /// Writes what waits for the helper (the `FORKED` lines of a turn's runs).
    pub(super) fn flush_queued(&mut self, now_ms: i64, zone: &Zone, fx: &mut dyn Effects) {
        let Some(helper) = self.helper.as_mut() else {
            return;
        };
        if let Err(e) = flush(helper) {
            self.helper_lost(&e, now_ms, zone, fx);
        }
    }

    /// Reads what the helper said and acts on each answer: the runs this host is to start.
    pub(super) fn on_readable(
        &mut self,
        now_ms: i64,
        zone: &Zone,
        fx: &mut dyn Effects,
    ) -> Vec<Granted> {
        let Some(helper) = self.helper.as_mut() else {
            return Vec::new();
        };
        if let Err(e) = flush(helper) {
            self.helper_lost(&e, now_ms, zone, fx);
            return Vec::new();
        }
        let mut lines = Vec::new();
        let reader = &mut helper.read;
        // At most 64 lines' worth per wake: the loop has other fds to serve.
        let filled = helper
            .pump
            .fill(&mut helper.socket, 64 * wire::MAX_LINE, &mut |chunk| {
                lines.extend(reader.push(chunk));
                true
            });
        let closed = match filled {
            Ok(Filled::Open) => None,
            Ok(Filled::End) => Some("it closed its socket".to_string()),
            Err(e) => Some(format!("read: {e}")),
        };
        // A line that does not read is logged and skipped: the runs waiting for other answers
        // stay parked (a run whose answer it was gets its answer again or meets its deadline).
        let mut granted = Vec::new();
        for line in lines {
            match line.and_then(|line| FromHelper::decode(&line)) {
                Ok(message) => granted.extend(self.helper_said(message, now_ms, zone, fx)),
                Err(e) => fx.error(messages::helper_protocol_line(&wire::cut_text(
                    &e,
                    wire::MAX_TEXT,
                ))),
            }
        }
        if let Some(why) = closed {
            self.helper_lost(&why, now_ms, zone, fx);
        }
        granted
    }

    fn helper_said(
        &mut self,
        message: FromHelper,
        now_ms: i64,
        zone: &Zone,
        fx: &mut dyn Effects,
    ) -> Option<Granted> {
        let answered = match message {
            FromHelper::Log { error, text } => {
                let level = if error { Level::Error } else { Level::Info };
                fx.log(level, messages::helper_said_line(error, &text));
                return None;
            }
            FromHelper::Go { seq } => self.parked.go(seq),
            FromHelper::No { seq, why } => self.parked.no(seq, why, now_ms),
            FromHelper::Take { key, attempt } => {
                self.taken.push((key, attempt));
                return None;
            }
            // Only ever the answer to a stop, read there.
            FromHelper::Stopped => return None,
        };
        match answered {
            Answered::Go {
                job,
                key,
                taken_over,
            } => {
                self.say_if_resumed(&job, &key, zone, fx);
                if taken_over {
                    log_run(
                        &job,
                        "was claimed by a host that stopped before starting it: runs here",
                        zone,
                        fx,
                    );
                }
                return Some(Granted { run: job, key });
            }
            // Logged at the final answer (`ran` or a takeover's `GO`), not here.
            Answered::Taken { .. } => {}
            Answered::No { job, key, why } => self.denied(&job, &key, why, now_ms, zone, fx),
            Answered::Unknown => {}
        }
        None
    }

    /// Deadlines: runs without an answer in time are not run; a lost helper starts again.
    pub(super) fn on_deadline(&mut self, now_ms: i64, zone: &Zone, fx: &mut dyn Effects) {
        let late = self.parked.expire(now_ms);
        for (run, _) in late {
            let why = format!(
                "no answer from the cluster database in {} s",
                ANSWER_WAIT_MS / 1000
            );
            self.not_run(&run, why, now_ms, zone, fx);
        }
        if let Some(line) = self.quiet.due(now_ms) {
            fx.info(line);
        }
        self.start_helper(now_ms, fx);
    }

    /// A job child `pid` ended without running its job (`job::NOT_STARTED`): its run is queued
    /// again and claimed again, which this session's claim answers with a start; no end is sent.
    pub(super) fn forget(&mut self, pid: i32) {
        self.started.remove(&pid);
    }

    /// A reaped child: the helper (lost), or a cluster run's job child (its `END`).
    pub(super) fn on_reaped(
        &mut self,
        pid: i32,
        exit: Exit,
        now_ms: i64,
        zone: &Zone,
        fx: &mut dyn Effects,
    ) {
        if self.is_helper(pid) {
            // Its pid is gone: not to be killed.
            if let Some(helper) = self.helper.as_mut() {
                helper.pid = 0;
            }
            self.helper_lost(&format!("it exited ({exit:?})"), now_ms, zone, fx);
            return;
        }
        let Some(key) = self.started.remove(&pid) else {
            return;
        };
        let status = match exit {
            Exit::Code(code) => code,
            Exit::Signal(signal) => -signal,
        };
        if let Err(e) = self.send(&ToHelper::End { key, status }) {
            self.helper_lost(&e, now_ms, zone, fx);
        }
    }
}

impl ClusterLink {
    /// Files were loaded: the cluster entries are to be listed again ([`ClusterLink::list`]).
    pub(super) fn files_loaded(&mut self) {
        self.list_stale = true;
    }

    /// Whether the cluster entries are to be listed again.
    pub(super) fn wants_list(&self) -> bool {
        self.list_stale
    }

    /// The cluster entries loaded now, in the sources' order: kept as the lines that list
    /// them (the first [`MAX_LISTED`], within [`MAX_LIST_BYTES`]; the rest counted), to be
    /// sent when they differ from the last list.
    pub(super) fn list(&mut self, entries: impl Iterator<Item = Loaded>) {
        self.list_stale = false;
        let (mut text, mut count, mut omitted) = (String::new(), 0, 0);
        for entry in entries {
            let fits = entry.fits();
            let encoded = ToHelper::Entry(entry).encode();
            if !fits || count >= MAX_LISTED || text.len() + encoded.len() > MAX_LIST_BYTES {
                omitted += 1;
                continue;
            }
            text.push_str(&encoded);
            count += 1;
        }
        text.push_str(&ToHelper::Loaded { count, omitted }.encode());
        if *text != *self.listed {
            self.listed = Rc::from(text);
            self.list_unsent = true;
        }
    }

    /// Sends the list to the helper if it lacks it: whole lines, as much as leaves what waits
    /// unsent under [`LIST_PIECE`]; the rest as the helper reads (the loop turns when the
    /// socket takes more).
    pub(super) fn send_list(&mut self, now_ms: i64, zone: &Zone, fx: &mut dyn Effects) {
        loop {
            let Some(helper) = self.helper.as_mut() else {
                return;
            };
            if self.sending.is_none() {
                if !self.list_unsent || self.listed.is_empty() {
                    return;
                }
                self.list_unsent = false;
                self.sending = Some((self.listed.clone(), 0));
            }
            let Some((list, queued)) = self.sending.as_mut() else {
                return;
            };
            let room = LIST_PIECE.saturating_sub(helper.pump.unsent());
            let piece = whole_lines(&list[*queued..], room);
            if piece == 0 {
                return;
            }
            helper
                .pump
                .queue(&list.as_bytes()[*queued..*queued + piece]);
            *queued += piece;
            if *queued == list.len() {
                self.sending = None;
            }
            if let Err(e) = flush(helper) {
                self.sending = None;
                return self.helper_lost(&e, now_ms, zone, fx);
            }
            if helper.pump.unsent() > 0 {
                return;
            }
        }
    }
}

/// How many bytes of `text`'s first lines fit in `room`: whole lines only.
fn whole_lines(text: &str, room: usize) -> usize {
    if text.len() <= room {
        return text.len();
    }
    text.as_bytes()[..room]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |end| end + 1)
}

impl ClusterLink {
    /// The helper's `NO` to `run`: another host runs it (said per run), it is paused (said when
    /// first found paused), or the database can't say (the minute's runs said in one line).
    fn denied(
        &mut self,
        run: &Run,
        key: &RunKey,
        why: Denied,
        now_ms: i64,
        zone: &Zone,
        fx: &mut dyn Effects,
    ) {
        let reason = match why {
            Denied::Taken(host) | Denied::Ran(host) => {
                self.say_if_resumed(run, key, zone, fx);
                record(run, Reason::OtherHost, format!("run by {host}"), fx);
                return log_run(run, &format!("runs on {host}"), zone, fx);
            }
            Denied::Paused => {
                let words = "paused in the cluster (cronctl resume)".to_string();
                record(run, Reason::Paused, words, fx);
                if self.quiet.paused(key) {
                    let note = "not run: paused in the cluster (cronctl resume); \
                                not said again until it runs";
                    log_run(run, note, zone, fx);
                }
                return;
            }
            Denied::Lease => "this host's lease in the cluster database has expired".into(),
            Denied::Unreachable(why) => format!("the cluster database is unreachable ({why})"),
        };
        self.not_run(run, reason, now_ms, zone, fx);
    }

    /// `run` was not run for `reason`: counted in its minute's line, written within
    /// [`quiet::GATHER_MS`] (a line of another minute or reason pending is written now).
    fn not_run(
        &mut self,
        run: &Run,
        reason: String,
        now_ms: i64,
        zone: &Zone,
        fx: &mut dyn Effects,
    ) {
        let when = clock::time(zone, run.due.start_second() * 1000);
        let command = run.job.job.command();
        record(run, Reason::ClaimLost, reason.clone(), fx);
        if let Some(line) = self.quiet.not_run(when, reason, command, now_ms) {
            fx.info(line);
        }
    }

    /// Whether the last run of the entry `entry` of `owner` in `cluster` was denied because
    /// it is paused (`cronctl show` says so).
    pub(super) fn is_paused(&self, cluster: &str, owner: &[u8], entry: EntryKey) -> bool {
        self.quiet.is_paused(cluster, owner, entry)
    }

    /// Says that the entry of `run`, found paused before, runs again.
    fn say_if_resumed(&mut self, run: &Run, key: &RunKey, zone: &Zone, fx: &mut dyn Effects) {
        if self.quiet.resumed(key) {
            log_run(run, "resumed in the cluster: runs again", zone, fx);
        }
    }
}

/// Tells the scheduler that `run` did not run here, for its record.
fn record(run: &Run, reason: Reason, words: String, fx: &mut dyn Effects) {
    fx.not_run(NotRun {
        entry: run.job.entry,
        job: run.job.job.clone(),
        due: run.due,
        reason,
        words,
    });
}

/// Logs `(user) CLUSTER (command) HH:MM NOTE`: what became of `run` on this host.
fn log_run(run: &Run, note: &str, zone: &Zone, fx: &mut dyn Effects) {
    let job = &run.job.job;
    let when = clock::time(zone, run.due.start_second() * 1000);
    let line = messages::cluster_line(job.user(), job.command(), format!("{when} {note}"))
        .with_job(job.log_fields(None));
    fx.info(line);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::clock::{Clock, FakeClock};
    use crate::daemon::effects::Recorded;
    use crate::daemon::handoff::{NewEntry, change_of};
    use crate::timeline::Due;
    use crate::types::Pid;

    fn helper_on(socket: UnixStream, unsent: usize) -> Helper {
        socket.set_nonblocking(true).unwrap();
        Helper {
            pid: 0,
            socket,
            read: wire::LineReader::default(),
            pump: queued(unsent),
        }
    }

    fn queued(unsent: usize) -> Pump {
        let mut pump = Pump::new(READ_CHUNK, MAX_UNSENT);
        pump.queue(&vec![b'x'; unsent]);
        pump
    }

    #[test]
    fn a_helper_that_does_not_read_is_given_up_past_a_mebibyte_unsent() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let mut small = helper_on(ours.try_clone().unwrap(), 1024);
        assert!(flush(&mut small).is_ok());
        assert_eq!(small.pump.unsent(), 0, "the socket took it all");
        // The peer reads nothing: what the socket can't take stays, up to the bound.
        let mut big = helper_on(ours, MAX_UNSENT * 2);
        let e = flush(&mut big).unwrap_err();
        assert!(e.contains("has not read"), "{e}");
        assert!(big.pump.unsent() > MAX_UNSENT);
    }

    /// A link whose helper runs (on the other end of `fx.helper`).
    fn link(fx: &mut Recorded) -> ClusterLink {
        let mut link =
            ClusterLink::new("cronctl".into(), "dbname=cron", "host-a", None, None, None);
        link.start_helper(0, fx);
        assert_eq!(
            fx.logged("cluster helper started").len(),
            1,
            "{:?}",
            fx.lines
        );
        link
    }

    /// A run of entry 1 (`CRON_CLUSTER=nightly`), due at `due`.
    fn run(due: UtcMinute) -> Run {
        let mut change = change_of("CRON_CLUSTER=nightly\n0 * * * * backup\n");
        let NewEntry::Periodic { job, .. } = change.add.remove(0) else {
            panic!("periodic")
        };
        Run {
            job: Due {
                entry: Some(EntryId(1)),
                job,
                manual: false,
            },
            due,
            postponed: 0,
            start_ms: due.0 * 60_000,
            failed: None,
        }
    }

    /// What the helper was sent, and answers it.
    fn helper_reads(fx: &mut Recorded) -> String {
        let mut buf = [0u8; 4096];
        let n = std::io::Read::read(fx.helper.as_mut().unwrap(), &mut buf).unwrap();
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }

    fn helper_says(fx: &mut Recorded, line: &str) {
        std::io::Write::write_all(fx.helper.as_mut().unwrap(), line.as_bytes()).unwrap();
    }

    #[test]
    fn a_cluster_run_is_parked_asked_for_and_granted_a_local_one_is_not() {
        let clock = FakeClock::at("2026-11-27T11:00:00Z");
        let (mut fx, zone) = (Recorded::default(), Zone::utc());
        let mut link = link(&mut fx);
        let now_ms = clock.now().as_millisecond();
        let due = UtcMinute::containing(clock.now().as_second());
        assert!(matches!(
            link.claim(run(due), None, now_ms, &zone, &mut fx),
            Claim::Local(_)
        ));
        let claim = link.claim(run(due), Some(EntryKey(42)), now_ms, &zone, &mut fx);
        assert!(matches!(claim, Claim::Taken), "{claim:?}");
        let sent = helper_reads(&mut fx);
        assert!(sent.starts_with("RUN 1 "), "{sent}");
        helper_says(&mut fx, "GO 1\n");
        clock.advance_ms(200);
        let granted = link.on_readable(clock.now().as_millisecond(), &zone, &mut fx);
        assert_eq!(granted.len(), 1, "{:?}", fx.lines);
        // Its fork failed: back in the queue, and not claimed again when it comes up.
        let Granted { run: back, key } = granted.into_iter().next().unwrap();
        let failed = Launched::Failed {
            entry: back.job.entry,
            due,
        };
        link.launched(key, failed);
        link.flush_queued(now_ms, &zone, &mut fx);
        let again = link.claim(back, Some(EntryKey(42)), now_ms, &zone, &mut fx);
        let Claim::Granted(granted) = again else {
            panic!("{again:?}")
        };
        // Started: the helper is told at once (it marks more runs started), and its END goes
        // to the helper when it is reaped.
        let key_words = granted.key.minute.to_string();
        link.launched(granted.key, Launched::Started(Pid(4242)));
        link.flush_queued(now_ms, &zone, &mut fx);
        let forked = helper_reads(&mut fx);
        assert!(
            forked.starts_with(&format!("FORKED {key_words} ")),
            "{forked}"
        );
        assert_eq!(
            forked.lines().count(),
            1,
            "the failed fork said nothing: {forked}"
        );
        link.on_reaped(4242, Exit::Code(0), now_ms, &zone, &mut fx);
        assert!(helper_reads(&mut fx).starts_with("END "));
    }

    #[test]
    fn a_stopping_daemon_says_stop_after_the_forked_of_every_run_it_forked() {
        let clock = FakeClock::at("2026-11-27T11:00:00Z");
        let (mut fx, zone) = (Recorded::default(), Zone::utc());
        let mut link = link(&mut fx);
        let now_ms = clock.now().as_millisecond();
        let due = UtcMinute::containing(clock.now().as_second());
        link.claim(run(due), Some(EntryKey(42)), now_ms, &zone, &mut fx);
        link.claim(run(due), Some(EntryKey(43)), now_ms, &zone, &mut fx);
        assert!(helper_reads(&mut fx).starts_with("RUN 1 "));
        helper_says(&mut fx, "GO 1\nGO 2\n");
        clock.advance_ms(100);
        let mut granted = link.on_readable(now_ms, &zone, &mut fx).into_iter();
        let (first, second) = (granted.next().unwrap(), granted.next().unwrap());
        // The first forked (its FORKED still queued, not flushed), the second's fork failed.
        link.launched(first.key, Launched::Started(Pid(4242)));
        let entry = second.run.job.entry;
        link.launched(second.key, Launched::Failed { entry, due });
        // The helper's answer is there already: the daemon reads it before it goes on.
        helper_says(
            &mut fx,
            "LOG info stopping:%20gave%20back%201%20run\nSTOPPED\n",
        );
        link.stopping(&mut fx);
        assert_eq!(fx.logged("gave back 1 run").len(), 1, "{:?}", fx.lines);
        let sent = helper_reads(&mut fx);
        let lines: Vec<&str> = sent.lines().collect();
        assert_eq!(lines.len(), 2, "{sent}");
        assert!(lines[0].starts_with("FORKED ") && lines[0].ends_with("000000000000002a"));
        assert_eq!(lines[1], "STOP");
    }

    #[test]
    fn a_granted_run_given_up_after_its_forks_failed_is_said_forked_and_claimed_afresh() {
        let clock = FakeClock::at("2026-11-27T11:00:00Z");
        let (mut fx, zone) = (Recorded::default(), Zone::utc());
        let mut link = link(&mut fx);
        let now_ms = clock.now().as_millisecond();
        let due = UtcMinute::containing(clock.now().as_second());
        link.claim(run(due), Some(EntryKey(42)), now_ms, &zone, &mut fx);
        assert!(helper_reads(&mut fx).starts_with("RUN 1 "));
        helper_says(&mut fx, "GO 1\n");
        let granted = link.on_readable(now_ms, &zone, &mut fx);
        let Granted { key, .. } = granted.into_iter().next().expect("granted");
        let key_words = key.minute.to_string();
        let entry = Some(EntryId(1));
        link.launched(key, Launched::Failed { entry, due });
        // Its entry's next run came while its forks failed: the scheduler gave it up. The
        // helper hears it was acted on, as for a run skipped.
        link.given_up(EntryId(1), due);
        link.flush_queued(now_ms, &zone, &mut fx);
        // A line not sent fails the read, not hangs it.
        let timeout = Some(std::time::Duration::from_secs(5));
        fx.helper
            .as_ref()
            .unwrap()
            .set_read_timeout(timeout)
            .unwrap();
        let forked = helper_reads(&mut fx);
        assert!(
            forked.starts_with(&format!("FORKED {key_words} ")),
            "{forked}"
        );
        // Nothing of it is kept: the same run coming up again is asked for, not granted.
        let again = link.claim(run(due), Some(EntryKey(42)), now_ms, &zone, &mut fx);
        assert!(matches!(again, Claim::Taken), "{again:?}");
        assert!(helper_reads(&mut fx).starts_with("RUN 2 "));
        // A run it never granted: nothing is said.
        link.given_up(EntryId(7), due);
        link.flush_queued(now_ms, &zone, &mut fx);
        assert!(link.granted.is_empty());
    }

    #[test]
    fn a_run_without_an_answer_in_time_or_whose_helper_died_is_not_run() {
        let clock = FakeClock::at("2026-11-27T11:00:00Z");
        let (mut fx, zone) = (Recorded::default(), Zone::utc());
        let mut link = link(&mut fx);
        let due = UtcMinute::containing(clock.now().as_second());
        let now_ms = clock.now().as_millisecond();
        link.claim(run(due), Some(EntryKey(1)), now_ms, &zone, &mut fx);
        clock.advance_ms(ANSWER_WAIT_MS + 1);
        link.on_deadline(clock.now().as_millisecond(), &zone, &mut fx);
        // Said with the minute's other runs not run for that reason, a moment later.
        let said = "(CRON) CLUSTER (1 entry not run at 11:00: no answer from the cluster \
                    database in 120 s: backup)";
        assert!(fx.logged(said).is_empty());
        assert_eq!(
            link.next_deadline_ms(),
            Some(clock.now().as_millisecond() + 2_000)
        );
        clock.advance_ms(2_000);
        link.on_deadline(clock.now().as_millisecond(), &zone, &mut fx);
        assert_eq!(fx.logged(said).len(), 1, "{:?}", fx.lines);
        // Another run is parked; the helper exits: the run is given up, the helper restarts
        // 5 s later.
        let now_ms = clock.now().as_millisecond();
        link.claim(run(due.plus(1)), Some(EntryKey(1)), now_ms, &zone, &mut fx);
        let helper_pid = link.helper.as_ref().unwrap().pid as i32;
        link.on_reaped(helper_pid, Exit::Code(1), now_ms, &zone, &mut fx);
        assert_eq!(fx.logged("cluster helper lost: it exited").len(), 1);
        assert!(fx.killed.is_empty(), "an exited helper is not killed");
        assert_eq!(link.next_deadline_ms(), Some(now_ms + 2_000));
        link.on_deadline(now_ms + 2_000, &zone, &mut fx);
        let lost = "1 entry not run at 11:01: the cluster helper was lost: backup";
        assert_eq!(fx.logged(lost).len(), 1, "{:?}", fx.lines);
        assert_eq!(link.next_deadline_ms(), Some(now_ms + RESTART_AFTER_MS));
        link.on_deadline(now_ms + RESTART_AFTER_MS, &zone, &mut fx);
        assert_eq!(fx.logged("cluster helper started").len(), 2);
    }

    #[test]
    fn a_tcp_database_nothing_proves_is_warned_of_once_and_only_that() {
        let zone = Zone::utc();
        for (conninfo, warned) in [
            ("host=db.example dbname=cron", 1),
            ("host=db.example sslmode=require dbname=cron", 1),
            ("host=db.example sslmode=verify-full dbname=cron", 0),
            ("host=/run/postgresql dbname=cron", 0),
        ] {
            let mut fx = Recorded::default();
            let mut link = ClusterLink::new("cronctl".into(), conninfo, "host-a", None, None, None);
            link.start_helper(0, &mut fx);
            // The helper exits and starts again 5 s later: no second warning.
            let pid = link.helper.as_ref().unwrap().pid as i32;
            link.on_reaped(pid, Exit::Code(1), 0, &zone, &mut fx);
            link.on_deadline(RESTART_AFTER_MS, &zone, &mut fx);
            assert_eq!(fx.logged("cluster helper started").len(), 2);
            let lines: Vec<_> = fx
                .lines
                .iter()
                .filter(|(_, line)| line.contains("nothing proves"))
                .collect();
            assert_eq!(lines.len(), warned, "{conninfo}: {:?}", fx.lines);
            if let Some((level, line)) = lines.first() {
                assert_eq!(*level, Level::Warning);
                assert!(
                    line.contains("--cluster-db: over TCP with sslmode=")
                        && line.contains("give sslmode=verify-full"),
                    "{line}"
                );
            }
        }
    }

    fn loaded(n: usize, command: &[u8]) -> Loaded {
        Loaded {
            cluster: "web".into(),
            owner: b"root".to_vec(),
            entry: EntryKey(n as u64),
            place: format!("f:{n}").into_bytes(),
            command: command.to_vec(),
            rerun: false,
        }
    }

    #[test]
    fn the_list_of_entries_is_bounded_by_count_and_by_bytes_and_counts_the_rest() {
        let mut fx = Recorded::default();
        let mut link = link(&mut fx);
        link.list((0..MAX_LISTED + 2_000).map(|n| loaded(n, b"true")));
        assert_eq!(link.listed.lines().count(), MAX_LISTED + 1);
        assert!(link.listed.ends_with("LOADED 10000 2000\n"), "counted");
        // Entries at their bounds: the bytes bound the list first.
        link.list((0..MAX_LISTED).map(widest));
        let lines = link.listed.lines().count() - 1;
        assert!(link.listed.len() <= MAX_LIST_BYTES + 100);
        assert!((2_700..MAX_LISTED).contains(&lines), "{lines}");
        assert!(
            link.listed
                .ends_with(&format!("LOADED {lines} {}\n", MAX_LISTED - lines))
        );
    }

    /// Entry `n` with its owner, place and command at their bounds once escaped.
    fn widest(n: usize) -> Loaded {
        Loaded {
            owner: vec![b'%'; wire::MAX_OWNER / 3],
            place: vec![b'\x01'; 4096],
            ..loaded(n, &[b'\x01'; 4096])
        }
    }

    /// Reads what waits on `socket` (non-blocking) into `got`.
    fn drain(socket: &mut UnixStream, got: &mut Vec<u8>) {
        use std::io::Read;
        socket.set_nonblocking(true).unwrap();
        let mut buffer = vec![0u8; 1 << 16];
        while let Ok(n) = socket.read(&mut buffer) {
            if n == 0 {
                break;
            }
            got.extend_from_slice(&buffer[..n]);
        }
    }

    #[test]
    fn a_list_larger_than_the_socket_takes_is_sent_in_whole_lines_as_the_helper_reads() {
        let mut fx = Recorded::default();
        let mut link = link(&mut fx);
        let mut theirs = fx.helper.take().unwrap();
        link.list((0..3_000).map(widest));
        let first = link.listed.to_string();
        assert!(first.len() > 3 * MAX_UNSENT, "{}", first.len());
        let (mut got, mut turns) = (Vec::new(), 0);
        link.send_list(0, &Zone::utc(), &mut fx);
        // The list changes while it is sent (a reload): the new one follows the whole first.
        link.list((0..10).map(|n| loaded(n, b"true")));
        let second = link.listed.to_string();
        while got.len() < first.len() + second.len() {
            turns += 1;
            assert!(turns < 10_000, "stalled at {} bytes", got.len());
            drain(&mut theirs, &mut got);
            // What waits unsent never passes the piece (nor so the helper's bound).
            let helper = link.helper.as_mut().unwrap();
            assert!(
                helper.pump.unsent() <= LIST_PIECE,
                "{}",
                helper.pump.unsent()
            );
            // The loop's turn when the socket is writable: the pump's flush, then the list.
            flush(helper).unwrap();
            link.send_list(0, &Zone::utc(), &mut fx);
        }
        assert_eq!(got.len(), first.len() + second.len());
        assert!(
            got.starts_with(first.as_bytes()),
            "the first list whole, first"
        );
        assert!(got.ends_with(second.as_bytes()), "then the second");
        assert!(
            fx.logged("cluster helper lost").is_empty(),
            "{:?}",
            fx.lines
        );
        // Not again while it is the same.
        link.list((0..10).map(|n| loaded(n, b"true")));
        link.send_list(0, &Zone::utc(), &mut fx);
        drain(&mut theirs, &mut got);
        assert_eq!(got.len(), first.len() + second.len());
    }

    #[test]
    fn a_helper_that_closed_its_socket_is_an_error() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        drop(theirs);
        let mut helper = helper_on(ours, 10);
        assert!(flush(&mut helper).is_err());
    }
}
