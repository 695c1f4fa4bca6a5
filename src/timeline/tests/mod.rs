//! The timeline's tests: the plan for each clock movement, and simulated days (see [`sim`])
//! asserting the exact (entry, minute) runs across clock steps, suspends and DST changes.

mod dst;
mod sim;
mod steps;

use jiff::Timestamp;

use super::agenda::Run;
use super::*;
use crate::schedule::{When, Zone, parse_expression};
use sim::Sim;

#[test]
fn the_plan_for_each_kind_of_clock_movement() {
    let c = |f, w| Cursors {
        fixed: UtcMinute(f),
        wildcard: UtcMinute(w),
    };
    assert_eq!(
        plan(c(100, 100), UtcMinute(101), None).movement,
        Movement::Normal
    );
    assert_eq!(
        plan(c(100, 100), UtcMinute(104), Some(UtcMinute(100))).movement,
        Movement::Late(4)
    );
    assert_eq!(
        plan(c(100, 100), UtcMinute(110), Some(UtcMinute(100))).movement,
        Movement::Forward(10)
    );
    assert_eq!(
        plan(c(100, 100), UtcMinute(70), Some(UtcMinute(120))).movement,
        Movement::Backward(30)
    );
    assert_eq!(
        plan(c(100, 100), UtcMinute(-200), None).movement,
        Movement::Afresh(-300)
    );
    assert_eq!(
        plan(c(100, 100), UtcMinute(400), Some(UtcMinute(100))).movement,
        Movement::Afresh(300)
    );
    assert_eq!(
        plan(c(100, 100), UtcMinute(100), None).movement,
        Movement::Repeat
    );
    // Nothing due for four hours: the sleep was not a clock step.
    assert_eq!(
        plan(c(100, 100), UtcMinute(340), Some(UtcMinute(339))).movement,
        Movement::Normal
    );
}

#[test]
fn a_suspend_of_two_days_starts_afresh_on_resume() {
    let mut sim = Sim::new("UTC", "2026-11-21 10:30:30");
    sim.entry("F", "0 12 * * *", None)
        .entry("W", "0 * * * *", None)
        .run_until("2026-11-21 10:45")
        // Resumes at 2026-11-23 13:00:10.
        .suspend_ms(2 * 86_400_000 + 2 * 3_600_000 + 15 * 60_000 + 10_000)
        .run_until("2026-11-23 14:01");
    assert_eq!(
        sim.runs(),
        ["W 2026-11-23T13:00+00:00", "W 2026-11-23T14:00+00:00"]
    );
}

#[test]
fn entries_added_later_fire_only_after_the_minute_handled() {
    let mut sim = Sim::new("UTC", "2026-11-21 10:00:30");
    sim.entry("A", "0 10 * * *", None)
        .entry("B", "1 10 * * *", None)
        .run_until("2026-11-21 10:02");
    assert_eq!(sim.runs(), ["B 2026-11-21T10:01+00:00"]);
}

#[test]
fn a_removed_entry_never_fires_and_the_cost_follows_the_due_entries() {
    let mut agenda = Agenda::new(UtcMinute(1_000_000), Zone::utc());
    let When::Periodic(daily) = parse_expression("0 0 * * *", 0).expect("expr") else {
        panic!()
    };
    let When::Periodic(every) = parse_expression("* * * * *", 0).expect("expr") else {
        panic!()
    };
    for _ in 0..10_000 {
        agenda.insert(daily, None, ());
    }
    let gone = agenda.insert(every, None, ());
    let kept = agenda.insert(every, None, ());
    agenda.remove(gone);
    let (_, runs) = agenda.advance(UtcMinute(1_000_001));
    assert_eq!(
        runs,
        [Run {
            minute: UtcMinute(1_000_001),
            entry: kept
        }]
    );
    // The daily entries were not touched: they are still queued for midnight.
    assert_eq!(agenda.next_due(), Some(UtcMinute(1_000_002)));
}

mod agrees_with_matching_minute_by_minute {
    use super::*;
    use proptest::prelude::*;

    const EXPRESSIONS: [&str; 10] = [
        "* * * * *",
        "*/7 * * * *",
        "0 * * * *",
        "30 2 * * *",
        "15,45 9-17 * * 1-5",
        "0 0 1 * *",
        "5 4 * * 0",
        "0 12 13 * 5",
        "59 23 31 12 *",
        "*/20 */3 * 2-11 *",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Without clock steps, in zones without DST, the agenda runs an entry exactly at the
        /// minutes its schedule matches: none missed, none twice.
        #[test]
        fn over_three_days(expr in 0..EXPRESSIONS.len(), start in 0i64..365 * 1440, zone in 0..2usize) {
            let zone_name = ["UTC", "Asia/Kolkata"][zone];
            let zone = Zone::get(zone_name).expect("zone");
            let When::Periodic(schedule) = parse_expression(EXPRESSIONS[expr], 0).expect("expr") else {
                panic!()
            };
            let first = UtcMinute(29_453_760 + start); // 2026-01-01 + start minutes
            let mut agenda = Agenda::new(first, zone.clone());
            let id = agenda.insert(schedule, None, ());
            let last = first.plus(3 * 1440);
            let mut runs = Vec::new();
            while let Some(next) = agenda.next_due() {
                if next > last {
                    break;
                }
                let (movement, got) = agenda.advance(next);
                prop_assert_eq!(movement, Movement::Normal);
                runs.extend(got.into_iter().map(|r| { assert_eq!(r.entry, id); r.minute }));
            }
            let expected: Vec<UtcMinute> = (first.0 + 1..=last.0)
                .map(UtcMinute)
                .filter(|m| {
                    let ts = Timestamp::from_second(m.start_second()).expect("in range");
                    schedule.matches(zone.civil(ts))
                })
                .collect();
            prop_assert_eq!(runs, expected);
        }
    }
}
