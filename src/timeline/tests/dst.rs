//! Simulated daylight-saving changes: whole-hour and half-hour gaps and folds, in the local
//! zone and under CRON_TZ.

use super::Sim;

#[test]
fn new_york_spring_forward_runs_the_gap_once_at_three() {
    let mut sim = Sim::new("America/New_York", "2026-03-08 01:00:30");
    sim.entry("F", "30 2 * * *", None)
        .entry("W", "*/30 * * * *", None)
        .entry("D", "0 3 * * *", None)
        .run_until("2026-03-08 04:01");
    assert_eq!(
        sim.runs(),
        [
            "W 2026-03-08T01:30-05:00",
            "F 2026-03-08T03:00-04:00",
            "W 2026-03-08T03:00-04:00",
            "D 2026-03-08T03:00-04:00",
            "W 2026-03-08T03:30-04:00",
            "W 2026-03-08T04:00-04:00",
        ]
    );
}

#[test]
fn new_york_fall_back_runs_fixed_once_and_wildcards_twice() {
    let mut sim = Sim::new("America/New_York", "2026-11-01 00:00:30");
    sim.entry("F", "30 1 * * *", None)
        .entry("W", "30 * * * *", None)
        .run_until("2026-11-01 03:00");
    assert_eq!(
        sim.runs(),
        [
            "W 2026-11-01T00:30-04:00",
            "F 2026-11-01T01:30-04:00",
            "W 2026-11-01T01:30-04:00",
            "W 2026-11-01T01:30-05:00",
            "W 2026-11-01T02:30-05:00",
        ]
    );
}

#[test]
fn london_both_changes_in_a_crontab_with_cron_tz() {
    // The daemon's zone is UTC; the entries carry CRON_TZ=Europe/London.
    let london = Some("Europe/London");
    let mut spring = Sim::new("UTC", "2026-03-29 00:00:30");
    spring
        .entry("F", "30 1 * * *", london)
        .entry("W", "15 * * * *", london)
        .run_until("2026-03-29 02:30");
    assert_eq!(
        spring.runs(),
        [
            "W 2026-03-29T00:15+00:00",
            "F 2026-03-29T02:00+01:00",
            "W 2026-03-29T02:15+01:00",
            "W 2026-03-29T03:15+01:00",
        ]
    );
    let mut autumn = Sim::new("UTC", "2026-10-24 23:00:30");
    autumn
        .entry("F", "30 1 * * *", london)
        .entry("W", "*/45 * * * *", london)
        .run_until("2026-10-25 02:10");
    assert_eq!(
        autumn.runs(),
        [
            "W 2026-10-25T00:45+01:00",
            "W 2026-10-25T01:00+01:00",
            "F 2026-10-25T01:30+01:00",
            "W 2026-10-25T01:45+01:00",
            "W 2026-10-25T01:00+00:00",
            "W 2026-10-25T01:45+00:00",
            "W 2026-10-25T02:00+00:00",
        ]
    );
}

#[test]
fn lord_howe_half_hour_changes() {
    let mut spring = Sim::new("Australia/Lord_Howe", "2026-10-04 01:30:30");
    spring
        .entry("F", "15 2 * * *", None)
        .entry("W", "*/20 * * * *", None)
        .run_until("2026-10-04 03:01");
    assert_eq!(
        spring.runs(),
        [
            "W 2026-10-04T01:40+10:30",
            "F 2026-10-04T02:30+11:00",
            "W 2026-10-04T02:40+11:00",
            "W 2026-10-04T03:00+11:00",
        ]
    );
    let mut autumn = Sim::new("Australia/Lord_Howe", "2026-04-05 01:10:30");
    autumn
        .entry("F", "45 1 * * *", None)
        .entry("W", "*/20 * * * *", None)
        .run_until("2026-04-05 02:10");
    assert_eq!(
        autumn.runs(),
        [
            "W 2026-04-05T01:20+11:00",
            "W 2026-04-05T01:40+11:00",
            "F 2026-04-05T01:45+11:00",
            "W 2026-04-05T01:40+10:30",
            "W 2026-04-05T02:00+10:30",
        ]
    );
}
