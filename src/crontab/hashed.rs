//! The seed of an entry's `H` fields (crontab.5 "Extensions"): a hash of what the entry's id
//! is made of (`cluster::entry_id::LocalIds`): its file, its user, its `CRON_TZ`, its time
//! fields and its command, or under `CRON_ID` its user, the name and the file; and its place
//! among the entries of the file that share all of those. The time fields count as written,
//! each run of blanks as one space, not as the values they give: those values are what the
//! seed chooses. Under `CRON_HASH=host` the host's seed is mixed in as well.
//!
//! So the values are the same at every load, on every host (but for `CRON_HASH=host`), and
//! whatever happens to the other lines of the file; two identical lines get values of their
//! own, as they get ids of their own.
//!
//! Pure.

use std::collections::HashMap;

use crate::hash::{FNV_OFFSET, fnv1a, mix};

/// What an entry's `H` seed is made of.
#[derive(Debug, Clone, Copy)]
pub(super) struct Parts<'a> {
    /// The file as crond's logs name it (`crontabs/alice`, `/etc/cron.d/php`).
    pub file: &'a str,
    /// The user field of a system file's line; empty in a user's crontab, whose file names
    /// its user.
    pub user: &'a [u8],
    /// The entry's `CRON_TZ`, `None` for the daemon's zone.
    pub zone: Option<&'a str>,
    /// The time fields as written.
    pub fields: &'a [u8],
    /// The command as written, `%` and all.
    pub command: &'a [u8],
    /// Its `CRON_ID`, which stands for its fields and command; `None` or empty when it has none.
    pub name: Option<&'a [u8]>,
}

/// FNV-1a fed in parts, each after its length, so that no two different lists of parts hash
/// the same input.
struct Fnv(u64);

impl Fnv {
    fn part(&mut self, bytes: &[u8]) {
        self.0 = fnv1a(self.0, &(bytes.len() as u64).to_le_bytes());
        self.0 = fnv1a(self.0, bytes);
    }
}

impl Parts<'_> {
    /// The hash of the parts: equal for entries that share them all.
    fn stem(&self) -> u64 {
        let mut h = Fnv(FNV_OFFSET);
        h.part(self.file.as_bytes());
        h.part(self.user);
        match self.name.filter(|n| !n.is_empty()) {
            Some(name) => {
                h.part(b"crond-hash-named-1");
                h.part(name);
            }
            None => {
                h.part(b"crond-hash-1");
                h.part(self.zone.unwrap_or("").as_bytes());
                let words = self.fields.split(|&b| b == b' ' || b == b'\t');
                for word in words.filter(|w| !w.is_empty()) {
                    h.part(word);
                }
                h.part(self.command);
            }
        }
        h.0
    }
}

/// Gives the `H` entries of one file, met in the file's order, their seeds: the first of
/// entries with the same [`Parts`] is ordinal 0, the next 1, and so on.
#[derive(Debug, Default)]
pub(super) struct HashSeeds {
    seen: HashMap<u64, u32>,
}

impl HashSeeds {
    /// The seed of the next `H` entry made of `parts`; `host`: the host's seed, under
    /// `CRON_HASH=host`.
    pub(super) fn next(&mut self, parts: &Parts<'_>, host: Option<u64>) -> u64 {
        let stem = parts.stem();
        let ordinal = self.seen.entry(stem).or_insert(0);
        let mut h = fnv1a(stem, &ordinal.to_le_bytes());
        *ordinal += 1;
        if let Some(host) = host {
            h = fnv1a(h, &host.to_le_bytes());
        }
        mix(h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts<'a>(fields: &'a [u8], command: &'a [u8]) -> Parts<'a> {
        Parts {
            file: "crontabs/alice",
            user: b"",
            zone: None,
            fields,
            command,
            name: None,
        }
    }

    #[test]
    fn each_part_the_ordinal_and_the_host_change_the_seed_and_blanks_do_not() {
        let base = parts(b"H H * * *", b"backup");
        let seed = HashSeeds::default().next(&base, None);
        // The same in every release: crontabs written today keep their times.
        assert_eq!(seed, 0x97d3_56f7_8c68_f5bc, "{seed:#x}");
        let fresh = |p: &Parts<'_>| HashSeeds::default().next(p, None);
        assert_eq!(fresh(&parts(b"H\tH  *  * *", b"backup")), seed);
        let changed = [
            parts(b"H H * * 1", b"backup"),
            parts(b"H H * * *", b"backup "),
            Parts {
                file: "crontabs/bob",
                ..base
            },
            Parts {
                user: b"root",
                ..base
            },
            Parts {
                zone: Some("Europe/Paris"),
                ..base
            },
            Parts {
                name: Some(b"backup"),
                ..base
            },
        ];
        for other in &changed {
            assert_ne!(fresh(other), seed, "{other:?}");
        }
        // A name stands for the fields and the command.
        let named = Parts {
            name: Some(b"backup"),
            ..base
        };
        let renamed = Parts {
            fields: b"H(0-7) H * * *",
            command: b"other",
            ..named
        };
        assert_eq!(fresh(&named), fresh(&renamed));
        // Identical entries are told apart by their order; the host is mixed in when asked.
        let mut seeds = HashSeeds::default();
        assert_eq!(seeds.next(&base, None), seed);
        assert_ne!(seeds.next(&base, None), seed);
        assert_ne!(HashSeeds::default().next(&base, Some(1)), seed);
        assert_ne!(
            HashSeeds::default().next(&base, Some(1)),
            HashSeeds::default().next(&base, Some(2))
        );
    }
}
