//! Running the job's shell in the job child: the stdin writer grandchild (`stdin`), the shell
//! with stdout and stderr on one pipe, the capture of that pipe (`output`), the wait for the shell
//! and the reaping of the writer. The job child stays root; the shell is started by
//! `sys::as_user::spawn` (vfork semantics, the user's ids taken between the clone and the exec,
//! docs/design.md §5), the writer forked and made the user the same way, so everything the job
//! creates belongs to its user. The job child reads the output as bytes only (`output`). It logs
//! CMD and its own failures; what happens to the output is the caller's. A process that can't be
//! made at all (no free process) is [`ShellFailure::Retry`], logged by nobody here: the daemon
//! counts it with its own fork failures and runs the job again.
//!
//! With `CRON_TIMEOUT` the shell leads a process group of its own, which gets SIGTERM at the
//! limit and SIGKILL after the grace, each sent as the job's user (`as_user::signal_group`)
//! (`time_limit`); while the shell runs it is reaped only after that, so the group's id stays
//! the job's. A shell that exits before the limit and leaves processes in its group ends the
//! job as any shell does; then [`watch_left_group`] keeps the limit on what is left, looking
//! with `kill(-group, 0)` whether anything is (the id can't go to another group while it has a
//! member: `process::group_has_members`). What leaves the group (`setsid`, `setpgid`) leaves
//! the limit too.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, OwnedFd};
use std::time::Instant;

use super::env::lookup;
use super::output::Output;
use super::stdin::JobStdin;
use super::time_limit::{Action, TimeLimit};
use super::{ChildSetup, JobSpec, Prepared};
use crate::job::report::Said;
use crate::log::messages::{self, JobExit};
use crate::log::{Level, Log, printable};
use crate::sys::as_user::{self, Credentials, Launch, StdFds};
use crate::sys::poll::{Interest, Registry};
use crate::sys::process::{self, GroupSignal};
use crate::sys::{pipe, poll};

/// Why the shell did not run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ShellFailure {
    /// It could not run (a bad SHELL, the ids refused): logged; the run counts as failed.
    Logged,
    /// No process could be made for it or its stdin writer (a pids or process limit): not
    /// logged, nothing of the job ran; the daemon runs it again.
    Retry,
}

/// A shell that ran to its end.
#[derive(Debug)]
pub(super) struct Finished {
    pub shell_pid: u32,
    pub exit: JobExit,
    pub output: Output,
    /// From the shell's start to its exit.
    pub duration_ms: u64,
    /// `CRON_TIMEOUT` in seconds, when the job reached it.
    pub timed_out: Option<u32>,
    /// With `CRON_TIMEOUT` not reached when the shell exited: the group it led, which may still
    /// hold processes the limit applies to ([`watch_left_group`]).
    pub left_group: Option<LeftGroup>,
}

/// The process group of a shell that exited before its time limit.
#[derive(Debug)]
pub(super) struct LeftGroup {
    pgid: u32,
    limit: TimeLimit,
}

/// What signals to the job's group need: the user to send them as.
#[derive(Clone, Copy)]
struct Signaller<'a> {
    spec: &'a JobSpec,
    log: Log,
    creds: Option<&'a Credentials>,
    /// The entry's id, for the log's lines.
    id: Option<&'a str>,
}

/// Starts the shell with its stdin (the `%` text through a writer grandchild, or /dev/null) and
/// its stdout+stderr on one pipe, logs CMD, reads the output to end-of-file, reaps the shell and
/// then the writer. `first`: the entry's first run since its file was loaded (a HOME that
/// can't be entered is said then).
pub(super) fn run_shell(
    spec: &JobSpec,
    setup: &ChildSetup,
    prepared: &Prepared,
    first: bool,
) -> Result<Finished, ShellFailure> {
    let log = setup.log;
    let who = spec.user();
    let spill_dir = &setup.spill_dir;
    let Running {
        shell_pid,
        output_pipe,
        stdin,
        started,
        mut limit,
    } = start_shell(spec, setup, prepared, first)?;
    let output = Output::new(spill_dir).with_limit(setup.max_output);
    let signaller = Signaller {
        spec,
        log,
        creds: prepared.creds.as_ref(),
        id: setup.run_id.as_deref(),
    };
    let captured = capture(signaller, output, output_pipe, shell_pid, &mut limit);
    let status = wait_for_shell(shell_pid, log, who).map(|status| (status, started.elapsed()));
    reap_writer(log, who, stdin);
    let output = match captured {
        Ok(output) => output,
        Err(e) => {
            log.error(who, "ERROR", &format!("can't read the job's output: {e}"));
            Output::new(spill_dir)
        }
    };
    log_output_losses(log, who, &output, spill_dir);
    let (timed_out, left_group) = match limit {
        Some(limit) if limit.reached() => (Some(limit.seconds), None),
        Some(limit) => (
            None,
            Some(LeftGroup {
                pgid: shell_pid,
                limit,
            }),
        ),
        None => (None, None),
    };
    let status = status.ok_or(ShellFailure::Logged)?;
    Ok(Finished {
        shell_pid,
        exit: JobExit::from_status(status.0),
        duration_ms: u64::try_from(status.1.as_millis()).unwrap_or(u64::MAX),
        output,
        timed_out,
        left_group,
    })
}

/// A shell just started, with what the job child keeps of it.
struct Running {
    shell_pid: u32,
    /// The output pipe's read end (the shell has the write end).
    output_pipe: OwnedFd,
    stdin: JobStdin,
    started: Instant,
    /// `CRON_TIMEOUT`, counting from the start.
    limit: Option<TimeLimit>,
}

/// Starts the stdin writer, makes the output pipe, starts the shell as the user in HOME (or `/`,
/// said on the entry's `first` run) and logs CMD. An error when any of it failed (logged unless
/// it is a retry; a writer already started is reaped).
fn start_shell(
    spec: &JobSpec,
    setup: &ChildSetup,
    prepared: &Prepared,
    first: bool,
) -> Result<Running, ShellFailure> {
    let log = setup.log;
    let who = spec.user();
    let (env, input, creds) = (&prepared.env, &prepared.input, prepared.creds.as_ref());
    let mut stdin = match JobStdin::start_as(input.stdin.as_deref(), creds) {
        Ok(stdin) => stdin,
        Err(e) if as_user::is_no_process(&e) => return Err(ShellFailure::Retry),
        Err(e) => {
            not_started(setup, who, format!("can't feed the job's input: {e}"));
            return Err(ShellFailure::Logged);
        }
    };
    let (read_end, out_end) = match pipe::pipe() {
        Ok(p) => p,
        Err(e) => {
            not_started(setup, who, format!("can't make the output pipe: {e}"));
            reap_writer(log, who, stdin);
            return Err(ShellFailure::Logged);
        }
    };
    let shell = lookup(env, b"SHELL").unwrap_or_else(|| b"/bin/sh".to_vec());
    let timeout_s = spec.env().policy().timeout_s;
    let home = lookup(env, b"HOME").unwrap_or_default();
    // Returns with the shell's ends of both pipes closed here, so end-of-file on the output
    // means the job is done with it, and the stdin writer never waits for us.
    let spawned = Launch::new(&shell, &[b"-c", &input.command], env)
        .map(|launch| launch.dir(&home).with_fault(prepared.fault))
        .map(|launch| match timeout_s {
            Some(_) => launch.own_group(),
            None => launch,
        })
        .map_err(|error| as_user::SpawnError {
            step: as_user::Step::Exec,
            error,
        })
        .and_then(|launch| {
            let fds = StdFds {
                stdin: stdin.take_shell_end(),
                stdout: Some(out_end),
                stderr: None,
            };
            as_user::spawn(&launch, fds, creds)
        });
    let spawned = match spawned {
        Ok(spawned) => spawned,
        Err(e) => {
            drop(read_end);
            reap_writer(log, who, stdin);
            if e.is_fork_failure() {
                return Err(ShellFailure::Retry);
            }
            not_started(setup, who, format!("can't run {}: {e}", printable(&shell)));
            return Err(ShellFailure::Logged);
        }
    };
    let started = Instant::now();
    let shell_pid = spawned.pid;
    let dir_error = spawned.dir_error.as_ref().filter(|_| first);
    log_started(spec, setup, shell_pid, &home, dir_error);
    setup.tell(Said::Started {
        pid: shell_pid,
        user: prepared.user.clone(),
    });
    Ok(Running {
        shell_pid,
        output_pipe: read_end,
        stdin,
        started,
        limit: timeout_s.map(|s| TimeLimit::new(s, started)),
    })
}

/// Nothing of the job runs: logged, told and recorded, in `words`.
fn not_started(setup: &ChildSetup, who: &[u8], words: String) {
    setup.log.error(who, "ERROR", &words);
    setup.tell_not_started(crate::history::Reason::NotStarted, words);
}

/// Logs a shell just started: CMD (as the log mask asks), after the notice that HOME could not
/// be entered (`dir_error`, given on the entry's first run only).
fn log_started(
    spec: &JobSpec,
    setup: &ChildSetup,
    shell_pid: u32,
    home: &[u8],
    dir_error: Option<&io::Error>,
) {
    let (log, who) = (setup.log, spec.user());
    if let Some(e) = dir_error {
        // Debian runs the job anyway, from / (cronie skips it). Said once per entry and load,
        // as a notice: www-data's or nobody's home is missing on a stock host, and a line per
        // run (every minute, for some packages' entries) would bury the log.
        let line = messages::home_notice_line(who, home, e, &spec.entry());
        log.line(Level::Notice, &line.with_job(setup.log_fields(spec, None)));
    }
    if let Some(line) = messages::cmd_line(setup.log_mask, who, shell_pid, spec.command()) {
        log.line(
            Level::Info,
            &line.with_job(setup.log_fields(spec, Some(shell_pid))),
        );
    }
}

/// Reads the job's output into `output` until the shell exits, applying the time limit.
/// Debian's job ends when its shell exits, not when the last process holding its output lets
/// go: the exit is watched with the pipe (a pidfd), so a job that leaves a process behind
/// (`server &`) is reported at once; what that process prints later goes to a drain. Without
/// pidfd (Linux < 5.3), to end-of-file, and without the time limit (logged, `limit` cleared).
fn capture(
    signaller: Signaller<'_>,
    output: Output,
    pipe: OwnedFd,
    shell_pid: u32,
    limit: &mut Option<TimeLimit>,
) -> io::Result<Output> {
    let (log, who) = (signaller.log, signaller.spec.user());
    let mut signal =
        |action: Action, seconds: u32| signal_group(signaller, shell_pid, action, seconds);
    let (output, left_behind) = match process::exit_watch(shell_pid) {
        Ok(exit) => capture_until_exit(output, pipe, &exit, limit, &mut signal)?,
        Err(_) => {
            if limit.take().is_some() {
                log.error(
                    who,
                    "ERROR",
                    "CRON_TIMEOUT not applied: it needs pidfd_open (Linux 5.3)",
                );
            }
            (output.capture_from(File::from(pipe))?, None)
        }
    };
    if let Some(pipe) = left_behind {
        // What the left-behind processes print from now on is read and discarded by a
        // process of the job's user, which ends when the last of them closes the pipe.
        if let Err(e) = crate::sys::pipe::spawn_drain(pipe, signaller.creds) {
            log.error(
                who,
                "ERROR",
                &format!("can't start a reader for the output of what the job left running: {e}"),
            );
        }
    }
    Ok(output)
}

/// Reaps the shell; `None` when the wait failed (logged).
fn wait_for_shell(shell_pid: u32, log: Log, who: &[u8]) -> Option<std::process::ExitStatus> {
    match process::wait_status(shell_pid, true) {
        Ok(status) => status,
        Err(e) => {
            log.error(who, "ERROR", &format!("wait failed: {e}"));
            None
        }
    }
}

/// Logs what of the output is not in `output`: lost (the spill file failed) or dropped (past
/// `--max-output`).
fn log_output_losses(log: Log, who: &[u8], output: &Output, spill_dir: &std::path::Path) {
    if let Some(e) = output.spill_error() {
        log.error(
            who,
            "ERROR",
            &format!(
                "{} of output lost: can't spool to {}: {e}",
                crate::log::line::count(output.lost_bytes(), "byte", "bytes"),
                spill_dir.display()
            ),
        );
    }
    if output.dropped_bytes() > 0 {
        let line =
            messages::output_dropped_line(who, output.dropped_bytes(), output.limit().unwrap_or(0));
        log.line(Level::Warning, &line);
    }
}

/// `CRON_TIMEOUT`'s signal to the job's group (the shell's pid is its id), logged first, sent as
/// the job's user: what the job could signal itself, never more.
fn signal_group(signaller: Signaller<'_>, shell_pid: u32, action: Action, seconds: u32) {
    let Signaller {
        spec,
        log,
        creds,
        id,
    } = signaller;
    let who = spec.user();
    let line = messages::timeout_line(who, spec.command(), seconds, action).with_job(
        crate::log::JobFields {
            id: id.map(str::to_string),
            ..spec.log_fields(Some(shell_pid))
        },
    );
    log.line(Level::Warning, &line);
    let signal = match action {
        Action::Term => GroupSignal::Term,
        Action::Kill => GroupSignal::Kill,
    };
    // Ok(false), nothing left to signal: the group ended between our look and the signal.
    if let Err(e) = as_user::signal_group(creds, shell_pid, signal) {
        log.error(who, "ERROR", &format!("can't signal the job's group: {e}"));
    }
}

/// After the job has ended (its shell exited before the limit): keeps `CRON_TIMEOUT` on what the
/// shell left in its process group. Looks every
/// [`GROUP_CHECK_MS`](super::time_limit::GROUP_CHECK_MS) whether the group is empty, and returns
/// then; at the limit sends SIGTERM to what is left, and SIGKILL after the grace, each logged as
/// for a shell that ran to the limit. Returns whether the limit was reached. The signals go as the
/// job's user (`creds`), so what they can reach is the user's own.
pub(super) fn watch_left_group(
    spec: &JobSpec,
    (log, creds, id): (Log, Option<&Credentials>, Option<&str>),
    left: LeftGroup,
) -> bool {
    let signaller = Signaller {
        spec,
        log,
        creds,
        id,
    };
    let LeftGroup { pgid, mut limit } = left;
    loop {
        // Looked at just before any signal: while the group has a member its id is the job's.
        match process::group_has_members(pgid) {
            Ok(true) => {}
            Ok(false) => return limit.reached(),
            Err(e) => {
                log.error(
                    spec.user(),
                    "ERROR",
                    &format!("can't look at the job's process group: {e}"),
                );
                return limit.reached();
            }
        }
        let now = Instant::now();
        if let Some(action) = limit.due(now) {
            signal_group(signaller, pgid, action, limit.seconds);
        }
        let Some(wait_ms) = limit.watch_wait_ms(Instant::now()) else {
            return true;
        };
        if let Err(e) = poll::sleep_ms(wait_ms) {
            log.error(spec.user(), "ERROR", &format!("can't wait: {e}"));
            return limit.reached();
        }
    }
}

/// Reads the job's output until its shell exits (`shell_exit` readable), then what is in the pipe
/// at that moment, and no more. Returns the pipe too when processes the shell started still
/// hold it open. With a time limit, signals the group when it is due (`signal`), and after a
/// SIGTERM keeps reading until the SIGKILL, even once the shell has exited.
fn capture_until_exit(
    mut output: Output,
    pipe: OwnedFd,
    shell_exit: &OwnedFd,
    limit: &mut Option<TimeLimit>,
    signal: &mut dyn FnMut(Action, u32),
) -> io::Result<(Output, Option<OwnedFd>)> {
    let mut pipe = File::from(pipe);
    let mut buf = vec![0u8; 16 * 1024];
    // End-of-file before the shell exits (a job that closed its output): then only the exit
    // and the time limit are waited for.
    let mut eof = false;
    let mut check_limit = |limit: &mut Option<TimeLimit>| {
        let limit = limit.as_mut()?;
        if let Some(action) = limit.due(Instant::now()) {
            signal(action, limit.seconds);
        }
        limit.wait_ms(Instant::now())
    };
    let mut wait_ms = check_limit(limit);
    loop {
        let mut registry = Registry::new();
        if !eof {
            registry.add(Watched::Output, pipe.as_fd(), Interest::Read);
        }
        registry.add(Watched::ShellExit, shell_exit.as_fd(), Interest::Read);
        let ready = registry.wait(wait_ms)?;
        wait_ms = check_limit(limit);
        if ready.contains(Watched::ShellExit) {
            break;
        }
        if ready.contains(Watched::Output) && read_some(&mut pipe, &mut buf, &mut output)? == 0 {
            eof = true;
        }
    }
    // The shell has exited: take what it left in the pipe (a left-behind process may add to it
    // meanwhile: that much is taken too, never more than was there when we looked).
    if !eof {
        let mut waiting = pipe::bytes_waiting(pipe.as_fd())?;
        while waiting > 0 {
            let want = waiting.min(buf.len());
            match read_some(&mut pipe, &mut buf[..want], &mut output)? {
                0 => {
                    eof = true;
                    break;
                }
                n => waiting = waiting.saturating_sub(n),
            }
        }
    }
    // Timed out and the shell gone after SIGTERM: what is left of the group has until the
    // SIGKILL; what it prints meanwhile is the job's output.
    while limit.as_ref().is_some_and(TimeLimit::in_grace) {
        let mut registry = Registry::new();
        if !eof {
            registry.add(Watched::Output, pipe.as_fd(), Interest::Read);
        }
        if registry.wait(wait_ms)?.contains(Watched::Output)
            && read_some(&mut pipe, &mut buf, &mut output)? == 0
        {
            eof = true;
        }
        wait_ms = check_limit(limit);
    }
    if eof {
        return Ok((output, None));
    }
    // End-of-file now (readable with nothing in it) means nobody else holds the pipe.
    let mut registry = Registry::new();
    registry.add(Watched::Output, pipe.as_fd(), Interest::Read);
    if registry.wait(Some(0))?.contains(Watched::Output) && pipe::bytes_waiting(pipe.as_fd())? == 0
    {
        return Ok((output, None));
    }
    Ok((output, Some(OwnedFd::from(pipe))))
}

/// What [`capture_until_exit`] waits on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watched {
    /// The output pipe's read end.
    Output,
    /// The shell's pidfd, readable once it has exited.
    ShellExit,
}

/// One read from the output pipe into `output` (called when the pipe is readable); the bytes
/// read, 0 at end-of-file.
fn read_some(pipe: &mut File, buf: &mut [u8], output: &mut Output) -> io::Result<usize> {
    loop {
        match pipe.read(buf) {
            Ok(n) => {
                output.push(&buf[..n]);
                return Ok(n);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Reaps the stdin writer; a job that did not read its input is fine, anything else is logged.
/// A writer still blocked once the shell has exited writes to a left-behind process only: it
/// is stopped.
fn reap_writer(log: Log, who: &[u8], stdin: JobStdin) {
    use crate::sys::pipe::WriterExit;
    match stdin.wait() {
        Ok(None | Some(WriterExit::AllWritten | WriterExit::ReaderGone)) => {}
        Ok(Some(WriterExit::Failed(errno))) => log.error(
            who,
            "ERROR",
            &format!(
                "writing the job's input failed: {}",
                io::Error::from_raw_os_error(errno)
            ),
        ),
        Ok(Some(WriterExit::Killed(signal))) => log.error(
            who,
            "ERROR",
            &format!("the job's input writer was killed by signal {signal}"),
        ),
        Err(e) => log.error(who, "ERROR", &format!("can't reap the input writer: {e}")),
    }
}
