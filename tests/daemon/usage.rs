//! What `crond` and `cronctl` say about their command lines, as a user sees it: `-h`, and each
//! kind of mistake (a value that is not a number, out of range, not one of the choices, a
//! command without its argument or with one too many), with the exit status.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::golden::assert_golden;

/// The `cronctl` binary, built by its own package beside crond.
fn cronctl_bin() -> PathBuf {
    let bin = Path::new(env!("CARGO_BIN_EXE_crond"))
        .parent()
        .expect("a binary has a directory")
        .join("cronctl");
    assert!(bin.is_file(), "{} is not built", bin.display());
    bin
}

/// Each command line as typed, then what the program wrote (stdout, then stderr) and its
/// exit status.
fn transcript(program: &Path, name: &str, lines: &[&[&str]]) -> String {
    let mut out = String::new();
    for args in lines {
        let run = Command::new(program).args(*args).output().expect("run it");
        out.push_str(format!("$ {name} {}", args.join(" ")).trim_end());
        out.push('\n');
        out.push_str(&String::from_utf8_lossy(&run.stdout));
        out.push_str(&String::from_utf8_lossy(&run.stderr));
        out.push_str(&format!("[exit status {}]\n\n", run.status.code().unwrap()));
    }
    out
}

#[test]
fn crond_h_lists_each_option_on_one_line() {
    let crond = Path::new(env!("CARGO_BIN_EXE_crond"));
    let out = transcript(crond, "crond", &[&["-h"]]);
    assert_golden("crond-help.txt", &out);
    for line in out.lines() {
        assert!(line.len() <= 100, "{line}");
    }
}

#[test]
fn crond_option_errors_name_the_option_and_what_it_takes() {
    let crond = Path::new(env!("CARGO_BIN_EXE_crond"));
    let out = transcript(
        crond,
        "crond",
        &[
            &["-L", "abc"],
            &["-L", "-1"],
            &["--stop-timeout", "5000"],
            &["--log", "disk"],
            &["--log-format"],
            &["--frobnicate"],
        ],
    );
    assert_golden("crond-option-errors.txt", &out);
}

#[test]
fn cronctl_h_lists_the_commands() {
    let out = transcript(&cronctl_bin(), "cronctl", &[&["-h"]]);
    assert_golden("cronctl-help.txt", &out);
}

#[test]
fn cronctl_usage_errors_name_the_command_and_what_it_takes() {
    let out = transcript(
        &cronctl_bin(),
        "cronctl",
        &[
            &[],
            &["run"],
            &["run", "crontabs/alice:3", "extra"],
            &["status", "extra"],
            &["pause", "nightly"],
            &["frobnicate"],
            &["history", "--limit", "0"],
            &["history", "--since", "yesterday"],
            &["history", "--limit", "20000"],
            &["logs"],
            &["logs", "3f2a", "x"],
            &["logs", "3f2a", "1", "2"],
        ],
    );
    assert_golden("cronctl-usage-errors.txt", &out);
}

#[test]
fn every_option_crond_h_lists_is_described_in_crond_8() {
    let help = Command::new(env!("CARGO_BIN_EXE_crond"))
        .arg("-h")
        .output()
        .expect("crond -h");
    let page = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/man/crond.8"))
        .expect("man/crond.8");
    let options: Vec<String> = String::from_utf8_lossy(&help.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("  -"))
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    assert!(options.len() > 30, "{options:?}");
    for option in options {
        assert!(page.contains(&format!(".It Fl {option}")), "-{option}");
    }
}
