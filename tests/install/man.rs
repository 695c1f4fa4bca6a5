//! The man pages: `mandoc -Tlint` has nothing to say about them, the flags each page
//! documents are the flags its binary accepts and lists in `--help` (both ways, and the
//! binary is probed for every single-letter option so an undocumented one is found), the
//! "differences" sections cover the deviations the README lists, and the crontab(5) examples
//! load. Flags are read from the mdoc source (`Fl` in SYNOPSIS and OPTIONS) and from the help
//! text; nothing is hard-coded except the flag sets the issues fix for the two binaries that
//! are not built yet.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::install::*;

const PAGES: [&str; 5] = [
    "crond.8",
    "crontab.1",
    "crontab.5",
    "cronnext.1",
    "cronctl.8",
];

fn page(name: &str) -> String {
    std::fs::read_to_string(repo().join("man").join(name)).expect("man page")
}

/// The lines of one `.Sh` section of an mdoc page.
fn section(text: &str, name: &str) -> Vec<String> {
    let mut inside = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if let Some(title) = line.strip_prefix(".Sh ") {
            inside = title.trim_matches('"') == name;
        } else if inside {
            out.push(line.to_string());
        }
    }
    out
}

/// Every `Fl x` of the SYNOPSIS and OPTIONS sections, as `-x` / `--long`.
fn flags_in_page(text: &str) -> BTreeSet<String> {
    let mut flags = BTreeSet::new();
    let lines = section(text, "SYNOPSIS")
        .into_iter()
        .chain(section(text, "OPTIONS"));
    for line in lines.filter(|l| l.starts_with('.')) {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            if pair[0] == "Fl" || pair[0] == ".Fl" {
                let word = pair[1];
                // `Fl` alone (or before another macro) is a bare `-`, the stdin operand.
                if word.starts_with(|c: char| c.is_ascii_uppercase()) && word.len() == 2 {
                    continue;
                }
                if word == "|" || word == "," {
                    continue;
                }
                flags.insert(format!("-{}", word.trim_end_matches([',', ')', ';'])));
            }
        }
    }
    flags
}

/// Every `-x` or `--long` in a help text.
fn flags_in_help(text: &str) -> BTreeSet<String> {
    text.split(|c: char| c.is_whitespace() || "[]()|,=".contains(c))
        .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()))
        .filter(|w| {
            let b = w.as_bytes();
            (b.len() >= 2 && b[0] == b'-' && b[1].is_ascii_alphabetic())
                || (b.len() >= 3 && b[0] == b'-' && b[1] == b'-' && b[2].is_ascii_alphabetic())
        })
        .map(str::to_string)
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn help_text(binary: &Path) -> String {
    let out = run(Command::new(binary).arg("--help"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains("not built yet"),
        "{} is still a placeholder",
        binary.display()
    );
    text
}

const PROBE: &str = "--zzz-not-an-option";

/// Whether `binary` accepts `flag`: it is run as `binary [paths] FLAG PROBE PROBE` (a flag that
/// takes a value eats the first PROBE) and is accepted unless its first error line calls an
/// option invalid without naming the probe. `paths` points every path of crond into a temporary
/// directory, so that even a parser that went on to start the daemon would touch nothing.
fn accepts(binary: &Path, paths: &[String], flag: &str) -> bool {
    let mut child = Command::new(binary)
        .args(paths)
        .arg(flag)
        .args([PROBE, PROBE])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            panic!("{} {flag} {PROBE} did not exit", binary.display());
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let out = child.wait_with_output().expect("output");
    let err = String::from_utf8_lossy(&out.stderr).to_lowercase();
    let first = err.lines().next().unwrap_or("");
    let rejected = [
        "invalid option",
        "unknown option",
        "unrecognized option",
        "unexpected option",
    ]
    .iter()
    .any(|p| first.contains(p))
        && !first.contains(PROBE);
    !rejected
}

/// The three-way check: page == help, every help flag is accepted, every accepted letter is in
/// the help.
fn check_flags(binary: &Path, page_name: &str, paths: &[String]) {
    let help = flags_in_help(&help_text(binary));
    let man = flags_in_page(&page(page_name));
    assert_eq!(
        man, help,
        "flags in {page_name} (left) and in --help (right)"
    );
    for flag in &help {
        assert!(
            accepts(binary, paths, flag),
            "--help lists {flag} but it is rejected"
        );
    }
    for letter in ('a'..='z').chain('A'..='Z') {
        let flag = format!("-{letter}");
        if accepts(binary, paths, &flag) {
            assert!(help.contains(&flag), "{flag} is accepted but not in --help");
        }
    }
}

#[test]
fn mandoc_lint_has_nothing_to_say_about_any_page() {
    require_command("mandoc");
    for name in PAGES {
        let out = run(Command::new("mandoc")
            .args(["-Tlint", "-W", "style"])
            .arg(repo().join("man").join(name)));
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + &String::from_utf8_lossy(&out.stdout);
        // Cross references are looked up in the system's mandoc.db, which knows neither our
        // pages before they are installed nor every page of other packages: those are checked
        // by `cross_references_to_our_pages_name_pages_we_ship` instead.
        let messages: Vec<&str> = text
            .lines()
            .filter(|l| !l.contains("referenced manual not found") && !l.contains("mandoc.db"))
            .collect();
        assert!(
            messages.is_empty(),
            "mandoc -Tlint {name}:\n{}",
            messages.join("\n")
        );
    }
}

#[test]
fn mandoc_lint_would_notice_a_broken_page() {
    require_command("mandoc");
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = page("cronnext.1").replace(".Bl -tag -width Ds\n", "");
    let path = dir.path().join("cronnext.1");
    std::fs::write(&path, broken).expect("write");
    let out = run(Command::new("mandoc")
        .args(["-Tlint", "-W", "warning"])
        .arg(&path));
    // -Tlint prints its messages on standard output.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{text}");
    assert!(text.contains("skipping item outside list"), "{text}");
}

/// What `mandoc -Tlint` can't see, found in the page as rendered (and in its source, for the
/// one mistake that renders as plain words): a quote opened inside another (`Ql a , Ql b`
/// nests the second in the first), a space before a comma, semicolon or full stop, and a
/// quoting macro whose first word is itself a macro name (`Ql No change` renders `change`).
fn rendering_mistakes(source: &str, rendered: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in rendered.lines().enumerate() {
        let mut depth = 0;
        for c in line.chars() {
            match c {
                '\u{2018}' | '\u{201c}' => {
                    depth += 1;
                    if depth > 1 {
                        found.push(format!(
                            "rendered line {}: a quote inside a quote: {line}",
                            n + 1
                        ));
                    }
                }
                '\u{2019}' | '\u{201d}' => depth = 0,
                _ => {}
            }
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.iter().skip(1).any(|w| matches!(*w, ";" | "," | ".")) {
            found.push(format!(
                "rendered line {}: a space before punctuation: {line}",
                n + 1
            ));
        }
    }
    const MACROS: [&str; 12] = [
        "No", "Ns", "Pa", "Fl", "Ar", "Cm", "Li", "Ev", "Va", "Xr", "Sy", "Em",
    ];
    for (n, line) in source.lines().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        for pair in words.windows(2) {
            if matches!(
                pair[0],
                "Ql" | "Dq" | "Sq" | "Qq" | ".Ql" | ".Dq" | ".Sq" | ".Qq"
            ) && MACROS.contains(&pair[1])
            {
                found.push(format!(
                    "source line {}: {} {} is a macro call, not a word (write \\&{}): {line}",
                    n + 1,
                    pair[0],
                    pair[1],
                    pair[1]
                ));
            }
        }
    }
    found
}

fn rendered(name: &str, source: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join(name);
    std::fs::write(&path, source).expect("write");
    let out = run(Command::new("mandoc")
        .args(["-Tutf8", "-Owidth=78"])
        .arg(&path));
    assert!(out.status.success(), "mandoc {name}");
    // Bold and underline are written as overstrikes: keep the characters.
    let text = String::from_utf8_lossy(&out.stdout);
    let mut plain = String::new();
    for c in text.chars() {
        if c == '\u{8}' {
            plain.pop();
        } else {
            plain.push(c);
        }
    }
    plain
}

#[test]
fn every_page_renders_without_nested_quotes_stray_spaces_or_macro_words() {
    require_command("mandoc");
    for name in PAGES {
        let source = page(name);
        let found = rendering_mistakes(&source, &rendered(name, &source));
        assert!(found.is_empty(), "{name}:\n{}", found.join("\n"));
    }
}

#[test]
fn the_rendering_check_finds_each_mistake_it_looks_for() {
    require_command("mandoc");
    let source = page("crontab.5");
    for (mistake, wanted) in [
        (".Pq Ql a , Ql b\n", "a quote inside a quote"),
        ("of the source ;\n", "a space before punctuation"),
        (".Ql No change\n", "is a macro call"),
    ] {
        let broken = source.replacen(
            ".Sh DESCRIPTION\n",
            &format!(".Sh DESCRIPTION\n{mistake}"),
            1,
        );
        let found = rendering_mistakes(&broken, &rendered("crontab.5", &broken));
        assert!(
            found.iter().any(|f| f.contains(wanted)),
            "{mistake}: {found:?}"
        );
    }
}

#[test]
fn cross_references_to_our_pages_name_pages_we_ship() {
    let ours = [
        "crond 8",
        "crontab 1",
        "crontab 5",
        "cronnext 1",
        "cronctl 8",
    ];
    for name in PAGES {
        for line in page(name).lines() {
            if let Some(rest) = line.strip_prefix(".Xr ") {
                let target: Vec<&str> = rest.split_whitespace().take(2).collect();
                let target = target.join(" ");
                if target.starts_with("cron") {
                    assert!(ours.contains(&target.as_str()), "{name}: .Xr {target}");
                }
            }
        }
    }
}

#[test]
fn cronnext_flags_agree_between_the_binary_its_help_and_its_page() {
    check_flags(&bins().join("cronnext"), "cronnext.1", &[]);
}

#[test]
fn the_daemon_and_crontab_pages_document_exactly_the_flags_the_issues_fix() {
    assert_eq!(
        flags_in_page(&page("crond.8")),
        set(&[
            "-f",
            "-l",
            "-n",
            "-L",
            "-s",
            "-m",
            "-P",
            "-p",
            "-i",
            "-V",
            "-h",
            "--spool-dir",
            "--system-crontab",
            "--cron-d",
            "--pid-file",
            "--reboot-marker",
            "--sendmail",
            "--log",
            "--log-format",
            "--max-output",
            "--localtime",
            "--no-pam",
            "--notify",
            "--pam-dir",
            "--state-dir",
            "--metrics",
            "--metrics-group",
            "--metrics-entries-on-tcp",
            "--cluster-db",
            "--cluster-host",
            "--cluster-helper",
            "--cluster-keep",
            "--cluster-keep-runs",
            "--cluster-lease",
            "--history",
            "--history-output",
            "--history-days",
            "--history-runs",
            "--history-size",
            "--history-writer",
            "--crontab",
            "--keep-env",
            "--stop-jobs",
            "--check",
            "--wait-for-crontab",
            "--stop-timeout",
            "--control-socket",
        ])
    );
    assert_eq!(
        flags_in_page(&page("crontab.1")),
        set(&[
            "-u",
            "-n",
            "-T",
            "-i",
            "-e",
            "-l",
            "-r",
            "-V",
            "-h",
            "--spool-dir",
            "--allow-file",
            "--deny-file",
        ])
    );
    assert_eq!(
        flags_in_page(&page("cronnext.1")),
        set(&[
            "--id",
            "--tz",
            "--after",
            "--count",
            "-n",
            "--until",
            "--system",
            "-h",
            "--help",
            "-V",
            "--version"
        ])
    );
}

fn crond_paths(dir: &Path) -> Vec<String> {
    let p = |name: &str| dir.join(name).to_string_lossy().into_owned();
    vec![
        "--spool-dir".into(),
        p("spool"),
        "--system-crontab".into(),
        p("crontab"),
        "--cron-d".into(),
        p("cron.d"),
        "--pid-file".into(),
        p("crond.pid"),
        "--reboot-marker".into(),
        p("reboot"),
        "--sendmail".into(),
        "/bin/false".into(),
        "--log".into(),
        "stderr".into(),
    ]
}

#[test]
fn crond_flags_agree_between_the_binary_its_help_and_its_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    check_flags(&bins().join("crond"), "crond.8", &crond_paths(dir.path()));
}

#[test]
fn crontab_flags_agree_between_the_binary_its_help_and_its_page() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = format!("--spool-dir={}", dir.path().display());
    check_flags(&bins().join("crontab"), "crontab.1", &[spool]);
}

/// The text of a DIFFERENCES section, with mdoc macros reduced to their words.
fn differences(name: &str) -> String {
    let text = page(name);
    let title = section_titles(&text)
        .into_iter()
        .find(|t| t.starts_with("DIFFERENCES"))
        .unwrap_or_else(|| panic!("{name} has no DIFFERENCES section"));
    section(&text, &title).join(" ")
}

fn section_titles(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix(".Sh "))
        .map(|t| t.trim_matches('"').to_string())
        .collect()
}

#[test]
fn the_differences_sections_cover_every_deviation_the_readme_lists() {
    // One marker per bullet of README's "Differences from Debian's cron and cronie".
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("README");
    // (in the README, in the pages, what)
    let markers = [
        ("skipped", "skipped", "a bad line is skipped, the rest runs"),
        ("newline", "newline", "a missing final newline is a warning"),
        ("5#3", "5#3", "what Debian misreads is an error"),
        ("5-0", "5-0", "5-0 is Friday to Sunday"),
        ("CRON_TZ", "CRON_TZ", "CRON_TZ with the DST rule"),
        ("`~`", "~", "a stable ~"),
        ("`\\r`", "carriage return", "a \\r before the newline"),
    ];
    for (in_readme, in_page, what) in markers {
        assert!(
            readme.contains(in_readme),
            "README no longer mentions {what}: update this list"
        );
        for name in ["crond.8", "crontab.5"] {
            assert!(
                differences(name).contains(in_page),
                "{name}'s differences do not mention {what} ({in_page})"
            );
        }
    }
    let crontab1 = differences("crontab.1");
    for marker in ["newline", "-T", "FILE:LINE:COLUMN"] {
        let marker = marker.trim_start_matches('-');
        assert!(crontab1.contains(marker), "crontab.1 differences: {marker}");
    }
}

#[test]
fn the_examples_of_crontab_5_load_without_errors() {
    let text = page("crontab.5");
    let examples = section(&text, "EXAMPLES");
    let mut body = String::new();
    let mut inside = false;
    for line in examples {
        if line.starts_with(".Bd") {
            inside = true;
        } else if line.starts_with(".Ed") {
            inside = false;
        } else if inside {
            body.push_str(&line.replace("\\e", "\\"));
            body.push('\n');
        }
    }
    assert!(
        body.lines().filter(|l| !l.starts_with('#')).count() >= 8,
        "{body}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let file: PathBuf = dir.path().join("alice");
    std::fs::write(&file, &body).expect("write");
    let out = run(Command::new(bins().join("cronnext"))
        .args(["--tz", "UTC", "--after", "2026-11-22T00:00:00Z"])
        .arg(&file));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && err.is_empty(), "{err}");
    let runs = String::from_utf8_lossy(&out.stdout).lines().count();
    let entries = body
        .lines()
        .filter(|l| {
            l.starts_with(|c: char| c.is_ascii_digit() || c == '*' || c == '@')
                || l.starts_with("H ")
                || l.starts_with("H(")
                || l.starts_with("H/")
        })
        .count();
    assert_eq!(runs, entries, "one next run per entry:\n{body}");
}
