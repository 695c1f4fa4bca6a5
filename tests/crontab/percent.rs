//! Cron's best-known trap: an unescaped `%` ends the command and the rest becomes its standard
//! input, so `date +%F` runs as `date +`. `crontab -n`, `crontab FILE`, `crontab -e` and
//! `cronnext` warn, naming FILE:LINE:COLUMN of the `%` and how to escape it; the file is still
//! installed, as Debian installs it, and the exit status is 0. A `%` that starts intended
//! standard input (`mail -s hi root%body`) is not warned about.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::{Command, Output, Stdio};

use crate::support::crontab::BIN;
use crate::support::golden::{Scrub, assert_golden};

const TAB: &[u8] = b"# backups, named by the day\n\
0 3 * * * tar czf /srv/backup/$(date +%Y-%m-%d).tgz /srv/data\n\
0 4 * * * date +\\%F >> /var/log/ran\n\
0 5 * * * mail -s report root%all done%\n";

fn crontab(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(BIN)
        .arg("--spool-dir")
        .arg(dir.join("spool"))
        .arg("--allow-file")
        .arg(dir.join("allow"))
        .arg("--deny-file")
        .arg(dir.join("deny"))
        .args(args)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("TMPDIR", dir)
        .envs(env.iter().copied())
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("run crontab")
}

/// What the user sees: both streams and the exit status.
fn seen(out: &Output) -> String {
    format!(
        "{}{}[exit status {}]\n",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        out.status.code().unwrap()
    )
}

fn sandbox() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("spool")).unwrap();
    fs::write(dir.path().join("tab"), TAB).unwrap();
    dir
}

/// The one file in the spool.
fn installed(dir: &std::path::Path) -> Vec<u8> {
    let mut files: Vec<_> = fs::read_dir(dir.join("spool")).unwrap().collect();
    assert_eq!(files.len(), 1);
    fs::read(files.pop().unwrap().unwrap().path()).unwrap()
}

#[test]
fn crontab_n_warns_of_a_percent_meant_for_date_and_still_succeeds() {
    let dir = sandbox();
    let out = crontab(dir.path(), &["-n", "tab"], &[]);
    assert_golden("crontab-n-percent.txt", &seen(&out));
    assert_eq!(out.status.code(), Some(0));
}

#[test]
fn crontab_file_warns_of_a_percent_meant_for_date_and_installs_the_file_as_written() {
    let dir = sandbox();
    let out = crontab(dir.path(), &["tab"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", seen(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.matches("(warning)").count(), 1, "{err}");
    assert!(err.starts_with("tab:2:39: '%' ends the command"), "{err}");
    let text = installed(dir.path());
    assert!(text.ends_with(TAB), "{}", String::from_utf8_lossy(&text));
}

#[test]
fn crontab_e_warns_of_a_percent_meant_for_date_and_installs_the_edit() {
    let dir = sandbox();
    let editor = dir.path().join("editor");
    fs::write(
        &editor,
        "#!/bin/sh\nprintf '0 3 * * * date +%%F > /tmp/day\\n' > \"$1\"\n",
    )
    .unwrap();
    fs::set_permissions(&editor, fs::Permissions::from_mode(0o755)).unwrap();
    let out = crontab(dir.path(), &["-e"], &[("EDITOR", editor.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(0), "{}", seen(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(":1:17: '%' ends the command here") && err.contains(r"write +\%F if"),
        "{err}"
    );
    assert!(installed(dir.path()).ends_with(b"0 3 * * * date +%F > /tmp/day\n"));
}

#[test]
fn cronnext_warns_of_a_percent_meant_for_date_and_still_prints_the_times() {
    let dir = sandbox();
    let out = Command::new(env!("CARGO_BIN_EXE_cronnext"))
        .args(["--after", "2026-11-21T10:00:00", "--count", "1", "tab"])
        .env("TZ", "UTC")
        .current_dir(dir.path())
        .output()
        .expect("run cronnext");
    let shown = Scrub::new().apply(&seen(&out));
    assert_golden("cronnext-percent.txt", &shown);
    assert_eq!(out.status.code(), Some(0));
}
