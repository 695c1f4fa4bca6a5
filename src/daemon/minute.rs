//! The daemon at a minute boundary: what the [`Cycle`](crate::timeline::Cycle) decides, carried
//! out — files looked at again, the minute's runs queued, jobs forked while the minute lasts,
//! the timer armed for the next wake-up — and @reboot at start-up. Every decision is the
//! cycle's (pure, with the wall clock passed in); this file forks, arms and logs.

use jiff::Timestamp;

use super::event_loop::Daemon;
use super::running::Admit;
use crate::crontab::policy::Overlap;
use crate::job::{self, JobSpec};
use crate::log::Level;
use crate::log::lines;
use crate::timeline::queue::Queued;
use crate::timeline::{Due, EntryId, Movement, UtcMinute};

/// What woke the daemon for a minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wake {
    /// The timer fired at the minute it was armed for.
    Timer,
    /// The kernel said the wall clock was set (the timer's cancel-on-set notice).
    ClockSet,
    /// SIGHUP, or a wake-up that found the clock away from where the timer was left.
    ClockMoved,
}

/// Jobs started between two looks at signals and events.
const START_BATCH: usize = 64;

impl Daemon {
    /// @reboot: once per boot, marked by a file under /run (Debian).
    pub(super) fn reboot(&mut self, jobs: Vec<JobSpec>, now: Timestamp) {
        let marker = self.options.reboot_marker();
        match crate::sys::fs::create_marker(&marker) {
            Ok(true) => {
                self.log.info("CRON", "INFO", "Running @reboot jobs");
                let minute = UtcMinute::containing(now.as_second());
                for job in jobs {
                    self.cycle.queue_now(job, minute);
                }
            }
            Ok(false) => self.log.info(
                "CRON",
                "INFO",
                "Skipping @reboot jobs -- not system startup",
            ),
            Err(e) => self.log.error(
                "CRON",
                "ERROR",
                &format!(
                    "can't create {} ({e}): @reboot jobs not run",
                    marker.display()
                ),
            ),
        }
    }

    /// Whether something must be looked at every minute: the files (no inotify, or refused
    /// files to recheck) or the zone file (inotify can't see every change of it: a rewrite of
    /// the file a chain of links leads to, or of one mounted over it).
    fn looks_every_minute(&self) -> bool {
        self.watches.is_none() || self.sources.any_refused() || self.zone_stamp.is_some()
    }

    /// Arms the timer for the cycle's next wake-up.
    pub(super) fn arm(&mut self, now: Timestamp) {
        let now_minute = UtcMinute::containing(now.as_second());
        let target = self.cycle.next_wake(now_minute, self.looks_every_minute());
        self.armed = target;
        if let Err(e) = self.timer.arm_at(target.start_second()) {
            self.log
                .error("CRON", "ERROR", &format!("can't arm the timer: {e}"));
        }
    }

    /// A minute boundary (or a clock step): files looked at, runs queued, timer re-armed.
    pub(super) fn on_minute(&mut self, now: Timestamp, wake: Wake) {
        if self.watches.is_none() {
            self.check_mtimes();
        }
        for key in self.sources.to_recheck() {
            self.reload(&key, true);
        }
        self.recheck_zone();
        self.fork_failures.minute_passed(&self.log);
        let before = self.cycle.handled();
        let now_minute = UtcMinute::containing(now.as_second());
        let woke = self.cycle.on_wake(now_minute);
        if matches!(
            woke.movement,
            Movement::Late(_) | Movement::Forward(_) | Movement::Afresh(_)
        ) {
            // The clock jumped (a resume, a step): `CRON_MISSED=once` entries make up what the
            // minute rules did not run.
            self.make_up(before, now_minute, now_minute);
        }
        if woke.queued > 0 {
            self.runs_queued(now_minute);
        }
        if woke.postponed > 0 {
            self.log.info(
                "CRON",
                "INFO",
                &format!(
                    "{} jobs not started last minute: they start first now",
                    woke.postponed
                ),
            );
        }
        match (woke.movement, wake) {
            // The kernel's word is logged even for a step too small to matter: it is rare
            // (settimeofday, an NTP step, a resume), and says the path works.
            (Movement::Normal | Movement::Repeat, Wake::ClockSet) => self.log.info(
                "CRON",
                "INFO",
                "the system clock was set: no minute gained or lost",
            ),
            (Movement::Normal | Movement::Repeat, _) => {}
            (other, Wake::Timer) => {
                self.log
                    .info("CRON", "INFO", &format!("clock late: {other:?}"))
            }
            (other, _) => self
                .log
                .info("CRON", "INFO", &format!("clock set: {other:?}")),
        }
        // The first jobs start before the next fire times of the minute's entries are worked
        // out (arming the timer needs them: `Agenda::settle`).
        self.start_due_jobs(now);
        self.arm(now);
    }

    /// Starts queued jobs, a batch at a time (the loop looks at signals and events between
    /// batches). A job that can't be forked stays first in line, and the line waits a second.
    pub(super) fn start_due_jobs(&mut self, now: Timestamp) {
        let now_ms = now.as_millisecond();
        for _ in 0..START_BATCH {
            let Some(queued) = self.cycle.next_to_start(now_ms) else {
                break;
            };
            let Some(queued) = self.claim_if_clustered(queued, now) else {
                continue;
            };
            if let Err(queued) = self.launch(queued, now_ms) {
                self.cycle.put_back(queued, now_ms);
                break;
            }
        }
        if self.cycle.has_backlog() {
            // A backlog at the boundary is carried by the timer, armed for the next minute.
            self.arm(now);
        }
    }

    /// Starts a run whose time has come, under its entry's `CRON_OVERLAP`: `Ok(Some(pid))`
    /// started, `Ok(None)` skipped or left waiting (logged), `Err` when the fork failed (the run
    /// comes back, to be put back in line; the failure is counted and logged once a minute, so
    /// that a fork failing for lack of processes does not turn the loop into a busy retry).
    pub(super) fn launch(
        &mut self,
        queued: Queued<Due<JobSpec>>,
        now_ms: i64,
    ) -> Result<Option<i32>, Queued<Due<JobSpec>>> {
        let overlap = queued.job.job.env().policy().overlap;
        if overlap != Overlap::Allow {
            let (entry, job) = (queued.job.entry, &queued.job.job);
            match self.running.admit(entry, overlap, job.clone()) {
                Admit::Start(_) => {}
                Admit::Skip {
                    since_ms,
                    also_waiting,
                } => {
                    self.metrics.skipped();
                    let since = self.clock_time(since_ms);
                    let line = lines::skip_line(job.user(), job.command(), &since, also_waiting)
                        .with_job(job.log_fields(None));
                    self.log.line(Level::Info, &line);
                    return Ok(None);
                }
                Admit::Wait { since_ms } => {
                    let since = self.clock_time(since_ms);
                    let line = lines::wait_line(job.user(), job.command(), &since)
                        .with_job(job.log_fields(None));
                    self.log.line(Level::Info, &line);
                    return Ok(None);
                }
            }
        }
        let first = self.running.first_since_load(queued.job.entry);
        match job::start(&queued.job.job, &self.setup, first) {
            Ok(pid) => {
                self.metrics.started();
                self.running.started(pid, queued.job.entry, now_ms);
                // Whether the job's own processes start is known when the child is reaped
                // (`job::NOT_STARTED`); till then the run is kept to be put back.
                self.fork_failures.launched(pid, queued, first);
                Ok(Some(pid.0))
            }
            Err(e) => {
                self.running.not_started(queued.job.entry, first);
                self.fork_failures.failed(&self.log, e);
                Err(queued)
            }
        }
    }
}

impl Daemon {
    /// Starts the run that waited for its entry's last run to end (`CRON_OVERLAP=queue`); if
    /// it can't be forked, it joins the queue, first in line.
    pub(super) fn start_waiting(&mut self, entry: Option<EntryId>, job: JobSpec, now: Timestamp) {
        let first = self.running.first_since_load(entry);
        match job::start(&job, &self.setup, first) {
            Ok(pid) => {
                self.metrics.started();
                self.running.started(pid, entry, now.as_millisecond());
                let minute = UtcMinute::containing(now.as_second());
                let queued = Queued {
                    job: Due { entry, job },
                    due: minute,
                    postponed: 0,
                    start_ms: now.as_millisecond(),
                };
                self.fork_failures.launched(pid, queued, first);
            }
            Err(e) => {
                self.running.not_started(entry, first);
                self.fork_failures.failed(&self.log, e);
                let minute = UtcMinute::containing(now.as_second());
                self.cycle.queue_run(entry, job, minute);
                self.arm(now);
            }
        }
    }

    /// `YYYY-MM-DD HH:MM` of a minute in the daemon's zone.
    pub(super) fn clock_date_time(&self, minute: UtcMinute) -> String {
        let at = Timestamp::from_second(minute.start_second()).unwrap_or(Timestamp::UNIX_EPOCH);
        let civil = self.cycle.local_zone().civil(at);
        format!(
            "{:04}-{:02}-{:02} {:02}:{:02}",
            civil.year(),
            civil.month(),
            civil.day(),
            civil.hour(),
            civil.minute()
        )
    }

    /// `HH:MM` of an epoch millisecond in the daemon's zone, as the log shows start times.
    pub(super) fn clock_time(&self, ms: i64) -> String {
        let at = Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH);
        let civil = self.cycle.local_zone().civil(at);
        format!("{:02}:{:02}", civil.hour(), civil.minute())
    }
}

/// Fork failures, counted and logged once a minute rather than once per attempt: the daemon's
/// own fork of a job child, and the forks inside a job child (its shell, its stdin writer),
/// which the child reports by exiting with [`job::NOT_STARTED`]. For these the runs whose
/// child has not been reaped yet are kept here, to be put back in the queue.
#[derive(Debug, Default)]
pub(super) struct ForkFailures {
    /// Failures since the last line, and the last error.
    since_logged: u64,
    last: Option<std::io::Error>,
    /// Failures since the last success (for the line that says forks work again).
    in_a_row: u64,
    /// Each running job child's run (and whether it was its entry's first since the load).
    in_flight: std::collections::HashMap<crate::types::Pid, (Queued<Due<JobSpec>>, bool)>,
}

/// What a reaped job child means for its run.
pub(super) enum Reaped {
    /// The job ran (or was refused, or failed): the run is over.
    Ran,
    /// Nothing of it ran, for want of a process: the run, to go back in the queue.
    NotStarted(Queued<Due<JobSpec>>, bool),
}

impl ForkFailures {
    /// A job child was forked for `queued`.
    fn launched(&mut self, pid: crate::types::Pid, queued: Queued<Due<JobSpec>>, first: bool) {
        self.in_flight.insert(pid, (queued, first));
    }

    /// A job child `pid` was reaped with `exit`: a run whose processes could not start is a
    /// fork failure (counted, logged as the daemon's own are) and comes back; any other end is
    /// a fork that worked.
    pub(super) fn reaped(
        &mut self,
        log: &crate::log::Log,
        pid: crate::types::Pid,
        exit: crate::sys::process::Exit,
    ) -> Reaped {
        let Some((queued, first)) = self.in_flight.remove(&pid) else {
            return Reaped::Ran;
        };
        if exit == crate::sys::process::Exit::Code(job::NOT_STARTED) {
            let e = std::io::Error::other("no process for the job in its job child");
            self.failed(log, e);
            return Reaped::NotStarted(queued, first);
        }
        self.succeeded(log);
        Reaped::Ran
    }

    fn failed(&mut self, log: &crate::log::Log, e: std::io::Error) {
        self.in_a_row += 1;
        self.since_logged += 1;
        if self.in_a_row == 1 {
            // The first failure is logged at once; the rest are counted.
            log.error(
                "CRON",
                "ERROR",
                &format!("can't fork: {e}; jobs wait and are retried every second"),
            );
            self.since_logged = 0;
        }
        self.last = Some(e);
    }

    /// A job child ran its job: forks work (logged once after failures).
    fn succeeded(&mut self, log: &crate::log::Log) {
        if self.in_a_row > 0 {
            log.info(
                "CRON",
                "INFO",
                &format!("fork works again after {} failed attempts", self.in_a_row),
            );
            self.in_a_row = 0;
            self.since_logged = 0;
        }
    }

    fn minute_passed(&mut self, log: &crate::log::Log) {
        if self.since_logged > 0 {
            let e = self
                .last
                .as_ref()
                .map(ToString::to_string)
                .unwrap_or_default();
            log.error(
                "CRON",
                "ERROR",
                &format!(
                    "can't fork: {e}; {} more failed attempts in the last minute",
                    self.since_logged
                ),
            );
            self.since_logged = 0;
        }
    }
}
