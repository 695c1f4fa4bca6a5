//! How many `cronctl notify` helpers the daemon starts for slots that did not run
//! (`CRON_PING`, `CRON_WEBHOOK`): a run's own requests come from its job child, but a slot
//! skipped for an overlap, missed, given up or late has no job child, so the daemon starts the
//! helper as the entry's user. A clock step or a long sleep can skip thousands of slots at
//! once; each start costs the daemon a process, so they are bounded per minute: at most
//! [`PER_MINUTE`] in all and [`PER_USER`] for one user, so that one user's flood cannot take
//! another user's share. A slot past the bound is still recorded; its requests are not sent,
//! and the count is logged once, when the minute is over. Pure: the caller gives the time.

use std::collections::HashMap;

/// The most helpers started in one minute.
pub(super) const PER_MINUTE: u32 = 1_000;

/// The most helpers started for one user (the user the entry's jobs run as) in one minute.
pub(super) const PER_USER: u32 = 100;

/// The starts of the current minute, per user.
#[derive(Debug, Default)]
pub(super) struct Budget {
    /// The minute counted (Unix minutes).
    minute: i64,
    all: u32,
    users: HashMap<Vec<u8>, u32>,
    /// Slots whose requests were not sent this minute.
    dropped: u64,
}

/// What the caller does with one slot's requests.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Allowed {
    /// Start the helper.
    pub(super) start: bool,
    /// The requests of this many slots were not sent in the minute that just ended: to log.
    pub(super) dropped_before: u64,
}

impl Budget {
    /// Counts one start for `user` at `now_s` (Unix seconds).
    pub(super) fn take(&mut self, user: &[u8], now_s: i64) -> Allowed {
        let minute = now_s.div_euclid(60);
        let mut dropped_before = 0;
        if minute != self.minute {
            dropped_before = self.dropped;
            *self = Budget {
                minute,
                ..Budget::default()
            };
        }
        if !self.users.contains_key(user) {
            self.users.insert(user.to_vec(), 0);
        }
        let user = self.users.get_mut(user).expect("inserted above");
        let start = self.all < PER_MINUTE && *user < PER_USER;
        if start {
            self.all += 1;
            *user += 1;
        } else {
            self.dropped += 1;
        }
        Allowed {
            start,
            dropped_before,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_user_gets_its_share_a_minute_others_theirs_and_the_drops_are_told_next_minute() {
        let mut budget = Budget::default();
        let t = 60 * 1_000;
        let started = |budget: &mut Budget, user: &[u8], n| {
            (0..n).filter(|_| budget.take(user, t + 5).start).count() as u32
        };
        assert_eq!(started(&mut budget, b"alice", PER_USER + 20), PER_USER);
        // Another user still has a whole share.
        assert_eq!(started(&mut budget, b"bob", PER_USER), PER_USER);
        // The next minute: a start again, and the 20 not sent are told once.
        let next = budget.take(b"alice", t + 60);
        assert_eq!(
            next,
            Allowed {
                start: true,
                dropped_before: 20
            }
        );
        assert_eq!(budget.take(b"alice", t + 61).dropped_before, 0);
    }

    #[test]
    fn past_the_minutes_bound_no_user_starts_one() {
        let mut budget = Budget::default();
        let users = PER_MINUTE / PER_USER;
        for n in 0..users {
            for _ in 0..PER_USER {
                assert!(budget.take(format!("u{n}").as_bytes(), 0).start);
            }
        }
        assert!(
            !budget.take(b"carol", 59).start,
            "all of the minute's taken"
        );
        assert!(!budget.take(b"root", 59).start);
        let later = budget.take(b"root", 120);
        assert!(later.start);
        assert_eq!(later.dropped_before, 2);
    }
}
