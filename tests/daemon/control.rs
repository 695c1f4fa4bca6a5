//! The control socket end to end: the real daemon, the real `cronctl`, real users (two made for
//! the test, and `nobody`) who can't read the spool and see and run their own entries only
//! through the socket; and a user who holds and floods the socket while root is served.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::daemon::*;

/// The `cronctl` binary, built by its own package beside crond (as the cluster tests find it).
fn cronctl_bin() -> PathBuf {
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
fn socket_of(tree: &Tree) -> PathBuf {
    tree.pid_file().with_file_name("crond.sock")
}

/// `cronctl --socket SOCKET ARGS` as `user` (`None`: root).
pub(crate) fn cronctl(user: Option<&str>, socket: &Path, args: &[&str]) -> Output {
    let mut command = match user {
        None => Command::new(cronctl_bin()),
        Some(user) => {
            let mut c = as_user(user);
            c.arg(cronctl_bin());
            c
        }
    };
    command
        .arg("--socket")
        .arg(socket)
        .args(args)
        .output()
        .expect("run cronctl")
}

fn stdout(o: &Output) -> String {
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
    crond.wait_for_log("entries loaded", 10);
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
    assert!(stdout(&nobody).contains("(no entries)"), "{nobody:?}");
    // The table shows the schedule as written and the policy.
    let table = stdout(&cronctl(Some(a), &socket, &["list"]));
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
        v["id"].to_string()
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
    crond.wait_for_log("entries loaded", 10);
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

/// Not a test on its own: the process `nobody` runs for
/// `root_users_holding_and_flooding_the_control_socket_starve_neither_root_nor_the_loop`
/// with `CROND_TEST_HOLD_CONTROL="PATH SECONDS"` (without it, this does nothing). It keeps 16
/// connections to the socket open, sends nothing, opens a new one for each the daemon closes
/// (at once when turned away as busy), and prints how many the daemon closed.
#[test]
#[ignore = "a helper process of a control socket test"]
fn hold_and_flood_control_connections() {
    use std::io::Read;
    use std::os::fd::AsFd;
    use std::os::unix::net::UnixStream;
    let Ok(spec) = std::env::var("CROND_TEST_HOLD_CONTROL") else {
        return;
    };
    let (path, seconds) = spec.rsplit_once(' ').unwrap();
    let seconds: u64 = seconds.parse().unwrap();
    // Non-blocking connects: a full backlog is tried again on the next round.
    let connect = || {
        let s = UnixStream::connect(path).ok()?;
        s.set_nonblocking(true).unwrap();
        Some(s)
    };
    let mut held: Vec<Option<UnixStream>> = (0..16).map(|_| connect()).collect();
    let (mut closed, mut attempts) = (0u64, 0u64);
    let end = std::time::Instant::now() + std::time::Duration::from_secs(seconds);
    while std::time::Instant::now() < end {
        let ready: Vec<bool> = {
            let mut fds: Vec<nix::poll::PollFd<'_>> = held
                .iter()
                .flatten()
                .map(|s| nix::poll::PollFd::new(s.as_fd(), nix::poll::PollFlags::POLLIN))
                .collect();
            nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(100u16)).unwrap();
            fds.iter().map(|f| f.any().unwrap_or(false)).collect()
        };
        let mut ready = ready.into_iter();
        for slot in held.iter_mut() {
            let gone = match slot {
                Some(s) => {
                    let mut byte = [0u8; 64];
                    ready.next().unwrap_or(false)
                        && !matches!(s.read(&mut byte), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
                }
                None => true,
            };
            if gone {
                closed += u64::from(slot.is_some());
                attempts += 1;
                *slot = connect();
            }
        }
    }
    #[allow(clippy::print_stdout)]
    {
        println!("held: closed by the daemon {closed}, connects {attempts}");
    }
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

#[test]
#[allow(clippy::print_stdout)] // the figures measured, for the reader of the test's output
fn root_users_holding_and_flooding_the_control_socket_starve_neither_root_nor_the_loop() {
    require_root();
    const HOLD_S: u64 = 12;
    let tree = Tree::new();
    // Three users, each holding as many connections as it can (4: every slot but root's 4)
    // and reconnecting each one the daemon closes.
    let (a, b) = (TestUser::create("cfa", &[]), TestUser::create("cfb", &[]));
    // Real time: the connections' deadlines are the daemon's, in its clock.
    let crond = Crond::start_fast(&tree, 1, START, 1, &[]);
    crond.wait_for_log("control socket at", 10);
    let socket = socket_of(&tree);
    let holders: Vec<std::process::Child> = ["nobody", &a.name, &b.name]
        .into_iter()
        .map(|user| {
            as_user(user)
                .arg(std::env::current_exe().unwrap())
                .args(["--exact", "control::hold_and_flood_control_connections"])
                .args(["--ignored", "--nocapture", "--test-threads", "1"])
                .env(
                    "CROND_TEST_HOLD_CONTROL",
                    format!("{} {HOLD_S}", socket.display()),
                )
                .stdout(Stdio::piped())
                .spawn()
                .expect("run this test binary as a user")
        })
        .collect();
    std::thread::sleep(std::time::Duration::from_secs(1));
    let (ticks, since) = (cpu_ticks(crond.pid()), std::time::Instant::now());
    let (mut ok, mut slowest) = (0, std::time::Duration::ZERO);
    for _ in 0..20 {
        let asked = std::time::Instant::now();
        let o = cronctl(None, &socket, &["status"]);
        slowest = slowest.max(asked.elapsed());
        ok += usize::from(o.status.success() && stdout(&o).contains("entries: 0 (all)"));
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    // A user's own requests are turned away (busy) or answered: never a wrong answer.
    let nobody = cronctl(Some("nobody"), &socket, &["status"]);
    let nobody_ok = nobody.status.success();
    assert!(
        nobody_ok || String::from_utf8_lossy(&nobody.stderr).contains("too many connections"),
        "{nobody:?}"
    );
    let (ticks, seconds) = (
        cpu_ticks(crond.pid()) - ticks,
        since.elapsed().as_secs_f64(),
    );
    let mut closed = 0u64;
    for holder in holders {
        let out = holder.wait_with_output().unwrap();
        let out = String::from_utf8_lossy(&out.stdout);
        let report = out
            .lines()
            .find_map(|l| l.split("held: closed by the daemon ").nth(1))
            .unwrap_or_else(|| panic!("the holder's report in {out}"));
        closed += report
            .split_once(", connects ")
            .unwrap()
            .0
            .parse::<u64>()
            .unwrap();
    }
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
    println!(
        "3 users holding 16 connections each and renewing them for {HOLD_S} s: root's status \
         {ok}/20 (the slowest in {:.2} s); daemon CPU {ticks} ticks in {seconds:.1} s ({:.2} % \
         of a core); {closed} of their connections closed by the daemon; nobody's own status \
         answered: {nobody_ok}",
        slowest.as_secs_f64(),
        ticks as f64 / hz / seconds * 100.0
    );
    assert_eq!(ok, 20, "every status of root is answered");
    // Twelve held at a time (4 per user), each closed 2 s after its accept; the rest turned
    // away at most 16 per 100 ms rest of the listener: far fewer than a spinning accept loop
    // would close.
    let most = 16 * (HOLD_S * 10 + 10) + 12 * (HOLD_S / 2 + 2);
    assert!(
        closed <= most,
        "{closed} connections accepted and closed, more than {most}"
    );
    assert!(
        closed > 0,
        "the holders' connections were turned away or timed out"
    );
}
