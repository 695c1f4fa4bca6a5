//! Every compiled-in default path, in one place (docs/design.md §2): the daemon, crontab(1) and the
//! mailer take their defaults from here, and each can be overridden on the daemon's command
//! line (crontab(1) honours its overrides only without setgid privilege). Constants only: no
//! file is opened here.

#![forbid(unsafe_code)]

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
