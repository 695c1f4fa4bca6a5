//! `make deb`: the package's metadata (what it provides, conflicts with, depends on), its files
//! and modes as dpkg-deb lists them, and, as root, a real `dpkg --root` install into a
//! throwaway root: the crontab group, the setgid crontab, the spool dir, the enabled unit, then
//! remove and purge. Maintainer scripts run chrootless with $DPKG_ROOT, so the host's own
//! dpkg database, groups and units are never touched.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::install::*;

/// Builds the .deb once for all the tests of this file (uncompressed: the debug binaries are
/// large and xz is slow) and returns its path.
pub(crate) fn deb() -> PathBuf {
    static DEB: OnceLock<PathBuf> = OnceLock::new();
    DEB.get_or_init(|| {
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("install_deb");
        let _ = std::fs::remove_dir_all(&out);
        build_deb(&out)
    })
    .clone()
}

fn build_deb(out: &Path) -> PathBuf {
    require_command("dpkg-deb");
    make(
        "deb",
        [
            format!("debout={}", out.display()),
            "debcompress=none".to_string(),
        ],
    );
    let debs: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("debout")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "deb"))
        .collect();
    assert_eq!(debs.len(), 1, "one package built: {debs:?}");
    debs.into_iter().next().expect("one")
}

fn field(deb: &Path, name: &str) -> String {
    run_ok(Command::new("dpkg-deb").arg("-f").arg(deb).arg(name))
        .trim()
        .to_string()
}

fn list(value: &str) -> Vec<String> {
    value.split(',').map(|s| s.trim().to_string()).collect()
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
    assert_eq!(list(&field(&deb, "Provides")), ["cron", "cron-daemon"]);
    for rel in ["Conflicts", "Replaces"] {
        let names = list(&field(&deb, rel));
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
    let depends = list(&field(&deb, "Depends"));
    // procps: /bin/kill, the unit's ExecReload (a minbase root has none: reload failed there).
    for needed in ["cron-daemon-common", "libpam0g", "libpam-runtime", "procps"] {
        assert!(depends.iter().any(|d| d == needed), "{depends:?}");
    }
    assert!(
        depends.iter().any(|d| d.starts_with("libc6 (>= 2.")),
        "{depends:?}"
    );
    // cronctl's TLS library, as the package that ships it (libssl3, or libssl3t64).
    assert!(
        depends.iter().any(|d| d.starts_with("libssl3")),
        "{depends:?}"
    );
    let size: u64 = field(&deb, "Installed-Size").parse().expect("a number");
    assert!(size > 0);
    let conffiles = run_ok(
        Command::new("sh")
            .arg("-c")
            .arg(r#"dpkg-deb --ctrl-tarfile "$1" | tar -xOf - ./conffiles"#)
            .arg("sh")
            .arg(&deb),
    );
    let conffiles: Vec<&str> = conffiles.lines().collect();
    let expected: Vec<String> = DEB_ETC.iter().map(|(f, _)| format!("/etc/{f}")).collect();
    assert_eq!(conffiles, expected);
}

#[test]
fn the_archive_holds_every_file_root_owned_with_the_modes_of_make_install() {
    let deb = deb();
    let listing = run_ok(Command::new("dpkg-deb").arg("-c").arg(&deb));
    // "-rwxr-xr-x root/root 123 2026-11-21 23:17 ./usr/sbin/crond"
    let entries: Vec<(String, String, String)> = listing
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let path = f[5]
                .trim_start_matches("./")
                .trim_end_matches('/')
                .to_string();
            (f[0].to_string(), f[1].to_string(), path)
        })
        .collect();
    let find = |path: &str| {
        entries
            .iter()
            .find(|(_, _, p)| p == path)
            .unwrap_or_else(|| panic!("{path} not in the package:\n{listing}"))
    };
    for (_, owner, path) in &entries {
        assert_eq!(owner, "root/root", "{path}");
    }
    // Not setgid in the archive: postinst adds the group and the bit.
    assert_eq!(find("usr/bin/crontab").0, "-rwxr-xr-x");
    assert_eq!(find("usr/sbin/crond").0, "-rwxr-xr-x");
    assert_eq!(find("usr/sbin/cron").0, "lrwxrwxrwx");
    assert_eq!(find("var/spool/cron/crontabs").0, "drwx-wx--T");
    assert_eq!(find("usr/lib/systemd/system/crond.service").0, "-rw-r--r--");
    assert_eq!(find("usr/share/doc/crond/copyright").0, "-rw-r--r--");
    for (f, mode) in DEB_ETC {
        let want = if mode == 0o755 {
            "-rwxr-xr-x"
        } else {
            "-rw-r--r--"
        };
        assert_eq!(find(&format!("etc/{f}")).0, want, "{f}");
    }
    // cron-daemon-common's files are not shipped again.
    for f in ETC_FILES
        .iter()
        .filter(|f| !DEB_ETC.iter().any(|(d, _)| d == *f))
    {
        assert!(
            !entries.iter().any(|(_, _, p)| *p == format!("etc/{f}")),
            "etc/{f} is cron-daemon-common's"
        );
    }
    for page in [
        "usr/share/man/man1/crontab.1",
        "usr/share/man/man1/cronnext.1",
        "usr/share/man/man5/crontab.5",
        "usr/share/man/man8/crond.8",
        "usr/share/man/man8/cron.8",
    ] {
        find(page);
    }
    assert!(
        !entries
            .iter()
            .any(|(_, _, p)| p.contains("cron.allow") || p.contains("cron.deny"))
    );
}

/// An empty root with just enough for dpkg and groupadd: a dpkg database and passwd files.
fn throwaway_root() -> tempfile::TempDir {
    let root = tempfile::tempdir().expect("tempdir");
    let r = root.path();
    for d in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "etc"] {
        std::fs::create_dir_all(r.join(d)).expect("mkdir");
    }
    for (f, text) in [
        ("var/lib/dpkg/status", ""),
        ("var/lib/dpkg/available", ""),
        ("etc/passwd", "root:x:0:0:root:/root:/bin/sh\n"),
        ("etc/group", "root:x:0:\n"),
        ("etc/gshadow", "root:*::\n"),
    ] {
        std::fs::write(r.join(f), text).expect("write");
    }
    root
}

fn dpkg(root: &Path, args: &[&str]) -> String {
    run_ok(
        Command::new("dpkg")
            .arg(format!("--root={}", root.display()))
            .args(["--force-depends", "--force-script-chrootless"])
            .args(args),
    )
}

#[test]
fn root_dpkg_installs_the_package_with_the_crontab_group_and_an_enabled_unit() {
    require_root();
    let deb = deb();
    let root = throwaway_root();
    let r = root.path();
    dpkg(r, &["-i", deb.to_str().expect("utf-8")]);

    let gid = gid_in(&r.join("etc/group"), "crontab").expect("postinst created the group");
    assert!(gid > 0);
    let crontab = r.join("usr/bin/crontab");
    assert_eq!((mode(&crontab), owner(&crontab)), (0o2755, (0, gid)));
    let spool = r.join("var/spool/cron/crontabs");
    assert_eq!((mode(&spool), owner(&spool)), (0o1730, (0, gid)));
    for (path, want) in INSTALLED {
        if path != "usr/bin/crontab" && path != "var/spool/cron/crontabs" {
            let p = r.join(path);
            assert_eq!((mode(&p), owner(&p)), (want, (0, 0)), "{path}");
        }
    }
    for (f, want) in DEB_ETC {
        let p = r.join("etc").join(f);
        assert_eq!((mode(&p), owner(&p)), (want, (0, 0)), "/etc/{f}");
    }
    let wants = r.join("etc/systemd/system/multi-user.target.wants/crond.service");
    let alias = r.join("etc/systemd/system/cron.service");
    for link in [&wants, &alias] {
        assert_eq!(
            link_target(link),
            Path::new("/usr/lib/systemd/system/crond.service"),
            "{} enables the unit",
            link.display()
        );
    }
    let status = run_ok(
        Command::new("dpkg-query")
            .arg(format!("--admindir={}", r.join("var/lib/dpkg").display()))
            .args(["-W", "-f", "${Status}", "crond"]),
    );
    assert_eq!(status, "install ok installed");

    // A user's crontab, to see that neither remove nor purge deletes it.
    std::fs::write(spool.join("alice"), b"* * * * * true\n").expect("a crontab");

    dpkg(r, &["-r", "crond"]);
    assert!(!r.join("usr/sbin/crond").exists() && !crontab.exists());
    assert!(
        std::fs::symlink_metadata(&wants).is_err(),
        "remove disables the unit"
    );
    assert!(
        std::fs::symlink_metadata(&alias).is_err(),
        "remove drops the alias"
    );
    assert!(
        r.join("etc/default/cron").exists(),
        "conffiles stay until purge"
    );

    // Installed again after a remove: enabled again.
    dpkg(r, &["-i", deb.to_str().expect("utf-8")]);
    assert!(std::fs::symlink_metadata(&wants).is_ok(), "enabled again");

    dpkg(r, &["-P", "crond"]);
    assert!(
        !r.join("etc/default/cron").exists(),
        "purge removes the conffiles"
    );
    assert!(std::fs::symlink_metadata(&wants).is_err());
    assert_eq!(
        std::fs::read(spool.join("alice")).expect("kept"),
        b"* * * * * true\n"
    );
    assert!(
        gid_in(&r.join("etc/group"), "crontab").is_some(),
        "the group is kept"
    );
}
