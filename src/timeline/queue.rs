//! The due jobs (docs/design.md §1). Jobs start in the order they became due while the current
//! minute has time left; what is not started before the next boundary stays first in line for the
//! next cycle (and the daemon logs it). Nothing is dropped and nothing is handed out twice: `next`
//! moves a job out of the queue.
//!
//! A job may also have to wait: cronie's RANDOM_DELAY gives it a start time later in (or after)
//! its minute, and a failed fork holds the whole line for [`RETRY_MS`] (a fork that fails for
//! lack of processes would fail again at once: retrying without a pause spun the daemon). A
//! waiting job is in the queue, so the daemon's clock, not a sleeping process, starts it, and
//! removing its entry cancels it.
//!
//! Pure: the caller passes the clock reading and the deadline; no clock reads, no syscalls.

#![forbid(unsafe_code)]

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::UtcMinute;

/// How long a failed fork holds the line before the next attempt, in milliseconds.
pub const RETRY_MS: i64 = 1_000;

/// A job waiting to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued<T> {
    pub job: T,
    /// The minute it was due.
    pub due: UtcMinute,
    /// How many cycle ends it has waited through once ready.
    pub postponed: u32,
    /// When it may start (epoch milliseconds): its minute, or later with a RANDOM_DELAY.
    pub start_ms: i64,
    /// Its start has failed (no process could be made for it): since when, and how often.
    pub failed: Option<Failed>,
}

/// The failed starts of a job put back in the queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failed {
    /// When the first one failed (epoch milliseconds).
    pub since_ms: i64,
    /// How many have failed.
    pub tries: u32,
}

impl<T> Queued<T> {
    /// One more failed start, at `now_ms`.
    pub fn failed_at(&mut self, now_ms: i64) {
        self.failed = Some(match self.failed {
            Some(f) => Failed {
                tries: f.tries.saturating_add(1),
                ..f
            },
            None => Failed {
                since_ms: now_ms,
                tries: 1,
            },
        });
    }
}

/// A job whose start time has not come, ordered by that time, then by arrival.
#[derive(Debug)]
struct Waiting<T> {
    key: Reverse<(i64, u64)>,
    item: Queued<T>,
}

impl<T> PartialEq for Waiting<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<T> Eq for Waiting<T> {}
impl<T> PartialOrd for Waiting<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Waiting<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

#[derive(Debug)]
pub struct Queue<T> {
    /// Jobs whose start time has come, in the order they became ready.
    ready: VecDeque<Queued<T>>,
    /// Jobs with a later start time (RANDOM_DELAY), earliest first.
    waiting: BinaryHeap<Waiting<T>>,
    arrivals: u64,
    /// After a failed fork: nothing starts before this time.
    held_until_ms: i64,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            ready: VecDeque::new(),
            waiting: BinaryHeap::new(),
            arrivals: 0,
            held_until_ms: i64::MIN,
        }
    }
}

impl<T> Queue<T> {
    /// Adds a job due in `due` that may start at `start_ms` (the first millisecond of `due`, or
    /// later). A job that may start at its minute goes behind every ready job (older jobs keep
    /// their place); a later one waits for its time.
    pub fn push(&mut self, job: T, due: UtcMinute, start_ms: i64) {
        let item = Queued {
            job,
            due,
            postponed: 0,
            start_ms,
            failed: None,
        };
        if start_ms <= due.0 * 60_000 {
            self.ready.push_back(item);
        } else {
            self.arrivals += 1;
            self.waiting.push(Waiting {
                key: Reverse((start_ms, self.arrivals)),
                item,
            });
        }
    }

    /// Moves the waiting jobs whose time has come to the back of the ready line; returns them,
    /// so the caller can drop one that duplicates a ready job.
    pub fn promote(&mut self, now_ms: i64) -> Vec<Queued<T>> {
        let mut due = Vec::new();
        while self
            .waiting
            .peek()
            .is_some_and(|w| w.item.start_ms <= now_ms)
        {
            due.push(self.waiting.pop().expect("peeked").item);
        }
        due
    }

    /// Puts a job at the back of the ready line.
    pub fn push_ready(&mut self, item: Queued<T>) {
        self.ready.push_back(item);
    }

    /// The next job to start, if the cycle still has time (`now_ms < deadline_ms`) and the line
    /// is not held. Call [`Queue::promote`] first.
    pub fn next(&mut self, now_ms: i64, deadline_ms: i64) -> Option<Queued<T>> {
        if now_ms >= deadline_ms || now_ms < self.held_until_ms {
            return None;
        }
        self.ready.pop_front()
    }

    /// A job that could not be started after all (its fork failed at `now_ms`): back at the head
    /// of the line, its failure counted, and the whole line held for [`RETRY_MS`].
    pub fn put_back(&mut self, mut item: Queued<T>, now_ms: i64) {
        item.failed_at(now_ms);
        self.ready.push_front(item);
        self.held_until_ms = now_ms + RETRY_MS;
    }

    /// Takes the jobs put back after a failed start for which `take` is true out of the line.
    /// Only jobs put back are looked at: they lead the line (each went to its head, and the
    /// line is only ever taken from there), so the others cost nothing.
    pub fn take_failed(&mut self, mut take: impl FnMut(&Queued<T>) -> bool) -> Vec<Queued<T>> {
        let mut taken = Vec::new();
        let mut at = 0;
        while let Some(item) = self.ready.get(at).filter(|j| j.failed.is_some()) {
            if take(item) {
                taken.extend(self.ready.remove(at));
            } else {
                at += 1;
            }
        }
        taken
    }

    /// Called at a boundary: every ready job still waiting is postponed to the new cycle, first
    /// in line. Returns how many. (Jobs whose start time has not come are not late.)
    pub fn end_cycle(&mut self) -> usize {
        for item in &mut self.ready {
            item.postponed += 1;
        }
        self.ready.len()
    }

    /// Drops the waiting jobs (not the ready ones) for which `cancel` is true; returns how many.
    pub fn cancel_waiting(&mut self, mut cancel: impl FnMut(&T) -> bool) -> usize {
        let before = self.waiting.len();
        self.waiting.retain(|w| !cancel(&w.item.job));
        before - self.waiting.len()
    }

    /// Whether a job put back after a failed start leads the line.
    pub fn has_failed(&self) -> bool {
        self.ready.front().is_some_and(|j| j.failed.is_some())
    }

    /// Whether jobs are ready to start (or held by a failed fork).
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// When the next job could start: now for a ready line, the end of the hold after a failed
    /// fork, else the earliest start time of a waiting job. `None`: the queue is empty.
    pub fn next_start_ms(&self) -> Option<i64> {
        if !self.ready.is_empty() {
            return Some(self.held_until_ms);
        }
        self.waiting
            .peek()
            .map(|w| w.item.start_ms.max(self.held_until_ms))
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.ready.is_empty() && self.waiting.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_start_in_the_order_they_became_due() {
        let mut q = Queue::default();
        q.push("a", UtcMinute(1), 60_000);
        q.push("b", UtcMinute(1), 60_000);
        assert_eq!(q.next(0, 60_000).map(|j| j.job), Some("a"));
        assert_eq!(q.next(1, 60_000).map(|j| j.job), Some("b"));
        assert_eq!(q.next(2, 60_000), None);
    }

    #[test]
    fn what_is_not_started_by_the_boundary_stays_first_in_line_and_runs_once() {
        let mut q = Queue::default();
        for job in ["a", "b", "c"] {
            q.push(job, UtcMinute(1), 60_000);
        }
        assert_eq!(q.next(59_000, 60_000).map(|j| j.job), Some("a"));
        // The boundary passed: nothing more this cycle.
        assert_eq!(q.next(60_000, 60_000), None);
        assert_eq!(q.end_cycle(), 2);
        q.push("d", UtcMinute(2), 120_000);
        let order: Vec<_> = std::iter::from_fn(|| q.next(61_000, 120_000)).collect();
        assert_eq!(
            order,
            [
                Queued {
                    job: "b",
                    due: UtcMinute(1),
                    postponed: 1,
                    start_ms: 60_000,
                    failed: None,
                },
                Queued {
                    job: "c",
                    due: UtcMinute(1),
                    postponed: 1,
                    start_ms: 60_000,
                    failed: None,
                },
                Queued {
                    job: "d",
                    due: UtcMinute(2),
                    postponed: 0,
                    start_ms: 120_000,
                    failed: None,
                },
            ]
        );
        assert!(q.is_empty());
    }

    #[test]
    fn a_delayed_job_waits_for_its_time_without_holding_up_the_others() {
        let mut q = Queue::default();
        q.push("late", UtcMinute(1), 60_000 + 90_000);
        q.push("now", UtcMinute(1), 60_000);
        assert_eq!(q.next_start_ms(), Some(i64::MIN), "something is ready");
        assert!(q.promote(60_000).is_empty());
        assert_eq!(q.next(60_000, 120_000).map(|j| j.job), Some("now"));
        assert_eq!(q.next(60_001, 120_000), None);
        assert_eq!(q.next_start_ms(), Some(150_000));
        // Its time is in the next minute: the boundary does not count it as late.
        assert_eq!(q.end_cycle(), 0);
        let promoted = q.promote(150_000);
        assert_eq!(promoted.len(), 1);
        promoted.into_iter().for_each(|j| q.push_ready(j));
        let late = q.next(150_000, 180_000).expect("late");
        assert_eq!(
            (late.job, late.due, late.postponed),
            ("late", UtcMinute(1), 0)
        );
        assert!(q.is_empty());
        assert_eq!(q.next_start_ms(), None);
    }

    #[test]
    fn a_failed_fork_holds_the_line_for_a_second_then_the_same_job_goes_first() {
        let mut q = Queue::default();
        q.push("a", UtcMinute(1), 60_000);
        q.push("b", UtcMinute(1), 60_000);
        let a = q.next(60_000, 120_000).unwrap();
        q.put_back(a, 60_000);
        assert_eq!(q.next(60_500, 120_000), None, "held: no busy retry");
        assert_eq!(q.next_start_ms(), Some(61_000));
        assert_eq!(q.next(61_000, 120_000).map(|j| j.job), Some("a"));
        assert_eq!(q.next(61_000, 120_000).map(|j| j.job), Some("b"));
    }

    #[test]
    fn failed_starts_are_counted_from_the_first_and_only_jobs_put_back_are_taken_out() {
        let mut q = Queue::default();
        q.push("a", UtcMinute(1), 60_000);
        q.push("b", UtcMinute(1), 60_000);
        let a = q.next(60_000, 120_000).unwrap();
        assert!(!q.has_failed());
        q.put_back(a, 60_000);
        let a = q.next(61_000, 120_000).unwrap();
        q.put_back(a, 61_000);
        assert!(q.has_failed());
        // b was never tried: it is not taken, whatever is asked.
        assert!(q.take_failed(|j| j.job == "b").is_empty());
        let taken = q.take_failed(|_| true);
        let failed = Failed {
            since_ms: 60_000,
            tries: 2,
        };
        assert_eq!(
            taken.iter().map(|j| (j.job, j.failed)).collect::<Vec<_>>(),
            [("a", Some(failed))]
        );
        assert!(!q.has_failed());
        assert_eq!(q.next(62_000, 120_000).map(|j| j.job), Some("b"));
        assert!(q.is_empty());
    }

    #[test]
    fn waiting_jobs_can_be_cancelled_and_ready_ones_can_not() {
        let mut q = Queue::default();
        q.push("gone", UtcMinute(1), 60_000 + 5_000);
        q.push("kept", UtcMinute(1), 60_000 + 6_000);
        q.push("gone", UtcMinute(1), 60_000);
        assert_eq!(q.cancel_waiting(|j| *j == "gone"), 1);
        assert_eq!(q.next(60_000, 120_000).map(|j| j.job), Some("gone"));
        let rest: Vec<_> = q.promote(70_000).into_iter().map(|j| j.job).collect();
        assert_eq!(rest, ["kept"]);
    }
}
