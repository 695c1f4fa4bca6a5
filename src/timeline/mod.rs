//! The minute loop's decisions as a pure function (docs/design.md §4): given where the
//! scheduler's clocks stand and the wall-clock minute now, which fire times to run, skip or
//! coalesce. Pure: no clock reads, no syscalls; the daemon reads the clock and carries the plan out on
//! an [`Agenda`] inside a [`Cycle`] (the agenda, the jobs and the queue of due jobs), and the
//! simulation tests drive that very same machine with a fake clock.
//!
//! Time is counted in UTC minutes. Daylight saving is not a clock step here: it lives in
//! `Schedule::next_after`, per zone. Only real steps of the wall clock (settimeofday, NTP,
//! resume) are jumps, and they follow Debian's table (research/anchors-features.md §2.1), with
//! `diff` = wall minute now − virtual clock (the last minute handled):
//!
//! | diff | plan |
//! |---|---|
//! | 1 | run every entry due this minute |
//! | 2 … 5 | run every skipped minute, all entries |
//! | 6 … 180 | fixed-time entries due in the skipped span run once (now); wildcard entries run only for this minute |
//! | −179 … 0 | wildcard entries run for this minute; fixed-time entries are not repeated (the virtual clock stays) |
//! | beyond ±180 | start afresh: the virtual clock is set to now and this minute runs |
//!
//! A fixed-time entry that was due several times in a 6…180-minute jump runs once, not once per
//! missed time (docs/design.md §4 "catch up the fixed-time entries once"; Debian runs each
//! missed time).
//!
//! The two classes keep separate cursors (the last minute handled for each): fixed-time
//! entries follow the virtual clock, wildcard entries the wall clock when it went back.

#![forbid(unsafe_code)]

mod agenda;
mod cycle;
mod ids;
pub(crate) mod queue;
#[cfg(test)]
mod tests;

pub use agenda::{Agenda, EntryId};
pub use cycle::{Cycle, Due, clock_moved};
pub use ids::IdMap;

use crate::schedule::Class;

/// A minute as a count of minutes since the Unix epoch, in UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct UtcMinute(pub i64);

impl UtcMinute {
    /// The minute an instant (Unix seconds) falls in.
    pub fn containing(unix_second: i64) -> UtcMinute {
        UtcMinute(unix_second.div_euclid(60))
    }

    /// The first second of this minute.
    pub fn start_second(self) -> i64 {
        self.0 * 60
    }

    pub fn plus(self, minutes: i64) -> UtcMinute {
        UtcMinute(self.0 + minutes)
    }
}

/// Which entries a step concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Classes {
    Both,
    Only(Class),
}

impl Classes {
    pub fn contains(self, class: Class) -> bool {
        match self {
            Classes::Both => true,
            Classes::Only(c) => c == class,
        }
    }
}

/// One thing to do to the agenda. Each class has a cursor (the last minute handled); every step
/// but `Reset` moves it forward to `to`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Run every fire time in (cursor, to], each at its own minute.
    RunEach { classes: Classes, to: UtcMinute },
    /// Run each entry with a fire time in (cursor, to] once, at `to`.
    RunOnce { class: Class, to: UtcMinute },
    /// Pass over fire times in (cursor, to] without running them.
    Skip { classes: Classes, to: UtcMinute },
    /// Put the cursor at `at` (possibly backwards) and recompute every next fire time.
    Reset { classes: Classes, at: UtcMinute },
}

/// How the wall clock moved since the last minute handled (for the log).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Movement {
    /// diff 1, or nothing was due in between.
    Normal,
    /// Woke late or the clock went forward 2…5 minutes: every skipped minute runs.
    Late(i64),
    /// Forward 6…180 minutes.
    Forward(i64),
    /// Back 0…179 minutes.
    Backward(i64),
    /// More than 3 hours either way: a correction.
    Afresh(i64),
    /// This wall minute was handled already.
    Repeat,
}

/// What to do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub movement: Movement,
    pub steps: Vec<Step>,
}

/// Where the two cursors stand.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursors {
    /// The virtual clock: fixed-time entries have been handled up to here.
    pub fixed: UtcMinute,
    /// Wildcard entries have been handled up to here (behind `fixed` after the clock went back).
    pub wildcard: UtcMinute,
}

/// Decides what to do at wall minute `now`.
///
/// `quiet_until`: no entry of either class fires in (cursor, quiet_until] (the daemon knows
/// this from the agenda when it arms its timer; `None` when nothing is due at all). Passing
/// over such a span changes no run, so the cursors first move over it for free; that keeps the
/// virtual clock tracking the wall clock while the daemon sleeps through idle minutes, as
/// Debian's does minute by minute.
pub fn plan(cursors: Cursors, now: UtcMinute, quiet_until: Option<UtcMinute>) -> Plan {
    let mut steps = Vec::new();
    let mut fixed = cursors.fixed;
    let mut wildcard = cursors.wildcard;
    let calm = quiet_until.map_or(now.plus(-1), |q| q.min(now.plus(-1)));
    if calm > fixed {
        fixed = calm;
    }
    if calm > wildcard {
        wildcard = calm;
    }
    skip(&mut steps, Class::FixedTime, cursors.fixed, fixed);
    skip(&mut steps, Class::Wildcard, cursors.wildcard, wildcard);

    let diff = now.0 - fixed.0;
    let movement = match diff {
        1..=5 => {
            // After a backward step the wildcard cursor is behind the virtual clock; the
            // minutes in between were handled by wall time already.
            skip(&mut steps, Class::Wildcard, wildcard, fixed);
            steps.push(Step::RunEach {
                classes: Classes::Both,
                to: now,
            });
            if diff == 1 {
                Movement::Normal
            } else {
                Movement::Late(diff)
            }
        }
        6..=180 => {
            steps.push(Step::RunOnce {
                class: Class::FixedTime,
                to: now,
            });
            skip(&mut steps, Class::Wildcard, wildcard, now.plus(-1));
            steps.push(Step::RunEach {
                classes: Classes::Only(Class::Wildcard),
                to: now,
            });
            Movement::Forward(diff)
        }
        -179..=0 => backward(&mut steps, wildcard, now, diff),
        _ => {
            steps.push(Step::Reset {
                classes: Classes::Both,
                at: now.plus(-1),
            });
            steps.push(Step::RunEach {
                classes: Classes::Both,
                to: now,
            });
            Movement::Afresh(diff)
        }
    };
    Plan { movement, steps }
}

/// Adds a skip of `class`'s cursor from `from` to `to`, when that moves it forward.
fn skip(steps: &mut Vec<Step>, class: Class, from: UtcMinute, to: UtcMinute) {
    if to > from {
        steps.push(Step::Skip {
            classes: Classes::Only(class),
            to,
        });
    }
}

/// The clock went back `-diff` minutes (0 to 179) to `now`: fixed-time entries wait for the
/// virtual clock, wildcard entries run by wall time, once per wall minute (`wildcard` at `now`
/// is a minute handled already).
fn backward(steps: &mut Vec<Step>, wildcard: UtcMinute, now: UtcMinute, diff: i64) -> Movement {
    if wildcard == now {
        return Movement::Repeat;
    }
    if wildcard > now {
        steps.push(Step::Reset {
            classes: Classes::Only(Class::Wildcard),
            at: now.plus(-1),
        });
    } else {
        skip(steps, Class::Wildcard, wildcard, now.plus(-1));
    }
    steps.push(Step::RunEach {
        classes: Classes::Only(Class::Wildcard),
        to: now,
    });
    Movement::Backward(-diff)
}
