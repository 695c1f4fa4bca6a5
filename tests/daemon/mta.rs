//! Mail through the real MTA: exim4's /usr/sbin/sendmail delivers to /var/mail/USER, and the
//! tests read the message back — headers, body, 8-bit and UTF-8 output, a megabyte, the exit
//! status in the subject, MAILTO="" and an unsafe MAILTO sending nothing, MAILTO with two users.
//! Each test has its own users (created with useradd, removed after), so their mailboxes are
//! never shared and the tests can run in parallel.

use std::process::Stdio;

use crate::support::mail::*;
use crond::job::mail::{self, JobMail, MailCommand, MailConfig, MailOutcome};
use crond::job::output::Output;
use crond::log::messages::JobExit;

fn config() -> MailConfig {
    MailConfig {
        host: mail::subject_host(b"vm.example.org", false),
        charset: "US-ASCII".to_string(),
        command: MailCommand::Sendmail(require_exim()),
    }
}

fn send(
    user: &TestUser,
    env: &[(Vec<u8>, Vec<u8>)],
    command: &str,
    output: &Output,
    exit: JobExit,
) -> MailOutcome {
    let job = JobMail {
        user: user.name.as_bytes(),
        command: command.as_bytes(),
        env,
        exit,
        timed_out: None,
        not_run: None,
    };
    mail::mail_output(&job, &config(), output, env)
}

#[test]
fn root_a_job_mail_arrives_with_every_header_and_the_body() {
    require_root();
    let u = mail_user();
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job(
        "echo to stdout; echo to stderr >&2; echo again",
        Stdio::null(),
        tmp.path(),
    );
    let env = job_env(&u.name, &[("GREETING", "hello world")]);
    let outcome = send(
        &u,
        &env,
        "echo to stdout",
        &out,
        JobExit::from_status(status),
    );
    assert!(
        matches!(outcome, MailOutcome::Sent { bytes: 26 }),
        "{outcome:?}"
    );

    let msgs = u.wait_for_mail(1);
    assert_eq!(msgs.len(), 1);
    let m = &msgs[0];
    assert_eq!(m.body, b"to stdout\nto stderr\nagain\n");
    // exim qualifies bare local names in From:/To: (root → root@HOST); crond wrote them bare.
    assert_eq!(unqualified(&m.header_str("From")), "root (Cron Daemon)");
    assert_eq!(unqualified(&m.header_str("To")), u.name);
    assert_eq!(
        m.header_str("Subject"),
        format!("Cron <{}@vm> echo to stdout", u.name)
    );
    assert_eq!(m.header_str("MIME-Version"), "1.0");
    assert_eq!(m.header_str("Content-Type"), "text/plain; charset=US-ASCII");
    assert_eq!(m.header_str("Content-Transfer-Encoding"), "8bit");
    assert_eq!(m.header_str("Auto-Submitted"), "auto-generated");
    assert_eq!(m.header_str("Precedence"), "bulk");
    let envs = m.all("X-Cron-Env");
    assert_eq!(
        envs,
        vec![
            "<SHELL=/bin/sh>".to_string(),
            "<HOME=/nonexistent>".to_string(),
            "<PATH=/usr/bin:/bin>".to_string(),
            format!("<LOGNAME={}>", u.name),
            format!("<USER={}>", u.name),
            "<GREETING=hello world>".to_string(),
        ]
    );
}

#[test]
fn root_utf8_output_arrives_unchanged_and_declared_utf8_under_a_c_locale() {
    require_root();
    let u = mail_user();
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job("printf 'Grüße, 東京\\n'", Stdio::null(), tmp.path());
    let env = job_env(&u.name, &[]);
    let outcome = send(&u, &env, "printf", &out, JobExit::from_status(status));
    assert!(matches!(outcome, MailOutcome::Sent { .. }), "{outcome:?}");
    let m = &u.wait_for_mail(1)[0];
    assert_eq!(m.body, "Grüße, 東京\n".as_bytes());
    assert_eq!(m.header_str("Content-Type"), "text/plain; charset=UTF-8");
}

#[test]
fn root_8bit_output_that_is_not_utf8_arrives_byte_for_byte() {
    require_root();
    let u = mail_user();
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job(
        "printf 'caf\\351 \\377\\200 end\\n'",
        Stdio::null(),
        tmp.path(),
    );
    let env = job_env(&u.name, &[]);
    let outcome = send(&u, &env, "printf", &out, JobExit::from_status(status));
    assert!(matches!(outcome, MailOutcome::Sent { .. }), "{outcome:?}");
    let m = &u.wait_for_mail(1)[0];
    assert_eq!(m.body, b"caf\xe9 \xff\x80 end\n");
    assert_eq!(
        m.header_str("Content-Type"),
        "text/plain; charset=unknown-8bit"
    );
}

#[test]
fn root_a_megabyte_of_output_arrives_whole() {
    require_root();
    let u = mail_user();
    let tmp = tempfile::tempdir().unwrap();
    // 1 MiB of numbered lines: every line differs, so a lost or repeated block shows.
    let (out, status) = run_job(
        "i=0; while [ $i -lt 80000 ]; do echo \"line $i of the big job\"; i=$((i+1)); done | head -c 1048576",
        Stdio::null(),
        tmp.path(),
    );
    assert!(status.success());
    assert_eq!(out.len(), 1_048_576);
    assert!(out.spilled());
    let mut expected = Vec::new();
    std::io::Read::read_to_end(&mut out.reader(), &mut expected).unwrap();
    let env = job_env(&u.name, &[]);
    let outcome = send(&u, &env, "big", &out, JobExit::from_status(status));
    assert!(
        matches!(outcome, MailOutcome::Sent { bytes: 1_048_576 }),
        "{outcome:?}"
    );
    let m = &u.wait_for_mail(1)[0];
    // The output ends mid-line; the MTA completes the last line with a newline.
    let body = m.body.strip_suffix(b"\n").unwrap_or(&m.body);
    assert_eq!(body.len(), expected.len());
    assert_eq!(checksum(body), checksum(&expected));
}

#[test]
fn root_a_failed_job_carries_its_exit_status_in_the_subject() {
    require_root();
    let u = mail_user();
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job("echo oops; exit 3", Stdio::null(), tmp.path());
    let env = job_env(&u.name, &[]);
    send(
        &u,
        &env,
        "echo oops; exit 3",
        &out,
        JobExit::from_status(status),
    );
    let m = &u.wait_for_mail(1)[0];
    assert_eq!(
        m.header_str("Subject"),
        format!("Cron <{}@vm> echo oops; exit 3 (exit status 3)", u.name)
    );
}

#[test]
fn root_a_non_ascii_command_gives_an_encoded_subject() {
    require_root();
    let u = mail_user();
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job("echo x", Stdio::null(), tmp.path());
    let env = job_env(&u.name, &[]);
    send(&u, &env, "echo Grüße", &out, JobExit::from_status(status));
    let m = &u.wait_for_mail(1)[0];
    let subject = m.header_str("Subject");
    assert!(subject.starts_with("=?UTF-8?B?"), "{subject}");
    assert!(subject.is_ascii());
}

#[test]
fn root_an_empty_mailto_sends_nothing() {
    require_root();
    let u = mail_user();
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job("echo output nobody wants", Stdio::null(), tmp.path());
    let env = job_env(&u.name, &[("MAILTO", "")]);
    let outcome = send(&u, &env, "echo", &out, JobExit::from_status(status));
    assert!(matches!(outcome, MailOutcome::Disabled), "{outcome:?}");
    u.assert_no_mail();
}

#[test]
fn root_empty_output_sends_nothing() {
    require_root();
    let u = mail_user();
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job("true", Stdio::null(), tmp.path());
    let env = job_env(&u.name, &[]);
    let outcome = send(&u, &env, "true", &out, JobExit::from_status(status));
    assert!(matches!(outcome, MailOutcome::Empty), "{outcome:?}");
    u.assert_no_mail();
}

#[test]
fn root_mailto_with_two_users_reaches_both() {
    require_root();
    let owner = mail_user();
    let a = mail_user();
    let b = mail_user();
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job("echo for two", Stdio::null(), tmp.path());
    let mailto = format!("{},{}", a.name, b.name);
    let env = job_env(&owner.name, &[("MAILTO", &mailto)]);
    let outcome = send(
        &owner,
        &env,
        "echo for two",
        &out,
        JobExit::from_status(status),
    );
    assert!(matches!(outcome, MailOutcome::Sent { .. }), "{outcome:?}");
    for u in [&a, &b] {
        let m = &u.wait_for_mail(1)[0];
        assert_eq!(m.body, b"for two\n");
        assert_eq!(unqualified(&m.header_str("To")), mailto);
    }
    owner.assert_no_mail();
}

#[test]
fn root_an_unsafe_mailto_is_refused_and_nothing_is_sent() {
    require_root();
    let owner = mail_user();
    let a = mail_user();
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job("echo secret", Stdio::null(), tmp.path());
    // An address that would be a sendmail option if it reached the command line.
    let mailto = format!("{},-oi", a.name);
    let env = job_env(&owner.name, &[("MAILTO", &mailto)]);
    let outcome = send(
        &owner,
        &env,
        "echo secret",
        &out,
        JobExit::from_status(status),
    );
    match &outcome {
        MailOutcome::UnsafeAddress { value } => assert_eq!(value, mailto.as_bytes()),
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(
        outcome.log_line(owner.name.as_bytes()).unwrap().to_string(),
        format!("({}) UNSAFE MAIL ({mailto})", owner.name)
    );
    a.assert_no_mail();
    owner.assert_no_mail();
}

#[test]
fn root_a_missing_sendmail_is_reported_as_no_mta() {
    require_root();
    let u = mail_user();
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job("echo lost?", Stdio::null(), tmp.path());
    let env = job_env(&u.name, &[]);
    let job = JobMail {
        user: u.name.as_bytes(),
        command: b"echo",
        env: &env,
        exit: JobExit::from_status(status),
        timed_out: None,
        not_run: None,
    };
    let cfg = MailConfig {
        command: MailCommand::Sendmail(tmp.path().join("no-sendmail")),
        ..config()
    };
    let outcome = mail::mail_output(&job, &cfg, &out, &env);
    assert!(matches!(outcome, MailOutcome::NoMta), "{outcome:?}");
    assert_eq!(
        outcome.log_line(b"x").unwrap().to_string(),
        "(CRON) info (No MTA installed, discarding output)"
    );
    // The caller logs the output instead: the lines are there to log.
    let lines: Vec<Vec<u8>> = out.cmdout_lines().map(Result::unwrap).collect();
    assert_eq!(lines, vec![b"lost?".to_vec()]);
}
