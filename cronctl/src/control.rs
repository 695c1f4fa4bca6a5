//! `cronctl list|run|show|status|history|logs|pause|resume`: one request line to crond's control
//! socket, and its answer printed (docs/limits.md bounds both); `show` asks a second one, its
//! entry's last runs from the run history ([`crate::show`]). No database and no privilege: the
//! daemon tells the asker apart by the socket's credentials and shows them what is theirs. Root
//! (and the daemon's own user) go through the private socket beside the shared one when it is
//! there, where no other user's connections can stand in front of theirs.

use std::fmt;
use std::io::{self, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crond::control::{MAX_ANSWER_ROOT, private_path};

/// How long cronctl waits for the daemon to take the connection (its backlog may be full).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long cronctl waits for the daemon (which answers at once, or drops the connection 5 s
/// after accepting it).
const TIMEOUT: Duration = Duration::from_secs(10);

/// How long `run` waits for the daemon, which answers once the job child has said whether the
/// job started (or after 20 s without its word).
const RUN_TIMEOUT: Duration = Duration::from_secs(30);

/// How long cronctl waits for the answer to `request`: `run --wait` as long as the job runs
/// (`None`; the user can interrupt it, and the daemon lets the run go on).
fn answer_timeout(request: &str) -> Option<Duration> {
    if request.starts_with("run --wait ") {
        None
    } else if request.starts_with("run ") {
        Some(RUN_TIMEOUT)
    } else {
        Some(TIMEOUT)
    }
}

/// The control socket asked when `--socket` is not given: `$CROND_SOCKET`, else the socket of a
/// `--crontab` daemon of this uid when there is one, else the system daemon's
/// (`crond::paths::control_socket`, the rule cronctl.8 states).
pub fn default_socket() -> PathBuf {
    crond::paths::control_socket(
        std::env::var_os("CROND_SOCKET").as_deref(),
        std::env::var_os("XDG_RUNTIME_DIR").as_deref(),
        crond::sys::user::effective_uid(),
        |p| p.exists(),
    )
}

/// Sends `request` to the daemon at `socket` (or its private socket, when this user may use
/// it): the answer's text and the exit status it gives cronctl (0, or with `run --wait` the
/// job's), or the error to print.
pub fn ask(socket: &Path, request: &str) -> Result<(String, u8), ControlError> {
    let (rest, exit) = ask_bytes(socket, request)?;
    let text = String::from_utf8_lossy(&rest);
    Ok((text.trim_end_matches('\n').to_string(), exit))
}

/// [`ask`], the answer's bytes after its status line as they came (`logs --raw` prints them
/// as the job wrote them).
pub fn ask_bytes(socket: &Path, request: &str) -> Result<(Vec<u8>, u8), ControlError> {
    let (mut stream, socket) = connect(socket)?;
    let lost = |e: io::Error| match e.kind() {
        // The daemon turned the connection away before reading it (busy).
        io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe => {
            ControlError::TurnedAway(socket.clone())
        }
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
            ControlError::NoAnswer(socket.clone())
        }
        _ => ControlError::Lost(socket.clone(), e),
    };
    stream
        .set_read_timeout(answer_timeout(request))
        .map_err(lost)?;
    stream.set_write_timeout(Some(TIMEOUT)).map_err(lost)?;
    stream
        .write_all(format!("{request}\n").as_bytes())
        .map_err(lost)?;
    let mut answer = Vec::new();
    stream
        .take(MAX_ANSWER_ROOT as u64 + 1)
        .read_to_end(&mut answer)
        .map_err(lost)?;
    let split = answer.iter().position(|&b| b == b'\n');
    let (status, rest) = match split {
        Some(at) => (&answer[..at], answer[at + 1..].to_vec()),
        None => (&answer[..], Vec::new()),
    };
    let status = String::from_utf8_lossy(status);
    let exit = status
        .strip_prefix("EXIT ")
        .and_then(|code| code.parse::<i32>().ok());
    match &*status {
        "OK" => Ok((rest, 0)),
        _ if exit.is_some() => Ok((rest, exit.map_or(1, |c| c.clamp(0, 255) as u8))),
        _ => match status.strip_prefix("ERROR ") {
            Some(message) => Err(ControlError::Refused(message.to_string())),
            None if answer.is_empty() => Err(ControlError::Closed(socket)),
            None => Err(ControlError::NotCrond(socket)),
        },
    }
}

/// A connection to the private socket beside `socket` when this user may use it (it is
/// there, and theirs or root's), else to `socket`; and the path connected to.
fn connect(socket: &Path) -> Result<(UnixStream, PathBuf), ControlError> {
    let private = private_path(socket);
    let tried = match crond::sys::listen::connect_unix(&private, CONNECT_TIMEOUT) {
        Ok(stream) => return Ok((stream, private)),
        Err(e) => e,
    };
    // Not there, not ours, or left by a daemon that is gone: the shared socket says which.
    let mut to = socket;
    let e = match tried.kind() {
        io::ErrorKind::NotFound
        | io::ErrorKind::PermissionDenied
        | io::ErrorKind::ConnectionRefused => {
            match crond::sys::listen::connect_unix(socket, CONNECT_TIMEOUT) {
                Ok(stream) => return Ok((stream, socket.to_path_buf())),
                Err(e) => e,
            }
        }
        _ => {
            to = &private;
            tried
        }
    };
    Err(match e.kind() {
        io::ErrorKind::WouldBlock => ControlError::NotTaken(to.to_path_buf()),
        _ => ControlError::Unreachable(to.to_path_buf(), e),
    })
}

/// Why the daemon gave no answer, or the error it answered.
#[derive(Debug)]
pub enum ControlError {
    /// The socket did not take the connection in time.
    NotTaken(PathBuf),
    Unreachable(PathBuf, io::Error),
    /// The daemon closed the connection before reading the request (busy).
    TurnedAway(PathBuf),
    /// No answer within [`TIMEOUT`].
    NoAnswer(PathBuf),
    Lost(PathBuf, io::Error),
    /// The daemon's `ERROR` answer, as it said it.
    Refused(String),
    /// The connection closed without a byte of answer.
    Closed(PathBuf),
    /// An answer that is neither `OK` nor `ERROR`.
    NotCrond(PathBuf),
}

impl fmt::Display for ControlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ControlError::NotTaken(socket) => write!(
                f,
                "{}: crond did not take the connection within {} s (socket flooded?); try again",
                socket.display(),
                CONNECT_TIMEOUT.as_secs()
            ),
            ControlError::Unreachable(socket, e) => write!(
                f,
                "can't reach crond at {}: {e} (is crond running? --socket PATH or \
                 CROND_SOCKET=PATH asks another)",
                socket.display()
            ),
            ControlError::TurnedAway(socket) => write!(
                f,
                "{}: the daemon closed the connection before answering (too many connections \
                 to the control socket: try again)",
                socket.display()
            ),
            ControlError::NoAnswer(socket) => write!(
                f,
                "{}: no answer from crond within {} s (socket flooded?); try again",
                socket.display(),
                TIMEOUT.as_secs()
            ),
            ControlError::Lost(socket, e) => write!(f, "{}: {e}", socket.display()),
            ControlError::Refused(message) => f.write_str(message),
            ControlError::Closed(socket) => write!(
                f,
                "{}: the daemon closed the connection without an answer",
                socket.display()
            ),
            ControlError::NotCrond(socket) => write!(f, "{}: not crond's answer", socket.display()),
        }
    }
}

impl std::error::Error for ControlError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_that_takes_no_connection_or_gives_no_answer_is_said_in_one_short_line() {
        let socket = PathBuf::from("/run/crond.sock");
        let said = [
            ControlError::NotTaken(socket.clone()).to_string(),
            ControlError::NoAnswer(socket).to_string(),
        ];
        assert_eq!(
            said,
            [
                "/run/crond.sock: crond did not take the connection within 5 s (socket flooded?); \
                 try again",
                "/run/crond.sock: no answer from crond within 10 s (socket flooded?); try again",
            ]
        );
        for line in said {
            assert!(format!("cronctl: {line}").len() <= 100, "{line}");
        }
    }
}
