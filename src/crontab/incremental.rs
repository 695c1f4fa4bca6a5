//! Parsing a large file again after an edit, without parsing what did not change.
//!
//! Pure: the old fingerprint and the new text are arguments.
//!
//! A parse can leave a [`Fingerprint`] of the text: for each chunk of [`CHUNK_LINES`] lines, a
//! keyed hash of its bytes, the parser's state where it starts (the variables, `CRON_TZ`,
//! `RANDOM_DELAY`, the counts the limits apply to) and how many entries it gave that the
//! daemon keeps (all but `@reboot`). The next text is cut the same way; the chunks equal to
//! the old ones at the front, and at the back when the file has as many chunks (so their lines
//! keep their numbers), are not parsed: the parser starts at the first changed chunk with the
//! state the old parse had there, and stops after the last changed one if its state then is
//! the one the old parse had at that point (otherwise it goes on to the end). The caller keeps
//! the old entries of the chunks not parsed ([`Reparse::Partial`]).
//!
//! Only a clean old parse is used: no error or warning anywhere (so none would have to be
//! repeated for lines not parsed again) and a final newline. The hash ([`keyed`]: NH's sums
//! of the text's blocks, then SipHash) has keys drawn when the fingerprint was first made: a
//! text can't be built to collide with a chunk of another without knowing them.

mod keyed;

use keyed::Keys;
use std::sync::Arc;

use super::{Crontab, Env, ParseOptions, Parser};
use crate::schedule::{When, Zone};

/// Lines per chunk: a one-line edit of a 100,000-line file parses 256 lines, and the
/// fingerprint costs about 80 bytes per 256 lines.
pub const CHUNK_LINES: usize = 256;

/// Fewer chunks than this and no fingerprint is kept: such a file is parsed whole in well
/// under a millisecond, and the daemon may hold thousands of small files.
pub const MIN_CHUNKS: usize = 4;

/// The parser's state between two lines.
#[derive(Clone)]
pub(super) struct State {
    pub(super) env: Arc<Env>,
    /// The zone for the entries below: `Err(line)` after a bad `CRON_TZ` on that line.
    pub(super) zone: Result<Option<Zone>, u32>,
    pub(super) random_delay: u32,
    pub(super) env_count: usize,
    pub(super) every_count: usize,
    pub(super) cluster_count: usize,
    /// Entries loaded above (the limit counts them).
    pub(super) entries: usize,
}

impl State {
    pub(super) fn initial() -> State {
        State {
            env: Arc::new(Env::default()),
            zone: Ok(None),
            random_delay: 0,
            env_count: 0,
            every_count: 0,
            cluster_count: 0,
            entries: 0,
        }
    }

    /// Whether lines parsed from `self` give what they gave from `other`: the same
    /// variables, zone and delay (the counts only move the limits, checked apart).
    fn same_meaning(&self, other: &State) -> bool {
        (Arc::ptr_eq(&self.env, &other.env) || self.env == other.env)
            && self.zone == other.zone
            && self.random_delay == other.random_delay
    }

    /// The counts moved by what a changed middle added or took away.
    fn shifted(&self, by: &Counts) -> State {
        State {
            env_count: shift(self.env_count, by.env),
            every_count: shift(self.every_count, by.every),
            cluster_count: shift(self.cluster_count, by.cluster),
            entries: shift(self.entries, by.entries),
            ..self.clone()
        }
    }
}

fn shift(count: usize, by: isize) -> usize {
    count.saturating_add_signed(by)
}

/// How far the counts at the start of the kept back moved.
struct Counts {
    env: isize,
    every: isize,
    cluster: isize,
    entries: isize,
}

impl Counts {
    fn between(new: &State, old: &State) -> Counts {
        let d = |a: usize, b: usize| a as isize - b as isize;
        Counts {
            env: d(new.env_count, old.env_count),
            every: d(new.every_count, old.every_count),
            cluster: d(new.cluster_count, old.cluster_count),
            entries: d(new.entries, old.entries),
        }
    }
}

#[derive(Clone)]
struct Chunk {
    hash: u64,
    start: State,
    /// Entries of the chunk the daemon keeps: all but `@reboot`.
    kept: u32,
}

/// What a parse leaves to parse the file's next text faster (see the module's text).
#[derive(Clone)]
pub struct Fingerprint {
    keys: Keys,
    chunks: Vec<Chunk>,
    /// The state after the last line.
    end: State,
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fingerprint")
            .field("chunks", &self.chunks.len())
            .finish_non_exhaustive()
    }
}

impl Fingerprint {
    /// How many chunks (the fingerprint's size: about 80 bytes each).
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    fn state_at(&self, chunk: usize) -> &State {
        self.chunks.get(chunk).map_or(&self.end, |c| &c.start)
    }

    fn kept(&self, chunks: std::ops::Range<usize>) -> usize {
        self.chunks[chunks].iter().map(|c| c.kept as usize).sum()
    }
}

/// A new text parsed against the old one's fingerprint.
#[derive(Debug)]
pub enum Reparse {
    /// Parsed whole: the crontab, and its fingerprint when it is worth keeping.
    Whole(Crontab, Option<Fingerprint>),
    /// Only the middle parsed: the first `front` and the last `back` of the old entries the
    /// daemon keeps are the same entries, with the same lines, under the same variables;
    /// `middle` has the rest (entries, problems). Its `env` is the file's last.
    Partial {
        front: usize,
        back: usize,
        middle: Crontab,
        fingerprint: Option<Fingerprint>,
    },
}

/// A text cut into chunks of [`CHUNK_LINES`] lines (the last may have fewer), each ending
/// with its newline.
struct Chunks {
    ranges: Vec<std::ops::Range<usize>>,
    /// How many lines of each chunk may be entries (the room a parse reserves: counted here,
    /// where each line is passed anyway).
    entry_lines: Vec<u32>,
    /// Where each line's newline is, so that the parse does not look for them again.
    ends: Vec<u32>,
}

/// [`Chunks`] of the text. `None` when the text does not end with a newline, or is too large
/// for its offsets to be kept in 32 bits (the daemon reads no file over 64 MiB).
fn chunk_ranges(text: &[u8]) -> Option<Chunks> {
    if text.last() != Some(&b'\n') || u32::try_from(text.len()).is_err() {
        return None;
    }
    let chunks = text.len() / (CHUNK_LINES * 32) + 1;
    let mut cut = Chunks {
        ranges: Vec::with_capacity(chunks),
        entry_lines: Vec::with_capacity(chunks),
        ends: Vec::with_capacity(chunks * CHUNK_LINES),
    };
    let (mut start, mut line_start) = (0, 0);
    let (mut lines, mut entries) = (0, 0);
    for at in memchr::memchr_iter(b'\n', text) {
        entries += u32::from(super::may_be_entry(&text[line_start..at]));
        // Below the text's length, checked above.
        cut.ends.push(at as u32);
        line_start = at + 1;
        lines += 1;
        if lines == CHUNK_LINES {
            cut.ranges.push(start..at + 1);
            cut.entry_lines.push(entries);
            start = at + 1;
            (lines, entries) = (0, 0);
        }
    }
    if start < text.len() {
        cut.ranges.push(start..text.len());
        cut.entry_lines.push(entries);
    }
    Some(cut)
}

/// The text's chunks, when it has a final newline and at least [`MIN_CHUNKS`].
fn enough_chunks(text: &[u8]) -> Option<Chunks> {
    chunk_ranges(text).filter(|c| c.ranges.len() >= MIN_CHUNKS)
}

/// A text cut into chunks ([`chunk_ranges`]), with each chunk's hash.
struct Cut<'t> {
    text: &'t [u8],
    chunks: Chunks,
    hashes: Vec<u64>,
}

impl<'t> Cut<'t> {
    /// `None` when the text has fewer than [`MIN_CHUNKS`] chunks or no final newline.
    fn new(text: &'t [u8], keys: &Keys) -> Option<Cut<'t>> {
        Some(Cut::of(text, enough_chunks(text)?, keys))
    }

    fn of(text: &'t [u8], chunks: Chunks, keys: &Keys) -> Cut<'t> {
        let hashes = chunks
            .ranges
            .iter()
            .map(|r| keys.hash(&text[r.clone()]))
            .collect();
        Cut {
            text,
            chunks,
            hashes,
        }
    }

    /// The lines of chunk `at`, without their newlines.
    fn lines(&self, at: usize) -> impl Iterator<Item = &'t [u8]> + use<'_, 't> {
        let text = self.text;
        let ends = &self.chunks.ends[at * CHUNK_LINES..];
        let ends = &ends[..ends.len().min(CHUNK_LINES)];
        let mut start = self.chunks.ranges[at].start;
        ends.iter().map(move |&end| {
            let line = &text[start..end as usize];
            start = end as usize + 1;
            line
        })
    }
}

/// Parses the chunks `from..` of the text from `state`, each chunk's mark added to `marks`,
/// until the end, or until the parser's state at the start of chunk `stop_at` has the meaning
/// of `stop_state`. Returns the parser's output, its state where it stopped and where that is.
fn parse_chunks(
    cut: &Cut<'_>,
    from: usize,
    state: State,
    stop: Option<(usize, &State)>,
    options: &mut ParseOptions<'_>,
    marks: &mut Vec<Chunk>,
) -> (Crontab, State, usize) {
    let (text, ranges, hashes) = (cut.text, &cut.chunks.ranges, &cut.hashes);
    let mut parser = Parser::resume(options, state);
    if stop.is_none() && from < ranges.len() {
        // To the end: room for the entries at once (growing by doubling copied them again at
        // each step, and held the old and the new room together).
        let rest = &text[ranges[from].start..];
        let room = cut.chunks.entry_lines[from..]
            .iter()
            .map(|&n| n as usize)
            .sum::<usize>()
            .min(parser.options.limits.max_entries);
        parser.out.entries.reserve_exact(room);
        parser.out.spans.reserve_exact(room);
        // An entry's packed text is at most its line (newline included) and four bytes more
        // (super::packed): room for all, given back below when the file had comments.
        parser.out.text.reserve_exact(rest.len() + 4 * room);
    }
    let mut at = from;
    while at < ranges.len() {
        if let Some((stop_at, stop_state)) = stop
            && at == stop_at
            && parser.state().same_meaning(stop_state)
        {
            break;
        }
        let start = parser.state();
        let before = parser.out.entries.len();
        let chunk = &text[ranges[at].clone()];
        let first_line = at * CHUNK_LINES + 1;
        let clean = super::Clean::of(chunk);
        for (i, line) in cut.lines(at).enumerate() {
            parser.line((first_line + i) as u32, line, clean);
        }
        let kept = parser.out.entries[before..]
            .iter()
            .filter(|e| !matches!(e.when, When::Reboot))
            .count();
        marks.push(Chunk {
            hash: hashes[at],
            start,
            kept: kept as u32,
        });
        at += 1;
    }
    let state = parser.state();
    parser.out.text.shrink_to_fit();
    (parser.out, state, at)
}

fn clean(crontab: &Crontab) -> bool {
    crontab.errors.is_empty() && crontab.warnings.is_empty() && crontab.not_shown() == 0
}

/// Parses a whole text and makes its fingerprint (none for a small or unclean text).
pub fn parse_tracked(
    text: &[u8],
    options: &mut ParseOptions<'_>,
) -> (Crontab, Option<Fingerprint>) {
    parse_whole(text, options, None)
}

/// A whole parse, with a fingerprint made with `keys` (fresh ones when `None`: drawn only for
/// a text with enough chunks to keep one).
fn parse_whole(
    text: &[u8],
    options: &mut ParseOptions<'_>,
    keys: Option<Keys>,
) -> (Crontab, Option<Fingerprint>) {
    let Some(chunks) = enough_chunks(text) else {
        return (super::parse(text, options), None);
    };
    let keys = keys.unwrap_or_else(Keys::new);
    let cut = Cut::of(text, chunks, &keys);
    let mut marks = Vec::with_capacity(cut.chunks.ranges.len());
    let (crontab, end, _) = parse_chunks(&cut, 0, State::initial(), None, options, &mut marks);
    let fingerprint = clean(&crontab).then_some(Fingerprint {
        keys,
        chunks: marks,
        end,
    });
    (crontab, fingerprint)
}

/// Parses a new text of a file whose last text left `old` (see the module's text).
pub fn reparse(text: &[u8], options: &mut ParseOptions<'_>, old: &Fingerprint) -> Reparse {
    let whole = |options: &mut ParseOptions<'_>| {
        let (crontab, fingerprint) = parse_whole(text, options, Some(old.keys.clone()));
        Reparse::Whole(crontab, fingerprint)
    };
    let Some(cut) = Cut::new(text, &old.keys) else {
        return whole(options);
    };
    let hashes = &cut.hashes;
    let n = hashes.len();
    let front = hashes
        .iter()
        .zip(&old.chunks)
        .take_while(|(h, c)| **h == c.hash)
        .count();
    // From the back only when the chunks keep their lines: as many as before.
    let back = if n == old.chunks.len() {
        (front..n)
            .rev()
            .take_while(|&i| hashes[i] == old.chunks[i].hash)
            .count()
    } else {
        0
    };
    if front == 0 && back == 0 {
        return whole(options);
    }
    let limits = options.limits;
    let mut marks: Vec<Chunk> = old.chunks[..front].to_vec();
    let stop_at = n - back;
    let stop = (back > 0).then(|| (stop_at, old.state_at(stop_at)));
    let (mut middle, state, stopped) = parse_chunks(
        &cut,
        front,
        old.state_at(front).clone(),
        stop,
        options,
        &mut marks,
    );
    let mut end = state.clone();
    let mut back_kept = 0;
    if stopped == stop_at && back > 0 {
        // The back keeps its meaning; its counts move by what the middle changed, and must
        // stay within the limits (a clean old back never reached one).
        let by = Counts::between(&state, old.state_at(stop_at));
        let old_end = &old.end;
        let moved = old_end.shifted(&by);
        let within = moved.entries <= limits.max_entries
            && moved.env_count <= limits.max_env
            && moved.every_count <= limits.max_every
            && moved.cluster_count <= limits.max_cluster;
        if !within {
            return whole(options);
        }
        marks.extend(old.chunks[stop_at..].iter().map(|c| Chunk {
            start: c.start.shifted(&by),
            ..c.clone()
        }));
        end = moved;
        back_kept = old.kept(stop_at..n);
        middle.env = Arc::clone(&old_end.env);
    }
    let front_kept = old.kept(0..front);
    // After a middle with problems the next reload parses whole, so that they are said again.
    let fingerprint = clean(&middle).then(|| Fingerprint {
        keys: old.keys.clone(),
        chunks: marks,
        end,
    });
    Reparse::Partial {
        front: front_kept,
        back: back_kept,
        middle,
        fingerprint,
    }
}

#[cfg(test)]
mod tests;
