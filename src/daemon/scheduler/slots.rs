//! What the scheduler knows of each run for its record (`crate::history`): the entry's id as
//! `cronctl list` shows it, what made the run (its schedule, a catch-up, `cronctl run`,
//! `@reboot`) and the slot it fills; and the outcome of a slot it did not start.

use std::collections::HashMap;

use crate::cluster::entry_id::{Identity, LocalId, LocalIds};
use crate::history::{Outcome, Reason, Result, Trigger};
use crate::job::JobSpec;
use crate::job::record::RunFacts;
use crate::schedule::{Schedule, Zone};
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
}

/// The entry's `CRON_ID`, if it has one.
pub(in crate::daemon) fn name_of(job: &JobSpec) -> Option<&[u8]> {
    job.env().get(b"CRON_ID")
}

/// One entry as its id is made of: schedule, own zone, job, `@every` interval.
pub(super) type Named<'a> = (&'a Schedule, Option<&'a Zone>, &'a JobSpec, Option<u32>);

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
    /// above them get their ordinal, as `cronctl list` counts them.
    pub(super) fn name<'a>(&mut self, entries: impl Iterator<Item = (EntryId, Named<'a>)>) {
        let mut stems: Vec<(u64, usize, EntryId)> = entries
            .enumerate()
            .map(|(at, (id, named))| (stem(named), at, id))
            .collect();
        stems.sort_unstable();
        let mut ordinal = 0;
        for (i, &(stem, _, id)) in stems.iter().enumerate() {
            ordinal = match i > 0 && stems[i - 1].0 == stem {
                true => ordinal + 1,
                false => 0,
            };
            match ordinal {
                0 => self.ordinals.remove(&id),
                n => self.ordinals.insert(id, n),
            };
        }
    }

    pub(super) fn forget(&mut self, id: EntryId) {
        self.ordinals.remove(&id);
        self.catch_ups.remove(&id);
    }

    /// The next start of `id` makes up `missed`.
    pub(super) fn catching_up(&mut self, id: EntryId, missed: UtcMinute) {
        self.catch_ups.insert(id, missed);
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
            (Some(entry), Some(named)) => {
                let ordinal = self.ordinals.get(&entry).copied().unwrap_or(0);
                LocalIds::with_ordinal(stem(named), ordinal).to_string()
            }
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

    /// What the record of a run starting now says of it: `manual` for `cronctl run`; a run
    /// without an entry is `@reboot`'s; an entry catching up fills the minute it makes up.
    pub(super) fn facts(
        &mut self,
        (entry, job, named): (Option<EntryId>, &JobSpec, Option<Named<'_>>),
        due: UtcMinute,
        manual: bool,
    ) -> RunFacts {
        let id = self.id(entry, job, named);
        let (trigger, slot) = match entry {
            None => (Trigger::Reboot, None),
            Some(_) if manual => (Trigger::Manual, None),
            Some(e) => match self.catch_ups.remove(&e) {
                Some(missed) => (Trigger::CatchUp, Some(missed.start_second())),
                None => (Trigger::Schedule, Some(due.start_second())),
            },
        };
        RunFacts { id, trigger, slot }
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
            result: Result::NotRun { reason, words },
        }
    }
}

/// Entry `entry` as `cycle` has it, for its id.
pub(super) fn named_in(cycle: &Cycle<JobSpec>, entry: Option<EntryId>) -> Option<Named<'_>> {
    let id = entry?;
    let (schedule, zone, job, _) = cycle.get(id)?;
    Some((schedule, zone, job, cycle.every_seconds(id)))
}
