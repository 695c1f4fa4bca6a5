//! Golden files: what a user sees, kept under `tests/golden/` and compared byte for byte.
//!
//! A test makes the output as the user sees it (the real binary's stdout or stderr), replaces
//! what changes from run to run (times, pids, paths of temporary directories) with fixed words
//! by [`Scrub`], and calls [`assert_golden`]. When a change of the output is meant, run the test
//! with `UPDATE_GOLDEN=1` and review the diff of `tests/golden/` as part of the change.

#![allow(dead_code)]

use std::path::PathBuf;

/// Replacements applied in order: each `(from, to)` pair replaces every occurrence.
#[derive(Debug, Default, Clone)]
pub struct Scrub {
    pairs: Vec<(String, String)>,
}

impl Scrub {
    pub fn new() -> Scrub {
        Scrub::default()
    }

    /// Replace every `from` with `to`.
    pub fn replace(mut self, from: impl Into<String>, to: impl Into<String>) -> Scrub {
        let from = from.into();
        assert!(!from.is_empty(), "an empty string to scrub");
        self.pairs.push((from, to.into()));
        self
    }

    pub fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (from, to) in &self.pairs {
            out = out.replace(from.as_str(), to.as_str());
        }
        out
    }
}

fn golden_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

/// Asserts that `actual` is the content of `tests/golden/NAME`; with `UPDATE_GOLDEN=1` in the
/// environment, writes it there instead.
pub fn assert_golden(name: &str, actual: &str) {
    let path = golden_path(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "{}: {e}; run the test with UPDATE_GOLDEN=1 to write it",
            path.display()
        )
    });
    if expected != actual {
        panic!(
            "{} differs from the output (UPDATE_GOLDEN=1 rewrites it):\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        );
    }
}
