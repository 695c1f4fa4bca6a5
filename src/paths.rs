//! Every compiled-in default path, in one place (docs/design.md §2): the daemon, crontab(1) and the
//! mailer take their defaults from here, and each can be overridden on the daemon's command
//! line (crontab(1) honours its overrides only without setgid privilege). Constants only: no
//! file is opened here.

#![forbid(unsafe_code)]

/// Users' crontabs (Debian's layout).
pub const SPOOL_DIR: &str = "/var/spool/cron/crontabs";
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
