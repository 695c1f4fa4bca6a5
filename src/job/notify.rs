//! A run's `CRON_PING` and `CRON_WEBHOOK` requests (crontab.5 "Extensions"): this job child
//! decides, under the entry's `CRON_NOTIFY`, whether the run notifies, and starts
//! `cronctl notify` as the job's user to send them (ids dropped before the exec, as for the
//! MTA), the run's outcome on its standard input. It does not wait for it: the helper ends by
//! itself (cronctl's `notify::TIMEOUT`, `TRIES`), and logs what it could not deliver. This
//! process, root's, opens no connection for the user and holds no HTTP code.

use std::io::Write;
use std::path::PathBuf;

use crate::history::Outcome;
use crate::log::Log;
use crate::sys::as_user::{self, Credentials, Launch, StdFds};

/// The most of the output an end's outcome carries to the helper: the ping's body bound, so
/// the message fits in a pipe's buffer and the write never waits.
pub const MAX_TAIL: usize = 10 * 1024;

/// Where the helper is, and what the log it writes to is.
#[derive(Debug, Clone)]
pub struct Notifier {
    /// `cronctl` (beside `crond`, else /usr/sbin/cronctl).
    pub program: PathBuf,
}

/// Whether the environment asks for requests.
pub fn wanted_by(env: &[(Vec<u8>, Vec<u8>)]) -> bool {
    env.iter()
        .any(|(n, v)| (n == b"CRON_PING" || n == b"CRON_WEBHOOK") && !v.is_empty())
}

/// A run's id as healthchecks.io takes it: a random (version 4) UUID.
pub fn new_rid() -> String {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// What the helper runs as, with which environment (the job's).
#[derive(Debug, Clone, Copy)]
pub struct As<'a> {
    pub creds: Option<&'a Credentials>,
    pub env: &'a [(Vec<u8>, Vec<u8>)],
}

impl Notifier {
    /// Starts `cronctl notify start|end` as the user; an end gets `outcome` (its output cut
    /// to its last [`MAX_TAIL`] bytes) on its standard input. Errors are logged, never
    /// waited for.
    pub fn start(&self, rid: &str, outcome: Option<&Outcome>, who: As<'_>, log: Log) {
        let phase: &[u8] = if outcome.is_some() { b"end" } else { b"start" };
        let mut args: Vec<&[u8]> = vec![b"notify", phase, b"--rid", rid.as_bytes()];
        args.extend(log.helper_args().iter().map(|a| a.as_bytes()));
        let program = self.program.as_os_str().as_encoded_bytes();
        let launch = match Launch::new(program, &args, who.env) {
            Ok(launch) => launch.dir(b"/"),
            Err(e) => return log.error("CRON", "NOTIFY", &format!("cannot start: {e}")),
        };
        let (read_end, write_end) = match crate::sys::pipe::pipe() {
            Ok(p) => p,
            Err(e) => return log.error("CRON", "NOTIFY", &format!("cannot start: {e}")),
        };
        let fds = StdFds {
            stdin: Some(read_end),
            stdout: None,
            stderr: None,
        };
        if let Err(e) = as_user::spawn(&launch, fds, who.creds) {
            return log.error(
                "CRON",
                "NOTIFY",
                &format!("cannot start cronctl notify: {e}"),
            );
        }
        if let Some(outcome) = outcome {
            let mut message = cut(outcome).encode();
            message.truncate(crate::history::MAX_MESSAGE);
            let _ = std::fs::File::from(write_end).write_all(&message);
        }
    }
}

/// `outcome` with only the last [`MAX_TAIL`] bytes of its output, all in its head.
fn cut(outcome: &Outcome) -> Outcome {
    let mut outcome = outcome.clone();
    if let crate::history::Result::Ran(ran) = &mut outcome.result {
        let mut all = std::mem::take(&mut ran.head);
        all.append(&mut ran.tail);
        ran.head = all.split_off(all.len().saturating_sub(MAX_TAIL));
    }
    outcome
}
