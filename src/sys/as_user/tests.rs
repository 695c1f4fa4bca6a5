//! Tests of `as_user` with real processes and the real `nobody` (they need root, as the job child
//! is): the ids a started program has, the descriptors it gets, its directory, how a failed
//! exec comes back, and a group signal sent as the user.

use std::io::Read;
use std::os::fd::AsRawFd;

use super::*;
use crate::sys::process::{self, GroupSignal};

fn nobody() -> (User, Credentials) {
    assert_eq!(effective_uid().0, 0, "this test needs root");
    let user = User::resolve_name(b"nobody").unwrap().expect("user nobody");
    let creds = Credentials::of(&user)
        .unwrap()
        .expect("root gets credentials");
    (user, creds)
}

/// Runs `sh -c script` as `creds` in `dir`; its merged output and exit code.
fn run(script: &str, creds: Option<&Credentials>, dir: &[u8]) -> (String, Option<io::Error>, i32) {
    let (r, w) = crate::sys::pipe::pipe().unwrap();
    let env = [(b"PATH".to_vec(), b"/usr/bin:/bin".to_vec())];
    let launch = Launch::new(b"/bin/sh", &[b"-c", script.as_bytes()], &env)
        .unwrap()
        .dir(dir);
    let fds = StdFds {
        stdin: None,
        stdout: Some(w),
        stderr: None,
    };
    let spawned = spawn(&launch, fds, creds).expect("spawn");
    let mut out = String::new();
    std::fs::File::from(r).read_to_string(&mut out).unwrap();
    let status = process::wait_status(spawned.pid, true).unwrap().unwrap();
    (out, spawned.dir_error, status.code().unwrap_or(-1))
}

fn field<'a>(status: &'a str, name: &str) -> Vec<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .unwrap_or_else(|| panic!("no {name} in {status}"))
        .split_whitespace()
        .collect()
}

#[test]
fn the_program_has_all_the_users_ids_and_groups_and_only_its_three_descriptors() {
    let (user, creds) = nobody();
    // A descriptor without close-on-exec, as a PAM module may leave one: it must not reach
    // the program.
    let leaked = std::fs::File::open("/dev/null").unwrap();
    // SAFETY: dup2 onto a number nothing in this test binary uses; closed below.
    let high = unsafe { libc::dup2(leaked.as_raw_fd(), 900) };
    assert_eq!(high, 900);
    let (out, dir_error, code) = run(
        "cat /proc/self/status; echo fds $(ls /proc/self/fd | sort -n | tr '\\n' ' ')",
        Some(&creds),
        b"/",
    );
    // SAFETY: the number made by dup2 above.
    unsafe { libc::close(900) };
    assert_eq!(code, 0, "{out}");
    assert!(dir_error.is_none());
    let uid = user.uid.0.to_string();
    let gid = user.gid.0.to_string();
    assert_eq!(field(&out, "Uid:"), [&uid[..]; 4], "{out}");
    assert_eq!(field(&out, "Gid:"), [&gid[..]; 4], "{out}");
    let mut groups: Vec<String> = creds.groups.iter().map(u32::to_string).collect();
    groups.sort();
    groups.dedup();
    let mut seen: Vec<String> = field(&out, "Groups:")
        .iter()
        .map(|g| g.to_string())
        .collect();
    seen.sort();
    assert_eq!(seen, groups, "{out}");
    assert!(!seen.contains(&"0".to_string()), "root's group kept: {out}");
    assert_eq!(field(&out, "CapEff:"), ["0000000000000000"], "{out}");
    assert_eq!(field(&out, "CapPrm:"), ["0000000000000000"], "{out}");
    // 0, 1, 2 and the one `ls` opens to read the directory.
    assert_eq!(field(&out, "fds"), ["0", "1", "2", "3"], "{out}");
}

#[test]
fn several_groups_given_in_any_order_are_exactly_the_programs_and_root_s_is_not_among_them() {
    let (user, _) = nobody();
    // Groups need no name to be set. Out of order and one twice, as a group file can list
    // them; on a 32-bit target the old 16-bit setgroups read these as [1003, 0, 27, 0]: root's.
    let creds = Credentials::new(user.uid.0, user.gid.0, vec![1003, 27, 70_000, 27]).unwrap();
    assert_eq!(creds.groups(), [27, 1003, 70_000]);
    let (out, _, code) = run("cat /proc/self/status", Some(&creds), b"/");
    assert_eq!(code, 0, "{out}");
    assert_eq!(field(&out, "Groups:"), ["27", "1003", "70000"], "{out}");
    let uid = user.uid.0.to_string();
    assert_eq!(field(&out, "Uid:"), [&uid[..]; 4], "{out}");
}

#[test]
fn a_group_list_past_the_kernels_bound_is_refused() {
    let most: Vec<libc::gid_t> = (1..=MAX_GROUPS as u32).collect();
    assert_eq!(Credentials::new(1, 1, most).unwrap().groups().len(), 65_536);
    let past: Vec<libc::gid_t> = (1..=MAX_GROUPS as u32 + 1).collect();
    let e = Credentials::new(1, 1, past).unwrap_err();
    assert_eq!(e.to_string(), "the user is in too many groups");
}

#[test]
fn a_start_made_to_fail_at_any_step_runs_nothing_and_says_which_step() {
    let (_, creds) = nobody();
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        dir.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let ran = dir.path().join("ran");
    let script = format!("touch {}", ran.display());
    // The same program, started as nobody, runs when nothing is made to fail.
    let launch = |fault| {
        Launch::new(b"/bin/sh", &[b"-c", script.as_bytes()], &[])
            .unwrap()
            .with_fault(fault)
    };
    let spawned = spawn(&launch(Fault::NONE), no_fds(), Some(&creds)).unwrap();
    process::wait_status(spawned.pid, true).unwrap();
    assert!(ran.exists(), "the program did not run");
    std::fs::remove_file(&ran).unwrap();
    for step in Step::OF_A_START {
        let e = spawn(&launch(Fault::at(step)), no_fds(), Some(&creds))
            .expect_err("a start made to fail");
        assert_eq!(e.step, step);
        assert_eq!(e.error.raw_os_error(), Some(FAULT_ERRNO), "{step:?}");
        assert!(!e.is_fork_failure());
        assert!(
            e.to_string().contains(step.name()) || step == Step::Exec,
            "{e}"
        );
        assert!(!ran.exists(), "the program ran although {step:?} failed");
    }
}

fn no_fds() -> StdFds {
    StdFds {
        stdin: None,
        stdout: None,
        stderr: None,
    }
}

#[test]
fn the_program_runs_in_its_directory_or_in_the_root_when_the_user_cant_enter_it() {
    let (_, creds) = nobody();
    let shut = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        shut.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    let dir = shut.path().as_os_str().as_encoded_bytes();
    // Root could enter it: the directory is entered as the user.
    let (out, dir_error, _) = run("pwd", Some(&creds), dir);
    assert_eq!(out, "/\n");
    assert_eq!(dir_error.and_then(|e| e.raw_os_error()), Some(libc::EACCES));
    let (out, dir_error, _) = run("pwd", None, dir);
    assert_eq!(out.trim_end(), shut.path().to_str().unwrap());
    assert!(dir_error.is_none());
}

#[test]
fn a_failed_exec_comes_back_with_its_errno_and_is_no_fork_failure() {
    let launch = Launch::new(b"/nonexistent/shell", &[b"-c", b"true"], &[]).unwrap();
    let fds = StdFds {
        stdin: None,
        stdout: None,
        stderr: None,
    };
    let e = spawn(&launch, fds, None).expect_err("exec of a missing file");
    assert_eq!(e.step, Step::Exec);
    assert_eq!(e.error.raw_os_error(), Some(libc::ENOENT));
    assert!(!e.is_fork_failure());
}

#[test]
fn the_environment_is_exactly_the_one_given_and_stdin_is_the_descriptor_handed_over() {
    let (r, w) = crate::sys::pipe::pipe().unwrap();
    let (in_r, in_w) = crate::sys::pipe::pipe().unwrap();
    let env = [
        (b"ONLY".to_vec(), b"this one".to_vec()),
        (b"BAD=NAME".to_vec(), b"left out".to_vec()),
    ];
    let launch = Launch::new(
        b"/bin/sh",
        &[b"-c", b"read line; echo \"$line\"; env"],
        &env,
    )
    .unwrap();
    let fds = StdFds {
        stdin: Some(in_r),
        stdout: Some(w),
        stderr: None,
    };
    let spawned = spawn(&launch, fds, None).unwrap();
    std::io::Write::write_all(&mut std::fs::File::from(in_w), b"from the pipe\n").unwrap();
    let mut out = String::new();
    std::fs::File::from(r).read_to_string(&mut out).unwrap();
    process::wait_status(spawned.pid, true).unwrap();
    let mut lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.remove(0), "from the pipe");
    // sh adds PWD (and some shells SHLVL, `_`); nothing of the test's environment.
    lines.retain(|l| !l.starts_with("PWD=") && !l.starts_with("SHLVL=") && !l.starts_with("_="));
    assert_eq!(lines, ["ONLY=this one"]);
}

#[test]
fn a_group_signal_sent_as_the_user_reaches_only_what_the_user_may_signal() {
    let (_, creds) = nobody();
    // A group of root's: nobody may not signal it.
    let launch = Launch::new(b"/bin/sleep", &[b"30"], &[])
        .unwrap()
        .own_group();
    let fds = StdFds {
        stdin: None,
        stdout: None,
        stderr: None,
    };
    let spawned = spawn(&launch, fds, None).unwrap();
    let refused = signal_group(Some(&creds), spawned.pid, GroupSignal::Kill);
    assert_eq!(
        refused.map_err(|e| e.raw_os_error()),
        Err(Some(libc::EPERM))
    );
    assert_eq!(
        process::wait_status(spawned.pid, false).unwrap(),
        None,
        "still running"
    );
    // The same group, of nobody's: signalled.
    let (r, w) = crate::sys::pipe::pipe().unwrap();
    let launch = Launch::new(b"/bin/sh", &[b"-c", b"echo up; exec sleep 30"], &[])
        .unwrap()
        .own_group();
    let fds = StdFds {
        stdin: None,
        stdout: Some(w),
        stderr: None,
    };
    let theirs = spawn(&launch, fds, Some(&creds)).unwrap();
    let mut up = [0u8; 3];
    std::fs::File::from(r).read_exact(&mut up).unwrap();
    assert!(signal_group(Some(&creds), theirs.pid, GroupSignal::Kill).unwrap());
    let status = process::wait_status(theirs.pid, true).unwrap().unwrap();
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(libc::SIGKILL)
    );
    process::kill_group(spawned.pid).unwrap();
    process::wait_status(spawned.pid, true).unwrap();
}
