//! Piping a planned mail to the MTA: `sendmail -FCronDaemon -i -B8BITMIME -oem <to...>` (or
//! the `-m` shell command), the header, then the job's output streamed from its spool, so a
//! large output never sits in memory. The MTA's own stdout and stderr go to /dev/null; its
//! exit status is the report.
//!
//! The MTA runs as the job's user, never as root: started by `sys::as_user::spawn` with the
//! user's ids ([`RunAs`]), its process group signalled as the user at its timeout. SIGPIPE must
//! be ignored or caught (Rust's binaries ignore it, the job child catches it), so an MTA that
//! exits early shows up as a write error and an exit status rather than killing the job child.
//! It never logs.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::time::{Duration, Instant};

use super::{JobMail, MailCommand, MailConfig, MailOutcome, Plan, SENDMAIL_ARGS, plan};
use crate::job::output::Output;
use crate::log::line::count;
use crate::sys::as_user::{self, Credentials, Launch, StdFds};
use crate::sys::process::{self, GroupSignal};

/// Whom the MTA runs as, where, and with which environment.
#[derive(Debug, Clone, Copy)]
pub struct RunAs<'a> {
    /// The job's user's ids (`None`: this process's own).
    pub creds: Option<&'a Credentials>,
    /// Its working directory (the job's HOME; `/` when it can't be entered).
    pub dir: &'a [u8],
    /// Exactly its environment: nothing of the daemon's leaks into it (the job's environment
    /// is the natural choice, as cronie passes it).
    pub env: &'a [(Vec<u8>, Vec<u8>)],
}

impl RunAs<'_> {
    /// As this process, in `/`, with `env`.
    pub fn this_process(env: &[(Vec<u8>, Vec<u8>)]) -> RunAs<'_> {
        RunAs {
            creds: None,
            dir: b"/",
            env,
        }
    }
}

/// How long the MTA may take to read the message and exit: past it, it is killed (an MTA that
/// hangs must not keep a job child, and its output, waiting forever).
pub const MTA_TIMEOUT: Duration = Duration::from_secs(600);

/// Plans and sends the mail for one job: the whole of docs/design.md §6 in one call. `mta_env` is
/// the environment the MTA runs with (nothing of the daemon's leaks into it; the job's environment
/// is the natural choice, as cronie passes it).
///
/// When some output was lost (the spill file failed) or dropped (past `--max-output`), the mail
/// ends with a line saying how many bytes and why, so the reader knows the body is incomplete.
pub fn mail_output(
    job: &JobMail<'_>,
    config: &MailConfig,
    output: &Output,
    mta_env: &[(Vec<u8>, Vec<u8>)],
) -> MailOutcome {
    mail_output_as(job, config, output, RunAs::this_process(mta_env))
}

/// [`mail_output`] with the MTA run as `run_as` says.
pub fn mail_output_as(
    job: &JobMail<'_>,
    config: &MailConfig,
    output: &Output,
    run_as: RunAs<'_>,
) -> MailOutcome {
    match plan(job, config, output.is_empty(), output.text_kind()) {
        Plan::Empty => MailOutcome::Empty,
        Plan::MailtoEmpty | Plan::Off => MailOutcome::Disabled,
        Plan::Unsafe { value } => MailOutcome::UnsafeAddress { value },
        Plan::Send { recipients, header } => {
            let mut note = match (output.lost_bytes(), output.spill_error()) {
                (0, _) => Vec::new(),
                (n, e) => format!(
                    "\n[crond: {} of output {} lost: {}]\n",
                    count(n, "more byte", "more bytes"),
                    if n == 1 { "was" } else { "were" },
                    e.map(|e| e.to_string()).unwrap_or_default()
                )
                .into_bytes(),
            };
            if output.dropped_bytes() > 0 {
                note.extend_from_slice(
                    format!(
                        "\n[crond: {} of output {} dropped: past the limit of {} (crond \
                         --max-output)]\n",
                        count(output.dropped_bytes(), "more byte", "more bytes"),
                        if output.dropped_bytes() == 1 {
                            "was"
                        } else {
                            "were"
                        },
                        count(output.limit().unwrap_or(0), "byte", "bytes")
                    )
                    .as_bytes(),
                );
            }
            deliver_as(
                &config.command,
                &recipients,
                &header,
                output.reader().chain(&note[..]),
                run_as,
                MTA_TIMEOUT,
            )
        }
    }
}

/// Runs the mail command and writes `header` then `body` to its stdin, and waits for it to exit,
/// all within `timeout` (else it is killed: [`MailOutcome::MtaTimedOut`]). Returns how it went;
/// `bytes` counts the body only.
pub fn deliver(
    command: &MailCommand,
    recipients: &[Vec<u8>],
    header: &[u8],
    body: impl Read,
    mta_env: &[(Vec<u8>, Vec<u8>)],
    timeout: Duration,
) -> MailOutcome {
    let run_as = RunAs::this_process(mta_env);
    deliver_as(command, recipients, header, body, run_as, timeout)
}

/// The MTA's argv: the sendmail command with its arguments and the recipients, or `/bin/sh -c`
/// and the `-m` command. `None`: no mail (off, or no MTA installed).
fn mta_argv(
    command: &MailCommand,
    recipients: &[Vec<u8>],
) -> Result<(Vec<u8>, Vec<Vec<u8>>), MailOutcome> {
    match command {
        MailCommand::Off => Err(MailOutcome::Disabled),
        MailCommand::Sendmail(path) => {
            // Debian stats the MTA first and logs "No MTA installed" when it is missing.
            if std::fs::metadata(path).is_err() {
                return Err(MailOutcome::NoMta);
            }
            let mut args: Vec<Vec<u8>> = SENDMAIL_ARGS
                .iter()
                .map(|a| a.as_bytes().to_vec())
                .collect();
            args.extend(recipients.iter().cloned());
            Ok((path.as_os_str().as_bytes().to_vec(), args))
        }
        MailCommand::Shell(line) => Ok((
            b"/bin/sh".to_vec(),
            vec![b"-c".to_vec(), line.as_bytes().to_vec()],
        )),
    }
}

/// [`deliver`] with the MTA run as `run_as` says.
pub fn deliver_as(
    command: &MailCommand,
    recipients: &[Vec<u8>],
    header: &[u8],
    mut body: impl Read,
    run_as: RunAs<'_>,
    timeout: Duration,
) -> MailOutcome {
    let deadline = Instant::now() + timeout;
    let (path, args) = match mta_argv(command, recipients) {
        Ok(argv) => argv,
        Err(outcome) => return outcome,
    };
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    // Its own group, so a timeout kills whatever it started too (a queue runner, a shell's
    // children), not only the process we ran.
    let launch = match Launch::new(&path, &args, run_as.env) {
        Ok(launch) => launch.dir(run_as.dir).own_group(),
        Err(e) => return MailOutcome::MtaError(e),
    };
    let (read_end, write_end) = match crate::sys::pipe::pipe() {
        Ok(p) => p,
        Err(e) => return MailOutcome::MtaError(e),
    };
    let fds = StdFds {
        stdin: Some(read_end),
        stdout: None,
        stderr: None,
    };
    let pid = match as_user::spawn(&launch, fds, run_as.creds) {
        Ok(spawned) => spawned.pid,
        Err(e) => return MailOutcome::MtaError(io::Error::other(e.to_string())),
    };
    let mut stdin = File::from(write_end);
    let mut bytes = 0u64;
    let written = write_message(&mut stdin, header, &mut body, &mut bytes, deadline);
    drop(stdin);
    let status = loop {
        match process::wait_status(pid, false) {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline && !timed_out(&written) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            // Not reaped yet, so the pid (and the group it leads) is still this child's: the
            // kill can't hit another. Sent as the user, as the MTA is.
            Ok(None) => {
                if as_user::signal_group(run_as.creds, pid, GroupSignal::Kill).is_err() {
                    let _ = process::kill_child(pid);
                }
                let _ = process::wait_status(pid, true);
                return MailOutcome::MtaTimedOut { bytes };
            }
            Err(e) => return MailOutcome::MtaError(e),
        }
    };
    if !status.success() {
        return MailOutcome::MtaFailed {
            bytes,
            status: status.into_raw(),
        };
    }
    match written {
        Ok(()) => MailOutcome::Sent { bytes },
        // The MTA closed its stdin early but says it succeeded: believe the status, it has
        // what it wanted (a `-m` command like `head -c 100 > file` does this).
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => MailOutcome::Sent { bytes },
        Err(e) => MailOutcome::MtaError(e),
    }
}

fn timed_out(written: &io::Result<()>) -> bool {
    matches!(written, Err(e) if e.kind() == io::ErrorKind::TimedOut)
}

/// Writes the header and the body, without ever blocking past `deadline` (the pipe is made
/// non-blocking and waited on with poll).
fn write_message(
    to: &mut File,
    header: &[u8],
    body: &mut impl Read,
    bytes: &mut u64,
    deadline: Instant,
) -> io::Result<()> {
    crate::sys::poll::set_nonblocking(to.as_fd())?;
    write_all_until(to, header, deadline)?;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        write_all_until(to, &buf[..n], deadline)?;
        *bytes += n as u64;
    }
    Ok(())
}

fn write_all_until(to: &mut File, mut data: &[u8], deadline: Instant) -> io::Result<()> {
    while !data.is_empty() {
        match to.write(data) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => data = &data[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let left = deadline.saturating_duration_since(Instant::now());
                let ms = u32::try_from(left.as_millis()).unwrap_or(u32::MAX);
                if ms == 0 || !crate::sys::poll::wait_writable(to.as_fd(), ms)? {
                    return Err(io::ErrorKind::TimedOut.into());
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
