//! Shared by the `tests/install_*.rs` files: where the repository and the built binaries are,
//! running `make` targets into a temporary tree, reading modes and owners, and the root check.
//! Real commands only (make, install, dpkg, mandoc, systemd-analyze); nothing here fakes a
//! result, and a helper that can not do its job panics rather than letting a test pass.

use std::ffi::OsStr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub use super::root::require_root;

/// libfaketime, preloaded into a daemon that must start seconds before a minute boundary.
pub const FAKETIME_LIB: &str = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1";

/// The repository (where the Makefile is).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The directory holding the binaries cargo built for these tests (`target/debug`), passed to
/// `make install bins=...` so that the tests never start a release build.
pub fn bins() -> PathBuf {
    let cronnext = PathBuf::from(env!("CARGO_BIN_EXE_cronnext"));
    let dir = cronnext
        .parent()
        .expect("a binary has a directory")
        .to_path_buf();
    // cronctl comes from the cronctl package, built beside these by `cargo test` at the root.
    for name in ["crond", "crontab", "cronnext", "cronctl"] {
        assert!(
            dir.join(name).is_file(),
            "{name} is not built in {}",
            dir.display()
        );
    }
    dir
}

/// Fails the test when a command the suite depends on is missing (`make deps` installs it).
pub fn require_command(name: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "{name} is not installed: run `make deps` (./.ci/deps) as root"
    );
}

/// Runs a command and returns its output; panics with the output if it could not start.
pub fn run(cmd: &mut Command) -> Output {
    cmd.output()
        .unwrap_or_else(|e| panic!("could not run {cmd:?}: {e}"))
}

/// Runs a command that must succeed; returns stdout as text.
pub fn run_ok(cmd: &mut Command) -> String {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `make -C REPO TARGET bins=BINS ARGS...`, which must succeed; returns stdout.
pub fn make<I, S>(target: &str, args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    require_command("make");
    let mut cmd = Command::new("make");
    cmd.arg("--no-print-directory")
        .arg("-C")
        .arg(repo())
        .arg(target)
        .arg(format!("bins={}", bins().display()))
        .args(args);
    run_ok(&mut cmd)
}

/// `make install DESTDIR=dest ARGS...`.
pub fn make_install<I, S>(dest: &Path, args: I) -> String
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let mut all: Vec<std::ffi::OsString> = vec![format!("DESTDIR={}", dest.display()).into()];
    all.extend(args.into_iter().map(|a| a.as_ref().to_os_string()));
    make("install", all)
}

/// The permission bits of a path (with setuid/setgid/sticky), without following a final
/// symlink.
pub fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .permissions()
        .mode()
        & 0o7777
}

/// (uid, gid) of a path, without following a final symlink.
pub fn owner(path: &Path) -> (u32, u32) {
    let m = std::fs::symlink_metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    (m.uid(), m.gid())
}

pub fn is_regular(path: &Path) -> bool {
    std::fs::symlink_metadata(path)
        .map(|m| m.file_type().is_file())
        .unwrap_or(false)
}

pub fn link_target(path: &Path) -> PathBuf {
    std::fs::read_link(path).unwrap_or_else(|e| panic!("{} is not a symlink: {e}", path.display()))
}

/// The gid of `name` in a group(5) file.
pub fn gid_in(group_file: &Path, name: &str) -> Option<u32> {
    let text = std::fs::read_to_string(group_file).ok()?;
    text.lines().find_map(|line| {
        let mut f = line.split(':');
        (f.next()? == name).then(|| f.nth(1)?.parse().ok())?
    })
}

/// The /etc files the package ships, relative to /etc.
pub const ETC_FILES: [&str; 8] = [
    "crontab",
    "default/cron",
    "pam.d/cron",
    "cron.d/.placeholder",
    "cron.hourly/.placeholder",
    "cron.daily/.placeholder",
    "cron.weekly/.placeholder",
    "cron.monthly/.placeholder",
];

/// Every file, symlink and the spool dir `make install` creates outside /etc (PREFIX=/usr), with
/// its mode (symlinks: 0o777) as installed without the crontab group (SETGID=no).
pub const INSTALLED: [(&str, u32); 11] = [
    ("usr/sbin/crond", 0o755),
    ("usr/sbin/cron", 0o777),
    ("usr/bin/crontab", 0o755),
    ("usr/bin/cronnext", 0o755),
    ("usr/share/man/man1/crontab.1", 0o644),
    ("usr/share/man/man1/cronnext.1", 0o644),
    ("usr/share/man/man5/crontab.5", 0o644),
    ("usr/share/man/man8/crond.8", 0o644),
    ("usr/share/man/man8/cron.8", 0o777),
    ("usr/lib/systemd/system/crond.service", 0o644),
    ("var/spool/cron/crontabs", 0o1730),
];
