//! `CRON_RETRY` in the scheduler: a failed run of an entry with retries is queued again as the
//! next attempt of its slot, at the time `crate::history::retry` gives, in the cycle's queue
//! (the loop's timer and wait start it, as a RANDOM_DELAY's run); a retry that would start at
//! or after the entry's next run is dropped, logged and recorded. A retry is a run of its entry
//! as any other (`CRON_OVERLAP`, `CRON_TIMEOUT`, `CRON_LATE` apply), never claimed again in a
//! cluster: the host that ran the first attempt runs the others. A manual run (`cronctl run`)
//! and `@reboot` are not retried.

use super::slots::Retrying;
use super::{Effects, Scheduler, clock};
use crate::history::notify::Verdict;
use crate::history::retry::{Next, Plan};
use crate::history::{Attempt, Reason};
use crate::job::record::RunFacts;
use crate::job::report::Said;
use crate::log::messages;
use crate::sys::process::Exit;
use crate::timeline::{EntryId, UtcMinute};

use super::super::handoff::Run;

/// How a job child's run ended, as a retry needs it.
pub(super) struct Ended {
    pub(super) exit: Exit,
    /// When the daemon started it (epoch ms), and how long its job ran as its child said.
    pub(super) started_ms: i64,
    pub(super) duration_ms: Option<u64>,
    /// Nothing of the job ran (an unknown user, a PAM refusal): not retried.
    pub(super) not_started: bool,
}

impl Ended {
    pub(super) fn of(exit: Exit, started_ms: i64, said: Option<&Said>) -> Ended {
        Ended {
            exit,
            started_ms,
            duration_ms: match said {
                Some(Said::Ended { duration_ms, .. }) => Some(*duration_ms),
                _ => None,
            },
            not_started: matches!(said, Some(Said::NotStarted { .. })),
        }
    }
}

impl Scheduler {
    /// The retry plan of a run about to start: `queued`, the retry it is (taken by its facts),
    /// or, for a scheduled run (not manual, not `@reboot`) of an entry with `CRON_RETRY`, its
    /// slot's first attempt's, with the time of the entry's next run after its slot.
    pub(super) fn attempt_of(
        &self,
        run: &Run,
        facts: &RunFacts,
        queued: Option<Retrying>,
    ) -> Option<Retrying> {
        let entry = run.job.entry.filter(|_| !run.job.manual)?;
        if queued.is_some() {
            return queued;
        }
        let policy = run.job.job.env().policy();
        let before_ms = match self.cycle.every_seconds(entry) {
            Some(_) => self.cycle.next_run_ms(entry),
            None => (self.cycle.fire_after(entry, run.due)).map(|m| m.start_second() * 1000),
        };
        let plan = Plan::first(policy.retries, policy.retry_delay(), before_ms)?;
        Some(Retrying {
            plan,
            trigger: facts.trigger,
            slot: facts.slot,
            previous_failed: None,
        })
    }

    /// After a job child's end: a failed attempt with retries left is queued again, or its
    /// retry dropped when it would start at or after the entry's next run.
    pub(super) fn retry_after(
        &mut self,
        run: &Run,
        retrying: Retrying,
        ended: Ended,
        now_ms: i64,
        fx: &mut dyn Effects,
    ) {
        let Some(entry) = run.job.entry.filter(|&e| self.cycle.get(e).is_some()) else {
            return;
        };
        if self.stopped || ended.not_started {
            return;
        }
        let verdict = match ended.exit {
            Exit::Code(0) => Verdict::Succeeded,
            _ => Verdict::Failed,
        };
        let ended_ms = match ended.duration_ms {
            Some(ms) => ended.started_ms + ms as i64,
            None => now_ms,
        };
        let job = &run.job.job;
        let zone = self.cycle.local_zone().clone();
        match retrying.plan.after(verdict, ended_ms) {
            Next::Done | Next::Exhausted => {}
            Next::Retry { at_ms, attempt } => {
                let next = Retrying {
                    plan: retrying.plan.then(attempt),
                    ..retrying
                };
                self.slots.retrying(entry, run.due, next);
                self.cycle
                    .queue_run(Some(entry), job.clone(), run.due, at_ms.max(now_ms));
                let line = messages::retry_line(
                    job.user(),
                    job.command(),
                    &shown(attempt),
                    &clock::time_s(&zone, at_ms),
                );
                fx.info(line.with_job(self.log_fields(Some(entry), job)));
            }
            Next::Dropped { at_ms, attempt } => {
                let next = Retrying {
                    plan: retrying.plan.then(attempt),
                    ..retrying
                };
                // Its job child read the same plan and end: it notified as the last attempt.
                self.drop_retry((entry, run.due, job), next, (at_ms, now_ms), false, fx);
            }
        }
    }

    /// Whether `run` is a retry that can no longer start before its entry's next run (the
    /// daemon was busy, or asleep): then it is dropped, logged and recorded.
    pub(super) fn retry_past_its_slot(
        &mut self,
        run: &Run,
        now_ms: i64,
        fx: &mut dyn Effects,
    ) -> bool {
        let Some(retrying) = self.slots.retry_of(run.job.entry, run.due) else {
            return false;
        };
        if retrying.plan.before_ms.is_none_or(|before| now_ms < before) {
            return false;
        }
        let Some(entry) = run.job.entry else {
            return false;
        };
        // The attempt before it was silent, its failure to be retried: this notifies.
        let at = (now_ms, now_ms);
        self.drop_retry((entry, run.due, &run.job.job), retrying, at, true, fx);
        true
    }

    /// Logs and records that the retry `retrying` of `entry`'s slot, to start at `at_ms`, does
    /// not start: its entry's next run comes first. `notify`: the record sends the slot's
    /// requests (no attempt did).
    fn drop_retry(
        &mut self,
        (entry, due, job): (EntryId, UtcMinute, &crate::job::JobSpec),
        retrying: Retrying,
        (at_ms, now_ms): (i64, i64),
        notify: bool,
        fx: &mut dyn Effects,
    ) {
        let zone = self.cycle.local_zone().clone();
        let attempt = shown(retrying.plan.attempt);
        let next = retrying
            .plan
            .before_ms
            .map_or_else(String::new, |ms| clock::time(&zone, ms));
        let at = clock::time_s(&zone, at_ms);
        let words = format!(
            "attempt {attempt} would have started at {at}, at or after the entry's next run at \
             {next} (CRON_RETRY)"
        );
        self.slots.retrying(entry, due, retrying);
        self.slots.name_pending(&job.owner.tab, &self.cycle);
        let named = super::slots::named_in(&self.cycle, Some(entry));
        let facts = self.slots.facts((Some(entry), job, named), due, false);
        let mut outcome = self.slots.not_run(
            (Some(entry), job, named),
            (facts.trigger, facts.slot),
            (Reason::Late, words),
            now_ms,
        );
        outcome.attempt = Some(retrying.plan.attempt);
        self.record_as(Some(entry), outcome, notify, fx);
        let line = messages::retry_dropped_line(job.user(), job.command(), &attempt, &at, &next);
        fx.info(line.with_job(self.log_fields(Some(entry), job)));
    }

    /// A retry that did not start (its fork failed) stays the attempt it was when its run,
    /// put back in the queue, starts again.
    pub(super) fn keep_retrying(
        &mut self,
        entry: Option<EntryId>,
        due: UtcMinute,
        retrying: Option<Retrying>,
    ) {
        if let (Some(entry), Some(retrying)) = (entry, retrying) {
            self.slots.retrying(entry, due, retrying);
        }
    }

    /// Whether `run` is a retry: it is never claimed again in a cluster.
    pub(super) fn is_retry(&self, run: &Run) -> bool {
        self.slots.retry_of(run.job.entry, run.due).is_some()
    }
}

/// `2/3`: an attempt as the log says it.
fn shown(attempt: Attempt) -> String {
    format!("{}/{}", attempt.number, attempt.of)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{minute, scheduler, start_due};
    use super::super::*;
    use crate::daemon::clock::{Clock, FakeClock};
    use crate::daemon::effects::Recorded;
    use crate::history::Attempt;
    use crate::job::report::End;

    fn failed(s: &mut Scheduler, pid: Pid, ran_ms: u64, clock: &FakeClock, fx: &mut Recorded) {
        let said = Said::Ended {
            end: End::Exited(1),
            duration_ms: ran_ms,
        };
        s.on_reaped(pid, Exit::Code(1), Some(said), clock.now(), fx);
    }

    fn attempts(fx: &Recorded) -> Vec<Option<Attempt>> {
        fx.facts
            .iter()
            .map(|f| f.retry.map(|plan| plan.attempt))
            .collect()
    }

    fn a(number: u8, of: u8) -> Option<Attempt> {
        Some(Attempt { number, of })
    }

    #[test]
    fn a_failed_run_is_tried_again_after_the_delay_then_twice_that_as_the_same_slot() {
        let clock = FakeClock::at("2026-11-27T10:29:30Z");
        let mut fx = Recorded::default();
        let text = "CRON_RETRY=3\nCRON_RETRY_DELAY=5\n30 * * * * flaky\n";
        let mut s = scheduler(&clock, text, &mut fx);
        clock.advance_ms(30_000);
        let [Launched::Started(first)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        let slot = fx.facts[0].slot;
        clock.advance_ms(2_000);
        failed(&mut s, first, 2_000, &clock, &mut fx);
        assert_eq!(
            fx.logged("(alice) RETRY (flaky) attempt 2/4 at 10:30:07, after a failure")
                .len(),
            1,
            "{:?}",
            fx.lines
        );
        // The loop sleeps until the retry's time: no timer, no thread.
        let now_ms = clock.now().as_millisecond();
        assert_eq!(s.next_start_ms(), Some(now_ms + 5_000));
        clock.advance_ms(4_999);
        assert!(start_due(&mut s, &clock, &mut fx).is_empty());
        clock.advance_ms(1);
        let [Launched::Started(second)] = start_due(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        // Its end 1 s later: the third attempt waits 10 s, then 20 s.
        clock.advance_ms(1_000);
        failed(&mut s, second, 1_000, &clock, &mut fx);
        assert_eq!(
            s.next_start_ms(),
            Some(clock.now().as_millisecond() + 10_000)
        );
        clock.advance_ms(10_000);
        let [Launched::Started(third)] = start_due(&mut s, &clock, &mut fx)[..] else {
            panic!()
        };
        failed(&mut s, third, 0, &clock, &mut fx);
        assert_eq!(
            s.next_start_ms(),
            Some(clock.now().as_millisecond() + 20_000)
        );
        clock.advance_ms(20_000);
        let [Launched::Started(last)] = start_due(&mut s, &clock, &mut fx)[..] else {
            panic!()
        };
        failed(&mut s, last, 0, &clock, &mut fx);
        assert_eq!(s.next_start_ms(), None, "the last attempt failed: no more");
        assert_eq!(attempts(&fx), [a(1, 4), a(2, 4), a(3, 4), a(4, 4)]);
        for facts in &fx.facts {
            assert_eq!((facts.trigger, facts.slot), (Trigger::Schedule, slot));
        }
    }

    #[test]
    fn a_success_on_the_second_attempt_ends_the_slot_and_a_timeout_is_a_failure() {
        let clock = FakeClock::at("2026-11-27T10:04:30Z");
        let mut fx = Recorded::default();
        let text = "CRON_RETRY=3\nCRON_RETRY_DELAY=1\n*/5 * * * * flaky\n";
        let mut s = scheduler(&clock, text, &mut fx);
        clock.advance_ms(30_000);
        let [Launched::Started(first)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!()
        };
        // Ended by its CRON_TIMEOUT: the child exits 2.
        s.on_reaped(first, Exit::Code(2), None, clock.now(), &mut fx);
        clock.advance_ms(1_000);
        let [Launched::Started(second)] = start_due(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        s.on_reaped(second, Exit::Code(0), None, clock.now(), &mut fx);
        assert_eq!(s.next_start_ms(), None);
        assert_eq!(attempts(&fx), [a(1, 4), a(2, 4)]);
        // The second attempt is told what the slot before said, not what the first attempt
        // said: its success is no change.
        assert!(fx.facts.iter().all(|f| !f.previous_failed));
    }

    #[test]
    fn a_retry_that_would_start_at_the_next_slot_is_dropped_logged_and_recorded() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let text = "CRON_RETRY=2\nCRON_RETRY_DELAY=30\n* * * * * flaky\n";
        let mut s = scheduler(&clock, text, &mut fx);
        clock.advance_ms(30_000);
        let [Launched::Started(first)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!()
        };
        // It ran 31 s: its retry would start at 10:02:01, after the next run at 10:02.
        clock.advance_ms(31_000);
        failed(&mut s, first, 31_000, &clock, &mut fx);
        assert_eq!(s.next_start_ms(), None);
        assert_eq!(
            fx.logged(
                "(alice) RETRY DROPPED (flaky) attempt 2/3 would start at 10:02:01, at or after \
                 the entry's next run at 10:02"
            )
            .len(),
            1,
            "{:?}",
            fx.lines
        );
        let dropped = fx.records.last().unwrap();
        assert_eq!(dropped.attempt, a(2, 3));
        assert!(matches!(
            &dropped.result,
            crate::history::Result::NotRun { reason: Reason::Late, words }
                if words.contains("attempt 2/3 would have started at 10:02:01")
        ));
        assert_eq!(dropped.slot, fx.facts[0].slot);
        // The failed attempt's job child read the same plan from the same end (the daemon's
        // start and its own duration) and notified as the slot's last: the record does not.
        assert_eq!(
            fx.facts[0].started_ms,
            clock.now().as_millisecond() - 31_000
        );
        assert!(fx.notified.is_empty(), "{:?}", fx.notified);
    }

    #[test]
    fn a_retry_whose_time_comes_after_the_next_slot_is_dropped_and_notifies_for_the_slot() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let text = "CRON_RETRY=2\nCRON_RETRY_DELAY=30\n* * * * * flaky\n";
        let mut s = scheduler(&clock, text, &mut fx);
        clock.advance_ms(30_000);
        let [Launched::Started(first)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!()
        };
        clock.advance_ms(1_000);
        failed(&mut s, first, 1_000, &clock, &mut fx);
        assert_eq!(
            fx.logged(") RETRY (flaky) attempt 2/3 at 10:01:31").len(),
            1
        );
        // The daemon comes to it only after 10:02 (it was busy, or the machine slept).
        clock.advance_ms(65_000);
        let launched = start_due(&mut s, &clock, &mut fx);
        assert_eq!(launched, [Launched::Skipped]);
        assert_eq!(fx.logged("RETRY DROPPED (flaky) attempt 2/3").len(), 1);
        // The first attempt was silent (its failure was to be retried): the slot's dropped
        // retry is what tells of it, once.
        assert_eq!(fx.notified, [("flaky".to_string(), Reason::Late, true)]);
    }

    #[test]
    fn a_retry_whose_fork_fails_is_the_same_attempt_when_it_starts() {
        let clock = FakeClock::at("2026-11-27T10:29:30Z");
        let mut fx = Recorded::default();
        let text = "CRON_RETRY=2\nCRON_RETRY_DELAY=5\n30 * * * * flaky\n";
        let mut s = scheduler(&clock, text, &mut fx);
        clock.advance_ms(30_000);
        let [Launched::Started(first)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!()
        };
        failed(&mut s, first, 0, &clock, &mut fx);
        clock.advance_ms(5_000);
        fx.fail_starts = 1;
        let launched = start_due(&mut s, &clock, &mut fx);
        assert!(
            matches!(launched[..], [Launched::Failed { .. }]),
            "{launched:?}"
        );
        // Forks work again: it starts as attempt 2 of the same slot, not a new slot's first.
        clock.advance_ms(1_000);
        let [Launched::Started(_)] = start_due(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        assert_eq!(attempts(&fx), [a(1, 3), a(2, 3), a(2, 3)]);
        assert!(fx.facts.iter().all(|f| f.slot == fx.facts[0].slot));
        assert!(fx.facts.iter().all(|f| f.trigger == Trigger::Schedule));
    }

    #[test]
    fn a_retry_follows_cron_overlap_and_a_manual_run_is_not_retried() {
        let clock = FakeClock::at("2026-11-27T10:09:30Z");
        let mut fx = Recorded::default();
        let text = "CRON_RETRY=1\nCRON_RETRY_DELAY=1\nCRON_OVERLAP=skip\n*/10 * * * * flaky\n";
        let mut s = scheduler(&clock, text, &mut fx);
        let id = s.cycle.ids().next().unwrap();
        clock.advance_ms(30_000);
        let [Launched::Started(first)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!()
        };
        // The first attempt fails; a manual run starts before its retry's time.
        failed(&mut s, first, 0, &clock, &mut fx);
        let manual = s.run_now(id, "root", None, clock.now(), &mut fx);
        let Some(Launched::Started(manual)) = manual else {
            panic!("{manual:?}")
        };
        assert_eq!(
            fx.facts.last().unwrap().retry,
            None,
            "a manual run has no plan"
        );
        // The retry's time comes while the manual run runs: skipped, as CRON_OVERLAP says,
        // and recorded as the slot's second attempt.
        clock.advance_ms(1_000);
        assert_eq!(start_due(&mut s, &clock, &mut fx), [Launched::Skipped]);
        let skipped = fx.records.last().unwrap();
        assert_eq!(skipped.attempt, a(2, 2));
        assert!(matches!(
            skipped.result,
            crate::history::Result::NotRun {
                reason: Reason::Overlap,
                ..
            }
        ));
        // The manual run fails: not retried.
        failed(&mut s, manual, 0, &clock, &mut fx);
        assert_eq!(s.next_start_ms(), None);
    }
}
