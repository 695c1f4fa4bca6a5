//! The daemon's side of a cluster run between its due time and its start (docs/cluster.md): the
//! run waits here for the helper's answer to its `RUN` request, and, when another host claimed
//! it, a while longer in case that host dies before starting it and the helper takes the claim
//! over. Pure: the caller passes the time and carries out what comes back.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::wire::{Denied, RunKey};

/// How long a run waits for the helper's answer before it is given up (not run, logged). The
/// helper answers `unreachable` itself as soon as it can't reach the database, and retries a
/// statement the database was too slow for (each is bounded: 5 s on the server); this is the
/// backstop for a helper that is alive but stuck. It is not a bound on a slow database's
/// answer: a run another host is meant to claim waits 5 s before this host claims it, and a
/// claim waits out a lock held for tens of seconds.
pub const ANSWER_WAIT_MS: i64 = 120_000;

/// How long a run another host claimed is watched at most: the helper answers again when it
/// started there or was taken over (within a lease, 30 s by default); this bounds the wait
/// should that answer never come.
pub const TAKEOVER_WAIT_MS: i64 = 3_600_000;

/// At most this many runs wait here; a run beyond it is not run (logged). The oldest watched
/// (taken) runs make room first.
pub const MAX_PARKED: usize = 20_000;

/// At most this many of them may be one user's (the runs of entries in a user's own crontab:
/// root's crontab and system files count only against [`MAX_PARKED`]), so that no user crowds
/// out another's cluster runs. A user's crontab holds at most 100 cluster entries
/// (`Limits::USER`), so this is ten minutes of each waiting on another host.
pub const MAX_PARKED_PER_USER: usize = 1_000;

#[derive(Debug)]
struct Park<T> {
    job: T,
    key: RunKey,
    until_ms: i64,
    /// Another host has it; kept only for a takeover.
    taken: bool,
    /// The user whose share it counts against (`None`: root's and system files' runs).
    share: Option<u32>,
}

/// Runs waiting on the cluster helper, by request number.
#[derive(Debug)]
pub struct Parked<T> {
    next_seq: u64,
    runs: BTreeMap<u64, Park<T>>,
    /// (deadline, seq) of every run, soonest first.
    deadlines: BTreeSet<(i64, u64)>,
    /// How many runs each user's share holds.
    shares: HashMap<u32, usize>,
}

impl<T> Default for Parked<T> {
    fn default() -> Self {
        Parked {
            next_seq: 1,
            runs: BTreeMap::new(),
            deadlines: BTreeSet::new(),
            shares: HashMap::new(),
        }
    }
}

/// What an answer means for the daemon.
#[derive(Debug, PartialEq, Eq)]
pub enum Answered<T> {
    /// Start it now; `taken_over`: it was another host's claim first.
    Go {
        job: T,
        key: RunKey,
        taken_over: bool,
    },
    /// Not here (log why); a run another host has stays parked for a takeover.
    No { job: T, key: RunKey, why: Denied },
    /// Another host has it: still watched, for a takeover (log it; `T` stays here).
    Taken { host: String },
    /// No such request (given up already, or a second answer): nothing to do.
    Unknown,
}

impl<T: Clone> Parked<T> {
    /// Parks `job` until its answer comes; returns the request number for its `RUN`, or the
    /// job back when [`MAX_PARKED`] runs wait for answers already, or `share` (the uid of the
    /// user whose crontab the entry is in; `None` for root's and system files) holds
    /// [`MAX_PARKED_PER_USER`]. The oldest watched runs (of that user, or of anyone) make room
    /// first.
    pub fn park(&mut self, job: T, key: RunKey, share: Option<u32>, now_ms: i64) -> Result<u64, T> {
        if let Some(uid) = share
            && self.shares.get(&uid).copied().unwrap_or(0) >= MAX_PARKED_PER_USER
            && !self.drop_oldest_taken(Some(uid))
        {
            return Err(job);
        }
        if self.runs.len() >= MAX_PARKED && !self.drop_oldest_taken(None) {
            return Err(job);
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let until_ms = now_ms + ANSWER_WAIT_MS;
        self.deadlines.insert((until_ms, seq));
        if let Some(uid) = share {
            *self.shares.entry(uid).or_default() += 1;
        }
        self.runs.insert(
            seq,
            Park {
                job,
                key,
                until_ms,
                taken: false,
                share,
            },
        );
        Ok(seq)
    }

    /// Forgets the oldest watched run (of the user `only`, when given); false if none.
    fn drop_oldest_taken(&mut self, only: Option<u32>) -> bool {
        let oldest = self
            .runs
            .iter()
            .find(|(_, park)| park.taken && (only.is_none() || park.share == only))
            .map(|(&seq, _)| seq);
        match oldest {
            Some(seq) => {
                self.remove(seq);
                true
            }
            None => false,
        }
    }

    fn remove(&mut self, seq: u64) -> Option<Park<T>> {
        let park = self.runs.remove(&seq)?;
        self.deadlines.remove(&(park.until_ms, seq));
        if let Some(uid) = park.share
            && let Some(n) = self.shares.get_mut(&uid)
        {
            *n -= 1;
            if *n == 0 {
                self.shares.remove(&uid);
            }
        }
        Some(park)
    }

    /// The helper said `GO seq`.
    pub fn go(&mut self, seq: u64) -> Answered<T> {
        match self.remove(seq) {
            Some(park) => Answered::Go {
                job: park.job,
                key: park.key,
                taken_over: park.taken,
            },
            None => Answered::Unknown,
        }
    }

    /// The helper said `NO seq why` at `now_ms`.
    pub fn no(&mut self, seq: u64, why: Denied, now_ms: i64) -> Answered<T> {
        if let Denied::Taken(host) = why {
            let Some(park) = self.runs.get_mut(&seq) else {
                return Answered::Unknown;
            };
            if park.taken {
                return Answered::Unknown;
            }
            self.deadlines.remove(&(park.until_ms, seq));
            park.taken = true;
            park.until_ms = now_ms + TAKEOVER_WAIT_MS;
            self.deadlines.insert((park.until_ms, seq));
            return Answered::Taken { host };
        }
        match self.remove(seq) {
            Some(park) => Answered::No {
                job: park.job,
                key: park.key,
                why,
            },
            None => Answered::Unknown,
        }
    }

    /// Runs whose time is up at `now_ms`: those still waiting for an answer come back (not run:
    /// the caller logs them); watched ones are forgotten (the other host ran them).
    pub fn expire(&mut self, now_ms: i64) -> Vec<(T, RunKey)> {
        let mut unanswered = Vec::new();
        while let Some(&(until, seq)) = self.deadlines.first() {
            if until > now_ms {
                break;
            }
            if let Some(park) = self.remove(seq)
                && !park.taken
            {
                unanswered.push((park.job, park.key));
            }
        }
        unanswered
    }

    /// The helper is gone: every run waiting for an answer comes back (not run); watched ones
    /// are forgotten (a new helper knows nothing of their requests).
    pub fn abandon(&mut self) -> Vec<(T, RunKey)> {
        let runs = std::mem::take(&mut self.runs);
        self.deadlines.clear();
        self.shares.clear();
        runs.into_values()
            .filter(|park| !park.taken)
            .map(|park| (park.job, park.key))
            .collect()
    }

    /// The soonest deadline, for the loop's sleep.
    pub fn next_deadline_ms(&self) -> Option<i64> {
        self.deadlines.first().map(|&(until, _)| until)
    }

    pub fn len(&self) -> usize {
        self.runs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::entry_id::EntryKey;

    fn key(entry: u64) -> RunKey {
        RunKey {
            cluster: "c".into(),
            owner: b"alice".to_vec(),
            entry: EntryKey(entry),
            minute: 600,
        }
    }

    #[test]
    fn go_starts_the_run_once() {
        let mut p = Parked::default();
        let seq = p.park("job", key(1), None, 0).unwrap();
        assert_eq!(
            p.go(seq),
            Answered::Go {
                job: "job",
                key: key(1),
                taken_over: false
            }
        );
        assert_eq!(p.go(seq), Answered::Unknown, "a second answer does nothing");
        assert!(p.is_empty());
    }

    #[test]
    fn a_run_taken_elsewhere_is_watched_then_taken_over_or_forgotten() {
        let mut p = Parked::default();
        let a = p.park("a", key(1), None, 0).unwrap();
        let b = p.park("b", key(2), None, 0).unwrap();
        assert_eq!(
            p.no(a, Denied::Taken("host-b".into()), 100),
            Answered::Taken {
                host: "host-b".into()
            }
        );
        assert_eq!(
            p.no(b, Denied::Taken("host-b".into()), 100),
            Answered::Taken {
                host: "host-b".into()
            }
        );
        assert_eq!(p.next_deadline_ms(), Some(100 + TAKEOVER_WAIT_MS));
        // The helper took `a` over: it starts here.
        assert_eq!(
            p.go(a),
            Answered::Go {
                job: "a",
                key: key(1),
                taken_over: true
            }
        );
        // `b` ran on host-b: forgotten at its deadline, without a line.
        assert!(p.expire(100 + TAKEOVER_WAIT_MS - 1).is_empty());
        assert_eq!(p.len(), 1);
        assert!(p.expire(100 + TAKEOVER_WAIT_MS).is_empty());
        assert!(p.is_empty());
    }

    #[test]
    fn an_unanswered_run_is_given_up_at_its_deadline() {
        let mut p = Parked::default();
        p.park("late", key(1), None, 1_000).unwrap();
        assert!(p.expire(1_000 + ANSWER_WAIT_MS - 1).is_empty());
        assert_eq!(
            p.expire(1_000 + ANSWER_WAIT_MS),
            vec![("late", key(1))],
            "not run, for the caller to log"
        );
        let seq = p.park("paused", key(2), None, 0).unwrap();
        assert_eq!(
            p.no(seq, Denied::Paused, 5),
            Answered::No {
                job: "paused",
                key: key(2),
                why: Denied::Paused
            }
        );
    }

    #[test]
    fn a_lost_helper_gives_back_what_waited_for_answers() {
        let mut p = Parked::default();
        let a = p.park("a", key(1), None, 0).unwrap();
        p.park("b", key(2), None, 0).unwrap();
        p.no(a, Denied::Taken("h".into()), 0);
        assert_eq!(p.abandon(), vec![("b", key(2))]);
        assert!(p.is_empty() && p.next_deadline_ms().is_none());
    }

    #[test]
    fn one_user_can_not_crowd_out_another_or_the_system_files() {
        let mut p = Parked::default();
        let alice = Some(1000);
        let mut first = None;
        for i in 0..MAX_PARKED_PER_USER {
            let seq = p.park(i, key(i as u64), alice, 0).unwrap();
            first.get_or_insert(seq);
        }
        // Alice's share is full: her next run is refused...
        assert_eq!(p.park(7, key(7), alice, 0), Err(7));
        // ...Bob's and the system files' are not.
        assert!(p.park(8, key(8), Some(1001), 0).is_ok());
        assert!(p.park(9, key(9), None, 0).is_ok());
        // A watched run of hers makes room for her next one.
        let first = first.unwrap();
        p.no(first, Denied::Taken("h".into()), 0);
        assert!(p.park(10, key(10), alice, 0).is_ok());
        assert_eq!(
            p.go(first),
            Answered::Unknown,
            "the watched run was dropped"
        );
        // An answer gives her share back.
        let seq = p.park(11, key(11), alice, 0);
        assert!(seq.is_err());
        assert!(matches!(p.go(2), Answered::Go { .. }));
        assert!(p.park(11, key(11), alice, 0).is_ok());
    }

    #[test]
    fn the_bound_holds_and_watched_runs_make_room_first() {
        let mut p = Parked::default();
        let first = p.park(0usize, key(0), None, 0).unwrap();
        p.no(first, Denied::Taken("h".into()), 0);
        for i in 1..MAX_PARKED {
            p.park(i, key(i as u64), None, 0).unwrap();
        }
        assert_eq!(p.len(), MAX_PARKED);
        // Full: the watched one goes to make room...
        assert!(p.park(MAX_PARKED, key(0), None, 0).is_ok());
        assert_eq!(p.go(first), Answered::Unknown);
        // ...and with only unanswered runs left, a new one is refused.
        assert_eq!(p.park(MAX_PARKED + 1, key(0), None, 0), Err(MAX_PARKED + 1));
        assert_eq!(p.len(), MAX_PARKED);
    }
}
