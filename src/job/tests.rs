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
