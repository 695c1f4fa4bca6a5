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
pub mod messages;
#[cfg(test)]
mod schema_tests;

use std::io::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

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

    /// `(CRON) event (detail)` at `level`: the daemon speaking of itself
    /// ([`LogLine::daemon`]).
    pub fn daemon(&self, level: Level, event: &'static str, detail: &str) {
        self.line(level, &LogLine::daemon(event, detail));
    }

    /// One message already built (its bytes need not be UTF-8: a job's output with `-s`).
    pub fn line(&self, level: Level, line: &LogLine) {
        match self.format {
            Format::Text => self.text(level, line),
            Format::Json => self.json(level, line),
        }
    }

    /// Whether messages are JSON objects (a job's end is then always logged, with its status).
    /// The `--log` and `--log-format` arguments that make a helper (`cronctl notify`) log
    /// where this log goes.
    pub fn helper_args(&self) -> [&'static str; 4] {
        let destination = match self.destination {
            Destination::Syslog => "syslog",
            Destination::Stderr => "stderr",
            Destination::Both => "both",
        };
        let format = match self.format {
            Format::Text => "text",
            Format::Json => "json",
        };
        ["--log", destination, "--log-format", format]
    }

    pub fn is_json(&self) -> bool {
        self.format == Format::Json
    }

    /// Before a job child is forked: makes this second's stamp for its text lines on stderr
    /// ([`stamp_for_children`]); nothing when this log writes none (syslog only, or JSON).
    pub fn prepare_for_job_child(&self) {
        if self.destination != Destination::Syslog && self.format == Format::Text {
            stamp_for_children();
        }
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
            let stamp = text_stamp();
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
    STAMP_SECOND.store(i64::MIN, Ordering::Release);
}

/// The time now in the stamps' zone.
fn now() -> jiff::Zoned {
    in_stamp_zone(jiff::Timestamp::now())
}

fn in_stamp_zone(time: jiff::Timestamp) -> jiff::Zoned {
    let mut zone = STAMP_ZONE.lock().unwrap_or_else(|e| e.into_inner());
    let tz = zone.get_or_insert_with(|| {
        crate::localtime::read(std::path::Path::new(crate::paths::LOCALTIME))
            .map_or(TimeZone::UTC, |z| z.time_zone().clone())
    });
    time.to_zoned(tz.clone())
}

/// The stamp of text lines on stderr (`%b %e %H:%M:%S`: 15 bytes, two words here) and the
/// second it names (`i64::MIN`: none yet), made at most once a second. The daemon makes it
/// before it forks a job child ([`stamp_for_children`]), so the child's `CMD` line copies it
/// rather than running the zone and formatting code in a fresh copy of the daemon (each page
/// of that code is a page fault there: docs/daemon.md). Atomics, not a lock: reading the stamp
/// writes nothing, so neither the daemon nor a job child copies the page they share for it.
static STAMP_SECOND: AtomicI64 = AtomicI64::new(i64::MIN);
static STAMP_TEXT: [AtomicU64; 2] = [AtomicU64::new(0), AtomicU64::new(0)];
const STAMP_LEN: usize = 15;
static STAMP_WRITER: Mutex<()> = Mutex::new(());

/// The stamp for `time`, if the one kept is for its second (and no writer changed it while it
/// was read).
fn kept_stamp(second: i64) -> Option<[u8; 16]> {
    if STAMP_SECOND.load(Ordering::Acquire) != second {
        return None;
    }
    let mut text = [0u8; 16];
    text[..8].copy_from_slice(&STAMP_TEXT[0].load(Ordering::Acquire).to_ne_bytes());
    text[8..].copy_from_slice(&STAMP_TEXT[1].load(Ordering::Acquire).to_ne_bytes());
    (STAMP_SECOND.load(Ordering::Acquire) == second).then_some(text)
}

fn text_stamp() -> String {
    let time = jiff::Timestamp::now();
    if let Some(text) = kept_stamp(time.as_second()) {
        return String::from_utf8_lossy(&text[..STAMP_LEN]).into_owned();
    }
    let text = in_stamp_zone(time).strftime("%b %e %H:%M:%S").to_string();
    if text.len() == STAMP_LEN {
        // One writer at a time; readers take no lock and check the second before and after.
        let _writer = STAMP_WRITER.lock().unwrap_or_else(|e| e.into_inner());
        let mut words = [0u8; 16];
        words[..STAMP_LEN].copy_from_slice(text.as_bytes());
        // Marked stale first, so a reader between the stores finds no stamp, not half a one.
        STAMP_SECOND.store(i64::MIN, Ordering::Release);
        STAMP_TEXT[0].store(
            u64::from_ne_bytes(words[..8].try_into().unwrap()),
            Ordering::Release,
        );
        STAMP_TEXT[1].store(
            u64::from_ne_bytes(words[8..].try_into().unwrap()),
            Ordering::Release,
        );
        STAMP_SECOND.store(time.as_second(), Ordering::Release);
    }
    text
}

/// Makes this second's stamp of text lines, for the job children forked in it to inherit.
fn stamp_for_children() {
    let second = jiff::Timestamp::now().as_second();
    if kept_stamp(second).is_none() {
        let _ = text_stamp();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kept_stamp_is_the_one_made_for_its_second_and_for_no_other() {
        // The second may turn between the clock's read and the stamp's: then again.
        for _ in 0..100 {
            let second = jiff::Timestamp::now().as_second();
            stamp_for_children();
            let made = text_stamp();
            let Some(kept) = kept_stamp(second) else {
                continue;
            };
            assert_eq!(&kept[..STAMP_LEN], made.as_bytes());
            assert_eq!(made.len(), STAMP_LEN, "{made:?}");
            assert_eq!(kept_stamp(second - 1), None);
            assert_eq!(kept_stamp(second + 1), None);
            return;
        }
        panic!("no stamp was kept for the second it was made in");
    }
}
