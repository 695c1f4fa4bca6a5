//! The daemon's listening sockets: the metrics endpoint's (`--metrics`: a Unix socket readable by
//! root and one group, or a TCP port on a loopback address, which any local user can connect
//! to) and the control socket (`--control-socket`: any local user may connect; the daemon asks
//! each connection's credentials, [`Stream::peer_credentials`]); all non-blocking, for the
//! daemon's poll loop.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::Path;

use super::fs;
use super::user::{Gid, Uid};

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

impl Stream {
    /// A descriptor of the same connection, blocking again, to hand to another process (the
    /// history writer answers on it): the caller lets its own copy go at once.
    pub fn handed_over(&self) -> io::Result<std::os::fd::OwnedFd> {
        let fd = match self {
            Stream::Unix(s) => {
                let s = s.try_clone()?;
                s.set_nonblocking(false)?;
                std::os::fd::OwnedFd::from(s)
            }
            Stream::Tcp(s) => {
                let s = s.try_clone()?;
                s.set_nonblocking(false)?;
                std::os::fd::OwnedFd::from(s)
            }
        };
        Ok(fd)
    }
}

/// Listens on the Unix socket `path`, mode 0600 (0660 with `group`, owned by root and that
/// group). A socket left at `path` by an earlier daemon is replaced; anything else there is an
/// error (never removed).
///
/// Every step is taken relative to the socket's directory, opened by
/// [`fs::open_checked_dir`]: each directory on the way opened without following a link and
/// checked on its descriptor, owned by root (or the daemon's user) and not writable by group
/// or others unless sticky. In such a directory no one else can rename, remove or put a name
/// beside the socket between the steps (in a sticky one they may put their own names, but
/// can't touch the socket, which is root's) — the race of a path that is looked up again at
/// each step (a socket renamed away and a hard link to another file put in its place before
/// the group is changed) has no one to run it. The mode comes from the umask at bind (never a
/// chmod by path); the group is set without following a link, then the name is checked to be
/// the daemon's socket with that mode.
pub fn listen_unix(path: &Path, group: Option<Gid>) -> io::Result<Listener> {
    match group {
        Some(_) => bind_unix(path, group, 0o117, 0o660),
        None => bind_unix(path, None, 0o177, 0o600),
    }
}

/// Listens on the Unix socket `path` as [`listen_unix`] does (the same checks of every
/// directory on the way), but with mode 0666: any local user may connect, and the daemon tells
/// them apart by their credentials.
pub fn listen_unix_for_all(path: &Path) -> io::Result<Listener> {
    bind_unix(path, None, 0o111, 0o666)
}

/// [`listen_unix`]'s steps, the socket made with umask `mask` and checked to have `mode`.
fn bind_unix(path: &Path, group: Option<Gid>, mask: u32, mode: u32) -> io::Result<Listener> {
    let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
        return Err(io::Error::other("not a path to a socket"));
    };
    let owner = super::user::effective_uid();
    let dir = fs::open_checked_dir(parent, owner, fs::LastDir::Holder)?;
    let nofollow = nix::fcntl::AtFlags::AT_SYMLINK_NOFOLLOW;
    match nix::sys::stat::fstatat(&dir, name, nofollow) {
        Ok(st) if st.st_mode & libc::S_IFMT == libc::S_IFSOCK => {
            nix::unistd::unlinkat(&dir, name, nix::unistd::UnlinkatFlags::NoRemoveDir)?
        }
        Ok(_) => {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                "something other than a socket is there",
            ));
        }
        Err(nix::errno::Errno::ENOENT) => {}
        Err(e) => return Err(e.into()),
    }
    // Tests bind from parallel threads, and the umask and working directory are the process's.
    #[cfg(test)]
    let _one_at_a_time = BINDING.lock().unwrap_or_else(|e| e.into_inner());
    let listener = {
        let _mask = UmaskGuard::set(mask);
        // bind(2) takes a path, not a directory descriptor: the name alone, from inside the
        // checked directory (the daemon is single-threaded: nothing else resolves a relative
        // path meanwhile).
        let _inside = CwdGuard::enter(&dir)?;
        UnixListener::bind(Path::new(name))?
    };
    if let Some(group) = group {
        nix::unistd::fchownat(
            &dir,
            name,
            None,
            Some(nix::unistd::Gid::from_raw(group.0)),
            nofollow,
        )?;
    }
    let st = nix::sys::stat::fstatat(&dir, name, nofollow)?;
    if st.st_mode & libc::S_IFMT != libc::S_IFSOCK
        || st.st_uid != owner.0
        || st.st_mode & 0o7777 != mode
        || group.is_some_and(|g| st.st_gid != g.0)
    {
        return Err(io::Error::other(
            "the socket was replaced while it was set up",
        ));
    }
    listener.set_nonblocking(true)?;
    Ok(Listener::Unix(listener))
}

/// Which file the Unix socket at `path` is (its device and inode), taken right after
/// [`listen_unix`] made it, for [`remove_unix`] at a clean stop.
pub fn unix_identity(path: &Path) -> io::Result<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let st = std::fs::symlink_metadata(path)?;
    Ok((st.dev(), st.ino()))
}

/// Removes the Unix socket at `path` when it is still the file `identity` names (another
/// daemon's socket put there since is left alone). The socket's directory was checked at bind:
/// no one else may rename or remove names in it (or, sticky, the daemon's own names), so the
/// name looked at is the name removed.
pub fn remove_unix(path: &Path, identity: (u64, u64)) -> io::Result<()> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let st = std::fs::symlink_metadata(path)?;
    if st.file_type().is_socket() && (st.dev(), st.ino()) == identity {
        std::fs::remove_file(path)?;
    }
    Ok(())
}

/// Connects to the Unix socket `path`, waiting at most `timeout` for room in its listener's
/// backlog (a full backlog makes `connect` wait, for ever without a timeout): `WouldBlock`
/// after that.
pub fn connect_unix(path: &Path, timeout: std::time::Duration) -> io::Result<UnixStream> {
    use nix::sys::socket::{self, AddressFamily, SockFlag, SockType, UnixAddr, sockopt};
    use std::os::fd::AsRawFd;
    let fd = socket::socket(
        AddressFamily::Unix,
        SockType::Stream,
        SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    // A connect on a Unix socket waits at most the send timeout.
    let timeout =
        nix::sys::time::TimeVal::new(timeout.as_secs() as _, timeout.subsec_micros() as _);
    socket::setsockopt(&fd, sockopt::SendTimeout, &timeout)?;
    socket::connect(fd.as_raw_fd(), &UnixAddr::new(path)?)?;
    Ok(UnixStream::from(fd))
}

/// Connects to the Unix socket `path` as `uid` would (tests: the test runs as root and plays
/// several users): from a thread of its own that takes `uid` as its effective uid, connects
/// and ends. The kernel records the connecting thread's credentials for `SO_PEERCRED`, and the
/// socket's and its directories' permissions are checked against that uid too.
#[cfg(test)]
pub fn connect_as(path: &Path, uid: u32) -> io::Result<UnixStream> {
    let path = path.to_path_buf();
    std::thread::spawn(move || {
        let none = -1 as libc::c_long;
        // SAFETY: plain integers. The raw system call changes the ids of the calling thread
        // alone (the kernel keeps credentials per thread; glibc's `setresuid` would change
        // every thread's, which is why it is not called); this thread only connects and then
        // ends, and its credentials end with it. The other threads of the test keep root.
        let rc = unsafe { libc::syscall(libc::SYS_setresuid, none, uid as libc::c_long, none) };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        UnixStream::connect(&path)
    })
    .join()
    .expect("the connecting thread does not panic")
}

/// Held by a bind in the unit tests (see [`UmaskGuard`], [`CwdGuard`]).
#[cfg(test)]
static BINDING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Makes a directory the working directory while it lives, then goes back to the one before.
struct CwdGuard(OwnedFd);

impl CwdGuard {
    fn enter(dir: &OwnedFd) -> io::Result<CwdGuard> {
        // O_PATH: enough for fchdir, and needs no read permission on where the daemon is.
        let flags = nix::fcntl::OFlag::O_PATH
            | nix::fcntl::OFlag::O_DIRECTORY
            | nix::fcntl::OFlag::O_CLOEXEC;
        let back = nix::fcntl::open(".", flags, nix::sys::stat::Mode::empty())?;
        nix::unistd::fchdir(dir)?;
        Ok(CwdGuard(back))
    }
}

impl Drop for CwdGuard {
    fn drop(&mut self) {
        // The directory the daemon was in is still open: going back can't name another one.
        let _ = nix::unistd::fchdir(&self.0);
    }
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

/// Who is at the other end of a Unix socket, as the kernel recorded it when they connected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credentials {
    pub pid: i32,
    pub uid: Uid,
    pub gid: Gid,
}

impl Stream {
    /// The peer's credentials (`SO_PEERCRED`): set by the kernel at `connect`, not by the peer,
    /// so a client can't claim another user's. A TCP stream has none.
    pub fn peer_credentials(&self) -> io::Result<Credentials> {
        let Stream::Unix(s) = self else {
            return Err(io::Error::other("not a Unix socket"));
        };
        let mut cred = libc::ucred {
            pid: 0,
            uid: 0,
            gid: 0,
        };
        let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
        // SAFETY: `s` is an open socket for the call's length; `cred` is a valid, writable
        // `ucred` and `len` says its size, which is what SO_PEERCRED writes (at most `len`
        // bytes); nothing else is read or kept.
        let r = unsafe {
            libc::getsockopt(
                std::os::fd::AsRawFd::as_raw_fd(s),
                libc::SOL_SOCKET,
                libc::SO_PEERCRED,
                (&raw mut cred).cast(),
                &mut len,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Credentials {
            pid: cred.pid,
            uid: Uid(cred.uid),
            gid: Gid(cred.gid),
        })
    }

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
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unix_peer_is_known_by_the_credentials_the_kernel_recorded_and_tcp_has_none() {
        let (ours, _theirs) = UnixStream::pair().unwrap();
        let cred = Stream::Unix(ours).peer_credentials().unwrap();
        assert_eq!(cred.pid, std::process::id() as i32);
        assert_eq!(cred.uid, super::super::user::effective_uid());
        assert_eq!(cred.gid, super::super::user::effective_gid());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let tcp = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        assert!(Stream::Tcp(tcp).peer_credentials().is_err());
    }
}
