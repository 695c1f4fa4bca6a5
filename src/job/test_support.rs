//! For tests only: a real `sh -c` job run the way the job child runs one (stdout and stderr on
//! one pipe, read to end-of-file into [`Output`]), for the tests of `output`, `stdin` and
//! `mail::send` that need real processes. No users, no privileges, no daemon.

use std::fs::File;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use super::output::Output;

/// Runs `sh -c script` with `stdin`, capturing its merged output (spilling into `spill_dir`).
pub(crate) fn run_job(script: &str, stdin: Stdio, spill_dir: &Path) -> (Output, ExitStatus) {
    let (r, w) = crate::sys::pipe::pipe().unwrap();
    let w2 = w.try_clone().unwrap();
    let mut cmd = Command::new("/bin/sh");
    cmd.arg("-c")
        .arg(script)
        .stdin(stdin)
        .stdout(Stdio::from(w))
        .stderr(Stdio::from(w2));
    let mut child = cmd.spawn().expect("spawn sh");
    // The Command holds the write ends: drop it, or end-of-file never comes.
    drop(cmd);
    let out = Output::capture(spill_dir, File::from(r)).expect("read the job's output");
    let status = child.wait().unwrap();
    (out, status)
}

/// FNV-1a, to compare large outputs without keeping two copies around.
pub(crate) fn checksum(bytes: &[u8]) -> u64 {
    crate::hash::fnv1a(crate::hash::FNV_OFFSET, bytes)
}
