//! Unit tests of the schedule engine: every syntax rule and error, the day rule, the class, and
//! fire times across DST transitions in zones of every shape.

use jiff::Timestamp;

use super::*;

const SEED: u64 = 0x5eed;

fn parse(expr: &str) -> Schedule {
    match parse_expression(expr, SEED) {
        Ok(When::Periodic(s)) => s,
        other => panic!("{expr:?} did not parse to a schedule: {other:?}"),
    }
}

fn error(expr: &str) -> ParseError {
    match parse_expression(expr, SEED) {
        Err(e) => e,
        Ok(w) => panic!("{expr:?} parsed to {w} but should be an error"),
    }
}

/// The values set in a field, for readable assertions.
fn values(s: &Schedule, field: Field) -> Vec<u8> {
    (0..64u8)
        .filter(|v| s.bits(field) & (1 << v) != 0)
        .collect()
}

fn ts(text: &str) -> Timestamp {
    text.parse().expect("test timestamps are RFC 3339")
}

/// The next `n` fire times after `after`, formatted in the zone, as cronnext prints them.
fn next_n(expr: &str, zone: &str, after: &str, n: usize) -> Vec<String> {
    let zone = Zone::get(zone).expect("test zones exist");
    let s = parse(expr);
    let mut at = ts(after);
    let mut out = Vec::new();
    for _ in 0..n {
        at = s.next_after(at, &zone).expect("the schedule fires");
        out.push(zone.format_rfc3339(at));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Syntax

#[test]
fn numbers_ranges_lists_and_steps_set_the_right_bits() {
    let s = parse("5 0-3 1,15,31 */4 1-5/2");
    assert_eq!(values(&s, Field::Minute), [5]);
    assert_eq!(values(&s, Field::Hour), [0, 1, 2, 3]);
    assert_eq!(values(&s, Field::DayOfMonth), [1, 15, 31]);
    assert_eq!(values(&s, Field::Month), [1, 5, 9]);
    assert_eq!(values(&s, Field::DayOfWeek), [1, 3, 5]);
}

#[test]
fn a_star_selects_the_whole_range_and_a_star_step_starts_at_the_lowest_value() {
    let s = parse("*/15 * */10 * *");
    assert_eq!(values(&s, Field::Minute), [0, 15, 30, 45]);
    assert_eq!(values(&s, Field::Hour), (0..24).collect::<Vec<_>>());
    assert_eq!(values(&s, Field::DayOfMonth), [1, 11, 21, 31]);
    assert_eq!(values(&s, Field::DayOfWeek), (0..7).collect::<Vec<_>>());
}

#[test]
fn names_work_in_any_case_and_inside_ranges_and_lists() {
    let s = parse("0 0 * JAN,mar,Dec mon-FRI");
    assert_eq!(values(&s, Field::Month), [1, 3, 12]);
    assert_eq!(values(&s, Field::DayOfWeek), [1, 2, 3, 4, 5]);
    let s = parse("0 0 * jan-mar sun,sat");
    assert_eq!(values(&s, Field::Month), [1, 2, 3]);
    assert_eq!(values(&s, Field::DayOfWeek), [0, 6]);
    // A name and a number may be mixed in a range, as Debian's parser allows.
    assert_eq!(
        values(&parse("0 0 * * 1-fri"), Field::DayOfWeek),
        [1, 2, 3, 4, 5]
    );
}

#[test]
fn day_of_week_zero_and_seven_are_both_sunday() {
    assert_eq!(values(&parse("0 0 * * 7"), Field::DayOfWeek), [0]);
    assert_eq!(values(&parse("0 0 * * 0"), Field::DayOfWeek), [0]);
    assert_eq!(
        values(&parse("0 0 * * 0-7"), Field::DayOfWeek),
        (0..7).collect::<Vec<_>>()
    );
    assert_eq!(
        values(&parse("0 0 * * 0-7/2"), Field::DayOfWeek),
        [0, 2, 4, 6]
    );
    assert_eq!(
        values(&parse("0 0 * * sun-sat"), Field::DayOfWeek),
        (0..7).collect::<Vec<_>>()
    );
}

#[test]
fn five_to_zero_in_day_of_week_means_friday_to_sunday_as_cronie_reads_it() {
    assert_eq!(values(&parse("0 0 * * 5-0"), Field::DayOfWeek), [0, 5, 6]);
    assert_eq!(
        values(&parse("0 0 * * fri-sun"), Field::DayOfWeek),
        [0, 5, 6]
    );
}

#[test]
fn leading_zeros_and_steps_larger_than_the_range_are_accepted_as_debian_does() {
    assert_eq!(values(&parse("05 007 * * *"), Field::Minute), [5]);
    assert_eq!(values(&parse("*/90 * * * *"), Field::Minute), [0]);
    assert_eq!(values(&parse("10-20/30 * * * *"), Field::Minute), [10]);
}

#[test]
fn a_star_later_in_a_list_selects_everything_but_does_not_star_the_field() {
    let s = parse("5,* 1 * * *");
    assert_eq!(values(&s, Field::Minute), (0..60).collect::<Vec<_>>());
    assert!(!s.is_starred(Field::Minute));
    assert_eq!(s.class(), Class::FixedTime);
}

#[test]
fn blanks_between_fields_may_be_tabs_or_several_spaces() {
    assert_eq!(parse("1\t2  3 \t4 5"), parse("1 2 3 4 5"));
}

#[test]
fn the_specials_mean_what_crontab_5_says() {
    let cases = [
        ("@yearly", "0 0 1 1 *"),
        ("@annually", "0 0 1 1 *"),
        ("@monthly", "0 0 1 * *"),
        ("@weekly", "0 0 * * 0"),
        ("@daily", "0 0 * * *"),
        ("@midnight", "0 0 * * *"),
        ("@hourly", "0 * * * *"),
    ];
    for (special, expr) in cases {
        let (a, b) = (parse(special), parse(expr));
        for field in Field::ALL {
            assert_eq!(a.bits(field), b.bits(field), "{special} {field:?}");
        }
    }
    assert_eq!(parse_expression("@reboot", SEED), Ok(When::Reboot));
}

#[test]
fn hourly_is_a_wildcard_entry_and_the_other_specials_are_fixed_time() {
    assert_eq!(parse("@hourly").class(), Class::Wildcard);
    for special in ["@yearly", "@monthly", "@weekly", "@daily", "@midnight"] {
        assert_eq!(parse(special).class(), Class::FixedTime, "{special}");
    }
}

#[test]
fn the_class_follows_the_first_character_of_minute_and_hour() {
    assert_eq!(parse("30 2 * * *").class(), Class::FixedTime);
    assert_eq!(parse("0-59 0-23 * * *").class(), Class::FixedTime);
    assert_eq!(parse("* 2 * * *").class(), Class::Wildcard);
    assert_eq!(parse("*/10 2 * * *").class(), Class::Wildcard);
    assert_eq!(parse("30 * * * *").class(), Class::Wildcard);
    assert_eq!(parse("30 */2 * * *").class(), Class::Wildcard);
}

#[test]
fn random_picks_lie_in_their_range_and_are_stable_for_the_same_entry_and_seed() {
    for _ in 0..3 {
        let a = parse("10~20 ~ * * *");
        let m = values(&a, Field::Minute);
        assert_eq!(m.len(), 1);
        assert!((10..=20).contains(&m[0]), "{m:?}");
        assert_eq!(values(&a, Field::Hour).len(), 1);
        assert_eq!(a, parse("10~20 ~ * * *"), "same text, same seed, same pick");
    }
    let left_open = parse("~5 * * * *");
    assert!(values(&left_open, Field::Minute)[0] <= 5);
    let right_open = parse("50~ * * * *");
    assert!(values(&right_open, Field::Minute)[0] >= 50);
    let dow = parse("0 0 * * ~");
    assert!(values(&dow, Field::DayOfWeek)[0] <= 6);
}

#[test]
fn random_picks_change_with_the_host_seed_for_some_hosts() {
    let picks: std::collections::HashSet<u64> = (0..32u64)
        .map(|seed| match parse_expression("~ * * * *", seed) {
            Ok(When::Periodic(s)) => s.bits(Field::Minute),
            other => panic!("{other:?}"),
        })
        .collect();
    assert!(
        picks.len() > 8,
        "32 hosts got only {} distinct minutes",
        picks.len()
    );
}

#[test]
fn the_host_seed_is_a_fixed_function_of_the_name() {
    // FNV-1a of the bytes: a documented hash that will not change between releases, so `~` picks
    // survive an upgrade. (Reference values of FNV-1a 64.)
    assert_eq!(host_seed(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(host_seed(b"a"), 0xaf63_dc4c_8601_ec8c);
}

// ---------------------------------------------------------------------------------------------
// Errors: precise, with the column of the offending character

fn assert_error(expr: &str, column: usize, contains: &str) {
    let e = error(expr);
    assert_eq!(e.offset + 1, column, "{expr:?}: {e}");
    assert!(e.message.contains(contains), "{expr:?}: {e}");
}

#[test]
fn out_of_range_values_are_errors_at_the_value() {
    assert_error(
        "60 * * * *",
        1,
        "60 is out of range 0-59 in the minute field",
    );
    assert_error("0 24 * * *", 3, "24 is out of range 0-23 in the hour field");
    assert_error(
        "0 0 0 * *",
        5,
        "0 is out of range 1-31 in the day of month field",
    );
    assert_error("0 0 32 * *", 5, "out of range 1-31");
    assert_error("0 0 * 13 *", 7, "out of range 1-12 in the month field");
    assert_error("0 0 * 0 *", 7, "out of range 1-12");
    assert_error("0 0 * * 8", 9, "out of range 0-7 in the day of week field");
    assert_error("1-99 * * * *", 3, "99 is out of range");
    assert_error("99999999999999999999 * * * *", 1, "out of range");
}

#[test]
fn a_step_of_zero_and_a_step_without_a_range_are_errors() {
    assert_error("*/0 * * * *", 3, "a step of 0");
    assert_error("1/20 * * * *", 2, "a step needs a range or '*'");
    assert_error("*/ * * * *", 3, "expected a step number");
    assert_error("*/x * * * *", 3, "expected a step number");
    assert_error("*/300 * * * *", 3, "too large");
}

#[test]
fn reversed_ranges_are_errors_except_cronies_five_to_zero() {
    assert_error("0 0 * * 5-1", 9, "range 5-1 is reversed");
    assert_error(
        "30-10 * * * *",
        1,
        "range 30-10 is reversed in the minute field (write 10-30)",
    );
    assert_error("0 0 * dec-jan *", 7, "reversed");
}

#[test]
fn unknown_names_and_names_in_numeric_fields_are_errors() {
    assert_error("0 0 * foo *", 7, "unknown month name 'foo'");
    assert_error("0 0 * * monday", 9, "unknown day name 'monday'");
    assert_error("0 mon * * *", 3, "'mon' is not a number, in the hour field");
    assert_error("0 0 * jan-foo *", 11, "unknown month name");
}

#[test]
fn what_debian_silently_misreads_is_an_error() {
    assert_error("0 0 * * 5#3", 10, "'#' (nth weekday) is not cron syntax");
    assert_error("1~5x * * * *", 4, "unexpected 'x' after a number");
    assert_error("0 0 ? * *", 5, "'?' is not cron syntax");
    assert_error("0 0 L * *", 5, "'L' (last day) is not cron syntax");
    assert_error("0 0 5L * *", 6, "'L' (last day)");
    assert_error("0 0 15W * *", 7, "'W' (nearest weekday)");
    assert_error("0 0 W * *", 5, "'W' (nearest weekday)");
    assert_error("5xyz * * * *", 2, "unexpected 'x' after a number");
    assert_error("1-2-3 * * * *", 4, "unexpected '-'");
}

#[test]
fn empty_items_and_stray_punctuation_are_errors() {
    assert_error(",5 * * * *", 1, "empty item in the minute field");
    assert_error("1,,5 * * * *", 3, "empty item");
    assert_error("5, * * * *", 3, "empty item");
    assert_error("1- * * * *", 3, "expected a number after '-'");
    assert_error("0 0 * * 1~3/2", 12, "cannot take a step");
    assert_error("0 0 * * \u{e9}", 9, "unexpected byte 0xc3");
}

#[test]
fn the_wrong_number_of_fields_is_an_error_that_counts_them() {
    assert_error(
        "* * * *",
        8,
        "expected 5 time fields (minute hour day-of-month month day-of-week), found 4",
    );
    assert_error("", 1, "found 0");
    assert_error("0 0 * * * *", 11, "found 6");
    assert_error("0 0 0 * * * *", 5, "out of range");
    assert_error("@daily *", 8, "unexpected text after the @-special");
}

#[test]
fn unknown_and_upper_case_specials_are_errors() {
    assert_error("@every", 1, "unknown special '@every'");
    assert_error("@Daily", 1, "unknown special '@Daily'");
    assert_error("@", 1, "unknown special");
}

// ---------------------------------------------------------------------------------------------
// Matching and the day rule

fn at(text: &str) -> jiff::civil::DateTime {
    text.parse().expect("civil date-time")
}

#[test]
fn day_fields_both_restricted_match_when_either_matches() {
    // 30 4 1,15 * 5: the 1st and 15th, plus every Friday (crontab(5)).
    let s = parse("30 4 1,15 * 5");
    assert!(s.matches(at("2026-05-01T04:30"))); // Friday the 1st
    assert!(s.matches(at("2026-05-15T04:30"))); // a Friday and the 15th
    assert!(s.matches(at("2026-05-08T04:30"))); // a Friday
    assert!(s.matches(at("2026-06-01T04:30"))); // a Monday, the 1st
    assert!(!s.matches(at("2026-05-09T04:30"))); // a Saturday, the 9th
    assert!(!s.matches(at("2026-05-08T04:31")));
}

#[test]
fn a_starred_day_field_makes_the_days_match_both_as_debian_documents() {
    // "0 0 */2 * sun runs every Sunday that's an uneven date" (Debian crontab(5) LIMITATIONS).
    let s = parse("0 0 */2 * sun");
    assert!(s.matches(at("2026-11-01T00:00"))); // Sunday the 1st
    assert!(!s.matches(at("2026-11-08T00:00"))); // Sunday the 8th: even
    assert!(!s.matches(at("2026-11-03T00:00"))); // Tuesday the 3rd: not Sunday
    let s = parse("0 0 13 * *");
    assert!(s.matches(at("2026-11-13T00:00")));
    let s = parse("0 0 1 * */2");
    assert!(
        s.matches(at("2026-11-01T00:00")),
        "Sunday the 1st: dow 0 is in */2"
    );
    assert!(
        s.matches(at("2026-12-01T00:00")),
        "Tuesday the 1st: weekday 2 is in */2"
    );
    assert!(
        !s.matches(at("2026-06-01T00:00")),
        "Monday the 1st: weekday 1 is not in */2"
    );
    assert!(
        !s.matches(at("2026-11-03T00:00")),
        "Tuesday the 3rd: not the 1st"
    );
}

#[test]
fn matches_ignores_seconds_and_checks_every_field() {
    let s = parse("15 10 * 6 *");
    assert!(s.matches(at("2026-06-03T10:15:59")));
    assert!(!s.matches(at("2026-07-03T10:15")));
    assert!(!s.matches(at("2026-06-03T11:15")));
}

#[test]
fn an_expression_that_can_never_fire_is_accepted_and_yields_no_time() {
    for expr in ["0 0 30 2 *", "0 0 31 4,6,9,11 *", "0 0 31 2 *"] {
        let s = parse(expr);
        assert!(!s.can_fire(), "{expr}");
        assert_eq!(
            s.next_after(ts("2026-01-01T00:00:00Z"), &Zone::utc()),
            None,
            "{expr}"
        );
    }
    // With both day fields restricted the weekday still fires.
    let s = parse("0 0 30 2 mon");
    assert!(s.can_fire());
    assert!(parse("0 0 29 2 *").can_fire());
}

// ---------------------------------------------------------------------------------------------
// Next fire time

#[test]
fn next_after_is_strictly_after_the_given_instant() {
    let zone = Zone::utc();
    let s = parse("0 12 * * *");
    let noon = ts("2026-06-01T12:00:00Z");
    assert_eq!(s.next_after(noon, &zone), Some(ts("2026-06-02T12:00:00Z")));
    assert_eq!(
        s.next_after(ts("2026-06-01T11:59:59.999Z"), &zone),
        Some(noon)
    );
    assert_eq!(
        s.next_after(ts("2026-06-01T12:00:00.5Z"), &zone),
        Some(ts("2026-06-02T12:00:00Z"))
    );
}

#[test]
fn leap_days_come_round_every_four_years_except_in_2100() {
    assert_eq!(
        next_n("0 0 29 2 *", "UTC", "2026-11-21T00:00:00Z", 3),
        [
            "2028-02-29T00:00:00+00:00",
            "2032-02-29T00:00:00+00:00",
            "2036-02-29T00:00:00+00:00"
        ]
    );
    assert_eq!(
        next_n("0 0 29 2 *", "UTC", "2096-03-01T00:00:00Z", 1),
        ["2104-02-29T00:00:00+00:00"]
    );
}

#[test]
fn weekdays_at_noon_skip_the_weekend() {
    assert_eq!(
        next_n("0 12 * * MON-FRI", "UTC", "2026-11-20T12:00:00Z", 3),
        [
            "2026-11-23T12:00:00+00:00",
            "2026-11-24T12:00:00+00:00",
            "2026-11-25T12:00:00+00:00"
        ]
    );
}

#[test]
fn friday_the_thirteenth_with_a_starred_weekday_needs_both() {
    // `0 0 13 * 5` is 13th OR Friday; `0 0 13 * */1`... starred dow: 13th AND any day.
    assert_eq!(
        next_n("0 0 13 * *", "UTC", "2026-11-01T00:00:00Z", 1),
        ["2026-11-13T00:00:00+00:00"]
    );
    assert_eq!(
        next_n("0 0 13 * 5", "UTC", "2026-11-01T00:00:00Z", 3),
        [
            "2026-11-06T00:00:00+00:00",
            "2026-11-13T00:00:00+00:00",
            "2026-11-20T00:00:00+00:00"
        ]
    );
    assert_eq!(
        next_n("0 0 */13 * fri", "UTC", "2026-01-01T00:00:00Z", 2),
        ["2026-02-27T00:00:00+00:00", "2026-03-27T00:00:00+00:00"],
        "odd days 1, 14 and 27 that are Fridays"
    );
}

#[test]
fn the_last_minute_of_the_year_rolls_into_the_next_year() {
    assert_eq!(
        next_n("59 23 31 12 *", "UTC", "2026-12-31T23:59:00Z", 1),
        ["2027-12-31T23:59:00+00:00"]
    );
    assert_eq!(
        next_n("* * * * *", "UTC", "2026-12-31T23:59:00Z", 1),
        ["2027-01-01T00:00:00+00:00"]
    );
}

// DST: America/New_York springs forward 2026-03-08 02:00 EST -> 03:00 EDT (07:00Z) and falls
// back 2026-11-01 02:00 EDT -> 01:00 EST (06:00Z).

#[test]
fn new_york_a_fixed_time_in_the_spring_gap_runs_once_when_the_clock_jumps() {
    assert_eq!(
        next_n(
            "30 2 * * *",
            "America/New_York",
            "2026-03-07T12:00:00-05:00",
            3
        ),
        [
            "2026-03-08T03:00:00-04:00",
            "2026-03-09T02:30:00-04:00",
            "2026-03-10T02:30:00-04:00"
        ]
    );
    // Two fixed times in the gap still make one run at the end of the gap.
    assert_eq!(
        next_n(
            "0,30 2 * * *",
            "America/New_York",
            "2026-03-08T01:00:00-05:00",
            2
        ),
        ["2026-03-08T03:00:00-04:00", "2026-03-09T02:00:00-04:00"]
    );
    // A job at 03:00 itself is not delayed or doubled.
    assert_eq!(
        next_n(
            "0 3 * * *",
            "America/New_York",
            "2026-03-08T01:00:00-05:00",
            1
        ),
        ["2026-03-08T03:00:00-04:00"]
    );
}

#[test]
fn new_york_wildcard_entries_skip_the_missing_hour() {
    assert_eq!(
        next_n(
            "*/30 * * * *",
            "America/New_York",
            "2026-03-08T01:00:00-05:00",
            3
        ),
        [
            "2026-03-08T01:30:00-05:00",
            "2026-03-08T03:00:00-04:00",
            "2026-03-08T03:30:00-04:00"
        ]
    );
    assert_eq!(
        next_n(
            "15 * * * *",
            "America/New_York",
            "2026-03-08T01:20:00-05:00",
            1
        ),
        ["2026-03-08T03:15:00-04:00"]
    );
}

#[test]
fn new_york_a_fixed_time_in_the_fall_fold_runs_once_in_the_first_pass() {
    assert_eq!(
        next_n(
            "30 1 * * *",
            "America/New_York",
            "2026-10-31T12:00:00-04:00",
            2
        ),
        ["2026-11-01T01:30:00-04:00", "2026-11-02T01:30:00-05:00"]
    );
    // Asked from inside the second pass, the fold's minutes are already done.
    assert_eq!(
        next_n(
            "45 1 * * *",
            "America/New_York",
            "2026-11-01T01:10:00-05:00",
            1
        ),
        ["2026-11-02T01:45:00-05:00"]
    );
    assert_eq!(
        next_n(
            "0 2 * * *",
            "America/New_York",
            "2026-11-01T01:10:00-05:00",
            1
        ),
        ["2026-11-01T02:00:00-05:00"]
    );
}

#[test]
fn new_york_wildcard_entries_run_in_both_passes_of_the_fold() {
    assert_eq!(
        next_n(
            "*/30 * * * *",
            "America/New_York",
            "2026-11-01T00:45:00-04:00",
            5
        ),
        [
            "2026-11-01T01:00:00-04:00",
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:00:00-05:00",
            "2026-11-01T01:30:00-05:00",
            "2026-11-01T02:00:00-05:00",
        ]
    );
    // Minute fixed, hour starred: a wildcard entry (Vixie's HR_STAR), so it repeats too.
    assert_eq!(
        next_n(
            "30 * * * *",
            "America/New_York",
            "2026-11-01T01:00:00-04:00",
            3
        ),
        [
            "2026-11-01T01:30:00-04:00",
            "2026-11-01T01:30:00-05:00",
            "2026-11-01T02:30:00-05:00"
        ]
    );
}

#[test]
fn london_follows_the_same_rules_an_hour_after_midnight() {
    // Europe/London: 2026-03-29 01:00 GMT -> 02:00 BST; 2026-10-25 02:00 BST -> 01:00 GMT.
    assert_eq!(
        next_n("30 1 * * *", "Europe/London", "2026-03-28T12:00:00Z", 2),
        ["2026-03-29T02:00:00+01:00", "2026-03-30T01:30:00+01:00"]
    );
    assert_eq!(
        next_n("30 1 * * *", "Europe/London", "2026-10-24T12:00:00Z", 2),
        ["2026-10-25T01:30:00+01:00", "2026-10-26T01:30:00+00:00"]
    );
    assert_eq!(
        next_n("*/30 1 * * *", "Europe/London", "2026-10-24T23:59:00Z", 4),
        [
            "2026-10-25T01:00:00+01:00",
            "2026-10-25T01:30:00+01:00",
            "2026-10-25T01:00:00+00:00",
            "2026-10-25T01:30:00+00:00",
        ]
    );
}

#[test]
fn lord_howe_shifts_by_half_an_hour() {
    // Australia/Lord_Howe: +10:30 standard, +11:00 summer. 2026-10-04 02:00 -> 02:30 (gap of 30
    // minutes); 2026-04-05 02:00 -> 01:30 (fold of 30 minutes).
    assert_eq!(
        next_n(
            "15 2 * * *",
            "Australia/Lord_Howe",
            "2026-10-03T12:00:00+10:30",
            2
        ),
        ["2026-10-04T02:30:00+11:00", "2026-10-05T02:15:00+11:00"]
    );
    assert_eq!(
        next_n(
            "45 2 * * *",
            "Australia/Lord_Howe",
            "2026-10-03T12:00:00+10:30",
            1
        ),
        ["2026-10-04T02:45:00+11:00"]
    );
    assert_eq!(
        next_n(
            "45 1 * * *",
            "Australia/Lord_Howe",
            "2026-04-04T12:00:00+11:00",
            2
        ),
        ["2026-04-05T01:45:00+11:00", "2026-04-06T01:45:00+10:30"]
    );
    assert_eq!(
        next_n(
            "*/15 1 * * *",
            "Australia/Lord_Howe",
            "2026-04-05T01:20:00+11:00",
            4
        ),
        [
            "2026-04-05T01:30:00+11:00",
            "2026-04-05T01:45:00+11:00",
            "2026-04-05T01:30:00+10:30",
            "2026-04-05T01:45:00+10:30",
        ]
    );
}

#[test]
fn zones_forty_five_minutes_off_the_hour_fire_on_their_own_wall_clock() {
    assert_eq!(
        next_n("0 9 * * *", "Asia/Kathmandu", "2026-06-01T00:00:00Z", 2),
        ["2026-06-01T09:00:00+05:45", "2026-06-02T09:00:00+05:45"]
    );
    assert_eq!(
        next_n("*/20 * * * *", "Australia/Eucla", "2026-06-01T00:05:00Z", 2),
        ["2026-06-01T09:00:00+08:45", "2026-06-01T09:20:00+08:45"]
    );
}

#[test]
fn zones_without_dst_and_utc_have_no_surprises() {
    assert_eq!(
        next_n("30 2 * * *", "Asia/Tokyo", "2026-03-07T12:00:00+09:00", 2),
        ["2026-03-08T02:30:00+09:00", "2026-03-09T02:30:00+09:00"]
    );
    assert_eq!(
        next_n("30 1 * * *", "UTC", "2026-10-31T12:00:00Z", 2),
        ["2026-11-01T01:30:00+00:00", "2026-11-02T01:30:00+00:00"]
    );
}

#[test]
fn a_change_of_standard_offset_is_handled_like_a_fold() {
    // Europe/Moscow moved from +04 to +03 on 2014-10-26 at 02:00 local (clocks back an hour).
    assert_eq!(
        next_n(
            "30 1 * * *",
            "Europe/Moscow",
            "2014-10-25T12:00:00+04:00",
            2
        ),
        ["2014-10-26T01:30:00+04:00", "2014-10-27T01:30:00+03:00"]
    );
    // America/Caracas moved from -04:30 to -04:00 on 2016-05-01 at 02:30 (a 30-minute gap).
    assert_eq!(
        next_n(
            "45 2 * * *",
            "America/Caracas",
            "2016-04-30T12:00:00-04:30",
            2
        ),
        ["2016-05-01T03:00:00-04:00", "2016-05-02T02:45:00-04:00"]
    );
}

#[test]
fn a_minute_by_minute_walk_agrees_with_next_after_around_both_transitions_in_new_york() {
    // The rule written out per instant, independently of next.rs: walk UTC minutes and decide.
    let zone = Zone::get("America/New_York").unwrap();
    let tz = zone.time_zone().clone();
    let exprs = [
        "30 2 * * *",
        "*/30 * * * *",
        "0 1 * * *",
        "15 * * * 0",
        "0 0 */2 * sun",
        "0,30 1-3 * * *",
    ];
    for (expr, window) in exprs.iter().flat_map(|e| {
        [
            (e, "2026-03-01T00:00:00Z"),
            (e, "2026-10-25T00:00:00Z"),
            // Outside the zone's transition table (1970..2200): jiff answers directly.
            (e, "2250-03-05T00:00:00Z"),
            (e, "1966-04-20T00:00:00Z"),
        ]
    }) {
        let s = parse(expr);
        let start = ts(window).as_second();
        let days = 14;
        let mut expected = Vec::new();
        let mut seen_max = i64::MIN;
        for minute in 0..(days * 24 * 60) {
            let t = start + minute * 60;
            let stamp = Timestamp::from_second(t).unwrap();
            let local = tz.to_datetime(stamp);
            let prev = tz.to_datetime(Timestamp::from_second(t - 60).unwrap());
            let local_sec = local
                .to_zoned(jiff::tz::TimeZone::UTC)
                .unwrap()
                .timestamp()
                .as_second();
            let prev_sec = prev
                .to_zoned(jiff::tz::TimeZone::UTC)
                .unwrap()
                .timestamp()
                .as_second();
            let fires = match s.class() {
                Class::Wildcard => s.matches(local),
                Class::FixedTime => {
                    // Fixed: each matching wall minute fires the first time the clock reaches it.
                    let mut m = (seen_max.max(prev_sec) / 60 + 1) * 60;
                    let mut any = false;
                    while m <= local_sec {
                        let dt = Timestamp::from_second(m)
                            .unwrap()
                            .to_zoned(jiff::tz::TimeZone::UTC)
                            .datetime();
                        any |= s.matches(dt);
                        m += 60;
                    }
                    any
                }
            };
            seen_max = seen_max.max(local_sec);
            if fires {
                expected.push(stamp);
            }
        }
        let mut got = Vec::new();
        let mut at = Timestamp::from_second(start - 1).unwrap();
        while let Some(next) = s.next_after(at, &zone) {
            if next.as_second() >= start + days * 24 * 3600 {
                break;
            }
            got.push(next);
            at = next;
        }
        assert!(!expected.is_empty(), "{expr}: the walk found no run at all");
        assert_eq!(got, expected, "{expr} from {window}");
    }
}

// ---------------------------------------------------------------------------------------------
// Display

#[test]
fn display_prints_a_canonical_expression_that_parses_back_to_the_same_schedule() {
    let cases = [
        ("*/15 0-3 1,15,31 */4 1-5/2", "*/15 0-3 1,15,31 */4 1,3,5"),
        ("* * * * *", "* * * * *"),
        ("*/20,5 * * * 7", "*/60,5,20,40 * * * 0"),
        ("@hourly", "0 * * * *"),
        ("0 0 * * fri-sun", "0 0 * * 0,5-6"),
        ("5-10,7 1 2 3 4", "5-10 1 2 3 4"),
    ];
    for (expr, shown) in cases {
        let s = parse(expr);
        assert_eq!(s.to_string(), shown, "{expr}");
        assert_eq!(parse(&s.to_string()), s, "{expr} round trip");
    }
}
