//! Property tests of the schedule engine against an independent oracle.
//!
//! `Schedule::next_after` is checked against a brute-force walk over UTC minutes that knows
//! nothing of `next.rs`: it asks jiff for the offset of each instant and whether a wall-clock
//! time is ambiguous, asks the schedule only `matches`, and applies the rule of docs/design.md §4
//! as written there (a fixed-time entry fires once at the end of a gap that swallowed one of its
//! minutes and only in the first pass of a fold; a wildcard entry never in a gap, in both passes
//! of a fold). Two more properties check that an expression printed by `Display` parses back to
//! the same schedule, and that a crontab entry printed by `Crontab::to_line` loads back with the
//! same schedule, user and command.
//!
//! The walk skips days and hours that cannot match, never past a zone transition, so that each
//! case stays cheap in a debug build; it must not borrow any arithmetic from the crate under test.

use crate::support::schedule::{SPECIALS, START_MAX, START_MIN, ZONES};

use std::collections::HashMap;

use crond::crontab::{self, Format, Limits, ParseOptions};
use crond::schedule::{Class, Schedule, When, Zone, parse_expression};
use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::{AmbiguousOffset, TimeZone};
use proptest::prelude::*;
use proptest::test_runner::Config;

/// How far the oracle looks: two years and a little.
const WINDOW: i64 = 733 * 86_400;

/// How many consecutive fire times each case compares.
const CHAIN: usize = 4;

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

// ---------------------------------------------------------------------------------------------
// The oracle.

struct Oracle<'a> {
    schedule: &'a Schedule,
    tz: &'a TimeZone,
    fixed: bool,
    /// Instants (Unix seconds) at which the offset changes, over the walked range.
    transitions: Vec<i64>,
    /// Memo of "can any minute of this local date match".
    dates: HashMap<jiff::civil::Date, bool>,
}

impl<'a> Oracle<'a> {
    fn new(schedule: &'a Schedule, tz: &'a TimeZone, from: i64, to: i64) -> Oracle<'a> {
        // The tz database also lists transitions that change only the abbreviation or
        // nothing at all (Caracas has one at 2038-01-19T03:14:07Z, the end of 32-bit time):
        // only a change of offset moves the wall clock.
        let transitions = tz
            .following(ts(from - 1))
            .map(|tr| tr.timestamp().as_second())
            .take_while(|&at| at <= to)
            .filter(|&at| tz.to_offset(ts(at - 1)) != tz.to_offset(ts(at)))
            .collect::<Vec<_>>();
        for &at in &transitions {
            assert_eq!(at % 60, 0, "an offset change off a minute boundary at {at}");
        }
        Oracle {
            schedule,
            tz,
            fixed: schedule.class() == Class::FixedTime,
            transitions,
            dates: HashMap::new(),
        }
    }

    fn offset(&self, t: i64) -> i64 {
        let offset = i64::from(self.tz.to_offset(ts(t)).seconds());
        assert_eq!(offset % 60, 0, "an offset that is not whole minutes");
        offset
    }

    fn date_can_match(&mut self, local: DateTime) -> bool {
        let date = local.date();
        let s = self.schedule;
        *self.dates.entry(date).or_insert_with(|| {
            let (month, day) = (date.month() as u8, date.day() as u8);
            let weekday = date.weekday().to_sunday_zero_offset() as u8;
            (0..24).any(|h| (0..60).any(|m| s.matches_parts(month, day, weekday, h, m)))
        })
    }

    fn hour_can_match(&self, local: DateTime) -> bool {
        let (month, day) = (local.month() as u8, local.day() as u8);
        let weekday = local.weekday().to_sunday_zero_offset() as u8;
        let hour = local.hour() as u8;
        (0..60).any(|m| self.schedule.matches_parts(month, day, weekday, hour, m))
    }

    /// The first transition strictly after `t`, if any within the range.
    fn next_transition(&self, t: i64) -> Option<i64> {
        let i = self.transitions.partition_point(|&at| at <= t);
        self.transitions.get(i).copied()
    }

    /// Does the entry fire at instant `t` (a minute boundary)? docs/design.md §4, case by case.
    fn fires_at(&self, t: i64, local: DateTime) -> bool {
        if self.schedule.matches(local) {
            match self.tz.to_ambiguous_timestamp(local).offset() {
                // (a) An ordinary minute.
                AmbiguousOffset::Unambiguous { .. } => return true,
                // (b) A fold: the first pass fires for everyone, the second only for wildcards.
                AmbiguousOffset::Fold { before, .. } => {
                    let first_pass = local
                        .to_zoned(TimeZone::fixed(before))
                        .unwrap()
                        .timestamp()
                        .as_second();
                    if t == first_pass || !self.fixed {
                        return true;
                    }
                }
                AmbiguousOffset::Gap { .. } => panic!("{local} was shown by the clock at {t}"),
            }
        }
        // (c) The end of a gap: a fixed-time entry whose minute was skipped fires now, once.
        if self.fixed && self.transitions.binary_search(&t).is_ok() {
            let (before, after) = (self.offset(t - 1), self.offset(t));
            if after > before {
                let skipped = (t + before..t + after).step_by(60);
                return skipped
                    .map(|local| ts(local).to_zoned(TimeZone::UTC).datetime())
                    .any(|local| self.schedule.matches(local));
            }
        }
        false
    }

    /// Fire times strictly after `after`, up to `until` (inclusive), at most `max` of them.
    fn fires(&mut self, after: Timestamp, until: i64, max: usize) -> Vec<i64> {
        let mut out = Vec::new();
        let mut t = (after.as_second().div_euclid(60) + 1) * 60;
        while t <= until && out.len() < max {
            let offset = self.offset(t);
            let local = ts(t + offset).to_zoned(TimeZone::UTC).datetime();
            let boundary = self.transitions.binary_search(&t).is_ok();
            let cap = self.next_transition(t).unwrap_or(i64::MAX);
            if !boundary && !self.date_can_match(local) {
                let second_of_day = i64::from(local.hour()) * 3600 + i64::from(local.minute()) * 60;
                t = (t + 86_400 - second_of_day).min(cap);
                continue;
            }
            if !boundary && !self.hour_can_match(local) {
                t = (t + 3600 - i64::from(local.minute()) * 60).min(cap);
                continue;
            }
            if self.fires_at(t, local) {
                out.push(t);
            }
            t += 60;
        }
        out
    }
}

fn ts(second: i64) -> Timestamp {
    Timestamp::from_second(second).unwrap()
}

/// Compares `CHAIN` successive `next_after` answers with the oracle over its window.
fn check(expr: &str, zone_name: &str, after: Timestamp) -> Result<(), TestCaseError> {
    let When::Periodic(schedule) = parse_expression(expr, 7).expect("generated expressions parse")
    else {
        return Ok(());
    };
    let zone = Zone::get(zone_name).expect("zone in the system tz database");
    let until = after.as_second() + WINDOW;
    let mut oracle = Oracle::new(&schedule, zone.time_zone(), after.as_second(), until);
    let expected = oracle.fires(after, until, CHAIN);
    let mut from = after;
    for &want in &expected {
        let got = schedule.next_after(from, &zone);
        prop_assert_eq!(
            got.map(|t| t.as_second()),
            Some(want),
            "{:?} in {} after {} (schedule {})",
            expr,
            zone_name,
            from,
            schedule
        );
        from = ts(want);
    }
    if expected.len() < CHAIN {
        let got = schedule.next_after(from, &zone);
        prop_assert!(
            got.is_none_or(|t| t.as_second() > until),
            "{:?} in {} after {}: next_after gives {:?}, the oracle nothing up to {}",
            expr,
            zone_name,
            from,
            got,
            ts(until)
        );
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Generators of expressions as people write them.

#[derive(Clone, Copy, Debug)]
enum F {
    Minute,
    Hour,
    Dom,
    Month,
    Dow,
}

impl F {
    fn bounds(self) -> (u8, u8) {
        match self {
            F::Minute => (0, 59),
            F::Hour => (0, 23),
            F::Dom => (1, 31),
            F::Month => (1, 12),
            F::Dow => (0, 7),
        }
    }
}

/// A number, biased towards the values where DST and month ends bite.
fn number(f: F) -> BoxedStrategy<u8> {
    let (lo, hi) = f.bounds();
    let hot: Vec<u8> = match f {
        F::Minute => vec![0, 15, 29, 30, 45, 59],
        F::Hour => vec![0, 1, 2, 3, 23],
        F::Dom => vec![1, 28, 29, 30, 31],
        F::Month => vec![2, 3, 10, 11, 12],
        F::Dow => vec![0, 6, 7],
    };
    prop_oneof![2 => lo..=hi, 1 => proptest::sample::select(hot)].boxed()
}

/// A value as text: a number, or for month and day of week sometimes a name in any case.
fn value(f: F) -> BoxedStrategy<(u8, String)> {
    let numeric = number(f).prop_map(|n| (n, n.to_string()));
    let names: Option<(&'static [&'static str], u8)> = match f {
        F::Month => Some((&MONTHS, 1)),
        F::Dow => Some((&DAYS, 0)),
        _ => None,
    };
    match names {
        None => numeric.boxed(),
        Some((names, first)) => prop_oneof![
            numeric,
            (0..names.len(), 0u8..3).prop_map(move |(i, case)| {
                let name = match case {
                    0 => names[i].to_string(),
                    1 => names[i].to_uppercase(),
                    _ => {
                        let mut c = names[i].chars();
                        let head = c.next().unwrap().to_ascii_uppercase();
                        format!("{head}{}", c.as_str())
                    }
                };
                (first + i as u8, name)
            }),
        ]
        .boxed(),
    }
}

fn item(f: F) -> BoxedStrategy<String> {
    let (lo, hi) = f.bounds();
    let span = hi - lo + 1;
    let range = (value(f), value(f)).prop_filter_map("a reversed range", move |(a, b)| {
        // cronie's `5-0` in day of week (Friday to Sunday); other reversed ranges are errors.
        let ok = a.0 <= b.0 || matches!(f, F::Dow) && b.0 == 0;
        ok.then(|| format!("{}-{}", a.1, b.1))
    });
    prop_oneof![
        4 => value(f).prop_map(|v| v.1),
        2 => range.clone(),
        1 => (range, 1..=span).prop_map(|(r, n)| format!("{r}/{n}")),
        2 => Just("*".to_string()),
        2 => (1..=span).prop_map(|n| format!("*/{n}")),
        1 => (proptest::option::of(value(f)), proptest::option::of(value(f))).prop_filter_map(
            "a reversed random range",
            move |(a, b)| {
                let a_v = a.as_ref().map_or(lo, |a| a.0);
                let b_v = b.as_ref().map_or(if matches!(f, F::Dow) { 6 } else { hi }, |b| b.0);
                let ok = a_v <= b_v || matches!(f, F::Dow) && b.as_ref().is_some_and(|b| b.0 == 0);
                ok.then(|| {
                    format!(
                        "{}~{}",
                        a.map(|a| a.1).unwrap_or_default(),
                        b.map(|b| b.1).unwrap_or_default()
                    )
                })
            }
        ),
    ]
    .boxed()
}

fn field(f: F) -> BoxedStrategy<String> {
    prop_oneof![
        3 => item(f),
        1 => proptest::collection::vec(item(f), 2..=3).prop_map(|items| items.join(",")),
    ]
    .boxed()
}

fn expression() -> impl Strategy<Value = String> {
    let five = (
        field(F::Minute),
        field(F::Hour),
        field(F::Dom),
        field(F::Month),
        field(F::Dow),
    )
        .prop_map(|(a, b, c, d, e)| format!("{a} {b} {c} {d} {e}"));
    let special = proptest::sample::select(SPECIALS).prop_map(str::to_string);
    prop_oneof![12 => five, 1 => special]
}

/// A start instant in 2000..2040, half the time within three days before a transition of the
/// zone (where the DST rule matters), sometimes with a fraction of a second.
fn start(zone: &'static str) -> impl Strategy<Value = Timestamp> {
    (
        START_MIN..START_MAX,
        any::<bool>(),
        0..3 * 86_400i64,
        prop_oneof![3 => Just(0i32), 1 => 0..1_000_000_000i32],
    )
        .prop_map(move |(base, near, back, nanos)| {
            let tz = TimeZone::get(zone).unwrap();
            let mut second = base;
            if near && let Some(tr) = tz.following(ts(base)).next() {
                second = tr.timestamp().as_second() - back;
            }
            // Whole minutes most of the time: fire times are minute boundaries.
            if back % 3 != 0 {
                second -= second.rem_euclid(60);
            }
            Timestamp::new(second, nanos).unwrap()
        })
}

fn case() -> impl Strategy<Value = (String, &'static str, Timestamp)> {
    (expression(), proptest::sample::select(ZONES))
        .prop_flat_map(|(expr, zone)| (Just(expr), Just(zone), start(zone)))
}

/// 256 cases by default (about two seconds in a debug build); `PROPTEST_CASES=N` for a longer run.
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    Config {
        cases,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn next_after_agrees_with_a_minute_by_minute_walk((expr, zone, after) in case()) {
        check(&expr, zone, after)?;
    }

    #[test]
    fn an_entry_printed_by_to_line_loads_back_the_same(
        expr in expression(),
        system: bool,
        command in proptest::collection::vec(
            proptest::sample::select(b"ab %\\\t\r*/=#'\"\xff".to_vec()), 0..12),
    ) {
        let format = if system { Format::System } else { Format::User };
        let user = if system { " root" } else { "" };
        let mut text = format!("{expr}{user} ").into_bytes();
        text.extend_from_slice(&command);
        text.push(b'\n');
        let first = load(&text, format);
        for (i, entry) in first.entries.iter().enumerate() {
            let mut line = first.to_line(i);
            line.push(b'\n');
            let again = load(&line, format);
            prop_assert!(!again.has_errors(), "{:?}: {:?}", line, again.errors);
            prop_assert_eq!(again.entries.len(), 1);
            let back = &again.entries[0];
            prop_assert_eq!(back.when, entry.when);
            prop_assert_eq!(&back.user, &entry.user);
            prop_assert_eq!(again.command(0), first.command(i));
        }
    }

    #[test]
    fn a_printed_schedule_parses_back_to_the_same_schedule(expr in expression(), seed: u64) {
        let when = parse_expression(&expr, seed).expect("generated expressions parse");
        let printed = when.to_string();
        let again = parse_expression(&printed, seed);
        prop_assert_eq!(again, Ok(when), "{:?} printed as {:?}", expr, printed);
    }
}

fn load(text: &[u8], format: Format) -> crontab::Crontab {
    let mut zones = |name: &str| Zone::get(name);
    let mut options = ParseOptions {
        format,
        limits: Limits::SYSTEM,
        seed: 7,
        file: "crontabs/alice",
        zones: &mut zones,
        privileged: false,
    };
    crontab::parse(text, &mut options)
}

/// Regression (found by the fuzz target): a command ending in two carriage returns lost one
/// each time it was printed and loaded again, because only one was stripped from the line.
#[test]
fn carriage_returns_at_the_end_of_an_entry_survive_a_print_and_load() {
    let first = load(b"0 0 * * * cmd\r\n", Format::User);
    assert_eq!(first.command(0), b"cmd");
    assert_eq!(first.warnings.len(), 1, "{:?}", first.warnings);
    let mut line = first.to_line(0);
    line.push(b'\n');
    assert_eq!(load(&line, Format::User).command(0), b"cmd");
    // Two: the first is not at the end of the line, and a CR there hides text.
    let two = load(b"0 0 * * * cmd\r\r\n", Format::User);
    assert!(two.entries.is_empty() && two.has_errors());
}

/// Regression: `7~` in day of week ran its open range up to Saturday, below its start, and
/// panicked on the subtraction (found by the croner differential test's generator).
#[test]
fn seven_tilde_in_day_of_week_is_sunday() {
    for seed in 0..50 {
        let When::Periodic(s) = parse_expression("0 0 * * 7~", seed).unwrap() else {
            panic!("not a periodic schedule");
        };
        assert_eq!(s.bits(crond::schedule::Field::DayOfWeek), 1, "seed {seed}");
    }
}

/// Regression: February 29 on a Sunday comes 40 years after 2088 (2100 is not a leap year),
/// beyond the 30 years the search used to look ahead, so `next_after` said "never".
#[test]
fn february_29_on_a_sunday_is_found_across_a_century_that_is_not_leap() {
    let When::Periodic(s) = parse_expression("0 0 29 2 */7", 0).unwrap() else {
        panic!("not a periodic schedule");
    };
    let after: Timestamp = "2088-03-01T00:00:00Z".parse().unwrap();
    let next = s.next_after(after, &Zone::utc());
    assert_eq!(next, Some("2128-02-29T00:00:00Z".parse().unwrap()));
    let ny = Zone::get("America/New_York").unwrap();
    let next = s.next_after(after, &ny).map(|t| ny.civil(t).to_string());
    assert_eq!(next.as_deref(), Some("2128-02-29T00:00:00"));
}

/// Regression: half a second before a minute boundary before 1970, `next_after` skipped that
/// minute (jiff's `as_second` truncates towards zero, so it read the instant as the boundary).
#[test]
fn a_fraction_of_a_second_before_1970_does_not_skip_the_next_minute() {
    let When::Periodic(s) = parse_expression("* * * * *", 0).unwrap() else {
        panic!("not a periodic schedule");
    };
    let after = Timestamp::new(0, -500_000_000).unwrap();
    assert_eq!(
        s.next_after(after, &Zone::utc()),
        Some(Timestamp::UNIX_EPOCH)
    );
    let after = Timestamp::new(-60, -1).unwrap();
    assert_eq!(s.next_after(after, &Zone::utc()), Some(ts(-60)));
}
