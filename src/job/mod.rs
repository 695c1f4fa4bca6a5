//! The job child (DESIGN §5): the daemon forks one per job; the child resets signals, closes the
//! daemon's descriptors, starts a session, drops privileges to the entry's user for good,
//! builds the clean environment, changes to HOME, runs `$SHELL -c command` through
//! `std::process::Command` (no `pre_exec`, so std takes its vfork path), waits, logs, and
//! exits with `_exit`. It never returns into the daemon's code: a panic aborts the child only.
//!
//! Seams for output and mail (issue 4): [`Output`] says where the shell's stdout and stderr go
//! (for now /dev/null) and [`feed_stdin`] is where the text after `%` reaches the shell.

use std::ffi::{OsStr, OsString};
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::crontab::{Env, JobInput};
use crate::log::{Level, Log, text};
use crate::sys::privs::irrevocably_drop_privileges;
use crate::sys::process::{self, Forked, Pid};
use crate::sys::signal;
use crate::sys::user::User;

/// Debian's `-L` bits.
pub const LOG_START: u32 = 1;
pub const LOG_END: u32 = 2;
pub const LOG_FAILED: u32 = 4;
pub const LOG_PID: u32 = 8;

/// Debian's default PATH for jobs (DESIGN §3).
pub const DEFAULT_PATH: &[u8] = b"/usr/bin:/bin";

/// One job to start.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// The user the job runs as (the crontab's owner, or the user field of a system file).
    pub user: Vec<u8>,
    /// The command as written (for the log).
    pub command: Vec<u8>,
    /// The crontab's variables above the entry.
    pub env: Arc<Env>,
}

/// What the child inherits from the daemon's configuration.
#[derive(Debug, Clone)]
pub struct ChildSetup {
    pub log: Log,
    /// Debian's `-L` bitmask.
    pub log_level: u32,
    /// cronie's `-P`: the daemon's PATH instead of the default.
    pub inherited_path: Option<OsString>,
}

/// Where the shell's standard output and error go. The next issue replaces `Discard` with a
/// capture that mails the output; the job child is the place that owns it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Discard,
}

/// Forks the job child; returns its pid in the daemon.
pub fn start(spec: &JobSpec, setup: &ChildSetup) -> io::Result<Pid> {
    match process::fork_single_threaded()? {
        Forked::Parent(pid) => Ok(pid),
        Forked::Child => {
            let code =
                std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_child(spec, setup)))
                    .unwrap_or(1);
            process::exit_immediately(code)
        }
    }
}

/// The child's whole life; returns its exit status.
fn run_child(spec: &JobSpec, setup: &ChildSetup) -> i32 {
    signal::reset_in_child();
    let log = setup.log;
    let closed = process::close_all_above_stderr();
    // The syslog socket was among them: forget it before any new descriptor takes its number.
    log.reopen();
    if let Err(e) = closed {
        log.error(
            "CRON",
            "ERROR",
            &format!("can't close the daemon's descriptors: {e}"),
        );
        return 1;
    }
    let who = text(&spec.user);
    if let Err(e) = process::setsid() {
        log.error(&who, "ERROR", &format!("setsid failed: {e}"));
    }
    let user = match User::resolve_name(&spec.user) {
        Ok(Some(user)) => user,
        Ok(None) => {
            log.error(&who, "ERROR", "getpwnam() failed - user unknown");
            return 1;
        }
        Err(e) => {
            log.error(&who, "ERROR", &format!("getpwnam() failed: {e}"));
            return 1;
        }
    };
    if let Err(e) = irrevocably_drop_privileges(&user) {
        log.error(
            &who,
            "ERROR",
            &format!("can't drop privileges, job not run: {e}"),
        );
        return 1;
    }
    let env = environment(&user, &spec.env, setup.inherited_path.as_deref());
    let home = lookup(&env, b"HOME").unwrap_or_default();
    if let Err(e) = process::chdir(Path::new(OsStr::from_bytes(&home))) {
        // Debian runs the job anyway, from /; say so, since the job's relative paths change.
        log.error(
            &who,
            "ERROR",
            &format!("chdir({}) failed: {e}; running in /", text(&home)),
        );
        if let Err(e) = process::chdir(Path::new("/")) {
            log.error(&who, "ERROR", &format!("chdir(/) failed: {e}; job not run"));
            return 1;
        }
    }
    let input: JobInput = crate::crontab::split_percent(&spec.command);
    let shell = lookup(&env, b"SHELL").unwrap_or_else(|| b"/bin/sh".to_vec());
    let mut command = Command::new(OsStr::from_bytes(&shell));
    command
        .arg("-c")
        .arg(OsStr::from_bytes(&input.command))
        .env_clear()
        .envs(
            env.iter()
                .map(|(n, v)| (OsStr::from_bytes(n), OsStr::from_bytes(v))),
        )
        .stdin(if input.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        });
    match Output::Discard {
        Output::Discard => {
            command.stdout(Stdio::null()).stderr(Stdio::null());
        }
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => {
            log.error(&who, "ERROR", &format!("can't run {}: {e}", text(&shell)));
            return 1;
        }
    };
    let cmd_text = text(&spec.command);
    if setup.log_level & LOG_START != 0 {
        if setup.log_level & LOG_PID != 0 {
            log.info(&who, "CMD", &format!("[{}] {cmd_text}", child.id()));
        } else {
            log.info(&who, "CMD", &cmd_text);
        }
    }
    let feeder = child
        .stdin
        .take()
        .zip(input.stdin)
        .map(|(pipe, text)| feed_stdin(pipe, text));
    let status = child.wait();
    if let Some(feeder) = feeder {
        let _ = feeder.join();
    }
    let status = match status {
        Ok(status) => status,
        Err(e) => {
            log.error(&who, "ERROR", &format!("wait failed: {e}"));
            return 1;
        }
    };
    if setup.log_level & LOG_END != 0 {
        if setup.log_level & LOG_PID != 0 {
            log.info(&who, "END", &format!("[{}] {cmd_text}", child.id()));
        } else {
            log.info(&who, "END", &cmd_text);
        }
    }
    if setup.log_level & LOG_FAILED != 0 && !status.success() {
        let detail = match status.code() {
            Some(code) => format!("grandchild #{} failed with exit status {code}", child.id()),
            None => format!("grandchild #{} killed by a signal", child.id()),
        };
        log.event(Level::Error, "CRON", "error", &detail);
    }
    0
}

/// Writes the `%` text to the shell's stdin from a thread of the job child (not of the
/// daemon), so a job that never reads its input cannot block the wait.
pub fn feed_stdin(
    mut pipe: std::process::ChildStdin,
    text: Vec<u8>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        // A job that exits without reading gets EPIPE here; that is its business.
        let _ = pipe.write_all(&text);
    })
}

/// The job's environment (DESIGN §3): SHELL=/bin/sh, PATH=/usr/bin:/bin (or the daemon's with
/// `-P`), HOME, LOGNAME and USER from passwd; then the crontab's variables, which may replace
/// SHELL, PATH and HOME but never LOGNAME or USER.
pub fn environment(
    user: &User,
    crontab: &Env,
    inherited_path: Option<&OsStr>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut env: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b"SHELL".to_vec(), b"/bin/sh".to_vec()),
        (
            b"PATH".to_vec(),
            inherited_path.map_or(DEFAULT_PATH.to_vec(), |p| p.as_bytes().to_vec()),
        ),
        (b"HOME".to_vec(), user.home.as_os_str().as_bytes().to_vec()),
        (b"LOGNAME".to_vec(), user.name.clone()),
        (b"USER".to_vec(), user.name.clone()),
    ];
    for (name, value) in crontab.iter() {
        if name == b"LOGNAME" || name == b"USER" {
            continue;
        }
        match env.iter_mut().find(|(n, _)| n == name) {
            Some((_, v)) => *v = value.to_vec(),
            None => env.push((name.to_vec(), value.to_vec())),
        }
    }
    env
}

fn lookup(env: &[(Vec<u8>, Vec<u8>)], name: &[u8]) -> Option<Vec<u8>> {
    env.iter().find(|(n, _)| n == name).map(|(_, v)| v.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crontab::{Format, Limits, Options, parse};
    use crate::sys::user::{Gid, Uid};

    fn alice() -> User {
        User {
            name: b"alice".to_vec(),
            uid: Uid(1000),
            gid: Gid(1000),
            home: "/home/alice".into(),
            shell: "/bin/bash".into(),
        }
    }

    fn env_of(text: &str) -> Arc<Env> {
        let mut zones = |n: &str| crate::schedule::Zone::get(n);
        let tab = parse(
            text.as_bytes(),
            &mut Options {
                format: Format::User,
                limits: Limits::USER,
                seed: 0,
                zones: &mut zones,
            },
        );
        tab.env
    }

    fn get<'a>(env: &'a [(Vec<u8>, Vec<u8>)], name: &str) -> Option<&'a str> {
        env.iter()
            .find(|(n, _)| n == name.as_bytes())
            .map(|(_, v)| std::str::from_utf8(v).expect("utf-8"))
    }

    #[test]
    fn the_clean_environment_has_the_defaults_and_the_crontab_variables() {
        let env = environment(&alice(), &env_of("FOO=bar\nPATH=/opt/bin\n"), None);
        assert_eq!(get(&env, "SHELL"), Some("/bin/sh"));
        assert_eq!(get(&env, "PATH"), Some("/opt/bin"));
        assert_eq!(get(&env, "HOME"), Some("/home/alice"));
        assert_eq!(get(&env, "LOGNAME"), Some("alice"));
        assert_eq!(get(&env, "USER"), Some("alice"));
        assert_eq!(get(&env, "FOO"), Some("bar"));
        assert_eq!(env.len(), 6);
    }

    #[test]
    fn logname_and_user_cannot_be_overridden() {
        let env = environment(&alice(), &env_of("LOGNAME=root\nUSER=root\n"), None);
        assert_eq!(get(&env, "LOGNAME"), Some("alice"));
        assert_eq!(get(&env, "USER"), Some("alice"));
    }

    #[test]
    fn minus_p_passes_the_daemons_path() {
        let env = environment(&alice(), &Env::default(), Some(OsStr::new("/a:/b")));
        assert_eq!(get(&env, "PATH"), Some("/a:/b"));
    }
}
