//! When an entry runs: the five time fields of crontab(5) as bitsets, and the fire times they give
//! in a time zone.
//!
//! Pure: no clock reads, no syscalls, no files (the zone data comes in as a
//! [`Zone`] value). It is the only place in crond that does time arithmetic; the daemon,
//! `cronnext` and the tests all ask it the same two questions: does this local minute match
//! ([`Schedule::matches`]), and when is the next fire time after an instant
//! ([`Schedule::next_after`]).
//!
//! # What the fields mean (Debian's cron, plus cronie's additions)
//!
//! A field is a comma list of items; an item is `*`, a number, a name (`jan`..`dec`,
//! `sun`..`sat`, any case), a range `a-b`, any of those with a step `/n` (`*/n`, `a-b/n`), or
//! cronie's random pick `a~b` (either bound may be left out). Day of week 0 and 7 are both Sunday.
//! Each field keeps Vixie's *star flag*: set when the field's first character is `*`. The flags
//! decide two things:
//!
//! * **The day rule.** If day-of-month or day-of-week is starred, a day must match both fields,
//!   otherwise a day matches if either matches. So `0 0 */2 * sun` means "Sundays with an odd
//!   date", exactly as Debian documents in crontab(5) LIMITATIONS.
//! * **The class** ([`Class`]): a *wildcard* entry has its minute or hour field starred (or is
//!   `@hourly`); every other entry is *fixed-time*. The DST and clock-step rules treat the two
//!   differently (docs/design.md §4).
//!
//! # Where Debian and cronie disagree, and what we chose
//!
//! * `5-0` in day of week: cronie reads it as `5-7` (Friday to Sunday), Debian as an empty range
//!   that silently never matches. We take cronie's reading; every other reversed range (`5-1`,
//!   `30-10`) is an error rather than Debian's silent "never".
//! * A step on a single number (`1/20`): Debian rejects it and so do we ("a step needs a range or
//!   `*`").
//! * Anything after a valid item that Debian silently throws away (`5#3`, `1~5x`, `5L`), and `?`,
//!   `L`, `W`: errors that name the column. Debian reads `5#3` as "every Friday", which is never
//!   what the author meant.
//! * `~` is cronie's (and OpenBSD's) random pick, not fcron's exclusion or systemd's "last day".
//!   The value is chosen once from a hash of the caller's seed (the host name) and the entry's
//!   text, so the same entry on the same host always gets the same value, across restarts and
//!   reloads; a `~` item cannot take a step.
//! * `H` is Jenkins' hashed value: `H` one value of the field, `H(a-b)` one value of a..b,
//!   `H/n` the steps `o, o+n, ...` over the field with the offset `o` in `0..n`, `H(a-b)/n` the
//!   same inside a..b. A bare `H` keeps day of month to 1-28 (every month has those days) and
//!   day of week to 0-6. The value comes from the caller's `H` seed (the crontab parser makes it
//!   from what the entry's id is made of), so it is the same wherever and whenever the entry is
//!   read; a step larger than its range is an error, as in Jenkins. An `H` field is not starred:
//!   `H H * * *` is a fixed-time entry, like the numbers it stands for.
//! * `@`-specials are lower case, as in both anchors; `@midnight` is accepted (Debian documents
//!   it, cronie's code accepts it).
//! * A field with a step larger than its range (`*/90` in minutes) is accepted as in Debian (it
//!   selects only the first value).
//!
//! # Fire times and daylight saving (docs/design.md §4)
//!
//! The local minutes that match are turned into instants by the rule in `next.rs`: a fixed-time
//! entry fires when the wall clock first reaches a matching minute (so a minute inside a
//! spring-forward gap fires at the end of the gap, and a minute repeated by a fall-back fold fires
//! only in its first pass); a wildcard entry fires at every instant whose wall-clock minute
//! matches (none in a gap, both passes of a fold).

#![forbid(unsafe_code)]

pub mod duration;
mod next;
mod parse;
mod zone;

use std::fmt;

pub use parse::{Fields, ParseError, expression_hash, host_seed, parse_expression, parse_fields};
pub use zone::{Zone, ZoneError};

/// One of the five time fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Minute,
    Hour,
    DayOfMonth,
    Month,
    DayOfWeek,
}

impl Field {
    pub const ALL: [Field; 5] = [
        Field::Minute,
        Field::Hour,
        Field::DayOfMonth,
        Field::Month,
        Field::DayOfWeek,
    ];

    /// The lowest and highest value a user may write (day of week accepts 7 for Sunday).
    pub const fn bounds(self) -> (u8, u8) {
        match self {
            Field::Minute => (0, 59),
            Field::Hour => (0, 23),
            Field::DayOfMonth => (1, 31),
            Field::Month => (1, 12),
            Field::DayOfWeek => (0, 7),
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Field::Minute => "minute",
            Field::Hour => "hour",
            Field::DayOfMonth => "day of month",
            Field::Month => "month",
            Field::DayOfWeek => "day of week",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// How the DST and clock-step rules treat an entry (Vixie's `MIN_STAR`/`HR_STAR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Class {
    /// Minute or hour field starts with `*`, or `@hourly`: runs by the wall clock as it is.
    Wildcard,
    /// Runs at particular times of day: caught up once after a gap, never twice in a fold.
    FixedTime,
}

/// A parsed set of five time fields.
///
/// Bits are indexed by value: bit 0 of `minute` is minute 0, bit 1 of `dom` is the 1st, bit 1 of
/// `month` is January, bit 0 of `dow` is Sunday (7 is folded into 0 when parsed).
///
/// Each field is kept in the narrowest integer that holds its values, the minutes' 60 bits as
/// two halves (20 bytes in all, aligned to 4, so a struct that holds one wastes nothing on
/// padding): the daemon keeps one per entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Schedule {
    /// Minutes 0–31, then 32–59.
    minute: [u32; 2],
    hour: u32,
    dom: u32,
    month: u16,
    dow: u8,
    stars: u8,
}

/// What an entry's time specification says: a schedule, "once when the daemon starts at boot",
/// or `@every DURATION` (seconds; runs at the daemon's start plus each multiple).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum When {
    Reboot,
    Periodic(Schedule),
    Every(u32),
}

const fn star_bit(field: Field) -> u8 {
    1 << field.index()
}

/// The bits a full field has (`*`).
const fn full_bits(field: Field) -> u64 {
    match field {
        Field::DayOfWeek => 0x7f,
        _ => {
            let (lo, hi) = field.bounds();
            ((1u64 << (hi as u32 + 1)) - 1) & !((1u64 << lo as u32) - 1)
        }
    }
}

impl Schedule {
    /// Builds a schedule from raw bitsets and star flags, as the parser does. Values outside a
    /// field's range are dropped; day-of-week bit 7 is folded into bit 0.
    pub(crate) fn from_parts(mut bits: [u64; 5], stars: [bool; 5]) -> Schedule {
        let dow = Field::DayOfWeek.index();
        if bits[dow] & (1 << 7) != 0 {
            bits[dow] = (bits[dow] | 1) & !(1 << 7);
        }
        let mut flags = 0;
        for field in Field::ALL {
            bits[field.index()] &= full_bits(field);
            if stars[field.index()] {
                flags |= star_bit(field);
            }
        }
        // Each field's full bits fit its integer, so the casts drop nothing.
        Schedule {
            minute: [
                bits[Field::Minute.index()] as u32,
                (bits[Field::Minute.index()] >> 32) as u32,
            ],
            hour: bits[Field::Hour.index()] as u32,
            dom: bits[Field::DayOfMonth.index()] as u32,
            month: bits[Field::Month.index()] as u16,
            dow: bits[Field::DayOfWeek.index()] as u8,
            stars: flags,
        }
    }

    /// The set bits of a field (see the type's documentation for the indexing).
    pub fn bits(&self, field: Field) -> u64 {
        match field {
            Field::Minute => u64::from(self.minute[0]) | (u64::from(self.minute[1]) << 32),
            Field::Hour => u64::from(self.hour),
            Field::DayOfMonth => u64::from(self.dom),
            Field::Month => u64::from(self.month),
            Field::DayOfWeek => u64::from(self.dow),
        }
    }

    /// Whether the field's text began with `*`.
    pub fn is_starred(&self, field: Field) -> bool {
        self.stars & star_bit(field) != 0
    }

    pub fn class(&self) -> Class {
        if self.is_starred(Field::Minute) || self.is_starred(Field::Hour) {
            Class::Wildcard
        } else {
            Class::FixedTime
        }
    }

    /// Does this local wall-clock minute match? (`weekday`: 0 = Sunday.)
    pub fn matches_parts(&self, month: u8, day: u8, weekday: u8, hour: u8, minute: u8) -> bool {
        self.has(Field::Minute, minute)
            && self.has(Field::Hour, hour)
            && self.has(Field::Month, month)
            && self.day_matches(day, weekday)
    }

    /// Does this local wall-clock time match (seconds are ignored)?
    pub fn matches(&self, local: jiff::civil::DateTime) -> bool {
        self.matches_parts(
            local.month() as u8,
            local.day() as u8,
            local.weekday().to_sunday_zero_offset() as u8,
            local.hour() as u8,
            local.minute() as u8,
        )
    }

    /// Vixie's day rule: AND when either day field is starred, otherwise OR.
    fn day_matches(&self, day: u8, weekday: u8) -> bool {
        let dom = self.has(Field::DayOfMonth, day);
        let dow = self.has(Field::DayOfWeek, weekday);
        if self.is_starred(Field::DayOfMonth) || self.is_starred(Field::DayOfWeek) {
            dom && dow
        } else {
            dom || dow
        }
    }

    fn has(&self, field: Field, value: u8) -> bool {
        self.bits(field) & (1u64 << value) != 0
    }

    /// Whether some calendar day can ever match (`0 0 30 2 *` cannot). Both Debian and cronie
    /// accept such entries; crontab(1) and the daemon warn about them.
    /// A schedule with no time at all: the place in the agenda of an `@every` entry, which
    /// the cycle starts by its interval instead.
    pub fn never() -> Schedule {
        // The 30th of February: a valid schedule that [`Schedule::can_fire`] knows never runs.
        match parse::parse_expression("0 0 30 2 *", 0) {
            Ok(When::Periodic(s)) => s,
            _ => unreachable!("a fixed, valid expression"),
        }
    }

    pub fn can_fire(&self) -> bool {
        // With either day field starred the day rule is AND. A starred day of month always
        // contains the 1st, and every (month, day) pair that exists falls on every weekday in
        // some year, so only a restricted day of month under a starred day of week can make
        // the days impossible: no chosen day exists in any chosen month.
        if self.is_starred(Field::DayOfMonth) || !self.is_starred(Field::DayOfWeek) {
            return true;
        }
        (1..=12u8).any(|month| {
            self.has(Field::Month, month)
                && (1..=max_days_in_month(month)).any(|day| self.has(Field::DayOfMonth, day))
        })
    }
}

/// The longest a month can be (February: 29).
pub(crate) const fn max_days_in_month(month: u8) -> u8 {
    match month {
        2 => 29,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl fmt::Display for Schedule {
    /// A canonical expression that parses back to an equal schedule, star flags included: a
    /// starred field prints as `*`, `*/n`, or `*/SIZE,rest` (a step as large as the field selects
    /// only its first value, which a starred field always holds).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, field) in Field::ALL.into_iter().enumerate() {
            if i > 0 {
                f.write_str(" ")?;
            }
            write_field(f, field, self.bits(field), self.is_starred(field))?;
        }
        Ok(())
    }
}

fn write_field(f: &mut fmt::Formatter<'_>, field: Field, bits: u64, starred: bool) -> fmt::Result {
    let (lo, hi) = match field {
        Field::DayOfWeek => (0, 6),
        _ => field.bounds(),
    };
    let size = u64::from(hi - lo) + 1;
    let mut rest = bits;
    let mut first = true;
    if starred {
        let step = (1..=size).find(|&step| {
            (lo..=hi).all(|v| {
                let want = u64::from(v - lo) % step == 0;
                want == (bits & (1 << v) != 0)
            })
        });
        match step {
            Some(1) => return f.write_str("*"),
            Some(step) => return write!(f, "*/{step}"),
            None => {
                write!(f, "*/{size}")?;
                rest &= !(1 << lo);
                first = false;
            }
        }
    }
    let mut v = lo;
    while v <= hi {
        if rest & (1 << v) == 0 {
            v += 1;
            continue;
        }
        let start = v;
        while v < hi && rest & (1 << (v + 1)) != 0 {
            v += 1;
        }
        if !first {
            f.write_str(",")?;
        }
        first = false;
        if start == v {
            write!(f, "{start}")?;
        } else {
            write!(f, "{start}-{v}")?;
        }
        v += 1;
    }
    Ok(())
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            When::Reboot => f.write_str("@reboot"),
            When::Periodic(s) => s.fmt(f),
            When::Every(seconds) => write!(f, "@every {}", duration::Duration(*seconds)),
        }
    }
}

#[cfg(test)]
mod tests;
