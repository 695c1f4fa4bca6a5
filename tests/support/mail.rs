//! Helpers shared by the mail tests: real users created with useradd (and removed), their real
//! mailboxes in /var/mail as exim4 delivers them, jobs run with real `sh -c` processes whose
//! merged stdout+stderr go through `crond::job::output`. No mocks: if exim4 or root is missing
//! the tests fail and say so.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crond::job::output::Output;

pub use super::root::require_root;
pub use super::user::TestUser;

/// The real MTA the tests send through.
pub fn require_exim() -> PathBuf {
    let p = PathBuf::from(crond::paths::SENDMAIL);
    let target = std::fs::read_link(&p).unwrap_or_default();
    assert!(
        p.exists() && target.to_string_lossy().contains("exim"),
        "{} must be exim4 (apt-get install -y exim4-daemon-light, see .ci/deps)",
        p.display()
    );
    p
}

/// A user whose mail exim4 delivers to /var/mail: home `/` (exim changes to it before it
/// delivers), no login shell.
/// Needs root and exim4, and fails without them.
pub fn mail_user() -> TestUser {
    require_exim();
    TestUser::create("m", &["-M", "-N", "-d", "/", "-s", "/usr/sbin/nologin"])
}

impl TestUser {
    pub fn mailbox(&self) -> PathBuf {
        Path::new("/var/mail").join(&self.name)
    }

    /// Waits (exim's Debian default delivers in the background) for the mailbox to hold
    /// `count` messages and returns them.
    pub fn wait_for_mail(&self, count: usize) -> Vec<Message> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let msgs = read_mbox(&self.mailbox());
            if msgs.len() >= count {
                // A large message may still be being appended: wait until it stops growing.
                std::thread::sleep(Duration::from_millis(200));
                let again = read_mbox(&self.mailbox());
                if again == msgs {
                    return msgs;
                }
                continue;
            }
            assert!(
                Instant::now() < deadline,
                "no mail for {} after 20 s ({} messages)",
                self.name,
                msgs.len()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Asserts that, after a generous delay, the mailbox holds exactly `count` messages.
    pub fn assert_no_more_than(&self, count: usize) {
        std::thread::sleep(Duration::from_millis(3000));
        let got = read_mbox(&self.mailbox()).len();
        assert_eq!(got, count, "messages for {}", self.name);
    }

    /// Asserts that no mail arrives within a generous delay.
    pub fn assert_no_mail(&self) {
        std::thread::sleep(Duration::from_millis(1500));
        assert!(
            !self.mailbox().exists() || read_mbox(&self.mailbox()).is_empty(),
            "unexpected mail for {}",
            self.name
        );
    }
}

/// One delivered message: header lines (unfolded) and the body bytes.
#[derive(Debug, PartialEq, Eq)]
pub struct Message {
    pub headers: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

impl Message {
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    pub fn header_str(&self, name: &str) -> String {
        String::from_utf8_lossy(
            self.header(name)
                .unwrap_or_else(|| panic!("no {name} header in {:?}", self.headers)),
        )
        .into_owned()
    }

    pub fn all(&self, name: &str) -> Vec<String> {
        self.headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| String::from_utf8_lossy(v).into_owned())
            .collect()
    }
}

/// Splits an mbox file into messages (exim's mbox: each message starts with a `From ` line
/// after a blank line and ends with a blank line it adds).
pub fn read_mbox(path: &Path) -> Vec<Message> {
    let mut data = Vec::new();
    match File::open(path) {
        Ok(mut f) => {
            f.read_to_end(&mut data).unwrap();
        }
        Err(_) => return Vec::new(),
    }
    let mut starts = Vec::new();
    if data.starts_with(b"From ") {
        starts.push(0);
    }
    let mut i = 0;
    while let Some(p) = find(&data[i..], b"\n\nFrom ") {
        starts.push(i + p + 2);
        i += p + 2;
    }
    let mut msgs = Vec::new();
    for (k, &s) in starts.iter().enumerate() {
        let e = starts.get(k + 1).copied().unwrap_or(data.len());
        match parse_message(&data[s..e]) {
            Some(m) => msgs.push(m),
            // Only the last message can be cut short: the MTA is still appending it.
            None if k + 1 == starts.len() => break,
            None => panic!("a message without a blank line after its headers in {path:?}"),
        }
    }
    msgs
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// One message, or `None` while its headers are not all written.
fn parse_message(raw: &[u8]) -> Option<Message> {
    let first_nl = raw.iter().position(|&b| b == b'\n')?;
    let raw = &raw[first_nl + 1..];
    let split = find(raw, b"\n\n")?;
    let head = &raw[..split];
    let mut body = raw[split + 2..].to_vec();
    // The separator blank line exim appends after every message.
    if body.ends_with(b"\n\n") {
        body.pop();
    } else if body.ends_with(b"\n") && body.len() == 1 {
        body.clear();
    }
    let mut headers: Vec<(String, Vec<u8>)> = Vec::new();
    for line in head.split(|&b| b == b'\n') {
        if line.first().is_some_and(|b| *b == b' ' || *b == b'\t') {
            let last = headers.last_mut().expect("continuation after a header");
            last.1.push(b'\n');
            last.1.extend_from_slice(line);
        } else {
            let colon = line.iter().position(|&b| b == b':').expect("header colon");
            let name = String::from_utf8_lossy(&line[..colon]).into_owned();
            let mut v = &line[colon + 1..];
            if v.first() == Some(&b' ') {
                v = &v[1..];
            }
            headers.push((name, v.to_vec()));
        }
    }
    Some(Message { headers, body })
}

/// Runs `sh -c script` with stdout and stderr on one pipe (as the job child does) and `stdin`,
/// capturing the output through `crond::job::output`. Returns the output and the exit status.
pub fn run_job(script: &str, stdin: Stdio, spill_dir: &Path) -> (Output, std::process::ExitStatus) {
    let (r, w) = crond::sys::pipe::pipe().unwrap();
    let w2 = w.try_clone().unwrap();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(script)
        .stdin(stdin)
        .stdout(Stdio::from(w))
        .stderr(Stdio::from(w2));
    let mut child = cmd.spawn().expect("spawn sh");
    drop(cmd);
    let out = Output::capture(spill_dir, File::from(r)).expect("read the job's output");
    let status = child.wait().unwrap();
    (out, status)
}

/// The environment of a job as the daemon would build it.
pub fn job_env(user: &str, extra: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut env: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b"SHELL".to_vec(), b"/bin/sh".to_vec()),
        (b"HOME".to_vec(), b"/nonexistent".to_vec()),
        (b"PATH".to_vec(), b"/usr/bin:/bin".to_vec()),
        (b"LOGNAME".to_vec(), user.as_bytes().to_vec()),
        (b"USER".to_vec(), user.as_bytes().to_vec()),
    ];
    for (n, v) in extra {
        env.push((n.as_bytes().to_vec(), v.as_bytes().to_vec()));
    }
    env
}

/// FNV-1a, to compare large bodies without keeping two copies around.
pub fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf29ce484222325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100000001b3)
    })
}

/// A header value with exim's qualification of bare local names (`bob` → `bob@HOST`) undone,
/// so tests compare what crond wrote.
pub fn unqualified(value: &str) -> String {
    let host = String::from_utf8_lossy(&crond::sys::hostname()).into_owned();
    value.replace(&format!("@{host}"), "")
}
