//! The job's user as the daemon looks it up before the fork: the passwd entry and the
//! supplementary groups (`getgrouplist`), at most once a second per user. A minute of
//! thousands of jobs of one user reads passwd and the group database once in the daemon,
//! where the name service's code and files are already mapped, instead of once in every job
//! child, where each read costs the child's first touch of that code and of the heap pages
//! its buffers land on (copied from the daemon's on write).
//!
//! Debian's cron reads passwd when it loads the crontab and keeps the entry until the next
//! load; this reads it again after a second at most: a user removed, a uid, home or group
//! changed shows on the jobs started a second later. The job child still checks the uid
//! against the one the crontab was checked for, and logs what the look found wrong, as before.
//!
//! Bound: one look per user a second, and at most [`MAX_USERS`] users kept (all forgotten when
//! the second ends or the table is full).

use std::collections::HashMap;
use std::io;
use std::time::{Duration, Instant};

use crate::sys::as_user::Credentials;
use crate::sys::user::User;

/// How long a look is used for.
pub const VALID_FOR: Duration = Duration::from_secs(1);

/// The most users kept at once; the table starts afresh beyond.
pub const MAX_USERS: usize = 1024;

/// What looking a user up found.
#[derive(Debug, Clone)]
pub enum Looked {
    /// The passwd entry, and the ids its processes take (or why they can't be computed).
    Found(Identity),
    /// No passwd entry has that name.
    Unknown,
    /// The name service failed (its error).
    Failed(String),
}

/// A user with the ids the job's processes take.
#[derive(Debug, Clone)]
pub struct Identity {
    pub user: User,
    /// `Ok(None)`: this process is that user already and can't change ids (a daemon that is not
    /// root); `Err`: why the ids could not be computed (the job does not run).
    pub creds: Result<Option<Credentials>, String>,
}

impl Identity {
    /// `user` with its ids computed now (as root: `getgrouplist`).
    pub fn of(user: User) -> Identity {
        let creds = Credentials::of(&user).map_err(|e| e.to_string());
        Identity { user, creds }
    }

    /// Gives this process (the root job child) the user's supplementary groups, as
    /// `initgroups` would; nothing when there are no ids to take (the job does not run then,
    /// or this process is the user already).
    pub fn take_groups_here(&self) -> io::Result<()> {
        match &self.creds {
            Ok(Some(creds)) => creds.take_groups_here(),
            _ => Ok(()),
        }
    }

    /// This identity with this process's supplementary groups as the ones its processes take:
    /// in the job child once PAM's credentials are established, which may have added some.
    pub fn with_groups_of_this_process(&self) -> io::Result<Identity> {
        let creds = match &self.creds {
            Ok(Some(creds)) => Ok(Some(creds.with_groups_of_this_process()?)),
            other => other.clone(),
        };
        Ok(Identity {
            user: self.user.clone(),
            creds,
        })
    }
}

/// Looks `name` up in passwd and the group database, now.
pub fn look_up(name: &[u8]) -> Looked {
    match User::resolve_name(name) {
        Ok(Some(user)) => Looked::Found(Identity::of(user)),
        Ok(None) => Looked::Unknown,
        Err(e) => Looked::Failed(e.to_string()),
    }
}

/// The looks of the current second.
#[derive(Debug, Default)]
pub struct Identities {
    since: Option<Instant>,
    known: HashMap<Vec<u8>, Looked>,
}

impl Identities {
    /// `name` as looked up within [`VALID_FOR`] of `now`, or as `look` finds it now.
    pub fn get(
        &mut self,
        name: &[u8],
        now: Instant,
        look: impl FnOnce(&[u8]) -> Looked,
    ) -> &Looked {
        let stale = self
            .since
            .is_none_or(|since| now.saturating_duration_since(since) >= VALID_FOR);
        let known = !stale && self.known.contains_key(name);
        if !known {
            if stale || self.known.len() >= MAX_USERS {
                self.known.clear();
                self.since = Some(now);
            }
            // The daemon writes nothing on a known user's start (no key copied): every page
            // it writes between two forks is copied first, the child still sharing it.
            self.known.insert(name.to_vec(), look(name));
        }
        &self.known[name]
    }

    /// How many users are kept.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Gid, Uid};

    fn user(name: &str, uid: u32) -> Looked {
        Looked::Found(Identity {
            user: User {
                name: name.as_bytes().to_vec(),
                uid: Uid(uid),
                gid: Gid(uid),
                home: "/home".into(),
                shell: "/bin/sh".into(),
            },
            creds: Ok(None),
        })
    }

    fn uid(looked: &Looked) -> Option<u32> {
        match looked {
            Looked::Found(identity) => Some(identity.user.uid.0),
            _ => None,
        }
    }

    #[test]
    fn a_user_is_looked_up_once_a_second_and_again_after() {
        let mut table = Identities::default();
        let start = Instant::now();
        let mut looks = 0;
        let mut look = |at: Instant, uid_now: u32, table: &mut Identities| {
            uid(table.get(b"alice", at, |_| {
                looks += 1;
                user("alice", uid_now)
            }))
        };
        assert_eq!(look(start, 1000, &mut table), Some(1000));
        // Within the second: the first look's answer, although passwd says otherwise now.
        assert_eq!(
            look(start + Duration::from_millis(999), 1001, &mut table),
            Some(1000)
        );
        // A second later: looked up again.
        assert_eq!(look(start + VALID_FOR, 1001, &mut table), Some(1001));
        assert_eq!(looks, 2);
    }

    #[test]
    fn an_unknown_user_or_a_failed_look_is_kept_as_such_for_the_second() {
        let mut table = Identities::default();
        let now = Instant::now();
        assert!(matches!(
            table.get(b"gone", now, |_| Looked::Unknown),
            Looked::Unknown
        ));
        assert!(matches!(
            table.get(b"gone", now, |_| user("gone", 5)),
            Looked::Unknown
        ));
        let failed = table.get(b"ldap", now, |_| Looked::Failed("timed out".into()));
        assert!(matches!(failed, Looked::Failed(e) if e == "timed out"));
        assert_eq!(table.len(), 2);
    }

    #[test]
    fn the_table_starts_afresh_when_full() {
        let mut table = Identities::default();
        let now = Instant::now();
        for i in 0..MAX_USERS as u32 {
            table.get(format!("u{i}").as_bytes(), now, |_| user("u", i));
        }
        assert_eq!(table.len(), MAX_USERS);
        // A known user is answered from the table, full or not.
        assert_eq!(uid(table.get(b"u7", now, |_| user("u7", 99))), Some(7));
        assert_eq!(table.len(), MAX_USERS);
        // One more: the table is emptied first, so it never holds more than the bound.
        assert_eq!(uid(table.get(b"new", now, |_| user("new", 5))), Some(5));
        assert_eq!(table.len(), 1);
        assert_eq!(uid(table.get(b"u7", now, |_| user("u7", 99))), Some(99));
    }
}
