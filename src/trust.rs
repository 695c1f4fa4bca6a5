//! Whether a file may be trusted, decided purely from the facts `sys` read off the open
//! descriptor: a crontab file (Debian's checks: docs/design.md §3), the daemon's
//! state file and the directories on the way to it, and a secret file cronctl reads (a
//! passfile, a TLS client key). Pure: no syscalls here.
//!
//! The secret file's rule ([`check_private`]) is public: the `cronctl` package applies it. The
//! others are the daemon's and crontab's own.

use std::fmt;

use crate::types::{FileFacts, FileKind, Uid};

/// Which rule applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A spool file named after a user with this uid.
    User { owner: Uid },
    /// /etc/crontab or a file in /etc/cron.d.
    System,
    /// A file given with `--crontab`, run as this uid (the daemon's own).
    Given { owner: Uid },
}

/// Why a file is refused; `Display` is Debian's log event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    NotRegular,
    InsecureModeUser,
    InsecureModeSystem,
    WrongOwner,
    WrongSymlinkOwner,
    HardLinks,
    /// A directory on the way to the file that anyone may write (and not sticky).
    InsecureDirectory,
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
            Refusal::InsecureDirectory => "INSECURE DIRECTORY (other writable, not sticky)",
        })
    }
}

const GROUP_OR_WORLD_WRITABLE: u32 = 0o022;

/// Debian's rule, in Debian's order: a regular file; mode (user: exactly 0600, or with
/// `permit_any_mode` (cronie's -p) anything not group/world-writable; system: not
/// group/world-writable); owner (user: the user or root; system: root); one link.
pub(crate) fn check(facts: &FileFacts, kind: Kind, permit_any_mode: bool) -> Result<(), Refusal> {
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
        // Named on the daemon's command line: any mode others can't write (an image's files
        // are 0644), the daemon's user's or root's.
        Kind::Given { owner } => {
            if facts.mode & GROUP_OR_WORLD_WRITABLE != 0 {
                return Err(Refusal::InsecureModeSystem);
            }
            if facts.owner != owner && facts.owner != Uid::ROOT {
                return Err(Refusal::WrongOwner);
            }
        }
    }
    if facts.links != 1 {
        return Err(Refusal::HardLinks);
    }
    Ok(())
}

/// What a refused crontab's log line says after the file's name: what the file is and what
/// the rule allows (`owned by uid 1000 (alice), must be root`, `mode 0644, must be 0600`,
/// `2 hard links, must have 1`); `None` for a refusal the event says all of. `name` gives a
/// uid's user name where passwd has one.
pub(crate) fn explain(
    refusal: Refusal,
    facts: &FileFacts,
    kind: Kind,
    permit_any_mode: bool,
    name: &dyn Fn(Uid) -> Option<String>,
) -> Option<String> {
    let who = |uid: Uid| match name(uid) {
        Some(user) => format!("uid {} ({user})", uid.0),
        None => format!("uid {}", uid.0),
    };
    let not_writable = "must not be writable by group or others";
    let mode = facts.mode;
    Some(match (refusal, kind) {
        (Refusal::WrongOwner, Kind::System) => {
            format!("owned by {}, must be root", who(facts.owner))
        }
        (Refusal::WrongOwner, Kind::User { owner } | Kind::Given { owner }) => {
            format!(
                "owned by {}, must be {} or root",
                who(facts.owner),
                who(owner)
            )
        }
        (Refusal::InsecureModeUser, _) if permit_any_mode => {
            format!("mode {mode:04o}, {not_writable}")
        }
        (Refusal::InsecureModeUser, _) => format!("mode {mode:04o}, must be 0600"),
        (Refusal::InsecureModeSystem, _) => format!("mode {mode:04o}, {not_writable}"),
        (Refusal::HardLinks, _) => format!("{} hard links, must have 1", facts.links),
        _ => return None,
    })
}

/// A system crontab that is a symlink: the link itself must be root's (its target is then
/// checked by [`check`] after opening); a `--crontab` file's link may also be its `owner`'s
/// (`Kind::Given`; a Kubernetes ConfigMap is mounted as links to links).
pub(crate) fn check_symlink(link: &FileFacts, kind: Kind) -> Result<(), Refusal> {
    let owner = match kind {
        Kind::Given { owner } => owner,
        _ => Uid::ROOT,
    };
    if link.owner == Uid::ROOT || link.owner == owner {
        Ok(())
    } else {
        Err(Refusal::WrongSymlinkOwner)
    }
}

/// A symlink or a directory on the way to a system file or a `--crontab` file (every one the
/// path goes through, the directories of the links' targets too, `database::open_system`): a
/// link must pass [`check_symlink`], as the last one must, since whoever owns a link chooses
/// where the rest of the path leads; a directory must not be writable by others unless it is
/// sticky, or anyone could put a link of their own or a directory in place of the next name.
/// A directory writable by its group passes: the admin chose the group (Debian's `staff`
/// directories, an image's group-0 directories made for OpenShift's random uid).
pub(crate) fn check_on_the_way(facts: &FileFacts, kind: Kind) -> Result<(), Refusal> {
    match facts.kind {
        FileKind::Symlink => check_symlink(facts, kind),
        FileKind::Directory if facts.mode & OTHER_WRITABLE != 0 && facts.mode & STICKY == 0 => {
            Err(Refusal::InsecureDirectory)
        }
        _ => Ok(()),
    }
}

const OTHER_WRITABLE: u32 = 0o002;

/// Why the daemon's own file, a directory on the way to it, or a secret file is refused;
/// `Display` is the reason as the log or the error says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Untrusted {
    NotRegular,
    NotDirectory,
    /// Owned by someone the rule does not allow.
    OwnedBy(Uid),
    /// The last directory (the daemon's own) owned by someone else.
    NotTheDaemons(Uid),
    /// The state file, writable by group or others (this mode).
    WritableByOthers(u32),
    /// A directory writable by group or others (this mode) where that is not allowed.
    DirWritableByOthers(u32),
    /// A secret file not owned by `reader` or with group or other bits.
    NotPrivate {
        reader: Uid,
        owner: Uid,
        mode: u32,
    },
}

impl fmt::Display for Untrusted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Untrusted::NotRegular => f.write_str("not a regular file"),
            Untrusted::NotDirectory => f.write_str("not a directory"),
            Untrusted::OwnedBy(uid) => write!(f, "owned by uid {}", uid.0),
            Untrusted::NotTheDaemons(uid) => write!(f, "owned by uid {}, not the daemon's", uid.0),
            Untrusted::WritableByOthers(mode) => write!(f, "writable by others (mode {mode:o})"),
            Untrusted::DirWritableByOthers(mode) => {
                write!(f, "writable by group or others (mode {mode:o})")
            }
            Untrusted::NotPrivate {
                reader,
                owner,
                mode,
            } => write!(
                f,
                "must be owned by the user reading it (uid {}) with mode 0600 \
                 (it is uid {}, mode {mode:04o})",
                reader.0, owner.0
            ),
        }
    }
}

const GROUP_OR_OTHER_BITS: u32 = 0o077;
const STICKY: u32 = 0o1000;

/// The daemon's state file (`CRON_MISSED=once`'s `handled`): a regular file, owned by the
/// daemon's user `daemon`, writable by no one else.
pub(crate) fn check_state_file(facts: &FileFacts, daemon: Uid) -> Result<(), Untrusted> {
    if facts.kind != FileKind::Regular {
        return Err(Untrusted::NotRegular);
    }
    if facts.owner != daemon {
        return Err(Untrusted::OwnedBy(facts.owner));
    }
    if facts.mode & GROUP_OR_WORLD_WRITABLE != 0 {
        return Err(Untrusted::WritableByOthers(facts.mode));
    }
    Ok(())
}

/// Which directory [`check_dir`] is looking at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dir {
    /// The daemon's own (the state directory), the last on its path.
    Own,
    /// Any other: one on the way, or one the daemon only puts a name in.
    Other,
}

/// A directory on a path the daemon walks (`sys::fs::open_checked_dir`): a directory; owned by
/// `owner` or root (its own: by `owner`); not writable by group or others unless it is sticky
/// (its own: not even then).
pub(crate) fn check_dir(facts: &FileFacts, owner: Uid, which: Dir) -> Result<(), Untrusted> {
    if facts.kind != FileKind::Directory {
        return Err(Untrusted::NotDirectory);
    }
    if which == Dir::Own && facts.owner != owner {
        return Err(Untrusted::NotTheDaemons(facts.owner));
    }
    if facts.owner != owner && facts.owner != Uid::ROOT {
        return Err(Untrusted::OwnedBy(facts.owner));
    }
    if facts.mode & GROUP_OR_WORLD_WRITABLE != 0 && (which == Dir::Own || facts.mode & STICKY == 0)
    {
        return Err(Untrusted::DirWritableByOthers(facts.mode));
    }
    Ok(())
}

/// A directory only its owner may enter (the default state directory in `--crontab` mode, where
/// the control socket is): `None` when its mode has no group or other bits, else the mode it is
/// to have instead, the owner's bits kept. Checked after [`check_dir`] (`Dir::Own`) found it the
/// daemon's own: one made by an earlier version, mode 0755, is made private, not refused.
pub(crate) fn private_dir_mode(facts: &FileFacts) -> Option<u32> {
    (facts.mode & GROUP_OR_OTHER_BITS != 0).then_some(facts.mode & 0o700)
}

/// A secret file (a passfile, a TLS client key), as libpq demands of ~/.pgpass and of a client
/// key: a regular file, owned by `reader` (the effective uid), no group or other permission bits.
pub fn check_private(facts: &FileFacts, reader: Uid) -> Result<(), Untrusted> {
    if facts.kind != FileKind::Regular {
        return Err(Untrusted::NotRegular);
    }
    if facts.owner != reader || facts.mode & GROUP_OR_OTHER_BITS != 0 {
        return Err(Untrusted::NotPrivate {
            reader,
            owner: facts.owner,
            mode: facts.mode,
        });
    }
    Ok(())
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
    fn a_given_file_is_the_daemons_users_or_roots_and_not_writable_by_others() {
        let given = Kind::Given { owner: Uid(1000) };
        assert_eq!(check(&file(1000, 0o644, 1), given, false), Ok(()));
        assert_eq!(check(&file(0, 0o600, 1), given, false), Ok(()));
        assert_eq!(
            check(&file(1001, 0o600, 1), given, false),
            Err(Refusal::WrongOwner)
        );
        assert_eq!(
            check(&file(1000, 0o664, 1), given, false),
            Err(Refusal::InsecureModeSystem)
        );
        assert_eq!(
            check(&file(1000, 0o600, 2), given, false),
            Err(Refusal::HardLinks)
        );
        assert_eq!(check_symlink(&file(1000, 0o777, 1), given), Ok(()));
        assert_eq!(check_symlink(&file(0, 0o777, 1), given), Ok(()));
        assert_eq!(
            check_symlink(&file(1001, 0o777, 1), given),
            Err(Refusal::WrongSymlinkOwner)
        );
        assert_eq!(
            check_symlink(&file(1000, 0o777, 1), Kind::System),
            Err(Refusal::WrongSymlinkOwner)
        );
    }

    #[test]
    fn on_the_way_a_link_is_roots_or_the_given_files_users_and_a_directory_shut_to_others() {
        let given = Kind::Given { owner: Uid(1000) };
        let mut link = file(1000, 0o777, 1);
        link.kind = FileKind::Symlink;
        assert_eq!(check_on_the_way(&link, given), Ok(()));
        assert_eq!(
            check_on_the_way(&link, Kind::System),
            Err(Refusal::WrongSymlinkOwner)
        );
        link.owner = Uid(1001);
        assert_eq!(
            check_on_the_way(&link, given),
            Err(Refusal::WrongSymlinkOwner)
        );
        link.owner = Uid::ROOT;
        assert_eq!(check_on_the_way(&link, Kind::System), Ok(()));
        for (owner, mode) in [(0, 0o755), (1001, 0o755), (0, 0o2775), (0, 0o1777)] {
            assert_eq!(check_on_the_way(&dir(owner, mode), Kind::System), Ok(()));
        }
        assert_eq!(
            check_on_the_way(&dir(0, 0o777), given),
            Err(Refusal::InsecureDirectory)
        );
        assert_eq!(
            Refusal::InsecureDirectory.to_string(),
            "INSECURE DIRECTORY (other writable, not sticky)"
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
        assert_eq!(
            check_symlink(&link, Kind::System),
            Err(Refusal::WrongSymlinkOwner)
        );
        assert_eq!(
            Refusal::InsecureModeUser.to_string(),
            "INSECURE MODE (mode 0600 expected)"
        );
    }

    #[test]
    fn a_refusal_says_what_the_file_is_and_what_the_rule_allows() {
        let name = |uid: Uid| (uid == Uid(1000)).then(|| "alice".to_string());
        let why = |facts: &FileFacts, kind: Kind, any: bool| {
            let refusal = check(facts, kind, any).unwrap_err();
            explain(refusal, facts, kind, any, &name)
        };
        let owned = |s: &str| Some(s.to_string());
        assert_eq!(
            why(&file(1000, 0o644, 1), Kind::System, false),
            owned("owned by uid 1000 (alice), must be root")
        );
        assert_eq!(
            why(&file(1001, 0o600, 1), ALICE, false),
            owned("owned by uid 1001, must be uid 1000 (alice) or root")
        );
        assert_eq!(
            why(&file(1000, 0o644, 1), ALICE, false),
            owned("mode 0644, must be 0600")
        );
        assert_eq!(
            why(&file(1000, 0o664, 1), ALICE, true),
            owned("mode 0664, must not be writable by group or others")
        );
        assert_eq!(
            why(&file(0, 0o666, 1), Kind::System, false),
            owned("mode 0666, must not be writable by group or others")
        );
        assert_eq!(
            why(&file(0, 0o644, 3), Kind::System, false),
            owned("3 hard links, must have 1")
        );
    }

    #[test]
    fn the_state_file_must_be_the_daemons_and_writable_by_no_one_else() {
        let daemon = Uid(0);
        assert_eq!(check_state_file(&file(0, 0o644, 1), daemon), Ok(()));
        assert_eq!(check_state_file(&file(0, 0o600, 2), daemon), Ok(()));
        assert_eq!(
            check_state_file(&file(1000, 0o644, 1), daemon),
            Err(Untrusted::OwnedBy(Uid(1000)))
        );
        assert_eq!(
            check_state_file(&file(0, 0o664, 1), daemon),
            Err(Untrusted::WritableByOthers(0o664))
        );
        assert_eq!(
            check_state_file(&file(0, 0o646, 1), daemon).map_err(|e| e.to_string()),
            Err("writable by others (mode 646)".to_string())
        );
        let mut dir = file(0, 0o644, 1);
        dir.kind = FileKind::Directory;
        assert_eq!(check_state_file(&dir, daemon), Err(Untrusted::NotRegular));
        assert_eq!(Untrusted::NotRegular.to_string(), "not a regular file");
    }

    fn dir(owner: u32, mode: u32) -> FileFacts {
        FileFacts {
            kind: FileKind::Directory,
            ..file(owner, mode, 2)
        }
    }

    #[test]
    fn a_directory_on_the_way_is_roots_or_the_owners_and_shut_to_others_unless_sticky() {
        let daemon = Uid(1000);
        for owner in [0, 1000] {
            assert_eq!(check_dir(&dir(owner, 0o755), daemon, Dir::Other), Ok(()));
            assert_eq!(check_dir(&dir(owner, 0o1777), daemon, Dir::Other), Ok(()));
        }
        assert_eq!(
            check_dir(&dir(1001, 0o755), daemon, Dir::Other),
            Err(Untrusted::OwnedBy(Uid(1001)))
        );
        assert_eq!(
            check_dir(&dir(0, 0o777), daemon, Dir::Other),
            Err(Untrusted::DirWritableByOthers(0o777))
        );
        assert_eq!(
            check_dir(&dir(0, 0o775), daemon, Dir::Other).map_err(|e| e.to_string()),
            Err("writable by group or others (mode 775)".to_string())
        );
        assert_eq!(
            check_dir(&file(0, 0o755, 1), daemon, Dir::Other),
            Err(Untrusted::NotDirectory)
        );
    }

    #[test]
    fn the_daemons_own_directory_is_its_own_and_never_writable_by_others() {
        let daemon = Uid(1000);
        assert_eq!(check_dir(&dir(1000, 0o755), daemon, Dir::Own), Ok(()));
        assert_eq!(
            check_dir(&dir(0, 0o755), daemon, Dir::Own).map_err(|e| e.to_string()),
            Err("owned by uid 0, not the daemon's".to_string())
        );
        for mode in [0o775, 0o777, 0o1777] {
            assert_eq!(
                check_dir(&dir(1000, mode), daemon, Dir::Own),
                Err(Untrusted::DirWritableByOthers(mode))
            );
        }
    }

    #[test]
    fn a_private_directory_keeps_its_owners_bits_only() {
        assert_eq!(private_dir_mode(&dir(1000, 0o700)), None);
        assert_eq!(private_dir_mode(&dir(1000, 0o500)), None);
        assert_eq!(private_dir_mode(&dir(1000, 0o755)), Some(0o700));
        assert_eq!(private_dir_mode(&dir(1000, 0o1711)), Some(0o700));
    }

    #[test]
    fn a_secret_file_is_the_readers_with_no_group_or_other_bits() {
        let reader = Uid(1000);
        assert_eq!(check_private(&file(1000, 0o600, 1), reader), Ok(()));
        assert_eq!(check_private(&file(1000, 0o400, 1), reader), Ok(()));
        assert_eq!(
            check_private(&file(0, 0o600, 1), reader),
            Err(Untrusted::NotPrivate {
                reader,
                owner: Uid(0),
                mode: 0o600
            })
        );
        assert_eq!(
            check_private(&file(1000, 0o644, 1), reader).map_err(|e| e.to_string()),
            Err(
                "must be owned by the user reading it (uid 1000) with mode 0600 \
                 (it is uid 1000, mode 0644)"
                    .to_string()
            )
        );
        assert!(check_private(&file(1000, 0o640, 1), reader).is_err());
        let mut link = file(1000, 0o600, 1);
        link.kind = FileKind::Symlink;
        assert_eq!(check_private(&link, reader), Err(Untrusted::NotRegular));
    }
}
