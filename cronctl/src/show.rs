//! `cronctl show`'s last runs, from the run history. The daemon's answer to `show` has the
//! entry whole, with the last runs it saw since it loaded the entry (kept in its memory, gone
//! when it restarts); the history's answer to `history --json --limit 5 ID` for the same entry,
//! asked on a second connection, has the last outcomes the store recorded, across restarts.
//! `show` prints the daemon's answer with the history's last runs in place of the memory's,
//! and the memory's only when the history can't be read, saying why in one line. Pure: text
//! from the two answers.
//!
//! ```text
//! Last runs (newest first, from the run history):
//!   RUN  TIME                 TRIGGER   TOOK  HOST  RESULT
//!   12   2026-11-21 10:01:05  manual    5ms   vm1   exit 1
//!   11   2026-11-21 10:01:00  schedule  -     vm1   not run: user-unknown: user bob unknown (no passwd entry)
//! ```

use std::fmt::Write;

use crond::history::Gap;
use serde_json::Value;

use crate::history::render::{gap_line, printable, took};

/// How many last runs `show` lists: as many as the daemon keeps of each entry in memory.
pub const LAST_RUNS: u32 = 5;

/// Where the daemon's table starts its last runs (a value it shows has no newline in it).
const LAST_RUNS_PART: &str = "\nLast runs (";

/// The digits of an entry's id.
const ID_DIGITS: usize = crond::cluster::entry_id::LOCAL_ID_DIGITS;

/// The id of the entry the daemon's answer to `show` shows (`json`: `show --json`'s); `None`
/// for a line or a file that did not load, which has no id and no runs.
pub fn entry_id(answer: &str, json: bool) -> Option<&str> {
    let (id, whole) = if json {
        let rest = answer.strip_prefix("{\"id\":\"")?;
        (rest.get(..ID_DIGITS)?, rest[ID_DIGITS..].starts_with('"'))
    } else {
        let first = answer.lines().next()?;
        (first.split("  ").next()?, answer.contains(LAST_RUNS_PART))
    };
    let is_id = id.len() == ID_DIGITS && id.bytes().all(|b| b.is_ascii_hexdigit());
    (is_id && whole).then_some(id)
}

/// The request for the last runs of entry `id`.
pub fn history_request(id: &str) -> String {
    format!("history --json --limit {LAST_RUNS} {id}")
}

/// The daemon's answer to `show` with its last runs from `history`: the text of the history's
/// answer to [`history_request`], or why there is none (the history is off, its writer not
/// running, the socket unreachable). With `json`, the object gets the keys `history` (the
/// history's objects, as `cronctl history --json` prints them, or `null`) and `history_error`
/// (why it is `null`, or `null`).
pub fn with_history(answer: &str, json: bool, history: Result<&str, &str>) -> String {
    let read = history.and_then(|text| {
        let objects = (text.lines())
            .map(serde_json::from_str::<Value>)
            .collect::<Result<Vec<Value>, _>>()
            .map_err(|_| "its answer is not the JSON lines cronctl reads")?;
        Ok((text, objects))
    });
    match read {
        Ok((text, _)) if json => json_with(answer, Ok(text)),
        Ok((_, objects)) => table_with(answer, Ok(&objects)),
        Err(why) if json => json_with(answer, Err(why)),
        Err(why) => table_with(answer, Err(why)),
    }
}

/// `show --json`'s object with the keys `history` and `history_error` last.
fn json_with(answer: &str, history: Result<&str, &str>) -> String {
    let Some(object) = answer.trim_end().strip_suffix('}') else {
        return answer.to_string();
    };
    let mut out = String::from(object);
    match history {
        Ok(text) => {
            let objects: Vec<&str> = text.lines().collect();
            let _ = write!(
                out,
                ",\"history\":[{}],\"history_error\":null}}",
                objects.join(",")
            );
        }
        Err(why) => {
            out.push_str(",\"history\":null,\"history_error\":");
            crond::log::json::string(&mut out, why);
            out.push('}');
        }
    }
    out
}

/// The daemon's table, its last runs those of the history; or its own, with a line that says
/// why they are not the history's.
fn table_with(answer: &str, history: Result<&[Value], &str>) -> String {
    let Some(at) = answer.rfind(LAST_RUNS_PART) else {
        return answer.to_string();
    };
    let (shown, memory) = answer.split_at(at);
    let mut out = String::from(shown);
    match history {
        Ok(objects) => {
            out.push_str("\nLast runs (newest first, from the run history):\n");
            last_runs(&mut out, objects);
        }
        Err(why) => {
            let (header, runs) = memory[1..].split_once('\n').unwrap_or((&memory[1..], ""));
            let _ = write!(
                out,
                "\n{header}\n  (not from the run history: {})\n{runs}",
                printable(why.as_bytes())
            );
        }
    }
    out.trim_end_matches('\n').to_string()
}

/// The columns of the last runs, the result last (its reason's words have no bound).
const HEADER: [&str; 6] = ["RUN", "TIME", "TRIGGER", "TOOK", "HOST", "RESULT"];

/// A line of the last runs: a run (or a slot that did not run) in the columns, or a line of
/// its own (a gap in the record, what the answer left out).
enum Line {
    Run([String; 6]),
    Note(String),
}

/// The history's objects as the lines of a table: a run or a slot that did not run, a gap in
/// the record, or how many the answer left out.
fn last_runs(out: &mut String, objects: &[Value]) {
    if objects.is_empty() {
        out.push_str("  (none)\n");
        return;
    }
    let lines: Vec<Line> = objects.iter().map(line).collect();
    let mut widths = HEADER.map(str::len);
    for line in &lines {
        if let Line::Run(cells) = line {
            for (w, cell) in widths.iter_mut().zip(cells) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let header = Line::Run(HEADER.map(String::from));
    for line in std::iter::once(header).chain(lines) {
        let text = match line {
            Line::Run(cells) => {
                let mut text = String::new();
                for (cell, w) in cells.iter().zip(widths) {
                    let _ = write!(text, "{cell:<w$}  ");
                }
                text.trim_end().to_string()
            }
            Line::Note(text) => text,
        };
        let _ = writeln!(out, "  {text}");
    }
}

/// One object of the history's answer as a line of the last runs.
fn line(v: &Value) -> Line {
    let text = |key: &str| printable(v[key].as_str().unwrap_or_default().as_bytes());
    let number = |key: &str| v[key].as_i64();
    if v["gap"] == Value::Bool(true) {
        let gap = Gap {
            from_ms: number("from_ms").unwrap_or(0),
            to_ms: number("to_ms").unwrap_or(0),
            lost: v["lost"].as_u64().unwrap_or(0),
            why: v["why"].as_str().unwrap_or_default().to_string(),
        };
        return Line::Note(gap_line(&gap));
    }
    if let Some(n) = v["not_shown"].as_u64() {
        return Line::Note(format!("({n} more not shown: cronctl history lists them)"));
    }
    // `time` is RFC 3339 in the daemon's zone: its date and time of day, as `history` shows it.
    let time = text("time");
    let time = match time.get(..19) {
        Some(local) if time.len() > 19 => local.replacen('T', " ", 1),
        _ => time,
    };
    let result = match (text("status").as_str(), text("words")) {
        ("not-run", words) if words.is_empty() => format!("not run: {}", text("reason")),
        ("not-run", words) => format!("not run: {}: {words}", text("reason")),
        (status, _) => status.to_string(),
    };
    Line::Run([
        number("run").map_or_else(|| "-".into(), |n| n.to_string()),
        time,
        text("trigger"),
        number("duration_ms").map_or_else(|| "-".into(), took),
        text("host"),
        result,
    ])
}

#[cfg(test)]
mod tests;
