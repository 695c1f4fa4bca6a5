//! The one shape of every cron log message, `(who) EVENT (detail)` as Vixie's `log_it` writes
//! it, and the one rendering of bytes that are not printable ASCII, Vixie's `mkprint`. The
//! daemon, the job child and crontab(1) all build their messages here, so a user name reads the
//! same in every line (Debian's log filters match on it). Pure: this file formats and never
//! writes; the sinks are in the parent module (and crontab(1)'s own syslog ident).

use std::borrow::Cow;
use std::fmt;

/// One syslog message body, `(who) EVENT (detail)`. `who` is a user name, `*system*…` or
/// `CRON`, always shown through [`printable`]; the detail is kept as given (a job's output line
/// with `-s` goes out as it is), so a caller puts names and commands through [`printable`]
/// itself. The bytes are what goes to syslog (no newline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    who: String,
    event: Cow<'static, str>,
    detail: Vec<u8>,
}

impl LogLine {
    pub fn new(
        who: impl AsRef<[u8]>,
        event: impl Into<Cow<'static, str>>,
        detail: impl Into<Vec<u8>>,
    ) -> LogLine {
        LogLine {
            who: printable(who.as_ref()),
            event: event.into(),
            detail: detail.into(),
        }
    }

    /// The message as bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.who.len() + self.event.len() + self.detail.len() + 6);
        v.push(b'(');
        v.extend_from_slice(self.who.as_bytes());
        v.extend_from_slice(b") ");
        v.extend_from_slice(self.event.as_bytes());
        v.extend_from_slice(b" (");
        v.extend_from_slice(&self.detail);
        v.push(b')');
        v
    }
}

impl fmt::Display for LogLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_bytes()))
    }
}

/// Vixie's `mkprint`: printable ASCII as is, control bytes as `^X`, DEL as `^?`, bytes above
/// 127 as a backslash and three octal digits. Its result is printable ASCII, so rendering twice
/// changes nothing.
pub fn printable(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            0..=31 => {
                s.push('^');
                s.push((b + b'@') as char);
            }
            32..=126 => s.push(b as char),
            127 => s.push_str("^?"),
            _ => s.push_str(&format!("\\{b:03o}")),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkprint_shows_control_bytes_as_carets_and_high_bytes_in_octal() {
        assert_eq!(printable(b"a\tb\x7f\xc3\xa9"), "a^Ib^?\\303\\251");
        assert_eq!(printable(b"\0\x1f"), "^@^_");
        assert_eq!(printable(b"plain ASCII ~ \\ ok"), "plain ASCII ~ \\ ok");
    }

    #[test]
    fn mkprint_twice_is_mkprint_once() {
        let once = printable(b"jos\xe9\n\x7f");
        assert_eq!(printable(once.as_bytes()), once);
    }

    #[test]
    fn a_line_is_who_event_detail_with_the_who_through_mkprint() {
        assert_eq!(
            LogLine::new("CRON", "INFO", "Shutting down").to_string(),
            "(CRON) INFO (Shutting down)"
        );
        assert_eq!(
            LogLine::new(b"jos\xe9", String::from("RELOAD"), "crontabs/x").to_bytes(),
            b"(jos\\351) RELOAD (crontabs/x)"
        );
    }

    #[test]
    fn the_detail_is_kept_as_given() {
        assert_eq!(
            LogLine::new(b"bob", "CMDOUT", &b"caf\xe9\t"[..]).to_bytes(),
            b"(bob) CMDOUT (caf\xe9\t)"
        );
    }
}
