//! The daemon's options as a typed value (what [`cli`](super::cli) parses argv into), and what
//! each means once the defaults of [`crate::paths`] fill what was not given.

use std::ffi::OsString;
use std::path::PathBuf;

use super::cli::Action;
use crate::database::Paths;
use crate::job::log_lines::JobLogMask;
use crate::job::{ChildSetup, MailSetup, OutputTo, PamSetup};
use crate::log::{Destination, Format, Log};
use crate::mail::{self, MailCommand};
use crate::paths;

/// Everything the command line can say.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Options {
    pub action: Action,
    /// `-f`: stay in the foreground.
    pub foreground: bool,
    /// `-l`: LSB names in /etc/cron.d.
    pub lsb_names: bool,
    /// `-n` (Debian): the full host name in the mail subject.
    pub fqdn_in_subject: bool,
    /// `-L LEVEL`: Debian's bitmask (1 start, 2 end, 4 failed, 8 pid); `None` = 1.
    pub log_level: Option<u32>,
    /// `-s`: job output to syslog instead of mail.
    pub output_to_syslog: bool,
    /// `-m CMD|off`, as given (`None`: sendmail).
    pub mail: Option<OsString>,
    /// `-P`: jobs inherit the daemon's PATH.
    pub inherit_path: bool,
    /// `-p`: permit any crontab mode (not group/world-writable).
    pub permit_any_mode: bool,
    /// `-i`: no inotify; check mtimes every minute.
    pub no_inotify: bool,
    pub spool_dir: Option<PathBuf>,
    pub system_crontab: Option<PathBuf>,
    pub cron_d: Option<PathBuf>,
    pub pid_file: Option<PathBuf>,
    pub reboot_marker: Option<PathBuf>,
    pub sendmail: Option<PathBuf>,
    /// `--log`; `None`: syslog when daemonized, both with `-f`.
    pub log: Option<Destination>,
    /// `--log-format text|json`.
    pub log_format: Format,
    /// `--localtime FILE`: the local zone's file (default /etc/localtime).
    pub localtime: Option<PathBuf>,
    /// `--max-output SIZE` in bytes, as given (`None`: the default; `Some(0)`: no limit).
    pub max_output: Option<u64>,
    /// `--no-pam`: jobs run without a PAM session.
    pub no_pam: bool,
    /// `--pam-dir DIR`: read the PAM service `cron` from DIR instead of /etc/pam.d.
    pub pam_dir: Option<PathBuf>,
    /// `--state-dir DIR`: where the daemon keeps its state (default /var/lib/crond).
    pub state_dir: Option<PathBuf>,
    /// `--metrics unix:PATH|ADDRESS:PORT`, once per place (at most
    /// [`MAX_METRICS_TARGETS`]): where to serve the metrics, each with its own connections.
    pub metrics: Vec<MetricsAt>,
    /// `--metrics-entries-on-tcp`: the per-entry series go to TCP clients too (any local user).
    pub metrics_entries_on_tcp: bool,
    /// `--metrics-group NAME`: the group that may read the metrics socket besides root.
    pub metrics_group: Option<String>,
    /// `--cluster-db CONNINFO` (or `CRON_CLUSTER_DB` in the environment): cluster mode's
    /// database, in libpq's syntax. `None`: cluster entries run as local ones.
    pub cluster_db: Option<String>,
    /// `--cluster-host NAME`: this host's name in the cluster (default: the host name).
    pub cluster_host: Option<String>,
    /// `--cluster-helper PATH`: the `cronctl` that runs as the helper (default: beside crond).
    pub cluster_helper: Option<PathBuf>,
    /// `--cluster-keep DAYS`: how long the history is kept (default 30).
    pub cluster_keep_days: Option<u32>,
    /// `--cluster-keep-runs N`: how many runs of each entry the history keeps (default 1,440).
    pub cluster_keep_runs: Option<u32>,
    /// `--cluster-lease SECONDS`: how long this host's lease lasts unrenewed (default 30).
    pub cluster_lease_s: Option<u32>,
}

/// The most `--metrics` places.
pub const MAX_METRICS_TARGETS: usize = 4;

/// Where the metrics are served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricsAt {
    /// A Unix socket: mode 0600, or 0660 with `--metrics-group`.
    Unix(PathBuf),
    /// A TCP port on a loopback address (any local user can read it: the per-entry series are
    /// left out unless `--metrics-entries-on-tcp`).
    Tcp(std::net::SocketAddr),
}

impl Options {
    /// Whether every path the daemon writes or trusts was given on the command line (the
    /// condition for running without root, as the tests do).
    pub fn all_paths_overridden(&self) -> bool {
        self.spool_dir.is_some()
            && self.system_crontab.is_some()
            && self.cron_d.is_some()
            && self.pid_file.is_some()
            && self.reboot_marker.is_some()
            && self.state_dir.is_some()
    }

    /// Makes every given path absolute: the daemon changes to `/` when it detaches.
    pub fn absolutize(&mut self) -> std::io::Result<()> {
        for p in [
            &mut self.spool_dir,
            &mut self.system_crontab,
            &mut self.cron_d,
            &mut self.pid_file,
            &mut self.reboot_marker,
            &mut self.sendmail,
            &mut self.localtime,
            &mut self.state_dir,
            &mut self.cluster_helper,
        ]
        .into_iter()
        .flatten()
        {
            *p = std::path::absolute(&*p)?;
        }
        Ok(())
    }

    pub fn paths(&self) -> Paths {
        let or = |p: &Option<PathBuf>, d: &str| p.clone().unwrap_or_else(|| PathBuf::from(d));
        Paths {
            spool_dir: or(&self.spool_dir, paths::SPOOL_DIR),
            system_crontab: or(&self.system_crontab, paths::SYSTEM_CRONTAB),
            cron_d: or(&self.cron_d, paths::CRON_D),
        }
    }

    pub fn pid_file(&self) -> PathBuf {
        self.pid_file
            .clone()
            .unwrap_or_else(|| PathBuf::from(paths::PID_FILE))
    }

    pub fn reboot_marker(&self) -> PathBuf {
        self.reboot_marker
            .clone()
            .unwrap_or_else(|| PathBuf::from(paths::REBOOT_MARKER))
    }

    /// The daemon's state directory (`--state-dir`, default /var/lib/crond).
    pub fn state_dir(&self) -> PathBuf {
        self.state_dir
            .clone()
            .unwrap_or_else(|| PathBuf::from(paths::STATE_DIR))
    }

    /// The local zone's file (`--localtime`, default /etc/localtime).
    pub fn localtime(&self) -> PathBuf {
        self.localtime
            .clone()
            .unwrap_or_else(|| PathBuf::from(paths::LOCALTIME))
    }

    /// The sendmail path (`--sendmail`, default Debian's).
    pub fn sendmail(&self) -> PathBuf {
        self.sendmail
            .clone()
            .unwrap_or_else(|| PathBuf::from(paths::SENDMAIL))
    }

    /// cronie's `-m`: `off` never mails, any other value is a shell command line; without
    /// `-m`, Debian's sendmail (at `--sendmail`).
    pub fn mail_command(&self) -> MailCommand {
        match &self.mail {
            None => MailCommand::Sendmail(self.sendmail()),
            Some(v) if v == "off" => MailCommand::Off,
            Some(v) => MailCommand::Shell(v.clone()),
        }
    }

    /// What every job child inherits: the log, Debian's `-L` mask, `-P`'s PATH (read from
    /// the daemon's environment now), where output goes (`-s`, or mail by `-m`, `-n`), and
    /// PAM (unless `--no-pam`, a build without it, or `is_root` false: only root can open a
    /// session for another user, and a daemon that is not root runs only its own user's jobs).
    pub fn child_setup(&self, log: Log, is_root: bool) -> ChildSetup {
        ChildSetup {
            log,
            // Debian's mask is a byte; higher bits mean nothing.
            log_mask: self
                .log_level
                .map_or(JobLogMask::default(), |l| JobLogMask((l & 0xff) as u8)),
            inherited_path: if self.inherit_path {
                std::env::var_os("PATH")
            } else {
                None
            },
            max_output: match self.max_output {
                None => Some(crate::job::output::DEFAULT_LIMIT),
                Some(0) => None,
                Some(n) => Some(n),
            },
            pam: (cfg!(feature = "pam") && !self.no_pam && is_root).then(|| PamSetup {
                confdir: self.pam_dir.clone(),
            }),
            output: if self.output_to_syslog {
                OutputTo::Syslog
            } else {
                OutputTo::Mail(MailSetup {
                    command: self.mail_command(),
                    full_host: self.fqdn_in_subject,
                    charset: charset_from_env(),
                })
            },
        }
    }

    pub fn log_destination(&self) -> Destination {
        self.log.unwrap_or(if self.foreground {
            Destination::Both
        } else {
            Destination::Syslog
        })
    }
}

/// [`mail::charset_from_locale`] with this process's environment.
fn charset_from_env() -> String {
    let get = |n: &str| std::env::var(n).ok();
    mail::charset_from_locale(
        get("LC_ALL").as_deref(),
        get("LC_CTYPE").as_deref(),
        get("LANG").as_deref(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mail_command_follows_dash_m_and_the_sendmail_path() {
        let mut o = Options::default();
        assert_eq!(
            o.mail_command(),
            MailCommand::Sendmail(paths::SENDMAIL.into())
        );
        o.sendmail = Some("/opt/mta".into());
        assert_eq!(o.mail_command(), MailCommand::Sendmail("/opt/mta".into()));
        o.mail = Some("off".into());
        assert_eq!(o.mail_command(), MailCommand::Off);
        o.mail = Some("mymail -t".into());
        assert_eq!(o.mail_command(), MailCommand::Shell("mymail -t".into()));
    }
}
