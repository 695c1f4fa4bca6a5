//! Each outcome as a journal entry, when the journal's socket is there: one datagram of the
//! native protocol (`KEY=value` lines; a value holding a newline as `KEY`, newline, its length
//! as 8 bytes little-endian, the bytes, newline), sent without waiting. A journal that is
//! away or full loses the entry: the store has it, and one line of the log says so.

use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};

use crond::history::{Outcome, Result as Slot};

use super::render;

/// The system journal's native socket.
pub const DEFAULT_SOCKET: &str = "/run/systemd/journal/socket";

/// Appends the field `key` with `value`, in the binary form when the value has a newline.
fn field(out: &mut Vec<u8>, key: &str, value: &[u8]) {
    out.extend_from_slice(key.as_bytes());
    if value.contains(&b'\n') {
        out.push(b'\n');
        out.extend_from_slice(&(value.len() as u64).to_le_bytes());
    } else {
        out.push(b'=');
    }
    out.extend_from_slice(value);
    out.push(b'\n');
}

/// The entry of one outcome: `MESSAGE` (one readable line), `PRIORITY` (6 when it ran well, 4
/// when it failed or did not run), `SYSLOG_IDENTIFIER=crond` and the `CRON_*` fields.
pub fn entry(o: &Outcome) -> Vec<u8> {
    let status = render::status(o);
    let head = format!("({}) {}", o.user, o.place);
    let (message, duration) = match &o.result {
        Slot::NotRun { reason, words } if words.is_empty() => {
            (format!("{head} did not run: {}", reason.code()), None)
        }
        Slot::NotRun { reason, words } => (
            format!("{head} did not run: {}: {words}", reason.code()),
            None,
        ),
        Slot::Ran(r) => {
            let ms = r.ended_ms - o.at_ms;
            (
                format!("{head} {status} after {}", render::took(ms)),
                Some(ms),
            )
        }
    };
    // One line: a newline in a place or in a reason's words is not the journal's business.
    let message = message.replace(['\n', '\r'], " ");
    let mut out = Vec::with_capacity(512);
    field(&mut out, "MESSAGE", message.as_bytes());
    field(&mut out, "PRIORITY", if o.failed() { b"4" } else { b"6" });
    field(&mut out, "SYSLOG_IDENTIFIER", b"crond");
    field(&mut out, "CRON_ID", o.entry.as_bytes());
    field(&mut out, "CRON_USER", o.user.as_bytes());
    field(&mut out, "CRON_PLACE", o.place.as_bytes());
    field(&mut out, "CRON_TRIGGER", o.trigger.code().as_bytes());
    field(&mut out, "CRON_STATUS", status.as_bytes());
    if let Slot::NotRun { reason, .. } = &o.result {
        field(&mut out, "CRON_REASON", reason.code().as_bytes());
    }
    if let Some(ms) = duration {
        field(
            &mut out,
            "CRON_DURATION_MS",
            ms.max(0).to_string().as_bytes(),
        );
    }
    out
}

/// The journal's socket, and whether its failure was told.
#[derive(Debug)]
pub struct Journal {
    socket: UnixDatagram,
    path: PathBuf,
    told: bool,
}

impl Journal {
    pub fn new(path: &Path) -> io::Result<Journal> {
        let socket = UnixDatagram::unbound()?;
        socket.set_nonblocking(true)?;
        Ok(Journal {
            socket,
            path: path.to_path_buf(),
            told: false,
        })
    }

    /// Sends the outcome's entry: the first failure gives the line the log should have (the
    /// later ones nothing).
    pub fn send(&mut self, o: &Outcome) -> Option<String> {
        match self.socket.send_to(&entry(o), &self.path) {
            Ok(_) => None,
            Err(_) if self.told => None,
            Err(e) => {
                self.told = true;
                Some(format!(
                    "history: outcomes are not sent to the journal at {}: {e}",
                    self.path.display()
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crond::history::{End, Mail, Ran, Reason, Trigger};

    /// The native protocol read back: each field's name and value.
    fn parse(mut data: &[u8]) -> Vec<(String, Vec<u8>)> {
        let mut fields = Vec::new();
        while !data.is_empty() {
            let line_end = data.iter().position(|&b| b == b'\n').unwrap();
            let line = &data[..line_end];
            if let Some(eq) = line.iter().position(|&b| b == b'=') {
                fields.push((
                    String::from_utf8(line[..eq].to_vec()).unwrap(),
                    line[eq + 1..].to_vec(),
                ));
                data = &data[line_end + 1..];
            } else {
                let rest = &data[line_end + 1..];
                let len = u64::from_le_bytes(rest[..8].try_into().unwrap()) as usize;
                fields.push((
                    String::from_utf8(line.to_vec()).unwrap(),
                    rest[8..8 + len].to_vec(),
                ));
                assert_eq!(rest[8 + len], b'\n');
                data = &rest[8 + len + 1..];
            }
        }
        fields
    }

    fn outcome(result: Slot) -> Outcome {
        Outcome {
            entry: "3f2a9c01b7d4".into(),
            place: "crontabs/alice:3".into(),
            user: "alice".into(),
            owner_uid: Some(1000),
            command: "false".into(),
            trigger: Trigger::Manual,
            slot: None,
            host: "h".into(),
            at_ms: 1_000,
            cluster: None,
            attempt: None,
            result,
        }
    }

    fn value<'a>(fields: &'a [(String, Vec<u8>)], key: &str) -> Option<&'a [u8]> {
        fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_slice())
    }

    #[test]
    fn an_outcome_reaches_a_datagram_socket_as_native_journal_fields() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("journal.socket");
        let server = UnixDatagram::bind(&path).unwrap();
        let mut journal = Journal::new(&path).unwrap();
        let ran = outcome(Slot::Ran(Ran {
            ended_ms: 3_100,
            end: End::Exited(3),
            timed_out: false,
            user_us: 0,
            system_us: 0,
            max_rss_kib: 0,
            output_bytes: 0,
            head: Vec::new(),
            tail: Vec::new(),
            mail: Mail::None,
        }));
        assert_eq!(journal.send(&ran), None);
        let mut buf = vec![0u8; 65_536];
        let n = server.recv(&mut buf).unwrap();
        let fields = parse(&buf[..n]);
        let get = |k| String::from_utf8(value(&fields, k).unwrap().to_vec()).unwrap();
        assert_eq!(get("MESSAGE"), "(alice) crontabs/alice:3 exit 3 after 2.1s");
        assert_eq!(get("PRIORITY"), "4");
        assert_eq!(get("SYSLOG_IDENTIFIER"), "crond");
        assert_eq!(get("CRON_ID"), "3f2a9c01b7d4");
        assert_eq!(get("CRON_USER"), "alice");
        assert_eq!(get("CRON_PLACE"), "crontabs/alice:3");
        assert_eq!(get("CRON_TRIGGER"), "manual");
        assert_eq!(get("CRON_STATUS"), "exit 3");
        assert_eq!(get("CRON_DURATION_MS"), "2100");
        assert_eq!(value(&fields, "CRON_REASON"), None);

        // A place with a newline goes in the binary form; the message stays one line.
        let mut skipped = outcome(Slot::NotRun {
            reason: Reason::Overlap,
            words: "run 3 was still running".into(),
        });
        skipped.place = "crontabs/odd\nname:1".into();
        journal.send(&skipped);
        let n = server.recv(&mut buf).unwrap();
        let fields = parse(&buf[..n]);
        assert_eq!(
            value(&fields, "MESSAGE").unwrap(),
            b"(alice) crontabs/odd name:1 did not run: overlap: run 3 was still running"
        );
        assert_eq!(
            value(&fields, "CRON_PLACE").unwrap(),
            b"crontabs/odd\nname:1"
        );
        assert_eq!(value(&fields, "CRON_STATUS").unwrap(), b"not-run");
        assert_eq!(value(&fields, "CRON_REASON").unwrap(), b"overlap");
        assert_eq!(value(&fields, "CRON_DURATION_MS"), None);
    }

    #[test]
    fn a_journal_that_is_not_there_is_told_once() {
        let dir = tempfile::tempdir().unwrap();
        let mut journal = Journal::new(&dir.path().join("none")).unwrap();
        let o = outcome(Slot::NotRun {
            reason: Reason::Missed,
            words: String::new(),
        });
        assert!(
            journal
                .send(&o)
                .unwrap()
                .contains("not sent to the journal")
        );
        assert_eq!(journal.send(&o), None);
    }
}
