//! The job child (docs/design.md §5, §6): the daemon forks one per job ([`start`]); it stays root
//! for the job's life, as Vixie's, Debian's and cronie's do, and holds the PAM session
//! (`session`); there is no second copy of the daemon per job. It lives in three phases.
//! **Prepare**: reset signals, close the daemon's descriptors, log as `CRON` from then on, take
//! the user and its ids (`as_user::Credentials`, groups included) as the daemon looked them up
//! before the fork (`identity`: at most once a second per user), start a session, compute the
//! clean environment (`env`). **Run** (`shell`): the shell is started with vfork semantics and
//! becomes the user between the clone and the exec (`sys::as_user`), in HOME (or in `/`, as
//! Debian's, when HOME can't be entered: a notice on the entry's first run after its file was
//! loaded, nothing on the others, since www-data's or nobody's missing home would otherwise be
//! a line every minute); the text after `%` reaches it through a writer grandchild of the user
//! (`stdin`); its stdout and stderr share one pipe, which this root process reads as bytes
//! only into `output` until the shell exits, then the shell and the writer are reaped. When no
//! process can be made for the shell or the writer, the child exits with [`NOT_STARTED`]
//! and logs nothing: the daemon puts the run back in its queue. **Report**:
//! mail the output (`mail`) or, with `-s`, log it as `CMDOUT` lines, log END (and with `-s`
//! cronie's CMDEND) (`log::messages`), and exit with `_exit`. With `CRON_TIMEOUT`, between the
//! report and the exit, the child keeps the limit on what the shell left in its process group
//! until that group is empty or has had its signals (`shell::watch_left_group`): the daemon
//! sees the run as going on until then (CRON_OVERLAP, a cluster run's END, the metrics'
//! duration and timeout count). The child never returns into the daemon's code: a panic aborts
//! the child only.
//!
//! Every process of the job runs as its user, with ids taken before its first instruction of
//! the job's: the shell, the stdin writer, the output drain, the MTA, and the signals of
//! `CRON_TIMEOUT`. What root keeps is the PAM session and the output's bytes (in memory and an
//! unnamed spill file of root's, which no process of the user can reach). The job's log lines
//! are built by `log::messages` only.

pub mod env;
pub mod mail;
pub mod notify;
pub mod output;
mod pam_session;
pub mod record;
pub mod report;
pub mod user_lookup;
pub use crate::database::entries::JobSpec;
pub use pam_session::preload_pam;
mod shell;
pub mod stdin;
#[cfg(test)]
pub(crate) mod test_support;
#[cfg(test)]
mod tests;
pub mod time_limit;

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use crate::crontab::JobInput;
use crate::crontab::policy::Notify;
use crate::history::notify::{self as policy, Verdict};
use crate::history::{self, Mail, Reason};
use crate::job::report::{End, Said};
use crate::log::messages::{self, JobExit, JobLogMask};
use crate::log::{JobFields, Level, Log, LogLine};
use crate::sys::as_user::{Credentials, Fault};
use crate::sys::process::{self, Pid};
use crate::sys::signal;
use crate::sys::spawn::{self, Forked};
use crate::sys::user::User;
use env::{environment, lookup};
use mail::{JobMail, MailCommand, MailConfig, MailOutcome, RunAs};
use output::Output;
use record::{HistorySink, Recorder, RunEnd, RunFacts};
use shell::{Finished, ShellFailure};
use user_lookup::{Identity, Looked};

/// What the child inherits from the daemon's configuration.
#[derive(Debug, Clone)]
pub struct ChildSetup {
    pub log: Log,
    /// Debian's `-L` bitmask.
    pub log_mask: JobLogMask,
    /// cronie's `-P`: the daemon's PATH instead of the default.
    pub inherited_path: Option<OsString>,
    /// `--keep-env`: the daemon's variables jobs get, read once at start (`env::kept`).
    pub kept_env: Vec<(Vec<u8>, Vec<u8>)>,
    /// `--crontab` mode: every job runs as this user, the daemon's own, looked up once at
    /// start (made up by `env::user_without_passwd` for a uid passwd doesn't know).
    pub run_as: Option<User>,
    /// Where the job's output goes.
    pub output: OutputTo,
    /// The most output kept per job (`--max-output`); `None`: no limit.
    pub max_output: Option<u64>,
    /// Where output beyond memory spills (`sys::tmpfile::default_dir()`: the daemon's
    /// `TMPDIR`, read once at start).
    pub spill_dir: std::path::PathBuf,
    /// Run each job in a PAM session (Debian's service `cron`); `None`: `--no-pam`, a build
    /// without PAM, or a daemon that is not root.
    pub pam: Option<PamSetup>,
    /// In the job child of a run asked for with `cronctl run`: where it tells the daemon what
    /// became of the job. `None` in the daemon and for every other run.
    pub report: Option<Report>,
    /// The pipe every job child tells the daemon how its job ended (or why nothing of it
    /// ran) on, each line after the child's pid ([`Said::outcome_line`]); the daemon keeps it
    /// with the entry's last runs (`cronctl list`, `cronctl show`). Its write end is
    /// non-blocking: a line the full pipe does not take is lost, and the run shows without
    /// its reason. `None` where nobody reads it (tests, `--check`).
    pub outcomes: Option<Report>,
    /// Where each run's outcome is recorded (`--history`); `None`: no history.
    pub history: Option<HistorySink>,
    /// In a job child with a history: its run's recorder. `None` in the daemon.
    pub recorder: Option<Recorder>,
    /// In a job child: its entry's id, which its log lines carry. `None` in the daemon.
    pub run_id: Option<String>,
    /// Which runs notify where their crontab has no `CRON_NOTIFY` (`--notify`).
    pub notify: Notify,
    /// In a job child: whether its entry's previous run failed (`RunFacts::previous_failed`).
    pub previous_failed: bool,
    /// In a job child: its run's `CRON_RETRY` plan (`RunFacts::retry`).
    pub retry: Option<crate::history::retry::Plan>,
    /// In a job child: when the daemon started it (`RunFacts::started_ms`).
    pub started_ms: i64,
    /// In a job child: its job failed and its slot tries again (`crate::history::retry`), so
    /// this run notifies nobody.
    pub retried: bool,
    /// The helper that sends `CRON_PING` and `CRON_WEBHOOK` requests; `None`: none are sent.
    pub notifier: Option<notify::Notifier>,
    /// In a job child whose entry sets `CRON_PING` or `CRON_WEBHOOK`, or may mail a slot that
    /// did not run: the run's id and record.
    pub notice: Option<Notice>,
}

/// A run's requests: its id (`rid`) and its record, its result still to be given.
#[derive(Debug, Clone)]
pub struct Notice {
    pub rid: String,
    pub blank: history::Outcome,
    /// Whether the entry sets `CRON_PING` or `CRON_WEBHOOK` (else only the mail of a slot
    /// that did not run is sent).
    pub requests: bool,
}

/// The write end of the pipe on which a job child started for `cronctl run` tells the daemon
/// whether the job started as its user, and how it ended (`control::report`). The daemon reads
/// the other end; a line the daemon no longer reads is lost (SIGPIPE is ignored here).
#[derive(Debug, Clone)]
pub struct Report(std::sync::Arc<std::fs::File>);

impl Report {
    pub fn new(write_end: std::os::fd::OwnedFd) -> Report {
        Report(std::sync::Arc::new(std::fs::File::from(write_end)))
    }

    /// Writes one line: a few dozen bytes, at most a short reason, so one write within
    /// PIPE_BUF that the daemon reads whole.
    fn say(&self, line: &str) {
        use std::io::Write;
        let _ = (&*self.0).write_all(line.as_bytes());
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

impl ChildSetup {
    /// Tells the daemon `said`: on the pipe of a run asked for with `cronctl run`, and, when
    /// it ends the run, on the pipe of every run's outcome.
    fn tell(&self, said: Said) {
        if let Some(report) = &self.report {
            report.say(&said.line());
        }
        if let Some(outcomes) = &self.outcomes
            && let Some(line) = said.outcome_line(std::process::id())
        {
            outcomes.say(&line);
        }
    }

    /// What the JSON log says of this child's job: its entry, id and command, and its shell's
    /// pid.
    fn log_fields(&self, spec: &JobSpec, pid: Option<u32>) -> crate::log::JobFields {
        crate::log::JobFields {
            id: self.run_id.clone(),
            ..spec.log_fields(pid)
        }
    }

    /// The entry's notification policy: its `CRON_NOTIFY`, else the daemon's `--notify`.
    fn notify_policy(&self, spec: &JobSpec) -> Notify {
        if self.retried {
            return Notify::Never;
        }
        spec.env().policy().notify.unwrap_or(self.notify)
    }

    /// Tells the daemon that nothing of the job runs, and why, and records it (`why`).
    fn tell_not_started(&self, why: Reason, reason: impl Into<String>) {
        let reason = reason.into();
        if let Some(recorder) = &self.recorder {
            recorder.not_run(why, &reason, self.log);
        }
        self.tell(Said::NotStarted { why, reason });
    }

    /// The requests and mail of a job refused before it started (`why`, in `words`), sent as
    /// `identity`'s user when its entry asks for them and its policy wants this outcome. Only
    /// PAM refuses a job that far: without it, nothing calls this.
    #[cfg(feature = "pam")]
    fn notify_not_started(&self, spec: &JobSpec, identity: &Identity, why: Reason, words: &str) {
        let Some(notice) = &self.notice else {
            return;
        };
        let outcome = history::Outcome {
            at_ms: record::now_ms(),
            result: history::Result::NotRun {
                reason: why,
                words: words.to_string(),
            },
            ..notice.blank.clone()
        };
        let sends = not_run_sends(spec, self, &outcome, self.previous_failed);
        if sends.any() {
            send_not_run(spec, self, identity, &outcome, sends);
        }
    }
}

/// How jobs go through PAM.
#[derive(Debug, Clone)]
pub struct PamSetup {
    /// Where the service file is read from (`--pam-dir`); `None`: /etc/pam.d.
    pub confdir: Option<std::path::PathBuf>,
}

/// Where a job's output goes once the shell has exited.
#[derive(Debug, Clone)]
pub enum OutputTo {
    /// cronie's `-s`: one `CMDOUT` log line per line of output.
    Syslog,
    /// Mail (docs/design.md §6).
    Mail(MailSetup),
}

/// The daemon's mail options.
#[derive(Debug, Clone)]
pub struct MailSetup {
    /// `-m CMD|off`, or the sendmail path (`--sendmail`).
    pub command: MailCommand,
    /// Debian's `-n`: the full host name in the subject.
    pub full_host: bool,
    /// The daemon locale's charset (`daemon::options::charset_from_env()` at start).
    pub charset: String,
}

/// Forks the job child; returns its pid in the daemon. `looked`: the entry's user as the
/// daemon looked it up (`identity`; in `--crontab` mode `setup.run_as`, whom every job runs
/// as). `first`: the entry's first run since its file was loaded, which the daemon remembers
/// (a HOME that can't be entered is logged on that run only). `report`: the write end of the
/// pipe on which the child tells the daemon what became of a run asked for with `cronctl run`.
/// `facts`: the run's id, trigger and slot, for its record.
pub fn start(
    spec: &JobSpec,
    setup: &ChildSetup,
    looked: &Looked,
    first: bool,
    report: Option<OwnedFd>,
    facts: &RunFacts,
) -> io::Result<Pid> {
    setup.log.prepare_for_job_child();
    match spawn::fork_single_threaded()? {
        Forked::Parent(pid) => Ok(pid),
        Forked::Child => {
            let run = || run_child(spec, setup, looked, first, report, facts);
            let code = std::panic::catch_unwind(std::panic::AssertUnwindSafe(run)).unwrap_or(1);
            process::exit_immediately(code)
        }
    }
}

/// The child's whole life; returns its exit status (0: the job ran and succeeded).
fn run_child(
    spec: &JobSpec,
    setup: &ChildSetup,
    looked: &Looked,
    first: bool,
    report: Option<OwnedFd>,
    facts: &RunFacts,
) -> i32 {
    // The daemon's handlers go first (one must not write into a descriptor number reused
    // below), then the daemon's descriptors; the syslog socket was among them, and the child
    // logs as Debian's does, `CRON[pid]`.
    signal::reset_in_child();
    // The child itself keeps SIGPIPE ignored (an MTA that exits early is a status, not our
    // death); std gives the shell and the MTA the default back.
    signal::ignore_sigpipe();
    // And it outlives a SIGTERM to its process group: it reports the job's end.
    signal::survive_sigterm();
    let outcomes = setup.outcomes.as_ref().map(Report::fd);
    let history = setup.history.as_ref().map(|h| h.socket.as_fd());
    let kept: Vec<BorrowedFd<'_>> = report
        .as_ref()
        .map(|fd| fd.as_fd())
        .into_iter()
        .chain(outcomes)
        .chain(history)
        .collect();
    process::close_all_above_stderr_but(&kept);
    let setup = &ChildSetup {
        report: report.map(Report::new),
        recorder: setup
            .history
            .as_ref()
            .map(|sink| Recorder::new(sink, spec, facts)),
        run_id: Some(facts.id.clone()),
        previous_failed: facts.previous_failed,
        retry: facts.retry,
        started_ms: facts.started_ms,
        notice: notice_of(spec, setup, facts),
        log: setup.log.for_job_child(),
        log_mask: if spec.quiet() {
            setup.log_mask.quiet()
        } else {
            setup.log_mask
        },
        ..setup.clone()
    };
    if let Err(e) = process::setsid() {
        setup
            .log
            .error(spec.user(), "ERROR", &format!("setsid failed: {e}"));
    }
    let Some(identity) = resolve_user(spec, setup, looked) else {
        return 1;
    };
    match &setup.pam {
        Some(pam) => pam_session::run_in_session(spec, setup, identity, pam, first),
        None => run_job(spec, setup, identity, Vec::new(), first),
    }
}

/// The run's id and record when its entry asks for requests, or may mail a slot that did not
/// run, and a helper can send them.
fn notice_of(spec: &JobSpec, setup: &ChildSetup, facts: &RunFacts) -> Option<Notice> {
    let requests = notify::asked_by(spec.env());
    if !(requests || mails_not_run(spec, setup)) || setup.notifier.is_none() {
        return None;
    }
    let blank = record::blank(spec, facts, &this_host(setup));
    // Only requests use the run's id (a slot that did not run is given its own).
    let rid = if requests {
        notify::rid_for(&blank)
    } else {
        String::new()
    };
    Some(Notice {
        rid,
        blank,
        requests,
    })
}

/// This host's name as records give it: the history's, else the system's.
fn this_host(setup: &ChildSetup) -> String {
    match &setup.history {
        Some(sink) => sink.host.clone(),
        None => String::from_utf8_lossy(&crate::sys::hostname()).into_owned(),
    }
}

/// Starts the helper for the run's start (`outcome` `None`) or its end, when the entry's
/// `CRON_NOTIFY` lets this run notify.
fn send_notice(
    spec: &JobSpec,
    setup: &ChildSetup,
    prepared: &Prepared,
    outcome: Option<&history::Outcome>,
) {
    let (Some(notifier), Some(notice)) = (&setup.notifier, &setup.notice) else {
        return;
    };
    if !notice.requests {
        return;
    }
    let policy = setup.notify_policy(spec);
    let wanted = match outcome {
        // A retry's start is not pinged again: its slot's run started at the first attempt.
        None => {
            notify_start_wanted(spec, policy)
                && setup.retry.is_none_or(|plan| plan.attempt.number == 1)
        }
        Some(o) => policy::wanted_outcome(policy, o, setup.previous_failed),
    };
    if wanted {
        let who = notify::As {
            creds: prepared.creds.as_ref(),
            env: &prepared.env,
        };
        notifier.start(&notice.rid, outcome, None, who, setup.log);
    }
}

/// What a slot of an entry that did not run sends, when a helper can send it and the entry's
/// `CRON_NOTIFY` (else `--notify`) wants it told.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotRunSends {
    /// Its `CRON_PING` and `CRON_WEBHOOK` requests.
    pub requests: bool,
    /// A mail saying that it did not run, and why ([`mails_not_run`]).
    pub mail: bool,
}

impl NotRunSends {
    pub fn any(self) -> bool {
        self.requests || self.mail
    }
}

/// What a slot of `spec` that did not run (`outcome`) sends; `previous_failed`: the entry's
/// last run that said something failed.
pub fn not_run_sends(
    spec: &JobSpec,
    setup: &ChildSetup,
    outcome: &history::Outcome,
    previous_failed: bool,
) -> NotRunSends {
    let policy = setup.notify_policy(spec);
    if setup.notifier.is_none() || !policy::wanted_outcome(policy, outcome, previous_failed) {
        return NotRunSends::default();
    }
    NotRunSends {
        requests: notify::asked_by(spec.env()),
        mail: mails_not_run(spec, setup),
    }
}

/// Whether a slot of `spec` that did not run is mailed when its policy wants it told: only
/// under `failure` and `change`. Under `always`, as in every cron, a mail carries a run's
/// output, and such a slot has none. Not with `-s`, `-m off` or an empty `MAILTO`.
fn mails_not_run(spec: &JobSpec, setup: &ChildSetup) -> bool {
    let asked = matches!(setup.notify_policy(spec), Notify::Failure | Notify::Change);
    let mail_on = match &setup.output {
        OutputTo::Mail(mail) => mail.command != MailCommand::Off,
        OutputTo::Syslog => false,
    };
    asked && mail_on && spec.env().get(b"MAILTO") != Some(b"".as_slice())
}

/// Starts the helper for a slot of `spec` that did not run, as `identity`'s user with the
/// job's environment (as a run's would be, without PAM's): from the daemon for a slot it did
/// not start, from a job child for a job PAM refused. An unknown user has no one to send as.
pub fn send_not_run(
    spec: &JobSpec,
    setup: &ChildSetup,
    identity: &Identity,
    outcome: &history::Outcome,
    sends: NotRunSends,
) {
    let Some(notifier) = &setup.notifier else {
        return;
    };
    let creds = match &identity.creds {
        Ok(creds) => creds.as_ref(),
        Err(e) => {
            let said = format!(
                "cannot send as {}: {e}",
                String::from_utf8_lossy(spec.user())
            );
            return setup.log.error("CRON", "NOTIFY", &said);
        }
    };
    let env = environment(
        &identity.user,
        spec.env(),
        setup.inherited_path.as_deref(),
        &setup.kept_env,
        Vec::new(),
    );
    let mut outcome = outcome.clone();
    if outcome.host.is_empty() {
        outcome.host = this_host(setup);
    }
    let who = notify::As { creds, env: &env };
    let mail = match &setup.output {
        OutputTo::Mail(mail) if sends.mail => Some(mail),
        _ => None,
    };
    let rid = notify::rid_for(&outcome);
    notifier.start(&rid, Some(&outcome), mail, who, setup.log);
}

/// A start is pinged under `always`, to an entry with `CRON_PING`.
fn notify_start_wanted(spec: &JobSpec, policy: Notify) -> bool {
    crate::history::notify::start_wanted(policy)
        && spec.env().get(b"CRON_PING").is_some_and(|v| !v.is_empty())
}

/// The job, from this root process: runs the shell as the user, reports. `pam_env` is the PAM
/// environment, under the job's own; `first`: the entry's first run since its file was loaded.
fn run_job(
    spec: &JobSpec,
    setup: &ChildSetup,
    identity: &Identity,
    pam_env: Vec<(Vec<u8>, Vec<u8>)>,
    first: bool,
) -> i32 {
    run_job_with(spec, setup, identity, pam_env, first, Fault::NONE)
}

/// [`run_job`], the shell's start failing at `fault`'s step (the tests').
fn run_job_with(
    spec: &JobSpec,
    setup: &ChildSetup,
    identity: &Identity,
    pam_env: Vec<(Vec<u8>, Vec<u8>)>,
    first: bool,
    fault: Fault,
) -> i32 {
    let Some(mut prepared) = prepare(spec, setup, identity, pam_env) else {
        return 1;
    };
    prepared.fault = fault;
    send_notice(spec, setup, &prepared, None);
    let finished = match shell::run_shell(spec, setup, &prepared, first) {
        Ok(finished) => finished,
        Err(ShellFailure::Logged) => return 1,
        Err(ShellFailure::Retry) => {
            // Not an outcome: the daemon starts the run again, and that start is recorded.
            setup.tell(Said::NotStarted {
                why: Reason::ForkFailed,
                reason: "no process could be made for it (a process limit?); the run is \
                         queued and retried"
                    .into(),
            });
            return NOT_STARTED;
        }
    };
    // What the shell and its processes used, before the MTA (a child too) adds its own.
    let usage = process::children_usage();
    // A failure that its slot tries again notifies nobody: the slot's last attempt does.
    let quiet = retried_setup(setup, &finished);
    let setup = quiet.as_ref().unwrap_or(setup);
    let mail = report(spec, setup, &prepared, &finished);
    let end = match finished.exit {
        JobExit::Signaled { signal, .. } => End::Signaled(signal),
        JobExit::Exited(code) => End::Exited(code),
    };
    setup.tell(Said::Ended {
        end,
        duration_ms: finished.duration_ms,
    });
    let succeeded = finished.exit.success();
    let mut timed_out = finished.timed_out.is_some();
    let keep = match (&setup.recorder, &setup.notice) {
        (Some(recorder), _) => Some(recorder.keep_output()),
        (None, Some(_)) => Some(notify::MAX_TAIL as u64),
        (None, None) => None,
    };
    let kept = keep.map(|keep| {
        let output = &finished.output;
        let (head, tail) = output.head_and_tail(keep);
        (head, tail, output.total_bytes())
    });
    // The job has ended (END logged, output mailed); with CRON_TIMEOUT what its shell left in
    // its process group stays under the limit, and this process stays until that group is
    // empty or has had its signals. The output and the spill file go first.
    let left_group = finished.left_group;
    drop(finished.output);
    if let Some(left) = left_group {
        let signaller = (setup.log, prepared.creds.as_ref(), setup.run_id.as_deref());
        timed_out |= shell::watch_left_group(spec, signaller, left);
    }
    if let Some((head, tail, output_bytes)) = kept {
        let run = RunEnd {
            end: history_end(finished.exit),
            duration_ms: finished.duration_ms,
            timed_out,
            usage,
            output_bytes,
            head,
            tail,
            mail,
        };
        record_and_notify(spec, setup, &prepared, run);
    }
    child_exit_code(succeeded, timed_out)
}

/// This child's setup when its job failed and its slot tries again (`CRON_RETRY`): it
/// notifies nobody. `None` for any other run.
fn retried_setup(setup: &ChildSetup, finished: &Finished) -> Option<ChildSetup> {
    let verdict = Verdict::of_run(history_end(finished.exit), finished.timed_out.is_some());
    // Its end as the daemon counts it (`RunFacts::started_ms`): the daemon queues the retry
    // exactly when this says it is silent.
    let ended_ms = setup.started_ms + finished.duration_ms as i64;
    let said = crate::history::retry::notifying(setup.retry.as_ref(), verdict, ended_ms);
    (verdict == Verdict::Failed && said == Verdict::Silent).then(|| ChildSetup {
        retried: true,
        ..setup.clone()
    })
}

/// The run's outcome, to the history (`--history`) and to its requests (`CRON_PING`,
/// `CRON_WEBHOOK`).
fn record_and_notify(spec: &JobSpec, setup: &ChildSetup, prepared: &Prepared, run: RunEnd) {
    let blank = setup.recorder.as_ref().map(Recorder::blank);
    let Some(blank) = blank.or(setup.notice.as_ref().map(|n| &n.blank)) else {
        return;
    };
    let outcome = record::ran(blank, run);
    if let Some(recorder) = &setup.recorder {
        recorder.ran(&outcome, setup.log);
    }
    send_notice(spec, setup, prepared, Some(&outcome));
}

/// The job child's exit status when nothing of the job ran because no process could be made
/// for it (its shell or its stdin writer: a pids or process limit, no memory): EX_TEMPFAIL.
/// Nothing was logged as a run and nothing mailed; the daemon puts the run back in its queue,
/// to start again when it retries its own failed forks, and counts it with them.
pub const NOT_STARTED: i32 = 75;

/// The job child's exit status, which the daemon counts (`--metrics`): 0 the job ran and
/// succeeded, 1 it failed or did not run, 2 it reached `CRON_TIMEOUT` (its shell, or what the
/// shell left in its process group, after the job's end was logged and mailed).
pub fn child_exit_code(succeeded: bool, timed_out: bool) -> i32 {
    match (succeeded, timed_out) {
        (_, true) => 2,
        (true, false) => 0,
        (false, false) => 1,
    }
}

/// What the job runs with.
struct Prepared {
    /// The user's name, as the daemon is told the job started.
    user: String,
    /// The user's ids, which every process of the job takes (`None`: this process is the user
    /// already, a daemon that is not root).
    creds: Option<Credentials>,
    /// The whole environment: PAM's, then Debian's defaults and the crontab's over it.
    env: Vec<(Vec<u8>, Vec<u8>)>,
    /// Without PAM's: what the mail's `X-Cron-Env` lines show, as Debian's.
    cron_env: Vec<(Vec<u8>, Vec<u8>)>,
    input: JobInput,
    /// The step at which the shell's start fails: [`Fault::NONE`] but in the tests.
    fault: Fault,
}

/// The entry's user as the daemon looked it up before the fork (in `--crontab` mode, the
/// daemon's own, `setup.run_as`); `None` (logged) when unknown or no longer the uid the
/// crontab was checked for.
fn resolve_user<'a>(
    spec: &JobSpec,
    setup: &ChildSetup,
    looked: &'a Looked,
) -> Option<&'a Identity> {
    let log = setup.log;
    let who = spec.user();
    let identity = match looked {
        Looked::Found(identity) => identity,
        Looked::Unknown => {
            let line = messages::unknown_user_line(who, &spec.owner.tab);
            log.line(Level::Error, &line);
            let name = String::from_utf8_lossy(who);
            let words = format!("user {name} unknown (no passwd entry)");
            setup.tell_not_started(Reason::UserUnknown, words);
            return None;
        }
        Looked::Failed(e) => {
            log.error(
                who,
                "ERROR",
                &format!("getpwnam() failed: {e}; entry of {}", spec.owner.tab),
            );
            let words = format!("the user could not be looked up: {e}");
            setup.tell_not_started(Reason::NotStarted, words);
            return None;
        }
    };
    let uid = identity.user.uid;
    let checked = spec.owner.uid.filter(|_| setup.run_as.is_none());
    if let Some(checked) = checked.filter(|&checked| checked != uid) {
        let line = messages::uid_changed_line(who, checked, uid, &spec.owner.tab);
        log.line(Level::Error, &line);
        setup.tell_not_started(
            Reason::UserUnknown,
            format!(
                "its user's uid is now {}, not the {} its crontab was checked for",
                uid.0, checked.0
            ),
        );
        return None;
    }
    Some(identity)
}

/// The user's ids and the job's environment. `None` when the job must not run (logged).
fn prepare(
    spec: &JobSpec,
    setup: &ChildSetup,
    identity: &Identity,
    pam_env: Vec<(Vec<u8>, Vec<u8>)>,
) -> Option<Prepared> {
    let user = &identity.user;
    let creds = match &identity.creds {
        Ok(creds) => creds.clone(),
        Err(e) => {
            setup.log.error(
                spec.user(),
                "ERROR",
                &format!("can't drop privileges, job not run: {e}"),
            );
            let words = format!("can't take the user's ids: {e}");
            setup.tell_not_started(Reason::NotStarted, words);
            return None;
        }
    };
    // The kept variables are the daemon's, not cron's: not in the mail's X-Cron-Env lines.
    let cron_env = environment(
        user,
        spec.env(),
        setup.inherited_path.as_deref(),
        &[],
        Vec::new(),
    );
    let env = environment(
        user,
        spec.env(),
        setup.inherited_path.as_deref(),
        &setup.kept_env,
        pam_env,
    );
    Some(Prepared {
        user: String::from_utf8_lossy(&user.name).into_owned(),
        creds,
        env,
        cron_env,
        input: crate::crontab::split_percent(spec.command()),
        fault: Fault::NONE,
    })
}

/// After the shell: Debian's failure line, the output mailed (or logged with `-s`, or when no
/// MTA could take it), then END and CMDEND (the JSON log: END only, always). Returns what
/// became of the mail, for the run's record.
fn report(spec: &JobSpec, setup: &ChildSetup, prepared: &Prepared, finished: &Finished) -> Mail {
    let log = setup.log;
    let (shell_pid, exit, output) = (finished.shell_pid, finished.exit, &finished.output);
    let ended = JobFields {
        exit_status: exit.code(),
        signal: exit.signal(),
        duration_ms: Some(finished.duration_ms),
        ..setup.log_fields(spec, Some(shell_pid))
    };
    if let Some(line) = messages::failed_line(setup.log_mask, shell_pid, exit) {
        log.line(Level::Error, &line.with_job(ended.clone()));
    }
    // Output lines name their job as its other lines do: entry, command and the shell's pid.
    let fields = setup.log_fields(spec, Some(shell_pid));
    let mut mailed = Mail::None;
    let verdict = Verdict::of_run(history_end(exit), finished.timed_out.is_some());
    let notify = policy::wanted(setup.notify_policy(spec), verdict, setup.previous_failed);
    match &setup.output {
        OutputTo::Syslog => log_output(log, spec.user(), output, &fields),
        // No output, no mail (`mail::plan`): nothing to ask of the host name or the MTA. Nor
        // when CRON_NOTIFY says this run notifies nobody.
        OutputTo::Mail(_) if output.is_empty() || !notify => {}
        OutputTo::Mail(mail_setup) => {
            let config = MailConfig {
                host: mail::subject_host(&crate::sys::hostname(), mail_setup.full_host),
                charset: mail_setup.charset.clone(),
                command: mail_setup.command.clone(),
            };
            let job = JobMail {
                user: spec.user(),
                command: &prepared.input.command,
                env: &prepared.cron_env,
                exit,
                timed_out: finished.timed_out,
                not_run: None,
            };
            let home = lookup(&prepared.env, b"HOME").unwrap_or_default();
            let run_as = RunAs {
                creds: prepared.creds.as_ref(),
                dir: &home,
                env: &prepared.env,
            };
            let outcome = mail::mail_output_as(&job, &config, output, run_as);
            mailed = outcome.as_recorded();
            if let Some(line) = outcome.log_line(spec.user()) {
                let level = match outcome {
                    MailOutcome::NoMta => Level::Info,
                    _ => Level::Error,
                };
                log.line(level, &line.with_job(fields.clone()));
            }
            // Nothing is lost when the mail could not start or the MTA hung: the output goes to
            // the log.
            if matches!(
                outcome,
                MailOutcome::NoMta | MailOutcome::MtaError(_) | MailOutcome::MtaTimedOut { .. }
            ) {
                log_output(log, spec.user(), output, &fields);
            }
        }
    }
    log_end(spec, setup, ended, shell_pid);
    mailed
}

/// END (the JSON log: always, with the status and the duration) and, with `-s`, CMDEND.
fn log_end(spec: &JobSpec, setup: &ChildSetup, ended: JobFields, shell_pid: u32) {
    let log = setup.log;
    // The JSON log always has the end, with the status and the duration: one object per run
    // that a collector can count.
    let mask = if log.is_json() {
        JobLogMask(setup.log_mask.0 | JobLogMask::END)
    } else {
        setup.log_mask
    };
    if let Some(line) = messages::end_line(mask, spec.user(), shell_pid, spec.command()) {
        log.line(Level::Info, &line.with_job(ended));
    }
    // cronie's CMDEND comes with cronie's way of logging (`-s`), never with Debian's defaults,
    // and not for an entry written with cronie's `-`. The JSON log has END, which says more
    // (the status, the duration): one end object per run, not two.
    if matches!(setup.output, OutputTo::Syslog) && !spec.quiet() && !log.is_json() {
        log.line(
            Level::Info,
            &messages::cmdend_line(spec.user(), spec.command()),
        );
    }
}

/// How the shell ended, as the run's record says it.
fn history_end(exit: JobExit) -> history::End {
    match exit {
        JobExit::Signaled { signal, .. } => history::End::Signaled(signal),
        JobExit::Exited(code) => history::End::Exited(code),
    }
}

/// The output as `CMDOUT` lines (cronie's `-s`, and Debian's no-MTA case so nothing is lost),
/// at most [`messages::MAX_CMDOUT_LINES`] of them: `yes` as a job must not fill the log. The
/// rest is read to count it, and one line says how many lines were not logged.
fn log_output(log: Log, user: &[u8], output: &Output, job: &JobFields) {
    let mut logged = 0usize;
    let mut more = 0u64;
    for line in output.cmdout_lines_of(messages::cmdout_room(user)) {
        let line = match line {
            Ok(line) => line,
            Err(e) => {
                let line =
                    LogLine::new(user, "ERROR", format!("can't read the spooled output: {e}"));
                log.line(Level::Error, &line.with_job(job.clone()));
                return;
            }
        };
        if logged >= messages::MAX_CMDOUT_LINES {
            more += 1;
            continue;
        }
        for piece in messages::cmdout_lines(user, &line) {
            if logged < messages::MAX_CMDOUT_LINES {
                log.line(Level::Info, &piece.with_job(job.clone()));
                logged += 1;
            } else {
                more += 1;
            }
        }
    }
    if more > 0 {
        let line = messages::cmdout_more_line(user, more).with_job(job.clone());
        log.line(Level::Info, &line);
    }
}

impl JobExit {
    /// How the shell ended, from its wait status (kept here, in the shell, so that the pure
    /// [`log::messages`] names no process type).
    pub fn from_status(status: std::process::ExitStatus) -> JobExit {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => JobExit::Exited(code),
            (None, Some(signal)) => JobExit::Signaled {
                signal,
                core_dumped: status.core_dumped(),
            },
            // Stopped/continued never reach a final wait; treat as a plain failure.
            (None, None) => JobExit::Exited(-1),
        }
    }
}
