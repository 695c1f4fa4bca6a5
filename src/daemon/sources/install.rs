//! The parts of loading a crontab file that the sources owner (`daemon/sources/`) uses to
//! turn a parsed file into entries: the RANDOM_DELAY scale, a new entry's identity for reuse
//! ([`new_same`]), the shared owners of a file's entries ([`Owners`]) and the warning for users
//! passwd doesn't know.

use std::collections::HashMap;
use std::sync::Arc;

use crate::crontab::{Crontab, Entry, Env};
use crate::daemon::sources::reuse::Same;
use crate::database::entries::{Commands, Owner};
use crate::log::printable;
use crate::schedule::{Schedule, Zone};
use crate::sys::user::{Uid, User};

/// RANDOM_DELAY minutes times the daemon's factor, in whole seconds.
pub(in crate::daemon) fn scaled_delay(minutes: u32, factor: f64) -> u32 {
    (f64::from(minutes) * 60.0 * factor) as u32
}

/// A new scheduled entry's identity (run as `user`, the file checked for `uid`), for
/// [`Reusable::claim`].
pub(in crate::daemon) fn new_same<'a>(
    entry: &'a Entry,
    command: &'a [u8],
    schedule: &'a Schedule,
    user: &'a [u8],
    uid: Option<Uid>,
    delay: u32,
) -> Same<'a> {
    Same {
        schedule,
        zone: entry.zone.as_ref().map(Zone::name),
        delay,
        user,
        uid,
        command,
        quiet: entry.quiet,
        env: &entry.env,
    }
}

/// An environment told by its allocation: the key holds it, so no other can take its place.
struct SameEnv(Arc<Env>);

impl PartialEq for SameEnv {
    fn eq(&self, other: &SameEnv) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for SameEnv {}

impl std::hash::Hash for SameEnv {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        Arc::as_ptr(&self.0).hash(state);
    }
}

/// The owners of one file's entries, as `install` makes them: one per user named in the file (a
/// user crontab has one), cronie's `-` and run of entries under the same variables: its entries
/// share it. The environment is told by its allocation (the parser gives a run of entries one),
/// which the key keeps alive ([`SameEnv`]).
pub(in crate::daemon) struct Owners {
    tab: Arc<str>,
    commands: Commands,
    uid: Option<Uid>,
    made: HashMap<(Vec<u8>, bool, SameEnv), Arc<Owner>>,
    last: Option<Arc<Owner>>,
}

impl Owners {
    pub(in crate::daemon) fn new(tab: Arc<str>, commands: Commands, uid: Option<Uid>) -> Owners {
        Owners {
            tab,
            commands,
            uid,
            made: HashMap::new(),
            last: None,
        }
    }

    /// The owner of an entry of `user`, with `quiet` and `env`: made the first time.
    /// `same_user`: the caller knows `user` is the one of the last call (else it is compared).
    pub(in crate::daemon) fn of(
        &mut self,
        user: &[u8],
        same_user: bool,
        quiet: bool,
        env: &Arc<Env>,
    ) -> Arc<Owner> {
        // Consecutive entries are mostly the same user's: the last owner first, kept as it is.
        if let Some(last) = &self.last
            && (same_user || last.user == user)
            && last.quiet == quiet
            && Arc::ptr_eq(&last.env, env)
        {
            return Arc::clone(last);
        }
        let key = || (user.to_vec(), quiet, SameEnv(Arc::clone(env)));
        let owner = match self.made.get(&key()) {
            Some(owner) => Arc::clone(owner),
            None => {
                let owner = Arc::new(Owner {
                    user: user.to_vec(),
                    uid: self.uid,
                    tab: Arc::clone(&self.tab),
                    commands: Arc::clone(&self.commands),
                    quiet,
                    env: Arc::clone(env),
                });
                self.made.insert(key(), Arc::clone(&owner));
                owner
            }
        };
        self.last = Some(Arc::clone(&owner));
        owner
    }
}

/// A system file's entries whose user passwd doesn't know: a warning at load, at the entry's
/// line (the entry stays: it runs once the user exists, and is refused with a line naming the
/// file until then). One lookup per name, however many entries share it.
pub(in crate::daemon) fn warn_unknown_users(crontab: &mut Crontab) {
    let mut known: HashMap<Arc<[u8]>, bool> = HashMap::new();
    let mut unknown = Vec::new();
    // Consecutive entries are mostly the same user's: the last answer first.
    let mut last: Option<(&Arc<[u8]>, bool)> = None;
    for entry in &crontab.entries {
        let Some(user) = &entry.user else { continue };
        let exists = match last {
            // One allocation of the name for consecutive entries of one user (the parser's).
            Some((name, exists)) if Arc::ptr_eq(name, user) || name[..] == user[..] => exists,
            _ => match known.get(&user[..]) {
                Some(&exists) => exists,
                None => {
                    let exists = !matches!(User::resolve_name(user), Ok(None));
                    known.insert(Arc::clone(user), exists);
                    exists
                }
            },
        };
        last = Some((user, exists));
        if !exists {
            unknown.push((entry.line, printable(user)));
        }
    }
    for (line, user) in unknown {
        crontab.warn(
            line,
            1,
            format!("no such user '{user}' (the entry runs once it exists)"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_delay_is_scaled_by_the_daemons_factor_in_whole_seconds() {
        assert_eq!(scaled_delay(0, 0.99), 0);
        assert_eq!(scaled_delay(10, 0.0), 0);
        assert_eq!(scaled_delay(10, 0.5), 300);
        assert_eq!(scaled_delay(1, 0.999_999), 59);
    }
}
