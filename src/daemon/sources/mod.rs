//! The sources, one of the daemon's owners: the crontab files — which are loaded with which
//! entries, which were refused ([`SourceTable`]), the inotify watches, the local zone's file,
//! and the reuse of unchanged entries. It reads the crontabs through its [`Effects`] (the real
//! ones call `database`, which checks each file) and returns what the scheduler must do as a
//! [`Change`] per file; the reactor applies it to the scheduler and hands the new entries' ids
//! back ([`Sources::settle`]). It reads the scheduler's entries (to find the unchanged ones)
//! but never changes them.

mod install;
mod reuse;
mod source_table;
mod watch;
mod zone;

use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::Arc;

use super::effects::Effects;
use super::handoff::{Change, NewEntry};
use super::sources::install::{Owners, new_same, scaled_delay, warn_unknown_users};
use super::sources::reuse::Reusable;
use super::sources::source_table::{BadLines, EntryList, Loaded, ORPHAN, Problem, SourceTable};
use crate::control::NotLoaded;
use crate::crontab::packed;
use crate::crontab::{Crontab, Entry};
use crate::database::entries::{Commands, JobSpec};
use crate::database::{Outcome, Paths, Rules, SourceKey};
use crate::log::{Level, messages};
use crate::schedule::{When, Zone};
use crate::sys::fs::FileKind;
use crate::sys::inotify::Lost;
use crate::timeline::{Cycle, EntryId};
use crate::types::Uid;
use watch::Watches;

pub(super) struct Sources {
    paths: Paths,
    rules: Rules,
    table: SourceTable,
    /// `None`: no inotify; files are checked every minute.
    watches: Option<Watches>,
    /// The local zone's file, and its stamp when it was read last.
    localtime: PathBuf,
    zone_stamp: Option<zone::Stamp>,
    /// cronie's RANDOM_DELAY scale, in [0, 1), drawn once per daemon start.
    delay_factor: f64,
    /// A reload freed memory since the reactor last gave free memory back.
    freed: bool,
}

/// What is left of a reload once the scheduler has applied its [`Change`]: the file's
/// bookkeeping, finished with the new entries' ids by [`Sources::settle`].
pub(super) enum Pending {
    Loaded {
        key: SourceKey,
        loaded: Loaded,
        /// The file's entries in order: kept ones, and the new ones' turns.
        order: Order,
    },
    Missing(SourceKey),
    Refused(SourceKey, Problem),
}

/// A reloaded file's entries in order before the new ones have ids: runs of consecutive old
/// ids, and counts of new entries (whose ids the scheduler gives, in order). A file loaded
/// whole is one slot.
#[derive(Debug, Default)]
pub(super) struct Order(Vec<Slot>);

#[derive(Debug)]
enum Slot {
    /// Old entries `first`, `first + 1`, … (`len` of them).
    Old(EntryId, u32),
    /// So many new entries.
    New(u32),
}

impl Order {
    fn push_old(&mut self, id: EntryId) {
        if let Some(Slot::Old(first, len)) = self.0.last_mut()
            && first.0.checked_add(u64::from(*len)) == Some(id.0)
            && *len < u32::MAX
        {
            *len += 1;
            return;
        }
        self.0.push(Slot::Old(id, 1));
    }

    fn push_new(&mut self) {
        if let Some(Slot::New(len)) = self.0.last_mut()
            && *len < u32::MAX
        {
            *len += 1;
            return;
        }
        self.0.push(Slot::New(1));
    }
}

/// What inotify says changed.
#[derive(Debug, Default)]
pub(super) struct Noticed {
    /// The local zone, read again after its file changed.
    pub(super) zone: Option<Zone>,
    /// Events were lost: every source is to be loaded again ([`Sources::all`]).
    pub(super) everything: bool,
    /// The sources to reload.
    pub(super) sources: Vec<SourceKey>,
}

impl Sources {
    /// The sources of `paths`, none loaded yet, and the local zone read from `localtime` (UTC,
    /// logged, when it can't be).
    pub(super) fn new(
        paths: Paths,
        rules: Rules,
        localtime: PathBuf,
        delay_factor: f64,
        fx: &mut dyn Effects,
    ) -> (Sources, Zone) {
        let zone = zone::read(&localtime).unwrap_or_else(|e| {
            fx.error(messages::zone_unread_line(&e));
            Zone::utc()
        });
        fx.local_zone(&zone);
        let sources = Sources {
            paths,
            rules,
            table: SourceTable::default(),
            watches: None,
            zone_stamp: zone::stamp(&localtime),
            localtime,
            delay_factor,
            freed: false,
        };
        (sources, zone)
    }

    /// Sets inotify's watches up (or logs why the files are checked every minute).
    pub(super) fn watch(&mut self, no_inotify: bool, fx: &mut dyn Effects) {
        self.watches = Watches::set_up(no_inotify, &self.paths, &self.localtime, fx);
    }

    /// The inotify descriptor, for the poll.
    pub(super) fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.watches.as_ref().map(Watches::fd)
    }

    /// How many sources are loaded.
    pub(super) fn len(&self) -> usize {
        self.table.len()
    }

    /// Every loaded entry, file by file, in each file's order (for a snapshot of the entries:
    /// the scheduler tells each one's state).
    pub(super) fn entries(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.table.entries()
    }

    /// The entries of one loaded file, in the file's order (none when it is not loaded).
    pub(super) fn entries_of(&self, key: &SourceKey) -> impl Iterator<Item = EntryId> + '_ {
        self.table.entries_of(key)
    }

    /// Whether something must be looked at every minute: the files (no inotify, or refused
    /// files to recheck) or the zone file (inotify can't see every change of it: a rewrite of
    /// the file a chain of links leads to, or of one mounted over it).
    pub(super) fn looks_every_minute(&self) -> bool {
        self.watches.is_none() || self.table.any_refused() || self.zone_stamp.is_some()
    }

    /// Whether a reload freed memory since the last call.
    pub(super) fn take_freed(&mut self) -> bool {
        std::mem::take(&mut self.freed)
    }

    /// Every source to load: those present, after the known ones that vanished.
    pub(super) fn all(&mut self, fx: &mut dyn Effects) -> Vec<SourceKey> {
        let (keys, errors) = fx.list_sources(&self.paths, &self.rules);
        for (dir, e) in errors {
            fx.error(messages::unlisted_dir_line(&dir, &e));
        }
        let present = keys.iter().cloned().collect();
        let mut all = self.table.gone(&present);
        all.extend(keys);
        all
    }

    /// Debian's check without inotify (each minute): the sources that appeared, vanished or
    /// have a new mtime. Nothing with inotify.
    pub(super) fn changed_files(&self, fx: &mut dyn Effects) -> Vec<SourceKey> {
        if self.watches.is_some() {
            return Vec::new();
        }
        let (keys, _) = fx.list_sources(&self.paths, &self.rules);
        self.table
            .changed(&keys, |key| fx.mtime_ns(key, &self.paths))
    }

    /// The spool crontab `job` comes from: `None` for a system file's job and in `--crontab`
    /// mode.
    pub(super) fn spool_key(&self, job: &JobSpec) -> Option<SourceKey> {
        if !self.paths.given.is_empty() || job.owner.uid.is_none() {
            return None;
        }
        let name = std::os::unix::ffi::OsStrExt::from_bytes(job.user());
        Some(SourceKey::User(std::ffi::OsStr::to_os_string(name)))
    }

    /// Whether `key` is a user's crontab whose user passwd does not know (`ORPHAN`): its
    /// entries are not loaded, and it is looked at again every minute.
    pub(super) fn orphaned(&self, key: &SourceKey) -> bool {
        self.table.orphaned(key)
    }

    /// What did not load, for the control socket: each refused file (an orphaned crontab as
    /// "user unknown"), and each bad line of a loaded one, with who may see it.
    pub(super) fn not_loaded(&self) -> Vec<NotLoaded> {
        let mut out = Vec::new();
        for (key, problem) in self.table.refusals() {
            let reason = if problem.event == ORPHAN {
                format!("user unknown ({ORPHAN}: {})", problem.detail)
            } else {
                format!("{} ({})", problem.event, problem.detail)
            };
            out.push(self.not_loaded_of(key, None, reason, problem.event == ORPHAN));
        }
        for (key, bad) in self.table.with_bad_lines() {
            for d in &bad.first {
                let reason = format!("column {}: {}", d.column, d.message);
                out.push(self.not_loaded_of(key, Some(d.line), reason, false));
            }
            if bad.more > 0 {
                let reason = format!("and {} more lines not loaded", bad.more);
                out.push(self.not_loaded_of(key, None, reason, false));
            }
        }
        out
    }

    fn not_loaded_of(
        &self,
        key: &SourceKey,
        line: Option<u32>,
        reason: String,
        orphan: bool,
    ) -> NotLoaded {
        let (name, uid) = match key {
            SourceKey::User(name) => (Some(name.as_bytes().to_vec()), None),
            SourceKey::Given { user, uid, .. } => (Some(user.as_bytes().to_vec()), Some(uid.0)),
            SourceKey::System | SourceKey::CronD(_) => (None, None),
        };
        NotLoaded {
            tab: key.tab_name(&self.paths),
            line,
            user: name,
            checked_uid: uid,
            reason,
            orphan,
        }
    }

    /// The refused sources, looked at again each minute (passwd may come back, a mode may be
    /// fixed).
    pub(super) fn to_recheck(&self) -> Vec<SourceKey> {
        self.table.to_recheck()
    }

    /// Reads the local zone again if its file changed (every minute, and on inotify's word):
    /// the new zone, for the scheduler.
    pub(super) fn recheck_zone(&mut self, fx: &mut dyn Effects) -> Option<Zone> {
        let stamp = zone::stamp(&self.localtime);
        if stamp == self.zone_stamp {
            return None;
        }
        self.zone_stamp = stamp;
        match zone::read(&self.localtime) {
            Ok(zone) => {
                fx.info(messages::zone_changed_line(zone.name()));
                fx.local_zone(&zone);
                Some(zone)
            }
            Err(e) => {
                fx.error(messages::zone_kept_line(&e));
                None
            }
        }
    }

    /// What inotify's queued events concern; `None` when it could not be read (logged).
    pub(super) fn on_inotify(&mut self, fx: &mut dyn Effects) -> Option<Noticed> {
        let events = match self.watches.as_ref().map(Watches::read)? {
            Ok(events) => events,
            Err(e) => {
                fx.error(messages::inotify_read_line(&e));
                return None;
            }
        };
        let paths = &self.paths;
        let changed = watch::sort(events, &self.rules, |key| created_complete(paths, key));
        let mut noticed = Noticed::default();
        if changed.zone {
            noticed.zone = self.recheck_zone(fx);
        }
        if let Some(lost) = changed.rescan {
            let why = match lost {
                Lost::Watch => "lost a watch",
                Lost::Overflow => "inotify queue overflowed",
            };
            fx.info(messages::rescan_line(why));
            self.watches = None;
            noticed.everything = true;
        }
        noticed.sources = changed.sources.into_iter().collect();
        Some(noticed)
    }

    /// Reads one source again: what the scheduler must change (`entries`: its entries now, to
    /// find the unchanged ones among), and what [`Sources::settle`] finishes after.
    pub(super) fn reload(
        &mut self,
        key: &SourceKey,
        announce: Announce,
        entries: &Cycle<JobSpec>,
        fx: &mut dyn Effects,
    ) -> (Change, Pending) {
        let who = key.who();
        let tab = key.tab_name(&self.paths);
        let (old, old_mtime_ns) = self.take_old(key);
        let outcome = fx.load(key, &self.paths, &self.rules);
        let mut reusable = Reusable::index(old.iter().copied());
        let mut change = Change {
            who: who.clone(),
            tab: tab.clone(),
            reset: old,
            ..Change::default()
        };
        let pending = match outcome {
            Outcome::Loaded {
                crontab,
                owner_uid,
                mtime_ns,
                target,
            } => {
                if let Some(watches) = &mut self.watches {
                    watches.follow(key, target.as_deref(), fx);
                }
                let said = match announce {
                    Announce::Never => false,
                    // As Debian's: RELOAD when the file's time changed. A second look at an
                    // unchanged file (two events of one write) reloads it all the same,
                    // silently.
                    Announce::IfChanged => old_mtime_ns != Some(mtime_ns),
                    Announce::Always => true,
                };
                if self.table.orphaned(key) {
                    // Its user is in passwd again: one line says so instead of RELOAD.
                    fx.info(messages::user_back_line(&who, &tab, owner_uid));
                } else if said {
                    fx.info(messages::reload_line(&who, &tab));
                }
                self.freed = true;
                let file = File {
                    key,
                    owner_uid,
                    mtime_ns,
                };
                self.install(&file, *crontab, &mut reusable, entries, &mut change, fx)
            }
            Outcome::Missing => Pending::Missing(key.clone()),
            Outcome::Refused(refusal, detail) => {
                refused(key, Level::Warning, refusal.to_string(), detail)
            }
            Outcome::RefusedOnTheWay(found) => {
                let detail = found.detail(&tab);
                refused(key, Level::Warning, found.refusal.to_string(), detail)
            }
            // Rechecked every minute: passwd may come back (LDAP).
            Outcome::Orphan => refused(key, Level::Info, ORPHAN, "no passwd entry".into()),
            Outcome::Failed(e) => {
                refused(key, Level::Error, "ERROR", format!("can't read {tab}: {e}"))
            }
        };
        change.remove = reusable.unclaimed().collect();
        (change, pending)
    }

    /// After the scheduler applied a reload's change at second `now_s`: the file's entries
    /// recorded (`added`: the ids of the new ones, in order), or its refusal logged (once until
    /// its reason changes; an orphaned crontab once a day).
    pub(super) fn settle(
        &mut self,
        pending: Pending,
        added: &[EntryId],
        now_s: i64,
        fx: &mut dyn Effects,
    ) {
        match pending {
            Pending::Loaded {
                key,
                mut loaded,
                order,
            } => {
                let mut added = added.iter().copied();
                for slot in order.0 {
                    match slot {
                        Slot::Old(first, len) => (0..u64::from(len))
                            .for_each(|i| loaded.entries.push(EntryId(first.0 + i))),
                        Slot::New(len) => added
                            .by_ref()
                            .take(len as usize)
                            .for_each(|id| loaded.entries.push(id)),
                    }
                }
                loaded.entries.shrink_to_fit();
                self.table.loaded(key, loaded);
            }
            Pending::Missing(key) => self.table.missing(&key),
            Pending::Refused(key, problem) => {
                if self.table.refused(&key, problem.clone(), now_s) {
                    let line = messages::refused_line(&key.who(), problem.event, problem.detail);
                    fx.log(problem.level, line);
                }
            }
        }
    }

    /// Takes a source's entries out of the table, for a reload: its entries and the file's
    /// modification time then.
    fn take_old(&mut self, key: &SourceKey) -> (Vec<EntryId>, Option<i128>) {
        let (old, mtime_ns) = match self.table.take(key) {
            Some(old) => (old.entries.iter().collect::<Vec<_>>(), Some(old.mtime_ns)),
            None => (Vec::new(), None),
        };
        // Memory is given back after a reload that replaced or dropped entries, not after the
        // minute's look at a file that stays refused.
        self.freed |= !old.is_empty();
        (old, mtime_ns)
    }

    /// Logs a loaded file's diagnostics and says which of its entries are new, which old ones
    /// stay (`old`: claimed by an identical new entry).
    fn install(
        &mut self,
        file: &File<'_>,
        mut crontab: Crontab,
        old: &mut Reusable,
        entries: &Cycle<JobSpec>,
        change: &mut Change,
        fx: &mut dyn Effects,
    ) -> Pending {
        self.log_diagnostics(file.key, &mut crontab, fx);
        let bad_lines = BadLines::of(&crontab.errors);
        if old.is_empty() {
            // A first load: every entry is new.
            change.add.reserve_exact(crontab.entries.len());
        }
        let mut order = Order::default();
        // The parser's packed text becomes the owners' (one allocation, no command copied).
        let (parsed, spans, text) = crontab.into_packed();
        let commands: Commands = Arc::new(text.into_boxed_slice());
        let tab: Arc<str> = file.key.tab_name(&self.paths).into();
        let mut owners = Owners::new(tab, Arc::clone(&commands), file.owner_uid);
        // The user of the last entry given an owner: the parser gives consecutive entries of
        // one user one allocation of the name, so most are told the same without reading it.
        let mut last_user: Option<&Arc<[u8]>> = None;
        for (entry, span) in parsed.iter().zip(spans) {
            let (user, same_user) = match (file.key.owner_name(), &entry.user) {
                (Some(owner), _) => (owner, true),
                (None, Some(user)) => {
                    let same = last_user.is_some_and(|last| Arc::ptr_eq(last, user));
                    last_user = Some(user);
                    (&user[..], same)
                }
                (None, None) => continue,
            };
            let owner = owners.of(user, same_user, entry.quiet, &entry.env);
            let job = JobSpec {
                owner,
                command: span,
            };
            let delay = scaled_delay(entry.random_delay, self.delay_factor);
            if let When::Periodic(schedule) = &entry.when
                && !old.is_empty()
            {
                let command = packed::command(&commands, span);
                let same = new_same(entry, command, schedule, user, file.owner_uid, delay);
                // The old entry identical to the new one keeps its place; its job now points
                // into the new text, so the old text's memory goes.
                if let Some(id) = old.claim(entries, &same) {
                    change.rebind.push((id, job));
                    order.push_old(id);
                    continue;
                }
            }
            add(entry, job, delay, change, &mut order);
        }
        Pending::Loaded {
            key: file.key.clone(),
            loaded: Loaded {
                entries: EntryList::default(),
                mtime_ns: file.mtime_ns,
                bad_lines,
            },
            order,
        }
    }

    /// Logs what the parser found wrong in a loaded file (and, in a system file, the users
    /// passwd doesn't know).
    fn log_diagnostics(&self, key: &SourceKey, crontab: &mut Crontab, fx: &mut dyn Effects) {
        let path = key.path(&self.paths).display().to_string();
        let who = key.who();
        if key.owner_name().is_none() {
            warn_unknown_users(crontab);
        }
        for d in &crontab.errors {
            let line = messages::file_error_line(&who, d.in_file(&path).to_string());
            fx.log(Level::Error, line);
        }
        for d in &crontab.warnings {
            let line = messages::file_warning_line(&who, d.in_file(&path).to_string());
            fx.log(Level::Warning, line);
        }
        if let Some(more) = crontab.not_shown_line(&path) {
            fx.log(Level::Warning, messages::file_warning_line(&who, more));
        }
    }
}

/// A file not loaded, and why, as logged: `(who) EVENT (detail)` at `level`.
fn refused(key: &SourceKey, level: Level, event: impl Into<String>, detail: String) -> Pending {
    let problem = Problem {
        level,
        event: event.into(),
        detail,
    };
    Pending::Refused(key.clone(), problem)
}

/// A new entry: an @reboot job for the start, or an entry for the scheduler to add (its turn
/// in the file's order kept in `order`).
fn add(entry: &Entry, job: JobSpec, delay: u32, change: &mut Change, order: &mut Order) {
    match entry.when {
        When::Reboot => change.reboot.push(job),
        When::Every(seconds) => {
            change.add.push(NewEntry::Every { seconds, job });
            order.push_new();
        }
        When::Periodic(schedule) => {
            change.add.push(NewEntry::Periodic {
                schedule,
                zone: entry.zone.clone(),
                job,
                delay,
            });
            order.push_new();
        }
    }
}

/// Whether a reload that loads its file says so in the log (`(who) RELOAD (tab)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Announce {
    /// The start's first load.
    Never,
    /// An event or the minute's look: when the file's time changed since the last load.
    IfChanged,
    /// SIGHUP (`systemctl reload`): every file, as the admin asked for them all.
    Always,
}

/// The file a reload loaded.
struct File<'a> {
    key: &'a SourceKey,
    owner_uid: Option<Uid>,
    mtime_ns: i128,
}

/// Whether the file of a bare inotify create is already whole: a symlink or a hard link
/// (no close-write will follow). A file that can't be looked at counts as whole (the
/// reload will say what is wrong).
fn created_complete(paths: &Paths, key: &SourceKey) -> bool {
    crate::sys::fs::link_facts(&key.path(paths))
        .map(|f| f.kind != FileKind::Regular || f.links > 1)
        .unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::clock::{Clock, FakeClock};
    use crate::daemon::effects::{Found, Recorded};
    use crate::daemon::scheduler::Scheduler;
    use crate::trust::Refusal;

    /// Sources over a temporary directory (where the zone file is), their crontabs kept by the
    /// fake effects, a scheduler, and the directory (dropped with the test).
    fn set_up(fx: &mut Recorded) -> (Sources, Scheduler, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let paths = Paths {
            spool_dir: dir.path().join("spool"),
            system_crontab: dir.path().join("crontab"),
            cron_d: dir.path().join("cron.d"),
            given: Vec::new(),
        };
        let rules = Rules {
            permit_any_mode: false,
            lsb_names: false,
            seed: 0,
        };
        // No zone file: UTC, and a line that says so.
        let localtime = dir.path().join("localtime");
        let (sources, zone) = Sources::new(paths, rules, localtime, 0.0, fx);
        let clock = FakeClock::at("2026-11-27T10:00:30Z");
        let scheduler = Scheduler::new(clock.now(), zone, dir.path().join("state"));
        (sources, scheduler, dir)
    }

    /// /etc/crontab with `text`, changed last at `mtime_ns`.
    fn system_crontab(fx: &mut Recorded, text: &str, mtime_ns: i128) {
        fx.put(SourceKey::System, text, None, mtime_ns);
    }

    /// A reload as the reactor runs it after an event: (entries rebound, added, removed).
    fn reload(s: &mut Sources, sched: &mut Scheduler, fx: &mut Recorded) -> (usize, usize, usize) {
        reload_as(s, sched, Announce::IfChanged, fx)
    }

    fn reload_as(
        s: &mut Sources,
        sched: &mut Scheduler,
        announce: Announce,
        fx: &mut Recorded,
    ) -> (usize, usize, usize) {
        let (change, pending) = s.reload(&SourceKey::System, announce, sched.entries(), fx);
        let counts = (change.rebind.len(), change.add.len(), change.remove.len());
        let added = sched.apply(change, 0, fx);
        s.settle(pending, &added, 0, fx);
        counts
    }

    #[test]
    fn the_log_is_given_the_zone_read_at_start_and_each_zone_read_after_a_change() {
        let mut fx = Recorded::default();
        let (mut s, _sched, dir) = set_up(&mut fx);
        // No zone file: UTC for the schedule and for the log's stamps.
        assert_eq!(fx.zones, ["UTC"]);
        assert_eq!(s.recheck_zone(&mut fx), None);
        let link = dir.path().join("localtime");
        std::os::unix::fs::symlink("/usr/share/zoneinfo/America/New_York", &link).unwrap();
        let zone = s.recheck_zone(&mut fx).expect("the new zone");
        assert_eq!(zone.name(), "America/New_York");
        assert_eq!(fx.zones, ["UTC", "America/New_York"]);
        // A zone file that can't be read keeps the zone, and the log's.
        std::fs::remove_file(&link).unwrap();
        std::fs::write(&link, b"not tzif").unwrap();
        assert_eq!(s.recheck_zone(&mut fx), None);
        assert_eq!(fx.zones, ["UTC", "America/New_York"]);
    }

    #[test]
    fn an_edit_keeps_the_unchanged_entries_and_replaces_the_changed_one() {
        let mut fx = Recorded::default();
        let (mut s, mut sched, dir) = set_up(&mut fx);
        assert_eq!(fx.logged("; using UTC").len(), 1, "{:?}", fx.lines);
        system_crontab(&mut fx, "* * * * * root echo a\n* * * * * root echo b\n", 1);
        assert_eq!(s.all(&mut fx), [SourceKey::System]);
        assert_eq!(reload(&mut s, &mut sched, &mut fx), (0, 2, 0));
        assert_eq!((sched.len(), s.len()), (2, 1));
        assert_eq!(fx.logged("(*system*) RELOAD (").len(), 1, "{:?}", fx.lines);
        system_crontab(&mut fx, "* * * * * root echo a\n* * * * * root echo c\n", 2);
        assert_eq!(reload(&mut s, &mut sched, &mut fx), (1, 1, 1));
        assert_eq!((sched.len(), s.len()), (2, 1));
        // The snapshot a control socket lists: the file's order, each entry's state.
        let listed: Vec<String> = s
            .entries()
            .filter_map(|id| sched.entry_state(id))
            .map(|e| e.job.entry())
            .collect();
        let tab = dir.path().join("crontab");
        let tab = tab.display();
        assert_eq!(listed, [format!("{tab}:1"), format!("{tab}:2")]);
        // Without inotify, a look each minute: nothing changed since the reload.
        assert!(s.looks_every_minute());
        assert!(s.changed_files(&mut fx).is_empty());
        fx.crontabs.remove(&SourceKey::System);
        assert_eq!(s.changed_files(&mut fx), [SourceKey::System]);
        assert_eq!(reload(&mut s, &mut sched, &mut fx), (0, 0, 2));
        assert_eq!((sched.len(), s.len()), (0, 0));
    }

    #[test]
    fn a_second_look_at_an_unchanged_file_reloads_it_without_a_second_reload_line() {
        let mut fx = Recorded::default();
        let (mut s, mut sched, _dir) = set_up(&mut fx);
        system_crontab(&mut fx, "* * * * * root echo a\n", 1);
        let said = |fx: &Recorded| fx.logged("(*system*) RELOAD (").len();
        assert_eq!(reload(&mut s, &mut sched, &mut fx), (0, 1, 0));
        assert_eq!(said(&fx), 1, "{:?}", fx.lines);
        // One write seen twice (crontab(1) closing its file after the rename did that): the
        // file is read again, its entry kept, and nothing more is said.
        assert_eq!(reload(&mut s, &mut sched, &mut fx), (1, 0, 0));
        assert_eq!(said(&fx), 1, "{:?}", fx.lines);
        // SIGHUP asks for every file.
        let sighup = reload_as(&mut s, &mut sched, Announce::Always, &mut fx);
        assert_eq!(sighup, (1, 0, 0));
        assert_eq!(said(&fx), 2, "{:?}", fx.lines);
        // A new time (a `touch`, as Debian's cron sees it) is said again.
        system_crontab(&mut fx, "* * * * * root echo a\n", 2);
        assert_eq!(reload(&mut s, &mut sched, &mut fx), (1, 0, 0));
        assert_eq!(said(&fx), 3, "{:?}", fx.lines);
        // The start's load says nothing.
        fx.clear();
        reload_as(&mut s, &mut sched, Announce::Never, &mut fx);
        assert_eq!(said(&fx), 0, "{:?}", fx.lines);
    }

    #[test]
    fn a_refused_file_is_logged_once_and_looked_at_each_minute() {
        let mut fx = Recorded::default();
        let (mut s, mut sched, _dir) = set_up(&mut fx);
        system_crontab(&mut fx, "* * * * * root echo a\n", 1);
        assert_eq!(reload(&mut s, &mut sched, &mut fx), (0, 1, 0));
        // Made writable by others: refused by the trust check.
        let refused = Found {
            mtime_ns: 2,
            text: Err(Refusal::InsecureModeSystem),
        };
        fx.crontabs.insert(SourceKey::System, refused);
        fx.clear();
        assert_eq!(reload(&mut s, &mut sched, &mut fx), (0, 0, 1));
        assert_eq!(fx.lines.len(), 1, "{:?}", fx.lines);
        assert!(
            fx.lines[0]
                .1
                .starts_with("(*system*) INSECURE MODE (group/other writable) ("),
            "{:?}",
            fx.lines
        );
        assert_eq!(s.to_recheck(), [SourceKey::System]);
        assert_eq!(reload(&mut s, &mut sched, &mut fx), (0, 0, 0));
        assert_eq!(fx.lines.len(), 1, "the same reason is not logged again");
        system_crontab(&mut fx, "* * * * * root echo a\n", 3);
        assert_eq!(reload(&mut s, &mut sched, &mut fx), (0, 1, 0));
        assert!(s.to_recheck().is_empty());
    }
}
