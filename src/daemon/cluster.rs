//! The daemon's side of cluster mode (docs/cluster.md): with `--cluster-db`, a run of an entry
//! under `CRON_CLUSTER=NAME` is not started when it comes up; it is parked
//! ([`Parked`](crate::cluster::parked::Parked)) and a `RUN` request goes to the helper process
//! (`cronctl helper`), which claims the run in PostgreSQL and answers `GO` or `NO`. The daemon
//! never waits: the answer comes through the poll loop like any other event, and a run without
//! an answer in 2 minutes (a stuck helper) is not run. The helper is a child of the daemon,
//! started before the crontabs are loaded and again 5 s after it is lost; the daemon holds no
//! database code and starts no thread.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::Stdio;

use jiff::Timestamp;

use super::event_loop::Daemon;
use crate::cluster::identity::entry_key;
use crate::cluster::parked::{ANSWER_WAIT_MS, Answered, MAX_PARKED, MAX_PARKED_PER_USER, Parked};
use crate::cluster::wire::{self, Denied, FromHelper, RunKey, ToHelper};
use crate::job::JobSpec;
use crate::log::Level;
use crate::log::lines;
use crate::sys::poll::Interest;
use crate::sys::process::Exit;
use crate::sys::pump::{Filled, FlushError, Pump};
use crate::sys::spawn::Program;
use crate::sys::user::Uid;
use crate::timeline::queue::Queued;
use crate::timeline::{Due, EntryId, UtcMinute};

/// How long the daemon waits before it starts a lost helper again.
const RESTART_AFTER_MS: i64 = 5_000;

/// What the daemon writes to a helper that does not read is dropped with the helper beyond this.
const MAX_UNSENT: usize = 1 << 20;

/// How much of the helper's answers is read at once.
const READ_CHUNK: usize = 16 * 1024;

type Run = Queued<Due<JobSpec>>;

/// The helper process and the socket to it.
#[derive(Debug)]
struct Helper {
    pid: u32,
    socket: UnixStream,
    read: wire::LineReader,
    pump: Pump,
}

/// Cluster mode's state in the daemon.
#[derive(Debug)]
pub(super) struct ClusterLink {
    program: PathBuf,
    args: Vec<OsString>,
    helper: Option<Helper>,
    /// When a lost helper is started again.
    restart_at_ms: Option<i64>,
    parked: Parked<Run>,
    /// Cluster runs started here, by job child pid, for their `END`.
    started: HashMap<i32, RunKey>,
    /// Runs the helper said `GO` to whose fork failed: back in the queue, not claimed again.
    granted: HashMap<(EntryId, UtcMinute), RunKey>,
}

impl ClusterLink {
    /// The link for `--cluster-db CONNINFO`; the helper starts with [`Daemon::start_helper`].
    pub(super) fn new(
        program: PathBuf,
        conninfo: &str,
        host: &str,
        keep_days: Option<u32>,
        keep_runs: Option<u32>,
        lease_s: Option<u32>,
    ) -> ClusterLink {
        let mut args: Vec<OsString> = vec![
            "helper".into(),
            "--db".into(),
            conninfo.into(),
            "--host".into(),
            host.into(),
        ];
        if let Some(days) = keep_days {
            args.extend(["--keep-days".into(), days.to_string().into()]);
        }
        if let Some(runs) = keep_runs {
            args.extend(["--keep-runs".into(), runs.to_string().into()]);
        }
        if let Some(seconds) = lease_s {
            args.extend(["--lease".into(), seconds.to_string().into()]);
        }
        ClusterLink {
            program,
            args,
            helper: None,
            restart_at_ms: Some(0),
            parked: Parked::default(),
            started: HashMap::new(),
            granted: HashMap::new(),
        }
    }

    /// The descriptors to poll: the socket (readable; writable too while something waits to
    /// be sent).
    pub(super) fn fds(&self) -> Vec<(BorrowedFd<'_>, Interest)> {
        match &self.helper {
            None => Vec::new(),
            Some(h) if h.pump.unsent() == 0 => vec![(h.socket.as_fd(), Interest::Read)],
            Some(h) => vec![
                (h.socket.as_fd(), Interest::Read),
                (h.socket.as_fd(), Interest::Write),
            ],
        }
    }

    /// When the loop must wake for the link: an answer's deadline or the helper's restart.
    pub(super) fn next_deadline_ms(&self) -> Option<i64> {
        match (self.parked.next_deadline_ms(), self.restart_at_ms) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Whether `pid` is the helper's.
    pub(super) fn is_helper(&self, pid: i32) -> bool {
        self.helper.as_ref().is_some_and(|h| h.pid as i32 == pid)
    }

    fn send(&mut self, message: &ToHelper) -> Result<(), String> {
        let Some(helper) = self.helper.as_mut() else {
            return Err("the cluster helper is not running".into());
        };
        helper.pump.queue(message.encode().as_bytes());
        flush(helper)
    }
}

/// Writes what the socket takes now.
fn flush(helper: &mut Helper) -> Result<(), String> {
    match helper.pump.flush(&mut helper.socket) {
        Ok(_) => Ok(()),
        Err(FlushError::Closed) => Err("the cluster helper closed its socket".into()),
        Err(FlushError::Backlog(n)) => Err(format!("the cluster helper has not read {n} bytes")),
        Err(FlushError::Io(e)) => Err(format!("can't write to the cluster helper: {e}")),
    }
}

/// The helper program by default: `cronctl` beside the running crond, else /usr/sbin/cronctl.
pub(super) fn default_helper() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("cronctl")))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("/usr/sbin/cronctl"))
}

impl Daemon {
    /// Starts the helper if it is time to (at start-up, and [`RESTART_AFTER_MS`] after a loss).
    pub(super) fn start_helper(&mut self, now_ms: i64) {
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        if link.helper.is_some() || link.restart_at_ms.is_none_or(|at| at > now_ms) {
            return;
        }
        link.restart_at_ms = None;
        let spawned = UnixStream::pair().and_then(|(ours, theirs)| {
            ours.set_nonblocking(true)?;
            let theirs = OwnedFd::from(theirs);
            let mut program = Program::new(&link.program);
            program
                .args(&link.args)
                .stdin(Stdio::from(theirs.try_clone()?))
                .stdout(Stdio::from(theirs));
            let child = program.spawn()?;
            Ok(Helper {
                pid: child.id(),
                socket: ours,
                read: wire::LineReader::default(),
                pump: Pump::new(READ_CHUNK, MAX_UNSENT),
            })
        });
        match spawned {
            Ok(helper) => {
                self.log.info(
                    "CRON",
                    "INFO",
                    &format!("cluster helper started (pid {})", helper.pid),
                );
                link.helper = Some(helper);
            }
            Err(e) => {
                link.restart_at_ms = Some(now_ms + RESTART_AFTER_MS);
                self.log.error(
                    "CRON",
                    "ERROR",
                    &format!(
                        "can't start the cluster helper {}: {e}; cluster runs do not start \
                         until it runs",
                        link.program.display()
                    ),
                );
            }
        }
    }

    /// The helper is gone (`why`): every run waiting for its answer is not run, and it is
    /// started again in [`RESTART_AFTER_MS`].
    fn helper_lost(&mut self, why: &str, now: Timestamp) {
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        if let Some(helper) = link.helper.take()
            && helper.pid != 0
        {
            let _ = crate::sys::process::kill_child(helper.pid);
        }
        link.restart_at_ms = Some(now.as_millisecond() + RESTART_AFTER_MS);
        let abandoned = link.parked.abandon();
        self.log.error(
            "CRON",
            "ERROR",
            &format!("cluster helper lost: {why}; starting it again in 5 s"),
        );
        for (run, _) in abandoned {
            self.log_cluster_run(&run, "not run: the cluster helper was lost");
        }
    }

    /// A run that comes up: `Some` to start it as any other; `None` when it went to the
    /// cluster (parked for the helper's answer, or refused and logged).
    pub(super) fn claim_if_clustered(&mut self, run: Run, now: Timestamp) -> Option<Run> {
        let Some(link) = self.cluster.as_mut() else {
            return Some(run);
        };
        let job = &run.job.job;
        // @reboot (no entry) and @every runs are local: their times are the host's own.
        let Some(entry) = run.job.entry else {
            return Some(run);
        };
        if !job.env().policy().clustered || self.cycle.every_seconds(entry).is_some() {
            return Some(run);
        }
        if let Some(key) = link.granted.remove(&(entry, run.due)) {
            self.launch_granted(run, key, now.as_millisecond());
            return None;
        }
        let Some((schedule, zone, _, _)) = self.cycle.get(entry) else {
            return Some(run);
        };
        let key = RunKey {
            cluster: String::from_utf8_lossy(job.env().get(b"CRON_CLUSTER").unwrap_or_default())
                .into_owned(),
            owner: job.user().to_vec(),
            entry: entry_key(schedule, zone.map(|z| z.name()), job.user(), job.command()),
            minute: run.due.start_second(),
        };
        // A user's own crontab draws on a share of its own; root's and system files' don't.
        let share = job
            .owner
            .uid
            .filter(|uid| *uid != Uid::ROOT)
            .map(|uid| uid.0);
        let seq = match link
            .parked
            .park(run, key.clone(), share, now.as_millisecond())
        {
            Ok(seq) => seq,
            Err(run) => {
                let why = match share {
                    Some(_) if link.parked.len() < MAX_PARKED => format!(
                        "not run: {MAX_PARKED_PER_USER} runs of this user's crontab wait for \
                         the cluster database already"
                    ),
                    _ => {
                        format!("not run: {MAX_PARKED} runs wait for the cluster database already")
                    }
                };
                self.log_cluster_run(&run, &why);
                return None;
            }
        };
        if let Err(e) = link.send(&ToHelper::Run { seq, key }) {
            self.helper_lost(&e, now);
        }
        None
    }

    /// Starts a run the database marked started here; its `END` goes back when it is reaped.
    /// If the fork fails it waits in the queue, marked so that it is not claimed again.
    fn launch_granted(&mut self, run: Run, key: RunKey, now_ms: i64) {
        let (entry, due) = (run.job.entry, run.due);
        match self.launch(run, now_ms) {
            Ok(Some(pid)) => {
                if let Some(link) = self.cluster.as_mut() {
                    link.started.insert(pid, key);
                }
            }
            Ok(None) => {}
            Err(run) => {
                if let (Some(link), Some(entry)) = (self.cluster.as_mut(), entry) {
                    link.granted.insert((entry, due), key);
                }
                self.cycle.put_back(run, now_ms);
            }
        }
    }

    /// Logs `(user) CLUSTER (command) HH:MM NOTE`: what became of `run` on this host.
    fn log_cluster_run(&self, run: &Run, note: &str) {
        let job = &run.job.job;
        let when = self.clock_time(run.due.start_second() * 1000);
        let line = lines::cluster_line(job.user(), job.command(), format!("{when} {note}"))
            .with_job(job.log_fields(None));
        self.log.line(Level::Info, &line);
    }

    /// Reads what the helper said and acts on each answer.
    pub(super) fn on_helper(&mut self, now: Timestamp) {
        let Some(helper) = self.cluster.as_mut().and_then(|l| l.helper.as_mut()) else {
            return;
        };
        if let Err(e) = flush(helper) {
            self.helper_lost(&e, now);
            return;
        }
        let mut lines = Vec::new();
        let reader = &mut helper.read;
        // At most 64 lines' worth per wake: the loop has other fds to serve.
        let filled = helper
            .pump
            .fill(&mut helper.socket, 64 * wire::MAX_LINE, &mut |chunk| {
                lines.extend(reader.push(chunk));
                true
            });
        let closed = match filled {
            Ok(Filled::Open) => None,
            Ok(Filled::End) => Some("it closed its socket".to_string()),
            Err(e) => Some(format!("read: {e}")),
        };
        // A line that does not read is logged and skipped: the runs waiting for other answers
        // stay parked (a run whose answer it was gets its answer again or meets its deadline).
        for line in lines {
            match line.and_then(|line| FromHelper::decode(&line)) {
                Ok(message) => self.helper_said(message, now),
                Err(e) => self.log.error(
                    "CRON",
                    "ERROR",
                    &format!(
                        "cluster helper: protocol error: {}; line skipped",
                        wire::cut_text(&e, wire::MAX_TEXT)
                    ),
                ),
            }
        }
        if let Some(why) = closed {
            self.helper_lost(&why, now);
        }
    }

    fn helper_said(&mut self, message: FromHelper, now: Timestamp) {
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        let now_ms = now.as_millisecond();
        let answered = match message {
            FromHelper::Log { error, text } => {
                let text = format!("cluster: {text}");
                match error {
                    true => self.log.error("CRON", "ERROR", &text),
                    false => self.log.info("CRON", "INFO", &text),
                }
                return;
            }
            FromHelper::Go { seq } => link.parked.go(seq),
            FromHelper::No { seq, why } => link.parked.no(seq, why, now_ms),
        };
        match answered {
            Answered::Go {
                job,
                key,
                taken_over,
            } => {
                if taken_over {
                    self.log_cluster_run(
                        &job,
                        "was claimed by a host that stopped before starting it: runs here",
                    );
                }
                self.launch_granted(job, key, now_ms);
            }
            // Logged at the final answer (`ran` or a takeover's `GO`), not here.
            Answered::Taken { .. } => {}
            Answered::No { job, why, .. } => {
                let note = match why {
                    Denied::Taken(host) | Denied::Ran(host) => format!("runs on {host}"),
                    Denied::Paused => "not run: paused in the cluster (cronctl resume)".into(),
                    Denied::Lease => {
                        "not run: this host's lease in the cluster database has expired".into()
                    }
                    Denied::Unreachable(why) => {
                        format!("not run: the cluster database is unreachable ({why})")
                    }
                };
                self.log_cluster_run(&job, &note);
            }
            Answered::Unknown => {}
        }
    }

    /// Deadlines: runs without an answer in time are not run; a lost helper starts again.
    pub(super) fn cluster_timers(&mut self, now: Timestamp) {
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        let late = link.parked.expire(now.as_millisecond());
        for (run, _) in late {
            self.log_cluster_run(
                &run,
                &format!(
                    "not run: no answer from the cluster database in {} s",
                    ANSWER_WAIT_MS / 1000
                ),
            );
        }
        self.start_helper(now.as_millisecond());
    }

    /// A reaped child: the helper (lost), or a cluster run's job child (its `END`).
    pub(super) fn cluster_reaped(&mut self, pid: i32, exit: Exit, now: Timestamp) {
        let Some(link) = self.cluster.as_mut() else {
            return;
        };
        if link.is_helper(pid) {
            // Its pid is gone: not to be killed.
            if let Some(helper) = link.helper.as_mut() {
                helper.pid = 0;
            }
            self.helper_lost(&format!("it exited ({exit:?})"), now);
            return;
        }
        let Some(key) = link.started.remove(&pid) else {
            return;
        };
        let status = match exit {
            Exit::Code(code) => code,
            Exit::Signal(signal) => -signal,
        };
        if let Err(e) = link.send(&ToHelper::End { key, status }) {
            self.helper_lost(&e, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn helper_on(socket: UnixStream, unsent: usize) -> Helper {
        socket.set_nonblocking(true).unwrap();
        Helper {
            pid: 0,
            socket,
            read: wire::LineReader::default(),
            pump: queued(unsent),
        }
    }

    fn queued(unsent: usize) -> Pump {
        let mut pump = Pump::new(READ_CHUNK, MAX_UNSENT);
        pump.queue(&vec![b'x'; unsent]);
        pump
    }

    #[test]
    fn a_helper_that_does_not_read_is_given_up_past_a_mebibyte_unsent() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let mut small = helper_on(ours.try_clone().unwrap(), 1024);
        assert!(flush(&mut small).is_ok());
        assert_eq!(small.pump.unsent(), 0, "the socket took it all");
        // The peer reads nothing: what the socket can't take stays, up to the bound.
        let mut big = helper_on(ours, MAX_UNSENT * 2);
        let e = flush(&mut big).unwrap_err();
        assert!(e.contains("has not read"), "{e}");
        assert!(big.pump.unsent() > MAX_UNSENT);
    }

    #[test]
    fn a_helper_that_closed_its_socket_is_an_error() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        drop(theirs);
        let mut helper = helper_on(ours, 10);
        assert!(flush(&mut helper).is_err());
    }
}
