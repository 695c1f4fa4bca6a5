//! A pair of `SOCK_SEQPACKET` Unix sockets: each send is one message that arrives whole or not
//! at all, so many processes (the daemon and its job children) may send on one end and the
//! reader (the history writer) never sees two messages mixed. A message may carry one open
//! descriptor (`SCM_RIGHTS`): the daemon hands a client's connection to the writer that way.
//! When every process holding one end has closed it, a read of the other end gives 0 bytes.
//!
//! No `unsafe` here: nix wraps the calls.

use std::io::{self, IoSlice, IoSliceMut};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use nix::sys::socket::{
    AddressFamily, ControlMessage, ControlMessageOwned, MsgFlags, SockFlag, SockType, recvmsg,
    sendmsg, setsockopt, socketpair, sockopt,
};

/// Two connected ends, both close-on-exec, their send buffers as large as the kernel lets this
/// process make them (up to `send_buffer` bytes).
pub fn pair(send_buffer: usize) -> io::Result<(OwnedFd, OwnedFd)> {
    let (a, b) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    for end in [&a, &b] {
        // Root may pass the system's limit; anyone else gets up to it. Smaller still works: a
        // message larger than the buffer is refused, never cut.
        if setsockopt(end, sockopt::SndBufForce, &send_buffer).is_err() {
            let _ = setsockopt(end, sockopt::SndBuf, &send_buffer);
        }
    }
    Ok((a, b))
}

/// Sends one message without waiting: `WouldBlock` when the peer's queue is full (the caller
/// counts or retries), `BrokenPipe`/`ConnectionRefused` when no one holds the other end.
/// SIGPIPE is never raised.
pub fn send(fd: BorrowedFd<'_>, message: &[u8]) -> io::Result<()> {
    send_passing(fd, message, None)
}

/// [`send`], with `pass` (a descriptor the receiver gets its own copy of) beside the message.
pub fn send_passing(
    fd: BorrowedFd<'_>,
    message: &[u8],
    pass: Option<BorrowedFd<'_>>,
) -> io::Result<()> {
    let iov = [IoSlice::new(message)];
    let raw: [RawFd; 1] = [pass.map_or(-1, |p| p.as_raw_fd())];
    let rights = [ControlMessage::ScmRights(&raw)];
    let cmsgs: &[ControlMessage<'_>] = if pass.is_some() { &rights } else { &[] };
    loop {
        match sendmsg::<()>(
            fd.as_raw_fd(),
            &iov,
            cmsgs,
            MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL,
            None,
        ) {
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Receives one message into `buf`: its length (0: every sender has closed its end) and the
/// descriptor passed with it, if one was. A message longer than `buf` is an error
/// (`InvalidData`), its bytes dropped. Waits unless the socket is non-blocking.
pub fn recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, Option<OwnedFd>)> {
    recv_with(fd, buf, MsgFlags::empty())
}

/// [`recv`] that never waits: `WouldBlock` when no message is there.
pub fn recv_now(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, Option<OwnedFd>)> {
    recv_with(fd, buf, MsgFlags::MSG_DONTWAIT)
}

fn recv_with(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    flags: MsgFlags,
) -> io::Result<(usize, Option<OwnedFd>)> {
    let mut space = nix::cmsg_space!([RawFd; 4]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = loop {
        match recvmsg::<()>(
            fd.as_raw_fd(),
            &mut iov,
            Some(&mut space),
            MsgFlags::MSG_CMSG_CLOEXEC | flags,
        ) {
            Ok(msg) => break msg,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    };
    let mut passed = None;
    for cmsg in msg.cmsgs()? {
        if let ControlMessageOwned::ScmRights(fds) = cmsg {
            for raw in fds {
                // The first is kept; any more (a sender that passed several) close when dropped.
                let owned = owned_from_kernel(raw);
                if passed.is_none() {
                    passed = Some(owned);
                }
            }
        }
    }
    let len = msg.bytes;
    if msg.flags.contains(MsgFlags::MSG_TRUNC) || msg.flags.contains(MsgFlags::MSG_CTRUNC) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "a message longer than its buffer was dropped",
        ));
    }
    Ok((len, passed))
}

/// A descriptor `recvmsg` installed in this process, owned.
#[allow(unsafe_code)]
fn owned_from_kernel(raw: RawFd) -> OwnedFd {
    // SAFETY: `raw` was just installed in this process's table by the kernel for this
    // `recvmsg` (SCM_RIGHTS); nothing else in the process knows or owns the number, so taking
    // ownership here closes it exactly once.
    unsafe { OwnedFd::from_raw_fd(raw) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn messages_arrive_whole_with_a_passed_descriptor_and_the_end_reads_as_zero() {
        let (a, b) = pair(1 << 20).unwrap();
        send(a.as_fd(), b"one").unwrap();
        let (r, w) = crate::sys::pipe::pipe().unwrap();
        send_passing(a.as_fd(), b"two", Some(w.as_fd())).unwrap();
        drop(w);
        let big = vec![7u8; 150 * 1024];
        send(a.as_fd(), &big).unwrap();
        let mut buf = vec![0u8; 192 * 1024];
        assert_eq!(recv(b.as_fd(), &mut buf).unwrap().0, 3);
        let (n, passed) = recv(b.as_fd(), &mut buf).unwrap();
        assert_eq!(&buf[..n], b"two");
        // The passed write end is the pipe's: what is written on it comes out of `r`.
        let passed = std::fs::File::from(passed.unwrap());
        std::io::Write::write_all(&mut &passed, b"x").unwrap();
        let mut got = [0u8; 1];
        std::io::Read::read_exact(&mut std::fs::File::from(r), &mut got).unwrap();
        assert_eq!(&got, b"x");
        assert_eq!(recv(b.as_fd(), &mut buf).unwrap().0, big.len());
        // Too long for the buffer: an error, not a cut message.
        send(a.as_fd(), &big).unwrap();
        let mut small = [0u8; 16];
        assert_eq!(
            recv(b.as_fd(), &mut small).unwrap_err().kind(),
            io::ErrorKind::InvalidData
        );
        drop(a);
        assert_eq!(recv(b.as_fd(), &mut buf).unwrap().0, 0);
    }
}
