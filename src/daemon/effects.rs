//! The owners' one way out: [`Effects`] — write a log line, start a job child, arm the minute
//! timer, start or kill the cluster helper, give the log the local zone, read the crontabs
//! (through `database`, which checks them), make the @reboot marker, read and write the
//! `CRON_MISSED=once` state file and the paused entries'. An owner decides and calls these; it
//! never touches the log, `fork`, the timer, the helper or those files itself. [`RealEffects`] does them; [`Recorded`]
//! (tests) writes down what was asked and answers as told, so each owner is unit-tested
//! without processes, a timer, syslog or files (and so without root).

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::rc::Rc;
use std::time::Instant;

use super::scheduler::{missed, paused, retry_state};
use crate::cluster::entry_id::LocalId;
use crate::database::{self, Outcome, Paths, Rules, SourceKey};
use crate::history;
use crate::job::record::{HistorySink, RunFacts};
use crate::job::user_lookup::{self, Identities, Identity, Looked};
use crate::job::{ChildSetup, JobSpec};
use crate::log::{Level, Log, LogLine};
use crate::schedule::Zone;
use crate::sys::spawn::Program;
use crate::sys::timer::MinuteTimer;
use crate::timeline::UtcMinute;
use crate::types::Pid;

/// A run that did not run, as an owner other than the scheduler tells it.
#[derive(Debug, Clone)]
pub(super) struct NotRun {
    pub(super) entry: Option<crate::timeline::EntryId>,
    pub(super) job: JobSpec,
    /// Its slot.
    pub(super) due: UtcMinute,
    pub(super) reason: history::Reason,
    pub(super) words: String,
}

/// What an owner may do to the world.
pub(super) trait Effects {
    /// Writes one line to the daemon's log.
    fn log(&mut self, level: Level, line: LogLine);
    /// Forks the job child of `job` (`first`: its entry's first run since its file was loaded;
    /// `report`: the write end of the pipe on which it says what became of a run asked for on
    /// the control socket; `facts`: the run's id, trigger and slot, for its record).
    fn start(
        &mut self,
        job: &JobSpec,
        first: bool,
        report: Option<OwnedFd>,
        facts: &RunFacts,
    ) -> io::Result<Pid>;
    /// Records the outcome of a slot the daemon did not start (the history link sends it).
    fn record(&mut self, outcome: history::Outcome);
    /// A run another owner did not start (the cluster link: another host ran it, it is
    /// paused), for the scheduler to record under its entry's id.
    fn not_run(&mut self, run: NotRun);
    /// The runs told not run since the last call.
    fn take_not_run(&mut self) -> Vec<NotRun>;
    /// A slot of `job` that did not run was recorded (`outcome`): its `CRON_PING` and
    /// `CRON_WEBHOOK` requests go out, as the job's user, when its policy wants them
    /// (`previous_failed`: the entry's last run that said something failed), within the
    /// daemon's bound ([`super::notices`]).
    fn notify(&mut self, job: &JobSpec, outcome: &history::Outcome, previous_failed: bool);
    /// The outcomes recorded since the last call.
    fn take_records(&mut self) -> Vec<history::Outcome>;
    /// Starts the history writer `program` with `args`, `stdin` its end of the socket: its
    /// pid.
    fn spawn_writer(
        &mut self,
        program: &Path,
        args: &[OsString],
        stdin: OwnedFd,
    ) -> io::Result<u32>;
    /// Where job children record their runs from now on (a new writer's socket).
    fn set_history(&mut self, sink: HistorySink);
    /// A pipe for a job child to tell what became of its job: (read end, non-blocking; write
    /// end), both close-on-exec.
    fn report_pipe(&mut self) -> io::Result<(OwnedFd, OwnedFd)> {
        let (read, write) = crate::sys::pipe::pipe()?;
        crate::sys::poll::set_nonblocking(read.as_fd())?;
        Ok((read, write))
    }
    /// Whether passwd has no user `name` for a job to run as (looked up as [`Effects::start`]
    /// looks it up, the look kept for the job's start): `false` in `--crontab` mode, where every
    /// job is the daemon's own user.
    fn user_unknown(&mut self, name: &[u8]) -> bool;
    /// Arms the minute timer for the start of `minute`.
    fn arm(&mut self, minute: UtcMinute) -> io::Result<()>;
    /// Starts the cluster helper `program` with `args`, its stdin and stdout a socket: its pid
    /// and our end (non-blocking).
    fn spawn_helper(&mut self, program: &Path, args: &[OsString]) -> io::Result<(u32, UnixStream)>;
    /// Kills a child of the daemon (the cluster helper) with SIGKILL.
    fn kill(&mut self, pid: u32);
    /// The local zone was read: the log's time stamps follow it.
    fn local_zone(&mut self, zone: &Zone);
    /// Opens the log again (SIGHUP: a log file rotated away is let go).
    fn reopen_log(&mut self);

    /// Every crontab present now, and the directories that could not be listed
    /// (`database::list_sources`).
    fn list_sources(
        &self,
        paths: &Paths,
        rules: &Rules,
    ) -> (Vec<SourceKey>, Vec<(PathBuf, io::Error)>);
    /// One crontab opened, checked, read and parsed (`database::load`).
    fn load(&self, key: &SourceKey, paths: &Paths, rules: &Rules) -> Outcome;
    /// What the check of a crontab for a change compares (`database::mtime_ns`); `None`: no
    /// such file.
    fn mtime_ns(&self, key: &SourceKey, paths: &Paths) -> Option<i128>;
    /// Makes the @reboot marker at `path`: `true` when it was not there yet (the first start
    /// since the boot).
    fn create_marker(&mut self, path: &Path) -> io::Result<bool>;
    /// The minute the `CRON_MISSED=once` state file in `dir` holds: `Ok(None)` without a file,
    /// `Err` with the reason for one not to trust (`daemon::missed`).
    fn read_handled(&self, dir: &Path) -> Result<Option<UtcMinute>, String>;
    /// Writes minute `handled` to the state file in `dir`, atomically.
    fn write_handled(&mut self, dir: &Path, handled: UtcMinute) -> io::Result<()>;
    /// The ids the paused entries' state file in `dir` holds: `Ok(None)` without a file, `Err`
    /// with the reason when there is one the daemon must not trust.
    fn read_paused(&self, dir: &Path) -> Result<Option<BTreeSet<LocalId>>, String>;
    /// Writes `ids` to the paused entries' state file in `dir`, atomically.
    fn write_paused(&mut self, dir: &Path, ids: &BTreeSet<LocalId>) -> io::Result<()>;
    /// The retries the retries' state file in `dir` keeps: `Ok(None)` without a file, `Err`
    /// with the reason when there is one the daemon must not trust (`scheduler::retry_state`).
    fn read_retries(&self, dir: &Path) -> Result<Option<Vec<retry_state::Kept>>, String>;
    /// Writes `kept` to the retries' state file in `dir`, atomically.
    fn write_retries(&mut self, dir: &Path, kept: &[retry_state::Kept]) -> io::Result<()>;

    fn info(&mut self, line: LogLine) {
        self.log(Level::Info, line);
    }

    fn error(&mut self, line: LogLine) {
        self.log(Level::Error, line);
    }
}

/// The user `job` runs as, looked up as its job child's start looks it up (in `--crontab`
/// mode, `setup.run_as`), the look kept in `identities`.
fn look_up<'a>(identities: &'a mut Identities, setup: &ChildSetup, job: &JobSpec) -> &'a Looked {
    let now = Instant::now();
    match &setup.run_as {
        // `--crontab` mode: every job is the daemon's user, looked up once at start.
        Some(user) => identities.get(&user.name, now, |_| {
            Looked::Found(Identity::of(user.clone()))
        }),
        None => identities.get(job.user(), now, user_lookup::look_up),
    }
}

/// The effects carried out: the log, the job children's setup, the timer (which the loop's
/// poll waits on too), and the users the job children of this second run as (`job::user_lookup`).
pub(super) struct RealEffects {
    pub(super) log: Log,
    setup: ChildSetup,
    timer: Rc<MinuteTimer>,
    identities: Identities,
    records: Vec<history::Outcome>,
    not_run: Vec<NotRun>,
    notices: super::notices::Budget,
}

impl RealEffects {
    pub(super) fn new(log: Log, setup: ChildSetup, timer: Rc<MinuteTimer>) -> RealEffects {
        RealEffects {
            log,
            setup,
            timer,
            identities: Identities::default(),
            records: Vec::new(),
            not_run: Vec::new(),
            notices: super::notices::Budget::default(),
        }
    }

    /// What every job child needs (PAM preloaded), before any fork.
    pub(super) fn setup(&self) -> &ChildSetup {
        &self.setup
    }
}

impl Effects for RealEffects {
    fn log(&mut self, level: Level, line: LogLine) {
        self.log.line(level, &line);
    }

    fn start(
        &mut self,
        job: &JobSpec,
        first: bool,
        report: Option<OwnedFd>,
        facts: &RunFacts,
    ) -> io::Result<Pid> {
        let looked = look_up(&mut self.identities, &self.setup, job);
        crate::job::start(job, &self.setup, looked, first, report, facts)
    }

    fn record(&mut self, outcome: history::Outcome) {
        self.records.push(outcome);
    }

    fn take_records(&mut self) -> Vec<history::Outcome> {
        std::mem::take(&mut self.records)
    }

    fn not_run(&mut self, run: NotRun) {
        self.not_run.push(run);
    }

    fn take_not_run(&mut self) -> Vec<NotRun> {
        std::mem::take(&mut self.not_run)
    }

    fn notify(&mut self, job: &JobSpec, outcome: &history::Outcome, previous_failed: bool) {
        let sends = crate::job::not_run_sends(job, &self.setup, outcome, previous_failed);
        if !sends.any() {
            return;
        }
        let allowed = self
            .notices
            .take(job.user(), outcome.at_ms.div_euclid(1000));
        if allowed.dropped_before > 0 {
            let said = format!(
                "{} not-run slots' requests and mails were not sent last minute: the daemon \
                 starts at most {} senders a minute, {} for one user",
                allowed.dropped_before,
                super::notices::PER_MINUTE,
                super::notices::PER_USER
            );
            self.log.error("CRON", "NOTIFY", &said);
        }
        if !allowed.start {
            return;
        }
        if let Looked::Found(identity) = look_up(&mut self.identities, &self.setup, job) {
            crate::job::send_not_run(job, &self.setup, identity, outcome, sends);
        }
    }

    fn spawn_writer(
        &mut self,
        program: &Path,
        args: &[OsString],
        stdin: OwnedFd,
    ) -> io::Result<u32> {
        let mut command = Program::new(program);
        command
            .args(args)
            .stdin(Stdio::from(stdin))
            .stdout(Stdio::null());
        Ok(command.spawn()?.id())
    }

    fn set_history(&mut self, sink: HistorySink) {
        self.setup.history = Some(sink);
    }

    fn user_unknown(&mut self, name: &[u8]) -> bool {
        if self.setup.run_as.is_some() {
            return false;
        }
        let looked = self
            .identities
            .get(name, Instant::now(), user_lookup::look_up);
        matches!(looked, Looked::Unknown)
    }

    fn arm(&mut self, minute: UtcMinute) -> io::Result<()> {
        self.timer.arm_at(minute.start_second())
    }

    fn spawn_helper(&mut self, program: &Path, args: &[OsString]) -> io::Result<(u32, UnixStream)> {
        let (ours, theirs) = UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        let theirs = OwnedFd::from(theirs);
        let mut command = Program::new(program);
        command
            .args(args)
            .stdin(Stdio::from(theirs.try_clone()?))
            .stdout(Stdio::from(theirs));
        let child = command.spawn()?;
        Ok((child.id(), ours))
    }

    fn kill(&mut self, pid: u32) {
        let _ = crate::sys::process::kill_child(pid);
    }

    fn local_zone(&mut self, zone: &Zone) {
        crate::log::stamps_in(zone.time_zone().clone());
    }

    fn reopen_log(&mut self) {
        self.log.reopen();
    }

    fn list_sources(
        &self,
        paths: &Paths,
        rules: &Rules,
    ) -> (Vec<SourceKey>, Vec<(PathBuf, io::Error)>) {
        database::list_sources(paths, rules)
    }

    fn load(&self, key: &SourceKey, paths: &Paths, rules: &Rules) -> Outcome {
        database::load(key, paths, rules)
    }

    fn mtime_ns(&self, key: &SourceKey, paths: &Paths) -> Option<i128> {
        database::mtime_ns(key, paths)
    }

    fn create_marker(&mut self, path: &Path) -> io::Result<bool> {
        crate::sys::fs::create_marker(path)
    }

    fn read_handled(&self, dir: &Path) -> Result<Option<UtcMinute>, String> {
        missed::read(dir)
    }

    fn write_handled(&mut self, dir: &Path, handled: UtcMinute) -> io::Result<()> {
        missed::write(dir, handled)
    }

    fn read_paused(&self, dir: &Path) -> Result<Option<BTreeSet<LocalId>>, String> {
        paused::read(dir)
    }

    fn write_paused(&mut self, dir: &Path, ids: &BTreeSet<LocalId>) -> io::Result<()> {
        paused::write(dir, ids)
    }

    fn read_retries(&self, dir: &Path) -> Result<Option<Vec<retry_state::Kept>>, String> {
        retry_state::read(dir)
    }

    fn write_retries(&mut self, dir: &Path, kept: &[retry_state::Kept]) -> io::Result<()> {
        retry_state::write(dir, kept)
    }
}

/// Effects written down instead of done, for the owners' tests: each log line as syslog would
/// get it, each job started (by command), each minute armed. Starts fail while `fail_starts`
/// is above zero; the helper's other end is kept in `helper`. The files are kept here too:
/// the crontabs a load finds (`crontabs`), the markers made, the state files' minutes.
#[cfg(test)]
#[derive(Debug, Default)]
pub(super) struct Recorded {
    pub(super) lines: Vec<(Level, String)>,
    pub(super) started: Vec<(String, bool)>,
    pub(super) armed: Vec<UtcMinute>,
    pub(super) fail_starts: usize,
    pub(super) helper: Option<UnixStream>,
    pub(super) killed: Vec<u32>,
    /// The local zones handed to the log, by name.
    pub(super) zones: Vec<String>,
    /// How many times the log was opened again.
    pub(super) reopened: usize,
    /// The crontabs there are, as a load finds them.
    pub(super) crontabs: std::collections::BTreeMap<SourceKey, Found>,
    /// The markers made.
    pub(super) markers: std::collections::BTreeSet<PathBuf>,
    /// Each state directory's file: the minute written (or put there by the test), or the
    /// reason a read gives for not trusting it.
    pub(super) handled: std::collections::BTreeMap<PathBuf, Result<UtcMinute, String>>,
    /// Each state directory's paused ids, as written (or put there by the test), or the reason
    /// a read gives for not trusting the file; with `fail_paused_writes`, a write fails.
    pub(super) paused: std::collections::BTreeMap<PathBuf, Result<BTreeSet<LocalId>, String>>,
    /// With `fail_paused_writes`, the retries' file can't be written either.
    pub(super) fail_paused_writes: bool,
    /// Each state directory's kept retries, as written (or put there by the test), or the
    /// reason a read gives for not trusting the file; and how many writes were asked for.
    pub(super) retries: std::collections::BTreeMap<PathBuf, Result<Vec<retry_state::Kept>, String>>,
    pub(super) retries_written: usize,
    /// The report pipes handed to the job children started (their write ends).
    pub(super) reports: Vec<OwnedFd>,
    /// The users passwd does not know.
    pub(super) unknown_users: std::collections::BTreeSet<Vec<u8>>,
    /// The runs started, with what their record would say of them.
    pub(super) facts: Vec<RunFacts>,
    /// The outcomes recorded, and those the history link took.
    pub(super) records: Vec<history::Outcome>,
    pub(super) taken: Vec<history::Outcome>,
    pub(super) not_run: Vec<NotRun>,
    /// The slots that did not run whose requests were asked for: command, reason, whether the
    /// entry's last run failed.
    pub(super) notified: Vec<(String, history::Reason, bool)>,
    /// The history writer's other end, and where job children were last told to record;
    /// with `fail_spawns`, the writer can't be started.
    pub(super) writer: Option<OwnedFd>,
    pub(super) fail_spawns: bool,
    pub(super) history: Option<HistorySink>,
    next_pid: i32,
}

/// A crontab as [`Recorded`]'s load finds it: when it was changed last, and its text with the
/// uid a user's crontab was checked for, or the trust check's refusal.
#[cfg(test)]
#[derive(Debug, Clone)]
pub(super) struct Found {
    pub(super) mtime_ns: i128,
    pub(super) text: Result<(String, Option<crate::types::Uid>), crate::trust::Refusal>,
}

#[cfg(test)]
impl Recorded {
    /// The log lines that contain `text`.
    pub(super) fn logged(&self, text: &str) -> Vec<&str> {
        self.lines
            .iter()
            .map(|(_, l)| l.as_str())
            .filter(|l| l.contains(text))
            .collect()
    }

    /// Puts the crontab of `key` there with `text` (a user's checked for its uid `owner_uid`),
    /// changed last at `mtime_ns`.
    pub(super) fn put(
        &mut self,
        key: SourceKey,
        text: &str,
        owner_uid: Option<crate::types::Uid>,
        mtime_ns: i128,
    ) {
        let text = Ok((text.to_string(), owner_uid));
        self.crontabs.insert(key, Found { mtime_ns, text });
    }

    /// Forgets what was recorded so far.
    pub(super) fn clear(&mut self) {
        self.lines.clear();
        self.started.clear();
        self.armed.clear();
    }
}

#[cfg(test)]
impl Effects for Recorded {
    fn log(&mut self, level: Level, line: LogLine) {
        let text = String::from_utf8_lossy(&line.to_bytes()).into_owned();
        self.lines.push((level, text));
    }

    fn start(
        &mut self,
        job: &JobSpec,
        first: bool,
        report: Option<OwnedFd>,
        facts: &RunFacts,
    ) -> io::Result<Pid> {
        self.reports.extend(report);
        self.facts.push(facts.clone());
        if self.fail_starts > 0 {
            self.fail_starts -= 1;
            return Err(io::Error::from_raw_os_error(11));
        }
        self.next_pid += 1;
        let command = String::from_utf8_lossy(job.command()).into_owned();
        self.started.push((command, first));
        Ok(Pid(1000 + self.next_pid))
    }

    fn user_unknown(&mut self, name: &[u8]) -> bool {
        self.unknown_users.contains(name)
    }

    fn arm(&mut self, minute: UtcMinute) -> io::Result<()> {
        self.armed.push(minute);
        Ok(())
    }

    fn spawn_helper(&mut self, _: &Path, _: &[OsString]) -> io::Result<(u32, UnixStream)> {
        let (ours, theirs) = UnixStream::pair()?;
        ours.set_nonblocking(true)?;
        self.helper = Some(theirs);
        self.next_pid += 1;
        Ok(((1000 + self.next_pid) as u32, ours))
    }

    fn kill(&mut self, pid: u32) {
        self.killed.push(pid);
    }

    fn record(&mut self, outcome: history::Outcome) {
        self.records.push(outcome);
    }

    fn take_records(&mut self) -> Vec<history::Outcome> {
        let taken = std::mem::take(&mut self.records);
        self.taken.extend(taken.iter().cloned());
        taken
    }

    fn not_run(&mut self, run: NotRun) {
        self.not_run.push(run);
    }

    fn take_not_run(&mut self) -> Vec<NotRun> {
        std::mem::take(&mut self.not_run)
    }

    fn notify(&mut self, job: &JobSpec, outcome: &history::Outcome, previous_failed: bool) {
        if let history::Result::NotRun { reason, .. } = &outcome.result {
            let command = String::from_utf8_lossy(job.command()).into_owned();
            self.notified.push((command, *reason, previous_failed));
        }
    }

    fn spawn_writer(&mut self, _: &Path, _: &[OsString], stdin: OwnedFd) -> io::Result<u32> {
        if self.fail_spawns {
            return Err(io::Error::from(io::ErrorKind::NotFound));
        }
        self.writer = Some(stdin);
        self.next_pid += 1;
        Ok((1000 + self.next_pid) as u32)
    }

    fn set_history(&mut self, sink: HistorySink) {
        self.history = Some(sink);
    }

    fn local_zone(&mut self, zone: &Zone) {
        self.zones.push(zone.name().to_string());
    }

    fn reopen_log(&mut self) {
        self.reopened += 1;
    }

    fn list_sources(&self, _: &Paths, _: &Rules) -> (Vec<SourceKey>, Vec<(PathBuf, io::Error)>) {
        (self.crontabs.keys().cloned().collect(), Vec::new())
    }

    /// The crontab's text parsed as `database::load` parses a trusted file's.
    fn load(&self, key: &SourceKey, paths: &Paths, rules: &Rules) -> Outcome {
        match self.crontabs.get(key) {
            None => Outcome::Missing,
            Some(Found {
                text: Err(refusal), ..
            }) => Outcome::Refused(*refusal, key.tab_name(paths)),
            Some(Found {
                text: Ok((text, owner_uid)),
                mtime_ns,
            }) => Outcome::Loaded {
                crontab: Box::new(database::parse(
                    key,
                    &key.tab_name(paths),
                    text.as_bytes(),
                    rules,
                    *owner_uid,
                )),
                owner_uid: *owner_uid,
                mtime_ns: *mtime_ns,
                target: None,
            },
        }
    }

    fn mtime_ns(&self, key: &SourceKey, _: &Paths) -> Option<i128> {
        self.crontabs.get(key).map(|found| found.mtime_ns)
    }

    fn create_marker(&mut self, path: &Path) -> io::Result<bool> {
        Ok(self.markers.insert(path.to_path_buf()))
    }

    fn read_handled(&self, dir: &Path) -> Result<Option<UtcMinute>, String> {
        self.handled.get(dir).cloned().transpose()
    }

    fn write_handled(&mut self, dir: &Path, handled: UtcMinute) -> io::Result<()> {
        self.handled.insert(dir.to_path_buf(), Ok(handled));
        Ok(())
    }

    fn read_paused(&self, dir: &Path) -> Result<Option<BTreeSet<LocalId>>, String> {
        self.paused.get(dir).cloned().transpose()
    }

    fn write_paused(&mut self, dir: &Path, ids: &BTreeSet<LocalId>) -> io::Result<()> {
        if self.fail_paused_writes {
            return Err(io::Error::other("no space left on device"));
        }
        self.paused.insert(dir.to_path_buf(), Ok(ids.clone()));
        Ok(())
    }

    fn read_retries(&self, dir: &Path) -> Result<Option<Vec<retry_state::Kept>>, String> {
        self.retries.get(dir).cloned().transpose()
    }

    fn write_retries(&mut self, dir: &Path, kept: &[retry_state::Kept]) -> io::Result<()> {
        self.retries_written += 1;
        if self.fail_paused_writes {
            return Err(io::Error::other("no space left on device"));
        }
        self.retries.insert(dir.to_path_buf(), Ok(kept.to_vec()));
        Ok(())
    }
}
