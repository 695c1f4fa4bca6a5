//! The crontab file format: bytes in, [`Crontab`] out, with every problem as a [`Diagnostic`]
//! that names line and column.
//!
//! Pure: no files, no users, no clock. Zones named by `CRON_TZ` are looked up through the
//! caller's resolver (see [`ParseOptions`]), so tests and the daemon decide where zone data comes
//! from.
//!
//! Two formats: a user's crontab (`/var/spool/cron/crontabs/USER`: five time fields or an
//! `@`-special, then the command) and the system format of `/etc/crontab` and `/etc/cron.d/*`
//! (a user name between the time fields and the command).
//!
//! Rules, where they differ from Debian's cron (docs/design.md §6):
//! * a bad line is reported and skipped; every other line still loads (Debian drops the whole
//!   file, which silently stops all of a user's jobs);
//! * a missing final newline is a warning, not a reason to ignore the file;
//! * an entry without a command, and a command whose first word is a time field (a six-field
//!   expression with seconds, `0 0 * * * * cmd`), are errors;
//! * a `\r` just before the newline (a file saved on Windows) is dropped with a warning; a `\r`
//!   anywhere else makes the line an error, since on a terminal it hides the text before it;
//! * setting `LOGNAME` or `USER` is a warning: the daemon always sets both to the owner;
//! * an unknown `CRON_TZ` is an error, and the entries below it are not loaded (each says why)
//!   until the next valid `CRON_TZ`: running them in another zone would run them at the wrong
//!   time;
//! * a NUL byte anywhere in a line makes the line an error (a command can't carry it to exec);
//! * a MAILTO or MAILFROM that fails Debian's safe-address rule is an error when the file is
//!   checked (Debian accepts it and then silently never mails).

#![forbid(unsafe_code)]

mod address;
mod command;
mod diagnostic;
mod env;
mod hashed;
pub mod header;
pub mod packed;
pub mod policy;

use std::fmt;
use std::sync::Arc;

pub use address::is_safe_address;
pub use command::{JobInput, split_percent};
pub use diagnostic::{Diagnostic, MAX_MESSAGE, SHOWN_PROBLEMS};
pub use env::Env;

use crate::schedule::{self, When, Zone, ZoneError};
use diagnostic::capped;
use env::{EnvLine, parse_env_line};

/// Which of the two file formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A user's crontab: no user field.
    User,
    /// `/etc/crontab` and `/etc/cron.d/*`: a user field after the time fields.
    System,
}

/// Bounds against abuse; exceeding one is an error, never a crash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest file in bytes: a larger one is refused whole, not cut (a cut file would load a
    /// different crontab). The parser doesn't see files; its readers apply this.
    pub max_file: u64,
    /// Longest line in bytes (cronie's MAX_COMMAND is 131072).
    pub max_line: usize,
    /// Most entries loaded from one file.
    pub max_entries: usize,
    /// Most `NAME=value` lines one file may have (a repeated name counts again).
    pub max_env: usize,
    /// Most `@every` entries one file may have: each may start a job every second.
    pub max_every: usize,
    /// Most entries under `CRON_CLUSTER` one file may have (@reboot and @every, which run
    /// locally, not counted): each run of each is a row in a database every host shares.
    /// Root's crontab is not bounded by it (see [`ParseOptions::privileged`]).
    pub max_cluster: usize,
}

impl Limits {
    /// A user's crontab: 1 MiB (what crontab(1) accepts), cronie's 10,000 entries, 1,000
    /// assignments, 100 cluster entries.
    pub const USER: Limits = Limits {
        max_file: 1 << 20,
        max_line: 131_072,
        max_entries: 10_000,
        max_env: 1_000,
        max_every: 100,
        max_cluster: 100,
    };
    /// System files are written by root and packages: generous bounds.
    pub const SYSTEM: Limits = Limits {
        max_file: 64 << 20,
        max_line: 131_072,
        max_entries: 1_000_000,
        max_env: 10_000,
        max_every: 100,
        max_cluster: usize::MAX,
    };
}

/// How to parse, and where facts come from.
pub struct ParseOptions<'a> {
    pub format: Format,
    pub limits: Limits,
    /// Seed for cronie's `~` (a hash of the host name: [`schedule::host_seed`]), and for `H`
    /// under `CRON_HASH=host`.
    pub seed: u64,
    /// The file as crond's logs name it (`crontabs/alice`, `/etc/cron.d/php`): the seed of an
    /// entry's `H` fields is made of it, as its id is.
    pub file: &'a str,
    /// Looks up a `CRON_TZ` value.
    pub zones: &'a mut dyn FnMut(&str) -> Result<Zone, ZoneError>,
    /// Whether the file is root's crontab: cronie's `-` prefix (no CMD log line) is allowed
    /// there and in system files, and an error in other users' crontabs.
    pub privileged: bool,
}

impl fmt::Debug for ParseOptions<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ParseOptions")
            .field("format", &self.format)
            .field("limits", &self.limits)
            .field("seed", &self.seed)
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

/// One scheduled command.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Line number in the file (from 1).
    pub line: u32,
    pub when: When,
    /// The user field of the system format (one allocation for consecutive entries of one
    /// user).
    pub user: Option<Arc<[u8]>>,
    /// The variables set above the entry.
    pub env: Arc<Env>,
    /// `CRON_TZ` in force for this entry; `None` means the daemon's local zone.
    pub zone: Option<Zone>,
    /// cronie's `RANDOM_DELAY` in minutes (0: none).
    pub random_delay: u32,
    /// cronie's `-` before the time fields: the job's start and end are not logged.
    pub quiet: bool,
    /// Whether a time field holds an `H` (which Debian's cron rejects).
    pub hashed: bool,
}

/// A parsed file: what loads, and what is wrong.
#[derive(Debug, Clone, Default)]
pub struct Crontab {
    /// The variables in force at the end of the file.
    pub env: Arc<Env>,
    /// The entries; the text of entry `i` is found with [`Crontab::command`] and
    /// [`Crontab::schedule_text`].
    pub entries: Vec<Entry>,
    /// The entries' commands and time fields as written, one after the other
    /// ([`packed`]): one allocation for the file instead of two per entry.
    text: Vec<u8>,
    /// Where each entry's command is in `text`, in the order of `entries`.
    spans: Vec<packed::Span>,
    /// The first problems of the file, [`SHOWN_PROBLEMS`] at most between the two lists.
    pub errors: Vec<Diagnostic>,
    pub warnings: Vec<Diagnostic>,
    errors_not_shown: usize,
    warnings_not_shown: usize,
}

impl Crontab {
    /// Entry `i`'s command as written, `%` and all (what logs and the mail subject show).
    pub fn command(&self, i: usize) -> &[u8] {
        packed::command(&self.text, self.spans[i])
    }

    /// The entries' commands, in order.
    pub fn commands(&self) -> impl ExactSizeIterator<Item = &[u8]> {
        self.spans
            .iter()
            .map(|&span| packed::command(&self.text, span))
    }

    /// Entry `i`'s time fields as written (`@daily`, `*/5 * * * mon-fri`), each run of blanks
    /// between them one space (Debian's /etc/crontab separates them with tabs, which a table
    /// would show escaped), the `-` before them left out, at most
    /// [`packed::MAX_SCHEDULE_TEXT`] bytes: what `cronctl list` shows.
    pub fn schedule_text(&self, i: usize) -> &[u8] {
        packed::schedule_text(&self.text, self.spans[i])
    }

    /// The command entry `i`'s shell runs and the text it reads on stdin (the `%` rule).
    pub fn job_input(&self, i: usize) -> JobInput {
        split_percent(self.command(i))
    }

    /// Entry `i` as a crontab line (canonical time fields, original command).
    pub fn to_line(&self, i: usize) -> Vec<u8> {
        let entry = &self.entries[i];
        let mut line = if entry.quiet {
            b"-".to_vec()
        } else {
            Vec::new()
        };
        line.extend_from_slice(entry.when.to_string().as_bytes());
        if let Some(user) = &entry.user {
            line.push(b' ');
            line.extend_from_slice(user);
        }
        line.push(b' ');
        line.extend_from_slice(self.command(i));
        line
    }

    /// The entries with where each one's command is in the packed text, and that text
    /// ([`packed`]), for a caller that keeps them (the daemon) without copying a command.
    pub fn into_packed(self) -> (Vec<Entry>, Vec<packed::Span>, Vec<u8>) {
        (self.entries, self.spans, self.text)
    }

    /// Whether any line is an error, shown or not (an install is refused on any).
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty() || self.errors_not_shown > 0
    }

    /// How many problems were counted but not kept.
    pub fn not_shown(&self) -> usize {
        self.errors_not_shown + self.warnings_not_shown
    }

    /// `(N more problems in FILE not shown)`, the line that ends a capped list.
    pub fn not_shown_line(&self, file: &str) -> Option<String> {
        let n = self.not_shown();
        (n > 0).then(|| {
            let more = crate::words::count(n as u64, "more problem", "more problems");
            format!("({more} in {file} not shown)")
        })
    }

    fn shown(&self) -> usize {
        self.errors.len() + self.warnings.len()
    }

    /// Adds a warning found by the reader of the file rather than the parser (a system file's
    /// user that passwd doesn't know), under the same cap.
    pub fn warn(&mut self, line: u32, column: u32, message: String) {
        if self.shown() >= SHOWN_PROBLEMS {
            self.warnings_not_shown += 1;
        } else {
            self.warnings.push(Diagnostic {
                line,
                column,
                message: capped(message),
            });
        }
    }
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// `text` cut at each newline as `split(|&b| b == b'\n')` cuts it (the piece after the last
/// newline included: empty when the text ends with one), the newlines found with SIMD.
fn split_lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let t = rest?;
        match memchr::memchr(b'\n', t) {
            Some(at) => {
                rest = Some(&t[at + 1..]);
                Some(&t[..at])
            }
            None => {
                rest = None;
                Some(t)
            }
        }
    })
}

/// Parses a whole file. Never fails: what is wrong is in `errors` and `warnings`, and every good
/// line is in `entries`.
pub fn parse(text: &[u8], options: &mut ParseOptions<'_>) -> Crontab {
    let mut parser = Parser::new(options);
    // The packed text is about the file's size (less its comments and user fields): room
    // for that at once rather than growing by doubling.
    parser.out.text.reserve_exact(text.len());
    let clean = Clean::of(text);
    let mut lines = split_lines(text).peekable();
    let mut number = 0u32;
    while let Some(line) = lines.next() {
        number = number.saturating_add(1);
        let last = lines.peek().is_none();
        if last && line.is_empty() {
            break;
        }
        if last {
            parser.warn(
                number,
                0,
                "missing newline at the end of the file".to_string(),
            );
        }
        parser.line(number, line, clean);
    }
    parser.out
}

/// Whether a text holds no CR and no NUL: the lines of such a text (nearly every file) are not
/// looked through for them one by one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Clean {
    /// Neither byte in the text.
    Known,
    /// Either may be in it: each line is looked at.
    Unknown,
}

impl Clean {
    fn of(text: &[u8]) -> Clean {
        match memchr::memchr2(b'\r', 0, text) {
            None => Clean::Known,
            Some(_) => Clean::Unknown,
        }
    }
}

struct Parser<'o, 'z> {
    out: Crontab,
    /// The zone for entries from here on: `Err(line)` when the `CRON_TZ` on that line was bad.
    zone: Result<Option<Zone>, u32>,
    random_delay: u32,
    env_count: usize,
    every_count: usize,
    cluster_count: usize,
    /// The seeds of the `H` entries so far (identical ones are counted).
    hash_seeds: hashed::HashSeeds,
    options: &'o mut ParseOptions<'z>,
}

impl<'o, 'z> Parser<'o, 'z> {
    /// A parser at the start of a file.
    fn new(options: &'o mut ParseOptions<'z>) -> Parser<'o, 'z> {
        Parser {
            out: Crontab::default(),
            zone: Ok(None),
            random_delay: 0,
            env_count: 0,
            every_count: 0,
            cluster_count: 0,
            hash_seeds: hashed::HashSeeds::default(),
            options,
        }
    }

    fn error(&mut self, line: u32, column: usize, message: String) {
        if self.out.shown() >= SHOWN_PROBLEMS {
            self.out.errors_not_shown += 1;
            return;
        }
        self.out.errors.push(Diagnostic {
            line,
            column: column as u32 + 1,
            message: capped(message),
        });
    }

    fn warn(&mut self, line: u32, column: usize, message: String) {
        if self.out.shown() >= SHOWN_PROBLEMS {
            self.out.warnings_not_shown += 1;
            return;
        }
        self.out.warnings.push(Diagnostic {
            line,
            column: column as u32 + 1,
            message: capped(message),
        });
    }

    /// One line (its newline cut off); `clean`: whether the text it is in holds no CR and no
    /// NUL.
    fn line(&mut self, number: u32, mut line: &[u8], clean: Clean) {
        if line.len() > self.options.limits.max_line {
            let max = self.options.limits.max_line;
            self.error(number, max, format!("line longer than {max} bytes"));
            return;
        }
        if clean == Clean::Unknown
            && let Some(&b'\r') = line.last()
        {
            line = &line[..line.len() - 1];
            self.warn(
                number,
                line.len(),
                "carriage return at the end of the line (DOS line ending) ignored".to_string(),
            );
        }
        // One look for both bytes a line must not hold (most lines hold neither).
        let odd = match clean {
            Clean::Known => None,
            Clean::Unknown => memchr::memchr2(b'\r', 0, line),
        };
        // Anywhere else a CR hides text: a terminal showing the line (`crontab -l`, `cat`)
        // returns to its start and overwrites what comes before with what comes after, so
        // the command that runs would not be the one anyone sees. Even in a comment.
        let cr = odd.and_then(|at| match line[at] {
            b'\r' => Some(at),
            _ => memchr::memchr(b'\r', &line[at..]).map(|n| at + n),
        });
        if let Some(cr) = cr {
            self.error(
                number,
                cr,
                "carriage return inside the line (it would hide text on a terminal)".to_string(),
            );
            return;
        }
        let Some(first) = line.iter().position(|&b| !is_blank(b)) else {
            return;
        };
        if line[first] == b'#' {
            return;
        }
        // No CR: what was found is the first NUL.
        if let Some(nul) = odd {
            self.error(number, nul, "NUL byte in the line".to_string());
            return;
        }
        match parse_env_line(line) {
            EnvLine::NotEnv => self.entry(number, line),
            EnvLine::Bad(at, message) => self.error(number, at, message),
            EnvLine::Assign { name, value } => self.assign(number, line, first, name, value),
        }
    }

    fn assign(&mut self, number: u32, line: &[u8], at: usize, name: &[u8], value: &[u8]) {
        match name {
            b"LOGNAME" | b"USER" => {
                self.warn(
                    number,
                    at,
                    format!(
                        "{} can not be set: cron sets it to the crontab's owner; line ignored",
                        String::from_utf8_lossy(name)
                    ),
                );
                return;
            }
            b"CRON_TZ" => self.set_zone(number, at, value),
            b"RANDOM_DELAY" => match std::str::from_utf8(value)
                .ok()
                .and_then(|v| v.parse::<u32>().ok())
            {
                Some(minutes) if minutes <= 1440 => self.random_delay = minutes,
                _ => {
                    self.error(
                        number,
                        at,
                        format!(
                            "RANDOM_DELAY must be a number of minutes from 0 to 1440, not '{}'",
                            String::from_utf8_lossy(value)
                        ),
                    );
                    return;
                }
            },
            name if policy::is_policy_name(name) => {
                if let Err(e) = policy::Policy::default().with(name, value) {
                    let column = value.as_ptr() as usize - line.as_ptr() as usize;
                    self.error(number, column, e.to_string());
                    return;
                }
            }
            b"MAILTO" | b"MAILFROM" if !value.is_empty() => {
                let check = if name == b"MAILTO" {
                    address::check_mailto(value)
                } else {
                    address::check_mailfrom(value)
                };
                if let Err((offset, message)) = check {
                    // `value` is a slice of the line: its column is its distance from the start.
                    let column = value.as_ptr() as usize - line.as_ptr() as usize + offset;
                    self.error(number, column, message);
                    return;
                }
            }
            _ => {}
        }
        // Every assignment counts, a repeated name too: each one is a link in the chain that
        // the entries below it share.
        if self.env_count >= self.options.limits.max_env {
            let max = self.options.limits.max_env;
            self.error(
                number,
                at,
                format!("more than {max} variable assignments in one file"),
            );
            return;
        }
        self.env_count += 1;
        self.out.env = self.out.env.with(name, value);
    }

    /// `CRON_TZ=value`: the zone of the entries below it, the system's when empty. A zone that
    /// cannot be loaded is reported here, and each entry below it refuses to load.
    fn set_zone(&mut self, number: u32, at: usize, value: &[u8]) {
        self.zone = if value.is_empty() {
            Ok(None)
        } else {
            match std::str::from_utf8(value)
                .map_err(|_| "the zone name is not UTF-8".to_string())
                .and_then(|v| (self.options.zones)(v).map_err(|e| e.to_string()))
            {
                Ok(zone) => Ok(Some(zone)),
                Err(message) => {
                    self.error(number, at, message);
                    Err(number)
                }
            }
        };
    }

    fn entry(&mut self, number: u32, line: &[u8]) {
        let first = skip_blanks(line, 0);
        let quiet = line.get(first) == Some(&b'-');
        if quiet && self.options.format == Format::User && !self.options.privileged {
            // cronie's rule: only root (and system files) may hide a job from the log.
            self.error(
                number,
                first,
                "only root's crontab and system files may use '-' (no CMD log line)".to_string(),
            );
            return;
        }
        let fields_at = if quiet { first + 1 } else { 0 };
        let Some(schedule::Fields {
            mut when,
            end: fields_end,
            single_spaced,
            hashed,
        }) = self.fields(number, line, fields_at, 0)
        else {
            return;
        };
        let Some((user, pos)) = self.user(number, line, fields_end) else {
            return;
        };
        let Some(start) = self.command_start(number, line, pos) else {
            return;
        };
        let written = &line[skip_blanks(line, fields_at)..fields_end];
        if hashed {
            let user = user.as_deref().unwrap_or_default();
            let hash = self.hash_seed(user, written, &line[start..]);
            match self.fields(number, line, fields_at, hash) {
                Some(fields) => when = fields.when,
                None => return,
            }
        }
        if let When::Periodic(s) = &when
            && !s.can_fire()
        {
            self.warn(
                number,
                0,
                "this schedule can never run (no such day in the chosen months)".to_string(),
            );
        }
        let zone = match &self.zone {
            Ok(zone) => zone.clone(),
            Err(bad) => {
                let bad = *bad;
                self.error(
                    number,
                    0,
                    format!("entry not loaded: the CRON_TZ on line {bad} is not a valid zone"),
                );
                return;
            }
        };
        if !self.count(number, &when) {
            return;
        }
        let command = &line[start..];
        // Installed as Debian installs it, but said: the `%` cuts a format meant for date.
        if let Some(percent) = command::format_percent(command) {
            self.warn(number, start + percent.at, percent.message());
        }
        let span = packed::push_fields(&mut self.out.text, number, written, single_spaced, command);
        self.out.spans.push(span);
        self.out.entries.push(Entry {
            line: number,
            when,
            user,
            env: Arc::clone(&self.out.env),
            zone,
            random_delay: self.random_delay,
            quiet,
            hashed,
        });
    }

    /// The seed of the `H` fields of the entry of `user` (a system file's user field, empty in
    /// a user's crontab) with the time fields `written` and `command`, in the zone and the
    /// environment in force ([`hashed`]).
    fn hash_seed(&mut self, user: &[u8], written: &[u8], command: &[u8]) -> u64 {
        let zone = self.zone.as_ref().ok().and_then(Option::as_ref);
        let parts = hashed::Parts {
            file: self.options.file,
            user,
            zone: zone.map(Zone::name),
            fields: written,
            command,
            name: self.out.env.get(b"CRON_ID"),
        };
        let host =
            (self.out.env.policy().hash == policy::HashFrom::Host).then_some(self.options.seed);
        self.hash_seeds.next(&parts, host)
    }

    /// The five time fields (or the `@` special) from `fields_at`; `None` once their error is
    /// reported, with a hint when the line looks like a misspelt assignment. `hash`: the seed
    /// of its `H` fields.
    fn fields(
        &mut self,
        number: u32,
        line: &[u8],
        fields_at: usize,
        hash: u64,
    ) -> Option<schedule::Fields> {
        match schedule::parse_fields(line, fields_at, self.options.seed, hash) {
            Ok(parsed) => Some(parsed),
            Err(e) => {
                let message = if e.offset == line.iter().position(|&b| !is_blank(b)).unwrap_or(0)
                    && line[e.offset].is_ascii_alphabetic()
                {
                    format!("{} (or is this meant to be NAME=value?)", e.message)
                } else {
                    e.message
                };
                self.error(number, e.offset, message);
                None
            }
        }
    }

    /// A system file's user column after the time fields (a user's crontab has none), and the
    /// offset past it; `None` once a missing name is reported.
    fn user(&mut self, number: u32, line: &[u8], pos: usize) -> Option<(Option<Arc<[u8]>>, usize)> {
        if self.options.format == Format::User {
            return Some((None, pos));
        }
        let start = skip_blanks(line, pos);
        let end = word_end(line, start);
        if start == end {
            self.error(
                number,
                start,
                "missing user name after the time fields".to_string(),
            );
            return None;
        }
        // A system file's entries mostly run as one user: they share its name.
        let name = &line[start..end];
        let last = self.out.entries.last().and_then(|e| e.user.as_ref());
        let user = match last {
            Some(user) if user[..] == *name => Arc::clone(user),
            _ => Arc::from(name),
        };
        Some((Some(user), end))
    }

    /// Where the command starts, past the blanks after `pos`; `None` once it is reported
    /// missing, or starting with what is a sixth time field.
    fn command_start(&mut self, number: u32, line: &[u8], pos: usize) -> Option<usize> {
        let start = skip_blanks(line, pos);
        if start >= line.len() {
            self.error(number, start, "missing command".to_string());
            return None;
        }
        let command = &line[start..];
        // A first word `*` or `*/...`: a sixth time field (no look for the word's end).
        if command[0] == b'*' && command.get(1).is_none_or(|&b| b == b'/' || is_blank(b)) {
            self.error(
                number,
                start,
                "the command starts with a time field: cron has five time fields (minute hour \
                 day-of-month month day-of-week), not six"
                    .to_string(),
            );
            return None;
        }
        Some(start)
    }

    /// Counts an entry against the file's limits: all entries, `@every` ones and (in a user's
    /// crontab) clustered ones. `false` once an exceeded limit is reported: the entry is not
    /// loaded.
    fn count(&mut self, number: u32, when: &When) -> bool {
        let limits = self.options.limits;
        if self.out.entries.len() >= limits.max_entries {
            let max = limits.max_entries;
            self.error(
                number,
                0,
                format!("more than {max} entries in one file; entry not loaded"),
            );
            return false;
        }
        if matches!(when, When::Every(_)) {
            if self.every_count >= limits.max_every {
                let max = limits.max_every;
                self.error(
                    number,
                    0,
                    format!("more than {max} @every entries in one file; entry not loaded"),
                );
                return false;
            }
            self.every_count += 1;
        }
        // @reboot and @every run locally: only scheduled entries are claimed in the cluster.
        let clustered = matches!(when, When::Periodic(_)) && self.out.env.policy().clustered;
        if clustered && !self.options.privileged {
            if self.cluster_count >= limits.max_cluster {
                let max = limits.max_cluster;
                self.error(
                    number,
                    0,
                    format!(
                        "more than {max} CRON_CLUSTER entries in one crontab; entry not loaded \
                         (it would run on every host)"
                    ),
                );
                return false;
            }
            self.cluster_count += 1;
        }
        true
    }
}

fn skip_blanks(line: &[u8], mut pos: usize) -> usize {
    while pos < line.len() && is_blank(line[pos]) {
        pos += 1;
    }
    pos
}

fn word_end(line: &[u8], start: usize) -> usize {
    line[start..]
        .iter()
        .position(|&b| is_blank(b))
        .map_or(line.len(), |n| start + n)
}

#[cfg(test)]
mod tests;
