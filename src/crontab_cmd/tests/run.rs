//! The `crontab` command through its library entry point, as the binary calls it: argv parsed by
//! `Options::try_parse_from`, then `crontab_cmd::run` with in-memory stdio and a log recorder, so the
//! syslog events (Debian's `REPLACE`, `LIST`, `DELETE`, `BEGIN EDIT`, `END EDIT`) are checked.
//!
//! Runs as whoever runs the suite, without privilege, in a temporary spool directory.

use std::fs;
use std::io::Cursor;
use std::path::Path;

use crate::crontab_cmd::{self, Context, Io, Options, Paths, choose_editor};
use crate::sys::setgid::Privilege;

struct Outcome {
    code: u8,
    stdout: Vec<u8>,
    stderr: String,
    log: Vec<String>,
}

fn run(dir: &Path, args: &[&str], editor: &str, stdin: &[u8]) -> Outcome {
    let spool_dir = dir.join("spool");
    let mut argv = vec![
        "--spool-dir".to_string(),
        spool_dir.display().to_string(),
        "--allow-file".to_string(),
        dir.join("allow").display().to_string(),
        "--deny-file".to_string(),
        dir.join("deny").display().to_string(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    let options = Options::try_parse_from(argv).expect("a valid command line");
    let privilege = Privilege::resolve();
    assert!(
        !privilege.is_privileged(),
        "the test process holds no privilege"
    );
    let ctx = Context {
        privilege,
        paths: Paths::choose(&options.overrides, privilege.is_privileged()),
        editor: choose_editor(Some(editor.into()), None, |_: &str| false),
        list_header: false,
        tmpdir: dir.to_path_buf(),
    };
    let mut stdin = Cursor::new(stdin.to_vec());
    let mut stdout = Vec::new();
    let mut stderr = Vec::new();
    let mut log = Vec::new();
    let mut record = |user: &[u8], event: &str, detail: &[u8]| {
        log.push(format!(
            "({}) {event} ({})",
            String::from_utf8_lossy(user),
            String::from_utf8_lossy(detail)
        ));
    };
    let code = crontab_cmd::run(
        &options,
        &ctx,
        &mut Io {
            stdin: &mut stdin,
            stdout: &mut stdout,
            stderr: &mut stderr,
            log: &mut record,
        },
    );
    Outcome {
        code,
        stdout,
        stderr: String::from_utf8(stderr).unwrap(),
        log,
    }
}

fn me() -> String {
    let out = std::process::Command::new("id")
        .arg("-un")
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

#[test]
fn each_operation_logs_debians_event() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("spool")).unwrap();
    let me = me();

    let o = run(dir.path(), &["-"], "true", b"0 0 * * * x\n");
    assert_eq!((o.code, o.stderr.as_str()), (0, ""));
    assert_eq!(o.log, vec![format!("({me}) REPLACE ({me})")]);

    let o = run(dir.path(), &["-l"], "true", b"");
    assert_eq!(o.stdout, b"0 0 * * * x\n");
    assert_eq!(o.log, vec![format!("({me}) LIST ({me})")]);

    let ed = dir.path().join("ed.sh");
    fs::write(&ed, "#!/bin/sh\necho '1 1 * * * y' >> \"$1\"\n").unwrap();
    let o = run(dir.path(), &["-e"], &format!("sh {}", ed.display()), b"");
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert_eq!(
        o.log,
        vec![
            format!("({me}) BEGIN EDIT ({me})"),
            format!("({me}) REPLACE ({me})"),
            format!("({me}) END EDIT ({me})"),
        ]
    );

    let o = run(dir.path(), &["-r"], "true", b"");
    assert_eq!(o.code, 0);
    assert_eq!(o.log, vec![format!("({me}) DELETE ({me})")]);
}

#[test]
fn a_refused_install_logs_nothing_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("spool")).unwrap();
    let o = run(dir.path(), &["-"], "true", b"bad line\n");
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .ends_with("errors in crontab file, can't install.\n")
    );
    assert!(o.log.is_empty());
    assert!(
        fs::read_dir(dir.path().join("spool"))
            .unwrap()
            .next()
            .is_none()
    );
}
