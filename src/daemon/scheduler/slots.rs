//! What the scheduler knows of each run for its record (`crate::history`): the entry's id as
//! `cronctl list` shows it, what made the run (its schedule, a catch-up, `cronctl run`,
//! `@reboot`) and the slot it fills; and the outcome of a slot it did not start.

use std::collections::HashMap;

use crate::cluster::entry_id::{Identity, LocalId, LocalIds, entry_key};
use crate::history::retry::Plan;
use crate::history::{ClusterRun, Outcome, Reason, Result, Trigger};
use crate::job::JobSpec;
use crate::job::record::RunFacts;
use crate::schedule::{Field, Schedule, Zone};
use crate::timeline::Cycle;
use crate::timeline::{EntryId, UtcMinute};

/// What the entries' ids need beyond the entries themselves, and the catch-up runs queued.
#[derive(Debug, Default)]
pub(super) struct Slots {
    /// The entries whose id has an ordinal above 0 (a line identical to one above it in its
    /// file), with it: rare, so a daemon keeps no id per entry; an id is made when a run
    /// needs it (a hash of the entry's identity), as `cronctl list` makes it.
    ordinals: HashMap<EntryId, u32>,
    /// The entries whose next start is a catch-up (`CRON_MISSED=once`), with the minute it
    /// makes up.
    catch_ups: HashMap<EntryId, UtcMinute>,
    /// Cluster runs started again here because their first start's outcome was lost with its
    /// host (`CRON_CLUSTER_RERUN=unknown`), by entry and minute, until their start is recorded:
    /// a few at most (an entry's entry goes with it).
    reruns: std::collections::HashSet<(EntryId, UtcMinute)>,
    /// The retries queued (`CRON_RETRY`), by entry and the minute their queued run names, with
    /// the slot they try again: one an entry at most (a retry waits for the attempt before it
    /// to end), removed when it starts or its entry goes.
    retries: HashMap<(EntryId, UtcMinute), Retrying>,
    /// The retries queued changed since the state file last kept them (`retry_state`).
    retries_changed: bool,
    /// The files loaded since their ordinals were counted, with their entries in the file's
    /// order: counted when a run of one of them first needs an id, so a load costs no hash of
    /// its entries (8 bytes an entry wait here until then).
    pending: HashMap<std::sync::Arc<str>, Vec<EntryId>>,
}

/// How a started run's record names it: its entry's id, its trigger and its slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct AsRecorded {
    pub(super) id: String,
    pub(super) trigger: Trigger,
    pub(super) slot: Option<i64>,
}

/// A retry of a slot (`CRON_RETRY`): its attempt's plan, and the slot's trigger and time as
/// its first attempt's record gave them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Retrying {
    pub(super) plan: Plan,
    pub(super) trigger: Trigger,
    pub(super) slot: Option<i64>,
    /// Whether the entry's run before the slot failed, as its first attempt was told
    /// (`CRON_NOTIFY=change` reads the slot's verdict against it, not the attempts').
    pub(super) previous_failed: Option<bool>,
    /// When this attempt is to start (epoch ms).
    pub(super) at_ms: i64,
}

/// The entry's `CRON_ID`, if it has one.
pub(in crate::daemon) fn name_of(job: &JobSpec) -> Option<&[u8]> {
    job.env().get(b"CRON_ID")
}

/// One entry as its id is made of: schedule, own zone, job, `@every` interval.
pub(super) type Named<'a> = (&'a Schedule, Option<&'a Zone>, &'a JobSpec, Option<u32>);

/// A hash of the schedule and the command of an entry: equal for identical entries (which
/// have the same user, zone, interval and name too), and fast: a word at a time.
pub(super) fn quick_hash(schedule: &Schedule, command: &[u8]) -> u64 {
    let mix = |h: u64, v: u64| (h.rotate_left(5) ^ v).wrapping_mul(0x517c_c1b7_2722_0a95);
    let mut h = command.len() as u64;
    for field in Field::ALL {
        h = mix(h, schedule.bits(field));
    }
    for chunk in command.chunks(8) {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        h = mix(h, u64::from_le_bytes(word));
    }
    h
}

/// The [`LocalIds::stem`] of an entry.
fn stem((schedule, zone, job, every_s): Named<'_>) -> u64 {
    let identity = Identity {
        schedule,
        zone: zone.map(Zone::name),
        user: job.user(),
        command: job.command(),
    };
    LocalIds::stem(&identity, every_s, &job.owner.tab, name_of(job))
}

impl Slots {
    /// The entries of one file, in the file's order, after its load: those identical to one
    /// above them get their ordinal, as `cronctl list` counts them. A cheap hash finds the
    /// candidates (the ids' hash is made only for entries that share it): a reload of a large
    /// file costs little more than a look at each entry.
    pub(super) fn name<'a>(
        &mut self,
        file: &[EntryId],
        quick: impl Fn(EntryId) -> u64,
        named: impl Fn(EntryId) -> Option<Named<'a>>,
    ) {
        if !self.ordinals.is_empty() {
            for id in file {
                self.ordinals.remove(id);
            }
        }
        let quick: Vec<u64> = file.iter().map(|&id| quick(id)).collect();
        let mut sorted = quick.clone();
        sorted.sort_unstable();
        let mut shared: Vec<u64> = sorted
            .windows(2)
            .filter(|pair| pair[0] == pair[1])
            .map(|pair| pair[0])
            .collect();
        if shared.is_empty() {
            return;
        }
        shared.dedup();
        // Rare: lines that may be identical. Their ids' hashes tell, in the file's order.
        let mut stems: Vec<(u64, usize, EntryId)> = file
            .iter()
            .zip(&quick)
            .enumerate()
            .filter(|(_, (_, h))| shared.binary_search(h).is_ok())
            .filter_map(|(at, (&id, _))| Some((stem(named(id)?), at, id)))
            .collect();
        stems.sort_unstable();
        for same in stems.chunk_by(|a, b| a.0 == b.0) {
            for (ordinal, &(_, _, id)) in same.iter().enumerate().skip(1) {
                self.ordinals.insert(id, ordinal as u32);
            }
        }
    }

    /// A file was loaded: its entries, in its order, are named when one of them first runs.
    pub(super) fn loaded(&mut self, tab: std::sync::Arc<str>, mut file: Vec<EntryId>) {
        file.shrink_to_fit();
        self.pending.insert(tab, file);
    }

    /// Counts the ordinals of the file `tab` if it was loaded since they were last counted.
    pub(super) fn name_pending(&mut self, tab: &str, cycle: &Cycle<JobSpec>) {
        let Some(file) = self.pending.remove(tab) else {
            return;
        };
        let quick = |id| {
            cycle.get(id).map_or(0, |(schedule, _, job, _)| {
                quick_hash(schedule, job.command())
            })
        };
        self.name(&file, quick, |id| named_in(cycle, Some(id)));
    }

    pub(super) fn forget(&mut self, id: EntryId) {
        self.ordinals.remove(&id);
        self.catch_ups.remove(&id);
        self.reruns.retain(|(e, _)| *e != id);
        let before = self.retries.len();
        self.retries.retain(|(e, _), _| *e != id);
        self.retries_changed |= self.retries.len() != before;
    }

    /// The run of `id` queued as due in `due` is a retry.
    pub(super) fn retrying(&mut self, id: EntryId, due: UtcMinute, retrying: Retrying) {
        self.retries.insert((id, due), retrying);
        self.retries_changed = true;
    }

    /// The retries queued, by entry and the minute their queued run names.
    pub(super) fn retries(&self) -> impl Iterator<Item = (EntryId, UtcMinute, &Retrying)> {
        self.retries.iter().map(|(&(e, due), r)| (e, due, r))
    }

    /// Whether the retries queued changed since [`Slots::retries_kept`] (or are to be written
    /// anew: [`Slots::retries_to_keep`]).
    pub(super) fn retries_changed(&self) -> bool {
        self.retries_changed
    }

    /// The retries queued are as the state file keeps them.
    pub(super) fn retries_kept(&mut self) {
        self.retries_changed = false;
    }

    /// The state file is to be written from the retries queued, changed or not.
    pub(super) fn retries_to_keep(&mut self) {
        self.retries_changed = true;
    }

    /// The retry the run of `entry` due in `due` is, if it is one.
    pub(super) fn retry_of(&self, entry: Option<EntryId>, due: UtcMinute) -> Option<Retrying> {
        self.retries.get(&(entry?, due)).copied()
    }

    /// The start of `id`'s run of `due` is a second attempt (`CRON_CLUSTER_RERUN=unknown`).
    pub(super) fn rerun(&mut self, id: EntryId, due: UtcMinute) {
        self.reruns.insert((id, due));
    }

    /// A run of `entry` due in `due` that did not start (its fork failed) and goes back in the
    /// queue: when it starts it is what it was, by its record's trigger and slot (`was`), a
    /// catch-up, a second attempt in a cluster, or `retrying`, the attempt of its slot.
    pub(super) fn put_back(
        &mut self,
        entry: Option<EntryId>,
        due: UtcMinute,
        (trigger, slot): (Trigger, Option<i64>),
        retrying: Option<Retrying>,
    ) {
        let Some(entry) = entry else {
            return;
        };
        match (retrying, trigger, slot) {
            (Some(retrying), _, _) => self.retrying(entry, due, retrying),
            (None, Trigger::Rerun, _) => self.rerun(entry, due),
            (None, Trigger::CatchUp, Some(slot)) => {
                self.catching_up(entry, UtcMinute::containing(slot))
            }
            _ => {}
        }
    }

    /// The next start of `id` makes up `missed`.
    pub(super) fn catching_up(&mut self, id: EntryId, missed: UtcMinute) {
        self.catch_ups.insert(id, missed);
    }

    /// The minute the next start of `id` makes up, if it is a catch-up.
    pub(super) fn catch_up_of(&self, id: EntryId) -> Option<UtcMinute> {
        self.catch_ups.get(&id).copied()
    }

    /// The id of an entry as `cronctl list` shows it (`named`: the entry as the scheduler
    /// has it; an `@reboot` line, which `list` does not show, has one made of its file, user
    /// and command).
    pub(super) fn id(
        &self,
        entry: Option<EntryId>,
        job: &JobSpec,
        named: Option<Named<'_>>,
    ) -> String {
        match (entry, named) {
            (Some(entry), Some(named)) => self.local_id(entry, named).to_string(),
            _ => {
                let parts = [b"reboot".as_slice(), job.owner.tab.as_bytes(), job.user()];
                let mut h = crate::hash::FNV_OFFSET;
                for part in parts.into_iter().chain([job.command()]) {
                    h = crate::hash::fnv1a(crate::hash::fnv1a(h, part), &[0]);
                }
                let digits = 4 * crate::cluster::entry_id::LOCAL_ID_DIGITS;
                LocalId(crate::hash::mix(h) >> (64 - digits)).to_string()
            }
        }
    }

    /// The id of a loaded entry as `cronctl list` shows it (`named`: the entry as the
    /// scheduler has it; its file's ordinals counted, [`Slots::name_pending`]).
    pub(super) fn local_id(&self, entry: EntryId, named: Named<'_>) -> LocalId {
        let ordinal = self.ordinals.get(&entry).copied().unwrap_or(0);
        LocalIds::with_ordinal(stem(named), ordinal)
    }

    /// What the record of a run starting now says of it: `manual` for `cronctl run`; a run
    /// without an entry is `@reboot`'s; an entry catching up fills the minute it makes up.
    pub(super) fn facts(
        &mut self,
        (entry, job, named): (Option<EntryId>, &JobSpec, Option<Named<'_>>),
        due: UtcMinute,
        manual: bool,
    ) -> RunFacts {
        let id = self.id(entry, job, named);
        let retried = entry
            .filter(|_| !manual)
            .and_then(|e| self.retries.remove(&(e, due)));
        self.retries_changed |= retried.is_some();
        let (trigger, slot): (Trigger, Option<i64>) = match (entry, retried) {
            (None, _) => (Trigger::Reboot, None),
            (Some(_), _) if manual => (Trigger::Manual, None),
            (Some(_), Some(r)) => (r.trigger, r.slot),
            (Some(e), None) if self.reruns.remove(&(e, due)) => {
                (Trigger::Rerun, Some(due.start_second()))
            }
            (Some(e), None) => match self.catch_ups.remove(&e) {
                Some(missed) => (Trigger::CatchUp, Some(missed.start_second())),
                None => (Trigger::Schedule, Some(due.start_second())),
            },
        };
        let claimed = slot.map(|_| due.start_second());
        RunFacts {
            id,
            trigger,
            slot,
            cluster: cluster_of(named, claimed),
            previous_failed: false,
            retry: retried.map(|r| r.plan),
            started_ms: 0,
        }
    }

    /// The outcome of a slot not started: `reason`, in `words`.
    pub(super) fn not_run(
        &self,
        (entry, job, named): (Option<EntryId>, &JobSpec, Option<Named<'_>>),
        (trigger, slot): (Trigger, Option<i64>),
        (reason, words): (Reason, String),
        now_ms: i64,
    ) -> Outcome {
        Outcome {
            entry: self.id(entry, job, named),
            place: job.entry(),
            user: String::from_utf8_lossy(job.user()).into_owned(),
            owner_uid: job.owner.uid.map(|u| u.0),
            command: String::from_utf8_lossy(job.command()).into_owned(),
            trigger,
            slot,
            // The history link gives the daemon's outcomes this host's name.
            host: String::new(),
            at_ms: now_ms,
            cluster: cluster_of(named, slot),
            attempt: None,
            result: Result::NotRun { reason, words },
        }
    }
}

/// A cluster entry's identity as its records carry it, with `claimed`, the minute its claim
/// names: `None` for a local entry, and for `@every` and `@reboot`, which always run locally.
fn cluster_of(named: Option<Named<'_>>, claimed: Option<i64>) -> Option<ClusterRun> {
    let (schedule, zone, job, every_s) = named?;
    if !job.env().policy().clustered || every_s.is_some() {
        return None;
    }
    let cluster = job.env().get(b"CRON_CLUSTER").unwrap_or_default();
    Some(ClusterRun {
        cluster: String::from_utf8_lossy(cluster).into_owned(),
        entry: entry_key(schedule, zone.map(Zone::name), job.user(), job.command()),
        minute: claimed,
    })
}

/// Entry `entry` as `cycle` has it, for its id.
pub(super) fn named_in(cycle: &Cycle<JobSpec>, entry: Option<EntryId>) -> Option<Named<'_>> {
    let id = entry?;
    let (schedule, zone, job, _) = cycle.get(id)?;
    Some((schedule, zone, job, cycle.every_seconds(id)))
}
