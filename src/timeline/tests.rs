//! Simulated days: the agenda and the plan driven by a fake clock exactly as the daemon's loop
//! drives them (wake at the next fire time, or at once when the clock is set, or on resume),
//! asserting the exact (entry, minute) runs. Milliseconds, no waiting.

use jiff::Timestamp;
use jiff::civil::DateTime;

use super::*;
use crate::schedule::{When, Zone, parse_expression};

struct Sim {
    agenda: Agenda,
    /// Name and display zone per entry id.
    entries: Vec<(&'static str, Zone)>,
    local: Zone,
    /// Wall clock in milliseconds since the epoch.
    wall: i64,
    runs: Vec<String>,
}

fn instant(zone: &Zone, civil: &str) -> i64 {
    let dt: DateTime = civil.parse().expect("test datetime");
    // The earlier reading of an ambiguous time, like a clock that has not yet fallen back.
    let ts = zone
        .time_zone()
        .to_ambiguous_timestamp(dt)
        .earlier()
        .expect("in range");
    ts.as_millisecond()
}

impl Sim {
    /// A daemon started at `start` (wall time in `local`).
    fn new(local: &str, start: &str) -> Sim {
        let local = Zone::get(local).expect("zone");
        let wall = instant(&local, start);
        let agenda = Agenda::new(UtcMinute::containing(wall.div_euclid(1000)), local.clone());
        Sim {
            agenda,
            entries: Vec::new(),
            local,
            wall,
            runs: Vec::new(),
        }
    }

    fn entry(&mut self, name: &'static str, expr: &str, zone: Option<&str>) -> &mut Sim {
        let When::Periodic(schedule) = parse_expression(expr, 0).expect("expression") else {
            panic!("not periodic")
        };
        let zone = zone.map(|z| Zone::get(z).expect("zone"));
        let id = self.agenda.insert(schedule, zone.clone());
        assert_eq!(id.0 as usize, self.entries.len());
        self.entries
            .push((name, zone.unwrap_or_else(|| self.local.clone())));
        self
    }

    fn wake(&mut self) {
        let now = UtcMinute::containing(self.wall.div_euclid(1000));
        let (_, runs) = self.agenda.advance(now);
        for run in runs {
            let (name, zone) = &self.entries[run.entry.0 as usize];
            let at = Timestamp::from_second(run.minute.start_second()).expect("in range");
            let text = zone.format_rfc3339(at);
            // Seconds are always :00; leave them out.
            self.runs
                .push(format!("{name} {}{}", &text[..16], &text[19..]));
        }
    }

    /// Lets time pass (the timer waking the loop at each fire time) until the wall clock in
    /// the local zone reads `until`.
    fn run_until(&mut self, until: &str) -> &mut Sim {
        let end = instant(&self.local, until);
        self.run_until_ms(end);
        self
    }

    fn run_until_ms(&mut self, end: i64) {
        while let Some(next) = self.agenda.next_due() {
            let at = next.start_second() * 1000;
            assert!(at > self.wall, "the agenda must never be due in the past");
            if at > end {
                break;
            }
            self.wall = at;
            self.wake();
        }
        self.wall = self.wall.max(end);
    }

    /// The clock is set by `minutes`: the timer is cancelled and the loop wakes at once.
    fn step(&mut self, minutes: i64) -> &mut Sim {
        self.wall += minutes * 60_000;
        self.wake();
        self
    }

    /// The machine sleeps `ms`: no wake until it resumes, then one at once.
    fn suspend_ms(&mut self, ms: i64) -> &mut Sim {
        self.wall += ms;
        self.wake();
        self
    }

    fn runs(&self) -> Vec<&str> {
        self.runs.iter().map(String::as_str).collect()
    }
}

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
        agenda.insert(daily, None);
    }
    let gone = agenda.insert(every, None);
    let kept = agenda.insert(every, None);
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
            let id = agenda.insert(schedule, None);
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
