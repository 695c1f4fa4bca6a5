//! Tests of the job as its child runs it (`run_job`), with real processes as the real `nobody`
//! (they need root, as the job child is): a shell whose start fails at any step leaves a
//! failed run, logged, and nothing of the job has run.

use std::path::Path;
use std::process::Command;
use std::sync::Arc;

use super::*;
use crate::database::entries::{Owner, pack_commands};
use crate::log::{Destination, Format};
use crate::sys::as_user::Step;

/// Where [`each_step_of_the_shells_start_made_to_fail`] works, given by the test that runs it.
const DIR_VARIABLE: &str = "CROND_TEST_FAILED_STARTS_DIR";

/// nobody's job `touch DIR/ran`, logged to stderr as a job child logs (`-s`: no mail).
fn nobodys_touch(dir: &Path) -> (JobSpec, ChildSetup, Identity) {
    let command = format!("touch {}", dir.join("ran").display());
    let (commands, spans) = pack_commands([(1, &b"* * * * *"[..], command.as_bytes())].into_iter());
    let owner = Arc::new(Owner {
        user: b"nobody".to_vec(),
        uid: None,
        tab: "/etc/cron.d/faults".into(),
        commands,
        quiet: false,
        env: Arc::new(crate::crontab::Env::default()),
    });
    let spec = JobSpec {
        owner,
        command: spans[0],
    };
    let setup = ChildSetup {
        log: Log::open(Destination::Stderr, Format::Text).for_job_child(),
        log_mask: JobLogMask::default(),
        inherited_path: None,
        kept_env: Vec::new(),
        run_as: None,
        report: None,
        outcomes: None,
        history: None,
        recorder: None,
        run_id: None,
        notify: crate::crontab::policy::Notify::Always,
        previous_failed: false,
        retry: None,
        retried: false,
        started_ms: 0,
        notifier: None,
        notice: None,
        output: OutputTo::Syslog,
        max_output: None,
        spill_dir: dir.to_path_buf(),
        pam: None,
    };
    let user = User::resolve_name(b"nobody").unwrap().expect("user nobody");
    (spec, setup, Identity::of(user))
}

/// Run by the test below in a process of its own, whose log (stderr) that test reads: the job
/// once as it is, then once with each step of its shell's start made to fail. Without the
/// directory it is given it does nothing (`cargo test -- --ignored`).
#[test]
#[ignore = "run by a_shell_whose_start_fails_at_any_step_is_a_logged_failed_run_and_runs_nothing"]
fn each_step_of_the_shells_start_made_to_fail() {
    let Some(dir) = std::env::var_os(DIR_VARIABLE) else {
        return;
    };
    let dir = Path::new(&dir);
    let ran = dir.join("ran");
    let (spec, setup, identity) = nobodys_touch(dir);
    assert_eq!(run_job(&spec, &setup, &identity, Vec::new(), false), 0);
    assert!(ran.exists(), "the job did not run when nothing failed");
    std::fs::remove_file(&ran).unwrap();
    for step in Step::OF_A_START {
        let fault = Fault::at(step);
        let status = run_job_with(&spec, &setup, &identity, Vec::new(), false, fault);
        // 1: a failed run to the daemon (crond_failures_total), not one to start again.
        assert_eq!(status, 1, "{step:?}");
        assert!(!ran.exists(), "the job ran although {step:?} failed");
    }
}

#[test]
fn a_shell_whose_start_fails_at_any_step_is_a_logged_failed_run_and_runs_nothing() {
    assert_eq!(
        crate::sys::user::effective_uid().0,
        0,
        "this test needs root"
    );
    let dir = tempfile::tempdir().unwrap();
    // nobody creates its file here.
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "job::tests::each_step_of_the_shells_start_made_to_fail",
        ])
        .args(["--ignored", "--nocapture", "--test-threads=1"])
        .env(DIR_VARIABLE, dir.path())
        .output()
        .expect("run the test binary");
    let log = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{log}");
    assert!(stdout.contains("1 passed"), "{stdout}");
    let failures: Vec<&str> = log.lines().filter(|l| l.contains("can't run")).collect();
    let eperm = io::Error::from_raw_os_error(libc::EPERM);
    for (step, line) in Step::OF_A_START.iter().zip(&failures) {
        let why = match step {
            Step::Exec => eperm.to_string(),
            Step::GroupsCheck | Step::Check | Step::RootKept => step.name().to_string(),
            _ => format!("{} failed: {eperm}", step.name()),
        };
        let said = format!("(nobody) ERROR (can't run /bin/sh: {why})");
        assert!(line.ends_with(&said), "{step:?}: {line}\n{log}");
        assert!(line.contains(" CRON["), "{line}");
    }
    assert_eq!(failures.len(), Step::OF_A_START.len(), "{log}");
    // CMD for the run that started, and for none of the others.
    assert_eq!(log.matches("(nobody) CMD (touch ").count(), 1, "{log}");
    assert!(!dir.path().join("ran").exists());
}

/// `spec`'s command under the crontab variables `vars` (`NAME=value` lines).
fn under(spec: &JobSpec, vars: &str) -> JobSpec {
    let mut zones = |n: &str| crate::schedule::Zone::get(n);
    let tab = crate::crontab::parse(
        vars.as_bytes(),
        &mut crate::crontab::ParseOptions {
            format: crate::crontab::Format::System,
            limits: crate::crontab::Limits::USER,
            seed: 0,
            file: "/etc/cron.d/faults",
            zones: &mut zones,
            privileged: true,
        },
    );
    assert!(!tab.has_errors(), "{:?}", tab.errors);
    let owner = Owner {
        user: spec.owner.user.clone(),
        uid: spec.owner.uid,
        tab: spec.owner.tab.clone(),
        commands: spec.owner.commands.clone(),
        quiet: spec.owner.quiet,
        env: tab.env,
    };
    JobSpec {
        owner: Arc::new(owner),
        command: spec.command,
    }
}

#[test]
fn a_slot_that_did_not_run_is_mailed_only_under_failure_and_change_and_only_with_mail_on() {
    let dir = tempfile::tempdir().unwrap();
    let (spec, setup, _) = nobodys_touch(dir.path());
    let mail = MailSetup {
        command: MailCommand::Sendmail(crate::paths::SENDMAIL.into()),
        full_host: false,
        charset: "US-ASCII".into(),
    };
    let setup = ChildSetup {
        notifier: Some(notify::Notifier {
            program: "/usr/sbin/cronctl".into(),
        }),
        output: OutputTo::Mail(mail.clone()),
        ..setup
    };
    let facts = RunFacts {
        id: "0123456789ab".into(),
        trigger: history::Trigger::Schedule,
        slot: Some(1_796_000_000),
        cluster: None,
        previous_failed: false,
        retry: None,
        started_ms: 0,
    };
    let not_run = |reason: Reason| history::Outcome {
        result: history::Result::NotRun {
            reason,
            words: "why".into(),
        },
        ..record::blank(&spec, &facts, "vm")
    };
    let sends = |spec: &JobSpec, setup: &ChildSetup, reason: Reason| {
        let s = not_run_sends(spec, setup, &not_run(reason), false);
        (s.requests, s.mail)
    };
    let pinged = "CRON_PING=http://127.0.0.1:9/p\n";
    for (vars, overlap, paused) in [
        // `always`, the default: requests for a slot that did not run, no mail (no output).
        ("", (false, false), (false, false)),
        (pinged, (true, false), (false, false)),
        // `failure` and `change`: mail too; a pause tells nobody.
        ("CRON_NOTIFY=failure\n", (false, true), (false, false)),
        ("CRON_NOTIFY=change\n", (false, true), (false, false)),
        (
            &format!("{pinged}CRON_NOTIFY=failure\n"),
            (true, true),
            (false, false),
        ),
        // An empty MAILTO asks for no mail; `never` for nothing.
        (
            "CRON_NOTIFY=failure\nMAILTO=\"\"\n",
            (false, false),
            (false, false),
        ),
        (
            &format!("{pinged}CRON_NOTIFY=never\n"),
            (false, false),
            (false, false),
        ),
    ] {
        let spec = under(&spec, vars);
        assert_eq!(sends(&spec, &setup, Reason::Overlap), overlap, "{vars:?}");
        assert_eq!(sends(&spec, &setup, Reason::Paused), paused, "{vars:?}");
    }
    // `crond --notify failure` is the default a file's CRON_NOTIFY overrides.
    let failing = ChildSetup {
        notify: crate::crontab::policy::Notify::Failure,
        ..setup.clone()
    };
    assert_eq!(sends(&spec, &failing, Reason::Missed), (false, true));
    assert_eq!(
        sends(
            &under(&spec, "CRON_NOTIFY=always\n"),
            &failing,
            Reason::Missed
        ),
        (false, false)
    );
    // No mail with `-m off` or `-s`, nor anything without a helper to send it.
    for output in [
        OutputTo::Mail(MailSetup {
            command: MailCommand::Off,
            ..mail
        }),
        OutputTo::Syslog,
    ] {
        let quiet = ChildSetup {
            output,
            ..failing.clone()
        };
        assert_eq!(sends(&spec, &quiet, Reason::Missed), (false, false));
    }
    let unsent = ChildSetup {
        notifier: None,
        ..failing
    };
    assert_eq!(
        sends(&under(&spec, pinged), &unsent, Reason::Missed),
        (false, false)
    );
}
