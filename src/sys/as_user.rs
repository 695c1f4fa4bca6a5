//! Processes that run as the job's user, started from the root job child (docs/design.md §5):
//! the shell and the MTA by [`spawn`], the signals of `CRON_TIMEOUT` and of an MTA's timeout by
//! [`signal_group`], and the ids a forked helper (the stdin writer, the output drain,
//! `sys::pipe`) takes by [`Credentials::become_raw`].
//!
//! [`spawn`] is what glibc's `posix_spawn` does inside, plus the change of user: a
//! `clone(CLONE_VM | CLONE_VFORK)` on a stack of its own, so no page of the job child is copied
//! and the job child sleeps until the new process has called `execve` (or died). Between the
//! clone and the exec the child makes raw system calls only, in this order: its own process
//! group (for a time limit), the three standard descriptors, every other descriptor closed
//! (what PAM's modules opened as root without close-on-exec, too), `setgroups` with the list
//! computed before the clone and a check that `getgroups` reads it back, `setresgid`,
//! `setresuid`, a check that all three uids and gids are the user's and that `setuid(0)` fails,
//! `chdir` to HOME as the user (or to `/`, reported back),
//! the signal mask the caller had, `execve` with an argv and envp built before the clone. Any
//! failure is written into memory the two share ([`Report`]) and the child ends with `_exit`, so
//! the caller learns which step failed and its errno, the exec's included.
//!
//! Why raw system calls: glibc's `setgroups`, `setresuid` and `setresgid` are not system calls
//! in a process with threads (PAM's modules may start some): they signal every thread of the
//! process to change its ids too, using the process's thread list and a lock, which in a child
//! sharing the parent's memory would act on the parent's threads. `syscall(2)` is a few
//! instructions that set the calling thread's `errno` and nothing else. The calls are the ones
//! that take 32-bit ids on every architecture ([`id_calls`]).

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
    /// Sorted, each group once: the kernel keeps a list sorted (it sorts what `setgroups` is
    /// given), so the list `getgroups` reads back is this one exactly.
    groups: Vec<libc::gid_t>,
}

/// The most supplementary groups taken (the kernel's NGROUPS_MAX); a user in more gets an error
/// from `getgrouplist`, and the job does not run.
const MAX_GROUPS: usize = 65_536;

/// Room for the group list a process reads back after its `setgroups`
/// ([`Credentials::become_raw`]), made before its clone or fork: the child may not allocate.
#[derive(Debug)]
pub struct GroupsRoom(Vec<libc::gid_t>);

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
        let groups = groups.iter().map(|g| g.as_raw()).collect();
        Credentials::new(user.uid.0, user.gid.0, groups).map(Some)
    }

    /// `groups` sorted and each kept once; an error past [`MAX_GROUPS`].
    fn new(
        uid: libc::uid_t,
        gid: libc::gid_t,
        mut groups: Vec<libc::gid_t>,
    ) -> io::Result<Credentials> {
        if groups.len() > MAX_GROUPS {
            return Err(io::Error::other("the user is in too many groups"));
        }
        groups.sort_unstable();
        groups.dedup();
        Ok(Credentials { uid, gid, groups })
    }

    /// Gives this process the user's supplementary groups; it keeps its own uid and gid
    /// (root's). The job child does so before PAM establishes the credentials, as Debian's cron
    /// and cronie call `initgroups` first: a group a module adds then (pam_group) is added to
    /// the user's, and root's own groups are gone before any module runs. glibc's `setgroups`,
    /// which changes every thread of this process (a module may have started one).
    pub fn take_groups_here(&self) -> io::Result<()> {
        let groups: Vec<nix::unistd::Gid> = self
            .groups
            .iter()
            .map(|&g| nix::unistd::Gid::from_raw(g))
            .collect();
        nix::unistd::setgroups(&groups).map_err(io::Error::from)
    }

    /// These ids with this process's supplementary groups (`getgroups`) instead of the ones
    /// computed: what the job child has once PAM's modules added theirs.
    pub fn with_groups_of_this_process(&self) -> io::Result<Credentials> {
        let groups = nix::unistd::getgroups().map_err(io::Error::from)?;
        let groups = groups.iter().map(|g| g.as_raw()).collect();
        Credentials::new(self.uid, self.gid, groups)
    }

    /// The supplementary groups the user's processes take, sorted.
    pub fn groups(&self) -> &[libc::gid_t] {
        &self.groups
    }

    /// Room for [`Credentials::become_raw`] to read the group list back into.
    pub fn groups_room(&self) -> GroupsRoom {
        // One more than is set: a list that comes back longer is seen longer.
        GroupsRoom(vec![0; self.groups.len() + 1])
    }

    /// Becomes this user with raw system calls only (see the module header), for good: returns
    /// the failing step and its errno otherwise. For a child that shares nothing with a thread
    /// of the caller or will never return: a vforked or forked child. `room` is where the
    /// group list is read back ([`Credentials::groups_room`], made before the fork).
    ///
    /// # Safety
    /// Call it only in a child process (forked or cloned) that ends in `execve` or `_exit`: it
    /// changes this process's ids and nothing else, and calls no libc function but `syscall`.
    pub unsafe fn become_raw(&self, room: &mut GroupsRoom) -> Result<(), (Step, c_int)> {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.become_with(room, Fault::NONE) }
    }

    /// [`Credentials::become_raw`], with `fault`'s step failing as if its call had.
    ///
    /// # Safety
    /// As [`Credentials::become_raw`].
    unsafe fn become_with(&self, room: &mut GroupsRoom, fault: Fault) -> Result<(), (Step, c_int)> {
        let (uid, gid) = (self.uid as libc::c_long, self.gid as libc::c_long);
        // SAFETY: plain integers and pointers to `groups` (initialised, alive) and to `room`
        // and three local arrays (writable, as long as the size given); this process's memory
        // (the caller's, which a vforked child shares with its sleeping parent, a forked one
        // copies).
        unsafe {
            let n = self.groups.len() as libc::c_long;
            let set = libc::syscall(id_calls::SETGROUPS, n, self.groups.as_ptr());
            fault.call(Step::Groups, set != 0)?;
            let room_len = room.0.len() as libc::c_long;
            let got = libc::syscall(id_calls::GETGROUPS, room_len, room.0.as_mut_ptr());
            let read = usize::try_from(got).ok().and_then(|got| room.0.get(..got));
            fault.check(Step::GroupsCheck, read == Some(&self.groups[..]))?;
            let set = libc::syscall(id_calls::SETRESGID, gid, gid, gid);
            fault.call(Step::Gid, set != 0)?;
            let set = libc::syscall(id_calls::SETRESUID, uid, uid, uid);
            fault.call(Step::Uid, set != 0)?;
            let mut ids: [libc::uid_t; 3] = [u32::MAX; 3];
            let [r, e, s] = &mut ids;
            let (r, e, s) = (r as *mut u32, e as *mut u32, s as *mut u32);
            let got = libc::syscall(id_calls::GETRESUID, r, e, s);
            fault.check(Step::Check, got == 0 && ids == [self.uid; 3])?;
            let mut gids: [libc::gid_t; 3] = [u32::MAX; 3];
            let [r, e, s] = &mut gids;
            let (r, e, s) = (r as *mut u32, e as *mut u32, s as *mut u32);
            let got = libc::syscall(id_calls::GETRESGID, r, e, s);
            fault.check(Step::Check, got == 0 && gids == [self.gid; 3])?;
            let gone = self.uid == 0 || libc::syscall(id_calls::SETUID, 0 as libc::c_long) != 0;
            fault.check(Step::RootKept, gone)?;
        }
        Ok(())
    }
}

/// The system calls that set and read a process's ids, each the one with 32-bit ids. On 32-bit
/// x86, arm and sparc the plain numbers are Linux's first calls, with 16-bit ids: `setgroups`
/// reads a list of u32 as twice as many u16 (root's group 0 among them), `getresuid` fills half
/// of each u32. There the calls with 32-bit ids are the `*32` ones; everywhere else (64-bit
/// targets, mips, powerpc, riscv32, m68k's numbering) the plain numbers take 32-bit ids.
#[cfg(any(target_arch = "x86", target_arch = "arm", target_arch = "sparc"))]
mod id_calls {
    pub const SETGROUPS: libc::c_long = libc::SYS_setgroups32;
    pub const GETGROUPS: libc::c_long = libc::SYS_getgroups32;
    pub const SETRESGID: libc::c_long = libc::SYS_setresgid32;
    pub const SETRESUID: libc::c_long = libc::SYS_setresuid32;
    pub const GETRESUID: libc::c_long = libc::SYS_getresuid32;
    pub const GETRESGID: libc::c_long = libc::SYS_getresgid32;
    pub const SETUID: libc::c_long = libc::SYS_setuid32;
}

#[cfg(not(any(target_arch = "x86", target_arch = "arm", target_arch = "sparc")))]
mod id_calls {
    pub const SETGROUPS: libc::c_long = libc::SYS_setgroups;
    pub const GETGROUPS: libc::c_long = libc::SYS_getgroups;
    pub const SETRESGID: libc::c_long = libc::SYS_setresgid;
    pub const SETRESUID: libc::c_long = libc::SYS_setresuid;
    pub const GETRESUID: libc::c_long = libc::SYS_getresuid;
    pub const GETRESGID: libc::c_long = libc::SYS_getresgid;
    pub const SETUID: libc::c_long = libc::SYS_setuid;
}

// The numbers chosen, checked against Linux's own tables (arch/x86/entry/syscalls/
// syscall_32.tbl, arch/arm/tools/syscall.tbl, arch/sparc/kernel/syscalls/syscall.tbl,
// arch/x86/entry/syscalls/syscall_64.tbl, arch/arm64's asm-generic unistd.h), where the libc
// crate names them: a build for those targets fails if a name ever gives another call.
#[cfg(any(target_arch = "x86", target_arch = "arm"))]
const _: () = assert!(
    id_calls::GETGROUPS == 205
        && id_calls::SETGROUPS == 206
        && id_calls::SETRESUID == 208
        && id_calls::GETRESUID == 209
        && id_calls::SETRESGID == 210
        && id_calls::GETRESGID == 211
        && id_calls::SETUID == 213
);
#[cfg(target_arch = "sparc")]
const _: () = assert!(
    id_calls::SETGROUPS == 82
        && id_calls::SETUID == 87
        && id_calls::SETRESUID == 108
        && id_calls::GETRESUID == 109
        && id_calls::SETRESGID == 110
        && id_calls::GETRESGID == 111
        && id_calls::GETGROUPS == 115
);
#[cfg(all(target_arch = "x86_64", target_pointer_width = "64"))]
const _: () = assert!(
    id_calls::SETUID == 105
        && id_calls::SETRESUID == 117
        && id_calls::GETRESUID == 118
        && id_calls::SETRESGID == 119
        && id_calls::GETRESGID == 120
        && id_calls::GETGROUPS == 115
        && id_calls::SETGROUPS == 116
);
#[cfg(target_arch = "aarch64")]
const _: () = assert!(
    id_calls::SETUID == 146
        && id_calls::SETRESUID == 147
        && id_calls::GETRESUID == 148
        && id_calls::SETRESGID == 149
        && id_calls::GETRESGID == 150
        && id_calls::GETGROUPS == 158
        && id_calls::SETGROUPS == 159
);

/// The size of the kernel's signal set, `_NSIG / 8` bytes: `rt_sigprocmask` refuses any other
/// (EINVAL). 128 signals on mips, 64 on every other architecture.
#[cfg(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "mips32r6",
    target_arch = "mips64r6"
))]
const KERNEL_SIGSET_BYTES: usize = 16;
#[cfg(not(any(
    target_arch = "mips",
    target_arch = "mips64",
    target_arch = "mips32r6",
    target_arch = "mips64r6"
)))]
const KERNEL_SIGSET_BYTES: usize = 8;

// The kernel reads that many bytes of the saved mask: glibc's sigset_t (128 bytes) holds them.
const _: () = assert!(KERNEL_SIGSET_BYTES <= std::mem::size_of::<libc::sigset_t>());

/// A step of the start of a process made to fail as if its system call had failed (EPERM) or
/// its check had found the ids wrong: for the tests of what a failed start leaves behind
/// (nothing run, a failed run logged). Only the tests make one ([`Fault::at`]); every process
/// the daemon starts has [`Fault::NONE`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Fault(Option<Step>);

/// The errno of a step made to fail.
const FAULT_ERRNO: c_int = libc::EPERM;

impl Fault {
    pub const NONE: Fault = Fault(None);

    /// `step` fails.
    #[cfg(test)]
    pub fn at(step: Step) -> Fault {
        Fault(Some(step))
    }

    fn hits(self, step: Step) -> bool {
        self.0 == Some(step)
    }

    /// The end of a system call that `failed` (its errno set) or not, as `step`'s result.
    fn call(self, step: Step, failed: bool) -> Result<(), (Step, c_int)> {
        if self.hits(step) {
            return Err((step, FAULT_ERRNO));
        }
        if failed {
            return Err((step, errno()));
        }
        Ok(())
    }

    /// A check that `passed` or not, as `step`'s result (EPERM when it did not).
    fn check(self, step: Step, passed: bool) -> Result<(), (Step, c_int)> {
        if self.hits(step) || !passed {
            return Err((step, libc::EPERM));
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
    /// `getgroups` did not read back the list `setgroups` was given.
    GroupsCheck,
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
    /// Every step, in the order of their codes in [`Report`].
    const ALL: [Step; 13] = [
        Step::Fork,
        Step::Group,
        Step::Descriptors,
        Step::Groups,
        Step::GroupsCheck,
        Step::Gid,
        Step::Uid,
        Step::Check,
        Step::RootKept,
        Step::Chdir,
        Step::Signals,
        Step::Exec,
        Step::Kill,
    ];

    /// The steps of a start, in the child between its clone and its exec, in their order.
    #[cfg(test)]
    pub const OF_A_START: [Step; 11] = [
        Step::Group,
        Step::Descriptors,
        Step::Groups,
        Step::GroupsCheck,
        Step::Gid,
        Step::Uid,
        Step::Check,
        Step::RootKept,
        Step::Chdir,
        Step::Signals,
        Step::Exec,
    ];

    fn from_code(code: i32) -> Step {
        let index = usize::try_from(code - 1).unwrap_or(usize::MAX);
        Step::ALL.get(index).copied().unwrap_or(Step::Exec)
    }

    /// What the log says of it.
    pub fn name(self) -> &'static str {
        match self {
            Step::Fork => "fork",
            Step::Group => "setpgid",
            Step::Descriptors => "dup3",
            Step::Groups => "setgroups",
            Step::GroupsCheck => "the groups did not take",
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
            // A check has no errno of its own: what it found is said.
            step @ (Step::GroupsCheck | Step::Check | Step::RootKept) => f.write_str(step.name()),
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
    fault: Fault,
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
            fault: Fault::NONE,
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

    /// Its start fails at `fault`'s step (never, with [`Fault::NONE`]).
    pub fn with_fault(mut self, fault: Fault) -> Launch {
        self.fault = fault;
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

/// Everything the child reads, prepared by the parent; the child writes `report` and the room
/// its group list is read back into.
struct ChildArgs<'a> {
    user: Option<(&'a Credentials, GroupsRoom)>,
    action: Action<'a>,
    fault: Fault,
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
    let (pid, report) = clone_vfork(creds, action, launch.fault).map_err(|e| err(Step::Fork, e))?;
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
    let (pid, report) = clone_vfork(Some(creds), Action::Kill { pgid, signal }, Fault::NONE)?;
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

/// Clones a child that shares this process's memory and runs `action` on a stack of its own
/// (with `fault`'s step failing); returns when it has exec'd or exited, with its pid and what it
/// reported.
fn clone_vfork(
    creds: Option<&Credentials>,
    action: Action<'_>,
    fault: Fault,
) -> io::Result<(i32, Report)> {
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
    let mut args = ChildArgs {
        user: creds.map(|creds| (creds, creds.groups_room())),
        action,
        fault,
        mask: old,
        open_max: open_max(),
        report: Report::default(),
    };
    // The stack grows down: its top, aligned to 16 bytes as both ABIs want.
    let top = (stack.spare_capacity_mut().as_mut_ptr() as usize + STACK) & !15;
    // SAFETY: the child runs `child_main` on `stack` (alive until the clone returns, which with
    // CLONE_VFORK is after the child has exec'd or exited, so the child never uses it after it
    // is freed). It shares this process's memory; what it does there is said at `child_main`:
    // it uses `args` (alive for the same span, and not touched here until then), writes only
    // `args.report`'s atomics, the group room in `args` and its own stack, and calls no libc
    // function but `syscall`, `__errno_location` and `_exit`, so it takes no lock and touches
    // no allocator or stdio state; signals are blocked across it (a handler would run in the
    // child on this memory), and it ends in execve or _exit. No CLONE_THREAD and no
    // CLONE_FILES: its descriptors and its ids are its own.
    let pid = unsafe {
        libc::clone(
            child_main,
            top as *mut c_void,
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            &mut args as *mut ChildArgs<'_> as *mut c_void,
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
/// Sound because: it runs on its own stack with the parent asleep (CLONE_VFORK); it uses only
/// `ChildArgs`, which the parent built before the clone and does not touch until the child has
/// exec'd or exited; it writes only its stack, `Report`'s atomics and the group room; every
/// call is `libc::syscall` (which sets the parent thread's errno, unused by the parent across
/// the clone) or `_exit`: no allocation, no lock, no stdio, no libc state. Its descriptor table
/// and its ids are its own (no CLONE_FILES, no CLONE_THREAD), so what it closes and the ids it
/// takes are not the parent's. `syscall` is variadic: every argument is passed as a pointer, a
/// `c_long` or a type the kernel declares no wider than `int` (it reads only those bits), never
/// a narrower integer where it declares a `size_t`.
extern "C" fn child_main(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` is the `ChildArgs` the parent passed, alive while this runs and used by
    // nothing else meanwhile (see above).
    let args = unsafe { &mut *(arg as *mut ChildArgs<'_>) };
    let (report, fault) = (&args.report, args.fault);
    if let Action::Exec { launch, fds } = &args.action {
        or_exit(report, take_descriptors(launch, fds, args.open_max, fault));
    }
    if let Some((creds, room)) = &mut args.user {
        // SAFETY: this is a cloned child that ends in execve or _exit (above).
        or_exit(report, unsafe { creds.become_with(room, fault) });
    }
    match &args.action {
        Action::Kill { pgid, signal } => {
            // SAFETY: raw kill on integers.
            let sent = unsafe { libc::syscall(libc::SYS_kill, -pgid, *signal) };
            or_exit(report, fault.call(Step::Kill, sent != 0));
            // SAFETY: as at `exit_failed`.
            unsafe { libc::_exit(0) }
        }
        Action::Exec { launch, .. } => exec(launch, &args.mask, report, fault),
    }
}

/// In the child: its own process group if asked, `fds` as 0, 1 and 2, every other descriptor
/// closed.
fn take_descriptors(
    launch: &Launch,
    fds: &[RawFd; 3],
    open_max: c_int,
    fault: Fault,
) -> Result<(), (Step, c_int)> {
    // SAFETY: raw system calls on integers owned by this child (its own descriptor table).
    unsafe {
        let grouped = launch.own_group && libc::syscall(libc::SYS_setpgid, 0, 0) != 0;
        fault.call(Step::Group, grouped)?;
        for (target, &fd) in fds.iter().enumerate() {
            let dup = libc::syscall(libc::SYS_dup3, fd, target as c_int, 0);
            fault.call(Step::Descriptors, dup < 0)?;
        }
        if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) != 0 {
            for fd in 3..open_max {
                libc::syscall(libc::SYS_close, fd);
            }
        }
    }
    Ok(())
}

/// In the child, as the user: the directory, the caller's signal mask, the exec. Returns only
/// through `_exit`.
fn exec(launch: &Launch, mask: &libc::sigset_t, report: &Report, fault: Fault) -> ! {
    // SAFETY: raw system calls on C strings and pointer arrays the parent built, NUL terminated
    // and alive (see `child_main`); `mask` is the parent's saved mask, of which the kernel
    // reads its own signal set's size, `KERNEL_SIGSET_BYTES` (checked above to fit).
    unsafe {
        let entered = match &launch.dir {
            Some(dir) => libc::syscall(libc::SYS_chdir, dir.as_ptr()) == 0,
            None => true,
        };
        if !entered {
            report.dir_errno.store(errno(), Ordering::Relaxed);
        }
        let in_root = !entered && libc::syscall(libc::SYS_chdir, c"/".as_ptr()) != 0;
        or_exit(report, fault.call(Step::Chdir, in_root));
        let mask = mask as *const libc::sigset_t;
        let how = libc::SIG_SETMASK;
        let set = libc::syscall(
            libc::SYS_rt_sigprocmask,
            how,
            mask,
            0usize,
            KERNEL_SIGSET_BYTES,
        );
        or_exit(report, fault.call(Step::Signals, set != 0));
        let errno = if fault.hits(Step::Exec) {
            FAULT_ERRNO
        } else {
            let (path, argv, envp) = (
                launch.path.as_ptr(),
                launch.argv.as_ptr(),
                launch.envp.as_ptr(),
            );
            libc::syscall(libc::SYS_execve, path, argv, envp);
            errno()
        };
        exit_failed(report, (Step::Exec, errno))
    }
}

/// In the child: ends it when `result` is a failed step ([`exit_failed`]).
fn or_exit(report: &Report, result: Result<(), (Step, c_int)>) {
    if let Err(failed) = result {
        exit_failed(report, failed)
    }
}

/// In the child: writes the failed step and its errno into `report`, and ends.
fn exit_failed(report: &Report, (step, errno): (Step, c_int)) -> ! {
    report.errno.store(errno, Ordering::Relaxed);
    report.step.store(step as i32 + 1, Ordering::Relaxed);
    // SAFETY: _exit ends this process only (no CLONE_THREAD: exit_group is its own).
    unsafe { libc::_exit(127) }
}

#[cfg(test)]
mod tests;
