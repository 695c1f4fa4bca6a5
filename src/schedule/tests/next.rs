//! Next fire times: strictly after the instant, across years, leap days and DST changes in
//! zones of every shape.

use super::*;

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
