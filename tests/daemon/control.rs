//! The control socket end to end: the real daemon, the real `cronctl`, real users (two made for
//! the test, and `nobody`) who can't read the spool and see and run their own entries only
//! through the socket; and a user who holds and floods the socket while root is served.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::daemon::*;
use crate::support::golden::{Scrub, assert_golden};

/// The `cronctl` binary, built by its own package beside crond (as the cluster tests find it).
pub(crate) fn cronctl_bin() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_crond"))
        .parent()
        .expect("a binary has a directory")
        .join("cronctl");
    assert!(
        bin.is_file(),
        "{} is not built: run `cargo build -p cronctl` (or `cargo test` at the root)",
        bin.display()
    );
    bin
}

/// The daemon's control socket: by default beside its pid file.
pub(crate) fn socket_of(tree: &Tree) -> PathBuf {
    tree.pid_file().with_file_name("crond.sock")
}

/// `cronctl --socket SOCKET ARGS` as `user` (`None`: root), to run.
fn cronctl_command(user: Option<&str>, socket: &Path, args: &[&str]) -> Command {
    let mut command = match user {
        None => Command::new(cronctl_bin()),
        Some(user) => {
            let mut c = as_user(user);
            c.arg(cronctl_bin());
            c
        }
    };
    command.arg("--socket").arg(socket).args(args);
    command
}

/// `cronctl --socket SOCKET ARGS` as `user` (`None`: root), run to its end.
pub(crate) fn cronctl(user: Option<&str>, socket: &Path, args: &[&str]) -> Output {
    cronctl_command(user, socket, args)
        .output()
        .expect("run cronctl")
}

pub(crate) fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The `entry` of each object `cronctl list --json` printed.
fn listed(o: &Output) -> Vec<String> {
    assert!(o.status.success(), "{o:?}");
    let mut entries: Vec<String> = stdout(o)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("one JSON object a line");
            v["entry"].as_str().expect("an entry").to_string()
        })
        .collect();
    entries.sort();
    entries
}

#[test]
fn root_each_user_sees_and_runs_only_their_own_entries_through_the_socket_and_root_all() {
    require_root();
    let tree = Tree::new();
    let alice = TestUser::create("cta", &[]);
    let bob = TestUser::create("ctb", &[]);
    let (a, b) = (alice.name.as_str(), bob.name.as_str());
    let out = tree.path().join("out");
    tree.user_crontab(
        a,
        &format!(
            "CRON_OVERLAP=skip\n0 3 * * * id -un > {}/ran-by\n",
            out.display()
        ),
        0o600,
        a,
    );
    tree.user_crontab(b, "@daily echo bob\n", 0o600, b);
    // The spool is closed to users: what they see comes through the socket only.
    std::fs::set_permissions(
        tree.spool(),
        std::os::unix::fs::PermissionsExt::from_mode(0o700),
    )
    .unwrap();
    tree.write_file(
        &tree.system_crontab(),
        &format!("*/10 * * * * {a} echo system-line-for-alice\n30 4 * * * root echo root-only\n"),
        0o644,
    );
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let system = tree.system_crontab().display().to_string();
    assert_eq!(
        listed(&cronctl(None, &socket, &["list", "--json"])),
        [
            format!("{system}:1"),
            format!("{system}:2"),
            format!("spool/{a}:2"),
            format!("spool/{b}:1"),
        ]
    );
    assert_eq!(
        listed(&cronctl(Some(a), &socket, &["list", "--json"])),
        [format!("{system}:1"), format!("spool/{a}:2")],
        "alice: her crontab and the system file's line that runs as her"
    );
    assert_eq!(
        listed(&cronctl(Some(b), &socket, &["list", "--json"])),
        [format!("spool/{b}:1")]
    );
    let nobody = cronctl(Some("nobody"), &socket, &["list"]);
    assert_eq!(stdout(&nobody), "0 entries listed.\n", "{nobody:?}");
    // The wide table shows the schedule as written and the policy.
    let table = stdout(&cronctl(Some(a), &socket, &["list", "--wide"]));
    let row = table
        .lines()
        .find(|l| l.contains(&format!("spool/{a}:2")))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(
        row.contains("0 3 * * *") && row.contains("overlap=skip"),
        "{row}"
    );
    // Bob can't run alice's entry: to him it does not exist.
    let refused = cronctl(Some(b), &socket, &["run", &format!("spool/{a}:2")]);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("no entry"),
        "{refused:?}"
    );
    assert!(!out.join("ran-by").exists());
    // Alice can: it runs now, as her, through the daemon's start path, logged with who asked.
    let ran = cronctl(Some(a), &socket, &["run", &format!("spool/{a}:2")]);
    assert!(ran.status.success(), "{ran:?}");
    assert!(stdout(&ran).contains("started"), "{ran:?}");
    assert_eq!(wait_for_file(&out.join("ran-by"), 10).trim(), a);
    let line = crond.wait_for_log(" RUN ", 10);
    assert!(
        line.contains(&format!("({a}) RUN (id -un > "))
            && line.contains(&format!("spool/{a}:2 asked by {a} (uid ")),
        "{line}"
    );
    crond.wait_for_log(&format!("({a}) CMD (id -un"), 10);
    // Its last run is shown once it ended.
    crond.wait_for_no_children(10);
    let again = cronctl(Some(a), &socket, &["list", "--json", &format!("spool/{a}")]);
    let entry: serde_json::Value = serde_json::from_str(stdout(&again).trim()).unwrap();
    assert_eq!(entry["last_result"], "ok", "{entry}");
    assert_eq!(entry["schedule"], "0 3 * * *");
    // Root runs anyone's entry by the id `list` shows; status counts what each may see.
    let id = {
        let o = cronctl(None, &socket, &["list", "--json", &format!("spool/{b}")]);
        let v: serde_json::Value = serde_json::from_str(stdout(&o).trim()).unwrap();
        v["id"].as_str().expect("an id").to_string()
    };
    let by_root = cronctl(None, &socket, &["run", &id]);
    assert!(
        stdout(&by_root).contains(&format!("spool/{b}:1")),
        "{by_root:?}"
    );
    crond.wait_for_log(&format!("({b}) CMD (echo bob)"), 10);
    let status = stdout(&cronctl(Some(a), &socket, &["status"]));
    assert!(status.contains("entries: 2 (yours)"), "{status}");
    let status = stdout(&cronctl(None, &socket, &["status"]));
    assert!(
        status.contains("entries: 4 (all)") && status.contains("crond "),
        "{status}"
    );
}

#[test]
fn root_the_socket_is_world_connectable_and_off_or_a_bad_path_is_said() {
    require_root();
    let tree = Tree::new();
    let mut crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log("control socket at", 10);
    let socket = socket_of(&tree);
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&socket).unwrap().permissions());
    assert_eq!(mode & 0o7777, 0o666);
    crond.stop();
    let tree = Tree::new();
    let crond = Crond::start(&tree, 1, &["--control-socket", "off"]);
    crond.wait_for_log(" loaded from ", 10);
    assert!(!socket_of(&tree).exists());
    let gone = cronctl(None, &socket_of(&tree), &["status"]);
    assert_eq!(gone.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&gone.stderr).contains("can't reach crond"),
        "{gone:?}"
    );
    // A directory others may write: a given path stops the start.
    let open = tree.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let mut command = Command::new(env!("CARGO_BIN_EXE_crond"));
    tree.daemon_args(&mut command)
        .arg("--pid-file")
        .arg(tree.path().join("other.pid"))
        .arg("--control-socket")
        .arg(open.join("c.sock"));
    let refused = command.output().unwrap();
    assert_eq!(refused.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("--control-socket"),
        "{refused:?}"
    );
}

/// `setpriv` as `user` with their own group and no others.
fn as_user(user: &str) -> Command {
    let gid = String::from_utf8(
        Command::new("id")
            .args(["-g", user])
            .output()
            .expect("id -g")
            .stdout,
    )
    .unwrap();
    let mut c = Command::new("setpriv");
    c.arg(format!("--reuid={user}"))
        .arg(format!("--regid={}", gid.trim()))
        .arg("--clear-groups");
    c
}

/// Not a test on its own: the process a user runs for
/// `root_a_user_flooding_the_control_socket_keeps_neither_root_out_nor_the_daemon_busy` with
/// `CROND_TEST_FLOOD_CONTROL="PATH SECONDS"` (without it, this does nothing). Two floods at
/// once: a ring of thousands of connections made without waiting and never written to (the
/// kernel's backlog kept full), and a loop that connects and closes as fast as it can. Prints
/// how many connects each made.
#[test]
#[ignore = "a helper process of a control socket test"]
fn flood_control_socket() {
    use nix::sys::socket::{self, AddressFamily, SockFlag, SockType, UnixAddr};
    use std::os::fd::{AsRawFd, OwnedFd};
    let Ok(spec) = std::env::var("CROND_TEST_FLOOD_CONTROL") else {
        return;
    };
    let (path, seconds) = spec.rsplit_once(' ').unwrap();
    let end = std::time::Instant::now() + std::time::Duration::from_secs(seconds.parse().unwrap());
    let addr = UnixAddr::new(path).unwrap();
    // A connect that does not wait: `None` when the backlog is full.
    let connect = move || -> Option<OwnedFd> {
        let flags = SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC;
        let fd = socket::socket(AddressFamily::Unix, SockType::Stream, flags, None).ok()?;
        socket::connect(fd.as_raw_fd(), &addr).ok()?;
        Some(fd)
    };
    let looping = std::thread::spawn(move || {
        let mut n = 0u64;
        while std::time::Instant::now() < end {
            n += u64::from(connect().is_some());
        }
        n
    });
    let mut ring: std::collections::VecDeque<OwnedFd> = std::collections::VecDeque::new();
    let mut pending = 0u64;
    while std::time::Instant::now() < end {
        match connect() {
            Some(fd) => {
                pending += 1;
                ring.push_back(fd);
                // As many as the descriptor limit allows (the test raises it), the oldest
                // closed for each new one.
                if ring.len() >= 15_000 {
                    ring.pop_front();
                }
            }
            None => std::thread::sleep(std::time::Duration::from_millis(5)),
        }
    }
    let looped = looping.join().unwrap();
    #[allow(clippy::print_stdout)]
    {
        println!("flood: pending connects {pending}, connect-close {looped}");
    }
}

#[test]
#[allow(clippy::print_stdout)] // the figures measured, for the reader of the test's output
fn root_a_user_flooding_the_control_socket_keeps_neither_root_out_nor_the_daemon_busy() {
    require_root();
    const FLOOD_S: u64 = 14;
    let tree = Tree::new();
    let flooder = TestUser::create("cfl", &[]);
    // Real time: the connections' deadlines are the daemon's, in its clock.
    let crond = Crond::start_fast(&tree, 1, START, 1, &[]);
    crond.wait_for_log("control socket at", 10);
    let socket = socket_of(&tree);
    let setpriv = as_user(&flooder.name);
    let flood = Command::new("prlimit")
        .arg("--nofile=16384:16384")
        .arg("--")
        .arg(setpriv.get_program())
        .args(setpriv.get_args())
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", "control::flood_control_socket"])
        .args(["--ignored", "--nocapture", "--test-threads", "1"])
        .env(
            "CROND_TEST_FLOOD_CONTROL",
            format!("{} {FLOOD_S}", socket.display()),
        )
        .stdout(Stdio::piped())
        .spawn()
        .expect("run this test binary as a user");
    // The backlog fills.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let (ticks, since) = (cpu_ticks(crond.pid()), std::time::Instant::now());
    let mut times = Vec::new();
    for _ in 0..10 {
        let asked = std::time::Instant::now();
        let o = cronctl(None, &socket, &["status"]);
        let took = asked.elapsed();
        assert!(
            o.status.success() && stdout(&o).contains("entries: 0 (all)"),
            "{o:?}"
        );
        times.push(took.as_secs_f64());
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    let (ticks, seconds) = (
        cpu_ticks(crond.pid()) - ticks,
        since.elapsed().as_secs_f64(),
    );
    // Another user meanwhile: answered, turned away, or told the socket is flooded; never
    // a wrong answer, and never a wait past cronctl's timeouts.
    let nobody = cronctl(Some("nobody"), &socket, &["status"]);
    let said = String::from_utf8_lossy(&nobody.stderr).into_owned();
    assert!(
        nobody.status.success()
            || said.contains("too many connections")
            || said.contains("did not take the connection")
            || said.contains("no answer from crond within"),
        "{nobody:?}"
    );
    let out = flood.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout).into_owned();
    let report = report
        .lines()
        .find_map(|l| l.split("flood: ").nth(1))
        .unwrap_or_else(|| panic!("the flood's report in {report}"))
        .to_string();
    let hz: f64 = String::from_utf8(
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .trim()
    .parse()
    .unwrap();
    let cpu = ticks as f64 / hz / seconds * 100.0;
    println!(
        "a user flooding the control socket for {FLOOD_S} s ({report}): root's status took \
         {times:.3?} s; daemon CPU {ticks} ticks in {seconds:.1} s ({cpu:.2} % of a core)"
    );
    let slowest = times.iter().cloned().fold(0.0, f64::max);
    assert!(
        slowest < 1.0,
        "root answered within a second each time: {times:?}"
    );
    // docs/limits.md: at most 200 accepts a second on the shared socket, a few per cent of a
    // core at most (well under one per cent measured): ten per cent would be a loop gone wrong.
    assert!(
        cpu < 10.0,
        "the daemon's CPU under the flood: {cpu:.2} % of a core"
    );
    let turned = crond.wait_for_log("connections turned away (busy)", 70);
    assert!(turned.contains("uid "), "{turned}");
}

#[test]
fn root_a_users_and_roots_requests_read_in_one_wake_up_are_both_answered_and_the_daemon_lives() {
    require_root();
    let tree = Tree::new();
    let user = TestUser::create("c2w", &[]);
    let crond = Crond::start_fast(&tree, 1, START, 1, &[]);
    crond.wait_for_log("control socket at", 10);
    let socket = socket_of(&tree);
    // Stopped, the daemon reads both requests in the same wake-up when it goes on: the user's
    // connection first in its table, root's after.
    let pid = nix::unistd::Pid::from_raw(crond.pid() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap();
    let ask = |user: Option<&str>| {
        cronctl_command(user, &socket, &["status"])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let users = ask(Some(&user.name));
    std::thread::sleep(std::time::Duration::from_millis(300));
    let roots = ask(None);
    std::thread::sleep(std::time::Duration::from_millis(300));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap();
    for (who, child) in [("user", users), ("root", roots)] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{who}: {out:?}");
        assert!(stdout(&out).contains("crond "), "{who}: {out:?}");
    }
    let again = cronctl(None, &socket, &["status"]);
    assert!(again.status.success(), "the daemon lives: {again:?}");
    assert!(!crond.log_text().contains("panicked"));
}

/// An entry /etc/passwd names twice: the first line's uid owns it; the uid of the second line
/// of the same name is a different account.
struct SecondLine {
    line: String,
}

impl SecondLine {
    fn add(name: &str, uid: u32) -> SecondLine {
        let line = format!("{name}:x:{uid}:{uid}::/nonexistent:/usr/sbin/nologin\n");
        let _lock = crate::support::user::passwd_lock();
        let mut passwd = std::fs::read_to_string("/etc/passwd").unwrap();
        passwd.push_str(&line);
        std::fs::write("/etc/passwd", passwd).unwrap();
        SecondLine { line }
    }
}

impl Drop for SecondLine {
    fn drop(&mut self) {
        let _lock = crate::support::user::passwd_lock();
        let passwd = std::fs::read_to_string("/etc/passwd").unwrap();
        std::fs::write("/etc/passwd", passwd.replace(&self.line, "")).unwrap();
    }
}

#[test]
fn root_a_system_line_is_shown_to_the_uid_it_runs_as_not_to_another_uid_of_the_same_name() {
    require_root();
    let tree = Tree::new();
    let user = TestUser::create("cdn", &[]);
    let uid: u32 = {
        let o = Command::new("id")
            .args(["-u", &user.name])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    // Another account of the same name, as a second NSS source would give: getpwuid(other)
    // says the name, getpwnam(name) the first uid.
    let other = uid + 7_000;
    let _second = SecondLine::add(&user.name, other);
    tree.write_file(
        &tree.system_crontab(),
        &format!("*/10 * * * * {} echo system-line\n", user.name),
        0o644,
    );
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let system = format!("{}:1", tree.system_crontab().display());
    assert_eq!(
        listed(&cronctl(Some(&user.name), &socket, &["list", "--json"])),
        std::slice::from_ref(&system)
    );
    let as_other = |args: &[&str]| {
        Command::new("setpriv")
            .arg(format!("--reuid={other}"))
            .arg(format!("--regid={other}"))
            .arg("--clear-groups")
            .arg(cronctl_bin())
            .arg("--socket")
            .arg(&socket)
            .args(args)
            .output()
            .unwrap()
    };
    let seen = as_other(&["list", "--json"]);
    assert!(seen.status.success(), "{seen:?}");
    assert_eq!(stdout(&seen).trim(), "", "the other uid sees nothing");
    let run = as_other(&["run", &system]);
    assert!(!run.status.success(), "{run:?}");
    assert!(
        String::from_utf8_lossy(&run.stderr).contains("no entry"),
        "{run:?}"
    );
}

/// The exit status and the output of `cronctl run ARGS` as root.
fn run_as_root(socket: &Path, args: &[&str]) -> (Option<i32>, String) {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    let o = cronctl(None, socket, &all);
    let said = format!("{}{}", stdout(&o), String::from_utf8_lossy(&o.stderr));
    (o.status.code(), said.trim_end().to_string())
}

#[test]
fn root_cronctl_run_says_whether_the_job_started_as_its_user_or_why_not() {
    require_root();
    let tree = Tree::new();
    let user = TestUser::create("crr", &[]);
    let expired = TestUser::create("crx", &[]);
    let out = Command::new("usermod")
        .args(["--expiredate", "1", &expired.name])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let ran = tree.out("ran");
    let text = format!(
        "0 0 1 1 * {u} echo ran > {ran}\n0 0 1 1 * nosuchuser-crr echo never\n\
         0 0 1 1 * {x} echo never\n",
        u = user.name,
        x = expired.name,
        ran = ran.display()
    );
    tree.write_file(&tree.system_crontab(), &text, 0o644);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let system = tree.system_crontab().display().to_string();
    let (code, said) = run_as_root(&socket, &[&format!("{system}:1")]);
    assert_eq!(code, Some(0), "{said}");
    let started = format!("started {system}:1 as {}, pid ", user.name);
    assert!(said.starts_with(&started), "{said}");
    let pid: u32 = said[started.len()..].parse().expect("a pid");
    assert!(pid > 1, "{said}");
    assert_eq!(wait_for_file(&ran, 10), "ran\n");
    // An unknown user: nothing started, said, and a failure status.
    let (code, said) = run_as_root(&socket, &[&format!("{system}:2")]);
    assert_eq!(code, Some(1), "{said}");
    assert_eq!(
        said,
        format!("cronctl: {system}:2 did not start: user nosuchuser-crr unknown (no passwd entry)")
    );
    // An account PAM refuses: PAM's words.
    let (code, said) = run_as_root(&socket, &[&format!("{system}:3")]);
    assert_eq!(code, Some(1), "{said}");
    assert_eq!(
        said,
        format!(
            "cronctl: {system}:3 did not start: PAM refused the session: Authentication failure"
        )
    );
}

#[test]
fn root_cronctl_run_wait_prints_how_the_job_ended_and_exits_with_its_status() {
    require_root();
    let tree = Tree::new();
    let user = TestUser::create("crw", &[]);
    let text = format!(
        "0 0 1 1 * {u} sleep 0.3; exit 3\n0 0 1 1 * {u} kill -KILL $$\n0 0 1 1 * {u} true\n",
        u = user.name
    );
    tree.write_file(&tree.system_crontab(), &text, 0o644);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let system = tree.system_crontab().display().to_string();
    let (code, said) = run_as_root(&socket, &["--wait", &format!("{system}:1")]);
    assert_eq!(code, Some(3), "{said}");
    let exited = format!("{system}:1 exited with status 3 after ");
    assert!(said.starts_with(&exited) && said.ends_with('s'), "{said}");
    let (code, said) = run_as_root(&socket, &["--wait", &format!("{system}:2")]);
    assert_eq!(code, Some(128 + 9), "{said}");
    assert!(
        said.starts_with(&format!(
            "{system}:2 was killed by signal 9 (SIGKILL) after "
        )),
        "{said}"
    );
    let (code, said) = run_as_root(&socket, &["--wait", &format!("{system}:3")]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("exited with status 0"), "{said}");
}

/// `cronctl list --json` as root, polled until every entry has a last run that ended: each
/// entry's object, by its place.
fn last_runs(socket: &Path, count: usize) -> std::collections::BTreeMap<String, serde_json::Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let o = cronctl(None, socket, &["list", "--json"]);
        let objects: std::collections::BTreeMap<String, serde_json::Value> = stdout(&o)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("JSON"))
            .map(|v| (v["entry"].as_str().unwrap().to_string(), v))
            .collect();
        let ended = objects
            .values()
            .filter(|v| !v["last_result"].is_null() && v["running"] == serde_json::json!([]))
            .count();
        if ended == count {
            return objects;
        }
        assert!(std::time::Instant::now() < deadline, "{objects:?}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn root_cronctl_list_says_how_each_last_run_ended_and_why_one_did_not_run() {
    require_root();
    let tree = Tree::new();
    let user = TestUser::create("crl", &[]);
    let text = format!(
        "0 0 1 1 * {u} exit 3\n0 0 1 1 * {u} kill -KILL $$\n0 0 1 1 * {u} true\n\
         0 0 1 1 * nosuchuser-crl echo never\n",
        u = user.name
    );
    tree.write_file(&tree.system_crontab(), &text, 0o644);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let system = tree.system_crontab().display().to_string();
    for line in 1..=4 {
        // Each started as the scheduler starts a run: no one waits on its job child's word.
        let o = cronctl(None, &socket, &["run", &format!("{system}:{line}")]);
        assert!(o.status.code().is_some(), "{o:?}");
    }
    let runs = last_runs(&socket, 4);
    let at = |line: u32| &runs[&format!("{system}:{line}")];
    let end = |line: u32| {
        let v = at(line);
        (
            v["last_result"].as_str().unwrap().to_string(),
            v["last_exit"].clone(),
            v["last_signal"].clone(),
            v["last_reason"].clone(),
        )
    };
    use serde_json::{Value::Null, json};
    assert_eq!(end(1), ("failed".into(), json!(3), Null, Null));
    assert_eq!(end(2), ("failed".into(), Null, json!("SIGKILL"), Null));
    assert_eq!(end(3), ("ok".into(), json!(0), Null, Null));
    let unknown = "user nosuchuser-crl unknown (no passwd entry)";
    assert_eq!(end(4), ("failed".into(), Null, Null, json!(unknown)));
    // The table says it in a word, and `--wide` why a run did not run.
    let table = stdout(&cronctl(None, &socket, &["list"]));
    let cell = |table: &str, line: u32, word: &str| {
        let row = table
            .lines()
            .find(|l| l.contains(&format!("crontab:{line} ")))
            .unwrap_or_else(|| panic!("{table}"));
        assert!(row.contains(&format!("  {word}  ")), "{word:?} in {row:?}");
    };
    cell(&table, 1, "exit 3");
    cell(&table, 2, "SIGKILL");
    cell(&table, 3, "ok");
    cell(&table, 4, "not run");
    let wide = stdout(&cronctl(None, &socket, &["list", "--wide"]));
    cell(&wide, 4, unknown);
}

#[test]
fn root_parked_runs_are_bounded_a_client_that_leaves_is_let_go_and_the_daemon_answers_others() {
    require_root();
    let tree = Tree::new();
    let user = TestUser::create("crp", &[]);
    let text = format!("0 0 1 1 * {} sleep 6\n", user.name);
    tree.write_file(&tree.system_crontab(), &text, 0o644);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let place = format!("{}:1", tree.system_crontab().display());
    // A client that leaves while its run is parked.
    let mut leaving = cronctl_command(None, &socket, &["run", "--wait", &place])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    crond.wait_for_log(" CMD (sleep 6)", 10);
    leaving.kill().unwrap();
    leaving.wait().unwrap();
    let status = cronctl(None, &socket, &["status"]);
    assert!(status.status.success(), "{status:?}");
    // Eight parked at once (the one above may still hold a slot for a moment: the ninth of
    // the loop below is past the bound either way).
    let mut waiting: Vec<_> = (0..8)
        .map(|_| {
            cronctl_command(None, &socket, &["run", "--wait", &place])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let (code, said) = run_as_root(&socket, &["--wait", &place]);
    assert_eq!(code, Some(1), "{said}");
    assert_eq!(
        said,
        "cronctl: busy: 8 runs already wait for their jobs; try again"
    );
    let status = cronctl(None, &socket, &["status"]);
    assert!(
        status.status.success(),
        "answered while 8 runs are parked: {status:?}"
    );
    for child in &mut waiting {
        assert_eq!(wait_with_timeout(child, 20).code(), Some(0));
    }
    assert!(crond.log_text().contains(" loaded from "));
}

/// The id of each object `cronctl list --json` printed, by its `entry`.
pub(crate) fn ids(o: &Output) -> Vec<(String, String)> {
    assert!(o.status.success(), "{o:?}");
    stdout(o)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("one JSON object a line");
            let id = v["id"].as_str().expect("an id").to_string();
            (v["entry"].as_str().expect("an entry").to_string(), id)
        })
        .collect()
}

#[test]
fn an_entry_keeps_its_id_when_other_lines_change_and_cronnext_and_run_know_it() {
    require_root();
    let tree = Tree::new();
    let user = TestUser::create("cti", &[]);
    let u = user.name.as_str();
    let twice = "0 3 * * * echo same\n0 3 * * * echo same\n";
    tree.user_crontab(u, twice, 0o600, u);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let before = ids(&cronctl(None, &socket, &["list", "--json"]));
    assert_eq!(before.len(), 2, "{before:?}");
    let (first, second) = (before[0].1.clone(), before[1].1.clone());
    assert_ne!(first, second, "identical lines are told apart");
    assert!(first.len() == 12 && first.bytes().all(|b| b.is_ascii_hexdigit()));
    // cronnext computes the same ids from the file.
    let next = Command::new(env!("CARGO_BIN_EXE_cronnext"))
        .arg("--id")
        .arg(tree.spool().join(u))
        .output()
        .expect("run cronnext");
    let printed = stdout(&next);
    assert!(
        printed.contains(&format!(" {first} {u} echo same"))
            && printed.contains(&format!(" {second} {u} echo same")),
        "{printed}"
    );
    // A line added above them moves them, and they keep their ids.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    tree.user_crontab(
        u,
        &format!("# new\n5 5 * * * echo other\n{twice}"),
        0o600,
        u,
    );
    crond.wait_for_log(" RELOAD ", 10);
    let after = ids(&cronctl(None, &socket, &["list", "--json"]));
    let spool = tree.spool();
    let tab = spool.file_name().unwrap().to_string_lossy();
    assert!(
        after.contains(&(format!("{tab}/{u}:3"), first.clone())),
        "{after:?}"
    );
    assert!(
        after.contains(&(format!("{tab}/{u}:4"), second.clone())),
        "{after:?}"
    );
    // A unique prefix of the id names the entry; three digits are too few.
    let ran = cronctl(None, &socket, &["run", &first[..6]]);
    assert!(stdout(&ran).contains(&format!("{tab}/{u}:3")), "{ran:?}");
    let short = cronctl(None, &socket, &["run", &first[..3]]);
    assert_eq!(short.status.code(), Some(2), "{short:?}");
    assert!(
        String::from_utf8_lossy(&short.stderr).contains("is not an id (4 to 12"),
        "{short:?}"
    );
}

/// A table as the user sees it, with what changes from run to run made fixed: `words`
/// replaced, then each row's cells (the text between runs of two spaces or more) with a
/// time since the last run or a duration made fixed, and the columns padded again to their
/// widest cell.
pub(crate) fn scrubbed_table(text: &str, words: &Scrub) -> String {
    let text = words.apply(text);
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut tail = String::new();
    for line in text.lines() {
        if !tail.is_empty() || line.is_empty() || line.ends_with('.') {
            tail.push_str(line);
            tail.push('\n');
            continue;
        }
        let cells = line
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(|c| match c {
                _ if c.ends_with("s ago") => "1s ago".to_string(),
                // A temporary directory's name, cut: its random end made fixed.
                _ if c.starts_with('…') && c.contains("/crontab:") => {
                    let (dir, rest) = c.split_once("/crontab:").unwrap();
                    let hidden = dir.chars().count() - 1;
                    format!("…{}/crontab:{rest}", "X".repeat(hidden))
                }
                _ if c.ends_with("ms") && c[..c.len() - 2].bytes().all(|b| b.is_ascii_digit()) => {
                    "5ms".to_string()
                }
                _ => c.to_string(),
            })
            .collect();
        rows.push(cells);
    }
    let mut widths: Vec<usize> = Vec::new();
    for row in &rows {
        for (i, cell) in row.iter().enumerate() {
            if widths.len() <= i {
                widths.push(0);
            }
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in &rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out + &tail
}

#[test]
fn root_cronctl_list_is_an_overview_sorted_by_next_run_as_root_and_as_a_user() {
    require_root();
    let tree = Tree::new();
    // A user of every Debian system: a name of the same length in each run.
    let u = "nobody";
    tree.user_crontab(
        u,
        "0 3 * * * echo nightly backup of the photos\n30 12 * * 1 false\n",
        0o600,
        u,
    );
    tree.write_file(
        &tree.system_crontab(),
        "CRON_TZ=Europe/Paris\n0 3 * * * root echo root-only\n",
        0o644,
    );
    // Real speed from a second past a minute: the times left read the same through the test.
    let crond = Crond::start_fast(&tree, 1, "2026-11-21 10:01:05", 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let spool = tree.spool();
    let tab = format!("{}/{u}", spool.file_name().unwrap().to_string_lossy());
    let failed = cronctl(None, &socket, &["run", "--wait", &format!("{tab}:2")]);
    assert_eq!(failed.status.code(), Some(1), "{failed:?}");
    // The temporary directory's name, cut or not: as long in each run.
    let dir = tree
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .to_string();
    let mut words = Scrub::new().replace(&dir[dir.len() - 6..], "XXXXXX");
    for (entry, id) in ids(&cronctl(None, &socket, &["list", "--json"])) {
        let line = entry.rsplit(':').next().unwrap().to_string();
        let file = if entry.contains("crontab:") {
            "sys"
        } else {
            "usr"
        };
        words = words.replace(id, format!("id-{file}-{line:0>5}"));
    }
    let as_root = stdout(&cronctl(None, &socket, &["list"]));
    assert_golden("cronctl-list.txt", &scrubbed_table(&as_root, &words));
    let wide = stdout(&cronctl(None, &socket, &["list", "--wide"]));
    assert_golden("cronctl-list-wide.txt", &scrubbed_table(&wide, &words));
    let as_user = stdout(&cronctl(Some(u), &socket, &["list"]));
    assert_golden("cronctl-list-user.txt", &scrubbed_table(&as_user, &words));
}

#[test]
fn root_the_default_list_fits_a_hundred_columns_with_long_commands_and_file_names() {
    require_root();
    let tree = Tree::new();
    let long_name = format!("{}-and-then-some-more", "a-very-long-file-name".repeat(3));
    tree.write_file(
        &tree.cron_d().join(&long_name),
        &format!(
            "0 3 * * * root echo {}\n*/5 * * * * nobody true\n",
            "a long command ".repeat(20)
        ),
        0o644,
    );
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let table = stdout(&cronctl(None, &socket, &["list"]));
    assert!(table.contains('…') && table.contains(":1"), "{table}");
    for line in table.lines() {
        assert!(
            line.chars().count() <= 100,
            "{} columns: {line}",
            line.chars().count()
        );
    }
    let wide = stdout(&cronctl(None, &socket, &["list", "--wide"]));
    assert!(
        wide.contains(&"a long command ".repeat(20).trim_end().to_string()),
        "{wide}"
    );
}

/// `cronctl show` as the user sees it, with what changes from run to run made fixed: `words`
/// replaced, a time since a run began and how long it took; the table of its last runs with
/// their times made fixed and its columns padded again ([`scrubbed_table`]).
pub(crate) fn scrubbed_show(text: &str, words: &Scrub) -> String {
    let text = words.apply(text);
    let (head, last_runs) = match text.split_once("\nLast runs (") {
        Some((head, rest)) => (head, rest.split_once('\n')),
        None => (text.as_str(), None),
    };
    let fixed = |word: &str| {
        let digits = word.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            match &word[digits.len()..] {
                "ms" => return "5ms".to_string(),
                "s" => return "1s".to_string(),
                _ => {}
            }
        }
        word.to_string()
    };
    let mut out = String::new();
    for line in head.lines() {
        let mut words = line.split(' ').map(fixed).collect::<Vec<_>>().join(" ");
        words.push('\n');
        out.push_str(&words);
    }
    if let Some((header, runs)) = last_runs {
        out.push_str(&format!("\nLast runs ({header}\n"));
        let runs: String = runs
            .lines()
            .map(|l| format!("{}\n", l.trim_start()))
            .collect();
        let table = scrubbed_table(&crate::history::fixed_times(&runs), &Scrub::new());
        for line in table.lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    out
}

#[test]
fn root_cronctl_show_gives_one_entry_whole_its_next_and_last_runs_and_why_it_does_not_run() {
    require_root();
    let tree = Tree::new();
    let u = "nobody";
    tree.user_crontab(
        u,
        "MAILTO=ops@example.com\nCRON_OVERLAP=skip\n*/30 * * * * false\n",
        0o600,
        u,
    );
    tree.write_file(
        &tree.system_crontab(),
        "CRON_TZ=Asia/Tokyo\n0 3 * * 1-5 root echo weekdays\n0 0 30 2 * root echo never\n\
         0 0 1 1 * nosuchuser-crs echo never\n",
        0o644,
    );
    let crond = Crond::start_fast(&tree, 1, "2026-11-21 10:01:05", 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let spool = tree.spool();
    let tab = format!("{}/{u}", spool.file_name().unwrap().to_string_lossy());
    let system = tree.system_crontab().display().to_string();
    let ran = cronctl(None, &socket, &["run", "--wait", &format!("{tab}:3")]);
    assert_eq!(ran.status.code(), Some(1), "{ran:?}");
    let never = cronctl(None, &socket, &["run", &format!("{system}:4")]);
    assert_eq!(never.status.code(), Some(1), "{never:?}");
    last_runs(&socket, 2);
    // Both outcomes recorded: `show` lists the run history's last runs.
    crate::history::history(None, &socket, &[], 2);
    let dir = tree.path().display().to_string();
    let host = String::from_utf8_lossy(&crond::sys::hostname()).into_owned();
    let mut words = Scrub::new()
        .replace(&dir, "/tmp/crond-testXXXXXX")
        .replace(format!("  {host}  "), "  host  ");
    for (entry, id) in ids(&cronctl(None, &socket, &["list", "--json"])) {
        let line = entry.rsplit(':').next().unwrap().to_string();
        words = words.replace(id, format!("id-{line:0>8}"));
    }
    // A user's entry, by FILE:LINE, as its user sees it.
    let shown = cronctl(Some(u), &socket, &["show", &format!("{tab}:3")]);
    assert!(shown.status.success(), "{shown:?}");
    assert_golden("cronctl-show.txt", &scrubbed_show(&stdout(&shown), &words));
    // A system line with its own zone: both zones' times; by id.
    let id = ids(&cronctl(None, &socket, &["list", "--json"]))
        .into_iter()
        .find(|(entry, _)| entry == &format!("{system}:2"))
        .unwrap()
        .1;
    let shown = cronctl(None, &socket, &["show", &id]);
    assert!(shown.status.success(), "{shown:?}");
    assert_golden(
        "cronctl-show-zone.txt",
        &scrubbed_show(&stdout(&shown), &words),
    );
    // Why an entry does not run: a date that never comes, and a last run for a user passwd
    // does not know.
    let json = |target: String| {
        let o = cronctl(None, &socket, &["show", "--json", &target]);
        assert!(o.status.success(), "{o:?}");
        serde_json::from_str::<serde_json::Value>(stdout(&o).trim_end()).expect("one object")
    };
    let february = json(format!("{system}:3"));
    assert_eq!(february["not_running"], "its schedule has no time to come");
    assert_eq!(february["next_runs"], serde_json::json!([]));
    let unknown = json(format!("{system}:4"));
    assert_eq!(
        unknown["not_running"],
        "its last run did not run: user nosuchuser-crs unknown (no passwd entry)"
    );
    assert_eq!(
        unknown["runs"][0]["reason"],
        "user nosuchuser-crs unknown (no passwd entry)"
    );
    // The same from the run history: its reason's code and words.
    assert_eq!(unknown["history"][0]["reason"], "user-unknown");
    assert_eq!(
        unknown["history"][0]["words"],
        "user nosuchuser-crs unknown (no passwd entry)"
    );
    assert_eq!(unknown["history_error"], serde_json::Value::Null);
    let table = stdout(&cronctl(None, &socket, &["show", &format!("{system}:4")]));
    assert!(
        table.contains("  not run: user-unknown: user nosuchuser-crs unknown (no passwd entry)\n"),
        "{table}"
    );
    let user = json(format!("{tab}:3"));
    assert_eq!(user["next_runs"].as_array().unwrap().len(), 5);
    assert_eq!(user["env"][0]["name"], "MAILTO");
    assert_eq!(user["runs"][0]["exit"], 1);
    assert_eq!(user["line"], "*/30 * * * * false");
    // Root's line is no entry to the user; a wrong target is said before anything is asked.
    let hidden = cronctl(Some(u), &socket, &["show", &format!("{system}:2")]);
    assert_eq!(hidden.status.code(), Some(1), "{hidden:?}");
    assert!(
        String::from_utf8_lossy(&hidden.stderr).contains("no entry"),
        "{hidden:?}"
    );
    let wrong = cronctl(None, &socket, &["show", "nothing"]);
    assert!(
        String::from_utf8_lossy(&wrong.stderr).contains("neither FILE:LINE nor an id"),
        "{wrong:?}"
    );
}

#[test]
fn root_lines_and_files_that_did_not_load_are_listed_as_not_loaded_and_an_orphan_as_user_unknown() {
    require_root();
    let tree = Tree::new();
    let user = TestUser::create("crn", &[]);
    let u = user.name.as_str();
    tree.user_crontab(u, "0 3 * * * echo fine\n61 * * * * echo bad\n", 0o600, u);
    tree.user_crontab("nosuchuser-crn", "0 3 * * * echo orphan\n", 0o600, "root");
    tree.write_file(&tree.cron_d().join("open"), "0 3 * * * root true\n", 0o666);
    tree.write_file(&tree.system_crontab(), "0 3 * * * root echo root\n", 0o644);
    let crond = Crond::start(&tree, 1, &[]);
    crond.wait_for_log(" loaded from ", 10);
    let socket = socket_of(&tree);
    let spool = tree.spool();
    let dir = spool.file_name().unwrap().to_string_lossy().to_string();
    let json = |who: Option<&str>| {
        let o = cronctl(who, &socket, &["list", "--json"]);
        assert!(o.status.success(), "{o:?}");
        stdout(&o)
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .filter(|v| v["id"].is_null())
            .map(|v| {
                let why = v["not_loaded"].as_str().unwrap().to_string();
                (v["entry"].as_str().unwrap().to_string(), why)
            })
            .collect::<Vec<_>>()
    };
    let open = tree.cron_d().join("open").display().to_string();
    let as_root = json(None);
    assert_eq!(as_root.len(), 3, "{as_root:?}");
    let reason = |place: &str| {
        as_root
            .iter()
            .find(|(p, _)| p == place)
            .unwrap_or_else(|| panic!("{place} in {as_root:?}"))
            .1
            .clone()
    };
    assert!(reason(&format!("{dir}/{u}:2")).starts_with("column 1: "));
    assert!(reason(&open).starts_with("INSECURE MODE"), "{as_root:?}");
    assert_eq!(
        reason(&format!("{dir}/nosuchuser-crn")),
        "user unknown (ORPHAN: no passwd entry)"
    );
    // Its user sees their own line, nothing of the others.
    let own = json(Some(u));
    assert_eq!(own.len(), 1, "{own:?}");
    assert_eq!(own[0].0, format!("{dir}/{u}:2"));
    // The table: a row each, with no next run, and the count.
    let table = stdout(&cronctl(None, &socket, &["list", "--wide"]));
    let row = |place: &str| {
        table
            .lines()
            .find(|l| l.contains(&format!("{place} ")))
            .unwrap_or_else(|| panic!("{place} in {table}"))
            .to_string()
    };
    let orphan = row(&format!("{dir}/nosuchuser-crn"));
    assert!(
        orphan.starts_with("-") && orphan.contains("  user unknown  "),
        "{orphan}"
    );
    let bad = row(&format!("{dir}/{u}:2"));
    assert!(
        bad.contains("  not loaded  ") && bad.contains("not loaded: column 1: "),
        "{bad}"
    );
    assert!(
        table.ends_with("2 entries listed, 3 not loaded.\n"),
        "{table}"
    );
    // `show` of the line says why.
    let shown = cronctl(Some(u), &socket, &["show", &format!("{dir}/{u}:2")]);
    assert!(shown.status.success(), "{shown:?}");
    assert!(
        stdout(&shown).contains("  state     not loaded: column 1: "),
        "{shown:?}"
    );
}
