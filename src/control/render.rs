//! The answers to `list` and `status`: a table for people (as `systemctl list-timers`), or one
//! JSON object per line for programs. Pure: text from a snapshot.
//!
//! Everything a crontab says (commands, schedules, file names) is shown with its control
//! characters escaped: a user's crontab can't write to the terminal of root running
//! `cronctl list`.

use std::fmt::Write;

use jiff::Timestamp;

use super::{EntryView, Format, NotLoaded, Peer, Request, Snapshot, StatusView};
use crate::crontab::policy::{Missed, Overlap};
use crate::job::report::{End, Said};
use crate::log::json;
use crate::metrics::{LastRun, Outcome};
use crate::schedule::Zone;

/// The width the default table fits (`--wide` has no bound).
const TABLE_WIDTH: usize = 100;

/// The fewest characters of a command the default table shows, however long the other cells.
const MIN_COMMAND: usize = 8;

/// The most characters of a file's place and of a user name in the default table (cut with
/// `…`, the end of a place kept).
const MAX_PLACE: usize = 32;
const MAX_USER: usize = 12;

/// Room kept at the end of an answer for the line that says what was left out.
const TAIL: usize = 200;

/// The answer to a `list`, `status` or `show` (a `run` is answered by the daemon once it has
/// started the run: `ran_answer`), at most `peer.max_answer()` bytes.
pub(crate) fn render(request: &Request, snapshot: &Snapshot, peer: &Peer) -> Vec<u8> {
    let max = peer.max_answer();
    match request {
        Request::List { format, wide, .. } => list(snapshot, *format, *wide, max),
        Request::Status { format } => status(&snapshot.status, *format),
        Request::Show { target, format } => match super::find(snapshot, target) {
            Ok(entry) => super::show::show(entry, &snapshot.status, *format),
            Err(_) if !snapshot.not_loaded.is_empty() => {
                super::show::not_loaded(&snapshot.not_loaded, *format)
            }
            Err(answer) => return answer,
        },
        Request::Run { .. } | Request::Pause { .. } => {
            return super::error_answer("a run or a pause is answered by the daemon");
        }
        Request::History(_) | Request::Logs(_) => {
            return super::error_answer("history is answered by the history writer");
        }
    }
    .into_bytes()
}

/// A list: the snapshot's entries (its pattern applied when it was made) sorted by their next
/// run (those with none last), then what was left out, counted.
fn list(snapshot: &Snapshot, format: Format, wide: bool, max: usize) -> String {
    let mut shown: Vec<&EntryView> = snapshot.entries.iter().collect();
    shown.sort_by(|a, b| {
        (a.next_s.is_none(), a.next_s, &a.tab, a.line).cmp(&(
            b.next_s.is_none(),
            b.next_s,
            &b.tab,
            b.line,
        ))
    });
    let mut out = String::from("OK\n");
    if format == Format::Table {
        let columns = if wide { &WIDE[..] } else { &NARROW[..] };
        let view = Table {
            columns,
            now_s: snapshot.status.now_ms.div_euclid(1000),
            zone: &snapshot.status.zone,
        };
        let rows: Vec<Row<'_>> = (shown.iter().map(|&e| Row::Entry(e)))
            .chain(snapshot.not_loaded.iter().map(Row::NotLoaded))
            .collect();
        view.write(&mut out, &rows, snapshot.omitted, max);
        return out;
    }
    let mut cut = 0;
    let objects =
        (shown.into_iter().map(json_entry)).chain(snapshot.not_loaded.iter().map(json_not_loaded));
    for object in objects {
        if cut > 0 || out.len() + object.len() + 1 > max.saturating_sub(TAIL) {
            cut += 1;
            continue;
        }
        out.push_str(&object);
        out.push('\n');
    }
    let left_out = cut + snapshot.omitted;
    if left_out > 0 {
        let _ = writeln!(out, "{{\"not_shown\":{left_out}}}");
    }
    out
}

/// A row of the table: an entry, or what did not load.
#[derive(Debug, Clone, Copy)]
enum Row<'a> {
    Entry(&'a EntryView),
    NotLoaded(&'a NotLoaded),
}

/// A column of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Next,
    Left,
    Last,
    LastStart,
    Result,
    /// Why the last run did not run.
    Why,
    Id,
    Entry,
    User,
    Schedule,
    Tz,
    Took,
    Running,
    Policy,
    Cluster,
    Command,
}

/// The default table's columns (it fits [`TABLE_WIDTH`]), and `--wide`'s.
const NARROW: [Column; 8] = [
    Column::Next,
    Column::Left,
    Column::Last,
    Column::Result,
    Column::Id,
    Column::Entry,
    Column::User,
    Column::Command,
];
const WIDE: [Column; 16] = [
    Column::Next,
    Column::Left,
    Column::Last,
    Column::LastStart,
    Column::Result,
    Column::Why,
    Column::Id,
    Column::Entry,
    Column::User,
    Column::Schedule,
    Column::Tz,
    Column::Took,
    Column::Running,
    Column::Policy,
    Column::Cluster,
    Column::Command,
];

impl Column {
    fn header(self) -> &'static str {
        match self {
            Column::Next => "NEXT",
            Column::Left => "LEFT",
            Column::Last => "LAST",
            Column::LastStart => "LAST START",
            Column::Result => "RESULT",
            Column::Why => "WHY",
            Column::Id => "ID",
            Column::Entry => "ENTRY",
            Column::User => "USER",
            Column::Schedule => "SCHEDULE",
            Column::Tz => "TZ",
            Column::Took => "TOOK",
            Column::Running => "RUNNING",
            Column::Policy => "POLICY",
            Column::Cluster => "CLUSTER",
            Column::Command => "COMMAND",
        }
    }
}

/// A table of entries: its columns, and the instant and zone its times are shown against (the
/// host's: an entry's own zone is the TZ column's).
struct Table<'a> {
    columns: &'a [Column],
    now_s: i64,
    zone: &'a Zone,
}

impl Table<'_> {
    fn cell(&self, column: Column, e: &EntryView) -> String {
        let dash = || "-".to_string();
        match column {
            Column::Next => e.next_s.map_or_else(dash, |s| host_time(s, self.zone)),
            // A paused entry's next run does not start.
            Column::Left if e.paused => "paused".to_string(),
            Column::Left => e.next_s.map_or_else(dash, |s| span(s - self.now_s)),
            Column::Last => e
                .last()
                .map_or_else(dash, |l| format!("{} ago", span(self.now_s - started(l)))),
            Column::LastStart => e
                .last()
                .map_or_else(dash, |l| host_time(started(l), self.zone)),
            Column::Result => result(e),
            Column::Why => e
                .last()
                .and_then(why_not_run)
                .map_or_else(dash, |reason| printable(reason.as_bytes())),
            Column::Id => e.id.to_string(),
            Column::Entry => printable(e.place().as_bytes()),
            Column::User => printable(&e.user),
            Column::Schedule => printable(&e.schedule),
            Column::Tz => e
                .cron_tz
                .as_deref()
                .filter(|z| *z != self.zone.name())
                .map_or_else(dash, |z| printable(z.as_bytes())),
            Column::Took => e.last().map_or_else(dash, |l| took(l.duration_ms)),
            Column::Running => match e.running.as_slice() {
                [] => dash(),
                pids => pids
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(","),
            },
            Column::Policy => match e.policy.to_string() {
                p if p.is_empty() => dash(),
                p => p.replace(' ', ","),
            },
            Column::Cluster => e.cluster.as_ref().map_or_else(dash, |(name, key)| {
                format!("{}/{key}", printable(name.as_bytes()))
            }),
            Column::Command => printable(&e.command),
        }
    }

    fn row(&self, row: Row<'_>) -> Vec<String> {
        match row {
            Row::Entry(e) => self.columns.iter().map(|&c| self.cell(c, e)).collect(),
            Row::NotLoaded(n) => self
                .columns
                .iter()
                .map(|&c| match c {
                    Column::Result if n.orphan => "user unknown".to_string(),
                    Column::Result => "not loaded".to_string(),
                    Column::Entry => printable(n.place().as_bytes()),
                    Column::User => n.user.as_deref().map_or_else(|| "-".into(), printable),
                    Column::Command => format!("not loaded: {}", printable(n.reason.as_bytes())),
                    _ => "-".to_string(),
                })
                .collect(),
        }
    }

    /// Each column's width: its widest cell; in the default table the place and the user are
    /// cut to leave the command room within [`TABLE_WIDTH`].
    fn widths(&self, entries: &[Row<'_>]) -> Vec<usize> {
        let mut widths: Vec<usize> = self
            .columns
            .iter()
            .map(|c| c.header().chars().count())
            .collect();
        for &e in entries {
            for (w, cell) in widths.iter_mut().zip(self.row(e)) {
                *w = (*w).max(cell.chars().count());
            }
        }
        if self.columns.len() == WIDE.len() {
            return widths;
        }
        let at = |c: Column| self.columns.iter().position(|&x| x == c);
        let (Some(entry), Some(user), Some(command)) =
            (at(Column::Entry), at(Column::User), at(Column::Command))
        else {
            return widths;
        };
        widths[user] = widths[user].min(MAX_USER);
        let fixed: usize = widths.iter().map(|w| w + 2).sum::<usize>()
            - (widths[entry] + 2)
            - (widths[command] + 2);
        let room = TABLE_WIDTH.saturating_sub(fixed + 2);
        // The place and the command share what is left, the place at most half of it.
        let entry_room = (room / 2)
            .max(room.saturating_sub(widths[command]))
            .min(MAX_PLACE);
        let entry_room = entry_room.min(room.saturating_sub(MIN_COMMAND)).max(12);
        widths[entry] = widths[entry].min(entry_room);
        widths[command] = TABLE_WIDTH.saturating_sub(fixed + widths[entry] + 2).max(1);
        widths
    }

    /// The header and the rows, cells padded to their column's width (the last not), cut with
    /// `…` where wider; rows past `max` bytes left out and counted with the `omitted` ones;
    /// then the count. Each row is made twice (once for the widths, once to be written)
    /// rather than kept: a list of 70,000 entries holds no 900,000 cells at once.
    fn write(&self, out: &mut String, entries: &[Row<'_>], omitted: usize, max: usize) {
        if entries.is_empty() && omitted == 0 {
            out.push_str("0 entries listed.\n");
            return;
        }
        let widths = self.widths(entries);
        let header: Vec<String> = self.columns.iter().map(|c| c.header().into()).collect();
        let (mut shown, mut not_loaded) = (0, 0);
        for (i, row) in std::iter::once(header)
            .chain(entries.iter().map(|&e| self.row(e)))
            .enumerate()
        {
            let mut line = String::new();
            for (c, cell) in row.iter().enumerate() {
                let cell = match self.columns[c] {
                    Column::Entry => cut_front(cell, widths[c]),
                    _ => cut(cell, widths[c]),
                };
                if c + 1 == row.len() {
                    line.push_str(&cell);
                } else {
                    let _ = write!(line, "{cell:<w$}  ", w = widths[c]);
                }
            }
            let line = line.trim_end();
            if out.len() + line.len() + 1 > max.saturating_sub(TAIL) {
                break;
            }
            out.push_str(line);
            out.push('\n');
            match i.checked_sub(1).map(|i| entries[i]) {
                Some(Row::Entry(_)) => shown += 1,
                Some(Row::NotLoaded(_)) => not_loaded += 1,
                None => {}
            }
        }
        let left_out = entries.len() - shown - not_loaded + omitted;
        if left_out > 0 {
            let _ = writeln!(
                out,
                "({left_out} more entries not shown: name a part of FILE:LINE or a user to narrow the list)"
            );
        }
        out.push('\n');
        let _ = match shown {
            1 => write!(out, "1 entry listed"),
            n => write!(out, "{n} entries listed"),
        };
        let _ = match not_loaded {
            0 => write!(out, "."),
            1 => write!(out, ", 1 not loaded."),
            n => write!(out, ", {n} not loaded."),
        };
        if self.columns.len() != WIDE.len() {
            out.push_str(" Pass --wide for more columns.");
        }
        out.push('\n');
    }
}

/// What became of an entry's last run, in a word or two (`running` while a job of it runs).
fn result(e: &EntryView) -> String {
    match (e.running.is_empty(), e.last()) {
        (false, _) => "running".to_string(),
        (true, Some(l)) => run_result(l),
        (true, None) => "-".to_string(),
    }
}

/// What became of a run: `ok`, `exit 3`, `SIGKILL`, `timeout`, `not run` (why:
/// [`why_not_run`]), or `failed` when its job child said nothing more.
pub(super) fn run_result(l: &LastRun) -> String {
    match (l.outcome, &l.said) {
        (Outcome::Succeeded, _) => "ok".to_string(),
        (Outcome::TimedOut, _) => "timeout".to_string(),
        (Outcome::Failed, Some(Said::Ended { end, .. })) => match end {
            End::Exited(code) => format!("exit {code}"),
            End::Signaled(signal) => signal_name(*signal),
        },
        (Outcome::Failed, Some(Said::NotStarted { .. })) => "not run".to_string(),
        (Outcome::Failed, _) => "failed".to_string(),
    }
}

/// Why nothing of a run ran, as its job child said (an unknown user, a PAM refusal, a shell
/// that could not start).
pub(super) fn why_not_run(l: &LastRun) -> Option<&str> {
    match &l.said {
        Some(Said::NotStarted { reason, .. }) => Some(reason),
        _ => None,
    }
}

/// `SIGKILL`, or `signal 42` for a number with no name.
fn signal_name(signal: i32) -> String {
    super::report::short_signal_name(signal)
        .map_or_else(|| format!("signal {signal}"), str::to_string)
}

/// A time in the host's zone to the minute (`2026-11-27 10:00`), to the second when it is not
/// on one (an `@every` entry's).
pub(super) fn host_time(s: i64, zone: &Zone) -> String {
    let format = if s.rem_euclid(60) == 0 {
        "%Y-%m-%d %H:%M"
    } else {
        "%Y-%m-%d %H:%M:%S"
    };
    instant(s)
        .to_zoned(zone.time_zone().clone())
        .strftime(format)
        .to_string()
}

/// A span of time as `systemctl list-timers` writes it: `45s`, `17min`, `3h 5min`, `2d 4h`
/// (a span below zero, a run due now, is `0s`).
pub(super) fn span(s: i64) -> String {
    let s = s.max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}min", s / 60),
        3600..86_400 if s % 3600 < 60 => format!("{}h", s / 3600),
        3600..86_400 => format!("{}h {}min", s / 3600, s % 3600 / 60),
        _ if s % 86_400 < 3600 => format!("{}d", s / 86_400),
        _ => format!("{}d {}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// What did not load, in JSON: `entry`, `file`, `line` (`null` for the whole file), `user`,
/// and `not_loaded` (why), beside `"id":null`.
pub(super) fn json_not_loaded(n: &NotLoaded) -> String {
    let mut out = String::from("{\"id\":null");
    text(&mut out, "entry", n.place().as_bytes());
    text(&mut out, "file", n.tab.as_bytes());
    match n.line {
        Some(line) => {
            let _ = write!(out, ",\"line\":{line}");
        }
        None => out.push_str(",\"line\":null"),
    }
    match &n.user {
        Some(user) => text(&mut out, "user", user),
        None => out.push_str(",\"user\":null"),
    }
    let _ = write!(out, ",\"user_unknown\":{}", n.orphan);
    text(&mut out, "not_loaded", n.reason.as_bytes());
    out.push('}');
    out
}

pub(super) fn json_entry(e: &EntryView) -> String {
    let mut out = String::with_capacity(512);
    out.push('{');
    let _ = write!(out, "\"id\":\"{}\"", e.id);
    text(&mut out, "entry", e.place().as_bytes());
    text(&mut out, "file", e.tab.as_bytes());
    let _ = write!(out, ",\"line\":{}", e.line);
    text(&mut out, "user", &e.user);
    text(&mut out, "schedule", &e.schedule);
    match &e.cron_tz {
        Some(z) => text(&mut out, "cron_tz", z.as_bytes()),
        None => out.push_str(",\"cron_tz\":null"),
    }
    text(&mut out, "zone", e.zone.name().as_bytes());
    match e.next_s {
        Some(s) => {
            text(&mut out, "next", rfc3339(s, &e.zone).as_bytes());
            text(&mut out, "next_utc", rfc3339(s, &Zone::utc()).as_bytes());
        }
        None => out.push_str(",\"next\":null,\"next_utc\":null"),
    }
    match e.last() {
        Some(l) => {
            text(&mut out, "last", rfc3339(started(l), &e.zone).as_bytes());
            text(&mut out, "last_result", outcome(l.outcome).as_bytes());
            let _ = write!(out, ",\"last_duration_ms\":{}", l.duration_ms);
            json_end(&mut out, "last_", l);
        }
        // The keys of its end come with a last run only (a list of many entries that never
        // ran stays small).
        None => out.push_str(",\"last\":null,\"last_result\":null,\"last_duration_ms\":null"),
    }
    let pids: Vec<String> = e.running.iter().map(|p| p.to_string()).collect();
    let _ = write!(out, ",\"running\":[{}]", pids.join(","));
    let _ = write!(out, ",\"paused\":{}", e.paused);
    let overlap = match e.policy.overlap {
        Overlap::Allow => "allow",
        Overlap::Skip => "skip",
        Overlap::Queue => "queue",
    };
    text(&mut out, "overlap", overlap.as_bytes());
    let missed = match e.policy.missed {
        Missed::Skip => "skip",
        Missed::Once => "once",
    };
    text(&mut out, "missed", missed.as_bytes());
    match e.policy.timeout_s {
        Some(s) => {
            let _ = write!(out, ",\"timeout_s\":{s}");
        }
        None => out.push_str(",\"timeout_s\":null"),
    }
    let _ = write!(out, ",\"cluster\":{}", e.policy.clustered);
    // Only a cluster entry has them (the list of a large host stays within its bound).
    if let Some((name, key)) = &e.cluster {
        text(&mut out, "cluster_name", name.as_bytes());
        text(&mut out, "cluster_id", key.to_string().as_bytes());
    }
    text(&mut out, "command", &e.command);
    out.push('}');
    out
}

/// A run's end in JSON, each key after `prefix`: `exit` (its status), `signal` (the name of
/// the one that killed it) and `reason` (why nothing of it ran), `null` when unknown or not so.
pub(super) fn json_end(out: &mut String, prefix: &str, l: &LastRun) {
    let (exit, signal) = match &l.said {
        Some(Said::Ended {
            end: End::Exited(code),
            ..
        }) => (Some(*code), None),
        Some(Said::Ended {
            end: End::Signaled(signal),
            ..
        }) => (None, Some(signal_name(*signal))),
        _ => (None, None),
    };
    match exit {
        Some(code) => {
            let _ = write!(out, ",\"{prefix}exit\":{code}");
        }
        None => {
            let _ = write!(out, ",\"{prefix}exit\":null");
        }
    }
    match signal {
        Some(name) => text(out, &format!("{prefix}signal"), name.as_bytes()),
        None => {
            let _ = write!(out, ",\"{prefix}signal\":null");
        }
    }
    match why_not_run(l) {
        Some(reason) => text(out, &format!("{prefix}reason"), reason.as_bytes()),
        None => {
            let _ = write!(out, ",\"{prefix}reason\":null");
        }
    }
}

fn status(s: &StatusView, format: Format) -> String {
    let up_s = (s.now_ms - s.started_ms).max(0) / 1000;
    let now_s = s.now_ms.div_euclid(1000);
    let whose = if s.own_only { "yours" } else { "all" };
    match format {
        Format::Table => format!(
            "OK\ncrond {}, pid {}\nup {} (since {})\nentries: {} ({whose})\njobs running: {} \
             ({whose})\nclock: {} ({})\nzone: {}\n",
            s.version,
            s.pid,
            took(up_s * 1000),
            rfc3339(s.started_ms.div_euclid(1000), &s.zone),
            s.entries,
            s.running,
            rfc3339(now_s, &s.zone),
            rfc3339(now_s, &Zone::utc()),
            s.zone.name()
        ),
        Format::Json => {
            let mut out = String::from("OK\n{");
            text(&mut out, "version", s.version.as_bytes());
            let _ = write!(out, ",\"pid\":{},\"uptime_s\":{up_s}", s.pid);
            text(
                &mut out,
                "started",
                rfc3339(s.started_ms.div_euclid(1000), &s.zone).as_bytes(),
            );
            let _ = write!(
                out,
                ",\"entries\":{},\"running\":{},\"own_only\":{}",
                s.entries, s.running, s.own_only
            );
            text(&mut out, "clock", rfc3339(now_s, &s.zone).as_bytes());
            text(
                &mut out,
                "clock_utc",
                rfc3339(now_s, &Zone::utc()).as_bytes(),
            );
            text(&mut out, "zone", s.zone.name().as_bytes());
            out.push_str("}\n");
            out
        }
    }
}

/// `,"name":"value"` (no comma right after `{`).
pub(super) fn text(out: &mut String, name: &str, value: &[u8]) {
    if !out.ends_with('{') {
        out.push(',');
    }
    let _ = write!(out, "\"{name}\":");
    json::string(out, &String::from_utf8_lossy(value));
}

/// When a last run started, epoch seconds.
pub(super) fn started(l: &LastRun) -> i64 {
    l.started_ms.div_euclid(1000)
}

pub(super) fn outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Succeeded => "ok",
        Outcome::Failed => "failed",
        Outcome::TimedOut => "timeout",
    }
}

/// `850ms`, `12s`, `3m05s`, `2h10m`, `3d4h`.
pub(super) fn took(ms: i64) -> String {
    let s = ms / 1000;
    match s {
        _ if ms < 1000 => format!("{ms}ms"),
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        3600..86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{}h", s / 86_400, s % 86_400 / 3600),
    }
}

fn instant(s: i64) -> Timestamp {
    Timestamp::from_second(s).unwrap_or(Timestamp::UNIX_EPOCH)
}

pub(super) fn rfc3339(s: i64, zone: &Zone) -> String {
    zone.format_rfc3339(instant(s))
}

/// Bytes as text for a terminal: not UTF-8 as U+FFFD, control characters as `\xNN`,
/// bidirectional and invisible format characters as `\u{NNNN}`.
pub(super) fn printable(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for c in String::from_utf8_lossy(bytes).chars() {
        if c.is_control() {
            let _ = write!(out, "\\x{:02x}", u32::from(c));
        } else if crate::log::line::is_hidden_control(c) {
            let _ = write!(out, "\\u{{{:04x}}}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out
}

/// At most `n` characters, the last of them `…` when cut.
pub(super) fn cut(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let mut out: String = text.chars().take(n.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// At most `n` characters, the first of them `…` when cut (a place keeps its file's name and
/// its line).
fn cut_front(text: &str, n: usize) -> String {
    let count = text.chars().count();
    if count <= n {
        return text.to_string();
    }
    let mut out = String::from("…");
    out.extend(text.chars().skip(count - n.saturating_sub(1)));
    out
}
