//! `mail_output` with real `sh -c` jobs and cronie's `-m` shell commands standing in for the
//! MTA: every byte reaches the command, the body arrives unchanged, a failing or early-exiting
//! MTA is a status, and the MTA gets only the environment it is given. (Delivery through the
//! real exim4 is tested from outside, in tests/daemon/mta.rs.)

use std::io::Read;
use std::process::Stdio;

use super::*;
use crate::job::mail;
use crate::job::test_support::run_job;
use crate::log::messages::JobExit;

const FIFTY_MB: u64 = 50 * 1024 * 1024;

/// The environment the daemon builds for a job of `nobody`, then `extra`.
fn job_env(extra: &[(&str, &str)]) -> Vec<(Vec<u8>, Vec<u8>)> {
    let daemon_set = [
        ("SHELL", "/bin/sh"),
        ("HOME", "/nonexistent"),
        ("PATH", "/usr/bin:/bin"),
        ("LOGNAME", "nobody"),
        ("USER", "nobody"),
    ];
    daemon_set
        .iter()
        .chain(extra)
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect()
}

/// A job of `nobody` that ran `command` and ended with `status`.
fn nobodys_job<'a>(
    command: &'a [u8],
    env: &'a [(Vec<u8>, Vec<u8>)],
    status: std::process::ExitStatus,
) -> JobMail<'a> {
    JobMail {
        user: b"nobody",
        command,
        env,
        exit: JobExit::from_status(status),
        timed_out: None,
        not_run: None,
    }
}

/// cronie's `-m`: this shell command line instead of sendmail.
fn shell_mta(line: impl Into<std::ffi::OsString>) -> MailConfig {
    MailConfig {
        host: b"vm".to_vec(),
        charset: "US-ASCII".into(),
        command: MailCommand::Shell(line.into()),
    }
}

#[test]
fn a_mail_command_that_counts_bytes_receives_every_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job(
        &format!("yes 'crond output capture 0123456789' | head -c {FIFTY_MB}"),
        Stdio::null(),
        tmp.path(),
    );
    let env = job_env(&[]);
    let job = nobodys_job(b"yes", &env, status);
    let count_file = tmp.path().join("count");
    let script = format!("wc -c > {}", count_file.display());
    let cfg = shell_mta(script);
    let outcome = mail::mail_output(&job, &cfg, &out, &env);
    assert!(
        matches!(outcome, MailOutcome::Sent { bytes } if bytes == FIFTY_MB),
        "{outcome:?}"
    );
    let counted: u64 = std::fs::read_to_string(&count_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let header_len = match mail::plan(&job, &cfg, false, out.text_kind()) {
        mail::Plan::Send { header, .. } => header.len() as u64,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        counted,
        header_len + FIFTY_MB,
        "the command received the header and every byte of output"
    );
}

#[test]
fn a_mail_command_receives_the_body_unchanged() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job(
        "yes 'body line' | head -c 300000; printf '\\351\\n'",
        Stdio::null(),
        tmp.path(),
    );
    let env = job_env(&[]);
    let job = nobodys_job(b"yes", &env, status);
    let saved = tmp.path().join("message");
    let cfg = shell_mta(format!("cat > {}", saved.display()));
    let outcome = mail::mail_output(&job, &cfg, &out, &env);
    assert!(matches!(outcome, MailOutcome::Sent { .. }), "{outcome:?}");
    let message = std::fs::read(&saved).unwrap();
    let split = message.windows(2).position(|w| w == b"\n\n").unwrap();
    let mut body = Vec::new();
    out.reader().read_to_end(&mut body).unwrap();
    assert_eq!(&message[split + 2..], &body[..]);
    assert!(String::from_utf8_lossy(&message[..split]).contains("charset=unknown-8bit"));
}

#[test]
fn an_mta_that_fails_is_reported_with_its_wait_status() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job("echo hi", Stdio::null(), tmp.path());
    let env = job_env(&[]);
    let job = nobodys_job(b"echo hi", &env, status);
    let cfg = shell_mta("cat >/dev/null; exit 3");
    let outcome = mail::mail_output(&job, &cfg, &out, &env);
    assert!(
        matches!(
            outcome,
            MailOutcome::MtaFailed {
                bytes: 3,
                status: 0x300
            }
        ),
        "{outcome:?}"
    );
    assert_eq!(
        outcome.log_line(b"nobody").unwrap().to_string(),
        "(nobody) MAIL (mailed 3 bytes of output but got status 0x0003 from MTA)"
    );
}

#[test]
fn an_mta_that_stops_reading_early_does_not_hang_or_kill_the_sender() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job("yes | head -c 5000000", Stdio::null(), tmp.path());
    let env = job_env(&[]);
    let job = nobodys_job(b"yes", &env, status);
    let cfg = shell_mta("head -c 10 >/dev/null; exit 75");
    let outcome = mail::mail_output(&job, &cfg, &out, &env);
    assert!(
        matches!(outcome, MailOutcome::MtaFailed { status: 0x4b00, .. }),
        "{outcome:?}"
    );
}

#[test]
fn the_mta_gets_only_the_environment_it_is_given() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job("echo hi", Stdio::null(), tmp.path());
    let env = job_env(&[("JOBVAR", "from the crontab")]);
    let job = nobodys_job(b"echo", &env, status);
    let saved = tmp.path().join("env");
    let cfg = shell_mta(format!(
        "cat >/dev/null; /usr/bin/env > {}",
        saved.display()
    ));
    // cargo sets CARGO_MANIFEST_DIR for this process: it must not reach the MTA.
    assert!(std::env::var_os("CARGO_MANIFEST_DIR").is_some());
    let outcome = mail::mail_output(&job, &cfg, &out, &env);
    assert!(matches!(outcome, MailOutcome::Sent { .. }), "{outcome:?}");
    let got = std::fs::read_to_string(&saved).unwrap();
    let mut names: Vec<&str> = got.lines().filter_map(|l| l.split('=').next()).collect();
    names.sort();
    // dash adds PWD itself; everything else is exactly the job's environment.
    names.retain(|n| *n != "PWD");
    assert_eq!(
        names,
        vec!["HOME", "JOBVAR", "LOGNAME", "PATH", "SHELL", "USER"]
    );
    assert!(got.contains("JOBVAR=from the crontab\n"));
}

#[test]
fn an_mta_that_hangs_is_killed_at_the_deadline_whether_or_not_it_reads() {
    let header = b"Subject: x\n\n";
    for line in [
        // Never reads: the pipe fills and the writes would block for ever.
        "sleep 30",
        // Reads everything, then never exits.
        "cat > /dev/null; sleep 30",
    ] {
        let body = vec![b'z'; 1 << 20];
        let outcome = deliver(
            &MailCommand::Shell(line.into()),
            &[],
            header,
            &body[..],
            &job_env(&[]),
            std::time::Duration::from_millis(300),
        );
        assert!(
            matches!(outcome, MailOutcome::MtaTimedOut { .. }),
            "{line}: {outcome:?}"
        );
    }
    // What it started dies with it: its whole process group is killed.
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("pid");
    let line = format!(
        "cat > /dev/null; sleep 30 & echo $! > {}.part; mv {0}.part {0}; wait",
        pid_file.display()
    );
    let outcome = deliver(
        &MailCommand::Shell(line.into()),
        &[],
        header,
        &b"x"[..],
        &job_env(&[]),
        std::time::Duration::from_millis(500),
    );
    assert!(
        matches!(outcome, MailOutcome::MtaTimedOut { .. }),
        "{outcome:?}"
    );
    let sleeper = std::fs::read_to_string(&pid_file).expect("the MTA started its sleep");
    let stat = format!("/proc/{}/stat", sleeper.trim());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    // Gone, or a zombie its new parent has not reaped yet: either way no longer running.
    while std::fs::read_to_string(&stat).is_ok_and(|s| !s.contains(") Z ")) {
        assert!(
            std::time::Instant::now() < deadline,
            "the MTA's child outlived the timeout"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // One that finishes in time is not touched.
    let outcome = deliver(
        &MailCommand::Shell("cat > /dev/null".into()),
        &[],
        header,
        &b"short"[..],
        &job_env(&[]),
        std::time::Duration::from_secs(30),
    );
    assert!(
        matches!(outcome, MailOutcome::Sent { bytes: 5 }),
        "{outcome:?}"
    );
}
