//! Users and ids: the passwd database (through NSS, as getpwnam_r) and the process's own ids.
//! The ids and the passwd entry themselves are plain data in [`crate::types`], re-exported here.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;

use nix::unistd;

pub use crate::types::{Gid, Uid, User};

impl User {
    fn from_nix(u: unistd::User) -> User {
        User {
            name: u.name.into_bytes(),
            uid: Uid(u.uid.as_raw()),
            gid: Gid(u.gid.as_raw()),
            home: u.dir,
            shell: u.shell,
        }
    }

    /// Looks a user up by name; `Ok(None)` if there is no such user.
    pub fn resolve_name(name: &[u8]) -> std::io::Result<Option<User>> {
        let name = OsString::from_vec(name.to_vec());
        let Some(name) = name.to_str() else {
            return Ok(None);
        };
        unistd::User::from_name(name)
            .map(|u| u.map(User::from_nix))
            .map_err(std::io::Error::from)
    }

    /// Looks a user up by uid; `Ok(None)` if no passwd entry has it.
    pub fn resolve_uid(uid: Uid) -> std::io::Result<Option<User>> {
        unistd::User::from_uid(unistd::Uid::from_raw(uid.0))
            .map(|u| u.map(User::from_nix))
            .map_err(std::io::Error::from)
    }
}

pub fn real_uid() -> Uid {
    Uid(unistd::getuid().as_raw())
}

pub fn effective_uid() -> Uid {
    Uid(unistd::geteuid().as_raw())
}

pub fn real_gid() -> Gid {
    Gid(unistd::getgid().as_raw())
}

pub fn effective_gid() -> Gid {
    Gid(unistd::getegid().as_raw())
}

/// The id of the group `name`; `None` if there is no such group.
pub fn group_id(name: &str) -> std::io::Result<Option<Gid>> {
    nix::unistd::Group::from_name(name)
        .map(|g| g.map(|g| Gid(g.gid.as_raw())))
        .map_err(std::io::Error::from)
}

/// Loads the name service modules that supplementary groups come from (nsswitch.conf's `group`
/// sources, e.g. `files systemd`) into this process, by asking root's groups once: children
/// forked later find them loaded instead of each `dlopen`ing them for its `initgroups`.
pub fn load_group_sources() {
    let _ = unistd::getgrouplist(c"root", unistd::Gid::from_raw(0));
}
