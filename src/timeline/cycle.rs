//! The minute cycle as one pure state machine: the [`Agenda`] (when each entry fires next), the
//! job each entry starts, and the [`Queue`] of jobs that are due. The daemon's loop and the
//! simulation tests drive this same machine: at each wake-up they pass the wall clock in
//! ([`Cycle::on_wake`]), take the jobs to start while the minute lasts ([`Cycle::next_to_start`])
//! and sleep until [`Cycle::next_wake`]. No clock reads, no syscalls: what a job is (`J`) is
//! the caller's business.
//!
//! Pure.

use std::collections::VecDeque;

use super::ids::IdMap;

use super::agenda::Run;
use super::queue::{Queue, Queued};
use super::{Agenda, EntryId, Movement, UtcMinute};
use crate::schedule::{Schedule, Zone};

/// With nothing due at all, the daemon still wakes this often, so that a step of the wall clock
/// that the kernel did not report is noticed.
pub const IDLE_WAKE_MINUTES: i64 = 60;

/// When to wake next, in the minute that follows `now`'s or later: the next minute anything is
/// due; the next minute at the latest when `every_minute` (a backlog to start, files to look
/// at); an hour ahead when nothing is due.
pub fn next_wake(now: UtcMinute, next_due: Option<UtcMinute>, every_minute: bool) -> UtcMinute {
    let next_minute = now.plus(1);
    match (next_due, every_minute) {
        (Some(due), true) => due.min(next_minute),
        (Some(due), false) => due,
        (None, true) => next_minute,
        (None, false) => now.plus(IDLE_WAKE_MINUTES),
    }
}

/// A job that is due: the entry it belongs to (`None`: an @reboot job, which has none) and the
/// job itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Due<J> {
    pub entry: Option<EntryId>,
    pub job: J,
    /// Asked for (`cronctl run`), not due by the entry's schedule: it fills no slot.
    pub manual: bool,
}

/// What one wake-up did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Woke {
    /// How the wall clock moved since the last minute handled.
    pub movement: Movement,
    /// Jobs of earlier minutes still waiting: they start first now.
    pub postponed: usize,
    /// Runs this wake-up added to the queue.
    pub queued: usize,
    /// Runs not added because a run of the same entry from an earlier wake-up was still in the
    /// queue (not started, or waiting for its RANDOM_DELAY): a backlog never holds an entry
    /// twice. (The runs of one wake-up, each minute a forward clock step skipped, all join.)
    pub merged: usize,
}

/// How far past the start of the minute it woke for the daemon may find the wall clock before it
/// takes the clock as stepped forward (a timer fires late under load by milliseconds, not this).
pub const LATE_WAKE_MS: i64 = 5_000;

/// Whether the wall clock is not where the daemon left it, at any wake-up (a signal, an event,
/// a job to start, the timer): earlier than the minute it handled last (stepped back), or more
/// than [`LATE_WAKE_MS`] past the minute its timer was armed for (stepped forward, or the
/// machine slept). Then the minute rules must run at once, whatever woke the loop: a kernel's
/// notice of a clock change is one way to learn it, not the only one.
pub fn clock_moved(now_ms: i64, handled: UtcMinute, armed: UtcMinute) -> bool {
    now_ms < handled.0 * 60_000 || now_ms > armed.0 * 60_000 + LATE_WAKE_MS
}

/// The agenda, the jobs and the queue.
#[derive(Debug)]
pub struct Cycle<J> {
    /// The entries, each with its job and its start delay in seconds (RANDOM_DELAY, scaled).
    agenda: Agenda<(J, u32)>,
    queue: Queue<Due<J>>,
    /// The last wake's runs not made queue items yet, in order, behind the queue's line: at a
    /// wake with nothing of before waiting (nearly every wake) the runs join the line as they
    /// come up, so the first of a minute's 10,000 jobs starts without 10,000 items (and the
    /// memory they touch for the first time) built first. While any remain, the line has a
    /// ready item ([`Cycle::feed`]); whatever changes an entry or asks what is queued makes
    /// them all items first ([`Cycle::flush`]).
    fresh: VecDeque<Run>,
    /// How many runs of each entry's schedule are queue items (a run asked for, put back after
    /// a failed fork, is not counted: it fills no slot, so no run of the schedule merges into
    /// it).
    queued: IdMap<EntryId, usize>,
    /// The `@every` entries (few: their places in the agenda never fire by the minute).
    every: IdMap<EntryId, Every>,
    /// Runs given up, not yet taken by the caller ([`Cycle::take_given_up`]): each waited for
    /// a process until its entry's next run came.
    given_up: Vec<Queued<Due<J>>>,
    /// The instant `@every` intervals count from (the daemon's start), epoch ms.
    every_base_ms: i64,
}

/// An `@every` entry's interval and next run, epoch milliseconds.
#[derive(Debug, Clone, Copy)]
struct Every {
    period_ms: i64,
    next_ms: i64,
}

/// The first instant after `now_ms` that is `base_ms` plus a multiple of `period_ms`: the runs
/// of an interval never drift, however late each was noticed.
fn aligned_after(base_ms: i64, period_ms: i64, now_ms: i64) -> i64 {
    base_ms + ((now_ms - base_ms).div_euclid(period_ms) + 1) * period_ms
}

/// The first millisecond of the minute after the one holding `ms`: a cycle starts jobs until
/// then.
fn end_of_minute_ms(ms: i64) -> i64 {
    (ms.div_euclid(60_000) + 1) * 60_000
}

impl<J: Clone> Cycle<J> {
    /// An empty cycle whose minutes up to `handled` count as handled.
    pub fn new(handled: UtcMinute, local: Zone) -> Cycle<J> {
        Cycle {
            agenda: Agenda::new(handled, local),
            queue: Queue::default(),
            fresh: VecDeque::new(),
            queued: IdMap::default(),
            every: IdMap::default(),
            given_up: Vec::new(),
            every_base_ms: handled.0 * 60_000,
        }
    }

    /// Where `@every` intervals count from: the daemon's start (epoch ms).
    pub fn set_every_base(&mut self, base_ms: i64) {
        self.every_base_ms = base_ms;
    }

    /// Adds an `@every` entry: it runs at the base plus each multiple of `seconds`, the first
    /// after `now_ms`.
    pub fn add_every(&mut self, seconds: u32, job: J, now_ms: i64) -> EntryId {
        let id = self.agenda.insert(Schedule::never(), None, (job, 0));
        let period_ms = i64::from(seconds.max(1)) * 1000;
        let next_ms = aligned_after(self.every_base_ms, period_ms, now_ms);
        self.every.insert(id, Every { period_ms, next_ms });
        id
    }

    /// An `@every` entry's interval in seconds; `None` for the others.
    pub fn every_seconds(&self, id: EntryId) -> Option<u32> {
        self.every
            .get(&id)
            .map(|e| u32::try_from(e.period_ms / 1000).unwrap_or(u32::MAX))
    }

    /// When the next `@every` run is due (epoch ms); `None` without such entries, so the
    /// daemon wakes within a minute only while they exist.
    pub fn next_every_ms(&self) -> Option<i64> {
        self.every.values().map(|e| e.next_ms).min()
    }

    /// Queues the `@every` runs due at `now_ms` (one per entry, however many intervals passed:
    /// a clock step or a suspend runs it once) unless the entry's last run is still queued,
    /// and sets each next run on the grid; a clock set back far re-aligns. Returns how many
    /// runs were queued.
    pub fn every_due(&mut self, now_ms: i64) -> usize {
        let base = self.every_base_ms;
        let mut due = Vec::new();
        for (&id, every) in &mut self.every {
            if every.next_ms <= now_ms {
                due.push(id);
                every.next_ms = aligned_after(base, every.period_ms, now_ms);
            } else if every.next_ms - now_ms > every.period_ms {
                // The clock went back: the next run is one interval away at most.
                every.next_ms = aligned_after(base, every.period_ms, now_ms);
            }
        }
        due.sort();
        if !due.is_empty() {
            self.flush();
            self.give_up_failed(due.iter().copied());
        }
        let minute = UtcMinute(now_ms.div_euclid(60_000));
        let mut queued = 0;
        for id in due {
            if self.queued.contains_key(&id) {
                continue;
            }
            let Some((_, _, (job, _))) = self.agenda.get(id) else {
                continue;
            };
            let due = Due {
                entry: Some(id),
                job: job.clone(),
                manual: false,
            };
            self.queue.push(due, minute, now_ms);
            self.queued.insert(id, 1);
            queued += 1;
        }
        queued
    }

    /// Adds an entry; it first fires after the minute handled last, and each run starts
    /// `delay_s` seconds into its minute or later (cronie's RANDOM_DELAY, already scaled).
    pub fn add(&mut self, schedule: Schedule, zone: Option<Zone>, job: J, delay_s: u32) -> EntryId {
        self.agenda.insert(schedule, zone, (job, delay_s))
    }

    /// Room for `additional` entries about to be added at once (see [`Agenda::reserve`]).
    pub fn reserve(&mut self, additional: usize) {
        self.agenda.reserve(additional);
    }

    /// An entry as it was added: its schedule, its own zone, its job and its delay.
    pub fn get(&self, id: EntryId) -> Option<(&Schedule, Option<&Zone>, &J, u32)> {
        let (schedule, zone, (job, delay)) = self.agenda.get(id)?;
        Some((schedule, zone, job, *delay))
    }

    /// An entry's job, to change what it points to (not when it runs).
    pub fn job_mut(&mut self, id: EntryId) -> Option<&mut J> {
        // A run already due keeps the job it was due with.
        self.flush();
        self.agenda.payload_mut(id).map(|(job, _)| job)
    }

    /// Removes an entry (its file was edited or removed). A run still waiting for its
    /// RANDOM_DELAY is cancelled; a run that is due and only waits its turn still starts: it
    /// was due. Returns how many runs were cancelled.
    pub fn remove(&mut self, id: EntryId) -> usize {
        self.flush();
        self.agenda.remove(id);
        self.every.remove(&id);
        let cancelled = self.queue.cancel_waiting(|due| due.entry == Some(id));
        for _ in 0..cancelled {
            self.dequeued(id);
        }
        cancelled
    }

    /// A new local zone: every entry without its own CRON_TZ gets new fire times.
    pub fn set_local_zone(&mut self, zone: Zone) {
        self.agenda.set_local_zone(zone);
    }

    /// The wall minute handled last.
    pub fn handled(&self) -> UtcMinute {
        self.agenda.handled()
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.agenda.len()
    }

    pub fn is_empty(&self) -> bool {
        self.agenda.is_empty()
    }

    /// Gives back spare room after entries were added or removed in bulk.
    pub fn shrink(&mut self) {
        self.agenda.shrink();
    }

    /// Queues a job that belongs to no entry (@reboot) as due in `minute`.
    pub fn queue_now(&mut self, job: J, minute: UtcMinute) {
        self.queue_run(None, job, minute, minute.0 * 60_000);
    }

    /// Queues a run of `entry` (`None`: @reboot) due in `minute` that may start at `start_ms`
    /// (its time, which may be past: it goes behind the runs ready now): a run that waited for
    /// its entry's last run to end (`CRON_OVERLAP=queue`), which could not start its job.
    pub fn queue_run(&mut self, entry: Option<EntryId>, job: J, minute: UtcMinute, start_ms: i64) {
        self.flush();
        if let Some(entry) = entry {
            *self.queued.entry(entry).or_insert(0) += 1;
        }
        let due = Due {
            entry,
            job,
            manual: false,
        };
        self.queue.push(due, minute, start_ms);
    }

    /// `CRON_MISSED=once`: if the entry had a fire time after minute `after` and before minute
    /// `before` (a span the daemon did not handle: it was not running, or the machine slept
    /// through it), one run joins the queue as due in minute `now`, after the entry's
    /// RANDOM_DELAY, unless one of its runs is queued already. Returns the first missed minute
    /// when a run was queued.
    pub fn catch_up(
        &mut self,
        id: EntryId,
        after: UtcMinute,
        before: UtcMinute,
        now: UtcMinute,
    ) -> Option<UtcMinute> {
        let missed = self.agenda.fire_after(id, after)?;
        self.flush();
        if missed >= before || self.queued.contains_key(&id) {
            return None;
        }
        let (_, _, (job, delay_s)) = self.agenda.get(id)?;
        let due = Due {
            entry: Some(id),
            job: job.clone(),
            manual: false,
        };
        let start_ms = now.0 * 60_000 + i64::from(*delay_s) * 1000;
        self.queue.push(due, now, start_ms);
        self.queued.insert(id, 1);
        Some(missed)
    }

    /// Every scheduled entry (`@every` ones not included), in no particular order.
    pub fn ids(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.agenda.ids()
    }

    /// Every `@every` entry, in no particular order.
    pub fn every_ids(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.every.keys().copied()
    }

    /// The entry's first fire time after minute `after`, without changing what is queued.
    pub fn fire_after(&self, id: EntryId, after: UtcMinute) -> Option<UtcMinute> {
        self.agenda.fire_after(id, after)
    }

    /// When an entry runs next (epoch ms): its first fire time after the last minute handled,
    /// or an `@every` entry's next run; `None` for an entry that is gone or never fires. A
    /// look, for a snapshot of the entries: nothing changes.
    pub fn next_run_ms(&self, id: EntryId) -> Option<i64> {
        if let Some(every) = self.every.get(&id) {
            return Some(every.next_ms);
        }
        let next = self.agenda.fire_after(id, self.handled())?;
        Some(next.start_second() * 1000)
    }

    /// The daemon's local zone.
    pub fn local_zone(&self) -> &Zone {
        self.agenda.local_zone()
    }

    /// A wake-up at wall minute `now` (the timer fired, the clock was set, the machine resumed):
    /// what is still waiting from before is postponed to this cycle, first in line; then every
    /// run the plan for `now` produces joins the queue, in time order, unless its entry is
    /// still in the queue.
    pub fn on_wake(&mut self, now: UtcMinute) -> Woke {
        // What the last minute did not start is all counted as postponed, so all of it items.
        self.flush();
        let (movement, runs) = self.agenda.advance(now);
        // An entry's run put back after a failed start gives its place to the entry's run due
        // now (given up, it is not postponed).
        self.give_up_failed(runs.iter().map(|run| run.entry));
        // A wake in a minute handled already (the clock set within it) ends no cycle: what
        // waits was counted as postponed when this minute began.
        let postponed = match movement {
            Movement::Repeat => 0,
            _ => self.queue.end_cycle(),
        };
        if self.queued.is_empty() {
            // Nothing of before waits, so no run merges: all join the line, as they come up.
            let queued = runs.len();
            self.fresh = runs.into();
            self.feed();
            return Woke {
                movement,
                postponed,
                queued,
                merged: 0,
            };
        }
        let (mut queued, mut merged) = (0, 0);
        let mut this_wake: Vec<EntryId> = Vec::new();
        for run in runs {
            let in_queue = self.queued.get(&run.entry).copied().unwrap_or(0);
            if in_queue > 0 && !this_wake.contains(&run.entry) {
                // A run from before this wake-up still waits: this one merges into it.
                merged += 1;
                continue;
            }
            if in_queue == 0 {
                this_wake.push(run.entry);
            }
            if self.enqueue(run) {
                queued += 1;
            }
        }
        Woke {
            movement,
            postponed,
            queued,
            merged,
        }
    }

    /// Makes `run` a queue item, behind the others (or waiting for its RANDOM_DELAY); false if
    /// its entry is gone.
    fn enqueue(&mut self, run: Run) -> bool {
        let Some((_, _, (job, delay_s))) = self.agenda.get(run.entry) else {
            return false;
        };
        let due = Due {
            entry: Some(run.entry),
            job: job.clone(),
            manual: false,
        };
        let start_ms = run.minute.0 * 60_000 + i64::from(*delay_s) * 1000;
        self.queue.push(due, run.minute, start_ms);
        *self.queued.entry(run.entry).or_insert(0) += 1;
        true
    }

    /// Makes fresh runs items until one is ready to start or none is left.
    fn feed(&mut self) {
        while !self.queue.has_ready() {
            let Some(run) = self.fresh.pop_front() else {
                return;
            };
            self.enqueue(run);
        }
    }

    /// Makes every fresh run an item.
    fn flush(&mut self) {
        while let Some(run) = self.fresh.pop_front() {
            self.enqueue(run);
        }
    }

    /// The next job to start at `now_ms`. A job not started by the next wake-up is counted
    /// there as postponed (it keeps its place at the head of the line).
    pub fn next_to_start(&mut self, now_ms: i64) -> Option<Queued<Due<J>>> {
        let promoted = self.queue.promote(now_ms);
        if !promoted.is_empty() {
            // They go behind every run of the last wake.
            self.flush();
        }
        for ready in promoted {
            self.queue.push_ready(ready);
        }
        let next = self.queue.next(now_ms, end_of_minute_ms(now_ms))?;
        if let Some(entry) = next.job.entry.filter(|_| !next.job.manual) {
            self.dequeued(entry);
        }
        self.feed();
        Some(next)
    }

    fn dequeued(&mut self, entry: EntryId) {
        if let Some(n) = self.queued.get_mut(&entry) {
            *n -= 1;
            if *n == 0 {
                self.queued.remove(&entry);
            }
        }
    }

    /// A job that could not be started after all (the fork failed at `now_ms`): back at the
    /// head of the line, which waits [`RETRY_MS`](super::queue::RETRY_MS) before the next
    /// attempt, with its failure counted. It is retried until it starts; a run of an entry's
    /// schedule, only until the entry's next run comes: then it is given up
    /// ([`Cycle::take_given_up`]) and that run takes its place.
    pub fn put_back(&mut self, queued: Queued<Due<J>>, now_ms: i64) {
        if let Some(entry) = queued.job.entry.filter(|_| !queued.job.manual) {
            *self.queued.entry(entry).or_insert(0) += 1;
        }
        self.queue.put_back(queued, now_ms);
    }

    /// The runs of `entries` (whose next runs are due now) put back after a failed start are
    /// given up: out of the queue, kept for [`Cycle::take_given_up`]. A run asked for is not:
    /// it fills no slot, and no next run takes its place.
    fn give_up_failed(&mut self, entries: impl Iterator<Item = EntryId>) {
        if !self.queue.has_failed() {
            return;
        }
        let mut entries: Vec<EntryId> = entries.filter(|e| self.queued.contains_key(e)).collect();
        entries.sort_unstable();
        let taken = self.queue.take_failed(|q| {
            !q.job.manual
                && q.job
                    .entry
                    .is_some_and(|e| entries.binary_search(&e).is_ok())
        });
        for run in taken {
            if let Some(entry) = run.job.entry {
                self.dequeued(entry);
            }
            self.given_up.push(run);
        }
    }

    /// The runs given up since the last call: each was put back after a failed start, and its
    /// entry's next run came before it could start.
    pub fn take_given_up(&mut self) -> Vec<Queued<Due<J>>> {
        std::mem::take(&mut self.given_up)
    }

    /// Jobs are ready to start (their time has come).
    pub fn has_backlog(&self) -> bool {
        self.queue.has_ready()
    }

    /// When the next queued job could start (epoch milliseconds); `None`: nothing is queued.
    /// The daemon sleeps until then at most.
    pub fn next_start_ms(&self) -> Option<i64> {
        self.queue.next_start_ms()
    }

    /// When to wake after `now`; `looks_every_minute`: the caller has something to look at
    /// every minute (files without inotify, a refused file, the zone file).
    pub fn next_wake(&mut self, now: UtcMinute, looks_every_minute: bool) -> UtcMinute {
        let every_minute = looks_every_minute || self.has_backlog();
        next_wake(now, self.agenda.next_due(), every_minute)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{When, parse_expression};
    use crate::timeline::queue::RETRY_MS;

    fn schedule(expr: &str) -> Schedule {
        let When::Periodic(s) = parse_expression(expr, 0).expect("expression") else {
            panic!("not periodic")
        };
        s
    }

    /// Minutes of 2026-11-21 (UTC), as `UtcMinute`.
    fn at(hour: i64, minute: i64) -> UtcMinute {
        let day = jiff::civil::date(2026, 11, 21)
            .to_zoned(jiff::tz::TimeZone::UTC)
            .unwrap()
            .timestamp()
            .as_second()
            / 60;
        UtcMinute(day + hour * 60 + minute)
    }

    #[test]
    fn an_entrys_next_run_is_told_without_changing_what_is_queued() {
        let mut cycle: Cycle<&str> = Cycle::new(at(10, 0), Zone::utc());
        let hourly = cycle.add(schedule("30 * * * *"), None, "hourly", 0);
        let base = at(10, 0).0 * 60_000;
        cycle.set_every_base(base);
        let every = cycle.add_every(90, "every", base);
        assert_eq!(cycle.next_run_ms(hourly), Some(at(10, 30).0 * 60_000));
        assert_eq!(cycle.next_run_ms(every), Some(base + 90_000));
        assert_eq!(cycle.next_run_ms(hourly), Some(at(10, 30).0 * 60_000));
        cycle.remove(hourly);
        assert_eq!(cycle.next_run_ms(hourly), None);
    }

    #[test]
    fn every_runs_on_a_grid_from_the_base_without_drift_and_once_after_a_jump() {
        let base = at(10, 0).0 * 60_000 + 7_000; // the daemon started at 10:00:07
        let mut cycle: Cycle<&str> = Cycle::new(at(10, 0), Zone::utc());
        cycle.set_every_base(base);
        let fast = cycle.add_every(5, "fast", base + 1_200);
        assert_eq!(cycle.every_seconds(fast), Some(5));
        assert_eq!(cycle.next_every_ms(), Some(base + 5_000));
        // Simulate 60 s, waking 1.3 s late each time: still one run per 5 s, on the grid.
        let mut starts = Vec::new();
        let mut now = base;
        while now < base + 60_000 {
            now = cycle.next_every_ms().unwrap() + 1_300;
            cycle.every_due(now);
            while let Some(run) = cycle.next_to_start(now) {
                starts.push(now);
                assert_eq!(run.job.entry, Some(fast));
            }
        }
        assert_eq!(starts.len(), 12, "{starts:?}");
        assert_eq!(cycle.next_every_ms(), Some(base + 65_000), "no drift");
        // A step forward of an hour: one run, then the grid again.
        let later = base + 3_600_000 + 2_500;
        assert_eq!(cycle.every_due(later), 1);
        assert_eq!(cycle.every_due(later), 0);
        assert_eq!(cycle.next_every_ms(), Some(base + 3_605_000));
        assert!(cycle.next_to_start(later).is_some());
        // A step back of an hour: the next run is within one interval, not an hour away.
        let back = base + 1_000;
        assert_eq!(cycle.every_due(back), 0);
        assert_eq!(cycle.next_every_ms(), Some(base + 5_000));
        // A run still queued is not queued twice.
        assert_eq!(cycle.every_due(base + 5_000), 1);
        assert_eq!(cycle.every_due(base + 10_000), 0);
        // Removed: no more wake-ups for it.
        cycle.remove(fast);
        assert_eq!(cycle.next_every_ms(), None);
    }

    #[test]
    fn an_every_entry_never_fires_by_the_minute() {
        let mut cycle: Cycle<&str> = Cycle::new(at(10, 0), Zone::utc());
        cycle.add_every(60, "every minute", at(10, 0).0 * 60_000);
        let woke = cycle.on_wake(at(10, 1));
        assert_eq!(woke.queued, 0);
        assert_eq!(cycle.next_wake(at(10, 1), false), at(11, 1), "an idle hour");
    }

    #[test]
    fn a_run_missed_while_the_daemon_was_down_is_made_up_once_and_only_once() {
        // The daemon handled 10:00, was down until 15:30: the hourly entry missed five runs,
        // the daily one at 23:00 none.
        let mut cycle: Cycle<&str> = Cycle::new(at(15, 29), Zone::utc());
        let hourly = cycle.add(schedule("0 * * * *"), None, "hourly", 90);
        let daily = cycle.add(schedule("0 23 * * *"), None, "daily", 0);
        let now = at(15, 30);
        assert_eq!(cycle.catch_up(hourly, at(10, 0), now, now), Some(at(11, 0)));
        assert_eq!(cycle.catch_up(daily, at(10, 0), now, now), None);
        assert_eq!(
            cycle.catch_up(hourly, at(10, 0), now, now),
            None,
            "one run, however many were missed"
        );
        // It starts after its RANDOM_DELAY, in the minute it is made up in.
        let start = at(15, 30).0 * 60_000;
        assert!(cycle.next_to_start(start + 89_000).is_none());
        let run = cycle.next_to_start(start + 90_000).expect("made up");
        assert_eq!((run.job.entry, run.job.job), (Some(hourly), "hourly"));
        // Only fire times before `before` count: the minute being handled runs its own.
        assert_eq!(cycle.catch_up(hourly, at(14, 0), at(15, 0), now), None);
        assert_eq!(
            cycle.catch_up(hourly, at(14, 0), at(15, 1), now),
            Some(at(15, 0))
        );
    }

    #[test]
    fn the_wake_up_is_the_next_due_minute_or_sooner_when_something_needs_every_minute() {
        let now = UtcMinute(1000);
        assert_eq!(
            next_wake(now, Some(UtcMinute(1030)), false),
            UtcMinute(1030)
        );
        assert_eq!(next_wake(now, Some(UtcMinute(1030)), true), UtcMinute(1001));
        assert_eq!(next_wake(now, Some(UtcMinute(1001)), true), UtcMinute(1001));
        assert_eq!(next_wake(now, None, true), UtcMinute(1001));
        assert_eq!(next_wake(now, None, false), UtcMinute(1060), "idle: hourly");
    }

    #[test]
    fn the_clock_moved_when_it_is_behind_the_handled_minute_or_well_past_the_armed_one() {
        let (handled, armed) = (UtcMinute(1000), UtcMinute(1001));
        let at = |m: i64, ms: i64| m * 60_000 + ms;
        // Anywhere from the handled minute to a little after the armed one: where it should be.
        assert!(!clock_moved(at(1000, 0), handled, armed));
        assert!(!clock_moved(at(1000, 59_999), handled, armed));
        assert!(!clock_moved(at(1001, LATE_WAKE_MS), handled, armed));
        // Back before the minute handled last, or forward past the armed one.
        assert!(clock_moved(at(999, 59_999), handled, armed));
        assert!(clock_moved(at(970, 0), handled, armed));
        assert!(clock_moved(at(1001, LATE_WAKE_MS + 1), handled, armed));
        assert!(clock_moved(at(1030, 0), handled, armed));
    }

    #[test]
    fn a_backlog_or_files_to_check_make_the_cycle_wake_every_minute() {
        let mut cycle: Cycle<&str> = Cycle::new(UtcMinute(1000), Zone::utc());
        cycle.add(schedule("0 0 * * *"), None, "daily", 0);
        let midnight = cycle.next_wake(UtcMinute(1000), false);
        assert!(midnight > UtcMinute(1001));
        assert_eq!(cycle.next_wake(UtcMinute(1000), true), UtcMinute(1001));
        cycle.queue_now("reboot", UtcMinute(1000));
        assert_eq!(cycle.next_wake(UtcMinute(1000), false), UtcMinute(1001));
        assert!(cycle.next_to_start(1000 * 60_000 + 5).is_some());
        assert_eq!(cycle.next_wake(UtcMinute(1000), false), midnight);
    }

    #[test]
    fn a_wake_queues_the_due_runs_and_postpones_what_the_last_minute_did_not_start() {
        let mut cycle: Cycle<&str> = Cycle::new(UtcMinute(1000), Zone::utc());
        let a = cycle.add(schedule("* * * * *"), None, "a", 0);
        let b = cycle.add(schedule("* * * * *"), None, "b", 0);
        let woke = cycle.on_wake(UtcMinute(1001));
        assert_eq!(
            (woke.movement, woke.postponed, woke.queued),
            (Movement::Normal, 0, 2)
        );
        let first = cycle.next_to_start(1001 * 60_000).expect("a job");
        assert_eq!((first.job.entry, first.job.job), (Some(a), "a"));
        // Minute 1002 began before b started: it waits, then starts before minute 1002's runs;
        // b's run of 1002 merges into it (the queue never holds an entry twice).
        let woke = cycle.on_wake(UtcMinute(1002));
        assert_eq!((woke.postponed, woke.queued, woke.merged), (1, 1, 1));
        let order: Vec<_> = std::iter::from_fn(|| cycle.next_to_start(1002 * 60_000 + 1))
            .map(|q| (q.job.entry, q.due, q.postponed))
            .collect();
        assert_eq!(
            order,
            [(Some(b), UtcMinute(1001), 1), (Some(a), UtcMinute(1002), 0)]
        );
    }

    #[test]
    fn a_second_wake_in_the_same_minute_postpones_nothing_again() {
        let mut cycle: Cycle<&str> = Cycle::new(UtcMinute(1000), Zone::utc());
        cycle.add(schedule("* * * * *"), None, "a", 0);
        cycle.add(schedule("* * * * *"), None, "b", 0);
        cycle.on_wake(UtcMinute(1001));
        let woke = cycle.on_wake(UtcMinute(1002));
        assert_eq!((woke.postponed, woke.merged), (2, 2));
        // The clock set within minute 1002 (the kernel's notice): the same two still wait,
        // counted once, and they keep their one postponement.
        let again = cycle.on_wake(UtcMinute(1002));
        assert_eq!(
            (again.movement, again.postponed, again.queued),
            (Movement::Repeat, 0, 0)
        );
        let postponed: Vec<_> = std::iter::from_fn(|| cycle.next_to_start(1002 * 60_000))
            .map(|q| q.postponed)
            .collect();
        assert_eq!(postponed, [1, 1]);
    }

    #[test]
    fn a_job_that_could_not_start_is_first_in_line_again() {
        let mut cycle: Cycle<&str> = Cycle::new(UtcMinute(0), Zone::utc());
        cycle.queue_now("x", UtcMinute(0));
        cycle.queue_now("y", UtcMinute(0));
        let x = cycle.next_to_start(10).expect("x");
        cycle.put_back(x, 10);
        assert_eq!(
            cycle.next_to_start(20),
            None,
            "the line waits a second after a failure"
        );
        assert_eq!(cycle.next_start_ms(), Some(10 + RETRY_MS));
        assert_eq!(cycle.next_to_start(1010).map(|q| q.job.job), Some("x"));
    }

    #[test]
    fn a_run_whose_start_failed_gives_its_place_to_its_entrys_next_run_and_is_given_up() {
        let mut cycle: Cycle<&str> = Cycle::new(UtcMinute(1000), Zone::utc());
        let a = cycle.add(schedule("* * * * *"), None, "a", 0);
        cycle.add(schedule("* * * * *"), None, "b", 0);
        cycle.on_wake(UtcMinute(1001));
        let minute = 1001 * 60_000;
        let first = cycle.next_to_start(minute).expect("a");
        cycle.put_back(first, minute);
        // Retried a second later, and failed again: counted from the first failure.
        let again = cycle.next_to_start(minute + 1_000).expect("a again");
        assert_eq!(again.job.job, "a");
        cycle.put_back(again, minute + 1_000);
        assert!(cycle.take_given_up().is_empty());
        // 1002: a's run of 1001 is given up, and a's run of 1002 takes its place; b's run of
        // 1001, never tried, is postponed and b's run of 1002 merges into it, as before.
        let woke = cycle.on_wake(UtcMinute(1002));
        assert_eq!((woke.postponed, woke.queued, woke.merged), (1, 1, 1));
        let given_up = cycle.take_given_up();
        let [gone] = &given_up[..] else {
            panic!("{given_up:?}")
        };
        let failed = super::super::queue::Failed {
            since_ms: minute,
            tries: 2,
        };
        assert_eq!(
            (gone.job.entry, gone.due, gone.failed),
            (Some(a), UtcMinute(1001), Some(failed))
        );
        assert!(cycle.take_given_up().is_empty(), "taken once");
        let order: Vec<_> = std::iter::from_fn(|| cycle.next_to_start(1002 * 60_000))
            .map(|q| (q.job.job, q.due.0, q.failed))
            .collect();
        assert_eq!(order, [("b", 1001, None), ("a", 1002, None)]);
        // A run asked for whose fork failed fills no slot: it is kept through its entry's next
        // run, which is queued beside it, and retried until it starts.
        let asked = Queued {
            job: Due {
                entry: Some(a),
                job: "a asked",
                manual: true,
            },
            due: UtcMinute(1002),
            postponed: 0,
            start_ms: 1002 * 60_000 + 5_000,
            failed: None,
        };
        cycle.put_back(asked, 1002 * 60_000 + 5_000);
        let woke = cycle.on_wake(UtcMinute(1003));
        assert_eq!((woke.queued, woke.merged), (2, 0));
        assert!(cycle.take_given_up().is_empty());
        let order: Vec<_> = std::iter::from_fn(|| cycle.next_to_start(1003 * 60_000))
            .map(|q| q.job.job)
            .collect();
        assert_eq!(order, ["a asked", "a", "b"]);
    }

    #[test]
    fn an_every_run_whose_start_failed_gives_its_place_to_the_next_interval() {
        let base = 1000 * 60_000;
        let mut cycle: Cycle<&str> = Cycle::new(UtcMinute(1000), Zone::utc());
        cycle.set_every_base(base);
        let fast = cycle.add_every(20, "fast", base);
        assert_eq!(cycle.every_due(base + 20_000), 1);
        let run = cycle.next_to_start(base + 20_000).expect("due");
        cycle.put_back(run, base + 20_000);
        // The next interval: the run still waiting for a process is given up for it.
        assert_eq!(cycle.every_due(base + 40_000), 1);
        let given_up = cycle.take_given_up();
        assert_eq!(given_up.len(), 1, "{given_up:?}");
        assert_eq!(given_up[0].start_ms, base + 20_000);
        let next = cycle
            .next_to_start(base + 40_000)
            .expect("the next interval's");
        assert_eq!((next.job.entry, next.start_ms), (Some(fast), base + 40_000));
        assert!(
            cycle.next_to_start(base + 40_000).is_none(),
            "one run, not two"
        );
    }

    #[test]
    fn a_removed_entry_stops_firing_but_its_queued_run_still_starts() {
        let mut cycle: Cycle<&str> = Cycle::new(UtcMinute(1000), Zone::utc());
        let gone = cycle.add(schedule("* * * * *"), None, "gone", 0);
        cycle.on_wake(UtcMinute(1001));
        cycle.remove(gone);
        assert_eq!(
            cycle.next_to_start(1001 * 60_000).map(|q| q.job.job),
            Some("gone")
        );
        assert_eq!(cycle.on_wake(UtcMinute(1002)).queued, 0);
        assert!(cycle.is_empty());
    }

    #[test]
    fn a_minutes_runs_join_the_line_as_they_come_up_and_keep_the_job_they_were_due_with() {
        let mut cycle: Cycle<&str> = Cycle::new(UtcMinute(1000), Zone::utc());
        // First in the table: its run is the first to become an item, and waits.
        let late = cycle.add(schedule("* * * * *"), None, "late", 1);
        let ids: Vec<EntryId> = ["a", "b", "c", "d"]
            .into_iter()
            .map(|job| cycle.add(schedule("* * * * *"), None, job, 0))
            .collect();
        let woke = cycle.on_wake(UtcMinute(1001));
        assert_eq!((woke.queued, woke.merged), (5, 0));
        let minute = 1001 * 60_000;
        assert_eq!(cycle.next_to_start(minute).map(|q| q.job.job), Some("a"));
        // The late run's second comes while b, c and d wait their turn: it goes behind them.
        let order: Vec<_> = std::iter::from_fn(|| cycle.next_to_start(minute + 1000))
            .map(|q| q.job.job)
            .collect();
        assert_eq!(order, ["b", "c", "d", "late"]);
        assert!(!cycle.has_backlog());
        // Next minute, while b, c and d wait their turn, c's entry is edited: its run starts
        // with the job it was due with. The minute after, d's entry is removed while it
        // waits: its run still starts.
        let starts = |cycle: &mut Cycle<&'static str>, minute: i64| -> Vec<&str> {
            std::iter::from_fn(|| cycle.next_to_start(minute * 60_000))
                .map(|q| q.job.job)
                .collect()
        };
        cycle.remove(late);
        assert_eq!(cycle.on_wake(UtcMinute(1002)).queued, 4);
        assert_eq!(
            cycle.next_to_start(1002 * 60_000).map(|q| q.job.job),
            Some("a")
        );
        *cycle.job_mut(ids[2]).expect("c") = "c edited";
        assert_eq!(starts(&mut cycle, 1002), ["b", "c", "d"]);
        assert_eq!(cycle.on_wake(UtcMinute(1003)).queued, 4);
        assert_eq!(
            cycle.next_to_start(1003 * 60_000).map(|q| q.job.job),
            Some("a")
        );
        cycle.remove(ids[3]);
        assert_eq!(starts(&mut cycle, 1003), ["b", "c edited", "d"]);
        assert_eq!(cycle.on_wake(UtcMinute(1004)).queued, 3);
        assert_eq!(starts(&mut cycle, 1004), ["a", "b", "c edited"]);
    }

    #[test]
    fn runs_a_minute_did_not_start_are_all_postponed_and_first_in_the_next() {
        let mut cycle: Cycle<&str> = Cycle::new(UtcMinute(1000), Zone::utc());
        for job in ["a", "b", "c"] {
            cycle.add(schedule("* * * * *"), None, job, 0);
        }
        cycle.on_wake(UtcMinute(1001));
        assert_eq!(
            cycle.next_to_start(1001 * 60_000).map(|q| q.job.job),
            Some("a")
        );
        assert!(cycle.has_backlog());
        assert_eq!(
            cycle.next_start_ms(),
            Some(i64::MIN),
            "a ready job may start at once"
        );
        let woke = cycle.on_wake(UtcMinute(1002));
        assert_eq!((woke.postponed, woke.queued, woke.merged), (2, 1, 2));
        let order: Vec<_> = std::iter::from_fn(|| cycle.next_to_start(1002 * 60_000))
            .map(|q| (q.job.job, q.due.0, q.postponed))
            .collect();
        assert_eq!(order, [("b", 1001, 1), ("c", 1001, 1), ("a", 1002, 0)]);
    }

    #[test]
    fn a_random_delay_is_a_start_time_in_the_queue_and_an_edit_cancels_it() {
        let mut cycle: Cycle<&str> = Cycle::new(UtcMinute(1000), Zone::utc());
        let late = cycle.add(schedule("* * * * *"), None, "late", 150);
        let woke = cycle.on_wake(UtcMinute(1001));
        assert_eq!(woke.queued, 1);
        let minute = 1001 * 60_000;
        assert_eq!(cycle.next_to_start(minute), None);
        assert!(!cycle.has_backlog(), "a waiting run is not a backlog");
        assert_eq!(cycle.next_start_ms(), Some(minute + 150_000));
        // The next two minutes' runs merge into the one still waiting.
        assert_eq!(cycle.on_wake(UtcMinute(1002)).merged, 1);
        assert_eq!(cycle.on_wake(UtcMinute(1003)).postponed, 0);
        let run = cycle
            .next_to_start(minute + 150_000)
            .expect("its time came");
        assert_eq!((run.job.job, run.due), ("late", UtcMinute(1001)));
        // Minute 1004's run waits; the entry is edited (removed) meanwhile: it never starts.
        cycle.on_wake(UtcMinute(1004));
        assert_eq!(cycle.remove(late), 1);
        assert_eq!(cycle.next_start_ms(), None);
        assert_eq!(cycle.next_to_start(1004 * 60_000 + 150_000), None);
    }
}
