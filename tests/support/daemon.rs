//! Shared scaffolding for the daemon's integration tests: a temporary tree with every path the
//! daemon uses, the real `crond` binary started under libfaketime just before a minute boundary
//! (the clock ten times faster), its log read back, real users created and removed.
//!
//! It must not fake what it tests: jobs are real processes, files have real owners and modes,
//! users are real passwd entries. Root-only helpers panic when not root.

use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub use super::root::{is_root, require_root};
pub use super::user::TestUser;

pub const FAKETIME_LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";
/// Every test starts ten fake seconds (one real second) before this boundary.
pub const START: &str = "2026-11-21 09:59:50";

/// The current user's name (the owner of spool files in tests that run without root).
pub fn current_user() -> String {
    let out = Command::new("id").arg("-un").output().expect("run id");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A temporary tree: spool/, cron.d/, crontab, out/ (world-writable, for jobs of any user),
/// pam.d/ (the shipped service `cron` and the system's common-* files it includes).
pub struct Tree {
    pub dir: tempfile::TempDir,
}

impl Tree {
    pub fn new() -> Tree {
        let dir = tempfile::Builder::new()
            .prefix("crond-test")
            .tempdir()
            .expect("tempdir");
        fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
        for sub in ["spool", "cron.d", "out"] {
            fs::create_dir(dir.path().join(sub)).expect("mkdir");
        }
        fs::set_permissions(dir.path().join("out"), fs::Permissions::from_mode(0o1777))
            .expect("chmod out");
        let tree = Tree { dir };
        tree.write_file(&tree.system_crontab(), "", 0o644);
        tree.set_pam_service(&shipped_pam_service());
        tree
    }

    /// The PAM directory the daemon reads (`--pam-dir`): the service `cron` and links to the
    /// system's common-* files, which a service's `@include` looks for beside it.
    pub fn pam_dir(&self) -> PathBuf {
        self.path().join("pam.d")
    }

    /// The shipped PAM service with its pam_env lines reading `environment` (written to
    /// `pam-environment` in the tree) instead of the machine's /etc/environment and
    /// /etc/default/locale, and its pam_limits line reading `limits` (likewise) when given; so a
    /// job's environment and limits don't depend on the machine the tests run on.
    pub fn use_pam_files(&self, environment: &str, limits: Option<&str>) {
        let env_file = self.path().join("pam-environment");
        fs::write(&env_file, environment).expect("write the PAM environment");
        let mut text = String::new();
        let mut env_done = false;
        for line in shipped_pam_service().lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            if words.get(2) == Some(&"pam_env.so") {
                if !env_done {
                    text += &format!(
                        "session required pam_env.so conffile=/dev/null envfile={}\n",
                        env_file.display()
                    );
                    env_done = true;
                }
                continue;
            }
            if let (Some(&"pam_limits.so"), Some(limits)) = (words.get(2), limits) {
                let conf = self.path().join("pam-limits.conf");
                fs::write(&conf, limits).expect("write the PAM limits");
                text += &format!("session required pam_limits.so conf={}\n", conf.display());
                continue;
            }
            text += line;
            text.push('\n');
        }
        assert!(env_done, "the shipped service reads pam_env");
        self.set_pam_service(&text);
    }

    /// Writes the PAM service `cron` the daemon uses (the shipped one, unless a test changes
    /// it).
    pub fn set_pam_service(&self, text: &str) {
        let dir = self.pam_dir();
        if !dir.exists() {
            fs::create_dir(&dir).expect("mkdir pam.d");
            for entry in fs::read_dir("/etc/pam.d").expect("/etc/pam.d") {
                let name = entry.expect("entry").file_name();
                if name.to_string_lossy().starts_with("common-") {
                    std::os::unix::fs::symlink(
                        Path::new("/etc/pam.d").join(&name),
                        dir.join(&name),
                    )
                    .expect("link a common- file");
                }
            }
        }
        fs::write(dir.join("cron"), text).expect("write the PAM service");
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }
    pub fn spool(&self) -> PathBuf {
        self.path().join("spool")
    }
    pub fn cron_d(&self) -> PathBuf {
        self.path().join("cron.d")
    }
    pub fn system_crontab(&self) -> PathBuf {
        self.path().join("crontab")
    }
    pub fn out(&self, name: &str) -> PathBuf {
        self.path().join("out").join(name)
    }
    /// In out/ (mode 1777), so that a daemon started as another user can create it.
    pub fn pid_file(&self) -> PathBuf {
        self.path().join("out").join("crond.pid")
    }
    pub fn reboot_marker(&self) -> PathBuf {
        self.path().join("out").join("crond.reboot")
    }
    pub fn log_file(&self, n: usize) -> PathBuf {
        self.path().join(format!("log.{n}"))
    }

    /// Writes a file through a temporary name and a rename, as crontab(1) and editors do.
    pub fn write_file(&self, path: &Path, text: &str, mode: u32) {
        let tmp = self.path().join(".tmp-write");
        let mut f = fs::File::create(&tmp).expect("create");
        f.write_all(text.as_bytes()).expect("write");
        drop(f);
        fs::set_permissions(&tmp, fs::Permissions::from_mode(mode)).expect("chmod");
        fs::rename(&tmp, path).expect("rename");
    }

    /// A user's crontab in the spool, owned by `owner` (a user name), mode `mode`.
    pub fn user_crontab(&self, user: &str, text: &str, mode: u32, owner: &str) {
        let path = self.spool().join(user);
        self.write_file(&path, text, mode);
        chown(&path, owner);
    }

    /// `-f --log stderr` and every path option pointing into this tree.
    pub fn daemon_args<'c>(&self, command: &'c mut Command) -> &'c mut Command {
        command
            .args(["-f", "--log", "stderr"])
            .arg("--spool-dir")
            .arg(self.spool())
            .arg("--system-crontab")
            .arg(self.system_crontab())
            .arg("--cron-d")
            .arg(self.cron_d())
            .arg("--pid-file")
            .arg(self.pid_file())
            .arg("--reboot-marker")
            .arg(self.reboot_marker())
            .arg("--pam-dir")
            .arg(self.pam_dir())
            .arg("--state-dir")
            .arg(self.state_dir())
    }

    /// The daemon's `--state-dir` (it makes the directory itself).
    pub fn state_dir(&self) -> PathBuf {
        self.path().join("state")
    }
}

/// etc/pam.d/cron as shipped.
pub fn shipped_pam_service() -> String {
    fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/etc/pam.d/cron"))
        .expect("read etc/pam.d/cron")
}

pub fn chown(path: &Path, owner: &str) {
    if !is_root() {
        return; // only root can give files away; the file is the current user's already
    }
    let status = Command::new("chown")
        .arg(owner)
        .arg(path)
        .status()
        .expect("chown");
    assert!(status.success(), "chown {owner} {}", path.display());
}

/// The uid of the user `name`, as `id -u` says it.
pub fn uid_of_user(name: &str) -> String {
    let out = Command::new("id")
        .args(["-u", name])
        .output()
        .expect("id -u");
    assert!(out.status.success(), "id -u {name}");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

pub fn uid_of(path: &Path) -> u32 {
    fs::metadata(path).expect("stat").uid()
}

/// A running `crond -f --log stderr` under libfaketime.
/// How a test daemon is started: at fake time `start`, `speed` times faster than real time,
/// through `wrapper` (e.g. `setpriv`), with `extra` arguments, a steppable `clock` file, and
/// A process's CPU time so far, in clock ticks (utime + stime of /proc/PID/stat): what the
/// tests that hold the daemon's sockets read before and after.
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    // After the command: state is field 3, utime 14 and stime 15.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// `env` added to its environment.
struct Launch<'a> {
    start: &'a str,
    speed: u32,
    wrapper: &'a [&'a str],
    extra: &'a [&'a str],
    clock: Option<&'a Path>,
    env: &'a [(&'a str, &'a str)],
}

impl Default for Launch<'_> {
    fn default() -> Self {
        Launch {
            start: START,
            speed: 10,
            wrapper: &[],
            extra: &[],
            clock: None,
            env: &[],
        }
    }
}

pub struct Crond {
    pub child: Option<Child>,
    pub log: PathBuf,
}

impl Crond {
    /// Starts the daemon at [`START`] (fake), ten times faster than real time.
    pub fn start(tree: &Tree, n: usize, extra: &[&str]) -> Crond {
        Crond::start_at(tree, n, START, extra)
    }

    pub fn start_at(tree: &Tree, n: usize, start: &str, extra: &[&str]) -> Crond {
        Crond::start_wrapped(tree, n, start, &[], extra)
    }

    /// Starts at `start` with the fake clock `speed` times faster than real time.
    pub fn start_fast(tree: &Tree, n: usize, start: &str, speed: u32, extra: &[&str]) -> Crond {
        Crond::start_full(
            tree,
            n,
            Launch {
                start,
                speed,
                extra,
                ..Launch::default()
            },
        )
    }

    /// Starts at [`START`] with `env` added to the daemon's environment.
    pub fn start_with_env(tree: &Tree, n: usize, extra: &[&str], env: &[(&str, &str)]) -> Crond {
        Crond::start_full(
            tree,
            n,
            Launch {
                extra,
                env,
                ..Launch::default()
            },
        )
    }

    /// Starts at `start`, ten times faster, with a clock that [`Crond::set_clock`] steps.
    pub fn start_steppable(tree: &Tree, n: usize, start: &str, extra: &[&str]) -> Crond {
        let clock = tree.path().join("out").join("clock");
        Crond::start_full(
            tree,
            n,
            Launch {
                start,
                extra,
                clock: Some(&clock),
                ..Launch::default()
            },
        )
    }

    /// Steps the clock of a daemon from [`Crond::start_steppable`] to `to` (it goes on at x10
    /// from there), as settimeofday would, and sends SIGHUP, as the kernel's notice of a clock
    /// change (which libfaketime can't produce) would wake the daemon.
    pub fn set_clock(&self, tree: &Tree, to: &str) {
        let clock = tree.path().join("out").join("clock");
        // Written beside and renamed over: libfaketime reads the file at every clock call, and
        // must never see it empty or half written.
        let new = tree.path().join("out").join("clock.new");
        fs::write(&new, format!("@{to} x10\n")).expect("clock file");
        fs::rename(&new, &clock).expect("clock file");
        let status = Command::new("kill")
            .args(["-HUP", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success());
    }

    /// Starts the daemon through a wrapper command (e.g. `setpriv` to run it as another user).
    pub fn start_wrapped(
        tree: &Tree,
        n: usize,
        start: &str,
        wrapper: &[&str],
        extra: &[&str],
    ) -> Crond {
        Crond::start_full(
            tree,
            n,
            Launch {
                start,
                wrapper,
                extra,
                ..Launch::default()
            },
        )
    }

    fn start_full(tree: &Tree, n: usize, launch: Launch<'_>) -> Crond {
        let Launch {
            start,
            speed,
            wrapper,
            extra,
            clock,
            env,
        } = launch;
        assert!(
            Path::new(FAKETIME_LIB).exists(),
            "libfaketime is missing: run .ci/deps (Debian package faketime)"
        );
        let log = tree.log_file(n);
        let mut command = match wrapper.split_first() {
            // libfaketime must start after the wrapper has changed user: its shared memory,
            // made by a root process, can't be opened by the daemon's user.
            Some((program, args)) => {
                let mut c = Command::new(program);
                c.args(args)
                    .arg("env")
                    .arg(format!("LD_PRELOAD={FAKETIME_LIB}"))
                    .arg(env!("CARGO_BIN_EXE_crond"));
                c
            }
            None => Command::new(env!("CARGO_BIN_EXE_crond")),
        };
        if wrapper.is_empty() {
            command.env("LD_PRELOAD", FAKETIME_LIB);
        }
        match clock {
            // The file is read at every clock call: rewriting it steps the clock.
            Some(file) => {
                fs::write(file, format!("@{start} x{speed}\n")).expect("clock file");
                command
                    .env("FAKETIME_TIMESTAMP_FILE", file)
                    .env("FAKETIME_NO_CACHE", "1");
            }
            None => {
                command.env("FAKETIME", format!("@{start} x{speed}"));
            }
        }
        command.envs(env.iter().copied());
        tree.daemon_args(&mut command)
            .args(extra)
            .env("FAKETIME_DONT_RESET", "1")
            // With --localtime the zone comes from that file; TZ would override it.
            .env(
                "TZ",
                if extra.contains(&"--localtime") {
                    ""
                } else {
                    "UTC"
                },
            );
        Crond::spawn(&mut command, log)
    }

    /// Starts `command` (a crond command line) with its stderr in `log` and no stdin.
    pub fn spawn(command: &mut Command, log: PathBuf) -> Crond {
        let err = fs::File::create(&log).expect("log file");
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err)
            .spawn()
            .expect("start crond");
        Crond {
            child: Some(child),
            log,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    pub fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits (real time, at most `secs`) until the log has a line containing `needle`.
    pub fn wait_for_log(&self, needle: &str, secs: u64) -> String {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let text = self.log_text();
            if let Some(line) = text.lines().find(|l| l.contains(needle)) {
                return line.to_string();
            }
            assert!(
                Instant::now() < deadline,
                "no log line with {needle:?} within {secs} s; the log:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The daemon's children but its history writer (which lives as long as it does): its
    /// job children, and its cluster helper.
    pub fn job_children(&self) -> Vec<u32> {
        let list = format!("/proc/{0}/task/{0}/children", self.pid());
        let children = fs::read_to_string(&list).expect("the daemon's children");
        children
            .split_whitespace()
            .map(|pid| pid.parse().expect("a pid"))
            .filter(|pid| !is_history_writer(*pid))
            .collect()
    }

    /// The pid of the daemon's history writer (waits 10 s at most for one).
    pub fn history_writer(&self) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        let list = format!("/proc/{0}/task/{0}/children", self.pid());
        loop {
            let children = fs::read_to_string(&list).unwrap_or_default();
            let found = children
                .split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .find(|&pid| is_history_writer(pid));
            if let Some(pid) = found {
                return pid;
            }
            assert!(
                Instant::now() < deadline,
                "no history writer under the daemon"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Waits (real time, at most `secs`) until every job child has exited and been reaped, so
    /// that whatever the jobs were going to log is in the log.
    pub fn wait_for_no_children(&self, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let children = self.job_children();
            if children.is_empty() {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "the daemon still has children {children:?} after {secs} s"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn stop(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("running");
        let status = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(status.success());
        wait_with_timeout(&mut child, 10)
    }
}

impl Drop for Crond {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        sweep_faketime_leftovers();
    }
}

/// Removes what libfaketime left in /dev/shm for processes that have ended. Each process it is
/// preloaded into makes a semaphore and a shared memory object named after its pid and removes
/// them at a normal exit, not at an `exec` or a kill: every job shell and killed daemon leaves a
/// pair, thousands over a run of the suite. Objects of a live pid are kept (another test's).
fn sweep_faketime_leftovers() {
    let Ok(dir) = fs::read_dir("/dev/shm") else {
        return;
    };
    for entry in dir.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let pid = name
            .strip_prefix("faketime_shm_")
            .or_else(|| name.strip_prefix("sem.faketime_sem_"));
        let ended = pid
            .filter(|p| p.parse::<u32>().is_ok())
            .is_some_and(|p| !Path::new("/proc").join(p).exists());
        if ended {
            let _ = fs::remove_file(entry.path());
        }
    }
}

pub fn wait_with_timeout(child: &mut Child, secs: u64) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "process did not exit in {secs} s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits (real time) until `path` exists and returns its content.
pub fn wait_for_file(path: &Path, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        // A job may write its file in several steps (`(id -u; id -G) > f`): wait until the
        // text is there and has stopped changing.
        if let Ok(text) = fs::read_to_string(path)
            && !text.is_empty()
        {
            std::thread::sleep(Duration::from_millis(150));
            if fs::read_to_string(path).is_ok_and(|again| again == text) {
                return text;
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} did not appear within {secs} s",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl TestUser {
    fn id(&self, flag: &str) -> String {
        let out = Command::new("id")
            .arg(flag)
            .arg(&self.name)
            .output()
            .expect("run id");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// The user's uid, as `id -u` prints it.
    pub fn uid(&self) -> String {
        self.id("-u")
    }

    /// The user's groups, as `id -G` prints them.
    pub fn groups(&self) -> String {
        self.id("-G")
    }

    /// Takes the user out of the supplementary group `group` (`gpasswd -d`).
    pub fn leave_group(&self, group: &str) {
        let _lock = super::user::passwd_lock();
        let out = Command::new("gpasswd")
            .args(["-d", &self.name, group])
            .output()
            .expect("run gpasswd");
        assert!(
            out.status.success(),
            "gpasswd -d {} {group}: {}",
            self.name,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// A real user for a job to run as: its own group and the extra group `users`, home `home`
/// (not created).
pub fn user_with_home(tag: &str, home: &Path) -> TestUser {
    let home = home.to_str().expect("a UTF-8 home");
    TestUser::create(
        tag,
        &["-U", "-G", "users", "-s", "/bin/sh", "-M", "-d", home],
    )
}

/// Whether `pid` is a history writer (`cronctl history-writer`).
pub fn is_history_writer(pid: u32) -> bool {
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    cmdline
        .split(|&b| b == 0)
        .any(|arg| arg == b"history-writer")
}
