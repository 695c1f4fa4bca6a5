//! Next fire time in a zone, with the DST rule of docs/design.md §4.
//!
//! Pure: the instant to start from is an argument.
//!
//! Let `local(t)` be the wall-clock time of instant `t`. It rises with `t`, jumps forward at a
//! spring-forward (a *gap*: some wall-clock minutes never happen) and back at a fall-back (a
//! *fold*: some happen twice).
//!
//! * A **wildcard** entry fires at each instant `t` whose wall-clock minute matches. No minute in
//!   a gap ever shows on the clock, so none fires; a fold shows its minutes twice, so they fire
//!   twice. This is "run based on the new time immediately" of cron(8).
//! * A **fixed-time** entry fires, for each matching wall-clock minute `L`, at the first instant
//!   at which the clock reaches `L` or later: `min { t : local(t) >= L }`. For an ordinary
//!   minute that is simply `L`; for a minute inside a gap it is the end of the gap (the "run soon
//!   after the change" of cron(8), once per instant however many matching minutes the gap
//!   swallowed); for a minute in a fold it is the first pass only. That instant is after `a`
//!   exactly when `L` is later than every wall-clock time reached up to `a` (the *high water*).
//!
//! Offsets are taken from the zone's own transitions, so 30-minute shifts (Lord Howe), 45-minute
//! offsets (Kathmandu, Eucla), zones without DST and changes of standard offset (Moscow 2014) all
//! follow the same two rules.
//!
//! Everything here counts in seconds: instants as Unix seconds, wall-clock times as "local
//! seconds" (the Unix-epoch count of the civil date and time, ignoring the offset).

use jiff::Timestamp;

use super::{Field, Schedule, Zone};

const MINUTE: i64 = 60;
const DAY: i64 = 86_400;

/// How far ahead the search of matching minutes looks. A schedule that can fire matches within
/// 40 years: the longest wait is February 29 on one weekday (`0 0 29 2 */7`, Sundays only),
/// 28 years apart except across a century year that is not leap (2088, then 2128). Beyond
/// this only impossible schedules are left, and they were already turned away by
/// [`Schedule::can_fire`].
const SEARCH_YEARS: i32 = 40;

/// A fold or any offset change older than this cannot still hold the wall clock below an earlier
/// reading (the largest folds in the tz database are a day long).
const FOLD_HORIZON: i64 = 2 * DAY;

impl Schedule {
    /// The first fire time strictly after `after`, in `zone`, or `None` if the schedule never
    /// fires (`0 0 30 2 *`) or the next one is beyond the representable range.
    pub fn next_after(&self, after: Timestamp, zone: &Zone) -> Option<Timestamp> {
        if !self.can_fire() {
            return None;
        }
        // Fire times are whole seconds: "after a.5" and "after a" give the same next time.
        // `as_second` truncates towards zero; before 1970 the floor is one second lower.
        let a = after.as_second() - i64::from(after.subsec_nanosecond() < 0);
        let fixed = self.class() == super::Class::FixedTime;
        let mut high_water = if fixed { high_water(zone, a) } else { i64::MIN };

        let mut start = a + 1;
        let mut offset = zone.offset_at(start);
        // The last search: from which local second, and what it found (reused while it stays
        // the answer for a later start).
        let mut cached: Option<(i64, i64)> = None;
        // Bounded: two transitions a year at most in real zones, so this is centuries of rules.
        for _ in 0..1000 {
            let mut lower = start + offset;
            if fixed {
                lower = lower.max(high_water + 1);
            }
            let lower = ceil_minute(lower);
            let found = match cached {
                Some((from, hit)) if from <= lower && lower <= hit => hit,
                _ => {
                    let hit = self.next_local_match(lower)?;
                    cached = Some((lower, hit));
                    hit
                }
            };
            let transition = zone.next_transition(start);
            match transition {
                Some((at, _)) if found - offset >= at => {}
                _ => return Timestamp::from_second(found - offset).ok(),
            }
            let (at, next_offset) = transition.expect("matched Some above");
            if fixed && next_offset > offset && found < at + next_offset {
                // The matching minute lies in the gap the clock skips at `at`.
                return Timestamp::from_second(at).ok();
            }
            high_water = high_water.max(at - 1 + offset);
            start = at;
            offset = next_offset;
        }
        None
    }

    /// The first local minute at or after `from` (local seconds, a minute boundary) that matches.
    fn next_local_match(&self, from: i64) -> Option<i64> {
        let days = from.div_euclid(DAY);
        let second_of_day = from.rem_euclid(DAY);
        let (mut year, mut month, mut day) = civil_from_days(days);
        let mut hour = (second_of_day / 3600) as u32;
        let mut minute = ((second_of_day % 3600) / 60) as u32;
        let last_year = year.saturating_add(SEARCH_YEARS);
        let months = self.bits(Field::Month);
        let hours = self.bits(Field::Hour);
        let minutes = self.bits(Field::Minute);
        let doms = self.bits(Field::DayOfMonth);
        let and_rule = self.is_starred(Field::DayOfMonth) || self.is_starred(Field::DayOfWeek);
        loop {
            if year > last_year {
                return None;
            }
            if months & (1 << month) == 0 {
                match next_bit(months, month + 1) {
                    Some(m) if m <= 12 => month = m,
                    _ => {
                        year += 1;
                        month = next_bit(months, 1).expect("a month is always chosen");
                    }
                }
                (day, hour, minute) = (1, 0, 0);
                continue;
            }
            let month_len = days_in_month(year, month);
            if and_rule {
                // Both day fields must match: jump straight to the next chosen day of month.
                match next_bit(doms, day) {
                    Some(d) if d <= month_len => {
                        if d != day {
                            (day, hour, minute) = (d, 0, 0);
                        }
                    }
                    _ => day = month_len + 1,
                }
            }
            if day > month_len {
                (month, day, hour, minute) = (month + 1, 1, 0, 0);
                if month > 12 {
                    (year, month) = (year + 1, 1);
                }
                continue;
            }
            let weekday = weekday(days_from_civil(year, month, day));
            if !self.day_matches(day as u8, weekday) {
                (day, hour, minute) = (day + 1, 0, 0);
                continue;
            }
            match next_bit(hours, hour) {
                Some(h) if h <= 23 => {
                    if h != hour {
                        (hour, minute) = (h, 0);
                    }
                }
                _ => {
                    (day, hour, minute) = (day + 1, 0, 0);
                    continue;
                }
            }
            match next_bit(minutes, minute) {
                Some(m) if m <= 59 => {
                    let days = days_from_civil(year, month, day);
                    return Some(days * DAY + i64::from(hour) * 3600 + i64::from(m) * MINUTE);
                }
                _ => {
                    (hour, minute) = (hour + 1, 0);
                    if hour > 23 {
                        (day, hour) = (day + 1, 0);
                    }
                }
            }
        }
    }
}

/// The latest wall-clock time (local seconds) shown at any instant up to and including `a`.
/// Usually `local(a)`; in the second pass of a fold, the end of the first pass.
fn high_water(zone: &Zone, a: i64) -> i64 {
    let now = a + zone.offset_at(a);
    zone.peak_before_changes(a, FOLD_HORIZON)
        .map_or(now, |peak| peak.max(now))
}

fn ceil_minute(local: i64) -> i64 {
    local.div_euclid(MINUTE) * MINUTE
        + if local.rem_euclid(MINUTE) == 0 {
            0
        } else {
            MINUTE
        }
}

/// The lowest set bit at or above `from`.
fn next_bit(bits: u64, from: u32) -> Option<u32> {
    if from >= 64 {
        return None;
    }
    let rest = bits >> from;
    (rest != 0).then(|| from + rest.trailing_zeros())
}

fn is_leap(year: i32) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// 0 = Sunday; day 0 (1970-01-01) was a Thursday.
fn weekday(days: i64) -> u8 {
    (days + 4).rem_euclid(7) as u8
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the classic era-based algorithm).
pub(super) fn days_from_civil(year: i32, month: u32, day: u32) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`].
pub(super) fn civil_from_days(days: i64) -> (i32, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = (yoe + era * 400 + i64::from(month <= 2)) as i32;
    (year, month, day)
}
