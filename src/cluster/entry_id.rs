//! An entry's identity across hosts (docs/cluster.md "Entry identity"): a 64-bit FNV-1a hash of
//! what makes the entry the entry — its schedule as parsed (the five fields' bits and which
//! began with `*`), its `CRON_TZ`, its user and its command as written (with the text after
//! `%`). Comments, blank lines, the order of lines, other entries and the spelling of a schedule
//! (`0-59/15` for `*/15`, `mon` for `1`) change nothing; a change of any of the four makes a new
//! entry with a history of its own.
//!
//! Pure.
//!
//! FNV is not collision-resistant, and needs not be: a claim is keyed by the cluster, the owner
//! (the user) and this hash together, so a user who crafts a collision can only collide with
//! their own entries.

use std::fmt;

use crate::hash::{FNV_OFFSET, fnv1a, mix};
use crate::schedule::{Field, Schedule};

/// An entry's identity: shown and stored as 16 lower-case hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EntryKey(pub u64);

/// FNV-1a, 64 bits ([`crate::hash`]), fed in parts.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(FNV_OFFSET)
    }

    fn eat(&mut self, bytes: &[u8]) {
        self.0 = fnv1a(self.0, bytes);
    }

    /// A length before the bytes, so that no two different sequences of parts hash the same
    /// input (`ab` + `c` and `a` + `bc`).
    fn part(&mut self, bytes: &[u8]) {
        self.eat(&(bytes.len() as u64).to_le_bytes());
        self.eat(bytes);
    }
}

/// What makes an entry the entry across hosts: the four parts [`entry_key`] hashes. The daemon's
/// "same entry" on one host (`daemon/sources/reuse.rs::Same`) is these parts and a few more, so two
/// entries the same there are always the same entry here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Identity<'a> {
    pub schedule: &'a Schedule,
    /// Its `CRON_TZ`, `None` for the daemon's zone.
    pub zone: Option<&'a str>,
    pub user: &'a [u8],
    /// As written, with the text after `%`.
    pub command: &'a [u8],
}

impl Identity<'_> {
    /// The hash of the parts: equal parts, equal keys.
    pub fn key(&self) -> EntryKey {
        let mut h = Fnv::new();
        h.part(b"crond-entry-1");
        for field in Field::ALL {
            h.eat(&self.schedule.bits(field).to_le_bytes());
            h.eat(&[u8::from(self.schedule.is_starred(field))]);
        }
        h.part(self.zone.unwrap_or("").as_bytes());
        h.part(self.user);
        h.part(self.command);
        EntryKey(h.0)
    }
}

/// The identity of the entry with `schedule` in `zone` (its `CRON_TZ`, `None` for the daemon's
/// zone) run as `user` with `command`: the key of its [`Identity`].
pub fn entry_key(schedule: &Schedule, zone: Option<&str>, user: &[u8], command: &[u8]) -> EntryKey {
    Identity {
        schedule,
        zone,
        user,
        command,
    }
    .key()
}

/// The weight of `host` for one run (the run of `entry` of `owner` in `cluster` at `minute`):
/// of the live hosts, the one of highest weight is meant to claim the run (rendezvous hashing).
/// Every host computes the same weights, so they agree on who claims what without a word;
/// runs spread evenly, per run and not per entry; and a host that leaves or joins moves only
/// its own share.
pub fn run_weight(host: &str, cluster: &str, owner: &[u8], entry: EntryKey, minute: i64) -> u64 {
    let mut h = Fnv::new();
    h.part(b"crond-share-1");
    h.part(host.as_bytes());
    h.part(cluster.as_bytes());
    h.part(owner);
    h.eat(&entry.0.to_le_bytes());
    h.eat(&minute.to_le_bytes());
    mix(h.0)
}

/// Hex digits of an entry's id on one host ([`LocalId`]): 48 bits. Among the 70,000 entries of
/// a large host, two share an id with a probability under 1 in 100,000 (n² / 2⁴⁹); a shared id
/// is only an ambiguity (`cronctl` then lists both), never a wrong run.
pub const LOCAL_ID_DIGITS: usize = 12;

/// An entry's id on this host, as `cronctl list` and `cronnext --id` show it: a hash of its
/// [`Identity`], the file it comes from (as logs name it: `crontabs/alice`, `/etc/cron.d/php`),
/// its `@every` interval, and its ordinal among the identical entries of that file. It stays
/// the same when other lines of the file change and when the same crontab is installed again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(pub u64);

impl fmt::Display for LocalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:0w$x}", self.0, w = LOCAL_ID_DIGITS)
    }
}

impl LocalId {
    /// The id [`Display`](fmt::Display) wrote as `text`: exactly [`LOCAL_ID_DIGITS`] hex
    /// digits, else `None`.
    pub fn parse(text: &str) -> Option<LocalId> {
        let digits = text.len() == LOCAL_ID_DIGITS && text.bytes().all(|b| b.is_ascii_hexdigit());
        digits
            .then(|| u64::from_str_radix(text, 16).ok().map(LocalId))
            .flatten()
    }
}

/// Gives the entries of files, met in each file's order, their [`LocalId`]s: the first of
/// identical entries of a file is ordinal 0, the next 1, and so on. The count starts again at
/// each new file.
#[derive(Debug, Default)]
pub struct LocalIds {
    file: String,
    seen: std::collections::HashMap<u64, u32>,
}

impl LocalIds {
    /// The id of the next entry of `file` that is `identity` (`every_s`: its `@every`
    /// interval, `None` for a schedule; `name`: its `CRON_ID`, which stands for its schedule
    /// and command, `None` or empty when it has none).
    pub fn next(
        &mut self,
        identity: &Identity<'_>,
        every_s: Option<u32>,
        file: &str,
        name: Option<&[u8]>,
    ) -> LocalId {
        if self.file != file {
            self.file = file.to_string();
            self.seen.clear();
        }
        let stem = LocalIds::stem(identity, every_s, file, name);
        let ordinal = self.seen.entry(stem).or_insert(0);
        let id = LocalIds::with_ordinal(stem, *ordinal);
        *ordinal += 1;
        id
    }

    /// What an entry's id is made of before its ordinal: equal for identical entries of a
    /// file (as [`LocalIds::next`] takes them).
    pub fn stem(
        identity: &Identity<'_>,
        every_s: Option<u32>,
        file: &str,
        name: Option<&[u8]>,
    ) -> u64 {
        let mut h = Fnv::new();
        match name.filter(|n| !n.is_empty()) {
            Some(name) => {
                h.part(b"crond-named-1");
                h.part(identity.user);
                h.part(name);
            }
            None => {
                h.part(b"crond-local-1");
                h.eat(&identity.key().0.to_le_bytes());
                h.eat(&every_s.map_or(0, |s| u64::from(s) + 1).to_le_bytes());
            }
        }
        h.part(file.as_bytes());
        h.0
    }

    /// The id of the entry with this [`LocalIds::stem`] and `ordinal` among the identical
    /// entries of its file (0: the first).
    pub fn with_ordinal(stem: u64, ordinal: u32) -> LocalId {
        let mut h = Fnv(stem);
        h.eat(&ordinal.to_le_bytes());
        LocalId(mix(h.0) >> (64 - 4 * LOCAL_ID_DIGITS))
    }
}

impl fmt::Display for EntryKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl std::str::FromStr for EntryKey {
    type Err = BadEntryKey;

    /// 16 hex digits, as [`Display`](fmt::Display) writes them.
    fn from_str(s: &str) -> Result<EntryKey, BadEntryKey> {
        if s.len() != 16 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(BadEntryKey(s.to_string()));
        }
        // 16 hex digits always fit.
        u64::from_str_radix(s, 16)
            .map(EntryKey)
            .map_err(|_| BadEntryKey(s.to_string()))
    }
}

/// A text that is not an entry id: says it, and what an id is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadEntryKey(pub String);

impl fmt::Display for BadEntryKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "'{}' is not an entry id (16 hex digits)",
            self.0.escape_debug()
        )
    }
}

impl std::error::Error for BadEntryKey {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schedule::{When, parse_expression};

    fn schedule(text: &str) -> Schedule {
        match parse_expression(text, 0).unwrap() {
            When::Periodic(s) => s,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn ids_and_weights_are_the_same_in_every_release() {
        // Entry ids are stored in the cluster database and shown to users, and every host must
        // weigh a run the same: these values must never change.
        let key = entry_key(
            &schedule("*/15 9-17 * * mon-fri"),
            Some("Europe/Paris"),
            b"alice",
            b"backup%now",
        );
        assert_eq!(key.to_string(), "678eb91cd78c8db4");
        assert_eq!(
            run_weight("host-a", "c", b"alice", key, 600),
            0x3dbf_4a59_1689_11e6
        );
    }

    #[test]
    fn the_spelling_of_a_schedule_does_not_change_the_entry() {
        let a = entry_key(
            &schedule("*/15 9-17 * * mon-fri"),
            None,
            b"alice",
            b"backup",
        );
        let b = entry_key(
            &schedule("0,15,30,45 9-17 * * 1-5"),
            None,
            b"alice",
            b"backup",
        );
        // `*/15` began with `*`, `0,15,30,45` did not: the DST rules treat them differently,
        // so they are different entries.
        assert_ne!(a, b);
        let c = entry_key(&schedule("*/15 9-17 * * 1-5"), None, b"alice", b"backup");
        assert_eq!(a, c);
    }

    #[test]
    fn schedule_zone_user_and_command_each_make_a_new_entry() {
        let base = entry_key(&schedule("0 5 * * *"), None, b"alice", b"backup");
        assert_ne!(
            base,
            entry_key(&schedule("0 6 * * *"), None, b"alice", b"backup")
        );
        assert_ne!(
            base,
            entry_key(
                &schedule("0 5 * * *"),
                Some("Europe/Paris"),
                b"alice",
                b"backup"
            )
        );
        assert_ne!(
            base,
            entry_key(&schedule("0 5 * * *"), None, b"bob", b"backup")
        );
        assert_ne!(
            base,
            entry_key(&schedule("0 5 * * *"), None, b"alice", b"backup ")
        );
        // The parts are length-prefixed: moving a byte from the user to the command changes it.
        assert_ne!(
            entry_key(&schedule("0 5 * * *"), None, b"ab", b"c"),
            entry_key(&schedule("0 5 * * *"), None, b"a", b"bc")
        );
    }

    #[test]
    fn local_ids_are_the_same_in_every_release_and_tell_identical_lines_apart() {
        let s = schedule("*/15 9-17 * * mon-fri");
        let backup = Identity {
            schedule: &s,
            zone: None,
            user: b"alice",
            command: b"backup",
        };
        let mut ids = LocalIds::default();
        let first = ids.next(&backup, None, "crontabs/alice", None);
        let second = ids.next(&backup, None, "crontabs/alice", None);
        assert_eq!(first.to_string(), "55a1449ee9d3");
        assert_eq!(first.to_string().len(), LOCAL_ID_DIGITS);
        assert_ne!(first, second);
        // Another line between them changes nothing; a new file starts the count again.
        let mut again = LocalIds::default();
        let other = Identity {
            command: b"other",
            ..backup
        };
        assert_eq!(again.next(&backup, None, "crontabs/alice", None), first);
        again.next(&other, None, "crontabs/alice", None);
        assert_eq!(again.next(&backup, None, "crontabs/alice", None), second);
        assert_eq!(
            again
                .next(&backup, None, "crontabs/bob", None)
                .to_string()
                .len(),
            12
        );
        assert_ne!(again.next(&backup, None, "crontabs/bob", None), second);
        // The file, the interval and the zone each make another id.
        let fresh = LocalIds::default;
        assert_ne!(
            fresh().next(&backup, None, "/etc/cron.d/alice", None),
            first
        );
        assert_ne!(
            fresh().next(&backup, Some(60), "crontabs/alice", None),
            first
        );
        let paris = Identity {
            zone: Some("Europe/Paris"),
            ..backup
        };
        assert_ne!(fresh().next(&paris, None, "crontabs/alice", None), first);
        // A name stands for the schedule and the command: an edit of either keeps the id.
        let named = fresh().next(&backup, None, "crontabs/alice", Some(b"backup"));
        assert_ne!(named, first);
        assert_eq!(
            fresh().next(&other, Some(60), "crontabs/alice", Some(b"backup")),
            named
        );
        assert_eq!(
            fresh().next(&backup, None, "crontabs/alice", Some(b"")),
            first
        );
        let mut two = LocalIds::default();
        let a = two.next(&backup, None, "crontabs/alice", Some(b"backup"));
        assert_ne!(two.next(&other, None, "crontabs/alice", Some(b"backup")), a);
    }

    #[test]
    fn the_hex_form_reads_back_and_nothing_else_does() {
        let key = entry_key(&schedule("0 5 * * *"), None, b"alice", b"backup");
        let text = key.to_string();
        assert_eq!(text.len(), 16);
        assert_eq!(text.parse::<EntryKey>(), Ok(key));
        assert!("123".parse::<EntryKey>().is_err());
        assert!("0123456789abcdeg".parse::<EntryKey>().is_err());
        assert!("+123456789abcdef".parse::<EntryKey>().is_err());
    }

    #[test]
    fn runs_spread_evenly_over_the_live_hosts_and_a_host_that_leaves_moves_only_its_own() {
        let meant = |hosts: &[&str], entry: u64, minute: i64| -> String {
            hosts
                .iter()
                .max_by_key(|h| run_weight(h, "c", b"root", EntryKey(entry), minute))
                .unwrap()
                .to_string()
        };
        let two = ["host-a", "host-b"];
        let three = ["host-a", "host-b", "host-c"];
        let (mut a, mut moved) = (0, 0);
        // 10,000 consecutive entry ids of one minute, as one large file gives.
        for entry in 0..10_000u64 {
            let id = entry_key(&schedule("* * * * *"), None, b"root", &entry.to_le_bytes()).0;
            if meant(&two, id, 600) == "host-a" {
                a += 1;
            }
            let of_three = meant(&three, id, 600);
            if of_three != "host-c" && of_three != meant(&two, id, 600) {
                moved += 1;
            }
        }
        assert!((4_500..=5_500).contains(&a), "host-a got {a} of 10,000");
        assert_eq!(
            moved, 0,
            "only host-c's share moves when it joins or leaves"
        );
        // One entry's runs spread over the minutes too.
        let per_minute = (0..1_000)
            .filter(|m| meant(&two, 42, m * 60) == "host-a")
            .count();
        assert!((400..=600).contains(&per_minute), "{per_minute}");
    }
}
