//! What the history store records: one [`Outcome`] per slot of an entry (per scheduled time,
//! and one per manual and catch-up run), and the messages that carry outcomes and questions to
//! the history writer (`cronctl history-writer`, a process of its own that holds the SQLite
//! file: the daemon links no database code). Pure: values and their bytes only.
//!
//! A message is one datagram of a `SOCK_SEQPACKET` socket, at most [`MAX_MESSAGE`] bytes: so
//! many job children can write on one socket and no message is ever cut or mixed with
//! another. Its bytes are fields, each `NAME LEN\n` then `LEN` bytes then `\n`; a reader skips
//! a name it does not know, so either side may grow a field.
//!
//! Three kinds of message (the field `kind`):
//! * `outcome` ([`Outcome::encode`]): from a job child when its run has ended (or when nothing
//!   of it ran: the user unknown, PAM refused), and from the daemon for a slot it did not start
//!   (skipped for an overlap, missed while down, a clock step, stopping, paused, another host).
//! * `query` ([`Query::encode`]): from the daemon, with a client's connection passed beside it
//!   (`SCM_RIGHTS`): the writer answers on that connection as the daemon answers its own
//!   requests (`OK` or `ERROR message`, then the rows) and closes it. The daemon has checked
//!   who asks; the query says what they may see.
//! * `gap` ([`Gap`]): from the daemon, when outcomes were lost on their way (the writer was
//!   down, the queue full): history shows the gap as a gap.
//! * `log` ([`LogMessage`]): from the writer to the daemon, a line for the daemon's log (the
//!   writer has no log of its own).

pub mod notify;
pub mod query;
pub mod retry;
mod wire;

use crate::cluster::entry_id::EntryKey;

pub use query::{Asked, Query};
pub use wire::{Fields, WireError};

/// The most bytes of one message: under a Unix socket's default send buffer (208 KiB), so a
/// message always fits whole.
pub const MAX_MESSAGE: usize = 192 * 1024;

/// By default, the first and the last this many bytes of a run's output are kept.
pub const DEFAULT_KEEP_OUTPUT: u64 = 32 * 1024;

/// The most `--history-output` may keep of each end of a run's output (a message must hold
/// both ends with room for the rest).
pub const MAX_KEEP_OUTPUT: u64 = 64 * 1024;

/// The longest command a record keeps (the rest is cut, at a character's end).
pub const MAX_COMMAND: usize = 1024;

/// What made the run, or the slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Its schedule's time came (`@every` included).
    Schedule,
    /// `CRON_MISSED=once` made up a run missed while the daemon was down or the clock jumped.
    CatchUp,
    /// `cronctl run`.
    Manual,
    /// `@reboot`.
    Reboot,
    /// `CRON_CLUSTER_RERUN=unknown`: started again on this host because the host that first
    /// started it died before its end was written.
    Rerun,
}

impl Trigger {
    pub const ALL: [Trigger; 5] = [
        Trigger::Schedule,
        Trigger::CatchUp,
        Trigger::Manual,
        Trigger::Reboot,
        Trigger::Rerun,
    ];

    /// The word records and `cronctl history --json` use.
    pub fn code(self) -> &'static str {
        match self {
            Trigger::Schedule => "schedule",
            Trigger::CatchUp => "catch-up",
            Trigger::Manual => "manual",
            Trigger::Reboot => "reboot",
            Trigger::Rerun => "rerun",
        }
    }

    pub fn parse(code: &str) -> Option<Trigger> {
        Trigger::ALL.into_iter().find(|t| t.code() == code)
    }
}

/// Why a slot did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// `CRON_OVERLAP=skip`: the entry's previous run was still running.
    Overlap,
    /// Missed while the daemon was down or the machine asleep (`CRON_MISSED` says what was
    /// made up).
    Missed,
    /// The clock was stepped over it.
    ClockStep,
    /// No process could be made for it (by the daemon, or by its job child for its shell)
    /// until its entry's next run came, which took its place.
    ForkFailed,
    /// Its user has no passwd entry (or is no longer the uid its crontab was checked for).
    UserUnknown,
    /// PAM refused the session, or the account has expired.
    Refused,
    /// Paused on this host or in its cluster (`cronctl pause`).
    Paused,
    /// Another host of its cluster ran it.
    OtherHost,
    /// The claim on it was lost before it started.
    ClaimLost,
    /// The daemon was stopping.
    Stopping,
    /// Its start came later than the threshold after its time.
    Late,
    /// Its shell could not be started, or its user's ids not taken.
    NotStarted,
    /// Cluster: the host that started it stopped before its end was written, so whether it
    /// ran to its end, and how, is not known.
    Unknown,
}

impl Reason {
    pub const ALL: [Reason; 13] = [
        Reason::Overlap,
        Reason::Missed,
        Reason::ClockStep,
        Reason::ForkFailed,
        Reason::UserUnknown,
        Reason::Refused,
        Reason::Paused,
        Reason::OtherHost,
        Reason::ClaimLost,
        Reason::Stopping,
        Reason::Late,
        Reason::NotStarted,
        Reason::Unknown,
    ];

    /// The reason's code, as records, metrics and `--json` have it.
    pub fn code(self) -> &'static str {
        match self {
            Reason::Overlap => "overlap",
            Reason::Missed => "missed",
            Reason::ClockStep => "clock-step",
            Reason::ForkFailed => "fork-failed",
            Reason::UserUnknown => "user-unknown",
            Reason::Refused => "refused",
            Reason::Paused => "paused",
            Reason::OtherHost => "other-host",
            Reason::ClaimLost => "claim-lost",
            Reason::Stopping => "stopping",
            Reason::Late => "late",
            Reason::NotStarted => "not-started",
            Reason::Unknown => "unknown",
        }
    }

    pub fn parse(code: &str) -> Option<Reason> {
        Reason::ALL.into_iter().find(|r| r.code() == code)
    }
}

/// Which attempt of its slot a run is (`CRON_RETRY`): `number` of `of`, from 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attempt {
    pub number: u8,
    pub of: u8,
}

impl Attempt {
    /// The attempt after this one, if this is not the last.
    pub fn next(self) -> Option<Attempt> {
        (self.number < self.of).then_some(Attempt {
            number: self.number + 1,
            ..self
        })
    }
}

/// How a run's shell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Exited(i32),
    Signaled(i32),
}

/// What became of the mail of a run's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mail {
    /// No mail: no output, `MAILTO=""`, or the output went to the log (`-s`).
    None,
    /// The MTA took it (exit 0).
    Sent,
    /// The MTA could not be run, failed or timed out: the words say which (the output went to
    /// the log instead).
    Failed(String),
}

/// A run that ran.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    pub ended_ms: i64,
    pub end: End,
    /// `CRON_TIMEOUT` ended it.
    pub timed_out: bool,
    /// CPU time of the job's processes, in microseconds (`RUSAGE_CHILDREN` in the job child).
    pub user_us: u64,
    pub system_us: u64,
    /// The largest resident set of the job's processes, in KiB.
    pub max_rss_kib: u64,
    /// Every byte the job printed (carriage returns dropped, as mail has them), kept or not.
    pub output_bytes: u64,
    /// The first bytes of the output kept (all of it when it fits).
    pub head: Vec<u8>,
    /// The last bytes kept, when the output is longer than the head and the tail together
    /// (empty otherwise): what lies between is `output_bytes` less both.
    pub tail: Vec<u8>,
    pub mail: Mail,
}

/// What became of a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Result {
    Ran(Ran),
    NotRun { reason: Reason, words: String },
}

/// A cluster entry's run (`CRON_CLUSTER`): its cluster, its id on every host, and the minute
/// its claim in the cluster database names, so the record can be matched with that claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterRun {
    pub cluster: String,
    pub entry: EntryKey,
    /// The claim's minute, in Unix seconds: `None` for a run never claimed (`cronctl run`).
    pub minute: Option<i64>,
}

/// One slot's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// The entry's id, as `cronctl list` shows it (12 hex digits).
    pub entry: String,
    /// `FILE:LINE`, as the user edits it.
    pub place: String,
    /// The user the job runs as.
    pub user: String,
    /// The uid its crontab was checked for (a user's crontab, a `--crontab` file); `None` for a
    /// system file's line. Who may read the outcome: root, and the user of that uid (or, for a
    /// system line, the user of that name), as `cronctl list` decides.
    pub owner_uid: Option<u32>,
    pub command: String,
    pub trigger: Trigger,
    /// The scheduled minute, in Unix seconds (`None`: a manual run, `@reboot`).
    pub slot: Option<i64>,
    pub host: String,
    /// For a run, its start; for a slot that did not run, when that was decided.
    pub at_ms: i64,
    /// For a cluster entry: which, and its claim.
    pub cluster: Option<ClusterRun>,
    /// For a run of an entry with `CRON_RETRY`: which attempt of its slot it is.
    pub attempt: Option<Attempt>,
    pub result: Result,
}

impl Outcome {
    /// Whether it counts as a failure (`cronctl history --failed`): it did not run (but for a
    /// cluster run that another host ran: the entry did run), it exited non-zero, a signal or
    /// its time limit ended it.
    pub fn failed(&self) -> bool {
        match &self.result {
            Result::Ran(ran) => ran.timed_out || ran.end != End::Exited(0),
            Result::NotRun { reason, .. } => *reason != Reason::OtherHost,
        }
    }

    /// The message that carries it, cut to [`MAX_MESSAGE`] (the command and the output's ends
    /// give room first).
    pub fn encode(&self) -> Vec<u8> {
        let mut m = wire::Writer::new("outcome");
        m.text("entry", &self.entry);
        m.text("place", &self.place);
        m.text("user", &self.user);
        if let Some(uid) = self.owner_uid {
            m.number("owner_uid", i64::from(uid));
        }
        m.text(
            "command",
            crate::words::cut_at_char(&self.command, MAX_COMMAND),
        );
        m.text("trigger", self.trigger.code());
        if let Some(slot) = self.slot {
            m.number("slot", slot);
        }
        m.text("host", &self.host);
        m.number("at_ms", self.at_ms);
        if let Some(c) = &self.cluster {
            m.text("cluster", &c.cluster);
            m.text("cluster_entry", &c.entry.to_string());
            if let Some(minute) = c.minute {
                m.number("cluster_minute", minute);
            }
        }
        if let Some(a) = self.attempt {
            m.number("attempt", i64::from(a.number));
            m.number("attempts", i64::from(a.of));
        }
        match &self.result {
            Result::NotRun { reason, words } => {
                m.text("reason", reason.code());
                m.text("words", crate::words::cut_at_char(words, MAX_COMMAND));
            }
            Result::Ran(ran) => {
                m.number("ended_ms", ran.ended_ms);
                match ran.end {
                    End::Exited(code) => m.number("exit", i64::from(code)),
                    End::Signaled(signal) => m.number("signal", i64::from(signal)),
                }
                if ran.timed_out {
                    m.number("timed_out", 1);
                }
                m.number("user_us", ran.user_us as i64);
                m.number("system_us", ran.system_us as i64);
                m.number("max_rss_kib", ran.max_rss_kib as i64);
                m.number("output_bytes", ran.output_bytes as i64);
                match &ran.mail {
                    Mail::None => {}
                    Mail::Sent => m.text("mail", "sent"),
                    Mail::Failed(words) => {
                        m.text("mail", "failed");
                        m.text("mail_words", crate::words::cut_at_char(words, MAX_COMMAND));
                    }
                }
                // The output last: what a message has no room for is cut from its ends'
                // middle, the head's end and the tail's start.
                let room = MAX_MESSAGE.saturating_sub(m.len() + 64);
                let head = &ran.head[..ran.head.len().min(room)];
                let room = room - head.len();
                let tail = &ran.tail[ran.tail.len() - ran.tail.len().min(room)..];
                m.bytes("head", head);
                m.bytes("tail", tail);
            }
        }
        m.finish()
    }

    /// An `outcome` message back into its value.
    pub fn decode(fields: &Fields<'_>) -> std::result::Result<Outcome, WireError> {
        let text = |name| fields.text(name);
        let entry = text("entry")?.ok_or(WireError::Missing("entry"))?;
        let user = text("user")?.ok_or(WireError::Missing("user"))?;
        let trigger = text("trigger")?.ok_or(WireError::Missing("trigger"))?;
        let at_ms = fields.number("at_ms")?.ok_or(WireError::Missing("at_ms"))?;
        let result = match fields.get("reason") {
            Some(code) => {
                let code = std::str::from_utf8(code).unwrap_or_default();
                Result::NotRun {
                    reason: Reason::parse(code).ok_or(WireError::Bad("reason"))?,
                    words: fields.text("words")?.unwrap_or_default(),
                }
            }
            None => {
                let end = match (fields.number("exit")?, fields.number("signal")?) {
                    (Some(code), None) => End::Exited(code as i32),
                    (None, Some(signal)) => End::Signaled(signal as i32),
                    _ => return Err(WireError::Bad("exit")),
                };
                let count = |name| -> std::result::Result<u64, WireError> {
                    Ok(fields.number(name)?.unwrap_or(0).max(0) as u64)
                };
                Result::Ran(Ran {
                    ended_ms: fields
                        .number("ended_ms")?
                        .ok_or(WireError::Missing("ended_ms"))?,
                    end,
                    timed_out: fields.number("timed_out")? == Some(1),
                    user_us: count("user_us")?,
                    system_us: count("system_us")?,
                    max_rss_kib: count("max_rss_kib")?,
                    output_bytes: count("output_bytes")?,
                    head: fields.get("head").unwrap_or_default().to_vec(),
                    tail: fields.get("tail").unwrap_or_default().to_vec(),
                    mail: match fields.text("mail")?.as_deref() {
                        None => Mail::None,
                        Some("sent") => Mail::Sent,
                        Some(_) => Mail::Failed(fields.text("mail_words")?.unwrap_or_default()),
                    },
                })
            }
        };
        Ok(Outcome {
            entry,
            place: text("place")?.unwrap_or_default(),
            user,
            owner_uid: match fields.number("owner_uid")? {
                Some(uid) => Some(u32::try_from(uid).map_err(|_| WireError::Bad("owner_uid"))?),
                None => None,
            },
            command: text("command")?.unwrap_or_default(),
            trigger: Trigger::parse(&trigger).ok_or(WireError::Bad("trigger"))?,
            slot: fields.number("slot")?,
            host: text("host")?.unwrap_or_default(),
            at_ms,
            cluster: ClusterRun::decode(fields)?,
            attempt: Attempt::decode(fields)?,
            result,
        })
    }
}

impl Attempt {
    /// The fields `attempt` and `attempts` of a message, if it has them.
    fn decode(fields: &Fields<'_>) -> std::result::Result<Option<Attempt>, WireError> {
        let (Some(number), Some(of)) = (fields.number("attempt")?, fields.number("attempts")?)
        else {
            return Ok(None);
        };
        let bad = || WireError::Bad("attempt");
        let number = u8::try_from(number).map_err(|_| bad())?;
        let of = u8::try_from(of).map_err(|_| bad())?;
        if number == 0 || number > of {
            return Err(bad());
        }
        Ok(Some(Attempt { number, of }))
    }
}

impl ClusterRun {
    /// The fields `cluster`, `cluster_entry` and `cluster_minute` of a message, if it has them.
    fn decode(fields: &Fields<'_>) -> std::result::Result<Option<ClusterRun>, WireError> {
        let Some(cluster) = fields.text("cluster")? else {
            return Ok(None);
        };
        let entry = fields
            .text("cluster_entry")?
            .ok_or(WireError::Missing("cluster_entry"))?;
        Ok(Some(ClusterRun {
            cluster,
            entry: entry.parse().map_err(|_| WireError::Bad("cluster_entry"))?,
            minute: fields.number("cluster_minute")?,
        }))
    }
}

/// A line for the daemon's log, from the writer: `level` is syslog's (3 error, 4 warning,
/// 6 info).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogMessage {
    pub level: u8,
    pub text: String,
}

impl LogMessage {
    pub fn encode(&self) -> Vec<u8> {
        let mut m = wire::Writer::new("log");
        m.number("level", i64::from(self.level));
        m.text("text", crate::words::cut_at_char(&self.text, MAX_COMMAND));
        m.finish()
    }

    pub fn decode(fields: &Fields<'_>) -> std::result::Result<LogMessage, WireError> {
        Ok(LogMessage {
            level: fields.number("level")?.unwrap_or(6).clamp(0, 7) as u8,
            text: fields.text("text")?.unwrap_or_default(),
        })
    }
}

/// Outcomes that never reached the store: `lost` of them (0: not known) between `from_ms` and
/// `to_ms`, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gap {
    pub from_ms: i64,
    pub to_ms: i64,
    pub lost: u64,
    pub why: String,
}

impl Gap {
    pub fn encode(&self) -> Vec<u8> {
        let mut m = wire::Writer::new("gap");
        m.number("from_ms", self.from_ms);
        m.number("to_ms", self.to_ms);
        m.number("lost", self.lost as i64);
        m.text("why", crate::words::cut_at_char(&self.why, MAX_COMMAND));
        m.finish()
    }

    pub fn decode(fields: &Fields<'_>) -> std::result::Result<Gap, WireError> {
        Ok(Gap {
            from_ms: fields
                .number("from_ms")?
                .ok_or(WireError::Missing("from_ms"))?,
            to_ms: fields.number("to_ms")?.ok_or(WireError::Missing("to_ms"))?,
            lost: fields.number("lost")?.unwrap_or(0).max(0) as u64,
            why: fields.text("why")?.unwrap_or_default(),
        })
    }
}

/// The first `keep` and the last `keep` bytes of an output of `total` bytes, read by `read_at`
/// (offset, buffer → bytes read): `(head, tail)`, the tail empty when the head holds it all.
pub fn head_and_tail(
    total: u64,
    keep: u64,
    mut read_at: impl FnMut(u64, &mut [u8]) -> usize,
) -> (Vec<u8>, Vec<u8>) {
    let mut read = |from: u64, len: u64| {
        let mut buf = vec![0u8; len as usize];
        let mut got = 0;
        while got < buf.len() {
            let n = read_at(from + got as u64, &mut buf[got..]);
            if n == 0 {
                break;
            }
            got += n;
        }
        buf.truncate(got);
        buf
    };
    if total <= keep.saturating_mul(2) {
        return (read(0, total), Vec::new());
    }
    (read(0, keep), read(total - keep, keep))
}

#[cfg(test)]
mod tests;
