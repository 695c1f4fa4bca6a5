//! Unit tests of the output capture: the buffer, the spill file and the CMDOUT lines with bytes
//! pushed in, then the same with real `sh -c` jobs whose merged stdout+stderr is read from a
//! pipe (sizes up to tens of MB; the 1 GB memory figure is a benchmark, benches/output/).

use std::process::Stdio;

use super::*;
use crate::job::test_support::{checksum, run_job};
use crate::log::messages::cmdout_lines;

const FIFTY_MB: u64 = 50 * 1024 * 1024;

fn all(o: &Output) -> Vec<u8> {
    let mut v = Vec::new();
    o.reader().read_to_end(&mut v).unwrap();
    v
}

fn lines(o: &Output) -> Vec<Vec<u8>> {
    o.cmdout_lines().map(Result::unwrap).collect()
}

#[test]
fn carriage_returns_are_dropped_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let o = Output::capture(dir.path(), &b"a\r\nb\rc\r\r\n"[..]).unwrap();
    assert_eq!(all(&o), b"a\nbc\n");
    assert_eq!(o.len(), 5);
}

#[test]
fn output_of_only_carriage_returns_is_empty() {
    let dir = tempfile::tempdir().unwrap();
    let o = Output::capture(dir.path(), &b"\r\r\r"[..]).unwrap();
    assert!(o.is_empty());
    assert_eq!(o.len(), 0);
}

#[test]
fn small_output_stays_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    let o = Output::capture(dir.path(), &b"hello\n"[..]).unwrap();
    assert!(!o.spilled());
    assert_eq!(all(&o), b"hello\n");
}

#[test]
fn large_output_spills_and_reads_back_whole_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..1_000_003u32).map(|i| (i % 13) as u8 + b'a').collect();
    let o = Output::capture(dir.path(), &data[..]).unwrap();
    assert!(o.spilled());
    assert_eq!(o.len(), data.len() as u64);
    assert_eq!(all(&o), data);
    assert_eq!(
        all(&o),
        data,
        "a second reader starts again from the first byte"
    );
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "the spill file has no name"
    );
}

#[test]
fn a_missing_spill_directory_loses_the_tail_but_keeps_the_head_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("gone");
    let data = vec![b'x'; MEMORY_LIMIT + 1000];
    let o = Output::capture(&missing, &data[..]).unwrap();
    assert_eq!(o.len(), MEMORY_LIMIT as u64);
    assert_eq!(o.lost_bytes(), 1000);
    assert!(o.spill_error().is_some());
    assert!(!o.is_empty());
}

#[test]
fn past_the_limit_output_is_read_and_dropped_and_the_spill_file_stops_growing() {
    let dir = tempfile::tempdir().unwrap();
    let limit = 200_000u64;
    // A pipe the job keeps writing to: everything must be read (or the job would block).
    let (r, w) = crate::sys::pipe::pipe().unwrap();
    let mut w = std::fs::File::from(w);
    let writer = std::thread::spawn(move || {
        for _ in 0..100 {
            std::io::Write::write_all(&mut w, &[b'y'; 50_000]).unwrap();
        }
    });
    let o = Output::new(dir.path())
        .with_limit(Some(limit))
        .capture_from(std::fs::File::from(r))
        .unwrap();
    writer.join().unwrap();
    assert_eq!(o.len(), limit);
    assert_eq!(o.dropped_bytes(), 5_000_000 - limit);
    assert_eq!(all(&o), vec![b'y'; limit as usize]);
    // The memory part and the file together hold the limit, not more.
    assert_eq!(o.file_len, limit - MEMORY_LIMIT as u64);
    // A limit inside the memory part: no file at all.
    let o = Output::new(dir.path())
        .with_limit(Some(10))
        .capture_from(&b"0123456789abc"[..])
        .unwrap();
    assert_eq!(
        (all(&o), o.dropped_bytes(), o.spilled()),
        (b"0123456789".to_vec(), 3, false)
    );
    // No limit: nothing dropped.
    let o = Output::capture(dir.path(), &[b'z'; 300_000][..]).unwrap();
    assert_eq!((o.len(), o.dropped_bytes()), (300_000, 0));
}

#[test]
fn text_kind_follows_the_bytes_even_across_chunk_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = Output::new(dir.path());
    o.push(b"plain\n");
    assert_eq!(o.text_kind(), TextKind::Ascii);
    let e_acute = "é".as_bytes();
    o.push(&e_acute[..1]);
    o.push(&e_acute[1..]);
    assert_eq!(o.text_kind(), TextKind::Utf8);
    o.push(b"\xe9t\xe9\n");
    assert_eq!(o.text_kind(), TextKind::Other8Bit);
}

#[test]
fn cmdout_lines_split_on_newlines_and_cut_long_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = b"one\n\ntwo\n".to_vec();
    text.extend(std::iter::repeat_n(b'L', CMDOUT_MAX + 5));
    text.extend(b"\nlast");
    let o = Output::capture(dir.path(), &text[..]).unwrap();
    let got = lines(&o);
    assert_eq!(got[0], b"one");
    assert_eq!(got[1], b"");
    assert_eq!(got[2], b"two");
    assert_eq!(got[3], vec![b'L'; CMDOUT_MAX]);
    assert_eq!(got[4], vec![b'L'; 5]);
    assert_eq!(got[5], b"last");
    assert_eq!(got.len(), 6);
}

#[test]
fn a_line_of_exactly_the_maximum_is_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = vec![b'a'; CMDOUT_MAX];
    text.push(b'\n');
    text.extend(vec![b'b'; CMDOUT_MAX]);
    let o = Output::capture(dir.path(), &text[..]).unwrap();
    let got = lines(&o);
    assert_eq!(got, vec![vec![b'a'; CMDOUT_MAX], vec![b'b'; CMDOUT_MAX]]);
}

#[test]
fn cmdout_lines_cross_the_spill_boundary() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = Vec::new();
    for i in 0..20_000 {
        text.extend(format!("line {i}\n").bytes());
    }
    let o = Output::capture(dir.path(), &text[..]).unwrap();
    assert!(o.spilled());
    let got = lines(&o);
    assert_eq!(got.len(), 20_000);
    assert_eq!(got[19_999], b"line 19999");
    assert_eq!(got[7_777], b"line 7777");
}

/// What `yes 'crond output capture 0123456789'` prints, cut to `len` bytes.
fn yes_bytes(len: u64) -> Vec<u8> {
    let line = b"crond output capture 0123456789\n";
    line.iter().copied().cycle().take(len as usize).collect()
}

#[test]
fn stdout_and_stderr_arrive_merged_and_in_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job(
        "echo one; echo two >&2; echo three; echo four >&2",
        Stdio::null(),
        tmp.path(),
    );
    assert!(status.success());
    let mut all = Vec::new();
    out.reader().read_to_end(&mut all).unwrap();
    assert_eq!(all, b"one\ntwo\nthree\nfour\n");
}

#[test]
fn fifty_megabytes_of_job_output_are_kept_whole_in_a_nameless_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, status) = run_job(
        &format!("yes 'crond output capture 0123456789' | head -c {FIFTY_MB}"),
        Stdio::null(),
        tmp.path(),
    );
    assert!(status.success());
    assert_eq!(out.len(), FIFTY_MB);
    assert!(out.spilled());
    assert_eq!(
        std::fs::read_dir(tmp.path()).unwrap().count(),
        0,
        "the spill file has no name"
    );
    let mut all = Vec::with_capacity(FIFTY_MB as usize);
    out.reader().read_to_end(&mut all).unwrap();
    assert_eq!(checksum(&all), checksum(&yes_bytes(FIFTY_MB)));
}

#[test]
fn carriage_returns_from_a_real_job_are_dropped() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, _) = run_job(
        "printf 'progress 10%%\\rprogress 100%%\\r\\ndone\\r\\n'",
        Stdio::null(),
        tmp.path(),
    );
    let mut all = Vec::new();
    out.reader().read_to_end(&mut all).unwrap();
    assert_eq!(all, b"progress 10%progress 100%\ndone\n");
}

#[test]
fn cmdout_lines_of_a_real_job_are_its_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, _) = run_job(
        "echo first; echo; echo 'third line' >&2; printf 'no newline'",
        Stdio::null(),
        tmp.path(),
    );
    let lines: Vec<String> = out
        .cmdout_lines()
        .flat_map(|l| cmdout_lines(b"bob", &l.unwrap()))
        .map(|l| l.to_string())
        .collect();
    assert_eq!(
        lines,
        vec![
            "(bob) CMDOUT (first)",
            "(bob) CMDOUT ()",
            "(bob) CMDOUT (third line)",
            "(bob) CMDOUT (no newline)",
        ]
    );
}
