//! `poll(2)` over the daemon's few descriptors: which are readable.

use std::io;
use std::os::fd::BorrowedFd;

use nix::poll::{PollFd, PollFlags, PollTimeout};

/// Waits until one descriptor is readable or `timeout_ms` passes (`None`: no limit). Returns
/// one flag per descriptor; all false on a timeout or an interrupting signal.
pub fn wait_readable(fds: &[BorrowedFd<'_>], timeout_ms: Option<u32>) -> io::Result<Vec<bool>> {
    let fds: Vec<(BorrowedFd<'_>, bool)> = fds.iter().map(|&fd| (fd, false)).collect();
    wait_ready(&fds, timeout_ms)
}

/// Waits until one descriptor is ready (readable, or writable for those given with `true`) or
/// `timeout_ms` passes (`None`: no limit). One flag per descriptor; all false on a timeout or an
/// interrupting signal. An error or hang-up counts as ready (the read or write says what).
pub fn wait_ready(
    fds: &[(BorrowedFd<'_>, bool)],
    timeout_ms: Option<u32>,
) -> io::Result<Vec<bool>> {
    let mut polls: Vec<PollFd<'_>> = fds
        .iter()
        .map(|&(fd, write)| {
            PollFd::new(
                fd,
                if write {
                    PollFlags::POLLOUT
                } else {
                    PollFlags::POLLIN
                },
            )
        })
        .collect();
    let timeout = match timeout_ms {
        None => PollTimeout::NONE,
        Some(ms) => PollTimeout::try_from(ms.min(i32::MAX as u32)).unwrap_or(PollTimeout::MAX),
    };
    match nix::poll::poll(&mut polls, timeout) {
        Ok(_) => Ok(polls
            .iter()
            .map(|p| {
                p.revents().is_some_and(|r| {
                    r.intersects(
                        PollFlags::POLLIN
                            | PollFlags::POLLOUT
                            | PollFlags::POLLERR
                            | PollFlags::POLLHUP,
                    )
                })
            })
            .collect()),
        Err(nix::errno::Errno::EINTR) => Ok(vec![false; fds.len()]),
        Err(e) => Err(e.into()),
    }
}

/// Waits until `fd` can be written to (or its reader is gone) or `timeout_ms` passes. `false` on
/// a timeout; an interrupting signal counts as ready (the caller's write says what is so).
pub fn wait_writable(fd: BorrowedFd<'_>, timeout_ms: u32) -> io::Result<bool> {
    let mut polls = [PollFd::new(fd, PollFlags::POLLOUT)];
    let timeout =
        PollTimeout::try_from(timeout_ms.min(i32::MAX as u32)).unwrap_or(PollTimeout::MAX);
    match nix::poll::poll(&mut polls, timeout) {
        Ok(0) => Ok(false),
        Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// Makes writes and reads on `fd` return `WouldBlock` instead of waiting.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}
