//! The job child's record of its run (`crate::history`): one [`Outcome`] per run, built here
//! from what the child saw — the shell's end, its time limit, the CPU time and peak memory of
//! the job's processes, the output's first and last bytes (the same bytes the mail has), the
//! mail's fate — or the reason nothing of the job ran, and sent whole, as one message, to the
//! history writer on the socket every job child shares with the daemon.
//!
//! The send waits for room at most [`SEND_WAIT_MS`] (the writer drains a burst's records in
//! far less): this process is the job's own, so waiting costs the daemon nothing, and a record
//! the writer could not take in that time is said in the log as lost, never silently dropped.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::database::entries::JobSpec;
use crate::history::{ClusterRun, End, Mail, Outcome, Ran, Reason, Result, Trigger};
use crate::log::{Level, Log, messages};
use crate::sys::seqpacket;

/// The longest a job child waits for the writer to take its record.
pub const SEND_WAIT_MS: u64 = 5_000;

/// Where runs are recorded: the daemon's `--history` settings.
#[derive(Debug, Clone)]
pub struct HistorySink {
    /// The socket of the history writer (the daemon's end, which every job child inherits).
    pub socket: Arc<OwnedFd>,
    /// How much of each end of a run's output is kept (`--history-output`).
    pub keep_output: u64,
    /// This host's name, as records give it.
    pub host: String,
}

/// What the daemon knows of one run and the job child does not: the entry's id, what made
/// the run, and its slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunFacts {
    pub id: String,
    pub trigger: Trigger,
    /// The scheduled minute (Unix seconds); `None` for a manual run and `@reboot`.
    pub slot: Option<i64>,
    /// For a cluster entry's run: its cluster, id and claim.
    pub cluster: Option<ClusterRun>,
    /// The entry's last run that said something of the job failed, as the daemon remembers it
    /// (`CRON_NOTIFY=change`); `false` when it knows none (since its start, or its load).
    pub previous_failed: bool,
    /// For an entry with `CRON_RETRY` (a scheduled run): which attempt of its slot this is, and
    /// whether a failure is retried (`crate::history::retry`).
    pub retry: Option<crate::history::retry::Plan>,
    /// When the daemon started the run (epoch ms): an attempt's end is this and the duration
    /// its job child measured, in the daemon and in the child alike, so both read its
    /// [`Plan`](crate::history::retry::Plan) the same way.
    pub started_ms: i64,
}

/// One run's recorder, in its job child.
#[derive(Debug, Clone)]
pub struct Recorder {
    sink: HistorySink,
    /// The record, its time and result still to be given.
    blank: Outcome,
}

/// How the job ran, as the record has it.
#[derive(Debug)]
pub(super) struct RunEnd {
    pub end: End,
    pub duration_ms: u64,
    pub timed_out: bool,
    /// `(user µs, system µs, peak RSS KiB)` of the job's processes.
    pub usage: (u64, u64, u64),
    pub output_bytes: u64,
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    pub mail: Mail,
}

pub(super) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// The record of a run of `spec` on `host`, its time and result still to be given.
pub fn blank(spec: &JobSpec, facts: &RunFacts, host: &str) -> Outcome {
    Outcome {
        entry: facts.id.clone(),
        place: spec.entry(),
        user: String::from_utf8_lossy(spec.user()).into_owned(),
        owner_uid: spec.owner.uid.map(|u| u.0),
        command: String::from_utf8_lossy(spec.command()).into_owned(),
        trigger: facts.trigger,
        slot: facts.slot,
        host: host.to_string(),
        at_ms: 0,
        cluster: facts.cluster.clone(),
        attempt: facts.retry.map(|plan| plan.attempt),
        result: Result::NotRun {
            reason: Reason::NotStarted,
            words: String::new(),
        },
    }
}

/// `blank` completed with the run, which ended now.
pub(super) fn ran(blank: &Outcome, run: RunEnd) -> Outcome {
    let ended_ms = now_ms();
    let (user_us, system_us, max_rss_kib) = run.usage;
    Outcome {
        at_ms: ended_ms - run.duration_ms as i64,
        result: Result::Ran(Ran {
            ended_ms,
            end: run.end,
            timed_out: run.timed_out,
            user_us,
            system_us,
            max_rss_kib,
            output_bytes: run.output_bytes,
            head: run.head,
            tail: run.tail,
            mail: run.mail,
        }),
        ..blank.clone()
    }
}

impl Recorder {
    pub fn new(sink: &HistorySink, spec: &JobSpec, facts: &RunFacts) -> Recorder {
        Recorder {
            sink: sink.clone(),
            blank: blank(spec, facts, &sink.host),
        }
    }

    /// The record, its time and result still to be given.
    pub(super) fn blank(&self) -> &Outcome {
        &self.blank
    }

    /// How much of each end of the output the record keeps.
    pub(super) fn keep_output(&self) -> u64 {
        self.sink.keep_output
    }

    /// Records that nothing of the job ran, and why.
    pub(super) fn not_run(&self, reason: Reason, words: &str, log: Log) {
        let outcome = Outcome {
            at_ms: now_ms(),
            result: Result::NotRun {
                reason,
                words: words.to_string(),
            },
            ..self.blank.clone()
        };
        self.send(&outcome, log);
    }

    /// Records the run: `outcome`, from [`ran`].
    pub(super) fn ran(&self, outcome: &Outcome, log: Log) {
        self.send(outcome, log);
    }

    fn send(&self, outcome: &Outcome, log: Log) {
        let message = outcome.encode();
        let socket = self.sink.socket.as_fd();
        let deadline = std::time::Instant::now() + Duration::from_millis(SEND_WAIT_MS);
        let error = loop {
            match seqpacket::send(socket, &message) {
                Ok(()) => return,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    let left = deadline.saturating_duration_since(std::time::Instant::now());
                    if left.is_zero() {
                        break e;
                    }
                    let _ = crate::sys::poll::wait_writable(socket, left.as_millis() as u32);
                }
                Err(e) => break e,
            }
        };
        let line =
            messages::outcome_not_recorded_line(self.blank.user.as_bytes(), &outcome.place, &error);
        log.line(Level::Error, &line);
    }
}
