//! `history` and `logs` on the control socket: their request lines, and the question the
//! history writer is handed with the client's connection ([`question`]), made of what the
//! daemon knows — who asks, which entry a FILE:LINE or an id names, the clock and the zone.
//! Pure.
//!
//! ```text
//! history [--json] [--wide] [--failed] [--since TIME] [--user NAME] [--limit N] [ENTRY]
//! logs [--raw] ENTRY [RUN]
//! ```
//!
//! TIME is a time ago (`30m`, `2h`, `1d`, `1w`) or a date and time in the daemon's zone
//! (`2026-12-01`, `2026-12-01T10:00`, `2026-12-01 10:00`).

use jiff::civil::DateTime;

use super::{Peer, Snapshot, Target, error_answer, parse_target};
use crate::history::query::{DEFAULT_LISTED, MAX_LISTED};
use crate::history::{Asked, Query};
use crate::schedule::Zone;

/// From when `history` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Since {
    /// So many seconds before the request.
    Ago(i64),
    /// A date and time in the daemon's zone.
    At(DateTime),
}

/// `history`'s request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HistoryAsk {
    pub json: bool,
    pub wide: bool,
    pub failed: bool,
    pub since: Option<Since>,
    pub user: Option<String>,
    pub limit: u32,
    pub target: Option<Target>,
}

/// `logs`'s request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LogsAsk {
    pub target: Target,
    pub run: Option<i64>,
    pub raw: bool,
}

/// TIME as `--since` takes it.
pub(crate) fn parse_since(text: &str) -> Result<Since, String> {
    let unit = |c: char| match c {
        'm' => Some(60),
        'h' => Some(3600),
        'd' => Some(86_400),
        'w' => Some(7 * 86_400),
        _ => None,
    };
    if let Some(last) = text.chars().last()
        && let Some(seconds) = unit(last)
        && let Ok(n) = text[..text.len() - 1].parse::<i64>()
        && (0..=100_000).contains(&n)
    {
        return Ok(Since::Ago(n * seconds));
    }
    let spaced = text.replacen(' ', "T", 1);
    let parsed = match spaced.len() {
        10 => jiff::civil::Date::strptime("%Y-%m-%d", &spaced)
            .map(|d| d.to_datetime(jiff::civil::Time::midnight())),
        _ => DateTime::strptime("%Y-%m-%dT%H:%M", &spaced),
    };
    parsed.map(Since::At).map_err(|_| {
        format!(
            "--since: {text:?} is neither a time ago (30m, 2h, 1d, 1w) nor a date \
             (2026-12-01, 2026-12-01T10:00)"
        )
    })
}

/// The words after `history` in a request line.
pub(crate) fn parse_history(rest: &str) -> Result<HistoryAsk, String> {
    let mut ask = HistoryAsk {
        json: false,
        wide: false,
        failed: false,
        since: None,
        user: None,
        limit: DEFAULT_LISTED,
        target: None,
    };
    let mut words = rest.split(' ').filter(|w| !w.is_empty());
    while let Some(word) = words.next() {
        let mut value = |flag: &str| {
            words
                .next()
                .ok_or_else(|| format!("history: {flag} needs a value"))
        };
        match word {
            "--json" => ask.json = true,
            "--wide" => ask.wide = true,
            "--failed" => ask.failed = true,
            "--since" => ask.since = Some(parse_since(value("--since")?)?),
            "--user" => ask.user = Some(value("--user")?.to_string()),
            "--limit" => {
                let text = value("--limit")?;
                ask.limit = text
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_LISTED).contains(n))
                    .ok_or_else(|| format!("history: --limit {text:?} is not 1 to {MAX_LISTED}"))?;
            }
            w if ask.target.is_none() && !w.starts_with('-') => {
                ask.target = Some(parse_target(w).map_err(|e| e.to_string())?)
            }
            w => return Err(format!("history: unexpected {w:?}")),
        }
    }
    Ok(ask)
}

/// The words after `logs` in a request line.
pub(crate) fn parse_logs(rest: &str) -> Result<LogsAsk, String> {
    let mut raw = false;
    let mut target = None;
    let mut run = None;
    for word in rest.split(' ').filter(|w| !w.is_empty()) {
        match word {
            "--raw" => raw = true,
            w if target.is_none() => target = Some(parse_target(w).map_err(|e| e.to_string())?),
            w if run.is_none() => {
                run = Some(
                    w.parse()
                        .ok()
                        .filter(|&n: &i64| n > 0)
                        .ok_or_else(|| format!("logs: the run {w:?} is not a run's number"))?,
                )
            }
            w => return Err(format!("logs: unexpected {w:?}")),
        }
    }
    let target = target.ok_or("logs needs an entry: logs [--raw] FILE:LINE|ID [RUN]")?;
    Ok(LogsAsk { target, run, raw })
}

/// The id a request's entry names: the loaded entry the asker may see that `target` names
/// (from `snapshot`, which holds those), or, for an id no loaded entry has (one removed since,
/// whose history is kept), the digits as given. `Err`: the answer to give instead.
fn entry_of(snapshot: &Snapshot, target: &Target) -> Result<String, Vec<u8>> {
    let matching = snapshot.entries.iter().filter(|e| e.is(target)).count();
    match (matching, target) {
        (0, Target::Id(prefix)) => Ok(prefix.clone()),
        _ => super::find(snapshot, target).map(|e| e.id.to_string()),
    }
}

/// The question for the history writer: `history` or `logs` as `peer` asked it, at `now_ms`,
/// times in `zone`. `Err`: the answer to give instead (an entry they may not see).
pub(crate) fn question(
    asked: Result<&HistoryAsk, &LogsAsk>,
    snapshot: &Snapshot,
    peer: &Peer,
    now_ms: i64,
    zone: &Zone,
) -> Result<Query, Vec<u8>> {
    let (asked, json, wide) = match asked {
        Ok(h) => {
            let entry = h
                .target
                .as_ref()
                .map(|t| entry_of(snapshot, t))
                .transpose()?;
            let since_ms = h.since.map(|since| match since {
                Since::Ago(seconds) => now_ms - seconds * 1000,
                Since::At(at) => at
                    .to_zoned(zone.time_zone().clone())
                    .map_or(0, |z| z.timestamp().as_millisecond()),
            });
            let asked = Asked::History {
                entry,
                user: h.user.clone(),
                failed: h.failed,
                since_ms,
                limit: h.limit,
            };
            (asked, h.json, h.wide)
        }
        Err(l) => {
            let asked = Asked::Logs {
                entry: entry_of(snapshot, &l.target)?,
                run: l.run,
                raw: l.raw,
            };
            (asked, false, false)
        }
    };
    Ok(Query {
        asked,
        json,
        wide,
        all: peer.is_root(),
        uid: peer.uid,
        name: peer
            .name
            .as_deref()
            .map(|n| String::from_utf8_lossy(n).into_owned()),
        now_ms,
        zone: zone.name().to_string(),
        max_answer: peer.max_answer() as u64,
    })
}

/// The answer when no writer takes the question.
pub(crate) fn no_history_answer(off: bool) -> Vec<u8> {
    error_answer(match off {
        true => "the daemon keeps no history (crond --history off)",
        false => "the history writer is not running now; see the daemon's log",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_and_logs_requests_read_as_asked_and_bad_ones_say_why() {
        let ask = parse_history("--json --failed --since 1d --user bob --limit 5 0123").unwrap();
        assert!(ask.json && ask.failed && !ask.wide);
        assert_eq!(ask.since, Some(Since::Ago(86_400)));
        assert_eq!(ask.user.as_deref(), Some("bob"));
        assert_eq!(ask.limit, 5);
        assert_eq!(ask.target, Some(Target::Id("0123".into())));
        assert_eq!(parse_history("").unwrap().limit, DEFAULT_LISTED);
        assert_eq!(
            parse_history("--since 2026-12-01").unwrap().since,
            Some(Since::At(jiff::civil::date(2026, 12, 1).at(0, 0, 0, 0)))
        );
        assert_eq!(
            parse_history("--since 2026-12-01T10:30").unwrap().since,
            Some(Since::At(jiff::civil::date(2026, 12, 1).at(10, 30, 0, 0)))
        );
        for bad in [
            "--since",
            "--since yesterday",
            "--limit 0",
            "--limit x",
            "a b",
            "--x",
        ] {
            assert!(parse_history(bad).is_err(), "{bad}");
        }
        let logs = parse_logs("--raw crontabs/alice:3 42").unwrap();
        assert_eq!(
            logs,
            LogsAsk {
                target: Target::Place {
                    tab: "crontabs/alice".into(),
                    line: 3
                },
                run: Some(42),
                raw: true,
            }
        );
        for bad in ["", "--raw", "0123 x", "0123 0", "0123 1 2"] {
            assert!(parse_logs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_question_says_who_asks_and_resolves_since_in_the_daemons_zone() {
        let zone = Zone::get("Europe/Paris").unwrap();
        let peer = Peer {
            uid: 1000,
            pid: 1,
            name: Some(b"alice".to_vec()),
        };
        let snapshot = super::super::tests::snapshot(Vec::new());
        let ask = parse_history("--since 2026-12-01 abcd").unwrap();
        let q = question(Ok(&ask), &snapshot, &peer, 99, &zone).unwrap();
        // Midnight in Paris is 23:00 UTC the day before.
        let Asked::History {
            entry, since_ms, ..
        } = &q.asked
        else {
            panic!("{q:?}")
        };
        assert_eq!(
            entry.as_deref(),
            Some("abcd"),
            "an id no entry has: kept as given"
        );
        assert_eq!(*since_ms, Some(1_796_079_600_000));
        assert!(!q.all && q.uid == 1000 && q.name.as_deref() == Some("alice"));
        assert_eq!(q.zone, "Europe/Paris");
        let ago = parse_history("--since 2h").unwrap();
        let q = question(Ok(&ago), &snapshot, &peer, 10_000_000, &zone).unwrap();
        assert!(matches!(
            q.asked,
            Asked::History {
                since_ms: Some(2_800_000),
                ..
            }
        ));
        // A FILE:LINE the asker may not see (or that does not exist): refused here.
        let logs = parse_logs("crontabs/bob:1").unwrap();
        assert!(question(Err(&logs), &snapshot, &peer, 0, &zone).is_err());
    }
}
