//! A time zone as the scheduler sees it: a name (for logs and `cronnext`) and jiff's zone rules,
//! read from the system tz database (`/usr/share/zoneinfo`, or `TZDIR`), so a tzdata update
//! applies without a rebuild.

use std::fmt;
use std::sync::Arc;

use jiff::Timestamp;
use jiff::tz::TimeZone;

/// A named time zone. Cheap to clone (the rules are shared).
#[derive(Clone)]
pub struct Zone {
    name: Arc<str>,
    tz: TimeZone,
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
        f.debug_tuple("Zone").field(&self.name).finish()
    }
}

impl PartialEq for Zone {
    fn eq(&self, other: &Zone) -> bool {
        self.name == other.name && self.tz == other.tz
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
        let tz = match TimeZone::get(bare) {
            Ok(tz) => tz,
            Err(db_err) => match TimeZone::posix(bare) {
                // A POSIX string needs a rule or an offset: "FOO" alone is not a zone.
                Ok(tz) if bare.bytes().any(|b| b.is_ascii_digit()) => tz,
                _ => return Err(err(db_err.to_string())),
            },
        };
        Ok(Zone::new(bare, tz))
    }

    /// Wraps a zone obtained elsewhere (the system's local zone, read by the shell).
    pub fn new(name: &str, tz: TimeZone) -> Zone {
        Zone {
            name: Arc::from(name),
            tz,
        }
    }

    pub fn utc() -> Zone {
        Zone::new("UTC", TimeZone::UTC)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn time_zone(&self) -> &TimeZone {
        &self.tz
    }

    /// The UTC offset in seconds at an instant given in Unix seconds.
    pub(super) fn offset_at(&self, second: i64) -> i64 {
        match Timestamp::from_second(second) {
            Ok(ts) => i64::from(self.tz.to_offset(ts).seconds()),
            // Outside jiff's range (beyond year ±9999): keep the nearest known offset.
            Err(_) => {
                let edge = if second < 0 {
                    Timestamp::MIN
                } else {
                    Timestamp::MAX
                };
                i64::from(self.tz.to_offset(edge).seconds())
            }
        }
    }

    /// The first offset change strictly after `second`: (instant, offset after it).
    pub(super) fn next_transition(&self, second: i64) -> Option<(i64, i64)> {
        let ts = Timestamp::from_second(second).ok()?;
        let tr = self.tz.following(ts).next()?;
        Some((tr.timestamp().as_second(), i64::from(tr.offset().seconds())))
    }

    /// Offset changes at or before `second`, newest first: (instant, offset after it).
    pub(super) fn transitions_up_to(&self, second: i64) -> impl Iterator<Item = (i64, i64)> + '_ {
        let ts = Timestamp::from_second(second.saturating_add(1)).ok();
        ts.into_iter().flat_map(move |ts| {
            self.tz
                .preceding(ts)
                .map(|tr| (tr.timestamp().as_second(), i64::from(tr.offset().seconds())))
        })
    }

    /// Formats an instant as RFC 3339 with this zone's offset, e.g. `2026-03-08T03:00:00-04:00`.
    pub fn format_rfc3339(&self, at: Timestamp) -> String {
        at.to_zoned(self.tz.clone())
            .strftime("%Y-%m-%dT%H:%M:%S%:z")
            .to_string()
    }

    /// The wall-clock time of an instant in this zone.
    pub fn civil(&self, at: Timestamp) -> jiff::civil::DateTime {
        self.tz.to_datetime(at)
    }
}
