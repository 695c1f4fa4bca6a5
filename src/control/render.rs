//! The answers to `list` and `status`: a table for people (as `systemctl list-timers`), or one
//! JSON object per line for programs. Pure: text from a snapshot.
//!
//! Everything a crontab says (commands, schedules, file names) is shown with its control
//! characters escaped: a user's crontab can't write to the terminal of root running
//! `cronctl list`.

use std::fmt::Write;

use jiff::Timestamp;

use super::{EntryView, Format, Peer, Request, Snapshot, StatusView};
use crate::crontab::policy::{Missed, Overlap};
use crate::log::json;
use crate::metrics::{LastRun, Outcome};
use crate::schedule::Zone;

/// The longest command shown in the table (the JSON has it whole).
const TABLE_COMMAND: usize = 60;

/// Room kept at the end of an answer for the line that says what was left out.
const TAIL: usize = 200;

/// The answer to a `list` or `status` (a `run` is answered by the daemon once it has started
/// the run: `ran_answer`), at most `peer.max_answer()` bytes.
pub(crate) fn render(request: &Request, snapshot: &Snapshot, peer: &Peer) -> Vec<u8> {
    let max = peer.max_answer();
    match request {
        Request::List { format, .. } => list(snapshot, *format, max),
        Request::Status { format } => status(&snapshot.status, *format),
        Request::Run { .. } => return super::error_answer("a run is answered by the daemon"),
    }
    .into_bytes()
}

/// A list: the snapshot's entries (its pattern applied when it was made), then what was left
/// out, counted.
fn list(snapshot: &Snapshot, format: Format, max: usize) -> String {
    let shown = &snapshot.entries;
    let mut out = String::from("OK\n");
    if format == Format::Table {
        table(&mut out, shown, snapshot.omitted, max);
        return out;
    }
    let mut cut = 0;
    for e in shown {
        let object = json_entry(e);
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

const HEADER: [&str; 13] = [
    "ID",
    "ENTRY",
    "USER",
    "SCHEDULE",
    "TZ",
    "NEXT",
    "NEXT (UTC)",
    "LAST",
    "RESULT",
    "TOOK",
    "RUNNING",
    "POLICY",
    "COMMAND",
];

fn table_row(e: &EntryView) -> Vec<String> {
    let last = e.last.map(|l| started(&l));
    vec![
        e.id.to_string(),
        printable(e.place().as_bytes()),
        printable(&e.user),
        printable(&e.schedule),
        e.cron_tz
            .as_deref()
            .map_or("-".into(), |z| printable(z.as_bytes())),
        e.next_s
            .map_or("never".into(), |s| local_minute(s, &e.zone)),
        e.next_s.map_or("-".into(), utc_minute),
        last.map_or("-".into(), |s| local_minute(s, &e.zone)),
        e.last.map_or("-".into(), |l| outcome(l.outcome).into()),
        e.last.map_or("-".into(), |l| took(l.duration_ms)),
        if e.running.is_empty() {
            "-".into()
        } else {
            e.running
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(",")
        },
        match e.policy.to_string() {
            p if p.is_empty() => "-".into(),
            p => p.replace(' ', ","),
        },
        cut(&printable(&e.command), TABLE_COMMAND),
    ]
}

/// Columns padded to their widest cell, the last one not; rows past `max` bytes left out and
/// counted with the `omitted` ones. Each row is made twice (once for the widths, once to be
/// written) rather than kept: a list of 70,000 entries holds no 900,000 cells at once.
fn table(out: &mut String, entries: &[EntryView], omitted: usize, max: usize) {
    let mut widths: Vec<usize> = HEADER.iter().map(|h| h.chars().count()).collect();
    for e in entries {
        for (w, cell) in widths.iter_mut().zip(table_row(e)) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let header = HEADER.iter().map(|h| h.to_string()).collect::<Vec<_>>();
    let mut shown = 0;
    for (i, row) in std::iter::once(header)
        .chain(entries.iter().map(table_row))
        .enumerate()
    {
        let mut line = String::new();
        for (c, cell) in row.iter().enumerate() {
            if c + 1 == row.len() {
                line.push_str(cell);
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
        if i > 0 {
            shown += 1;
        }
    }
    let left_out = entries.len() - shown + omitted;
    if left_out > 0 {
        let _ = writeln!(
            out,
            "({left_out} more entries not shown: name a part of FILE:LINE or a user to narrow the list)"
        );
    } else if entries.is_empty() {
        out.push_str("(no entries)\n");
    }
}

fn json_entry(e: &EntryView) -> String {
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
    match e.last {
        Some(l) => {
            text(&mut out, "last", rfc3339(started(&l), &e.zone).as_bytes());
            text(&mut out, "last_result", outcome(l.outcome).as_bytes());
            let _ = write!(out, ",\"last_duration_ms\":{}", l.duration_ms);
        }
        None => out.push_str(",\"last\":null,\"last_result\":null,\"last_duration_ms\":null"),
    }
    let pids: Vec<String> = e.running.iter().map(|p| p.to_string()).collect();
    let _ = write!(out, ",\"running\":[{}]", pids.join(","));
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
    text(&mut out, "command", &e.command);
    out.push('}');
    out
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
fn text(out: &mut String, name: &str, value: &[u8]) {
    if !out.ends_with('{') {
        out.push(',');
    }
    let _ = write!(out, "\"{name}\":");
    json::string(out, &String::from_utf8_lossy(value));
}

/// When a last run started, epoch seconds.
fn started(l: &LastRun) -> i64 {
    l.started_ms.div_euclid(1000)
}

fn outcome(o: Outcome) -> &'static str {
    match o {
        Outcome::Succeeded => "ok",
        Outcome::Failed => "failed",
        Outcome::TimedOut => "timeout",
    }
}

/// `850ms`, `12s`, `3m05s`, `2h10m`, `3d4h`.
fn took(ms: i64) -> String {
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

/// `2026-11-27 10:00+01:00`.
fn local_minute(s: i64, zone: &Zone) -> String {
    instant(s)
        .to_zoned(zone.time_zone().clone())
        .strftime("%Y-%m-%d %H:%M%:z")
        .to_string()
}

/// `2026-11-27 09:00Z`.
fn utc_minute(s: i64) -> String {
    instant(s).strftime("%Y-%m-%d %H:%MZ").to_string()
}

fn rfc3339(s: i64, zone: &Zone) -> String {
    zone.format_rfc3339(instant(s))
}

/// Bytes as text for a terminal: not UTF-8 as U+FFFD, control characters as `\xNN`,
/// bidirectional and invisible format characters as `\u{NNNN}`.
fn printable(bytes: &[u8]) -> String {
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
fn cut(text: &str, n: usize) -> String {
    if text.chars().count() <= n {
        return text.to_string();
    }
    let mut out: String = text.chars().take(n - 1).collect();
    out.push('…');
    out
}
