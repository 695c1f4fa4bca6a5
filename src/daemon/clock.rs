//! The daemon's one way to the wall clock: the [`Clock`] trait. The reactor reads it once per
//! turn of the loop and hands the time to the owners as an argument; no owner reads a clock.
//! The real clock is [`WallClock`]; tests use [`FakeClock`], which moves only when told (as
//! ntpd-rs tests its clock logic with a TestClock). Also the two ways the daemon shows a time
//! in its zone.

use jiff::Timestamp;

use crate::schedule::Zone;
use crate::timeline::UtcMinute;

/// Where the time comes from.
pub(super) trait Clock {
    fn now(&self) -> Timestamp;
}

/// The system's wall clock (CLOCK_REALTIME).
#[derive(Debug, Default)]
pub(super) struct WallClock;

impl Clock for WallClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

/// A clock for tests: it says what it was set to. Its clones are the same clock (a test, the
/// reactor and a scripted world read and move one time).
#[cfg(test)]
#[derive(Debug, Clone)]
pub(super) struct FakeClock(std::rc::Rc<std::cell::Cell<Timestamp>>);

#[cfg(test)]
impl FakeClock {
    /// A clock at `rfc3339` (`2026-11-27T10:00:00Z`).
    pub(super) fn at(rfc3339: &str) -> FakeClock {
        let at = rfc3339.parse().expect("a timestamp");
        FakeClock(std::rc::Rc::new(std::cell::Cell::new(at)))
    }

    /// Moves the clock by `ms` (backward when negative).
    pub(super) fn advance_ms(&self, ms: i64) {
        let now = self.0.get().as_millisecond() + ms;
        self.0
            .set(Timestamp::from_millisecond(now).expect("in range"));
    }
}

#[cfg(test)]
impl Clock for FakeClock {
    fn now(&self) -> Timestamp {
        self.0.get()
    }
}

/// `YYYY-MM-DD HH:MM` of a minute in `zone`.
pub(super) fn date_time(zone: &Zone, minute: UtcMinute) -> String {
    let at = Timestamp::from_second(minute.start_second()).unwrap_or(Timestamp::UNIX_EPOCH);
    let civil = zone.civil(at);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        civil.year(),
        civil.month(),
        civil.day(),
        civil.hour(),
        civil.minute()
    )
}

/// `HH:MM` of an epoch millisecond in `zone`, as the log shows start times.
pub(super) fn time(zone: &Zone, ms: i64) -> String {
    let at = Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH);
    let civil = zone.civil(at);
    format!("{:02}:{:02}", civil.hour(), civil.minute())
}

/// `HH:MM:SS` of an epoch millisecond in `zone`: a retry's time.
pub(super) fn time_s(zone: &Zone, ms: i64) -> String {
    let at = Timestamp::from_millisecond(ms).unwrap_or(Timestamp::UNIX_EPOCH);
    let civil = zone.civil(at);
    format!(
        "{:02}:{:02}:{:02}",
        civil.hour(),
        civil.minute(),
        civil.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fake_clock_moves_only_when_told() {
        let clock = FakeClock::at("2026-11-27T10:00:00Z");
        assert_eq!(clock.now(), clock.now());
        clock.advance_ms(61_000);
        assert_eq!(clock.now().to_string(), "2026-11-27T10:01:01Z");
        assert_eq!(time(&Zone::utc(), clock.now().as_millisecond()), "10:01");
        assert_eq!(
            date_time(&Zone::utc(), UtcMinute::containing(clock.now().as_second())),
            "2026-11-27 10:01"
        );
    }
}
