//! The FIFO of due jobs (DESIGN §1): jobs are started in the order they became due while the
//! current minute has time left; what is not started before the next boundary stays first in
//! line for the next cycle (and the daemon logs it). Nothing is dropped and nothing is handed
//! out twice: `next` moves a job out of the queue.
//!
//! Pure: the caller passes the clock reading and the deadline; no clock reads, no syscalls.

#![forbid(unsafe_code)]

use std::collections::VecDeque;

use crate::timeline::UtcMinute;

/// A job waiting to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queued<T> {
    pub job: T,
    /// The minute it was due.
    pub due: UtcMinute,
    /// How many cycle ends it has waited through.
    pub postponed: u32,
}

#[derive(Debug)]
pub struct Queue<T> {
    items: VecDeque<Queued<T>>,
}

impl<T> Default for Queue<T> {
    fn default() -> Self {
        Queue {
            items: VecDeque::new(),
        }
    }
}

impl<T> Queue<T> {
    /// Adds a job behind every job already waiting (older jobs keep their place).
    pub fn push(&mut self, job: T, due: UtcMinute) {
        self.items.push_back(Queued {
            job,
            due,
            postponed: 0,
        });
    }

    /// The next job to start, if the cycle still has time (`now_ms < deadline_ms`).
    pub fn next(&mut self, now_ms: i64, deadline_ms: i64) -> Option<Queued<T>> {
        if now_ms >= deadline_ms {
            return None;
        }
        self.items.pop_front()
    }

    /// A job that could not be started after all (fork failed): back at the head of the line.
    pub fn put_back(&mut self, item: Queued<T>) {
        self.items.push_front(item);
    }

    /// Called at a boundary: every job still waiting is postponed to the new cycle, first in
    /// line. Returns how many.
    pub fn end_cycle(&mut self) -> usize {
        for item in &mut self.items {
            item.postponed += 1;
        }
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_start_in_the_order_they_became_due() {
        let mut q = Queue::default();
        q.push("a", UtcMinute(1));
        q.push("b", UtcMinute(1));
        assert_eq!(q.next(0, 60_000).map(|j| j.job), Some("a"));
        assert_eq!(q.next(1, 60_000).map(|j| j.job), Some("b"));
        assert_eq!(q.next(2, 60_000), None);
    }

    #[test]
    fn what_is_not_started_by_the_boundary_stays_first_in_line_and_runs_once() {
        let mut q = Queue::default();
        for job in ["a", "b", "c"] {
            q.push(job, UtcMinute(1));
        }
        assert_eq!(q.next(59_000, 60_000).map(|j| j.job), Some("a"));
        // The boundary passed: nothing more this cycle.
        assert_eq!(q.next(60_000, 60_000), None);
        assert_eq!(q.end_cycle(), 2);
        q.push("d", UtcMinute(2));
        let order: Vec<_> = std::iter::from_fn(|| q.next(61_000, 120_000)).collect();
        assert_eq!(
            order,
            [
                Queued {
                    job: "b",
                    due: UtcMinute(1),
                    postponed: 1
                },
                Queued {
                    job: "c",
                    due: UtcMinute(1),
                    postponed: 1
                },
                Queued {
                    job: "d",
                    due: UtcMinute(2),
                    postponed: 0
                },
            ]
        );
        assert!(q.is_empty());
    }
}
