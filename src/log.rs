//! The daemon's log: Debian's message shape `(WHO) EVENT (DETAIL)` (research §2.7), sent to
//! syslog (ident `cron`, facility cron, with the pid) and/or to stderr for journald.
//!
//! Nothing else in the library prints; the destinations are chosen once from `--log`.

use std::io::Write;

use crate::sys::syslog::{self, Priority};

pub use crate::sys::syslog::Priority as Level;

/// Where log lines go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    Syslog,
    Stderr,
    Both,
}

/// The log. Copied into each job child (a fork), which then logs under its own pid.
#[derive(Debug, Clone, Copy)]
pub struct Log {
    destination: Destination,
}

impl Log {
    pub fn open(destination: Destination) -> Log {
        if destination != Destination::Stderr {
            syslog::open();
        }
        Log { destination }
    }

    /// SIGHUP: drop the syslog connection; the next message reconnects.
    pub fn reopen(&self) {
        if self.destination != Destination::Stderr {
            syslog::close();
            syslog::open();
        }
    }

    /// `(who) event (detail)` at `level`.
    pub fn event(&self, level: Priority, who: &str, event: &str, detail: &str) {
        self.line(level, &format!("({who}) {event} ({detail})"));
    }

    /// One raw message.
    pub fn line(&self, level: Priority, message: &str) {
        self.bytes(level, message.as_bytes());
    }

    /// One message built by `job::log_lines` (its bytes need not be UTF-8: a job's output with `-s`).
    pub fn job_line(&self, level: Priority, line: &crate::job::log_lines::LogLine) {
        self.bytes(level, &line.to_bytes());
    }

    /// One raw message as bytes.
    pub fn bytes(&self, level: Priority, message: &[u8]) {
        if self.destination != Destination::Stderr {
            syslog::log_bytes(level, message);
        }
        if self.destination != Destination::Syslog {
            // The pid says which process logged: the daemon or one of its job children.
            let stamp = jiff::Zoned::now().strftime("%b %e %H:%M:%S");
            let mut line =
                format!("{stamp} cron[{}]: ", crate::sys::process::own_pid()).into_bytes();
            line.extend_from_slice(message);
            line.push(b'\n');
            let _ = std::io::stderr().write_all(&line);
        }
    }

    pub fn info(&self, who: &str, event: &str, detail: &str) {
        self.event(Priority::Info, who, event, detail);
    }

    pub fn error(&self, who: &str, event: &str, detail: &str) {
        self.event(Priority::Error, who, event, detail);
    }
}

/// Bytes (user names, commands) as log text: valid UTF-8 as is, other bytes escaped.
pub fn text(bytes: &[u8]) -> String {
    bytes.escape_ascii_unless_utf8()
}

trait EscapeUnlessUtf8 {
    fn escape_ascii_unless_utf8(&self) -> String;
}

impl EscapeUnlessUtf8 for [u8] {
    fn escape_ascii_unless_utf8(&self) -> String {
        match std::str::from_utf8(self) {
            Ok(s) => s.to_string(),
            Err(_) => self.escape_ascii().to_string(),
        }
    }
}
