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
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};

use super::{JobMail, MailCommand, MailConfig, MailOutcome, Plan, SENDMAIL_ARGS, plan};
use crate::job::output::Output;

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
            )
        }
    }
}

/// Runs the mail command and writes `header` then `body` to its stdin. Returns how it went;
/// `bytes` counts the body only.
pub fn deliver(
    command: &MailCommand,
    recipients: &[Vec<u8>],
    header: &[u8],
    mut body: impl Read,
    mta_env: &[(Vec<u8>, Vec<u8>)],
) -> MailOutcome {
    let mut cmd = match command {
        MailCommand::Off => return MailOutcome::Disabled,
        MailCommand::Sendmail(path) => {
            // Debian stats the MTA first and logs "No MTA installed" when it is missing.
            if std::fs::metadata(path).is_err() {
                return MailOutcome::NoMta;
            }
            let mut c = Command::new(path);
            c.args(SENDMAIL_ARGS);
            c.args(recipients.iter().map(|r| OsStr::from_bytes(r)));
            c
        }
        MailCommand::Shell(line) => {
            let mut c = Command::new("/bin/sh");
            c.arg("-c").arg(line);
            c
        }
    };
    cmd.env_clear()
        .envs(
            mta_env
                .iter()
                .map(|(n, v)| (OsStr::from_bytes(n), OsStr::from_bytes(v))),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return MailOutcome::MtaError(e),
    };
    drop(cmd);
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let mut bytes = 0u64;
    let written = write_message(&mut stdin, header, &mut body, &mut bytes);
    drop(stdin);
    let status = loop {
        match child.wait() {
            Ok(s) => break s,
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

fn write_message(
    to: &mut impl Write,
    header: &[u8],
    body: &mut impl Read,
    bytes: &mut u64,
) -> io::Result<()> {
    to.write_all(header)?;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match body.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        to.write_all(&buf[..n])?;
        *bytes += n as u64;
    }
    to.flush()
}

#[cfg(test)]
mod tests;
