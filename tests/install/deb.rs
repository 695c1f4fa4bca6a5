//! `make deb`: the Debian packages debhelper builds from debian/ (`dpkg-buildpackage -b`, here
//! from the test build's binaries): their metadata, files and modes as dpkg-deb lists them,
//! maintainer scripts that are debhelper's (no direct systemctl, the setgid bit through
//! dpkg-statoverride), lintian as the archive runs it, and, as root, piuparts' cycle in real
//! Debian roots: install, remove, purge and reinstall in a clean root (nothing left behind but
//! the users' crontabs), and Debian's `cron` to crond and back, with crontabs, /etc/cron.d and
//! the spool dir kept at every step.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::install::*;

/// The packages `make deb` built once for all the tests of this binary (uncompressed: the debug
/// binaries are large and xz is slow): the .changes that lists them.
fn built() -> PathBuf {
    static CHANGES: OnceLock<PathBuf> = OnceLock::new();
    CHANGES
        .get_or_init(|| {
            let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("install_deb");
            let _ = std::fs::remove_dir_all(&out);
            build_deb(&out)
        })
        .clone()
}

/// crond's .deb (not its -dbgsym).
pub(crate) fn deb() -> PathBuf {
    package(&built(), "crond_")
}

fn package(changes: &Path, prefix: &str) -> PathBuf {
    let dir = changes.parent().expect("a dir");
    let debs: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("debout")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
        .collect();
    assert_eq!(debs.len(), 1, "one {prefix}*.deb built: {debs:?}");
    debs.into_iter().next().expect("one")
}

fn build_deb(out: &Path) -> PathBuf {
    require_command("dpkg-buildpackage");
    require_command("dh");
    make(
        "deb",
        [
            format!("debout={}", out.display()),
            "debcompress=none".to_string(),
        ],
    );
    let changes: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("debout")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "changes"))
        .collect();
    assert_eq!(changes.len(), 1, "one .changes: {changes:?}");
    changes.into_iter().next().expect("one")
}

fn field(deb: &Path, name: &str) -> String {
    run_ok(Command::new("dpkg-deb").arg("-f").arg(deb).arg(name))
        .trim()
        .to_string()
}

/// The names of a relation field, without versions.
fn names(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(|s| s.split('(').next().unwrap_or("").trim().to_string())
        .collect()
}

/// One file of the control archive (`./postinst`, `./conffiles`).
fn control_file(deb: &Path, name: &str) -> String {
    run_ok(
        Command::new("sh")
            .arg("-c")
            .arg(r#"dpkg-deb --ctrl-tarfile "$1" | tar -xOf - "./$2""#)
            .arg("sh")
            .arg(deb)
            .arg(name),
    )
}

/// The package's conffiles (under /etc) and their modes; /etc/crontab and /etc/cron.* are
/// cron-daemon-common's.
const DEB_ETC: [(&str, u32); 3] = [
    ("default/cron", 0o644),
    ("init.d/cron", 0o755),
    ("pam.d/cron", 0o644),
];

#[test]
fn the_package_replaces_debians_cron_and_cronie_and_provides_cron_daemon() {
    let deb = deb();
    assert_eq!(field(&deb, "Package"), "crond");
    assert_eq!(field(&deb, "Version"), env!("CARGO_PKG_VERSION"));
    let arch = run_ok(Command::new("dpkg").arg("--print-architecture"));
    assert_eq!(field(&deb, "Architecture"), arch.trim());
    // Packages that depend on `cron` keep it; it takes the place of Debian's cron and cronie,
    // and installs beside cron-daemon-common, which owns /etc/crontab and /etc/cron.*.
    assert_eq!(names(&field(&deb, "Provides")), ["cron", "cron-daemon"]);
    for rel in ["Conflicts", "Replaces"] {
        let names = names(&field(&deb, rel));
        for other in ["cron", "cronie", "systemd-cron", "bcron"] {
            assert!(
                names.iter().any(|n| n == other),
                "{rel} lacks {other}: {names:?}"
            );
        }
        assert!(
            !names.iter().any(|n| n == "cron-daemon-common"),
            "{names:?}"
        );
    }
    let depends = names(&field(&deb, "Depends"));
    // procps: /bin/kill, the unit's ExecReload (a minbase root has none: reload failed there).
    // sensible-utils: crontab -e's sensible-editor. adduser: postinst's addgroup.
    // libpam0g, libc6 and libssl3 (cronctl's TLS; libssl3t64 on Debian 13) from the binaries.
    for needed in [
        "cron-daemon-common",
        "libpam0g",
        "libpam-runtime",
        "procps",
        "sensible-utils",
        "adduser",
        "libc6",
    ] {
        assert!(depends.iter().any(|d| d == needed), "{needed}: {depends:?}");
    }
    assert!(
        depends.iter().any(|d| d.starts_with("libssl3")),
        "{depends:?}"
    );
    // The scripts' `invoke-rc.d --skip-systemd-native` needs a recent init-system-helpers.
    assert!(
        names(&field(&deb, "Pre-Depends")).contains(&"init-system-helpers".to_string()),
        "{}",
        field(&deb, "Pre-Depends")
    );
    assert!(!field(&deb, "Maintainer").contains("localhost"));
    let size: u64 = field(&deb, "Installed-Size").parse().expect("a number");
    assert!(size > 0);
    let conffiles = control_file(&deb, "conffiles");
    let mut conffiles: Vec<&str> = conffiles.lines().collect();
    conffiles.sort();
    let expected: Vec<String> = DEB_ETC.iter().map(|(f, _)| format!("/etc/{f}")).collect();
    assert_eq!(conffiles, expected);
}

/// `dpkg-deb -c`: (mode, owner, path, link target).
fn listing(deb: &Path) -> Vec<(String, String, String, String)> {
    let text = run_ok(Command::new("dpkg-deb").arg("-c").arg(deb));
    // "-rwxr-xr-x root/root 123 2026-11-21 23:17 ./usr/sbin/crond [-> target]"
    text.lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let path = f[5].trim_start_matches("./").trim_end_matches('/');
            let target = if f.get(6) == Some(&"->") { f[7] } else { "" };
            (f[0].into(), f[1].into(), path.into(), target.into())
        })
        .collect()
}

#[test]
fn the_archive_holds_every_file_root_owned_with_compressed_pages_and_relative_links() {
    let deb = deb();
    let entries = listing(&deb);
    let find = |path: &str| {
        entries
            .iter()
            .find(|e| e.2 == path)
            .unwrap_or_else(|| panic!("{path} not in the package:\n{entries:#?}"))
    };
    for (_, owner, path, _) in &entries {
        assert_eq!(owner, "root/root", "{path}");
    }
    // Not setgid in the archive: postinst adds the group and the bit (dpkg-statoverride).
    assert_eq!(find("usr/bin/crontab").0, "-rwxr-xr-x");
    assert_eq!(find("usr/sbin/crond").0, "-rwxr-xr-x");
    assert_eq!(find("usr/sbin/cron").3, "crond");
    // Relative, as Debian's policy wants links within one top-level directory.
    assert_eq!(find("usr/bin/cronctl").3, "../sbin/cronctl");
    // Where Debian 12's debhelper and systemd look for a package's units.
    assert_eq!(find("lib/systemd/system/crond.service").0, "-rw-r--r--");
    assert_eq!(find("usr/share/doc/crond/copyright").0, "-rw-r--r--");
    find("usr/share/doc/crond/changelog.gz");
    for (f, mode) in DEB_ETC {
        let want = if mode == 0o755 {
            "-rwxr-xr-x"
        } else {
            "-rw-r--r--"
        };
        assert_eq!(find(&format!("etc/{f}")).0, want, "{f}");
    }
    // cron-daemon-common's files, the spool dir among them, are not shipped again.
    for (_, _, path, _) in &entries {
        let theirs = path.starts_with("var/spool")
            || path == "etc/crontab"
            || path.starts_with("etc/cron.")
            || path.contains("cron.allow")
            || path.contains("cron.deny");
        assert!(!theirs, "{path} is cron-daemon-common's (or the admin's)");
    }
    for page in [
        "man1/crontab.1",
        "man1/cronnext.1",
        "man5/crontab.5",
        "man8/crond.8",
        "man8/cronctl.8",
    ] {
        find(&format!("usr/share/man/{page}.gz"));
    }
    assert_eq!(find("usr/share/man/man8/cron.8.gz").3, "crond.8.gz");
    assert!(
        !entries
            .iter()
            .any(|e| e.2.starts_with("usr/share/man/") && e.2.ends_with(".1"))
    );
}

#[test]
fn the_binaries_are_stripped_and_their_debug_symbols_are_in_crond_dbgsym() {
    let deb = deb();
    let dir = tempfile::tempdir().expect("tempdir");
    run_ok(Command::new("dpkg-deb").arg("-x").arg(&deb).arg(dir.path()));
    for bin in [
        "usr/sbin/crond",
        "usr/bin/crontab",
        "usr/bin/cronnext",
        "usr/sbin/cronctl",
    ] {
        let sections = run_ok(Command::new("readelf").arg("-S").arg(dir.path().join(bin)));
        for section in [".debug_info", ".symtab"] {
            assert!(!sections.contains(section), "{bin} keeps {section}");
        }
    }
    // Uncompressed as the tests ask (debcompress=none), through dpkg-deb's environment.
    let members = run_ok(Command::new("ar").arg("t").arg(&deb));
    assert!(members.lines().any(|m| m == "data.tar"), "{members}");
    let dbgsym = package(&built(), "crond-dbgsym_");
    assert_eq!(field(&dbgsym, "Package"), "crond-dbgsym");
    let debug_files = listing(&dbgsym)
        .into_iter()
        .filter(|e| e.2.starts_with("usr/lib/debug/.build-id/") && e.2.ends_with(".debug"))
        .count();
    assert_eq!(debug_files, 4, "one debug file per binary");
}

#[test]
fn the_maintainer_scripts_are_debhelpers_and_set_the_setgid_bit_through_dpkg_statoverride() {
    let deb = deb();
    let postinst = control_file(&deb, "postinst");
    assert!(
        postinst.contains("dpkg-statoverride --update --add root crontab 2755 /usr/bin/crontab"),
        "{postinst}"
    );
    assert!(
        postinst.contains("getent group crontab >/dev/null || addgroup --system crontab"),
        "{postinst}"
    );
    // dh_installsystemd's and dh_installinit's snippets.
    for snippet in [
        "deb-systemd-helper",
        "deb-systemd-invoke",
        "update-rc.d cron defaults",
    ] {
        assert!(
            postinst.contains(snippet),
            "postinst lacks {snippet}:\n{postinst}"
        );
    }
    for script in ["preinst", "postinst", "prerm", "postrm"] {
        let text = control_file(&deb, script);
        assert!(
            !text.contains("/etc/group"),
            "{script} parses /etc/group:\n{text}"
        );
        // The only systemctl debhelper writes: a daemon-reload once a unit file is gone.
        for line in text.lines().filter(|l| l.contains("systemctl")) {
            assert!(
                line.contains("systemctl --system daemon-reload"),
                "{script}: {line}"
            );
        }
    }
    let postrm = control_file(&deb, "postrm");
    assert!(
        postrm.contains("dpkg-statoverride --remove /usr/bin/crontab"),
        "{postrm}"
    );
}

/// lintian, as the archive runs it, with every pedantic check: no error and no warning. The
/// test's packages are uncompressed (debcompress=none, for speed), which lintian rightly calls
/// an error; the release packages (`make deb lintian`, CI) are checked without that exception.
#[test]
fn lintian_finds_no_error_or_warning_in_the_packages() {
    require_command("lintian");
    let changes = built();
    let out = run(Command::new("lintian")
        .args(["--pedantic", "--fail-on", "error,warning"])
        .args([
            "--suppress-tags",
            "uses-no-compression-for-control-tarball,uses-no-compression-for-data-tarball",
        ])
        .arg(&changes));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "lintian: {}\n{text}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("E:") || l.starts_with("W:")),
        "{text}"
    );
}

/// A throwaway copy of a bootstrapped Debian root (tests/install/debian.rs), removed when
/// dropped, in which apt and the package's scripts run under `chroot` as an admin's would.
struct Chroot {
    dir: tempfile::TempDir,
}

impl Chroot {
    fn copy_of(base: &Path) -> Chroot {
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
        run_ok(
            Command::new("cp")
                .arg("-a")
                .arg(format!("{}/.", base.display()))
                .arg(dir.path()),
        );
        std::fs::copy("/etc/resolv.conf", dir.path().join("etc/resolv.conf")).expect("resolv");
        std::fs::copy(deb(), dir.path().join("tmp/crond.deb")).expect("copy the package");
        Chroot { dir }
    }

    fn file(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel.trim_start_matches('/'))
    }

    /// `sh -c SCRIPT` in the root as root; must succeed.
    fn sh(&self, script: &str) -> String {
        run_ok(
            Command::new("chroot")
                .arg(self.dir.path())
                .args(["/bin/sh", "-c", script])
                .env_clear()
                .env("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )
    }

    /// `crontab ARGS` in the root as `user` (uid and primary group, as a login gives).
    fn crontab_as(&self, user: &str, args: &[&str]) -> String {
        run_ok(
            Command::new("chroot")
                .arg(format!("--userspec={user}:{user}"))
                .arg(self.dir.path())
                .arg("/usr/bin/crontab")
                .args(args),
        )
    }

    /// Every path of the root with its type, mode and owner, as piuparts compares them, less
    /// what apt and dpkg keep for themselves (their database, caches and logs).
    fn files(&self) -> std::collections::BTreeSet<String> {
        let listing = self.sh(
            "find / -xdev \\( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp \
             -o -path /var/lib/dpkg -o -path /var/lib/apt -o -path /var/cache -o -path /var/log \\) \
             -prune -o -printf '%p %M %u:%g\\n'",
        );
        listing.lines().map(str::to_string).collect()
    }

    fn installed(&self, package: &str) -> bool {
        let status = self.sh(&format!(
            "dpkg-query -W -f '${{Status}}' {package} 2>/dev/null || true"
        ));
        status == "install ok installed"
    }
}

/// What the package sets up when installed: the setgid crontab through a stat override, the
/// spool dir's mode, the unit enabled under both names, the init script's links.
fn assert_set_up(root: &Chroot) {
    assert!(root.installed("crond"));
    let gid = gid_in(&root.file("/etc/group"), "crontab").expect("the crontab group");
    let crontab = root.file("/usr/bin/crontab");
    assert_eq!((mode(&crontab), owner(&crontab)), (0o2755, (0, gid)));
    assert_eq!(
        root.sh("dpkg-statoverride --list /usr/bin/crontab").trim(),
        "root crontab 2755 /usr/bin/crontab"
    );
    let spool = root.file("/var/spool/cron/crontabs");
    assert_eq!((mode(&spool), owner(&spool)), (0o1730, (0, gid)));
    for link in [
        "/etc/systemd/system/multi-user.target.wants/crond.service",
        "/etc/systemd/system/cron.service",
    ] {
        assert_eq!(
            link_target(&root.file(link)),
            Path::new("/lib/systemd/system/crond.service"),
            "{link} enables the unit"
        );
    }
    assert_eq!(
        link_target(&root.file("/etc/rc2.d/S01cron")),
        Path::new("../init.d/cron")
    );
}

#[test]
fn root_install_remove_purge_and_reinstall_in_a_clean_debian_root_leave_only_the_users_files() {
    require_root();
    let base = super::debian::bootstrapped("-clean", "adduser");
    let root = Chroot::copy_of(&base);
    // As piuparts: the dependencies first, so that what a purge must return to is this root.
    root.sh("set -e
         apt-get satisfy -y -q --no-install-recommends \
             \"$(dpkg-deb -f /tmp/crond.deb Pre-Depends), $(dpkg-deb -f /tmp/crond.deb Depends)\"
         useradd -m -s /bin/sh alice");
    let before = root.files();

    root.sh("apt-get install -y -q --no-install-recommends /tmp/crond.deb");
    assert_set_up(&root);
    // Unpacked again over itself, as an upgrade is: dpkg applies the stat override as it
    // unpacks, and the scripts' upgrade paths run.
    root.sh("dpkg -i /tmp/crond.deb");
    assert_set_up(&root);
    // A user's crontab and an admin's file, which no step may remove.
    let line = "0 10 * * * echo alice\n";
    root.sh(&format!("printf '{line}' | crontab -u alice -"));
    std::fs::write(root.file("/etc/cron.d/site"), "0 10 * * * root true\n").expect("cron.d");

    root.sh("apt-get remove -y -q crond");
    assert!(!root.file("/usr/sbin/crond").exists());
    assert!(!root.file("/usr/bin/crontab").exists());
    assert!(
        root.file("/etc/default/cron").exists(),
        "conffiles stay until purge"
    );

    root.sh("apt-get purge -y -q crond");
    assert!(
        !root.file("/etc/default/cron").exists(),
        "purge removes the conffiles"
    );
    let after = root.files();
    let added: Vec<&String> = after.difference(&before).collect();
    let removed: Vec<&String> = before.difference(&after).collect();
    assert_eq!(
        added,
        [
            "/etc/cron.d/site -rw-r--r-- root:root",
            "/var/spool/cron/crontabs/alice -rw------- alice:crontab",
        ],
        "purge leaves only the user's crontab and the admin's file (removed: {removed:?})"
    );
    assert!(removed.is_empty(), "purge removed {removed:?}");

    root.sh("apt-get install -y -q --no-install-recommends /tmp/crond.deb");
    assert_set_up(&root);
    assert_eq!(root.crontab_as("alice", &["-l"]), line);

    // An admin who takes crontab from users keeps that choice across an upgrade.
    root.sh("set -e
         dpkg-statoverride --remove /usr/bin/crontab
         dpkg-statoverride --update --add root root 0755 /usr/bin/crontab
         dpkg -i /tmp/crond.deb");
    let crontab = root.file("/usr/bin/crontab");
    assert_eq!((mode(&crontab), owner(&crontab)), (0o755, (0, 0)));
}

/// A kept path's contents (none for a directory), owner and mode.
type Kept = (Option<Vec<u8>>, (u32, u32), u32);

#[test]
fn root_debians_cron_to_crond_and_back_keeps_crontabs_cron_d_and_the_spool_dir() {
    require_root();
    let root = Chroot::copy_of(&super::debian::bootstrapped("", "cron"));
    root.sh("set -e
         useradd -m -s /bin/sh alice
         printf '0 10 * * * root true\\n' > /etc/cron.d/site");
    let line = "0 10 * * * echo alice\n";
    // Installed by Debian's setgid crontab, as alice.
    run_ok(
        Command::new("sh")
            .arg("-c")
            .arg(format!(
                "printf '{line}' | chroot --userspec=alice:alice \"$1\" /usr/bin/crontab -"
            ))
            .arg("sh")
            .arg(root.dir.path()),
    );
    let kept = [
        "/var/spool/cron/crontabs/alice",
        "/var/spool/cron/crontabs",
        "/etc/cron.d/site",
        "/etc/crontab",
    ];
    let state = |root: &Chroot| -> Vec<Kept> {
        kept.iter()
            .map(|p| {
                let f = root.file(p);
                (std::fs::read(&f).ok(), owner(&f), mode(&f))
            })
            .collect()
    };
    let before = state(&root);

    root.sh("apt-get install -y -q --no-install-recommends /tmp/crond.deb");
    assert!(!root.installed("cron"), "crond takes Debian's cron's place");
    assert_set_up(&root);
    assert_eq!(state(&root), before, "{kept:?} kept on the way to crond");
    assert_eq!(root.crontab_as("alice", &["-l"]), line);

    root.sh("apt-get install -y -q --no-install-recommends cron");
    assert!(root.installed("cron") && !root.installed("crond"));
    assert_eq!(
        state(&root),
        before,
        "{kept:?} kept on the way back to cron"
    );
    assert_eq!(root.crontab_as("alice", &["-l"]), line);
    let crontab = root.file("/usr/bin/crontab");
    let gid = gid_in(&root.file("/etc/group"), "crontab").expect("the crontab group");
    assert_eq!((mode(&crontab), owner(&crontab)), (0o2755, (0, gid)));
    // Debian's cron.service is its own again: no alias left that names crond's unit.
    let alias = root.file("/etc/systemd/system/cron.service");
    assert!(
        std::fs::symlink_metadata(&alias).is_err(),
        "{} is left: {:?}",
        alias.display(),
        std::fs::read_link(&alias)
    );

    root.sh("apt-get install -y -q --no-install-recommends /tmp/crond.deb");
    assert_set_up(&root);
    assert_eq!(state(&root), before, "{kept:?} kept on the second swap");
    assert_eq!(root.crontab_as("alice", &["-l"]), line);
}

/// piuparts itself, Debian's own check, in a copy of a clean Debian root (`-e`): the package
/// with its dependencies is installed, removed, installed again and purged, and piuparts fails
/// on any maintainer script error, on a file left behind or changed that the package did not
/// own, and on a broken symlink.
#[test]
fn root_piuparts_installs_removes_reinstalls_and_purges_the_package_in_a_clean_root() {
    require_root();
    require_command("piuparts");
    let base = super::debian::bootstrapped("-clean", "adduser");
    let tmp = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let out = run(Command::new("piuparts")
        .arg("-d")
        .arg(super::debian::codename())
        .args([
            "-m",
            "http://deb.debian.org/debian",
            "--install-remove-install",
        ])
        .arg("--tmpdir")
        .arg(tmp.path())
        .arg("-e")
        .arg(&base)
        .arg(deb()));
    let log = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "piuparts: {}\n{log}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        log.contains("PASS: Installation and purging test."),
        "{log}"
    );
    assert_eq!(
        log.matches("Setting up crond (").count(),
        2,
        "installed twice:\n{log}"
    );
}

/// The source package, as `dpkg-buildpackage -S` makes it from the checkout's files (committed
/// or not, less what git ignores), copied out so that nothing is written beside the
/// repository: lintian finds no error and no warning in it either, pedantic checks included.
#[test]
fn lintian_finds_no_error_or_warning_in_the_source_package() {
    require_command("lintian");
    let dir = tempfile::tempdir().expect("tempdir");
    let tree = dir
        .path()
        .join(format!("crond-{}", env!("CARGO_PKG_VERSION")));
    std::fs::create_dir(&tree).expect("mkdir");
    run_ok(
        Command::new("sh")
            .current_dir(repo())
            .arg("-c")
            .arg(
                r#"git ls-files -co --exclude-standard |
                   while read -r f; do [ ! -e "$f" ] || echo "$f"; done |
                   tar -cf - -T - | tar -xf - -C "$1""#,
            )
            .arg("sh")
            .arg(&tree),
    );
    run_ok(
        Command::new("dpkg-buildpackage")
            .current_dir(&tree)
            .args(["-S", "-us", "-uc", "-d"]),
    );
    let changes = dir.path().join(format!(
        "crond_{}_source.changes",
        env!("CARGO_PKG_VERSION")
    ));
    let out = run(Command::new("lintian")
        .args(["--pedantic", "--fail-on", "error,warning"])
        .arg(&changes));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "lintian: {}\n{text}", out.status);
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("E:") || l.starts_with("W:")),
        "{text}"
    );
}
