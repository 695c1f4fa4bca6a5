//! Test scaffolding for the `crontab` command: a private tree in /tmp with a copy of the binary
//! installed setgid `crontab` (as `make install` does), a spool directory `root:crontab`
//! 1730 that is bind-mounted over /var/spool inside a private mount namespace (`unshare -m`), and
//! helpers that run the command as a real user (`nobody`) with `setpriv`.
//!
//! It must not touch the host's /var/spool, /etc/cron.allow or /etc/cron.deny: the only change
//! to the host is the `crontab` group, created when missing (as the package would).

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

pub use super::root::require_root;

pub const BIN: &str = env!("CARGO_BIN_EXE_crontab");

/// The user the unprivileged tests run as.
pub const USER: &str = "nobody";

fn id_of(what: &str, name: &str) -> u32 {
    let out = Command::new("id")
        .arg(what)
        .arg(name)
        .output()
        .expect("run id");
    assert!(out.status.success(), "id {what} {name} failed");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a number from id")
}

pub fn uid_of(name: &str) -> u32 {
    id_of("-u", name)
}

pub fn gid_of(name: &str) -> u32 {
    id_of("-g", name)
}

/// The gid of the group `crontab`, created (system group) if missing.
pub fn crontab_gid() -> u32 {
    static GID: OnceLock<u32> = OnceLock::new();
    *GID.get_or_init(|| {
        let lookup = || {
            let out = Command::new("getent")
                .args(["group", "crontab"])
                .output()
                .unwrap();
            let line = String::from_utf8_lossy(&out.stdout).to_string();
            line.split(':')
                .nth(2)
                .and_then(|g| g.trim().parse::<u32>().ok())
        };
        if let Some(g) = lookup() {
            return g;
        }
        // Another test binary may create it at the same moment: "already exists" is fine.
        let _ = Command::new("groupadd")
            .args(["--system", "crontab"])
            .status();
        lookup().expect("the crontab group exists after groupadd")
    })
}

fn chown(path: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::chown(path, Some(uid), Some(gid)).expect("chown");
}

fn chmod(path: &Path, mode: u32) {
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).expect("chmod");
}

/// One private tree:
/// * `bin/crontab`: the binary, `root:crontab` 2755 (privileged when run);
/// * `bin/crontab-plain`: the same binary without setgid (honours the path options);
/// * `varspool/cron/crontabs`: the spool, `root:crontab` 1730, seen as /var/spool/cron/crontabs
///   inside the namespace;
/// * `home`: `nobody`'s writable HOME and TMPDIR, with the editor scripts.
#[derive(Debug)]
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Sandbox {
    pub fn new() -> Sandbox {
        require_root();
        let gid = crontab_gid();
        let dir = tempfile::Builder::new()
            .prefix("crontab-test.")
            .tempdir_in("/tmp")
            .unwrap();
        chmod(dir.path(), 0o755);
        let s = Sandbox { dir };
        fs::create_dir_all(s.path("bin")).unwrap();
        chmod(&s.path("bin"), 0o755);
        for (name, mode) in [("crontab", 0o2755), ("crontab-plain", 0o755)] {
            let b = s.path("bin").join(name);
            fs::copy(BIN, &b).unwrap();
            chown(&b, 0, gid);
            // chmod after chown: chown clears the setgid bit.
            chmod(&b, mode);
        }
        fs::create_dir_all(s.spool()).unwrap();
        chmod(&s.path("varspool"), 0o755);
        chmod(&s.path("varspool/cron"), 0o755);
        chown(&s.spool(), 0, gid);
        chmod(&s.spool(), 0o1730);
        fs::create_dir_all(s.path("home/tmp")).unwrap();
        chown(&s.path("home"), uid_of(USER), gid_of(USER));
        chown(&s.path("home/tmp"), uid_of(USER), gid_of(USER));
        chmod(&s.path("home/tmp"), 0o700);
        s
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    /// The spool directory as the host sees it.
    pub fn spool(&self) -> PathBuf {
        self.path("varspool/cron/crontabs")
    }

    pub fn spool_file(&self, user: &str) -> PathBuf {
        self.spool().join(user)
    }

    /// Names in the spool directory, sorted.
    pub fn spool_names(&self) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(self.spool())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    /// Writes an executable script (the editor) readable by everyone.
    pub fn script(&self, name: &str, body: &str) -> PathBuf {
        let p = self.path("home").join(name);
        fs::write(&p, format!("#!/bin/sh\n{body}")).unwrap();
        chmod(&p, 0o755);
        p
    }

    /// A file `nobody` owns, with `text`.
    pub fn user_file(&self, name: &str, text: &[u8]) -> PathBuf {
        let p = self.path("home").join(name);
        fs::write(&p, text).unwrap();
        chown(&p, uid_of(USER), gid_of(USER));
        p
    }

    /// Runs the setgid binary as `user` (None: as root) in a private mount namespace where this
    /// sandbox's spool is /var/spool/cron/crontabs. Only `env` and PATH are in the environment.
    pub fn run(
        &self,
        user: Option<&str>,
        args: &[&str],
        env: &[(&str, &str)],
        stdin: &[u8],
    ) -> Output {
        self.run_binary("crontab", true, user, args, env, stdin)
    }

    /// Runs the binary without setgid, outside any namespace (path options are honoured).
    pub fn run_plain(
        &self,
        user: Option<&str>,
        args: &[&str],
        env: &[(&str, &str)],
        stdin: &[u8],
    ) -> Output {
        self.run_binary("crontab-plain", false, user, args, env, stdin)
    }

    fn run_binary(
        &self,
        bin: &str,
        namespace: bool,
        user: Option<&str>,
        args: &[&str],
        env: &[(&str, &str)],
        stdin: &[u8],
    ) -> Output {
        let mut argv: Vec<String> = Vec::new();
        if namespace {
            argv.extend(
                [
                    "unshare",
                    "-m",
                    "--propagation",
                    "private",
                    "--",
                    "sh",
                    "-c",
                ]
                .map(String::from),
            );
            argv.push("mount --bind \"$0\" /var/spool && exec \"$@\"".into());
            argv.push(self.path("varspool").display().to_string());
        }
        if let Some(u) = user {
            argv.extend(["setpriv", "--reuid", u].map(String::from));
            argv.extend(["--regid".to_string(), gid_of(u).to_string()]);
            argv.extend(["--init-groups", "--"].map(String::from));
        }
        argv.extend(["env", "-i", "PATH=/usr/bin:/bin"].map(String::from));
        if user.is_some() {
            argv.push(format!("TMPDIR={}", self.path("home/tmp").display()));
            argv.push(format!("HOME={}", self.path("home").display()));
        }
        for (k, v) in env {
            argv.push(format!("{k}={v}"));
        }
        argv.push(self.path("bin").join(bin).display().to_string());
        argv.extend(args.iter().map(|a| a.to_string()));
        let mut child = Command::new(&argv[0])
            .args(&argv[1..])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the crontab command");
        let mut input = child.stdin.take().unwrap();
        let data = stdin.to_vec();
        // A writer thread: the command may stop reading (size limit) and the pipe must not block
        // the test; a refused write (EPIPE) is expected then.
        let writer = std::thread::spawn(move || {
            let _ = input.write_all(&data);
        });
        let out = child.wait_with_output().expect("wait for crontab");
        writer.join().unwrap();
        out
    }
}

/// Both streams of a run, for messages in assertions.
pub fn show(out: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Owner uid, group gid and permission bits of a path (not following a symlink).
pub fn owner_mode(p: &Path) -> (u32, u32, u32) {
    let m = fs::symlink_metadata(p).unwrap();
    (m.uid(), m.gid(), m.mode() & 0o7777)
}

pub fn os(s: &str) -> &OsStr {
    OsStr::new(s)
}
