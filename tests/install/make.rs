//! `make install` and `make uninstall` as a packager and an admin use them: into a temporary
//! DESTDIR, checking every file, mode, link and (as root) owner, that /etc files are never
//! overwritten and that uninstall keeps what users and admins changed. Also checks the shipped
//! /etc files load without errors. It must not touch the host: nothing is installed into /,
//! and the root test that needs the `crontab` group gets it from a private mount namespace.

use std::path::Path;
use std::process::Command;

use crate::support::install::*;

fn read(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn make_install_puts_every_file_in_place_with_its_mode() {
    let dest = tempfile::tempdir().expect("tempdir");
    let out = make_install(dest.path(), ["SETGID=no"]);
    for (path, want) in INSTALLED {
        assert_eq!(mode(&dest.path().join(path)), want, "mode of {path}");
    }
    assert_eq!(
        link_target(&dest.path().join("usr/sbin/cron")),
        Path::new("crond")
    );
    assert_eq!(
        link_target(&dest.path().join("usr/share/man/man8/cron.8")),
        Path::new("crond.8")
    );
    // Users run `cronctl list` from their PATH; the program stays in sbin beside crond.
    assert_eq!(
        link_target(&dest.path().join("usr/bin/cronctl")),
        Path::new("/usr/sbin/cronctl")
    );
    for name in ["crond", "crontab", "cronnext"] {
        let dir = if name == "crond" {
            "usr/sbin"
        } else {
            "usr/bin"
        };
        assert_eq!(
            read(&dest.path().join(dir).join(name)),
            read(&bins().join(name)),
            "{name} is the built binary"
        );
    }
    for file in ETC_FILES {
        let installed = dest.path().join("etc").join(file);
        assert!(is_regular(&installed), "{file} installed");
        assert_eq!(mode(&installed), 0o644, "mode of /etc/{file}");
        assert_eq!(read(&installed), read(&repo().join("etc").join(file)));
    }
    for absent in ["etc/cron.allow", "etc/cron.deny"] {
        assert!(
            !dest.path().join(absent).exists(),
            "{absent} is not shipped"
        );
    }
    // A DESTDIR install without the group says what a package must do instead.
    assert!(out.contains("groupadd --system crontab"), "{out}");
    assert!(out.contains("chmod 2755 /usr/bin/crontab"), "{out}");
}

#[test]
fn an_existing_etc_file_is_kept_by_install_and_a_changed_one_by_uninstall() {
    let dest = tempfile::tempdir().expect("tempdir");
    make_install(dest.path(), ["SETGID=no"]);
    let crontab = dest.path().join("etc/crontab");
    let mine = b"# the admin's own\n0 4 * * * root /usr/local/bin/backup\n";
    std::fs::write(&crontab, mine).expect("edit /etc/crontab");

    let out = make_install(dest.path(), ["SETGID=no"]);
    assert!(out.contains("kept"), "{out}");
    assert_eq!(
        read(&crontab),
        mine,
        "a second install keeps the admin's /etc/crontab"
    );

    // A user's crontab in the spool dir must survive uninstall.
    let spool = dest.path().join("var/spool/cron/crontabs");
    std::fs::write(spool.join("alice"), b"* * * * * true\n").expect("a user's crontab");

    make("uninstall", [format!("DESTDIR={}", dest.path().display())]);
    for (path, _) in INSTALLED {
        if path != "var/spool/cron/crontabs" {
            assert!(
                std::fs::symlink_metadata(dest.path().join(path)).is_err(),
                "{path} removed"
            );
        }
    }
    assert!(
        std::fs::symlink_metadata(dest.path().join("usr/bin/cronctl")).is_err(),
        "the cronctl link removed"
    );
    assert_eq!(read(&crontab), mine, "a changed /etc/crontab is kept");
    assert!(
        !dest.path().join("etc/default/cron").exists(),
        "unchanged file removed"
    );
    assert!(
        !dest.path().join("etc/cron.hourly").exists(),
        "empty directory removed"
    );
    assert_eq!(read(&spool.join("alice")), b"* * * * * true\n");
}

#[test]
fn uninstall_removes_an_empty_spool_dir() {
    let dest = tempfile::tempdir().expect("tempdir");
    make_install(dest.path(), ["SETGID=no"]);
    make("uninstall", [format!("DESTDIR={}", dest.path().display())]);
    assert!(!dest.path().join("var/spool/cron").exists());
    assert!(!dest.path().join("etc/crontab").exists());
}

#[test]
fn a_prefix_moves_the_programs_and_the_units_exec_start_but_not_etc() {
    let dest = tempfile::tempdir().expect("tempdir");
    make_install(dest.path(), ["SETGID=no", "PREFIX=/usr/local"]);
    assert!(is_regular(&dest.path().join("usr/local/sbin/crond")));
    assert!(is_regular(&dest.path().join("usr/local/bin/crontab")));
    assert!(is_regular(
        &dest.path().join("usr/local/share/man/man8/crond.8")
    ));
    let unit = std::fs::read_to_string(
        dest.path()
            .join("usr/local/lib/systemd/system/crond.service"),
    )
    .expect("unit installed under the prefix");
    assert!(
        unit.lines()
            .any(|l| l == "ExecStart=/usr/local/sbin/cron -f --log syslog $EXTRA_OPTS"),
        "ExecStart follows sbindir:\n{unit}"
    );
    assert!(
        is_regular(&dest.path().join("etc/crontab")),
        "/etc stays /etc"
    );
    assert!(!dest.path().join("usr/sbin").exists());
}

#[test]
fn install_refuses_to_replace_another_crons_binary() {
    let dest = tempfile::tempdir().expect("tempdir");
    let sbin = dest.path().join("usr/sbin");
    std::fs::create_dir_all(&sbin).expect("mkdir");
    std::fs::write(sbin.join("cron"), b"Debian's cron\n").expect("a foreign cron");
    let out = run(Command::new("make")
        .arg("-C")
        .arg(repo())
        .arg("install")
        .arg(format!("bins={}", bins().display()))
        .arg(format!("DESTDIR={}", dest.path().display()))
        .arg("SETGID=no"));
    assert!(!out.status.success(), "install must fail");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("belongs to another cron"), "{err}");
    assert_eq!(read(&sbin.join("cron")), b"Debian's cron\n");
    assert!(!sbin.join("crond").exists(), "nothing installed");
}

/// A gid that is not in the host's group file, for a `crontab` group that exists only in a
/// private mount namespace.
fn free_gid() -> u32 {
    let groups = std::fs::read_to_string("/etc/group").expect("/etc/group");
    (60_000..61_000)
        .find(|gid| {
            !groups
                .lines()
                .any(|l| l.split(':').nth(2) == Some(&gid.to_string()))
        })
        .expect("a free gid")
}

#[test]
fn root_install_with_the_crontab_group_makes_crontab_setgid_and_the_spool_dir_its_own() {
    require_root();
    require_command("unshare");
    let dest = tempfile::tempdir().expect("tempdir");
    let work = tempfile::tempdir().expect("tempdir");
    // /etc/group with a crontab group, seen only by the make below (bind-mounted in its own
    // mount namespace): the host's group file is not changed.
    let group = work.path().join("group");
    let mut text = std::fs::read_to_string("/etc/group").expect("/etc/group");
    let gid = match gid_in(Path::new("/etc/group"), "crontab") {
        Some(gid) => gid,
        None => {
            let gid = free_gid();
            text.push_str(&format!("crontab:x:{gid}:\n"));
            gid
        }
    };
    std::fs::write(&group, text).expect("write group copy");
    let out = run_ok(
        Command::new("unshare")
            .args(["-m", "sh", "-e", "-c"])
            .arg(r#"mount --bind "$1" /etc/group; shift; exec make --no-print-directory "$@""#)
            .arg("sh")
            .arg(&group)
            .arg("-C")
            .arg(repo())
            .arg("install")
            .arg(format!("bins={}", bins().display()))
            .arg(format!("DESTDIR={}", dest.path().display())),
    );
    assert!(out.contains("crontab: root:crontab 2755"), "{out}");
    let crontab = dest.path().join("usr/bin/crontab");
    assert_eq!(mode(&crontab), 0o2755);
    assert_eq!(owner(&crontab), (0, gid));
    let spool = dest.path().join("var/spool/cron/crontabs");
    assert_eq!(mode(&spool), 0o1730);
    assert_eq!(owner(&spool), (0, gid));
    for (path, want) in INSTALLED {
        let p = dest.path().join(path);
        if path != "usr/bin/crontab" && path != "var/spool/cron/crontabs" {
            assert_eq!(owner(&p), (0, 0), "{path} belongs to root");
            assert_eq!(mode(&p), want, "mode of {path}");
        }
    }
    for file in ETC_FILES {
        assert_eq!(
            owner(&dest.path().join("etc").join(file)),
            (0, 0),
            "/etc/{file}"
        );
    }
}

#[test]
fn the_shipped_system_crontab_loads_without_errors_and_runs_the_four_run_parts_lines() {
    let out = run(Command::new(bins().join("cronnext"))
        .args(["--system", "--tz", "UTC", "--after", "2026-11-22T00:00:00Z"])
        .arg(repo().join("etc/crontab")));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.is_empty(), "{stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    // 2026-11-22 is a Sunday: hourly at :17, daily 6:25, weekly Sunday 6:47, monthly the 1st.
    assert_eq!(
        lines,
        [
            "2026-11-22T00:17:00+00:00 root cd / && run-parts --report /etc/cron.hourly",
            "2026-11-22T06:25:00+00:00 root test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.daily; }",
            "2026-11-22T06:47:00+00:00 root test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.weekly; }",
            "2026-12-01T06:52:00+00:00 root test -x /usr/sbin/anacron || { cd / && run-parts --report /etc/cron.monthly; }",
        ]
    );
}

#[test]
fn the_placeholders_are_comments_only_and_skipped_by_the_cron_d_name_rule() {
    for file in ETC_FILES.iter().filter(|f| f.ends_with(".placeholder")) {
        let path = repo().join("etc").join(file);
        let out = run(Command::new(bins().join("cronnext"))
            .arg("--system")
            .arg(&path));
        assert!(out.status.success(), "{file}: {:?}", out);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // In cron.d cronnext skips it as the daemon does, and says so; elsewhere it reads it
        // as given, and finds only comments.
        let skipped = match file.starts_with("cron.d/") {
            true => stderr.contains("skipped: crond does not read this file"),
            false => stderr.is_empty(),
        };
        assert!(out.stdout.is_empty() && skipped, "{file}: {:?}", out);
        // run-parts' name rule (letters, digits, _ and -): a dot keeps the daemon and
        // run-parts away from it.
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(
            !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
        );
    }
}

#[test]
fn etc_default_cron_sets_an_empty_extra_opts_for_the_unit() {
    let out = run_ok(
        Command::new("sh")
            .arg("-c")
            .arg(r#"set -eu; . "$1"; printf '[%s][%s]' "$EXTRA_OPTS" "$CRON_CLUSTER_DB""#)
            .arg("sh")
            .arg(repo().join("etc/default/cron")),
    );
    assert_eq!(out, "[][]");
    let text = std::fs::read_to_string(repo().join("etc/default/cron")).expect("read");
    let assignments: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .collect();
    assert_eq!(
        assignments,
        ["EXTRA_OPTS=\"\"", "CRON_CLUSTER_DB=\"\""],
        "EXTRA_OPTS for the unit's command line, CRON_CLUSTER_DB for crond's environment \
         (empty: no cluster database)"
    );
}

#[test]
fn the_shipped_crontabs_pass_crontab_n() {
    for file in ETC_FILES
        .iter()
        .filter(|f| **f != "default/cron" && **f != "pam.d/cron")
    {
        let out = run(Command::new(bins().join("crontab"))
            .arg("-n")
            .arg(repo().join("etc").join(file)));
        assert!(out.status.success(), "crontab -n etc/{file}: {out:?}");
        // Debian prints its success line on stderr; anything more would be a warning. crontab(1)
        // reads the user format, so this proves syntax only: the system format (the user field)
        // is checked by the cronnext --system test of the shipped /etc/crontab.
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            "The syntax of the crontab file was successfully checked.\n",
            "crontab -n etc/{file}"
        );
    }
}
