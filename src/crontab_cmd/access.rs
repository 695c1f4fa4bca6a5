//! Who may use `crontab`: Debian's cron.allow / cron.deny rule as a pure function over what the
//! two files hold (or that they are missing or unreadable) and the user's name.
//!
//! Debian's rule (crontab(1), `allowed()` in misc.c): root always may; if cron.allow exists, only
//! the users it lists; otherwise, if cron.deny exists, everyone it does not list; if neither
//! exists, everyone (cronie: only root). A file that exists but can not be read denies.
//!
//! Pure: no files are read here (the caller reads them and says what it found).

#![forbid(unsafe_code)]

/// What the caller found at one of the two paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListFile<'a> {
    /// The file does not exist.
    Missing,
    /// It exists but could not be read (permissions, a directory, an I/O error).
    Unreadable,
    /// Its contents: one user name per line.
    Contents(&'a [u8]),
}

/// Whether `user` may use the command. `is_root` is the user's uid being 0.
pub fn allowed(user: &[u8], is_root: bool, allow: ListFile<'_>, deny: ListFile<'_>) -> bool {
    if is_root {
        return true;
    }
    match allow {
        ListFile::Contents(text) => return lists(text, user),
        ListFile::Unreadable => return false,
        ListFile::Missing => {}
    }
    match deny {
        ListFile::Contents(text) => !lists(text, user),
        ListFile::Unreadable => false,
        ListFile::Missing => true,
    }
}

/// Whether one line of `text` is `user`. Blanks around a name are ignored (an editor's trailing
/// space must not lock a listed user out); an empty name never matches.
fn lists(text: &[u8], user: &[u8]) -> bool {
    !user.is_empty()
        && text
            .split(|&b| b == b'\n')
            .map(|line| line.trim_ascii())
            .any(|name| name == user)
}

#[cfg(test)]
mod tests {
    use super::ListFile::{Contents, Missing, Unreadable};
    use super::*;

    #[test]
    fn with_neither_file_everyone_may() {
        assert!(allowed(b"alice", false, Missing, Missing));
    }

    #[test]
    fn root_may_even_when_denied() {
        assert!(allowed(
            b"root",
            true,
            Contents(b"bob\n"),
            Contents(b"root\n")
        ));
        assert!(allowed(b"root", true, Unreadable, Unreadable));
    }

    #[test]
    fn cron_allow_admits_only_the_users_it_lists() {
        let allow = Contents(b"bob\n  alice \ncarol");
        assert!(allowed(b"alice", false, allow, Missing));
        assert!(allowed(b"carol", false, allow, Missing));
        assert!(!allowed(b"dave", false, allow, Missing));
        assert!(!allowed(b"ali", false, allow, Missing));
    }

    #[test]
    fn cron_allow_wins_over_cron_deny() {
        assert!(allowed(
            b"alice",
            false,
            Contents(b"alice\n"),
            Contents(b"alice\n")
        ));
        assert!(!allowed(b"bob", false, Contents(b"alice\n"), Missing));
    }

    #[test]
    fn an_empty_cron_allow_admits_nobody_but_root() {
        assert!(!allowed(b"alice", false, Contents(b""), Missing));
        assert!(!allowed(b"", false, Contents(b"\n\n"), Missing));
    }

    #[test]
    fn cron_deny_refuses_the_users_it_lists() {
        let deny = Contents(b"mallory\r\n");
        assert!(!allowed(b"mallory", false, Missing, deny));
        assert!(allowed(b"alice", false, Missing, deny));
    }

    #[test]
    fn an_unreadable_file_denies() {
        assert!(!allowed(b"alice", false, Unreadable, Missing));
        assert!(!allowed(b"alice", false, Missing, Unreadable));
    }
}
