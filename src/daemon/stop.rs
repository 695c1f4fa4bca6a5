//! The graceful stop: on SIGTERM (or SIGINT), as PID 1 (a container, where the daemon's exit
//! kills every process left) and with `--stop-jobs`, the daemon starts no more jobs, sends
//! SIGTERM to every process of each running job (its session: `sys::session`), waits up to
//! `--stop-timeout` seconds (default 10) for the job children to end, sends SIGKILL to what is
//! left of the jobs, and waits up to [`KILL_GRACE`] more for the job children, which log or
//! mail what their jobs printed (a TERM trap's words too) and exit; then the daemon exits 0. A
//! second SIGTERM or SIGINT cuts the wait short. The job children themselves are never
//! signalled: they report the end. Without either (a daemon on a host), the jobs outlive it,
//! as Debian's under systemd's KillMode=process.
//!
//! The waits count on the monotonic clock: a wall-clock step during a stop changes nothing.

use std::time::{Duration, Instant};

use super::cli::DEFAULT_STOP_TIMEOUT_S;
use super::event_loop::Daemon;
use crate::sys::poll::{Interest, Registry};
use crate::sys::process::{self, GroupSignal};
use crate::sys::session;

/// How long the job children have to report after their jobs got SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(5);

/// How a wait for the job children ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Waited {
    AllEnded,
    TimedOut,
    /// SIGTERM or SIGINT again: no more waiting.
    Hurried,
}

impl Daemon {
    /// Whether SIGTERM stops the running jobs: as PID 1, or with `--stop-jobs`.
    pub(super) fn stops_jobs(&self) -> bool {
        self.options.stop_jobs || process::own_pid().0 == 1
    }

    /// The graceful stop, once the loop has stopped starting jobs (see the module header).
    pub(super) fn stop_jobs(&mut self) {
        if self.running.len() == 0 {
            return;
        }
        let timeout_s = self
            .options
            .stop_timeout_s
            .unwrap_or(DEFAULT_STOP_TIMEOUT_S);
        self.log.info(
            "CRON",
            "INFO",
            &format!(
                "stopping {} running jobs: SIGTERM now, SIGKILL after {timeout_s} s",
                self.running.len()
            ),
        );
        let signalled = self.signal_jobs(GroupSignal::Term);
        if signalled == 0 {
            self.log.info("CRON", "INFO", "no job process to signal");
        }
        let waited = self.wait_for_job_children(Duration::from_secs(u64::from(timeout_s)));
        if waited == Waited::AllEnded {
            self.log.info("CRON", "INFO", "every job has ended");
            return;
        }
        let why = match waited {
            Waited::Hurried => "stop asked again".to_string(),
            _ => format!("{timeout_s} s passed"),
        };
        self.log.info(
            "CRON",
            "INFO",
            &format!(
                "{why}: SIGKILL to what is left of {} jobs",
                self.running.len()
            ),
        );
        self.signal_jobs(GroupSignal::Kill);
        if self.wait_for_job_children(KILL_GRACE) != Waited::AllEnded {
            self.log.error(
                "CRON",
                "ERROR",
                &format!(
                    "{} job children had not reported when the daemon exited",
                    self.running.len()
                ),
            );
        }
    }

    /// Signals every process of every running job but the job children. Returns how many.
    fn signal_jobs(&mut self, signal: GroupSignal) -> usize {
        let pids = self.running.pids();
        match session::signal_jobs(&pids, signal) {
            Ok(sent) => sent,
            Err(e) => {
                self.log.error(
                    "CRON",
                    "ERROR",
                    &format!("can't list the jobs' processes: {e}"),
                );
                // Without /proc: each job child's own group (the shell's, without
                // CRON_TIMEOUT), the job child included.
                (pids.iter())
                    .filter(|pid| process::signal_group(pid.0 as u32, signal).unwrap_or(false))
                    .count()
            }
        }
    }

    /// Reaps until every job child has ended, `limit` has passed, or SIGTERM/SIGINT comes again.
    fn wait_for_job_children(&mut self, limit: Duration) -> Waited {
        let deadline = Instant::now() + limit;
        loop {
            // Orphans that PID 1 inherits are reaped with them.
            for (pid, _) in process::reap() {
                self.running.ended(pid);
            }
            if self.running.len() == 0 {
                return Waited::AllEnded;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Waited::TimedOut;
            }
            let mut registry = Registry::new();
            registry.add((), self.signals.fd(), Interest::Read);
            let ms = u32::try_from(left.as_millis().max(1)).unwrap_or(u32::MAX);
            if registry.wait(Some(ms)).is_err() {
                // poll itself failed: no better way to wait than a short sleep.
                std::thread::sleep(Duration::from_millis(50).min(left));
            }
            let arrived = self.signals.drain();
            if arrived.terminate || arrived.interrupt {
                return Waited::Hurried;
            }
        }
    }
}
