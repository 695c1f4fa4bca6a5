//! The parser of the five time fields and the `@` specials (rules and choices: see the module
//! header in `schedule/mod.rs`). Errors carry the byte offset of the offending character in the
//! text they were given, so `crontab` can turn them into `file:line:column`.
//!
//! Pure: the host seed for `~` and the entry's seed for `H` are arguments.

use std::fmt;

use super::{Field, Schedule, When, full_bits};
use crate::hash::{FNV_OFFSET, fnv1a, mix};

/// An error in a time specification: where (byte offset into the parsed text, 0-based) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub offset: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "column {}: {}", self.offset + 1, self.message)
    }
}

impl std::error::Error for ParseError {}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Parses a whole expression (`cronnext 'EXPR'`): five fields or one `@` special, nothing else.
/// `seed` feeds cronie's `~` (pass a hash of the host name, see [`host_seed`]). An expression
/// is no entry: its `H` fields are hashed from its own text ([`expression_hash`]).
pub fn parse_expression(text: &str, seed: u64) -> Result<When, ParseError> {
    let bytes = text.as_bytes();
    let hash = expression_hash(bytes);
    let Fields { when, end, .. } = parse_fields(bytes, 0, seed, hash)?;
    let rest = skip_blanks(bytes, end);
    if rest < bytes.len() {
        let extra = bytes[rest..]
            .split(|&b| is_blank(b))
            .filter(|t| !t.is_empty())
            .count();
        let message = if bytes[skip_blanks(bytes, 0)] == b'@' {
            "unexpected text after the @-special".to_string()
        } else {
            format!(
                "expected 5 time fields (minute hour day-of-month month day-of-week), found {}",
                5 + extra
            )
        };
        return Err(ParseError {
            offset: rest,
            message,
        });
    }
    Ok(when)
}

/// A stable 64-bit seed from a host name, for `~`.
pub fn host_seed(host: &[u8]) -> u64 {
    fnv1a(FNV_OFFSET, host)
}

/// The `H` seed of an expression given alone (not a crontab line): a hash of its text, each
/// run of blanks read as one space, so `cronnext 'H H * * *'` shows the same times every time.
pub fn expression_hash(text: &[u8]) -> u64 {
    let mut h = fnv1a(FNV_OFFSET, b"crond-expression-1");
    for word in text.split(|&b| is_blank(b)).filter(|w| !w.is_empty()) {
        h = fnv1a(fnv1a(h, word), b" ");
    }
    mix(h)
}

/// A time specification read from the start of a line: what it says, where it ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fields {
    pub when: When,
    /// The offset just past the last field.
    pub end: usize,
    /// Whether one space, and nothing else, separates each of the five fields from the next,
    /// as nearly every file writes them: the text from the first field to `end` can then be
    /// kept as it is. `false` for an `@` special, whose text is not looked at here.
    pub single_spaced: bool,
    /// Whether a field holds an `H`: its values came from the `hash` seed given.
    pub hashed: bool,
}

impl Fields {
    fn periodic(bits: [u64; 5], stars: [bool; 5], end: usize, single_spaced: bool) -> Fields {
        Fields {
            when: When::Periodic(Schedule::from_parts(bits, stars)),
            end,
            single_spaced,
            hashed: false,
        }
    }
}

/// Parses the time specification at the start of `line[start..]` (leading blanks skipped).
/// Offsets in errors are into `line`. `seed` feeds cronie's `~` ([`host_seed`]); `hash` is the
/// entry's seed for `H`. A caller that makes that seed from the entry's other parts (the
/// crontab parser, which needs the command past the fields) may parse with any `hash` first,
/// and again with the entry's when [`Fields::hashed`] says an `H` used it.
pub fn parse_fields(line: &[u8], start: usize, seed: u64, hash: u64) -> Result<Fields, ParseError> {
    let pos = skip_blanks(line, start);
    if line.get(pos) == Some(&b'@') {
        let (when, end) = parse_special(line, pos)?;
        // Rare enough to be looked at again (`@every  1h` has two spaces).
        return Ok(Fields {
            when,
            end,
            single_spaced: false,
            hashed: false,
        });
    }
    match plain_fields(line, pos) {
        Some(fields) => Ok(fields),
        None => any_fields(line, start, pos, Seeds { host: seed, hash }),
    }
}

/// The seeds of the picks: cronie's `~` (the host's), Jenkins' `H` (the entry's).
#[derive(Debug, Clone, Copy)]
struct Seeds {
    host: u64,
    hash: u64,
}

/// The five fields one space apart, each written plainly ([`plain_field`]), as nearly every
/// line of a large file has them: read without the general loop's looks for blanks and errors.
/// `None` for anything else, which [`any_fields`] reads (and words the errors of).
fn plain_fields(line: &[u8], pos: usize) -> Option<Fields> {
    let mut bits = [0u64; 5];
    let mut stars = [false; 5];
    let mut at = pos;
    for field in Field::ALL {
        if field != Field::Minute {
            // The field before ended at a blank or the end: one space, then not a blank.
            if line.get(at) != Some(&b' ') {
                return None;
            }
            at += 1;
        }
        let (value, starred, end) = plain_field(line, at, field)?;
        (bits[field as usize], stars[field as usize], at) = (value, starred, end);
    }
    Some(Fields::periodic(bits, stars, at, true))
}

/// [`parse_fields`] after the blanks at `start` (`pos`), for any way of writing the fields.
fn any_fields(line: &[u8], start: usize, pos: usize, seeds: Seeds) -> Result<Fields, ParseError> {
    let mut bits = [0u64; 5];
    let mut stars = [false; 5];
    let mut pos = pos;
    let mut single_spaced = true;
    let mut hashed = false;
    for field in Field::ALL {
        if field != Field::Minute {
            let next = skip_blanks(line, pos);
            single_spaced &= next == pos + 1 && line[pos] == b' ';
            pos = next;
        }
        if pos >= line.len() {
            let found = field as usize;
            return Err(ParseError {
                offset: pos,
                message: format!(
                    "expected 5 time fields (minute hour day-of-month month day-of-week), found {found}"
                ),
            });
        }
        let (value, starred, end) = match plain_field(line, pos, field) {
            Some(plain) => plain,
            None => {
                let mut parser = FieldParser {
                    line,
                    start,
                    pos,
                    field,
                    seeds,
                    item: 0,
                    hashed: false,
                };
                let (value, starred) = parser.parse()?;
                hashed |= parser.hashed;
                (value, starred, parser.pos)
            }
        };
        (bits[field as usize], stars[field as usize], pos) = (value, starred, end);
    }
    Ok(Fields {
        hashed,
        ..Fields::periodic(bits, stars, pos, single_spaced)
    })
}

/// The two ways nearly every field is written, `*` and a number of one or two digits within
/// the field's bounds, each followed by a blank or the end of the line: the field's bits,
/// whether it is starred and where it ends, as [`FieldParser::parse`] gives them, without it
/// (the general parser was a fifth of the CPU of loading a large file). Anything else, valid
/// or not, is `None` and goes the general way, which also words the errors.
fn plain_field(line: &[u8], pos: usize, field: Field) -> Option<(u64, bool, usize)> {
    let (lo, hi) = field.bounds();
    let ends_at = |at: usize| line.get(at).is_none_or(|&b| is_blank(b));
    match *line.get(pos)? {
        b'*' if ends_at(pos + 1) => Some((range_bits(lo, hi), true, pos + 1)),
        first @ b'0'..=b'9' => {
            let (n, end) = match line.get(pos + 1) {
                Some(&second @ b'0'..=b'9') => ((first - b'0') * 10 + (second - b'0'), pos + 2),
                _ => (first - b'0', pos + 1),
            };
            (ends_at(end) && (lo..=hi).contains(&n)).then(|| (1u64 << n, false, end))
        }
        _ => None,
    }
}

/// The range a bare `H` picks in: the field's, but day of month 1-28, which every month has,
/// and day of week 0-6, where Sunday is one value, not two.
fn hashed_bounds(field: Field) -> (u8, u8) {
    match field {
        Field::DayOfMonth => (1, 28),
        Field::DayOfWeek => (0, 6),
        _ => field.bounds(),
    }
}

/// The bits of every value from `first` to `last` (at most 63).
fn range_bits(first: u8, last: u8) -> u64 {
    let below_first = (1u64 << first) - 1;
    let up_to_last = (1u64 << last << 1).wrapping_sub(1);
    up_to_last & !below_first
}

fn parse_special(line: &[u8], at: usize) -> Result<(When, usize), ParseError> {
    let end = line[at..]
        .iter()
        .position(|&b| is_blank(b))
        .map_or(line.len(), |n| at + n);
    let word = &line[at + 1..end];
    let periodic = |expr: &str, stars: [bool; 5]| {
        let mut bits = [0u64; 5];
        for (i, (field, text)) in Field::ALL.into_iter().zip(expr.split(' ')).enumerate() {
            bits[i] = if text == "*" {
                full_bits(field)
            } else {
                1 << text
                    .parse::<u32>()
                    .expect("the specials are written with numbers")
            };
        }
        When::Periodic(Schedule::from_parts(bits, stars))
    };
    // Star flags as Vixie sets them: @hourly is a wildcard entry (HR_STAR); @yearly and @monthly
    // set DOW_STAR, @weekly DOM_STAR, @daily both.
    let when = match word {
        b"every" => return parse_every(line, end),
        b"reboot" => When::Reboot,
        b"yearly" | b"annually" => periodic("0 0 1 1 *", [false, false, false, false, true]),
        b"monthly" => periodic("0 0 1 * *", [false, false, false, true, true]),
        b"weekly" => periodic("0 0 * * 0", [false, false, true, true, false]),
        b"daily" | b"midnight" => periodic("0 0 * * *", [false, false, true, true, true]),
        b"hourly" => periodic("0 * * * *", [false, true, true, true, true]),
        _ => {
            return Err(ParseError {
                offset: at,
                message: format!(
                    "unknown special '@{}' (known: @reboot @yearly @annually @monthly @weekly \
                     @daily @midnight @hourly @every)",
                    String::from_utf8_lossy(word)
                ),
            });
        }
    };
    Ok((when, end))
}

/// `@every DURATION`: the duration is the next word.
fn parse_every(line: &[u8], after: usize) -> Result<(When, usize), ParseError> {
    let start = skip_blanks(line, after);
    let end = line[start..]
        .iter()
        .position(|&b| is_blank(b))
        .map_or(line.len(), |n| start + n);
    if start == end {
        return Err(ParseError {
            offset: start,
            message: "@every needs a duration (e.g. @every 5s, @every 1h30m)".to_string(),
        });
    }
    let text = String::from_utf8_lossy(&line[start..end]);
    match super::duration::parse_duration(&text) {
        Ok(seconds) => Ok((When::Every(seconds), end)),
        Err(message) => Err(ParseError {
            offset: start,
            message: format!("@every: {message}"),
        }),
    }
}

fn skip_blanks(line: &[u8], mut pos: usize) -> usize {
    while pos < line.len() && is_blank(line[pos]) {
        pos += 1;
    }
    pos
}

fn trim_blanks(text: &[u8]) -> &[u8] {
    let start = text
        .iter()
        .position(|&b| !is_blank(b))
        .unwrap_or(text.len());
    let end = text
        .iter()
        .rposition(|&b| !is_blank(b))
        .map_or(start, |n| n + 1);
    &text[start..end]
}

struct FieldParser<'a> {
    line: &'a [u8],
    /// Where the entry starts in `line` (its `~` picks hash the line from there).
    start: usize,
    pos: usize,
    field: Field,
    seeds: Seeds,
    item: u64,
    /// Set once an `H` item is read.
    hashed: bool,
}

/// A number or name as written, with where it started.
struct Value {
    value: u8,
    at: usize,
}

impl FieldParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.line.get(self.pos).copied()
    }

    fn err<T>(&self, offset: usize, message: String) -> Result<T, ParseError> {
        Err(ParseError { offset, message })
    }

    fn field_name(&self) -> &'static str {
        self.field.name()
    }

    /// The whole field: items separated by commas, ended by a blank or the end of the line.
    fn parse(&mut self) -> Result<(u64, bool), ParseError> {
        let starred = self.peek() == Some(b'*');
        let mut bits = 0u64;
        loop {
            bits |= self.item()?;
            self.item += 1;
            match self.peek() {
                Some(b',') => self.pos += 1,
                None => break,
                Some(b) if is_blank(b) => break,
                Some(b) => return self.unexpected(b),
            }
        }
        Ok((bits, starred))
    }

    fn item(&mut self) -> Result<u64, ParseError> {
        let start = self.pos;
        let (lo, hi) = self.field.bounds();
        let (first, last, ranged) = match self.peek() {
            Some(b'*') => {
                self.pos += 1;
                (lo, hi, true)
            }
            Some(b'~') => return self.random(lo, None),
            Some(b'H') => return self.hashed(),
            Some(b) if b.is_ascii_alphanumeric() => {
                let a = self.value()?;
                match self.peek() {
                    Some(b'-') => {
                        self.pos += 1;
                        if !self.peek().is_some_and(|b| b.is_ascii_alphanumeric()) {
                            let at = self.pos;
                            return self.err(
                                at,
                                format!("expected a number after '-' in the {}", self.field_name()),
                            );
                        }
                        let b = self.value()?;
                        (a.value, self.range_end(&a, &b)?, true)
                    }
                    Some(b'~') => return self.random(a.value, Some(a.at)),
                    _ => (a.value, a.value, false),
                }
            }
            Some(b) if b == b',' || is_blank(b) => {
                return self.err(
                    start,
                    format!("empty item in the {} field", self.field_name()),
                );
            }
            None => {
                return self.err(
                    start,
                    format!("empty item in the {} field", self.field_name()),
                );
            }
            Some(b) => return self.unexpected(b),
        };
        let step = self.step(first, hi, ranged)?;
        if step == 1 {
            // A whole range at once (`*` is 60 values in the minute field).
            return Ok(range_bits(first, last));
        }
        let mut bits = 0u64;
        let mut v = u32::from(first);
        while v <= u32::from(last) {
            bits |= 1 << v;
            v += step;
        }
        Ok(bits)
    }

    /// The step after an item (`/N`, 1 to 255), 1 when none is given. Only a range or `*`
    /// (`ranged`) may have one; the error for a single value names the range it may have
    /// meant, from `first` to the field's highest value `hi`.
    fn step(&mut self, first: u8, hi: u8, ranged: bool) -> Result<u32, ParseError> {
        if self.peek() != Some(b'/') {
            return Ok(1);
        }
        let slash = self.pos;
        if !ranged {
            return self.err(
                slash,
                format!(
                    "a step needs a range or '*' before it (write {first}-{hi}/N for \
                     every N from {first}) in the {} field",
                    self.field_name()
                ),
            );
        }
        self.pos += 1;
        let at = self.pos;
        if !self.peek().is_some_and(|b| b.is_ascii_digit()) {
            return self.err(
                at,
                format!(
                    "expected a step number after '/' in the {}",
                    self.field_name()
                ),
            );
        }
        let n = self.number();
        if n == 0 {
            return self.err(
                at,
                format!("a step of 0 in the {} field", self.field_name()),
            );
        }
        if n > 255 {
            return self.err(
                at,
                format!("step {n} is too large in the {} field", self.field_name()),
            );
        }
        Ok(n)
    }

    /// cronie's `a~b`: one value picked in the range, stable for this entry on this host.
    fn random(&mut self, first: u8, first_at: Option<usize>) -> Result<u64, ParseError> {
        let tilde = self.pos;
        self.pos += 1;
        let (_, hi) = self.field.bounds();
        let last = if self.peek().is_some_and(|b| b.is_ascii_alphanumeric()) {
            let b = self.value()?;
            let a = Value {
                value: first,
                at: first_at.unwrap_or(tilde),
            };
            self.range_end(&a, &b)?
        } else if self.field == Field::DayOfWeek {
            // Up to Saturday, so Sunday (0 and 7) isn't picked twice as often; `7~` is Sunday.
            first.max(6)
        } else {
            hi
        };
        if self.peek() == Some(b'/') {
            let at = self.pos;
            return self.err(
                at,
                format!(
                    "a random pick '~' cannot take a step in the {} field",
                    self.field_name()
                ),
            );
        }
        // The pick depends on the whole line, so that two entries differing only in their
        // command get independent values; worked out here, as only a line with a `~` needs
        // it (hashing every line's command was an eighth of the load of 100,000 entries).
        let entry_seed = fnv1a(
            self.seeds.host ^ FNV_OFFSET,
            trim_blanks(&self.line[self.start..]),
        );
        let seed = entry_seed ^ (self.field as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let span = u64::from(last - first) + 1;
        let pick =
            u64::from(first) + mix(seed ^ self.item.wrapping_mul(0x2545_f491_4f6c_dd1d)) % span;
        Ok(1 << pick)
    }

    /// Jenkins' `H`: one value of a range (`H`, `H(a-b)`), or one step pattern in it (`H/N`,
    /// `H(a-b)/N`: the values `o`, `o+N`, `o+2N`... of the range, the offset `o` below N from
    /// its start), chosen by the entry's `H` seed, so the same for as long as the entry is the
    /// same. Without a range, day of month keeps to 1-28 (every month has them) and day of
    /// week to 0-6 (Sunday once, not as 0 and 7).
    fn hashed(&mut self) -> Result<u64, ParseError> {
        self.pos += 1;
        let (first, last) = match self.peek() {
            Some(b'(') => self.hashed_range()?,
            _ => hashed_bounds(self.field),
        };
        match self.peek() {
            None | Some(b'/' | b',') => {}
            Some(b) if is_blank(b) => {}
            Some(b) => return self.after_hash(b),
        }
        let stepped = self.peek() == Some(b'/');
        let step_at = self.pos + 1;
        let step = self.step(first, last, true)?;
        self.hashed = true;
        // Each field and each item of a list gets a value of its own from the one seed.
        let pick = mix(self.seeds.hash
            ^ (self.field as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
            ^ self.item.wrapping_mul(0x2545_f491_4f6c_dd1d));
        let span = u32::from(last - first) + 1;
        if !stepped {
            return Ok(1 << (u32::from(first) + (pick % u64::from(span)) as u32));
        }
        if step > span {
            return self.err(
                step_at,
                format!(
                    "step {step} is larger than the {span} values of H's range {first}-{last} \
                     in the {} field",
                    self.field_name()
                ),
            );
        }
        let mut bits = 0u64;
        let mut v = u32::from(first) + (pick % u64::from(step)) as u32;
        while v <= u32::from(last) {
            bits |= 1 << v;
            v += step;
        }
        Ok(bits)
    }

    /// The `(a-b)` after an `H`: a range as `a-b` is one, in parentheses.
    fn hashed_range(&mut self) -> Result<(u8, u8), ParseError> {
        self.pos += 1;
        let is_value = |p: &Self| p.peek().is_some_and(|b| b.is_ascii_alphanumeric());
        if !is_value(self) {
            return self.no_hashed_range();
        }
        let a = self.value()?;
        if self.peek() != Some(b'-') {
            return self.no_hashed_range();
        }
        self.pos += 1;
        if !is_value(self) {
            return self.no_hashed_range();
        }
        let b = self.value()?;
        let last = self.range_end(&a, &b)?;
        if self.peek() != Some(b')') {
            let at = self.pos;
            return self.err(
                at,
                format!(
                    "expected ')' after the range of 'H(' in the {} field",
                    self.field_name()
                ),
            );
        }
        self.pos += 1;
        Ok((a.value, last))
    }

    fn no_hashed_range<T>(&self) -> Result<T, ParseError> {
        let at = self.pos;
        self.err(
            at,
            format!(
                "expected a range a-b in 'H(a-b)' in the {} field",
                self.field_name()
            ),
        )
    }

    /// What may not follow an `H` (`H5`, `HH`, `H~`).
    fn after_hash<T>(&self, b: u8) -> Result<T, ParseError> {
        let at = self.pos;
        let shown = if b.is_ascii_graphic() {
            format!("'{}'", b as char)
        } else {
            format!("byte 0x{b:02x}")
        };
        self.err(
            at,
            format!(
                "unexpected {shown} after 'H' in the {} field (write H, H(a-b), H/N or H(a-b)/N)",
                self.field_name()
            ),
        )
    }

    /// The end of a range `a-b`, with cronie's `5-0` = `5-7` in day of week.
    fn range_end(&self, a: &Value, b: &Value) -> Result<u8, ParseError> {
        if b.value >= a.value {
            return Ok(b.value);
        }
        if self.field == Field::DayOfWeek && b.value == 0 {
            return Ok(7);
        }
        self.err(
            a.at,
            format!(
                "range {}-{} is reversed in the {} field (write {}-{})",
                a.value,
                b.value,
                self.field_name(),
                b.value,
                a.value
            ),
        )
    }

    /// A number or (in month and day of week) a three-letter name, checked against the bounds.
    fn value(&mut self) -> Result<Value, ParseError> {
        let at = self.pos;
        let (lo, hi) = self.field.bounds();
        if self.peek().is_some_and(|b| b.is_ascii_digit()) {
            let n = self.number();
            if self.peek().is_some_and(|b| b.is_ascii_alphabetic()) {
                let bad = self.pos;
                return self.letter_after_number(bad);
            }
            if n < u32::from(lo) || n > u32::from(hi) {
                return self.err(
                    at,
                    format!(
                        "{n} is out of range {lo}-{hi} in the {} field",
                        self.field_name()
                    ),
                );
            }
            return Ok(Value { value: n as u8, at });
        }
        while self.peek().is_some_and(|b| b.is_ascii_alphanumeric()) {
            self.pos += 1;
        }
        let word = &self.line[at..self.pos];
        let names: &[&str] = match self.field {
            Field::Month => &MONTHS,
            Field::DayOfWeek => &DAYS,
            _ => {
                return self.err(at, self.bad_word(word));
            }
        };
        match names
            .iter()
            .position(|n| n.as_bytes().eq_ignore_ascii_case(word))
        {
            Some(i) => {
                let value = if self.field == Field::Month { i + 1 } else { i };
                Ok(Value {
                    value: value as u8,
                    at,
                })
            }
            None => self.err(at, self.bad_word(word)),
        }
    }

    fn bad_word(&self, word: &[u8]) -> String {
        let shown = String::from_utf8_lossy(word);
        match (self.field, word) {
            (_, b"L" | b"l") => format!(
                "'L' (last day) is not cron syntax, in the {} field",
                self.field_name()
            ),
            (_, b"h") => format!(
                "'h' is not cron syntax (a hashed value is a capital 'H'), in the {} field",
                self.field_name()
            ),
            (_, b"W" | b"w") => format!(
                "'W' (nearest weekday) is not cron syntax, in the {} field",
                self.field_name()
            ),
            (Field::Month, _) => format!("unknown month name '{shown}' (use jan..dec or 1-12)"),
            (Field::DayOfWeek, _) => format!("unknown day name '{shown}' (use sun..sat or 0-7)"),
            _ => format!(
                "'{shown}' is not a number, in the {} field",
                self.field_name()
            ),
        }
    }

    fn letter_after_number<T>(&self, at: usize) -> Result<T, ParseError> {
        let c = self.line[at] as char;
        let message = match c {
            'L' | 'l' => format!(
                "'L' (last day) is not cron syntax, in the {} field",
                self.field_name()
            ),
            'W' | 'w' => format!(
                "'W' (nearest weekday) is not cron syntax, in the {} field",
                self.field_name()
            ),
            _ => format!(
                "unexpected '{c}' after a number in the {} field",
                self.field_name()
            ),
        };
        self.err(at, message)
    }

    /// Digits, saturating far above any valid value so that huge numbers report as out of range.
    fn number(&mut self) -> u32 {
        let mut n = 0u32;
        while let Some(b) = self.peek().filter(u8::is_ascii_digit) {
            n = n
                .saturating_mul(10)
                .saturating_add(u32::from(b - b'0'))
                .min(100_000);
            self.pos += 1;
        }
        n
    }

    fn unexpected<T>(&self, b: u8) -> Result<T, ParseError> {
        let at = self.pos;
        let name = self.field_name();
        let message = match b {
            b'?' => format!("'?' is not cron syntax (Quartz); use '*' in the {name} field"),
            b'#' => format!("'#' (nth weekday) is not cron syntax, in the {name} field"),
            b'-' => format!("unexpected '-' in the {name} field (a range is a-b)"),
            b'/' => format!("unexpected '/' in the {name} field (a step is */N or a-b/N)"),
            b if b.is_ascii_graphic() => format!("unexpected '{}' in the {name} field", b as char),
            b => format!("unexpected byte 0x{b:02x} in the {name} field"),
        };
        self.err(at, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the general parser makes of the field at `pos`: its bits, whether it is starred,
    /// where it ends.
    fn general(line: &[u8], pos: usize, field: Field) -> Result<(u64, bool, usize), ParseError> {
        let mut parser = FieldParser {
            line,
            start: 0,
            pos,
            field,
            seeds: Seeds { host: 0, hash: 0 },
            item: 0,
            hashed: false,
        };
        let (bits, starred) = parser.parse()?;
        Ok((bits, starred, parser.pos))
    }

    #[test]
    fn a_plain_field_reads_as_the_general_parser_reads_it() {
        let mut read = 0;
        for field in Field::ALL {
            let tokens = (0..=100).map(|n| n.to_string()).chain(
                [
                    "*", "05", "007", "*/5", "1-5", "1,2", "jan", "mon", "5L", "?", "",
                ]
                .map(String::from),
            );
            for token in tokens {
                for after in ["", " ", "\t", " cmd", ",3", "/2", "-4", "x", "~", "#"] {
                    let line = format!("  {token}{after}");
                    let line = line.as_bytes();
                    let Some(plain) = plain_field(line, 2, field) else {
                        continue;
                    };
                    read += 1;
                    assert_eq!(
                        Ok(plain),
                        general(line, 2, field),
                        "{field:?} {:?}",
                        String::from_utf8_lossy(line)
                    );
                }
            }
        }
        // `*`, each value in range and `05` (in every field's range), each before nothing, a
        // space, a tab and a command; nothing else.
        let values: usize = Field::ALL
            .iter()
            .map(|f| usize::from(f.bounds().1 - f.bounds().0) + 1)
            .sum();
        assert_eq!(read, 4 * (values + 2 * Field::ALL.len()));
    }

    #[test]
    fn five_plain_fields_read_as_the_general_loop_reads_them() {
        let tokens = [
            "*", "1", "5", "7", "0", "12", "23", "31", "59", "60", "99", "05", "007", "*/5", "1-5",
            "1,2", "jan", "mon", "~", "",
        ];
        let separators = [" ", " ", " ", " ", " ", " ", " ", " ", "  ", "\t", " \t"];
        let tails = ["", " ", "\t", " cmd", " cmd", " cmd", "x", "  cmd"];
        // A fixed sequence of lines (xorshift), so a failure names a line that fails again.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut pick = |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        let (mut plain, mut lines) = (0, 0);
        for _ in 0..200_000 {
            let mut line = String::from(["", " ", "\t"][pick(3)]);
            for i in 0..5 {
                if i > 0 {
                    line.push_str(separators[pick(separators.len())]);
                }
                // Mostly plain tokens, so most lines are plain throughout.
                let token = if pick(8) == 0 {
                    pick(tokens.len())
                } else {
                    pick(5)
                };
                line.push_str(tokens[token]);
            }
            line.push_str(tails[pick(tails.len())]);
            let bytes = line.as_bytes();
            let pos = skip_blanks(bytes, 0);
            lines += 1;
            if let Some(fields) = plain_fields(bytes, pos) {
                plain += 1;
                let seeds = Seeds { host: 0, hash: 0 };
                assert_eq!(Ok(fields), any_fields(bytes, 0, pos, seeds), "{line:?}");
            }
        }
        // Both ways are taken often: the check above compared many plain lines.
        assert!(plain > lines / 20 && plain < lines, "{plain} of {lines}");
    }
}
