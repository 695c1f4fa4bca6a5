//! What the daemon's options (the [`Options`] that [`cli`](super::cli) parses argv into) mean
//! once the defaults of [`crate::paths`] fill what was not given, and what the daemon reads from
//! its own environment for them (the locale's charset, `-P`'s PATH).

use std::path::PathBuf;

use super::cli::Options;
use crate::database::{Paths, Rules};
use crate::job::mail::{self, MailCommand};
use crate::job::{ChildSetup, MailSetup, OutputTo, PamSetup};
use crate::log::messages::JobLogMask;
use crate::log::{Destination, Log};
use crate::paths;

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
            &mut self.cluster.helper,
        ]
        .into_iter()
        .flatten()
        {
            *p = std::path::absolute(&*p)?;
        }
        for p in &mut self.crontabs {
            *p = std::path::absolute(&*p)?;
        }
        if let Some(p) = self
            .control_socket
            .as_mut()
            .filter(|p| p.as_os_str() != "off")
        {
            *p = std::path::absolute(&*p)?;
        }
        Ok(())
    }

    /// How crontab files are judged: the options' leniencies and the host's seed for `H`.
    pub fn rules(&self) -> Rules {
        Rules {
            permit_any_mode: self.permit_any_mode,
            lsb_names: self.lsb_names,
            seed: crate::schedule::host_seed(&crate::sys::hostname()),
        }
    }

    pub fn paths(&self) -> Paths {
        let or = |p: &Option<PathBuf>, d: &str| p.clone().unwrap_or_else(|| PathBuf::from(d));
        Paths {
            spool_dir: or(&self.spool_dir, paths::SPOOL_DIR),
            system_crontab: or(&self.system_crontab, paths::SYSTEM_CRONTAB),
            cron_d: or(&self.cron_d, paths::CRON_D),
            given: (self.own_user())
                .map(|(user, _)| self.given_sources(&user))
                .unwrap_or_default(),
        }
    }

    pub fn pid_file(&self) -> PathBuf {
        self.pid_file
            .clone()
            .unwrap_or_else(|| PathBuf::from(paths::PID_FILE))
    }

    /// The control socket (`--control-socket`), and whether it was given (else it is
    /// `crond.sock` beside the pid file: `/run/crond.sock`); `None` with `off`.
    pub fn control_socket(&self) -> Option<(PathBuf, bool)> {
        match &self.control_socket {
            Some(p) if p.as_os_str() == "off" => None,
            Some(p) => Some((p.clone(), true)),
            None => Some((self.pid_file().with_file_name("crond.sock"), false)),
        }
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

    /// What every job child inherits: the log, Debian's `-L` mask, `-P`'s PATH and
    /// `--keep-env`'s variables (read from the daemon's environment now), where output goes
    /// (`-s`, or mail by `-m`, `-n`; in `--crontab` mode the log unless `-m` or `--sendmail`
    /// names an MTA), the user of `--crontab` mode (logged when passwd doesn't know it), and
    /// PAM (unless `--no-pam`, a build without it, `--crontab` mode, or `is_root` false: only
    /// root can open a session for another user, and a daemon that is not root runs only its
    /// own user's jobs). `Err` when the variables to keep are past their bounds.
    pub fn child_setup(&self, log: Log, is_root: bool) -> Result<ChildSetup, super::Error> {
        let kept_env = self
            .kept_env()
            .map_err(|e| super::Error::Config(e.to_string()))?;
        if self.keep_env.is_some() {
            // The names only (a value may be a secret); the logger cuts a long line.
            let names: Vec<String> = (kept_env.iter())
                .map(|(name, _)| crate::log::printable(name))
                .collect();
            log.daemon(
                crate::log::Level::Info,
                "INFO",
                &format!(
                    "--keep-env: jobs get {} of the daemon's variables: {}",
                    names.len(),
                    names.join(" ")
                ),
            );
        }
        let run_as = self.run_as(log);
        let mail_named = self.mail.is_some() || self.sendmail.is_some();
        Ok(ChildSetup {
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
            kept_env,
            run_as,
            report: None,
            outcomes: None,
            history: None,
            recorder: None,
            run_id: None,
            notify: self.notify,
            previous_failed: false,
            retry: None,
            retried: false,
            started_ms: 0,
            // `cronctl` beside `crond` (else /usr/sbin/cronctl) sends CRON_PING and CRON_WEBHOOK.
            notifier: Some(crate::job::notify::Notifier {
                program: super::cluster::default_helper(),
            }),
            notice: None,
            spill_dir: crate::sys::tmpfile::default_dir(),
            max_output: match self.max_output {
                None => Some(crate::job::output::DEFAULT_LIMIT),
                Some(0) => None,
                Some(n) => Some(n),
            },
            pam: (cfg!(feature = "pam") && !self.no_pam && is_root && !self.crontab_mode()).then(
                || PamSetup {
                    confdir: self.pam_dir.clone(),
                },
            ),
            output: if self.output_to_syslog || (self.crontab_mode() && !mail_named) {
                OutputTo::Syslog
            } else {
                OutputTo::Mail(MailSetup {
                    command: self.mail_command(),
                    full_host: self.fqdn_in_subject,
                    charset: charset_from_env(),
                })
            },
        })
    }

    /// The user of `--crontab` mode, logged when passwd does not know it.
    fn run_as(&self, log: Log) -> Option<crate::sys::user::User> {
        self.own_user().map(|(user, in_passwd)| {
            if !in_passwd {
                log.daemon(
                    crate::log::Level::Info,
                    "INFO",
                    &format!(
                        "uid {} has no passwd entry: its jobs run with LOGNAME={} HOME={}",
                        user.uid.0,
                        crate::log::printable(&user.name),
                        user.home.display()
                    ),
                );
            }
            user
        })
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
    fn every_path_given_is_made_absolute_crontab_files_too() {
        let mut o = Options {
            crontabs: vec!["my.crontab".into(), "/etc/crond/crontab".into()],
            state_dir: Some("state".into()),
            ..Options::default()
        };
        o.absolutize().unwrap();
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(
            o.crontabs,
            [cwd.join("my.crontab"), PathBuf::from("/etc/crond/crontab")]
        );
        assert_eq!(o.state_dir, Some(cwd.join("state")));
    }

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
