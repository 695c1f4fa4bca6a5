//! `cronnext`: prints when entries will next run, with the daemon's own code
//! ([`Schedule::next_after`](crate::schedule::Schedule::next_after)), so what it prints is what
//! crond does.
//!
//! Two modes, chosen by the positional arguments:
//! * **expression**: one argument that is an expression (it holds a blank or starts with `@`):
//!   `cronnext [--tz ZONE] [--after RFC3339] [--count N] 'EXPR'` prints the next N fire times,
//!   one RFC 3339 timestamp with the zone's offset per line.
//! * **crontab**: one or more files (`--system` for the format of /etc/crontab and
//!   /etc/cron.d): prints `TIME USER COMMAND` for the next run of every entry (the next
//!   `--count` runs, or every run up to `--until`), sorted by time. A user crontab's entries run
//!   as crond runs them: as the file's owner, or, for a file of root's or of the user running
//!   cronnext, as that user (crond's `--crontab`), so the cluster ids agree with the daemon's.
//!
//! Exit status: 0 done; 1 usage error (bad option, unknown zone, unreadable file); 2 the
//! expression or a crontab has errors (the good entries of a crontab are still printed).
//!
//! [`cli`] parses argv; expression mode is here, crontab mode in `files.rs`. Only
//! [`Context::resolve`] reads the clock, the local zone and the host name; crontab mode reads
//! the files it is given (and, with `--system`, the path of each one's directory, to tell a
//! file in cron.d; without it, passwd for the name of each file's owner), and nothing else is
//! read.

pub mod cli;
mod files;

use std::io::{self, Write};
use std::process::ExitCode;

use jiff::Timestamp;
use jiff::tz::TimeZone;

pub use cli::{Action, Options, USAGE};

use crate::crontab::Format;
use crate::schedule::{self, When, Zone};

/// Facts from the system that cronnext needs: the clock, the local zone and the host name, read
/// once by [`cronnext_main`].
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

/// `cronnext`'s `main`: parses argv, reads the context and runs with the process's stdout and
/// stderr. Exit status as [`run`]'s, and 1 for a usage error.
pub fn cronnext_main() -> ExitCode {
    let options = match Options::try_parse_from(std::env::args_os().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            let mut err = io::stderr().lock();
            let _ = writeln!(err, "cronnext: {e}");
            let _ = err.write_all(USAGE.as_bytes());
            return ExitCode::from(1);
        }
    };
    let ctx = Context::resolve();
    // Buffered: a 100,000-line crontab's runs are one write per 8 KiB, not one per line.
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut err = io::stderr().lock();
    let mut code = run(&options, &ctx, &mut out, &mut err);
    // A reader that stopped early (`| head`) is not an error worth a message.
    if let Err(e) = out.flush()
        && code != 1
        && e.kind() != io::ErrorKind::BrokenPipe
    {
        let _ = writeln!(err, "cronnext: {e}");
        code = 1;
    }
    ExitCode::from(code)
}

/// Runs `options.action` in `ctx`; returns the exit status.
pub fn run(options: &Options, ctx: &Context, out: &mut dyn Write, err: &mut dyn Write) -> u8 {
    match run_inner(options, ctx, out, err) {
        Ok(code) => code,
        Err(Failure::Usage(message)) => {
            let _ = writeln!(err, "cronnext: {message}");
            1
        }
        Err(Failure::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe => 1,
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
    options: &Options,
    ctx: &Context,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Failure> {
    let zone = match &options.tz {
        Some(name) => Zone::get(name).map_err(|e| Failure::Usage(e.to_string()))?,
        None => ctx.local.clone(),
    };
    let after = match &options.after {
        Some(text) => parse_time(text, &zone)?,
        None => ctx.now,
    };
    let seed = schedule::host_seed(&ctx.host);
    match &options.action {
        Action::Help => {
            out.write_all(USAGE.as_bytes())?;
            Ok(0)
        }
        Action::Version => {
            writeln!(out, "cronnext (crond) {}", env!("CARGO_PKG_VERSION"))?;
            Ok(0)
        }
        Action::Expression(expr) => expression(expr, options.count, after, &zone, seed, out, err),
        Action::Files(files) => {
            let until = match &options.until {
                Some(text) => Some(parse_time(text, &zone)?),
                None => None,
            };
            let format = if options.system {
                Format::System
            } else {
                Format::User
            };
            let request = files::Request {
                files,
                format,
                zone: &zone,
                after,
                until,
                count: options.count,
                seed,
                id: options.id,
            };
            files::run(&request, out, err)
        }
    }
}

/// Expression mode: prints the next `count` (default 1) times of `expr` after `after`, in
/// `zone`; an expression with no times (`@reboot`, `@every`, a day no chosen month has) is said
/// so on `err`, and so are the fields an expression with `H` resolves to. Returns the exit status: 2 when the expression does not parse.
fn expression(
    expr: &str,
    count: Option<u64>,
    after: Timestamp,
    zone: &Zone,
    seed: u64,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Failure> {
    let hashed = schedule::parse_fields(expr.as_bytes(), 0, seed, 0).is_ok_and(|f| f.hashed);
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
        When::Every(_) => {
            writeln!(
                err,
                "cronnext: {when} runs at crond's start plus each interval; it has no fixed times"
            )?;
            return Ok(0);
        }
    };
    if hashed {
        // On standard error: standard output stays one time per line.
        writeln!(
            err,
            "cronnext: {} resolves to {schedule} (its 'H' hashed from its text)",
            expr.trim()
        )?;
    }
    if !schedule.can_fire() {
        writeln!(
            err,
            "cronnext: this expression never runs (no such day in the chosen months)"
        )?;
        return Ok(0);
    }
    let mut at = after;
    for _ in 0..count.unwrap_or(1) {
        match schedule.next_after(at, zone) {
            Some(next) => {
                writeln!(out, "{}", zone.format_rfc3339(next))?;
                at = next;
            }
            None => break,
        }
    }
    Ok(0)
}

/// An RFC 3339 instant, or a civil date-time read in `zone`.
fn parse_time(text: &str, zone: &Zone) -> Result<Timestamp, BadTime> {
    if let Ok(ts) = text.parse::<Timestamp>() {
        return Ok(ts);
    }
    match text.parse::<jiff::civil::DateTime>() {
        Ok(dt) => dt
            .to_zoned(zone.time_zone().clone())
            .map(|z| z.timestamp())
            .map_err(|e| BadTime::NotInZone(text.to_string(), e)),
        Err(_) => Err(BadTime::Unread(text.to_string())),
    }
}

/// Why `--after` or `--until` names no instant; each says the text.
#[derive(Debug)]
enum BadTime {
    /// A local date and time the zone can't place.
    NotInZone(String, jiff::Error),
    /// Neither RFC 3339 nor a local date and time.
    Unread(String),
}

impl std::fmt::Display for BadTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BadTime::NotInZone(text, e) => write!(f, "bad time '{text}': {e}"),
            BadTime::Unread(text) => write!(
                f,
                "bad time '{text}': expected RFC 3339 (2026-03-08T00:00:00-05:00) or a local \
                 date and time"
            ),
        }
    }
}

impl From<BadTime> for Failure {
    fn from(e: BadTime) -> Failure {
        Failure::Usage(e.to_string())
    }
}
