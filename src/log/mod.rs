//! The daemon's log: every message is a [`LogLine`], Debian's shape `(WHO) EVENT (DETAIL)`
//! (research §2.7) with the one byte rendering, [`printable`] (Vixie's `mkprint`), both in
//! [`line`](mod@line). This file holds the sinks: syslog (ident `cron`, `CRON` in a job child;
//! facility cron, with the pid)
//! and/or stderr for journald, chosen once from `--log`.
//!
//! Nothing else in the library prints, and nothing here formats a message of its own: a line
//! is built by `LogLine` or not at all.

pub mod line;

use std::io::Write;

use crate::sys::syslog;

pub use crate::sys::syslog::Level;
pub use line::{LogLine, printable};

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
}

impl Log {
    pub fn open(destination: Destination) -> Log {
        let log = Log {
            destination,
            ident: Ident::Daemon,
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
        self.bytes(level, &line.to_bytes());
    }

    fn bytes(&self, level: Level, message: &[u8]) {
        if self.destination != Destination::Stderr {
            syslog::log_bytes(level, message);
        }
        if self.destination != Destination::Syslog {
            // The pid says which process logged: the daemon or one of its job children.
            let stamp = jiff::Zoned::now().strftime("%b %e %H:%M:%S");
            let mut line = format!(
                "{stamp} {}[{}]: ",
                self.ident.name().to_string_lossy(),
                crate::sys::process::own_pid()
            )
            .into_bytes();
            line.extend_from_slice(message);
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
