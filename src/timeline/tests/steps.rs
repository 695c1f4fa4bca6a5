//! Simulated clock steps: forward and back by each of Debian's classes, in one day.

use super::Sim;

#[test]
fn an_ordinary_hour_runs_each_entry_at_its_minutes() {
    let mut sim = Sim::new("UTC", "2026-11-21 09:59:30");
    sim.entry("W", "*/20 * * * *", None)
        .entry("F", "7 10 * * *", None)
        .run_until("2026-11-21 10:45");
    assert_eq!(
        sim.runs(),
        [
            "W 2026-11-21T10:00+00:00",
            "F 2026-11-21T10:07+00:00",
            "W 2026-11-21T10:20+00:00",
            "W 2026-11-21T10:40+00:00",
        ]
    );
}

#[test]
fn a_clock_set_three_minutes_ahead_runs_every_skipped_minute() {
    let mut sim = Sim::new("UTC", "2026-11-21 10:00:30");
    sim.entry("W", "* * * * *", None)
        .entry("F", "3 10 * * *", None)
        .run_until("2026-11-21 10:01:30")
        .step(3)
        .run_until("2026-11-21 10:05:30");
    assert_eq!(
        sim.runs(),
        [
            "W 2026-11-21T10:01+00:00",
            "W 2026-11-21T10:02+00:00",
            "W 2026-11-21T10:03+00:00",
            "F 2026-11-21T10:03+00:00",
            "W 2026-11-21T10:04+00:00",
            "W 2026-11-21T10:05+00:00",
        ]
    );
}

#[test]
fn a_clock_set_ten_minutes_ahead_catches_fixed_entries_up_once() {
    let mut sim = Sim::new("UTC", "2026-11-21 10:00:30");
    sim.entry("W", "* * * * *", None)
        .entry("F", "5 10 * * *", None)
        .entry("G", "0,3,6 10 * * *", None)
        .entry("H", "30 10 * * *", None)
        .run_until("2026-11-21 10:01:30")
        .step(10)
        .run_until("2026-11-21 10:12:30");
    assert_eq!(
        sim.runs(),
        [
            "W 2026-11-21T10:01+00:00",
            "W 2026-11-21T10:11+00:00",
            "F 2026-11-21T10:11+00:00",
            "G 2026-11-21T10:11+00:00",
            "W 2026-11-21T10:12+00:00",
        ]
    );
}

#[test]
fn a_clock_set_four_hours_ahead_starts_afresh() {
    let mut sim = Sim::new("UTC", "2026-11-21 10:00:30");
    sim.entry("W", "* * * * *", None)
        .entry("F", "5 10 * * *", None)
        .entry("K", "1 14 * * *", None)
        .run_until("2026-11-21 10:01:30")
        .step(240)
        .run_until("2026-11-21 14:02:30");
    assert_eq!(
        sim.runs(),
        [
            "W 2026-11-21T10:01+00:00",
            "W 2026-11-21T14:01+00:00",
            "K 2026-11-21T14:01+00:00",
            "W 2026-11-21T14:02+00:00",
        ]
    );
}

#[test]
fn a_clock_set_back_thirty_minutes_repeats_wildcards_but_not_fixed_times() {
    let mut sim = Sim::new("UTC", "2026-11-21 09:50:30");
    sim.entry("W", "*/10 * * * *", None)
        .entry("F", "55 9 * * *", None)
        .entry("G", "25 10 * * *", None)
        .run_until("2026-11-21 10:20:30")
        .step(-30)
        .run_until("2026-11-21 10:31");
    assert_eq!(
        sim.runs(),
        [
            "F 2026-11-21T09:55+00:00",
            "W 2026-11-21T10:00+00:00",
            "W 2026-11-21T10:10+00:00",
            "W 2026-11-21T10:20+00:00",
            "W 2026-11-21T09:50+00:00",
            "W 2026-11-21T10:00+00:00",
            "W 2026-11-21T10:10+00:00",
            "W 2026-11-21T10:20+00:00",
            "G 2026-11-21T10:25+00:00",
            "W 2026-11-21T10:30+00:00",
        ]
    );
}

#[test]
fn a_clock_set_back_four_hours_starts_afresh_and_repeats_fixed_times() {
    let mut sim = Sim::new("UTC", "2026-11-21 09:50:30");
    sim.entry("F", "55 9 * * *", None)
        .entry("W", "0 * * * *", None)
        .run_until("2026-11-21 10:20:30")
        .step(-240)
        .run_until("2026-11-21 10:01");
    assert_eq!(
        sim.runs(),
        [
            "F 2026-11-21T09:55+00:00",
            "W 2026-11-21T10:00+00:00",
            "W 2026-11-21T07:00+00:00",
            "W 2026-11-21T08:00+00:00",
            "W 2026-11-21T09:00+00:00",
            "F 2026-11-21T09:55+00:00",
            "W 2026-11-21T10:00+00:00",
        ]
    );
}

#[test]
fn a_day_with_every_kind_of_clock_step_runs_each_minute_as_the_table_says() {
    // +1 (ordinary minutes), +10, −30, +240, −240 and a late wake of 3 minutes, one day.
    let mut sim = Sim::new("UTC", "2026-11-21 00:00:30");
    sim.entry("F", "15 1,3,9,15,21 * * *", None)
        .entry("H", "0 * * * *", None)
        .run_until("2026-11-21 01:10:30")
        .step(10) // 01:20:30: F 01:15 caught up once, H not due
        .run_until("2026-11-21 03:20:30")
        .step(-30) // 02:50:30: F 03:15 not repeated, H 03:00 repeated
        .run_until("2026-11-21 05:00:30")
        .step(240) // 09:00:30: afresh, H 09:00 runs
        .run_until("2026-11-21 15:20")
        .step(-240) // 11:20: afresh: H 12:00..15:00 and F 15:15 run again
        .run_until("2026-11-21 21:00:30")
        .suspend_ms(3 * 60_000) // 21:03:30: late by 3: nothing due in 21:01..21:03
        .run_until("2026-11-21 23:59");
    let mut expected: Vec<String> = vec![
        "H 2026-11-21T01:00+00:00".into(),
        "F 2026-11-21T01:20+00:00".into(),
        "H 2026-11-21T02:00+00:00".into(),
        "H 2026-11-21T03:00+00:00".into(),
        "F 2026-11-21T03:15+00:00".into(),
        "H 2026-11-21T03:00+00:00".into(),
        "H 2026-11-21T04:00+00:00".into(),
        "H 2026-11-21T05:00+00:00".into(),
        "H 2026-11-21T09:00+00:00".into(),
        "F 2026-11-21T09:15+00:00".into(),
    ];
    for h in 10..=15 {
        expected.push(format!("H 2026-11-21T{h:02}:00+00:00"));
    }
    expected.push("F 2026-11-21T15:15+00:00".into());
    // After the step back to 11:20.
    for h in 12..=15 {
        expected.push(format!("H 2026-11-21T{h:02}:00+00:00"));
    }
    expected.push("F 2026-11-21T15:15+00:00".into());
    for h in 16..=21 {
        expected.push(format!("H 2026-11-21T{h:02}:00+00:00"));
    }
    expected.push("F 2026-11-21T21:15+00:00".into());
    for h in 22..=23 {
        expected.push(format!("H 2026-11-21T{h:02}:00+00:00"));
    }
    assert_eq!(sim.runs(), expected);
}
