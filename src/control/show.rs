//! The answer to `show`: one entry whole, as `systemctl status` shows a unit — its line as
//! written, where it comes from and whom it runs as, the environment its crontab gives it, its
//! next runs in its zone and the host's, its last runs with how each ended, and why it does
//! not run when it does not. A table for people, or one JSON object. Pure: text from a
//! snapshot.

use std::fmt::Write;

use super::render::{
    cut, host_time, json_end, json_entry, json_not_loaded, outcome, printable, rfc3339, run_result,
    span, started, text, took, why_not_run,
};
use super::{Detail, EntryView, Format, NotLoaded, StatusView};
use crate::crontab::policy::Overlap;
use crate::metrics::LastRun;

/// The answer to `show` for `e`.
pub(super) fn show(e: &EntryView, status: &StatusView, format: Format) -> String {
    let none = Detail::default();
    let detail = e.detail.as_ref().unwrap_or(&none);
    match format {
        Format::Table => table(e, detail, status),
        Format::Json => json(e, detail),
    }
}

/// The most variables of an entry's environment `show` gives (a system file may set 10,000),
/// each name cut to [`MAX_NAME_SHOWN`] characters and each value to [`MAX_VALUE_SHOWN`]; and the
/// most characters of the JSON's `line` (whose command is whole in `command`). With a command
/// at its bound (131,072 bytes) the answer stays within a user's 1 MiB.
const MAX_ENV_SHOWN: usize = 100;
const MAX_NAME_SHOWN: usize = 64;
const MAX_VALUE_SHOWN: usize = 200;
const MAX_JSON_LINE: usize = 1024;

/// The variables `show` gives, cut, and how many it leaves out.
fn shown_env(detail: &Detail) -> (Vec<(String, String)>, usize) {
    let text = |bytes: &[u8], n| cut(&String::from_utf8_lossy(bytes), n);
    let shown = (detail.env.iter().take(MAX_ENV_SHOWN))
        .map(|(name, value)| (text(name, MAX_NAME_SHOWN), text(value, MAX_VALUE_SHOWN)))
        .collect();
    (shown, detail.env.len().saturating_sub(MAX_ENV_SHOWN))
}

/// The answer to `show` for a place that did not load: the line, or its whole file, and why.
pub(super) fn not_loaded(all: &[NotLoaded], format: Format) -> String {
    let mut out = String::from("OK\n");
    for n in all {
        match format {
            Format::Table => {
                let _ = writeln!(out, "{}", printable(n.place().as_bytes()));
                let state = if n.orphan {
                    "user unknown"
                } else {
                    "not loaded"
                };
                let _ = writeln!(
                    out,
                    "  {:<9} {state}: {}",
                    "state",
                    printable(n.reason.as_bytes())
                );
            }
            Format::Json => {
                out.push_str(&json_not_loaded(n));
                out.push('\n');
            }
        }
    }
    out
}

/// Why the entry does not run now, when it does not: a pause on this host or in its
/// cluster, a schedule with no
/// time to come (`0 0 30 2 *`), a last run that did not run, a running job that `CRON_OVERLAP=skip` lets no
/// other start beside.
pub(super) fn why_not_running(e: &EntryView, detail: &Detail) -> Option<String> {
    if e.paused {
        return Some(format!("paused on this host (cronctl resume {})", e.id));
    }
    if detail.paused
        && let Some((name, key)) = &e.cluster
    {
        let user = printable(&e.user);
        return Some(format!(
            "paused in cluster {name} (cronctl resume {name} {user} {key})"
        ));
    }
    if e.next_s.is_none() {
        return Some("its schedule has no time to come".to_string());
    }
    if let Some(reason) = e.last().and_then(why_not_run) {
        return Some(format!("its last run did not run: {reason}"));
    }
    if !e.running.is_empty() && e.policy.overlap == Overlap::Skip {
        return Some(
            "a run of it is running, and CRON_OVERLAP=skip starts no other beside it".to_string(),
        );
    }
    None
}

/// The line as the crontab has it: the schedule, the user field of a system file's line, the
/// command.
fn line(e: &EntryView, detail: &Detail) -> String {
    let mut line = printable(&e.schedule);
    if detail.system {
        line.push(' ');
        line.push_str(&printable(&e.user));
    }
    line.push(' ');
    line.push_str(&printable(&e.command));
    line
}

fn table(e: &EntryView, detail: &Detail, status: &StatusView) -> String {
    let now_s = status.now_ms.div_euclid(1000);
    let host = &status.zone;
    let mut out = String::from("OK\n");
    let _ = writeln!(out, "{}  {}", e.id, printable(e.place().as_bytes()));
    let mut field = |name: &str, value: &str| {
        let _ = writeln!(out, "  {name:<9} {value}");
    };
    field("line", &line(e, detail));
    field("user", &printable(&e.user));
    let zone = match &e.cron_tz {
        Some(z) if z.as_str() != host.name() => {
            format!(
                "{} (CRON_TZ; the host's is {})",
                printable(z.as_bytes()),
                host.name()
            )
        }
        _ => format!("{} (the host's)", host.name()),
    };
    field("zone", &zone);
    let policy = e.policy.to_string();
    field("policy", if policy.is_empty() { "-" } else { &policy });
    if let Some((name, key)) = &e.cluster {
        field("cluster", &format!("{}/{key}", printable(name.as_bytes())));
    }
    let state = match (why_not_running(e, detail), e.running.as_slice()) {
        (Some(why), _) => format!("not running: {why}"),
        (None, []) => "scheduled".to_string(),
        (None, pids) => {
            let pids: Vec<String> = pids.iter().map(|p| p.to_string()).collect();
            format!("running (job pid {})", pids.join(", "))
        }
    };
    field("state", &state);
    out.push_str("\nEnvironment (as the crontab sets it):\n");
    if detail.env.is_empty() {
        out.push_str("  (nothing set)\n");
    }
    let (env, more) = shown_env(detail);
    for (name, value) in &env {
        let _ = writeln!(
            out,
            "  {}={}",
            printable(name.as_bytes()),
            printable(value.as_bytes())
        );
    }
    if more > 0 {
        let _ = writeln!(out, "  ({more} more variables not shown)");
    }
    next_runs(&mut out, e, detail, status);
    out.push_str("\nLast runs (newest first, since crond loaded the entry):\n");
    if e.runs.is_empty() {
        out.push_str("  (none)\n");
    }
    for l in e.runs.iter().rev() {
        last_run(&mut out, l, now_s, host);
    }
    out
}

/// The next runs: when, in the host's zone and, when it has its own, the entry's.
fn next_runs(out: &mut String, e: &EntryView, detail: &Detail, status: &StatusView) {
    let now_s = status.now_ms.div_euclid(1000);
    let host = &status.zone;
    let own = e.cron_tz.as_deref().filter(|z| *z != host.name());
    let times: Vec<i64> = e
        .next_s
        .into_iter()
        .chain(detail.later.iter().copied())
        .collect();
    out.push_str("\nNext runs:\n");
    if times.is_empty() {
        out.push_str("  (none)\n");
        return;
    }
    for s in times {
        let left = format!("in {}", span(s - now_s));
        let _ = write!(out, "  {:<16}  {left:<12}", host_time(s, host));
        if let Some(zone) = own {
            let _ = write!(
                out,
                "  {} {}",
                host_time(s, &e.zone),
                printable(zone.as_bytes())
            );
        }
        let end = out.trim_end_matches(' ').len();
        out.truncate(end);
        out.push('\n');
    }
}

fn last_run(out: &mut String, l: &LastRun, now_s: i64, host: &crate::schedule::Zone) {
    let ago = format!("{} ago", span(now_s - started(l)));
    let _ = write!(
        out,
        "  {:<16}  {ago:<12}  {:<8}  took {}",
        host_time(started(l), host),
        run_result(l),
        took(l.duration_ms)
    );
    if let Some(reason) = why_not_run(l) {
        let _ = write!(out, "  {}", printable(reason.as_bytes()));
    }
    out.push('\n');
}

/// One object: the list's keys, then `line`, `env`, `next_runs`, `runs` (newest first) and
/// `not_running` (why, or `null`).
fn json(e: &EntryView, detail: &Detail) -> String {
    let mut out = json_entry(e);
    out.pop();
    text(
        &mut out,
        "line",
        cut(&line(e, detail), MAX_JSON_LINE).as_bytes(),
    );
    let (env, more) = shown_env(detail);
    out.push_str(",\"env\":[");
    for (i, (name, value)) in env.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        text(&mut out, "name", name.as_bytes());
        text(&mut out, "value", value.as_bytes());
        out.push('}');
    }
    let _ = write!(out, "],\"env_not_shown\":{more},\"next_runs\":[");
    let times = e.next_s.into_iter().chain(detail.later.iter().copied());
    for (i, s) in times.enumerate() {
        if i > 0 {
            out.push(',');
        }
        crate::log::json::string(&mut out, &rfc3339(s, &e.zone));
    }
    out.push_str("],\"runs\":[");
    for (i, l) in e.runs.iter().rev().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push('{');
        text(&mut out, "start", rfc3339(started(l), &e.zone).as_bytes());
        text(&mut out, "result", outcome(l.outcome).as_bytes());
        let _ = write!(out, ",\"duration_ms\":{}", l.duration_ms);
        json_end(&mut out, "", l);
        out.push('}');
    }
    out.push(']');
    match why_not_running(e, detail) {
        Some(why) => text(&mut out, "not_running", why.as_bytes()),
        None => out.push_str(",\"not_running\":null"),
    }
    out.push('}');
    format!("OK\n{out}\n")
}
