//! Jobs go through the real PAM stack (Debian's libpam-modules) as Debian's cron's do: the
//! service `cron` (the shipped etc/pam.d/cron, with the system's common-* files) decides whether
//! an account may run anything, and its session gives the job pam_env's variables (under the
//! crontab's) and pam_limits' limits. Needs root: only root opens sessions for other users.

use std::process::Command;
use std::time::Duration;

use crate::support::daemon::*;
use crate::support::root::require_root;

fn usermod(args: &[&str], user: &str) {
    let out = Command::new("usermod")
        .args(args)
        .arg(user)
        .output()
        .expect("run usermod");
    assert!(out.status.success(), "usermod {args:?}: {out:?}");
}

/// A user whose job writes `out/ran` at 10:00, and the tree.
fn user_with_a_job(tag: &str) -> (Tree, TestUser, std::path::PathBuf) {
    require_root();
    let tree = Tree::new();
    let user = user_with_home(tag, &tree.path().join("out"));
    let ran = tree.out("ran");
    tree.user_crontab(
        &user.name,
        &format!("0 10 * * * echo ran > {}\n", ran.display()),
        0o600,
        &user.name,
    );
    (tree, user, ran)
}

#[test]
fn root_an_expired_accounts_job_is_refused_and_logged_in_pams_words() {
    let (tree, user, ran) = user_with_a_job("x");
    usermod(&["--expiredate", "1"], &user.name);
    let crond = Crond::start(&tree, 1, &[]);
    // Debian's line: PAM's text alone, from the job's process. Debian's common-account sends
    // pam_unix's "expired" on to pam_deny, whose answer is what the stack returns (pam_unix
    // logs the reason itself, with the user's name, to auth.log).
    let line = crond.wait_for_log("]: Authentication failure", 15);
    assert!(line.contains(" CRON["), "{line}");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!ran.exists(), "the job did not run");
    assert!(!crond.log_text().contains(&format!("({}) CMD (", user.name)));
    // The slot is recorded as not run, refused, in PAM's words.
    let socket = crate::control::socket_of(&tree);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let recorded = loop {
        let o = crate::control::cronctl(None, &socket, &["history", "--json"]);
        let text = crate::control::stdout(&o);
        if text.contains("\"reason\"") || std::time::Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(recorded.contains("\"reason\":\"refused\""), "{recorded}");
    assert!(
        recorded.contains("PAM refused the session: Authentication failure"),
        "{recorded}"
    );
    assert!(recorded.contains("\"trigger\":\"schedule\""), "{recorded}");
    drop(crond);

    // --no-pam: no account check, the job runs.
    let crond = Crond::start(&tree, 2, &["--no-pam"]);
    crond.wait_for_log("jobs run without a PAM session (--no-pam)", 10);
    assert_eq!(wait_for_file(&ran, 15), "ran\n");
}

#[test]
fn root_an_expired_accounts_refused_job_pings_fail_and_mails_from_its_job_child() {
    let (tree, user, ran) = user_with_a_job("xp");
    let (port, seen) = crate::notify::ping_server();
    let reader = crate::support::mail::mail_user();
    tree.user_crontab(
        &user.name,
        &format!(
            "CRON_NOTIFY=failure\nMAILTO={}\nCRON_PING=http://127.0.0.1:{port}/p\n\
             0 10 * * * echo ran > {}\n",
            reader.name,
            ran.display()
        ),
        0o600,
        &user.name,
    );
    usermod(&["--expiredate", "1"], &user.name);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log("]: Authentication failure", 15);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while seen.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_secs(1));
    let seen = seen.lock().unwrap().clone();
    assert!(!ran.exists(), "the job did not run");
    // The refusal is a failure: pinged once, as a slot that did not run.
    let [fail] = &seen[..] else {
        panic!("{seen:?}; the log:\n{}", crond.log_text())
    };
    assert!(fail.starts_with("POST /p/fail?rid="), "{fail}");
    // And, under `failure`, mailed: why, as the user.
    let mails = reader.wait_for_mail(1);
    let subject = mails[0].header_str("Subject").replace("\n ", " ");
    assert!(subject.ends_with(" (did not run: refused)"), "{subject}");
    let body = String::from_utf8_lossy(&mails[0].body);
    assert!(
        body.starts_with("crond did not start its run of "),
        "{body}"
    );
    let sender = mails[0].header_str("Return-path");
    assert!(sender.starts_with(&format!("<{}@", user.name)), "{sender}");
}

#[test]
fn root_a_locked_accounts_job_runs_as_on_debian() {
    // `usermod -L` locks the password only; pam_unix's account stack (which Debian's cron runs)
    // does not look at it, so Debian runs the job, and so do we.
    let (tree, user, ran) = user_with_a_job("l");
    usermod(&["-L"], &user.name);
    let _crond = Crond::start(&tree, 1, &[]);
    assert_eq!(wait_for_file(&ran, 15), "ran\n");
}

#[test]
fn root_pam_environment_variables_reach_the_job_under_the_crontabs() {
    require_root();
    let tree = Tree::new();
    let user = user_with_home("e", &tree.path().join("out"));
    let env = tree.out("env");
    tree.use_pam_files(
        "SITE_PROXY=http://proxy:3128\nSHARED=from pam\nPATH=/pam/bin\nLANG=C.UTF-8\n",
        None,
    );
    tree.user_crontab(
        &user.name,
        &format!(
            "SHARED=from the crontab\n0 10 * * * env > {}\n",
            env.display()
        ),
        0o600,
        &user.name,
    );
    let _crond = Crond::start(&tree, 1, &[]);
    let text = wait_for_file(&env, 15);
    let mut vars: Vec<&str> = text.lines().filter(|l| !l.starts_with("PWD=")).collect();
    vars.sort();
    let home = tree.path().join("out");
    let mut expected = vec![
        "LANG=C.UTF-8".to_string(),
        "SITE_PROXY=http://proxy:3128".to_string(),
        // The crontab's variable wins, and so does cron's default PATH (as Debian's).
        "SHARED=from the crontab".to_string(),
        "PATH=/usr/bin:/bin".to_string(),
        format!("HOME={}", home.display()),
        format!("LOGNAME={}", user.name),
        "SHELL=/bin/sh".to_string(),
        format!("USER={}", user.name),
    ];
    expected.sort();
    assert_eq!(vars, expected);
}

#[test]
fn root_the_shell_has_the_users_ids_groups_and_login_uid_and_no_way_back_to_root() {
    require_root();
    let tree = Tree::new();
    let user = user_with_home("i", &tree.path().join("out"));
    let seen = tree.out("seen");
    // The shell's own entries ($$): its ids, groups and capabilities, and the audit login
    // uid pam_loginuid set in the (root) job child, which the shell inherits.
    tree.user_crontab(
        &user.name,
        &format!(
            "0 10 * * * (cat /proc/$$/status; echo loginuid $(cat /proc/$$/loginuid)) > {}\n",
            seen.display()
        ),
        0o600,
        &user.name,
    );
    let _crond = Crond::start(&tree, 1, &[]);
    let text = wait_for_file(&seen, 15);
    let field = |name: &str| -> Vec<String> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .unwrap_or_else(|| panic!("no {name} in {text}"))
            .split_whitespace()
            .map(str::to_string)
            .collect()
    };
    let uid = user.uid();
    assert_eq!(
        field("Uid:"),
        [uid.as_str(); 4],
        "real, effective, saved, fs: {text}"
    );
    let gid = field("Gid:");
    assert!(gid.iter().all(|g| g == &gid[0]) && gid[0] != "0", "{text}");
    let mut groups = field("Groups:");
    groups.sort();
    let mut expected: Vec<String> = user.groups().split(' ').map(str::to_string).collect();
    expected.sort();
    assert_eq!(groups, expected, "{text}");
    // No capability to take root back with (setuid(0) needs CAP_SETUID).
    for caps in ["CapPrm:", "CapEff:", "CapAmb:"] {
        assert_eq!(field(caps), ["0000000000000000"], "{caps} {text}");
    }
    assert_eq!(field("loginuid"), [uid.as_str()], "{text}");
}

#[test]
fn root_a_pam_limits_nofile_limit_reaches_the_job() {
    require_root();
    let tree = Tree::new();
    let user = user_with_home("n", &tree.path().join("out"));
    let limit = tree.out("limit");
    // pam_limits starts from init's limits (/proc/1/limits) and sets soft and hard together: a
    // hard limit above ours needs CAP_SYS_RESOURCE, which root may lack in a container, so the
    // hard limit is kept at ours and the soft one lowered.
    let hard = std::fs::read_to_string("/proc/self/limits")
        .expect("read /proc/self/limits")
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(4).map(str::to_string))
        .expect("the open files line");
    tree.use_pam_files(
        "",
        Some(&format!(
            "{0} soft nofile 123\n{0} hard nofile {hard}\n",
            user.name
        )),
    );
    tree.user_crontab(
        &user.name,
        &format!("0 10 * * * ulimit -n > {}\n", limit.display()),
        0o600,
        &user.name,
    );
    let _crond = Crond::start(&tree, 1, &[]);
    assert_eq!(wait_for_file(&limit, 15), "123\n");
}

/// tests/support/pam_test_module.c built into the tree (`extra`: more `cc` flags), its path.
fn test_module(tree: &Tree, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let so = tree.path().join(name);
    let out = Command::new("cc")
        .args(["-shared", "-fPIC"])
        .args(extra)
        .arg("-o")
        .arg(&so)
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/support/pam_test_module.c"
        ))
        .output()
        .expect("run cc");
    assert!(out.status.success(), "cc: {out:?}");
    so
}

/// A user whose job lists its shell's descriptors into `out/fds` at 10:00.
fn user_listing_its_descriptors(tree: &Tree, tag: &str) -> (TestUser, std::path::PathBuf) {
    let user = user_with_home(tag, &tree.path().join("out"));
    let fds = tree.out("fds");
    tree.user_crontab(
        &user.name,
        &format!("0 10 * * * ls -l /proc/$$/fd > {}\n", fds.display()),
        0o600,
        &user.name,
    );
    (user, fds)
}

#[test]
fn root_a_descriptor_a_pam_module_opens_in_the_session_does_not_reach_the_job() {
    require_root();
    let tree = Tree::new();
    let (_user, fds) = user_listing_its_descriptors(&tree, "d");
    // The module opens this file as root in pam_sm_open_session, without O_CLOEXEC, and leaves
    // it open.
    let opened = tree.path().join("opened-by-a-pam-module");
    let module = test_module(&tree, "pam_crond_test.so", &[]);
    tree.set_pam_service(&format!(
        "{}session optional {} open={}\n",
        shipped_pam_service(),
        module.display(),
        opened.display()
    ));
    let _crond = Crond::start(&tree, 1, &[]);
    let listed = wait_for_file(&fds, 15);
    assert!(opened.exists(), "the module's session ran");
    assert!(
        !listed.contains("opened-by-a-pam-module"),
        "a PAM module's descriptor reached the job:\n{listed}"
    );
    // Only the shell's standard three (and what `ls` itself opens) are there.
    for line in listed.lines().filter(|l| l.contains("->")) {
        assert!(
            !line.contains("socket:") && !line.contains("anon_inode:"),
            "{line}\n{listed}"
        );
    }
}

#[test]
fn root_a_pam_module_that_starts_a_thread_when_loaded_is_not_preloaded_and_jobs_still_run() {
    require_root();
    let tree = Tree::new();
    let (user, fds) = user_listing_its_descriptors(&tree, "t");
    let module = test_module(
        &tree,
        "pam_crond_thread.so",
        &["-DTHREAD_IN_CONSTRUCTOR", "-pthread"],
    );
    tree.set_pam_service(&format!(
        "{}session optional {}\n",
        shipped_pam_service(),
        module.display()
    ));
    let crond = Crond::start(&tree, 1, &[]);
    let line = crond.wait_for_log("PAM service cron not preloaded", 10);
    assert!(
        line.contains("loading its modules starts threads (2 in all)"),
        "{line}"
    );
    // The daemon stayed single-threaded, so it forks the job child, which loads the stack
    // itself; the shell is cloned from it with the module's thread there (vfork semantics and
    // raw system calls, sound with threads as posix_spawn is): no fork after PAM, no warning.
    let status = std::fs::read_to_string(format!("/proc/{}/status", crond.pid())).expect("status");
    assert!(
        status.lines().any(|l| l == "Threads:\t1"),
        "the daemon is single-threaded:\n{status}"
    );
    wait_for_file(&fds, 15);
    crond.wait_for_log(&format!("({}) CMD (ls -l /proc/$$/fd", user.name), 5);
    assert!(
        !crond.log_text().contains("WARNING (PAM modules left"),
        "{}",
        crond.log_text()
    );
}

#[test]
fn root_a_refused_account_is_named_with_its_entry_on_stderr_and_in_the_json_log() {
    // On stderr (a container, `crond -f --log stderr`) pam_unix's own syslog line, the one with
    // the user's name, never arrives: ours names the user and the entry after PAM's words.
    let (tree, user, ran) = user_with_a_job("n");
    usermod(&["--expiredate", "1"], &user.name);
    let crond = Crond::start(&tree, 1, &[]);
    let line = crond.wait_for_log("]: Authentication failure", 15);
    assert!(
        line.ends_with(&format!(
            "]: Authentication failure (user {0}, entry spool/{0}:1)",
            user.name
        )),
        "{line}"
    );
    drop(crond);

    let crond = Crond::start(&tree, 2, &["--log-format", "json"]);
    let line = crond.wait_for_log("\"message\":\"Authentication failure\"", 15);
    for field in [
        format!("\"user\":\"{}\"", user.name),
        format!("\"entry\":\"spool/{}:1\"", user.name),
        "\"level\":\"error\"".to_string(),
        "\"source\":\"CRON[".to_string(),
    ] {
        assert!(line.contains(&field), "{field} in {line}");
    }
    assert!(!ran.exists(), "the job did not run");
}

#[test]
fn root_a_group_a_pam_module_adds_with_the_credentials_reaches_the_job_and_roots_groups_do_not() {
    require_root();
    let tree = Tree::new();
    let user = user_with_home("g", &tree.path().join("out"));
    let seen = tree.out("groups");
    tree.user_crontab(
        &user.name,
        &format!(
            "0 10 * * * grep ^Groups: /proc/$$/status > {}\n",
            seen.display()
        ),
        0o600,
        &user.name,
    );
    // A group no test user is in (it needs no name); the module adds it to the job child's
    // groups in pam_setcred, as pam_group does.
    let added = "59999";
    let module = test_module(&tree, "pam_crond_test.so", &[]);
    tree.set_pam_service(&format!(
        "{}auth optional {} addgroup={added}\n",
        shipped_pam_service(),
        module.display()
    ));
    // The daemon has supplementary groups of root's own (0 and one more): none of them may
    // reach the job, whatever the module adds to.
    let crond = Crond::start_wrapped(
        &tree,
        1,
        START,
        &["setpriv", "--groups", "0,59998", "--"],
        &[],
    );
    let text = wait_for_file(&seen, 15);
    drop(crond);
    let mut groups: Vec<&str> = text
        .strip_prefix("Groups:")
        .unwrap_or_else(|| panic!("{text}"))
        .split_whitespace()
        .collect();
    groups.sort();
    let own = user.groups();
    let mut expected: Vec<&str> = own.split(' ').chain([added]).collect();
    expected.sort();
    assert_eq!(groups, expected, "{text}");
    assert!(
        !groups.contains(&"0") && !groups.contains(&"59998"),
        "{text}"
    );
}
