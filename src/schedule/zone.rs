//! A time zone as the scheduler sees it: a name (for logs and `cronnext`) and jiff's zone rules,
//! read from the system tz database (`/usr/share/zoneinfo`, or `TZDIR`), so a tzdata update
//! applies without a rebuild.
//!
//! Pure, but for one read: [`Zone::get`] asks jiff's tz database, which reads a zone's file once
//! and keeps it (the core's one file access, so that the daemon, `cronnext` and crontab(1) resolve
//! a name alike; the local zone is read by the shell and passed in with [`Zone::new`]).

use std::fmt;
use std::sync::{Arc, OnceLock};

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// A named time zone. One pointer, cheap to clone (the rules are shared): every entry under a
/// `CRON_TZ` holds one.
#[derive(Clone)]
pub struct Zone(Arc<Rules>);

struct Rules {
    name: Box<str>,
    tz: TimeZone,
    /// Built on first use: a crontab may name the same zone thousands of times, and only the
    /// zones of entries that get scheduled need it.
    table: OnceLock<Table>,
}

/// The zone's offset changes from 1970 to 2200, read from jiff once when the zone is made:
/// `next_after` asks for offsets and transitions on every call, and a binary search here costs
/// a fraction of jiff's lookups (measured in benches/criterion). Outside the window, jiff answers.
/// A zone made before a tzdata update keeps the old rules until it is made again (the daemon
/// makes its zones again when it reloads).
#[derive(Debug)]
struct Table {
    /// The window `[lo, hi)` in Unix seconds.
    lo: i64,
    hi: i64,
    /// The offset in force at `lo`.
    initial: i64,
    /// Transition instants, ascending, and the offset after each.
    at: Vec<i64>,
    after: Vec<i64>,
}

/// 1970-01-01 and 2200-01-01.
const TABLE_WINDOW: (i64, i64) = (0, 7_258_118_400);

impl Table {
    fn build(tz: &TimeZone) -> Table {
        let (lo, hi) = TABLE_WINDOW;
        let start = Timestamp::from_second(lo).expect("1970 is in jiff's range");
        let mut table = Table {
            lo,
            hi,
            initial: i64::from(tz.to_offset(start).seconds()),
            at: Vec::new(),
            after: Vec::new(),
        };
        for tr in tz.following(start) {
            let at = tr.timestamp().as_second();
            if at >= hi {
                break;
            }
            table.at.push(at);
            table.after.push(i64::from(tr.offset().seconds()));
        }
        table
    }

    /// For an instant inside the window: the number of transitions at or before it.
    fn index(&self, second: i64) -> Option<usize> {
        (self.lo..self.hi)
            .contains(&second)
            .then(|| self.at.partition_point(|&t| t <= second))
    }

    /// The offset after the first `i` transitions.
    fn offset_after(&self, i: usize) -> i64 {
        if i == 0 {
            self.initial
        } else {
            self.after[i - 1]
        }
    }
}

fn jiff_offset_at(tz: &TimeZone, second: i64) -> i64 {
    match Timestamp::from_second(second) {
        Ok(ts) => i64::from(tz.to_offset(ts).seconds()),
        // Outside jiff's range (beyond year ±9999): keep the nearest known offset.
        Err(_) => {
            let edge = if second < 0 {
                Timestamp::MIN
            } else {
                Timestamp::MAX
            };
            i64::from(tz.to_offset(edge).seconds())
        }
    }
}

/// A zone name that the tz database does not know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneError {
    pub name: String,
    pub reason: String,
}

impl fmt::Display for ZoneError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown time zone '{}': {}", self.name, self.reason)
    }
}

impl std::error::Error for ZoneError {}

impl fmt::Debug for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Zone").field(&self.0.name).finish()
    }
}

impl PartialEq for Zone {
    fn eq(&self, other: &Zone) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || (self.0.name == other.0.name && self.0.tz == other.0.tz)
    }
}

impl Zone {
    /// Looks a zone up the way `CRON_TZ` and `TZ` are written: an IANA name
    /// (`America/New_York`, optionally with the POSIX leading `:`), `UTC`, or a POSIX TZ string
    /// (`EST5EDT,M3.2.0,M11.1.0`).
    pub fn get(name: &str) -> Result<Zone, ZoneError> {
        let bare = name.strip_prefix(':').unwrap_or(name);
        let err = |reason: String| ZoneError {
            name: name.to_string(),
            reason,
        };
        if bare.is_empty() {
            return Err(err("empty zone name".to_string()));
        }
        match TimeZone::get(bare) {
            Ok(tz) => Ok(Zone::new(bare, tz)),
            Err(db_err) => Zone::posix(bare).ok_or_else(|| err(db_err.to_string())),
        }
    }

    /// A POSIX TZ string (`EST5EDT,M3.2.0,M11.1.0`, `UTC0`), named as written. It needs an
    /// offset: "FOO" alone is not a zone.
    pub fn posix(text: &str) -> Option<Zone> {
        if !text.bytes().any(|b| b.is_ascii_digit()) {
            return None;
        }
        TimeZone::posix(text).ok().map(|tz| Zone::new(text, tz))
    }

    /// Wraps a zone obtained elsewhere (the system's local zone, read by the shell).
    pub fn new(name: &str, tz: TimeZone) -> Zone {
        Zone(Arc::new(Rules {
            name: name.into(),
            table: OnceLock::new(),
            tz,
        }))
    }

    pub fn utc() -> Zone {
        Zone::new("UTC", TimeZone::UTC)
    }

    pub fn name(&self) -> &str {
        &self.0.name
    }

    pub fn time_zone(&self) -> &TimeZone {
        &self.0.tz
    }

    fn table(&self) -> &Table {
        self.0.table.get_or_init(|| Table::build(&self.0.tz))
    }

    /// The UTC offset in seconds at an instant given in Unix seconds.
    pub(super) fn offset_at(&self, second: i64) -> i64 {
        let table = self.table();
        if let Some(i) = table.index(second) {
            return table.offset_after(i);
        }
        jiff_offset_at(&self.0.tz, second)
    }

    /// The first offset change strictly after `second`: (instant, offset after it).
    pub(super) fn next_transition(&self, second: i64) -> Option<(i64, i64)> {
        let table = self.table();
        if let Some(i) = table.index(second)
            && i < table.at.len()
        {
            return Some((table.at[i], table.after[i]));
        }
        let ts = Timestamp::from_second(second).ok()?;
        let tr = self.0.tz.following(ts).next()?;
        Some((tr.timestamp().as_second(), i64::from(tr.offset().seconds())))
    }

    /// The latest wall-clock second shown just before any offset change in
    /// `[second - horizon, second]`: `T - 1 + offset before T` (the peak of a fold's first pass).
    pub(super) fn peak_before_changes(&self, second: i64, horizon: i64) -> Option<i64> {
        let mut peak: Option<i64> = None;
        let mut add = |at: i64, before: i64| {
            let p = at - 1 + before;
            peak = Some(peak.map_or(p, |q| q.max(p)));
        };
        let table = self.table();
        if let Some(end) = table.index(second)
            && table.index(second.saturating_sub(horizon)).is_some()
        {
            for i in (0..end).rev() {
                if table.at[i] < second - horizon {
                    break;
                }
                add(table.at[i], table.offset_after(i));
            }
            return peak;
        }
        let Ok(ts) = Timestamp::from_second(second.saturating_add(1)) else {
            return None;
        };
        for tr in self.0.tz.preceding(ts) {
            let at = tr.timestamp().as_second();
            if at < second - horizon {
                break;
            }
            add(at, jiff_offset_at(&self.0.tz, at - 1));
        }
        peak
    }

    /// Formats an instant as RFC 3339 with this zone's offset, e.g. `2026-03-08T03:00:00-04:00`.
    pub fn format_rfc3339(&self, at: Timestamp) -> String {
        at.to_zoned(self.0.tz.clone())
            .strftime("%Y-%m-%dT%H:%M:%S%:z")
            .to_string()
    }

    /// The wall-clock time of an instant in this zone.
    pub fn civil(&self, at: Timestamp) -> jiff::civil::DateTime {
        self.0.tz.to_datetime(at)
    }
}
