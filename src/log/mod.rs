//! The daemon's log: every message is a [`LogLine`], Debian's shape `(WHO) EVENT (DETAIL)`
//! (research §2.7) with the one byte rendering, [`printable`] (Vixie's `mkprint`), both in
//! [`line`](mod@line). This file holds the sinks: syslog (ident `cron`, `CRON` in a job child;
//! facility cron, with the pid)
//! and/or stderr for journald, chosen once from `--log`; as text (Debian's lines) or as one
//! JSON object per line (`--log-format json`, [`json`](mod@json)).
//!
//! Nothing else in the library prints, and nothing here formats a message of its own: a line
//! is built by `LogLine` or not at all.

pub mod json;
pub mod line;
pub mod lines;

use std::io::Write;
use std::sync::Mutex;

use jiff::tz::TimeZone;

use crate::sys::syslog;

pub use crate::types::Level;
pub use line::{JobFields, LogLine, printable};

/// How a message is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// `(who) EVENT (detail)`, as Debian's cron writes it.
    #[default]
    Text,
    /// One JSON object per message.
    Json,
}

/// Where log lines go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    Syslog,
    Stderr,
    Both,
}

/// Who logs, as Debian names them: the daemon `cron[PID]`, a job child `CRON[PID]` (Vixie's
/// child upper-cases its program name), so `journalctl -t CRON` and logcheck rules match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ident {
    Daemon,
    JobChild,
}

impl Ident {
    fn name(self) -> &'static std::ffi::CStr {
        match self {
            Ident::Daemon => c"cron",
            Ident::JobChild => c"CRON",
        }
    }
}

/// The log. Copied into each job child (a fork), which then logs under its own pid and, after
/// [`Log::for_job_child`], as `CRON`.
#[derive(Debug, Clone, Copy)]
pub struct Log {
    destination: Destination,
    ident: Ident,
    format: Format,
}

impl Log {
    pub fn open(destination: Destination, format: Format) -> Log {
        let log = Log {
            destination,
            ident: Ident::Daemon,
            format,
        };
        if destination != Destination::Stderr {
            syslog::open_as(log.ident.name());
        }
        log
    }

    /// SIGHUP: drop the syslog connection; the next message reconnects.
    pub fn reopen(&self) {
        if self.destination != Destination::Stderr {
            syslog::close();
            syslog::open_as(self.ident.name());
        }
    }

    /// In a job child, just after fork: the same log under the ident `CRON`, with the daemon's
    /// syslog connection (closed with the daemon's descriptors) forgotten.
    pub fn for_job_child(&self) -> Log {
        let log = Log {
            destination: self.destination,
            ident: Ident::JobChild,
            format: self.format,
        };
        log.reopen();
        log
    }

    /// `(who) event (detail)` at `level`; `who` (a user name as bytes, or `CRON`) is shown
    /// through [`printable`].
    pub fn event(&self, level: Level, who: impl AsRef<[u8]>, event: &str, detail: &str) {
        self.line(level, &LogLine::new(who, event.to_owned(), detail));
    }

    /// One message already built (its bytes need not be UTF-8: a job's output with `-s`).
    pub fn line(&self, level: Level, line: &LogLine) {
        match self.format {
            Format::Text => self.text(level, line),
            Format::Json => self.json(level, line),
        }
    }

    /// Whether messages are JSON objects (a job's end is then always logged, with its status).
    pub fn is_json(&self) -> bool {
        self.format == Format::Json
    }

    fn json(&self, level: Level, line: &LogLine) {
        let time = now().strftime("%Y-%m-%dT%H:%M:%S%.3f%:z").to_string();
        let host = String::from_utf8_lossy(&crate::sys::hostname()).into_owned();
        let source = format!(
            "{}[{}]",
            self.ident.name().to_string_lossy(),
            crate::sys::process::own_pid()
        );
        let frame = json::Frame {
            time: &time,
            host: &host,
            source: &source,
            level,
        };
        let mut object = json::render(line, &frame);
        if self.destination != Destination::Stderr {
            syslog::log_bytes(level, &object);
        }
        if self.destination != Destination::Syslog {
            object.push(b'\n');
            let _ = std::io::stderr().write_all(&object);
        }
    }

    /// Syslog gets the line as Debian writes it; stderr also the user a bare line names
    /// ([`LogLine::to_bytes_named`]).
    fn text(&self, level: Level, line: &LogLine) {
        if self.destination != Destination::Stderr {
            syslog::log_bytes(level, &line.to_bytes());
        }
        if self.destination != Destination::Syslog {
            let message = line.to_bytes_named();
            // The pid says which process logged: the daemon or one of its job children.
            let stamp = now().strftime("%b %e %H:%M:%S");
            let mut line = format!(
                "{stamp} {}[{}]: ",
                self.ident.name().to_string_lossy(),
                crate::sys::process::own_pid()
            )
            .into_bytes();
            line.extend_from_slice(&message);
            line.push(b'\n');
            let _ = std::io::stderr().write_all(&line);
        }
    }

    pub fn info(&self, who: impl AsRef<[u8]>, event: &str, detail: &str) {
        self.event(Level::Info, who, event, detail);
    }

    pub fn error(&self, who: impl AsRef<[u8]>, event: &str, detail: &str) {
        self.event(Level::Error, who, event, detail);
    }
}

/// The zone of the time stamps on stderr and in JSON: the daemon's own, once it has read it
/// ([`stamps_in`]), else the zone file's, read on the first stamp.
static STAMP_ZONE: Mutex<Option<TimeZone>> = Mutex::new(None);

/// Stamps from now on are in `zone` (the daemon's local zone, read again when its file
/// changes: the log follows the schedule's zone). Job children forked after it inherit it.
pub fn stamps_in(zone: TimeZone) {
    *STAMP_ZONE.lock().unwrap_or_else(|e| e.into_inner()) = Some(zone);
}

/// The time now in the stamps' zone.
fn now() -> jiff::Zoned {
    let mut zone = STAMP_ZONE.lock().unwrap_or_else(|e| e.into_inner());
    let tz = zone.get_or_insert_with(|| {
        crate::localtime::read(std::path::Path::new(crate::paths::LOCALTIME))
            .map_or(TimeZone::UTC, |z| z.time_zone().clone())
    });
    jiff::Timestamp::now().to_zoned(tz.clone())
}
