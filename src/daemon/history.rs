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
                // Said once; tried again later each time (a missing program stays missing).
                self.failures = (self.failures + 1).min(9);
                let after_ms = (RESTART_AFTER_MS << self.failures).min(300_000);
                self.restart_at_ms = Some(now_ms + after_ms);
                if self.failures == 1 {
                    fx.error(messages::history_unstarted_line(&self.program, &e));
                }
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

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;

    use super::*;
    use crate::daemon::effects::Recorded;
    use crate::history::{Reason, Result as Said, Trigger};

    fn outcome(n: i64) -> Outcome {
        Outcome {
            entry: "0123456789ab".into(),
            place: "crontabs/alice:1".into(),
            user: "alice".into(),
            owner_uid: Some(1000),
            command: "true".into(),
            trigger: Trigger::Schedule,
            slot: Some(60 * n),
            host: String::new(),
            at_ms: n,
            cluster: None,
            attempt: None,
            result: Said::NotRun {
                reason: Reason::Overlap,
                words: "still running".into(),
            },
        }
    }

    fn link(fx: &mut Recorded) -> HistoryLink {
        let program = ("cronctl".into(), vec!["history-writer".into()]);
        HistoryLink::new(program, (32 * 1024, "web1".into()), 0, fx)
    }

    /// What the writer's end has received: each message's kind and fields' text.
    fn received(fx: &Recorded) -> Vec<Vec<u8>> {
        let mut got = Vec::new();
        let mut buf = vec![0u8; MAX_MESSAGE];
        let writer = fx.writer.as_ref().expect("a writer");
        while let Ok((n, _)) = seqpacket::recv_now(writer.as_fd(), &mut buf) {
            got.push(buf[..n].to_vec());
        }
        got
    }

    #[test]
    fn the_daemons_outcomes_reach_the_writer_with_the_hosts_name_and_job_children_its_socket() {
        let mut fx = Recorded::default();
        let mut link = link(&mut fx);
        assert_eq!(fx.history.as_ref().map(|h| h.host.as_str()), Some("web1"));
        link.record(outcome(1), 10);
        link.tick(10, &mut fx);
        let got = received(&fx);
        let [one] = &got[..] else { panic!("{got:?}") };
        let back = Outcome::decode(&Fields::parse(one).unwrap()).unwrap();
        assert_eq!(
            back,
            Outcome {
                host: "web1".into(),
                ..outcome(1)
            }
        );
        // A job child's send on the socket it was handed arrives the same way.
        let sink = fx.history.clone().unwrap();
        seqpacket::send(sink.socket.as_fd(), &outcome(2).encode()).unwrap();
        assert_eq!(received(&fx).len(), 1);
    }

    #[test]
    fn a_lost_writer_starts_again_later_each_time_and_what_waited_goes_after_a_gap() {
        let mut fx = Recorded::default();
        let mut link = link(&mut fx);
        let first = 1001;
        assert!(!link.on_reaped(4242, 100, &mut fx), "not the writer's pid");
        assert!(link.on_reaped(first, 100, &mut fx));
        assert_eq!(
            fx.logged("history writer (pid 1001) lost; starting it again in 2 s")
                .len(),
            1,
            "{:?}",
            fx.lines
        );
        // Down: the daemon's outcomes wait.
        link.record(outcome(1), 200);
        link.tick(1_000, &mut fx);
        assert_eq!(link.deadline_ms(), Some(2_100));
        link.tick(2_100, &mut fx);
        let got = received(&fx);
        let kinds: Vec<_> = got
            .iter()
            .map(|m| Fields::parse(m).unwrap().kind().unwrap().to_vec())
            .collect();
        assert_eq!(kinds, [b"gap".to_vec(), b"outcome".to_vec()]);
        let gap = Gap::decode(&Fields::parse(&got[0]).unwrap()).unwrap();
        assert_eq!((gap.from_ms, gap.to_ms, gap.lost), (100, 2_100, 0));
        assert_eq!(gap.why, "the history writer was down");
        // Lost again soon after its start: 4 s; after a minute's life: 1 s again.
        assert!(link.on_reaped(1002, 3_000, &mut fx));
        assert_eq!(link.deadline_ms(), Some(7_000));
        link.tick(7_000, &mut fx);
        assert!(link.on_reaped(1003, 70_000, &mut fx));
        assert_eq!(link.deadline_ms(), Some(71_000));
    }

    #[test]
    fn a_writer_that_can_not_start_is_said_once_and_tried_again_less_and_less_often() {
        let mut fx = Recorded::default();
        fx.fail_spawns = true;
        let mut link = link(&mut fx);
        let mut tries = vec![0];
        for _ in 0..12 {
            let at = link.deadline_ms().unwrap();
            link.tick(at, &mut fx);
            tries.push(at);
        }
        assert_eq!(
            fx.logged("can't start the history writer").len(),
            1,
            "{:?}",
            fx.lines
        );
        let gaps: Vec<i64> = tries.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(&gaps[..4], [2_000, 4_000, 8_000, 16_000]);
        assert_eq!(*gaps.last().unwrap(), 300_000);
    }

    #[test]
    fn past_its_bound_the_queue_counts_what_it_loses_and_says_so_once_a_minute() {
        let mut fx = Recorded::default();
        let mut link = link(&mut fx);
        assert!(link.on_reaped(1001, 0, &mut fx));
        for n in 0..(MAX_QUEUED as i64 + 5) {
            link.record(outcome(n), 10);
        }
        link.tick(10, &mut fx);
        link.record(outcome(0), 20);
        link.tick(20, &mut fx);
        let said = fx.logged("not recorded in the history: the queue of outcomes was full");
        assert_eq!(said.len(), 1, "{:?}", fx.lines);
        assert!(said[0].contains("5 outcomes were"), "{said:?}");
        link.tick(60_010, &mut fx);
        assert_eq!(
            fx.logged("1 outcome was not recorded").len(),
            1,
            "{:?}",
            fx.lines
        );
        // The writer back: a gap that counts them, then the queue, whole.
        // What the socket's buffer does not take waits for the next turn.
        let mut got = Vec::new();
        for turn in 0..100 {
            link.tick(120_000 + turn, &mut fx);
            got.extend(received(&fx));
        }
        assert_eq!(got.len(), 1 + MAX_QUEUED, "the gap and the queue");
        let gap = Gap::decode(&Fields::parse(&got[0]).unwrap()).unwrap();
        assert_eq!(gap.lost, 6);
    }

    #[test]
    fn a_question_goes_with_its_connection_and_the_writers_lines_go_to_the_log() {
        let mut fx = Recorded::default();
        let mut link = link(&mut fx);
        let (client, ours) = std::os::unix::net::UnixStream::pair().unwrap();
        let query = crate::history::Query {
            asked: crate::history::Asked::Logs {
                entry: "0123".into(),
                run: None,
                raw: false,
            },
            json: false,
            wide: false,
            all: true,
            uid: 0,
            name: None,
            now_ms: 5,
            zone: "UTC".into(),
            max_answer: 1 << 20,
        };
        link.ask(OwnedFd::from(ours), &query).unwrap();
        let mut buf = vec![0u8; MAX_MESSAGE];
        let writer = fx.writer.take().unwrap();
        let (n, passed) = seqpacket::recv_now(writer.as_fd(), &mut buf).unwrap();
        assert_eq!(
            Query::decode(&Fields::parse(&buf[..n]).unwrap()),
            Ok(query.clone())
        );
        // The writer answers on the connection passed: the client reads it.
        std::io::Write::write_all(&mut std::fs::File::from(passed.unwrap()), b"OK\n").unwrap();
        let mut answer = String::new();
        std::io::Read::read_to_string(&mut &client, &mut answer).unwrap();
        assert_eq!(answer, "OK\n");
        let said = LogMessage {
            level: 3,
            text: "the store was set aside".into(),
        };
        seqpacket::send(writer.as_fd(), &said.encode()).unwrap();
        link.readable(&mut fx);
        assert_eq!(
            fx.logged("history writer: the store was set aside").len(),
            1
        );
        // No writer: the connection comes back.
        drop(writer);
        assert!(link.on_reaped(1001, 0, &mut fx));
        let (_client, ours) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(link.ask(OwnedFd::from(ours), &query).is_err());
    }
}
