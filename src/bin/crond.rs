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

const USAGE: &str = "usage: crond [-f] [-l] [-n] [-L LEVEL] [-s] [-m CMD|off] [-P] [-p] [-i] [-V]
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
