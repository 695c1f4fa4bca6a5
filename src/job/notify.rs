//! A run's `CRON_PING` and `CRON_WEBHOOK` requests (crontab.5 "Extensions"): this job child
//! decides, under the entry's `CRON_NOTIFY`, whether the run notifies, and starts
//! `cronctl notify` as the job's user to send them (ids dropped before the exec, as for the
//! MTA), the run's outcome on its standard input. It does not wait for it: the helper ends by
//! itself (cronctl's `notify::TIMEOUT`, `TRIES`), and logs what it could not deliver. This
//! process, root's, opens no connection for the user and holds no HTTP code. For a slot that
//! did not run under `CRON_NOTIFY=failure|change`, the same helper also mails it, given the
//! daemon's MTA options ([`mail_args`]), so that neither the daemon nor a job child waits on
//! the MTA for it.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use super::MailSetup;
use super::mail::MailCommand;
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

/// Whether a crontab's variables ask for requests (`CRON_PING` or `CRON_WEBHOOK`, not empty).
pub fn asked_by(env: &crate::crontab::Env) -> bool {
    [b"CRON_PING".as_slice(), b"CRON_WEBHOOK"]
        .iter()
        .any(|name| env.get(name).is_some_and(|v| !v.is_empty()))
}

/// A run's id as healthchecks.io takes it: a random (version 4) UUID.
pub fn new_rid() -> String {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = std::io::Read::read_exact(&mut f, &mut b);
    }
    uuid_of(b)
}

/// The id of every attempt of a slot that may be tried again (`CRON_RETRY`): one UUID made
/// from the entry's id, the slot (Unix seconds) and the host, so that a health check sees one
/// run, from the first attempt's start to the end of the one that notifies.
pub fn slot_rid(entry: &str, slot: i64, host: &str) -> String {
    use crate::hash::{FNV_OFFSET, fnv1a, mix};
    let mut h = fnv1a(FNV_OFFSET, b"crond-rid-1");
    for part in [entry.as_bytes(), &slot.to_le_bytes(), host.as_bytes()] {
        h = fnv1a(h, &(part.len() as u64).to_le_bytes());
        h = fnv1a(h, part);
    }
    let (high, low) = (mix(h), mix(h ^ 0x5555_5555_5555_5555));
    let mut b = [0u8; 16];
    b[..8].copy_from_slice(&high.to_be_bytes());
    b[8..].copy_from_slice(&low.to_be_bytes());
    uuid_of(b)
}

/// The rid of a run or slot's requests: its slot's ([`slot_rid`]) for an attempt of a slot
/// with retries (a dropped retry's record too, which closes the run its first attempt
/// started), else a new one.
pub fn rid_for(outcome: &Outcome) -> String {
    match (outcome.attempt, outcome.slot) {
        (Some(_), Some(slot)) => slot_rid(&outcome.entry, slot, &outcome.host),
        _ => new_rid(),
    }
}

/// `b` written as a version 4 UUID.
fn uuid_of(mut b: [u8; 16]) -> String {
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
    /// to its last [`MAX_TAIL`] bytes) on its standard input, and with `mail` the helper also
    /// mails it (a slot that did not run) as the daemon's mail options say. Errors are logged,
    /// never waited for.
    pub fn start(
        &self,
        rid: &str,
        outcome: Option<&Outcome>,
        mail: Option<&MailSetup>,
        who: As<'_>,
        log: Log,
    ) {
        let phase: &[u8] = if outcome.is_some() { b"end" } else { b"start" };
        let mut args: Vec<&[u8]> = vec![b"notify", phase, b"--rid", rid.as_bytes()];
        args.extend(log.helper_args().iter().map(|a| a.as_bytes()));
        let mail_args = mail.map(mail_args).unwrap_or_default();
        args.extend(mail_args.iter().map(Vec::as_slice));
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

/// The helper's options that have it mail a slot that did not run: the MTA (`--sendmail PATH`,
/// or cronie's `-m` as `--mail-command CMD`), the subject's host and the charset.
fn mail_args(mail: &MailSetup) -> Vec<Vec<u8>> {
    let mut args: Vec<Vec<u8>> = match &mail.command {
        MailCommand::Sendmail(path) => {
            vec![b"--sendmail".to_vec(), path.as_os_str().as_bytes().to_vec()]
        }
        MailCommand::Shell(line) => vec![b"--mail-command".to_vec(), line.as_bytes().to_vec()],
        MailCommand::Off => return Vec::new(),
    };
    // cronctl takes its options as UTF-8.
    let host = super::mail::subject_host(&crate::sys::hostname(), mail.full_host);
    let host = String::from_utf8_lossy(&host).into_owned().into_bytes();
    args.extend([b"--mail-host".to_vec(), host]);
    args.extend([b"--charset".to_vec(), mail.charset.as_bytes().to_vec()]);
    args
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slots_attempts_share_one_rid_and_other_slots_entries_and_hosts_do_not() {
        let rid = slot_rid("3f2a9c41d0e7", 1_796_000_000, "web1");
        assert_eq!(rid, slot_rid("3f2a9c41d0e7", 1_796_000_000, "web1"));
        assert_ne!(rid, slot_rid("3f2a9c41d0e7", 1_796_000_060, "web1"));
        assert_ne!(rid, slot_rid("3f2a9c41d0e8", 1_796_000_000, "web1"));
        assert_ne!(rid, slot_rid("3f2a9c41d0e7", 1_796_000_000, "web2"));
        for rid in [rid, new_rid()] {
            let groups: Vec<usize> = rid.split('-').map(str::len).collect();
            assert_eq!(groups, [8, 4, 4, 4, 12], "{rid}");
            assert_eq!(&rid[14..15], "4", "version 4: {rid}");
            assert!("89ab".contains(&rid[19..20]), "variant: {rid}");
        }
    }
}
