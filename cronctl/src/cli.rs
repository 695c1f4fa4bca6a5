//! The `cronctl` command line: argv → [`Command`], or a usage error. Pure.
//!
//! `list`, `run`, `show`, `status`, `logs`, `history` (without `--db`, `--cluster` or
//! `--entry`), and `pause` and `resume` of one entry (FILE:LINE or ID; with CLUSTER USER
//! ENTRY, a cluster's) ask the daemon through its control socket (no database, no root); the
//! other commands read the cluster database.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use crond::cluster::entry_id::{BadEntryKey, EntryKey};
use crond::cluster::{DEFAULT_KEEP_RUNS, MAX_KEEP_RUNS, MIN_KEEP_RUNS};
use crond::control::TargetError;
use crond::crontab::policy::is_cluster_name;

use crate::helper::HelperArgs;
use crate::history::{self, JournalChoice, WriterArgs};
use crate::notify::{NotRunMail, NotifyArgs, Phase, is_rid};
use crond::job::mail::MailCommand;
use crond::log::{Destination, Format};

pub const USAGE: &str = "usage: cronctl [--socket PATH] list [--wide|--json] [PATTERN]
       cronctl [--socket PATH] run [--wait] FILE:LINE|ID
       cronctl [--socket PATH] show [--json] FILE:LINE|ID
       cronctl [--socket PATH] status [--json]
       cronctl [--socket PATH] history [--failed] [--since TIME] [--user NAME] [--limit N]
                               [--wide|--json] [ENTRY]
       cronctl [--socket PATH] logs [--raw] ENTRY [RUN]
       cronctl [--socket PATH] pause FILE:LINE|ID
       cronctl [--socket PATH] resume FILE:LINE|ID
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
    /// The daemon's history writer (started by crond, not by hand).
    HistoryWriter(WriterArgs),
    /// A run's `CRON_PING` and `CRON_WEBHOOK` requests (started by a job child, as its user).
    Notify(NotifyArgs),
    /// `list`, `run`, `show`, `status`, `history` or `logs`: one request line to the daemon's
    /// control socket.
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

/// The smallest `--max-size` of the history writer.
pub const MIN_MAX_SIZE: u64 = 1 << 20;

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
    /// `--limit` (`None`: the command's default).
    limit: Option<u32>,
    host: Option<String>,
    keep_days: Option<u32>,
    keep_runs: Option<u32>,
    lease_s: u32,
    socket: Option<PathBuf>,
    json: bool,
    wide: bool,
    wait: bool,
    force: bool,
    store: Option<PathBuf>,
    max_size: Option<u64>,
    journal: Option<PathBuf>,
    user: Option<String>,
    since: Option<String>,
    failed: bool,
    raw: bool,
    /// `notify`'s `--rid`, `--log` and `--log-format`.
    rid: Option<String>,
    log: Option<Destination>,
    log_format: Format,
    /// `notify end`'s mail of a slot that did not run: `--sendmail`, `--mail-command`,
    /// `--mail-host`, `--charset`.
    sendmail: Option<PathBuf>,
    mail_command: Option<std::ffi::OsString>,
    mail_host: Option<String>,
    charset: Option<String>,
}

impl Default for Flags {
    fn default() -> Flags {
        Flags {
            db: None,
            words: Vec::new(),
            cluster: None,
            entry: None,
            limit: None,
            host: None,
            keep_days: None,
            keep_runs: None,
            lease_s: 30,
            socket: None,
            json: false,
            wide: false,
            wait: false,
            force: false,
            store: None,
            max_size: None,
            journal: None,
            user: None,
            since: None,
            failed: false,
            raw: false,
            rid: None,
            log: None,
            log_format: Format::Text,
            sendmail: None,
            mail_command: None,
            mail_host: None,
            charset: None,
        }
    }
}

impl Flags {
    /// `notify`'s mail of a slot that did not run: asked for by naming the MTA.
    fn not_run_mail(&self) -> Result<Option<NotRunMail>, UsageError> {
        let command = match (&self.sendmail, &self.mail_command) {
            (Some(_), Some(_)) => return Err(UsageError::NotifyTwoMtas),
            (Some(path), None) => MailCommand::Sendmail(path.clone()),
            (None, Some(line)) => MailCommand::Shell(line.clone()),
            (None, None) => return Ok(None),
        };
        Ok(Some(NotRunMail {
            command,
            host: self.mail_host.clone(),
            charset: self
                .charset
                .clone()
                .unwrap_or_else(|| "US-ASCII".to_string()),
        }))
    }

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
                Long("limit") => {
                    self.limit = Some(in_range(parser, "--limit", (1, MAX_LIMIT), "rows")?)
                }
                Long("host") => self.host = Some(text(parser.value()?)?),
                Long("keep-days") => {
                    self.keep_days = Some(in_range(parser, "--keep-days", (1, 3650), "days")?)
                }
                Long("keep-runs") => {
                    let runs = (MIN_KEEP_RUNS, MAX_KEEP_RUNS);
                    self.keep_runs = Some(in_range(parser, "--keep-runs", runs, "runs")?)
                }
                Long("lease") => self.lease_s = in_range(parser, "--lease", (3, 300), "seconds")?,
                Long("socket") => self.socket = Some(PathBuf::from(parser.value()?)),
                Long("json") => self.json = true,
                Long("wide") => self.wide = true,
                Long("wait") => self.wait = true,
                Long("force") => self.force = true,
                Long("store") => self.store = Some(PathBuf::from(parser.value()?)),
                Long("max-size") => self.max_size = Some(max_size(&text(parser.value()?)?)?),
                Long("journal") => self.journal = Some(PathBuf::from(parser.value()?)),
                Long("user") => self.user = Some(user_name(text(parser.value()?)?)?),
                Long("since") => self.since = Some(since(text(parser.value()?)?)?),
                Long("failed") => self.failed = true,
                Long("raw") => self.raw = true,
                Long("rid") => self.rid = Some(text(parser.value()?)?),
                Long("log") => self.log = Some(log_destination(&text(parser.value()?)?)?),
                Long("log-format") => self.log_format = log_format(&text(parser.value()?)?)?,
                Long("sendmail") => self.sendmail = Some(PathBuf::from(parser.value()?)),
                Long("mail-command") => self.mail_command = Some(parser.value()?),
                Long("mail-host") => self.mail_host = Some(text(parser.value()?)?),
                Long("charset") => self.charset = Some(text(parser.value()?)?),
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
            ["history"] if self.db.is_some() || self.cluster.is_some() || self.entry.is_some() => {
                Command::History {
                    cluster: self.cluster.clone(),
                    entry: self.entry,
                    limit: self.limit.unwrap_or(50),
                    wide: self.wide,
                }
            }
            ["history-writer"] => Command::HistoryWriter(self.writer_args()?),
            ["notify", phase @ ("start" | "end")] => Command::Notify(NotifyArgs {
                phase: if *phase == "start" {
                    Phase::Start
                } else {
                    Phase::End
                },
                rid: (self.rid.clone())
                    .filter(|rid| is_rid(rid))
                    .ok_or(UsageError::NotifyNeeds("--rid UUID"))?,
                log: self.log.unwrap_or(Destination::Syslog),
                format: self.log_format,
                mail: self.not_run_mail()?,
            }),
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
                keep_days: self.keep_days.unwrap_or(30),
                keep_runs: self.keep_runs.unwrap_or(DEFAULT_KEEP_RUNS),
                lease_s: self.lease_s,
            }),
            [verb, ..] if self.is_control(verb) => self.control_command(&words)?,
            [] => return Err(UsageError::NoCommand),
            other => return Err(wrong_words(other)),
        })
    }

    /// Whether `verb` is one of the requests to the control socket (`history` only without
    /// the cluster database's options).
    fn is_control(&self, verb: &str) -> bool {
        match verb {
            "list" | "status" | "show" | "run" | "logs" => true,
            // One word: an entry of this host (three: of a cluster, above).
            "pause" | "resume" => self.words.len() == 2,
            "history" => self.db.is_none() && self.cluster.is_none() && self.entry.is_none(),
            _ => false,
        }
    }

    /// A request to the control socket, from the words of [`Flags::is_control`]'s commands.
    fn control_command(&self, words: &[&str]) -> Result<Command, UsageError> {
        Ok(match words {
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
            [verb @ ("pause" | "resume"), target] => {
                crond::control::parse_target(target).map_err(UsageError::PauseTarget)?;
                if self.force {
                    return Err(UsageError::ForceIsCluster);
                }
                self.control(format!("{verb} {target}"))
            }
            ["history", rest @ ..] if rest.len() <= 1 => self.history(rest.first().copied())?,
            ["logs", entry, rest @ ..] if rest.len() <= 1 => {
                crond::control::parse_target(entry)?;
                let raw = if self.raw { " --raw" } else { "" };
                let mut request = format!("logs{raw} {entry}");
                if let Some(run) = rest.first() {
                    let run: u64 = run
                        .parse()
                        .ok()
                        .filter(|&n| n > 0 && n <= i64::MAX as u64)
                        .ok_or_else(|| UsageError::NotRun((*run).to_string()))?;
                    request = format!("{request} {run}");
                }
                self.control(request)
            }
            other => return Err(wrong_words(other)),
        })
    }

    /// `history` through the control socket: `history [--json] [--wide] [--failed] [--since
    /// TIME] [--user NAME] [--limit N] [ENTRY]`.
    fn history(&self, entry: Option<&str>) -> Result<Command, UsageError> {
        let mut request = String::from("history");
        if self.json {
            request.push_str(" --json");
        }
        if self.wide {
            request.push_str(" --wide");
        }
        if self.failed {
            request.push_str(" --failed");
        }
        if let Some(since) = &self.since {
            request = format!("{request} --since {since}");
        }
        if let Some(user) = &self.user {
            request = format!("{request} --user {user}");
        }
        if let Some(limit) = self.limit {
            if limit > crond::history::query::MAX_LISTED {
                return Err(UsageError::TooMany(limit));
            }
            request = format!("{request} --limit {limit}");
        }
        if let Some(entry) = entry {
            crond::control::parse_target(entry)?;
            request = format!("{request} {entry}");
        }
        Ok(self.control(request))
    }

    /// `history-writer`'s options: `--store` and `--host` are required.
    fn writer_args(&self) -> Result<WriterArgs, UsageError> {
        let journal = match &self.journal {
            None => JournalChoice::Default,
            Some(path) if path.as_os_str() == "none" => JournalChoice::Off,
            Some(path) => JournalChoice::At(path.clone()),
        };
        Ok(WriterArgs {
            store: (self.store.clone()).ok_or(UsageError::WriterNeeds("--store"))?,
            host: (self.host.clone()).ok_or(UsageError::WriterNeeds("--host"))?,
            keep_days: self.keep_days.unwrap_or(history::DEFAULT_KEEP_DAYS),
            keep_runs: self.keep_runs.unwrap_or(history::DEFAULT_KEEP_RUNS),
            max_size: self.max_size.unwrap_or(history::DEFAULT_MAX_SIZE),
            journal,
            cluster_db: self.db.clone(),
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

/// `--max-size`: a number of bytes, at least [`MIN_MAX_SIZE`].
fn max_size(text: &str) -> Result<u64, UsageError> {
    text.parse()
        .ok()
        .filter(|&n| n >= MIN_MAX_SIZE)
        .ok_or_else(|| UsageError::NotSize(text.to_string()))
}

/// `--user`: a name without blanks or control characters (the daemon says whether it is
/// one).
fn user_name(name: String) -> Result<String, UsageError> {
    if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(UsageError::NotUser(name));
    }
    Ok(name)
}

/// `--since`: a span back from now (`30m`, `2h`, `1d`, `1w`), a day (`2026-12-01`) or a time
/// to the minute (`2026-12-01T10:00`), passed to the daemon as typed.
fn since(time: String) -> Result<String, UsageError> {
    let span = time
        .strip_suffix(['m', 'h', 'd', 'w'])
        .is_some_and(|n| !n.is_empty() && n.len() <= 6 && n.bytes().all(|b| b.is_ascii_digit()));
    let date = |t: &str| t.len() == 10 && t.parse::<jiff::civil::Date>().is_ok();
    let minute = |t: &str| match t.split_once('T') {
        Some((day, hm)) => date(day) && hm.len() == 5 && hm.parse::<jiff::civil::Time>().is_ok(),
        None => false,
    };
    if span || date(&time) || minute(&time) {
        Ok(time)
    } else {
        Err(UsageError::NotTime(time))
    }
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
    ("history", "[ENTRY]"),
    ("logs", "ENTRY [RUN]"),
    ("paused", ""),
    ("pause", "CLUSTER USER ENTRY"),
    ("resume", "CLUSTER USER ENTRY"),
];

/// Why `words` name no command: a known command with too few or too many words, or none.
fn wrong_words(words: &[&str]) -> UsageError {
    let Some((name, takes)) = COMMAND_ARGUMENTS.iter().find(|(n, _)| *n == words[0]) else {
        return UsageError::UnknownCommand(words[0].to_string());
    };
    let optional = takes
        .split_whitespace()
        .filter(|w| w.starts_with('['))
        .count();
    let required = takes.split_whitespace().count() - optional;
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
    /// `history-writer` without the option named.
    WriterNeeds(&'static str),
    /// `notify` without the option named.
    NotifyNeeds(&'static str),
    /// `notify` with both `--sendmail` and `--mail-command`.
    NotifyTwoMtas,
    /// `--log` or `--log-format` with a value they do not take.
    NotLog(String),
    /// `--max-size` that is not a number of bytes of at least [`MIN_MAX_SIZE`].
    NotSize(String),
    /// `--user` with a blank or a control character.
    NotUser(String),
    /// `--since` that is not a span or a time.
    NotTime(String),
    /// `history --limit` over what one answer lists.
    TooMany(u32),
    /// `logs`'s RUN that is not a run's number.
    NotRun(String),
    /// `--force` with a pause of this host's entry (it is the cluster form's).
    ForceIsCluster,
    /// `pause` or `resume` of one word that names no entry.
    PauseTarget(TargetError),
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
            UsageError::WriterNeeds(option) => write!(f, "history-writer: {option} is required"),
            UsageError::NotifyNeeds(option) => write!(f, "notify: {option} is required"),
            UsageError::NotifyTwoMtas => {
                write!(
                    f,
                    "notify: --sendmail and --mail-command name two MTAs: give one"
                )
            }
            UsageError::NotLog(value) => write!(
                f,
                "--log takes syslog, stderr or both, --log-format text or json, not {value:?}"
            ),
            UsageError::NotSize(text) => write!(
                f,
                "--max-size: '{text}' is not a number of bytes of {MIN_MAX_SIZE} or more"
            ),
            UsageError::NotUser(name) => write!(f, "--user: '{name}' is not a user name"),
            UsageError::NotTime(text) => write!(
                f,
                "--since: '{text}' is not a time (30m, 2h, 1d, 1w, 2026-12-01 or 2026-12-01T10:00)"
            ),
            UsageError::TooMany(n) => write!(
                f,
                "history: --limit {n} is more than one answer lists ({})",
                crond::history::query::MAX_LISTED
            ),
            UsageError::NotRun(text) => write!(f, "logs: '{text}' is not a run's number"),
            UsageError::PauseTarget(e) => {
                write!(f, "{e} (a cluster's entry: CLUSTER USER ENTRY)")
            }
            UsageError::ForceIsCluster => f.write_str(
                "--force pauses a cluster's entry: cronctl pause --force CLUSTER USER ENTRY",
            ),
            UsageError::Target(e) => write!(f, "{e}"),
            UsageError::NoCommand => f.write_str("a command is required"),
            UsageError::UnknownCommand(word) => write!(f, "'{word}' is not a command"),
            UsageError::Needs { command, takes } => {
                let what = if matches!(*command, "run" | "show" | "logs") {
                    "an entry"
                } else {
                    takes
                };
                write!(f, "{command} needs {what}: cronctl {command} {takes}")?;
                match *command {
                    "pause" | "resume" => write!(f, " (or FILE:LINE|ID, this host's entry)"),
                    _ => Ok(()),
                }
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

/// `notify --log syslog|stderr|both`: where the daemon logs.
fn log_destination(value: &str) -> Result<Destination, UsageError> {
    match value {
        "syslog" => Ok(Destination::Syslog),
        "stderr" => Ok(Destination::Stderr),
        "both" => Ok(Destination::Both),
        _ => Err(UsageError::NotLog(value.to_string())),
    }
}

/// `notify --log-format text|json`.
fn log_format(value: &str) -> Result<Format, UsageError> {
    match value {
        "text" => Ok(Format::Text),
        "json" => Ok(Format::Json),
        _ => Err(UsageError::NotLog(value.to_string())),
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
        // One word: this host's entry, through the control socket.
        for (verb, target) in [("pause", "crontabs/alice:3"), ("resume", "0123abcd")] {
            assert_eq!(
                parse_ok(&[verb, target]).command,
                Command::Control {
                    socket: None,
                    request: format!("{verb} {target}")
                }
            );
        }
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
    fn history_and_logs_are_request_lines_unless_the_cluster_database_is_named() {
        let request = |args: &[&str]| match parse_ok(args).command {
            Command::Control { request, .. } => request,
            other => panic!("{other:?}"),
        };
        assert_eq!(request(&["history"]), "history");
        assert_eq!(
            request(&[
                "history", "3f2a", "--since", "1d", "--failed", "--user", "alice", "--limit", "20",
                "--json", "--wide"
            ]),
            "history --json --wide --failed --since 1d --user alice --limit 20 3f2a"
        );
        for since in ["30m", "2h", "1w", "2026-12-01", "2026-12-01T10:00"] {
            assert_eq!(
                request(&["history", "--since", since]),
                format!("history --since {since}")
            );
        }
        assert_eq!(request(&["logs", "3f2a9c01b7d4"]), "logs 3f2a9c01b7d4");
        assert_eq!(
            request(&["logs", "3f2a", "12", "--raw"]),
            "logs --raw 3f2a 12"
        );
        // With the database named: the cluster's history, as before.
        assert!(matches!(
            parse_ok(&["history", "--cluster", "web", "--limit", "5"]).command,
            Command::History {
                limit: 5,
                cluster: Some(_),
                ..
            }
        ));
        assert!(matches!(
            parse_ok(&["--db", "x", "history"]).command,
            Command::History { limit: 50, .. }
        ));
    }

    #[test]
    fn the_history_writer_takes_its_store_host_and_bounds() {
        assert_eq!(
            parse_ok(&[
                "history-writer",
                "--store",
                "/var/lib/cron/history.db",
                "--host",
                "h1"
            ])
            .command,
            Command::HistoryWriter(WriterArgs {
                store: "/var/lib/cron/history.db".into(),
                host: "h1".into(),
                keep_days: 30,
                keep_runs: 1_000,
                max_size: 256 << 20,
                journal: JournalChoice::Default,
                cluster_db: None,
            })
        );
        let args = [
            "history-writer",
            "--store",
            "s",
            "--host",
            "h",
            "--keep-days",
            "7",
            "--keep-runs",
            "50",
            "--max-size",
            "10485760",
            "--journal",
            "none",
            "--db",
            "host=db1",
        ];
        assert_eq!(
            parse_ok(&args).command,
            Command::HistoryWriter(WriterArgs {
                store: "s".into(),
                host: "h".into(),
                keep_days: 7,
                keep_runs: 50,
                max_size: 10 << 20,
                journal: JournalChoice::Off,
                cluster_db: Some("host=db1".into()),
            })
        );
        assert!(matches!(
            parse_ok(&[
                "history-writer",
                "--store",
                "s",
                "--host",
                "h",
                "--journal",
                "/j"
            ])
            .command,
            Command::HistoryWriter(WriterArgs {
                journal: JournalChoice::At(_),
                ..
            })
        ));
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
            &["pause", "nightly"],
            &["pause", "--force", "crontabs/alice:3"],
            &["resume"],
            &["resume", "a", "b", "c", "d"],
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
            &["history", "--since", "yesterday"],
            &["history", "--since", "1y"],
            &["history", "--since", "2026-13-01"],
            &["history", "--since", "2026-12-01T25:00"],
            &["history", "--since", "2026-12-01 10:00"],
            &["history", "--user", "a b"],
            &["history", "--limit", "20000"],
            &["history", "a", "b"],
            &["history", "xyz"],
            &["logs"],
            &["logs", "3f2a", "0"],
            &["logs", "3f2a", "x"],
            &["logs", "3f2a", "1", "2"],
            &["history-writer", "--host", "h"],
            &["history-writer", "--store", "s"],
            &[
                "history-writer",
                "--store",
                "s",
                "--host",
                "h",
                "--max-size",
                "100",
            ],
        ] {
            assert!(parse(bad.iter().copied()).is_err(), "{bad:?}");
        }
    }
}
