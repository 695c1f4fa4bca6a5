//! The daemon's state and its `poll` loop: one wait over the signal self-pipe, the minute timer
//! and inotify, then one handler per descriptor that is ready. The loop reads the wall clock
//! once per event and passes it down; the decisions are made by pure parts —
//! [`Cycle`] (what a minute starts, when to wake), [`Sources`] (what
//! to reload, when to log a refusal again), [`watch::sort`] (which source an event concerns) —
//! and the handlers in `load.rs` and `minute.rs` carry them out.

use std::path::PathBuf;

use jiff::Timestamp;

use super::metrics_serve::MetricsServer;
use super::minute::Wake;
use super::running::Running;
use super::sources::Sources;
use super::watch::{self, Watches};
use super::{Error, Options};
use crate::database::{Paths, Rules};
use crate::job::{ChildSetup, JobSpec};
use crate::log::{Level, Log};
use crate::metrics::{Metrics, Outcome};
use crate::schedule::{self, Zone};
use crate::sys::fs::PidLock;
use crate::sys::inotify::Lost;
use crate::sys::poll::{Interest, Registry};
use crate::sys::process;
use crate::sys::signal::SignalPipe;
use crate::sys::timer::{MinuteTimer, Tick};
use crate::timeline::{Cycle, UtcMinute, clock_moved};

pub(super) struct Daemon {
    pub(super) options: Options,
    pub(super) paths: Paths,
    pub(super) rules: Rules,
    pub(super) log: Log,
    _lock: PidLock,
    /// The entries, their jobs, and the jobs due.
    pub(super) cycle: Cycle<JobSpec>,
    /// Which files are loaded and which were refused.
    pub(super) sources: Sources,
    /// Running job children, by pid and by entry.
    pub(super) running: Running<JobSpec>,
    signals: SignalPipe,
    pub(super) timer: MinuteTimer,
    /// `None`: no inotify; files are checked every minute.
    pub(super) watches: Option<Watches>,
    pub(super) setup: ChildSetup,
    /// cronie's RANDOM_DELAY scale, in [0, 1), drawn once per daemon start.
    pub(super) delay_factor: f64,
    pub(super) fork_failures: super::minute::ForkFailures,
    /// The minute the timer is armed for.
    pub(super) armed: UtcMinute,
    /// The local zone's file, and its stamp when it was read last.
    pub(super) localtime: PathBuf,
    pub(super) zone_stamp: Option<super::zone::Stamp>,
    /// A reload freed memory since the loop last gave free memory back.
    pub(super) freed: bool,
    /// The minute the state file was last written with (`daemon::missed`).
    pub(super) written_handled: Option<UtcMinute>,
    /// What happened to jobs, for `--metrics`.
    pub(super) metrics: Metrics,
    pub(super) metrics_server: Option<MetricsServer>,
    /// Cluster mode (`--cluster-db`): the helper and the runs waiting on it.
    pub(super) cluster: Option<super::cluster::ClusterLink>,
}

/// The one place the daemon reads the wall clock.
pub(super) fn wall_clock() -> Timestamp {
    Timestamp::now()
}

/// How long poll may sleep before the next queued job may start: `None` (no bound) with nothing
/// queued; 0 for a job ready now; at most a minute, so a clock step can't leave it asleep long.
fn start_timeout_ms(now_ms: i64, next_start_ms: Option<i64>) -> Option<u32> {
    next_start_ms.map(|at| at.saturating_sub(now_ms).clamp(0, 60_000) as u32)
}

/// cronie's RANDOM_DELAY factor: one draw per daemon start, so every job of a host with the
/// same RANDOM_DELAY starts the same time after its minute, and different hosts spread out.
fn random_delay_factor() -> f64 {
    let mut bytes = [0u8; 8];
    let bits = match crate::sys::random_bytes(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        // No /dev/urandom: the clock's nanoseconds still differ between hosts.
        Err(_) => wall_clock().as_nanosecond() as u64 ^ u64::from(std::process::id()),
    };
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// What the loop polls, as the tokens of its descriptors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Signals,
    Timer,
    /// inotify.
    Files,
    /// The cluster helper's socket.
    Helper,
    Metrics(super::metrics_serve::Token),
}

/// Which of the polled sources are ready.
struct Ready {
    signals: bool,
    timer: bool,
    files: bool,
    /// The cluster helper's socket.
    helper: bool,
}

/// What the signals that arrived ask for.
enum AfterSignals {
    Continue,
    Stop,
}

impl Daemon {
    /// Sets the daemon up and loads every crontab: ready to [`Daemon::run`].
    pub(super) fn start(options: Options, log: Log, lock: PidLock) -> Result<Daemon, Error> {
        let now = wall_clock();
        let mut daemon = Daemon::new(options, log, lock, now)?;
        daemon.log_start_lines();
        daemon.prepare_job_children();
        if !daemon.options.metrics.is_empty() {
            let places = daemon.options.metrics.clone();
            daemon.metrics_server = Some(daemon.listen_for_metrics(&places)?);
        }
        // Started before the crontabs are loaded: the helper is small when it forks.
        daemon.start_cluster(now);
        daemon.load_at_start(now);
        Ok(daemon)
    }

    /// The daemon's state before anything is loaded: signal handlers installed, the timer made,
    /// the local zone read.
    fn new(options: Options, log: Log, lock: PidLock, now: Timestamp) -> Result<Daemon, Error> {
        let paths = options.paths();
        let rules = Rules {
            permit_any_mode: options.permit_any_mode,
            lsb_names: options.lsb_names,
            seed: schedule::host_seed(&crate::sys::hostname()),
        };
        let signals = SignalPipe::install().map_err(|e| Error::Io("signal handlers", e))?;
        let timer = MinuteTimer::new().map_err(|e| Error::Io("timerfd", e))?;
        let localtime = options.localtime();
        Ok(Daemon {
            setup: options.child_setup(log, crate::sys::user::effective_uid().0 == 0),
            paths,
            rules,
            log,
            _lock: lock,
            cycle: Cycle::new(
                UtcMinute::containing(now.as_second()),
                super::zone::read(&localtime).unwrap_or_else(|e| {
                    log.error("CRON", "ERROR", &format!("{e}; using UTC"));
                    Zone::utc()
                }),
            ),
            zone_stamp: super::zone::stamp(&localtime),
            freed: false,
            written_handled: None,
            metrics: Metrics::default(),
            metrics_server: None,
            cluster: None,
            localtime,
            sources: Sources::default(),
            running: Running::default(),
            signals,
            timer,
            watches: None,
            delay_factor: random_delay_factor(),
            fork_failures: Default::default(),
            armed: UtcMinute::containing(now.as_second()).plus(1),
            options,
        })
    }

    /// Debian's first lines.
    fn log_start_lines(&self) {
        self.log
            .info("CRON", "INFO", &format!("pidfile fd = {}", self._lock.fd()));
        self.log.info(
            "CRON",
            "INFO",
            &format!(
                "RANDOM_DELAY will be scaled with factor {}% if used.",
                (self.delay_factor * 100.0) as u32
            ),
        );
    }

    /// What every job child needs, loaded once here before any fork (docs/daemon.md), and the
    /// line that says when jobs run without PAM.
    fn prepare_job_children(&self) {
        crate::sys::user::load_group_sources();
        if let Some(pam) = &self.setup.pam {
            crate::job::preload_pam(pam, self.log);
            return;
        }
        let why = if !cfg!(feature = "pam") {
            "built without PAM"
        } else if self.options.no_pam {
            "--no-pam"
        } else {
            "not root"
        };
        self.log.info(
            "CRON",
            "INFO",
            &format!("jobs run without a PAM session ({why})"),
        );
    }

    /// With `--cluster-db`: the link, and its helper started.
    fn start_cluster(&mut self, now: Timestamp) {
        let Some(conninfo) = self.options.cluster_db.clone() else {
            return;
        };
        let host = self
            .options
            .cluster_host
            .clone()
            .unwrap_or_else(|| String::from_utf8_lossy(&crate::sys::hostname()).into_owned());
        let program = self
            .options
            .cluster_helper
            .clone()
            .unwrap_or_else(super::cluster::default_helper);
        self.log.info(
            "CRON",
            "INFO",
            &format!("cluster mode: host {host}, helper {}", program.display()),
        );
        self.cluster = Some(super::cluster::ClusterLink::new(
            program,
            &conninfo,
            &host,
            self.options.cluster_keep_days,
            self.options.cluster_keep_runs,
            self.options.cluster_lease_s,
        ));
        self.start_helper(now.as_millisecond());
    }

    /// Watches the files, loads every crontab, runs @reboot and what was missed, arms the
    /// timer and tells systemd the daemon is ready. `started`: when the start began.
    fn load_at_start(&mut self, started: Timestamp) {
        self.watches = Watches::set_up(
            self.options.no_inotify,
            &self.paths,
            &self.localtime,
            &self.log,
        );
        // `@every` intervals count from the start.
        self.cycle.set_every_base(started.as_millisecond());
        let reboot = self.load_all(false);
        let (entries, files) = (self.cycle.len(), self.sources.len());
        self.log.info(
            "CRON",
            "INFO",
            &format!("{entries} entries loaded from {files} files"),
        );
        let now = wall_clock();
        self.reboot(reboot, now);
        self.make_up_after_start(now);
        self.arm(now);
        // systemd's Type=notify: ready once every crontab is loaded (a no-op without systemd).
        let status = format!("{entries} entries from {files} files");
        if let Err(e) = crate::sys::notify::notify(&format!(
            "READY=1\n{}",
            crate::sys::notify::status_message(&status)
        )) {
            self.log
                .event(Level::Error, "CRON", "ERROR", &format!("sd_notify: {e}"));
        }
    }

    /// The loop: start what is due, wait, handle what is ready. Returns on SIGTERM or SIGINT.
    pub(super) fn run(&mut self) -> Result<(), Error> {
        loop {
            let now = wall_clock();
            if clock_moved(now.as_millisecond(), self.cycle.handled(), self.armed) {
                // Whatever woke the loop, the clock is not where the timer was left: the same
                // rules as for the kernel's notice, now.
                self.on_minute(now, Wake::ClockMoved);
            }
            self.cycle.every_due(now.as_millisecond());
            self.start_due_jobs(now);
            // Sleep until the next queued job may start (now, for a backlog; a second after a
            // failed fork; a RANDOM_DELAY's start time; an `@every` run) or until an event; the
            // timer wakes the loop at the next minute with something due.
            let next_start = [
                self.cycle.next_start_ms(),
                self.cycle.next_every_ms(),
                self.cluster.as_ref().and_then(|c| c.next_deadline_ms()),
            ]
            .into_iter()
            .flatten()
            .min();
            let timeout = start_timeout_ms(now.as_millisecond(), next_start);
            if std::mem::take(&mut self.freed) {
                self.cycle.shrink();
                crate::sys::give_back_free_memory();
            }
            let ready = self.wait(timeout)?;
            if ready.signals && matches!(self.on_signals(), AfterSignals::Stop) {
                return Ok(());
            }
            if ready.files {
                self.on_changes();
                self.files_loaded();
            }
            if ready.helper {
                self.on_helper(wall_clock());
            }
            if self.cluster.is_some() {
                self.cluster_timers(wall_clock());
            }
            if ready.timer {
                match self.timer.read() {
                    Ok(Tick::Fired) => self.on_minute(wall_clock(), Wake::Timer),
                    Ok(Tick::ClockChanged) => self.on_minute(wall_clock(), Wake::ClockSet),
                    Ok(Tick::Nothing) => {}
                    Err(e) => return Err(Error::Io("timerfd read", e)),
                }
            }
        }
    }

    fn wait(&mut self, timeout_ms: Option<u32>) -> Result<Ready, Error> {
        let mut registry = Registry::new();
        registry.add(Source::Signals, self.signals.fd(), Interest::Read);
        registry.add(Source::Timer, self.timer.fd(), Interest::Read);
        if let Some(w) = &self.watches {
            registry.add(Source::Files, w.fd(), Interest::Read);
        }
        if let Some(link) = &self.cluster {
            for (fd, interest) in link.fds() {
                registry.add(Source::Helper, fd, interest);
            }
        }
        let mut timeout_ms = timeout_ms;
        if let Some(server) = &self.metrics_server {
            for (token, fd, interest) in server.fds() {
                registry.add(Source::Metrics(token), fd, interest);
            }
            if let Some(ms) = server.timeout_ms(wall_clock().as_millisecond()) {
                timeout_ms = Some(timeout_ms.map_or(ms, |t| t.min(ms)));
            }
        }
        let ready = registry
            .wait(timeout_ms)
            .map_err(|e| Error::Io("poll", e))?;
        if self.metrics_server.is_some() {
            let metrics: Vec<_> = ready
                .iter()
                .filter_map(|source| match source {
                    Source::Metrics(token) => Some(token),
                    _ => None,
                })
                .collect();
            self.serve_metrics(&metrics);
        }
        Ok(Ready {
            signals: ready.contains(Source::Signals),
            timer: ready.contains(Source::Timer),
            files: ready.contains(Source::Files),
            helper: ready.contains(Source::Helper),
        })
    }

    fn on_signals(&mut self) -> AfterSignals {
        let arrived = self.signals.drain();
        if arrived.child {
            // The job child logs its own end (it knows the command and the shell's status);
            // the daemon learns here which entry's job ended.
            let now = wall_clock();
            for (pid, exit) in process::reap() {
                self.cluster_reaped(pid.0, exit, now);
                let reaped = self.fork_failures.reaped(&self.log, pid, exit);
                let Some(ended) = self.running.ended(pid) else {
                    continue;
                };
                if let super::minute::Reaped::NotStarted(queued, first) = reaped {
                    // Nothing of the job ran (its child could not make its processes): back
                    // in the queue, first in line, retried after a second as a failed fork of
                    // the daemon's own is; not counted as a run.
                    self.running.not_started(queued.job.entry, first);
                    self.cycle.put_back(queued, now.as_millisecond());
                    if let Some(waiting) = ended.waiting {
                        self.start_waiting(ended.entry, waiting, now);
                    }
                    continue;
                }
                let outcome = match exit {
                    process::Exit::Code(0) => Outcome::Succeeded,
                    process::Exit::Code(2) => Outcome::TimedOut,
                    _ => Outcome::Failed,
                };
                self.metrics.ended(
                    ended.entry,
                    outcome,
                    now.as_millisecond() - ended.started_ms,
                    now.as_second(),
                );
                if let Some(waiting) = ended.waiting {
                    self.start_waiting(ended.entry, waiting, now);
                }
            }
        }
        if arrived.terminate || arrived.interrupt {
            self.log.info("CRON", "INFO", "Shutting down");
            if self.running.len() > 0 {
                self.log.info(
                    "CRON",
                    "INFO",
                    &format!(
                        "{} jobs still running; they finish on their own",
                        self.running.len()
                    ),
                );
            }
            if self.running.waiting() > 0 {
                self.log.info(
                    "CRON",
                    "INFO",
                    &format!(
                        "{} runs waiting for a running one (CRON_OVERLAP=queue) not started",
                        self.running.waiting()
                    ),
                );
            }
            self.stopping();
            let _ = crate::sys::notify::stopping();
            return AfterSignals::Stop;
        }
        if arrived.hangup {
            self.log.reopen();
            self.log.info(
                "CRON",
                "INFO",
                "SIGHUP: reloading every crontab and reading the clock",
            );
            self.load_all(true);
            self.files_loaded();
            // As a clock change: a step the kernel did not report is acted on now (a minute
            // already handled is not run again).
            self.on_minute(wall_clock(), Wake::ClockMoved);
        }
        AfterSignals::Continue
    }

    /// Reads the local zone again if its file changed (every minute, and on inotify's word).
    pub(super) fn recheck_zone(&mut self) {
        let stamp = super::zone::stamp(&self.localtime);
        if stamp == self.zone_stamp {
            return;
        }
        self.zone_stamp = stamp;
        let zone = match super::zone::read(&self.localtime) {
            Ok(zone) => zone,
            Err(e) => {
                self.log
                    .error("CRON", "ERROR", &format!("{e}; keeping the zone in use"));
                return;
            }
        };
        self.log.info(
            "CRON",
            "INFO",
            &format!("local time zone changed: {}", zone.name()),
        );
        self.cycle.set_local_zone(zone);
    }

    fn on_changes(&mut self) {
        let events = match self.watches.as_ref().map(Watches::read) {
            Some(Ok(events)) => events,
            Some(Err(e)) => {
                self.log
                    .error("CRON", "ERROR", &format!("inotify read failed: {e}"));
                return;
            }
            None => return,
        };
        let changed = watch::sort(events, &self.rules, |key| self.created_complete(key));
        if changed.zone {
            self.recheck_zone();
        }
        if let Some(lost) = changed.rescan {
            let why = match lost {
                Lost::Watch => "lost a watch",
                Lost::Overflow => "inotify queue overflowed",
            };
            self.log.info(
                "CRON",
                "INFO",
                &format!("{why}: reloading everything, then checking files every minute"),
            );
            self.watches = None;
            self.load_all(true);
        }
        for key in changed.sources {
            self.reload(&key, true);
        }
        self.arm(wall_clock());
    }
}
