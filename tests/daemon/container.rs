//! Cron as a container runs it: `crond --crontab FILE` as a user with no path flag, as a uid
//! passwd doesn't know, `--keep-env`, and SIGTERM as PID 1 of a PID namespace (the job's TERM
//! trap runs and what it prints is logged; the daemon exits 0).

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::daemon::{
    Crond, FAKETIME_LIB, START, Tree, chown, require_root, uid_of_user, user_with_home,
    wait_for_file, wait_with_timeout,
};
use crate::support::golden::{Scrub, assert_golden};

/// `crond -f --log stderr ARGS` under libfaketime at [`START`] (x10), with no path flag of the
/// test tree, run through `wrapper` (e.g. `setpriv`), `env` added and `unset` removed.
fn start_plain(
    tree: &Tree,
    n: usize,
    wrapper: &[&str],
    args: &[&str],
    env: &[(&str, &str)],
    unset: &[&str],
) -> Crond {
    let mut command = Command::new(wrapper.first().copied().unwrap_or("env"));
    if !wrapper.is_empty() {
        command.args(&wrapper[1..]).arg("env");
    }
    // libfaketime starts after the wrapper has changed user (its shared memory is per user).
    command
        .arg(format!("LD_PRELOAD={FAKETIME_LIB}"))
        .arg(env!("CARGO_BIN_EXE_crond"))
        .args(["-f", "--log", "stderr"])
        .args(args)
        .env("FAKETIME", format!("@{START} x10"))
        .env("FAKETIME_DONT_RESET", "1")
        .env("TZ", "UTC")
        .envs(env.iter().copied());
    for name in unset {
        command.env_remove(name);
    }
    Crond::spawn(&mut command, tree.log_file(n))
}

/// A directory in the tree owned by `owner` (a name or a uid), mode 0700.
fn own_dir(tree: &Tree, name: &str, owner: &str) -> PathBuf {
    let dir = tree.path().join(name);
    fs::create_dir(&dir).expect("mkdir");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)).expect("chmod");
    chown(&dir, owner);
    dir
}

fn show(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

#[test]
fn a_user_runs_a_crontab_file_with_no_path_flag_and_keeps_the_named_variables() {
    require_root();
    let tree = Tree::new();
    let home = tree.path().join("home");
    fs::create_dir(&home).expect("mkdir home");
    let user = user_with_home("ctr", &home);
    chown(&home, &user.name);
    let runtime = own_dir(&tree, "runtime", &user.name);
    let out = tree.out("job");
    let good = tree.path().join("crontab");
    let text = format!(
        "TZ=from-crontab\n* * * * * echo \"$(id -un) $HOME $LOGNAME foo=$FOO bar=$BAR tz=$TZ\" > {}; echo printed\n",
        show(&out)
    );
    tree.write_file(&good, &text, 0o644);
    chown(&good, &user.name);
    // Someone else's file is refused; the good one runs.
    let theirs = tree.path().join("theirs");
    tree.write_file(&theirs, "* * * * * echo not mine\n", 0o644);
    chown(&theirs, "nobody");
    let reuid = format!("--reuid={}", user.name);
    let regid = format!("--regid={}", user.name);
    let crond = start_plain(
        &tree,
        1,
        &["setpriv", &reuid, &regid, "--init-groups"],
        &[
            "--crontab",
            show(&good),
            "--crontab",
            show(&theirs),
            "--keep-env",
            "FOO,TZ",
        ],
        &[
            ("XDG_RUNTIME_DIR", show(&runtime)),
            ("FOO", "from-the-container"),
            ("BAR", "not-kept"),
        ],
        &[],
    );
    let line = wait_for_file(&out, 30);
    assert_eq!(
        line.trim(),
        format!(
            "{0} {1} {0} foo=from-the-container bar= tz=from-crontab",
            user.name,
            home.display()
        ),
        "the daemon's user, its passwd home, FOO kept, BAR not, the crontab's TZ over the kept one"
    );
    // No MTA named: the output is logged.
    crond.wait_for_log("CMDOUT (printed)", 20);
    crond.wait_for_log(
        &format!(
            "WRONG FILE OWNER ({}: owned by uid {} (nobody), must be uid {} ({}) or root)",
            show(&theirs),
            uid_of_user("nobody"),
            uid_of_user(&user.name),
            user.name
        ),
        5,
    );
    crond.wait_for_log("jobs run without a PAM session (--crontab)", 5);
    crond.wait_for_log(
        "--keep-env: jobs get 2 of the daemon's variables: FOO TZ",
        5,
    );
    let pid_file = runtime.join("crond").join("crond.pid");
    let pid: u32 = fs::read_to_string(&pid_file)
        .expect("the pid file under $XDG_RUNTIME_DIR/crond")
        .trim()
        .parse()
        .expect("a pid");
    assert_eq!(pid, crond.pid());
    // inotify follows the file.
    tree.write_file(&good, "* * * * * echo edited\n", 0o644);
    crond.wait_for_log("RELOAD", 20);
    assert!(!crond.log_text().contains("not mine"));
}

/// A uid passwd doesn't know, from 23456 up.
fn uid_without_passwd_entry() -> u32 {
    (23456..24000)
        .find(|uid| {
            !Command::new("getent")
                .args(["passwd", &uid.to_string()])
                .output()
                .expect("getent")
                .status
                .success()
        })
        .expect("a free uid")
}

#[test]
fn a_uid_without_passwd_entry_runs_its_crontab_named_by_the_daemons_environment() {
    require_root();
    let tree = Tree::new();
    let uid = uid_without_passwd_entry().to_string();
    let runtime = own_dir(&tree, "runtime", &uid);
    let home = own_dir(&tree, "apphome", &uid);
    let crontab = tree.path().join("crontab");
    let out = tree.out("job");
    let text = format!(
        "* * * * * echo \"$(id -u) $LOGNAME $USER $HOME $(pwd)\" > {}\n",
        show(&out)
    );
    tree.write_file(&crontab, &text, 0o600);
    chown(&crontab, &uid);
    let ids = [format!("--reuid={uid}"), format!("--regid={uid}")];
    let crond = start_plain(
        &tree,
        1,
        &["setpriv", &ids[0], &ids[1], "--clear-groups"],
        &["--crontab", show(&crontab)],
        &[("XDG_RUNTIME_DIR", show(&runtime)), ("HOME", show(&home))],
        &["LOGNAME", "USER"],
    );
    let line = wait_for_file(&out, 30);
    let home = home.display();
    assert_eq!(line.trim(), format!("{uid} {uid} {uid} {home} {home}"));
    let said =
        format!("uid {uid} has no passwd entry: its jobs run with LOGNAME={uid} HOME={home}");
    crond.wait_for_log(&said, 5);
    assert_eq!(
        crond.log_text().matches("has no passwd entry").count(),
        1,
        "said once, not per job"
    );
    assert!(!crond.log_text().contains("ORPHAN"));
}

#[test]
fn keep_env_past_its_bound_is_refused_at_start() {
    let tree = Tree::new();
    let crontab = tree.path().join("crontab");
    tree.write_file(&crontab, "", 0o600);
    let state = tree.path().join("state");
    let mut command = Command::new(env!("CARGO_BIN_EXE_crond"));
    command.args(["-f", "--log", "stderr", "--keep-env", "*", "--crontab"]);
    command.arg(&crontab).arg("--state-dir").arg(&state);
    // 4,097 variables to keep: one past the bound.
    for i in 0..4097 {
        command.env(format!("CRON_TEST_VAR_{i}"), "x");
    }
    let out = command.output().expect("run crond");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("at most 4096 variables"),
        "the bound is named: {stderr}"
    );
    // Named variables under the bound start.
    let mut crond = start_plain(
        &tree,
        1,
        &[],
        &[
            "--keep-env",
            "CRON_TEST_VAR_1",
            "--crontab",
            show(&crontab),
            "--state-dir",
            show(&state),
        ],
        &[],
        &[],
    );
    crond.wait_for_log(" loaded from ", 10);
    assert!(crond.stop().success());
}

/// The pid of the only child of `parent` (waits for it to appear).
fn only_child(parent: u32) -> u32 {
    let list = format!("/proc/{parent}/task/{parent}/children");
    for _ in 0..500 {
        if let Some(pid) = fs::read_to_string(&list)
            .ok()
            .and_then(|t| t.split_whitespace().next().map(str::to_string))
        {
            return pid.parse().expect("a pid");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("{parent} has no child");
}

#[test]
fn as_pid_1_sigterm_stops_the_running_job_whose_trap_output_is_logged_and_exits_0() {
    require_root();
    let tree = Tree::new();
    let crontab = tree.path().join("crontab");
    let started = tree.out("started");
    let text = format!(
        "* * * * * trap 'echo got-TERM; exit 0' TERM; echo started > {}; sleep 300 & wait\n",
        show(&started)
    );
    tree.write_file(&crontab, &text, 0o600);
    // Long enough that a loaded machine can't turn the stop into a SIGKILL.
    let (code, log) = stop_as_pid_1(&tree, &crontab, &started, &["--stop-timeout", "3600"]);
    assert_eq!(code, 0, "crond exits 0; the log:\n{log}");
    assert!(
        log.contains("CMDOUT (got-TERM)"),
        "the trap ran and its output is logged:\n{log}"
    );
    assert!(log.contains("stopping 1 running job:"), "{log}");
    assert!(log.contains("every job has ended"), "{log}");
    assert!(!log.contains("they finish on their own"), "{log}");
}

/// Starts crond as PID 1 of a new PID namespace on `crontab` with `extra` arguments, waits for
/// `started`, sends SIGTERM to crond and returns its exit status and log.
fn stop_as_pid_1(tree: &Tree, crontab: &Path, started: &Path, extra: &[&str]) -> (i32, String) {
    let unshare = ["unshare", "--pid", "--fork", "--mount-proc"];
    stop_in_namespace(tree, crontab, started, extra, &unshare)
}

/// [`stop_as_pid_1`] with crond started through `unshare` (its arguments: the namespaces).
fn stop_in_namespace(
    tree: &Tree,
    crontab: &Path,
    started: &Path,
    extra: &[&str],
    unshare: &[&str],
) -> (i32, String) {
    let state = tree.path().join("state");
    let mut args = vec!["--crontab", show(crontab), "--state-dir", show(&state)];
    args.extend_from_slice(extra);
    let mut crond = start_plain(tree, 1, unshare, &args, &[], &[]);
    wait_for_file(started, 30);
    // unshare's child is crond, PID 1 in its namespace; unshare returns its exit status.
    let daemon = only_child(crond.pid());
    let status = Command::new("kill")
        .args(["-TERM", &daemon.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let mut child = crond.child.take().expect("running");
    let status = wait_with_timeout(&mut child, 120);
    (status.code().unwrap_or(-1), crond.log_text())
}

#[test]
fn root_as_pid_1_with_the_parent_namespaces_proc_sigterm_reaches_the_job_through_its_group() {
    require_root();
    let tree = Tree::new();
    let crontab = tree.path().join("crontab");
    let started = tree.out("started");
    let trapped = tree.out("trapped");
    let text = format!(
        "* * * * * trap 'echo got-TERM; echo trapped > {}; exit 0' TERM; echo started > {}; sleep 300 & wait\n",
        show(&trapped),
        show(&started)
    );
    tree.write_file(&crontab, &text, 0o600);
    // No --mount-proc: /proc is the host's, whose pids are not the namespace's.
    let unshare = ["unshare", "--pid", "--fork"];
    let extra = ["--stop-timeout", "30"];
    let (code, log) = stop_in_namespace(&tree, &crontab, &started, &extra, &unshare);
    assert_eq!(code, 0, "crond exits 0; the log:\n{log}");
    assert_eq!(
        fs::read_to_string(&trapped).ok().as_deref(),
        Some("trapped\n"),
        "the job's TERM trap ran:\n{log}"
    );
    assert_eq!(
        log.matches("/proc shows another PID namespace").count(),
        1,
        "said once:\n{log}"
    );
    assert!(
        log.contains("CMDOUT (got-TERM)"),
        "the job child lived on to log the trap's output:\n{log}"
    );
    assert!(log.contains("every job has ended"), "{log}");
    assert!(!log.contains("SIGKILL to what is left"), "{log}");
}

#[test]
fn as_pid_1_a_job_that_ignores_sigterm_is_killed_after_the_stop_timeout_and_its_output_logged() {
    require_root();
    let tree = Tree::new();
    let crontab = tree.path().join("crontab");
    let started = tree.out("started");
    let text = format!(
        "* * * * * trap '' TERM; echo before; echo started > {}; sleep 300\n",
        show(&started)
    );
    tree.write_file(&crontab, &text, 0o600);
    let (code, log) = stop_as_pid_1(&tree, &crontab, &started, &["--stop-timeout", "2"]);
    assert_eq!(code, 0, "crond exits 0; the log:\n{log}");
    assert!(
        log.contains("2 s passed: SIGKILL to what is left of 1 job"),
        "{log}"
    );
    assert!(
        log.contains("CMDOUT (before)"),
        "the output is logged:\n{log}"
    );
}

#[test]
fn on_a_host_stop_jobs_reaches_a_job_in_its_own_process_group() {
    require_root();
    let tree = Tree::new();
    let started = tree.out("started");
    // CRON_TIMEOUT makes the shell lead its own process group: the stop finds it by session.
    let text = format!(
        "CRON_TIMEOUT=1h\n* * * * * root trap 'echo got-TERM; exit 0' TERM; echo started > {}; sleep 300 & wait\n",
        show(&started)
    );
    tree.write_file(&tree.system_crontab(), &text, 0o644);
    // A long timeout: after its shell, a CRON_TIMEOUT job child waits until its group is
    // empty, and the orphaned `sleep` is a member until the host's init reaps it, which here
    // may take seconds.
    let crond = Crond::start(
        &tree,
        1,
        &["--no-pam", "-s", "--stop-jobs", "--stop-timeout", "3600"],
    );
    wait_for_file(&started, 30);
    let status = Command::new("kill")
        .args(["-TERM", &crond.pid().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let mut crond = crond;
    let mut child = crond.child.take().expect("running");
    assert!(wait_with_timeout(&mut child, 120).success());
    let log = crond.log_text();
    assert!(log.contains("CMDOUT (got-TERM)"), "{log}");
    assert!(log.contains("every job has ended"), "{log}");
}

#[test]
fn a_state_directory_someone_else_owns_stops_the_start_in_crontab_mode() {
    require_root();
    let tree = Tree::new();
    let crontab = tree.path().join("crontab");
    tree.write_file(&crontab, "* * * * * true\n", 0o600);
    // What another user could make where the default would be (/tmp/crond-UID).
    let state = own_dir(&tree, "planted", "nobody");
    let out = Command::new(env!("CARGO_BIN_EXE_crond"))
        .args(["-f", "--log", "stderr", "--crontab"])
        .arg(&crontab)
        .arg("--state-dir")
        .arg(&state)
        .output()
        .expect("run crond");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("state directory") && stderr.contains("not the daemon's"),
        "{stderr}"
    );
    assert!(
        !state.join("crond.pid").exists(),
        "no pid file planted there"
    );
}

#[test]
fn on_a_host_keep_env_reaches_a_users_job_under_pam_but_not_the_mails_headers() {
    require_root();
    let tree = Tree::new();
    let home = tree.path().join("out");
    let user = user_with_home("ke", &home);
    tree.use_pam_files("", None);
    let env = tree.out("env");
    let mail = tree.out("mail");
    let sendmail = tree.path().join("sendmail");
    tree.write_file(
        &sendmail,
        &format!("#!/bin/sh\ncat > {}\n", show(&mail)),
        0o755,
    );
    tree.user_crontab(
        &user.name,
        &format!("0 10 * * * env > {}; echo mailed\n", show(&env)),
        0o600,
        &user.name,
    );
    let _crond = Crond::start_with_env(
        &tree,
        1,
        &["--keep-env", "FOO", "--sendmail", show(&sendmail)],
        &[("FOO", "kept"), ("BAR", "not-kept")],
    );
    let vars = wait_for_file(&env, 30);
    assert!(vars.lines().any(|l| l == "FOO=kept"), "{vars}");
    assert!(!vars.contains("BAR="), "{vars}");
    assert!(
        vars.lines().any(|l| l == format!("LOGNAME={}", user.name)),
        "{vars}"
    );
    let message = wait_for_file(&mail, 30);
    assert!(message.contains("mailed"), "{message}");
    assert!(message.contains("X-Cron-Env: <LOGNAME="), "{message}");
    assert!(
        !message.contains("FOO"),
        "kept variables are not cron's: no X-Cron-Env line\n{message}"
    );
}

#[test]
fn a_crontab_mounted_as_a_kubernetes_configmap_is_reloaded_when_the_map_changes() {
    let tree = Tree::new();
    // The kubelet's layout: crontab -> ..data/crontab, ..data -> ..2026_a (a directory of the
    // map's files); an update writes ..2026_b, swaps ..data by a rename, removes ..2026_a.
    let mount = tree.path().join("config");
    let first = mount.join("..2026_a");
    fs::create_dir_all(&first).expect("mkdir");
    let out_a = tree.out("a");
    let out_b = tree.out("b");
    tree.write_file(
        &first.join("crontab"),
        &format!("* * * * * echo a > {}\n", show(&out_a)),
        0o644,
    );
    std::os::unix::fs::symlink("..2026_a", mount.join("..data")).expect("symlink");
    std::os::unix::fs::symlink("..data/crontab", mount.join("crontab")).expect("symlink");
    let state = tree.path().join("state");
    let crond = start_plain(
        &tree,
        1,
        &[],
        &[
            "--crontab",
            show(&mount.join("crontab")),
            "--state-dir",
            show(&state),
        ],
        &[],
        &[],
    );
    wait_for_file(&out_a, 30);
    let second = mount.join("..2026_b");
    fs::create_dir(&second).expect("mkdir");
    tree.write_file(
        &second.join("crontab"),
        &format!("* * * * * echo b > {}\n", show(&out_b)),
        0o644,
    );
    std::os::unix::fs::symlink("..2026_b", mount.join("..data_tmp")).expect("symlink");
    fs::rename(mount.join("..data_tmp"), mount.join("..data")).expect("swap");
    fs::remove_dir_all(&first).expect("remove the old map");
    crond.wait_for_log("RELOAD", 20);
    wait_for_file(&out_b, 30);
}

/// `ln -s target link`, the link then given to `owner` (`chown -h`).
fn link_owned_by(target: &Path, link: &Path, owner: &str) {
    std::os::unix::fs::symlink(target, link).expect("symlink");
    let status = Command::new("chown")
        .args(["-h", owner])
        .arg(link)
        .status()
        .expect("chown -h");
    assert!(status.success(), "chown -h {owner} {}", link.display());
}

#[test]
fn root_a_crontab_reached_through_another_users_link_on_the_way_is_refused_and_a_roots_is_followed()
{
    require_root();
    let tree = Tree::new();
    let home = tree.path().join("home");
    fs::create_dir(&home).expect("mkdir home");
    let daemon_user = user_with_home("lka", &home);
    let other = user_with_home("lkb", &home);
    let runtime = own_dir(&tree, "runtime", &daemon_user.name);
    let links = own_dir(&tree, "links", &daemon_user.name);
    // Two of root's directories, each with root's crontab of the same name; the path to one
    // goes through the other user's link, to the other through root's.
    let shared = tree.path().join("ct3");
    fs::create_dir(&shared).expect("mkdir");
    for (dir, out) in [("rootdir", "via-other"), ("rootdir2", "via-root")] {
        let dir = shared.join(dir);
        fs::create_dir(&dir).expect("mkdir");
        let text = format!("* * * * * echo ran > {}\n", show(&tree.out(out)));
        tree.write_file(&dir.join("crontab"), &text, 0o644);
    }
    link_owned_by(&shared.join("rootdir"), &shared.join("bdir"), &other.name);
    link_owned_by(&shared.join("rootdir2"), &shared.join("rdir"), "root");
    // The daemon's user's own links, which a --crontab link may be.
    let through_other = links.join("la2");
    let through_root = links.join("la3");
    link_owned_by(
        &shared.join("bdir/crontab"),
        &through_other,
        &daemon_user.name,
    );
    link_owned_by(
        &shared.join("rdir/crontab"),
        &through_root,
        &daemon_user.name,
    );
    let reuid = format!("--reuid={}", daemon_user.name);
    let regid = format!("--regid={}", daemon_user.name);
    let crond = start_plain(
        &tree,
        1,
        &["setpriv", &reuid, &regid, "--init-groups"],
        &[
            "--crontab",
            show(&through_other),
            "--crontab",
            show(&through_root),
        ],
        &[("XDG_RUNTIME_DIR", show(&runtime))],
        &[],
    );
    let uid = uid_of_user(&other.name);
    crond.wait_for_log(
        &format!(
            "({}) WRONG SYMLINK OWNER ({}: the link {} is uid {}'s)",
            daemon_user.name,
            show(&through_other),
            show(&shared.join("bdir")),
            uid
        ),
        10,
    );
    crond.wait_for_log("1 entry loaded from 1 file", 10);
    // A run of the file reached through root's link, and a fake minute more.
    wait_for_file(&tree.out("via-root"), 30);
    std::thread::sleep(std::time::Duration::from_secs(7));
    assert!(
        !tree.out("via-other").exists(),
        "the file reached through the other user's link ran:\n{}",
        crond.log_text()
    );
}

/// Removes a directory outside the tree (`/tmp/crond-UID`) when dropped.
struct RemovedAfter(PathBuf);

impl Drop for RemovedAfter {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn mode_of(path: &Path) -> u32 {
    fs::metadata(path).expect("stat").permissions().mode() & 0o7777
}

#[test]
fn root_the_default_state_directory_is_private_to_the_daemons_user_and_one_another_made_is_refused()
{
    require_root();
    let tree = Tree::new();
    let home = tree.path().join("home");
    fs::create_dir(&home).expect("mkdir home");
    let owner = user_with_home("sda", &home);
    let other = user_with_home("sdb", &home);
    let state = PathBuf::from(format!("/tmp/crond-{}", uid_of_user(&owner.name)));
    let _removed = RemovedAfter(state.clone());
    let crontab = tree.path().join("crontab");
    tree.write_file(&crontab, "* * * * * true\n", 0o600);
    chown(&crontab, &owner.name);
    let ids = [
        format!("--reuid={}", owner.name),
        format!("--regid={}", owner.name),
    ];
    let as_owner = ["setpriv", &ids[0], &ids[1], "--init-groups"];
    // Made beforehand by another user: the daemon does not start, and says where.
    fs::create_dir(&state).expect("mkdir");
    fs::set_permissions(&state, fs::Permissions::from_mode(0o700)).expect("chmod");
    chown(&state, &other.name);
    let out = Command::new("setpriv")
        .args(&as_owner[1..])
        .arg(env!("CARGO_BIN_EXE_crond"))
        .args(["-f", "--log", "stderr", "--crontab", show(&crontab)])
        .env_remove("XDG_RUNTIME_DIR")
        .output()
        .expect("run crond");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("state directory {}", state.display()))
            && stderr.contains("not the daemon's"),
        "{stderr}"
    );
    fs::remove_dir(&state).expect("rmdir");
    // Made by the daemon: only its user may enter it, and so reach the control socket.
    let start = |n: usize| {
        let args = ["--crontab", show(&crontab)];
        start_plain(&tree, n, &as_owner, &args, &[], &["XDG_RUNTIME_DIR"])
    };
    let mut crond = start(1);
    crond.wait_for_log("control socket at", 10);
    assert_eq!(mode_of(&state), 0o700);
    let socket = state.join("crond.sock");
    let theirs = crate::control::cronctl(Some(&other.name), &socket, &["status"]);
    let said = String::from_utf8_lossy(&theirs.stderr);
    assert!(
        !theirs.status.success() && said.contains("Permission denied"),
        "another user reached the socket: {theirs:?}"
    );
    let ours = crate::control::cronctl(Some(&owner.name), &socket, &["status"]);
    assert!(ours.status.success(), "{ours:?}");
    assert!(crond.stop().success());
    // As an earlier version left it: made private at the next start, and said.
    fs::set_permissions(&state, fs::Permissions::from_mode(0o755)).expect("chmod");
    let crond = start(2);
    crond.wait_for_log(
        &format!(
            "state directory {} was mode 0755, now 0700",
            state.display()
        ),
        10,
    );
    assert_eq!(mode_of(&state), 0o700);
}

/// `crond ARGS` run to its end as `wrapper` (e.g. `setpriv`), with `env`: its exit status and
/// standard error.
fn run_to_end(wrapper: &[&str], args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let mut command = Command::new(wrapper.first().copied().unwrap_or("env"));
    if !wrapper.is_empty() {
        command.args(&wrapper[1..]);
    }
    let out = command
        .arg(env!("CARGO_BIN_EXE_crond"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run crond");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_crontab_daemon_with_no_file_it_can_load_names_each_and_why_and_exits_1() {
    let tree = Tree::new();
    let missing = tree.path().join("crontab.typo");
    let open = tree.path().join("open.cron");
    tree.write_file(&open, "* * * * * true\n", 0o666);
    let state = tree.path().join("state");
    let args = [
        "-f",
        "--log",
        "stderr",
        "--crontab",
        show(&missing),
        "--crontab",
        show(&open),
        "--state-dir",
        show(&state),
    ];
    let (code, stderr) = run_to_end(&[], &args, &[]);
    let shown = format!(
        "$ crond -f --crontab crontab.typo --crontab open.cron\n{stderr}[exit status {}]\n",
        code.unwrap_or(-1)
    );
    let scrubbed = Scrub::new()
        .replace(format!("{}/", tree.path().display()), "")
        .apply(&shown);
    assert_golden("crond-crontab-none-loaded.txt", &scrubbed);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        !state.exists(),
        "nothing is made before the check: {stderr}"
    );
    // One of the two loads: the daemon runs it, and logs the other.
    fs::set_permissions(&open, fs::Permissions::from_mode(0o600)).expect("chmod");
    let mut crond = start_plain(&tree, 1, &[], &args[3..], &[], &[]);
    crond.wait_for_log("1 entry loaded from 1 file", 10);
    assert!(crond.stop().success());
}

#[test]
fn crond_check_prints_each_problem_for_a_uid_passwd_does_not_know_and_starts_nothing() {
    require_root();
    let tree = Tree::new();
    let uid = uid_without_passwd_entry().to_string();
    let runtime = own_dir(&tree, "runtime", &uid);
    let bad = tree.path().join("bad.cron");
    let good = tree.path().join("good.cron");
    tree.write_file(
        &bad,
        "# nightly\n61 * * * * echo bad\n0 3 * * * tar czf /b/$(date +%F).tgz /srv\nCRON_TZ=Mars/Olympus\n* * * * * true\n",
        0o600,
    );
    tree.write_file(&good, "@every 5s echo fine\n", 0o600);
    chown(&bad, &uid);
    chown(&good, &uid);
    let ids = [format!("--reuid={uid}"), format!("--regid={uid}")];
    let as_uid = ["setpriv", &ids[0], &ids[1], "--clear-groups"];
    let env = [("XDG_RUNTIME_DIR", show(&runtime))];
    let mut shown = String::new();
    for files in [vec![&bad, &good], vec![&good]] {
        let mut args = vec!["--check"];
        for f in &files {
            args.extend(["--crontab", show(f)]);
        }
        let (code, stderr) = run_to_end(&as_uid, &args, &env);
        let names: Vec<&str> = files
            .iter()
            .map(|f| f.file_name().unwrap().to_str().unwrap())
            .collect();
        shown += &format!(
            "$ crond --check --crontab {}\n{stderr}[exit status {}]\n\n",
            names.join(" --crontab "),
            code.unwrap_or(-1)
        );
    }
    let scrubbed = Scrub::new()
        .replace(format!("{}/", tree.path().display()), "")
        .apply(&shown);
    assert_golden("crond-check.txt", &scrubbed);
    assert!(
        scrubbed.contains("bad.cron:2:1: 61 is out of range"),
        "{scrubbed}"
    );
    assert!(scrubbed.contains("[exit status 1]"), "{scrubbed}");
    assert!(
        scrubbed.ends_with("it loads as written\n[exit status 0]\n\n"),
        "{scrubbed}"
    );
    assert!(
        !runtime.join("crond").exists(),
        "--check makes no state directory"
    );
}

#[test]
fn with_wait_for_crontab_a_missing_file_is_said_once_and_runs_when_it_appears() {
    let tree = Tree::new();
    let crontab = tree.path().join("later.cron");
    let state = tree.path().join("state");
    let out = tree.out("ran");
    let mut crond = start_plain(
        &tree,
        1,
        &[],
        &[
            "--crontab",
            show(&crontab),
            "--wait-for-crontab",
            "--state-dir",
            show(&state),
        ],
        &[],
        &[],
    );
    crond.wait_for_log(
        &format!(
            "(CRON) NOTICE (waiting for {}: no such file; it is loaded when it can be)",
            crontab.display()
        ),
        10,
    );
    crond.wait_for_log(" loaded from ", 10);
    tree.write_file(
        &crontab,
        &format!("* * * * * echo ran > {}\n", show(&out)),
        0o600,
    );
    assert_eq!(wait_for_file(&out, 30).trim(), "ran");
    assert_eq!(crond.log_text().matches("waiting for").count(), 1);
    assert!(crond.stop().success());
}

#[test]
fn the_uid_of_a_crontab_daemon_without_a_passwd_entry_lists_and_runs_its_entries_through_cronctl() {
    require_root();
    let tree = Tree::new();
    let uid = uid_without_passwd_entry().to_string();
    let runtime = own_dir(&tree, "runtime", &uid);
    let crontab = tree.path().join("crontab");
    let out = tree.out("ran");
    let text = format!("# app\n0 0 1 1 * echo ran > {}\n", show(&out));
    tree.write_file(&crontab, &text, 0o600);
    chown(&crontab, &uid);
    let ids = [format!("--reuid={uid}"), format!("--regid={uid}")];
    let as_uid = ["setpriv", &ids[0], &ids[1], "--clear-groups"];
    let env = [("XDG_RUNTIME_DIR", show(&runtime))];
    let mut crond = start_plain(
        &tree,
        1,
        &as_uid,
        &["--crontab", show(&crontab)],
        &env,
        &["LOGNAME", "USER"],
    );
    crond.wait_for_log("1 entry loaded from 1 file", 10);
    // As `docker exec … cronctl` runs: the same uid and environment, no --socket.
    let cronctl = |args: &[&str]| {
        let out = Command::new(as_uid[0])
            .args(&as_uid[1..])
            .arg(crate::control::cronctl_bin())
            .args(args)
            .env("XDG_RUNTIME_DIR", show(&runtime))
            .output()
            .expect("run cronctl");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    let place = format!("{}:2", crontab.display());
    let (code, list) = cronctl(&["list", "--wide"]);
    assert_eq!(code, Some(0), "{list}");
    assert!(list.contains(&place), "its own entry is listed: {list}");
    let (code, status) = cronctl(&["status"]);
    assert_eq!(code, Some(0), "{status}");
    assert!(status.contains("entries: 1"), "{status}");
    let (code, ran) = cronctl(&["run", &place]);
    assert_eq!(code, Some(0), "{ran}");
    assert!(ran.contains(&format!("started {place} as {uid}")), "{ran}");
    assert_eq!(wait_for_file(&out, 10).trim(), "ran");
    // CROND_SOCKET names the socket when it is set.
    let elsewhere = Command::new(crate::control::cronctl_bin())
        .arg("status")
        .env("CROND_SOCKET", tree.path().join("nothing.sock"))
        .output()
        .expect("run cronctl");
    let said = String::from_utf8_lossy(&elsewhere.stderr);
    assert_eq!(elsewhere.status.code(), Some(1));
    assert!(said.contains("nothing.sock"), "{said}");
    assert!(crond.stop().success());
}
