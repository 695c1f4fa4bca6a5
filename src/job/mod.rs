//! The job child (DESIGN §5, §6): the daemon forks one per job; the child resets signals, closes
//! the daemon's descriptors, starts a session, drops privileges to the entry's user for good,
//! builds the clean environment, changes to HOME, and runs `$SHELL -c command` through
//! `std::process::Command` (no `pre_exec`, so std takes its vfork path). The text after `%`
//! reaches the shell through a writer grandchild (`stdin_feed`); the shell's stdout and stderr
//! share one pipe, read to end-of-file into `output`. After the shell exits the child reaps the
//! writer, then mails the output (`mail`) or, with `-s`, logs it as `CMDOUT` lines, logs END
//! and CMDEND (`joblog`), and exits with `_exit`. It never returns into the daemon's code: a
//! panic aborts the child only.
//!
//! Everything the job's user could use to act as someone else is created after the privilege
//! drop: the stdin writer, the spill file, the MTA. Log lines are built by `joblog` only.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use crate::crontab::{Env, JobInput};
use crate::joblog::{self, JobExit, LogLevel, LogLine};
use crate::log::{Level, Log, text};
use crate::mail::{self, JobMail, MailCommand, MailConfig, MailOutcome};
use crate::output::Output;
use crate::stdin_feed::JobStdin;
use crate::sys::pipe;
use crate::sys::privs::irrevocably_drop_privileges;
use crate::sys::process::{self, Forked, Pid};
use crate::sys::signal;
use crate::sys::user::User;

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
    /// cronie's `RANDOM_DELAY`, already scaled by the daemon's factor: the child waits this
    /// long before it looks the user up and starts the shell.
    pub delay_seconds: u32,
}

/// What the child inherits from the daemon's configuration.
#[derive(Debug, Clone)]
pub struct ChildSetup {
    pub log: Log,
    /// Debian's `-L` bitmask.
    pub log_level: LogLevel,
    /// cronie's `-P`: the daemon's PATH instead of the default.
    pub inherited_path: Option<OsString>,
    /// Where the job's output goes.
    pub output: OutputTo,
}

/// Where a job's output goes once the shell has exited.
#[derive(Debug, Clone)]
pub enum OutputTo {
    /// cronie's `-s`: one `CMDOUT` log line per line of output.
    Syslog,
    /// Mail (DESIGN §6).
    Mail(MailSetup),
}

/// The daemon's mail options.
#[derive(Debug, Clone)]
pub struct MailSetup {
    /// `-m CMD|off`, or the sendmail path (`--sendmail`).
    pub command: MailCommand,
    /// Debian's `-n`: the full host name in the subject.
    pub full_host: bool,
    /// The daemon locale's charset (`mail::charset_from_env()` at start).
    pub charset: String,
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

/// The child's whole life; returns its exit status (0: the job ran and succeeded).
fn run_child(spec: &JobSpec, setup: &ChildSetup) -> i32 {
    signal::reset_in_child();
    // The child itself keeps SIGPIPE ignored (an MTA that exits early is a status, not our
    // death); std gives the shell and the MTA the default back.
    signal::ignore_sigpipe();
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
    if spec.delay_seconds > 0 {
        std::thread::sleep(std::time::Duration::from_secs(u64::from(
            spec.delay_seconds,
        )));
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
    let Some((shell_pid, exit, output)) = run_shell(spec, setup, &env, &input) else {
        return 1;
    };
    if let Some(line) = joblog::failed_line(setup.log_level, shell_pid, exit) {
        log.job_line(Level::Error, &line);
    }
    match &setup.output {
        OutputTo::Syslog => log_output(log, &spec.user, &output),
        OutputTo::Mail(mail_setup) => {
            let config = MailConfig {
                host: mail::subject_host(&crate::sys::hostname(), mail_setup.full_host),
                charset: mail_setup.charset.clone(),
                command: mail_setup.command.clone(),
            };
            let job = JobMail {
                user: &spec.user,
                command: &input.command,
                env: &env,
                exit,
            };
            let outcome = mail::mail_output(&job, &config, &output, &env);
            if let Some(line) = outcome.log_line(&spec.user) {
                let level = match outcome {
                    MailOutcome::NoMta => Level::Info,
                    _ => Level::Error,
                };
                log.job_line(level, &line);
            }
            // Nothing is lost when the mail could not even start: the output goes to the log.
            if matches!(outcome, MailOutcome::NoMta | MailOutcome::MtaError(_)) {
                log_output(log, &spec.user, &output);
            }
        }
    }
    let end = joblog::end_line(setup.log_level, &spec.user, shell_pid, &spec.command);
    for line in end
        .into_iter()
        .chain([joblog::cmdend_line(&spec.user, &spec.command)])
    {
        log.job_line(Level::Info, &line);
    }
    i32::from(!exit.success())
}

/// Starts the shell with its stdin (the `%` text through a writer grandchild, or /dev/null) and
/// its stdout+stderr on one pipe, logs CMD, reads the output to end-of-file, reaps the shell and
/// then the writer. `None` when the shell could not run (logged).
fn run_shell(
    spec: &JobSpec,
    setup: &ChildSetup,
    env: &[(Vec<u8>, Vec<u8>)],
    input: &JobInput,
) -> Option<(u32, JobExit, Output)> {
    let log = setup.log;
    let who = text(&spec.user);
    let spill_dir = crate::sys::tmpfile::default_dir();
    let mut stdin = match JobStdin::start(input.stdin.as_deref()) {
        Ok(stdin) => stdin,
        Err(e) => {
            log.error(&who, "ERROR", &format!("can't feed the job's input: {e}"));
            return None;
        }
    };
    let pipes = pipe::pipe().and_then(|(r, w)| Ok((r, w.try_clone()?, w)));
    let (read_end, err_end, out_end) = match pipes {
        Ok(p) => p,
        Err(e) => {
            log.error(&who, "ERROR", &format!("can't make the output pipe: {e}"));
            reap_writer(log, &who, stdin);
            return None;
        }
    };
    let shell = lookup(env, b"SHELL").unwrap_or_else(|| b"/bin/sh".to_vec());
    let mut command = Command::new(OsStr::from_bytes(&shell));
    command
        .arg("-c")
        .arg(OsStr::from_bytes(&input.command))
        .env_clear()
        .envs(
            env.iter()
                .map(|(n, v)| (OsStr::from_bytes(n), OsStr::from_bytes(v))),
        )
        .stdin(stdin.take_for_shell())
        .stdout(Stdio::from(out_end))
        .stderr(Stdio::from(err_end));
    let spawned = command.spawn();
    // The Command holds the shell's ends of both pipes: drop them, so end-of-file on the output
    // means the job is done with it, and the stdin writer never waits for us.
    drop(command);
    let mut child = match spawned {
        Ok(child) => child,
        Err(e) => {
            log.error(&who, "ERROR", &format!("can't run {}: {e}", text(&shell)));
            drop(read_end);
            reap_writer(log, &who, stdin);
            return None;
        }
    };
    let shell_pid = child.id();
    if let Some(line) = joblog::cmd_line(setup.log_level, &spec.user, shell_pid, &spec.command) {
        log.job_line(Level::Info, &line);
    }
    let captured = Output::capture(&spill_dir, File::from(read_end));
    let status = loop {
        match child.wait() {
            Ok(status) => break Some(status),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                log.error(&who, "ERROR", &format!("wait failed: {e}"));
                break None;
            }
        }
    };
    reap_writer(log, &who, stdin);
    let output = match captured {
        Ok(output) => output,
        Err(e) => {
            log.error(&who, "ERROR", &format!("can't read the job's output: {e}"));
            Output::new(&spill_dir)
        }
    };
    if let Some(e) = output.spill_error() {
        log.error(
            &who,
            "ERROR",
            &format!(
                "{} bytes of output lost: can't spool to {}: {e}",
                output.lost_bytes(),
                spill_dir.display()
            ),
        );
    }
    Some((shell_pid, JobExit::from_status(status?), output))
}

/// Reaps the stdin writer; a job that did not read its input is fine, anything else is logged.
fn reap_writer(log: Log, who: &str, stdin: JobStdin) {
    use crate::sys::pipe::WriterExit;
    match stdin.wait() {
        Ok(None | Some(WriterExit::AllWritten | WriterExit::ReaderGone)) => {}
        Ok(Some(WriterExit::Failed(errno))) => log.error(
            who,
            "ERROR",
            &format!(
                "writing the job's input failed: {}",
                io::Error::from_raw_os_error(errno)
            ),
        ),
        Ok(Some(WriterExit::Killed(signal))) => log.error(
            who,
            "ERROR",
            &format!("the job's input writer was killed by signal {signal}"),
        ),
        Err(e) => log.error(who, "ERROR", &format!("can't reap the input writer: {e}")),
    }
}

/// The output as `CMDOUT` lines (cronie's `-s`, and Debian's no-MTA case so nothing is lost).
fn log_output(log: Log, user: &[u8], output: &Output) {
    for line in output.cmdout_lines() {
        match line {
            Ok(line) => log.job_line(Level::Info, &joblog::cmdout_line(user, &line)),
            Err(e) => {
                log.job_line(
                    Level::Error,
                    &LogLine::new(user, "ERROR", format!("can't read the spooled output: {e}")),
                );
                return;
            }
        }
    }
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
    use crate::crontab::{Format, Limits, ParseOptions, parse};
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
            &mut ParseOptions {
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
