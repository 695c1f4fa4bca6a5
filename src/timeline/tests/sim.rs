//! The simulated daemon: a [`Cycle`] driven by a fake clock exactly as the daemon's loop drives
//! it — wake at [`Cycle::next_wake`] (or at once when the clock is set, or on resume), hand the
//! wall minute to [`Cycle::on_wake`], start every queued job — recording each (entry, minute)
//! run. Milliseconds, no waiting.

use jiff::Timestamp;
use jiff::civil::DateTime;

use crate::schedule::{When, Zone, parse_expression};
use crate::timeline::{Cycle, EntryId, UtcMinute};

pub(super) struct Sim {
    cycle: Cycle<EntryId>,
    /// Name and display zone per entry id.
    entries: Vec<(&'static str, Zone)>,
    local: Zone,
    /// Wall clock in milliseconds since the epoch.
    wall: i64,
    runs: Vec<String>,
}

pub(super) fn instant(zone: &Zone, civil: &str) -> i64 {
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
    pub(super) fn new(local: &str, start: &str) -> Sim {
        let local = Zone::get(local).expect("zone");
        let wall = instant(&local, start);
        let cycle = Cycle::new(UtcMinute::containing(wall.div_euclid(1000)), local.clone());
        Sim {
            cycle,
            entries: Vec::new(),
            local,
            wall,
            runs: Vec::new(),
        }
    }

    pub(super) fn entry(&mut self, name: &'static str, expr: &str, zone: Option<&str>) -> &mut Sim {
        let When::Periodic(schedule) = parse_expression(expr, 0).expect("expression") else {
            panic!("not periodic")
        };
        let zone = zone.map(|z| Zone::get(z).expect("zone"));
        let next = EntryId(self.entries.len() as u64);
        let id = self.cycle.add(schedule, zone.clone(), next, 0);
        assert_eq!(id, next, "entry ids are handed out in order");
        self.entries
            .push((name, zone.unwrap_or_else(|| self.local.clone())));
        self
    }

    fn minute(&self) -> UtcMinute {
        UtcMinute::containing(self.wall.div_euclid(1000))
    }

    /// One wake-up of the loop: plan the minute, then start everything queued.
    fn wake(&mut self) {
        self.cycle.on_wake(self.minute());
        while let Some(queued) = self.cycle.next_to_start(self.wall) {
            let (name, zone) = &self.entries[queued.job.job.0 as usize];
            let at = Timestamp::from_second(queued.due.start_second()).expect("in range");
            let text = zone.format_rfc3339(at);
            // Seconds are always :00; leave them out.
            self.runs
                .push(format!("{name} {}{}", &text[..16], &text[19..]));
        }
    }

    /// Lets time pass (the timer waking the loop when the cycle asks) until the wall clock in
    /// the local zone reads `until`.
    pub(super) fn run_until(&mut self, until: &str) -> &mut Sim {
        let end = instant(&self.local, until);
        loop {
            let at = self.cycle.next_wake(self.minute(), false).start_second() * 1000;
            assert!(
                at > self.wall,
                "the cycle must never ask to wake in the past"
            );
            if at > end {
                break;
            }
            self.wall = at;
            self.wake();
        }
        self.wall = self.wall.max(end);
        self
    }

    /// The clock is set by `minutes`: the timer is cancelled and the loop wakes at once.
    pub(super) fn step(&mut self, minutes: i64) -> &mut Sim {
        self.wall += minutes * 60_000;
        self.wake();
        self
    }

    /// The machine sleeps `ms`: no wake until it resumes, then one at once.
    pub(super) fn suspend_ms(&mut self, ms: i64) -> &mut Sim {
        self.wall += ms;
        self.wake();
        self
    }

    pub(super) fn runs(&self) -> Vec<&str> {
        self.runs.iter().map(String::as_str).collect()
    }
}
