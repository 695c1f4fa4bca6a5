//! `crond`: parses the command line into `daemon::Options` and runs the daemon. Nothing else.
//!
//! Flags (DESIGN §6): Debian's `-f -l -n -L LEVEL`; cronie's `-s -m CMD|off -P -p -i -V`; and
//! the path overrides `--spool-dir --system-crontab --cron-d --pid-file --reboot-marker
//! --sendmail`, plus `--log syslog|stderr|both`.

#![allow(clippy::print_stderr, clippy::print_stdout)]

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use crond::daemon::{self, MailCommand, Options};
use crond::log::Destination;

const USAGE: &str =
    "usage: crond [-f] [-l] [-n] [-L LEVEL] [-s] [-m CMD|off] [-P] [-p] [-i] [-V] [-h]
             [--spool-dir DIR] [--system-crontab FILE] [--cron-d DIR] [--pid-file FILE]
             [--reboot-marker FILE] [--sendmail PATH] [--log syslog|stderr|both]";

enum Action {
    Run(Box<Options>),
    Version,
    Help,
}

fn parse(args: impl IntoIterator<Item = OsString>) -> Result<Action, lexopt::Error> {
    use lexopt::prelude::*;
    let mut o = Options::default();
    let mut parser = lexopt::Parser::from_args(args);
    let path = |p: &mut lexopt::Parser| -> Result<PathBuf, lexopt::Error> {
        Ok(PathBuf::from(p.value()?))
    };
    while let Some(arg) = parser.next()? {
        match arg {
            Short('f') => o.foreground = true,
            Short('l') => o.lsb_names = true,
            Short('n') => o.fqdn_in_subject = true,
            Short('L') => {
                let level: u32 = parser.value()?.parse()?;
                o.log_level = Some(level);
            }
            Short('s') => o.output_to_syslog = true,
            Short('m') => {
                let v = parser.value()?;
                o.mail = if v == "off" {
                    MailCommand::Off
                } else {
                    MailCommand::Command(v)
                };
            }
            Short('P') => o.inherit_path = true,
            Short('p') => o.permit_any_mode = true,
            Short('i') => o.no_inotify = true,
            Short('V') => return Ok(Action::Version),
            Short('h') | Long("help") => return Ok(Action::Help),
            Long("spool-dir") => o.spool_dir = Some(path(&mut parser)?),
            Long("system-crontab") => o.system_crontab = Some(path(&mut parser)?),
            Long("cron-d") => o.cron_d = Some(path(&mut parser)?),
            Long("pid-file") => o.pid_file = Some(path(&mut parser)?),
            Long("reboot-marker") => o.reboot_marker = Some(path(&mut parser)?),
            Long("sendmail") => o.sendmail = Some(path(&mut parser)?),
            Long("log") => {
                let v = parser.value()?;
                o.log = Some(match v.to_str() {
                    Some("syslog") => Destination::Syslog,
                    Some("stderr") => Destination::Stderr,
                    Some("both") => Destination::Both,
                    _ => {
                        return Err(lexopt::Error::UnexpectedValue {
                            option: "--log".into(),
                            value: v,
                        });
                    }
                });
            }
            _ => return Err(arg.unexpected()),
        }
    }
    Ok(Action::Run(Box::new(o)))
}

fn main() -> ExitCode {
    match parse(std::env::args_os().skip(1)) {
        Ok(Action::Run(options)) => match daemon::run(*options) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("crond: {e}");
                ExitCode::from(1)
            }
        },
        Ok(Action::Version) => {
            println!("crond {}", env!("CARGO_PKG_VERSION"));
            ExitCode::SUCCESS
        }
        Ok(Action::Help) => {
            println!("{USAGE}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("crond: {e}\n{USAGE}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_args(args: &[&str]) -> Result<Action, lexopt::Error> {
        parse(args.iter().map(OsString::from))
    }

    #[test]
    fn every_flag_lands_in_its_field() {
        let Ok(Action::Run(o)) = parse_args(&[
            "-f",
            "-l",
            "-n",
            "-L",
            "15",
            "-s",
            "-m",
            "off",
            "-P",
            "-p",
            "-i",
            "--spool-dir",
            "/s",
            "--system-crontab",
            "/c",
            "--cron-d",
            "/d",
            "--pid-file",
            "/p",
            "--reboot-marker",
            "/r",
            "--sendmail",
            "/m",
            "--log",
            "both",
        ]) else {
            panic!("parses")
        };
        let expected = Options {
            foreground: true,
            lsb_names: true,
            fqdn_in_subject: true,
            log_level: Some(15),
            output_to_syslog: true,
            mail: MailCommand::Off,
            inherit_path: true,
            permit_any_mode: true,
            no_inotify: true,
            spool_dir: Some("/s".into()),
            system_crontab: Some("/c".into()),
            cron_d: Some("/d".into()),
            pid_file: Some("/p".into()),
            reboot_marker: Some("/r".into()),
            sendmail: Some("/m".into()),
            log: Some(Destination::Both),
        };
        assert_eq!(*o, expected);
        assert!(o.all_paths_overridden());
    }

    #[test]
    fn clustered_flags_and_a_mail_command() {
        let Ok(Action::Run(o)) = parse_args(&["-fi", "-m", "/usr/bin/mymail -x", "-L8"]) else {
            panic!("parses")
        };
        assert!(o.foreground && o.no_inotify);
        assert_eq!(o.mail, MailCommand::Command("/usr/bin/mymail -x".into()));
        assert_eq!(o.log_level, Some(8));
        assert!(!o.all_paths_overridden());
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(parse_args(&["--log", "journal"]).is_err());
        assert!(parse_args(&["-L", "x"]).is_err());
        assert!(parse_args(&["-q"]).is_err());
        assert!(parse_args(&["extra"]).is_err());
        assert!(matches!(parse_args(&["-V"]), Ok(Action::Version)));
    }
}
