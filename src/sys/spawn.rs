//! The one place processes are started. Two flavours, each for its own reason:
//!
//! - **fork**, for a child that runs our own code (the daemon's detachment, the job child,
//!   PAM's trial child): [`fork_single_threaded`]. The child goes on with the parent's state
//!   (its log, its setup), which no `exec` could hand over. It refuses when the process has
//!   other threads: see its definition. One documented exception: [`fork_async_signal_safe`]
//!   (a child that makes only async-signal-safe calls: the stdin writer, the output drain).
//! - **spawn+exec**, for a program run as this process (the cluster helper, the editor):
//!   [`Program`]. A job's programs (its shell, the MTA) run as its user and are started by
//!   `sys::as_user::spawn`, which takes the user's ids between its clone and its exec.
//!
//! Every descriptor the daemon opens is close-on-exec, so an exec'd program inherits only the
//! ones it is handed (stdin, stdout, stderr); a forked child that does not exec closes what it
//! must not keep itself (`process::close_all_above_stderr`, or the pipe children's own rule).

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};

use nix::unistd::{self, ForkResult};

use super::process::{Pid, thread_count};
use super::user::Gid;

/// Which side of a fork this is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    Child,
    Parent(Pid),
}

/// Forks, if this process has one thread; refuses otherwise, in every build. The child of a
/// single-threaded process is an exact copy with no lock held by a vanished thread, so it may
/// call anything (NSS lookups, malloc); a child of a threaded one may not, and the daemon's
/// children do. Where /proc can't be read the count is unknown and the fork goes ahead: the
/// daemon starts no threads (docs/design.md §2), and this check is what keeps that so.
pub fn fork_single_threaded() -> io::Result<Forked> {
    if let Some(n) = thread_count().filter(|&n| n != 1) {
        return Err(io::Error::other(format!(
            "refusing to fork a process of {n} threads: the child could deadlock in malloc or NSS"
        )));
    }
    // SAFETY: checked just above that this process has one thread (the daemon starts none), so
    // no lock can be held by a thread that the child would lack.
    match unsafe { unistd::fork() }.map_err(io::Error::from)? {
        ForkResult::Child => Ok(Forked::Child),
        ForkResult::Parent { child } => Ok(Forked::Parent(Pid(child.as_raw()))),
    }
}

/// Forks without the thread check, for a child that calls only async-signal-safe functions
/// (`dup2`, `close_range`/`close`, `read`, `write`, `_exit`), allocates nothing and never
/// returns: such a child is sound even when the parent has other threads (the test harness
/// does), because it never takes a lock a vanished thread could hold. The stdin writer and the
/// output drain (`sys::pipe`) are such children.
///
/// # Safety
/// In the child (`Forked::Child`) the caller may only make async-signal-safe calls, on memory
/// initialised before the fork, and must end in `_exit` on every path (no return, no unwind).
pub unsafe fn fork_async_signal_safe() -> io::Result<Forked> {
    // SAFETY: the caller's contract: the child makes only async-signal-safe calls and ends in
    // _exit, so no lock or Rust state of another thread is ever touched in it.
    match unsafe { unistd::fork() }.map_err(io::Error::from)? {
        ForkResult::Child => Ok(Forked::Child),
        ForkResult::Parent { child } => Ok(Forked::Parent(Pid(child.as_raw()))),
    }
}

/// A program to run: spawn+exec through `std::process::Command`, which is called only here.
/// std's spawn is the exec mechanism because it does what a hand-written one would, and
/// correctly: with no `pre_exec` hook it takes glibc's `posix_spawn` (vfork semantics: no copy
/// of the parent's memory, nothing of ours runs in the child), reports a failed exec as an
/// error through its close-on-exec pipe, resets SIGPIPE to its default for the program, and
/// gives the child only the descriptors handed to it. A hook ([`Program::default_interrupts`])
/// or a gid ([`Program::gid`]) makes it fork instead, and run them between fork and exec with
/// async-signal-safe calls only; only crontab(1)'s editor asks for them.
#[derive(Debug)]
pub struct Program {
    command: Command,
}

impl Program {
    /// The program at `path` (or found in PATH, for a bare name), with no argument yet.
    pub fn new(path: impl AsRef<OsStr>) -> Program {
        Program {
            command: Command::new(path),
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut Program {
        self.command.arg(arg);
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut Program
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        self.command.args(args);
        self
    }

    /// Runs with exactly `env`: nothing of this process's environment leaks in.
    pub fn env_exactly(&mut self, env: &[(Vec<u8>, Vec<u8>)]) -> &mut Program {
        self.command.env_clear().envs(
            env.iter()
                .map(|(n, v)| (OsStr::from_bytes(n), OsStr::from_bytes(v))),
        );
        self
    }

    pub fn stdin(&mut self, stdin: Stdio) -> &mut Program {
        self.command.stdin(stdin);
        self
    }

    pub fn stdout(&mut self, stdout: Stdio) -> &mut Program {
        self.command.stdout(stdout);
        self
    }

    pub fn stderr(&mut self, stderr: Stdio) -> &mut Program {
        self.command.stderr(stderr);
        self
    }

    /// The program leads a process group of its own (its pid is the group's id), so that it and
    /// whatever it starts can be signalled together. std's spawn sets it without a hook.
    pub fn own_process_group(&mut self) -> &mut Program {
        self.command.process_group(0);
        self
    }

    /// The program's real, effective and saved gid (crontab(1)'s editor runs with the caller's
    /// own group: exec copies it into the saved set-gid, so the group can't be regained).
    pub fn gid(&mut self, gid: Gid) -> &mut Program {
        self.command.gid(gid.0);
        self
    }

    /// The program starts with SIGINT, SIGQUIT and SIGHUP at their default actions, whatever
    /// this process ignores ([`super::signal::with_default_interrupts`]).
    pub fn default_interrupts(&mut self) -> &mut Program {
        super::signal::with_default_interrupts(&mut self.command);
        self
    }

    /// Starts it. Consumes the program, so the copies of the descriptors handed to the child
    /// are closed here on return: a pipe's end of file then means the child is done with it.
    pub fn spawn(mut self) -> io::Result<Child> {
        self.command.spawn()
    }

    /// Starts it and waits for it to end.
    pub fn status(mut self) -> io::Result<ExitStatus> {
        self.command.status()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_process_with_threads_is_refused_a_fork() {
        // The test runs in a thread of the harness; one more makes the count certain.
        let (stop, parked) = std::sync::mpsc::channel::<()>();
        let other = std::thread::spawn(move || parked.recv());
        // Were the count unknown, the fork would go ahead and two harnesses would run on.
        assert!(
            thread_count().is_some_and(|n| n > 1),
            "/proc/self/status unreadable"
        );
        let refused = fork_single_threaded().expect_err("forked with threads running");
        assert!(refused.to_string().contains("threads"), "{refused}");
        drop(stop);
        let _ = other.join();
    }
}
