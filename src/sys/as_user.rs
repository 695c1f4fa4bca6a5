//! Processes that run as the job's user, started from the root job child (DESIGN §5): the shell
//! and the MTA by [`spawn`], the signals of `CRON_TIMEOUT` and of an MTA's timeout by
//! [`signal_group`], and the ids a forked helper (the stdin writer, the output drain,
//! `sys::pipe`) takes by [`Credentials::become_raw`].
//!
//! [`spawn`] is what glibc's `posix_spawn` does inside, plus the change of user: a
//! `clone(CLONE_VM | CLONE_VFORK)` on a stack of its own, so no page of the job child is copied
//! and the job child sleeps until the new process has called `execve` (or died). Between the
//! clone and the exec the child makes raw system calls only, in this order: its own process
//! group (for a time limit), the three standard descriptors, every other descriptor closed
//! (what PAM's modules opened as root without close-on-exec, too), `setgroups` with the list
//! computed before the clone, `setresgid`, `setresuid`, a check that all three uids and gids are
//! the user's and that `setuid(0)` fails, `chdir` to HOME as the user (or to `/`, reported back),
//! the signal mask the caller had, `execve` with an argv and envp built before the clone. Any
//! failure is written into memory the two share ([`Report`]) and the child ends with `_exit`, so
//! the caller learns which step failed and its errno, the exec's included.
//!
//! Why raw system calls: glibc's `setgroups`, `setresuid` and `setresgid` are not system calls
//! in a process with threads (PAM's modules may start some): they signal every thread of the
//! process to change its ids too, using the process's thread list and a lock, which in a child
//! sharing the parent's memory would act on the parent's threads. `syscall(2)` is a few
//! instructions that set the calling thread's `errno` and nothing else.

use std::ffi::{CString, c_int, c_void};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::ptr;
use std::sync::atomic::{AtomicI32, Ordering};

use super::process::open_max;
use super::user::{User, effective_uid};

/// The ids a job's process takes: uid, primary gid and the supplementary groups, computed as
/// root (`getgrouplist`, which reads NSS) before any process is started.
#[derive(Debug, Clone)]
pub struct Credentials {
    uid: libc::uid_t,
    gid: libc::gid_t,
    groups: Vec<libc::gid_t>,
}

/// The most supplementary groups taken (the kernel's NGROUPS_MAX); a user in more gets an error
/// from `getgrouplist`, and the job does not run.
const MAX_GROUPS: usize = 65_536;

impl Credentials {
    /// The ids `user`'s processes run with. `Ok(None)` when this process is not root and is
    /// `user` already (a daemon run by a user for its own jobs, as the tests do): nothing is
    /// changed then. An error when it is neither.
    pub fn of(user: &User) -> io::Result<Option<Credentials>> {
        if effective_uid().0 != 0 {
            return if user.uid == effective_uid() {
                Ok(None)
            } else {
                Err(io::Error::other("not running as root: can't change user"))
            };
        }
        let name = CString::new(user.name.clone())
            .map_err(|_| io::Error::other("user name contains a NUL byte"))?;
        let groups = nix::unistd::getgrouplist(&name, nix::unistd::Gid::from_raw(user.gid.0))
            .map_err(|e| io::Error::other(format!("getgrouplist failed: {e}")))?;
        if groups.len() > MAX_GROUPS {
            return Err(io::Error::other("the user is in too many groups"));
        }
        Ok(Some(Credentials {
            uid: user.uid.0,
            gid: user.gid.0,
            groups: groups.iter().map(|g| g.as_raw()).collect(),
        }))
    }

    /// Becomes this user with raw system calls only (see the module header), for good: returns
    /// the failing step and its errno otherwise. For a child that shares nothing with a thread
    /// of the caller or will never return: a vforked or forked child.
    ///
    /// # Safety
    /// Call it only in a child process (forked or cloned) that ends in `execve` or `_exit`: it
    /// changes this process's ids and nothing else, and calls no libc function but `syscall`.
    pub unsafe fn become_raw(&self) -> Result<(), (Step, c_int)> {
        let (uid, gid) = (self.uid as libc::c_long, self.gid as libc::c_long);
        // SAFETY: plain integers and a pointer to `groups`, initialised and alive (the caller's
        // memory, which a vforked child shares with its sleeping parent, a forked one copies).
        unsafe {
            let n = self.groups.len() as libc::c_long;
            if libc::syscall(libc::SYS_setgroups, n, self.groups.as_ptr()) != 0 {
                return Err((Step::Groups, errno()));
            }
            if libc::syscall(libc::SYS_setresgid, gid, gid, gid) != 0 {
                return Err((Step::Gid, errno()));
            }
            if libc::syscall(libc::SYS_setresuid, uid, uid, uid) != 0 {
                return Err((Step::Uid, errno()));
            }
            let mut ids: [libc::uid_t; 3] = [u32::MAX; 3];
            let [r, e, s] = &mut ids;
            let (r, e, s) = (r as *mut u32, e as *mut u32, s as *mut u32);
            if libc::syscall(libc::SYS_getresuid, r, e, s) != 0 || ids != [self.uid; 3] {
                return Err((Step::Check, libc::EPERM));
            }
            let mut gids: [libc::gid_t; 3] = [u32::MAX; 3];
            let [r, e, s] = &mut gids;
            let (r, e, s) = (r as *mut u32, e as *mut u32, s as *mut u32);
            if libc::syscall(libc::SYS_getresgid, r, e, s) != 0 || gids != [self.gid; 3] {
                return Err((Step::Check, libc::EPERM));
            }
            if self.uid != 0 && libc::syscall(libc::SYS_setuid, 0 as libc::c_long) == 0 {
                return Err((Step::RootKept, libc::EPERM));
            }
        }
        Ok(())
    }
}

/// The step of the start of a process that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// clone: no process (EAGAIN under a pids or process limit, ENOMEM).
    Fork,
    Group,
    Descriptors,
    Groups,
    Gid,
    Uid,
    /// The ids are not all the user's after the calls.
    Check,
    /// `setuid(0)` succeeded after the change.
    RootKept,
    Chdir,
    Signals,
    Exec,
    Kill,
}

impl Step {
    fn from_code(code: i32) -> Step {
        const ALL: [Step; 12] = [
            Step::Fork,
            Step::Group,
            Step::Descriptors,
            Step::Groups,
            Step::Gid,
            Step::Uid,
            Step::Check,
            Step::RootKept,
            Step::Chdir,
            Step::Signals,
            Step::Exec,
            Step::Kill,
        ];
        ALL.get((code - 1) as usize).copied().unwrap_or(Step::Exec)
    }

    fn name(self) -> &'static str {
        match self {
            Step::Fork => "fork",
            Step::Group => "setpgid",
            Step::Descriptors => "dup3",
            Step::Groups => "setgroups",
            Step::Gid => "setresgid",
            Step::Uid => "setresuid",
            Step::Check => "the ids did not take",
            Step::RootKept => "root could be regained",
            Step::Chdir => "chdir(/)",
            Step::Signals => "sigprocmask",
            Step::Exec => "execve",
            Step::Kill => "kill",
        }
    }
}

/// Why a process did not start.
#[derive(Debug)]
pub struct SpawnError {
    pub step: Step,
    pub error: io::Error,
}

impl SpawnError {
    /// The process could not be made at all (no free process in the system or the cgroup, no
    /// memory): worth a retry, and nothing of the job ran. The clone is made as root, so a
    /// user's own process limit never counts here: an exec refused with EAGAIN for the user's
    /// RLIMIT_NPROC (pam_limits) is that user's failure, reported as any failed exec, and does
    /// not hold the daemon's queue as a retry would.
    pub fn is_fork_failure(&self) -> bool {
        self.step == Step::Fork
    }
}

/// Whether a fork (or clone) failed for want of a process or of memory (EAGAIN, ENOMEM): a
/// failure worth a retry, before anything of the job ran.
pub fn is_no_process(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::ENOMEM))
}

impl std::fmt::Display for SpawnError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.step {
            Step::Exec => write!(f, "{}", self.error),
            step => write!(f, "{} failed: {}", step.name(), self.error),
        }
    }
}

impl std::error::Error for SpawnError {}

/// A program to start as the user: built (argv, envp as C strings and pointer arrays) before the
/// clone, so the child only reads it.
#[derive(Debug)]
pub struct Launch {
    path: CString,
    _args: Vec<CString>,
    argv: Vec<*const libc::c_char>,
    _env: Vec<CString>,
    envp: Vec<*const libc::c_char>,
    dir: Option<CString>,
    own_group: bool,
}

/// Where a started process's standard descriptors come from.
#[derive(Debug)]
pub struct StdFds {
    pub stdin: Option<OwnedFd>,
    pub stdout: Option<OwnedFd>,
    /// `None` with `stdout` given: the same as stdout.
    pub stderr: Option<OwnedFd>,
}

/// A process that started: its pid, and, when it could not enter the directory it was given,
/// why (it runs in `/` then).
#[derive(Debug)]
pub struct Spawned {
    pub pid: u32,
    pub dir_error: Option<io::Error>,
}

fn c_bytes(bytes: &[u8]) -> io::Result<CString> {
    CString::new(bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

impl Launch {
    /// `path` with `args` (argv[0] is `path`), exactly `env` (a pair whose name or value holds a
    /// NUL byte, or whose name holds `=`, is left out).
    pub fn new(path: &[u8], args: &[&[u8]], env: &[(Vec<u8>, Vec<u8>)]) -> io::Result<Launch> {
        let path = c_bytes(path)?;
        let mut all = vec![path.clone()];
        for a in args {
            all.push(c_bytes(a)?);
        }
        let env: Vec<CString> = env
            .iter()
            .filter(|(n, _)| !n.contains(&b'='))
            .filter_map(|(n, v)| CString::new([&n[..], b"=", &v[..]].concat()).ok())
            .collect();
        let argv = all
            .iter()
            .map(|a| a.as_ptr())
            .chain([ptr::null()])
            .collect();
        let envp = env
            .iter()
            .map(|e| e.as_ptr())
            .chain([ptr::null()])
            .collect();
        Ok(Launch {
            path,
            _args: all,
            argv,
            _env: env,
            envp,
            dir: None,
            own_group: false,
        })
    }

    /// Starts in `dir` (entered as the user), or in `/` when it can't be entered.
    pub fn dir(mut self, dir: &[u8]) -> Launch {
        self.dir = c_bytes(dir).ok();
        self
    }

    /// Leads a process group of its own (its pid is the group's id).
    pub fn own_group(mut self) -> Launch {
        self.own_group = true;
        self
    }
}

/// What the child reports through the memory it shares with its parent: the step that failed
/// (or 0 with no error) and its errno, and the errno of a directory it could not enter.
#[derive(Debug, Default)]
struct Report {
    step: AtomicI32,
    errno: AtomicI32,
    dir_errno: AtomicI32,
}

/// What to do in the child.
enum Action<'a> {
    Exec { launch: &'a Launch, fds: [RawFd; 3] },
    Kill { pgid: i32, signal: c_int },
}

/// Everything the child reads, prepared by the parent.
struct ChildArgs<'a> {
    creds: Option<&'a Credentials>,
    action: Action<'a>,
    mask: libc::sigset_t,
    open_max: c_int,
    report: Report,
}

/// The size of the child's stack: it calls raw system calls only, a few hundred bytes deep.
const STACK: usize = 64 * 1024;

/// Starts `launch` as `creds`'s user (`None`: as this process is) with `fds` as its standard
/// descriptors (`None`: /dev/null). Returns once the program has been exec'd (or could not be);
/// the descriptors handed over are closed here on return. The caller reaps the process.
pub fn spawn(
    launch: &Launch,
    fds: StdFds,
    creds: Option<&Credentials>,
) -> Result<Spawned, SpawnError> {
    let err = |step, error| SpawnError { step, error };
    let null = || {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/null")
            .map(OwnedFd::from)
    };
    let stdin = match fds.stdin {
        Some(fd) => fd,
        None => null().map_err(|e| err(Step::Descriptors, e))?,
    };
    let stdout = match fds.stdout {
        Some(fd) => fd,
        None => null().map_err(|e| err(Step::Descriptors, e))?,
    };
    let stderr = match fds.stderr {
        Some(fd) => fd,
        None => stdout.try_clone().map_err(|e| err(Step::Descriptors, e))?,
    };
    // The child dups each onto 0, 1, 2 in that order: a source among 0..=2 could be overwritten
    // first, so each is moved above 2 (our copies are close-on-exec).
    let high = |fd: OwnedFd| -> io::Result<OwnedFd> {
        if fd.as_raw_fd() > 2 {
            return Ok(fd);
        }
        let dup = nix::fcntl::fcntl(&fd, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(3))?;
        // SAFETY: fcntl just returned this new descriptor; nothing else owns it.
        Ok(unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(dup) })
    };
    let fds = [high(stdin), high(stdout), high(stderr)];
    let [stdin, stdout, stderr] = fds.map(|fd| fd.map_err(|e| err(Step::Descriptors, e)));
    let (stdin, stdout, stderr) = (stdin?, stdout?, stderr?);
    let action = Action::Exec {
        launch,
        fds: [stdin.as_raw_fd(), stdout.as_raw_fd(), stderr.as_raw_fd()],
    };
    let (pid, report) = clone_vfork(creds, action).map_err(|e| err(Step::Fork, e))?;
    drop((stdin, stdout, stderr));
    let step = report.step.load(Ordering::Relaxed);
    if step != 0 {
        // The child has exited (`_exit`): reap it, so no zombie is left.
        let _ = super::process::wait_for(super::process::Pid(pid));
        let error = io::Error::from_raw_os_error(report.errno.load(Ordering::Relaxed));
        return Err(err(Step::from_code(step), error));
    }
    let dir_errno = report.dir_errno.load(Ordering::Relaxed);
    Ok(Spawned {
        pid: pid as u32,
        dir_error: (dir_errno != 0).then(|| io::Error::from_raw_os_error(dir_errno)),
    })
}

/// Sends SIGTERM or SIGKILL to the process group `pgid` as `creds`'s user (`None`: as this
/// process), from a vforked child that changes its ids and signals: what the job's user could
/// signal, and nothing more. `Ok(false)` when the group has no member left (ESRCH).
pub fn signal_group(
    creds: Option<&Credentials>,
    pgid: u32,
    signal: super::process::GroupSignal,
) -> io::Result<bool> {
    let Some(creds) = creds else {
        return super::process::signal_group(pgid, signal);
    };
    let pgid = i32::try_from(pgid).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let signal = match signal {
        super::process::GroupSignal::Term => libc::SIGTERM,
        super::process::GroupSignal::Kill => libc::SIGKILL,
    };
    let (pid, report) = clone_vfork(Some(creds), Action::Kill { pgid, signal })?;
    let _ = super::process::wait_for(super::process::Pid(pid));
    match (
        report.step.load(Ordering::Relaxed),
        report.errno.load(Ordering::Relaxed),
    ) {
        (0, _) => Ok(true),
        (_, libc::ESRCH) => Ok(false),
        (_, errno) => Err(io::Error::from_raw_os_error(errno)),
    }
}

/// Clones a child that shares this process's memory and runs `action` on a stack of its own;
/// returns when it has exec'd or exited, with its pid and what it reported.
fn clone_vfork(creds: Option<&Credentials>, action: Action<'_>) -> io::Result<(i32, Report)> {
    // Allocated, not zeroed: the child writes before it reads, and touches only the top few
    // hundred bytes of it.
    let mut stack: Vec<u8> = Vec::with_capacity(STACK);
    // SAFETY: `all` and `old` are local sigsets, initialised by sigfillset / written by
    // pthread_sigmask before they are read.
    let old = unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        let mut old: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_SETMASK, &all, &mut old);
        old
    };
    let args = ChildArgs {
        creds,
        action,
        mask: old,
        open_max: open_max(),
        report: Report::default(),
    };
    // The stack grows down: its top, aligned to 16 bytes as both ABIs want.
    let top = (stack.spare_capacity_mut().as_mut_ptr() as usize + STACK) & !15;
    // SAFETY: the child runs `child_main` on `stack` (alive until the clone returns, which with
    // CLONE_VFORK is after the child has exec'd or exited, so the child never uses it after it
    // is freed). It shares this process's memory; what it does there is said at `child_main`:
    // it reads `args` (alive for the same span), writes only `args.report`'s atomics and its own
    // stack, and calls no libc function but `syscall` and `__errno_location`, so it takes no
    // lock and touches no allocator or stdio state; signals are blocked across it (a handler
    // would run in the child on this memory), and it ends in execve or _exit. No CLONE_THREAD
    // and no CLONE_FILES: its descriptors and its ids are its own.
    let pid = unsafe {
        libc::clone(
            child_main,
            top as *mut c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            &args as *const ChildArgs<'_> as *mut c_void,
        )
    };
    let clone_error = io::Error::last_os_error();
    // SAFETY: `old` was filled by pthread_sigmask above.
    unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &old, ptr::null_mut()) };
    drop(stack);
    if pid < 0 {
        return Err(clone_error);
    }
    Ok((pid, args.report))
}

/// The errno the last raw system call of this thread set.
fn errno() -> c_int {
    // SAFETY: __errno_location returns the calling thread's errno slot, always valid.
    unsafe { *libc::__errno_location() }
}

/// The child: never returns (execve or `_exit`).
///
/// Sound because: it runs on its own stack with the parent asleep (CLONE_VFORK); it only reads
/// `ChildArgs`, which the parent built before the clone and keeps alive until the child has
/// exec'd or exited; it writes only its stack and `Report`'s atomics; every call is
/// `libc::syscall` (which sets the parent thread's errno, unused by the parent across the clone)
/// or `_exit`: no allocation, no lock, no stdio, no libc state. Its descriptor table and its ids
/// are its own (no CLONE_FILES, no CLONE_THREAD), so what it closes and the ids it takes are not
/// the parent's. `syscall` is variadic: every argument is passed as a pointer, a `c_long` or a
/// type the kernel declares no wider than `int` (it reads only those bits), never a narrower
/// integer where it declares a `size_t`.
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` the parent passed, alive while this runs (see above).
    let args = unsafe { &*(arg as *const ChildArgs<'_>) };
    let fail = |step: Step, errno: c_int| -> ! {
        args.report.errno.store(errno, Ordering::Relaxed);
        args.report.step.store(step as i32 + 1, Ordering::Relaxed);
        // SAFETY: _exit ends this process only (no CLONE_THREAD: exit_group is its own).
        unsafe { libc::_exit(127) }
    };
    if let Action::Exec { launch, fds } = &args.action {
        // SAFETY: raw system calls on integers owned by this child (its own descriptor table).
        unsafe {
            if launch.own_group && libc::syscall(libc::SYS_setpgid, 0, 0) != 0 {
                fail(Step::Group, errno());
            }
            for (target, &fd) in fds.iter().enumerate() {
                if libc::syscall(libc::SYS_dup3, fd, target as c_int, 0) < 0 {
                    fail(Step::Descriptors, errno());
                }
            }
            if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
                for fd in 3..args.open_max {
                    libc::syscall(libc::SYS_close, fd);
                }
            }
        }
    }
    if let Some(creds) = args.creds {
        // SAFETY: this is a cloned child that ends in execve or _exit (above).
        if let Err((step, errno)) = unsafe { creds.become_raw() } {
            fail(step, errno);
        }
    }
    match &args.action {
        Action::Kill { pgid, signal } => {
            // SAFETY: raw kill on integers.
            if unsafe { libc::syscall(libc::SYS_kill, -pgid, *signal) } != 0 {
                fail(Step::Kill, errno());
            }
            // SAFETY: as at `fail`.
            unsafe { libc::_exit(0) }
        }
        Action::Exec { launch, .. } => {
            // SAFETY: raw system calls on C strings and pointer arrays the parent built, NUL
            // terminated and alive (see above); `mask` is the parent's saved mask (the kernel
            // reads its first 8 bytes).
            unsafe {
                if let Some(dir) = &launch.dir
                    && libc::syscall(libc::SYS_chdir, dir.as_ptr()) != 0
                {
                    args.report.dir_errno.store(errno(), Ordering::Relaxed);
                    if libc::syscall(libc::SYS_chdir, c"/".as_ptr()) != 0 {
                        fail(Step::Chdir, errno());
                    }
                }
                let mask = &args.mask as *const libc::sigset_t;
                if libc::syscall(
                    libc::SYS_rt_sigprocmask,
                    libc::SIG_SETMASK,
                    mask,
                    0usize,
                    8usize,
                ) != 0
                {
                    fail(Step::Signals, errno());
                }
                libc::syscall(
                    libc::SYS_execve,
                    launch.path.as_ptr(),
                    launch.argv.as_ptr(),
                    launch.envp.as_ptr(),
                );
            }
            fail(Step::Exec, errno())
        }
    }
}

#[cfg(test)]
mod tests;
