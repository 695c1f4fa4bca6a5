//! Processes: setsid, signals, reaping, `_exit`, the thread count, the descriptors a child
//! closes, and the daemon's detachment from its terminal. Starting a process is `sys::spawn`.

use std::fs::OpenOptions;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::path::Path;

use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd;

pub use crate::types::Pid;

/// How a child ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    Code(i32),
    Signal(i32),
}

/// This process's id.
pub fn own_pid() -> Pid {
    Pid(std::process::id() as i32)
}

/// A descriptor that becomes readable when the child `pid` exits (pidfd_open, Linux 5.3), so
/// its end can be waited for in `poll` with other descriptors. The child must not be reaped
/// yet (then the pid is still its own). `Unsupported` on older kernels.
pub fn exit_watch(pid: u32) -> io::Result<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: pidfd_open takes a pid and flags (0) and returns a new descriptor or -1; no
    // memory is passed.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return Err(match e.raw_os_error() {
            Some(libc::ENOSYS) => io::Error::from(io::ErrorKind::Unsupported),
            _ => e,
        });
    }
    // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd as i32) })
}

/// Sends SIGKILL to every process of the group `pgid` (a child that was made a group leader
/// and is not reaped yet, so the group can't be another's).
pub fn kill_group(pgid: u32) -> io::Result<()> {
    match signal_group(pgid, GroupSignal::Kill)? {
        true => Ok(()),
        false => Err(io::Error::from_raw_os_error(libc::ESRCH)),
    }
}

/// Sends SIGKILL to the child `pid` (one not reaped yet, so the pid can't be another's).
pub fn kill_child(pid: u32) -> io::Result<()> {
    let pid = i32::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    nix::sys::signal::kill(
        unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGKILL,
    )
    .map_err(io::Error::from)
}

/// The signals a process group is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupSignal {
    Term,
    Kill,
}

/// Sends `signal` to every process of the group `pgid`, under the same rule as [`kill_group`].
/// `Ok(false)` when the group has no member left to signal (ESRCH).
pub fn signal_group(pgid: u32, signal: GroupSignal) -> io::Result<bool> {
    use nix::sys::signal::Signal;
    let pgid = i32::try_from(pgid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let signal = match signal {
        GroupSignal::Term => Signal::SIGTERM,
        GroupSignal::Kill => Signal::SIGKILL,
    };
    match nix::sys::signal::killpg(unistd::Pid::from_raw(pgid), signal) {
        Ok(()) => Ok(true),
        Err(nix::errno::Errno::ESRCH) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Whether the process group `pgid` still has a member (`kill(-pgid, 0)`): `false` once it is
/// empty (ESRCH). A member this process may not signal (one that changed its user) still counts
/// (EPERM), and so does a zombie that its parent (init, for what a job left behind) has not
/// reaped yet. The group of a job's shell that was reaped keeps its id while it has a member: the
/// kernel frees a pid number only when no process has it as its pid, group or session id, and
/// only the process of that pid can make a group of it. So while this says `true`, the group
/// is the job's; once it says `false`, the id may go to a new process and is not used again.
pub fn group_has_members(pgid: u32) -> io::Result<bool> {
    let pgid = i32::try_from(pgid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    match nix::sys::signal::killpg(unistd::Pid::from_raw(pgid), None) {
        Ok(()) | Err(nix::errno::Errno::EPERM) => Ok(true),
        Err(nix::errno::Errno::ESRCH) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// How many threads this process has; `None` if /proc can't tell. One `stat` of
/// /proc/self/task, whose link count is 2 plus the threads (procfs says so for that directory
/// alone): the daemon asks before every fork, and reading /proc/self/status instead was 7 % of
/// its CPU in a burst of 3,000 jobs. The `Threads:` line of /proc/self/status where the count
/// is not there.
pub fn thread_count() -> Option<usize> {
    use std::os::unix::fs::MetadataExt;
    let links = std::fs::metadata("/proc/self/task").map_or(0, |m| m.nlink());
    if links >= 3 {
        return usize::try_from(links - 2).ok();
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Threads:"))
        .and_then(|n| n.trim().parse().ok())
}

/// Starts a new session (the child leaves the daemon's process group and terminal).
pub fn setsid() -> io::Result<()> {
    unistd::setsid().map(drop).map_err(io::Error::from)
}

/// Ends the process at once: no destructors, no atexit handlers, no buffered output flushed
/// twice (the job child shares the daemon's copies of them).
pub fn exit_immediately(code: i32) -> ! {
    // SAFETY: _exit is async-signal-safe and takes no pointers.
    unsafe { libc::_exit(code) }
}

/// Waits for the child `pid` to end and reaps it.
pub fn wait_for(pid: Pid) -> io::Result<Exit> {
    let pid = unistd::Pid::from_raw(pid.0);
    loop {
        match waitpid(pid, None) {
            Ok(WaitStatus::Exited(_, code)) => return Ok(Exit::Code(code)),
            Ok(WaitStatus::Signaled(_, sig, _)) => return Ok(Exit::Signal(sig as i32)),
            Ok(_) | Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Waits for the child `pid` to end and reaps it, with its whole wait status (a signal's core
/// dump flag included); `block: false` returns `Ok(None)` while it runs.
pub fn wait_status(pid: u32, block: bool) -> io::Result<Option<std::process::ExitStatus>> {
    use std::os::unix::process::ExitStatusExt;
    let pid =
        libc::pid_t::try_from(pid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let flags = if block { 0 } else { libc::WNOHANG };
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: waitpid writes one int through the pointer, which points at `status`, alive
        // for the call.
        let r = unsafe { libc::waitpid(pid, &mut status, flags) };
        if r == pid {
            return Ok(Some(std::process::ExitStatus::from_raw(status)));
        }
        if r == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// Reaps every child that has ended, without blocking.
pub fn reap() -> Vec<(Pid, Exit)> {
    let mut out = Vec::new();
    loop {
        match waitpid(None, Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, code)) => out.push((Pid(pid.as_raw()), Exit::Code(code))),
            Ok(WaitStatus::Signaled(pid, sig, _)) => {
                out.push((Pid(pid.as_raw()), Exit::Signal(sig as i32)))
            }
            Ok(WaitStatus::StillAlive) => break,
            Ok(_) => continue,
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => break, // ECHILD: no children left
        }
    }
    out
}

/// Points stdin, stdout and stderr at /dev/null (a daemon has no terminal).
pub fn std_fds_to_dev_null() -> io::Result<()> {
    let null = OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")?;
    for target in 0..=2 {
        // SAFETY: dup2 takes two descriptor numbers; `null` stays open for the call and the
        // targets are the standard descriptors, which nothing in Rust owns as a `File`.
        if unsafe { libc::dup2(null.as_raw_fd(), target) } < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Changes the working directory.
pub fn chdir(dir: &Path) -> io::Result<()> {
    unistd::chdir(dir).map_err(io::Error::from)
}

/// The highest descriptor number plus one that this process may have open (`sysconf`'s
/// `_SC_OPEN_MAX`, 1024 if unknown, at most 65,536): how far [`close_range_or_each`] must go
/// where it closes one by one. Call it before a fork whose child may only make
/// async-signal-safe calls (sysconf is not one).
pub fn open_max() -> i32 {
    // SAFETY: sysconf has no preconditions; it only reads a limit.
    let n = unsafe { libc::sysconf(libc::_SC_OPEN_MAX) };
    if n <= 0 { 1024 } else { n.min(65_536) as i32 }
}

/// Closes descriptors `first..=last` with close_range(2), or, where the kernel has none (before
/// 5.9) or a seccomp filter refuses it, one by one below `open_max`. Async-signal-safe.
///
/// # Safety
/// Only in a forked child that never returns into the code that owns these descriptors: the
/// Rust values owning them (files, pipes, the daemon's inotify and timer) live on in this
/// process's copy of memory and must not be used again.
pub unsafe fn close_range_or_each(first: u32, last: u32, open_max: i32) {
    // SAFETY: close_range takes plain integers; the caller guarantees that no Rust value of
    // this process uses the closed numbers again.
    if unsafe { libc::syscall(libc::SYS_close_range, first, last, 0u32) } != 0 {
        // SAFETY: as above, the caller's guarantee.
        unsafe { close_one_by_one(first, last, open_max) }
    }
}

/// The fallback of [`close_range_or_each`]: `close` on each of `first..=last` below `open_max`.
///
/// # Safety
/// As [`close_range_or_each`].
unsafe fn close_one_by_one(first: u32, last: u32, open_max: i32) {
    let end = i64::from(last).min(i64::from(open_max) - 1);
    let mut fd = i64::from(first);
    while fd <= end {
        // SAFETY: close takes a plain integer; the caller guarantees nothing uses it again.
        unsafe { libc::close(fd as i32) };
        fd += 1;
    }
}

/// Closes every descriptor above stderr, in a forked job child: the daemon's signal pipe (and
/// the handlers' copies of it), inotify, timer, pid-file lock and syslog socket. Their owning
/// Rust values live on in the parent's memory and must not be used here again. Called a second
/// time in the job's process forked after PAM (`job::pam_session`): what PAM's modules opened as
/// root without close-on-exec is closed there, before anything of the job is created.
pub fn close_all_above_stderr() {
    close_all_above_stderr_but(&[]);
}

/// [`close_all_above_stderr`], keeping the descriptors of `keep` open (those above stderr):
/// the pipes on which a job child tells the daemon what became of its job.
pub fn close_all_above_stderr_but(keep: &[BorrowedFd<'_>]) {
    let open_max = open_max();
    let kept: Vec<i32> = keep.iter().map(|fd| fd.as_raw_fd()).collect();
    for (first, last) in closed_around(&kept) {
        // SAFETY: called only in a forked job child that never returns into the daemon's code
        // (or, after PAM, in its forked process, which never calls libpam again), so no Rust
        // object of this process uses these numbers again (the caller reopens syslog right
        // after); the kept descriptors are left open for the values that own them.
        unsafe { close_range_or_each(first, last, open_max) };
    }
}

/// The ranges of descriptor numbers above stderr that are not in `kept`, lowest first, the
/// last one open-ended (`u32::MAX`).
fn closed_around(kept: &[i32]) -> Vec<(u32, u32)> {
    let mut kept: Vec<u32> = kept
        .iter()
        .filter(|&&fd| fd > 2)
        .map(|&fd| fd as u32)
        .collect();
    kept.sort_unstable();
    kept.dedup();
    let mut ranges = Vec::with_capacity(kept.len() + 1);
    let mut from = 3;
    for fd in kept {
        if fd > from {
            ranges.push((from, fd - 1));
        }
        from = fd + 1;
    }
    ranges.push((from, u32::MAX));
    ranges
}

/// What this process's reaped children (and the children they reaped) used: CPU time in user
/// and system mode, in microseconds, and the largest resident set among them, in KiB
/// (`getrusage(RUSAGE_CHILDREN)`). Zeros when it can't be read.
pub fn children_usage() -> (u64, u64, u64) {
    use nix::sys::resource::{UsageWho, getrusage};
    let Ok(usage) = getrusage(UsageWho::RUSAGE_CHILDREN) else {
        return (0, 0, 0);
    };
    let micros = |t: nix::sys::time::TimeVal| {
        (t.tv_sec().max(0) as u64) * 1_000_000 + t.tv_usec().max(0) as u64
    };
    (
        micros(usage.user_time()),
        micros(usage.system_time()),
        usage.max_rss().max(0) as u64,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    fn is_open(fd: i32) -> bool {
        // SAFETY: F_GETFD only asks about a descriptor number.
        unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
    }

    #[test]
    fn the_thread_count_from_the_task_directory_is_the_status_files() {
        let from_status = || -> usize {
            std::fs::read_to_string("/proc/self/status")
                .unwrap()
                .lines()
                .find_map(|l| l.strip_prefix("Threads:"))
                .and_then(|n| n.trim().parse().ok())
                .unwrap()
        };
        // The harness's threads come and go: one more is parked here, and the two are read
        // until they agree on a count with it.
        let (stop, parked) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || parked.recv());
        let agreed = (0..100).any(|_| {
            let before = from_status();
            let counted = thread_count();
            counted == Some(before) && before == from_status() && before >= 2
        });
        drop(stop);
        let _ = other.join();
        assert!(
            agreed,
            "the link count of /proc/self/task never matched Threads:"
        );
    }

    #[test]
    fn everything_above_stderr_is_closed_but_the_kept_descriptors() {
        let all = |kept: &[i32]| closed_around(kept);
        assert_eq!(all(&[]), vec![(3, u32::MAX)]);
        assert_eq!(all(&[1, 2]), vec![(3, u32::MAX)]);
        assert_eq!(all(&[3]), vec![(4, u32::MAX)]);
        assert_eq!(all(&[9, 5, 5]), vec![(3, 4), (6, 8), (10, u32::MAX)]);
        assert_eq!(all(&[4, 5]), vec![(3, 3), (6, u32::MAX)]);
    }

    #[test]
    fn a_range_of_descriptors_is_closed_and_its_neighbours_are_not() {
        // Three chosen numbers far above anything the test binary opens, so that the range is
        // known whatever the other test threads hold.
        let (low, high) = (1000, 1002);
        let null = std::fs::File::open("/dev/null").unwrap();
        for fd in low..=high {
            // SAFETY: dup2 onto a number no other code in this process uses.
            assert_eq!(unsafe { libc::dup2(null.as_raw_fd(), fd) }, fd);
        }
        // SAFETY: the numbers were made by dup2 above and nothing owns them.
        unsafe { close_range_or_each(low as u32, (low + 1) as u32, open_max()) };
        assert!(!is_open(low) && !is_open(low + 1));
        assert!(is_open(high));
        // The fallback alone, as it runs where close_range is missing (kernels before 5.9) or
        // refused (seccomp): it closes the range and nothing else.
        for fd in low..=high {
            // SAFETY: as above.
            assert_eq!(unsafe { libc::dup2(null.as_raw_fd(), fd) }, fd);
        }
        // SAFETY: as above.
        unsafe { close_one_by_one(low as u32, (low + 1) as u32, open_max()) };
        assert!(!is_open(low) && !is_open(low + 1));
        assert!(is_open(high));
        // And it stops below open_max, whatever the range says.
        // SAFETY: as above.
        unsafe { close_one_by_one(high as u32, u32::MAX, high) };
        assert!(is_open(high));
        // SAFETY: `high` is ours (dup2 above) and closed once.
        unsafe { libc::close(high) };
    }
}
