//! The mail of a job's output (docs/design.md §6): who gets it, and the header written before the
//! output. Pure: [`plan`] looks at the job and its output and returns either a reason not to
//! mail or the recipients and header bytes; [`send`] (not pure) pipes them to the MTA, and the
//! daemon reads its locale's variables for [`charset_from_locale`].
//!
//! Rules, Debian's unless said otherwise:
//! - no mail when the output is empty, when MAILTO is set and empty, or with `-m off`;
//! - To: MAILTO (a comma list; each address becomes one sendmail argument) or the crontab's
//!   owner; From: MAILFROM or `root (Cron Daemon)`;
//! - MAILTO and MAILFROM must pass Debian's `safe_p` ([`crate::crontab::is_safe_address`]),
//!   and so must each comma-separated address, so that no address can look like a sendmail
//!   option. The crontab parser refuses a line that breaks it; here, an unsafe MAILTO still
//!   refuses the mail (`UNSAFE MAIL`), and an unsafe MAILFROM falls back to the default sender;
//! - `Subject: Cron <user@host> command`, plus ` (exit status N)` / ` (killed by signal N)`
//!   when the job failed; RFC 2047 encoded when it holds non-ASCII bytes;
//! - `MIME-Version: 1.0`, `Content-Type` (CONTENT_TYPE, else `text/plain; charset=` the daemon
//!   locale's codeset), `Content-Transfer-Encoding` (CONTENT_TRANSFER_ENCODING, else `8bit`),
//!   cronie's `Auto-Submitted: auto-generated` and `Precedence: bulk`, then one
//!   `X-Cron-Env: <NAME=value>` per variable of the job's environment, in order.
//!
//! Header injection: every byte that comes from a crontab and lands in a header goes through
//! [`one_line`], which turns CR, LF and NUL into spaces (Debian turns LF into a space in
//! CONTENT_TYPE; a lone CR is a line break to some MTAs, so it goes too).
//!
//! Charset under a C/POSIX locale: Debian declares US-ASCII even when the job printed UTF-8,
//! which mail readers then show as mojibake. We look at the output instead: all ASCII keeps the
//! locale's charset; valid UTF-8 is declared `UTF-8`; other 8-bit bytes `unknown-8bit`
//! (RFC 1428). A locale that names a charset is trusted as is.

pub mod send;

use crate::crontab::is_safe_address;
use crate::job::output::TextKind;
use crate::log::LogLine;
use crate::log::messages::{self, JobExit};
use std::ffi::OsString;
use std::path::PathBuf;

pub use send::{RunAs, deliver, deliver_as, mail_output, mail_output_as};

/// The arguments Debian gives sendmail (at [`crate::paths::SENDMAIL`] unless `--sendmail`)
/// before the recipients.
pub const SENDMAIL_ARGS: [&str; 4] = ["-FCronDaemon", "-i", "-B8BITMIME", "-oem"];

/// The From: header when MAILFROM is unset or empty.
pub const DEFAULT_FROM: &str = "root (Cron Daemon)";

/// How the daemon sends mail (`-m`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailCommand {
    /// `sendmail -FCronDaemon -i -B8BITMIME -oem <to...>` at this path.
    Sendmail(PathBuf),
    /// cronie's `-m CMD`: `/bin/sh -c CMD`, the message on its stdin. No recipients are added;
    /// the command finds them in the To: header (e.g. `sendmail -t`).
    Shell(OsString),
    /// `-m off`: never mail.
    Off,
}

/// What the daemon knows for every mail.
#[derive(Debug, Clone)]
pub struct MailConfig {
    /// The host in the subject: see [`subject_host`].
    pub host: Vec<u8>,
    /// The daemon locale's charset: see [`charset_from_locale`].
    pub charset: String,
    pub command: MailCommand,
}

/// What one job contributes.
#[derive(Debug, Clone, Copy)]
pub struct JobMail<'a> {
    /// The crontab owner's login name (the job's user).
    pub user: &'a [u8],
    /// The command as the shell runs it (`JobInput::command`: before the first `%`).
    pub command: &'a [u8],
    /// The job's environment, in the order it is exported; MAILTO, MAILFROM, CONTENT_TYPE and
    /// CONTENT_TRANSFER_ENCODING are read from it.
    pub env: &'a [(Vec<u8>, Vec<u8>)],
    pub exit: JobExit,
    /// `CRON_TIMEOUT` in seconds, when the job reached it: the subject says so.
    pub timed_out: Option<u32>,
    /// For a slot that did not run (`CRON_NOTIFY=failure|change`), its reason's code: the
    /// subject says so, and `exit` is not read.
    pub not_run: Option<&'a str>,
}

impl JobMail<'_> {
    fn var(&self, name: &[u8]) -> Option<&[u8]> {
        self.env
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_slice())
    }
}

/// The decision for one job's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Nothing to mail: the output is empty.
    Empty,
    /// MAILTO is set to the empty string.
    MailtoEmpty,
    /// `-m off`.
    Off,
    /// MAILTO fails the safe-address rule.
    Unsafe { value: Vec<u8> },
    /// Send `header` and then the output to `recipients` (sendmail arguments).
    Send {
        recipients: Vec<Vec<u8>>,
        header: Vec<u8>,
    },
}

/// How mailing went, for the job child to log ([`MailOutcome::log_line`]).
#[derive(Debug)]
pub enum MailOutcome {
    Sent {
        bytes: u64,
    },
    Empty,
    /// MAILTO="" or `-m off`: the user asked for no mail.
    Disabled,
    UnsafeAddress {
        value: Vec<u8>,
    },
    /// The sendmail path does not exist. The caller should log the output (CMDOUT lines)
    /// instead, so it is not lost.
    NoMta,
    /// The MTA exited non-zero or was killed; `status` is the raw wait status.
    MtaFailed {
        bytes: u64,
        status: i32,
    },
    /// The MTA could not be started, or its stdin failed other than by closing.
    MtaError(std::io::Error),
    /// The MTA did not take the message and exit within [`send::MTA_TIMEOUT`]: it was killed.
    /// The caller logs the output (CMDOUT lines), so it is not lost.
    MtaTimedOut {
        bytes: u64,
    },
}

impl MailOutcome {
    /// What the run's record says of the mail: sent, none asked for, or why it failed.
    pub fn as_recorded(&self) -> crate::history::Mail {
        use crate::history::Mail;
        match self {
            MailOutcome::Sent { .. } => Mail::Sent,
            MailOutcome::Empty | MailOutcome::Disabled => Mail::None,
            MailOutcome::UnsafeAddress { .. } => {
                Mail::Failed("MAILTO is not a safe address".into())
            }
            MailOutcome::NoMta => Mail::Failed("no MTA is installed".into()),
            MailOutcome::MtaFailed { status, .. } => {
                Mail::Failed(format!("the MTA failed (wait status {status})"))
            }
            MailOutcome::MtaTimedOut { .. } => Mail::Failed(format!(
                "the MTA did not finish within {} s",
                send::MTA_TIMEOUT.as_secs()
            )),
            MailOutcome::MtaError(e) => Mail::Failed(format!("can't run the MTA: {e}")),
        }
    }

    /// The Debian log line for this outcome, if there is one.
    pub fn log_line(&self, user: &[u8]) -> Option<LogLine> {
        match self {
            MailOutcome::Sent { .. } | MailOutcome::Empty | MailOutcome::Disabled => None,
            MailOutcome::UnsafeAddress { value } => Some(messages::unsafe_mail_line(user, value)),
            MailOutcome::NoMta => Some(messages::no_mta_line()),
            MailOutcome::MtaFailed { bytes, status } => {
                Some(messages::mta_status_line(user, *bytes, *status))
            }
            MailOutcome::MtaTimedOut { bytes } => Some(LogLine::new(
                user,
                "MAIL",
                format!(
                    "the MTA did not finish within {} s ({} written): killed; the output \
                     follows in the log",
                    send::MTA_TIMEOUT.as_secs(),
                    crate::log::line::count(*bytes, "byte", "bytes")
                ),
            )),
            MailOutcome::MtaError(e) => Some(LogLine::new(
                user,
                "MAIL",
                format!("can't run the MTA: {e}"),
            )),
        }
    }
}

/// The host name as the subject shows it: up to the first `.` (Debian's default), or whole
/// with `-n`.
pub fn subject_host(hostname: &[u8], full: bool) -> Vec<u8> {
    if full {
        return hostname.to_vec();
    }
    hostname
        .split(|&b| b == b'.')
        .next()
        .unwrap_or(b"")
        .to_vec()
}

/// The charset of the daemon's locale, from the variables glibc reads for LC_CTYPE: the first
/// non-empty of LC_ALL, LC_CTYPE, LANG. `C`, `POSIX` or nothing → `US-ASCII`; `xx_YY.CODESET`
/// → the codeset (`utf8` spelled `UTF-8`, `iso88591` spelled `ISO-8859-1`); a locale with no
/// codeset (`de_DE`) → glibc's default for those, `ISO-8859-1`.
pub fn charset_from_locale(
    lc_all: Option<&str>,
    lc_ctype: Option<&str>,
    lang: Option<&str>,
) -> String {
    let locale = [lc_all, lc_ctype, lang]
        .into_iter()
        .flatten()
        .find(|v| !v.is_empty());
    let Some(locale) = locale else {
        return "US-ASCII".to_string();
    };
    let no_modifier = locale.split('@').next().unwrap_or("");
    if no_modifier == "C" || no_modifier == "POSIX" {
        return "US-ASCII".to_string();
    }
    match no_modifier.split_once('.') {
        None => "ISO-8859-1".to_string(),
        Some((_, codeset)) => normalise_codeset(codeset),
    }
}

fn normalise_codeset(codeset: &str) -> String {
    let squashed: String = codeset
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect::<String>()
        .to_ascii_lowercase();
    match squashed.as_str() {
        "utf8" => "UTF-8".to_string(),
        "" => "US-ASCII".to_string(),
        s if s.starts_with("iso8859") && s.len() > 7 => format!("ISO-8859-{}", &s[7..]),
        _ => codeset.to_ascii_uppercase(),
    }
}

/// Header-safe bytes: CR, LF and NUL become spaces, so nothing a crontab sets can start a new
/// header line.
pub fn one_line(bytes: &[u8]) -> Vec<u8> {
    bytes
        .iter()
        .map(|&b| {
            if matches!(b, b'\r' | b'\n' | 0) {
                b' '
            } else {
                b
            }
        })
        .collect()
}

/// Decides whether and how to mail one job's output.
pub fn plan(job: &JobMail<'_>, config: &MailConfig, output_empty: bool, kind: TextKind) -> Plan {
    if output_empty {
        return Plan::Empty;
    }
    let to = match job.var(b"MAILTO") {
        Some([]) => return Plan::MailtoEmpty,
        Some(v) => v,
        None => job.user,
    };
    if config.command == MailCommand::Off {
        return Plan::Off;
    }
    let recipients: Vec<Vec<u8>> = to
        .split(|&b| b == b',')
        .filter(|a| !a.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    if !is_safe_address(to)
        || recipients.is_empty()
        || !recipients.iter().all(|a| is_safe_address(a))
    {
        return Plan::Unsafe { value: to.to_vec() };
    }
    // An unsafe MAILFROM costs the sender, not the mail (Debian drops the mail). The parser
    // refuses such a line already, so this is the second look.
    let from = match job.var(b"MAILFROM") {
        Some(v) if is_safe_address(v) => v,
        _ => DEFAULT_FROM.as_bytes(),
    };
    Plan::Send {
        header: header(job, config, from, to, kind),
        recipients,
    }
}

fn header(
    job: &JobMail<'_>,
    config: &MailConfig,
    from: &[u8],
    to: &[u8],
    kind: TextKind,
) -> Vec<u8> {
    let mut h = Vec::with_capacity(1024);
    push_field(&mut h, "From", from);
    push_field(&mut h, "To", to);

    let mut subject = b"Cron <".to_vec();
    subject.extend_from_slice(&one_line(job.user));
    subject.push(b'@');
    subject.extend_from_slice(&one_line(&config.host));
    subject.extend_from_slice(b"> ");
    subject.extend_from_slice(&one_line(job.command));
    if let Some(code) = job.not_run {
        subject.extend_from_slice(b" (did not run: ");
        subject.extend_from_slice(&one_line(code.as_bytes()));
        subject.push(b')');
    } else {
        if let Some(seconds) = job.timed_out {
            let limit = crate::crontab::policy::Duration(seconds);
            subject.extend_from_slice(format!(" (timed out after {limit})").as_bytes());
        }
        if let Some(suffix) = job.exit.subject_suffix() {
            subject.extend_from_slice(suffix.as_bytes());
        }
    }
    h.extend_from_slice(&subject_field(&subject, &config.charset));

    push_field(&mut h, "MIME-Version", b"1.0");
    match job.var(b"CONTENT_TYPE") {
        Some(ct) if !ct.is_empty() => push_field(&mut h, "Content-Type", &one_line(ct)),
        _ => {
            let charset = match (kind, config.charset.as_str()) {
                (TextKind::Utf8, "US-ASCII") => "UTF-8",
                (TextKind::Other8Bit, "US-ASCII") => "unknown-8bit",
                (_, cs) => cs,
            };
            push_field(
                &mut h,
                "Content-Type",
                format!("text/plain; charset={charset}").as_bytes(),
            );
        }
    }
    match job.var(b"CONTENT_TRANSFER_ENCODING") {
        Some(cte) if !cte.is_empty() => {
            push_field(&mut h, "Content-Transfer-Encoding", &one_line(cte))
        }
        _ => push_field(&mut h, "Content-Transfer-Encoding", b"8bit"),
    }
    push_field(&mut h, "Auto-Submitted", b"auto-generated");
    push_field(&mut h, "Precedence", b"bulk");
    for (name, value) in job.env {
        let mut v = b"<".to_vec();
        v.extend_from_slice(&one_line(name));
        v.push(b'=');
        v.extend_from_slice(&one_line(value));
        v.push(b'>');
        push_field(&mut h, "X-Cron-Env", &v);
    }
    h.push(b'\n');
    h
}

fn push_field(h: &mut Vec<u8>, name: &str, value: &[u8]) {
    h.extend_from_slice(name.as_bytes());
    h.extend_from_slice(b": ");
    h.extend_from_slice(value);
    h.push(b'\n');
}

/// The longest header line we write when we can choose where to break (RFC 5322 §2.1.1).
const FOLD_AT: usize = 78;

/// `Subject: ...\n`, folded at spaces when long, or RFC 2047 encoded when not ASCII.
fn subject_field(value: &[u8], locale_charset: &str) -> Vec<u8> {
    if value.is_ascii() {
        return fold_ascii("Subject: ", value);
    }
    let label = if std::str::from_utf8(value).is_ok() {
        "UTF-8"
    } else if locale_charset != "US-ASCII" && locale_charset != "UTF-8" {
        locale_charset
    } else {
        "unknown-8bit"
    };
    encoded_words("Subject: ", value, label)
}

/// Folds before spaces so no line exceeds [`FOLD_AT`] where a space allows it; never leaves a
/// line of only white space.
fn fold_ascii(prefix: &str, value: &[u8]) -> Vec<u8> {
    let mut out = prefix.as_bytes().to_vec();
    let mut line_len = prefix.len();
    let mut line_has_text = false;
    let mut start = 0;
    while start < value.len() {
        // A segment: optional leading spaces, then up to the next space.
        let mut end = start;
        while end < value.len() && value[end] == b' ' {
            end += 1;
        }
        while end < value.len() && value[end] != b' ' {
            end += 1;
        }
        let seg = &value[start..end];
        if line_has_text && line_len + seg.len() > FOLD_AT && seg.first() == Some(&b' ') {
            out.push(b'\n');
            line_len = 0;
            line_has_text = false;
        }
        out.extend_from_slice(seg);
        line_len += seg.len();
        line_has_text |= seg.iter().any(|&b| b != b' ');
        start = end;
    }
    out.push(b'\n');
    out
}

/// RFC 2047 `B` encoded words, each on its own line (after the first) and short enough that
/// every line fits [`FOLD_AT`]; a UTF-8 character is never split between two words.
fn encoded_words(prefix: &str, value: &[u8], charset: &str) -> Vec<u8> {
    let overhead = "=?".len() + charset.len() + "?B?".len() + "?=".len();
    let b64_room = FOLD_AT.saturating_sub(prefix.len() + overhead).max(8);
    let max_bytes = (b64_room / 4 * 3).max(6);
    let utf8 = charset == "UTF-8";
    let mut out = prefix.as_bytes().to_vec();
    let mut rest = value;
    let mut first = true;
    while !rest.is_empty() {
        let mut take = max_bytes.min(rest.len());
        if utf8 {
            // Back up to a character boundary: continuation bytes are 0b10xxxxxx.
            while take < rest.len() && take > 0 && rest[take] & 0xC0 == 0x80 {
                take -= 1;
            }
        }
        if !first {
            out.extend_from_slice(b"\n ");
        }
        first = false;
        out.extend_from_slice(b"=?");
        out.extend_from_slice(charset.as_bytes());
        out.extend_from_slice(b"?B?");
        out.extend_from_slice(base64(&rest[..take]).as_bytes());
        out.extend_from_slice(b"?=");
        rest = &rest[take..];
    }
    out.push(b'\n');
    out
}

/// Standard base64 with padding (RFC 4648 §4), from the `base64` crate (no dependencies of its
/// own, and already in the workspace through cronctl's PostgreSQL client).
fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests;
