//! The `--crontab` files looked at as the daemon would load them, before anything starts:
//! `crond --check --crontab FILE...` (for an image's build: every problem printed, exit 1 on
//! any), and the start of a `--crontab` daemon, which refuses to run with nothing loaded (a
//! missing or refused file is a typo in a Dockerfile far more often than a file yet to come;
//! `--wait-for-crontab` says it is one). Reads the files and passwd; starts nothing, locks
//! nothing, makes no directory.

use std::io::Write;

use super::cli::Options;
use crate::database::{self, Outcome, SourceKey};

/// What one file gave.
#[derive(Debug)]
pub(super) struct Checked {
    /// Whether it loads (perhaps with bad lines, which are not loaded).
    pub loaded: bool,
    /// Its problems, one line each: `FILE:LINE:COLUMN: message`, or `FILE: why it is not
    /// loaded`; warnings end with `(warning)`.
    pub problems: Vec<String>,
    pub warnings: usize,
}

/// Each `--crontab` file of `options`, loaded as the daemon loads it, in the order given.
pub(super) fn given_files(options: &Options) -> Vec<Checked> {
    let paths = options.paths();
    let rules = options.rules();
    paths
        .given
        .iter()
        .map(|key| one(key, &paths, &rules))
        .collect()
}

fn one(key: &SourceKey, paths: &database::Paths, rules: &database::Rules) -> Checked {
    let path = key.path(paths).display().to_string();
    // A refusal's detail names the file first, as the log has it: named once here.
    let refused = |why: String| Checked {
        loaded: false,
        problems: vec![format!("{path}: {why}")],
        warnings: 0,
    };
    match database::load(key, paths, rules) {
        Outcome::Loaded { crontab, .. } => {
            // In the order of the file, as the user reads it.
            let mut found: Vec<(u32, u32, String)> = (crontab.errors.iter())
                .map(|d| (d.line, d.column, d.in_file(&path).to_string()))
                .chain((crontab.warnings.iter()).map(|d| {
                    let text = format!("{} (warning)", d.in_file(&path));
                    (d.line, d.column, text)
                }))
                .collect();
            found.sort();
            let mut problems: Vec<String> = found.into_iter().map(|(.., text)| text).collect();
            problems.extend(crontab.not_shown_line(&path));
            Checked {
                loaded: true,
                warnings: crontab.warnings.len(),
                problems,
            }
        }
        Outcome::Missing => refused("no such file".into()),
        Outcome::Refused(refusal, detail) => {
            let detail = detail.strip_prefix(&format!("{path}: ")).unwrap_or(&detail);
            refused(format!("{refusal} ({detail})"))
        }
        Outcome::RefusedOnTheWay(found) => {
            refused(format!("{} ({})", found.refusal, found.detail(&path)))
        }
        Outcome::Orphan => refused("no passwd entry for its user".into()),
        Outcome::Failed(e) => refused(format!("can't read it: {e}")),
    }
}

/// `crond --check`: each problem on standard error, then a summary; exit status 0 when every
/// file loads with no error (warnings are said, and pass), else 1.
pub(super) fn run(options: &Options) -> u8 {
    let checked = given_files(options);
    let mut err = std::io::stderr().lock();
    let mut failed = false;
    for c in &checked {
        for p in &c.problems {
            let _ = writeln!(err, "{p}");
        }
        failed |= !c.loaded || c.problems.len() > c.warnings;
    }
    let files = crate::words::count(checked.len() as u64, "file", "files");
    let _ = if failed {
        writeln!(
            err,
            "crond: {files} checked: not all can be loaded as written"
        )
    } else {
        let load = if checked.len() == 1 {
            "it loads"
        } else {
            "they load"
        };
        writeln!(err, "crond: {files} checked: {load} as written")
    };
    u8::from(failed)
}

/// With `--wait-for-crontab`: the problems of the files not loaded now, each for a log line.
pub(super) fn waited_for(options: &Options) -> Vec<String> {
    if !options.crontab_mode() || !options.wait_for_crontab {
        return Vec::new();
    }
    (given_files(options).into_iter())
        .filter(|c| !c.loaded)
        .flat_map(|c| c.problems)
        .collect()
}

/// At the start of a `--crontab` daemon: an error naming each file and why, when none of them
/// can be loaded (and `--wait-for-crontab` was not given).
pub(super) fn before_start(options: &Options) -> Result<(), String> {
    if !options.crontab_mode() || options.wait_for_crontab {
        return Ok(());
    }
    let checked = given_files(options);
    if checked.iter().any(|c| c.loaded) {
        return Ok(());
    }
    let why: Vec<String> = (checked.iter())
        .flat_map(|c| c.problems.iter().map(|p| format!("  {p}")))
        .collect();
    Err(format!(
        "no --crontab file can be loaded, so there is nothing to run:\n{}\n\
         (--wait-for-crontab starts anyway and loads a file when it appears)",
        why.join("\n")
    ))
}
