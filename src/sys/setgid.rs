//! The group privilege of the setgid `crontab` binary (Debian's model: the binary is setgid
//! `crontab`, the spool directory `root:crontab` 1730).
//!
//! The program holds the group only while it works in the spool directory. Everything else —
//! reading the file a user names, the allow/deny files' fallbacks, the editor's temporary file,
//! time-zone data, the editor itself — runs with the effective gid lowered to the real gid, so
//! that a user can not use `crontab` to reach what the group can reach. The saved set-gid keeps
//! the group so that [`Privilege::with_group`] can take it back; a program `crontab` starts (the
//! editor) loses it for good, because `execve` copies the effective gid, lowered by then, into the
//! saved one.
//!
//! This module must not decide anything about paths or users: it only reports and switches ids.

use std::io;

use nix::unistd;

use super::user::{self, Gid, Uid};

/// The ids the process started with, and whether they carry a privilege.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Privilege {
    pub real_uid: Uid,
    pub effective_uid: Uid,
    pub real_gid: Gid,
    /// The gid the binary was installed with (the group `crontab` when setgid).
    pub effective_gid: Gid,
}

impl Privilege {
    /// Reads the process's ids. Call it once, first thing, before anything lowers them.
    pub fn resolve() -> Privilege {
        Privilege {
            real_uid: user::real_uid(),
            effective_uid: user::effective_uid(),
            real_gid: user::real_gid(),
            effective_gid: user::effective_gid(),
        }
    }

    /// True when the binary runs with ids its caller does not have (setgid, or setuid): then
    /// every path override and every redirecting environment variable must be ignored.
    pub fn is_privileged(&self) -> bool {
        self.real_gid != self.effective_gid || self.real_uid != self.effective_uid
    }

    /// Lowers the effective gid to the real gid; the saved set-gid still holds the group.
    pub fn lower(&self) -> io::Result<()> {
        if self.real_gid == self.effective_gid {
            return Ok(());
        }
        unistd::setegid(unistd::Gid::from_raw(self.real_gid.0)).map_err(io::Error::from)?;
        if user::effective_gid() != self.real_gid {
            return Err(io::Error::other("the group privilege could not be lowered"));
        }
        Ok(())
    }

    /// Runs `f` with the group privilege (the spool directory's group), then lowers it again.
    /// If lowering fails the process must not go on: the error is returned and the caller exits.
    pub fn with_group<T>(&self, f: impl FnOnce() -> T) -> io::Result<T> {
        if self.real_gid != self.effective_gid {
            unistd::setegid(unistd::Gid::from_raw(self.effective_gid.0))
                .map_err(io::Error::from)?;
        }
        let out = f();
        self.lower()?;
        Ok(out)
    }

    /// The gid a child process (the editor) must run with: the caller's own.
    pub fn child_gid(&self) -> Gid {
        self.real_gid
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_whose_ids_match_holds_no_privilege() {
        let p = Privilege {
            real_uid: Uid(1000),
            effective_uid: Uid(1000),
            real_gid: Gid(1000),
            effective_gid: Gid(1000),
        };
        assert!(!p.is_privileged());
    }

    #[test]
    fn a_setgid_process_is_privileged() {
        let p = Privilege {
            real_uid: Uid(1000),
            effective_uid: Uid(1000),
            real_gid: Gid(1000),
            effective_gid: Gid(104),
        };
        assert!(p.is_privileged());
        assert_eq!(p.child_gid(), Gid(1000));
    }

    #[test]
    fn root_running_the_setgid_binary_is_privileged_too() {
        let p = Privilege {
            real_uid: Uid(0),
            effective_uid: Uid(0),
            real_gid: Gid(0),
            effective_gid: Gid(104),
        };
        assert!(p.is_privileged());
    }
}
