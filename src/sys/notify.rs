//! systemd's readiness protocol (sd_notify(3)) in a few lines, without libsystemd: one datagram
//! of `NAME=value` lines sent to the unix socket named by `$NOTIFY_SOCKET`. The unit file says
//! `Type=notify`, so systemd holds `systemctl start` until the daemon sends `READY=1`, and shows
//! `STATUS=` in `systemctl status`.
//!
//! It must not fail the daemon: without `$NOTIFY_SOCKET` (not started by systemd, or `-f` from
//! a shell) every call is a no-op that reports `Ok(false)`. It does not unset the variable; jobs
//! never see it because the job child builds a clean environment (docs/design.md §3).

use std::ffi::OsStr;
use std::io;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::path::PathBuf;

/// Where `$NOTIFY_SOCKET` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// A socket in the file system (an absolute path).
    Path(PathBuf),
    /// A socket in Linux's abstract namespace: the value started with `@`, which stands for the
    /// leading NUL byte of the address.
    Abstract(Vec<u8>),
}

impl Target {
    /// Reads a `$NOTIFY_SOCKET` value. `None` for an empty value and for anything that is neither
    /// an absolute path nor `@name` (systemd's `vsock:` addresses are not supported: the daemon
    /// then runs as if not under systemd, and `Type=notify` times out, which shows in the
    /// journal rather than silently).
    pub fn parse(value: &OsStr) -> Option<Target> {
        let bytes = value.as_bytes();
        match bytes.first()? {
            b'@' if bytes.len() > 1 => Some(Target::Abstract(bytes[1..].to_vec())),
            b'/' => Some(Target::Path(PathBuf::from(value))),
            _ => None,
        }
    }

    /// The target named by `$NOTIFY_SOCKET`, if any.
    pub fn from_env() -> Option<Target> {
        Target::parse(&std::env::var_os("NOTIFY_SOCKET")?)
    }

    /// Sends one message (`NAME=value` lines, `\n`-separated) as a single datagram.
    pub fn send(&self, message: &str) -> io::Result<()> {
        // An unbound socket, created close-on-exec by std, lives only for this call: nothing
        // for a job to inherit.
        let socket = UnixDatagram::unbound()?;
        let addr = match self {
            Target::Path(path) => SocketAddr::from_pathname(path)?,
            Target::Abstract(name) => SocketAddr::from_abstract_name(name)?,
        };
        let sent = socket.send_to_addr(message.as_bytes(), &addr)?;
        if sent != message.len() {
            return Err(io::Error::new(
                io::ErrorKind::WriteZero,
                "sd_notify: short datagram",
            ));
        }
        Ok(())
    }
}

/// Sends `message` to `$NOTIFY_SOCKET`. `Ok(false)` when there is no socket to tell.
pub fn notify(message: &str) -> io::Result<bool> {
    match Target::from_env() {
        Some(target) => target.send(message).map(|()| true),
        None => Ok(false),
    }
}

/// The daemon is shutting down (after SIGTERM), so systemd does not read the exit as a crash.
pub fn stopping() -> io::Result<bool> {
    notify("STOPPING=1")
}

/// `STATUS=text` with line breaks flattened: a newline would start a new `NAME=value` field
/// (crontab file names and messages come from users).
pub fn status_message(text: &str) -> String {
    let mut message = String::with_capacity(text.len() + 7);
    message.push_str("STATUS=");
    message.extend(
        text.chars()
            .map(|c| if c == '\n' || c == '\r' { ' ' } else { c }),
    );
    message
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn receive(socket: &UnixDatagram) -> String {
        socket
            .set_read_timeout(Some(Duration::from_secs(5)))
            .expect("a timeout can be set");
        let mut buf = [0u8; 4096];
        let n = socket.recv(&mut buf).expect("the datagram arrives");
        String::from_utf8(buf[..n].to_vec()).expect("utf-8")
    }

    #[test]
    fn a_path_socket_receives_ready_and_stopping_as_single_datagrams() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("notify");
        let listener = UnixDatagram::bind(&path).expect("bind");
        let target = Target::parse(path.as_os_str()).expect("an absolute path is a target");
        assert_eq!(target, Target::Path(path.clone()));
        target.send("READY=1").expect("send");
        target
            .send(&status_message("loaded 3 crontabs"))
            .expect("send");
        target.send("STOPPING=1").expect("send");
        assert_eq!(receive(&listener), "READY=1");
        assert_eq!(receive(&listener), "STATUS=loaded 3 crontabs");
        assert_eq!(receive(&listener), "STOPPING=1");
    }

    #[test]
    fn an_at_sign_names_a_socket_in_the_abstract_namespace() {
        let name = format!("crond-notify-test-{}", std::process::id());
        let addr = SocketAddr::from_abstract_name(name.as_bytes()).expect("abstract address");
        let listener = UnixDatagram::bind_addr(&addr).expect("bind abstract");
        let target = Target::parse(OsStr::new(&format!("@{name}"))).expect("parses");
        assert_eq!(target, Target::Abstract(name.clone().into_bytes()));
        target.send("READY=1").expect("send");
        assert_eq!(receive(&listener), "READY=1");
    }

    #[test]
    fn sending_to_a_socket_nobody_listens_on_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = Target::Path(dir.path().join("absent"));
        assert!(target.send("READY=1").is_err());
    }

    #[test]
    fn empty_relative_and_bare_at_values_are_not_targets() {
        assert_eq!(Target::parse(OsStr::new("")), None);
        assert_eq!(Target::parse(OsStr::new("@")), None);
        assert_eq!(Target::parse(OsStr::new("run/notify")), None);
        assert_eq!(Target::parse(OsStr::new("vsock:2:1234")), None);
    }

    #[test]
    fn a_status_cannot_smuggle_another_field_through_a_newline() {
        assert_eq!(
            status_message("bad file\nREADY=1\r"),
            "STATUS=bad file READY=1 "
        );
    }
}
