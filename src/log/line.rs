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
    /// Only the detail, without `(who) EVENT (…)`: the few messages Debian logs bare. A bare
    /// line may still know its user ([`LogLine::naming`]): syslog gets Debian's words alone,
    /// the other sinks the user and the entry too.
    bare: bool,
    /// Our words after the detail, `(who) EVENT (command) note`: the extensions' lines
    /// (`SKIP`, `TIMEOUT`) keep the command in parentheses, where filters for CMD find it.
    note: String,
    /// What the JSON log adds for a job's line (boxed: most lines have none).
    job: Option<Box<JobFields>>,
    /// The daemon speaking of itself, `(CRON) EVENT (detail)`: the JSON log names no user.
    daemon: bool,
}

/// A job's facts, for the JSON log (`--log-format json`); the text line does not show them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobFields {
    /// `FILE:LINE` of the entry.
    pub entry: Option<String>,
    /// The entry's id, as `cronctl list` and the run history give it.
    pub id: Option<String>,
    /// The command as written.
    pub command: Option<Vec<u8>>,
    /// The job's shell.
    pub pid: Option<u32>,
    pub exit_status: Option<i32>,
    pub signal: Option<i32>,
    pub duration_ms: Option<u64>,
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
            bare: false,
            note: String::new(),
            job: None,
            daemon: false,
        }
    }

    /// `(CRON) EVENT (detail)`: a line of the daemon about itself (or Debian's `(CRON) error`
    /// of a failed job). The text log names `CRON`, as Debian's does; the JSON log no user.
    pub fn daemon(event: impl Into<Cow<'static, str>>, detail: impl Into<Vec<u8>>) -> LogLine {
        LogLine {
            daemon: true,
            ..LogLine::new("CRON", event, detail)
        }
    }

    /// Whether this is one of the daemon's own lines ([`LogLine::daemon`]).
    pub fn is_daemon(&self) -> bool {
        self.daemon
    }

    /// This line with a job's facts for the JSON log.
    pub fn with_job(mut self, job: JobFields) -> LogLine {
        self.job = Some(Box::new(job));
        self
    }

    /// The job's facts, if any.
    pub fn job(&self) -> Option<&JobFields> {
        self.job.as_deref()
    }

    /// `who` and `EVENT`; `None` for a bare line.
    pub fn who_and_event(&self) -> Option<(&str, &str)> {
        (!self.bare).then(|| (self.who.as_str(), &*self.event))
    }

    /// The user a bare line names ([`LogLine::naming`]), for the JSON log.
    pub fn bare_user(&self) -> Option<&str> {
        (self.bare && !self.who.is_empty()).then_some(self.who.as_str())
    }

    /// A bare line that also names the job's user and its entry, for the sinks where the
    /// lines PAM's modules write themselves (with the user's name) never arrive: stderr in a
    /// container, the JSON log. Syslog still gets the text alone, as Debian logs it.
    pub fn naming(mut self, user: &[u8], job: JobFields) -> LogLine {
        debug_assert!(self.bare, "only a bare line lacks its user");
        self.who = printable(user);
        self.job = Some(Box::new(job));
        self
    }

    /// The message as the stderr sink writes it: [`LogLine::to_bytes`], and after a bare line
    /// that names its user, ` (user WHO, entry FILE:LINE)`; at most [`MAX_LINE`] bytes.
    pub fn to_bytes_named(&self) -> Vec<u8> {
        let mut v = self.to_bytes();
        let Some(user) = self.bare_user() else {
            return v;
        };
        let mut named = format!(" (user {user}");
        if let Some(entry) = self.job().and_then(|j| j.entry.as_deref()) {
            named.push_str(", entry ");
            named.push_str(&printable(entry.as_bytes()));
        }
        named.push(')');
        v.extend_from_slice(named.as_bytes());
        v.truncate(cut_point(&v, MAX_LINE));
        v
    }

    /// The detail and the note, as the JSON log's `message` (at most [`MAX_LINE`] bytes).
    pub fn message(&self) -> Vec<u8> {
        let mut v = self.detail[..cut_point(&self.detail, MAX_LINE)].to_vec();
        if !self.note.is_empty() {
            v.push(b' ');
            v.extend_from_slice(self.note.as_bytes());
        }
        v
    }

    /// This line with `note` after the detail (short words of ours, never input).
    pub fn with_note(mut self, note: impl Into<String>) -> LogLine {
        self.note = note.into();
        self
    }

    /// A message logged as it is, as Debian logs PAM's refusals (`pam_strerror`'s text, e.g.
    /// `User account has expired`); still at most [`MAX_LINE`].
    pub fn bare(text: impl Into<Vec<u8>>) -> LogLine {
        LogLine {
            who: String::new(),
            event: Cow::Borrowed(""),
            detail: text.into(),
            bare: true,
            note: String::new(),
            job: None,
            daemon: false,
        }
    }

    /// The message as bytes, at most [`MAX_LINE`]: a longer detail is cut and ends with
    /// [`CUT_MARK`].
    pub fn to_bytes(&self) -> Vec<u8> {
        if self.bare {
            if self.detail.len() <= MAX_LINE {
                return self.detail.clone();
            }
            let mut v = self.detail[..cut_point(&self.detail, MAX_LINE - CUT_MARK.len())].to_vec();
            v.extend_from_slice(CUT_MARK.as_bytes());
            return v;
        }
        let note = if self.note.is_empty() {
            0
        } else {
            self.note.len() + 1
        };
        let frame = self.who.len() + self.event.len() + 6 + note;
        let detail: &[u8] = if frame + self.detail.len() <= MAX_LINE {
            &self.detail
        } else {
            let room = MAX_LINE.saturating_sub(frame + CUT_MARK.len());
            &self.detail[..cut_point(&self.detail, room)]
        };
        let mut v = Vec::with_capacity(frame + detail.len() + CUT_MARK.len());
        v.push(b'(');
        v.extend_from_slice(self.who.as_bytes());
        v.extend_from_slice(b") ");
        v.extend_from_slice(self.event.as_bytes());
        v.extend_from_slice(b" (");
        v.extend_from_slice(detail);
        if detail.len() < self.detail.len() {
            v.extend_from_slice(CUT_MARK.as_bytes());
        }
        v.push(b')');
        if !self.note.is_empty() {
            v.push(b' ');
            v.extend_from_slice(self.note.as_bytes());
        }
        v
    }
}

/// The longest log line, in bytes: a job's output line, an echoed command or a long file name
/// can't make one line of 100 KB (journald's rate limit would then drop other users' lines).
pub const MAX_LINE: usize = 1024;

/// What ends a detail that was cut.
pub const CUT_MARK: &str = "...[cut]";

/// Where to cut `detail` to keep at most `room` bytes: not inside a UTF-8 character, nor inside
/// an escape that [`printable`] wrote (`^X`, `\ooo`), so what is kept reads the same.
fn cut_point(detail: &[u8], room: usize) -> usize {
    let mut end = room.min(detail.len());
    // Back to the start of a UTF-8 character (at most three continuation bytes).
    let mut steps = 0;
    while end > 0 && end < detail.len() && (detail[end] & 0xC0) == 0x80 && steps < 3 {
        end -= 1;
        steps += 1;
    }
    // A `^` or `\` with fewer than all its digits at the end: drop the partial escape.
    let kept = &detail[..end];
    if kept.ends_with(b"^") {
        return end - 1;
    }
    for digits in 0..=2 {
        if kept.len() > digits
            && kept[kept.len() - digits - 1] == b'\\'
            && kept[kept.len() - digits..].iter().all(u8::is_ascii_digit)
        {
            return end - digits - 1;
        }
    }
    end
}

impl fmt::Display for LogLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.to_bytes()))
    }
}

pub use crate::words::{count, is_hidden_control, printable};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mkprint_twice_is_mkprint_once() {
        let once = printable(b"jos\xe9\n\x7f");
        assert_eq!(printable(once.as_bytes()), once);
    }

    #[test]
    fn a_note_follows_the_detail_and_a_long_detail_is_cut_before_it() {
        let line =
            LogLine::new("alice", "SKIP", "sleep 100").with_note("still running since 10:00");
        assert_eq!(
            line.to_string(),
            "(alice) SKIP (sleep 100) still running since 10:00"
        );
        let long = LogLine::new("alice", "SKIP", "x".repeat(5000)).with_note("still running");
        let bytes = long.to_bytes();
        assert_eq!(bytes.len(), MAX_LINE);
        assert!(bytes.ends_with(b"...[cut]) still running"));
    }

    #[test]
    fn a_bare_line_is_its_text_alone_and_still_bounded() {
        assert_eq!(
            LogLine::bare("User account has expired").to_string(),
            "User account has expired"
        );
        let long = LogLine::bare(vec![b'x'; 5 * MAX_LINE]).to_bytes();
        assert_eq!(long.len(), MAX_LINE);
        assert!(long.ends_with(CUT_MARK.as_bytes()));
    }

    #[test]
    fn a_bare_line_that_names_its_user_is_debians_text_for_syslog_and_named_elsewhere() {
        let job = JobFields {
            entry: Some("crontabs/alice:3".into()),
            ..JobFields::default()
        };
        let line = LogLine::bare("Authentication failure").naming(b"alice", job);
        // What syslog gets: Debian's words, exactly.
        assert_eq!(line.to_bytes(), b"Authentication failure");
        assert_eq!(
            line.to_bytes_named(),
            b"Authentication failure (user alice, entry crontabs/alice:3)"
        );
        assert_eq!(line.bare_user(), Some("alice"));
        assert_eq!(line.who_and_event(), None);
        // Any other line is the same for every sink.
        let plain = LogLine::new("bob", "CMD", "date");
        assert_eq!(plain.to_bytes_named(), plain.to_bytes());
        assert_eq!(LogLine::bare("x").bare_user(), None);
        let long = LogLine::bare(vec![b'x'; 5 * MAX_LINE]).naming(b"alice", JobFields::default());
        assert!(long.to_bytes_named().len() <= MAX_LINE);
    }

    #[test]
    fn a_line_is_who_event_detail_with_the_who_through_mkprint() {
        assert_eq!(
            LogLine::daemon("INFO", "Shutting down").to_string(),
            "(CRON) INFO (Shutting down)"
        );
        assert_eq!(
            LogLine::new(b"jos\xe9", String::from("RELOAD"), "crontabs/x").to_bytes(),
            b"(jos\\351) RELOAD (crontabs/x)"
        );
    }

    #[test]
    fn a_long_detail_is_cut_to_the_line_limit_with_a_mark() {
        let line = LogLine::new("bob", "CMDOUT", "x".repeat(100_000)).to_bytes();
        assert_eq!(line.len(), MAX_LINE);
        assert!(line.starts_with(b"(bob) CMDOUT (xxx"));
        assert!(line.ends_with(b"x...[cut])"));
        // One byte under the limit is kept whole.
        let fits = "y".repeat(MAX_LINE - "(bob) CMDOUT ()".len());
        let line = LogLine::new("bob", "CMDOUT", fits.as_str()).to_bytes();
        assert_eq!(line.len(), MAX_LINE);
        assert!(!line.ends_with(b"[cut])"));
    }

    #[test]
    fn a_cut_never_splits_a_character_or_an_escape() {
        let room = MAX_LINE - "(bob) CMDOUT (".len() - CUT_MARK.len() - 1;
        for pad in 0..4 {
            // UTF-8: é is two bytes; the cut lands on each of its positions in turn.
            let detail = format!("{}{}", "a".repeat(room - pad), "é".repeat(600));
            let line = LogLine::new("bob", "CMDOUT", detail.as_str()).to_bytes();
            assert!(line.len() <= MAX_LINE);
            let body = &line[..line.len() - CUT_MARK.len() - 1];
            assert!(std::str::from_utf8(body).is_ok(), "pad {pad}");
            // mkprint escapes: \351 is four bytes.
            let detail = format!("{}{}", "a".repeat(room - pad), printable(&[0xe9; 600]));
            let line = LogLine::new("bob", "CMDOUT", detail.as_str()).to_bytes();
            let body = String::from_utf8(line[..line.len() - CUT_MARK.len() - 1].to_vec()).unwrap();
            let tail = body.rsplit('a').next().unwrap();
            assert_eq!(tail.len() % 4, 0, "pad {pad}: {tail:?}");
        }
    }

    #[test]
    fn the_detail_is_kept_as_given() {
        assert_eq!(
            LogLine::new(b"bob", "CMDOUT", &b"caf\xe9\t"[..]).to_bytes(),
            b"(bob) CMDOUT (caf\xe9\t)"
        );
    }
}
