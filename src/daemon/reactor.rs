//! The reactor: the daemon's loop (start-up, which builds the owners it runs, is
//! `setup.rs`). Each turn it waits in `poll` for the descriptors the owners hold (registered
//! with typed [`Token`]s), reads the clock ONCE through [`Clock`], and dispatches: each ready
//! descriptor to its owner, with the time; what one owner returns — a reload's
//! [`Change`](super::handoff::Change), a run that comes up, a [`Claim`], [`Granted`] runs, what a
//! launch did — it passes to the next. The owners ([`Scheduler`], [`Sources`],
//! [`ClusterLink`], [`MetricsServer`], [`ControlServer`]) keep their fields private, never call
//! each other, and act on the world only through the [`Effects`] they are handed; the loop
//! itself waits, drains the signals, reaps and reads the timer through its [`World`]. Both are
//! type parameters of [`Daemon`]: the tests below run the loop's rules turn by turn on a fake
//! clock, with a scripted world and recorded effects.
//!
//! A new owner is a new file and a few lines here: a field of [`Daemon`], a [`Token`]
//! variant, its descriptors added in [`Daemon::wait`], and one line in [`Daemon::dispatch`]
//! that passes what it returns to the owner it concerns (as the control socket's runs go to
//! the scheduler, and what became of them back).

use std::collections::HashMap;

use jiff::Timestamp;

use super::Error;
use super::clock::Clock;
use super::cluster::ClusterLink;
use super::control::{self, ControlServer};
use super::effects::{Effects, RealEffects};
use super::handoff::{Claim, Granted, Launched};
use super::history::HistoryLink;
use super::metrics_server::{self, MetricsServer};
use super::outcomes::Outcomes;
use super::scheduler::{Reaped, Scheduler, Wake};
use super::setup::Setup;
use super::sources::{Announce, Sources};
use super::stop::Stop;
use super::world::{RealWorld, World};
use crate::cluster::entry_id::EntryKey;
use crate::database::SourceKey;
use crate::job::JobSpec;
use crate::log::messages;
use crate::sys::poll::Interest;
use crate::sys::process::Exit;
use crate::sys::timer::Tick;
use crate::timeline::EntryId;
use crate::types::Pid;

/// Jobs started between two looks at signals and events.
const START_BATCH: usize = 64;

/// How many granted cluster runs are forked between two writes of their `FORKED` lines: the
/// helper marks more started as soon as a quarter of its window (16) is free.
const FORKED_EVERY: usize = 8;

/// What the loop polls, as the tokens of its descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Signals,
    Timer,
    /// inotify (the sources).
    Files,
    /// The cluster helper's socket.
    Helper,
    Metrics(metrics_server::Token),
    Control(control::Token),
    /// The pipe of the job children's outcomes.
    Outcomes,
    /// The history writer's socket.
    History,
}

/// Whether the loop goes on after a turn.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Turn {
    Continue,
    Stop,
}

/// The loop's own parts: where the time comes from and the time it read last, what it waits
/// on ([`World`]), and the owners' way out ([`Effects`]).
pub(super) struct Reactor<W, F> {
    clock: Box<dyn Clock>,
    /// The time read after the last wait (or at the start).
    now: Timestamp,
    world: W,
    fx: F,
}

impl<W: World, F: Effects> Reactor<W, F> {
    pub(super) fn new(clock: Box<dyn Clock>, world: W, fx: F) -> Reactor<W, F> {
        let now = clock.now();
        Reactor {
            clock,
            now,
            world,
            fx,
        }
    }

    /// The owners' effects (start-up hands them to the owners it builds and loads).
    pub(super) fn fx(&mut self) -> &mut F {
        &mut self.fx
    }

    /// The time now, read from the clock.
    pub(super) fn read_clock(&self) -> Timestamp {
        self.clock.now()
    }
}

/// The running daemon: the reactor, the setup and the owners, nothing else. Built by
/// `setup::start`.
pub(super) struct Daemon<W: World = RealWorld, F: Effects = RealEffects> {
    pub(super) reactor: Reactor<W, F>,
    pub(super) setup: Setup,
    pub(super) scheduler: Scheduler,
    pub(super) sources: Sources,
    pub(super) cluster: Option<ClusterLink>,
    pub(super) metrics: Option<MetricsServer>,
    pub(super) control: Option<ControlServer>,
    pub(super) outcomes: Option<Outcomes>,
    pub(super) history: Option<HistoryLink>,
}

/// How long poll may sleep before the next queued job may start: `None` (no bound) with nothing
/// queued; 0 for a job ready now; at most a minute, so a clock step can't leave it asleep long.
fn start_timeout_ms(now_ms: i64, next_start_ms: Option<i64>) -> Option<u32> {
    next_start_ms.map(|at| at.saturating_sub(now_ms).clamp(0, 60_000) as u32)
}

impl<W: World, F: Effects> Daemon<W, F> {
    /// The loop: turn after turn, until SIGTERM or SIGINT.
    pub(super) fn run(&mut self) -> Result<(), Error> {
        self.reactor.now = self.reactor.clock.now();
        while self.turn()? == Turn::Continue {}
        Ok(())
    }

    /// One turn: start what is due, wait, read the clock, dispatch what is ready.
    pub(super) fn turn(&mut self) -> Result<Turn, Error> {
        let now = self.reactor.now;
        self.start_what_is_due(now);
        self.list_cluster_entries();
        let timeout = self.timeout_ms(now);
        let answered_large = self.control.as_mut().is_some_and(ControlServer::take_freed);
        if self.sources.take_freed() | answered_large {
            self.scheduler.shrink();
            self.reactor.world.give_back_memory();
        }
        let ready = self.wait(timeout)?;
        let now = self.reactor.clock.now();
        self.reactor.now = now;
        let turn = self.dispatch(&ready, now)?;
        self.hand_records(now.as_millisecond());
        let fx = &mut self.reactor.fx;
        self.scheduler.keep_retries(now.as_millisecond(), fx);
        Ok(turn)
    }

    /// The outcomes the owners recorded this turn go to the history link, which sends what it
    /// can and starts a lost writer again when it is time.
    fn hand_records(&mut self, now_ms: i64) {
        let fx = &mut self.reactor.fx;
        for run in fx.take_not_run() {
            self.scheduler.not_run(run, now_ms, fx);
        }
        let records = fx.take_records();
        if let Some(link) = &mut self.history {
            for outcome in records {
                link.record(outcome, now_ms);
            }
            link.tick(now_ms, fx);
        }
    }

    /// Before the wait: a clock found away from where the timer was left is handled as the
    /// kernel's notice would be; the `@every` runs and the queued ones whose time has come
    /// start.
    fn start_what_is_due(&mut self, now: Timestamp) {
        if self.scheduler.clock_moved(now) {
            self.on_minute(now, Wake::ClockMoved);
        }
        self.scheduler
            .every_due(now.as_millisecond(), &mut self.reactor.fx);
        self.start_due(now);
    }

    /// How long the wait may sleep: until the next queued run may start (now, for a backlog;
    /// a second after a failed fork; a RANDOM_DELAY's start time; an `@every` run), a cluster
    /// deadline or a metrics or control connection's deadline; the timer wakes the loop at the
    /// next minute with something due.
    fn timeout_ms(&self, now: Timestamp) -> Option<u32> {
        let now_ms = now.as_millisecond();
        let next_start = [
            self.scheduler.next_start_ms(),
            self.scheduler.retries_deadline_ms(),
            self.cluster.as_ref().and_then(|c| c.next_deadline_ms()),
            self.history.as_ref().and_then(HistoryLink::deadline_ms),
        ]
        .into_iter()
        .flatten()
        .min();
        [
            start_timeout_ms(now_ms, next_start),
            self.metrics.as_ref().and_then(|m| m.timeout_ms(now_ms)),
            self.control.as_ref().and_then(|c| c.timeout_ms(now_ms)),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// One `poll` over every owner's descriptors (and the world's: the signals, the timer):
    /// the tokens of those ready.
    fn wait(&mut self, timeout_ms: Option<u32>) -> Result<Vec<Token>, Error> {
        let mut fds = Vec::new();
        if let Some(fd) = self.sources.fd() {
            fds.push((Token::Files, fd, Interest::Read));
        }
        if let Some(link) = &self.cluster {
            for (fd, interest) in link.fds() {
                fds.push((Token::Helper, fd, interest));
            }
        }
        if let Some(server) = &self.metrics {
            for (token, fd, interest) in server.fds() {
                fds.push((Token::Metrics(token), fd, interest));
            }
        }
        if let Some(server) = &self.control {
            for (token, fd, interest) in server.fds() {
                fds.push((Token::Control(token), fd, interest));
            }
        }
        if let Some(outcomes) = &self.outcomes {
            fds.push((Token::Outcomes, outcomes.fd(), Interest::Read));
        }
        if let Some((fd, interest)) = self.history.as_ref().and_then(HistoryLink::fd) {
            fds.push((Token::History, fd, interest));
        }
        (self.reactor.world)
            .wait(&fds, timeout_ms)
            .map_err(|e| Error::Io("poll", e))
    }

    /// Each ready descriptor to its owner, with the turn's time; then the deadlines.
    fn dispatch(&mut self, ready: &[Token], now: Timestamp) -> Result<Turn, Error> {
        let now_ms = now.as_millisecond();
        if let Some(server) = &mut self.metrics {
            let tokens: Vec<_> = ready
                .iter()
                .filter_map(|t| match t {
                    Token::Metrics(token) => Some(*token),
                    _ => None,
                })
                .collect();
            let scheduler = &self.scheduler;
            server.serve(&tokens, now_ms, &|entries| {
                scheduler.render_metrics(entries)
            });
        }
        self.on_control(ready, now);
        if ready.contains(&Token::Outcomes)
            && let Some(outcomes) = &mut self.outcomes
        {
            outcomes.read();
        }
        if ready.contains(&Token::Signals) && self.on_signals(now) == Turn::Stop {
            return Ok(Turn::Stop);
        }
        if ready.contains(&Token::Files) {
            self.on_files(now);
        }
        if ready.contains(&Token::Helper) {
            self.on_helper(now_ms);
        }
        if ready.contains(&Token::History)
            && let Some(link) = &mut self.history
        {
            link.readable(&mut self.reactor.fx);
        }
        if let Some(link) = &mut self.cluster {
            let zone = self.scheduler.local_zone();
            link.on_deadline(now_ms, zone, &mut self.reactor.fx);
        }
        if ready.contains(&Token::Timer) {
            match self.reactor.world.read_timer() {
                Ok(Tick::Fired) => self.on_minute(now, Wake::Timer),
                Ok(Tick::ClockChanged) => self.on_minute(now, Wake::ClockSet),
                Ok(Tick::Nothing) => {}
                Err(e) => return Err(Error::Io("timerfd read", e)),
            }
        }
        Ok(Turn::Continue)
    }

    /// The cluster helper's answers: the runs it granted start, in the order granted.
    fn on_helper(&mut self, now_ms: i64) {
        let Some(link) = &mut self.cluster else {
            return;
        };
        let zone = self.scheduler.local_zone();
        let mut granted = link.on_readable(now_ms, zone, &mut self.reactor.fx);
        granted.extend(self.taken_over());
        let count = granted.len();
        for (n, granted) in granted.into_iter().enumerate() {
            self.launch_granted(granted, now_ms);
            // The helper hears of the forks a few at a time, so that it marks the next runs
            // started while these fork.
            if ((n + 1) % FORKED_EVERY == 0 || n + 1 == count)
                && let Some(link) = &mut self.cluster
            {
                let zone = self.scheduler.local_zone();
                link.flush_queued(now_ms, zone, &mut self.reactor.fx);
            }
        }
    }

    /// The runs the cluster helper took over for this host without a request (`TAKE`), as
    /// granted runs of the loaded entries their keys name. One whose entry is no longer loaded
    /// is logged and said acted on, so that the helper's window frees.
    fn taken_over(&mut self) -> Vec<Granted> {
        let Some(link) = &mut self.cluster else {
            return Vec::new();
        };
        let keys = link.take_taken();
        if keys.is_empty() {
            return Vec::new();
        }
        let scheduler = &self.scheduler;
        let by_key: HashMap<(String, Vec<u8>, EntryKey), EntryId> = self
            .sources
            .entries()
            .filter_map(|id| {
                let l = scheduler.loaded_entry(id)?;
                Some(((l.cluster, l.owner, l.entry), id))
            })
            .collect();
        let mut granted = Vec::new();
        for (key, attempt) in keys {
            let id = by_key.get(&(key.cluster.clone(), key.owner.clone(), key.entry));
            let rerun = attempt > 1;
            match id.and_then(|&id| self.scheduler.taken_over_run(id, key.minute, rerun)) {
                Some(run) => granted.push(Granted { run, key }),
                None => {
                    let text = format!(
                        "a run of cluster {} entry {} taken over for this host is of an entry \
                         no longer loaded here: not started",
                        key.cluster, key.entry
                    );
                    self.reactor
                        .fx
                        .error(messages::helper_said_line(true, &text));
                    link.launched(key, Launched::Skipped);
                }
            }
        }
        granted
    }

    /// The control socket: its requests answered from the scheduler's entries in the sources'
    /// order; each pause or resume asked for, and each run, handed to the scheduler, and what
    /// became of it told back.
    fn on_control(&mut self, ready: &[Token], now: Timestamp) {
        let Some(server) = &mut self.control else {
            return;
        };
        let tokens: Vec<_> = ready
            .iter()
            .filter_map(|t| match t {
                Token::Control(token) => Some(*token),
                _ => None,
            })
            .collect();
        let now_ms = now.as_millisecond();
        let (scheduler, sources, cluster) = (&self.scheduler, &self.sources, &self.cluster);
        let status = server.status(now_ms, scheduler.local_zone(), scheduler.running_len());
        let in_cluster = |name: &str, user: &[u8], key| {
            cluster
                .as_ref()
                .is_some_and(|c| c.is_paused(name, user, key))
        };
        let paused = control::PausedFn {
            here: &|id| scheduler.is_paused(id),
            cluster: &in_cluster,
        };
        let snapshot = |peer: &crate::control::Peer, want: &crate::control::Want<'_>| {
            let entries = sources.entries().filter_map(|id| scheduler.entry_state(id));
            let mut snapshot = control::snapshot(peer, want, entries, status.clone(), paused);
            if want.entries {
                snapshot.not_loaded = want.not_loaded(peer, sources.not_loaded());
            }
            snapshot
        };
        let orders = server.serve(&tokens, now_ms, &snapshot, &mut self.reactor.fx);
        for order in server.take_pauses() {
            let asked_by = order.peer.describe();
            let fx = &mut self.reactor.fx;
            let done = match &order.what {
                control::Pausing::Loaded { entry, .. } => {
                    self.scheduler.pause(*entry, order.pause, &asked_by, fx)
                }
                control::Pausing::Gone(id) => Some(self.scheduler.resume_gone(*id, &asked_by, fx)),
            }
            .map(|done| done.map_err(|refused| refused.to_string()));
            server.paused(&order, done);
        }
        for (connection, query) in server.take_asks() {
            let refused = match &mut self.history {
                Some(link) => link.ask(connection, &query).err().map(|c| (c, false)),
                None => Some((connection, true)),
            };
            if let Some((connection, off)) = refused {
                // One short line on a blocking socket of a client that just asked: it goes.
                let answer = crate::control::asked::no_history_answer(off);
                let _ = std::io::Write::write_all(&mut std::fs::File::from(connection), &answer);
            }
        }
        let mut failed = false;
        for order in orders {
            let asked_by = order.peer.describe();
            let fx = &mut self.reactor.fx;
            // The job child says on this pipe what became of the job; without one (no
            // descriptor left) the answer is the fork's.
            let (read_end, write_end) = fx.report_pipe().ok().unzip();
            let launched = self
                .scheduler
                .run_now(order.entry, &asked_by, write_end, now, fx);
            failed |= matches!(launched, Some(Launched::Failed { .. }));
            server.ran(&order, launched, read_end, now_ms);
        }
        if failed {
            // Back in the queue, retried in a second.
            self.arm(now);
        }
    }

    /// Signals: children reaped (to the scheduler and the cluster link), a stop, a reload.
    fn on_signals(&mut self, now: Timestamp) -> Turn {
        let arrived = self.reactor.world.drain_signals();
        if arrived.child {
            // A child writes its outcome before it exits: every reaped child's is in the pipe.
            if let Some(outcomes) = &mut self.outcomes {
                outcomes.read();
            }
            for (pid, exit) in self.reactor.world.reap() {
                self.on_reaped(pid, exit, now);
            }
        }
        if arrived.terminate || arrived.interrupt {
            self.stop();
            return Turn::Stop;
        }
        if arrived.hangup {
            self.on_hangup(now);
        }
        Turn::Continue
    }

    /// A reaped child: to the scheduler (a job child's end), then to the cluster link (the
    /// helper's end, or a cluster run's `END`); the timer armed again when a run went back in
    /// the queue.
    fn on_reaped(&mut self, pid: Pid, exit: Exit, now: Timestamp) {
        // The job child logs its own end (it knows the command and the shell's status); the
        // daemon learns here which entry's job ended.
        let fx = &mut self.reactor.fx;
        if let Some(link) = &mut self.history
            && link.on_reaped(pid.0 as u32, now.as_millisecond(), fx)
        {
            return;
        }
        let said = self.outcomes.as_mut().and_then(|o| o.take(pid.0));
        let reaped = self.scheduler.on_reaped(pid, exit, said, now, fx);
        if let Some(link) = &mut self.cluster {
            let zone = self.scheduler.local_zone();
            if reaped == Reaped::NotStarted {
                // Nothing ran: the claim stays this host's, started again with the run.
                link.forget(pid.0);
            } else {
                link.on_reaped(pid.0, exit, now.as_millisecond(), zone, fx);
            }
        }
        if matches!(reaped, Reaped::Requeued | Reaped::NotStarted) {
            self.arm(now);
        }
    }

    /// SIGTERM or SIGINT: the scheduler starts no more runs and says what is left; as PID 1
    /// or with --stop-jobs, the running jobs are stopped (daemon/stop.rs).
    fn stop(&mut self) {
        if let Some(server) = &mut self.control {
            server.stopping(self.reactor.now.as_millisecond());
        }
        let stops_jobs = self.setup.stops_jobs();
        let now = self.reactor.now;
        self.scheduler
            .stopping(stops_jobs, now, &mut self.reactor.fx);
        self.hand_records(now.as_millisecond());
        if let Some(link) = &mut self.cluster {
            link.stopping(&mut self.reactor.fx);
        }
        self.reactor.world.notify_stopping();
        if stops_jobs {
            let reactor = &mut self.reactor;
            let stop = Stop {
                scheduler: &mut self.scheduler,
                world: &mut reactor.world,
                clock: &*reactor.clock,
            };
            stop.run(self.setup.stop_timeout_s(), &mut reactor.fx);
        }
    }

    /// SIGHUP: the log opened again, every file reloaded (each said so), and a look at the
    /// clock.
    fn on_hangup(&mut self, now: Timestamp) {
        self.reactor.fx.reopen_log();
        self.reactor.fx.info(messages::hangup_line());
        self.load_all(Announce::Always, now);
        self.scheduler.files_loaded(&mut self.reactor.fx);
        // As a clock change: a step the kernel did not report is acted on now (a minute
        // already handled is not run again).
        self.on_minute(now, Wake::ClockMoved);
    }

    /// inotify: the zone and the sources it names, reloaded.
    fn on_files(&mut self, now: Timestamp) {
        if let Some(noticed) = self.sources.on_inotify(&mut self.reactor.fx) {
            if let Some(zone) = noticed.zone {
                self.scheduler.set_local_zone(zone);
            }
            if noticed.everything {
                self.load_all(Announce::IfChanged, now);
            }
            for key in noticed.sources {
                self.reload(&key, Announce::IfChanged, now);
            }
            self.arm(now);
        }
        self.scheduler.files_loaded(&mut self.reactor.fx);
    }

    /// A minute boundary (or a clock step): files looked at, the zone read again if it
    /// changed, the minute's runs queued and started, the timer armed.
    fn on_minute(&mut self, now: Timestamp, wake: Wake) {
        for key in self.sources.changed_files(&mut self.reactor.fx) {
            self.reload(&key, Announce::IfChanged, now);
        }
        for key in self.sources.to_recheck() {
            self.reload(&key, Announce::IfChanged, now);
        }
        if let Some(zone) = self.sources.recheck_zone(&mut self.reactor.fx) {
            self.scheduler.set_local_zone(zone);
        }
        self.scheduler.on_minute(now, wake, &mut self.reactor.fx);
        // The first jobs start before the next fire times of the minute's entries are worked
        // out (arming the timer needs them: `Agenda::settle`).
        self.start_due(now);
        self.arm(now);
    }

    /// Starts queued runs, a batch at a time (the loop looks at signals and events between
    /// batches): each run that comes up goes to the cluster link first (with cluster mode),
    /// then to the scheduler. A run that can't be forked stays first in line, and the line
    /// waits a second.
    fn start_due(&mut self, now: Timestamp) {
        let now_ms = now.as_millisecond();
        self.gave_up(now_ms);
        for _ in 0..START_BATCH {
            let Some(run) = self.scheduler.next_to_start(now_ms, &mut self.reactor.fx) else {
                break;
            };
            if self.orphaned(&run.job.job, now) {
                continue;
            }
            let fx = &mut self.reactor.fx;
            let run = match &mut self.cluster {
                None => run,
                Some(link) => {
                    let entry = self.scheduler.cluster_entry(&run);
                    match link.claim(run, entry, now_ms, self.scheduler.local_zone(), fx) {
                        Claim::Local(run) => run,
                        Claim::Granted(granted) => {
                            self.launch_granted(granted, now_ms);
                            if let Some(link) = &mut self.cluster {
                                let zone = self.scheduler.local_zone();
                                link.flush_queued(now_ms, zone, &mut self.reactor.fx);
                            }
                            continue;
                        }
                        Claim::Taken => continue,
                    }
                }
            };
            if let Launched::Failed { .. } = self.scheduler.launch(run, now_ms, fx) {
                break;
            }
        }
        if self.scheduler.has_backlog() {
            // A backlog at the boundary is carried by the timer, armed for the next minute.
            self.arm(now);
        }
    }

    /// The cluster runs the scheduler gave up (their forks failed until their entries' next
    /// runs came), to the cluster link: their claims, granted to this host, are acted on.
    fn gave_up(&mut self, now_ms: i64) {
        let gave_up = self.scheduler.take_gave_up();
        if let Some(link) = self.cluster.as_mut().filter(|_| !gave_up.is_empty()) {
            for (entry, due) in gave_up {
                link.given_up(entry, due);
            }
            let zone = self.scheduler.local_zone();
            link.flush_queued(now_ms, zone, &mut self.reactor.fx);
        }
    }

    /// Whether `job` is of a spool crontab whose user passwd no longer knows: its run is not
    /// started (no fork), and the first time the file is read again, which refuses it as an
    /// `ORPHAN` (logged; its entries leave the agenda; it is looked at every minute and loads
    /// again once the user is back).
    fn orphaned(&mut self, job: &JobSpec, now: Timestamp) -> bool {
        if !self.reactor.fx.user_unknown(job.user()) {
            return false;
        }
        let Some(key) = self.sources.spool_key(job) else {
            return false;
        };
        if !self.sources.orphaned(&key) {
            self.reload(&key, Announce::IfChanged, now);
        }
        true
    }

    /// A run the cluster granted this host: started by the scheduler, what became of it back
    /// to the link.
    fn launch_granted(&mut self, granted: Granted, now_ms: i64) {
        let launched = self
            .scheduler
            .launch(granted.run, now_ms, &mut self.reactor.fx);
        if let Some(link) = &mut self.cluster {
            link.launched(granted.key, launched);
        }
    }

    /// The cluster entries loaded, listed to the cluster link after a load; the link sends
    /// them to the helper when they changed or the helper started since.
    fn list_cluster_entries(&mut self) {
        let Some(link) = &mut self.cluster else {
            return;
        };
        if link.wants_list() {
            let scheduler = &self.scheduler;
            link.list(
                self.sources
                    .entries()
                    .filter_map(|id| scheduler.loaded_entry(id)),
            );
        }
        let now_ms = self.reactor.now.as_millisecond();
        link.send_list(now_ms, self.scheduler.local_zone(), &mut self.reactor.fx);
    }

    /// Arms the timer for the scheduler's next wake-up.
    pub(super) fn arm(&mut self, now: Timestamp) {
        let every_minute = self.sources.looks_every_minute();
        self.scheduler.arm(now, every_minute, &mut self.reactor.fx);
    }

    /// Loads every source (and drops the ones that vanished); returns the @reboot jobs found.
    pub(super) fn load_all(&mut self, announce: Announce, now: Timestamp) -> Vec<JobSpec> {
        let mut reboot = Vec::new();
        for key in self.sources.all(&mut self.reactor.fx) {
            reboot.extend(self.reload(&key, announce, now));
        }
        reboot
    }

    /// One source read again, its change applied to the scheduler, the new entries' ids
    /// handed back to the sources. Returns its @reboot jobs.
    fn reload(&mut self, key: &SourceKey, announce: Announce, now: Timestamp) -> Vec<JobSpec> {
        let fx = &mut self.reactor.fx;
        let entries = self.scheduler.entries();
        let (mut change, pending) = self.sources.reload(key, announce, entries, fx);
        if let Some(link) = &mut self.cluster {
            link.files_loaded();
        }
        let reboot = std::mem::take(&mut change.reboot);
        let added = self.scheduler.apply(change, now.as_millisecond(), fx);
        self.sources.settle(pending, &added, now.as_second(), fx);
        self.scheduler.name_entries(self.sources.entries_of(key));
        reboot
    }
}

/// The reactor's rules, turn by turn: a scripted world (which tokens are ready at each wait,
/// how long it took on the fake clock, what the signals, the reaping and the timer say) and
/// recorded effects (the crontabs a load finds, the jobs started, the minutes armed, the lines
/// logged, the helper's end of its socket). The owners are the real ones, built as
/// `setup::start` builds them; only what the loop passes between them is under test here.
#[cfg(test)]
mod tests {
    use std::io::{ErrorKind, Read, Write};
    use std::os::unix::net::UnixStream;
    use std::path::Path;

    use super::*;
    use crate::daemon::cli::Options;
    use crate::daemon::clock::FakeClock;
    use crate::daemon::effects::Recorded;
    use crate::daemon::setup;
    use crate::daemon::world::{Beat, Scripted};
    use crate::sys::signal::Arrived;
    use crate::types::Uid;

    type TestDaemon = Daemon<Scripted, Recorded>;

    /// When each test's daemon starts: half a minute before 10:01.
    const START: &str = "2026-11-27T10:00:30Z";

    /// Alice's crontab in the spool.
    fn alice() -> SourceKey {
        SourceKey::User("alice".into())
    }

    /// The options of a daemon whose every path is in `dir`, without inotify or a control
    /// socket.
    fn options(dir: &Path) -> Options {
        Options {
            spool_dir: Some(dir.join("spool")),
            system_crontab: Some(dir.join("crontab")),
            cron_d: Some(dir.join("cron.d")),
            pid_file: Some(dir.join("crond.pid")),
            reboot_marker: Some(dir.join("reboot")),
            state_dir: Some(dir.join("state")),
            localtime: Some(dir.join("localtime")),
            control_socket: Some("off".into()),
            no_inotify: true,
            ..Options::default()
        }
    }

    /// `options` with `--cluster-db`: the helper is the other end of `Recorded::helper`.
    fn in_cluster(options: Options) -> Options {
        Options {
            cluster: crate::daemon::cli::ClusterOptions {
                db: Some("dbname=cron".into()),
                host: Some("host-a".into()),
                helper: Some("cronctl".into()),
                ..options.cluster.clone()
            },
            ..options
        }
    }

    /// A daemon started at [`START`] with `options`, its owners built as `setup::start`
    /// builds them, over a scripted world and the recorded effects `fx` (whose crontabs it
    /// loads); and its clock.
    fn start(options: Options, mut fx: Recorded) -> (TestDaemon, FakeClock) {
        let clock = FakeClock::at(START);
        let now = clock.now();
        let lock = crate::sys::fs::lock_pid_file(&options.pid_file()).expect("the pid file");
        let setup = Setup::new(options, lock);
        let o = &setup.options;
        let (sources, zone) = Sources::new(o.paths(), setup.rules(), o.localtime(), 0.0, &mut fx);
        let scheduler = Scheduler::new(now, zone, o.state_dir());
        let control = ControlServer::listen(o.control_socket(), now.as_millisecond(), &mut fx)
            .expect("the control socket");
        let cluster = setup.cluster_link(now, &mut fx);
        let history = setup.history_link(now, &mut fx);
        let world = Scripted::new(clock.clone());
        let mut daemon = Daemon {
            reactor: Reactor::new(Box::new(clock.clone()), world, fx),
            setup,
            scheduler,
            sources,
            cluster,
            metrics: None,
            control,
            outcomes: None,
            history,
        };
        setup::load_at_start(&mut daemon, now);
        (daemon, clock)
    }

    /// One turn of the loop whose wait plays `beat`.
    fn turn(d: &mut TestDaemon, beat: Beat) -> Turn {
        d.reactor.world.then(beat);
        d.turn().expect("a turn")
    }

    /// How many times one turn armed the timer.
    fn arms_in(d: &mut TestDaemon, beat: Beat) -> usize {
        let before = d.reactor.fx.armed.len();
        turn(d, beat);
        d.reactor.fx.armed.len() - before
    }

    /// The commands of the jobs started so far.
    fn started(d: &TestDaemon) -> Vec<&str> {
        d.reactor
            .fx
            .started
            .iter()
            .map(|(c, _)| c.as_str())
            .collect()
    }

    /// The runs and ends the helper was sent since the last look ("": none); the lists of
    /// entries are [`helper_lines`]'s.
    fn helper_got(d: &mut TestDaemon) -> String {
        helper_lines(d)
            .lines()
            .filter(|l| !l.starts_with("ENTRY ") && !l.starts_with("LOADED "))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    /// Every line the helper was sent since the last look ("": nothing).
    fn helper_lines(d: &mut TestDaemon) -> String {
        let helper = d.reactor.fx.helper.as_mut().expect("a helper");
        helper.set_nonblocking(true).unwrap();
        let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
        loop {
            match helper.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) => panic!("{e}"),
            }
        }
        String::from_utf8(got).unwrap()
    }

    fn helper_says(d: &mut TestDaemon, line: &str) {
        let helper = d.reactor.fx.helper.as_mut().expect("a helper");
        helper.write_all(line.as_bytes()).unwrap();
    }

    /// A cluster run of alice's `command`, due at 10:01, asked for (`RUN 1`) and granted
    /// (`GO 1`): the daemon at the turn after the helper's answer.
    fn granted(command: &str) -> (TestDaemon, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        let text = format!("CRON_CLUSTER=nightly\n* * * * * {command}\n");
        fx.put(alice(), &text, Some(Uid(1000)), 1);
        let (mut d, _) = start(in_cluster(options(dir.path())), fx);
        turn(&mut d, Beat::after(30_000).timer(Tick::Fired));
        let asked = helper_got(&mut d);
        assert!(asked.starts_with("RUN 1 "), "{asked:?}");
        assert!(started(&d).is_empty(), "a cluster run waits for the answer");
        helper_says(&mut d, "GO 1\n");
        turn(&mut d, Beat::after(200).ready(Token::Helper));
        // Forked: the helper is told, so that it marks more runs started.
        let forked = helper_got(&mut d);
        assert!(
            forked.starts_with("FORKED ") && forked.lines().count() == 1,
            "{forked:?}"
        );
        (d, dir)
    }

    #[test]
    fn what_a_reaped_job_child_said_of_its_end_reaches_its_entrys_last_run() {
        let (mut d, _dir) = granted("backup");
        let (outcomes, write_end) = Outcomes::open().expect("a pipe");
        d.outcomes = Some(outcomes);
        let pid = d.scheduler.running_pids()[0];
        let said = crate::job::report::Said::Ended {
            end: crate::job::report::End::Exited(3),
            duration_ms: 4_990,
        };
        // Written before the child exits, as a job child does; the turn that reaps it reads
        // the pipe first, whether or not its poll saw the pipe ready.
        let line = said.outcome_line(pid.0 as u32).unwrap();
        let mut pipe = std::fs::File::from(write_end.fd().try_clone_to_owned().unwrap());
        std::io::Write::write_all(&mut pipe, line.as_bytes()).unwrap();
        turn(
            &mut d,
            Beat::after(5_000).reaped(vec![(pid, Exit::Code(1))]),
        );
        let id = d.sources.entries().next().expect("the entry");
        let state = d.scheduler.entry_state(id).expect("loaded");
        assert_eq!(state.last.len(), 1);
        assert_eq!(state.last[0].said, Some(said));
    }

    #[test]
    fn a_reaped_job_child_ends_in_the_scheduler_and_its_cluster_runs_end_goes_to_the_helper() {
        let (mut d, _dir) = granted("backup");
        assert_eq!(started(&d), ["backup"]);
        let pid = d.scheduler.running_pids()[0];
        turn(
            &mut d,
            Beat::after(5_000).reaped(vec![(pid, Exit::Code(0))]),
        );
        assert_eq!(d.scheduler.running_len(), 0);
        let end = helper_got(&mut d);
        assert!(end.starts_with("END "), "{end:?}");
    }

    #[test]
    fn a_job_child_that_did_not_start_its_job_is_forgotten_by_the_link_and_its_run_claimed_again() {
        let (mut d, _dir) = granted("backup");
        let pid = d.scheduler.running_pids()[0];
        let not_started = vec![(pid, Exit::Code(crate::job::NOT_STARTED))];
        // Its run is back in the queue: the timer is armed again.
        assert_eq!(arms_in(&mut d, Beat::after(100).reaped(not_started)), 1);
        assert_eq!(helper_got(&mut d), "", "no END: nothing ran");
        // A second later the run comes up again and is asked for again.
        turn(&mut d, Beat::after(1_000));
        turn(&mut d, Beat::after(0));
        let asked = helper_got(&mut d);
        assert!(asked.starts_with("RUN 2 "), "{asked:?}");
        assert_eq!(started(&d), ["backup"]);
    }

    #[test]
    fn in_cluster_mode_a_local_run_starts_at_once_and_a_cluster_run_once_the_helper_says_go() {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        let text = "* * * * * local\nCRON_CLUSTER=nightly\n* * * * * shared\n";
        fx.put(alice(), text, Some(Uid(1000)), 1);
        let (mut d, _) = start(in_cluster(options(dir.path())), fx);
        turn(&mut d, Beat::after(30_000).timer(Tick::Fired));
        assert_eq!(started(&d), ["local"]);
        let asked = helper_got(&mut d);
        assert!(asked.starts_with("RUN 1 "), "{asked:?}");
        helper_says(&mut d, "GO 1\n");
        turn(&mut d, Beat::after(200).ready(Token::Helper));
        assert_eq!(started(&d), ["local", "shared"]);
    }

    #[test]
    fn the_helper_is_sent_the_cluster_entries_after_a_load_that_changed_them_and_when_it_restarts()
    {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        let text = "* * * * * local\nCRON_CLUSTER=nightly\n0 5 * * * shared\n";
        fx.put(alice(), text, Some(Uid(1000)), 1);
        let (mut d, _) = start(in_cluster(options(dir.path())), fx);
        turn(&mut d, Beat::after(100));
        let listed = helper_lines(&mut d);
        let lines: Vec<&str> = listed.lines().collect();
        assert_eq!(lines.len(), 2, "{listed:?}");
        assert!(
            lines[0].starts_with("ENTRY nightly alice ")
                && lines[0].ends_with(" spool/alice:3 shared"),
            "{listed:?}"
        );
        assert_eq!(lines[1], "LOADED 1 0");
        // A reload that changes nothing sends nothing.
        let hangup = Arrived {
            hangup: true,
            ..Arrived::default()
        };
        turn(&mut d, Beat::after(100).signals(hangup));
        turn(&mut d, Beat::after(100));
        assert_eq!(helper_lines(&mut d), "");
        // The entry moved to line 4: listed again.
        let moved = "* * * * * local\n\nCRON_CLUSTER=nightly\n0 5 * * * shared\n";
        d.reactor.fx.put(alice(), moved, Some(Uid(1000)), 2);
        turn(&mut d, Beat::after(100).signals(hangup));
        turn(&mut d, Beat::after(100));
        let again = helper_lines(&mut d);
        assert!(
            again.contains(" spool/alice:4 shared\nLOADED 1 0\n"),
            "{again:?}"
        );
        // A helper started again is sent the list it lacks.
        d.reactor.fx.helper = None;
        turn(&mut d, Beat::after(100).ready(Token::Helper));
        assert_eq!(d.reactor.fx.logged("cluster helper lost").len(), 1);
        turn(&mut d, Beat::after(5_000));
        turn(&mut d, Beat::after(100));
        assert!(helper_lines(&mut d).contains(" spool/alice:4 shared\nLOADED 1 0\n"));
    }

    #[test]
    fn a_failed_cluster_run_with_cron_retry_is_retried_on_its_host_without_a_second_claim() {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        let text = "CRON_CLUSTER=nightly\nCRON_RETRY=1\nCRON_RETRY_DELAY=2\n* * * * * shared\n";
        fx.put(alice(), text, Some(Uid(1000)), 1);
        let (mut d, _) = start(in_cluster(options(dir.path())), fx);
        turn(&mut d, Beat::after(30_000).timer(Tick::Fired));
        assert!(helper_got(&mut d).starts_with("RUN 1 "));
        helper_says(&mut d, "GO 1\n");
        turn(&mut d, Beat::after(200).ready(Token::Helper));
        assert!(helper_got(&mut d).starts_with("FORKED "));
        let pid = d.scheduler.running_pids()[0];
        turn(
            &mut d,
            Beat::after(1_000).reaped(vec![(pid, Exit::Code(1))]),
        );
        assert!(
            helper_got(&mut d).starts_with("END "),
            "the claim's run ends"
        );
        // Two seconds later the retry starts here: no RUN asked of the helper.
        turn(&mut d, Beat::after(2_000));
        turn(&mut d, Beat::after(0));
        assert_eq!(started(&d), ["shared", "shared"]);
        assert_eq!(helper_got(&mut d), "", "no second claim");
        let facts = &d.reactor.fx.facts;
        assert_eq!(facts[1].slot, facts[0].slot);
        assert_eq!(facts[1].cluster, facts[0].cluster);
        let attempt = facts[1].retry.map(|plan| plan.attempt);
        assert_eq!(attempt, Some(crate::history::Attempt { number: 2, of: 2 }));
    }

    #[test]
    fn a_granted_run_whose_fork_failed_starts_from_the_queue_without_a_second_claim() {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        fx.put(
            alice(),
            "CRON_CLUSTER=nightly\n* * * * * shared\n",
            Some(Uid(1000)),
            1,
        );
        let (mut d, _) = start(in_cluster(options(dir.path())), fx);
        turn(&mut d, Beat::after(30_000).timer(Tick::Fired));
        assert!(helper_got(&mut d).starts_with("RUN 1 "));
        d.reactor.fx.fail_starts = 1;
        helper_says(&mut d, "GO 1\n");
        turn(&mut d, Beat::after(200).ready(Token::Helper));
        assert!(started(&d).is_empty());
        assert_eq!(
            helper_got(&mut d),
            "",
            "not forked: the helper is told nothing"
        );
        // A second later it comes up again: granted already, it starts.
        turn(&mut d, Beat::after(1_000));
        turn(&mut d, Beat::after(0));
        assert_eq!(started(&d), ["shared"]);
        let forked = helper_got(&mut d);
        assert!(
            forked.starts_with("FORKED "),
            "not asked for again: {forked:?}"
        );
        let pid = d.scheduler.running_pids()[0];
        turn(
            &mut d,
            Beat::after(5_000).reaped(vec![(pid, Exit::Code(0))]),
        );
        assert!(helper_got(&mut d).starts_with("END "));
    }

    #[test]
    fn a_granted_run_whose_forks_fail_until_the_next_minute_is_given_up_and_said_forked() {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        fx.put(
            alice(),
            "CRON_CLUSTER=nightly\n* * * * * shared\n",
            Some(Uid(1000)),
            1,
        );
        let (mut d, _) = start(in_cluster(options(dir.path())), fx);
        turn(&mut d, Beat::after(30_000).timer(Tick::Fired));
        assert!(helper_got(&mut d).starts_with("RUN 1 "));
        d.reactor.fx.fail_starts = usize::MAX;
        helper_says(&mut d, "GO 1\n");
        turn(&mut d, Beat::after(200).ready(Token::Helper));
        // Tried again every second through 10:01, never asked for again.
        for _ in 0..58 {
            turn(&mut d, Beat::after(1_000));
        }
        assert_eq!(helper_got(&mut d), "");
        assert!(d.reactor.fx.logged("FORK FAILED").is_empty());
        // 10:02: 10:01's run is given up (the helper hears it was acted on), and 10:02's is
        // asked for.
        turn(&mut d, Beat::after(1_800).timer(Tick::Fired));
        turn(&mut d, Beat::after(0));
        let got = helper_got(&mut d);
        let lines: Vec<&str> = got.lines().collect();
        let [forked, run] = lines[..] else {
            panic!("{got:?}")
        };
        assert!(
            forked.starts_with("FORKED ") && run.starts_with("RUN 2 "),
            "{got:?}"
        );
        let said = "(alice) FORK FAILED (shared) due at 10:01, no process for it in ";
        assert_eq!(
            d.reactor.fx.logged(said).len(),
            1,
            "{:?}",
            d.reactor.fx.lines
        );
        assert!(started(&d).is_empty());
    }

    #[test]
    fn a_cluster_run_granted_later_than_its_cron_late_is_not_started_and_said_forked() {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        let text = "CRON_CLUSTER=nightly\nCRON_LATE=10s\n* * * * * shared\n";
        fx.put(alice(), text, Some(Uid(1000)), 1);
        let (mut d, _) = start(in_cluster(options(dir.path())), fx);
        turn(&mut d, Beat::after(30_000).timer(Tick::Fired));
        assert!(helper_got(&mut d).starts_with("RUN 1 "));
        // The database answers 15 s after 10:01.
        helper_says(&mut d, "GO 1\n");
        turn(&mut d, Beat::after(15_000).ready(Token::Helper));
        assert!(started(&d).is_empty());
        let said = "(alice) LATE (shared) due at 10:01, 15s late: not started (CRON_LATE)";
        assert_eq!(
            d.reactor.fx.logged(said).len(),
            1,
            "{:?}",
            d.reactor.fx.lines
        );
        // Acted on, as a run skipped: the helper marks more runs started.
        assert!(helper_got(&mut d).starts_with("FORKED "));
    }

    #[test]
    fn a_run_requeued_after_the_fork_of_the_one_waiting_for_it_failed_arms_the_timer_again() {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        fx.put(
            alice(),
            "CRON_OVERLAP=queue\n* * * * * sleep\n",
            Some(Uid(1000)),
            1,
        );
        let (mut d, _) = start(options(dir.path()), fx);
        turn(&mut d, Beat::after(30_000).timer(Tick::Fired));
        let pid = d.scheduler.running_pids()[0];
        // 10:02: the next run waits for the running one.
        turn(&mut d, Beat::after(60_000).timer(Tick::Fired));
        assert_eq!(d.reactor.fx.logged(" WAIT (sleep)").len(), 1);
        d.reactor.fx.fail_starts = 1;
        let reaped = Beat::after(5_000).reaped(vec![(pid, Exit::Code(0))]);
        assert_eq!(arms_in(&mut d, reaped), 1);
        assert_eq!(started(&d), ["sleep"]);
        // Back first in line, which waits a second as after any failed fork.
        turn(&mut d, Beat::after(1_000));
        assert_eq!(started(&d), ["sleep"]);
        turn(&mut d, Beat::after(0));
        assert_eq!(started(&d), ["sleep", "sleep"]);
    }

    #[test]
    fn a_minutes_runs_start_a_batch_at_a_time_with_a_wait_between_batches() {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        let text: String = (0..150).map(|i| format!("* * * * * job{i}\n")).collect();
        fx.put(alice(), &text, Some(Uid(1000)), 1);
        let (mut d, _) = start(options(dir.path()), fx);
        turn(&mut d, Beat::after(30_000).timer(Tick::Fired));
        assert_eq!(started(&d).len(), START_BATCH);
        // The next batch starts before the next wait, which then only looks (a backlog).
        turn(&mut d, Beat::after(0));
        assert_eq!(started(&d).len(), 2 * START_BATCH);
        assert_eq!(d.reactor.world.last_timeout(), Some(0));
        turn(&mut d, Beat::after(0));
        assert_eq!(started(&d).len(), 150);
        assert_eq!(started(&d)[149], "job149");
    }

    #[test]
    fn a_failed_fork_ends_the_batch_and_the_line_waits_a_second() {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        fx.put(
            alice(),
            "* * * * * a\n* * * * * b\n* * * * * c\n",
            Some(Uid(1000)),
            1,
        );
        fx.fail_starts = 2;
        let (mut d, _) = start(options(dir.path()), fx);
        turn(&mut d, Beat::after(30_000).timer(Tick::Fired));
        assert_eq!(d.reactor.fx.fail_starts, 1, "one fork tried");
        turn(&mut d, Beat::after(1_000));
        assert_eq!(d.reactor.world.last_timeout(), Some(1_000));
        assert_eq!(
            d.reactor.fx.fail_starts, 1,
            "none tried while the line waits"
        );
        turn(&mut d, Beat::after(1_000));
        assert_eq!(d.reactor.fx.fail_starts, 0);
        assert!(started(&d).is_empty());
        turn(&mut d, Beat::after(0));
        assert_eq!(started(&d), ["a", "b", "c"]);
    }

    #[test]
    fn a_run_asked_for_on_the_control_socket_whose_fork_failed_arms_the_timer_again() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("crond.sock");
        let options = Options {
            control_socket: Some(socket.clone()),
            ..options(dir.path())
        };
        let mut fx = Recorded::default();
        let me = crate::sys::user::effective_uid();
        fx.put(alice(), "0 0 1 1 * yearly\n", Some(me), 1);
        let (mut d, _) = start(options, fx);
        let id = d.sources.entries().next().expect("an entry");
        let line = d.scheduler.entry_state(id).expect("its state").job.entry();
        let mut client = UnixStream::connect(&socket).unwrap();
        client
            .write_all(format!("run {line}\n").as_bytes())
            .unwrap();
        d.reactor.fx.fail_starts = 1;
        let asked = Beat::after(100).ready(Token::Control(control::Token::Listener));
        assert_eq!(arms_in(&mut d, asked), 1);
        client
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut answer = [0u8; 512];
        let n = client.read(&mut answer).unwrap();
        let answer = String::from_utf8_lossy(&answer[..n]);
        assert!(
            answer.contains("the fork failed; the run is queued"),
            "{answer}"
        );
        // Retried a second later, from the queue.
        turn(&mut d, Beat::after(1_000));
        turn(&mut d, Beat::after(0));
        assert_eq!(started(&d), ["yearly"]);
    }

    #[test]
    fn a_hangup_reopens_the_log_reloads_every_crontab_and_looks_at_the_clock() {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        fx.put(SourceKey::System, "* * * * * root system\n", None, 1);
        fx.put(alice(), "* * * * * user\n", Some(Uid(1000)), 1);
        let (mut d, _) = start(options(dir.path()), fx);
        assert!(d.reactor.fx.logged(" RELOAD (").is_empty());
        // The clock was stepped ahead unseen; the hang-up is the first the daemon hears.
        let hangup = Arrived {
            hangup: true,
            ..Arrived::default()
        };
        turn(&mut d, Beat::after(3 * 60_000 + 30_000).signals(hangup));
        let fx = &d.reactor.fx;
        assert_eq!(fx.reopened, 1);
        assert_eq!(fx.logged("SIGHUP: reloading every crontab").len(), 1);
        assert_eq!(fx.logged("(*system*) RELOAD (").len(), 1, "{:?}", fx.lines);
        assert_eq!(fx.logged("(alice) RELOAD (spool/alice)").len(), 1);
        assert_eq!(fx.logged("clock set: ").len(), 1, "{:?}", fx.lines);
        assert!(started(&d).contains(&"system"), "{:?}", started(&d));
    }

    #[test]
    fn a_terminate_or_interrupt_signal_ends_the_loop_once_the_scheduler_said_what_is_left() {
        for stop in [
            Arrived {
                terminate: true,
                ..Arrived::default()
            },
            Arrived {
                interrupt: true,
                ..Arrived::default()
            },
        ] {
            let dir = tempfile::tempdir().unwrap();
            let mut fx = Recorded::default();
            fx.put(alice(), "* * * * * long\n", Some(Uid(1000)), 1);
            let (mut d, _) = start(options(dir.path()), fx);
            d.reactor.world.then(Beat::after(30_000).timer(Tick::Fired));
            d.reactor.world.then(Beat::after(1_000).signals(stop));
            d.run()
                .expect("stopped by the signal, not by the script's end");
            let fx = &d.reactor.fx;
            assert_eq!(fx.logged("Shutting down").len(), 1, "{:?}", fx.lines);
            assert_eq!(fx.logged("1 job still running").len(), 1);
            assert_eq!(d.reactor.world.stopping_notified, 1);
        }
    }

    /// A daemon with inotify over `dir`'s real directories (the crontabs a load finds are
    /// `fx`'s).
    fn watching(dir: &Path, fx: Recorded) -> TestDaemon {
        for sub in ["spool", "cron.d"] {
            std::fs::create_dir(dir.join(sub)).unwrap();
        }
        let options = Options {
            no_inotify: false,
            ..options(dir)
        };
        let (d, _) = start(options, fx);
        assert_eq!(d.reactor.fx.logged("inotify").len(), 1);
        d
    }

    #[test]
    fn an_inotify_event_reloads_the_crontab_it_names_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let mut fx = Recorded::default();
        fx.put(SourceKey::System, "* * * * * root system\n", None, 1);
        let mut d = watching(dir.path(), fx);
        let text = "* * * * * root b\n";
        std::fs::write(dir.path().join("cron.d/b"), text).unwrap();
        d.reactor
            .fx
            .put(SourceKey::CronD("b".into()), text, None, 2);
        assert_eq!(arms_in(&mut d, Beat::after(100).ready(Token::Files)), 1);
        let fx = &d.reactor.fx;
        assert_eq!(fx.logged(" RELOAD (").len(), 1, "{:?}", fx.lines);
        assert_eq!(fx.logged("(*system*b) RELOAD (").len(), 1, "{:?}", fx.lines);
        assert_eq!((d.scheduler.len(), d.sources.len()), (2, 2));
    }

    #[test]
    fn a_zone_change_seen_by_inotify_goes_to_the_scheduler() {
        let dir = tempfile::tempdir().unwrap();
        let mut d = watching(dir.path(), Recorded::default());
        assert_eq!(d.scheduler.local_zone().name(), "UTC");
        let zone = "/usr/share/zoneinfo/America/New_York";
        std::os::unix::fs::symlink(zone, dir.path().join("localtime")).unwrap();
        turn(&mut d, Beat::after(100).ready(Token::Files));
        assert_eq!(d.scheduler.local_zone().name(), "America/New_York");
    }
}
