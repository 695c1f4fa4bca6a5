//! The table of running job children: by pid (to forget a child when it is reaped) and by entry
//! (how many jobs of an entry are running now — what overlap policies such as
//! `CRON_OVERLAP=skip` will ask). Pure bookkeeping, no syscalls.

use std::collections::HashMap;

use crate::sys::process::Pid;
use crate::timeline::EntryId;

#[derive(Debug, Default)]
pub(super) struct Running {
    /// Each child and the entry it runs (`None`: an @reboot job).
    by_pid: HashMap<Pid, Option<EntryId>>,
    /// Entries with at least one running job, and how many.
    by_entry: HashMap<EntryId, u32>,
}

impl Running {
    pub(super) fn started(&mut self, pid: Pid, entry: Option<EntryId>) {
        if let Some(old) = self.by_pid.insert(pid, entry) {
            // A pid is reused only after it was reaped; keep the counts right regardless.
            self.forget_entry(old);
        }
        if let Some(entry) = entry {
            *self.by_entry.entry(entry).or_insert(0) += 1;
        }
    }

    /// A child was reaped: returns the entry it ran, if it was one of ours.
    pub(super) fn ended(&mut self, pid: Pid) -> Option<Option<EntryId>> {
        let entry = self.by_pid.remove(&pid)?;
        self.forget_entry(entry);
        Some(entry)
    }

    /// How many jobs of this entry are running.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) fn count(&self, entry: EntryId) -> u32 {
        self.by_entry.get(&entry).copied().unwrap_or(0)
    }

    pub(super) fn len(&self) -> usize {
        self.by_pid.len()
    }

    fn forget_entry(&mut self, entry: Option<EntryId>) {
        let Some(entry) = entry else { return };
        if let Some(n) = self.by_entry.get_mut(&entry) {
            *n -= 1;
            if *n == 0 {
                self.by_entry.remove(&entry);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_counts_running_jobs_per_entry_until_each_child_is_reaped() {
        let mut running = Running::default();
        let (a, b) = (EntryId(1), EntryId(2));
        running.started(Pid(100), Some(a));
        running.started(Pid(101), Some(a));
        running.started(Pid(102), Some(b));
        running.started(Pid(103), None);
        assert_eq!(
            (running.count(a), running.count(b), running.len()),
            (2, 1, 4)
        );
        assert_eq!(running.ended(Pid(100)), Some(Some(a)));
        assert_eq!(running.count(a), 1);
        assert_eq!(running.ended(Pid(103)), Some(None), "an @reboot job");
        assert_eq!(running.ended(Pid(999)), None, "not a job child");
        assert_eq!(running.ended(Pid(101)), Some(Some(a)));
        assert_eq!(
            (running.count(a), running.count(b), running.len()),
            (0, 1, 1)
        );
        assert!(
            !running.by_entry.contains_key(&a),
            "no empty counters are kept"
        );
    }
}
