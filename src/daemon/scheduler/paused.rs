//! `cronctl pause ENTRY` (cronctl.8): the entries of this host whose scheduled runs are not
//! started, by the id `cronctl list` shows — which stays the same across reloads, restarts and
//! edits of other lines.
//!
//! The set is kept across restarts in `STATE_DIR/paused` (`--state-dir`, beside the
//! `CRON_MISSED=once` state file, read and written by the same rules: `missed`'s
//! [`read_state_file`] and [`write_state_file`]), rewritten atomically at each pause and
//! resume. It holds at most [`MAX_PAUSED`] ids; a file that is not trusted, not what the
//! daemon writes, or holds more is logged and ignored: then nothing is paused. An id whose
//! entry is gone stays in the set (it pauses nothing; the same line put back is paused
//! again) until root's `cronctl resume ID` names it whole, or until a pause finds the set
//! full: then the ids of entries no longer loaded go first, so that a user who paused
//! entries and removed them cannot keep others from pausing theirs (what one user holds is
//! bounded by the entries loaded for them).
//!
//! This file holds the set and its file's text; the scheduler decides which runs it holds back.

use std::collections::BTreeSet;
use std::path::Path;

use super::missed::{parse_records, read_state_file, write_state_file};
use crate::cluster::entry_id::{LOCAL_ID_DIGITS, LocalId};

/// The file's name in the state directory.
pub(in crate::daemon) const FILE: &str = "paused";

/// What the file starts with: a foreign or older file is not read as ours.
const MAGIC: &str = "crond-paused 1";

/// The most entries paused at once; a pause past it is refused.
pub(in crate::daemon) const MAX_PAUSED: usize = 100_000;

/// The largest file read: the magic line and [`MAX_PAUSED`] ids, one a line.
const MAX_BYTES: u64 = (MAGIC.len() + 1 + MAX_PAUSED * (LOCAL_ID_DIGITS + 1)) as u64;

/// Why a pause or a resume was not done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::daemon) enum Refused {
    /// [`MAX_PAUSED`] entries are paused already.
    Full,
    /// The state file could not be written: the set is as it was.
    Unwritten(String),
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::Full => write!(
                f,
                "{MAX_PAUSED} entries are paused already, the most there may be \
                 (cronctl resume one first)"
            ),
            Refused::Unwritten(why) => write!(
                f,
                "the pause could not be kept in the state file ({why}): nothing changed"
            ),
        }
    }
}

/// The file's text for `ids`: the magic line, then each id, one a line, in order.
pub(in crate::daemon) fn format(ids: &BTreeSet<LocalId>) -> String {
    let mut text = String::with_capacity(MAGIC.len() + 1 + ids.len() * (LOCAL_ID_DIGITS + 1));
    text.push_str(MAGIC);
    text.push('\n');
    for id in ids {
        text.push_str(&id.to_string());
        text.push('\n');
    }
    text
}

/// The ids a file's text holds; `Err` when it is not such a text, or holds more than
/// [`MAX_PAUSED`].
pub(in crate::daemon) fn parse(text: &str) -> Result<BTreeSet<LocalId>, String> {
    let ids = parse_records(
        text,
        (MAGIC, MAX_PAUSED),
        ("an entry's id", "ids"),
        LocalId::parse,
    )?;
    Ok(ids.into_iter().collect())
}

/// The ids the file in `dir` holds: `Ok(None)` when there is no file, `Err` with the reason
/// when there is one the daemon must not trust or can't read as its own.
pub(in crate::daemon) fn read(dir: &Path) -> Result<Option<BTreeSet<LocalId>>, String> {
    read_state_file(dir, FILE, MAX_BYTES)?
        .map(|text| parse(&text))
        .transpose()
}

/// Writes `ids` to the file in `dir` (made if it is missing), atomically.
pub(in crate::daemon) fn write(dir: &Path, ids: &BTreeSet<LocalId>) -> std::io::Result<()> {
    write_state_file(dir, FILE, format(ids).as_bytes())
}

/// The ids paused, as the scheduler keeps them.
#[derive(Debug, Default)]
pub(super) struct Paused {
    ids: BTreeSet<LocalId>,
}

impl Paused {
    pub(super) fn new(ids: BTreeSet<LocalId>) -> Paused {
        Paused { ids }
    }

    pub(super) fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    pub(super) fn contains(&self, id: LocalId) -> bool {
        self.ids.contains(&id)
    }

    /// Whether a pause of an id not in the set would be refused as it stands.
    pub(super) fn is_full(&self) -> bool {
        self.ids.len() >= MAX_PAUSED
    }

    /// Lets go of the ids that are not in `loaded` (entries removed while paused); the state
    /// file follows at the next change. Returns how many went.
    pub(super) fn forget_gone(&mut self, loaded: &BTreeSet<LocalId>) -> usize {
        let before = self.ids.len();
        self.ids.retain(|id| loaded.contains(id));
        before - self.ids.len()
    }

    /// `id` paused (`pause`) or resumed, kept by `keep` (the state file's writer) before it
    /// counts: `Ok(false)` when it was so already (nothing written).
    pub(super) fn set(
        &mut self,
        id: LocalId,
        pause: bool,
        keep: impl FnOnce(&BTreeSet<LocalId>) -> std::io::Result<()>,
    ) -> Result<bool, Refused> {
        if self.ids.contains(&id) == pause {
            return Ok(false);
        }
        if pause && self.ids.len() >= MAX_PAUSED {
            return Err(Refused::Full);
        }
        let mut ids = self.ids.clone();
        match pause {
            true => ids.insert(id),
            false => ids.remove(&id),
        };
        keep(&ids).map_err(|e| Refused::Unwritten(e.to_string()))?;
        self.ids = ids;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_lists_the_ids_and_reads_back_and_a_damaged_one_says_nothing() {
        let ids: BTreeSet<LocalId> = [LocalId(0xabc), LocalId(0x0123_4567_89ab)].into();
        let text = format(&ids);
        assert_eq!(text, "crond-paused 1\n000000000abc\n0123456789ab\n");
        assert_eq!(parse(&text), Ok(ids));
        assert_eq!(parse("crond-paused 1\n"), Ok(BTreeSet::new()));
        for bad in [
            "",
            "crond-paused 2\n000000000abc\n",
            "crond-paused 1\nabc\n",
            "crond-paused 1\n000000000abg\n",
            "crond-paused 1\n000000000abc \n",
            "crond-handled 1\n29410260\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_state_file_of_paused_ids_past_its_bound_is_refused_and_a_pause_past_it_too() {
        let dir = tempfile::tempdir().unwrap();
        let full: BTreeSet<LocalId> = (0..MAX_PAUSED as u64).map(LocalId).collect();
        write(dir.path(), &full).unwrap();
        assert_eq!(read(dir.path()).unwrap().map(|s| s.len()), Some(MAX_PAUSED));
        // One more id: the file is refused whole, and pauses nothing.
        let mut text = format(&full);
        text.push_str(&format!("{}\n", LocalId(MAX_PAUSED as u64)));
        std::fs::write(dir.path().join(FILE), &text).unwrap();
        let why = read(dir.path()).unwrap_err();
        assert!(
            why.starts_with("larger than") || why.contains("more than"),
            "{why}"
        );
        // The same bound on a pause: refused, the set and its file as they were.
        let mut paused = Paused::new(full);
        let written = std::cell::Cell::new(0);
        let keep = |_: &BTreeSet<LocalId>| {
            written.set(written.get() + 1);
            Ok(())
        };
        assert_eq!(
            paused.set(LocalId(u64::MAX >> 16), true, keep),
            Err(Refused::Full)
        );
        assert_eq!(written.get(), 0);
        // Ids of entries no longer loaded go when a pause needs room; the loaded stay.
        let loaded: BTreeSet<LocalId> = (0..MAX_PAUSED as u64 - 1).map(LocalId).collect();
        let mut pruned = Paused::new(paused.ids.clone());
        assert!(pruned.is_full());
        assert_eq!(pruned.forget_gone(&loaded), 1);
        assert!(!pruned.is_full());
        assert_eq!(pruned.set(LocalId(u64::MAX >> 16), true, keep), Ok(true));
        assert_eq!(written.get(), 1);
        // A resume makes room.
        written.set(0);
        assert_eq!(paused.set(LocalId(7), false, keep), Ok(true));
        assert_eq!(paused.set(LocalId(u64::MAX >> 16), true, keep), Ok(true));
        assert_eq!(written.get(), 2);
    }

    #[test]
    fn a_pause_that_can_not_be_kept_changes_nothing_and_one_done_already_writes_nothing() {
        let mut paused = Paused::default();
        let fail = |_: &BTreeSet<LocalId>| Err(std::io::Error::other("disk full"));
        assert_eq!(
            paused.set(LocalId(1), true, fail),
            Err(Refused::Unwritten("disk full".into()))
        );
        assert!(!paused.contains(LocalId(1)));
        let never = |_: &BTreeSet<LocalId>| -> std::io::Result<()> { panic!("written") };
        assert_eq!(paused.set(LocalId(1), false, never), Ok(false));
        assert_eq!(paused.set(LocalId(1), true, |_| Ok(())), Ok(true));
        assert_eq!(paused.set(LocalId(1), true, never), Ok(false));
        assert!(paused.contains(LocalId(1)));
    }

    #[test]
    fn a_paused_file_that_fails_the_trust_check_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let ids: BTreeSet<LocalId> = [LocalId(5)].into();
        write(dir.path(), &ids).unwrap();
        assert_eq!(read(dir.path()), Ok(Some(ids)));
        let path = dir.path().join(FILE);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let why = read(dir.path()).unwrap_err();
        assert!(why.contains("writable by others"), "{why}");
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &path).unwrap();
        assert_eq!(read(dir.path()), Err("a symlink".to_string()));
        assert_eq!(read(&dir.path().join("none")), Ok(None));
    }
}
