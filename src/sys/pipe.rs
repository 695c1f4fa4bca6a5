//! Pipes, and the one process that writes a byte string into a pipe and exits: the syscall half
//! of the stdin grandchild (the policy half, what to write and when, is `crate::job::stdin`).
//!
//! The writer is a plain `fork` with no `exec` (`spawn::fork_async_signal_safe`, which says why
//! that is sound with other threads): between fork and `_exit` it calls only async-signal-safe
//! functions (`dup2`, `close_range`/`close`, `write`, `_exit`) and allocates nothing. It
//! keeps exactly one descriptor, the pipe's write end, so it can never hold the read end of its
//! own pipe open (which would make it wait for itself) nor keep any other pipe of the job alive.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};

use nix::sys::wait::{WaitStatus, waitpid};
use nix::unistd::Pid;

use super::as_user::{Credentials, GroupsRoom};
use super::process::close_range_or_each;
use super::spawn::{Forked, fork_async_signal_safe};

/// A pipe whose two ends are close-on-exec: `(read end, write end)`. Hand an end to a child
/// through `std::process::Stdio`, which dups it onto 0/1/2 without the flag.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).map_err(io::Error::from)
}

/// A pipe many processes write whole lines into and one reads: `(read end, write end)`, both
/// close-on-exec and non-blocking (a writer whose line the full pipe does not take loses that
/// line rather than wait), its buffer made `bytes` large where the kernel allows (its size
/// otherwise).
pub fn shared_lines(bytes: usize) -> io::Result<(OwnedFd, OwnedFd)> {
    let (read, write) = pipe()?;
    super::poll::set_nonblocking(read.as_fd())?;
    super::poll::set_nonblocking(write.as_fd())?;
    let size = i32::try_from(bytes).unwrap_or(i32::MAX);
    // A smaller pipe still works: the kernel's limit for a non-root daemon, or an old kernel.
    let _ = nix::fcntl::fcntl(&write, nix::fcntl::FcntlArg::F_SETPIPE_SZ(size));
    Ok((read, write))
}

/// How the writer process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriterExit {
    /// Every byte went into the pipe (the reader may not have read them all before it ended).
    AllWritten,
    /// The read end closed before everything was written: the job ended without reading its
    /// standard input, which is not an error.
    ReaderGone,
    /// `write` failed with this errno.
    Failed(i32),
    /// The writer died of this signal (not SIGPIPE, which is `ReaderGone`).
    Killed(i32),
}

/// A running writer process; [`WriterProcess::wait`] reaps it.
#[derive(Debug)]
#[must_use = "the writer must be reaped with wait()"]
pub struct WriterProcess {
    pid: Pid,
}

// Exit codes the writer uses to tell its parent what happened; errno travels in the same byte
// above these (errno values on Linux are < 134, well under 256 - 8).
const EXIT_ALL_WRITTEN: i32 = 0;
const EXIT_READER_GONE: i32 = 1;
const EXIT_SETUP_FAILED: i32 = 2;
const EXIT_ERRNO_BASE: i32 = 8;

/// The descriptor number the writer keeps; everything else is closed.
const KEPT_FD: i32 = 3;

impl WriterProcess {
    #[cfg(test)]
    pub fn pid(&self) -> u32 {
        self.pid.as_raw() as u32
    }

    /// Reaps the writer if it has ended; else kills it (SIGKILL) and reaps it, which reads as
    /// [`WriterExit::ReaderGone`]: for a writer still blocked after the shell has exited, the
    /// only reader left is a process the shell left behind, and its input is not owed to it.
    pub fn stop(self) -> io::Result<WriterExit> {
        loop {
            match waitpid(self.pid, Some(nix::sys::wait::WaitPidFlag::WNOHANG)) {
                Ok(WaitStatus::StillAlive) => break,
                Ok(status) => match decode(status) {
                    Some(exit) => return Ok(exit),
                    None => continue,
                },
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io::Error::from(e)),
            }
        }
        // Not reaped yet, so the pid is still the writer's: the kill can't hit another.
        let _ = nix::sys::signal::kill(self.pid, nix::sys::signal::Signal::SIGKILL);
        match self.wait()? {
            WriterExit::Killed(libc::SIGKILL) => Ok(WriterExit::ReaderGone),
            other => Ok(other),
        }
    }

    /// Waits for the writer to exit (it exits as soon as it has written everything or the
    /// reader has gone, so this never waits on the job itself for long).
    pub fn wait(self) -> io::Result<WriterExit> {
        loop {
            match waitpid(self.pid, None) {
                Ok(status) => {
                    if let Some(exit) = decode(status) {
                        return Ok(exit);
                    }
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(io::Error::from(e)),
            }
        }
    }
}

/// How a reaped writer ended; `None` for a status that is not an end (stopped, continued).
fn decode(status: WaitStatus) -> Option<WriterExit> {
    match status {
        WaitStatus::Exited(_, code) => Some(match code {
            EXIT_ALL_WRITTEN => WriterExit::AllWritten,
            EXIT_READER_GONE => WriterExit::ReaderGone,
            EXIT_SETUP_FAILED => WriterExit::Failed(0),
            n => WriterExit::Failed(n - EXIT_ERRNO_BASE),
        }),
        WaitStatus::Signaled(_, nix::sys::signal::Signal::SIGPIPE, _) => {
            Some(WriterExit::ReaderGone)
        }
        WaitStatus::Signaled(_, sig, _) => Some(WriterExit::Killed(sig as i32)),
        _ => None,
    }
}

/// Forks a process that writes `data` to `write_end`, closes it and exits. The caller's copy of
/// `write_end` is closed on return, so the reader sees end-of-file exactly when the writer is
/// done.
///
/// Preconditions (the job child meets them): signal handlers have been reset to their defaults
/// (the writer must not run the daemon's handlers); SIGPIPE may be ignored, caught or default:
/// each ends as `ReaderGone`.
pub fn spawn_writer(write_end: OwnedFd, data: &[u8]) -> io::Result<WriterProcess> {
    spawn_writer_as(write_end, data, None)
}

/// [`spawn_writer`] as `creds`'s user: the writer changes its ids with raw system calls
/// ([`Credentials::become_raw`]) right after the fork, before it writes a byte (`None`: it keeps
/// this process's). It is a fork of the job child, not a vfork: it runs our code (a loop of
/// writes) while the job child goes on, which only a process of its own can do; it is made only
/// for an entry with `%` text.
pub fn spawn_writer_as(
    write_end: OwnedFd,
    data: &[u8],
    creds: Option<&Credentials>,
) -> io::Result<WriterProcess> {
    // Computed before fork: sysconf is not on the async-signal-safe list, and the child may
    // not allocate.
    let open_max = super::process::open_max();
    let mut user = creds.map(|creds| (creds, creds.groups_room()));
    let fd = write_end.as_raw_fd();
    let ptr = data.as_ptr();
    let len = data.len();

    // SAFETY: the child below calls only async-signal-safe functions (dup2, syscall(close_range),
    // close, write, _exit), touches only memory that was initialised before fork (`data`, which
    // it reads through its own copy of the address space) and never returns or unwinds: every
    // path ends in `_exit`. That keeps it sound even if the parent has other threads.
    match unsafe { fork_async_signal_safe() }? {
        Forked::Parent(child) => {
            drop(write_end);
            Ok(WriterProcess {
                pid: Pid::from_raw(child.0),
            })
        }
        Forked::Child => {
            // SAFETY: see the fork above: async-signal-safe calls only, each on descriptors or
            // memory this process owns, ending in _exit.
            unsafe { writer_child(fd, ptr, len, open_max, user.as_mut()) }
        }
    }
}

/// The user a forked child becomes, with the room its group list is read back into.
type ForkedUser<'a> = Option<&'a mut (&'a Credentials, GroupsRoom)>;

/// The body of the writer process. Never returns.
///
/// # Safety
/// Must only be called in a freshly forked child; `ptr..ptr+len` must be readable.
unsafe fn writer_child(
    fd: i32,
    ptr: *const u8,
    len: usize,
    open_max: i32,
    user: ForkedUser<'_>,
) -> ! {
    // SAFETY: only async-signal-safe libc calls and raw system calls on plain integers and on
    // the caller-guaranteed buffer (`ptr..ptr+len` readable); every path ends in _exit.
    unsafe {
        if fd != KEPT_FD && libc::dup2(fd, KEPT_FD) < 0 {
            libc::_exit(EXIT_SETUP_FAILED);
        }
        close_range_or_each(0, (KEPT_FD - 1) as u32, open_max);
        close_range_or_each((KEPT_FD + 1) as u32, u32::MAX, open_max);
        if let Some((creds, room)) = user
            && creds.become_raw(room).is_err()
        {
            libc::_exit(EXIT_SETUP_FAILED);
        }
        let mut done = 0usize;
        while done < len {
            let n = libc::write(KEPT_FD, ptr.add(done).cast(), len - done);
            if n > 0 {
                done += n as usize;
                continue;
            }
            let errno = *libc::__errno_location();
            if n < 0 && errno == libc::EINTR {
                continue;
            }
            if n < 0 && errno == libc::EPIPE {
                libc::_exit(EXIT_READER_GONE);
            }
            libc::_exit(EXIT_ERRNO_BASE + errno.clamp(0, 255 - EXIT_ERRNO_BASE));
        }
        libc::close(KEPT_FD);
        libc::_exit(EXIT_ALL_WRITTEN);
    }
}

/// How many bytes wait in the pipe `fd` now (FIONREAD).
pub fn bytes_waiting(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let mut n: libc::c_int = 0;
    // SAFETY: FIONREAD writes one int through the pointer, which points at `n`, alive for the
    // call; the descriptor is borrowed, so open.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::FIONREAD, &mut n as *mut libc::c_int) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(usize::try_from(n).unwrap_or(0))
}

/// Forks a process that reads `read_end` and discards what it reads until end-of-file, then
/// exits; nobody waits for it (it is reaped by whoever inherits it). It keeps no other
/// descriptor. For the output pipe of a job whose shell has exited while processes it left
/// behind still hold the write end: they can go on writing (never a broken pipe, never a full
/// one), and the job child is not kept waiting for them.
///
/// Run as `creds`'s user (`None`: as this process), with the ids changed right after the fork
/// as the writer's are; default signal handlers.
pub fn spawn_drain(read_end: OwnedFd, creds: Option<&Credentials>) -> io::Result<()> {
    let open_max = super::process::open_max();
    let mut user = creds.map(|creds| (creds, creds.groups_room()));
    let fd = read_end.as_raw_fd();
    // SAFETY: the child below calls only async-signal-safe functions (dup2, close_range/close,
    // read, _exit) on descriptors it owns and on a buffer on its own stack, and never returns
    // or unwinds: every path ends in `_exit`.
    match unsafe { fork_async_signal_safe() }? {
        Forked::Parent(_) => {
            drop(read_end);
            Ok(())
        }
        Forked::Child => {
            // SAFETY: see the fork above.
            unsafe { drain_child(fd, open_max, user.as_mut()) }
        }
    }
}

/// The body of the drain process. Never returns.
///
/// # Safety
/// Must only be called in a freshly forked child.
unsafe fn drain_child(fd: i32, open_max: i32, user: ForkedUser<'_>) -> ! {
    // SAFETY: async-signal-safe libc calls and raw system calls on plain integers and on a
    // local buffer; every path ends in _exit.
    unsafe {
        if fd != KEPT_FD && libc::dup2(fd, KEPT_FD) < 0 {
            libc::_exit(EXIT_SETUP_FAILED);
        }
        close_range_or_each(0, (KEPT_FD - 1) as u32, open_max);
        close_range_or_each((KEPT_FD + 1) as u32, u32::MAX, open_max);
        if let Some((creds, room)) = user
            && creds.become_raw(room).is_err()
        {
            libc::_exit(EXIT_SETUP_FAILED);
        }
        let mut buf = [0u8; 4096];
        loop {
            let n = libc::read(KEPT_FD, buf.as_mut_ptr().cast(), buf.len());
            if n > 0 {
                continue;
            }
            if n < 0 && *libc::__errno_location() == libc::EINTR {
                continue;
            }
            libc::_exit(0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs::File;
    use std::io::Read;

    #[test]
    fn the_writer_delivers_every_byte_then_end_of_file() {
        let (r, w) = pipe().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let writer = spawn_writer(w, &data).unwrap();
        let mut back = Vec::new();
        File::from(r).read_to_end(&mut back).unwrap();
        assert_eq!(back, data);
        assert_eq!(writer.wait().unwrap(), WriterExit::AllWritten);
    }

    #[test]
    fn the_writer_ends_when_nobody_reads() {
        let (r, w) = pipe().unwrap();
        let data = vec![b'x'; 1 << 20];
        let writer = spawn_writer(w, &data).unwrap();
        drop(r);
        assert_eq!(writer.wait().unwrap(), WriterExit::ReaderGone);
    }

    #[test]
    fn a_writer_whose_reader_holds_on_without_reading_is_stopped() {
        let (r, w) = pipe().unwrap();
        let writer = spawn_writer(w, &vec![b'x'; 1 << 20]).unwrap();
        // `r` stays open and unread: the writer blocks on the full pipe until it is stopped.
        assert_eq!(writer.stop().unwrap(), WriterExit::ReaderGone);
        drop(r);
    }

    #[test]
    fn a_finished_writer_is_reaped_by_stop_with_its_own_result() {
        let (r, w) = pipe().unwrap();
        let writer = spawn_writer(w, b"short").unwrap();
        let mut back = Vec::new();
        File::from(r).read_to_end(&mut back).unwrap();
        // The end of file comes when the writer closes the pipe, a moment before it exits:
        // wait until it has (a zombie), or `stop` would find it alive and kill it.
        let stat = format!("/proc/{}/stat", writer.pid);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !std::fs::read_to_string(&stat).is_ok_and(|s| s.contains(") Z ")) {
            assert!(
                std::time::Instant::now() < deadline,
                "the writer did not exit"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(writer.stop().unwrap(), WriterExit::AllWritten);
    }

    #[test]
    fn a_writer_for_a_user_runs_as_that_user_before_it_writes() {
        assert_eq!(
            crate::sys::user::effective_uid().0,
            0,
            "this test needs root"
        );
        let nobody = crate::sys::user::User::resolve_name(b"nobody")
            .unwrap()
            .expect("user nobody");
        let creds = Credentials::of(&nobody)
            .unwrap()
            .expect("credentials as root");
        let (r, w) = pipe().unwrap();
        // More than the pipe holds and nobody reading yet: the writer waits, and can be looked at.
        let writer = spawn_writer_as(w, &vec![b'x'; 1 << 20], Some(&creds)).unwrap();
        let stat = format!("/proc/{}/status", writer.pid);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let uids = loop {
            let status = std::fs::read_to_string(&stat).unwrap();
            let uids: Vec<String> = status
                .lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .unwrap()
                .split_whitespace()
                .map(str::to_string)
                .collect();
            // Just forked, it may still be root for an instant.
            if uids[0] != "0" || std::time::Instant::now() > deadline {
                break uids;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        };
        assert_eq!(uids, vec![nobody.uid.0.to_string(); 4]);
        let mut back = Vec::new();
        File::from(r).read_to_end(&mut back).unwrap();
        assert_eq!(back.len(), 1 << 20);
        assert_eq!(writer.wait().unwrap(), WriterExit::AllWritten);
    }

    #[test]
    fn the_drain_reads_everything_until_the_last_writer_closes() {
        use std::io::Write;
        let (r, w) = pipe().unwrap();
        spawn_drain(r, None).unwrap();
        // Far more than a pipe holds: the write ends only because the drain reads.
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut w = File::from(w);
            done.send(w.write_all(&vec![b'y'; 4 << 20]).is_ok())
                .unwrap();
        });
        let wrote = finished.recv_timeout(std::time::Duration::from_secs(10));
        assert_eq!(wrote, Ok(true), "the drain did not read the pipe");
    }
}
