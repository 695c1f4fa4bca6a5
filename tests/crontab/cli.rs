//! The `crontab` command without its setgid privilege, with the path options a test may use:
//! messages and exit codes (Debian's), checking, cron.allow / cron.deny, `-u` for non-root.
//!
//! Tests whose name starts with `root_` switch to a real user (`nobody`) and fail without root;
//! the others run as whoever runs the suite, in a temporary directory, and touch nothing else.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use crate::support::crontab::*;

/// A spool directory and allow/deny paths in a temporary directory, for the invoking user.
struct Plain {
    dir: tempfile::TempDir,
}

impl Plain {
    fn new() -> Plain {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("spool")).unwrap();
        Plain { dir }
    }

    fn p(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn run(&self, args: &[&str], stdin: &[u8]) -> Output {
        self.run_env(args, &[], stdin)
    }

    fn run_env(&self, args: &[&str], env: &[(&str, &str)], stdin: &[u8]) -> Output {
        use std::io::Write;
        use std::os::unix::process::CommandExt;
        let mut c = Command::new(BIN)
            .arg("--spool-dir")
            .arg(self.p("spool"))
            .arg("--allow-file")
            .arg(self.p("allow"))
            .arg("--deny-file")
            .arg(self.p("deny"))
            .args(args)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("TMPDIR", self.dir.path())
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A process group of its own, as a shell's job is: `kill -INT 0` in an editor then
            // reaches crontab and the editor, never the test harness.
            .process_group(0)
            .spawn()
            .unwrap();
        let _ = c.stdin.take().unwrap().write_all(stdin);
        c.wait_with_output().unwrap()
    }

    fn only_file(&self) -> Option<PathBuf> {
        let mut names: Vec<_> = fs::read_dir(self.p("spool"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        assert!(names.len() <= 1, "{names:?}");
        names.pop()
    }
}

fn me() -> String {
    let out = Command::new("id").arg("-un").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn a_crontab_round_trips_through_install_list_and_remove() {
    let t = Plain::new();
    let text = b"MAILTO=\"\"\n@daily echo a % b\n*/5 9-17 * * mon-fri echo work\n";
    let out = t.run(&["-"], text);
    assert!(out.status.success(), "{}", show(&out));
    assert!(out.stderr.is_empty(), "{}", show(&out));
    let file = t.only_file().expect("a file in the spool");
    assert_eq!(file.file_name().unwrap().to_str().unwrap(), me());
    assert_eq!(owner_mode(&file).2, 0o600);
    let out = t.run(&["-l"], b"");
    assert_eq!(out.stdout, text);
    assert!(t.run(&["-r"], b"").status.success());
    assert!(t.only_file().is_none());
}

#[test]
fn a_file_argument_is_installed_and_reinstalling_replaces_it() {
    let t = Plain::new();
    fs::write(t.p("mine"), b"1 1 * * * one\n").unwrap();
    assert!(
        t.run(&[t.p("mine").to_str().unwrap()], b"")
            .status
            .success()
    );
    let header = fs::read_to_string(t.only_file().unwrap()).unwrap();
    assert!(
        header.contains(&format!("# ({} installed on ", t.p("mine").display())),
        "{header}"
    );
    assert!(
        t.run(&[], b"2 2 * * * two\n").status.success(),
        "no argument reads stdin"
    );
    assert_eq!(t.run(&["-l"], b"").stdout, b"2 2 * * * two\n");
}

#[test]
fn errors_name_file_line_and_column_and_nothing_is_installed() {
    let t = Plain::new();
    assert!(t.run(&["-"], b"0 0 * * * keep\n").status.success());
    let before = fs::read(t.only_file().unwrap()).unwrap();
    let out = t.run(&["-"], b"0 0 * * * fine\n61 0 * * * bad\n0 0 * * *\n");
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert!(lines[0].starts_with("-:2:1: "), "{err}");
    assert!(lines[1].starts_with("-:3:"), "{err}");
    assert_eq!(
        lines.last().unwrap(),
        &"errors in crontab file, can't install."
    );
    assert_eq!(fs::read(t.only_file().unwrap()).unwrap(), before);
}

#[test]
fn warnings_are_printed_but_do_not_block_the_install() {
    let t = Plain::new();
    let out = t.run(&["-"], b"0 0 31 2 * never\n0 0 * * * no-newline");
    assert!(out.status.success(), "{}", show(&out));
    let err = stderr(&out);
    assert!(
        err.contains("-:1:1: ") && err.contains("(warning)"),
        "{err}"
    );
    assert!(err.contains("missing newline"), "{err}");
    assert_eq!(
        t.run(&["-l"], b"").stdout,
        b"0 0 31 2 * never\n0 0 * * * no-newline"
    );
}

#[test]
fn n_and_t_only_check_the_syntax() {
    let t = Plain::new();
    fs::write(t.p("tab"), b"0 0 * * * x\n").unwrap();
    for flag in ["-n", "-T"] {
        let out = t.run(&[flag, t.p("tab").to_str().unwrap()], b"");
        assert!(out.status.success(), "{}", show(&out));
        assert_eq!(
            stderr(&out),
            "The syntax of the crontab file was successfully checked.\n"
        );
    }
    assert!(t.only_file().is_none(), "a check installs nothing");
    fs::write(t.p("bad"), b"0 0 * * 8 x\n").unwrap();
    let out = t.run(&["-n", t.p("bad").to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).starts_with(&format!("{}:1:", t.p("bad").display())),
        "{}",
        show(&out)
    );
    assert!(stderr(&out).ends_with("errors in crontab file, can't install.\n"));
}

#[test]
fn n_checks_the_extensions_values_and_names_their_column() {
    let t = Plain::new();
    fs::write(
        t.p("tab"),
        b"CRON_OVERLAP=queue\nCRON_TIMEOUT=2h\nCRON_MISSED=once\n0 0 * * * x\n",
    )
    .unwrap();
    let out = t.run(&["-n", t.p("tab").to_str().unwrap()], b"");
    assert!(out.status.success(), "{}", show(&out));
    fs::write(t.p("bad"), b"0 0 * * * x\nCRON_TIMEOUT=forever\n").unwrap();
    let out = t.run(&["-n", t.p("bad").to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        stderr(&out).starts_with(&format!(
            "{}:2:14: CRON_TIMEOUT: 'forever' is not a duration",
            t.p("bad").display()
        )),
        "{}",
        show(&out)
    );
}

#[test]
fn n_reports_unsafe_mail_settings_where_they_are_and_install_refuses_them() {
    let t = Plain::new();
    fs::write(
        t.p("tab"),
        b"MAILTO=me@here\nMAILFROM=-f evil\n0 0 * * * x\n",
    )
    .unwrap();
    let out = t.run(&["-n", t.p("tab").to_str().unwrap()], b"");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        stderr(&out).starts_with(&format!(
            "{}:2:10: MAILFROM may hold only",
            t.p("tab").display()
        )),
        "{}",
        show(&out)
    );
    let out = t.run(&["-"], b"MAILTO=a@b, c@d\n0 0 * * * x\n");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        stderr(&out).contains(":1:12: MAILTO may hold only"),
        "{}",
        show(&out)
    );
    assert!(t.only_file().is_none(), "nothing installed");
}

#[test]
fn many_bad_lines_show_twenty_problems_then_a_count() {
    let t = Plain::new();
    let out = t.run(&["-"], "bad\n".repeat(20_000).as_bytes());
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 22, "{}", show(&out));
    assert!(
        lines[20].starts_with("(19980 more problems in "),
        "{}",
        lines[20]
    );
    assert!(t.only_file().is_none());
}

#[test]
fn a_missing_file_is_reported_with_its_name() {
    let t = Plain::new();
    let out = t.run(&["/nonexistent/tab"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "/nonexistent/tab: No such file or directory\n"
    );
}

#[test]
fn usage_errors_print_debians_usage_and_exit_1() {
    let t = Plain::new();
    let out = t.run(&["-l", "-r"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with("crontab: usage error: only one operation permitted\nusage:"));
    let out = t.run(&["-x"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).starts_with(
        "crontab: invalid option -- 'x'\ncrontab: usage error: unrecognized option\n"
    ));
    let out = t.run(&["-h"], b"");
    assert!(out.status.success());
    assert!(stdout(&out).contains("-e\t(edit user's crontab)"));
    let out = t.run(&["-V"], b"");
    assert_eq!(
        stdout(&out),
        format!("crontab (crond) {}\n", env!("CARGO_PKG_VERSION"))
    );
}

#[test]
fn an_unknown_user_is_named() {
    let t = Plain::new();
    if me() != "root" {
        return assert_eq!(
            t.run(&["-u", "no-such-user-5", "-l"], b"").status.code(),
            Some(1)
        );
    }
    let out = t.run(&["-u", "no-such-user-5", "-l"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "crontab:  user `no-such-user-5' unknown\n");
}

#[test]
fn remove_with_i_asks_first_and_no_keeps_the_crontab() {
    let t = Plain::new();
    assert!(t.run(&["-"], b"0 0 * * * x\n").status.success());
    for answer in [&b"n\n"[..], b"", b"maybe\nn\n"] {
        let out = t.run(&["-ri"], answer);
        assert!(out.status.success(), "{}", show(&out));
        assert!(t.only_file().is_some(), "kept after {answer:?}");
    }
    let out = t.run(&["-ri"], b"what\ny\n");
    assert_eq!(
        stdout(&out),
        format!(
            "crontab: really delete {}'s crontab? (y/n) Please enter Y or N: ",
            me()
        )
    );
    assert!(t.only_file().is_none());
}

#[test]
fn an_editor_that_fails_installs_nothing() {
    let t = Plain::new();
    let out = t.run_env(&["-e"], &[("EDITOR", "exit 3; :")], b"");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("crontab: \"exit 3; :\" exited with status 3"),
        "{}",
        show(&out)
    );
    assert!(t.only_file().is_none());
}

#[test]
fn without_visual_or_editor_e_runs_sensible_editor_which_reads_selected_editor() {
    // Debian's default editor: sensible-editor (sensible-utils), which takes the choice a user
    // made with select-editor from ~/.selected_editor.
    assert!(
        Path::new("/usr/bin/sensible-editor").exists(),
        "sensible-editor is missing: run .ci/deps (Debian package sensible-utils)"
    );
    let t = Plain::new();
    let editor = t.p("my-editor");
    fs::write(&editor, "#!/bin/sh\necho '0 4 * * * chosen' >> \"$1\"\n").unwrap();
    fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    fs::write(
        t.p(".selected_editor"),
        format!("SELECTED_EDITOR=\"{}\"\n", editor.display()),
    )
    .unwrap();
    let home = t.dir.path().to_str().unwrap();
    let out = t.run_env(&["-e"], &[("HOME", home)], b"");
    assert!(out.status.success(), "{}", show(&out));
    // The template for a new crontab, then the chosen editor's line.
    let listed = String::from_utf8(t.run(&["-l"], b"").stdout).unwrap();
    assert!(listed.ends_with("\n0 4 * * * chosen\n"), "{listed}");
}

#[test]
fn l_shows_the_header_only_when_crontab_noheader_is_n() {
    let t = Plain::new();
    assert!(t.run(&["-"], b"0 0 * * * x\n").status.success());
    assert_eq!(t.run(&["-l"], b"").stdout, b"0 0 * * * x\n");
    for value in ["Y", "", "n"] {
        let out = t.run_env(&["-l"], &[("CRONTAB_NOHEADER", value)], b"");
        assert_eq!(out.stdout, b"0 0 * * * x\n", "CRONTAB_NOHEADER={value:?}");
    }
    let out = t.run_env(&["-l"], &[("CRONTAB_NOHEADER", "N")], b"");
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].starts_with("# DO NOT EDIT THIS FILE"), "{text}");
    assert!(lines[1].starts_with("# ("), "{text}");
    assert!(lines[2].starts_with("# (Cron version"), "{text}");
    assert_eq!(lines[3], "0 0 * * * x");
}

/// Names left in the temporary directory (the editor's copies) and the spool.
fn leftovers(t: &Plain) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(t.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("crontab."))
        .collect();
    names.extend(
        fs::read_dir(t.p("spool"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("tmp.")),
    );
    names
}

#[test]
fn a_control_c_during_the_edit_reaches_the_editor_and_crontab_cleans_up() {
    let t = Plain::new();
    // ^C as a terminal sends it: to the whole process group. The editor dies of it.
    let out = t.run_env(&["-e"], &[("EDITOR", "kill -INT 0; sleep 5; :")], b"");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        stderr(&out).contains("killed; signal 2"),
        "crontab outlived the signal and reported it: {}",
        show(&out)
    );
    assert!(t.only_file().is_none());
    assert_eq!(leftovers(&t), Vec::<String>::new());
}

#[test]
fn signals_that_the_editor_survives_do_not_stop_the_install() {
    let t = Plain::new();
    // An editor that ignores ^C and a hang-up, writes a crontab, then has the group signalled:
    // crontab ignores them too and installs.
    let editor = "trap '' INT QUIT HUP; printf '5 5 * * * x\\n' > \"$1\"; kill -INT 0; \
                  kill -QUIT 0; kill -HUP 0; :";
    let out = t.run_env(&["-e"], &[("EDITOR", editor)], b"");
    assert!(out.status.success(), "{}", show(&out));
    let installed = fs::read(t.only_file().expect("installed")).unwrap();
    assert!(installed.ends_with(b"5 5 * * * x\n"), "{installed:?}");
    assert_eq!(leftovers(&t), Vec::<String>::new());
}

#[test]
fn a_header_from_debians_crontab_is_hidden_by_list() {
    let t = Plain::new();
    let f = t.p("spool").join(me());
    fs::write(
        &f,
        "# DO NOT EDIT THIS FILE - edit the master and reinstall.\n# (- installed on Sat Nov 21 22:44:03 2026)\n# (Cron version -- $Id: crontab.c,v 2.13 1994/01/17 03:20:37 vixie Exp $)\n0 0 * * * echo hi\n",
    )
    .unwrap();
    assert_eq!(t.run(&["-l"], b"").stdout, b"0 0 * * * echo hi\n");
}

#[test]
fn a_line_hidden_behind_a_carriage_return_is_refused_and_listed_escaped() {
    let t = Plain::new();
    let hiding = b"0 0 * * * evil #\r0 0 * * * harmless\n";
    let out = t.run(&["-"], hiding);
    assert!(!out.status.success(), "{}", show(&out));
    assert!(
        stderr(&out).contains(":1:17: carriage return inside the line"),
        "{}",
        show(&out)
    );
    assert!(t.only_file().is_none(), "nothing installed");
    // A file that holds one anyway (written by another tool) is listed with the CR visible.
    fs::write(t.p("spool").join(me()), hiding).unwrap();
    assert_eq!(
        t.run(&["-l"], b"").stdout,
        b"0 0 * * * evil #\\r0 0 * * * harmless\n"
    );
}

// As a real user (root needed to switch to it).

fn plain_sandbox() -> (Sandbox, Vec<String>) {
    let s = Sandbox::new();
    let spool = s.path("home/spool");
    fs::create_dir(&spool).unwrap();
    std::os::unix::fs::chown(&spool, Some(uid_of(USER)), Some(gid_of(USER))).unwrap();
    let args = vec![
        "--spool-dir".to_string(),
        spool.display().to_string(),
        "--allow-file".to_string(),
        s.path("home/allow").display().to_string(),
        "--deny-file".to_string(),
        s.path("home/deny").display().to_string(),
    ];
    (s, args)
}

fn with<'a>(base: &'a [String], more: &[&'a str]) -> Vec<&'a str> {
    base.iter()
        .map(String::as_str)
        .chain(more.iter().copied())
        .collect()
}

#[test]
fn root_a_user_listed_in_cron_deny_is_refused() {
    let (s, base) = plain_sandbox();
    fs::write(s.path("home/deny"), format!("daemon\n{USER}\n")).unwrap();
    for args in [&["-"][..], &["-l"], &["-e"], &["-r"]] {
        let out = s.run_plain(
            Some(USER),
            &with(&base, args),
            &[("EDITOR", "true")],
            b"0 0 * * * x\n",
        );
        assert_eq!(out.status.code(), Some(1), "{args:?}: {}", show(&out));
        assert_eq!(
            stderr(&out),
            "You (nobody) are not allowed to use this program (crontab)\nSee crontab(1) for more information\n"
        );
    }
    assert!(fs::read_dir(s.path("home/spool")).unwrap().next().is_none());
    // Root is never denied, and may not act for a denied user.
    let out = s.run_plain(None, &with(&base, &["-u", USER, "-l"]), &[], b"");
    assert_eq!(
        stderr(&out),
        "The user nobody cannot use this program (crontab)\n"
    );
}

#[test]
fn root_cron_allow_admits_only_listed_users_and_wins_over_cron_deny() {
    let (s, base) = plain_sandbox();
    fs::write(s.path("home/allow"), "daemon\n").unwrap();
    let out = s.run_plain(Some(USER), &with(&base, &["-"]), &[], b"0 0 * * * x\n");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    fs::write(s.path("home/allow"), format!("daemon\n{USER}\n")).unwrap();
    fs::write(s.path("home/deny"), format!("{USER}\n")).unwrap();
    let out = s.run_plain(Some(USER), &with(&base, &["-"]), &[], b"0 0 * * * x\n");
    assert!(out.status.success(), "{}", show(&out));
}

#[test]
fn root_an_unreadable_cron_allow_denies() {
    let (s, base) = plain_sandbox();
    fs::write(s.path("home/allow"), format!("{USER}\n")).unwrap();
    fs::set_permissions(
        s.path("home/allow"),
        std::os::unix::fs::PermissionsExt::from_mode(0o600),
    )
    .unwrap();
    let out = s.run_plain(Some(USER), &with(&base, &["-"]), &[], b"0 0 * * * x\n");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(stderr(&out).starts_with("You (nobody) are not allowed"));
}

#[test]
fn root_u_naming_another_user_is_refused_for_a_non_root_user() {
    let (s, base) = plain_sandbox();
    let out = s.run_plain(
        Some(USER),
        &with(&base, &["-u", "daemon", "-"]),
        &[],
        b"0 0 * * * x\n",
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stderr(&out), "must be privileged to use -u\n");
    assert!(!Path::new(&s.path("home/spool/daemon")).exists());
    let out = s.run_plain(
        Some(USER),
        &with(&base, &["-u", USER, "-"]),
        &[],
        b"0 0 * * * x\n",
    );
    assert!(out.status.success(), "{}", show(&out));
    assert!(s.path("home/spool").join(USER).exists());
}

#[test]
fn root_cronies_dash_is_accepted_in_roots_crontab_and_refused_for_another_user() {
    let (s, base) = plain_sandbox();
    let text = b"-*/5 * * * * date\n";
    let out = s.run_plain(None, &with(&base, &["-u", "root", "-"]), &[], text);
    assert!(out.status.success(), "{}", show(&out));
    assert!(s.path("home/spool/root").exists());
    // Root installing for nobody gets nobody's rule, and nothing is installed for them.
    let out = s.run_plain(None, &with(&base, &["-u", USER, "-"]), &[], text);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(
        stderr(&out),
        "-:1:1: only root's crontab and system files may use '-' (no CMD log line)\n\
         errors in crontab file, can't install.\n"
    );
    assert!(!s.path("home/spool").join(USER).exists());
    let out = s.run_plain(Some(USER), &with(&base, &["-n", "-"]), &[], text);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
}

#[test]
fn a_line_with_h_installs_with_a_warning_that_debian_rejects_it() {
    let t = Plain::new();
    let text = b"0 5 * * * plain\nH H(0-7) * * * backup\nH/15 * * * * poll\n";
    let out = t.run(&["-"], text);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(
        stderr(&out),
        "-:2:1: 'H' (a hashed time) is a crond extension: Debian's cron rejects this line, \
         and 1 more line (warning)\n"
    );
    assert_eq!(t.run(&["-l"], b"").stdout, text);
    // Without H, nothing is said.
    let out = t.run(&["-"], b"0 5 * * * plain\n");
    assert_eq!(stderr(&out), "");
    // A bad H is an error like any other, and nothing is installed.
    let out = t.run(&["-"], b"H(0-99) * * * * x\n");
    assert!(!out.status.success());
    assert!(
        stderr(&out).starts_with("-:1:5: 99 is out of range 0-59 in the minute field"),
        "{}",
        show(&out)
    );
}
