//! The history writer's answers to `cronctl history` and `cronctl logs`, as the daemon answers
//! its own requests: `OK` then the rows, or `ERROR message`, at most the query's
//! `max_answer` bytes. Pure: text from the rows the store gave.
//!
//! A table for people in the style of `cronctl list` (columns two blanks apart, the default one
//! within 100 columns, a count line), or one JSON object per line for programs. Everything a
//! user's job or crontab wrote (commands, places, output, the words of a reason) is shown with
//! its control characters spelled out: no job can write to the terminal of root reading its
//! history.

use std::fmt::Write;

use crond::history::{End, Gap, Mail, Outcome, Query, Reason, Result as Slot};
use crond::schedule::Zone;
use jiff::Timestamp;

use super::store::{Found, Listing, Stored};

/// The width the default table fits (`--wide` has no bound).
const TABLE_WIDTH: usize = 100;

/// The most characters of a result in the default table: `not run: ` and the longest reason's
/// code (`user-unknown`) whole; the words are in `--wide`.
const MAX_RESULT: usize = 21;

/// The fewest characters of the host the default table shows.
const MIN_HOST: usize = 8;

/// Room kept at the end of an answer for the lines that say what was left out.
const TAIL: usize = 200;

/// `ERROR message`, on one line.
pub fn error(message: &str) -> Vec<u8> {
    let one_line: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("ERROR {one_line}\n").into_bytes()
}

/// The answer when an entry's prefix names several: the candidates, as `cronctl run` lists
/// them.
pub fn ambiguous(prefix: &str, found: &Found) -> Vec<u8> {
    let Found::Several(candidates) = found else {
        return error("no such run");
    };
    let listed: Vec<String> = candidates
        .iter()
        .map(|(id, place)| {
            format!(
                "{} ({})",
                printable(id.as_bytes()),
                printable(place.as_bytes())
            )
        })
        .collect();
    error(&format!(
        "the id prefix {} names more than one entry: {}; give more digits",
        printable(prefix.as_bytes()),
        listed.join(", ")
    ))
}

/// A column of the history table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Run,
    Time,
    Entry,
    Result,
    Took,
    Host,
    User,
    Trigger,
    Slot,
    Cpu,
    Rss,
    Output,
    Mail,
    Place,
}

const NARROW: [Column; 6] = [
    Column::Run,
    Column::Time,
    Column::Entry,
    Column::Result,
    Column::Took,
    Column::Host,
];

const WIDE: [Column; 14] = [
    Column::Run,
    Column::Time,
    Column::Entry,
    Column::Result,
    Column::Took,
    Column::Host,
    Column::User,
    Column::Trigger,
    Column::Slot,
    Column::Cpu,
    Column::Rss,
    Column::Output,
    Column::Mail,
    Column::Place,
];

impl Column {
    fn header(self) -> &'static str {
        match self {
            Column::Run => "RUN",
            Column::Time => "TIME",
            Column::Entry => "ENTRY",
            Column::Result => "RESULT",
            Column::Took => "TOOK",
            Column::Host => "HOST",
            Column::User => "USER",
            Column::Trigger => "TRIGGER",
            Column::Slot => "SLOT",
            Column::Cpu => "CPU",
            Column::Rss => "RSS",
            Column::Output => "OUTPUT",
            Column::Mail => "MAIL",
            Column::Place => "PLACE",
        }
    }
}

/// A line of the answer: an outcome, or a gap (in time order among them).
#[derive(Debug, Clone, Copy)]
enum Line<'a> {
    Run(&'a Stored),
    Gap(&'a Gap),
}

/// The rows and the gaps, newest first: a gap stands where its end falls among the runs.
fn lines(listing: &Listing) -> Vec<Line<'_>> {
    let mut out = Vec::with_capacity(listing.rows.len() + listing.gaps.len());
    let mut gaps = listing.gaps.iter().peekable();
    for row in &listing.rows {
        while let Some((_, gap)) = gaps.next_if(|(_, g)| g.to_ms >= row.outcome.at_ms) {
            out.push(Line::Gap(gap));
        }
        out.push(Line::Run(row));
    }
    out.extend(gaps.map(|(_, g)| Line::Gap(g)));
    out
}

/// The answer to `history`.
pub fn history(query: &Query, listing: &Listing, zone: &Zone) -> Vec<u8> {
    let max = usize::try_from(query.max_answer).unwrap_or(usize::MAX);
    let lines = lines(listing);
    let mut out = String::from("OK\n");
    if query.json {
        json_lines(&mut out, &lines, zone, max);
    } else {
        let table = Table {
            columns: if query.wide { &WIDE[..] } else { &NARROW[..] },
            zone,
        };
        table.write(&mut out, &lines, max);
    }
    if let Some(note) = &listing.note {
        if query.json {
            let mut object = String::from("{");
            text(&mut object, "note", note);
            let _ = writeln!(out, "{object}}}");
        } else {
            let _ = writeln!(out, "({})", printable(note.as_bytes()));
        }
    }
    out.into_bytes()
}

/// One object per line, then `{"not_shown":N}` when the bound cut the list.
fn json_lines(out: &mut String, lines: &[Line<'_>], zone: &Zone, max: usize) {
    let mut cut = 0;
    for line in lines {
        let object = match line {
            Line::Run(s) => json_run(s, zone),
            Line::Gap(g) => json_gap(g, zone),
        };
        if cut > 0 || out.len() + object.len() + 1 > max.saturating_sub(TAIL) {
            cut += 1;
            continue;
        }
        out.push_str(&object);
        out.push('\n');
    }
    if cut > 0 {
        let _ = writeln!(out, "{{\"not_shown\":{cut}}}");
    }
}

/// The table of outcomes and its times' zone.
struct Table<'a> {
    columns: &'a [Column],
    zone: &'a Zone,
}

impl Table<'_> {
    fn wide(&self) -> bool {
        self.columns.len() == WIDE.len()
    }

    fn cell(&self, column: Column, s: &Stored) -> String {
        let o = &s.outcome;
        let ran = match &o.result {
            Slot::Ran(ran) => Some(ran),
            Slot::NotRun { .. } => None,
        };
        let dash = || "-".to_string();
        match column {
            Column::Run if s.run > 0 => s.run.to_string(),
            Column::Run => dash(),
            Column::Time => local(o.at_ms.div_euclid(1000), self.zone, "%Y-%m-%d %H:%M:%S"),
            Column::Entry => printable(o.entry.as_bytes()),
            Column::Result => result(o, self.wide()),
            Column::Took => ran.map_or_else(dash, |r| took(r.ended_ms - o.at_ms)),
            Column::Host => printable(o.host.as_bytes()),
            Column::User => printable(o.user.as_bytes()),
            Column::Trigger => o.trigger.code().to_string(),
            Column::Slot => o
                .slot
                .map_or_else(dash, |s| local(s, self.zone, "%Y-%m-%d %H:%M")),
            Column::Cpu => ran.map_or_else(dash, |r| {
                took(((r.user_us + r.system_us) / 1000).min(i64::MAX as u64) as i64)
            }),
            Column::Rss => ran.map_or_else(dash, |r| bytes(r.max_rss_kib.saturating_mul(1024))),
            Column::Output => ran.map_or_else(dash, |r| bytes(r.output_bytes)),
            Column::Mail => ran.map_or_else(dash, |r| match &r.mail {
                Mail::None => dash(),
                Mail::Sent => "sent".into(),
                Mail::Failed(words) => format!("failed: {}", printable(words.as_bytes())),
            }),
            Column::Place => printable(o.place.as_bytes()),
        }
    }

    fn row(&self, s: &Stored) -> Vec<String> {
        self.columns.iter().map(|&c| self.cell(c, s)).collect()
    }

    /// Each column's width: its widest cell; in the default table the result is cut to
    /// [`MAX_RESULT`] and the host to what is left of [`TABLE_WIDTH`].
    fn widths(&self, lines: &[Line<'_>]) -> Vec<usize> {
        let mut widths: Vec<usize> = self
            .columns
            .iter()
            .map(|c| c.header().chars().count())
            .collect();
        for line in lines {
            if let Line::Run(s) = line {
                for (w, cell) in widths.iter_mut().zip(self.row(s)) {
                    *w = (*w).max(cell.chars().count());
                }
            }
        }
        if !self.wide() {
            let at = |c: Column| self.columns.iter().position(|&x| x == c).unwrap_or(0);
            let (result, host) = (at(Column::Result), at(Column::Host));
            widths[result] = widths[result].min(MAX_RESULT);
            let fixed: usize = widths[..host].iter().map(|w| w + 2).sum();
            widths[host] = widths[host].min(TABLE_WIDTH.saturating_sub(fixed).max(MIN_HOST));
        }
        widths
    }

    /// The header and the lines within `max` bytes, then what was left out and the count.
    fn write(&self, out: &mut String, lines: &[Line<'_>], max: usize) {
        if lines.is_empty() {
            out.push_str("0 outcomes listed.\n");
            return;
        }
        let widths = self.widths(lines);
        let header: Vec<String> = self.columns.iter().map(|c| c.header().into()).collect();
        let (mut runs, mut gaps, mut left_out) = (0usize, 0usize, 0usize);
        let mut text = self.line(&header, &widths);
        for line in std::iter::once(None).chain(lines.iter().map(Some)) {
            if let Some(line) = line {
                text = match line {
                    Line::Run(s) => self.line(&self.row(s), &widths),
                    Line::Gap(g) => gap_line(g),
                };
            }
            if left_out > 0 || out.len() + text.len() + 1 > max.saturating_sub(TAIL) {
                left_out += usize::from(matches!(line, Some(Line::Run(_))));
                continue;
            }
            out.push_str(&text);
            out.push('\n');
            match line {
                Some(Line::Run(_)) => runs += 1,
                Some(Line::Gap(_)) => gaps += 1,
                None => {}
            }
        }
        if left_out > 0 {
            let _ = writeln!(
                out,
                "({left_out} more outcomes not shown: pass an entry, --since or --limit to narrow the list)"
            );
        }
        out.push('\n');
        out.push_str(&crond::words::count(runs as u64, "outcome", "outcomes"));
        out.push_str(" listed");
        if gaps > 0 {
            let _ = write!(out, ", {}", crond::words::count(gaps as u64, "gap", "gaps"));
        }
        out.push('.');
        if !self.wide() {
            out.push_str(" Pass --wide for more columns.");
        }
        out.push('\n');
    }

    /// Cells padded to their column's width (the last not), cut with `…` where wider.
    fn line(&self, cells: &[String], widths: &[usize]) -> String {
        let mut line = String::new();
        for (c, cell) in cells.iter().enumerate() {
            let cell = cut(cell, widths[c]);
            if c + 1 == cells.len() {
                line.push_str(&cell);
            } else {
                let _ = write!(line, "{cell:<w$}  ", w = widths[c]);
            }
        }
        line.trim_end().to_string()
    }
}

/// `-- 12 outcomes not recorded: WHY --`.
pub(crate) fn gap_line(g: &Gap) -> String {
    let why = printable(g.why.as_bytes());
    match g.lost {
        0 => format!("-- outcomes not recorded: {why} --"),
        n => format!(
            "-- {} not recorded: {why} --",
            crond::words::count(n, "outcome", "outcomes")
        ),
    }
}

/// What became of the slot: `ok`, `exit 3`, `SIGKILL`, `timeout`, `not run: overlap` (with
/// the words after it in the wide table).
fn result(o: &Outcome, wide: bool) -> String {
    let said = said(o, wide);
    match o.attempt {
        Some(a) => format!("{said} (attempt {}/{})", a.number, a.of),
        None => said,
    }
}

/// What [`result`] says of the run or slot itself.
fn said(o: &Outcome, wide: bool) -> String {
    match &o.result {
        Slot::NotRun { reason, words } if wide && !words.is_empty() => {
            format!(
                "not run: {}: {}",
                reason.code(),
                printable(words.as_bytes())
            )
        }
        Slot::NotRun {
            reason: Reason::Unknown,
            ..
        } => "outcome unknown".into(),
        Slot::NotRun { reason, .. } => format!("not run: {}", reason.code()),
        Slot::Ran(_) => status(o),
    }
}

/// The status word of journal fields and `--json`: `ok`, `exit N`, `SIGNAME`, `timeout`,
/// `not-run`.
pub fn status(o: &Outcome) -> String {
    match &o.result {
        Slot::NotRun {
            reason: Reason::Unknown,
            ..
        } => "unknown".into(),
        Slot::NotRun { .. } => "not-run".into(),
        Slot::Ran(r) if r.timed_out => "timeout".into(),
        Slot::Ran(r) => match r.end {
            End::Exited(0) => "ok".into(),
            End::Exited(code) => format!("exit {code}"),
            End::Signaled(signal) => signal_name(signal),
        },
    }
}

/// Linux's signal names, by number.
const SIGNALS: [&str; 31] = [
    "SIGHUP",
    "SIGINT",
    "SIGQUIT",
    "SIGILL",
    "SIGTRAP",
    "SIGABRT",
    "SIGBUS",
    "SIGFPE",
    "SIGKILL",
    "SIGUSR1",
    "SIGSEGV",
    "SIGUSR2",
    "SIGPIPE",
    "SIGALRM",
    "SIGTERM",
    "SIGSTKFLT",
    "SIGCHLD",
    "SIGCONT",
    "SIGSTOP",
    "SIGTSTP",
    "SIGTTIN",
    "SIGTTOU",
    "SIGURG",
    "SIGXCPU",
    "SIGXFSZ",
    "SIGVTALRM",
    "SIGPROF",
    "SIGWINCH",
    "SIGIO",
    "SIGPWR",
    "SIGSYS",
];

/// `SIGKILL`, or `signal 42` for a number with no name.
pub fn signal_name(signal: i32) -> String {
    usize::try_from(signal - 1)
        .ok()
        .and_then(|i| SIGNALS.get(i))
        .map_or_else(|| format!("signal {signal}"), |s| s.to_string())
}

/// A duration as `cronctl list` writes it: `35ms`, `2s`, `3m05s`, `2h10m`, `1d4h`.
pub fn took(ms: i64) -> String {
    let ms = ms.max(0);
    let s = ms / 1000;
    match s {
        _ if ms < 1000 => format!("{ms}ms"),
        0..60 if ms < 10_000 => format!("{}.{}s", s, ms % 1000 / 100),
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// A size in bytes: `512B`, `1.5K`, `12M`, `2.0G` (binary multiples).
fn bytes(n: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
    for (size, unit) in UNITS {
        if n >= size {
            let tenths = n * 10 / size;
            return if tenths < 100 {
                format!("{}.{}{unit}", tenths / 10, tenths % 10)
            } else {
                format!("{}{unit}", n / size)
            };
        }
    }
    format!("{n}B")
}

fn instant(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// A time in the query's zone.
fn local(s: i64, zone: &Zone, format: &str) -> String {
    instant(s)
        .to_zoned(zone.time_zone().clone())
        .strftime(format)
        .to_string()
}

fn rfc3339_ms(ms: i64, zone: &Zone) -> String {
    zone.format_rfc3339(instant(ms.div_euclid(1000)))
}

/// Bytes as text for a terminal: not UTF-8 as U+FFFD, control characters as `\xNN`,
/// bidirectional and invisible format characters as `\u{NNNN}` (as `cronctl list` shows a
/// crontab's text).
pub(crate) fn printable(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for c in String::from_utf8_lossy(bytes).chars() {
        if c.is_control() {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else if crond::words::is_hidden_control(c) {
            let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// At most `n` characters, the last of them `…` when cut.
fn cut(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let mut out: String = text.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn key(out: &mut String, name: &str) {
    if !out.ends_with('{') {
        out.push(',');
    }
    let _ = write!(out, "\"{name}\":");
}

fn text(out: &mut String, name: &str, value: &str) {
    key(out, name);
    crond::log::json::string(out, value);
}

fn number(out: &mut String, name: &str, value: Option<i64>) {
    key(out, name);
    match value {
        Some(n) => {
            let _ = write!(out, "{n}");
        }
        None => out.push_str("null"),
    }
}

fn optional_text(out: &mut String, name: &str, value: Option<&str>) {
    match value {
        Some(v) => text(out, name, v),
        None => {
            key(out, name);
            out.push_str("null");
        }
    }
}

/// An outcome not stored (`run` null) in JSON, as [`json_run`] gives a stored one: what
/// `CRON_WEBHOOK` posts.
pub fn json_outcome(outcome: &Outcome, zone: &Zone) -> String {
    let stored = Stored {
        run: 0,
        outcome: outcome.clone(),
    };
    json_run(&stored, zone)
}

/// One outcome in JSON (cronctl.8 lists the keys): everything recorded but the output.
fn json_run(s: &Stored, zone: &Zone) -> String {
    let o = &s.outcome;
    let mut out = String::with_capacity(512);
    out.push('{');
    // Run 0: a run of a cluster entry on another host, kept in the cluster's database only.
    number(&mut out, "run", Some(s.run).filter(|&run| run > 0));
    text(&mut out, "entry", &o.entry);
    text(&mut out, "place", &o.place);
    text(&mut out, "user", &o.user);
    number(&mut out, "owner_uid", o.owner_uid.map(i64::from));
    text(&mut out, "command", &o.command);
    text(&mut out, "trigger", o.trigger.code());
    if let Some(a) = o.attempt {
        number(&mut out, "attempt", Some(i64::from(a.number)));
        number(&mut out, "attempts", Some(i64::from(a.of)));
    }
    optional_text(
        &mut out,
        "slot",
        o.slot.map(|s| zone.format_rfc3339(instant(s))).as_deref(),
    );
    text(&mut out, "host", &o.host);
    if let Some(c) = &o.cluster {
        text(&mut out, "cluster", &c.cluster);
        text(&mut out, "cluster_entry", &c.entry.to_string());
    }
    text(&mut out, "time", &rfc3339_ms(o.at_ms, zone));
    number(&mut out, "at_ms", Some(o.at_ms));
    text(&mut out, "status", &status(o));
    let _ = write!(out, ",\"failed\":{}", o.failed());
    match &o.result {
        Slot::NotRun { reason, words } => {
            text(&mut out, "reason", reason.code());
            text(&mut out, "words", words);
        }
        Slot::Ran(r) => {
            let (exit, signal) = match r.end {
                End::Exited(code) => (Some(i64::from(code)), None),
                End::Signaled(signal) => (None, Some(signal_name(signal))),
            };
            number(&mut out, "ended_ms", Some(r.ended_ms));
            number(&mut out, "duration_ms", Some(r.ended_ms - o.at_ms));
            number(&mut out, "exit", exit);
            optional_text(&mut out, "signal", signal.as_deref());
            let _ = write!(out, ",\"timed_out\":{}", r.timed_out);
            let count = |n: u64| Some(i64::try_from(n).unwrap_or(i64::MAX));
            number(&mut out, "user_us", count(r.user_us));
            number(&mut out, "system_us", count(r.system_us));
            number(&mut out, "max_rss_kib", count(r.max_rss_kib));
            number(&mut out, "output_bytes", count(r.output_bytes));
            let (mail, words) = match &r.mail {
                Mail::None => (None, None),
                Mail::Sent => (Some("sent"), None),
                Mail::Failed(words) => (Some("failed"), Some(words.as_str())),
            };
            optional_text(&mut out, "mail", mail);
            optional_text(&mut out, "mail_words", words);
        }
    }
    out.push('}');
    out
}

/// A gap in JSON: `gap` (true), `from`, `to`, `lost` (0: not known) and `why`.
fn json_gap(g: &Gap, zone: &Zone) -> String {
    let mut out = String::from("{\"gap\":true");
    text(&mut out, "from", &rfc3339_ms(g.from_ms, zone));
    text(&mut out, "to", &rfc3339_ms(g.to_ms, zone));
    number(&mut out, "from_ms", Some(g.from_ms));
    number(&mut out, "to_ms", Some(g.to_ms));
    number(
        &mut out,
        "lost",
        Some(i64::try_from(g.lost).unwrap_or(i64::MAX)),
    );
    text(&mut out, "why", &g.why);
    out.push('}');
    out
}

/// The answer to `logs`: the run's kept output (its head, then `[... N bytes not kept ...]`
/// and its tail when the middle was not kept), control bytes spelled out unless `raw`; or why
/// there is none.
pub fn logs(query: &Query, entry: &str, run: Option<&Stored>, raw: bool) -> Vec<u8> {
    let Some(stored) = run else {
        return error("no such run");
    };
    let ran = match &stored.outcome.result {
        Slot::Ran(ran) => ran,
        Slot::NotRun { reason, words } => {
            let why = match words.as_str() {
                "" => reason.code().to_string(),
                words => format!("{}: {}", reason.code(), printable(words.as_bytes())),
            };
            return error(&format!(
                "run {} of {} did not run: {why}",
                stored.run,
                printable(entry.as_bytes())
            ));
        }
    };
    let mut kept = ran.head.clone();
    if !ran.tail.is_empty() {
        if !kept.is_empty() && !kept.ends_with(b"\n") {
            kept.push(b'\n');
        }
        let middle = ran
            .output_bytes
            .saturating_sub((ran.head.len() + ran.tail.len()) as u64);
        kept.extend_from_slice(format!("[... {middle} bytes not kept ...]\n").as_bytes());
        kept.extend_from_slice(&ran.tail);
    }
    let body = if raw { kept } else { spelled_out(&kept) };
    let max = usize::try_from(query.max_answer)
        .unwrap_or(usize::MAX)
        .saturating_sub(TAIL);
    let mut out = b"OK\n".to_vec();
    if body.len() <= max.saturating_sub(out.len()) {
        out.extend_from_slice(&body);
        return out;
    }
    let room = max.saturating_sub(out.len());
    out.extend_from_slice(&body[..room]);
    out.extend_from_slice(
        format!("\n[... {} more bytes not shown ...]\n", body.len() - room).as_bytes(),
    );
    out
}

#[cfg(test)]
mod tests;

/// A run's output as a terminal may show it: C0 controls and DEL spelled out as `crontab -l`
/// spells them (`\033`), characters that change how a terminal shows the text around them
/// without showing themselves (C1, bidirectional controls, invisible format characters) as
/// `\u{NNNN}`, and bytes 0x80 to 0x9F that are no character (C1 in an 8-bit terminal) as
/// `\xNN`; any other byte as it is.
fn spelled_out(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if !c.is_ascii() && crond::words::is_hidden_control(c) {
                out.extend_from_slice(format!("\\u{{{:04x}}}", u32::from(c)).as_bytes());
            } else {
                out.extend_from_slice(c.encode_utf8(&mut [0; 4]).as_bytes());
            }
        }
        for &b in chunk.invalid() {
            match b {
                0x80..=0x9f => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
                _ => out.push(b),
            }
        }
    }
    crond::protect_list(&out)
}
