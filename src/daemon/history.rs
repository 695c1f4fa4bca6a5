//! The daemon's side of the run history (docs/design.md "History"): one of its owners. It
//! starts the history writer (`cronctl history-writer`, the one process that holds the SQLite
//! store: the daemon links no database code) with one end of a `SOCK_SEQPACKET` pair as its
//! stdin, and keeps the other end, which every job child inherits and records its run on. The
//! daemon's own outcomes (slots it did not start) wait here in a bounded queue until the
//! writer takes them; a client's `cronctl history` or `logs` connection is passed to the
//! writer with the question, and answered there.
//!
//! A writer that dies is started again after [`RESTART_AFTER_MS`]; what was lost meanwhile
//! (the queue's overflow, the runs whose job child could not send) shows in history as a gap,
//! and the log says what was lost, at most once a minute.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;

use super::effects::Effects;
use crate::history::{Fields, Gap, LogMessage, MAX_MESSAGE, Outcome, Query};
use crate::job::record::HistorySink;
use crate::log::{Level, messages};
use crate::sys::poll::Interest;
use crate::sys::seqpacket;

/// The store's file name in the state directory, by default.
pub(super) const STORE_NAME: &str = "history.db";

/// How long the daemon waits before it starts a lost writer again.
pub(super) const RESTART_AFTER_MS: i64 = 1_000;

/// The most outcomes of the daemon's own that wait for the writer; more are counted as lost.
pub(super) const MAX_QUEUED: usize = 10_000;

/// The send buffer asked for the socket (the kernel gives what its limit allows).
const SEND_BUFFER: usize = 4 << 20;

/// The most messages read from the writer in one turn.
const MAX_READS: usize = 64;

/// The running writer.
#[derive(Debug)]
struct Writer {
    pid: u32,
    socket: Arc<OwnedFd>,
}

/// The history link.
#[derive(Debug)]
pub(super) struct HistoryLink {
    program: PathBuf,
    args: Vec<OsString>,
    /// How much of each end of a run's output job children keep, and this host's name.
    keep_output: u64,
    host: String,
    writer: Option<Writer>,
    /// When a lost writer is started again (`None`: running, or never to start).
    restart_at_ms: Option<i64>,
    queue: VecDeque<Vec<u8>>,
    /// Outcomes lost since the last gap was sent, and since when.
    lost: u64,
    lost_since_ms: Option<i64>,
    /// The writers lost in a row, each soon after its start: the next start waits longer.
    failures: u32,
    /// When the running writer started.
    started_ms: i64,
    /// Why the last ones were lost.
    lost_why: &'static str,
    /// When the log last said what was lost, and what it has not said yet.
    lost_logged_ms: Option<i64>,
    unlogged: u64,
}

impl HistoryLink {
    /// A link whose writer is `program` with `args`, started at once.
    pub(super) fn new(
        (program, args): (PathBuf, Vec<OsString>),
        (keep_output, host): (u64, String),
        now_ms: i64,
        fx: &mut dyn Effects,
    ) -> HistoryLink {
        let mut link = HistoryLink {
            program,
            args,
            keep_output,
            host,
            writer: None,
            restart_at_ms: Some(now_ms),
            queue: VecDeque::new(),
            lost: 0,
            lost_since_ms: None,
            lost_why: "",
            lost_logged_ms: None,
            unlogged: 0,
            failures: 0,
            started_ms: now_ms,
        };
        link.start_writer(now_ms, fx);
        link
    }

    fn start_writer(&mut self, now_ms: i64, fx: &mut dyn Effects) {
        if self.writer.is_some() || self.restart_at_ms.is_none_or(|at| at > now_ms) {
            return;
        }
        self.restart_at_ms = None;
        let started = seqpacket::pair(SEND_BUFFER).and_then(|(ours, theirs)| {
            let pid = fx.spawn_writer(&self.program, &self.args, theirs)?;
            Ok((pid, ours))
        });
        match started {
            Ok((pid, socket)) => {
                let socket = Arc::new(socket);
                fx.set_history(HistorySink {
                    socket: socket.clone(),
                    keep_output: self.keep_output,
                    host: self.host.clone(),
                });
                self.writer = Some(Writer { pid, socket });
                self.started_ms = now_ms;
                if let Some(from_ms) = self.lost_since_ms.take() {
                    let gap = Gap {
                        from_ms,
                        to_ms: now_ms,
                        lost: std::mem::take(&mut self.lost),
                        why: self.lost_why.to_string(),
                    };
                    self.queue.push_front(gap.encode());
                }
            }
            Err(e) => {
                self.restart_at_ms = Some(now_ms + RESTART_AFTER_MS * 10);
                fx.error(messages::history_unstarted_line(&self.program, &e));
            }
        }
    }

    /// The descriptor to poll: the writer's socket, for its log lines, or for room while
    /// outcomes wait (its lines are read on the turn after).
    pub(super) fn fd(&self) -> Option<(BorrowedFd<'_>, Interest)> {
        let writer = self.writer.as_ref()?;
        let interest = if self.queue.is_empty() {
            Interest::Read
        } else {
            Interest::Write
        };
        Some((writer.socket.as_fd(), interest))
    }

    /// When the loop must wake for the link: a writer to start again.
    pub(super) fn deadline_ms(&self) -> Option<i64> {
        self.restart_at_ms.filter(|_| self.writer.is_none())
    }

    /// An outcome of the daemon's own (a slot it did not start): sent now, or queued.
    pub(super) fn record(&mut self, mut outcome: Outcome, now_ms: i64) {
        if self.queue.len() >= MAX_QUEUED {
            self.count_lost(1, now_ms, "the queue of outcomes was full");
            return;
        }
        outcome.host.clone_from(&self.host);
        self.queue.push_back(outcome.encode());
    }

    fn count_lost(&mut self, n: u64, now_ms: i64, why: &'static str) {
        self.lost += n;
        self.unlogged += n;
        self.lost_since_ms.get_or_insert(now_ms);
        self.lost_why = why;
    }

    /// A turn's end: the writer started again if it is time, what waits sent, and what was
    /// lost said (at most once a minute).
    pub(super) fn tick(&mut self, now_ms: i64, fx: &mut dyn Effects) {
        self.start_writer(now_ms, fx);
        self.flush();
        if self.unlogged > 0 && self.lost_logged_ms.is_none_or(|at| now_ms - at >= 60_000) {
            fx.error(messages::history_not_recorded_line(
                self.unlogged,
                self.lost_why,
            ));
            self.unlogged = 0;
            self.lost_logged_ms = Some(now_ms);
        }
    }

    fn flush(&mut self) {
        let Some(writer) = &self.writer else {
            return;
        };
        while let Some(message) = self.queue.front() {
            match seqpacket::send(writer.socket.as_fd(), message) {
                Ok(()) => {
                    self.queue.pop_front();
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(_) => {
                    // The writer is gone: its reaping restarts it, and the queue waits.
                    return;
                }
            }
        }
    }

    /// The writer's socket is readable: its log lines go to the log.
    pub(super) fn readable(&mut self, fx: &mut dyn Effects) {
        let Some(writer) = &self.writer else {
            return;
        };
        let mut buf = vec![0u8; 4096];
        for _ in 0..MAX_READS {
            match seqpacket::recv_now(writer.socket.as_fd(), &mut buf) {
                // Its end closed: the writer is exiting; its reaping restarts it.
                Ok((0, _)) => return,
                Ok((n, _)) => {
                    let Ok(fields) = Fields::parse(&buf[..n]) else {
                        continue;
                    };
                    if fields.kind() == Some(b"log")
                        && let Ok(said) = LogMessage::decode(&fields)
                    {
                        let level = match said.level {
                            0..=3 => Level::Error,
                            4 => Level::Warning,
                            _ => Level::Info,
                        };
                        fx.log(level, messages::history_writer_line(&said.text));
                    }
                }
                Err(_) => return,
            }
        }
    }

    /// A client's `history` or `logs` question, its connection passed to the writer with it.
    /// `Err` (the connection given back) when there is no writer to take it.
    pub(super) fn ask(&mut self, connection: OwnedFd, query: &Query) -> Result<(), OwnedFd> {
        let Some(writer) = &self.writer else {
            return Err(connection);
        };
        let message = query.encode();
        debug_assert!(message.len() <= MAX_MESSAGE);
        match seqpacket::send_passing(writer.socket.as_fd(), &message, Some(connection.as_fd())) {
            Ok(()) => Ok(()),
            Err(_) => Err(connection),
        }
    }

    /// A child was reaped: `true` when it was the writer, which is started again soon.
    pub(super) fn on_reaped(&mut self, pid: u32, now_ms: i64, fx: &mut dyn Effects) -> bool {
        if self.writer.as_ref().is_none_or(|w| w.pid != pid) {
            return false;
        }
        // Job children keep the old socket until the new writer's: their sends fail, and each
        // says in the log that its run was not recorded.
        self.writer = None;
        // A writer that keeps dying at its start (a store it can't open, a missing program) is
        // started again later each time: 1 s, 2 s, 4 s... up to 5 minutes.
        if now_ms - self.started_ms < 60_000 {
            self.failures = (self.failures + 1).min(9);
        } else {
            self.failures = 0;
        }
        let after_ms = (RESTART_AFTER_MS << self.failures).min(300_000);
        self.restart_at_ms = Some(now_ms + after_ms);
        self.lost_since_ms.get_or_insert(now_ms);
        if self.lost_why.is_empty() {
            self.lost_why = "the history writer was down";
        }
        fx.error(messages::history_lost_line(pid, after_ms / 1000));
        true
    }
}
