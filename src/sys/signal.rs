//! Signals into the poll loop through a self-pipe (signal-hook): the handler sets a flag and
//! writes a byte, nothing else; the loop drains the pipe, then reads the flags. No signalfd:
//! its blocked mask would leak into every job (research/crates.md Q1).

use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use signal_hook::consts::{SIGCHLD, SIGHUP, SIGINT, SIGTERM};

/// The signals the daemon acts on.
const HANDLED: [i32; 4] = [SIGHUP, SIGTERM, SIGINT, SIGCHLD];

/// What arrived since the last drain.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Arrived {
    pub hangup: bool,
    pub terminate: bool,
    pub interrupt: bool,
    pub child: bool,
}

#[derive(Debug)]
pub struct SignalPipe {
    read: UnixStream,
    /// The write end the handlers hold clones of; a job child closes them with every
    /// descriptor above stderr.
    _write: UnixStream,
    flags: [Arc<AtomicBool>; 4],
}

impl SignalPipe {
    /// Installs the handlers for SIGHUP, SIGTERM, SIGINT and SIGCHLD.
    pub fn install() -> io::Result<SignalPipe> {
        note_dispositions_not_default();
        // std creates both ends close-on-exec.
        let (read, write) = UnixStream::pair()?;
        read.set_nonblocking(true)?;
        write.set_nonblocking(true)?;
        let flags: [Arc<AtomicBool>; 4] = Default::default();
        for (sig, flag) in HANDLED.iter().zip(&flags) {
            // The documented order: the flag first, then the pipe write, so a drained pipe
            // never hides a set flag.
            signal_hook::flag::register(*sig, Arc::clone(flag))?;
            signal_hook::low_level::pipe::register(*sig, write.try_clone()?)?;
        }
        Ok(SignalPipe {
            read,
            _write: write,
            flags,
        })
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }

    /// Empties the pipe, then reports and clears the flags.
    pub fn drain(&mut self) -> Arrived {
        let mut buf = [0u8; 64];
        while matches!(self.read.read(&mut buf), Ok(n) if n > 0) {}
        let take = |i: usize| self.flags[i].swap(false, Ordering::SeqCst);
        Arrived {
            hangup: take(0),
            terminate: take(1),
            interrupt: take(2),
            child: take(3),
        }
    }
}

/// The signals whose action is not the default in this process: those found so when the
/// daemon installed its handlers (SIGPIPE, which Rust's runtime ignores; whatever the daemon's
/// parent left ignored, e.g. SIGHUP under nohup) and the handled ones. Bit n-1 is signal n;
/// every signal until the daemon has looked.
static NOT_DEFAULT: AtomicU64 = AtomicU64::new(u64::MAX);

/// Reads the action of every signal once (62 `rt_sigaction` calls), so that each job child
/// resets only the few that need it instead of all of them.
fn note_dispositions_not_default() {
    let mut bits = 0u64;
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        // SAFETY: a NULL new action only reads the current one into `old`, a local.
        let found = unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut old) == 0
                && old.sa_sigaction != libc::SIG_DFL
        };
        if found {
            bits |= 1 << (sig - 1);
        }
    }
    for sig in HANDLED {
        bits |= 1 << (sig - 1);
    }
    NOT_DEFAULT.store(bits, Ordering::Relaxed);
}

/// In a freshly forked job child: every signal back to its default action and none blocked, so
/// the job starts as a login shell would (an ignored or blocked signal survives exec). Only the
/// signals the daemon found or made not default are touched (all of them if it never looked).
pub fn reset_in_child() {
    let bits = NOT_DEFAULT.load(Ordering::Relaxed);
    for sig in 1..=64 {
        if sig == libc::SIGKILL || sig == libc::SIGSTOP {
            continue;
        }
        if bits & (1 << (sig - 1)) == 0 {
            continue;
        }
        // SAFETY: setting a disposition to SIG_DFL installs no Rust code; the child is
        // single-threaded (a copy of the single-threaded daemon). Invalid numbers just fail.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
    // SAFETY: `set` is a local sigset_t initialised by sigemptyset before use; the pointers
    // are valid for the duration of the calls.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    }
}

/// In the job child, after [`reset_in_child`]: SIGPIPE caught by a handler that does nothing,
/// so a mail command or a job that closes its end early shows up as a write error (EPIPE), not
/// as the job child's death. A handler, not SIG_IGN: exec puts a caught signal back to its
/// default, so the shell and the MTA (`as_user::spawn`) get SIGPIPE's default with no
/// `sigaction` between their clone and their exec, while an ignored signal would stay ignored in
/// them. A plain `fork` (the stdin writer) keeps the handler and sees EPIPE.
pub fn ignore_sigpipe() {
    catch_and_do_nothing(libc::SIGPIPE);
}

/// In the job child, after [`reset_in_child`]: SIGTERM caught by a handler that does nothing,
/// as SIGPIPE is (see [`ignore_sigpipe`]: the shell and the MTA still get its default). The
/// graceful stop signals a job child's whole process group where it can't tell the job's
/// processes apart (a /proc of another PID namespace, or none): the shell in it gets the
/// signal, the job child lives on to log or mail what the job printed and report its end. A
/// forked helper (the stdin writer, the PAM-session child) keeps the handler and ends with the
/// job, as it would have anyway. SIGKILL still ends them all.
pub fn survive_sigterm() {
    catch_and_do_nothing(libc::SIGTERM);
}

/// Catches `sig` with a handler that does nothing (`SA_RESTART`).
fn catch_and_do_nothing(sig: libc::c_int) {
    extern "C" fn nothing(_: libc::c_int) {}
    // SAFETY: the handler does nothing at all (no memory, no call), so it is sound whenever and
    // in whichever process sharing this memory it runs; `action` is a local, zeroed sigaction
    // with the handler and an empty mask set before the call reads it.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = nothing as extern "C" fn(libc::c_int) as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        libc::sigaction(sig, &action, std::ptr::null_mut());
    }
}

/// The terminal's signals (^C, ^\, the terminal going away), which crontab(1) ignores while a
/// user edits: the editor gets them, and crontab itself lives on to clean up.
const INTERRUPTS: [i32; 3] = [libc::SIGINT, libc::SIGQUIT, libc::SIGHUP];

/// While held, SIGINT, SIGQUIT and SIGHUP are ignored by this process; dropping it puts back
/// what was there before. Children started with [`Command`](std::process::Command) would
/// inherit the ignoring through exec: give them [`with_default_interrupts`].
#[derive(Debug)]
pub struct InterruptsIgnored {
    before: [libc::sighandler_t; 3],
}

pub fn ignore_interrupts() -> InterruptsIgnored {
    // SAFETY: SIG_IGN installs no Rust code; crontab(1) is single-threaded, so nothing races
    // the change of disposition.
    let before = INTERRUPTS.map(|sig| unsafe { libc::signal(sig, libc::SIG_IGN) });
    InterruptsIgnored { before }
}

impl Drop for InterruptsIgnored {
    fn drop(&mut self) {
        for (sig, before) in INTERRUPTS.iter().zip(self.before) {
            if before != libc::SIG_ERR {
                // SAFETY: `before` is what signal(2) returned for this signal: SIG_DFL, SIG_IGN
                // or a handler that was installed then and still is in this process.
                unsafe { libc::signal(*sig, before) };
            }
        }
    }
}

/// Makes `command`'s child start with SIGINT, SIGQUIT and SIGHUP at their default actions
/// (the editor must die of ^C even while its parent ignores it).
pub fn with_default_interrupts(command: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the child between fork and exec, where only
    // async-signal-safe calls are allowed: signal(2) with SIG_DFL is one (a sigaction), and the
    // closure neither allocates nor locks.
    unsafe {
        command.pre_exec(|| {
            for sig in INTERRUPTS {
                libc::signal(sig, libc::SIG_DFL);
            }
            Ok(())
        })
    }
}
