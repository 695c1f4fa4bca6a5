//! The daemon's bookkeeping of crontab files (sources): which are loaded, with their entries
//! and modification times, and which were refused and why. Pure: the sources owner
//! (`daemon/sources/`) opens and reads the files and tells this table what it found; the table answers the
//! questions the loop asks — which sources vanished, which changed since they were loaded (the
//! mtime check without inotify), which to look at again every minute, and whether a refusal is
//! worth a log line (only when its reason is new or changed, so a bad file is logged once, not
//! every minute).

use std::collections::{BTreeMap, BTreeSet};

use crate::crontab::Diagnostic;
use crate::database::SourceKey;
use crate::log::Level;
use crate::timeline::EntryId;

/// A loaded source.
#[derive(Debug, Default, Clone)]
pub(in crate::daemon) struct Loaded {
    /// The file's entries in the cycle, in its order (a reload computes the keys it finds them
    /// by, `daemon::reuse`: kept, they would cost 8 bytes an entry for a moment's use).
    pub(in crate::daemon) entries: EntryList,
    pub(in crate::daemon) mtime_ns: i128,
    /// The lines the parser could not load, and the count of those past them.
    pub(in crate::daemon) bad_lines: BadLines,
}

/// The first lines of a loaded file that did not load (`cronctl list` shows them as "not
/// loaded"), at most [`MAX_BAD_LINES`]; the others counted.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(in crate::daemon) struct BadLines {
    pub(in crate::daemon) first: Vec<Diagnostic>,
    pub(in crate::daemon) more: usize,
}

/// The most bad lines of one file kept for `cronctl list`.
pub(in crate::daemon) const MAX_BAD_LINES: usize = 10;

impl BadLines {
    pub(in crate::daemon) fn of(errors: &[Diagnostic]) -> BadLines {
        let first = errors.iter().take(MAX_BAD_LINES).cloned().collect();
        BadLines {
            first,
            more: errors.len().saturating_sub(MAX_BAD_LINES),
        }
    }
}

/// A file's entries in order, as runs of consecutive ids: a file's new entries take the
/// agenda's free places lowest first, in line order, so a file loaded whole is one run and an
/// edit adds a few (16 bytes each), instead of 8 bytes an entry.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(in crate::daemon) struct EntryList {
    /// (first id, how many): the run is `first`, `first + 1`, … (same generation, next place).
    runs: Vec<(EntryId, u32)>,
}

impl EntryList {
    pub(in crate::daemon) fn push(&mut self, id: EntryId) {
        if let Some((first, len)) = self.runs.last_mut()
            && first.0.checked_add(u64::from(*len)) == Some(id.0)
            && *len < u32::MAX
        {
            *len += 1;
            return;
        }
        self.runs.push((id, 1));
    }

    pub(in crate::daemon) fn iter(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.runs
            .iter()
            .flat_map(|&(first, len)| (0..u64::from(len)).map(move |i| EntryId(first.0 + i)))
    }

    pub(in crate::daemon) fn shrink_to_fit(&mut self) {
        self.runs.shrink_to_fit();
    }

    /// How many runs (what the list costs: 16 bytes each).
    #[cfg(test)]
    fn runs(&self) -> usize {
        self.runs.len()
    }
}

/// Why a source is not loaded, as logged: `(who) EVENT (detail)` at `level`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::daemon) struct Problem {
    pub(in crate::daemon) level: Level,
    pub(in crate::daemon) event: String,
    pub(in crate::daemon) detail: String,
}

#[derive(Debug, Default)]
pub(in crate::daemon) struct SourceTable {
    loaded: BTreeMap<SourceKey, Loaded>,
    /// Refused, orphaned or unreadable sources: looked at again every minute. With each, the
    /// second its problem was last logged.
    refused: BTreeMap<SourceKey, (Problem, i64)>,
}

/// The event of a user's crontab whose user passwd does not know (Debian's word).
pub(in crate::daemon) const ORPHAN: &str = "ORPHAN";

/// How often an orphaned crontab is logged again while it stays one, in seconds: once a day.
const ORPHAN_AGAIN_S: i64 = 24 * 3600;

impl SourceTable {
    /// Forgets a loaded source, returning what it had (its entries leave the agenda).
    pub(in crate::daemon) fn take(&mut self, key: &SourceKey) -> Option<Loaded> {
        self.loaded.remove(key)
    }

    /// The source loaded; any earlier refusal is over.
    pub(in crate::daemon) fn loaded(&mut self, key: SourceKey, loaded: Loaded) {
        self.refused.remove(&key);
        self.loaded.insert(key, loaded);
    }

    /// The file is gone; nothing to look at again.
    pub(in crate::daemon) fn missing(&mut self, key: &SourceKey) {
        self.refused.remove(key);
    }

    /// The source was refused for `problem` at second `now_s`. Returns whether to log it: yes
    /// the first time and whenever the reason changes, not while it stays the same, but for an
    /// orphaned crontab, said again once a day while it stays one.
    pub(in crate::daemon) fn refused(
        &mut self,
        key: &SourceKey,
        problem: Problem,
        now_s: i64,
    ) -> bool {
        if let Some((known, logged_s)) = self.refused.get(key)
            && *known == problem
            && (problem.event != ORPHAN || now_s.saturating_sub(*logged_s) < ORPHAN_AGAIN_S)
        {
            return false;
        }
        self.refused.insert(key.clone(), (problem, now_s));
        true
    }

    /// Whether the source is a user's crontab whose user passwd does not know (its entries are
    /// not loaded; it is looked at again every minute).
    pub(in crate::daemon) fn orphaned(&self, key: &SourceKey) -> bool {
        self.refused
            .get(key)
            .is_some_and(|(problem, _)| problem.event == ORPHAN)
    }

    /// Sources to look at again this minute (passwd may come back, a mode may be fixed).
    pub(in crate::daemon) fn to_recheck(&self) -> Vec<SourceKey> {
        self.refused.keys().cloned().collect()
    }

    pub(in crate::daemon) fn any_refused(&self) -> bool {
        !self.refused.is_empty()
    }

    /// The loaded sources with lines that did not load.
    pub(in crate::daemon) fn with_bad_lines(
        &self,
    ) -> impl Iterator<Item = (&SourceKey, &BadLines)> {
        self.loaded
            .iter()
            .filter(|(_, l)| !l.bad_lines.first.is_empty())
            .map(|(key, l)| (key, &l.bad_lines))
    }

    /// The refused sources and why.
    pub(in crate::daemon) fn refusals(&self) -> impl Iterator<Item = (&SourceKey, &Problem)> {
        self.refused
            .iter()
            .map(|(key, (problem, _))| (key, problem))
    }

    /// Known sources (loaded or refused) that are not among `present` any more.
    pub(in crate::daemon) fn gone(&self, present: &BTreeSet<SourceKey>) -> Vec<SourceKey> {
        self.loaded
            .keys()
            .chain(self.refused.keys())
            .filter(|k| !present.contains(k))
            .cloned()
            .collect()
    }

    /// Debian's check without inotify: of the sources present now, those to reload — a loaded
    /// one that vanished, a new one, or one whose mtime differs from the one loaded. Refused
    /// sources are left out (they are looked at every minute anyway). `mtime` reads a file's
    /// modification time (`None`: it can't be read).
    pub(in crate::daemon) fn changed(
        &self,
        present: &[SourceKey],
        mtime: impl Fn(&SourceKey) -> Option<i128>,
    ) -> Vec<SourceKey> {
        let here: BTreeSet<&SourceKey> = present.iter().collect();
        let mut changed: Vec<SourceKey> = self
            .loaded
            .keys()
            .filter(|k| !here.contains(k))
            .cloned()
            .collect();
        for key in present {
            let known = self.loaded.get(key).map(|s| s.mtime_ns);
            if known.is_none() && self.refused.contains_key(key) {
                continue;
            }
            if known.is_none() || known != mtime(key) {
                changed.push(key.clone());
            }
        }
        changed
    }

    /// Every loaded entry, file by file, in each file's order.
    pub(in crate::daemon) fn entries(&self) -> impl Iterator<Item = EntryId> + '_ {
        self.loaded.values().flat_map(|l| l.entries.iter())
    }

    /// The entries of one loaded file, in its order.
    pub(in crate::daemon) fn entries_of(
        &self,
        key: &SourceKey,
    ) -> impl Iterator<Item = EntryId> + '_ {
        self.loaded
            .get(key)
            .into_iter()
            .flat_map(|l| l.entries.iter())
    }

    /// How many sources are loaded.
    pub(in crate::daemon) fn len(&self) -> usize {
        self.loaded.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_files_bad_lines_are_kept_to_the_first_ten_and_the_rest_counted() {
        let d = |line| Diagnostic {
            line,
            column: 1,
            message: "bad".into(),
        };
        let errors: Vec<Diagnostic> = (1..=13).map(d).collect();
        let bad = BadLines::of(&errors);
        assert_eq!(bad.first.len(), MAX_BAD_LINES);
        assert_eq!((bad.first[9].line, bad.more), (10, 3));
        let mut s = SourceTable::default();
        let key = SourceKey::System;
        s.loaded(
            key.clone(),
            Loaded {
                bad_lines: bad,
                ..Loaded::default()
            },
        );
        assert_eq!(s.with_bad_lines().count(), 1);
        s.take(&key);
        assert_eq!(s.with_bad_lines().count(), 0, "gone with the file");
    }

    #[test]
    fn a_files_entries_are_kept_in_order_as_runs_of_consecutive_ids() {
        let generation = |g: u64, place: u64| EntryId((g << 32) | place);
        let ids = [
            generation(0, 0),
            generation(0, 1),
            generation(0, 2),
            // A place reused under a new generation: a run of its own.
            generation(1, 3),
            generation(0, 4),
            generation(0, 5),
            // Out of order (an old entry kept by an edit).
            generation(0, 1_000),
            generation(0, 7),
        ];
        let mut list = EntryList::default();
        for id in ids {
            list.push(id);
        }
        assert_eq!(list.iter().collect::<Vec<_>>(), ids);
        assert_eq!(list.runs(), 5);
    }

    fn user(name: &str) -> SourceKey {
        SourceKey::User(name.into())
    }

    fn problem(event: &str, detail: &str) -> Problem {
        Problem {
            level: Level::Warning,
            event: event.into(),
            detail: detail.into(),
        }
    }

    fn loaded(mtime_ns: i128) -> Loaded {
        let mut entries = EntryList::default();
        entries.push(EntryId(1));
        Loaded {
            entries,
            mtime_ns,
            bad_lines: BadLines::default(),
        }
    }

    #[test]
    fn a_refusal_is_logged_once_until_its_reason_changes_or_the_file_loads() {
        let mut s = SourceTable::default();
        let key = user("alice");
        assert!(s.refused(&key, problem("WRONG FILE OWNER", "crontabs/alice"), 0));
        assert!(!s.refused(&key, problem("WRONG FILE OWNER", "crontabs/alice"), 0));
        assert!(
            !s.refused(&key, problem("WRONG FILE OWNER", "crontabs/alice"), 1 << 30),
            "a file refused for its owner is not logged again however long it stays"
        );
        assert!(s.any_refused() && s.to_recheck() == [key.clone()]);
        assert!(s.refused(&key, problem("BAD FILE MODE", "crontabs/alice"), 0));
        s.loaded(key.clone(), loaded(5));
        assert!(!s.any_refused(), "a loaded file is not rechecked");
        assert!(
            s.refused(&key, problem("BAD FILE MODE", "crontabs/alice"), 0),
            "refused again after it loaded: a new episode, logged"
        );
        s.missing(&key);
        assert!(s.to_recheck().is_empty());
    }

    #[test]
    fn an_orphaned_crontab_is_logged_once_then_at_most_once_a_day_while_it_stays_one() {
        let mut s = SourceTable::default();
        let key = user("gone");
        let orphan = || problem(ORPHAN, "no passwd entry");
        let day = 24 * 3600;
        assert!(s.refused(&key, orphan(), 100));
        assert!(s.orphaned(&key));
        assert!(!s.refused(&key, orphan(), 160), "not every minute");
        assert!(!s.refused(&key, orphan(), 100 + day - 60));
        assert!(s.refused(&key, orphan(), 100 + day), "again after a day");
        assert!(!s.refused(&key, orphan(), 100 + day + 60));
        s.loaded(key.clone(), loaded(5));
        assert!(!s.orphaned(&key), "the user is back: loaded");
    }

    #[test]
    fn sources_loaded_or_refused_that_are_not_present_are_gone() {
        let mut s = SourceTable::default();
        s.loaded(user("a"), loaded(1));
        s.loaded(user("b"), loaded(1));
        s.refused(&user("c"), problem("ORPHAN", "no passwd entry"), 0);
        let present = BTreeSet::from([user("b")]);
        assert_eq!(s.gone(&present), [user("a"), user("c")]);
        let taken = s.take(&user("a")).expect("a was loaded");
        assert_eq!((taken.entries, taken.mtime_ns), (loaded(1).entries, 1));
        assert!(s.take(&user("a")).is_none());
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn the_mtime_check_reloads_new_vanished_and_modified_files_only() {
        let mut s = SourceTable::default();
        s.loaded(user("same"), loaded(10));
        s.loaded(user("touched"), loaded(10));
        s.loaded(user("vanished"), loaded(10));
        s.refused(&user("refused"), problem("BAD FILE MODE", "x"), 0);
        let present = [
            user("new"),
            user("refused"),
            user("same"),
            user("touched"),
            user("unreadable"),
        ];
        let mtime = |k: &SourceKey| match k {
            SourceKey::User(n) if n == "touched" => Some(11),
            SourceKey::User(n) if n == "unreadable" => None,
            _ => Some(10),
        };
        assert_eq!(
            s.changed(&present, mtime),
            [
                user("vanished"),
                user("new"),
                user("touched"),
                user("unreadable")
            ]
        );
    }
}
