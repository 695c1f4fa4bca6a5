//! `poll(2)` over a few descriptors, each registered with a token of the caller's choosing (an
//! enum of its sources, as sudo-rs's event registry hands each descriptor a typed token): the
//! answer is the tokens that are ready, so no caller rebuilds the meaning of a position.

use std::io;
use std::os::fd::BorrowedFd;

use nix::poll::{PollFd, PollFlags, PollTimeout};

/// What a descriptor is waited on for. An error or a hang-up counts as ready either way: the
/// caller's read or write says what is so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Interest {
    Read,
    Write,
}

/// The descriptors to wait on, each with its token. Register with [`Registry::add`], then
/// [`Registry::wait`] once.
#[derive(Debug)]
pub struct Registry<'fd, T> {
    polls: Vec<PollFd<'fd>>,
    tokens: Vec<T>,
}

impl<T> Default for Registry<'_, T> {
    fn default() -> Self {
        Registry {
            polls: Vec::new(),
            tokens: Vec::new(),
        }
    }
}

impl<'fd, T: Copy> Registry<'fd, T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Waits on `fd` for `interest`; `token` is what [`Registry::wait`] answers when it is
    /// ready. A token may be given to more than one descriptor (or to one descriptor twice, for
    /// reading and writing): it is then ready when any of them is.
    pub fn add(&mut self, token: T, fd: BorrowedFd<'fd>, interest: Interest) {
        let flags = match interest {
            Interest::Read => PollFlags::POLLIN,
            Interest::Write => PollFlags::POLLOUT,
        };
        self.polls.push(PollFd::new(fd, flags));
        self.tokens.push(token);
    }

    /// Waits until a descriptor is ready or `timeout_ms` passes (`None`: no limit). The tokens
    /// of the ready descriptors; none on a timeout or an interrupting signal.
    pub fn wait(mut self, timeout_ms: Option<u32>) -> io::Result<Ready<T>> {
        match nix::poll::poll(&mut self.polls, timeout(timeout_ms)) {
            Ok(_) => Ok(Ready(
                self.polls
                    .iter()
                    .zip(&self.tokens)
                    .filter(|(p, _)| {
                        p.revents().is_some_and(|r| {
                            r.intersects(
                                PollFlags::POLLIN
                                    | PollFlags::POLLOUT
                                    | PollFlags::POLLERR
                                    | PollFlags::POLLHUP,
                            )
                        })
                    })
                    .map(|(_, &t)| t)
                    .collect(),
            )),
            Err(nix::errno::Errno::EINTR) => Ok(Ready(Vec::new())),
            Err(e) => Err(e.into()),
        }
    }
}

/// The tokens whose descriptors are ready (readable, writable, or hung up), in the order they
/// were registered; a token given to several ready descriptors appears once for each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready<T>(Vec<T>);

impl<T: Copy + PartialEq> Ready<T> {
    /// Whether `token` is ready.
    pub fn contains(&self, token: T) -> bool {
        self.0.contains(&token)
    }

    /// The ready tokens.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.0.iter().copied()
    }
}

fn timeout(timeout_ms: Option<u32>) -> PollTimeout {
    match timeout_ms {
        None => PollTimeout::NONE,
        Some(ms) => PollTimeout::try_from(ms.min(i32::MAX as u32)).unwrap_or(PollTimeout::MAX),
    }
}

/// Sleeps `ms` milliseconds, or less if a signal arrives (poll with no descriptor).
pub fn sleep_ms(ms: u32) -> io::Result<()> {
    Registry::<()>::new().wait(Some(ms)).map(drop)
}

/// Waits until `fd` can be written to (or its reader is gone) or `timeout_ms` passes. `false` on
/// a timeout; an interrupting signal counts as ready (the caller's write says what is so).
pub fn wait_writable(fd: BorrowedFd<'_>, timeout_ms: u32) -> io::Result<bool> {
    let mut polls = [PollFd::new(fd, PollFlags::POLLOUT)];
    match nix::poll::poll(&mut polls, timeout(Some(timeout_ms))) {
        Ok(0) => Ok(false),
        Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(true),
        Err(e) => Err(e.into()),
    }
}

/// Whether the peer of socket `fd` has closed it (`POLLHUP`, now): a peer that only shut its
/// writing side down is still there to read an answer.
pub fn hung_up(fd: BorrowedFd<'_>) -> bool {
    let mut polls = [PollFd::new(fd, PollFlags::empty())];
    matches!(nix::poll::poll(&mut polls, PollTimeout::ZERO), Ok(1))
        && polls[0]
            .revents()
            .is_some_and(|r| r.intersects(PollFlags::POLLHUP | PollFlags::POLLERR))
}

/// Makes writes and reads on `fd` return `WouldBlock` instead of waiting.
pub fn set_nonblocking(fd: BorrowedFd<'_>) -> io::Result<()> {
    use nix::fcntl::{FcntlArg, OFlag, fcntl};
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Token {
        Quiet,
        Spoken,
        Out,
    }

    #[test]
    fn only_the_ready_descriptors_tokens_are_answered() {
        let (quiet, _quiet_peer) = UnixStream::pair().unwrap();
        let (spoken, mut spoken_peer) = UnixStream::pair().unwrap();
        spoken_peer.write_all(b"x").unwrap();
        let mut registry = Registry::new();
        registry.add(Token::Quiet, quiet.as_fd(), Interest::Read);
        registry.add(Token::Spoken, spoken.as_fd(), Interest::Read);
        registry.add(Token::Out, quiet.as_fd(), Interest::Write);
        let ready = registry.wait(Some(1000)).unwrap();
        assert!(ready.contains(Token::Spoken));
        assert!(ready.contains(Token::Out), "an empty socket can be written");
        assert!(!ready.contains(Token::Quiet));
        assert_eq!(
            ready.iter().collect::<Vec<_>>(),
            [Token::Spoken, Token::Out]
        );
    }

    #[test]
    fn a_hang_up_is_ready_and_a_timeout_is_nothing() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let mut registry = Registry::new();
        registry.add(Token::Quiet, ours.as_fd(), Interest::Read);
        assert_eq!(registry.wait(Some(0)).unwrap().iter().count(), 0);
        drop(theirs);
        let mut registry = Registry::new();
        registry.add(Token::Quiet, ours.as_fd(), Interest::Read);
        assert!(registry.wait(Some(1000)).unwrap().contains(Token::Quiet));
    }
}
