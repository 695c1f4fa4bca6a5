//! The scheduler, one of the daemon's owners: the entries and their runs (the pure
//! [`Cycle`]), the running job children ([`Running`]), fork failures, the `CRON_MISSED=once`
//! state file and the job counters for `--metrics`. It carries out what the cycle decides with
//! the time the reactor gives it: a minute's runs queued, runs started — through ONE launch
//! path, [`Scheduler::start`]: fork, count, record the running child, fork-failure
//! bookkeeping — the timer armed, reaped children forgotten. It learns of files only through
//! the [`Change`]s the reactor hands it, and of the cluster only through [`Launched`] runs; the
//! @reboot marker and the state file it makes, reads and writes through its [`Effects`].

pub(super) mod missed;
pub(super) mod paused;
mod retry;
pub(super) mod retry_state;
mod running;
mod slots;

use std::collections::{BTreeSet, HashMap};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use jiff::Timestamp;

use super::clock;
use super::effects::{Effects, NotRun};
use super::handoff::{Change, ClusterEntry, Launched, NewEntry, Run};
use super::scheduler::running::{Admit, Running};
use crate::cluster::entry_id::{LocalId, entry_key};
use crate::cluster::wire::Loaded;
use crate::crontab::policy::{Duration, Missed, Overlap};
use crate::database::entries::JobSpec;
use crate::history::{Reason, Trigger};
use crate::job::report::Said;
use crate::log::Level;
use crate::log::messages;
use crate::metrics::{LastRun, Metrics, Outcome};
use crate::schedule::{Schedule, Zone};
use crate::sys::process::Exit;
use crate::timeline::{Cycle, Due, EntryId, Movement, UtcMinute, clock_moved};
use crate::types::Pid;

/// What woke the daemon for a minute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wake {
    /// The timer fired at the minute it was armed for.
    Timer,
    /// The kernel said the wall clock was set (the timer's cancel-on-set notice).
    ClockSet,
    /// SIGHUP, or a wake-up that found the clock away from where the timer was left.
    ClockMoved,
}

/// What a reaped child was to the scheduler.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reaped {
    /// Not a job child of ours (the cluster helper, or unknown).
    NotOurs,
    /// A job child ended.
    Ended,
    /// A job child ended, and the run that waited for it (`CRON_OVERLAP=queue`) could not be
    /// forked: it is queued again, and the timer must be armed again.
    Requeued,
    /// A job child could not make the job's processes (`job::NOT_STARTED`): nothing of the
    /// job ran, and its run is back in the queue, first in line (arm the timer again; a
    /// cluster run's claim stays this host's, to be started again, not ended).
    NotStarted,
}

pub(super) struct Scheduler {
    /// The entries, their jobs, and the jobs due.
    cycle: Cycle<JobSpec>,
    /// Running job children, by pid and by entry.
    running: Running<JobSpec>,
    fork_failures: ForkFailures,
    /// The minute the timer is armed for.
    armed: UtcMinute,
    /// What happened to jobs, for `--metrics`.
    metrics: Metrics,
    /// The scheduled entries with `CRON_MISSED=once`.
    once: BTreeSet<EntryId>,
    /// Each loaded entry's last runs that ended since its load, oldest first, at most
    /// [`MAX_RECENT`] (what `cronctl list` and `cronctl show` show): about 60 bytes a run,
    /// removed with the entry.
    last: HashMap<EntryId, Vec<LastRun>>,
    /// `--state-dir`, and the minute the state file was last written with.
    state_dir: PathBuf,
    written_handled: Option<UtcMinute>,
    /// SIGTERM or SIGINT came: no run starts any more.
    stopped: bool,
    /// Each running job child's run, whether it was its entry's first since the load, and how
    /// its record names it (its entry's id, which the metrics label its end with; its trigger
    /// and slot): a child that exits `job::NOT_STARTED` gives its run back (bounded by the
    /// running children). A run with `CRON_RETRY` carries its slot's retry plan.
    in_flight: HashMap<Pid, (Run, bool, slots::AsRecorded, Option<slots::Retrying>)>,
    /// The entries' ids and the catch-ups queued, for the runs' records.
    slots: slots::Slots,
    /// The due minute and start time of each run waiting for its entry's running one
    /// (`CRON_OVERLAP=queue`, one an entry at most): its slot and its `CRON_LATE` count from
    /// them.
    queued_at: HashMap<EntryId, (UtcMinute, i64)>,
    /// The cluster runs given up since the reactor last took them (a handful: taken each turn).
    gave_up: Vec<(EntryId, UtcMinute)>,
    /// The ids of the entries paused (`cronctl pause`): their scheduled runs are not started.
    paused: paused::Paused,
    /// How the retries queued are kept in their state file (`retry_state`).
    keeping: retry::Keeping,
}

impl Scheduler {
    /// An empty scheduler at `now`, in the local `zone`; `state_dir` holds the
    /// `CRON_MISSED=once` state file.
    pub(super) fn new(now: Timestamp, zone: Zone, state_dir: PathBuf) -> Scheduler {
        let minute = UtcMinute::containing(now.as_second());
        Scheduler {
            cycle: Cycle::new(minute, zone),
            running: Running::default(),
            fork_failures: ForkFailures::default(),
            armed: minute.plus(1),
            metrics: Metrics::default(),
            once: BTreeSet::new(),
            last: HashMap::new(),
            state_dir,
            written_handled: None,
            stopped: false,
            in_flight: HashMap::new(),
            queued_at: HashMap::new(),
            gave_up: Vec::new(),
            slots: slots::Slots::default(),
            paused: paused::Paused::default(),
            keeping: retry::Keeping::default(),
        }
    }

    /// `@every` intervals count from `base_ms` (the start).
    pub(super) fn set_every_base(&mut self, base_ms: i64) {
        self.cycle.set_every_base(base_ms);
    }

    /// The entries, read-only (a reload finds the unchanged ones among them).
    pub(super) fn entries(&self) -> &Cycle<JobSpec> {
        &self.cycle
    }

    /// How many entries there are.
    pub(super) fn len(&self) -> usize {
        self.cycle.len()
    }

    pub(super) fn local_zone(&self) -> &Zone {
        self.cycle.local_zone()
    }

    pub(super) fn set_local_zone(&mut self, zone: Zone) {
        self.cycle.set_local_zone(zone);
    }

    /// A reload of one file: its entries kept, added and removed. Returns the ids of the
    /// added ones, in the order of `change.add`.
    pub(super) fn apply(
        &mut self,
        change: Change,
        now_ms: i64,
        fx: &mut dyn Effects,
    ) -> Vec<EntryId> {
        // What the first run after a load logs once (a HOME that can't be entered), the first
        // run after this one logs again.
        self.running.loaded_again(change.reset.iter().copied());
        for (id, job) in change.rebind {
            if let Some(kept) = self.cycle.job_mut(id) {
                *kept = job;
            }
        }
        self.cycle.reserve(change.add.len());
        let added = change
            .add
            .into_iter()
            .map(|new| self.add(new, now_ms))
            .collect();
        // Removed after the adds, so the new entries take the places free before the reload.
        let cancelled: usize = change.remove.iter().map(|&id| self.remove(id)).sum();
        if cancelled > 0 {
            fx.info(messages::delay_cancelled_line(
                &change.who,
                cancelled,
                &change.tab,
            ));
        }
        added
    }

    fn add(&mut self, new: NewEntry, now_ms: i64) -> EntryId {
        match new {
            NewEntry::Every { seconds, job } => self.cycle.add_every(seconds, job, now_ms),
            NewEntry::Periodic {
                schedule,
                zone,
                job,
                delay,
            } => {
                let once = job.env().policy().missed == Missed::Once;
                let id = self.cycle.add(schedule, zone, job, delay);
                if once {
                    self.once.insert(id);
                }
                id
            }
        }
    }

    /// Removes an entry; returns how many of its runs waiting for RANDOM_DELAY went with it.
    fn remove(&mut self, id: EntryId) -> usize {
        self.metrics.forget(id);
        self.slots.forget(id);
        self.once.remove(&id);
        self.last.remove(&id);
        self.queued_at.remove(&id);
        self.cycle.remove(id)
    }

    /// What the JSON log says of a run of `entry`: its place, command and id.
    fn log_fields(&mut self, entry: Option<EntryId>, job: &JobSpec) -> crate::log::JobFields {
        self.slots.name_pending(&job.owner.tab, &self.cycle);
        let named = slots::named_in(&self.cycle, entry);
        crate::log::JobFields {
            id: Some(self.slots.id(entry, job, named)),
            ..job.log_fields(None)
        }
    }

    /// Records a run another owner did not start (the cluster link's), under its entry's id.
    pub(super) fn not_run(&mut self, run: NotRun, now_ms: i64, fx: &mut dyn Effects) {
        self.slots.name_pending(&run.job.owner.tab, &self.cycle);
        let named = slots::named_in(&self.cycle, run.entry);
        let facts = self
            .slots
            .facts((run.entry, &run.job, named), run.due, false);
        let outcome = self.slots.not_run(
            (run.entry, &run.job, named),
            (facts.trigger, facts.slot),
            (run.reason, run.words),
            now_ms,
        );
        self.record(run.entry, outcome, fx);
    }

    /// Records a slot the daemon did not start, and counts it; its entry's requests
    /// (`CRON_PING`, `CRON_WEBHOOK`) go out as its policy says.
    fn record(
        &mut self,
        entry: Option<EntryId>,
        outcome: crate::history::Outcome,
        fx: &mut dyn Effects,
    ) {
        self.record_as(entry, outcome, true, fx);
    }

    /// [`Scheduler::record`]; `notify` false: the slot's requests went out already (its last
    /// attempt's job child sent them).
    fn record_as(
        &mut self,
        entry: Option<EntryId>,
        outcome: crate::history::Outcome,
        notify: bool,
        fx: &mut dyn Effects,
    ) {
        if let crate::history::Result::NotRun { reason, words } = &outcome.result {
            let loaded = entry.filter(|&e| self.cycle.get(e).is_some());
            // Read against the runs before it.
            if let Some(e) = loaded.filter(|_| notify)
                && let Some((_, _, job, _)) = self.cycle.get(e)
            {
                fx.notify(job, &outcome, self.last_failed(e));
            }
            self.metrics
                .not_run(loaded.map(|e| (e, outcome.entry.as_str())), *reason);
            // Among the entry's last runs too: `cronctl list` and `show` say why it did not run.
            if let Some(entry) = entry.filter(|&e| self.cycle.get(e).is_some()) {
                let said = Said::NotStarted {
                    why: *reason,
                    reason: words.clone(),
                };
                let last = LastRun {
                    started_ms: outcome.at_ms,
                    duration_ms: 0,
                    outcome: Outcome::Failed,
                    said: Some(said),
                };
                self.remember(entry, last);
            }
        }
        fx.record(outcome);
    }

    /// Names the entries of one file, given in the file's order (after its load), with the
    /// ids `cronctl list` shows: what their runs are recorded under.
    pub(super) fn name_entries(&mut self, file: impl Iterator<Item = EntryId>) {
        let file: Vec<EntryId> = file.collect();
        let tab = file
            .first()
            .and_then(|&id| self.cycle.get(id))
            .map(|(_, _, job, _)| job.owner.tab.clone());
        let Some(tab) = tab else {
            return;
        };
        // A kept entry's id can change with its file (an identical line above it gone): the
        // entries with a series in the metrics take their id again now, the others when a run
        // of theirs needs it.
        let shown: Vec<EntryId> = (file.iter().copied())
            .filter(|&id| self.metrics.has_series(id))
            .collect();
        self.slots.loaded(tab.clone(), file);
        if shown.is_empty() {
            return;
        }
        self.slots.name_pending(&tab, &self.cycle);
        for entry in shown {
            if let Some(named) = slots::named_in(&self.cycle, Some(entry)) {
                let id = self.slots.id(Some(entry), named.2, Some(named));
                self.metrics.rename(entry, &id);
            }
        }
    }

    /// @reboot: once per boot, marked by a file under /run (Debian).
    pub(super) fn reboot(
        &mut self,
        jobs: Vec<JobSpec>,
        marker: &Path,
        now: Timestamp,
        fx: &mut dyn Effects,
    ) {
        match fx.create_marker(marker) {
            Ok(true) => {
                fx.info(messages::reboot_line());
                let minute = UtcMinute::containing(now.as_second());
                for job in jobs {
                    self.cycle.queue_now(job, minute);
                }
            }
            Ok(false) => fx.info(messages::no_reboot_line()),
            Err(e) => fx.error(messages::reboot_marker_line(marker, &e)),
        }
    }

    /// Whether the clock is not where the timer was left (whatever woke the loop).
    pub(super) fn clock_moved(&self, now: Timestamp) -> bool {
        clock_moved(now.as_millisecond(), self.cycle.handled(), self.armed)
    }

    /// Queues the `@every` runs whose time has come (a run of the same entry that could not be
    /// started yet gives its place to the new one, recorded as given up).
    pub(super) fn every_due(&mut self, now_ms: i64, fx: &mut dyn Effects) {
        self.cycle.every_due(now_ms);
        self.give_up(now_ms, fx);
    }

    /// When the loop must wake to start a queued run or an `@every` one.
    pub(super) fn next_start_ms(&self) -> Option<i64> {
        [self.cycle.next_start_ms(), self.cycle.next_every_ms()]
            .into_iter()
            .flatten()
            .min()
    }

    /// A minute boundary (or a clock step): the minute's runs queued, what a clock jump
    /// missed made up (`CRON_MISSED=once`), and the lines that say so.
    pub(super) fn on_minute(&mut self, now: Timestamp, wake: Wake, fx: &mut dyn Effects) {
        let now_minute = UtcMinute::containing(now.as_second());
        self.fork_failures.minute_passed(now_minute, fx);
        let before = self.cycle.handled();
        let woke = self.cycle.on_wake(now_minute);
        self.give_up(now.as_millisecond(), fx);
        if matches!(
            woke.movement,
            Movement::Late(_) | Movement::Forward(_) | Movement::Afresh(_)
        ) {
            // The clock jumped (a resume, a step): `CRON_MISSED=once` entries make up what the
            // minute rules did not run.
            self.make_up(before, now_minute, now_minute, fx);
        }
        if let Movement::Forward(_) | Movement::Afresh(_) = woke.movement {
            // Runs of the span jumped over did not run, and each entry that had some says so:
            // after a jump of up to 3 hours a fixed-time entry runs once for its runs of the
            // span (the others are recorded), after a longer one nothing of it runs. Woken
            // late by the timer, the machine slept; by the kernel's notice or a look at the
            // clock, the clock was set.
            let reason = match wake {
                Wake::Timer => Reason::Missed,
                _ => Reason::ClockStep,
            };
            let fixed_ran_once = matches!(woke.movement, Movement::Forward(_));
            let span = (before, now_minute, fixed_ran_once);
            self.record_skipped(span, reason, now.as_millisecond(), fx);
        }
        if woke.queued > 0 {
            self.write_handled_if_needed(now_minute, fx);
        }
        if woke.postponed > 0 {
            fx.info(messages::postponed_line(woke.postponed));
        }
        match (woke.movement, wake) {
            // The kernel's word is logged even for a step too small to matter: it is rare
            // (settimeofday, an NTP step, a resume), and says the path works.
            (Movement::Normal | Movement::Repeat, Wake::ClockSet) => {
                fx.info(messages::clock_set_in_place_line())
            }
            (Movement::Normal | Movement::Repeat, _) => {}
            (other, Wake::Timer) => fx.info(messages::clock_late_line(other)),
            (other, _) => fx.info(messages::clock_set_line(other)),
        }
    }

    /// The next run to start at `now_ms`, if one's time has come.
    /// A run of a paused entry is not started (nor claimed in its cluster): its slot is
    /// recorded `paused`, and the next run is looked at.
    pub(super) fn next_to_start(&mut self, now_ms: i64, fx: &mut dyn Effects) -> Option<Run> {
        loop {
            let run = self.cycle.next_to_start(now_ms)?;
            if !self.held_paused(&run, now_ms, fx) {
                return Some(run);
            }
        }
    }

    /// A run's identity in a cluster: `None` when it is always local (@reboot, `@every`, an
    /// entry without `CRON_CLUSTER`, or one gone).
    pub(super) fn cluster_entry(&self, run: &Run) -> ClusterEntry {
        let job = &run.job.job;
        let entry = run.job.entry?;
        if !job.env().policy().clustered || self.cycle.every_seconds(entry).is_some() {
            return None;
        }
        if self.is_retry(run) {
            // The host that holds the slot's claim runs its retries, without a second claim.
            return None;
        }
        let (schedule, zone, _, _) = self.cycle.get(entry)?;
        Some(entry_key(
            schedule,
            zone.map(|z| z.name()),
            job.user(),
            job.command(),
        ))
    }

    /// Entry `id` as the cluster database lists it (`cronctl entries`): `None` when it is
    /// always local, as for [`Scheduler::cluster_entry`], or gone.
    pub(super) fn loaded_entry(&self, id: EntryId) -> Option<Loaded> {
        let (schedule, zone, job, _) = self.cycle.get(id)?;
        if !job.env().policy().clustered || self.cycle.every_seconds(id).is_some() {
            return None;
        }
        let cluster = job.env().get(b"CRON_CLUSTER").unwrap_or_default();
        Some(Loaded {
            cluster: String::from_utf8_lossy(cluster).into_owned(),
            owner: job.user().to_vec(),
            entry: entry_key(schedule, zone.map(|z| z.name()), job.user(), job.command()),
            place: job.entry().into_bytes(),
            command: job.command().to_vec(),
            rerun: job.env().policy().rerun_unknown,
        })
    }

    /// Starts a run whose time has come, under its entry's `CRON_OVERLAP` and `CRON_LATE`:
    /// started, held (skipped, too late or left waiting, logged), or failed (back first in
    /// line, which waits a second).
    pub(super) fn launch(&mut self, run: Run, now_ms: i64, fx: &mut dyn Effects) -> Launched {
        self.launch_reporting(run, None, now_ms, fx)
    }

    /// [`Scheduler::launch`], the job child handed `report` (`cronctl run`'s pipe) when it is
    /// forked now; a run held or put back lets it go (its reader sees the end at once).
    fn launch_reporting(
        &mut self,
        run: Run,
        report: Option<OwnedFd>,
        now_ms: i64,
        fx: &mut dyn Effects,
    ) -> Launched {
        if self.held_paused(&run, now_ms, fx)
            || self.retry_past_its_slot(&run, now_ms, fx)
            || self.too_late(&run, now_ms, fx)
        {
            return Launched::Skipped;
        }
        if let Some(held) = self.admit(&run, now_ms, fx) {
            return held;
        }
        match self.start(&run, report, now_ms, fx) {
            Some(pid) => Launched::Started(pid),
            None => {
                let failed = Launched::Failed {
                    entry: run.job.entry,
                    due: run.due,
                };
                self.cycle.put_back(run, now_ms);
                failed
            }
        }
    }

    /// `None` when `run` may start now under `CRON_OVERLAP`; else it is skipped (counted,
    /// recorded) or kept until its entry is idle, and logged.
    fn admit(&mut self, run: &Run, now_ms: i64, fx: &mut dyn Effects) -> Option<Launched> {
        let (entry, job, manual) = (run.job.entry, &run.job.job, run.job.manual);
        let overlap = job.env().policy().overlap;
        if overlap == Overlap::Allow {
            return None;
        }
        let (line, held) = match self.running.admit(entry, overlap, job.clone()) {
            Admit::Start(_) => return None,
            Admit::Skip {
                since_ms,
                also_waiting,
            } => {
                self.metrics.skipped();
                let since = clock::time(self.cycle.local_zone(), since_ms);
                self.slots.name_pending(&job.owner.tab, &self.cycle);
                let named = slots::named_in(&self.cycle, entry);
                let facts = self.slots.facts((entry, job, named), run.due, manual);
                let words = match also_waiting {
                    true => format!("its run of {since} is still running, and another waits"),
                    false => format!("its run of {since} is still running (CRON_OVERLAP)"),
                };
                let mut outcome = self.slots.not_run(
                    (entry, job, named),
                    (facts.trigger, facts.slot),
                    (Reason::Overlap, words),
                    now_ms,
                );
                outcome.attempt = facts.retry.map(|plan| plan.attempt);
                self.record(entry, outcome, fx);
                let line = messages::skip_line(job.user(), job.command(), &since, also_waiting);
                (line, Launched::Skipped)
            }
            Admit::Wait { since_ms } => {
                if let Some(entry) = entry.filter(|_| !manual) {
                    self.queued_at.insert(entry, (run.due, run.start_ms));
                }
                let since = clock::time(self.cycle.local_zone(), since_ms);
                let line = messages::wait_line(job.user(), job.command(), &since);
                (line, Launched::Waiting)
            }
        };
        let fields = self.log_fields(entry, job);
        fx.info(line.with_job(fields));
        Some(held)
    }

    /// The one way a job child is started: forked, counted, recorded as running (its run
    /// kept until it is reaped: a child that could not make the job's processes gives it
    /// back); a failed fork is counted and logged once a minute (so that a fork failing for
    /// lack of processes does not turn the loop into a busy retry). `None`: the fork failed;
    /// the caller puts the run back. Forks work again (the recovery line) when a child that
    /// ran its job is reaped, since the child's own forks can fail too.
    fn start(
        &mut self,
        run: &Run,
        report: Option<OwnedFd>,
        now_ms: i64,
        fx: &mut dyn Effects,
    ) -> Option<Pid> {
        let (entry, manual) = (run.job.entry, run.job.manual);
        let first = self.running.first_since_load(entry);
        self.slots.name_pending(&run.job.job.owner.tab, &self.cycle);
        let named = slots::named_in(&self.cycle, entry);
        let queued = self.slots.retry_of(entry.filter(|_| !manual), run.due);
        let mut facts = self
            .slots
            .facts((entry, &run.job.job, named), run.due, manual);
        facts.previous_failed = entry.is_some_and(|e| self.last_failed(e));
        facts.started_ms = now_ms;
        let retrying = self.attempt_of(run, &facts, queued);
        if let Some(r) = retrying {
            // A retry's notification looks past the attempts before it, to the slot before.
            facts.previous_failed = r.previous_failed.unwrap_or(facts.previous_failed);
            facts.retry = Some(r.plan);
        }
        let retrying = retrying.map(|r| slots::Retrying {
            previous_failed: Some(facts.previous_failed),
            ..r
        });
        match fx.start(&run.job.job, first, report, &facts) {
            Ok(pid) => {
                self.metrics.started();
                self.running.started(pid, entry, now_ms);
                let named = slots::AsRecorded {
                    id: facts.id,
                    trigger: facts.trigger,
                    slot: facts.slot,
                };
                self.in_flight
                    .insert(pid, (run.clone(), first, named, retrying));
                Some(pid)
            }
            Err(e) => {
                self.running.not_started(entry, first);
                self.fork_failures.failed(fx, e);
                // The run goes back to the queue: a retry stays the attempt it was, a catch-up
                // or a second attempt what it was.
                let named = (facts.trigger, facts.slot);
                self.slots.put_back(entry, run.due, named, retrying);
                None
            }
        }
    }

    /// Arms the timer for the cycle's next wake-up (`every_minute`: something must be looked
    /// at every minute, as the sources say).
    pub(super) fn arm(&mut self, now: Timestamp, every_minute: bool, fx: &mut dyn Effects) {
        let now_minute = UtcMinute::containing(now.as_second());
        let target = self.cycle.next_wake(now_minute, every_minute);
        self.armed = target;
        if let Err(e) = fx.arm(target) {
            fx.error(messages::unarmed_line(&e));
        }
    }

    /// Runs are ready to start that this turn did not start.
    pub(super) fn has_backlog(&self) -> bool {
        self.cycle.has_backlog()
    }

    /// A child was reaped: if it was a job child, it is forgotten and its end counted, and a
    /// run that waited for it (`CRON_OVERLAP=queue`) starts.
    ///
    /// This is the one place a job child's end comes back to the scheduler: a status that
    /// asks for the run again goes here.
    pub(super) fn on_reaped(
        &mut self,
        pid: Pid,
        exit: Exit,
        said: Option<Said>,
        now: Timestamp,
        fx: &mut dyn Effects,
    ) -> Reaped {
        let Some(ended) = self.running.ended(pid) else {
            return Reaped::NotOurs;
        };
        let launched = self.in_flight.remove(&pid);
        if exit == Exit::Code(crate::job::NOT_STARTED) {
            if let Some((run, first, named, retrying)) = launched {
                let was = (named.trigger, named.slot);
                self.slots.put_back(run.job.entry, run.due, was, retrying);
                self.not_started(run, first, now.as_millisecond(), fx);
                // A run that waited for this one (CRON_OVERLAP=queue) goes on waiting: the
                // one put back starts first and it follows, with its own minute and time.
                if let Some(waiting) = ended.waiting.filter(|_| !self.stopped) {
                    let run = self.waiting_run(ended.entry, waiting, now);
                    let Due { entry, job, .. } = run.job;
                    self.cycle.queue_run(entry, job, run.due, run.start_ms);
                }
                return Reaped::NotStarted;
            }
        } else if launched.is_some() {
            self.fork_failures.succeeded(fx);
        }
        let outcome = match exit {
            Exit::Code(0) => Outcome::Succeeded,
            Exit::Code(2) => Outcome::TimedOut,
            _ => Outcome::Failed,
        };
        let now_ms = now.as_millisecond();
        let duration_ms = now_ms - ended.started_ms;
        // The metrics label the entry with the id its run was recorded under; an entry removed
        // while its job ran has no series (its key never names another entry).
        let named = (ended.entry.filter(|&e| self.cycle.get(e).is_some()))
            .zip(launched.as_ref().map(|(_, _, named, _)| named.id.as_str()));
        self.metrics
            .ended(named, outcome, duration_ms, now.as_second());
        match &said {
            Some(Said::NotStarted { why, .. }) => self.metrics.not_run(named, *why),
            Some(Said::Ended { end, .. }) => self.metrics.set_status(named, end.status()),
            Some(Said::Started { .. }) | None => {}
        }
        let attempt_ended = retry::Ended::of(exit, ended.started_ms, said.as_ref());
        // Only for an entry still loaded: a removed one's record would stay for good.
        if let Some(entry) = ended.entry.filter(|&e| self.cycle.get(e).is_some()) {
            let last = LastRun {
                started_ms: ended.started_ms,
                duration_ms,
                outcome,
                said,
            };
            self.remember(entry, last);
        }
        if let Some((run, _, _, Some(retrying))) = &launched {
            self.retry_after(run, *retrying, attempt_ended, now_ms, fx);
        }
        match ended.waiting.filter(|_| !self.stopped) {
            Some(waiting) => self.start_waiting(ended.entry, waiting, now, fx),
            None => Reaped::Ended,
        }
    }

    /// The run of `entry` that waited for the one just ended (`CRON_OVERLAP=queue`): started
    /// now, unless later than its `CRON_LATE` after its time; one that can't be forked goes
    /// back in the queue, first in line, as any run whose fork failed.
    fn start_waiting(
        &mut self,
        entry: Option<EntryId>,
        waiting: JobSpec,
        now: Timestamp,
        fx: &mut dyn Effects,
    ) -> Reaped {
        let now_ms = now.as_millisecond();
        let run = self.waiting_run(entry, waiting, now);
        if self.held_paused(&run, now_ms, fx)
            || self.too_late(&run, now_ms, fx)
            || self.start(&run, None, now_ms, fx).is_some()
        {
            return Reaped::Ended;
        }
        self.cycle.put_back(run, now_ms);
        Reaped::Requeued
    }

    /// The run of `entry` that waited for its running one (`CRON_OVERLAP=queue`), with the
    /// minute it was due and the time it was to start (its slot, and what its `CRON_LATE`
    /// counts from), or this minute and now when those are not known.
    fn waiting_run(&mut self, entry: Option<EntryId>, waiting: JobSpec, now: Timestamp) -> Run {
        let (minute, now_ms) = (UtcMinute::containing(now.as_second()), now.as_millisecond());
        let (due, start_ms) = entry
            .and_then(|e| self.queued_at.remove(&e))
            .unwrap_or((minute, now_ms));
        Run {
            job: Due {
                entry,
                job: waiting,
                manual: false,
            },
            due,
            postponed: 0,
            start_ms,
            failed: None,
        }
    }

    /// Whether `run`, a scheduled one, would start later after its time (its minute, and its
    /// `RANDOM_DELAY`; for a catch-up, the minute of the first run it makes up) than its
    /// entry's `CRON_LATE`: then it is not started, but logged and recorded as late.
    fn too_late(&mut self, run: &Run, now_ms: i64, fx: &mut dyn Effects) -> bool {
        let (entry, job) = (run.job.entry, &run.job.job);
        let scheduled = entry.is_some() && !run.job.manual;
        let Some(limit_s) = job.env().policy().late_s.filter(|_| scheduled) else {
            return false;
        };
        let time_ms = match entry.and_then(|e| self.slots.catch_up_of(e)) {
            Some(missed) => run.start_ms - run.due.0 * 60_000 + missed.0 * 60_000,
            None => run.start_ms,
        };
        let late_ms = now_ms - time_ms;
        if late_ms <= i64::from(limit_s) * 1000 {
            return false;
        }
        let (late, limit) = (
            Duration((late_ms / 1000).clamp(0, i64::from(u32::MAX)) as u32),
            Duration(limit_s),
        );
        let words = format!("would have started {late} after its time (CRON_LATE={limit})");
        self.record_slot((entry, job), run.due, (Reason::Late, words), now_ms, fx);
        let due = clock::time(self.cycle.local_zone(), time_ms);
        let line = messages::late_line(job.user(), job.command(), &due, &late.to_string());
        let fields = self.log_fields(entry, job);
        fx.info(line.with_job(fields));
        true
    }

    /// The runs the cycle gave up: each could not be started (no process could be made for it,
    /// by the daemon or by its job child) until its entry's next run came, which took its
    /// place in the queue. Each is logged and recorded as `fork-failed`, with the last
    /// failure's error; a cluster run's is kept for the cluster link ([`Scheduler::take_gave_up`]).
    fn give_up(&mut self, now_ms: i64, fx: &mut dyn Effects) {
        let given_up = self.cycle.take_given_up();
        if given_up.is_empty() {
            return;
        }
        let error = self.fork_failures.last_error();
        for run in given_up {
            let (entry, job) = (run.job.entry, &run.job.job);
            let (since_ms, tries) = run.failed.map_or((now_ms, 0), |f| (f.since_ms, f.tries));
            let zone = self.cycle.local_zone();
            let (since, until) = (clock::time(zone, since_ms), clock::time(zone, now_ms));
            let due = clock::time(zone, run.start_ms);
            let words = format!(
                "no process could be made for it from {since} to {until} ({}): {error}",
                crate::words::count(tries, "try", "tries")
            );
            self.record_slot(
                (entry, job),
                run.due,
                (Reason::ForkFailed, words),
                now_ms,
                fx,
            );
            let line = messages::fork_given_up_line(job.user(), job.command(), &due, tries, &until);
            let fields = self.log_fields(entry, job);
            fx.error(line.with_job(fields));
            if let Some(entry) = entry.filter(|_| job.env().policy().clustered) {
                self.gave_up.push((entry, run.due));
            }
        }
    }

    /// The cluster runs given up since the last call ([`Scheduler::give_up`]), by entry and
    /// minute: a claim granted to this host that the cluster link holds until its run starts.
    pub(super) fn take_gave_up(&mut self) -> Vec<(EntryId, UtcMinute)> {
        std::mem::take(&mut self.gave_up)
    }

    /// Records that a scheduled run of `entry`, due in minute `due`, did not start: `reason`, in
    /// `words`.
    fn record_slot(
        &mut self,
        (entry, job): (Option<EntryId>, &JobSpec),
        due: UtcMinute,
        (reason, words): (Reason, String),
        now_ms: i64,
        fx: &mut dyn Effects,
    ) {
        self.slots.name_pending(&job.owner.tab, &self.cycle);
        let named = slots::named_in(&self.cycle, entry);
        let facts = self.slots.facts((entry, job, named), due, false);
        let outcome = self.slots.not_run(
            (entry, job, named),
            (facts.trigger, facts.slot),
            (reason, words),
            now_ms,
        );
        self.record(entry, outcome, fx);
    }

    /// Whether the entry's last run that said something of the job failed (`CRON_NOTIFY=change`):
    /// a pause or another host's run says nothing; none known is a success.
    fn last_failed(&self, entry: EntryId) -> bool {
        use crate::history::notify::Verdict;
        let verdict = |l: &LastRun| match &l.said {
            Some(Said::NotStarted { why, .. }) => Verdict::of_reason(*why),
            _ if l.outcome == Outcome::Succeeded => Verdict::Succeeded,
            _ => Verdict::Failed,
        };
        let runs = self.last.get(&entry).map_or(&[][..], Vec::as_slice);
        runs.iter()
            .rev()
            .map(verdict)
            .find(|&v| v != Verdict::Silent)
            == Some(Verdict::Failed)
    }

    /// One more of the entry's last runs, the oldest let go past [`MAX_RECENT`].
    fn remember(&mut self, entry: EntryId, last: LastRun) {
        let runs = self.last.entry(entry).or_default();
        if runs.len() >= MAX_RECENT {
            runs.remove(0);
        }
        runs.push(last);
    }

    /// A job child could not make its job's processes: a fork failure as the daemon's own
    /// (counted, logged at once then once a minute), not a run (uncounted), and its run back
    /// first in line, retried after a second.
    fn not_started(&mut self, run: Run, first: bool, now_ms: i64, fx: &mut dyn Effects) {
        self.metrics.not_started();
        self.running.not_started(run.job.entry, first);
        let e = std::io::Error::other("no process for the job in its job child");
        self.fork_failures.failed(fx, e);
        self.cycle.put_back(run, now_ms);
    }

    /// The running job children's pids: what a stop that signals and waits for them needs
    /// (their process groups; `on_reaped` tells when each is gone).
    pub(super) fn running_pids(&self) -> Vec<Pid> {
        self.running.pids()
    }

    /// How many job children are running.
    pub(super) fn running_len(&self) -> usize {
        self.running.len()
    }

    /// Entry `id` as it stands, read-only (`None`: gone): for a snapshot of the entries, in
    /// the order the sources give them ([`Sources::entries`]). Cheap: what costs (the next
    /// run, the pids) is worked out only when asked.
    ///
    /// [`Sources::entries`]: super::sources::Sources::entries
    pub(super) fn entry_state(&self, id: EntryId) -> Option<EntryState<'_>> {
        let (schedule, cron_tz, job, _) = self.cycle.get(id)?;
        Some(EntryState {
            id,
            job,
            schedule,
            every_s: self.cycle.every_seconds(id),
            cron_tz,
            last: self.last.get(&id).map_or(&[], Vec::as_slice),
            running: self.running.count(id),
            scheduler: self,
        })
    }

    /// The scheduled run of cluster entry `id` due in the minute starting at unix second
    /// `minute_s`, which the cluster gave this host without its asking (another host claimed it
    /// and stopped or died before starting it): to be launched as a granted run, its time its
    /// minute (so `CRON_LATE` applies); `rerun`: its first start's outcome was lost with its
    /// host (`CRON_CLUSTER_RERUN=unknown`), and its record says so. `None` when the entry is
    /// gone.
    pub(super) fn taken_over_run(
        &mut self,
        id: EntryId,
        minute_s: i64,
        rerun: bool,
    ) -> Option<Run> {
        let (_, _, job, _) = self.cycle.get(id)?;
        let due = UtcMinute::containing(minute_s);
        if rerun {
            self.slots.rerun(id, due);
        }
        Some(Run {
            job: Due {
                entry: Some(id),
                job: job.clone(),
                manual: false,
            },
            due,
            postponed: 0,
            start_ms: minute_s * 1000,
            failed: None,
        })
    }

    /// Starts a run of entry `id` now (the control socket's `run`, `asked_by` naming who
    /// asked, as the RUN line says first), through the one launch path: `CRON_OVERLAP`
    /// applies, and a failed fork puts it in the queue. Always local, even with
    /// `CRON_CLUSTER`: who asked chose this host. `report`: the pipe on which its job child, if
    /// forked now, says what became of the job. `None`: there is no such entry.
    pub(super) fn run_now(
        &mut self,
        id: EntryId,
        asked_by: &str,
        report: Option<OwnedFd>,
        now: Timestamp,
        fx: &mut dyn Effects,
    ) -> Option<Launched> {
        let (_, _, job, _) = self.cycle.get(id)?;
        let job = job.clone();
        let line = messages::run_now_line(job.user(), job.command(), &job.entry(), asked_by);
        fx.info(line.with_job(self.log_fields(Some(id), &job)));
        let now_ms = now.as_millisecond();
        let run = Run {
            job: Due {
                entry: Some(id),
                job,
                manual: true,
            },
            due: UtcMinute::containing(now.as_second()),
            postponed: 0,
            start_ms: now_ms,
            failed: None,
        };
        Some(self.launch_reporting(run, report, now_ms, fx))
    }

    /// The exposition for `--metrics` (`entries`: with the per-entry series).
    pub(super) fn render_metrics(&self, entries: bool) -> String {
        self.metrics.render(self.running.len(), entries, |id| {
            self.cycle.get(id).map(|(_, _, job, _)| job.entry())
        })
    }

    /// Gives memory a reload freed back.
    pub(super) fn shrink(&mut self) {
        self.cycle.shrink();
    }

    /// SIGTERM or SIGINT: the lines that say what is left, and the state file. From here on
    /// no run starts (a run waiting for its entry's last one stays unstarted, as logged);
    /// `stops_jobs`: the running jobs are about to be stopped (`daemon::stop`) rather than
    /// left to finish on their own.
    pub(super) fn stopping(&mut self, stops_jobs: bool, now: Timestamp, fx: &mut dyn Effects) {
        self.stopped = true;
        fx.info(messages::shutting_down_line());
        if self.running.len() > 0 && !stops_jobs {
            fx.info(messages::still_running_line(self.running.len()));
        }
        if self.running.waiting() > 0 {
            fx.info(messages::waiting_dropped_line(self.running.waiting()));
            let now_ms = now.as_millisecond();
            let minute = UtcMinute::containing(now.as_second());
            let waiting: Vec<(EntryId, JobSpec)> = self
                .running
                .waiting_runs()
                .map(|(entry, job)| (entry, job.clone()))
                .collect();
            for (entry, job) in waiting {
                let words = "the daemon was stopping; the run waited for its previous one".into();
                self.slots.name_pending(&job.owner.tab, &self.cycle);
                let named = slots::named_in(&self.cycle, Some(entry));
                let outcome = self.slots.not_run(
                    (Some(entry), &job, named),
                    (Trigger::Schedule, Some(minute.start_second())),
                    (Reason::Stopping, words),
                    now_ms,
                );
                self.record(Some(entry), outcome, fx);
            }
        }
        let handled = self.cycle.handled();
        self.write_handled_if_needed(handled, fx);
        if self.slots.retries_changed() {
            self.write_retries(now.as_millisecond(), fx);
        }
    }
}

/// The most skipped runs of one entry counted in one record of a span not run.
const MAX_COUNTED_SKIPS: u32 = 1000;

/// What the record of a span not run says: how many runs from when, why, and what
/// `CRON_MISSED` did.
fn skipped_words(reason: Reason, count: u32, made_up: bool, first: &str) -> String {
    let runs = match count {
        1 => format!("its run of {first}"),
        MAX_COUNTED_SKIPS => format!("{count} or more runs from {first}"),
        n => format!("{n} runs from {first}"),
    };
    let why = match reason {
        Reason::ClockStep => "the clock was set past them",
        _ => "the daemon was down or the machine asleep",
    };
    let after = match made_up {
        true => "CRON_MISSED=once runs the entry once now",
        false => "not made up (CRON_MISSED=once would run it once)",
    };
    format!("{runs} did not run: {why}; {after}")
}

/// The most ended runs kept per entry.
pub(super) const MAX_RECENT: usize = 5;

/// One entry as the scheduler shows it, read-only ([`Scheduler::entry_state`]: what the
/// control socket lists): its job (file, line, user, schedule as written, command, policy),
/// its own `CRON_TZ`, its last run, how many of its jobs run now; its next run and those jobs'
/// pids when asked.
pub(super) struct EntryState<'a> {
    pub(super) id: EntryId,
    pub(super) job: &'a JobSpec,
    /// Its schedule as parsed, and its `@every` interval when it has one.
    pub(super) schedule: &'a Schedule,
    pub(super) every_s: Option<u32>,
    pub(super) cron_tz: Option<&'a Zone>,
    /// Its last runs that ended since its load, oldest first.
    pub(super) last: &'a [LastRun],
    /// Its job children running now.
    pub(super) running: u32,
    scheduler: &'a Scheduler,
}

impl EntryState<'_> {
    /// When it runs next (epoch ms; `None`: never again).
    pub(super) fn next_ms(&self) -> Option<i64> {
        self.scheduler.cycle.next_run_ms(self.id)
    }

    /// The pids of its job children running now.
    pub(super) fn pids(&self) -> Vec<Pid> {
        match self.running {
            0 => Vec::new(),
            _ => self.scheduler.running.pids_of(self.id),
        }
    }
}

/// `CRON_MISSED=once` (`daemon::missed`): what the scheduler remembers across restarts.
impl Scheduler {
    /// At start-up: the runs of `once` entries missed since the minute the state file holds,
    /// up to this minute (which the daemon does not run: it starts in it, as Vixie's does).
    pub(super) fn make_up_after_start(&mut self, now: Timestamp, fx: &mut dyn Effects) {
        if let Some(handled) = self.read_handled(fx) {
            let now_ms = now.as_millisecond();
            let now = UtcMinute::containing(now.as_second());
            self.make_up(handled, now.plus(1), now, fx);
            self.record_skipped((handled, now, false), Reason::Missed, now_ms, fx);
        }
        self.files_loaded(fx);
    }

    /// Queues, for minute `now`, one run of each `once` entry with a fire time after `after`
    /// and before `before`.
    fn make_up(
        &mut self,
        after: UtcMinute,
        before: UtcMinute,
        now: UtcMinute,
        fx: &mut dyn Effects,
    ) {
        let once: Vec<EntryId> = self.once.iter().copied().collect();
        for id in once {
            let Some(missed) = self.cycle.catch_up(id, after, before, now) else {
                continue;
            };
            self.metrics.missed();
            self.slots.catching_up(id, missed);
            if let Some(job) = self.cycle.get(id).map(|(_, _, job, _)| job.clone()) {
                let when = clock::date_time(self.cycle.local_zone(), missed);
                let line = messages::missed_line(job.user(), job.command(), &when)
                    .with_job(self.log_fields(Some(id), &job));
                fx.info(line);
            }
        }
        self.write_handled_if_needed(self.cycle.handled(), fx);
    }

    /// Records, for each entry with a fire time after `after` and before `before`, that its
    /// runs of that span did not run (`reason`: the daemon was down or the machine asleep, or
    /// the clock was stepped over them), with how many and what `CRON_MISSED` did;
    /// `fixed_ran_once`: a fixed-time entry ran once for its runs of the span.
    fn record_skipped(
        &mut self,
        (after, before, fixed_ran_once): (UtcMinute, UtcMinute, bool),
        reason: Reason,
        now_ms: i64,
        fx: &mut dyn Effects,
    ) {
        let ids: Vec<EntryId> = self.cycle.ids().collect();
        for id in ids {
            if self.cycle.every_seconds(id).is_some() {
                continue;
            }
            let Some(first) = self.cycle.fire_after(id, after).filter(|&m| m < before) else {
                continue;
            };
            let mut count = 1;
            let mut at = first;
            while count < MAX_COUNTED_SKIPS {
                match self.cycle.fire_after(id, at).filter(|&m| m < before) {
                    Some(next) => (count, at) = (count + 1, next),
                    None => break,
                }
            }
            let Some((schedule, _, job, _)) = self.cycle.get(id) else {
                continue;
            };
            if fixed_ran_once && schedule.class() == crate::schedule::Class::FixedTime {
                if count == 1 {
                    continue;
                }
                count -= 1;
            }
            let made_up = self.once.contains(&id);
            let words = skipped_words(
                reason,
                count,
                made_up,
                &clock::date_time(self.cycle.local_zone(), first),
            );
            let slot = (Trigger::Schedule, Some(first.start_second()));
            let tab = job.owner.tab.clone();
            self.slots.name_pending(&tab, &self.cycle);
            let named = slots::named_in(&self.cycle, Some(id));
            let outcome = self
                .slots
                .not_run((Some(id), job, named), slot, (reason, words), now_ms);
            self.record(Some(id), outcome, fx);
        }
    }

    /// Once files are loaded (start-up is over): an entry with `once` that appeared has a
    /// minute to count its missed runs from, before any of its runs came.
    pub(super) fn files_loaded(&mut self, fx: &mut dyn Effects) {
        if self.written_handled.is_none() {
            let handled = self.cycle.handled();
            self.write_handled_if_needed(handled, fx);
        }
    }

    fn write_handled_if_needed(&mut self, handled: UtcMinute, fx: &mut dyn Effects) {
        if self.written_handled == Some(handled) || self.once.is_empty() {
            return;
        }
        match fx.write_handled(&self.state_dir, handled) {
            Ok(()) => self.written_handled = Some(handled),
            Err(e) => fx.error(messages::state_unwritten_line(
                &self.state_dir.join(missed::FILE),
                &e,
            )),
        }
    }

    /// The minute the state file holds; `None` (logged, unless there is no file) when there is
    /// none the daemon can trust.
    fn read_handled(&self, fx: &mut dyn Effects) -> Option<UtcMinute> {
        match fx.read_handled(&self.state_dir) {
            Ok(minute) => minute,
            Err(why) => {
                let path = self.state_dir.join(missed::FILE);
                fx.log(Level::Warning, messages::state_ignored_line(&path, &why));
                None
            }
        }
    }
}

/// `cronctl pause` (`scheduler::paused`): the entries whose scheduled runs are not started.
impl Scheduler {
    /// At start-up: the paused entries the state file keeps; none (logged, unless there is no
    /// file) when there is none the daemon can trust.
    pub(super) fn load_paused(&mut self, fx: &mut dyn Effects) {
        match fx.read_paused(&self.state_dir) {
            Ok(ids) => self.paused = paused::Paused::new(ids.unwrap_or_default()),
            Err(why) => {
                let path = self.state_dir.join(paused::FILE);
                fx.log(Level::Warning, messages::paused_ignored_line(&path, &why));
            }
        }
    }

    /// Whether the entry of id `id` is paused.
    pub(super) fn is_paused(&self, id: LocalId) -> bool {
        self.paused.contains(id)
    }

    /// Pauses (`pause`) or resumes entry `entry` (the control socket's `pause` and `resume`,
    /// `asked_by` naming who asked), kept in the state file before it counts. `Ok(false)`: it
    /// was so already; `None`: there is no such entry.
    pub(super) fn pause(
        &mut self,
        entry: EntryId,
        pause: bool,
        asked_by: &str,
        fx: &mut dyn Effects,
    ) -> Option<Result<bool, paused::Refused>> {
        let job = self.cycle.get(entry)?.2.clone();
        let id = self.id_of(entry)?;
        if pause && self.paused.is_full() && !self.paused.contains(id) {
            let loaded = self.loaded_ids();
            let gone = self.paused.forget_gone(&loaded);
            if gone > 0 {
                fx.info(messages::paused_gone_line(gone));
            }
        }
        let dir = &self.state_dir;
        let changed = self.paused.set(id, pause, |ids| fx.write_paused(dir, ids));
        if changed == Ok(true) {
            let place = format!("{} {id}", job.entry());
            let line = messages::pause_line(job.user(), job.command(), &place, pause, asked_by);
            fx.info(line.with_job(self.log_fields(Some(entry), &job)));
        }
        Some(changed)
    }

    /// The ids of every loaded entry (`@every` ones too), as `cronctl list` shows them.
    fn loaded_ids(&mut self) -> std::collections::BTreeSet<LocalId> {
        let entries: Vec<EntryId> = self.cycle.ids().chain(self.cycle.every_ids()).collect();
        entries.into_iter().filter_map(|e| self.id_of(e)).collect()
    }

    /// Resumes the id `id` that no loaded entry has (root's `cronctl resume ID` of an entry
    /// removed while paused), kept in the state file before it counts: `Ok(false)` when it was
    /// not paused.
    pub(super) fn resume_gone(
        &mut self,
        id: LocalId,
        asked_by: &str,
        fx: &mut dyn Effects,
    ) -> Result<bool, paused::Refused> {
        let dir = &self.state_dir;
        let changed = self.paused.set(id, false, |ids| fx.write_paused(dir, ids));
        if changed == Ok(true) {
            fx.info(messages::resume_gone_line(&id.to_string(), asked_by));
        }
        changed
    }

    /// Whether `run` is a scheduled run of a paused entry: then it is not started, and its
    /// slot is recorded `paused`. A run asked for (`cronctl run`) is never held.
    fn held_paused(&mut self, run: &Run, now_ms: i64, fx: &mut dyn Effects) -> bool {
        let (Some(entry), false) = (run.job.entry, run.job.manual) else {
            return false;
        };
        if self.paused.is_empty() {
            return false;
        }
        let job = &run.job.job;
        self.slots.name_pending(&job.owner.tab, &self.cycle);
        let Some(named) = slots::named_in(&self.cycle, Some(entry)) else {
            return false;
        };
        let id = self.slots.local_id(entry, named);
        if !self.paused.contains(id) {
            return false;
        }
        let words = format!("paused on this host (cronctl resume {id})");
        self.record_slot(
            (Some(entry), job),
            run.due,
            (Reason::Paused, words),
            now_ms,
            fx,
        );
        true
    }
}

/// Fork failures, counted and logged once a minute rather than once per attempt: at most one
/// line of each kind a minute (the first failure of a series, the count of the others, forks
/// working again), so forks that fail and work in turn — a pids limit just at the edge, where
/// every other job gets through — can't write two lines a second.
#[derive(Debug, Default)]
struct ForkFailures {
    /// Failures since the last fork that worked: the first of a series is said at once.
    in_a_row: u64,
    /// Failures no line has counted yet, and the last error.
    unlogged: u64,
    last: Option<std::io::Error>,
    /// Failures since the last line that said forks work again (the count that line gives).
    since_recovered: u64,
    /// This minute's lines, one of each kind at most.
    failed_said: bool,
    works_said: bool,
    /// Forks work again, but this minute has said so already: said at the minute's end.
    works_owed: bool,
    /// The minute whose lines these are: a second wake in it (a clock set) starts no new one.
    minute: Option<UtcMinute>,
}

impl ForkFailures {
    fn failed(&mut self, fx: &mut dyn Effects, e: std::io::Error) {
        self.in_a_row += 1;
        self.since_recovered += 1;
        self.works_owed = false;
        if self.in_a_row == 1 && !self.failed_said {
            fx.error(messages::fork_failed_line(&e.to_string()));
            self.failed_said = true;
        } else {
            self.unlogged += 1;
        }
        self.last = Some(e);
    }

    /// The last failure's error, as the log says it.
    fn last_error(&self) -> String {
        self.last
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default()
    }

    fn succeeded(&mut self, fx: &mut dyn Effects) {
        if self.in_a_row == 0 {
            return;
        }
        self.in_a_row = 0;
        if self.works_said {
            self.works_owed = true;
        } else {
            self.say_works(fx);
        }
    }

    fn say_works(&mut self, fx: &mut dyn Effects) {
        fx.info(messages::fork_works_line(self.since_recovered));
        self.since_recovered = 0;
        self.works_said = true;
        self.works_owed = false;
    }

    /// The minute `now` began (or the clock was set within it): the minute before's lines.
    fn minute_passed(&mut self, now: UtcMinute, fx: &mut dyn Effects) {
        if self.minute.replace(now) == Some(now) {
            return;
        }
        if self.unlogged > 0 {
            let e = self.last_error();
            fx.error(messages::fork_still_failing_line(&e, self.unlogged));
            self.unlogged = 0;
        }
        self.failed_said = false;
        self.works_said = false;
        if self.works_owed {
            self.say_works(fx);
            self.works_said = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::entry_id::{Identity, LocalIds};
    use crate::daemon::clock::{Clock, FakeClock};
    use crate::daemon::effects::Recorded;
    use crate::daemon::handoff::change_of;

    /// The state directory of the tests' schedulers (the fake effects keep its file).
    const STATE: &str = "/var/lib/crond";

    /// A scheduler at `clock`'s time in UTC, with alice's crontab `text` applied.
    pub(super) fn scheduler(clock: &FakeClock, text: &str, fx: &mut Recorded) -> Scheduler {
        let mut s = Scheduler::new(clock.now(), Zone::utc(), STATE.into());
        let ids = s.apply(change_of(text), clock.now().as_millisecond(), fx);
        assert_eq!(ids.len(), s.len());
        s.name_entries(ids.into_iter());
        s
    }

    /// The scheduler's entries in their file's order, each with the id `cronctl list` gives it
    /// (as the control socket's snapshot counts them).
    fn listed_ids(s: &Scheduler) -> Vec<(EntryId, String)> {
        let mut by_line: Vec<(u32, EntryId)> = s
            .cycle
            .ids()
            .map(|id| (s.cycle.get(id).unwrap().2.line(), id))
            .collect();
        by_line.sort();
        let mut list = LocalIds::default();
        by_line
            .into_iter()
            .map(|(_, id)| {
                let (schedule, zone, job, _) = s.cycle.get(id).unwrap();
                let identity = Identity {
                    schedule,
                    zone: zone.map(Zone::name),
                    user: job.user(),
                    command: job.command(),
                };
                let listed = list.next(&identity, None, &job.owner.tab, None);
                (id, listed.to_string())
            })
            .collect()
    }

    /// The minute boundary as the reactor runs it: the minute, then every run that comes up
    /// handed to the launch path. Returns what each launch did.
    pub(super) fn minute(s: &mut Scheduler, clock: &FakeClock, fx: &mut Recorded) -> Vec<Launched> {
        s.on_minute(clock.now(), Wake::Timer, fx);
        start_due(s, clock, fx)
    }

    pub(super) fn start_due(
        s: &mut Scheduler,
        clock: &FakeClock,
        fx: &mut Recorded,
    ) -> Vec<Launched> {
        let now_ms = clock.now().as_millisecond();
        let mut launched = Vec::new();
        while let Some(run) = s.next_to_start(now_ms, fx) {
            let l = s.launch(run, now_ms, fx);
            launched.push(l);
            if matches!(l, Launched::Failed { .. }) {
                break;
            }
        }
        launched
    }

    #[test]
    fn a_minutes_runs_start_through_the_launch_path_the_first_since_load_told_once() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "* * * * * echo a\n", &mut fx);
        clock.advance_ms(30_000);
        let launched = minute(&mut s, &clock, &mut fx);
        assert!(
            matches!(launched[..], [Launched::Started(_)]),
            "{launched:?}"
        );
        clock.advance_ms(60_000);
        minute(&mut s, &clock, &mut fx);
        assert_eq!(
            fx.started,
            [("echo a".to_string(), true), ("echo a".to_string(), false)]
        );
        assert_eq!(s.running_len(), 2);
        assert_eq!(s.running_pids().len(), 2);
        s.arm(clock.now(), false, &mut fx);
        assert_eq!(
            fx.armed,
            [UtcMinute::containing(clock.now().as_second()).plus(1)]
        );
        assert!(fx.lines.is_empty(), "{:?}", fx.lines);
    }

    #[test]
    fn a_failed_fork_is_logged_at_once_then_once_a_minute_with_the_count_then_its_recovery() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "* * * * * echo a\n", &mut fx);
        fx.fail_starts = 3;
        clock.advance_ms(30_000);
        let launched = minute(&mut s, &clock, &mut fx);
        assert!(
            matches!(launched[..], [Launched::Failed { .. }]),
            "{launched:?}"
        );
        // The run is back in line, first, after a second.
        assert!(
            s.next_to_start(clock.now().as_millisecond(), &mut fx)
                .is_none()
        );
        for _ in 0..2 {
            clock.advance_ms(1_000);
            let launched = start_due(&mut s, &clock, &mut fx);
            assert!(
                matches!(launched[..], [Launched::Failed { .. }]),
                "{launched:?}"
            );
        }
        assert_eq!(fx.logged("can't fork").len(), 1, "{:?}", fx.lines);
        assert!(fx.logged("can't fork")[0].ends_with("jobs wait and are retried every second)"));
        clock.advance_ms(58_000);
        s.on_minute(clock.now(), Wake::Timer, &mut fx);
        assert_eq!(
            fx.logged("more failed attempts in the last minute").len(),
            1,
            "{:?}",
            fx.lines
        );
        assert!(
            fx.logged("; 2 more failed attempts").len() == 1,
            "{:?}",
            fx.lines
        );
        let launched = start_due(&mut s, &clock, &mut fx);
        let Launched::Started(pid) = launched[0] else {
            panic!("{launched:?}")
        };
        // Forks work again once the child has run its job (its own forks could fail too).
        assert!(fx.logged("fork works again").is_empty(), "{:?}", fx.lines);
        s.on_reaped(pid, Exit::Code(0), None, clock.now(), &mut fx);
        assert_eq!(
            fx.logged("fork works again after 3 failed attempts").len(),
            1,
            "{:?}",
            fx.lines
        );
        // The run that failed three times was still its entry's first since the load.
        assert_eq!(fx.started[0], ("echo a".to_string(), true));
    }

    #[test]
    fn forks_that_fail_and_work_in_turn_write_at_most_one_line_of_each_kind_a_minute() {
        let mut fx = Recorded::default();
        let mut f = ForkFailures::default();
        let eagain = || std::io::Error::from_raw_os_error(11);
        for _ in 0..30 {
            f.failed(&mut fx, eagain());
            f.succeeded(&mut fx);
        }
        assert_eq!(fx.logged("can't fork").len(), 1, "{:?}", fx.lines);
        assert_eq!(fx.logged("fork works again after 1 failed").len(), 1);
        assert_eq!(fx.lines.len(), 2, "{:?}", fx.lines);
        // The minute's end: the others counted, and that forks work (owed since the second).
        f.minute_passed(UtcMinute(1), &mut fx);
        assert_eq!(
            fx.logged("; 29 more failed attempts in the last minute")
                .len(),
            1,
            "{:?}",
            fx.lines
        );
        assert_eq!(fx.logged("fork works again after 29 failed").len(), 1);
        assert_eq!(fx.lines.len(), 4, "{:?}", fx.lines);
        // A second wake in the same minute (the clock was set) says nothing and starts no
        // minute: a failure now is a new series, said at once, and the next is counted.
        f.minute_passed(UtcMinute(1), &mut fx);
        assert_eq!(fx.lines.len(), 4, "{:?}", fx.lines);
        f.failed(&mut fx, eagain());
        assert_eq!(fx.lines.len(), 5, "{:?}", fx.lines);
        assert!(
            fx.lines[4]
                .1
                .contains("jobs wait and are retried every second")
        );
        f.minute_passed(UtcMinute(1), &mut fx);
        f.failed(&mut fx, eagain());
        assert_eq!(fx.lines.len(), 5, "{:?}", fx.lines);
        // Still failing at the minute's end: the count, and no word of forks working.
        f.minute_passed(UtcMinute(2), &mut fx);
        assert_eq!(fx.lines.len(), 6, "{:?}", fx.lines);
        assert!(fx.lines[5].1.contains("; 1 more failed attempt"));
        f.succeeded(&mut fx);
        assert_eq!(fx.logged("fork works again after 2 failed").len(), 1);
        // A quiet minute says nothing.
        f.minute_passed(UtcMinute(3), &mut fx);
        assert_eq!(fx.lines.len(), 7, "{:?}", fx.lines);
    }

    #[test]
    fn a_job_child_that_could_not_start_its_job_gives_its_run_back_once_counted_as_a_fork_failure()
    {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "* * * * * echo a\n", &mut fx);
        clock.advance_ms(30_000);
        let [Launched::Started(pid)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        clock.advance_ms(100);
        let not_started = Exit::Code(crate::job::NOT_STARTED);
        assert_eq!(
            s.on_reaped(pid, not_started, None, clock.now(), &mut fx),
            Reaped::NotStarted
        );
        assert_eq!(s.running_len(), 0);
        assert_eq!(fx.logged("can't fork").len(), 1, "{:?}", fx.lines);
        // Back first in line, held a second as after the daemon's own failed fork.
        assert!(
            s.next_to_start(clock.now().as_millisecond(), &mut fx)
                .is_none()
        );
        clock.advance_ms(1_000);
        let [Launched::Started(again)] = start_due(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        // Still its entry's first run since the load; one run counted, not two.
        assert_eq!(
            fx.started,
            [("echo a".to_string(), true), ("echo a".to_string(), true)]
        );
        assert!(s.render_metrics(false).contains("crond_runs_total 1\n"));
        s.on_reaped(again, Exit::Code(0), None, clock.now(), &mut fx);
        assert_eq!(
            fx.logged("fork works again after 1 failed attempt)").len(),
            1,
            "{:?}",
            fx.lines
        );
        // Nothing more comes up this minute: the run happened once.
        assert!(start_due(&mut s, &clock, &mut fx).is_empty());
    }

    #[test]
    fn a_queued_overlap_waits_for_the_running_one_and_a_failed_fork_then_requeues_it() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "CRON_OVERLAP=queue\n* * * * * sleep\n", &mut fx);
        clock.advance_ms(30_000);
        let [Launched::Started(first)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        clock.advance_ms(60_000);
        assert_eq!(minute(&mut s, &clock, &mut fx), [Launched::Waiting]);
        assert_eq!(
            fx.logged("(alice) WAIT (sleep) still running since 10:01")
                .len(),
            1
        );
        // The running one ends; the waiting one can't be forked: it goes back first in line,
        // which waits a second as after any failed fork, and keeps the minute it was due.
        fx.fail_starts = 1;
        clock.advance_ms(5_000);
        assert_eq!(
            s.on_reaped(first, Exit::Code(0), None, clock.now(), &mut fx),
            Reaped::Requeued
        );
        assert_eq!(s.running_len(), 0);
        assert!(start_due(&mut s, &clock, &mut fx).is_empty());
        clock.advance_ms(1_000);
        assert!(matches!(
            start_due(&mut s, &clock, &mut fx)[..],
            [Launched::Started(_)]
        ));
        let slot_1002 = UtcMinute::containing(clock.now().as_second()).start_second();
        assert_eq!(fx.facts.last().unwrap().slot, Some(slot_1002));
        assert_eq!(
            s.on_reaped(Pid(1), Exit::Code(0), None, clock.now(), &mut fx),
            Reaped::NotOurs
        );
        assert!(s.render_metrics(false).contains("crond_runs_total 2"));
    }

    #[test]
    fn a_run_that_would_start_later_than_cron_late_after_its_time_is_recorded_late_not_started() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let text = "CRON_OVERLAP=queue\nCRON_LATE=90s\n* * * * * sleep\n";
        let mut s = scheduler(&clock, text, &mut fx);
        clock.advance_ms(30_000);
        let [Launched::Started(first)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        // 10:02's run waits for 10:01's; 10:01's ends at 10:03:40, 100 s after 10:02.
        clock.advance_ms(60_000);
        assert_eq!(minute(&mut s, &clock, &mut fx), [Launched::Waiting]);
        clock.advance_ms(60_000);
        assert_eq!(minute(&mut s, &clock, &mut fx), [Launched::Skipped]);
        fx.records.clear();
        clock.advance_ms(40_000);
        s.on_reaped(first, Exit::Code(0), None, clock.now(), &mut fx);
        assert_eq!(s.running_len(), 0, "10:02's run did not start");
        let [late] = &fx.records[..] else {
            panic!("{:?}", fx.records)
        };
        let slot_1002 = UtcMinute::containing(clock.now().as_second() - 100).start_second();
        assert_eq!(
            late.slot,
            Some(slot_1002),
            "its slot is the minute it was due"
        );
        let crate::history::Result::NotRun { reason, words } = &late.result else {
            panic!("{late:?}")
        };
        assert_eq!(*reason, Reason::Late);
        assert_eq!(
            words,
            "would have started 1m40s after its time (CRON_LATE=1m30s)"
        );
        let said = "(alice) LATE (sleep) due at 10:02, 1m40s late: not started (CRON_LATE)";
        assert_eq!(fx.logged(said).len(), 1, "{:?}", fx.lines);
        assert!(
            s.render_metrics(false)
                .contains("crond_not_run_total{reason=\"late\"} 1\n")
        );
        // A run that comes up in time starts.
        clock.advance_ms(20_000);
        assert!(matches!(
            minute(&mut s, &clock, &mut fx)[..],
            [Launched::Started(_)]
        ));
        // The same wait within the limit: the queued run starts when the running one ends.
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let text = "CRON_OVERLAP=queue\nCRON_LATE=2m\n* * * * * sleep\n";
        let mut s = scheduler(&clock, text, &mut fx);
        clock.advance_ms(30_000);
        let [Launched::Started(first)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        clock.advance_ms(60_000);
        assert_eq!(minute(&mut s, &clock, &mut fx), [Launched::Waiting]);
        clock.advance_ms(100_000);
        s.on_reaped(first, Exit::Code(0), None, clock.now(), &mut fx);
        assert_eq!(s.running_len(), 1, "started within CRON_LATE");
        assert!(fx.logged("LATE").is_empty());
    }

    /// The one outcome recorded since the last look, a slot not run: its slot, reason and words.
    fn not_run_since(fx: &mut Recorded) -> (Option<i64>, Trigger, Reason, String) {
        let records = std::mem::take(&mut fx.records);
        let [outcome] = &records[..] else {
            panic!("{records:?}")
        };
        let crate::history::Result::NotRun { reason, words } = &outcome.result else {
            panic!("{outcome:?}")
        };
        (outcome.slot, outcome.trigger, *reason, words.clone())
    }

    /// The first second of the minute `clock` is in, `back` minutes ago.
    fn slot_of(clock: &FakeClock, back: i64) -> i64 {
        UtcMinute::containing(clock.now().as_second())
            .plus(-back)
            .start_second()
    }

    #[test]
    fn a_run_whose_forks_fail_until_its_entrys_next_run_is_recorded_fork_failed_and_replaced() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "* * * * * echo a\n", &mut fx);
        fx.fail_starts = usize::MAX;
        clock.advance_ms(30_000);
        let launched = minute(&mut s, &clock, &mut fx);
        assert!(
            matches!(launched[..], [Launched::Failed { .. }]),
            "{launched:?}"
        );
        // Retried every second through its minute, failing each time.
        for _ in 0..59 {
            clock.advance_ms(1_000);
            let launched = start_due(&mut s, &clock, &mut fx);
            assert!(
                matches!(launched[..], [Launched::Failed { .. }]),
                "{launched:?}"
            );
        }
        assert!(fx.records.is_empty(), "{:?}", fx.records);
        // 10:02, and forks work again: the run of 10:01 is given up, and 10:02's starts.
        fx.fail_starts = 0;
        clock.advance_ms(1_000);
        let launched = minute(&mut s, &clock, &mut fx);
        assert!(
            matches!(launched[..], [Launched::Started(_)]),
            "{launched:?}"
        );
        assert_eq!(fx.facts.last().unwrap().slot, Some(slot_of(&clock, 0)));
        let (slot, trigger, reason, words) = not_run_since(&mut fx);
        assert_eq!(
            (slot, trigger, reason),
            (
                Some(slot_of(&clock, 1)),
                Trigger::Schedule,
                Reason::ForkFailed
            )
        );
        assert_eq!(
            words,
            "no process could be made for it from 10:01 to 10:02 (60 tries): Resource \
             temporarily unavailable (os error 11)"
        );
        let said = "(alice) FORK FAILED (echo a) due at 10:01, no process for it in 60 tries \
                    until 10:02: not started, its next run takes its place";
        let lines: Vec<_> = fx.lines.iter().filter(|(_, l)| l.contains(said)).collect();
        assert!(matches!(lines[..], [(Level::Error, _)]), "{:?}", fx.lines);
        assert!(
            s.render_metrics(false)
                .contains("crond_not_run_total{reason=\"fork-failed\"} 1\n")
        );
        // Nothing else of it waits: that minute had one run.
        assert!(start_due(&mut s, &clock, &mut fx).is_empty());
    }

    #[test]
    fn a_job_child_that_could_not_start_its_job_until_the_entrys_next_run_gives_it_up() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "* * * * * echo a\n", &mut fx);
        clock.advance_ms(30_000);
        let [Launched::Started(pid)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        clock.advance_ms(100);
        let not_started = Exit::Code(crate::job::NOT_STARTED);
        s.on_reaped(pid, not_started, None, clock.now(), &mut fx);
        // Back in line; 10:02 comes before it is retried.
        clock.advance_ms(59_900);
        let [Launched::Started(_)] = minute(&mut s, &clock, &mut fx)[..] else {
            panic!("{:?}", fx.lines)
        };
        let (slot, _, reason, words) = not_run_since(&mut fx);
        assert_eq!(
            (slot, reason),
            (Some(slot_of(&clock, 1)), Reason::ForkFailed)
        );
        assert_eq!(
            words,
            "no process could be made for it from 10:01 to 10:02 (1 try): no process for the \
             job in its job child"
        );
        assert_eq!(s.running_len(), 1, "only 10:02's run");
    }

    #[test]
    fn with_cron_late_a_run_whose_forks_fail_is_recorded_late_before_its_entrys_next_run() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "CRON_LATE=30s\n* * * * * echo a\n", &mut fx);
        fx.fail_starts = usize::MAX;
        clock.advance_ms(30_000);
        minute(&mut s, &clock, &mut fx);
        for _ in 0..30 {
            clock.advance_ms(1_000);
            let launched = start_due(&mut s, &clock, &mut fx);
            assert!(
                matches!(launched[..], [Launched::Failed { .. }]),
                "{launched:?}"
            );
        }
        // 10:01:31: past its limit, it is not tried again.
        clock.advance_ms(1_000);
        assert_eq!(start_due(&mut s, &clock, &mut fx), [Launched::Skipped]);
        let (slot, _, reason, words) = not_run_since(&mut fx);
        assert_eq!((slot, reason), (Some(slot_of(&clock, 0)), Reason::Late));
        assert_eq!(
            words,
            "would have started 31s after its time (CRON_LATE=30s)"
        );
        assert!(start_due(&mut s, &clock, &mut fx).is_empty());
        // 10:02: nothing is given up, nothing recorded twice.
        clock.advance_ms(29_000);
        minute(&mut s, &clock, &mut fx);
        assert!(fx.records.is_empty(), "{:?}", fx.records);
        assert!(fx.logged("FORK FAILED").is_empty());
    }

    #[test]
    fn a_run_asked_for_whose_fork_fails_is_retried_past_its_entrys_next_run_and_cron_late() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "CRON_LATE=30s\n* * * * * echo a\n", &mut fx);
        let (id, _) = listed_ids(&s)[0].clone();
        fx.fail_starts = usize::MAX;
        let asked = s.run_now(id, "root", None, clock.now(), &mut fx);
        assert!(matches!(asked, Some(Launched::Failed { .. })), "{asked:?}");
        // 10:01: the schedule's run is queued behind it; the line is held by the failing one.
        clock.advance_ms(30_000);
        let launched = minute(&mut s, &clock, &mut fx);
        assert!(
            matches!(launched[..], [Launched::Failed { .. }]),
            "{launched:?}"
        );
        for _ in 0..44 {
            clock.advance_ms(1_000);
            start_due(&mut s, &clock, &mut fx);
        }
        assert!(fx.records.is_empty(), "{:?}", fx.records);
        // 10:01:45: forks work. The run asked for starts as asked for, 75 s after it was
        // asked; the schedule's run, 45 s after its time, is late.
        fx.fail_starts = 0;
        clock.advance_ms(1_000);
        let launched = start_due(&mut s, &clock, &mut fx);
        assert!(
            matches!(launched[..], [Launched::Started(_), Launched::Skipped]),
            "{launched:?}"
        );
        let facts = fx.facts.iter().rev().find(|f| f.trigger == Trigger::Manual);
        assert_eq!(facts.map(|f| f.slot), Some(None), "{:?}", fx.facts);
        let (slot, trigger, reason, _) = not_run_since(&mut fx);
        assert_eq!(
            (slot, trigger, reason),
            (Some(slot_of(&clock, 0)), Trigger::Schedule, Reason::Late)
        );
        assert!(fx.logged("FORK FAILED").is_empty());
    }

    #[test]
    fn after_a_stop_a_run_waiting_for_the_running_one_never_starts() {
        for stops_jobs in [false, true] {
            let clock = FakeClock::at("2026-11-27T10:00:30Z");
            let mut fx = Recorded::default();
            let mut s = scheduler(&clock, "CRON_OVERLAP=queue\n* * * * * sleep\n", &mut fx);
            clock.advance_ms(30_000);
            let [Launched::Started(first)] = minute(&mut s, &clock, &mut fx)[..] else {
                panic!("{:?}", fx.lines)
            };
            clock.advance_ms(60_000);
            assert_eq!(minute(&mut s, &clock, &mut fx), [Launched::Waiting]);
            s.stopping(stops_jobs, clock.now(), &mut fx);
            assert_eq!(fx.logged("Shutting down").len(), 1, "{:?}", fx.lines);
            // Left to finish on its own, it is said so; stopped by the daemon, the stop says it.
            let said = fx
                .logged("1 job still running; it finishes on its own")
                .len();
            assert_eq!(said, usize::from(!stops_jobs), "{:?}", fx.lines);
            assert_eq!(
                fx.logged("1 run waiting for a running one (CRON_OVERLAP=queue) not started")
                    .len(),
                1,
                "{:?}",
                fx.lines
            );
            clock.advance_ms(1_000);
            assert_eq!(
                s.on_reaped(first, Exit::Code(0), None, clock.now(), &mut fx),
                Reaped::Ended
            );
            assert_eq!(s.running_len(), 0);
            assert_eq!(fx.started.len(), 1, "{:?}", fx.started);
        }
    }

    #[test]
    fn missed_once_entries_make_up_a_clock_jump_and_the_state_file_remembers_the_minute() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let text = "0 * * * * plain\nCRON_MISSED=once\n0 * * * * once\n";
        let mut s = scheduler(&clock, text, &mut fx);
        s.files_loaded(&mut fx);
        let handled = UtcMinute::containing(clock.now().as_second());
        assert_eq!(fx.handled[Path::new(STATE)], Ok(handled));
        // Asleep from 10:00 to 12:30 (a resume): the `once` entry runs once, the other not.
        clock.advance_ms(150 * 60_000);
        let launched = minute(&mut s, &clock, &mut fx);
        assert_eq!(launched.len(), 1, "{:?}", fx.lines);
        assert_eq!(fx.started, [("once".to_string(), true)]);
        let made_up = fx.logged("(alice) MISSED (once) due at 2026-11-27 11:00");
        assert_eq!(made_up.len(), 1, "{:?}", fx.lines);
        assert_eq!(
            fx.logged("clock late").len() + fx.logged("clock set").len(),
            1
        );
        // Removing the entry removes its need of the file.
        let mut gone = change_of("");
        gone.remove = s.once.iter().copied().collect();
        s.apply(gone, clock.now().as_millisecond(), &mut fx);
        assert!(s.once.is_empty());
    }

    #[test]
    fn each_slot_not_started_is_recorded_with_lists_id_its_slot_and_why() {
        use crate::history::{Result as Ran, Trigger};
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let text = "CRON_OVERLAP=skip\n* * * * * skip\nCRON_OVERLAP=queue\n* * * * * queue\n";
        let mut s = scheduler(&clock, text, &mut fx);
        let listed: Vec<String> = listed_ids(&s).into_iter().map(|(_, id)| id).collect();
        clock.advance_ms(30_000);
        assert_eq!(minute(&mut s, &clock, &mut fx).len(), 2);
        let slot_1001 = UtcMinute::containing(clock.now().as_second()).start_second();
        assert_eq!(fx.facts.len(), 2);
        assert!(fx.facts.iter().all(|f| f.trigger == Trigger::Schedule));
        assert!(fx.facts.iter().all(|f| f.slot == Some(slot_1001)));
        assert_eq!(fx.facts[0].id, listed[0], "the id `cronctl list` shows");
        // The next minute: `skip` is skipped (recorded), `queue` waits (not an outcome yet).
        clock.advance_ms(60_000);
        minute(&mut s, &clock, &mut fx);
        let [skipped] = &fx.records[..] else {
            panic!("{:?}", fx.records)
        };
        assert_eq!(skipped.entry, listed[0]);
        assert_eq!(skipped.place, "crontabs/alice:2");
        assert_eq!(skipped.slot, Some(slot_1001 + 60));
        let Ran::NotRun { reason, words } = &skipped.result else {
            panic!("{skipped:?}")
        };
        assert_eq!(*reason, Reason::Overlap);
        assert!(words.contains("10:01"), "{words}");
        // A stop drops the waiting run: recorded as such.
        s.stopping(false, clock.now(), &mut fx);
        let stopping: Vec<_> = fx
            .records
            .iter()
            .filter(|o| {
                matches!(
                    o.result,
                    Ran::NotRun {
                        reason: Reason::Stopping,
                        ..
                    }
                )
            })
            .collect();
        assert_eq!(stopping.len(), 1, "{:?}", fx.records);
        assert_eq!(stopping[0].entry, listed[1]);
        // Each slot not started is handed on for its entry's requests, with the entry's last
        // verdict before it (both succeeded, or never ran: not failed).
        let notified = [
            ("skip".to_string(), Reason::Overlap, false),
            ("queue".to_string(), Reason::Stopping, false),
        ];
        assert_eq!(fx.notified, notified);
        // The metrics name the skipped entry by the id its record has, and where it is.
        let metrics = s.render_metrics(true);
        let series = format!(
            "crond_last_status{{entry=\"{}\",place=\"crontabs/alice:2\"}} -1\n",
            listed[0]
        );
        assert!(metrics.contains(&series), "{series} in {metrics}");
    }

    #[test]
    fn an_entry_removed_while_its_job_runs_leaves_no_series_and_its_end_is_still_counted() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "0 0 1 1 * yearly\n", &mut fx);
        let id = listed_ids(&s)[0].0;
        let Some(Launched::Started(pid)) = s.run_now(id, "root", None, clock.now(), &mut fx) else {
            panic!("{:?}", fx.lines)
        };
        let mut gone = change_of("");
        gone.remove = vec![id];
        s.apply(gone, clock.now().as_millisecond(), &mut fx);
        let said = Said::Ended {
            end: crate::job::report::End::Exited(0),
            duration_ms: 10,
        };
        s.on_reaped(pid, Exit::Code(0), Some(said), clock.now(), &mut fx);
        assert!(!s.metrics.has_series(id));
        let metrics = s.render_metrics(true);
        assert!(
            metrics.contains("crond_run_duration_seconds_count 1\n"),
            "{metrics}"
        );
    }

    #[test]
    fn the_metrics_label_an_entry_with_lists_id_and_follow_it_when_a_reload_changes_it() {
        use crate::daemon::handoff::NewEntry;
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "0 0 1 1 * same\n0 0 1 1 * same\n", &mut fx);
        let listed = listed_ids(&s);
        let [(first, _), (second, second_id)] = &listed[..] else {
            panic!("{listed:?}")
        };
        let Some(Launched::Started(pid)) = s.run_now(*second, "root", None, clock.now(), &mut fx)
        else {
            panic!("{:?}", fx.lines)
        };
        clock.advance_ms(1_000);
        let said = Said::Ended {
            end: crate::job::report::End::Exited(0),
            duration_ms: 990,
        };
        s.on_reaped(pid, Exit::Code(0), Some(said), clock.now(), &mut fx);
        let labels =
            |id: &str, line: u32| format!("{{entry=\"{id}\",place=\"crontabs/alice:{line}\"}}");
        let metrics = s.render_metrics(true);
        for series in [
            format!("crond_last_status{} 0\n", labels(second_id, 2)),
            format!(
                "crond_last_success_timestamp_seconds{} {}\n",
                labels(second_id, 2),
                clock.now().as_second()
            ),
        ] {
            assert!(metrics.contains(&series), "{series} in {metrics}");
        }
        assert_eq!(metrics.matches("entry=").count(), 2, "{metrics}");
        // The line above it goes: the one left is the first of its kind, with another id, and
        // its series say the id `cronctl list` shows now.
        let mut reload = change_of("0 0 1 1 * same\n");
        let Some(NewEntry::Periodic { job, .. }) = reload.add.pop() else {
            panic!("{reload:?}")
        };
        reload.rebind = vec![(*second, job)];
        reload.remove = vec![*first];
        s.apply(reload, clock.now().as_millisecond(), &mut fx);
        s.name_entries([*second].into_iter());
        let [(kept, kept_id)] = &listed_ids(&s)[..] else {
            panic!()
        };
        assert_eq!(kept, second);
        assert_ne!(kept_id, second_id);
        let metrics = s.render_metrics(true);
        let series = format!("crond_last_status{} 0\n", labels(kept_id, 1));
        assert!(metrics.contains(&series), "{series} in {metrics}");
        assert!(!metrics.contains(second_id.as_str()), "{metrics}");
    }

    #[test]
    fn identical_lines_run_under_the_ids_list_gives_them_in_the_files_order() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let text = "0 0 1 1 * same\n0 0 1 1 * other\n0 0 1 1 * same\n";
        let mut s = scheduler(&clock, text, &mut fx);
        let listed = listed_ids(&s);
        for &(id, _) in &listed {
            s.run_now(id, "root", None, clock.now(), &mut fx).unwrap();
        }
        let listed: Vec<String> = listed.into_iter().map(|(_, id)| id).collect();
        let ran: Vec<String> = fx.facts.iter().map(|f| f.id.clone()).collect();
        assert_eq!(ran, listed);
        assert_ne!(ran[0], ran[2], "two identical lines, two ids");
    }

    #[test]
    fn an_entrys_runs_jumped_over_are_counted_to_a_thousand_in_one_outcome() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "* * * * * often\n", &mut fx);
        // Asleep a day: 1,439 runs jumped over, one outcome that counts to its bound.
        clock.advance_ms(24 * 60 * 60_000);
        minute(&mut s, &clock, &mut fx);
        let [skipped] = &fx.records[..] else {
            panic!("{:?}", fx.records)
        };
        let crate::history::Result::NotRun { reason, words } = &skipped.result else {
            panic!("{skipped:?}")
        };
        assert_eq!(*reason, Reason::Missed);
        assert!(
            words.starts_with("1000 or more runs from 2026-11-27 10:01"),
            "{words}"
        );
    }

    #[test]
    fn runs_jumped_over_are_recorded_as_missed_asleep_or_skipped_by_a_clock_step() {
        use crate::history::{Result as Ran, Trigger};
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let text = "*/10 * * * * wild\n30 10,11 * * * fixed\nCRON_MISSED=once\n0 * * * * once\n";
        let mut s = scheduler(&clock, text, &mut fx);
        s.files_loaded(&mut fx);
        // Asleep from 10:00 to 12:15: the wildcard entry's 13 runs are missed; the fixed-time
        // one runs once for its 10:30 and 11:30 (one recorded), `once` makes up its own.
        clock.advance_ms(135 * 60_000);
        minute(&mut s, &clock, &mut fx);
        let said = |o: &crate::history::Outcome| match &o.result {
            Ran::NotRun { reason, words } => (o.place.clone(), *reason, words.clone()),
            Ran::Ran(_) => panic!("{o:?}"),
        };
        let mut records: Vec<_> = fx.records.iter().map(said).collect();
        records.sort();
        assert_eq!(records.len(), 3, "{records:?}");
        assert_eq!(records[0].0, "crontabs/alice:1");
        assert_eq!(records[0].1, Reason::Missed);
        assert!(
            records[0].2.starts_with("13 runs from 2026-11-27 10:10"),
            "{}",
            records[0].2
        );
        assert!(
            records[1].2.starts_with("its run of 2026-11-27 10:30"),
            "{}",
            records[1].2
        );
        assert!(
            records[2]
                .2
                .contains("CRON_MISSED=once runs the entry once"),
            "{}",
            records[2].2
        );
        assert!(
            fx.facts.iter().any(|f| f.trigger == Trigger::CatchUp),
            "{:?}",
            fx.facts
        );
        // The clock set 5 hours on: a step, and nothing of the span ran.
        fx.records.clear();
        clock.advance_ms(300 * 60_000);
        s.on_minute(clock.now(), Wake::ClockSet, &mut fx);
        assert!(!fx.records.is_empty());
        assert!(fx.records.iter().all(|o| matches!(
            o.result,
            Ran::NotRun {
                reason: Reason::ClockStep,
                ..
            }
        )));
    }

    #[test]
    fn reboot_jobs_run_at_the_first_start_since_the_boot_only() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let marker = Path::new("/run/crond.reboot");
        let jobs = || change_of("@reboot at-boot\n").reboot;
        for _start in 0..2 {
            let mut s = scheduler(&clock, "", &mut fx);
            s.reboot(jobs(), marker, clock.now(), &mut fx);
            start_due(&mut s, &clock, &mut fx);
        }
        // The first start made the marker and ran the job; the second found the marker.
        assert_eq!(fx.markers.iter().collect::<Vec<_>>(), [marker]);
        assert_eq!(fx.started, [("at-boot".to_string(), true)]);
        assert_eq!(fx.logged("Running @reboot jobs").len(), 1, "{:?}", fx.lines);
        assert_eq!(
            fx.logged("Skipping @reboot jobs").len(),
            1,
            "{:?}",
            fx.lines
        );
    }

    #[test]
    fn runs_missed_while_down_are_made_up_from_a_trusted_state_file_only() {
        let clock = FakeClock::at("2026-11-27T12:30:30Z");
        let text = "CRON_MISSED=once\n0 * * * * once\n";
        let before = UtcMinute::containing(clock.now().as_second()).plus(-150);
        for (state, made_up) in [(Ok(before), 1), (Err("a symlink".to_string()), 0)] {
            let mut fx = Recorded::default();
            fx.handled.insert(STATE.into(), state.clone());
            let mut s = scheduler(&clock, text, &mut fx);
            s.make_up_after_start(clock.now(), &mut fx);
            assert_eq!(
                start_due(&mut s, &clock, &mut fx).len(),
                made_up,
                "{state:?}"
            );
            let said = fx.logged("(alice) MISSED (once) due at 2026-11-27 11:00");
            assert_eq!(said.len(), made_up, "{:?}", fx.lines);
            let ignored = fx.logged("/var/lib/crond/handled ignored: a symlink; runs missed");
            assert_eq!(ignored.len(), 1 - made_up, "{:?}", fx.lines);
            // Either way the file says from here on that this minute was handled.
            let now = UtcMinute::containing(clock.now().as_second());
            assert_eq!(fx.handled[Path::new(STATE)], Ok(now));
        }
    }

    #[test]
    fn a_catch_up_whose_fork_fails_is_still_a_catch_up_of_its_slot_when_it_starts() {
        let clock = FakeClock::at("2026-11-27T12:30:30Z");
        let mut fx = Recorded::default();
        let before = UtcMinute::containing(clock.now().as_second()).plus(-150);
        fx.handled.insert(STATE.into(), Ok(before));
        let mut s = scheduler(&clock, "CRON_MISSED=once\n0 * * * * once\n", &mut fx);
        s.make_up_after_start(clock.now(), &mut fx);
        fx.fail_starts = 1;
        let launched = start_due(&mut s, &clock, &mut fx);
        assert!(
            matches!(launched[..], [Launched::Failed { .. }]),
            "{launched:?}"
        );
        clock.advance_ms(1_000);
        assert_eq!(start_due(&mut s, &clock, &mut fx).len(), 1);
        let slot = UtcMinute::containing(clock.now().as_second()).plus(-90);
        let told: Vec<_> = fx.facts.iter().map(|f| (f.trigger, f.slot)).collect();
        let catch_up = (Trigger::CatchUp, Some(slot.start_second()));
        assert_eq!(told, [catch_up, catch_up], "both tries make up 11:00");
    }

    #[test]
    fn a_catch_up_counts_its_cron_late_from_the_first_run_it_makes_up() {
        let clock = FakeClock::at("2026-11-27T12:30:30Z");
        let now = UtcMinute::containing(clock.now().as_second());
        let text = "CRON_MISSED=once\nCRON_LATE=5m\n29 * * * * recent\n0 * * * * old\n";
        // Down since 12:27: 12:29's run is made up 1m30s after its time, within the limit.
        let mut fx = Recorded::default();
        fx.handled.insert(STATE.into(), Ok(now.plus(-3)));
        let mut s = scheduler(&clock, text, &mut fx);
        s.make_up_after_start(clock.now(), &mut fx);
        let launched = start_due(&mut s, &clock, &mut fx);
        assert!(
            matches!(launched[..], [Launched::Started(_)]),
            "{launched:?}"
        );
        let facts = fx.facts.last().unwrap();
        assert_eq!(
            (facts.trigger, facts.slot),
            (Trigger::CatchUp, Some(now.plus(-1).start_second()))
        );
        assert!(fx.logged("LATE").is_empty(), "{:?}", fx.lines);
        // Down since 10:00: 11:00's run would be made up 1h30m30s after its time.
        let mut fx = Recorded::default();
        fx.handled.insert(STATE.into(), Ok(now.plus(-150)));
        let mut s = scheduler(&clock, text, &mut fx);
        s.make_up_after_start(clock.now(), &mut fx);
        let launched = start_due(&mut s, &clock, &mut fx);
        assert!(
            matches!(launched[..], [Launched::Skipped, Launched::Skipped]),
            "{launched:?}"
        );
        let late = |command: &str| {
            let late = fx.records.iter().find_map(|o| match &o.result {
                crate::history::Result::NotRun {
                    reason: Reason::Late,
                    words,
                } if o.command == command => Some((o.trigger, o.slot, words.clone())),
                _ => None,
            });
            late.unwrap_or_else(|| panic!("{command} in {:?}", fx.records))
        };
        assert_eq!(
            late("old"),
            (
                Trigger::CatchUp,
                Some(now.plus(-90).start_second()),
                "would have started 1h30m30s after its time (CRON_LATE=5m)".to_string()
            )
        );
        assert_eq!(late("recent").1, Some(now.plus(-121).start_second()));
        let said = "(alice) LATE (old) due at 11:00, 1h30m30s late: not started (CRON_LATE)";
        assert_eq!(fx.logged(said).len(), 1, "{:?}", fx.lines);
    }

    #[test]
    fn a_run_asked_for_is_logged_with_who_asked_and_goes_through_the_launch_path() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = Scheduler::new(clock.now(), Zone::utc(), STATE.into());
        let now_ms = clock.now().as_millisecond();
        let text = "0 0 1 1 * yearly\nCRON_OVERLAP=skip\n0 0 1 1 * skip\n\
                    CRON_OVERLAP=queue\n0 0 1 1 * queue\n";
        let ids = s.apply(change_of(text), now_ms, &mut fx);
        let asker = "bob (uid 1001, pid 77)";
        let run = |s: &mut Scheduler, i: usize, fx: &mut Recorded| {
            s.run_now(ids[i], asker, None, clock.now(), fx).unwrap()
        };
        let started = run(&mut s, 0, &mut fx);
        assert!(matches!(started, Launched::Started(_)), "{:?}", fx.lines);
        let asked = "(alice) RUN (yearly) crontabs/alice:1 asked by bob (uid 1001, pid 77)";
        assert_eq!(fx.logged(asked).len(), 1, "{:?}", fx.lines);
        // Under CRON_OVERLAP, as a due run.
        assert!(matches!(run(&mut s, 1, &mut fx), Launched::Started(_)));
        assert_eq!(run(&mut s, 1, &mut fx), Launched::Skipped);
        assert_eq!(fx.logged("(alice) SKIP (skip)").len(), 1, "{:?}", fx.lines);
        assert!(matches!(run(&mut s, 2, &mut fx), Launched::Started(_)));
        assert_eq!(run(&mut s, 2, &mut fx), Launched::Waiting);
        // A failed fork: queued, and started from the queue.
        fx.fail_starts = 1;
        assert!(matches!(run(&mut s, 0, &mut fx), Launched::Failed { .. }));
        clock.advance_ms(1_000);
        assert!(matches!(
            start_due(&mut s, &clock, &mut fx)[..],
            [Launched::Started(_)]
        ));
        assert_eq!(fx.logged(" RUN (").len(), 6, "{:?}", fx.lines);
        assert_eq!(fx.started.len(), 4, "{:?}", fx.started);
        let mut gone = change_of("");
        gone.remove = ids.clone();
        s.apply(gone, now_ms, &mut fx);
        assert_eq!(s.run_now(ids[0], asker, None, clock.now(), &mut fx), None);
        assert_eq!(fx.started.len(), 4);
    }

    /// The commands started since the last call.
    fn started_now(fx: &mut Recorded) -> Vec<String> {
        std::mem::take(&mut fx.started)
            .into_iter()
            .map(|(command, _)| command)
            .collect()
    }

    #[test]
    fn a_paused_entrys_slots_are_recorded_paused_not_started_until_it_is_resumed() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "* * * * * held\n* * * * * other\n", &mut fx);
        let (entry, id) = listed_ids(&s)[0].clone();
        let asker = "alice (uid 1000, pid 7)";
        assert_eq!(s.pause(entry, true, asker, &mut fx), Some(Ok(true)));
        let said = format!("(alice) PAUSE (held) crontabs/alice:1 {id} asked by {asker}");
        assert_eq!(fx.logged(&said).len(), 1, "{:?}", fx.lines);
        // Kept in the state file, by the id `cronctl list` shows.
        let kept = fx.paused[Path::new(STATE)].clone().unwrap();
        let kept: Vec<String> = kept.iter().map(LocalId::to_string).collect();
        assert_eq!(kept, std::slice::from_ref(&id));
        // Each slot: not started, recorded `paused`, one record a slot.
        for step in [30_000, 60_000] {
            clock.advance_ms(step);
            minute(&mut s, &clock, &mut fx);
            assert_eq!(started_now(&mut fx), ["other"]);
            let (slot, trigger, reason, words) = not_run_since(&mut fx);
            assert_eq!(
                (slot, trigger),
                (Some(slot_of(&clock, 0)), Trigger::Schedule)
            );
            assert_eq!(reason, Reason::Paused);
            assert_eq!(words, format!("paused on this host (cronctl resume {id})"));
        }
        // Among its last runs: `cronctl list` and `show` say why it did not run.
        let state = s.entry_state(entry).unwrap();
        assert!(matches!(
            state.last.last().and_then(|l| l.said.as_ref()),
            Some(Said::NotStarted {
                why: Reason::Paused,
                ..
            })
        ));
        // A run asked for runs all the same.
        let asked = s.run_now(entry, asker, None, clock.now(), &mut fx);
        assert!(matches!(asked, Some(Launched::Started(_))), "{asked:?}");
        assert_eq!(started_now(&mut fx), ["held"]);
        // Resumed: its next slot runs.
        assert_eq!(s.pause(entry, false, asker, &mut fx), Some(Ok(true)));
        assert_eq!(s.pause(entry, false, asker, &mut fx), Some(Ok(false)));
        assert_eq!(fx.logged(") RESUME (held) ").len(), 1, "{:?}", fx.lines);
        assert_eq!(fx.paused[Path::new(STATE)], Ok(BTreeSet::new()));
        clock.advance_ms(60_000);
        minute(&mut s, &clock, &mut fx);
        assert_eq!(started_now(&mut fx), ["held", "other"]);
        assert!(fx.records.is_empty(), "{:?}", fx.records);
    }

    #[test]
    fn a_full_paused_set_lets_go_of_removed_entries_ids_for_a_pause_and_keeps_the_loaded() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = scheduler(&clock, "* * * * * kept\n* * * * * new\n", &mut fx);
        let listed = listed_ids(&s);
        let (kept, new) = (listed[0].clone(), listed[1].clone());
        assert_eq!(s.pause(kept.0, true, "root", &mut fx), Some(Ok(true)));
        // The set fills with ids of entries that are gone (a user paused theirs, then
        // removed them, again and again).
        let loaded: BTreeSet<LocalId> = [LocalId(u64::from_str_radix(&kept.1, 16).unwrap())].into();
        let mut full = loaded.clone();
        full.extend(
            (1..)
                .map(LocalId)
                .filter(|id| !loaded.contains(id))
                .take(paused::MAX_PAUSED - 1),
        );
        s.paused = paused::Paused::new(full);
        assert!(s.paused.is_full());
        // A pause of a loaded entry makes room: the gone ids go, the loaded one stays.
        assert_eq!(s.pause(new.0, true, "bob", &mut fx), Some(Ok(true)));
        let said = format!(
            "{} paused ids of entries no longer loaded let go",
            paused::MAX_PAUSED - 1
        );
        assert_eq!(fx.logged(&said).len(), 1, "{:?}", fx.lines);
        let written = fx.paused[Path::new(STATE)].clone().unwrap();
        let written: Vec<String> = written.iter().map(LocalId::to_string).collect();
        let mut want = vec![kept.1.clone(), new.1.clone()];
        want.sort();
        assert_eq!(written, want);
    }

    #[test]
    fn a_pause_holds_across_a_restart_and_an_untrusted_or_unwritable_state_file_pauses_nothing() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let text = "* * * * * held\n";
        let mut s = scheduler(&clock, text, &mut fx);
        let (entry, _) = listed_ids(&s)[0].clone();
        assert_eq!(s.pause(entry, true, "root", &mut fx), Some(Ok(true)));
        // A new daemon reads the file: the entry, loaded again, is paused.
        let mut again = scheduler(&clock, text, &mut fx);
        again.load_paused(&mut fx);
        clock.advance_ms(30_000);
        minute(&mut again, &clock, &mut fx);
        assert!(started_now(&mut fx).is_empty());
        assert_eq!(not_run_since(&mut fx).2, Reason::Paused);
        // A file the daemon can't trust: logged, and nothing is paused.
        let why = "owned by uid 1000".to_string();
        fx.paused.insert(STATE.into(), Err(why));
        let mut untrusted = scheduler(&clock, text, &mut fx);
        untrusted.load_paused(&mut fx);
        let line = "/var/lib/crond/paused ignored: owned by uid 1000; no entry is paused";
        assert_eq!(fx.logged(line).len(), 1, "{:?}", fx.lines);
        clock.advance_ms(60_000);
        minute(&mut untrusted, &clock, &mut fx);
        assert_eq!(started_now(&mut fx), ["held"]);
        // A pause that can't be kept in the file is refused, and changes nothing.
        fx.fail_paused_writes = true;
        let (entry, _) = listed_ids(&untrusted)[0].clone();
        let refused = untrusted.pause(entry, true, "root", &mut fx);
        assert!(
            matches!(refused, Some(Err(paused::Refused::Unwritten(_)))),
            "{refused:?}"
        );
        clock.advance_ms(60_000);
        minute(&mut untrusted, &clock, &mut fx);
        assert_eq!(started_now(&mut fx), ["held"]);
        // An entry that is gone.
        let mut gone = change_of("");
        gone.remove = vec![entry];
        untrusted.apply(gone, clock.now().as_millisecond(), &mut fx);
        assert_eq!(untrusted.pause(entry, true, "root", &mut fx), None);
    }

    #[test]
    fn an_entrys_state_tells_its_job_next_run_last_run_and_running_pids() {
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let mut fx = Recorded::default();
        let mut s = Scheduler::new(clock.now(), Zone::utc(), STATE.into());
        let now_ms = clock.now().as_millisecond();
        let ids = s.apply(change_of("0 0 1 1 * yearly\n"), now_ms, &mut fx);
        let Some(Launched::Started(pid)) = s.run_now(ids[0], "root", None, clock.now(), &mut fx)
        else {
            panic!("{:?}", fx.lines)
        };
        let state = s.entry_state(ids[0]).unwrap();
        assert_eq!(
            (
                state.job.entry(),
                state.job.user(),
                state.job.schedule_text()
            ),
            (
                "crontabs/alice:1".to_string(),
                &b"alice"[..],
                &b"0 0 1 1 *"[..]
            )
        );
        assert_eq!((state.running, state.pids()), (1, vec![pid]));
        let new_year: Timestamp = "2027-01-01T00:00:00Z".parse().unwrap();
        assert_eq!(state.next_ms(), Some(new_year.as_millisecond()));
        assert_eq!(state.last, []);
        clock.advance_ms(2_500);
        let said = Said::Ended {
            end: crate::job::report::End::Exited(3),
            duration_ms: 2_490,
        };
        s.on_reaped(pid, Exit::Code(3), Some(said.clone()), clock.now(), &mut fx);
        let state = s.entry_state(ids[0]).unwrap();
        let last = LastRun {
            started_ms: now_ms,
            duration_ms: 2_500,
            outcome: Outcome::Failed,
            said: Some(said),
        };
        assert_eq!(
            (state.last, state.running, state.pids()),
            (&[last.clone()][..], 0, vec![])
        );
        // The last few runs are kept, the oldest let go.
        for n in 0..MAX_RECENT as i64 {
            let pid = s.run_now(ids[0], "root", None, clock.now(), &mut fx);
            let Some(Launched::Started(pid)) = pid else {
                panic!("{pid:?}");
            };
            clock.advance_ms(1_000 + n);
            s.on_reaped(pid, Exit::Code(0), None, clock.now(), &mut fx);
        }
        let state = s.entry_state(ids[0]).unwrap();
        assert_eq!(state.last.len(), MAX_RECENT);
        assert!(state.last.iter().all(|l| l.outcome == Outcome::Succeeded));
        assert_eq!(
            state.last[MAX_RECENT - 1].duration_ms,
            1_000 + MAX_RECENT as i64 - 1
        );
        let mut gone = change_of("");
        gone.remove = ids.clone();
        s.apply(gone, now_ms, &mut fx);
        assert!(s.entry_state(ids[0]).is_none());
        assert!(s.last.is_empty());
    }

    #[test]
    fn only_a_scheduled_entry_with_cron_cluster_has_a_cluster_identity() {
        let clock = FakeClock::at("2026-11-27T10:59:30Z");
        let mut fx = Recorded::default();
        let text = "0 * * * * local\nCRON_CLUSTER=nightly\n0 * * * * shared\n@every 1h every\n";
        let mut s = scheduler(&clock, text, &mut fx);
        clock.advance_ms(30_000);
        s.on_minute(clock.now(), Wake::Timer, &mut fx);
        let now_ms = clock.now().as_millisecond();
        let mut seen = Vec::new();
        while let Some(run) = s.next_to_start(now_ms, &mut fx) {
            let command = String::from_utf8_lossy(run.job.job.command()).into_owned();
            seen.push((command, s.cluster_entry(&run).is_some()));
        }
        assert_eq!(
            seen,
            [("local".to_string(), false), ("shared".to_string(), true)]
        );
    }
}
