//! Every compiled-in default path, in one place (docs/design.md §2): the daemon, crontab(1) and the
//! mailer take their defaults from here, and each can be overridden on the daemon's command
//! line (crontab(1) honours its overrides only without setgid privilege). Constants, and the
//! rules that choose a place from the environment given to them: no file is opened here.

#![forbid(unsafe_code)]

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::types::Uid;

/// The layout of these defaults, chosen when crond is built: Debian's, or cronie's (Fedora's and
/// RHEL's) with `CROND_LAYOUT=cronie` in cargo's environment. The two differ in where users'
/// crontabs are ([`SPOOL_DIR`]) and in the PAM service of jobs ([`PAM_SERVICE`]); any other
/// value than `debian` or `cronie` fails the build.
pub const CRONIE_LAYOUT: bool = match option_env!("CROND_LAYOUT") {
    Some(layout) => is_cronie(layout),
    None => false,
};

const fn is_cronie(layout: &str) -> bool {
    match layout.as_bytes() {
        b"cronie" => true,
        b"debian" | b"" => false,
        _ => panic!("CROND_LAYOUT is `debian` or `cronie`"),
    }
}

/// Users' crontabs: Debian's /var/spool/cron/crontabs, or cronie's /var/spool/cron.
pub const SPOOL_DIR: &str = if CRONIE_LAYOUT {
    "/var/spool/cron"
} else {
    "/var/spool/cron/crontabs"
};
/// The PAM service of jobs: Debian's `cron` (/etc/pam.d/cron), or cronie's `crond`.
pub const PAM_SERVICE: &std::ffi::CStr = if CRONIE_LAYOUT { c"crond" } else { c"cron" };
/// The system crontab, with a user field.
pub const SYSTEM_CRONTAB: &str = "/etc/crontab";
/// Packages' crontabs, in the system format.
pub const CRON_D: &str = "/etc/cron.d";
/// The daemon's pid file, locked while it runs.
pub const PID_FILE: &str = "/run/crond.pid";
/// Created at the first start after boot: @reboot jobs run only then (Debian).
pub const REBOOT_MARKER: &str = "/run/crond.reboot";
/// The MTA Debian runs.
pub const SENDMAIL: &str = "/usr/sbin/sendmail";
/// Who may use crontab(1): Debian's rule over these two files.
pub const ALLOW_FILE: &str = "/etc/cron.allow";
pub const DENY_FILE: &str = "/etc/cron.deny";
/// The daemon's state between runs (`CRON_MISSED`: the last minute it handled).
pub const STATE_DIR: &str = "/var/lib/crond";
/// The system's zone; a change to it re-plans every entry without its own CRON_TZ.
pub const LOCALTIME: &str = "/etc/localtime";
/// Where temporary files go when TMPDIR is not an absolute path.
pub const TMP_DIR: &str = "/tmp";

/// Where `--crontab` mode keeps its pid file, @reboot marker and state without `--state-dir`:
/// under `$XDG_RUNTIME_DIR` (a user's own tmpfs, emptied at boot) when it is an absolute path;
/// for root, /run/crond; else /tmp/crond-UID (a container's /tmp is its own; on a host, a
/// directory there that someone else made is refused).
pub fn state_base(xdg_runtime_dir: Option<&OsStr>, euid: Uid) -> PathBuf {
    match xdg_runtime_dir.map(Path::new).filter(|d| d.is_absolute()) {
        Some(dir) => dir.join("crond"),
        None if euid == Uid::ROOT => PathBuf::from("/run/crond"),
        None => PathBuf::from(format!("/tmp/crond-{}", euid.0)),
    }
}

/// The control socket of the system daemon.
pub const CONTROL_SOCKET: &str = "/run/crond.sock";

/// Where `cronctl` looks for a daemon's control socket when `--socket` is not given, in order:
/// `$CROND_SOCKET` when set (and only it); else the socket a `--crontab` daemon run by the same
/// uid makes by default (`crond.sock` in [`state_base`]), when `exists` says it is there; else
/// the system daemon's, [`CONTROL_SOCKET`].
pub fn control_socket(
    crond_socket: Option<&OsStr>,
    xdg_runtime_dir: Option<&OsStr>,
    euid: Uid,
    exists: impl Fn(&Path) -> bool,
) -> PathBuf {
    if let Some(given) = crond_socket.filter(|s| !s.is_empty()) {
        return PathBuf::from(given);
    }
    let own = state_base(xdg_runtime_dir, euid).join("crond.sock");
    if exists(&own) {
        return own;
    }
    PathBuf::from(CONTROL_SOCKET)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cronctl_finds_crond_socket_set_then_its_own_uids_daemon_then_the_systems() {
        let none = |_: &Path| false;
        let all = |_: &Path| true;
        let set = Some(OsStr::new("/srv/c.sock"));
        assert_eq!(
            control_socket(set, None, Uid(1000), all),
            Path::new("/srv/c.sock")
        );
        assert_eq!(
            control_socket(Some(OsStr::new("")), None, Uid(1000), none),
            Path::new(CONTROL_SOCKET)
        );
        assert_eq!(
            control_socket(None, None, Uid(1000), all),
            Path::new("/tmp/crond-1000/crond.sock")
        );
        assert_eq!(
            control_socket(None, None, Uid(1000), none),
            Path::new(CONTROL_SOCKET)
        );
        let xdg = Some(OsStr::new("/run/user/1000"));
        assert_eq!(
            control_socket(None, xdg, Uid(1000), all),
            Path::new("/run/user/1000/crond/crond.sock")
        );
        assert_eq!(
            control_socket(None, None, Uid::ROOT, all),
            Path::new("/run/crond/crond.sock")
        );
        assert_eq!(
            control_socket(None, None, Uid::ROOT, none),
            Path::new(CONTROL_SOCKET)
        );
    }
}
