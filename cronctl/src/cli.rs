//! The `cronctl` command line: argv → [`Command`], or a usage error. Pure.
//!
//! `list`, `run` and `status` ask the daemon through its control socket (no database, no root);
//! the other commands read the cluster database.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use crond::cluster::entry_id::{BadEntryKey, EntryKey};
use crond::cluster::{DEFAULT_KEEP_RUNS, MAX_KEEP_RUNS, MIN_KEEP_RUNS};
use crond::control::TargetError;
use crond::crontab::policy::is_cluster_name;

use crate::helper::HelperArgs;

pub const USAGE: &str = "usage: cronctl [--socket PATH] list [--wide|--json] [PATTERN]
       cronctl [--socket PATH] run [--wait] FILE:LINE|ID
       cronctl [--socket PATH] show [--json] FILE:LINE|ID
       cronctl [--socket PATH] status [--json]
       cronctl [--db CONNINFO] hosts
       cronctl [--db CONNINFO] entries [--cluster NAME] [--wide]
       cronctl [--db CONNINFO] claims [--cluster NAME] [--wide]
       cronctl [--db CONNINFO] history [--cluster NAME] [--entry ID] [--limit N] [--wide]
       cronctl [--db CONNINFO] paused [--wide]
       cronctl [--db CONNINFO] pause [--force] CLUSTER USER ENTRY
       cronctl [--db CONNINFO] resume CLUSTER USER ENTRY
       cronctl -V | -h";

/// What `cronctl` is asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    Help,
    Version,
    Hosts,
    /// `entries`: the cluster entries the hosts have loaded.
    Entries {
        cluster: Option<String>,
        wide: bool,
    },
    Claims {
        cluster: Option<String>,
        wide: bool,
    },
    History {
        cluster: Option<String>,
        entry: Option<EntryKey>,
        limit: u32,
        wide: bool,
    },
    Paused {
        wide: bool,
    },
    Pause {
        target: Target,
        pause: bool,
        /// `--force`: paused even when no host has loaded it.
        force: bool,
    },
    /// The daemon's helper (started by crond, not by hand).
    Helper(HelperArgs),
    /// `list`, `run` or `status`: one request line to the daemon's control socket.
    Control {
        /// `--socket`, or `None`: the default rule's (`crond::paths::control_socket`).
        socket: Option<PathBuf>,
        request: String,
    },
}

/// One entry of one user in one cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub cluster: String,
    pub user: String,
    pub entry: EntryKey,
}

/// The parsed command line: the command and `--db` if given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub db: Option<String>,
    pub command: Command,
}

/// The most history rows one call prints.
pub const MAX_LIMIT: u32 = 100_000;

/// Parses argv without the program name.
pub fn parse<I>(args: I) -> Result<Invocation, UsageError>
where
    I: IntoIterator,
    I::Item: Into<OsString>,
{
    let mut flags = Flags::default();
    let command = match flags.read(&mut lexopt::Parser::from_args(args))? {
        Some(early) => early,
        None => flags.command()?,
    };
    Ok(Invocation {
        db: flags.db,
        command,
    })
}

/// The options and words of a command line, as read before the words are looked at.
struct Flags {
    db: Option<String>,
    words: Vec<String>,
    cluster: Option<String>,
    entry: Option<EntryKey>,
    limit: u32,
    host: Option<String>,
    keep_days: u32,
    keep_runs: u32,
    lease_s: u32,
    socket: Option<PathBuf>,
    json: bool,
    wide: bool,
    wait: bool,
    force: bool,
}

impl Default for Flags {
    fn default() -> Flags {
        Flags {
            db: None,
            words: Vec::new(),
            cluster: None,
            entry: None,
            limit: 50,
            host: None,
            keep_days: 30,
            keep_runs: DEFAULT_KEEP_RUNS,
            lease_s: 30,
            socket: None,
            json: false,
            wide: false,
            wait: false,
            force: false,
        }
    }
}

impl Flags {
    /// Reads every argument; `-h` or `-V` ends the reading with its command, whatever
    /// follows.
    fn read(&mut self, parser: &mut lexopt::Parser) -> Result<Option<Command>, UsageError> {
        use lexopt::prelude::*;
        while let Some(arg) = parser.next()? {
            match arg {
                Short('h') | Long("help") => return Ok(Some(Command::Help)),
                Short('V') | Long("version") => return Ok(Some(Command::Version)),
                Long("db") => self.db = Some(text(parser.value()?)?),
                Long("cluster") => {
                    let name = text(parser.value()?)?;
                    if !is_cluster_name(name.as_bytes()) {
                        return Err(UsageError::NotClusterName(name));
                    }
                    self.cluster = Some(name);
                }
                Long("entry") => self.entry = Some(text(parser.value()?)?.parse()?),
                Long("limit") => self.limit = in_range(parser, "--limit", (1, MAX_LIMIT), "rows")?,
                Long("host") => self.host = Some(text(parser.value()?)?),
                Long("keep-days") => {
                    self.keep_days = in_range(parser, "--keep-days", (1, 3650), "days")?
                }
                Long("keep-runs") => {
                    let runs = (MIN_KEEP_RUNS, MAX_KEEP_RUNS);
                    self.keep_runs = in_range(parser, "--keep-runs", runs, "runs")?
                }
                Long("lease") => self.lease_s = in_range(parser, "--lease", (3, 300), "seconds")?,
                Long("socket") => self.socket = Some(PathBuf::from(parser.value()?)),
                Long("json") => self.json = true,
                Long("wide") => self.wide = true,
                Long("wait") => self.wait = true,
                Long("force") => self.force = true,
                Value(v) => self.words.push(text(v)?),
                _ => return Err(arg.unexpected().into()),
            }
        }
        Ok(None)
    }

    /// The command the words name, with the options it takes.
    fn command(&self) -> Result<Command, UsageError> {
        let words: Vec<&str> = self.words.iter().map(String::as_str).collect();
        Ok(match words.as_slice() {
            ["hosts"] => Command::Hosts,
            ["entries"] => Command::Entries {
                cluster: self.cluster.clone(),
                wide: self.wide,
            },
            ["claims"] => Command::Claims {
                cluster: self.cluster.clone(),
                wide: self.wide,
            },
            ["history"] => Command::History {
                cluster: self.cluster.clone(),
                entry: self.entry,
                limit: self.limit,
                wide: self.wide,
            },
            ["paused"] => Command::Paused { wide: self.wide },
            [verb @ ("pause" | "resume"), c, user, id] => {
                if !is_cluster_name(c.as_bytes()) {
                    return Err(UsageError::NotClusterName((*c).to_string()));
                }
                Command::Pause {
                    target: Target {
                        cluster: (*c).to_string(),
                        user: (*user).to_string(),
                        entry: id.parse()?,
                    },
                    pause: *verb == "pause",
                    force: self.force,
                }
            }
            ["helper"] => Command::Helper(HelperArgs {
                db: self.db.clone().ok_or(UsageError::HelperNeeds("--db"))?,
                host: self.host.clone().ok_or(UsageError::HelperNeeds("--host"))?,
                keep_days: self.keep_days,
                keep_runs: self.keep_runs,
                lease_s: self.lease_s,
            }),
            ["list", rest @ ..] if rest.len() <= 1 => {
                if let Some(p) = rest.first().filter(|p| p.contains(char::is_whitespace)) {
                    return Err(UsageError::NotPattern((*p).to_string()));
                }
                let mut request = String::from("list");
                if self.json {
                    request.push_str(" --json");
                } else if self.wide {
                    request.push_str(" --wide");
                }
                if let Some(p) = rest.first() {
                    request = format!("{request} {p}");
                }
                self.control(request)
            }
            ["status"] => self.control(if self.json { "status --json" } else { "status" }.into()),
            ["show", target] => {
                crond::control::parse_target(target)?;
                let json = if self.json { " --json" } else { "" };
                self.control(format!("show{json} {target}"))
            }
            ["run", target] => {
                crond::control::parse_target(target)?;
                let wait = if self.wait { " --wait" } else { "" };
                self.control(format!("run{wait} {target}"))
            }
            [] => return Err(UsageError::NoCommand),
            other => return Err(wrong_words(other)),
        })
    }

    /// A request to the control socket: `--socket`'s, or (`None`) the one
    /// `crond::paths::control_socket` finds.
    fn control(&self, request: String) -> Command {
        Command::Control {
            socket: self.socket.clone(),
            request,
        }
    }
}

/// An argument as text: every argument cronctl takes is UTF-8.
fn text(v: OsString) -> Result<String, UsageError> {
    v.into_string().map_err(|_| UsageError::NotUtf8)
}

/// A number from `low` to `high` (both included) of `unit`s: [`crond::cli::in_range`].
fn in_range(
    parser: &mut lexopt::Parser,
    option: &'static str,
    range: (u32, u32),
    unit: &'static str,
) -> Result<u32, UsageError> {
    Ok(crond::cli::in_range(parser, option, range, unit)?)
}

/// What each command takes after its name, as the usage shows it.
const COMMAND_ARGUMENTS: &[(&str, &str)] = &[
    ("list", "[PATTERN]"),
    ("run", "FILE:LINE|ID"),
    ("show", "FILE:LINE|ID"),
    ("status", ""),
    ("hosts", ""),
    ("entries", ""),
    ("claims", ""),
    ("history", ""),
    ("paused", ""),
    ("pause", "CLUSTER USER ENTRY"),
    ("resume", "CLUSTER USER ENTRY"),
];

/// Why `words` name no command: a known command with too few or too many words, or none.
fn wrong_words(words: &[&str]) -> UsageError {
    let Some((name, takes)) = COMMAND_ARGUMENTS.iter().find(|(n, _)| *n == words[0]) else {
        return UsageError::UnknownCommand(words[0].to_string());
    };
    let (required, optional) = if takes.starts_with('[') {
        (0, 1)
    } else {
        (takes.split_whitespace().count(), 0)
    };
    let given = &words[1..];
    if given.len() < required {
        return UsageError::Needs {
            command: name,
            takes,
        };
    }
    match given.get(required + optional) {
        Some(word) => UsageError::Unexpected {
            command: name,
            word: word.to_string(),
        },
        None => UsageError::UnknownCommand(words.join(" ")),
    }
}

/// What is wrong with a command line; `cronctl_main` prints it before the usage.
#[derive(Debug)]
pub enum UsageError {
    /// lexopt's reading of the arguments (an unknown option, a missing value).
    Args(lexopt::Error),
    NotUtf8,
    NotClusterName(String),
    Entry(BadEntryKey),
    /// `list`'s pattern holds a blank.
    NotPattern(String),
    /// `helper` without the option named.
    HelperNeeds(&'static str),
    Target(TargetError),
    NoCommand,
    UnknownCommand(String),
    /// A command without the words it takes (`run` without its entry).
    Needs {
        command: &'static str,
        takes: &'static str,
    },
    /// A word past those a command takes.
    Unexpected {
        command: &'static str,
        word: String,
    },
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UsageError::Args(e) => f.write_str(&crond::cli::args_error(e)),
            UsageError::NotUtf8 => f.write_str("an argument is not UTF-8"),
            UsageError::NotClusterName(name) => write!(f, "'{name}' is not a cluster name"),
            UsageError::Entry(e) => write!(f, "{e}"),
            UsageError::NotPattern(p) => write!(f, "list: '{p}' is not a pattern (no blanks)"),
            UsageError::HelperNeeds(option) => write!(f, "helper: {option} is required"),
            UsageError::Target(e) => write!(f, "{e}"),
            UsageError::NoCommand => f.write_str("a command is required"),
            UsageError::UnknownCommand(word) => write!(f, "'{word}' is not a command"),
            UsageError::Needs { command, takes } => {
                let what = if matches!(*command, "run" | "show") {
                    "an entry"
                } else {
                    takes
                };
                write!(f, "{command} needs {what}: cronctl {command} {takes}")
            }
            UsageError::Unexpected { command, word } => {
                write!(f, "{command}: unexpected argument '{word}'")
            }
        }
    }
}

impl std::error::Error for UsageError {}

impl From<lexopt::Error> for UsageError {
    fn from(e: lexopt::Error) -> UsageError {
        UsageError::Args(e)
    }
}

impl From<BadEntryKey> for UsageError {
    fn from(e: BadEntryKey) -> UsageError {
        UsageError::Entry(e)
    }
}

impl From<TargetError> for UsageError {
    fn from(e: TargetError) -> UsageError {
        UsageError::Target(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(args: &[&str]) -> Invocation {
        parse(args.iter().copied()).unwrap()
    }

    #[test]
    fn each_command_parses_with_its_options() {
        assert_eq!(parse_ok(&["hosts"]).command, Command::Hosts);
        assert_eq!(
            parse_ok(&["--db", "dbname=c", "claims", "--cluster", "n"]),
            Invocation {
                db: Some("dbname=c".into()),
                command: Command::Claims {
                    cluster: Some("n".into()),
                    wide: false
                }
            }
        );
        assert_eq!(
            parse_ok(&["history", "--entry", "0123456789abcdef", "--limit", "5"]).command,
            Command::History {
                cluster: None,
                entry: Some(EntryKey(0x0123_4567_89ab_cdef)),
                limit: 5,
                wide: false
            }
        );
        assert_eq!(
            parse_ok(&["pause", "nightly", "alice", "0123456789abcdef"]).command,
            Command::Pause {
                target: Target {
                    cluster: "nightly".into(),
                    user: "alice".into(),
                    entry: EntryKey(0x0123_4567_89ab_cdef)
                },
                pause: true,
                force: false
            }
        );
        assert!(matches!(
            parse_ok(&["pause", "--force", "nightly", "alice", "0123456789abcdef"]).command,
            Command::Pause { force: true, .. }
        ));
        assert_eq!(
            parse_ok(&["entries", "--cluster", "web", "--wide"]).command,
            Command::Entries {
                cluster: Some("web".into()),
                wide: true
            }
        );
        assert_eq!(
            parse_ok(&["--db", "x", "helper", "--host", "h1", "--lease", "5"]).command,
            Command::Helper(HelperArgs {
                db: "x".into(),
                host: "h1".into(),
                keep_days: 30,
                keep_runs: DEFAULT_KEEP_RUNS,
                lease_s: 5
            })
        );
    }

    #[test]
    fn list_run_and_status_are_one_request_line_to_the_control_socket() {
        let control = |args: &[&str]| match parse_ok(args).command {
            Command::Control { socket, request } => (
                socket.map_or("-".into(), |s| s.display().to_string()),
                request,
            ),
            other => panic!("{other:?}"),
        };
        assert_eq!(control(&["list"]), ("-".into(), "list".into()));
        assert_eq!(
            control(&["--socket", "/tmp/c.sock", "list", "--json", "alice"]),
            ("/tmp/c.sock".into(), "list --json alice".into())
        );
        assert_eq!(control(&["status", "--json"]).1, "status --json");
        assert_eq!(
            control(&["run", "/etc/cron.d/php:12"]).1,
            "run /etc/cron.d/php:12"
        );
        assert_eq!(control(&["run", "55a1"]).1, "run 55a1");
        assert_eq!(control(&["run", "--wait", "55a1"]).1, "run --wait 55a1");
        assert_eq!(control(&["run", "55a1", "--wait"]).1, "run --wait 55a1");
        assert_eq!(control(&["show", "55a1"]).1, "show 55a1");
        assert_eq!(control(&["show", "--json", "a:3"]).1, "show --json a:3");
    }

    #[test]
    fn bad_arguments_are_refused_with_a_reason() {
        for bad in [
            &[][..],
            &["frobnicate"],
            &["history", "--limit", "0"],
            &["history", "--entry", "xyz"],
            &["claims", "--cluster", "a b"],
            &["pause", "nightly", "alice"],
            &["resume", "bad/name", "alice", "0123456789abcdef"],
            &["helper", "--host", "h"],
            &["--db", "x", "helper", "--host", "h", "--lease", "1"],
            &["list", "a", "b"],
            &["run"],
            &["run", "crontabs/alice"],
            &["run", "1", "2"],
            &["show"],
            &["show", "crontabs/alice"],
            &["status", "x"],
        ] {
            assert!(parse(bad.iter().copied()).is_err(), "{bad:?}");
        }
    }
}
