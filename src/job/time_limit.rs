//! `CRON_TIMEOUT` in the job child: when to signal the job's process group. Pure: the caller
//! passes the time (a monotonic clock: a wall clock step must not end a job early or late) and
//! sends the signals; this says which and when.
//!
//! At the limit the group gets SIGTERM; [`KILL_AFTER_S`] seconds after that went out, whatever
//! is left of it gets SIGKILL. The shell exiting on SIGTERM does not end the wait for the rest: processes of
//! the group that ignore SIGTERM are killed at the second deadline unless they let go of the
//! output first (the caller stops asking then).
//!
//! The limit is the job's process group's, not only its shell's: when the shell exits before
//! the limit and leaves processes in the group (`server &`), the job ends as usual (END, mail,
//! status) and the job child goes on looking every [`GROUP_CHECK_MS`] whether the group is
//! empty, and signals what is left at the same deadlines ([`TimeLimit::watch_wait_ms`]).

use std::time::{Duration, Instant};

use crate::crontab::policy::KILL_AFTER_S;

/// How often the job child looks whether the group its shell left behind is empty yet, once
/// the shell has exited: the job child (and so the run, as the daemon sees it) ends at most this
/// long after the group's last process.
pub const GROUP_CHECK_MS: u32 = 1_000;

/// What to do to the job's process group now (defined with the policy, where the log's wording
/// finds it too).
pub use crate::crontab::policy::LimitAction as Action;

#[derive(Debug, Clone)]
pub struct TimeLimit {
    /// The limit as written, in seconds (for the log and the mail).
    pub seconds: u32,
    term_at: Instant,
    /// Set when SIGTERM goes out: the grace counts from then.
    kill_at: Option<Instant>,
    sent: Option<Action>,
}

impl TimeLimit {
    /// A limit of `seconds` for a shell started at `started`.
    pub fn new(seconds: u32, started: Instant) -> TimeLimit {
        TimeLimit {
            seconds,
            term_at: started + Duration::from_secs(u64::from(seconds)),
            kill_at: None,
            sent: None,
        }
    }

    /// The signal due at `now`, once each: SIGTERM at the limit, SIGKILL after the grace.
    pub fn due(&mut self, now: Instant) -> Option<Action> {
        let next = match (self.sent, self.kill_at) {
            (None, _) if now >= self.term_at => {
                self.kill_at = Some(now + Duration::from_secs(u64::from(KILL_AFTER_S)));
                Action::Term
            }
            (Some(Action::Term), Some(kill_at)) if now >= kill_at => Action::Kill,
            _ => return None,
        };
        self.sent = Some(next);
        Some(next)
    }

    /// How long to wait at most before asking [`TimeLimit::due`] again; `None` once both
    /// signals went out.
    pub fn wait_ms(&self, now: Instant) -> Option<u32> {
        let at = match (self.sent, self.kill_at) {
            (None, _) => self.term_at,
            (Some(Action::Term), Some(kill_at)) => kill_at,
            _ => return None,
        };
        let ms = at.saturating_duration_since(now).as_millis();
        // Rounded up: waking a millisecond early would only loop once more.
        Some(u32::try_from(ms + 1).unwrap_or(u32::MAX))
    }

    /// Once the shell has exited: how long to wait before looking at the group again, at most
    /// [`GROUP_CHECK_MS`], never past the next deadline; `None` once both signals went out.
    pub fn watch_wait_ms(&self, now: Instant) -> Option<u32> {
        self.wait_ms(now).map(|ms| ms.min(GROUP_CHECK_MS))
    }

    /// Whether the limit was reached (SIGTERM went out).
    pub fn reached(&self) -> bool {
        self.sent.is_some()
    }

    /// Whether the job is between SIGTERM and SIGKILL.
    pub fn in_grace(&self) -> bool {
        self.sent == Some(Action::Term)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Any instant will do: every time below is an offset from it, and nothing waits.
    fn origin() -> Instant {
        Instant::now() // core-boundary: allow (an origin for offsets; no test waits for it)
    }

    #[test]
    fn sigterm_at_the_limit_then_sigkill_ten_seconds_later_each_once() {
        let t0 = origin();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let mut limit = TimeLimit::new(90, t0);
        assert_eq!(limit.wait_ms(t0), Some(90_001));
        assert_eq!(limit.due(at(89.999)), None);
        assert!(!limit.reached());
        assert_eq!(limit.due(at(90.0)), Some(Action::Term));
        assert_eq!(limit.due(at(90.5)), None, "once");
        assert!(limit.reached() && limit.in_grace());
        assert_eq!(limit.wait_ms(at(95.0)), Some(5_001));
        assert_eq!(limit.due(at(99.9)), None);
        assert_eq!(limit.due(at(100.0)), Some(Action::Kill));
        assert_eq!(limit.due(at(200.0)), None, "once");
        assert_eq!(limit.wait_ms(at(200.0)), None);
        assert!(limit.reached() && !limit.in_grace());
    }

    #[test]
    fn after_the_shell_the_group_is_looked_at_every_second_and_each_deadline_is_kept() {
        let t0 = origin();
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        let mut limit = TimeLimit::new(3, t0);
        assert_eq!(limit.watch_wait_ms(at(0.2)), Some(GROUP_CHECK_MS));
        // Never past the deadline: the last look before it wakes at it.
        assert_eq!(limit.watch_wait_ms(at(2.5)), Some(501));
        assert_eq!(limit.due(at(3.0)), Some(Action::Term));
        assert_eq!(limit.watch_wait_ms(at(3.0)), Some(GROUP_CHECK_MS));
        assert_eq!(limit.watch_wait_ms(at(12.9)), Some(101));
        assert_eq!(limit.due(at(13.0)), Some(Action::Kill));
        assert_eq!(limit.watch_wait_ms(at(13.0)), None, "nothing more to do");
    }

    #[test]
    fn a_late_look_sends_sigterm_first_and_sigkill_only_at_the_next() {
        let t0 = origin();
        let mut limit = TimeLimit::new(1, t0);
        // Woken long after both deadlines (a stopped machine): the group still gets the
        // SIGTERM first and a chance to hear it.
        let late = t0 + Duration::from_secs(60);
        assert_eq!(limit.due(late), Some(Action::Term));
        assert_eq!(limit.wait_ms(late), Some(10_001));
        assert_eq!(limit.due(late + Duration::from_secs(9)), None);
        assert_eq!(
            limit.due(late + Duration::from_secs(10)),
            Some(Action::Kill)
        );
    }
}
