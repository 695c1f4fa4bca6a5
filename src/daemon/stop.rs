//! The graceful stop: on SIGTERM (or SIGINT), as PID 1 (a container, where the daemon's exit
//! kills every process left) and with `--stop-jobs`, the daemon starts no more jobs, sends
//! SIGTERM to every process of each running job (its session: `sys::job_processes`), waits up to
//! `--stop-timeout` seconds (default 10) for the job children to end, sends SIGKILL to what is
//! left of the jobs, and waits up to [`KILL_GRACE`] more for the job children, which log or
//! mail what their jobs printed (a TERM trap's words too) and exit; then the daemon exits 0. A
//! second SIGTERM or SIGINT cuts the wait short. The job children themselves are never
//! signalled: they report the end. Without either (a daemon on a host), the jobs outlive it,
//! as Debian's under systemd's KillMode=process.
//!
//! The sessions' processes are found in /proc, which must be this PID namespace's
//! (`job_processes::proc_view`); where it is another's (`unshare --pid --fork` without
//! `--mount-proc`) or missing, each job child's process group is signalled instead, said once
//! in the log. The job child is in its group and catches SIGTERM with a handler that does
//! nothing, so it still reports the end; SIGKILL ends it with the rest.
//!
//! The waits count on the monotonic clock: a wall-clock step during a stop changes nothing.

use std::time::{Duration, Instant};

use super::clock::Clock;
use super::effects::Effects;
use super::scheduler::Scheduler;
use super::world::World;
use crate::log::Level;
use crate::log::messages;
use crate::sys::job_processes::{self, ProcView};
use crate::sys::process::{self, GroupSignal};

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

/// What the stop works with: the scheduler's running jobs (it has stopped starting runs), the
/// world its job children are reaped from and whose signals it waits for (a second stop cuts
/// the wait short), the clock its reaps are dated with.
pub(super) struct Stop<'a> {
    pub(super) scheduler: &'a mut Scheduler,
    pub(super) world: &'a mut dyn World,
    pub(super) clock: &'a dyn Clock,
}

impl Stop<'_> {
    /// The graceful stop, once the scheduler has stopped starting runs (see the module header).
    pub(super) fn run(mut self, timeout_s: u32, fx: &mut dyn Effects) {
        let jobs = self.scheduler.running_len();
        if jobs == 0 {
            return;
        }
        fx.info(messages::stopping_jobs_line(jobs, timeout_s));
        let by_group = match job_processes::proc_view() {
            ProcView::Own => false,
            ProcView::Foreign { shown } => {
                let line = messages::foreign_proc_line(&shown, process::own_pid().0);
                fx.log(Level::Notice, line);
                true
            }
            ProcView::Unreadable(e) => {
                fx.error(messages::cant_list_jobs_line(&e));
                true
            }
        };
        if self.signal_jobs(GroupSignal::Term, by_group, fx) == 0 {
            fx.info(messages::no_job_process_line());
        }
        let waited = self.wait_for_job_children(Duration::from_secs(u64::from(timeout_s)), fx);
        if waited == Waited::AllEnded {
            fx.info(messages::every_job_ended_line());
            return;
        }
        let why = match waited {
            Waited::Hurried => "stop asked again".to_string(),
            _ => format!("{timeout_s} s passed"),
        };
        fx.info(messages::kill_left_line(&why, self.scheduler.running_len()));
        self.signal_jobs(GroupSignal::Kill, by_group, fx);
        if self.wait_for_job_children(KILL_GRACE, fx) != Waited::AllEnded {
            fx.error(messages::not_reported_line(self.scheduler.running_len()));
        }
    }

    /// Signals every process of every running job but the job children, found in /proc; or
    /// (`by_group`: /proc is not this PID namespace's, or missing) every job child's process
    /// group. Returns how many processes, or groups, were signalled.
    fn signal_jobs(&mut self, signal: GroupSignal, by_group: bool, fx: &mut dyn Effects) -> usize {
        let pids = self.scheduler.running_pids();
        if by_group {
            return signal_groups(&pids, signal);
        }
        match job_processes::signal_jobs(&pids, signal) {
            Ok(sent) => sent,
            Err(e) => {
                fx.error(messages::cant_list_jobs_line(&e));
                signal_groups(&pids, signal)
            }
        }
    }

    /// Reaps until every job child has ended, `limit` has passed, or SIGTERM/SIGINT comes again.
    fn wait_for_job_children(&mut self, limit: Duration, fx: &mut dyn Effects) -> Waited {
        let deadline = Instant::now() + limit;
        loop {
            // Orphans that PID 1 inherits are reaped with them.
            for (pid, exit) in self.world.reap() {
                // The daemon is ending: how the jobs ended is in the log, and the last runs
                // the scheduler keeps go with it.
                self.scheduler
                    .on_reaped(pid, exit, None, self.clock.now(), fx);
            }
            if self.scheduler.running_len() == 0 {
                return Waited::AllEnded;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Waited::TimedOut;
            }
            let ms = u32::try_from(left.as_millis().max(1)).unwrap_or(u32::MAX);
            self.world.wait_for_signal(ms);
            let arrived = self.world.drain_signals();
            if arrived.terminate || arrived.interrupt {
                return Waited::Hurried;
            }
        }
    }
}

/// Without a /proc of this PID namespace: each job child's process group, which its shell is in
/// (without `CRON_TIMEOUT`: that shell leads a group of its own, out of reach here) with what
/// the shell starts in it. The job child is in it too: SIGTERM does nothing to it (a handler
/// that does nothing, `sys::signal::survive_sigterm`), so it still reports the job's end;
/// SIGKILL ends it with the rest.
fn signal_groups(pids: &[process::Pid], signal: GroupSignal) -> usize {
    (pids.iter())
        .filter(|pid| process::signal_group(pid.0 as u32, signal).unwrap_or(false))
        .count()
}
