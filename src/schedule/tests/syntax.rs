//! Syntax: every form a field can take, and the errors, each at the column of the offending
//! character.

use super::*;

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

#[test]
fn random_picks_are_the_same_in_every_release() {
    // The picks come from FNV-1a of the host and the line: they must survive an upgrade.
    let picks = |text: &str| match parse_expression(text, host_seed(b"host-a")).unwrap() {
        When::Periodic(s) => (
            s.bits(Field::Minute),
            s.bits(Field::Hour),
            s.bits(Field::DayOfWeek),
        ),
        other => panic!("{other:?}"),
    };
    // Minute 59, hour 16, Saturday.
    assert_eq!(picks("~ 10~20 * * ~"), (1 << 59, 1 << 16, 1 << 6));
}

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
    assert_error("@often", 1, "unknown special '@often'");
    assert_error("@Daily", 1, "unknown special '@Daily'");
    assert_error("@", 1, "unknown special");
}

#[test]
fn every_takes_a_duration_and_a_bad_one_is_an_error_at_it() {
    assert_eq!(parse_expression("@every 5s", 0), Ok(When::Every(5)));
    assert_eq!(parse_expression("@every 1h30m", 0), Ok(When::Every(5400)));
    assert_eq!(When::Every(5400).to_string(), "@every 1h30m");
    assert_error("@every", 7, "@every needs a duration");
    assert_error("@every soon", 8, "@every: 'soon' is not a duration");
    assert_error("@every 0s", 8, "is zero");
    assert_error("@every 5s 6s", 11, "unexpected text after the @-special");
}
