//! Whether a crontab file may be trusted, decided purely from the facts `sys` read off the
//! open descriptor (DESIGN §3, Debian's checks, research §1.3 and §2.8). Pure: no syscalls
//! here.

use std::fmt;

use crate::types::{FileFacts, FileKind, Uid};

/// Which rule applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A spool file named after a user with this uid.
    User { owner: Uid },
    /// /etc/crontab or a file in /etc/cron.d.
    System,
}

/// Why a file is refused; `Display` is Debian's log event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    NotRegular,
    InsecureModeUser,
    InsecureModeSystem,
    WrongOwner,
    WrongSymlinkOwner,
    HardLinks,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Refusal::NotRegular => "NOT A REGULAR FILE",
            Refusal::InsecureModeUser => "INSECURE MODE (mode 0600 expected)",
            Refusal::InsecureModeSystem => "INSECURE MODE (group/other writable)",
            Refusal::WrongOwner => "WRONG FILE OWNER",
            Refusal::WrongSymlinkOwner => "WRONG SYMLINK OWNER",
            Refusal::HardLinks => "NUMBER OF HARD LINKS > 1",
        })
    }
}

const GROUP_OR_WORLD_WRITABLE: u32 = 0o022;

/// Debian's rule, in Debian's order: a regular file; mode (user: exactly 0600, or with
/// `permit_any_mode` (cronie's -p) anything not group/world-writable; system: not
/// group/world-writable); owner (user: the user or root; system: root); one link.
pub fn check(facts: &FileFacts, kind: Kind, permit_any_mode: bool) -> Result<(), Refusal> {
    if facts.kind != FileKind::Regular {
        return Err(Refusal::NotRegular);
    }
    match kind {
        Kind::User { owner } => {
            let mode_ok = if permit_any_mode {
                facts.mode & GROUP_OR_WORLD_WRITABLE == 0
            } else {
                facts.mode == 0o600
            };
            if !mode_ok {
                return Err(Refusal::InsecureModeUser);
            }
            if facts.owner != owner && facts.owner != Uid::ROOT {
                return Err(Refusal::WrongOwner);
            }
        }
        Kind::System => {
            if facts.mode & GROUP_OR_WORLD_WRITABLE != 0 {
                return Err(Refusal::InsecureModeSystem);
            }
            if facts.owner != Uid::ROOT {
                return Err(Refusal::WrongOwner);
            }
        }
    }
    if facts.links != 1 {
        return Err(Refusal::HardLinks);
    }
    Ok(())
}

/// A system crontab that is a symlink: the link itself must be root's (its target is then
/// checked by [`check`] after opening).
pub fn check_symlink(link: &FileFacts) -> Result<(), Refusal> {
    if link.owner == Uid::ROOT {
        Ok(())
    } else {
        Err(Refusal::WrongSymlinkOwner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::Gid;

    fn file(owner: u32, mode: u32, links: u64) -> FileFacts {
        FileFacts {
            kind: FileKind::Regular,
            owner: Uid(owner),
            group: Gid(0),
            mode,
            links,
            size: 0,
            mtime_ns: 0,
        }
    }

    const ALICE: Kind = Kind::User { owner: Uid(1000) };

    #[test]
    fn a_user_file_must_be_0600_and_owned_by_the_user_or_root() {
        assert_eq!(check(&file(1000, 0o600, 1), ALICE, false), Ok(()));
        assert_eq!(check(&file(0, 0o600, 1), ALICE, false), Ok(()));
        assert_eq!(
            check(&file(1001, 0o600, 1), ALICE, false),
            Err(Refusal::WrongOwner)
        );
        assert_eq!(
            check(&file(1000, 0o644, 1), ALICE, false),
            Err(Refusal::InsecureModeUser)
        );
        assert_eq!(
            check(&file(1000, 0o400, 1), ALICE, false),
            Err(Refusal::InsecureModeUser)
        );
    }

    #[test]
    fn permit_any_mode_still_refuses_a_file_others_can_write() {
        assert_eq!(check(&file(1000, 0o644, 1), ALICE, true), Ok(()));
        assert_eq!(
            check(&file(1000, 0o666, 1), ALICE, true),
            Err(Refusal::InsecureModeUser)
        );
    }

    #[test]
    fn a_system_file_must_be_roots_and_not_writable_by_others() {
        assert_eq!(check(&file(0, 0o644, 1), Kind::System, false), Ok(()));
        assert_eq!(
            check(&file(1000, 0o644, 1), Kind::System, false),
            Err(Refusal::WrongOwner)
        );
        assert_eq!(
            check(&file(0, 0o664, 1), Kind::System, false),
            Err(Refusal::InsecureModeSystem)
        );
    }

    #[test]
    fn hard_links_and_non_files_are_refused() {
        assert_eq!(
            check(&file(1000, 0o600, 2), ALICE, false),
            Err(Refusal::HardLinks)
        );
        let mut dir = file(0, 0o644, 1);
        dir.kind = FileKind::Directory;
        assert_eq!(check(&dir, Kind::System, false), Err(Refusal::NotRegular));
        let mut link = file(1000, 0o777, 1);
        link.kind = FileKind::Symlink;
        assert_eq!(check_symlink(&link), Err(Refusal::WrongSymlinkOwner));
        assert_eq!(
            Refusal::InsecureModeUser.to_string(),
            "INSECURE MODE (mode 0600 expected)"
        );
    }
}
