//! The metrics endpoint's sockets (`--metrics`): a Unix socket readable by root and one group, or
//! a TCP port on a loopback address; both non-blocking, for the daemon's poll loop.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

use super::user::Gid;

/// A listening socket.
#[derive(Debug)]
pub enum Listener {
    Unix(UnixListener),
    Tcp(TcpListener),
}

/// An accepted connection.
#[derive(Debug)]
pub enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

/// Listens on the Unix socket `path`, mode 0600 (0660 with `group`, owned by root and that
/// group). A socket left at `path` by an earlier daemon is replaced; anything else there is an
/// error (never removed).
pub fn listen_unix(path: &Path, group: Option<Gid>) -> io::Result<Listener> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_socket() => std::fs::remove_file(path)?,
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "something other than a socket is there",
            ));
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    // The mode comes from the umask at creation (0600, or 0660 for a group): never a chmod by
    // path afterwards, which a swapped-in symlink would aim at another file. The group is set
    // on the path without following a link, and the socket must still be root's own then.
    let listener = {
        let _mask = UmaskGuard::set(if group.is_some() { 0o117 } else { 0o177 });
        UnixListener::bind(path)?
    };
    if let Some(group) = group {
        nix::unistd::fchownat(
            nix::fcntl::AT_FDCWD,
            path,
            None,
            Some(nix::unistd::Gid::from_raw(group.0)),
            nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW,
        )?;
        let m = std::fs::symlink_metadata(path)?;
        if !m.file_type().is_socket() || m.permissions().mode() & 0o777 != 0o660 {
            return Err(io::Error::other(
                "the socket was replaced while it was set up",
            ));
        }
    }
    listener.set_nonblocking(true)?;
    Ok(Listener::Unix(listener))
}

/// Listens on a TCP address (the caller allows loopback only).
pub fn listen_tcp(addr: SocketAddr) -> io::Result<Listener> {
    let listener = TcpListener::bind(addr)?;
    listener.set_nonblocking(true)?;
    Ok(Listener::Tcp(listener))
}

/// Sets the umask while it lives (the daemon is single-threaded: nothing else creates files
/// meanwhile).
struct UmaskGuard(nix::sys::stat::Mode);

impl UmaskGuard {
    fn set(mask: u32) -> UmaskGuard {
        let mode = nix::sys::stat::Mode::from_bits_truncate(mask as nix::libc::mode_t);
        UmaskGuard(nix::sys::stat::umask(mode))
    }
}

impl Drop for UmaskGuard {
    fn drop(&mut self) {
        nix::sys::stat::umask(self.0);
    }
}

impl Listener {
    /// A waiting connection, non-blocking; `None` when there is none.
    pub fn accept(&self) -> io::Result<Option<Stream>> {
        let accepted = match self {
            Listener::Unix(l) => l.accept().map(|(s, _)| Stream::Unix(s)),
            Listener::Tcp(l) => l.accept().map(|(s, _)| Stream::Tcp(s)),
        };
        match accepted {
            Ok(stream) => {
                stream.set_nonblocking()?;
                Ok(Some(stream))
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Listener::Unix(l) => l.as_fd(),
            Listener::Tcp(l) => l.as_fd(),
        }
    }
}

impl Stream {
    fn set_nonblocking(&self) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(true),
            Stream::Tcp(s) => s.set_nonblocking(true),
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Stream::Unix(s) => s.as_fd(),
            Stream::Tcp(s) => s.as_fd(),
        }
    }

    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }

    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
}
