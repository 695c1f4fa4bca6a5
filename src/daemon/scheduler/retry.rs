//! `CRON_RETRY` in the scheduler: a failed run of an entry with retries is queued again as the
//! next attempt of its slot, at the time `crate::history::retry` gives, in the cycle's queue
//! (the loop's timer and wait start it, as a RANDOM_DELAY's run); a retry that would start at
//! or after the entry's next run is dropped, logged and recorded. A retry is a run of its entry
//! as any other (`CRON_OVERLAP`, `CRON_TIMEOUT`, `CRON_LATE` apply), never claimed again in a
//! cluster: the host that ran the first attempt runs the others. A manual run (`cronctl run`)
//! and `@reboot` are not retried.

use std::collections::HashMap;

use jiff::Timestamp;

use super::retry_state::{self, Kept};
use super::slots::Retrying;
use super::{Effects, Scheduler, clock};
use crate::cluster::entry_id::LocalId;
use crate::crontab::policy::Missed;
use crate::database::entries::JobSpec;
use crate::history::notify::Verdict;
use crate::history::retry::{Next, Plan, Restart, after_restart};
use crate::history::{Attempt, Reason};
use crate::job::record::RunFacts;
use crate::job::report::Said;
use crate::log::Level;
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
            at_ms: run.start_ms,
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
                    at_ms: at_ms.max(now_ms),
                    ..retrying
                };
                self.slots.retrying(entry, run.due, next);
                self.cycle
                    .queue_run(Some(entry), job.clone(), run.due, next.at_ms);
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
                    at_ms,
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

    /// Whether `run` is a retry: it is never claimed again in a cluster.
    pub(super) fn is_retry(&self, run: &Run) -> bool {
        self.slots.retry_of(run.job.entry, run.due).is_some()
    }
}

/// The least time between two writes of the retries' state file: a burst of failures writes
/// it once.
const KEEP_EVERY_MS: i64 = 1000;

/// How the retries' state file (`retry_state`) is kept: when it was last written, and what was
/// said of it (each trouble once, until it is over).
#[derive(Debug, Default)]
pub(super) struct Keeping {
    written_ms: Option<i64>,
    said_left_out: bool,
    said_unwritten: bool,
}

/// `CRON_RETRY` across a restart (`scheduler::retry_state`): the retries queued kept in the
/// state file, and read back at start-up.
impl Scheduler {
    /// At the end of a loop turn: the state file written if the retries queued changed (one
    /// queued, started or dropped), at most once a second; [`Scheduler::retries_deadline_ms`]
    /// wakes the loop for a change this left unwritten.
    pub(in crate::daemon) fn keep_retries(&mut self, now_ms: i64, fx: &mut dyn Effects) {
        if !self.slots.retries_changed() {
            return;
        }
        let since = self.keeping.written_ms.map(|w| now_ms - w);
        if since.is_none_or(|ms| !(0..KEEP_EVERY_MS).contains(&ms)) {
            self.write_retries(now_ms, fx);
        }
    }

    /// When the loop must wake to write a change of the retries queued: `None` when there is
    /// none to write.
    pub(in crate::daemon) fn retries_deadline_ms(&self) -> Option<i64> {
        let written = self.keeping.written_ms?;
        self.slots
            .retries_changed()
            .then_some(written + KEEP_EVERY_MS)
    }

    /// Writes the retries queued (at most `retry_state::MAX_KEPT`, those due first) to the
    /// state file now: at the end of a turn, at a clean stop, after start-up.
    pub(super) fn write_retries(&mut self, now_ms: i64, fx: &mut dyn Effects) {
        let (kept, left_out) = retry_state::bounded(self.kept_retries());
        let path = self.state_dir.join(retry_state::FILE);
        if left_out == 0 {
            self.keeping.said_left_out = false;
        } else if !self.keeping.said_left_out {
            let line = messages::retries_left_out_line(&path, left_out, retry_state::MAX_KEPT);
            fx.log(Level::Warning, line);
            self.keeping.said_left_out = true;
        }
        self.slots.retries_kept();
        self.keeping.written_ms = Some(now_ms);
        match fx.write_retries(&self.state_dir, &kept) {
            Ok(()) => self.keeping.said_unwritten = false,
            Err(e) if !self.keeping.said_unwritten => {
                fx.error(messages::retries_unwritten_line(&path, &e));
                self.keeping.said_unwritten = true;
            }
            Err(_) => {}
        }
    }

    /// The retries queued, as the state file keeps them: by their entry's id.
    fn kept_retries(&mut self) -> Vec<Kept> {
        let queued: Vec<(EntryId, UtcMinute, Retrying)> = self
            .slots
            .retries()
            .map(|(e, due, r)| (e, due, *r))
            .collect();
        let mut kept = Vec::with_capacity(queued.len());
        for (entry, due, r) in queued {
            let Some(id) = self.id_of(entry) else {
                continue;
            };
            kept.push(Kept {
                id,
                due,
                slot: r.slot,
                trigger: r.trigger,
                attempt: r.plan.attempt,
                at_ms: r.at_ms,
                previous_failed: r.previous_failed.unwrap_or(false),
            });
        }
        kept
    }

    /// The id `cronctl list` shows for loaded entry `entry`.
    pub(super) fn id_of(&mut self, entry: EntryId) -> Option<LocalId> {
        let tab = self.cycle.get(entry)?.2.owner.tab.clone();
        self.slots.name_pending(&tab, &self.cycle);
        let named = super::slots::named_in(&self.cycle, Some(entry))?;
        Some(self.slots.local_id(entry, named))
    }

    /// At start-up, the crontabs loaded (and what was missed made up): each retry the state
    /// file kept whose entry is loaded with the same id and still has that attempt waits
    /// again, starts now or is recorded as not run, as `history::retry::after_restart` says;
    /// the others are dropped, counted in one line. Then the file is written from the retries
    /// queued (it is consumed). A file not trusted is logged, and no retry starts from it.
    pub(in crate::daemon) fn restore_retries(&mut self, now: Timestamp, fx: &mut dyn Effects) {
        let now_ms = now.as_millisecond();
        let path = self.state_dir.join(retry_state::FILE);
        let kept = match fx.read_retries(&self.state_dir) {
            Ok(None) => return,
            Ok(Some(kept)) => kept,
            Err(why) => {
                fx.log(Level::Warning, messages::retries_ignored_line(&path, &why));
                Vec::new()
            }
        };
        let by_id = match kept.is_empty() {
            true => HashMap::new(),
            false => self.entries_with_retries(),
        };
        let mut dropped = 0;
        for k in kept {
            let entry = by_id.get(&k.id).copied();
            if !entry.is_some_and(|e| self.restore_retry(e, k, now_ms, fx)) {
                dropped += 1;
            }
        }
        if dropped > 0 {
            fx.info(messages::retries_gone_line(&path, dropped));
        }
        self.slots.retries_to_keep();
        self.write_retries(now_ms, fx);
    }

    /// The loaded entries with `CRON_RETRY`, by their id.
    fn entries_with_retries(&mut self) -> HashMap<LocalId, EntryId> {
        let entries: Vec<EntryId> = self.cycle.ids().chain(self.cycle.every_ids()).collect();
        let mut by_id = HashMap::new();
        for entry in entries {
            let retries = self.cycle.get(entry).map(|e| e.2.env().policy().retries);
            if retries.unwrap_or(0) > 0
                && let Some(id) = self.id_of(entry)
            {
                by_id.insert(id, entry);
            }
        }
        by_id
    }

    /// The kept retry `k` of `entry`: `false` when the entry no longer has its attempt (its
    /// `CRON_RETRY` lowered).
    fn restore_retry(
        &mut self,
        entry: EntryId,
        k: Kept,
        now_ms: i64,
        fx: &mut dyn Effects,
    ) -> bool {
        let Some((_, _, job, _)) = self.cycle.get(entry) else {
            return false;
        };
        let job = job.clone();
        let policy = job.env().policy();
        let of = policy.retries.saturating_add(1);
        if policy.retries == 0 || k.attempt.number > of {
            return false;
        }
        let before_ms = match self.cycle.every_seconds(entry) {
            Some(_) => self.cycle.next_run_ms(entry),
            None => (self.cycle.fire_after(entry, k.due)).map(|m| m.start_second() * 1000),
        };
        let attempt = Attempt { of, ..k.attempt };
        let plan = Plan {
            attempt,
            delay_s: policy.retry_delay(),
            before_ms,
        };
        let retrying = Retrying {
            plan,
            trigger: k.trigger,
            slot: k.slot,
            previous_failed: Some(k.previous_failed),
            at_ms: k.at_ms,
        };
        let once = policy.missed == Missed::Once;
        let zone = self.cycle.local_zone().clone();
        let (shown, at) = (shown(attempt), clock::time_s(&zone, k.at_ms));
        let (user, command) = (job.user(), job.command());
        let line = match after_restart(k.at_ms, before_ms, once, now_ms) {
            Restart::Wait { at_ms } => {
                self.queue_retry(entry, (k.due, &job), Retrying { at_ms, ..retrying });
                messages::retry_kept_line(user, command, &shown, &at)
            }
            Restart::StartNow => {
                let at_ms = now_ms;
                self.queue_retry(entry, (k.due, &job), Retrying { at_ms, ..retrying });
                messages::retry_made_up_line(user, command, &shown, &at)
            }
            Restart::Missed => {
                self.record_retry_missed((entry, &job), retrying, once, now_ms, fx);
                messages::retry_missed_line(user, command, &shown, &at, once)
            }
            Restart::PastItsSlot => {
                let at = (k.at_ms, now_ms);
                self.drop_retry((entry, k.due, &job), retrying, at, true, fx);
                return true;
            }
        };
        fx.info(line.with_job(self.log_fields(Some(entry), &job)));
        true
    }

    /// Queues `retrying`, a retry of `entry`'s run due in `due`, for its time.
    fn queue_retry(&mut self, entry: EntryId, (due, job): (UtcMinute, &JobSpec), r: Retrying) {
        self.slots.retrying(entry, due, r);
        self.cycle.queue_run(Some(entry), job.clone(), due, r.at_ms);
    }

    /// Records that the kept retry `retrying` of `entry` did not run: its time passed while
    /// the daemon was down, and it is not made up (`once`: the entry's next run came first).
    /// Its attempt before was silent (its failure was to be retried): this notifies.
    fn record_retry_missed(
        &mut self,
        (entry, job): (EntryId, &JobSpec),
        retrying: Retrying,
        once: bool,
        now_ms: i64,
        fx: &mut dyn Effects,
    ) {
        let zone = self.cycle.local_zone().clone();
        let attempt = shown(retrying.plan.attempt);
        let at = clock::time_s(&zone, retrying.at_ms);
        let after = match once {
            true => "the entry's next run came first",
            false => "not made up (CRON_MISSED=once would start it)",
        };
        let words = format!("attempt {attempt} was due at {at} while the daemon was down; {after}");
        self.slots.name_pending(&job.owner.tab, &self.cycle);
        let named = super::slots::named_in(&self.cycle, Some(entry));
        let mut outcome = self.slots.not_run(
            (Some(entry), job, named),
            (retrying.trigger, retrying.slot),
            (Reason::Missed, words),
            now_ms,
        );
        outcome.attempt = Some(retrying.plan.attempt);
        self.record(Some(entry), outcome, fx);
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
    use crate::cluster::entry_id::LocalId;
    use crate::daemon::clock::{Clock, FakeClock};
    use crate::daemon::effects::Recorded;
    use crate::daemon::scheduler::retry_state::Kept;
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

    /// The retries the fake state directory keeps.
    fn kept(fx: &Recorded) -> Vec<Kept> {
        let dir = std::path::Path::new("/var/lib/crond");
        fx.retries
            .get(dir)
            .cloned()
            .unwrap_or(Ok(Vec::new()))
            .unwrap()
    }

    /// A daemon at 10:29:30 whose hourly entry (`CRON_RETRY=3`, a minute's delay, `extra`
    /// above it) fails at 10:30:02: its retry waits for 10:31:02. Returns the scheduler, the
    /// first attempt's slot and the effects.
    fn failed_before_a_stop(extra: &str) -> (Scheduler, Option<i64>, Recorded) {
        let clock = FakeClock::at("2026-11-27T10:29:30Z");
        let mut fx = Recorded::default();
        let text = format!("{extra}CRON_RETRY=3\nCRON_RETRY_DELAY=60\n30 * * * * flaky\n");
        let mut s = scheduler(&clock, &text, &mut fx);
        clock.advance_ms(30_000);
        let [Launched::Started(first)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        let slot = fx.facts[0].slot;
        clock.advance_ms(2_000);
        failed(&mut s, first, 2_000, &clock, &mut fx);
        (s, slot, fx)
    }

    #[test]
    fn a_retry_waiting_is_kept_once_a_second_at_most_and_at_a_stop() {
        let (mut s, slot, mut fx) = failed_before_a_stop("");
        let now_ms = 1_795_775_402_000; // 10:30:02
        s.keep_retries(now_ms, &mut fx);
        assert_eq!(fx.retries_written, 1);
        let [k] = kept(&fx)[..] else { panic!() };
        assert_eq!(k.attempt, Attempt { number: 2, of: 4 });
        assert_eq!(
            (k.slot, k.trigger, k.at_ms),
            (slot, Trigger::Schedule, now_ms + 60_000)
        );
        // Nothing changed: nothing written, nothing to wake for.
        s.keep_retries(now_ms + 5_000, &mut fx);
        assert_eq!((fx.retries_written, s.retries_deadline_ms()), (1, None));
        // A change a second or more after the last write is written at once; one within the
        // second after it when the second is over, not before.
        s.slots.retries_to_keep();
        s.keep_retries(now_ms + 5_500, &mut fx);
        assert_eq!(fx.retries_written, 2);
        s.slots.retries_to_keep();
        s.keep_retries(now_ms + 5_600, &mut fx);
        s.keep_retries(now_ms + 6_499, &mut fx);
        assert_eq!(fx.retries_written, 2);
        assert_eq!(s.retries_deadline_ms(), Some(now_ms + 6_500));
        s.keep_retries(now_ms + 6_500, &mut fx);
        assert_eq!(fx.retries_written, 3);
        // A stop writes what changed since, at once.
        s.slots.retries_to_keep();
        s.stopping(
            false,
            jiff::Timestamp::from_millisecond(now_ms + 6_600).unwrap(),
            &mut fx,
        );
        assert_eq!(fx.retries_written, 4);
        assert_eq!(kept(&fx).len(), 1);
    }

    /// A new daemon at `at` on the same state directory and crontab (`extra` above the
    /// entry), its kept retries read back.
    fn restarted(fx: &mut Recorded, at: &str, extra: &str) -> (Scheduler, FakeClock) {
        let clock = FakeClock::at(at);
        let text = format!("{extra}CRON_RETRY=3\nCRON_RETRY_DELAY=60\n30 * * * * flaky\n");
        let mut s = scheduler(&clock, &text, fx);
        fx.facts.clear();
        s.restore_retries(clock.now(), fx);
        (s, clock)
    }

    #[test]
    fn a_retry_kept_across_a_restart_runs_as_the_same_attempt_of_the_same_slot() {
        let (mut s, slot, mut fx) = failed_before_a_stop("");
        s.stopping(
            false,
            jiff::Timestamp::from_second(1_795_775_410).unwrap(),
            &mut fx,
        );
        assert_eq!(kept(&fx).len(), 1, "written at the stop");
        let (mut again, clock) = restarted(&mut fx, "2026-11-27T10:30:40Z", "");
        assert_eq!(
            fx.logged("(alice) RETRY (flaky) attempt 2/4 at 10:31:02, kept across a restart")
                .len(),
            1,
            "{:?}",
            fx.lines
        );
        assert_eq!(kept(&fx).len(), 1, "the file rewritten from the queue");
        let due_ms = clock.now().as_millisecond() + 22_000;
        assert_eq!(again.next_start_ms(), Some(due_ms));
        clock.advance_ms(21_999);
        assert!(start_due(&mut again, &clock, &mut fx).is_empty());
        clock.advance_ms(1);
        let [Launched::Started(_)] = start_due(&mut again, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        assert_eq!(attempts(&fx), [a(2, 4)]);
        assert_eq!(
            (fx.facts[0].trigger, fx.facts[0].slot),
            (Trigger::Schedule, slot)
        );
        // Started: no longer waiting, and the file says so.
        again.keep_retries(clock.now().as_millisecond(), &mut fx);
        assert!(kept(&fx).is_empty());
    }

    #[test]
    fn a_kept_retry_whose_time_passed_while_down_is_missed_unless_cron_missed_is_once() {
        // CRON_MISSED=skip (the default): recorded as not run, missed, as its attempt; not
        // started.
        let (mut s, slot, mut fx) = failed_before_a_stop("");
        s.stopping(
            false,
            jiff::Timestamp::from_second(1_795_775_410).unwrap(),
            &mut fx,
        );
        let (mut again, clock) = restarted(&mut fx, "2026-11-27T10:35:00Z", "");
        assert!(start_due(&mut again, &clock, &mut fx).is_empty());
        assert_eq!(again.next_start_ms(), None);
        let line = "(alice) RETRY DROPPED (flaky) attempt 2/4 was due at 10:31:02 while the \
                    daemon was down: not started (CRON_MISSED=once would start it)";
        assert_eq!(fx.logged(line).len(), 1, "{:?}", fx.lines);
        let missed = fx.records.last().unwrap();
        assert_eq!((missed.attempt, missed.slot), (a(2, 4), slot));
        assert!(matches!(
            &missed.result,
            crate::history::Result::NotRun { reason: Reason::Missed, words }
                if words.contains("not made up")
        ));
        // Its first attempt was silent: the record is the slot's last word, and notifies.
        assert_eq!(fx.notified.last().unwrap().1, Reason::Missed);
        assert!(kept(&fx).is_empty(), "consumed");
        // CRON_MISSED=once: it starts now, as the same attempt of the same slot.
        let (mut s, slot, mut fx) = failed_before_a_stop("CRON_MISSED=once\n");
        s.stopping(
            false,
            jiff::Timestamp::from_second(1_795_775_410).unwrap(),
            &mut fx,
        );
        let once = "CRON_MISSED=once\n";
        let (mut again, clock) = restarted(&mut fx, "2026-11-27T10:35:00Z", once);
        let line = "attempt 2/4 was due at 10:31:02 while the daemon was down: starts now";
        assert_eq!(fx.logged(line).len(), 1, "{:?}", fx.lines);
        let [Launched::Started(_)] = start_due(&mut again, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        assert_eq!(attempts(&fx), [a(2, 4)]);
        assert_eq!(fx.facts[0].slot, slot);
        // Past the entry's next run (11:30), even once does not start it.
        let (mut s, _, mut fx) = failed_before_a_stop("CRON_MISSED=once\n");
        s.stopping(
            false,
            jiff::Timestamp::from_second(1_795_775_410).unwrap(),
            &mut fx,
        );
        let (mut again, clock) = restarted(&mut fx, "2026-11-27T11:30:30Z", once);
        assert!(start_due(&mut again, &clock, &mut fx).is_empty());
        assert_eq!(
            fx.logged("not started (the entry's next run came first)")
                .len(),
            1
        );
    }

    #[test]
    fn a_kept_retry_of_an_entry_gone_or_changed_is_dropped_and_counted_once() {
        let (mut s, _, mut fx) = failed_before_a_stop("");
        s.stopping(
            false,
            jiff::Timestamp::from_second(1_795_775_410).unwrap(),
            &mut fx,
        );
        let dir = std::path::PathBuf::from("/var/lib/crond");
        let mut two = kept(&fx);
        two.push(Kept {
            id: LocalId(7),
            ..two[0]
        });
        fx.retries.insert(dir.clone(), Ok(two));
        // The command changed: another id; and an id no entry has.
        let clock = FakeClock::at("2026-11-27T10:30:40Z");
        let text = "CRON_RETRY=3\nCRON_RETRY_DELAY=60\n30 * * * * flaky --now\n";
        let mut again = scheduler(&clock, text, &mut fx);
        again.restore_retries(clock.now(), &mut fx);
        let line = "RETRY DROPPED (2 retries kept in /var/lib/crond/retries: their entries are \
                    gone or changed)";
        assert_eq!(fx.logged(line).len(), 1, "{:?}", fx.lines);
        assert_eq!(again.next_start_ms(), None);
        assert!(kept(&fx).is_empty());
        // CRON_RETRY gone from the same line: the same id, no retries left.
        let (mut s, _, mut fx) = failed_before_a_stop("");
        s.stopping(
            false,
            jiff::Timestamp::from_second(1_795_775_410).unwrap(),
            &mut fx,
        );
        let mut again = scheduler(&clock, "30 * * * * flaky\n", &mut fx);
        again.restore_retries(clock.now(), &mut fx);
        assert_eq!(fx.logged("1 retry kept in").len(), 1, "{:?}", fx.lines);
        // A file the daemon can't trust: logged, nothing starts, and it is written anew.
        fx.retries.insert(dir, Err("owned by uid 1000".into()));
        let mut again = scheduler(&clock, "30 * * * * flaky\n", &mut fx);
        again.restore_retries(clock.now(), &mut fx);
        let line = "/var/lib/crond/retries ignored: owned by uid 1000; retries waiting when the \
                    daemon stopped are not started";
        assert_eq!(fx.logged(line).len(), 1, "{:?}", fx.lines);
        assert!(kept(&fx).is_empty());
    }
}
