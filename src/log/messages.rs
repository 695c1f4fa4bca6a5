//! The log lines the daemon and a job child write (a job's start, end, output and mail; the
//! daemon's start, files, clock, forks and helpers), worded exactly as
//! Debian's cron and cronie word them so existing log filters keep working, and Debian's `-L`
//! mask that chooses among them. Pure: this module builds [`LogLine`] values (the one
//! `(who) EVENT (detail)` shape, `crate::log::line`) and never writes them anywhere; the job
//! child hands them to the logger.
//!
//! Debian (`do_command.c`, with its `-L` patch): `-L` is a bit mask, 1 logs the start (`CMD`),
//! 2 the end (`END`), 4 a failed job (`(CRON) error (grandchild #PID failed with exit status
//! N)`), 8 adds the shell's pid to CMD/END as `[PID] command`. cronie logs `CMDEND` (no
//! status, no pid) when a job ends, and `CMDOUT` lines with `-s`. Commands are shown through
//! Vixie's `mkprint` ([`printable`]: control bytes as `^X`, DEL as `^?`, bytes above 127 as
//! `\ooo`).

use std::fmt;

use crate::crontab::policy::LimitAction as Action;
use crate::log::line::MAX_LINE;
use crate::log::line::count;
use crate::log::{LogLine, printable};
use crate::types::Uid;

/// How the shell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobExit {
    Exited(i32),
    Signaled { signal: i32, core_dumped: bool },
}

impl JobExit {
    /// The exit status, when the shell exited.
    pub fn code(self) -> Option<i32> {
        match self {
            JobExit::Exited(code) => Some(code),
            JobExit::Signaled { .. } => None,
        }
    }

    /// The signal that ended the shell, when one did.
    pub fn signal(self) -> Option<i32> {
        match self {
            JobExit::Exited(_) => None,
            JobExit::Signaled { signal, .. } => Some(signal),
        }
    }

    pub fn success(self) -> bool {
        self == JobExit::Exited(0)
    }

    /// What the mail subject gets appended when the job failed: ` (exit status 3)`,
    /// ` (killed by signal 9)`, ` (killed by signal 11, core dumped)`; `None` on success.
    /// (Debian appends ` (failed)` and only with `-L 4`; saying which failure costs nothing
    /// and tells the reader more.)
    pub fn subject_suffix(self) -> Option<String> {
        match self {
            JobExit::Exited(0) => None,
            JobExit::Exited(code) => Some(format!(" (exit status {code})")),
            JobExit::Signaled {
                signal,
                core_dumped: false,
            } => Some(format!(" (killed by signal {signal})")),
            JobExit::Signaled {
                signal,
                core_dumped: true,
            } => Some(format!(" (killed by signal {signal}, core dumped)")),
        }
    }
}

/// Debian's `-L` mask: which of a job's lines to log (a bit set, not a level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JobLogMask(pub u8);

impl JobLogMask {
    pub const START: u8 = 1;
    pub const END: u8 = 2;
    pub const FAILED: u8 = 4;
    pub const PID: u8 = 8;

    pub fn has(self, bit: u8) -> bool {
        self.0 & bit != 0
    }

    /// For an entry written with cronie's `-`: no start or end line (failures still logged).
    pub fn quiet(self) -> JobLogMask {
        JobLogMask(self.0 & !(JobLogMask::START | JobLogMask::END))
    }
}

impl Default for JobLogMask {
    /// Debian's default: log job starts only.
    fn default() -> JobLogMask {
        JobLogMask(JobLogMask::START)
    }
}

fn command_detail(mask: JobLogMask, shell_pid: u32, command: &[u8]) -> Vec<u8> {
    if mask.has(JobLogMask::PID) {
        format!("[{shell_pid}] {}", printable(command)).into_bytes()
    } else {
        printable(command).into_bytes()
    }
}

/// Debian's start line, `(user) CMD (command)` or with `-L 8` `(user) CMD ([pid] command)`;
/// `None` when `-L` lacks bit 1.
pub fn cmd_line(mask: JobLogMask, user: &[u8], shell_pid: u32, command: &[u8]) -> Option<LogLine> {
    mask.has(JobLogMask::START)
        .then(|| LogLine::new(user, "CMD", command_detail(mask, shell_pid, command)))
}

/// Debian's failure line, written as soon as the shell is reaped:
/// `(CRON) error (grandchild #PID failed with exit status N)` or
/// `(CRON) error (grandchild #PID terminated by signal N[, dumped core])`; `None` when the job
/// succeeded or `-L` lacks bit 4.
pub fn failed_line(mask: JobLogMask, shell_pid: u32, exit: JobExit) -> Option<LogLine> {
    if !mask.has(JobLogMask::FAILED) {
        return None;
    }
    let detail = match exit {
        JobExit::Exited(0) => return None,
        JobExit::Exited(code) => {
            format!("grandchild #{shell_pid} failed with exit status {code}")
        }
        JobExit::Signaled {
            signal,
            core_dumped,
        } => format!(
            "grandchild #{shell_pid} terminated by signal {signal}{}",
            if core_dumped { ", dumped core" } else { "" }
        ),
    };
    Some(LogLine::daemon("error", detail))
}

/// Debian's end line, written after the mail: `(user) END (command)`, or with `-L 8`
/// `(user) END ([pid] command)`; `None` when `-L` lacks bit 2. (Debian logs it under the
/// shell's pid; a syslog with LOG_PID shows the job child's.)
pub fn end_line(mask: JobLogMask, user: &[u8], shell_pid: u32, command: &[u8]) -> Option<LogLine> {
    mask.has(JobLogMask::END)
        .then(|| LogLine::new(user, "END", command_detail(mask, shell_pid, command)))
}

/// cronie's end line, `(user) CMDEND (command)`: no status and no pid, as cronie writes it.
pub fn cmdend_line(user: &[u8], command: &[u8]) -> LogLine {
    LogLine::new(user, "CMDEND", printable(command))
}

/// cronie's `-s` lines for one piece of output (`Output::cmdout_lines_of`, already at most
/// [`cmdout_room`] long): `(user) CMDOUT (line)`; one line, unless NULs (written `^@`) made it
/// longer than the room, then as many as it takes (nothing is cut off). The line's bytes are kept as they are (syslog daemons escape control bytes
/// themselves), except NUL, which would end the C string: it becomes `^@`.
pub fn cmdout_lines(user: &[u8], line: &[u8]) -> Vec<LogLine> {
    let mut detail = Vec::with_capacity(line.len());
    for &b in line {
        if b == 0 {
            detail.extend_from_slice(b"^@");
        } else {
            detail.push(b);
        }
    }
    let room = cmdout_room(user);
    let mut pieces = Vec::new();
    let mut rest = &detail[..];
    loop {
        let mut take = rest.len().min(room);
        // Keep a `^@` whole.
        if take < rest.len() && take > 0 && rest[take - 1] == b'^' && rest[take] == b'@' {
            take -= 1;
        }
        pieces.push(LogLine::new(user, "CMDOUT", rest[..take].to_vec()));
        rest = &rest[take..];
        if rest.is_empty() {
            return pieces;
        }
    }
}

/// `(user) NOTICE (chdir(HOME) failed: ERROR; ENTRY runs in / (not logged again until its file
/// is reloaded))`:
/// the job runs from `/`, as Debian's, and this is logged once per entry and load.
pub fn home_notice_line(user: &[u8], home: &[u8], error: &std::io::Error, entry: &str) -> LogLine {
    LogLine::new(
        user,
        "NOTICE",
        format!(
            "chdir({}) failed: {error}; {entry} runs in / (not logged again until its file is \
             reloaded)",
            printable(home)
        ),
    )
}

/// `(user) OUTPUT (N bytes of output dropped past the --max-output limit of M bytes)`.
pub fn output_dropped_line(user: &[u8], dropped: u64, limit: u64) -> LogLine {
    LogLine::new(
        user,
        "OUTPUT",
        format!(
            "{} of output dropped past the --max-output limit of {}",
            count(dropped, "byte", "bytes"),
            count(limit, "byte", "bytes")
        ),
    )
}

/// `CRON_TIMEOUT`'s lines: `(user) TIMEOUT (command) after 1m30s: SIGTERM to its process
/// group`, then, if the group outlives the grace, `(user) TIMEOUT (command) 10s after SIGTERM:
/// SIGKILL to its process group`.
pub fn timeout_line(user: &[u8], command: &[u8], seconds: u32, action: Action) -> LogLine {
    use crate::crontab::policy::{Duration, KILL_AFTER_S};
    let note = match action {
        Action::Term => format!("after {}: SIGTERM to its process group", Duration(seconds)),
        Action::Kill => format!(
            "{} after SIGTERM: SIGKILL to its process group",
            Duration(KILL_AFTER_S)
        ),
    };
    LogLine::new(user, "TIMEOUT", printable(command)).with_note(note)
}

/// `CRON_OVERLAP=skip` (or `queue` with a run already waiting): `(user) SKIP (command) still
/// running since HH:MM`, the time the running one started, in the daemon's zone.
pub fn skip_line(user: &[u8], command: &[u8], since: &str, also_waiting: bool) -> LogLine {
    let note = if also_waiting {
        format!("still running since {since}, and a run already waits for it")
    } else {
        format!("still running since {since}")
    };
    LogLine::new(user, "SKIP", printable(command)).with_note(note)
}

/// `CRON_LATE`: `(user) LATE (command) due at HH:MM, 2m10s late: not started`.
pub fn late_line(user: &[u8], command: &[u8], due: &str, late: &str) -> LogLine {
    LogLine::new(user, "LATE", printable(command)).with_note(format!(
        "due at {due}, {late} late: not started (CRON_LATE)"
    ))
}

/// `CRON_RETRY`: `(user) RETRY (command) attempt 2/3 at HH:MM:SS, after a failure`.
pub fn retry_line(user: &[u8], command: &[u8], attempt: &str, at: &str) -> LogLine {
    LogLine::new(user, "RETRY", printable(command)).with_note(format!(
        "attempt {attempt} at {at}, after a failure (CRON_RETRY)"
    ))
}

/// `CRON_RETRY`: a retry that would start at or after its entry's next run: `(user) RETRY
/// DROPPED (command) attempt 2/3 would start at HH:MM:SS, at or after the next run at HH:MM`.
pub fn retry_dropped_line(
    user: &[u8],
    command: &[u8],
    attempt: &str,
    at: &str,
    next: &str,
) -> LogLine {
    LogLine::new(user, "RETRY DROPPED", printable(command)).with_note(format!(
        "attempt {attempt} would start at {at}, at or after the entry's next run at {next}: \
         not started (CRON_RETRY)"
    ))
}

/// `CRON_RETRY` across a restart: a retry the state file kept waits again for its time:
/// `(user) RETRY (command) attempt 2/3 at HH:MM:SS, kept across a restart (CRON_RETRY)`.
pub fn retry_kept_line(user: &[u8], command: &[u8], attempt: &str, at: &str) -> LogLine {
    LogLine::new(user, "RETRY", printable(command)).with_note(format!(
        "attempt {attempt} at {at}, kept across a restart (CRON_RETRY)"
    ))
}

/// `CRON_RETRY` across a restart: a kept retry whose time passed while the daemon was down,
/// made up by `CRON_MISSED=once`: `(user) RETRY (command) attempt 2/3 was due at HH:MM:SS
/// while the daemon was down: starts now (CRON_MISSED=once)`.
pub fn retry_made_up_line(user: &[u8], command: &[u8], attempt: &str, at: &str) -> LogLine {
    LogLine::new(user, "RETRY", printable(command)).with_note(format!(
        "attempt {attempt} was due at {at} while the daemon was down: starts now \
         (CRON_MISSED=once)"
    ))
}

/// `CRON_RETRY` across a restart: a kept retry whose time passed while the daemon was down,
/// not made up (`once`: `CRON_MISSED=once`, but the entry's next run came first).
pub fn retry_missed_line(
    user: &[u8],
    command: &[u8],
    attempt: &str,
    at: &str,
    once: bool,
) -> LogLine {
    let why = match once {
        true => "the entry's next run came first",
        false => "CRON_MISSED=once would start it",
    };
    LogLine::new(user, "RETRY DROPPED", printable(command)).with_note(format!(
        "attempt {attempt} was due at {at} while the daemon was down: not started ({why})"
    ))
}

/// `CRON_RETRY` across a restart: the kept retries of entries no longer loaded as they were
/// (removed, or changed so that their id is another), counted in one line.
pub fn retries_gone_line(path: &std::path::Path, count: usize) -> LogLine {
    cron(
        "RETRY DROPPED",
        format!(
            "{} kept in {}: their entries are gone or changed",
            crate::words::count(count as u64, "retry", "retries"),
            path.display()
        ),
    )
}

/// More retries wait than the retries' state file keeps: said once until they are fewer.
pub fn retries_left_out_line(path: &std::path::Path, count: usize, most: usize) -> LogLine {
    cron(
        "WARNING",
        format!(
            "{count} retries waiting past the {most} {} keeps: those due last are not kept \
             across a restart",
            path.display()
        ),
    )
}

/// The retries' state file can't be written: said once until a write works.
pub fn retries_unwritten_line(path: &std::path::Path, e: &std::io::Error) -> LogLine {
    cron(
        "ERROR",
        format!(
            "can't write {}: {e}; retries waiting are lost if the daemon stops",
            path.display()
        ),
    )
}

/// The retries' state file is not trusted, or not the daemon's.
pub fn retries_ignored_line(path: &std::path::Path, why: &str) -> LogLine {
    cron(
        "WARNING",
        format!(
            "{} ignored: {why}; retries waiting when the daemon stopped are not started",
            path.display()
        ),
    )
}

/// A run whose start failed (no process could be made for it) until its entry's next run
/// came: `(user) FORK FAILED (command) due at HH:MM, no process for it in 61 tries until
/// HH:MM: not started, its next run takes its place`.
pub fn fork_given_up_line(
    user: &[u8],
    command: &[u8],
    due: &str,
    tries: u32,
    until: &str,
) -> LogLine {
    let tries = count(tries, "try", "tries");
    LogLine::new(user, "FORK FAILED", printable(command)).with_note(format!(
        "due at {due}, no process for it in {tries} until {until}: not started, its next run \
         takes its place"
    ))
}

/// `CRON_OVERLAP=queue`: `(user) WAIT (command) still running since HH:MM: starts when it
/// ends`.
pub fn wait_line(user: &[u8], command: &[u8], since: &str) -> LogLine {
    LogLine::new(user, "WAIT", printable(command))
        .with_note(format!("still running since {since}: starts when it ends"))
}

/// `cronctl run`: `(user) RUN (command) FILE:LINE asked by NAME (uid N, pid N)`, before the
/// run's own CMD line (or its SKIP or WAIT line, under `CRON_OVERLAP`).
pub fn run_now_line(user: &[u8], command: &[u8], place: &str, asked_by: &str) -> LogLine {
    LogLine::new(user, "RUN", printable(command)).with_note(format!("{place} asked by {asked_by}"))
}

/// `(user) PAUSE (command) FILE:LINE ID asked by WHO` (`RESUME` when resumed): `cronctl
/// pause` or `resume` changed whether the entry's scheduled runs start.
pub fn pause_line(
    user: &[u8],
    command: &[u8],
    place: &str,
    pause: bool,
    asked_by: &str,
) -> LogLine {
    let verb = if pause { "PAUSE" } else { "RESUME" };
    LogLine::new(user, verb, printable(command)).with_note(format!("{place} asked by {asked_by}"))
}

/// Cluster mode: `(user) CLUSTER (command) NOTE`, what became of a run on this host
/// (`10:05 runs on host-b`, `10:05 not run: paused`).
pub fn cluster_line(user: &[u8], command: &[u8], note: String) -> LogLine {
    LogLine::new(user, "CLUSTER", printable(command)).with_note(note)
}

/// Cluster mode: `(CRON) CLUSTER (4 entries not run at 12:40: REASON: echo a, echo b, echo c
/// and 1 more)`, a minute's runs this host did not start for one reason, in one line.
pub fn cluster_not_run_line(count: usize, when: &str, reason: &str, names: &str) -> LogLine {
    let entries = if count == 1 { "entry" } else { "entries" };
    cron(
        "CLUSTER",
        format!("{count} {entries} not run at {when}: {reason}: {names}"),
    )
}

/// `CRON_MISSED=once`: `(user) MISSED (command) due at 2026-11-21 11:00 and not run: runs
/// once now`, naming the first missed time.
pub fn missed_line(user: &[u8], command: &[u8], first_missed: &str) -> LogLine {
    LogLine::new(user, "MISSED", printable(command))
        .with_note(format!("due at {first_missed} and not run: runs once now"))
}

/// Debian's `(user) ERROR (getpwnam() failed - user unknown)`, naming the crontab the entry
/// comes from, so an admin can find a system file that names a user passwd doesn't know.
pub fn unknown_user_line(user: &[u8], tab: &str) -> LogLine {
    LogLine::new(
        user,
        "ERROR",
        format!("getpwnam() failed - user unknown; entry of {tab} not run"),
    )
}

/// The name of a user's crontab resolves to another uid than the one that owned the file when
/// it was loaded (the user was deleted and the name given again): the job is not run.
pub fn uid_changed_line(user: &[u8], checked: Uid, now: Uid, tab: &str) -> LogLine {
    LogLine::new(
        user,
        "ERROR",
        format!("{tab} was loaded for uid {checked}, but the name is now uid {now}; job not run"),
    )
}

/// How many bytes of output one `CMDOUT` line of `user` holds within the log's line limit: the
/// size of the pieces a long output line is logged in.
pub fn cmdout_room(user: &[u8]) -> usize {
    let frame = LogLine::new(user, "CMDOUT", Vec::new()).to_bytes().len();
    MAX_LINE.saturating_sub(frame).max(16)
}

/// How many `CMDOUT` lines one job may log: past them, one line says how many more there were.
pub const MAX_CMDOUT_LINES: usize = 1_000;

/// The line after the last [`MAX_CMDOUT_LINES`]: `(user) CMDOUT (N more lines not logged)`.
pub fn cmdout_more_line(user: &[u8], more: u64) -> LogLine {
    LogLine::new(
        user,
        "CMDOUT",
        format!(
            "[{} of output not logged]",
            count(more, "more line", "more lines")
        ),
    )
}

/// Debian's line when sendmail is missing: `(CRON) info (No MTA installed, discarding output)`.
pub fn no_mta_line() -> LogLine {
    LogLine::daemon("info", "No MTA installed, discarding output")
}

/// Debian's line when the MTA exits non-zero: `(user) MAIL (mailed N bytes of output but got
/// status 0x%04x from MTA)`, the status being the MTA's exit code, as Debian 3.0pl1-162's binary
/// logs it (read from its syslog: `mailed 6 bytes of output but got status 0x004b from MTA`; its
/// line also ends in a newline, left out here). An MTA killed by a signal, which Debian logs as
/// status `0xffffffff`, is logged with the signal.
pub fn mta_status_line(user: &[u8], bytes: u64, wait_status: i32) -> LogLine {
    let plural = if bytes == 1 { "" } else { "s" };
    let detail = if libc_like::exited(wait_status) {
        format!(
            "mailed {bytes} byte{plural} of output but got status 0x{:04x} from MTA",
            libc_like::exit_code(wait_status)
        )
    } else {
        format!(
            "mailed {bytes} byte{plural} of output but the MTA was killed by signal {}",
            wait_status & 0x7f
        )
    };
    LogLine::new(user, "MAIL", detail)
}

/// The parts of a wait status this file reads (as the WIFEXITED/WEXITSTATUS macros do; pure).
mod libc_like {
    pub fn exited(status: i32) -> bool {
        status & 0x7f == 0
    }
    pub fn exit_code(status: i32) -> i32 {
        (status >> 8) & 0xff
    }
}

/// Debian's line for a MAILTO or MAILFROM that fails the safe-address rule:
/// `(user) UNSAFE MAIL (value)`, the value shown through `mkprint`.
pub fn unsafe_mail_line(user: &[u8], value: &[u8]) -> LogLine {
    LogLine::new(user, "UNSAFE MAIL", printable(value))
}

// The daemon's own lines: `(CRON) EVENT (detail)` about itself, its files, its clock and its
// helpers. Each function is one message; the level is the caller's (`Effects::log`).

/// `(CRON) EVENT (detail)`: the daemon speaking of itself.
fn cron(event: &'static str, detail: impl Into<Vec<u8>>) -> LogLine {
    LogLine::daemon(event, detail)
}

/// The first line: which crond started, and the pid file it holds. (Debian's first line
/// names the pid file's descriptor number, `pidfile fd = 3`, which tells a reader nothing.)
pub fn started_line(pid_file: &std::path::Path) -> LogLine {
    cron(
        "INFO",
        format!(
            "crond {} started (pid file {})",
            env!("CARGO_PKG_VERSION"),
            printable(pid_file.as_os_str().as_encoded_bytes())
        ),
    )
}

/// Debian's second line: cronie's RANDOM_DELAY factor, in whole percent.
pub fn random_delay_line(factor: f64) -> LogLine {
    cron(
        "INFO",
        format!(
            "RANDOM_DELAY will be scaled with factor {}% if used.",
            (factor * 100.0) as u32
        ),
    )
}

/// Jobs run without a PAM session, and why (`built without PAM`, `--no-pam`, `not root`).
pub fn no_pam_line(why: &str) -> LogLine {
    cron("INFO", format!("jobs run without a PAM session ({why})"))
}

/// The daemon forked into the background.
pub fn fork_ok_line() -> LogLine {
    LogLine::daemon("STARTUP", "fork ok")
}

/// `--wait-for-crontab`: a `--crontab` file not loaded at the start (`problem`: its path and
/// why), loaded when it appears or is fixed.
pub fn waiting_for_crontab_line(problem: &str) -> LogLine {
    cron(
        "NOTICE",
        format!("waiting for {problem}; it is loaded when it can be"),
    )
}

/// `--crontab` mode's default state directory had group or other bits (`mode`): now 0700.
pub fn state_dir_made_private_line(dir: &std::path::Path, mode: u32) -> LogLine {
    cron(
        "NOTICE",
        format!(
            "state directory {} was mode {mode:04o}, now 0700: only its user reaches the \
             control socket in it",
            dir.display()
        ),
    )
}

/// The daemon stops with an error.
pub fn death_line(why: &str) -> LogLine {
    LogLine::daemon("DEATH", why)
}

/// Start-up is over: how much was loaded.
pub fn loaded_line(entries: usize, files: usize) -> LogLine {
    cron(
        "INFO",
        format!(
            "{} loaded from {}",
            count(entries as u64, "entry", "entries"),
            count(files as u64, "file", "files")
        ),
    )
}

/// `sd_notify` failed.
pub fn notify_failed_line(e: &std::io::Error) -> LogLine {
    cron("ERROR", format!("sd_notify: {e}"))
}

/// SIGTERM or SIGINT.
pub fn shutting_down_line() -> LogLine {
    cron("INFO", "Shutting down")
}

/// At the stop: jobs still running (they are not waited for).
pub fn still_running_line(jobs: usize) -> LogLine {
    cron(
        "INFO",
        format!(
            "{} still running; {} on {} own",
            count(jobs as u64, "job", "jobs"),
            if jobs == 1 {
                "it finishes"
            } else {
                "they finish"
            },
            if jobs == 1 { "its" } else { "their" }
        ),
    )
}

/// The graceful stop (`daemon::stop`) begins.
pub fn stopping_jobs_line(jobs: usize, timeout_s: u32) -> LogLine {
    cron(
        "INFO",
        format!(
            "stopping {}: SIGTERM now, SIGKILL after {timeout_s} s",
            count(jobs as u64, "running job", "running jobs")
        ),
    )
}

/// The graceful stop found no process of a job to signal.
pub fn no_job_process_line() -> LogLine {
    cron("INFO", "no job process to signal".to_string())
}

/// The graceful stop: every job child has reported.
pub fn every_job_ended_line() -> LogLine {
    cron("INFO", "every job has ended".to_string())
}

/// The graceful stop's wait is over (`why`: the timeout, or a second stop) with jobs left.
pub fn kill_left_line(why: &str, jobs: usize) -> LogLine {
    cron(
        "INFO",
        format!(
            "{why}: SIGKILL to what is left of {}",
            count(jobs as u64, "job", "jobs")
        ),
    )
}

/// The graceful stop ends with job children that had not reported.
pub fn not_reported_line(jobs: usize) -> LogLine {
    cron(
        "ERROR",
        format!(
            "{} not reported when the daemon exited",
            count(jobs as u64, "job child had", "job children had")
        ),
    )
}

/// The graceful stop: /proc is another PID namespace's (/proc/self is `shown`, this daemon
/// `pid`), so each job's process group is signalled instead of its session.
pub fn foreign_proc_line(shown: &str, pid: i32) -> LogLine {
    cron(
        "NOTICE",
        format!(
            "/proc shows another PID namespace (/proc/self is {}, this daemon is pid {pid}): \
             signalling each job's process group instead of its session",
            crate::log::printable(shown.as_bytes())
        ),
    )
}

/// The graceful stop could not list the jobs' processes (no /proc).
pub fn cant_list_jobs_line(e: &std::io::Error) -> LogLine {
    cron("ERROR", format!("can't list the jobs' processes: {e}"))
}

/// At the stop: runs that waited for a running one and are dropped.
pub fn waiting_dropped_line(runs: usize) -> LogLine {
    cron(
        "INFO",
        format!(
            "{} for a running one (CRON_OVERLAP=queue) not started",
            count(runs as u64, "run waiting", "runs waiting")
        ),
    )
}

/// SIGHUP.
pub fn hangup_line() -> LogLine {
    cron(
        "INFO",
        "SIGHUP: reloading every crontab and reading the clock",
    )
}

/// The local zone's file can't be read at start-up.
pub fn zone_unread_line(why: impl fmt::Display) -> LogLine {
    cron("ERROR", format!("{why}; using UTC"))
}

/// The local zone's file changed but can't be read.
pub fn zone_kept_line(why: impl fmt::Display) -> LogLine {
    cron("ERROR", format!("{why}; keeping the zone in use"))
}

/// The local zone changed.
pub fn zone_changed_line(name: &str) -> LogLine {
    cron("INFO", format!("local time zone changed: {name}"))
}

/// inotify could not be read.
pub fn inotify_read_line(e: &std::io::Error) -> LogLine {
    cron("ERROR", format!("inotify read failed: {e}"))
}

/// inotify lost track (`lost a watch`, `inotify queue overflowed`).
pub fn rescan_line(why: &str) -> LogLine {
    cron(
        "INFO",
        format!("{why}: reloading everything, then checking files every minute"),
    )
}

/// `-i`.
pub fn inotify_disabled_line() -> LogLine {
    cron("INFO", "inotify disabled (-i): checking files every minute")
}

/// No inotify to be had.
pub fn inotify_unavailable_line(e: &std::io::Error) -> LogLine {
    cron(
        "INFO",
        format!("inotify unavailable ({e}): checking files every minute"),
    )
}

/// A directory that must be watched can't be.
pub fn unwatched_dir_line(dir: &std::path::Path, e: &std::io::Error) -> LogLine {
    cron(
        "INFO",
        format!(
            "can't watch {} ({e}): checking files every minute",
            dir.display()
        ),
    )
}

/// inotify is in use.
pub fn inotify_line() -> LogLine {
    cron("INFO", "running with inotify support")
}

/// The directory a symlinked system crontab leads to can't be watched.
pub fn unwatched_target_line(
    dir: &std::path::Path,
    e: &std::io::Error,
    target: &std::path::Path,
) -> LogLine {
    cron(
        "INFO",
        format!(
            "can't watch {} ({e}): an edit of {} is seen when the link changes",
            dir.display(),
            target.display()
        ),
    )
}

/// A crontab directory can't be listed.
pub fn unlisted_dir_line(dir: &std::path::Path, e: &std::io::Error) -> LogLine {
    cron("ERROR", format!("can't read {}: {e}", dir.display()))
}

/// `(who) RELOAD (tab)`: a file loaded again.
pub fn reload_line(who: &[u8], tab: &str) -> LogLine {
    LogLine::new(who, "RELOAD", tab)
}

/// `(user) RELOAD (crontabs/user: user is in passwd again, uid N)`: an orphaned crontab loaded
/// again, its user back with the uid that owns the file.
pub fn user_back_line(who: &[u8], tab: &str, uid: Option<Uid>) -> LogLine {
    let user = printable(who);
    let detail = match uid {
        Some(uid) => format!("{tab}: {user} is in passwd again, uid {uid}; its jobs run again"),
        None => format!("{tab}: {user} is in passwd again; its jobs run again"),
    };
    LogLine::new(who, "RELOAD", detail)
}

/// `(who) EVENT (detail)`: why a crontab file is not loaded (`WRONG FILE OWNER`, `ORPHAN`,
/// `ERROR`: the event and detail the loader gives).
pub fn refused_line(who: &[u8], event: String, detail: String) -> LogLine {
    LogLine::new(who, event, detail)
}

/// `(who) ERROR (FILE:LINE:COLUMN: message)`: a bad line of a loaded file.
pub fn file_error_line(who: &[u8], diagnostic: String) -> LogLine {
    LogLine::new(who, "ERROR", diagnostic)
}

/// `(who) WARNING (FILE:LINE:COLUMN: message)`: a doubtful line of a loaded file, or how many
/// problems were not shown.
pub fn file_warning_line(who: &[u8], diagnostic: String) -> LogLine {
    LogLine::new(who, "WARNING", diagnostic)
}

/// A file's changed entries took their runs waiting for RANDOM_DELAY with them.
pub fn delay_cancelled_line(who: &[u8], cancelled: usize, tab: &str) -> LogLine {
    LogLine::new(
        who,
        "INFO",
        format!(
            "{} for {} RANDOM_DELAY cancelled: {tab} changed",
            count(cancelled as u64, "run waiting", "runs waiting"),
            if cancelled == 1 { "its" } else { "their" }
        ),
    )
}

/// @reboot jobs run: the marker was made.
pub fn reboot_line() -> LogLine {
    cron("INFO", "Running @reboot jobs")
}

/// @reboot jobs not run: the marker was there.
pub fn no_reboot_line() -> LogLine {
    cron("INFO", "Skipping @reboot jobs -- not system startup")
}

/// @reboot jobs not run: the marker can't be made.
pub fn reboot_marker_line(marker: &std::path::Path, e: &std::io::Error) -> LogLine {
    cron(
        "ERROR",
        format!(
            "can't create {} ({e}): @reboot jobs not run",
            marker.display()
        ),
    )
}

/// The minute timer can't be armed.
pub fn unarmed_line(e: &std::io::Error) -> LogLine {
    cron("ERROR", format!("can't arm the timer: {e}"))
}

/// Runs of earlier minutes not started yet.
pub fn postponed_line(jobs: usize) -> LogLine {
    cron(
        "INFO",
        format!(
            "{} not started last minute: {} first now",
            count(jobs as u64, "job", "jobs"),
            if jobs == 1 { "it starts" } else { "they start" }
        ),
    )
}

/// The kernel said the clock was set, and the minute did not move.
pub fn clock_set_in_place_line() -> LogLine {
    cron("INFO", "the system clock was set: no minute gained or lost")
}

/// The timer woke the daemon late (`movement`: how the cycle read it).
pub fn clock_late_line(movement: impl std::fmt::Debug) -> LogLine {
    cron("INFO", format!("clock late: {movement:?}"))
}

/// The clock was set (`movement`: how the cycle read it).
pub fn clock_set_line(movement: impl std::fmt::Debug) -> LogLine {
    cron("INFO", format!("clock set: {movement:?}"))
}

/// The first failed fork of a series.
pub fn fork_failed_line(e: &str) -> LogLine {
    cron(
        "ERROR",
        format!("can't fork: {e}; jobs wait and are retried every second"),
    )
}

/// Forks failed in the last minute, after the first.
pub fn fork_still_failing_line(e: &str, attempts: u64) -> LogLine {
    cron(
        "ERROR",
        format!(
            "can't fork: {e}; {} in the last minute",
            count(attempts, "more failed attempt", "more failed attempts")
        ),
    )
}

/// A fork worked after failures.
pub fn fork_works_line(failed: u64) -> LogLine {
    cron(
        "INFO",
        format!(
            "fork works again after {}",
            count(failed, "failed attempt", "failed attempts")
        ),
    )
}

/// The `CRON_MISSED=once` state file can't be written.
pub fn state_unwritten_line(path: &std::path::Path, e: &std::io::Error) -> LogLine {
    cron(
        "ERROR",
        format!(
            "can't write {}: {e}; CRON_MISSED=once can't make up runs missed from now",
            path.display()
        ),
    )
}

/// The `CRON_MISSED=once` state file is not trusted.
pub fn state_ignored_line(path: &std::path::Path, why: &str) -> LogLine {
    cron(
        "WARNING",
        format!(
            "{} ignored: {why}; runs missed while the daemon was down are not made up",
            path.display()
        ),
    )
}

/// `(CRON) RESUME (ID, of no entry loaded, asked by WHO)`: root resumed the id of an entry
/// removed while it was paused.
pub fn resume_gone_line(id: &str, asked_by: &str) -> LogLine {
    cron(
        "RESUME",
        format!("{id}, of no entry loaded, asked by {asked_by}"),
    )
}

/// The paused set was full at a pause: the ids of entries no longer loaded were let go.
pub fn paused_gone_line(gone: usize) -> LogLine {
    cron(
        "RESUME",
        format!("{gone} paused ids of entries no longer loaded let go: the paused set was full"),
    )
}

/// The paused entries' state file is not trusted, or not the daemon's.
pub fn paused_ignored_line(path: &std::path::Path, why: &str) -> LogLine {
    cron(
        "WARNING",
        format!(
            "{} ignored: {why}; no entry is paused (cronctl pause pauses them again)",
            path.display()
        ),
    )
}

/// Cluster mode is on.
pub fn cluster_mode_line(host: &str, helper: &std::path::Path) -> LogLine {
    cron(
        "INFO",
        format!("cluster mode: host {host}, helper {}", helper.display()),
    )
}

/// Nothing proves that the cluster database is what answers (`why`, from
/// `ConnInfo::unauthenticated_server`): said once, at start.
pub fn cluster_db_unproven_line(why: &str) -> LogLine {
    cron("WARNING", format!("--cluster-db: {why}"))
}

/// The cluster helper runs.
pub fn helper_started_line(pid: u32) -> LogLine {
    cron("INFO", format!("cluster helper started (pid {pid})"))
}

/// The cluster helper can't be started.
pub fn helper_unstarted_line(program: &std::path::Path, e: &std::io::Error) -> LogLine {
    cron(
        "ERROR",
        format!(
            "can't start the cluster helper {}: {e}; cluster runs do not start until it runs",
            program.display()
        ),
    )
}

/// The history writer can't be started.
pub fn history_unstarted_line(program: &std::path::Path, e: &std::io::Error) -> LogLine {
    cron(
        "ERROR",
        format!(
            "can't start the history writer {}: {e}; outcomes are not recorded until it runs",
            program.display()
        ),
    )
}

/// The history's directory can't be made or trusted: no history.
pub fn history_dir_line(dir: &std::path::Path, e: &std::io::Error) -> LogLine {
    cron(
        "ERROR",
        format!("no run history: the state directory {}: {e}", dir.display()),
    )
}

/// The history writer is gone; it is started again in `after_s` seconds.
pub fn history_lost_line(pid: u32, after_s: i64) -> LogLine {
    cron(
        "ERROR",
        format!("history writer (pid {pid}) lost; starting it again in {after_s} s"),
    )
}

/// Outcomes that never reached the history, and why.
pub fn history_not_recorded_line(n: u64, why: &str) -> LogLine {
    cron(
        "ERROR",
        format!(
            "{} not recorded in the history: {why}",
            count(n, "outcome was", "outcomes were")
        ),
    )
}

/// What the history writer says.
pub fn history_writer_line(text: &str) -> LogLine {
    cron("INFO", format!("history writer: {text}"))
}

/// A job child could not hand its run's outcome to the history writer.
pub fn outcome_not_recorded_line(user: &[u8], entry: &str, e: &std::io::Error) -> LogLine {
    LogLine::new(
        user,
        "ERROR",
        format!("the outcome of this run of {entry} was not recorded in the history: {e}"),
    )
}

/// A `CRON_PING` or `CRON_WEBHOOK` request that was not delivered (`cronctl notify`, as the
/// job's user): `what` names the variable, `site` the URL without its path (which often holds
/// the check's key), `why` the last try's failure.
pub fn ping_failed_line(user: &[u8], what: &str, site: &str, why: &str) -> LogLine {
    LogLine::new(
        user,
        "NOTIFY",
        format!("{what} to {site} not delivered: {why}"),
    )
}

/// The cluster helper is gone.
pub fn helper_lost_line(why: &str) -> LogLine {
    cron(
        "ERROR",
        format!("cluster helper lost: {why}; starting it again in 5 s"),
    )
}

/// A line from the cluster helper that does not read.
pub fn helper_protocol_line(why: &str) -> LogLine {
    cron(
        "ERROR",
        format!("cluster helper: protocol error: {why}; line skipped"),
    )
}

/// What the cluster helper logs through the daemon (`error`: as an error).
pub fn helper_said_line(error: bool, text: &str) -> LogLine {
    cron(
        if error { "ERROR" } else { "INFO" },
        format!("cluster: {text}"),
    )
}

/// A `--metrics` place is served (`shown`: the place, and what it shows).
pub fn metrics_at_line(shown: &str) -> LogLine {
    cron("INFO", format!("metrics served at {shown}"))
}

/// The control socket is served at `path`.
pub fn control_socket_line(path: &std::path::Path) -> LogLine {
    cron(
        "INFO",
        format!(
            "control socket at {} (cronctl list|show|run|status|history|logs)",
            path.display()
        ),
    )
}

/// The default control socket could not be made: the daemon runs without it.
pub fn no_control_socket_line(path: &std::path::Path, e: &std::io::Error) -> LogLine {
    cron(
        "ERROR",
        format!("no control socket at {}: {e}", path.display()),
    )
}

/// Connections to the control socket turned away (`busy`) in the last minute, by uid.
pub fn control_turned_away_line(counts: &[(u32, u64)]) -> LogLine {
    /// The uids named, the most turned away first; the rest are counted.
    const NAMED: usize = 8;
    let total: u64 = counts.iter().map(|(_, n)| n).sum();
    let mut most = counts.to_vec();
    most.sort_by_key(|&(uid, n)| (std::cmp::Reverse(n), uid));
    let mut by_uid: Vec<String> = most
        .iter()
        .take(NAMED)
        .map(|(uid, n)| format!("uid {uid}: {n}"))
        .collect();
    if most.len() > NAMED {
        by_uid.push(count((most.len() - NAMED) as u64, "more uid", "more uids"));
    }
    cron(
        "ERROR",
        format!(
            "control socket: {} turned away (busy) in the last minute ({})",
            count(total, "connection", "connections"),
            by_uid.join(", ")
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turned_away_connections_name_the_eight_uids_most_turned_away_and_count_the_rest() {
        let counts: Vec<(u32, u64)> = (0..20).map(|i| (1000 + i, u64::from(i) + 1)).collect();
        let line = control_turned_away_line(&counts).to_string();
        assert_eq!(
            line,
            "(CRON) ERROR (control socket: 210 connections turned away (busy) in the last minute \
             (uid 1019: 20, uid 1018: 19, uid 1017: 18, uid 1016: 17, uid 1015: 16, uid 1014: 15, \
             uid 1013: 14, uid 1012: 13, 12 more uids))"
        );
    }

    #[test]
    fn counts_read_as_english_one_and_many() {
        let text = |line: LogLine| String::from_utf8(line.to_bytes()).unwrap();
        assert_eq!(
            text(loaded_line(1, 1)),
            "(CRON) INFO (1 entry loaded from 1 file)"
        );
        assert_eq!(
            text(loaded_line(0, 2)),
            "(CRON) INFO (0 entries loaded from 2 files)"
        );
        assert_eq!(
            text(still_running_line(1)),
            "(CRON) INFO (1 job still running; it finishes on its own)"
        );
        assert_eq!(
            text(postponed_line(2)),
            "(CRON) INFO (2 jobs not started last minute: they start first now)"
        );
        assert_eq!(
            text(delay_cancelled_line(b"bob", 1, "crontabs/bob")),
            "(bob) INFO (1 run waiting for its RANDOM_DELAY cancelled: crontabs/bob changed)"
        );
        assert_eq!(
            text(fork_works_line(1)),
            "(CRON) INFO (fork works again after 1 failed attempt)"
        );
        assert_eq!(
            text(output_dropped_line(b"bob", 1, 1024)),
            "(bob) OUTPUT (1 byte of output dropped past the --max-output limit of 1024 bytes)"
        );
        assert_eq!(
            text(cmdout_more_line(b"bob", 1)),
            "(bob) CMDOUT ([1 more line of output not logged])"
        );
        assert_eq!(
            text(not_reported_line(1)),
            "(CRON) ERROR (1 job child had not reported when the daemon exited)"
        );
        assert!(text(control_turned_away_line(&[(0, 1)])).contains("1 connection turned"));
    }

    #[test]
    fn end_lines_follow_the_debian_log_level_bits() {
        let cmd = b"run-parts /etc/cron.daily";
        assert_eq!(end_line(JobLogMask(1), b"root", 42, cmd), None);
        assert_eq!(
            end_line(JobLogMask(2), b"root", 42, cmd)
                .unwrap()
                .to_string(),
            "(root) END (run-parts /etc/cron.daily)"
        );
        assert_eq!(
            end_line(JobLogMask(15), b"root", 42, cmd)
                .unwrap()
                .to_string(),
            "(root) END ([42] run-parts /etc/cron.daily)"
        );
        assert_eq!(
            cmd_line(JobLogMask(9), b"bob", 7, b"date")
                .unwrap()
                .to_string(),
            "(bob) CMD ([7] date)"
        );
    }

    #[test]
    fn failed_lines_name_the_exit_status_or_the_signal() {
        assert_eq!(failed_line(JobLogMask(4), 9, JobExit::Exited(0)), None);
        assert_eq!(failed_line(JobLogMask(3), 9, JobExit::Exited(1)), None);
        assert_eq!(
            failed_line(JobLogMask(4), 9, JobExit::Exited(3))
                .unwrap()
                .to_string(),
            "(CRON) error (grandchild #9 failed with exit status 3)"
        );
        let killed = JobExit::Signaled {
            signal: 11,
            core_dumped: true,
        };
        assert_eq!(
            failed_line(JobLogMask(4), 9, killed).unwrap().to_string(),
            "(CRON) error (grandchild #9 terminated by signal 11, dumped core)"
        );
    }

    #[test]
    fn commands_are_logged_through_mkprint() {
        assert_eq!(
            cmdend_line(b"alice", b"echo\nx").to_string(),
            "(alice) CMDEND (echo^Jx)"
        );
    }

    #[test]
    fn mail_lines_read_as_debian_writes_them() {
        assert_eq!(
            mta_status_line(b"bob", 12, 0x4b00).to_string(),
            "(bob) MAIL (mailed 12 bytes of output but got status 0x004b from MTA)"
        );
        assert_eq!(
            mta_status_line(b"bob", 1, 256).to_string(),
            "(bob) MAIL (mailed 1 byte of output but got status 0x0001 from MTA)"
        );
        assert_eq!(
            mta_status_line(b"bob", 3, 9).to_string(),
            "(bob) MAIL (mailed 3 bytes of output but the MTA was killed by signal 9)"
        );
        assert_eq!(
            no_mta_line().to_string(),
            "(CRON) info (No MTA installed, discarding output)"
        );
        assert_eq!(
            unsafe_mail_line(b"bob", b"-oQ\nx").to_string(),
            "(bob) UNSAFE MAIL (-oQ^Jx)"
        );
        assert_eq!(
            cmdout_lines(b"bob", b"a\0b")[0].to_bytes(),
            b"(bob) CMDOUT (a^@b)"
        );
    }

    #[test]
    fn a_long_output_line_is_logged_in_pieces_that_each_fit_and_lose_nothing() {
        let line = [b'z'; 1023];
        let pieces = cmdout_lines(b"bob", &line);
        assert_eq!(pieces.len(), 2);
        let mut joined = Vec::new();
        for piece in &pieces {
            let bytes = piece.to_bytes();
            assert!(bytes.len() <= MAX_LINE);
            assert!(!bytes.ends_with(b"[cut])"));
            joined.extend_from_slice(&bytes[b"(bob) CMDOUT (".len()..bytes.len() - 1]);
        }
        assert_eq!(joined, line);
        // A NUL's `^@` is never split between two pieces.
        let room = MAX_LINE - b"(bob) CMDOUT ()".len();
        let mut line = vec![b'a'; room - 1];
        line.push(0);
        let pieces = cmdout_lines(b"bob", &line);
        assert!(pieces[1].to_bytes().ends_with(b"(^@)"), "{:?}", pieces[1]);
    }

    #[test]
    fn the_subject_suffix_says_how_the_job_failed() {
        assert_eq!(JobExit::Exited(0).subject_suffix(), None);
        assert_eq!(
            JobExit::Exited(3).subject_suffix().unwrap(),
            " (exit status 3)"
        );
        assert_eq!(
            JobExit::Signaled {
                signal: 9,
                core_dumped: false
            }
            .subject_suffix()
            .unwrap(),
            " (killed by signal 9)"
        );
    }

    #[test]
    fn the_daemons_lines_keep_debians_and_our_words() {
        let text = |line: LogLine| String::from_utf8(line.to_bytes()).unwrap();
        assert_eq!(
            text(started_line(std::path::Path::new("/run/crond.pid"))),
            format!(
                "(CRON) INFO (crond {} started (pid file /run/crond.pid))",
                env!("CARGO_PKG_VERSION")
            )
        );
        assert_eq!(
            text(random_delay_line(0.427)),
            "(CRON) INFO (RANDOM_DELAY will be scaled with factor 42% if used.)"
        );
        assert_eq!(
            text(no_reboot_line()),
            "(CRON) INFO (Skipping @reboot jobs -- not system startup)"
        );
        assert_eq!(text(fork_ok_line()), "(CRON) STARTUP (fork ok)");
        assert_eq!(
            text(reload_line(b"*system*", "/etc/crontab")),
            "(*system*) RELOAD (/etc/crontab)"
        );
        assert_eq!(
            text(fork_still_failing_line(
                "Resource temporarily unavailable",
                7
            )),
            "(CRON) ERROR (can't fork: Resource temporarily unavailable; 7 more failed \
             attempts in the last minute)"
        );
        assert_eq!(
            text(helper_said_line(true, "lost the database")),
            "(CRON) ERROR (cluster: lost the database)"
        );
    }
}
