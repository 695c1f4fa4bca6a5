//! `--log-format json`: each message as one JSON object on one line, for log collectors that
//! read structure (a container platform, journald's fields, Loki). Pure: the caller passes the
//! time, host, logger and level; this only renders.
//!
//! ```text
//! {"time":"2026-11-21T10:00:00.004+01:00","host":"vm","source":"CRON[4242]","level":"info",
//!  "user":"alice","event":"CMD","message":"date","entry":"crontabs/alice:3","command":"date",
//!  "pid":4243}
//! ```
//!
//! Always: `time` (RFC 3339, the daemon's zone, milliseconds), `host`, `source` (the syslog
//! tag: `cron[PID]` the daemon, `CRON[PID]` a job child), `level`, `message` (the text line's
//! detail and note). `event` unless the line is bare; `user` on the lines of a user's job or
//! file, never on the daemon's own (the text log's `(CRON)`). A job's lines add what they
//! know: `entry` (`FILE:LINE`), `command`, `pid` (the job's shell), `exit_status` or `signal`,
//! `duration_ms`. Bytes that are not UTF-8 become U+FFFD; control characters are escaped.
//! [`KEYS`] and [`EVENTS`] are this schema, as crond(8) documents it.

use super::line::{JobFields, LogLine};
use crate::types::Level;

/// The type of a key's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    String,
    /// A JSON number without a fraction.
    Integer,
}

/// One key an object may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub name: &'static str,
    pub kind: Kind,
    /// In every object.
    pub always: bool,
}

const fn key(name: &'static str, kind: Kind, always: bool) -> Key {
    Key { name, kind, always }
}

/// Every key an object may have, in the order they are written.
pub const KEYS: &[Key] = &[
    key("time", Kind::String, true),
    key("host", Kind::String, true),
    key("source", Kind::String, true),
    key("level", Kind::String, true),
    key("user", Kind::String, false),
    key("event", Kind::String, false),
    key("message", Kind::String, true),
    key("entry", Kind::String, false),
    key("id", Kind::String, false),
    key("command", Kind::String, false),
    key("pid", Kind::Integer, false),
    key("exit_status", Kind::Integer, false),
    key("signal", Kind::Integer, false),
    key("duration_ms", Kind::Integer, false),
];

/// The values of `level`.
pub const LEVELS: &[&str] = &["error", "warning", "notice", "info"];

/// The values of `event`: Debian's and cronie's words (`error` and `info` are Debian's own
/// lower-case lines), a file refused for its owner, mode or links, and our extensions.
pub const EVENTS: &[&str] = &[
    "CMD",
    "END",
    "CMDOUT",
    "MAIL",
    "UNSAFE MAIL",
    "NOTIFY",
    "OUTPUT",
    "TIMEOUT",
    "SKIP",
    "WAIT",
    "LATE",
    "RETRY",
    "RETRY DROPPED",
    "FORK FAILED",
    "RUN",
    "PAUSE",
    "RESUME",
    "MISSED",
    "CLUSTER",
    "RELOAD",
    "ORPHAN",
    "NOT A REGULAR FILE",
    "INSECURE MODE (mode 0600 expected)",
    "INSECURE MODE (group/other writable)",
    "WRONG FILE OWNER",
    "WRONG SYMLINK OWNER",
    "NUMBER OF HARD LINKS > 1",
    "INSECURE DIRECTORY (other writable, not sticky)",
    "STARTUP",
    "DEATH",
    "INFO",
    "NOTICE",
    "WARNING",
    "ERROR",
    "info",
    "error",
];

/// What a rendered object says besides the line itself.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    pub time: &'a str,
    pub host: &'a str,
    /// `cron[PID]` or `CRON[PID]`.
    pub source: &'a str,
    pub level: Level,
}

/// The object for one line, without a newline.
pub fn render(line: &LogLine, frame: &Frame<'_>) -> Vec<u8> {
    let mut out = String::with_capacity(256);
    out.push('{');
    field(&mut out, "time", frame.time.as_bytes());
    field(&mut out, "host", frame.host.as_bytes());
    field(&mut out, "source", frame.source.as_bytes());
    field(&mut out, "level", level_name(frame.level).as_bytes());
    if let Some((who, event)) = line.who_and_event() {
        if !line.is_daemon() {
            field(&mut out, "user", who.as_bytes());
        }
        field(&mut out, "event", event.as_bytes());
    } else if let Some(who) = line.bare_user() {
        field(&mut out, "user", who.as_bytes());
    }
    field(&mut out, "message", &line.message());
    if let Some(job) = line.job() {
        job_fields(&mut out, job);
    }
    out.push('}');
    out.into_bytes()
}

fn job_fields(out: &mut String, job: &JobFields) {
    if let Some(entry) = &job.entry {
        field(out, "entry", entry.as_bytes());
    }
    if let Some(id) = &job.id {
        field(out, "id", id.as_bytes());
    }
    if let Some(command) = &job.command {
        field(out, "command", command);
    }
    let numbers = [
        ("pid", job.pid.map(i64::from)),
        ("exit_status", job.exit_status.map(i64::from)),
        ("signal", job.signal.map(i64::from)),
        ("duration_ms", job.duration_ms.map(|d| d as i64)),
    ];
    for (name, value) in numbers {
        if let Some(value) = value {
            out.push_str(&format!(",\"{name}\":{value}"));
        }
    }
}

fn level_name(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warning => "warning",
        Level::Notice => "notice",
        Level::Info => "info",
    }
}

/// `,"name":"value"` (no comma before the first field).
fn field(out: &mut String, name: &str, value: &[u8]) {
    if !out.ends_with('{') {
        out.push(',');
    }
    out.push('"');
    out.push_str(name);
    out.push_str("\":");
    string(out, &String::from_utf8_lossy(value));
}

/// A JSON string: quotes, backslashes and control characters escaped, the rest as it is.
pub fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            // Control characters (C1 too: U+009B starts an escape sequence on some
            // terminals), bidirectional and invisible format characters: a reader's terminal
            // shows the escape, not what the character would do to the line.
            c if crate::log::line::is_hidden_control(c) => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            // Line and paragraph separators end a line for some JavaScript readers.
            '\u{2028}' | '\u{2029}' => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(level: Level) -> Frame<'static> {
        Frame {
            time: "2026-11-21T10:00:00.004+01:00",
            host: "vm",
            source: "CRON[4242]",
            level,
        }
    }

    #[test]
    fn a_job_line_carries_its_entry_id_command_pid_status_and_duration() {
        let line = LogLine::new("alice", "END", "date").with_job(JobFields {
            entry: Some("crontabs/alice:3".into()),
            id: Some("55a1449ee9d3".into()),
            command: Some(b"date".to_vec()),
            pid: Some(4243),
            exit_status: Some(0),
            signal: None,
            duration_ms: Some(12),
        });
        assert_eq!(
            String::from_utf8(render(&line, &frame(Level::Info))).unwrap(),
            concat!(
                r#"{"time":"2026-11-21T10:00:00.004+01:00","host":"vm","source":"CRON[4242]","#,
                r#""level":"info","user":"alice","event":"END","message":"date","#,
                r#""entry":"crontabs/alice:3","id":"55a1449ee9d3","command":"date","pid":4243,"#,
                r#""exit_status":0,"#,
                r#""duration_ms":12}"#
            )
        );
    }

    #[test]
    fn strings_are_escaped_and_bytes_that_are_not_utf8_replaced() {
        let line = LogLine::new("bob", "CMD", "x").with_job(JobFields {
            command: Some(b"a\"b\\c\n\x01\xff".to_vec()),
            ..JobFields::default()
        });
        let text = String::from_utf8(render(&line, &frame(Level::Error))).unwrap();
        let expected = format!(r#""command":"a\"b\\c\n\u0001{}""#, '\u{fffd}');
        assert!(text.contains(&expected), "{text}");
        assert!(text.contains(r#""level":"error""#));
    }

    #[test]
    fn a_bare_line_has_no_user_or_event_and_a_note_joins_the_message() {
        let bare = LogLine::bare("User account has expired");
        let text = String::from_utf8(render(&bare, &frame(Level::Warning))).unwrap();
        assert!(
            !text.contains("\"user\"") && !text.contains("\"event\""),
            "{text}"
        );
        assert!(text.contains(r#""message":"User account has expired""#));
        let noted =
            LogLine::new("alice", "SKIP", "sleep 100").with_note("still running since 10:00");
        let text = String::from_utf8(render(&noted, &frame(Level::Info))).unwrap();
        assert!(
            text.contains(r#""message":"sleep 100 still running since 10:00""#),
            "{text}"
        );
    }
}
