//! A job's merged stdout+stderr, captured while it runs (docs/design.md §5, §6): the first 64 KiB
//! stay in memory, the rest spills to an anonymous temporary file (`sys::tmpfile`), so a job
//! printing gigabytes keeps the job child at a fixed, small size and nothing is lost. The file has
//! no name: the disk space is visible only while the job child holds it.
//!
//! Carriage returns are dropped as cronie does (cronie PR #42, 2019: every `\r` byte read from
//! the job is skipped before it is counted, mailed or logged), so output that was only `\r`
//! counts as empty. (cronie reads the first byte before its loop and so keeps a `\r` there; we
//! drop every one, which is what that change meant.)
//!
//! Bounded: at most the daemon's `--max-output` (default [`DEFAULT_LIMIT`], 100 MiB) is kept, in
//! memory and file together; the rest is still read, so the job never blocks on a full pipe, and
//! dropped, and counted.
//!
//! It must not block on anything but the pipe it reads, and it never logs: failures come back as
//! values (`spill_error`, `lost_bytes`, `dropped_bytes`) for the job child to report.

use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// How much output stays in memory before the rest goes to the temporary file.
pub const MEMORY_LIMIT: usize = 64 * 1024;

/// The size of one read from the job's pipe.
const CHUNK: usize = 16 * 1024;

/// The captured output of one job.
#[derive(Debug)]
pub struct Output {
    memory: Vec<u8>,
    file: Option<File>,
    file_len: u64,
    spill_dir: PathBuf,
    spill_error: Option<io::Error>,
    lost: u64,
    /// The most bytes kept (`--max-output`); `None`: no limit.
    limit: Option<u64>,
    dropped: u64,
    utf8: Utf8Check,
}

/// The daemon's default `--max-output`: 100 MiB of a job's output is kept (and mailed); the
/// rest is read and dropped, so `yes` as a job can't fill /tmp (RAM where it is a tmpfs).
pub const DEFAULT_LIMIT: u64 = 100 << 20;

impl Output {
    /// An empty capture that will spill into `spill_dir` (usually `sys::tmpfile::default_dir()`).
    pub fn new(spill_dir: &Path) -> Output {
        Output {
            memory: Vec::new(),
            file: None,
            file_len: 0,
            spill_dir: spill_dir.to_path_buf(),
            spill_error: None,
            lost: 0,
            limit: None,
            dropped: 0,
            utf8: Utf8Check::default(),
        }
    }

    /// Keeps at most `limit` bytes (`None`: all); what comes after is read and dropped, and
    /// counted ([`Output::dropped_bytes`]).
    pub fn with_limit(mut self, limit: Option<u64>) -> Output {
        self.limit = limit;
        self
    }

    /// Reads `from` to end-of-file (the job's pipe: EOF comes when the shell and everything it
    /// started have closed their stdout/stderr). Only an error reading the pipe itself is
    /// returned; a failure to spill is recorded and the rest of the output is drained and
    /// counted as lost, so the job never blocks on a full pipe.
    pub fn capture(spill_dir: &Path, from: impl Read) -> io::Result<Output> {
        Output::new(spill_dir).capture_from(from)
    }

    /// [`Output::capture`] into this (empty) output, keeping its limit.
    pub fn capture_from(self, mut from: impl Read) -> io::Result<Output> {
        let mut out = self;
        let mut buf = vec![0u8; CHUNK];
        loop {
            let n = match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            out.push(&buf[..n]);
        }
        Ok(out)
    }

    /// Adds bytes as they came from the job (carriage returns are dropped here).
    pub fn push(&mut self, bytes: &[u8]) {
        let mut rest = bytes;
        while !rest.is_empty() {
            let (piece, after) = match rest.iter().position(|&b| b == b'\r') {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &rest[rest.len()..]),
            };
            self.append(piece);
            rest = after;
        }
    }

    fn append(&mut self, mut bytes: &[u8]) {
        if let Some(limit) = self.limit {
            let room = limit.saturating_sub(self.len() + self.lost);
            if (bytes.len() as u64) > room {
                self.dropped += bytes.len() as u64 - room;
                bytes = &bytes[..room as usize];
            }
        }
        if bytes.is_empty() {
            return;
        }
        self.utf8.feed(bytes);
        if self.memory.len() < MEMORY_LIMIT {
            let room = MEMORY_LIMIT - self.memory.len();
            let take = room.min(bytes.len());
            if self.memory.capacity() == 0 {
                self.memory
                    .reserve_exact(MEMORY_LIMIT.min(bytes.len().max(4096)));
            }
            self.memory.extend_from_slice(&bytes[..take]);
            bytes = &bytes[take..];
        }
        if bytes.is_empty() {
            return;
        }
        if self.spill_error.is_some() {
            self.lost += bytes.len() as u64;
            return;
        }
        if self.file.is_none() {
            match crate::sys::tmpfile::anonymous(&self.spill_dir) {
                Ok(f) => self.file = Some(f),
                Err(e) => {
                    self.spill_error = Some(e);
                    self.lost += bytes.len() as u64;
                    return;
                }
            }
        }
        let file = self.file.as_mut().expect("the spill file was just opened");
        match file.write_all(bytes) {
            Ok(()) => self.file_len += bytes.len() as u64,
            Err(e) => {
                // A partial write leaves an unknown tail in the file: stop trusting it beyond
                // what was confirmed, and count the whole chunk as lost.
                self.spill_error = Some(e);
                self.lost += bytes.len() as u64;
            }
        }
    }

    /// The number of bytes kept (after dropping `\r`), in memory and on disk.
    pub fn len(&self) -> u64 {
        self.memory.len() as u64 + self.file_len
    }

    /// No output (or only carriage returns, or everything lost): no mail.
    pub fn is_empty(&self) -> bool {
        self.len() == 0 && self.lost == 0 && self.dropped == 0
    }

    /// Bytes the job printed past the limit, read and not kept.
    pub fn dropped_bytes(&self) -> u64 {
        self.dropped
    }

    /// The limit this output was captured with.
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// Bytes the job printed that could not be kept because the temporary file could not be
    /// created or written (disk full, TMPDIR missing); see [`Output::spill_error`].
    pub fn lost_bytes(&self) -> u64 {
        self.lost
    }

    /// Why bytes were lost, if they were.
    pub fn spill_error(&self) -> Option<&io::Error> {
        self.spill_error.as_ref()
    }

    /// Whether a temporary file was needed.
    pub fn spilled(&self) -> bool {
        self.file.is_some()
    }

    /// What the bytes are, for the mail's charset: all ASCII, valid UTF-8, or other 8-bit.
    pub fn text_kind(&self) -> TextKind {
        self.utf8.kind()
    }

    /// Every byte the job printed, kept or not (carriage returns dropped).
    pub fn total_bytes(&self) -> u64 {
        self.len() + self.lost + self.dropped
    }

    /// The first `keep` and the last `keep` bytes kept (`history::head_and_tail`): what the
    /// run's record holds of its output, the same bytes the mail has.
    pub fn head_and_tail(&self, keep: u64) -> (Vec<u8>, Vec<u8>) {
        crate::history::head_and_tail(self.len(), keep, |from, buf| {
            let mut reader = OutputReader {
                output: self,
                pos: from,
            };
            reader.read(buf).unwrap_or(0)
        })
    }

    /// A reader over everything kept, from the first byte; it can be called more than once.
    pub fn reader(&self) -> OutputReader<'_> {
        OutputReader {
            output: self,
            pos: 0,
        }
    }

    /// The output as cronie's `-s` logs it: one `CMDOUT` line per line of output, without its
    /// newline, lines longer than [`CMDOUT_MAX`] bytes cut into pieces of that size, a last
    /// line without newline included, and empty lines kept (they separate paragraphs). cronie
    /// also drops a newline that is the very first byte; we keep it as an empty line.
    pub fn cmdout_lines(&self) -> CmdoutLines<'_> {
        self.cmdout_lines_of(CMDOUT_MAX)
    }

    /// [`Output::cmdout_lines`] with pieces of at most `max` bytes (at least 1): the daemon
    /// passes what its log line leaves room for, so a piece fits one line.
    pub fn cmdout_lines_of(&self, max: usize) -> CmdoutLines<'_> {
        CmdoutLines {
            reader: self.reader(),
            buf: Vec::with_capacity(CHUNK),
            start: 0,
            done: false,
            max: max.max(1),
        }
    }
}

/// The longest CMDOUT line: cronie's 1024-byte buffer less its terminating NUL.
pub const CMDOUT_MAX: usize = 1023;

/// A reader over an [`Output`].
#[derive(Debug)]
pub struct OutputReader<'a> {
    output: &'a Output,
    pos: u64,
}

impl Read for OutputReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mem = &self.output.memory;
        if self.pos < mem.len() as u64 {
            let start = self.pos as usize;
            let n = buf.len().min(mem.len() - start);
            buf[..n].copy_from_slice(&mem[start..start + n]);
            self.pos += n as u64;
            return Ok(n);
        }
        let Some(file) = &self.output.file else {
            return Ok(0);
        };
        let offset = self.pos - mem.len() as u64;
        let remaining = self.output.file_len.saturating_sub(offset);
        if remaining == 0 {
            return Ok(0);
        }
        let want = (buf.len() as u64).min(remaining) as usize;
        let n = file.read_at(&mut buf[..want], offset)?;
        self.pos += n as u64;
        Ok(n)
    }
}

/// The iterator of [`Output::cmdout_lines`]: each item is one line's bytes.
#[derive(Debug)]
pub struct CmdoutLines<'a> {
    reader: OutputReader<'a>,
    buf: Vec<u8>,
    start: usize,
    done: bool,
    max: usize,
}

impl Iterator for CmdoutLines<'_> {
    type Item = io::Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let pending = &self.buf[self.start..];
            let window = &pending[..pending.len().min(self.max + 1)];
            if let Some(i) = window
                .iter()
                .position(|&b| b == b'\n')
                .filter(|&i| i <= self.max)
            {
                let line = pending[..i].to_vec();
                self.start += i + 1;
                return Some(Ok(line));
            }
            if pending.len() > self.max {
                let line = pending[..self.max].to_vec();
                self.start += self.max;
                return Some(Ok(line));
            }
            if self.done {
                if pending.is_empty() {
                    return None;
                }
                let line = pending.to_vec();
                self.start = self.buf.len();
                return Some(Ok(line));
            }
            self.buf.drain(..self.start);
            self.start = 0;
            let old = self.buf.len();
            self.buf.resize(old + CHUNK, 0);
            match self.reader.read(&mut self.buf[old..]) {
                Ok(0) => {
                    self.buf.truncate(old);
                    self.done = true;
                }
                Ok(n) => self.buf.truncate(old + n),
                Err(e) => {
                    self.buf.truncate(old);
                    self.done = true;
                    return Some(Err(e));
                }
            }
        }
    }
}

/// What kind of text the output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextKind {
    Ascii,
    Utf8,
    /// Bytes above 127 that are not UTF-8 (Latin-1, binary).
    Other8Bit,
}

/// A streaming UTF-8 check: chunks can split a character, so up to 3 trailing bytes wait for
/// the next chunk.
#[derive(Debug, Default)]
struct Utf8Check {
    eight_bit: bool,
    invalid: bool,
    carry: Vec<u8>,
}

impl Utf8Check {
    fn feed(&mut self, bytes: &[u8]) {
        if self.invalid {
            return;
        }
        if self.carry.is_empty() && bytes.is_ascii() {
            return;
        }
        self.eight_bit = true;
        let joined;
        let data: &[u8] = if self.carry.is_empty() {
            bytes
        } else {
            joined = [self.carry.as_slice(), bytes].concat();
            &joined
        };
        match std::str::from_utf8(data) {
            Ok(_) => self.carry.clear(),
            Err(e) if e.error_len().is_none() => {
                self.carry = data[e.valid_up_to()..].to_vec();
            }
            Err(_) => self.invalid = true,
        }
    }

    fn kind(&self) -> TextKind {
        if self.invalid || !self.carry.is_empty() {
            TextKind::Other8Bit
        } else if self.eight_bit {
            TextKind::Utf8
        } else {
            TextKind::Ascii
        }
    }
}

#[cfg(test)]
mod tests;
