//! The processes of a job's session, for the daemon's graceful stop (`daemon::stop`): a job child
//! calls `setsid`, so every process the job starts is in the session whose id is the job child's
//! pid, whatever process group it leads (a `CRON_TIMEOUT` shell leads its own) — unless it
//! left with a `setsid` of its own. [`signal_jobs`] finds them in /proc and signals each one
//! through a pidfd, checked again once the pidfd pins the process, so a pid reused between the
//! look and the signal is never hit. The processes running the daemon's own executable (the
//! job child itself, its PAM-session child, the stdin writer) are left alone: they report the
//! job's end and exit when the job has. That /proc must be this PID namespace's ([`proc_view`]);
//! where it is another's, the daemon signals each job child's process group instead
//! (`daemon::stop`).

use std::collections::HashSet;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;

use super::process::{GroupSignal, exit_watch};
use crate::types::Pid;

/// The process group and the session of a process, from its `/proc/PID/stat` line (the fields
/// after the command name, which is in parentheses and may hold anything, `)` too).
pub fn group_and_session(stat: &str) -> Option<(i32, i32)> {
    let after = &stat[stat.rfind(')')? + 1..];
    let mut fields = after.split_ascii_whitespace();
    // state, ppid, pgrp, session
    let pgrp = fields.nth(2)?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some((pgrp, session))
}

/// Whose processes /proc shows.
#[derive(Debug)]
pub enum ProcView {
    /// This process's PID namespace's: /proc/self is this process's pid.
    Own,
    /// Another PID namespace's (an ancestor's, as under `unshare --pid --fork` without
    /// `--mount-proc`): /proc/self names this process by `shown`, its pid there. The pids,
    /// groups and sessions read there are not the ones this process signals.
    Foreign { shown: String },
    /// /proc/self can't be read: no /proc, or one where this process has no pid.
    Unreadable(io::Error),
}

/// Whose processes /proc shows: [`signal_jobs`] finds the jobs' processes there only in
/// [`ProcView::Own`].
pub fn proc_view() -> ProcView {
    match std::fs::read_link("/proc/self") {
        Ok(shown) if shown.as_os_str() == std::process::id().to_string().as_str() => ProcView::Own,
        Ok(shown) => ProcView::Foreign {
            shown: shown.to_string_lossy().into_owned(),
        },
        Err(e) => ProcView::Unreadable(e),
    }
}

fn session_of(pid: i32) -> Option<i32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    group_and_session(&stat).map(|(_, session)| session)
}

/// The executable of a process, as (device, inode): the same after the file was replaced or
/// deleted, unlike its path. `None` when it can't be read (a process of another user, for a
/// daemon that is not root, or a kernel thread).
fn executable(pid: &str) -> Option<(u64, u64)> {
    let meta = std::fs::metadata(format!("/proc/{pid}/exe")).ok()?;
    Some((meta.dev(), meta.ino()))
}

/// Sends `signal` to every process of the sessions `sids` (job children's pids) that is not a
/// session's leader and does not run this daemon's executable, in one look at /proc. Returns
/// how many were signalled. `Err` only when /proc can't be listed.
pub fn signal_jobs(sids: &[Pid], signal: GroupSignal) -> io::Result<usize> {
    let sids: HashSet<i32> = sids.iter().map(|p| p.0).collect();
    let own = executable("self");
    let mut sent = 0;
    for entry in std::fs::read_dir("/proc")? {
        let Ok(entry) = entry else { continue };
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(|n| n.parse::<i32>().ok()) else {
            continue;
        };
        let Some(sid) = session_of(pid).filter(|sid| sids.contains(sid) && *sid != pid) else {
            continue;
        };
        if own.is_some() && executable(&pid.to_string()) == own {
            continue;
        }
        if send(pid, sid, signal) {
            sent += 1;
        }
    }
    Ok(sent)
}

/// Signals `pid` if it is still in the session `sid` once a pidfd holds it; without pidfd
/// (Linux < 5.3), with `kill`.
fn send(pid: i32, sid: i32, signal: GroupSignal) -> bool {
    let number = match signal {
        GroupSignal::Term => libc::SIGTERM,
        GroupSignal::Kill => libc::SIGKILL,
    };
    let Ok(fd) = exit_watch(pid as u32) else {
        return session_of(pid) == Some(sid)
            && nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid),
                nix::sys::signal::Signal::try_from(number).ok(),
            )
            .is_ok();
    };
    // The pidfd names this process until it is reaped, whatever the pid becomes: checked now,
    // the signal reaches the process that was checked.
    session_of(pid) == Some(sid) && pidfd_send_signal(&fd, number).is_ok()
}

fn pidfd_send_signal(fd: &OwnedFd, signal: i32) -> io::Result<()> {
    // SAFETY: pidfd_send_signal takes a descriptor we own (open for the call's duration), a
    // signal number, a NULL siginfo (the kernel fills in a plain kill's) and flags 0; no memory
    // of ours is written.
    let r = unsafe {
        libc::syscall(
            libc::SYS_pidfd_send_signal,
            fd.as_raw_fd(),
            signal,
            std::ptr::null::<libc::siginfo_t>(),
            0,
        )
    };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proc_here_shows_this_process_by_its_own_pid() {
        assert!(matches!(proc_view(), ProcView::Own), "{:?}", proc_view());
    }

    #[test]
    fn the_stat_line_gives_group_and_session_whatever_the_command_name() {
        let line = "4242 (sh) S 4240 4242 4100 0 -1 4194304 90 0 0 0";
        assert_eq!(group_and_session(line), Some((4242, 4100)));
        let odd = "77 (a) b (c)) R 1 70 60 0 -1";
        assert_eq!(group_and_session(odd), Some((70, 60)));
        assert_eq!(group_and_session("77 (broken"), None);
        assert_eq!(group_and_session("77 (x) S 1"), None);
    }

    #[test]
    fn only_the_sessions_processes_not_running_this_executable_are_signalled() {
        // A session of our own: a shell that sleeps, in a new session (setsid), with a
        // sibling of another session that must not be touched.
        let mut job = std::process::Command::new("setsid")
            .args(["-w", "sh", "-c", "sleep 30 & wait"])
            .spawn()
            .expect("setsid");
        let mut other = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        // setsid -w forks when it is a group leader; find the session by its members.
        let sid = loop {
            let found = std::fs::read_dir("/proc").unwrap().find_map(|e| {
                let pid: i32 = e.ok()?.file_name().to_str()?.parse().ok()?;
                let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
                let (_, session) = group_and_session(&stat)?;
                (stat.contains("(sleep)") && session == pid_session_leader(job.id())?)
                    .then_some(session)
            });
            if let Some(sid) = found {
                break sid;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let sent = signal_jobs(&[Pid(sid)], GroupSignal::Term).expect("signal");
        assert!(sent >= 1, "the sleep (and the shell) of the session");
        let _ = job.wait();
        assert!(
            other.try_wait().expect("try_wait").is_none(),
            "another session's process lives on"
        );
        other.kill().unwrap();
        other.wait().unwrap();
    }

    /// The session of `pid`'s processes: setsid's own (it did not fork) or its child's.
    fn pid_session_leader(pid: u32) -> Option<i32> {
        let own = session_of(pid as i32)?;
        if own == pid as i32 {
            return Some(own);
        }
        let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).ok()?;
        let child: i32 = children.split_whitespace().next()?.parse().ok()?;
        session_of(child)
    }
}
