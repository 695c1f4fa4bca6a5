//! `cronctl list|run|status`: one request line to crond's control socket, and its answer
//! printed (docs/limits.md bounds both). No database and no privilege: the daemon tells the
//! asker apart by the socket's credentials and shows them what is theirs.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::Duration;

use crate::control::MAX_ANSWER_ROOT;

/// How long cronctl waits for the daemon (which answers at once, or drops the connection 5 s
/// after accepting it).
const TIMEOUT: Duration = Duration::from_secs(10);

/// Sends `request` to the daemon at `socket`: the answer's text, or the error to print.
pub fn ask(socket: &Path, request: &str) -> Result<String, String> {
    let mut stream = UnixStream::connect(socket).map_err(|e| {
        format!(
            "can't reach crond at {}: {e} (is crond running? its --control-socket; \
             cronctl --socket PATH)",
            socket.display()
        )
    })?;
    let lost = |e: std::io::Error| match e.kind() {
        // The daemon turned the connection away before reading it (busy).
        std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe => format!(
            "{}: the daemon closed the connection before answering (too many connections \
             to the control socket: try again)",
            socket.display()
        ),
        _ => format!("{}: {e}", socket.display()),
    };
    stream.set_read_timeout(Some(TIMEOUT)).map_err(lost)?;
    stream.set_write_timeout(Some(TIMEOUT)).map_err(lost)?;
    stream
        .write_all(format!("{request}\n").as_bytes())
        .map_err(lost)?;
    let mut answer = Vec::new();
    stream
        .take(MAX_ANSWER_ROOT as u64 + 1)
        .read_to_end(&mut answer)
        .map_err(lost)?;
    let answer = String::from_utf8_lossy(&answer);
    let (status, rest) = answer.split_once('\n').unwrap_or((&answer, ""));
    match status {
        "OK" => Ok(rest.trim_end_matches('\n').to_string()),
        _ => match status.strip_prefix("ERROR ") {
            Some(message) => Err(message.to_string()),
            None if answer.is_empty() => Err(format!(
                "{}: the daemon closed the connection without an answer",
                socket.display()
            )),
            None => Err(format!("{}: not crond's answer", socket.display())),
        },
    }
}
