//! `cronnext`: prints when entries will next run, with the daemon's own code
//! ([`Schedule::next_after`]), so what it prints is what crond does.
//!
//! Two modes, chosen by the positional arguments:
//! * **expression**: one argument that is an expression (it holds a blank or starts with `@`):
//!   `cronnext [--tz ZONE] [--after RFC3339] [--count N] 'EXPR'` prints the next N fire times,
//!   one RFC 3339 timestamp with the zone's offset per line.
//! * **crontab**: one or more files (`--system` for the format of /etc/crontab and
//!   /etc/cron.d): prints `TIME USER COMMAND` for the next run of every entry (the next
//!   `--count` runs, or every run up to `--until`), sorted by time. A user crontab's owner is taken
//!   from the file name, as in the spool directory.
//!
//! Exit status: 0 done; 1 usage error (bad option, unknown zone, unreadable file); 2 the
//! expression or a crontab has errors (the good entries of a crontab are still printed).

use std::ffi::OsString;
use std::io::{self, Write};
use std::path::PathBuf;

use jiff::Timestamp;
use jiff::tz::TimeZone;

use crate::crontab::{self, Format, Limits, ParseOptions};
use crate::schedule::{self, Schedule, When, Zone};

/// Most lines printed in crontab mode with `--until`, so that `* * * * *` over a decade ends.
const MAX_LINES: usize = 1_000_000;

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Args {
    pub tz: Option<String>,
    pub after: Option<String>,
    pub until: Option<String>,
    pub count: Option<u64>,
    pub system: bool,
    pub mode: Mode,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    Help,
    Version,
    Expression(String),
    Files(Vec<PathBuf>),
}

pub const USAGE: &str = "\
usage: cronnext [--tz ZONE] [--after TIME] [--count N] 'EXPRESSION'
       cronnext [--system] [--tz ZONE] [--after TIME] [--until TIME] [--count N] FILE...

Prints when a cron expression, or the entries of crontab files, will next run, as crond runs
them (same code, same daylight-saving rules).

  --tz ZONE      zone of the expression and of the printed times (default: the local zone)
  --after TIME   start strictly after TIME, RFC 3339 (2026-03-08T00:00:00-05:00) or a local
                 date and time (2026-03-08T00:00) in --tz (default: now)
  -n, --count N  print N times (expression) or N runs per entry (files); default 1
  --until TIME   files: print every run up to TIME (with --count: at most N per entry)
  --system       files are in the system format (/etc/crontab, /etc/cron.d): a user field
  -h, --help     this text
  -V, --version  the version
";

/// A usage error: printed with the usage line, exit status 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Args {
    /// Parses argv (without the program name).
    pub fn try_parse_from<I>(args: I) -> Result<Args, UsageError>
    where
        I: IntoIterator,
        I::Item: Into<OsString>,
    {
        use lexopt::prelude::*;
        let mut parser = lexopt::Parser::from_args(args);
        let mut out = Args {
            tz: None,
            after: None,
            until: None,
            count: None,
            system: false,
            mode: Mode::Help,
        };
        let mut positional: Vec<OsString> = Vec::new();
        let err = |e: lexopt::Error| UsageError(e.to_string());
        let text = |v: OsString| {
            v.into_string()
                .map_err(|v| UsageError(format!("not valid UTF-8: {}", v.to_string_lossy())))
        };
        let mut help = false;
        let mut version = false;
        while let Some(arg) = parser.next().map_err(err)? {
            match arg {
                Long("tz") => out.tz = Some(text(parser.value().map_err(err)?)?),
                Long("after") => out.after = Some(text(parser.value().map_err(err)?)?),
                Long("until") => out.until = Some(text(parser.value().map_err(err)?)?),
                Long("count") | Short('n') => {
                    let v = text(parser.value().map_err(err)?)?;
                    let n = v
                        .parse::<u64>()
                        .map_err(|_| UsageError(format!("--count needs a number, not '{v}'")))?;
                    out.count = Some(n);
                }
                Long("system") => out.system = true,
                Short('h') | Long("help") => help = true,
                Short('V') | Long("version") => version = true,
                Value(v) => positional.push(v),
                _ => return Err(err(arg.unexpected())),
            }
        }
        out.mode = if help {
            Mode::Help
        } else if version {
            Mode::Version
        } else if positional.is_empty() {
            return Err(UsageError(
                "an expression or a crontab file is needed".into(),
            ));
        } else if positional.len() == 1 && !out.system && looks_like_expression(&positional[0]) {
            let expr = text(positional.remove(0))?;
            if out.until.is_some() {
                return Err(UsageError("--until applies to crontab files only".into()));
            }
            Mode::Expression(expr)
        } else {
            Mode::Files(positional.into_iter().map(PathBuf::from).collect())
        };
        Ok(out)
    }
}

fn looks_like_expression(arg: &OsString) -> bool {
    let bytes = arg.as_encoded_bytes();
    bytes.starts_with(b"@") || bytes.iter().any(|&b| b == b' ' || b == b'\t')
}

/// Facts from the system that cronnext needs: the clock and the local zone, read by the binary.
#[derive(Debug, Clone)]
pub struct Context {
    pub now: Timestamp,
    pub local: Zone,
    pub host: Vec<u8>,
}

impl Context {
    /// Reads the clock, the local zone (TZ, /etc/localtime) and the host name.
    pub fn resolve() -> Context {
        let tz = TimeZone::system();
        let name = tz.iana_name().unwrap_or("local").to_string();
        let host = crate::sys::hostname();
        Context {
            now: Timestamp::now(),
            local: Zone::new(&name, tz),
            host,
        }
    }
}

/// Runs cronnext; returns the exit status.
pub fn run(args: &Args, ctx: &Context, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    match run_inner(args, ctx, out, err) {
        Ok(code) => code,
        Err(Failure::Usage(message)) => {
            let _ = writeln!(err, "cronnext: {message}");
            1
        }
        Err(Failure::Io(e)) => {
            let _ = writeln!(err, "cronnext: {e}");
            1
        }
    }
}

enum Failure {
    Usage(String),
    Io(io::Error),
}

impl From<io::Error> for Failure {
    fn from(e: io::Error) -> Failure {
        Failure::Io(e)
    }
}

fn run_inner(
    args: &Args,
    ctx: &Context,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, Failure> {
    let zone = match &args.tz {
        Some(name) => Zone::get(name).map_err(|e| Failure::Usage(e.to_string()))?,
        None => ctx.local.clone(),
    };
    let after = match &args.after {
        Some(text) => parse_time(text, &zone).map_err(Failure::Usage)?,
        None => ctx.now,
    };
    let seed = schedule::host_seed(&ctx.host);
    match &args.mode {
        Mode::Help => {
            out.write_all(USAGE.as_bytes())?;
            Ok(0)
        }
        Mode::Version => {
            writeln!(out, "cronnext (crond) {}", env!("CARGO_PKG_VERSION"))?;
            Ok(0)
        }
        Mode::Expression(expr) => {
            let when = match schedule::parse_expression(expr, seed) {
                Ok(when) => when,
                Err(e) => {
                    writeln!(err, "cronnext: {expr}")?;
                    writeln!(err, "cronnext: {}^", " ".repeat(e.offset))?;
                    writeln!(err, "cronnext: {e}")?;
                    return Ok(2);
                }
            };
            let schedule = match when {
                When::Reboot => {
                    writeln!(
                        err,
                        "cronnext: @reboot runs once when crond starts at boot; it has no next time"
                    )?;
                    return Ok(0);
                }
                When::Periodic(s) => s,
            };
            if !schedule.can_fire() {
                writeln!(
                    err,
                    "cronnext: this expression never runs (no such day in the chosen months)"
                )?;
                return Ok(0);
            }
            let mut at = after;
            for _ in 0..args.count.unwrap_or(1) {
                match schedule.next_after(at, &zone) {
                    Some(next) => {
                        writeln!(out, "{}", zone.format_rfc3339(next))?;
                        at = next;
                    }
                    None => break,
                }
            }
            Ok(0)
        }
        Mode::Files(files) => {
            let until = match &args.until {
                Some(text) => Some(parse_time(text, &zone).map_err(Failure::Usage)?),
                None => None,
            };
            files_mode(args, files, &zone, after, until, seed, out, err)
        }
    }
}

/// An RFC 3339 instant, or a civil date-time read in `zone`.
fn parse_time(text: &str, zone: &Zone) -> Result<Timestamp, String> {
    if let Ok(ts) = text.parse::<Timestamp>() {
        return Ok(ts);
    }
    match text.parse::<jiff::civil::DateTime>() {
        Ok(dt) => dt
            .to_zoned(zone.time_zone().clone())
            .map(|z| z.timestamp())
            .map_err(|e| format!("bad time '{text}': {e}")),
        Err(_) => Err(format!(
            "bad time '{text}': expected RFC 3339 (2026-03-08T00:00:00-05:00) or a local date and time"
        )),
    }
}

struct Run<'a> {
    at: Timestamp,
    user: &'a [u8],
    command: &'a [u8],
}

#[allow(clippy::too_many_arguments)]
fn files_mode(
    args: &Args,
    files: &[PathBuf],
    zone: &Zone,
    after: Timestamp,
    until: Option<Timestamp>,
    seed: u64,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, Failure> {
    let format = if args.system {
        Format::System
    } else {
        Format::User
    };
    let mut status = 0;
    let mut tabs = Vec::new();
    for path in files {
        let text =
            std::fs::read(path).map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
        let mut zones = |name: &str| Zone::get(name);
        let mut options = ParseOptions {
            format,
            limits: Limits::SYSTEM,
            seed,
            zones: &mut zones,
        };
        let tab = crontab::parse(&text, &mut options);
        let shown = path.display().to_string();
        for d in &tab.warnings {
            writeln!(err, "{} (warning)", d.in_file(&shown))?;
        }
        for d in &tab.errors {
            writeln!(err, "{}", d.in_file(&shown))?;
            status = 2;
        }
        let owner = path
            .file_name()
            .map(|n| n.as_encoded_bytes().to_vec())
            .unwrap_or_default();
        tabs.push((owner, tab));
    }
    let per_entry = args
        .count
        .unwrap_or(if until.is_some() { u64::MAX } else { 1 });
    let mut runs: Vec<Run<'_>> = Vec::new();
    for (owner, tab) in &tabs {
        for entry in &tab.entries {
            let user = entry.user.as_deref().unwrap_or(owner);
            let schedule: &Schedule = match &entry.when {
                When::Periodic(s) => s,
                When::Reboot => {
                    writeln!(
                        err,
                        "cronnext: line {}: @reboot runs once when crond starts at boot",
                        entry.line
                    )?;
                    continue;
                }
            };
            let entry_zone = entry.zone.as_ref().unwrap_or(zone);
            let mut at = after;
            let mut n = 0;
            while n < per_entry && runs.len() < MAX_LINES {
                let Some(next) = schedule.next_after(at, entry_zone) else {
                    break;
                };
                if until.is_some_and(|u| next > u) {
                    break;
                }
                runs.push(Run {
                    at: next,
                    user,
                    command: &entry.command,
                });
                at = next;
                n += 1;
            }
        }
    }
    runs.sort_by_key(|r| r.at);
    for run in &runs {
        write!(out, "{} ", zone.format_rfc3339(run.at))?;
        out.write_all(run.user)?;
        out.write_all(b" ")?;
        out.write_all(run.command)?;
        out.write_all(b"\n")?;
    }
    Ok(status)
}
