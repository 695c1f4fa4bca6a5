//! Piping a planned mail to the MTA: `sendmail -FCronDaemon -i -B8BITMIME -oem <to...>` (or
//! the `-m` shell command), the header, then the job's output streamed from its spool, so a
//! large output never sits in memory. The MTA's own stdout and stderr go to /dev/null; its
//! exit status is the report.
//!
//! Preconditions, which the job child meets: the process already runs as the job's user (the
//! MTA must run as that user, never as root; this function does not change ids), and SIGPIPE is
//! ignored (Rust's default for its binaries), so an MTA that exits early shows up as a write
//! error and an exit status rather than killing the job child. It never logs.

use std::ffi::OsStr;
use std::io::{self, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{ChildStdin, Stdio};
use std::time::{Duration, Instant};

use super::{JobMail, MailCommand, MailConfig, MailOutcome, Plan, SENDMAIL_ARGS, plan};
use crate::job::output::Output;
use crate::sys::spawn::Program;

/// How long the MTA may take to read the message and exit: past it, it is killed (an MTA that
/// hangs must not keep a job child, and its output, waiting forever).
pub const MTA_TIMEOUT: Duration = Duration::from_secs(600);

/// Plans and sends the mail for one job: the whole of DESIGN §6 in one call. `mta_env` is the
/// environment the MTA runs with (nothing of the daemon's leaks into it; the job's environment
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
    match plan(job, config, output.is_empty(), output.text_kind()) {
        Plan::Empty => MailOutcome::Empty,
        Plan::MailtoEmpty | Plan::Off => MailOutcome::Disabled,
        Plan::Unsafe { value } => MailOutcome::UnsafeAddress { value },
        Plan::Send { recipients, header } => {
            let mut note = match (output.lost_bytes(), output.spill_error()) {
                (0, _) => Vec::new(),
                (n, e) => format!(
                    "\n[crond: {n} more bytes of output were lost: {}]\n",
                    e.map(|e| e.to_string()).unwrap_or_default()
                )
                .into_bytes(),
            };
            if output.dropped_bytes() > 0 {
                note.extend_from_slice(
                    format!(
                        "\n[crond: {} more bytes of output were dropped: past the limit of {} \
                         bytes (crond --max-output)]\n",
                        output.dropped_bytes(),
                        output.limit().unwrap_or(0)
                    )
                    .as_bytes(),
                );
            }
            deliver(
                &config.command,
                &recipients,
                &header,
                output.reader().chain(&note[..]),
                mta_env,
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
    mut body: impl Read,
    mta_env: &[(Vec<u8>, Vec<u8>)],
    timeout: Duration,
) -> MailOutcome {
    let deadline = Instant::now() + timeout;
    let mut cmd = match command {
        MailCommand::Off => return MailOutcome::Disabled,
        MailCommand::Sendmail(path) => {
            // Debian stats the MTA first and logs "No MTA installed" when it is missing.
            if std::fs::metadata(path).is_err() {
                return MailOutcome::NoMta;
            }
            let mut c = Program::new(path);
            c.args(SENDMAIL_ARGS);
            c.args(recipients.iter().map(|r| OsStr::from_bytes(r)));
            c
        }
        MailCommand::Shell(line) => {
            let mut c = Program::new("/bin/sh");
            c.arg("-c").arg(line);
            c
        }
    };
    cmd.env_exactly(mta_env)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own group, so a timeout kills whatever it started too (a queue runner, a shell's
        // children), not only the process we ran.
        .own_process_group();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return MailOutcome::MtaError(e),
    };
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let mut bytes = 0u64;
    let written = write_message(&mut stdin, header, &mut body, &mut bytes, deadline);
    drop(stdin);
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if Instant::now() < deadline && !timed_out(&written) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            // Not reaped yet, so the pid (and the group it leads) is still this child's: the
            // kill can't hit another.
            Ok(None) => {
                if crate::sys::process::kill_group(child.id()).is_err() {
                    let _ = child.kill();
                }
                let _ = child.wait();
                return MailOutcome::MtaTimedOut { bytes };
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
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
    to: &mut ChildStdin,
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

fn write_all_until(to: &mut ChildStdin, mut data: &[u8], deadline: Instant) -> io::Result<()> {
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
