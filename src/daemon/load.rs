//! Loading crontab files into the running daemon: every source at start-up and on SIGHUP, one
//! source when inotify names it, the changed ones each minute without inotify, and the refused
//! ones again each minute. The shell half of [`Sources`](super::sources::Sources): this file
//! opens and reads (through `database`), logs, and hands the entries to the cycle; what to
//! reload and when to log is decided by the table.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use super::event_loop::Daemon;
use super::reuse::{Reusable, Same};
use super::sources::{Loaded, Problem};
use crate::crontab::incremental::Fingerprint;
use crate::crontab::policy::Missed;
use crate::crontab::{Crontab, Entry, Env};
use crate::database::entries::{JobSpec, Owner, Span, pack_commands};
use crate::database::{self, Outcome, SourceKey};
use crate::log::{Level, printable};
use crate::schedule::{Schedule, When, Zone};
use crate::sys::fs::FileKind;
use crate::sys::user::{Uid, User};
use crate::timeline::EntryId;

/// RANDOM_DELAY minutes times the daemon's factor, in whole seconds.
fn scaled_delay(minutes: u32, factor: f64) -> u32 {
    (f64::from(minutes) * 60.0 * factor) as u32
}

impl Daemon {
    /// Loads every source (and drops the ones that vanished); returns the @reboot jobs found.
    pub(super) fn load_all(&mut self, announce: bool) -> Vec<JobSpec> {
        let (keys, errors) = database::list_sources(&self.paths, &self.rules);
        for (dir, e) in errors {
            self.log.error(
                "CRON",
                "ERROR",
                &format!("can't read {}: {e}", dir.display()),
            );
        }
        let present: BTreeSet<SourceKey> = keys.iter().cloned().collect();
        let gone = self.sources.gone(&present);
        let mut reboot = Vec::new();
        for key in gone.into_iter().chain(keys) {
            reboot.extend(self.reload(&key, announce));
        }
        reboot
    }

    /// Replaces one source's entries with what its file says now. Returns its @reboot jobs.
    pub(super) fn reload(&mut self, key: &SourceKey, announce: bool) -> Vec<JobSpec> {
        let who = key.who();
        let (old, previous, old_missed_once) = self.take_old(key);
        let previous = previous
            .as_ref()
            .map(|(fingerprint, uid)| (&**fingerprint, *uid));
        let outcome = self.load_against(key, previous, old.len());
        let (mut old, mut kept) = self.split_old(&outcome, old, old_missed_once);
        let tab = key.tab_name(&self.paths);
        let problem = match outcome {
            Outcome::Loaded {
                crontab,
                kept: _,
                fingerprint,
                owner_uid,
                mtime_ns,
                target,
            } => {
                if let Some(watches) = &mut self.watches {
                    watches.follow(key, target.as_deref(), &self.log);
                }
                if announce {
                    self.log.info(&who, "RELOAD", &tab);
                }
                self.freed = true;
                kept.fingerprint = fingerprint;
                let reboot = self.install(key, crontab, owner_uid, mtime_ns, &mut old, kept);
                self.retire(key, old);
                return reboot;
            }
            Outcome::Missing => {
                self.retire(key, old);
                self.sources.missing(key);
                return Vec::new();
            }
            Outcome::Refused(refusal) => Problem {
                level: Level::Warning,
                event: refusal.to_string(),
                detail: tab,
            },
            // Rechecked every minute: passwd may come back (LDAP).
            Outcome::Orphan => Problem {
                level: Level::Info,
                event: "ORPHAN".to_string(),
                detail: "no passwd entry".to_string(),
            },
            Outcome::Failed(e) => Problem {
                level: Level::Error,
                event: "ERROR".to_string(),
                detail: format!("can't read {tab}: {e}"),
            },
        };
        self.retire(key, old);
        if self.sources.refused(key, problem.clone()) {
            self.log
                .event(problem.level, &who, &problem.event, &problem.detail);
        }
        Vec::new()
    }

    /// Takes a source's entries out of the table, for a reload: its entries, the fingerprint
    /// its file was last loaded with, and how many of them have `CRON_MISSED=once`.
    fn take_old(&mut self, key: &SourceKey) -> (Vec<EntryId>, Option<OldFingerprint>, usize) {
        let (old, previous, old_missed_once) = match self.sources.take(key) {
            Some(old) => (
                old.entries.iter().collect::<Vec<_>>(),
                old.fingerprint,
                old.missed_once,
            ),
            None => (Vec::new(), None, 0),
        };
        // Memory is given back after a reload that replaced or dropped entries, not after the
        // minute's look at a file that stays refused.
        self.freed |= !old.is_empty();
        // What the first run after a load logs once (a HOME that can't be entered), the first
        // run after this one logs again.
        self.running.loaded_again(old.iter().copied());
        (old, previous, old_missed_once)
    }

    /// Loads the file, parsing only what changed since `previous` when it can; a whole parse
    /// when the fingerprint would keep more than the `old_len` entries the file has.
    fn load_against(
        &self,
        key: &SourceKey,
        previous: Option<(&Fingerprint, Option<Uid>)>,
        old_len: usize,
    ) -> Outcome {
        let outcome = database::load(key, &self.paths, &self.rules, previous);
        if let Outcome::Loaded {
            kept: Some((front, back)),
            ..
        } = &outcome
            && front + back > old_len
        {
            // The fingerprint counts entries this file no longer has in the cycle: never
            // expected, and a whole parse is always right.
            return database::load(key, &self.paths, &self.rules, None);
        }
        outcome
    }

    /// The old entries of the lines not parsed again stay as they are ([`Kept`]); the others
    /// wait to be claimed by an identical new entry ([`Reusable`]).
    fn split_old(
        &self,
        outcome: &Outcome,
        old: Vec<EntryId>,
        old_missed_once: usize,
    ) -> (Reusable, Kept) {
        match outcome {
            Outcome::Loaded {
                kept: Some((front, back)),
                ..
            } => {
                let (front, middle) = old.split_at(*front);
                let (middle, back) = middle.split_at(middle.len() - back);
                // The kept entries' CRON_MISSED=once count: the file's, less the middle's.
                let missed_once =
                    old_missed_once.saturating_sub(self.missed_once_among(middle.iter()));
                let kept = Kept {
                    front: front.to_vec(),
                    back: back.to_vec(),
                    missed_once,
                    fingerprint: None,
                };
                (Reusable::index(middle.to_vec()), kept)
            }
            _ => (Reusable::index(old), Kept::default()),
        }
    }

    /// Removes a file's old entries that its new text no longer has (all of them when the file
    /// is gone or refused); a run of theirs still waiting for its RANDOM_DELAY is cancelled.
    fn retire(&mut self, key: &SourceKey, old: Reusable) {
        let cancelled: usize = old
            .unclaimed()
            .map(|id| {
                self.metrics.forget(id);
                self.cycle.remove(id)
            })
            .sum();
        if cancelled > 0 {
            self.log.info(
                key.who(),
                "INFO",
                &format!(
                    "{cancelled} runs waiting for their RANDOM_DELAY cancelled: {} changed",
                    key.tab_name(&self.paths)
                ),
            );
        }
    }

    /// Logs a loaded file's diagnostics and puts its entries in the cycle, keeping each old
    /// entry that is still there unchanged (`old`).
    fn install(
        &mut self,
        key: &SourceKey,
        mut crontab: Crontab,
        owner_uid: Option<Uid>,
        mtime_ns: i128,
        old: &mut Reusable,
        kept: Kept,
    ) -> Vec<JobSpec> {
        self.log_diagnostics(key, &mut crontab);
        let mut loaded = Loaded {
            entries: Default::default(),
            mtime_ns,
            missed_once: kept.missed_once,
            fingerprint: kept.fingerprint.map(|f| (f, owner_uid)),
        };
        for &id in &kept.front {
            loaded.entries.push(id);
        }
        let mut reboot = Vec::new();
        let (commands, spans) = pack_commands(
            crontab
                .entries
                .iter()
                .map(|e| (e.line, e.schedule_text.as_slice(), e.command.as_slice())),
        );
        let tab: Arc<str> = key.tab_name(&self.paths).into();
        let mut owners = Owners::new(tab, commands, owner_uid);
        for (entry, span) in crontab.entries.into_iter().zip(spans) {
            let user = match (key.owner_name(), &entry.user) {
                (Some(owner), _) => owner,
                (None, Some(user)) => &user[..],
                (None, None) => continue,
            };
            let owner = owners.of(user, entry.quiet, &entry.env);
            let delay = scaled_delay(entry.random_delay, self.delay_factor);
            if let When::Periodic(schedule) = &entry.when {
                if entry.env.policy().missed == Missed::Once {
                    loaded.missed_once += 1;
                }
                let same = new_same(&entry, schedule, user, owner_uid, delay);
                if let Some(id) = self.reclaim(old, &same, &owner, span) {
                    loaded.entries.push(id);
                    continue;
                }
            }
            let spec = JobSpec {
                owner,
                command: span,
            };
            match entry.when {
                When::Reboot => reboot.push(spec),
                When::Every(seconds) => loaded.entries.push(self.add_every(seconds, spec)),
                When::Periodic(schedule) => {
                    let id = self.cycle.add(schedule, entry.zone, spec, delay);
                    loaded.entries.push(id);
                }
            }
        }
        for &id in &kept.back {
            loaded.entries.push(id);
        }
        loaded.entries.shrink_to_fit();
        self.sources.loaded(key.clone(), loaded);
        reboot
    }

    /// Logs what the parser found wrong in a loaded file (and, in a system file, the users
    /// passwd doesn't know).
    fn log_diagnostics(&mut self, key: &SourceKey, crontab: &mut Crontab) {
        let path = key.path(&self.paths).display().to_string();
        let who = key.who();
        if key.owner_name().is_none() {
            warn_unknown_users(crontab);
        }
        for d in &crontab.errors {
            self.log
                .event(Level::Error, &who, "ERROR", &d.in_file(&path).to_string());
        }
        for d in &crontab.warnings {
            self.log.event(
                Level::Warning,
                &who,
                "WARNING",
                &d.in_file(&path).to_string(),
            );
        }
        if let Some(more) = crontab.not_shown_line(&path) {
            self.log.event(Level::Warning, &who, "WARNING", &more);
        }
    }

    /// The old entry identical to the new one `same`, if there is one: it keeps its place; its
    /// job now points into the new text (`owner`, `span`), so the old text's memory goes.
    fn reclaim(
        &mut self,
        old: &mut Reusable,
        same: &Same<'_>,
        owner: &Arc<Owner>,
        span: Span,
    ) -> Option<EntryId> {
        let id = old.claim(&self.cycle, same)?;
        if let Some(job) = self.cycle.job_mut(id) {
            job.owner = Arc::clone(owner);
            job.command = span;
        }
        Some(id)
    }

    /// Puts a new `@every` entry in the cycle, its first run a whole number of periods after
    /// the daemon's base (read off the wall clock now).
    fn add_every(&mut self, seconds: u32, spec: JobSpec) -> EntryId {
        let now_ms = super::event_loop::wall_clock().as_millisecond();
        self.cycle.add_every(seconds, spec, now_ms)
    }

    /// How many of these entries are scheduled ones (not `@every`) with `CRON_MISSED=once`,
    /// as `install` counts them.
    fn missed_once_among<'a>(&self, ids: impl Iterator<Item = &'a EntryId>) -> usize {
        ids.filter(|&&id| {
            self.cycle.every_seconds(id).is_none()
                && self
                    .cycle
                    .get(id)
                    .is_some_and(|(_, _, job, _)| job.env().policy().missed == Missed::Once)
        })
        .count()
    }

    /// Debian's check without inotify: reloads what appeared, vanished or has a new mtime.
    pub(super) fn check_mtimes(&mut self) {
        let (keys, _) = database::list_sources(&self.paths, &self.rules);
        let changed = self
            .sources
            .changed(&keys, |key| database::mtime_ns(key, &self.paths));
        for key in changed {
            self.reload(&key, true);
        }
    }

    /// Whether the file of a bare inotify create is already whole: a symlink or a hard link
    /// (no close-write will follow). A file that can't be looked at counts as whole (the
    /// reload will say what is wrong).
    pub(super) fn created_complete(&self, key: &SourceKey) -> bool {
        crate::sys::fs::link_facts(&key.path(&self.paths))
            .map(|f| f.kind != FileKind::Regular || f.links > 1)
            .unwrap_or(true)
    }
}

/// What a reload keeps of a file's old entries without parsing their lines again
/// (`crontab::incremental`): the first and the last ones, in order; and what the next reload
/// parses against.
#[derive(Default)]
pub(super) struct Kept {
    front: Vec<EntryId>,
    back: Vec<EntryId>,
    /// How many of `front` and `back` have `CRON_MISSED=once`.
    missed_once: usize,
    fingerprint: Option<Box<Fingerprint>>,
}

/// A new scheduled entry's identity (run as `user`, the file checked for `uid`), for
/// [`Reusable::claim`].
fn new_same<'a>(
    entry: &'a Entry,
    schedule: &'a Schedule,
    user: &'a [u8],
    uid: Option<Uid>,
    delay: u32,
) -> Same<'a> {
    Same {
        schedule,
        zone: entry.zone.as_ref().map(Zone::name),
        delay,
        user,
        uid,
        command: &entry.command,
        quiet: entry.quiet,
        env: &entry.env,
    }
}

/// The owners of one file's entries, as `install` makes them: one per user named in the file (a
/// user crontab has one), cronie's `-` and run of entries under the same variables: its entries
/// share it. The environment is told by its allocation (the parser gives a run of entries one),
/// which the owner keeps alive.
struct Owners {
    tab: Arc<str>,
    commands: Arc<[u8]>,
    uid: Option<Uid>,
    made: HashMap<(Vec<u8>, bool, *const Env), Arc<Owner>>,
    last: Option<Arc<Owner>>,
}

impl Owners {
    fn new(tab: Arc<str>, commands: Arc<[u8]>, uid: Option<Uid>) -> Owners {
        Owners {
            tab,
            commands,
            uid,
            made: HashMap::new(),
            last: None,
        }
    }

    /// The owner of an entry of `user`, with `quiet` and `env`: made the first time.
    fn of(&mut self, user: &[u8], quiet: bool, env: &Arc<Env>) -> Arc<Owner> {
        // Consecutive entries are mostly the same user's: the last owner first.
        let last = self
            .last
            .as_ref()
            .filter(|o| o.user == user && o.quiet == quiet && Arc::ptr_eq(&o.env, env));
        let key = || (user.to_vec(), quiet, Arc::as_ptr(env));
        let owner = match last.or_else(|| self.made.get(&key())) {
            Some(owner) => Arc::clone(owner),
            None => {
                let owner = Arc::new(Owner {
                    user: user.to_vec(),
                    uid: self.uid,
                    tab: Arc::clone(&self.tab),
                    commands: Arc::clone(&self.commands),
                    quiet,
                    env: Arc::clone(env),
                });
                self.made.insert(key(), Arc::clone(&owner));
                owner
            }
        };
        self.last = Some(Arc::clone(&owner));
        owner
    }
}

/// What a source was last loaded with: the fingerprint and the owner's uid.
type OldFingerprint = (Box<Fingerprint>, Option<Uid>);

/// A system file's entries whose user passwd doesn't know: a warning at load, at the entry's
/// line (the entry stays: it runs once the user exists, and is refused with a line naming the
/// file until then). One lookup per name, however many entries share it.
fn warn_unknown_users(crontab: &mut Crontab) {
    let mut known: HashMap<Vec<u8>, bool> = HashMap::new();
    let mut unknown = Vec::new();
    // Consecutive entries are mostly the same user's: the last answer first.
    let mut last: Option<(&[u8], bool)> = None;
    for entry in &crontab.entries {
        let Some(user) = &entry.user else { continue };
        let exists = match last {
            Some((name, exists)) if name == user.as_slice() => exists,
            _ => match known.get(user.as_slice()) {
                Some(&exists) => exists,
                None => {
                    let exists = !matches!(User::resolve_name(user), Ok(None));
                    known.insert(user.clone(), exists);
                    exists
                }
            },
        };
        last = Some((user, exists));
        if !exists {
            unknown.push((entry.line, printable(user)));
        }
    }
    for (line, user) in unknown {
        crontab.warn(
            line,
            1,
            format!("no such user '{user}' (the entry runs once it exists)"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_delay_is_scaled_by_the_daemons_factor_in_whole_seconds() {
        assert_eq!(scaled_delay(0, 0.99), 0);
        assert_eq!(scaled_delay(10, 0.0), 0);
        assert_eq!(scaled_delay(10, 0.5), 300);
        assert_eq!(scaled_delay(1, 0.999_999), 59);
    }
}
