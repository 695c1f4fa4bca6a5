//! The stdin writer with real `sh -c` jobs: a job that never reads its stdin finishes even with
//! 1 MB waiting after `%` (the writer process blocks, not the job child), a job that reads it
//! gets every byte, and without `%` stdin is /dev/null.

use std::io::Read;
use std::sync::mpsc;
use std::time::Duration;

use super::*;
use crate::crontab::split_percent;
use crate::job::test_support::{checksum, run_job};
use crate::sys::pipe::WriterExit;

/// Runs `f` on a thread and fails the test if it takes longer than `secs` (a hang is the bug
/// these tests look for).
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .unwrap_or_else(|_| panic!("did not finish within {secs} s"))
}

fn megabyte_of_lines() -> Vec<u8> {
    let mut v = Vec::with_capacity(1 << 20);
    let mut i = 0u32;
    while v.len() < 1 << 20 {
        v.extend(format!("stdin line {i}\n").bytes());
        i += 1;
    }
    v
}

#[test]
fn a_job_that_never_reads_stdin_finishes_with_a_megabyte_waiting() {
    let (out, writer) = within(30, || {
        let tmp = tempfile::tempdir().unwrap();
        let text = megabyte_of_lines();
        let mut stdin = JobStdin::start(Some(&text)).unwrap();
        let (out, status) = run_job("echo ignoring stdin", stdin.take_for_shell(), tmp.path());
        assert!(status.success());
        (out, stdin.wait().unwrap())
    });
    let mut all = Vec::new();
    out.reader().read_to_end(&mut all).unwrap();
    assert_eq!(all, b"ignoring stdin\n");
    assert_eq!(writer, Some(WriterExit::ReaderGone));
}

#[test]
fn a_job_that_reads_stdin_gets_every_byte() {
    let text = megabyte_of_lines();
    let expected = text.clone();
    let (out, writer) = within(30, move || {
        let tmp = tempfile::tempdir().unwrap();
        let mut stdin = JobStdin::start(Some(&text)).unwrap();
        let (out, status) = run_job("cat", stdin.take_for_shell(), tmp.path());
        assert!(status.success());
        (out, stdin.wait().unwrap())
    });
    let mut all = Vec::new();
    out.reader().read_to_end(&mut all).unwrap();
    assert_eq!(all.len(), expected.len());
    assert_eq!(checksum(&all), checksum(&expected));
    assert_eq!(writer, Some(WriterExit::AllWritten));
}

#[test]
fn the_percent_text_of_a_crontab_command_reaches_the_shell() {
    let input = split_percent(b"cat -n%first%second line%100\\% sure");
    assert_eq!(input.command, b"cat -n");
    let tmp = tempfile::tempdir().unwrap();
    let mut stdin = JobStdin::start(input.stdin.as_deref()).unwrap();
    let (out, _) = run_job(
        std::str::from_utf8(&input.command).unwrap(),
        stdin.take_for_shell(),
        tmp.path(),
    );
    stdin.wait().unwrap();
    let mut all = String::new();
    out.reader().read_to_string(&mut all).unwrap();
    let lines: Vec<&str> = all.lines().map(str::trim_start).collect();
    assert_eq!(lines, vec!["1\tfirst", "2\tsecond line", "3\t100% sure"]);
}

#[test]
fn without_percent_stdin_is_dev_null() {
    let tmp = tempfile::tempdir().unwrap();
    let mut stdin = JobStdin::start(None).unwrap();
    assert_eq!(stdin.writer_pid(), None);
    let (out, _) = within(30, move || {
        let r = run_job("cat; echo end", stdin.take_for_shell(), tmp.path());
        assert_eq!(stdin.wait().unwrap(), None);
        r
    });
    let mut all = Vec::new();
    out.reader().read_to_end(&mut all).unwrap();
    assert_eq!(all, b"end\n");
}

#[test]
fn a_job_that_reads_part_of_stdin_and_exits_leaves_no_writer_behind() {
    let text = megabyte_of_lines();
    let (out, writer) = within(30, move || {
        let tmp = tempfile::tempdir().unwrap();
        let mut stdin = JobStdin::start(Some(&text)).unwrap();
        let (out, _) = run_job("head -n 2", stdin.take_for_shell(), tmp.path());
        (out, stdin.wait().unwrap())
    });
    let mut all = Vec::new();
    out.reader().read_to_end(&mut all).unwrap();
    assert_eq!(all, b"stdin line 0\nstdin line 1\n");
    assert_eq!(writer, Some(WriterExit::ReaderGone));
}
