//! The table of running job children, by pid (to forget a child when it is reaped) and by entry
//! (whether a run of the entry is going, since when, and the run waiting for it to end), and
//! what `CRON_OVERLAP` decides from it. Pure bookkeeping, no syscalls: the daemon tells it what
//! it forked and reaped, with the time.
//!
//! `allow` (the default, Vixie's behaviour) starts every run. `skip` does not start a run while
//! one of its entry is going. `queue` keeps it until that one ends, then starts it: at most one
//! run waits per entry, a further one is skipped.

use std::collections::{HashMap, HashSet};

use crate::crontab::policy::Overlap;
use crate::timeline::EntryId;
use crate::types::Pid;

/// An entry with runs going.
#[derive(Debug)]
struct Busy<J> {
    count: u32,
    /// When the run that made the entry busy started (epoch ms): the one a `SKIP` line names.
    since_ms: i64,
    /// The run `CRON_OVERLAP=queue` keeps until the entry is idle.
    waiting: Option<J>,
}

#[derive(Debug)]
pub(in crate::daemon) struct Running<J> {
    /// Each child, the entry it runs (`None`: an @reboot job) and when it started (epoch ms).
    by_pid: HashMap<Pid, (Option<EntryId>, i64)>,
    by_entry: HashMap<EntryId, Busy<J>>,
    /// The entries that have started a run since their file was last loaded: the first run
    /// after a load logs what every run would repeat (a HOME that can't be entered) once.
    /// At most one id per entry loaded; a reload of a file takes its entries out.
    started_since_load: HashSet<EntryId>,
}

impl<J> Default for Running<J> {
    fn default() -> Self {
        Running {
            by_pid: HashMap::new(),
            by_entry: HashMap::new(),
            started_since_load: HashSet::new(),
        }
    }
}

/// A job child that was reaped.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::daemon) struct Ended<J> {
    pub(in crate::daemon) entry: Option<EntryId>,
    pub(in crate::daemon) started_ms: i64,
    /// The run of the entry that waited for it (`CRON_OVERLAP=queue`): to start now.
    pub(in crate::daemon) waiting: Option<J>,
}

/// What to do with a run that is due to start.
#[derive(Debug, PartialEq, Eq)]
pub(in crate::daemon) enum Admit<J> {
    /// Start it.
    Start(J),
    /// Not started: a run of the entry has been going since `since_ms` (`skip`, or `queue`
    /// with a run already waiting: `also_waiting`).
    Skip { since_ms: i64, also_waiting: bool },
    /// Kept until the run going since `since_ms` ends (`queue`).
    Wait { since_ms: i64 },
}

impl<J> Running<J> {
    /// Whether the run of `entry` that is due may start now, under `overlap`.
    pub(in crate::daemon) fn admit(
        &mut self,
        entry: Option<EntryId>,
        overlap: Overlap,
        job: J,
    ) -> Admit<J> {
        let Some(busy) = entry.and_then(|e| self.by_entry.get_mut(&e)) else {
            return Admit::Start(job);
        };
        if busy.count == 0 {
            return Admit::Start(job);
        }
        let since_ms = busy.since_ms;
        match overlap {
            Overlap::Allow => Admit::Start(job),
            Overlap::Skip => Admit::Skip {
                since_ms,
                also_waiting: false,
            },
            Overlap::Queue if busy.waiting.is_some() => Admit::Skip {
                since_ms,
                also_waiting: true,
            },
            Overlap::Queue => {
                busy.waiting = Some(job);
                Admit::Wait { since_ms }
            }
        }
    }

    /// Whether a run of `entry` about to start is its first since its file was loaded (an
    /// @reboot job's always is); from now on the entry's later runs are not.
    pub(in crate::daemon) fn first_since_load(&mut self, entry: Option<EntryId>) -> bool {
        entry.is_none_or(|e| self.started_since_load.insert(e))
    }

    /// The run for which [`Running::first_since_load`] was asked did not start (the fork
    /// failed): its next attempt is still the first.
    pub(in crate::daemon) fn not_started(&mut self, entry: Option<EntryId>, first: bool) {
        if let Some(e) = entry.filter(|_| first) {
            self.started_since_load.remove(&e);
        }
    }

    /// A file is loaded again (or is gone): its entries, old and new, have not started since.
    pub(in crate::daemon) fn loaded_again(&mut self, entries: impl IntoIterator<Item = EntryId>) {
        for e in entries {
            self.started_since_load.remove(&e);
        }
    }

    /// A job child was forked at `now_ms` for `entry`.
    pub(in crate::daemon) fn started(&mut self, pid: Pid, entry: Option<EntryId>, now_ms: i64) {
        if let Some((old, _)) = self.by_pid.insert(pid, (entry, now_ms)) {
            // A pid is reused only after it was reaped; keep the counts right regardless.
            self.forget(old);
        }
        if let Some(entry) = entry {
            let busy = self.by_entry.entry(entry).or_insert(Busy {
                count: 0,
                since_ms: now_ms,
                waiting: None,
            });
            if busy.count == 0 {
                busy.since_ms = now_ms;
            }
            busy.count += 1;
        }
    }

    /// A child was reaped: `None` if it was not one of ours; else its entry, when it started,
    /// and the run that waited for the entry to be idle, which is to start now.
    pub(in crate::daemon) fn ended(&mut self, pid: Pid) -> Option<Ended<J>> {
        let (entry, started_ms) = self.by_pid.remove(&pid)?;
        Some(Ended {
            entry,
            started_ms,
            waiting: self.forget(entry),
        })
    }

    /// How many jobs of this entry are running.
    pub(in crate::daemon) fn count(&self, entry: EntryId) -> u32 {
        self.by_entry.get(&entry).map_or(0, |b| b.count)
    }

    pub(in crate::daemon) fn len(&self) -> usize {
        self.by_pid.len()
    }

    /// The children running a job of `entry`.
    pub(in crate::daemon) fn pids_of(&self, entry: EntryId) -> Vec<Pid> {
        self.by_pid
            .iter()
            .filter(|(_, (e, _))| *e == Some(entry))
            .map(|(pid, _)| *pid)
            .collect()
    }

    /// The job children running now (for the graceful stop).
    pub(in crate::daemon) fn pids(&self) -> Vec<Pid> {
        self.by_pid.keys().copied().collect()
    }

    /// The runs that wait for a running one to end, with their entries.
    pub(in crate::daemon) fn waiting_runs(&self) -> impl Iterator<Item = (EntryId, &J)> {
        self.by_entry
            .iter()
            .filter_map(|(&entry, b)| b.waiting.as_ref().map(|job| (entry, job)))
    }

    /// How many runs wait for a running one to end.
    pub(in crate::daemon) fn waiting(&self) -> usize {
        self.by_entry
            .values()
            .filter(|b| b.waiting.is_some())
            .count()
    }

    /// One run of `entry` fewer; the waiting run when the entry became idle.
    fn forget(&mut self, entry: Option<EntryId>) -> Option<J> {
        let entry = entry?;
        let busy = self.by_entry.get_mut(&entry)?;
        busy.count = busy.count.saturating_sub(1);
        if busy.count > 0 {
            return None;
        }
        self.by_entry.remove(&entry).and_then(|b| b.waiting)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `ended` without the start time: (entry, waiting run).
    fn ended(
        running: &mut Running<&'static str>,
        pid: i32,
    ) -> Option<(Option<EntryId>, Option<&'static str>)> {
        running.ended(Pid(pid)).map(|e| (e.entry, e.waiting))
    }

    #[test]
    fn an_entrys_first_run_since_its_load_is_told_once_and_again_after_a_reload_or_failed_fork() {
        let mut running: Running<&'static str> = Running::default();
        let (a, b) = (EntryId(1), EntryId(2));
        assert!(running.first_since_load(Some(a)));
        assert!(!running.first_since_load(Some(a)));
        assert!(running.first_since_load(Some(b)));
        // @reboot jobs have no entry: each is its own first.
        assert!(running.first_since_load(None));
        assert!(running.first_since_load(None));
        // The fork failed: the next attempt is still the first; a later run's failure is not.
        running.not_started(Some(b), true);
        assert!(running.first_since_load(Some(b)));
        running.not_started(Some(b), false);
        assert!(!running.first_since_load(Some(b)));
        // The file of `a` is loaded again: `a`'s next run is a first, `b`'s is not.
        running.loaded_again([a]);
        assert!(running.first_since_load(Some(a)));
        assert!(!running.first_since_load(Some(b)));
        // Bounded by the entries loaded: a reload takes its entries out.
        running.loaded_again([a, b]);
        assert!(running.started_since_load.is_empty());
    }

    #[test]
    fn the_table_counts_running_jobs_per_entry_until_each_child_is_reaped() {
        let mut running: Running<&str> = Running::default();
        let (a, b) = (EntryId(1), EntryId(2));
        running.started(Pid(100), Some(a), 0);
        running.started(Pid(101), Some(a), 0);
        running.started(Pid(102), Some(b), 0);
        running.started(Pid(103), None, 0);
        assert_eq!(
            (running.count(a), running.count(b), running.len()),
            (2, 1, 4)
        );
        let mut pids = running.pids();
        pids.sort();
        assert_eq!(pids, [Pid(100), Pid(101), Pid(102), Pid(103)]);
        assert_eq!(ended(&mut running, 100), Some((Some(a), None)));
        assert_eq!(running.count(a), 1);
        assert_eq!(
            ended(&mut running, 103),
            Some((None, None)),
            "an @reboot job"
        );
        assert_eq!(ended(&mut running, 999), None, "not a job child");
        assert_eq!(ended(&mut running, 101), Some((Some(a), None)));
        assert_eq!(
            (running.count(a), running.count(b), running.len()),
            (0, 1, 1)
        );
        assert!(
            !running.by_entry.contains_key(&a),
            "no empty records are kept"
        );
    }

    #[test]
    fn allow_starts_every_run_and_skip_none_while_one_is_going() {
        let mut running: Running<&str> = Running::default();
        let a = EntryId(1);
        assert_eq!(
            running.admit(Some(a), Overlap::Skip, "first"),
            Admit::Start("first")
        );
        running.started(Pid(10), Some(a), 60_000);
        assert_eq!(
            running.admit(Some(a), Overlap::Allow, "second"),
            Admit::Start("second")
        );
        assert_eq!(
            running.admit(Some(a), Overlap::Skip, "third"),
            Admit::Skip {
                since_ms: 60_000,
                also_waiting: false
            }
        );
        assert_eq!(ended(&mut running, 10), Some((Some(a), None)));
        assert_eq!(
            running.admit(Some(a), Overlap::Skip, "fourth"),
            Admit::Start("fourth")
        );
        // @reboot jobs have no entry: nothing to overlap with.
        assert_eq!(
            running.admit(None, Overlap::Skip, "boot"),
            Admit::Start("boot")
        );
    }

    #[test]
    fn queue_keeps_one_run_until_the_entry_is_idle_and_skips_the_rest() {
        let mut running: Running<&str> = Running::default();
        let a = EntryId(1);
        running.started(Pid(10), Some(a), 60_000);
        // An earlier `allow` left two runs going: the queued one waits for both.
        running.started(Pid(11), Some(a), 120_000);
        assert_eq!(
            running.admit(Some(a), Overlap::Queue, "next"),
            Admit::Wait { since_ms: 60_000 }
        );
        assert_eq!(
            running.admit(Some(a), Overlap::Queue, "later"),
            Admit::Skip {
                since_ms: 60_000,
                also_waiting: true
            }
        );
        assert_eq!(running.waiting(), 1);
        assert_eq!(ended(&mut running, 10), Some((Some(a), None)));
        assert_eq!(ended(&mut running, 11), Some((Some(a), Some("next"))));
        assert_eq!(running.waiting(), 0);
        // The waiting run is started by the caller, and makes the entry busy again from then.
        running.started(Pid(12), Some(a), 180_000);
        assert_eq!(
            running.admit(Some(a), Overlap::Queue, "again"),
            Admit::Wait { since_ms: 180_000 }
        );
    }
}
