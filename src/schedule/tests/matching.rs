//! Matching a minute, and the day-of-month / day-of-week rule.

use super::*;

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
