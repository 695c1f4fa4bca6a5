//! `poll(2)` over the daemon's few descriptors: which are readable.

use std::io;
use std::os::fd::BorrowedFd;

use nix::poll::{PollFd, PollFlags, PollTimeout};

/// Waits until one descriptor is readable or `timeout_ms` passes (`None`: no limit). Returns
/// one flag per descriptor; all false on a timeout or an interrupting signal.
pub fn wait_readable(fds: &[BorrowedFd<'_>], timeout_ms: Option<u32>) -> io::Result<Vec<bool>> {
    let mut polls: Vec<PollFd<'_>> = fds
        .iter()
        .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
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
                    r.intersects(PollFlags::POLLIN | PollFlags::POLLERR | PollFlags::POLLHUP)
                })
            })
            .collect()),
        Err(nix::errno::Errno::EINTR) => Ok(vec![false; fds.len()]),
        Err(e) => Err(e.into()),
    }
}
