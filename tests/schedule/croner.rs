//! Differential test: crond's `Schedule::next_after` against the `croner` crate (4.0.3, a
//! dev-dependency only) on thousands of random Vixie expressions, zones and start times.
//!
//! Every class of case where the two are known to disagree on purpose is written down in
//! `docs/croner-differences.md`, and [`known_difference`] recognises exactly those classes from
//! the expression, the zone and the start time; every other case must give the same fire times.
//! The test must not paper over a new disagreement: a case outside the documented classes fails,
//! and a documented class that stops occurring is noticed by the counts asserted at the end.
//! The cases come from a fixed seed; `CRONER_SEED=N` runs another set.

use crate::support::schedule::{SPECIALS, START_MAX, START_MIN, ZONES};

use crond::schedule::{Class, Field, Schedule, When, Zone, parse_expression};
use croner::Cron;
use croner::parser::CronParser;
use jiff::Timestamp;
use jiff::tz::TimeZone;

/// Expressions per run, and successive fire times compared for each.
const CASES: usize = 4000;
const CHAIN: usize = 3;

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// splitmix64: a fixed seed makes every run check the same cases, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }

    fn chance(&mut self, in_n: u64) -> bool {
        self.next().is_multiple_of(in_n)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.next() as usize % items.len()]
    }
}

// ---------------------------------------------------------------------------------------------
// Expressions as people write them.

fn bounds(field: Field) -> (i64, i64) {
    let (lo, hi) = field.bounds();
    (i64::from(lo), i64::from(hi))
}

/// A value, biased to the hours and days where DST and month ends bite; names in any case.
fn value(rng: &mut Rng, field: Field) -> (i64, String) {
    let (lo, hi) = bounds(field);
    let n = if rng.chance(3) {
        *rng.pick(match field {
            Field::Minute => &[0, 15, 30, 45, 59][..],
            Field::Hour => &[0, 1, 2, 3, 23],
            Field::DayOfMonth => &[1, 28, 29, 30, 31],
            Field::Month => &[2, 3, 10, 11, 12],
            Field::DayOfWeek => &[0, 6, 7],
        })
    } else {
        rng.range(lo, hi)
    };
    let names: &[&str] = match field {
        Field::Month => &MONTHS,
        Field::DayOfWeek if n < 7 => &DAYS,
        _ => &[],
    };
    if names.is_empty() || rng.chance(2) {
        return (n, n.to_string());
    }
    let name = names[(n - lo) as usize];
    let name = match rng.range(0, 2) {
        0 => name.to_string(),
        1 => name.to_uppercase(),
        _ => name[..1].to_uppercase() + &name[1..],
    };
    (n, name)
}

/// One item of a list. `alone`: the field has no other item (a bare `*` inside a list is
/// valid cron but outside croner's syntax, so it is kept rare).
fn item(rng: &mut Rng, field: Field, alone: bool) -> String {
    let (lo, hi) = bounds(field);
    let span = hi - lo + 1;
    // Rarer syntax that croner does not read (§1): cronie's `5-0`, `~` and `*` in a list.
    if rng.chance(40) {
        return match rng.range(0, 2) {
            0 if field == Field::DayOfWeek => format!("{}-0", rng.range(1, 6)),
            0 | 1 => format!("{}~", value(rng, field).1),
            _ => "*".to_string(),
        };
    }
    match rng.range(0, 8) {
        0..=2 => value(rng, field).1,
        3..=4 => {
            let (a, b) = (value(rng, field), value(rng, field));
            let (a, b) = if a.0 <= b.0 { (a, b) } else { (b, a) };
            let range = format!("{}-{}", a.1, b.1);
            if rng.chance(2) {
                format!("{range}/{}", rng.range(1, span))
            } else {
                range
            }
        }
        5..=6 if alone => "*".to_string(),
        7 => format!("*/{}", rng.range(1, span)),
        _ => value(rng, field).1,
    }
}

fn field_text(rng: &mut Rng, field: Field) -> String {
    let items = if rng.chance(4) { rng.range(2, 3) } else { 1 };
    (0..items)
        .map(|_| item(rng, field, items == 1))
        .collect::<Vec<_>>()
        .join(",")
}

fn expression(rng: &mut Rng) -> String {
    if rng.chance(15) {
        return rng.pick(SPECIALS).to_string();
    }
    Field::ALL
        .iter()
        .map(|&f| field_text(rng, f))
        .collect::<Vec<_>>()
        .join(" ")
}

/// A start in 2000..2040, half the time within three days before an offset change of the zone.
fn start(rng: &mut Rng, tz: &TimeZone) -> Timestamp {
    let mut second = rng.range(START_MIN, START_MAX - 1);
    if rng.chance(2)
        && let Some(tr) = tz.following(ts(second)).next()
    {
        second = tr.timestamp().as_second() - rng.range(0, 3 * 86_400);
    }
    if !rng.chance(4) {
        second -= second.rem_euclid(60);
    }
    ts(second)
}

fn ts(second: i64) -> Timestamp {
    Timestamp::from_second(second).unwrap()
}

// ---------------------------------------------------------------------------------------------
// The documented differences (docs/croner-differences.md, one section per variant).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Known {
    /// §3: a day-of-week range ending in the name `sun` starting at Sunday (`sun-sun`,
    /// `0-SUN`): croner turns `-SUN` into `-7`, every day.
    SundayRangeToSun,
    /// §4: the entry's class differs (crond's fixed-time `0,30 2 * * *` is an interval job to
    /// croner) and a change of offset lies near the times compared.
    ClassAcrossTransition,
}

/// Does the text of one field begin with `*` without being exactly `*`?
fn starred_but_not_star(text: &str) -> bool {
    text.starts_with('*') && text != "*"
}

fn fields(expr: &str) -> Vec<&str> {
    expr.split_whitespace().collect()
}

/// Which documented class, if any, a case that croner *parsed* belongs to; `theirs` and `ours`
/// are the compared answers.
fn known_difference(
    expr: &str,
    schedule: &Schedule,
    cron: &Cron,
    tz: &TimeZone,
    after: Timestamp,
    answers: [Option<Timestamp>; 2],
) -> Option<Known> {
    let f = fields(expr);
    if f.len() == 5 {
        let dow = f[4].to_ascii_lowercase();
        let sunday_to_sun = dow.split(',').any(|item| {
            let range = item.split('/').next().unwrap_or("");
            matches!(range.split_once('-'), Some((a, "sun")) if a == "0" || a == "sun")
        });
        if sunday_to_sun {
            return Some(Known::SundayRangeToSun);
        }
    }
    let croner_fixed = cron.determine_job_type() == croner::JobType::FixedTime;
    let ours_fixed = schedule.class() == Class::FixedTime;
    if croner_fixed != ours_fixed {
        // A fixed-time entry remembers the clock up to two days back (a fold), and a gap moves a
        // fire time forward to its end: look a little either side of the compared span.
        let from = after.as_second() - 2 * 86_400;
        let to = answers
            .iter()
            .flatten()
            .map(|t| t.as_second())
            .max()
            .unwrap_or(after.as_second())
            + 86_400;
        let changes = tz
            .following(ts(from))
            .map(|tr| tr.timestamp())
            .take_while(|t| t.as_second() <= to)
            .any(|t| tz.to_offset(t) != tz.to_offset(ts(t.as_second() - 1)));
        if changes {
            return Some(Known::ClassAcrossTransition);
        }
    }
    None
}

/// The croner reading of a Vixie expression: §2 of the document, Vixie's day rule. croner
/// applies "both days must match" only when a day field is exactly `*`; Vixie when it *begins*
/// with `*`. With such a field (`*/2`, `*,5`) croner is asked for its AND mode instead, which
/// is what Vixie means.
fn croner_parse(expr: &str) -> Result<Cron, croner::errors::CronError> {
    let f = fields(expr);
    let vixie_and = f.len() == 5
        && (starred_but_not_star(f[2]) || starred_but_not_star(f[4]))
        && f[2] != "*"
        && f[4] != "*";
    CronParser::builder()
        .dom_and_dow(vixie_and)
        .build()
        .parse(expr)
}

/// Why croner may refuse an expression that crond reads (§1).
fn croner_cannot_read(expr: &str) -> bool {
    let dow_reversed_to_zero = fields(expr).get(4).is_some_and(|dow| {
        dow.to_ascii_lowercase().split(',').any(|item| {
            let range = item.split('/').next().unwrap_or("");
            matches!(range.split_once('-'), Some((a, "0")) if a != "0" && a != "sun")
        })
    });
    let star_in_list = fields(expr)
        .iter()
        .any(|f| f.contains(',') && f.split(',').any(|item| item == "*"));
    expr.contains('~') || expr == "@midnight" || dow_reversed_to_zero || star_in_list
}

#[derive(Debug, Default)]
struct Counts {
    compared: usize,
    agreed: usize,
    never: usize,
    rejects: usize,
    sunday_to_sun: usize,
    class_across: usize,
    vixie_and: usize,
}

#[test]
fn next_after_agrees_with_croner_outside_the_documented_differences() {
    let seed = std::env::var("CRONER_SEED")
        .ok()
        .and_then(|s| s.parse().ok());
    let mut rng = Rng(seed.unwrap_or(0x5eed_c0de_2026_1121));
    let mut counts = Counts::default();
    let mut failures = Vec::new();
    for _ in 0..CASES {
        let expr = expression(&mut rng);
        let zone_name = *rng.pick(ZONES);
        let zone = Zone::get(zone_name).unwrap();
        let tz = zone.time_zone().clone();
        let after = start(&mut rng, &tz);
        let When::Periodic(schedule) = parse_expression(&expr, 1).expect("generated text parses")
        else {
            unreachable!("@reboot is never generated")
        };
        let cron = match croner_parse(&expr) {
            Ok(cron) => cron,
            Err(e) => {
                assert!(
                    croner_cannot_read(&expr),
                    "croner rejects {expr:?} for an undocumented reason: {e}"
                );
                counts.rejects += 1;
                continue;
            }
        };
        assert!(
            !croner_cannot_read(&expr),
            "croner reads {expr:?}: docs/croner-differences.md §1 is out of date"
        );
        let f = fields(&expr);
        if f.len() == 5 && (starred_but_not_star(f[2]) || starred_but_not_star(f[4])) {
            counts.vixie_and += 1;
        }
        if !schedule.can_fire() {
            // §5: both find no time; croner says so with an error after its search.
            counts.never += 1;
            assert_eq!(schedule.next_after(after, &zone), None, "{expr:?}");
            let theirs = cron.find_next_occurrence(&after.to_zoned(tz.clone()), false);
            assert!(theirs.is_err(), "{expr:?}: croner finds {theirs:?}");
            continue;
        }
        let mut from = after;
        for _ in 0..CHAIN {
            let ours = schedule.next_after(from, &zone);
            let theirs = cron
                .find_next_occurrence(&from.to_zoned(tz.clone()), false)
                .ok()
                .map(|z| z.timestamp());
            counts.compared += 1;
            if ours == theirs {
                counts.agreed += 1;
                match ours {
                    Some(t) => from = t,
                    None => break,
                }
                continue;
            }
            match known_difference(&expr, &schedule, &cron, &tz, from, [ours, theirs]) {
                Some(Known::SundayRangeToSun) => counts.sunday_to_sun += 1,
                Some(Known::ClassAcrossTransition) => counts.class_across += 1,
                None => failures.push(format!(
                    "{expr:?} in {zone_name} after {from}: crond {ours:?}, croner {theirs:?}"
                )),
            }
            break;
        }
    }
    assert!(
        failures.is_empty(),
        "{} undocumented differences (counts {counts:?}):\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The run must actually exercise what it claims to: most comparisons agree, and each
    // documented class shows up, so a generator change can't silently stop covering them.
    assert!(
        counts.agreed * 10 > counts.compared * 9,
        "too few agreements: {counts:?}"
    );
    assert!(
        counts.rejects > 0 && counts.vixie_and > 0 && counts.never > 0,
        "{counts:?}"
    );
    assert!(
        counts.sunday_to_sun > 0 && counts.class_across > 0,
        "{counts:?}"
    );
}
