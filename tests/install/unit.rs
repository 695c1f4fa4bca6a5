//! The systemd unit: `systemd-analyze verify` accepts it (with the built crond and the man
//! pages of this tree, through a temporary copy: systemd is not booted), it carries what the
//! issue and Debian's cron.service require, every [Service] directive has its reason written
//! above it, and no sandboxing directive that would break jobs has crept in.

use std::path::Path;
use std::process::Command;

use crate::support::install::*;

fn unit_text() -> String {
    std::fs::read_to_string(repo().join("systemd/crond.service")).expect("systemd/crond.service")
}

/// (section, key, value) of every directive.
fn directives(text: &str) -> Vec<(String, String, String)> {
    let mut section = String::new();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') && line.ends_with(']') {
            section = line[1..line.len() - 1].to_string();
        } else if !line.is_empty() && !line.starts_with('#') {
            let (k, v) = line.split_once('=').expect("a directive is KEY=value");
            out.push((section.clone(), k.to_string(), v.to_string()));
        }
    }
    out
}

/// A copy of the unit whose ExecStart is the built crond (verify wants an executable there)
/// and a MANPATH holding this tree's pages (verify runs `man` for each Documentation= link).
fn verify(unit: &str) -> (bool, String) {
    require_command("systemd-analyze");
    let dir = tempfile::tempdir().expect("tempdir");
    for (page, section) in [
        ("crond.8", "man8"),
        ("crontab.1", "man1"),
        ("crontab.5", "man5"),
        ("cronnext.1", "man1"),
    ] {
        let d = dir.path().join("man").join(section);
        std::fs::create_dir_all(&d).expect("mkdir");
        std::fs::copy(repo().join("man").join(page), d.join(page)).expect("copy page");
    }
    let crond = bins().join("crond");
    let unit = unit.replace("/usr/sbin/cron ", &format!("{} ", crond.display()));
    let path = dir.path().join("crond.service");
    std::fs::write(&path, unit).expect("write unit");
    let out = run(Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .env("MANPATH", dir.path().join("man"))
        .env("SYSTEMD_LOG_COLOR", "0"));
    let mut messages = String::from_utf8_lossy(&out.stderr).into_owned();
    messages.push_str(&String::from_utf8_lossy(&out.stdout));
    (out.status.success(), messages)
}

#[test]
fn systemd_analyze_verify_accepts_the_unit_without_a_single_message() {
    let (ok, messages) = verify(&unit_text());
    assert!(ok, "systemd-analyze verify failed:\n{messages}");
    assert!(
        messages.trim().is_empty(),
        "systemd-analyze verify says:\n{messages}"
    );
}

#[test]
fn systemd_analyze_verify_would_notice_a_bad_directive() {
    // The check above is only worth something if verify speaks up about a broken unit.
    let broken = unit_text().replace("KillMode=process", "KillMode=bogus");
    let (_, messages) = verify(&broken);
    assert!(
        messages.contains("bogus"),
        "verify said nothing:\n{messages}"
    );
}

#[test]
fn the_unit_runs_crond_in_the_foreground_as_debians_cron_service_does() {
    let d = directives(&unit_text());
    let has = |section: &str, key: &str, value: &str| {
        d.iter()
            .any(|(s, k, v)| s == section && k == key && v == value)
    };
    for (section, key, value) in [
        ("Service", "Type", "notify"),
        ("Service", "EnvironmentFile", "-/etc/default/cron"),
        (
            "Service",
            "ExecStart",
            "/usr/sbin/cron -f --log syslog $EXTRA_OPTS",
        ),
        ("Service", "ExecReload", "/bin/kill -HUP $MAINPID"),
        ("Service", "KillMode", "process"),
        ("Service", "Restart", "on-failure"),
        ("Service", "IgnoreSIGPIPE", "false"),
        ("Install", "WantedBy", "multi-user.target"),
        ("Install", "Alias", "cron.service"),
    ] {
        assert!(
            has(section, key, value),
            "[{section}] {key}={value} missing"
        );
    }
}

#[test]
fn every_directive_of_the_service_section_says_why_above_it() {
    let text = unit_text();
    let lines: Vec<&str> = text.lines().collect();
    let mut in_service = false;
    for (i, line) in lines.iter().enumerate() {
        if line.starts_with('[') {
            in_service = *line == "[Service]";
        } else if in_service && !line.is_empty() && !line.starts_with('#') {
            assert!(
                i > 0 && lines[i - 1].starts_with('#'),
                "line {}: `{line}` has no comment saying why",
                i + 1
            );
        }
    }
}

#[test]
fn no_sandboxing_directive_that_would_break_jobs_is_set() {
    // Each would stop a job that works under Debian's cron: setuid programs (mail through
    // exim, sudo), writing homes and /etc, devices, containers, the network, JIT runtimes.
    let banned = [
        "NoNewPrivileges",
        "RestrictSUIDSGID",
        "CapabilityBoundingSet",
        "ProtectSystem",
        "ProtectHome",
        "ReadOnlyPaths",
        "InaccessiblePaths",
        "PrivateTmp",
        "PrivateDevices",
        "PrivateUsers",
        "PrivateMounts",
        "PrivateNetwork",
        "ProtectKernelTunables",
        "ProtectKernelModules",
        "ProtectKernelLogs",
        "ProtectClock",
        "ProtectControlGroups",
        "ProtectHostname",
        "ProtectProc",
        "ProcSubset",
        "RestrictNamespaces",
        "RestrictAddressFamilies",
        "SystemCallFilter",
        "SystemCallArchitectures",
        "MemoryDenyWriteExecute",
        "DynamicUser",
        "User",
        "Group",
    ];
    for (_, key, value) in directives(&unit_text()) {
        assert!(
            !banned.contains(&key.as_str()),
            "{key}={value} would break jobs"
        );
    }
}

#[test]
fn the_installed_unit_is_the_shipped_one_with_the_installed_path() {
    let dest = tempfile::tempdir().expect("tempdir");
    make_install(dest.path(), ["SETGID=no"]);
    let installed =
        std::fs::read_to_string(dest.path().join("usr/lib/systemd/system/crond.service"))
            .expect("installed unit");
    assert_eq!(installed, unit_text());
    assert_eq!(
        mode(&dest.path().join("usr/lib/systemd/system/crond.service")),
        0o644
    );
    assert!(!Path::new(&dest.path().join("usr/lib/systemd/system/crond.service.tmp")).exists());
}
