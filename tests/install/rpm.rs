//! `make rpm`: the RPM for Fedora and RHEL (pkg/rpm/crond.spec) in cronie's layout, built by
//! rpmbuild from binaries built with `CROND_LAYOUT=cronie`: cronie's names and paths, what it
//! provides and requires, rpmlint without errors; and the cronie-layout crontab(1) keeping
//! crontabs directly in /var/spool/cron.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::support::install::*;

/// crond's binaries built in cronie's layout (debug, as the suite's), once per target dir, in
/// a target dir of their own so that the suite's build keeps Debian's.
fn cronie_bins() -> PathBuf {
    static BINS: OnceLock<PathBuf> = OnceLock::new();
    BINS.get_or_init(|| {
        let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cronie-layout");
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        run_ok(
            Command::new(cargo)
                .current_dir(repo())
                .args([
                    "build", "--locked", "--bins", "-p", "crond", "-p", "cronctl",
                ])
                .env("CROND_LAYOUT", "cronie")
                .env("CARGO_TARGET_DIR", &target),
        );
        target.join("debug")
    })
    .clone()
}

/// The binary RPM `make rpm` built once from [`cronie_bins`].
fn rpm() -> PathBuf {
    static RPM: OnceLock<PathBuf> = OnceLock::new();
    RPM.get_or_init(|| {
        require_command("rpmbuild");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("install_rpm");
        make(
            "rpm",
            [
                format!("rpmout={}", out.display()),
                format!("bins={}", cronie_bins().display()),
            ],
        );
        let arch = run_ok(Command::new("rpm").args(["--eval", "%{_arch}"]));
        let rpm = out.join("RPMS").join(arch.trim()).join(format!(
            "crond-{}-1.{}.rpm",
            env!("CARGO_PKG_VERSION"),
            arch.trim()
        ));
        assert!(rpm.is_file(), "{} built", rpm.display());
        rpm
    })
    .clone()
}

fn query(rpm: &Path, what: &[&str]) -> String {
    run_ok(Command::new("rpm").arg("-qp").args(what).arg(rpm))
}

#[test]
fn the_rpm_has_cronies_names_and_paths_and_provides_cronie() {
    let rpm = rpm();
    assert_eq!(
        query(&rpm, &["--qf", "%{NAME} %{VERSION}"]),
        format!("crond {}", env!("CARGO_PKG_VERSION"))
    );
    let provides = query(&rpm, &["--provides"]);
    assert!(provides.lines().any(|l| l == "cronie"), "{provides}");
    let conflicts = query(&rpm, &["--conflicts"]);
    assert!(conflicts.lines().any(|l| l == "cronie"), "{conflicts}");
    let requires = query(&rpm, &["--requires"]);
    assert!(requires.lines().any(|l| l == "crontabs"), "{requires}");
    // "-rwxr-sr-x    1 root    crontab    123 Dec  4 18:00 /usr/bin/crontab"
    let listing = query(&rpm, &["-lv"]);
    let entry = |path: &str| -> (String, String, String) {
        let line = listing
            .lines()
            .find(|l| l.split_whitespace().nth(8) == Some(path))
            .unwrap_or_else(|| panic!("{path} not in the rpm:\n{listing}"));
        let f: Vec<&str> = line.split_whitespace().collect();
        (f[0].into(), f[2].into(), f[3].into())
    };
    assert_eq!(
        entry("/usr/bin/crontab"),
        ("-rwxr-sr-x".into(), "root".into(), "crontab".into())
    );
    assert_eq!(
        entry("/var/spool/cron"),
        ("drwx-wx--T".into(), "root".into(), "crontab".into())
    );
    for path in [
        "/usr/sbin/crond",
        "/usr/lib/systemd/system/crond.service",
        "/etc/sysconfig/crond",
        "/etc/pam.d/crond",
        "/etc/cron.d/0hourly",
        "/etc/cron.d/dailyjobs",
    ] {
        entry(path);
    }
    // Debian's names, and the files of Fedora's crontabs package, are not in it.
    for path in listing.lines().filter_map(|l| l.split_whitespace().nth(8)) {
        let debian = [
            "/etc/default/cron",
            "/etc/pam.d/cron",
            "/usr/sbin/cron",
            "/etc/crontab",
        ];
        assert!(!debian.contains(&path), "{path}");
        assert!(!path.starts_with("/var/spool/cron/crontabs"), "{path}");
        assert!(!path.starts_with("/etc/cron.daily"), "{path}");
    }
    // Each scriptlet but %pre acts on the unit (systemd-rpm-macros' %systemd_post and the rest,
    // or the spec's own where rpm lacks them), and %pre makes the group.
    let scripts = query(&rpm, &["--scripts"]);
    let mut scriptlets = scripts.split("scriptlet (using /bin/sh):");
    let preinstall = scriptlets.nth(1).expect("a %pre");
    assert!(preinstall.contains("groupadd -r crontab"), "{scripts}");
    for body in scriptlets {
        assert!(
            body.contains("crond.service"),
            "a scriptlet without the unit:\n{scripts}"
        );
    }
    assert_eq!(
        scripts.matches("scriptlet (using /bin/sh):").count(),
        4,
        "{scripts}"
    );
    let configs = query(&rpm, &["--configfiles"]);
    for conf in [
        "/etc/sysconfig/crond",
        "/etc/pam.d/crond",
        "/etc/cron.d/0hourly",
    ] {
        assert!(configs.lines().any(|l| l == conf), "{conf}: {configs}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    run_ok(
        Command::new("sh")
            .current_dir(dir.path())
            .arg("-c")
            .arg(r#"rpm2cpio "$1" | cpio -idm --quiet"#)
            .arg("sh")
            .arg(&rpm),
    );
    let unit = std::fs::read_to_string(dir.path().join("usr/lib/systemd/system/crond.service"))
        .expect("the unit");
    assert!(
        unit.contains("\nEnvironmentFile=-/etc/sysconfig/crond\n"),
        "{unit}"
    );
    assert!(
        unit.contains("\nExecStart=/usr/sbin/crond -f --log syslog $CRONDARGS\n"),
        "{unit}"
    );
    assert!(!unit.contains("Alias=cron.service"), "{unit}");
}

#[test]
fn rpmlint_finds_no_errors_in_the_rpm_or_the_spec() {
    require_command("rpmlint");
    let rpm = rpm();
    let out = run(Command::new("rpmlint")
        .arg("-r")
        .arg(repo().join("pkg/rpm/crond.rpmlintrc"))
        .arg(repo().join("pkg/rpm/crond.spec"))
        .arg(&rpm));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "rpmlint: {}\n{text}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains(" 0 errors"), "{text}");
}

/// In a private mount namespace, an empty /var/spool/cron (the host's /var/spool is hidden): root's
/// crontab, installed by the cronie-layout crontab(1), lands in /var/spool/cron/root, where
/// cronie keeps it, and `crontab -l` reads it back. Debian's layout would look for
/// /var/spool/cron/crontabs, which is not there.
#[test]
fn root_the_cronie_layout_crontab_keeps_crontabs_directly_in_var_spool_cron() {
    require_root();
    require_command("unshare");
    let crontab = cronie_bins().join("crontab");
    let script = r#"set -e
        mount -t tmpfs tmpfs /var/spool
        mkdir -m 0700 /var/spool/cron
        printf '0 10 * * * echo cronie\n' | "$1" -
        stat -c '%n %a %U' /var/spool/cron/root
        "$1" -l"#;
    let out = run_ok(
        Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", script, "sh"])
            .arg(&crontab),
    );
    assert_eq!(
        out,
        "/var/spool/cron/root 600 root\n0 10 * * * echo cronie\n"
    );
}
