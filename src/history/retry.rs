//! `CRON_RETRY` and `CRON_RETRY_DELAY`: when a failed run of an entry is started again, as one
//! more attempt of the same slot, and which attempt notifies. Pure: the caller gives the times
//! (epoch milliseconds); no clock reads.
//!
//! * A run fails as [`Verdict::Failed`] says: a non-zero exit, a signal, its `CRON_TIMEOUT`.
//! * Attempt `k + 1` waits `CRON_RETRY_DELAY × 2^(k−1)` after attempt `k` ended, at most
//!   [`MAX_WAIT_S`] (a delay set longer than that is the wait of every retry).
//! * A retry that would start at or after the entry's next slot is dropped: that slot is the
//!   entry's next chance.
//! * The slot notifies once: on its first success, or on the failure of its last attempt. A
//!   failed attempt that is retried says nothing (its verdict is [`Verdict::Silent`]), to its
//!   user as to `CRON_NOTIFY=change`'s memory of the entry's last verdict.

use super::Attempt;
use super::notify::Verdict;

/// The longest wait between two attempts, in seconds (10 minutes).
pub const MAX_WAIT_S: u32 = 600;

/// The wait before retry `retry` (1: the first retry, attempt 2), in seconds: `delay_s`
/// doubled once per retry before it, at most [`MAX_WAIT_S`] or `delay_s` if that is longer.
pub fn wait_s(delay_s: u16, retry: u8) -> u32 {
    let delay = u32::from(delay_s);
    let doubled = delay.saturating_mul(1u32 << u32::from(retry.clamp(1, 20) - 1));
    doubled.min(MAX_WAIT_S.max(delay))
}

/// What a run carries of its entry's `CRON_RETRY`: which attempt it is, the delay, and the
/// time of the entry's next slot (`None`: none comes), before which a retry must start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    pub attempt: Attempt,
    pub delay_s: u16,
    pub before_ms: Option<i64>,
}

/// What follows the end of an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Nothing: it succeeded, or said nothing of the job.
    Done,
    /// It failed and was the last attempt.
    Exhausted,
    /// It failed; `attempt` starts at `at_ms`.
    Retry { at_ms: i64, attempt: Attempt },
    /// It failed, and its retry would have started at `at_ms`, at or after the next slot.
    Dropped { at_ms: i64, attempt: Attempt },
}

impl Plan {
    /// The plan of a slot's first attempt, for an entry with `retries` (none without).
    pub fn first(retries: u8, delay_s: u16, before_ms: Option<i64>) -> Option<Plan> {
        (retries > 0).then_some(Plan {
            attempt: Attempt {
                number: 1,
                of: retries.saturating_add(1),
            },
            delay_s,
            before_ms,
        })
    }

    /// What follows this attempt's end at `ended_ms` with `verdict`.
    pub fn after(&self, verdict: Verdict, ended_ms: i64) -> Next {
        if verdict != Verdict::Failed {
            return Next::Done;
        }
        let Some(attempt) = self.attempt.next() else {
            return Next::Exhausted;
        };
        let wait_ms = i64::from(wait_s(self.delay_s, self.attempt.number)) * 1000;
        let at_ms = ended_ms.saturating_add(wait_ms);
        match self.before_ms {
            Some(before) if at_ms >= before => Next::Dropped { at_ms, attempt },
            _ => Next::Retry { at_ms, attempt },
        }
    }

    /// The plan of the attempt that follows this one.
    pub fn then(&self, attempt: Attempt) -> Plan {
        Plan { attempt, ..*self }
    }

    /// What this attempt, ended at `ended_ms` with `verdict`, tells its notifications: a
    /// failure that is retried says nothing.
    pub fn notifying(&self, verdict: Verdict, ended_ms: i64) -> Verdict {
        match self.after(verdict, ended_ms) {
            Next::Retry { .. } => Verdict::Silent,
            _ => verdict,
        }
    }
}

/// What becomes of a retry the daemon kept across a restart (`STATE_DIR/retries`), due at
/// `at_ms`, its entry's next run at `before_ms` (`None`: none comes), found at start-up at
/// `now_ms`; `once`: the entry has `CRON_MISSED=once`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Restart {
    /// Its time is still to come, before the entry's next run: it waits for it again.
    Wait { at_ms: i64 },
    /// Its time passed while the daemon was down, and `CRON_MISSED=once` makes it up: it starts
    /// now, before the entry's next run.
    StartNow,
    /// Its time passed while the daemon was down and it is not made up (`CRON_MISSED=skip`, or
    /// the entry's next run came first): recorded as missed.
    Missed,
    /// Its time comes at or after the entry's next run: dropped, as any such retry.
    PastItsSlot,
}

/// [`Restart`]: a kept retry due at `at_ms`, before `before_ms`, at start-up at `now_ms`.
pub fn after_restart(at_ms: i64, before_ms: Option<i64>, once: bool, now_ms: i64) -> Restart {
    let before_next = |t: i64| before_ms.is_none_or(|before| t < before);
    if at_ms >= now_ms {
        return match before_next(at_ms) {
            true => Restart::Wait { at_ms },
            false => Restart::PastItsSlot,
        };
    }
    match once && before_next(now_ms) {
        true => Restart::StartNow,
        false => Restart::Missed,
    }
}

/// [`Plan::notifying`] for a run that may have no plan.
pub fn notifying(plan: Option<&Plan>, verdict: Verdict, ended_ms: i64) -> Verdict {
    plan.map_or(verdict, |p| p.notifying(verdict, ended_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crontab::policy::Notify;
    use crate::history::notify::wanted;

    const MINUTE: i64 = 60_000;

    #[test]
    fn the_waits_double_from_the_delay_up_to_ten_minutes() {
        let waits: Vec<u32> = (1..=10).map(|k| wait_s(30, k)).collect();
        assert_eq!(waits, [30, 60, 120, 240, 480, 600, 600, 600, 600, 600]);
        assert_eq!(wait_s(1, 1), 1);
        assert_eq!(wait_s(1, 10), 512);
        // A delay longer than the cap is every retry's wait.
        assert_eq!(wait_s(3600, 1), 3600);
        assert_eq!(wait_s(3600, 5), 3600);
    }

    /// The attempts of a slot that fail at each end, with `retries` and the next slot at
    /// `before_ms`: the start time of each retry, then what ended them.
    fn fail_all(retries: u8, delay_s: u16, before_ms: Option<i64>, took_ms: i64) -> Vec<Next> {
        let mut plan = Plan::first(retries, delay_s, before_ms).unwrap();
        let mut started = 0;
        let mut seen = Vec::new();
        loop {
            let next = plan.after(Verdict::Failed, started + took_ms);
            seen.push(next);
            match next {
                Next::Retry { at_ms, attempt } => {
                    started = at_ms;
                    plan = plan.then(attempt);
                }
                _ => return seen,
            }
        }
    }

    #[test]
    fn failed_attempts_are_retried_with_backoff_until_the_last_one() {
        let a = |number| Attempt { number, of: 4 };
        assert_eq!(
            fail_all(3, 30, None, 1000),
            [
                Next::Retry {
                    at_ms: 31_000,
                    attempt: a(2)
                },
                Next::Retry {
                    at_ms: 92_000,
                    attempt: a(3)
                },
                Next::Retry {
                    at_ms: 213_000,
                    attempt: a(4)
                },
                Next::Exhausted,
            ]
        );
        assert_eq!(Plan::first(0, 30, None), None, "CRON_RETRY=0: no plan");
    }

    #[test]
    fn a_retry_that_would_start_at_or_after_the_next_slot_is_dropped() {
        // The next slot at 60 s, up to 10 retries from 10 s, each attempt taking 1 s: retries
        // at 11 s and 32 s; the third would start at 73 s.
        let seen = fail_all(10, 10, Some(MINUTE), 1000);
        let attempt = |number| Attempt { number, of: 11 };
        assert_eq!(
            seen,
            [
                Next::Retry {
                    at_ms: 11_000,
                    attempt: attempt(2)
                },
                Next::Retry {
                    at_ms: 32_000,
                    attempt: attempt(3)
                },
                Next::Dropped {
                    at_ms: 73_000,
                    attempt: attempt(4)
                },
            ]
        );
        // Exactly at the next slot: dropped too.
        let plan = Plan::first(1, 30, Some(MINUTE)).unwrap();
        assert!(matches!(
            plan.after(Verdict::Failed, 30_000),
            Next::Dropped { at_ms: 60_000, .. }
        ));
        assert!(matches!(
            plan.after(Verdict::Failed, 29_999),
            Next::Retry { at_ms: 59_999, .. }
        ));
    }

    #[test]
    fn a_success_or_a_silent_run_ends_the_slot_and_a_timeout_counts_as_a_failure() {
        use crate::history::End;
        let plan = Plan::first(2, 1, None).unwrap();
        let second = match plan.after(Verdict::Failed, 0) {
            Next::Retry { attempt, .. } => plan.then(attempt),
            other => panic!("{other:?}"),
        };
        assert_eq!(second.attempt, Attempt { number: 2, of: 3 });
        assert_eq!(second.after(Verdict::Succeeded, 5_000), Next::Done);
        assert_eq!(plan.after(Verdict::Silent, 0), Next::Done);
        let timed_out = Verdict::of_run(End::Exited(0), true);
        assert!(matches!(plan.after(timed_out, 0), Next::Retry { .. }));
        let killed = Verdict::of_run(End::Signaled(9), false);
        assert!(matches!(plan.after(killed, 0), Next::Retry { .. }));
    }

    #[test]
    fn a_kept_retry_waits_again_or_cron_missed_decides_when_its_time_passed_while_down() {
        let now = 10 * MINUTE;
        let next = Some(11 * MINUTE);
        // Still to come, before the next run: it waits, whatever CRON_MISSED says.
        for once in [false, true] {
            let at_ms = now + 30_000;
            assert_eq!(
                after_restart(at_ms, next, once, now),
                Restart::Wait { at_ms }
            );
            assert_eq!(
                after_restart(now, None, once, now),
                Restart::Wait { at_ms: now }
            );
            // At or after the next run: dropped.
            assert_eq!(
                after_restart(11 * MINUTE, next, once, now),
                Restart::PastItsSlot
            );
        }
        // Passed while down: once starts it now, skip (the default) records it missed.
        let passed = now - 1;
        assert_eq!(after_restart(passed, next, true, now), Restart::StartNow);
        assert_eq!(after_restart(passed, None, true, now), Restart::StartNow);
        assert_eq!(after_restart(passed, next, false, now), Restart::Missed);
        // The entry's next run came while down too: missed even with once.
        let later = 11 * MINUTE;
        assert_eq!(after_restart(passed, next, true, later), Restart::Missed);
    }

    #[test]
    fn a_slot_notifies_once_on_its_first_success_or_its_last_failure() {
        // Three attempts: fail, fail, fail — only the last notifies, under every policy that
        // notifies failures.
        for policy in Notify::ALL {
            let mut plan = Plan::first(2, 1, None).unwrap();
            let mut notified = Vec::new();
            for ended in [0, 10_000, 20_000] {
                let verdict = plan.notifying(Verdict::Failed, ended);
                notified.push(wanted(policy, verdict, false));
                if let Next::Retry { attempt, .. } = plan.after(Verdict::Failed, ended) {
                    plan = plan.then(attempt);
                }
            }
            let failure_notifies = policy != Notify::Never;
            assert_eq!(
                notified,
                [false, false, failure_notifies],
                "{policy:?}: the last attempt's failure only"
            );
            // Fail, then succeed: the success notifies (under always, and under change when
            // the slot before failed), the failure nobody.
            let plan = Plan::first(2, 1, None).unwrap();
            let first = plan.notifying(Verdict::Failed, 0);
            assert_eq!(first, Verdict::Silent);
            let second = plan.then(Attempt { number: 2, of: 3 });
            let ok = second.notifying(Verdict::Succeeded, 5_000);
            assert_eq!(ok, Verdict::Succeeded);
            assert_eq!(
                wanted(policy, ok, true),
                matches!(policy, Notify::Always | Notify::Change)
            );
        }
        // A failure whose retry is dropped at the next slot is the slot's last word.
        let plan = Plan::first(5, 30, Some(MINUTE)).unwrap();
        assert_eq!(plan.notifying(Verdict::Failed, 45_000), Verdict::Failed);
        assert_eq!(notifying(None, Verdict::Failed, 0), Verdict::Failed);
    }
}
