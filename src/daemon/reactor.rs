//! The reactor: the daemon's loop, and the start-up that builds the owners it runs
//! ([`Daemon::start`]). Each turn it waits in `poll` for the
//! descriptors the owners hold (registered with typed [`Token`]s), reads the clock ONCE
//! through [`Clock`], and dispatches: each ready descriptor to its owner, with the time; what
//! one owner returns — a reload's [`Change`](super::flow::Change), a run that comes up, a
//! [`Claim`], [`Granted`] runs, what a launch did — it passes to the next. The owners
//! ([`Scheduler`], [`Sources`], [`ClusterLink`], [`MetricsServer`], [`ControlServer`]) keep
//! their fields private, never call each other, and act on the world only through the
//! [`Effects`] they are handed.
//!
//! A new owner is a new file and a few lines here: a field of [`Daemon`], a [`Token`]
//! variant, its descriptors added in [`Daemon::wait`], and one line in [`Daemon::dispatch`]
//! that passes what it returns to the owner it concerns (as the control socket's runs go to
//! the scheduler, and what became of them back).

use jiff::Timestamp;

use super::clock::{Clock, WallClock};
use super::cluster::ClusterLink;
use super::control::{self, ControlServer};
use super::effects::{Effects, RealEffects};
use super::flow::{Claim, Granted, Launched};
use super::metrics_serve::{self, MetricsServer};
use super::scheduler::{Reaped, Scheduler, Wake};
use super::setup::{self, Setup};
use super::sources::{Announce, Sources};
use super::stop::Stop;
use super::{Error, Options};
use crate::database::SourceKey;
use crate::job::JobSpec;
use crate::log::{Log, lines};
use crate::sys::fs::PidLock;
use crate::sys::poll::{Interest, Registry};
use crate::sys::process;
use crate::sys::signal::SignalPipe;
use crate::sys::timer::{MinuteTimer, Tick};

/// Jobs started between two looks at signals and events.
const START_BATCH: usize = 64;

/// What the loop polls, as the tokens of its descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Signals,
    Timer,
    /// inotify (the sources).
    Files,
    /// The cluster helper's socket.
    Helper,
    Metrics(metrics_serve::Token),
    Control(control::Token),
}

/// Whether the loop goes on after a turn.
#[derive(Debug, PartialEq, Eq)]
enum Turn {
    Continue,
    Stop,
}

/// The loop's own parts: where the time comes from, the signals, the way out.
pub(super) struct Reactor {
    clock: Box<dyn Clock>,
    signals: SignalPipe,
    fx: RealEffects,
}

/// The running daemon: the reactor, the setup and the owners, nothing else.
pub(super) struct Daemon {
    reactor: Reactor,
    setup: Setup,
    scheduler: Scheduler,
    sources: Sources,
    cluster: Option<ClusterLink>,
    metrics: Option<MetricsServer>,
    control: Option<ControlServer>,
}

/// How long poll may sleep before the next queued job may start: `None` (no bound) with nothing
/// queued; 0 for a job ready now; at most a minute, so a clock step can't leave it asleep long.
fn start_timeout_ms(now_ms: i64, next_start_ms: Option<i64>) -> Option<u32> {
    next_start_ms.map(|at| at.saturating_sub(now_ms).clamp(0, 60_000) as u32)
}

impl Daemon {
    /// Sets the daemon up and loads every crontab: ready to [`Daemon::run`].
    pub(super) fn start(options: Options, log: Log, lock: PidLock) -> Result<Daemon, Error> {
        let clock = WallClock;
        let now = clock.now();
        let signals = SignalPipe::install().map_err(|e| Error::Io("signal handlers", e))?;
        let timer = MinuteTimer::new().map_err(|e| Error::Io("timerfd", e))?;
        let child = options.child_setup(log, crate::sys::user::effective_uid().0 == 0)?;
        let mut fx = RealEffects::new(log, child, timer);
        let setup = Setup::new(options, lock);
        let delay_factor = setup::random_delay_factor(now);
        let o = &setup.options;
        let (sources, zone) = Sources::new(
            o.paths(),
            setup.rules(),
            o.localtime(),
            delay_factor,
            &mut fx,
        );
        let scheduler = Scheduler::new(now, zone, o.state_dir());
        setup.log_start_lines(delay_factor, &mut fx);
        setup.prepare_job_children(&mut fx);
        let metrics = match o.metrics.is_empty() {
            true => None,
            false => Some(MetricsServer::listen(
                &o.metrics,
                o.metrics_group.as_deref(),
                o.metrics_entries_on_tcp,
                &mut fx,
            )?),
        };
        let control = ControlServer::listen(o.control_socket(), now.as_millisecond(), &mut fx)?;
        // Started before the crontabs are loaded: the helper is small when it forks.
        let cluster = setup.cluster_link(now, &mut fx);
        let reactor = Reactor {
            clock: Box::new(clock),
            signals,
            fx,
        };
        let mut daemon = Daemon {
            reactor,
            setup,
            scheduler,
            sources,
            cluster,
            metrics,
            control,
        };
        daemon.load_at_start(now);
        Ok(daemon)
    }

    /// Watches the files, loads every crontab, runs @reboot and what was missed, arms the
    /// timer and tells systemd the daemon is ready. `started`: when the start began.
    fn load_at_start(&mut self, started: Timestamp) {
        let fx = &mut self.reactor.fx;
        self.sources.watch(self.setup.options.no_inotify, fx);
        // `@every` intervals count from the start.
        self.scheduler.set_every_base(started.as_millisecond());
        let reboot = self.load_all(Announce::Never, started);
        let (entries, files) = (self.scheduler.len(), self.sources.len());
        let fx = &mut self.reactor.fx;
        fx.info(lines::loaded_line(entries, files));
        let now = self.reactor.clock.now();
        let marker = self.setup.options.reboot_marker();
        self.scheduler.reboot(reboot, &marker, now, fx);
        self.scheduler.make_up_after_start(now, fx);
        self.arm(now);
        // systemd's Type=notify: ready once every crontab is loaded (a no-op without systemd).
        let status = format!("{entries} entries from {files} files");
        if let Err(e) = crate::sys::notify::notify(&format!(
            "READY=1\n{}",
            crate::sys::notify::status_message(&status)
        )) {
            self.reactor.fx.error(lines::notify_failed_line(&e));
        }
    }

    /// The loop: start what is due, wait, read the clock, dispatch what is ready. Returns on
    /// SIGTERM or SIGINT.
    pub(super) fn run(&mut self) -> Result<(), Error> {
        let mut now = self.reactor.clock.now();
        loop {
            self.start_what_is_due(now);
            let timeout = self.timeout_ms(now);
            let answered_large = self.control.as_mut().is_some_and(ControlServer::take_freed);
            if self.sources.take_freed() | answered_large {
                self.scheduler.shrink();
                crate::sys::memory::give_back_free_memory();
            }
            let ready = self.wait(timeout)?;
            now = self.reactor.clock.now();
            if self.dispatch(&ready, now)? == Turn::Stop {
                return Ok(());
            }
        }
    }

    /// Before the wait: a clock found away from where the timer was left is handled as the
    /// kernel's notice would be; the `@every` runs and the queued ones whose time has come
    /// start.
    fn start_what_is_due(&mut self, now: Timestamp) {
        if self.scheduler.clock_moved(now) {
            self.on_minute(now, Wake::ClockMoved);
        }
        self.scheduler.every_due(now.as_millisecond());
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
            self.cluster.as_ref().and_then(|c| c.next_deadline_ms()),
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

    /// One `poll` over every owner's descriptors: the tokens of those ready.
    fn wait(&mut self, timeout_ms: Option<u32>) -> Result<Vec<Token>, Error> {
        let mut registry = Registry::new();
        registry.add(Token::Signals, self.reactor.signals.fd(), Interest::Read);
        registry.add(Token::Timer, self.reactor.fx.timer().fd(), Interest::Read);
        if let Some(fd) = self.sources.fd() {
            registry.add(Token::Files, fd, Interest::Read);
        }
        if let Some(link) = &self.cluster {
            for (fd, interest) in link.fds() {
                registry.add(Token::Helper, fd, interest);
            }
        }
        if let Some(server) = &self.metrics {
            for (token, fd, interest) in server.fds() {
                registry.add(Token::Metrics(token), fd, interest);
            }
        }
        if let Some(server) = &self.control {
            for (token, fd, interest) in server.fds() {
                registry.add(Token::Control(token), fd, interest);
            }
        }
        let ready = registry
            .wait(timeout_ms)
            .map_err(|e| Error::Io("poll", e))?;
        Ok(ready.iter().collect())
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
        if ready.contains(&Token::Signals) && self.on_signals(now) == Turn::Stop {
            return Ok(Turn::Stop);
        }
        if ready.contains(&Token::Files) {
            self.on_files(now);
        }
        if ready.contains(&Token::Helper) {
            self.on_helper(now_ms);
        }
        if let Some(link) = &mut self.cluster {
            let zone = self.scheduler.local_zone();
            link.on_deadline(now_ms, zone, &mut self.reactor.fx);
        }
        if ready.contains(&Token::Timer) {
            match self.reactor.fx.timer().read() {
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
        for granted in link.on_readable(now_ms, zone, &mut self.reactor.fx) {
            self.launch_granted(granted, now_ms);
        }
    }

    /// The control socket: its requests answered from the scheduler's entries in the sources'
    /// order; each run asked for started by the scheduler, and what became of it told back.
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
        let (scheduler, sources) = (&self.scheduler, &self.sources);
        let status = server.status(now_ms, scheduler.local_zone(), scheduler.running_len());
        let snapshot = |peer: &crate::control::Peer, want: &crate::control::Want<'_>| {
            let entries = sources.entries().filter_map(|id| scheduler.entry_state(id));
            control::snapshot(peer, want, entries, status.clone())
        };
        let orders = server.serve(&tokens, now_ms, &snapshot, &mut self.reactor.fx);
        let mut failed = false;
        for order in orders {
            let asked_by = order.peer.describe();
            let fx = &mut self.reactor.fx;
            let launched = self.scheduler.run_now(order.entry, &asked_by, now, fx);
            failed |= matches!(launched, Some(Launched::Failed { .. }));
            server.ran(&order, launched);
        }
        if failed {
            // Back in the queue, retried in a second.
            self.arm(now);
        }
    }

    /// Signals: children reaped (to the cluster link and the scheduler), a stop, a reload.
    fn on_signals(&mut self, now: Timestamp) -> Turn {
        let arrived = self.reactor.signals.drain();
        if arrived.child {
            // The job child logs its own end (it knows the command and the shell's status);
            // the daemon learns here which entry's job ended.
            for (pid, exit) in process::reap() {
                let fx = &mut self.reactor.fx;
                let reaped = self.scheduler.on_reaped(pid, exit, now, fx);
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
        }
        if arrived.terminate || arrived.interrupt {
            let stops_jobs = self.setup.stops_jobs();
            self.scheduler.stopping(stops_jobs, &mut self.reactor.fx);
            let _ = crate::sys::notify::stopping();
            if stops_jobs {
                // As PID 1 or with --stop-jobs: the running jobs are stopped (daemon/stop.rs).
                let reactor = &mut self.reactor;
                let stop = Stop {
                    scheduler: &mut self.scheduler,
                    signals: &mut reactor.signals,
                    clock: &*reactor.clock,
                };
                stop.run(self.setup.stop_timeout_s(), &mut reactor.fx);
            }
            return Turn::Stop;
        }
        if arrived.hangup {
            self.reactor.fx.reopen_log();
            self.reactor.fx.info(lines::hangup_line());
            self.load_all(Announce::Always, now);
            self.scheduler.files_loaded(&mut self.reactor.fx);
            // As a clock change: a step the kernel did not report is acted on now (a minute
            // already handled is not run again).
            self.on_minute(now, Wake::ClockMoved);
        }
        Turn::Continue
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
        for _ in 0..START_BATCH {
            let Some(run) = self.scheduler.next_to_start(now_ms) else {
                break;
            };
            let fx = &mut self.reactor.fx;
            let run = match &mut self.cluster {
                None => run,
                Some(link) => {
                    let entry = self.scheduler.cluster_entry(&run);
                    match link.claim(run, entry, now_ms, self.scheduler.local_zone(), fx) {
                        Claim::Local(run) => run,
                        Claim::Granted(granted) => {
                            self.launch_granted(granted, now_ms);
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

    /// Arms the timer for the scheduler's next wake-up.
    fn arm(&mut self, now: Timestamp) {
        let every_minute = self.sources.looks_every_minute();
        self.scheduler.arm(now, every_minute, &mut self.reactor.fx);
    }

    /// Loads every source (and drops the ones that vanished); returns the @reboot jobs found.
    fn load_all(&mut self, announce: Announce, now: Timestamp) -> Vec<JobSpec> {
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
        let reboot = std::mem::take(&mut change.reboot);
        let added = self.scheduler.apply(change, now.as_millisecond(), fx);
        self.sources.settle(pending, &added, fx);
        reboot
    }
}
