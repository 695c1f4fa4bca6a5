//! An edited crontab keeps the entries it still has: a reload matches each entry of the new
//! text with an unchanged entry of the old one and keeps that entry (its place in the agenda,
//! its runs waiting for RANDOM_DELAY); only what changed is removed and added. Changing one
//! line of a 100,000-line file then costs the parse, not 100,000 fire-time computations.
//!
//! Two entries are the same when everything that decides when and how they run is equal: their
//! identity in a cluster (`cluster::entry_id::Identity`: the schedule, the zone, the user and
//! the command), and besides it the scaled delay, the uid checked for the file, cronie's `-`,
//! and every variable of the environment. The comparison is exact; a hash only finds the
//! candidates.
//!
//! Pure: entries and the agenda in, the kept entries out; `daemon/sources/` does the reading.

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::cluster::entry_id::Identity;
use crate::crontab::Env;
use crate::job::JobSpec;
use crate::schedule::{Schedule, Zone};
use crate::timeline::{Cycle, EntryId, IdMap};
use crate::types::Uid;

/// An entry, as far as its identity goes: the parts of its cluster identity ([`identity`]:
/// `schedule`, `zone`, `user`, `command`) plus `delay`, `uid`, `quiet` and `env`. So two
/// entries that are the same here have the same `cluster::entry_id::entry_key` (not the
/// reverse: a new delay or environment makes a new entry here, the same one in a cluster).
///
/// [`identity`]: Same::identity
pub(in crate::daemon) struct Same<'a> {
    pub schedule: &'a Schedule,
    pub zone: Option<&'a str>,
    pub delay: u32,
    pub user: &'a [u8],
    pub uid: Option<Uid>,
    pub command: &'a [u8],
    pub quiet: bool,
    pub env: &'a Arc<Env>,
}

impl<'a> Same<'a> {
    /// The identity of an entry kept in the cycle.
    fn of(schedule: &'a Schedule, zone: Option<&'a Zone>, job: &'a JobSpec, delay: u32) -> Self {
        Same {
            schedule,
            zone: zone.map(Zone::name),
            delay,
            user: job.user(),
            uid: job.owner.uid,
            command: job.command(),
            quiet: job.quiet(),
            env: job.env(),
        }
    }

    /// The parts that make it the entry across hosts.
    pub(in crate::daemon) fn identity(&self) -> Identity<'a> {
        Identity {
            schedule: self.schedule,
            zone: self.zone,
            user: self.user,
            command: self.command,
        }
    }

    /// Equal in everything but the environment, which [`Envs::equal`] compares.
    fn equal_but_env(&self, other: &Same<'_>) -> bool {
        self.identity() == other.identity()
            && (self.delay, self.uid, self.quiet) == (other.delay, other.uid, other.quiet)
    }

    fn key(&self, envs: &mut Envs) -> u64 {
        let mut h = DefaultHasher::new();
        self.identity().hash(&mut h);
        (self.delay, self.uid.map(|u| u.0), self.quiet).hash(&mut h);
        envs.hash_of(self.env).hash(&mut h);
        h.finish()
    }
}

/// The last comparison and the last hash of environments: a file's consecutive entries mostly
/// share one, so most entries are answered without reading its variables. Each answer holds
/// the environments it is about, so they can't be freed while it is kept, and an environment
/// is told by its allocation ([`Arc::ptr_eq`]) only while that allocation is alive.
#[derive(Default)]
struct Envs {
    last_hash: Option<(Arc<Env>, u64)>,
    last_equal: Option<(Arc<Env>, Arc<Env>, bool)>,
}

impl Envs {
    /// Whether two environments hold the same variables: one allocation, or equal contents.
    fn equal(&mut self, a: &Arc<Env>, b: &Arc<Env>) -> bool {
        if Arc::ptr_eq(a, b) {
            return true;
        }
        if let Some((last_a, last_b, answer)) = &self.last_equal
            && Arc::ptr_eq(last_a, a)
            && Arc::ptr_eq(last_b, b)
        {
            return *answer;
        }
        let answer = **a == **b;
        self.last_equal = Some((Arc::clone(a), Arc::clone(b), answer));
        answer
    }

    /// A hash of the variables: equal environments get equal hashes.
    fn hash_of(&mut self, env: &Arc<Env>) -> u64 {
        if let Some((last, hash)) = &self.last_hash
            && Arc::ptr_eq(last, env)
        {
            return *hash;
        }
        let mut h = DefaultHasher::new();
        for pair in env.iter() {
            pair.hash(&mut h);
        }
        let hash = h.finish();
        self.last_hash = Some((Arc::clone(env), hash));
        hash
    }
}

/// A file's old entries, waiting to be claimed by the entries of its new text.
///
/// An edit keeps most lines where they were, so a new entry is looked for first in order: at
/// the old entry after the last one claimed, or a few further on (lines removed). One that is
/// not there (a new, changed or moved line) is looked for among all the old entries: by a
/// plain scan for the first few, then through an index of their keys, built once. Changing one
/// line of a 100,000-line file then hashes nothing.
pub(in crate::daemon) struct Reusable {
    /// The old entries in their file's order; `None` once claimed.
    order: Vec<Option<EntryId>>,
    /// Where the next new entry is looked for first.
    cursor: usize,
    /// Entries looked for beyond the window so far.
    scans: usize,
    /// Old entries not claimed yet.
    unclaimed: usize,
    /// The unclaimed old entries by key (positions in `order`), built at the first need.
    index: Option<IdMap<u64, Vec<usize>>>,
    envs: Envs,
}

/// How far past the cursor an entry is looked for in order (lines removed before it).
const WINDOW: usize = 8;

/// How many entries are looked for by scanning every old entry before the index is built.
const SCANS: usize = 8;

impl Reusable {
    /// The file's entries before the reload, in its order.
    pub(in crate::daemon) fn index(entries: impl IntoIterator<Item = EntryId>) -> Reusable {
        let order: Vec<Option<EntryId>> = entries.into_iter().map(Some).collect();
        Reusable {
            unclaimed: order.len(),
            order,
            cursor: 0,
            scans: 0,
            index: None,
            envs: Envs::default(),
        }
    }

    /// Whether there were no old entries (a first load).
    pub(in crate::daemon) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// An old entry identical to `new`, taken so that no other new entry gets it.
    pub(in crate::daemon) fn claim(
        &mut self,
        cycle: &Cycle<JobSpec>,
        new: &Same<'_>,
    ) -> Option<EntryId> {
        let found = self
            .in_order(cycle, new)
            .or_else(|| self.anywhere(cycle, new))?;
        self.cursor = found + 1;
        self.unclaimed -= 1;
        self.order[found].take()
    }

    /// Whether the old entry at `at` is unclaimed and identical to `new`.
    fn same_at(&mut self, cycle: &Cycle<JobSpec>, at: usize, new: &Same<'_>) -> bool {
        let Some(id) = self.order[at] else {
            return false;
        };
        cycle.get(id).is_some_and(|(schedule, zone, job, delay)| {
            let old = Same::of(schedule, zone, job, delay);
            old.equal_but_env(new) && self.envs.equal(old.env, new.env)
        })
    }

    /// At the cursor, or a few places on.
    fn in_order(&mut self, cycle: &Cycle<JobSpec>, new: &Same<'_>) -> Option<usize> {
        let end = (self.cursor + WINDOW).min(self.order.len());
        (self.cursor..end).find(|&at| self.same_at(cycle, at, new))
    }

    /// Anywhere: a scan for the first few, then the index.
    fn anywhere(&mut self, cycle: &Cycle<JobSpec>, new: &Same<'_>) -> Option<usize> {
        if self.unclaimed == 0 {
            // A new file, or every old entry taken: nothing to look for.
            return None;
        }
        if self.scans < SCANS {
            self.scans += 1;
            return (0..self.order.len()).find(|&at| self.same_at(cycle, at, new));
        }
        if self.index.is_none() {
            let mut index: IdMap<u64, Vec<usize>> = IdMap::default();
            for (at, id) in self.order.iter().enumerate() {
                let Some((schedule, zone, job, delay)) = id.and_then(|id| cycle.get(id)) else {
                    continue;
                };
                let key = Same::of(schedule, zone, job, delay).key(&mut self.envs);
                index.entry(key).or_default().push(at);
            }
            self.index = Some(index);
        }
        let key = new.key(&mut self.envs);
        let candidates = self.index.as_ref()?.get(&key)?.clone();
        candidates
            .into_iter()
            .find(|&at| self.same_at(cycle, at, new))
    }

    /// The old entries no new entry claimed: they leave the cycle.
    pub(in crate::daemon) fn unclaimed(self) -> impl Iterator<Item = EntryId> {
        self.order.into_iter().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::database::entries::Owner;
    use crate::schedule::{When, parse_expression};
    use crate::timeline::UtcMinute;
    use std::sync::Arc;

    fn schedule(text: &str) -> Schedule {
        match parse_expression(text, 0).unwrap() {
            When::Periodic(s) => s,
            other => unreachable!("{other}"),
        }
    }

    /// Adds `(expression, command)` entries as the daemon does.
    fn load(cycle: &mut Cycle<JobSpec>, env: &Arc<Env>, lines: &[(&str, &str)]) -> Vec<EntryId> {
        let (commands, spans) = crate::database::entries::pack_commands(
            lines
                .iter()
                .enumerate()
                .map(|(i, (expr, command))| (i as u32 + 1, expr.as_bytes(), command.as_bytes())),
        );
        let owner = Arc::new(Owner {
            user: b"alice".to_vec(),
            uid: Some(Uid(1000)),
            tab: "crontabs/alice".into(),
            commands,
            quiet: false,
            env: Arc::clone(env),
        });
        lines
            .iter()
            .zip(spans)
            .map(|((expr, _), command)| {
                let job = JobSpec {
                    owner: Arc::clone(&owner),
                    command,
                };
                cycle.add(schedule(expr), None, job, 0)
            })
            .collect()
    }

    fn same<'a>(schedule: &'a Schedule, command: &'a str, env: &'a Arc<Env>) -> Same<'a> {
        Same {
            schedule,
            zone: None,
            delay: 0,
            user: b"alice",
            uid: Some(Uid(1000)),
            command: command.as_bytes(),
            quiet: false,
            env,
        }
    }

    #[test]
    fn each_old_entry_is_claimed_once_by_an_identical_new_one() {
        let mut cycle = Cycle::new(UtcMinute(0), Zone::utc());
        let env = Arc::new(Env::default());
        let old = load(
            &mut cycle,
            &env,
            &[("0 1 * * *", "a"), ("0 1 * * *", "a"), ("0 2 * * *", "b")],
        );
        let ids = old.clone();
        let mut reusable = Reusable::index(old);
        // A new text's environment is another allocation with the same variables.
        let new_env = Arc::new(Env::default());
        let (one, two) = (schedule("0 1 * * *"), schedule("0 2 * * *"));
        let mut claim = |s: &Schedule, command: &str| {
            let entry = same(s, command, &new_env);
            reusable.claim(&cycle, &entry)
        };
        let first = claim(&one, "a").expect("the first 'a'");
        let second = claim(&one, "a").expect("the second 'a'");
        assert_ne!(first, second);
        assert!(ids[..2].contains(&first) && ids[..2].contains(&second));
        assert_eq!(claim(&one, "a"), None, "only two were there");
        // A changed line (its command, then its schedule) claims nothing.
        assert_eq!(claim(&two, "b2"), None);
        assert_eq!(claim(&one, "b"), None);
        let left: Vec<EntryId> = reusable.unclaimed().collect();
        assert_eq!(left, [ids[2]]);
    }

    #[test]
    fn lines_moved_removed_or_repeated_are_still_found_once_each() {
        let mut cycle = Cycle::new(UtcMinute(0), Zone::utc());
        let env = Arc::new(Env::default());
        let exprs: Vec<String> = (0..20).map(|h| format!("0 {h} * * *")).collect();
        let mut lines: Vec<(&str, &str)> = exprs.iter().map(|e| (e.as_str(), "job")).collect();
        lines.push(("0 1 * * *", "job")); // a second line like the second one
        let old = load(&mut cycle, &env, &lines);
        // The new text: reversed (every line moved: past the scans, the index finds them),
        // without the lines of hours 5 to 7.
        let schedules: Vec<Schedule> = lines.iter().map(|(e, _)| schedule(e)).collect();
        let mut reusable = Reusable::index(old.clone());
        let mut claimed = Vec::new();
        for (i, s) in schedules.iter().enumerate().rev() {
            if (5..8).contains(&i) {
                continue;
            }
            let id = reusable.claim(&cycle, &same(s, "job", &env));
            claimed.push(id.expect("an identical old entry"));
        }
        claimed.sort();
        claimed.dedup();
        assert_eq!(claimed.len(), 18, "each old entry claimed once");
        let left: Vec<EntryId> = reusable.unclaimed().collect();
        assert_eq!(left, old[5..8]);

        // In order, with lines removed between: up to seven at a time are within the window;
        // a longer jump is one scan, and the window follows from there.
        let mut reusable = Reusable::index(old.clone());
        for i in [0, 1, 2, 6, 7, 8, 15, 16] {
            assert_eq!(
                reusable.claim(&cycle, &same(&schedules[i], "job", &env)),
                Some(old[i])
            );
        }
        assert_eq!(reusable.scans, 0);
        let mut reusable = Reusable::index(old.clone());
        for i in [0, 1, 12, 13, 14] {
            assert_eq!(
                reusable.claim(&cycle, &same(&schedules[i], "job", &env)),
                Some(old[i])
            );
        }
        assert_eq!(
            reusable.scans, 1,
            "only the jump of ten lines was scanned for"
        );
        assert!(reusable.index.is_none());
    }

    #[test]
    fn a_changed_variable_makes_every_entry_below_it_new() {
        let mut cycle = Cycle::new(UtcMinute(0), Zone::utc());
        let env = Arc::new(Env::default()).with(b"MAILTO", b"alice");
        let old = load(&mut cycle, &env, &[("0 1 * * *", "a")]);
        let mut reusable = Reusable::index(old);
        let other = Arc::new(Env::default()).with(b"MAILTO", b"bob");
        let s = schedule("0 1 * * *");
        let entry = same(&s, "a", &other);
        assert_eq!(reusable.claim(&cycle, &entry), None);
        let same_again = Arc::new(Env::default()).with(b"MAILTO", b"alice");
        let entry = same(&s, "a", &same_again);
        assert!(reusable.claim(&cycle, &entry).is_some());
    }

    #[test]
    fn environments_made_after_others_were_freed_are_compared_by_their_variables() {
        let env = |mailto: &[u8]| Arc::new(Env::default()).with(b"MAILTO", mailto);
        let fresh_hash = |e: &Arc<Env>| Envs::default().hash_of(e);
        let mut envs = Envs::default();
        // Each round's environments are freed at its end; the next round's are made the same
        // way, in memory the allocator may hand out again, and hold other variables.
        for round in 0..20 {
            let (a, b) = if round % 2 == 0 {
                (env(b"alice"), env(b"bob"))
            } else {
                (env(b"bob"), env(b"bob"))
            };
            assert_eq!(envs.equal(&a, &b), round % 2 == 1, "round {round}");
            assert_eq!(envs.hash_of(&a), fresh_hash(&a), "round {round}");
        }
    }

    #[test]
    fn entries_the_same_here_are_the_same_entry_in_a_cluster() {
        use crate::cluster::entry_id::entry_key;
        let schedules = [
            schedule("*/15 * * * *"),
            schedule("0-59/15 * * * *"),
            schedule("0,15,30,45 * * * *"),
            schedule("0 5 * * mon"),
            schedule("0 5 * * 1"),
        ];
        let envs = [Arc::new(Env::default()), Arc::new(Env::default())];
        let mut entries = Vec::new();
        for schedule in &schedules {
            for zone in [None, Some("UTC"), Some("Europe/Paris")] {
                for user in [&b"alice"[..], b"bob"] {
                    for command in [&b"backup"[..], b"backup%now"] {
                        for (delay, uid, quiet) in [
                            (0, Some(Uid(1000)), false),
                            (60, Some(Uid(1000)), false),
                            (0, None, false),
                            (0, Some(Uid(1000)), true),
                        ] {
                            for env in &envs {
                                entries.push(Same {
                                    schedule,
                                    zone,
                                    delay,
                                    user,
                                    uid,
                                    command,
                                    quiet,
                                    env,
                                });
                            }
                        }
                    }
                }
            }
        }
        let mut compared = Envs::default();
        let key = |e: &Same<'_>| entry_key(e.schedule, e.zone, e.user, e.command);
        let (mut same, mut same_in_cluster_only) = (0, 0);
        for a in &entries {
            assert_eq!(a.identity().key(), key(a));
            for b in &entries {
                if a.equal_but_env(b) && compared.equal(a.env, b.env) {
                    same += 1;
                    assert_eq!(key(a), key(b));
                } else if key(a) == key(b) {
                    same_in_cluster_only += 1;
                }
            }
        }
        // Each entry with itself and its twin under the other (equal) environment, at least.
        assert!(same >= 2 * entries.len(), "{same}");
        assert!(same_in_cluster_only > 0);
    }
}
