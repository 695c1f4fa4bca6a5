//! Giving up root in the job child: supplementary groups, group, user, in that order, then proof
//! that root can't be regained. One function, because the order is the security property.

use std::ffi::CString;
use std::fmt;

use nix::unistd;

use super::user::{User, effective_uid};

/// Why privileges could not be dropped; the job must not run.
#[derive(Debug)]
pub enum DropError {
    /// The user name holds a NUL byte.
    BadName,
    Step(&'static str, nix::errno::Errno),
    /// `setuid(0)` succeeded after the drop, or an id is not the target's.
    NotDropped(&'static str),
    /// A non-root daemon was asked to run a job as someone else.
    NotRoot,
}

impl fmt::Display for DropError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DropError::BadName => write!(f, "user name contains a NUL byte"),
            DropError::Step(step, e) => write!(f, "{step} failed: {e}"),
            DropError::NotDropped(what) => write!(f, "privileges not dropped: {what}"),
            DropError::NotRoot => write!(f, "not running as root: can't change user"),
        }
    }
}

/// Becomes `user` for good: initgroups, setgid, setuid, then checks that the real and effective
/// ids are the user's and (unless the user is root) that setuid(0) fails.
///
/// A daemon that is not root (tests) can only run its own user's jobs: then nothing is changed.
pub fn irrevocably_drop_privileges(user: &User) -> Result<(), DropError> {
    if effective_uid().0 != 0 {
        return if user.uid == effective_uid() {
            Ok(())
        } else {
            Err(DropError::NotRoot)
        };
    }
    let name = CString::new(user.name.clone()).map_err(|_| DropError::BadName)?;
    let gid = unistd::Gid::from_raw(user.gid.0);
    let uid = unistd::Uid::from_raw(user.uid.0);
    unistd::initgroups(&name, gid).map_err(|e| DropError::Step("initgroups", e))?;
    unistd::setgid(gid).map_err(|e| DropError::Step("setgid", e))?;
    unistd::setuid(uid).map_err(|e| DropError::Step("setuid", e))?;
    if unistd::getuid() != uid || unistd::geteuid() != uid {
        return Err(DropError::NotDropped("uid"));
    }
    if unistd::getgid() != gid || unistd::getegid() != gid {
        return Err(DropError::NotDropped("gid"));
    }
    if user.uid.0 != 0 && unistd::setuid(unistd::Uid::from_raw(0)).is_ok() {
        return Err(DropError::NotDropped("setuid(0) succeeded"));
    }
    Ok(())
}
