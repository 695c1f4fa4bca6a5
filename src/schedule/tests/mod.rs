//! Unit tests of the schedule engine: every syntax rule and error (`syntax`), the day rule
//! (`matching`), fire times across DST transitions in zones of every shape (`next`), and how a
//! schedule displays.

mod hashed;
mod matching;
mod next;
mod syntax;

use jiff::Timestamp;

use super::*;

const SEED: u64 = 0x5eed;

pub(super) fn parse(expr: &str) -> Schedule {
    match parse_expression(expr, SEED) {
        Ok(When::Periodic(s)) => s,
        other => panic!("{expr:?} did not parse to a schedule: {other:?}"),
    }
}

pub(super) fn error(expr: &str) -> ParseError {
    match parse_expression(expr, SEED) {
        Err(e) => e,
        Ok(w) => panic!("{expr:?} parsed to {w} but should be an error"),
    }
}

/// The values set in a field, for readable assertions.
pub(super) fn values(s: &Schedule, field: Field) -> Vec<u8> {
    (0..64u8)
        .filter(|v| s.bits(field) & (1 << v) != 0)
        .collect()
}

pub(super) fn ts(text: &str) -> Timestamp {
    text.parse().expect("test timestamps are RFC 3339")
}

/// The next `n` fire times after `after`, formatted in the zone, as cronnext prints them.
pub(super) fn next_n(expr: &str, zone: &str, after: &str, n: usize) -> Vec<String> {
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
