//! What the daemon and its cluster helper (`cronctl helper`, docs/cluster.md "The helper") say to
//! each other over their socket: one line per message, words separated by one space, free text
//! and user names %-escaped so that no field holds a space, a newline or a byte outside
//! printable ASCII. A line is at most [`MAX_LINE`] bytes; a longer one, or one that does not
//! parse, is a protocol error and the daemon restarts the helper.
//!
//! Pure: lines in, messages out, and back; the daemon and the helper do the socket I/O.
//!
//! Daemon to helper:
//! * `RUN SEQ MINUTE CLUSTER OWNER ENTRY`: claim the run of entry `ENTRY` (16 hex digits) of
//!   `OWNER` in `CLUSTER` due in the minute starting at unix second `MINUTE`, and mark it
//!   started; `SEQ` names the request in the answer.
//! * `FORKED MINUTE CLUSTER OWNER ENTRY`: the daemon has acted on the run's `GO` (forked its
//!   job child, or skipped or queued it by `CRON_OVERLAP`): the helper marks more runs started
//!   (at most [`START_WINDOW`] are marked and not acted on at once).
//! * `END MINUTE CLUSTER OWNER ENTRY STATUS`: the run ended with exit code `STATUS` (a signal
//!   `N` is `-N`).
//! * `ENTRY CLUSTER OWNER ENTRY RERUN PLACE COMMAND`: a cluster entry the daemon has loaded,
//!   written at `PLACE` (`FILE:LINE`) with `COMMAND`, each cut to [`MAX_PLACE`] and
//!   [`MAX_COMMAND`] bytes once escaped; `RERUN` is `unknown` for `CRON_CLUSTER_RERUN=unknown`,
//!   else `never`.
//! * `LOADED COUNT OMITTED`: the `COUNT` `ENTRY` lines since the last `LOADED` are the cluster
//!   entries the daemon has loaded now; `OMITTED` more were past its bound and not sent. Sent
//!   when the helper starts and after each load that changed them.
//! * `STOP`: the daemon is stopping and starts nothing more; every run it forked has been said
//!   `FORKED` before this line. The helper gives back the runs it marked started that the daemon
//!   did not fork (claims again, which other hosts take over) and its lease, and claims
//!   nothing more; it still writes the `END`s of the jobs left running.
//!
//! Helper to daemon:
//! * `GO SEQ`: the run is this host's and marked started: start it now.
//! * `NO SEQ taken HOST`: another host claimed it and has not started it yet; the helper
//!   watches it and answers again: `NO SEQ ran HOST` once it started there, or `GO SEQ` when
//!   that host's lease ended before it started the run and this host took the claim over.
//! * `NO SEQ ran HOST` | `NO SEQ paused` | `NO SEQ lease` | `NO SEQ unreachable REASON`: not
//!   here, for good.
//! * `TAKE MINUTE CLUSTER OWNER ENTRY ATTEMPT`: a run no daemon waits for any more (its host
//!   stopped or died before starting it, after the other hosts had let it go), of an entry this
//!   daemon listed: this host took it over and marked it started: start it now (and say
//!   `FORKED`). `ATTEMPT` 2: its first start's outcome was lost with its host, and the entry
//!   has `CRON_CLUSTER_RERUN=unknown`.
//! * `LOG info|error TEXT`: a line for the daemon's log.
//! * `STOPPED`: the answer to `STOP`, once the runs not forked are given back (its `LOG` first).

use std::fmt::Write as _;

use super::entry_id::EntryKey;
use crate::crontab::policy::is_cluster_name;

/// The most runs a helper has marked started whose `GO` the daemon has not acted on yet: what
/// a host that dies at the worst moment loses (the rest of its claims are not started, and
/// other hosts take them over).
pub const START_WINDOW: usize = 64;

/// The longest line either side sends, newline included.
pub const MAX_LINE: usize = 4096;

/// One run of a cluster entry: the claim's key in the database.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RunKey {
    pub cluster: String,
    /// The user the entry runs as.
    pub owner: Vec<u8>,
    pub entry: EntryKey,
    /// The unix second at which the run's minute starts (UTC).
    pub minute: i64,
}

/// A cluster entry a daemon has loaded: what `cronctl entries` shows of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub cluster: String,
    /// The user the entry runs as.
    pub owner: Vec<u8>,
    pub entry: EntryKey,
    /// Where it is written, `FILE:LINE`.
    pub place: Vec<u8>,
    /// Its command as written.
    pub command: Vec<u8>,
    /// `CRON_CLUSTER_RERUN=unknown`.
    pub rerun: bool,
}

/// A message from the daemon to the helper.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToHelper {
    Run { seq: u64, key: RunKey },
    Forked { key: RunKey },
    End { key: RunKey, status: i32 },
    Entry(Loaded),
    Loaded { count: usize, omitted: usize },
    Stop,
}

/// Why a run does not start on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// Another host claimed it (named) and has not started it: watched, not final.
    Taken(String),
    /// It started on the host named.
    Ran(String),
    /// `cronctl pause`: no host runs it.
    Paused,
    /// This host's lease in the database has expired: it may not claim (fencing).
    Lease,
    /// No answer from the database in time, or no connection (why).
    Unreachable(String),
}

/// A message from the helper to the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromHelper {
    Go { seq: u64 },
    No { seq: u64, why: Denied },
    Take { key: RunKey, attempt: u32 },
    Log { error: bool, text: String },
    Stopped,
}

/// `%XX` for `%`, and for every byte that is not printable ASCII or is a space.
pub fn escape(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &b in bytes {
        if b.is_ascii_graphic() && b != b'%' {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The bytes [`escape`] wrote; `None` for a `%` not followed by two hex digits.
pub fn unescape(text: &str) -> Option<Vec<u8>> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    Some(out)
}

fn key_words(key: &RunKey) -> String {
    format!(
        "{} {} {} {}",
        key.minute,
        key.cluster,
        escape(&key.owner),
        key.entry
    )
}

impl ToHelper {
    /// The line, newline included.
    pub fn encode(&self) -> String {
        match self {
            ToHelper::Run { seq, key } => format!("RUN {seq} {}\n", key_words(key)),
            ToHelper::Forked { key } => format!("FORKED {}\n", key_words(key)),
            ToHelper::End { key, status } => format!("END {} {status}\n", key_words(key)),
            ToHelper::Entry(e) => format!(
                "ENTRY {} {} {} {} {} {}\n",
                e.cluster,
                escape(&e.owner),
                e.entry,
                if e.rerun { "unknown" } else { "never" },
                escape_cut(&e.place, MAX_PLACE),
                escape_cut(&e.command, MAX_COMMAND)
            ),
            ToHelper::Loaded { count, omitted } => format!("LOADED {count} {omitted}\n"),
            ToHelper::Stop => "STOP\n".to_string(),
        }
    }

    /// Reads one line (without its newline).
    pub fn decode(line: &str) -> Result<ToHelper, String> {
        let words: Vec<&str> = line.split(' ').collect();
        let bad = || format!("bad request '{}'", line.escape_debug());
        match words.as_slice() {
            ["RUN", seq, rest @ ..] if rest.len() == 4 => Ok(ToHelper::Run {
                seq: seq.parse().map_err(|_| bad())?,
                key: decode_key(rest).ok_or_else(bad)?,
            }),
            ["FORKED", rest @ ..] if rest.len() == 4 => Ok(ToHelper::Forked {
                key: decode_key(rest).ok_or_else(bad)?,
            }),
            ["END", rest @ ..] if rest.len() == 5 => Ok(ToHelper::End {
                key: decode_key(&rest[..4]).ok_or_else(bad)?,
                status: rest[4].parse().map_err(|_| bad())?,
            }),
            ["ENTRY", rest @ ..] if rest.len() == 6 => {
                decode_entry(rest).map(ToHelper::Entry).ok_or_else(bad)
            }
            ["LOADED", count, omitted] => Ok(ToHelper::Loaded {
                count: count.parse().map_err(|_| bad())?,
                omitted: omitted.parse().map_err(|_| bad())?,
            }),
            ["STOP"] => Ok(ToHelper::Stop),
            _ => Err(bad()),
        }
    }
}

fn decode_entry(words: &[&str]) -> Option<Loaded> {
    let [cluster, owner, entry, rerun, place, command] = words else {
        return None;
    };
    let rerun = match *rerun {
        "unknown" => true,
        "never" => false,
        _ => return None,
    };
    // The minute is not part of an entry: the key's rules read the rest.
    let key = decode_key(&["0", cluster, owner, entry])?;
    Some(Loaded {
        cluster: key.cluster,
        owner: key.owner,
        entry: key.entry,
        place: unescape(place)?,
        command: unescape(command)?,
        rerun,
    })
}

impl Loaded {
    /// Whether its `ENTRY` line fits [`MAX_LINE`]: always, but for an owner name of hundreds
    /// of bytes (which no system gives a user).
    pub fn fits(&self) -> bool {
        escape(&self.owner).len() <= MAX_OWNER
    }
}

fn decode_key(words: &[&str]) -> Option<RunKey> {
    let [minute, cluster, owner, entry] = words else {
        return None;
    };
    if !is_cluster_name(cluster.as_bytes()) {
        return None;
    }
    let owner = unescape(owner)?;
    if owner.is_empty() {
        return None;
    }
    Some(RunKey {
        minute: minute.parse().ok()?,
        cluster: (*cluster).to_string(),
        owner,
        entry: entry.parse().ok()?,
    })
}

impl FromHelper {
    /// The line, newline included; texts and host names are cut so that it fits [`MAX_LINE`].
    pub fn encode(&self) -> String {
        match self {
            FromHelper::Go { seq } => format!("GO {seq}\n"),
            FromHelper::No { seq, why } => match why {
                Denied::Taken(host) => {
                    format!("NO {seq} taken {}\n", escape_cut(host.as_bytes(), MAX_HOST))
                }
                Denied::Ran(host) => {
                    format!("NO {seq} ran {}\n", escape_cut(host.as_bytes(), MAX_HOST))
                }
                Denied::Paused => format!("NO {seq} paused\n"),
                Denied::Lease => format!("NO {seq} lease\n"),
                Denied::Unreachable(why) => {
                    format!(
                        "NO {seq} unreachable {}\n",
                        escape_cut(why.as_bytes(), MAX_TEXT)
                    )
                }
            },
            FromHelper::Log { error, text } => format!(
                "LOG {} {}\n",
                if *error { "error" } else { "info" },
                escape_cut(text.as_bytes(), MAX_TEXT)
            ),
            FromHelper::Take { key, attempt } => format!("TAKE {} {attempt}\n", key_words(key)),
            FromHelper::Stopped => "STOPPED\n".to_string(),
        }
    }

    /// Reads one line (without its newline).
    pub fn decode(line: &str) -> Result<FromHelper, String> {
        let words: Vec<&str> = line.split(' ').collect();
        let bad = || format!("bad answer '{}'", line.escape_debug());
        let text = |w: &str| unescape(w).map(|b| String::from_utf8_lossy(&b).into_owned());
        match words.as_slice() {
            ["GO", seq] => Ok(FromHelper::Go {
                seq: seq.parse().map_err(|_| bad())?,
            }),
            ["NO", seq, why @ ..] => {
                let seq = seq.parse().map_err(|_| bad())?;
                let why = match why {
                    ["taken", host] => Denied::Taken(text(host).ok_or_else(bad)?),
                    ["ran", host] => Denied::Ran(text(host).ok_or_else(bad)?),
                    ["paused"] => Denied::Paused,
                    ["lease"] => Denied::Lease,
                    ["unreachable", why] => Denied::Unreachable(text(why).ok_or_else(bad)?),
                    _ => return Err(bad()),
                };
                Ok(FromHelper::No { seq, why })
            }
            ["LOG", level @ ("info" | "error"), message] => Ok(FromHelper::Log {
                error: *level == "error",
                text: text(message).ok_or_else(bad)?,
            }),
            ["TAKE", rest @ ..] if rest.len() == 5 => Ok(FromHelper::Take {
                key: decode_key(&rest[..4]).ok_or_else(bad)?,
                attempt: rest[4].parse().map_err(|_| bad())?,
            }),
            ["STOPPED"] => Ok(FromHelper::Stopped),
            _ => Err(bad()),
        }
    }
}

/// The most bytes a free text (a log line, a reason) takes on a line once escaped.
pub const MAX_TEXT: usize = 1000;

/// The most bytes an entry's place (`FILE:LINE`) takes on an `ENTRY` line once escaped.
pub const MAX_PLACE: usize = 256;

/// The most bytes an entry's command takes on an `ENTRY` line once escaped: what the cluster
/// database keeps of it (a longer one ends in `...`).
pub const MAX_COMMAND: usize = 256;

/// The most cluster entries a daemon lists to its helper (`cronctl entries`); those past it
/// are counted in `LOADED`, not listed.
pub const MAX_LISTED: usize = 10_000;

/// The most bytes an owner takes on an `ENTRY` line once escaped; an entry of a longer one is
/// not sent ([`Loaded::fits`]).
pub const MAX_OWNER: usize = 1000;

/// The most bytes a host name takes on a line once escaped (PostgreSQL text may be of any
/// length; a host name past this is shown cut).
pub const MAX_HOST: usize = 255;

/// [`escape`] of `bytes`, cut so that it takes at most `max` bytes; a cut text ends in `...`.
/// The cut never splits an escape, so the result always reads back.
pub fn escape_cut(bytes: &[u8], max: usize) -> String {
    let full = escape(bytes);
    if full.len() <= max {
        return full;
    }
    let mut end = max.saturating_sub(3);
    // An escape is `%XX`: back off so that none is split.
    while end > 0
        && full.as_bytes()[..end]
            .iter()
            .rev()
            .take(2)
            .any(|&b| b == b'%')
    {
        end -= 1;
    }
    let mut out = full[..end].to_string();
    out.push_str("...");
    out
}

/// `text` cut at a character boundary to at most `max` bytes; a cut text ends in `...`. For
/// the log, which spells out control characters itself.
pub fn cut_text(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max.saturating_sub(3);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

/// Reads lines off a byte stream, each bounded by [`MAX_LINE`]: a line that is too long, or
/// not UTF-8, comes out as an `Err` naming it, and the lines after it are read as usual. What
/// is kept between reads is less than [`MAX_LINE`] bytes.
#[derive(Debug, Default)]
pub struct LineReader {
    buf: Vec<u8>,
    /// The bytes of an over-long line are being skipped until its newline; how many so far.
    skipping: Option<usize>,
}

impl LineReader {
    /// Adds what was read; returns the complete lines (without their newlines) in order.
    pub fn push(&mut self, mut bytes: &[u8]) -> Vec<Result<String, String>> {
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let newline = bytes.iter().position(|&b| b == b'\n');
            let (part, rest) = match newline {
                Some(i) => (&bytes[..i], &bytes[i + 1..]),
                None => (bytes, &bytes[bytes.len()..]),
            };
            bytes = rest;
            if let Some(skipped) = self.skipping.as_mut() {
                *skipped += part.len();
                if newline.is_some() {
                    out.push(Err(format!("a line of {} bytes (skipped)", *skipped)));
                    self.skipping = None;
                }
                continue;
            }
            if self.buf.len() + part.len() >= MAX_LINE {
                let seen = self.buf.len() + part.len();
                self.buf.clear();
                match newline {
                    Some(_) => out.push(Err(format!("a line of {seen} bytes (skipped)"))),
                    None => self.skipping = Some(seen),
                }
                continue;
            }
            self.buf.extend_from_slice(part);
            if newline.is_some() {
                let line = std::mem::take(&mut self.buf);
                out.push(String::from_utf8(line).map_err(|_| "a line that is not UTF-8".into()));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> RunKey {
        RunKey {
            cluster: "nightly".into(),
            owner: b"al ice%\xff".to_vec(),
            entry: EntryKey(0x0123_4567_89ab_cdef),
            minute: 1_795_000_020,
        }
    }

    #[test]
    fn every_message_reads_back_as_written() {
        for m in [
            ToHelper::Run { seq: 7, key: key() },
            ToHelper::Forked { key: key() },
            ToHelper::End {
                key: key(),
                status: -9,
            },
            ToHelper::Entry(loaded(b"crontabs/al ice:3", b"backup %now\n")),
            ToHelper::Loaded {
                count: 12,
                omitted: 3,
            },
            ToHelper::Stop,
        ] {
            let line = m.encode();
            assert!(line.ends_with('\n') && !line[..line.len() - 1].contains(['\n', '\r']));
            assert_eq!(ToHelper::decode(line.trim_end_matches('\n')), Ok(m));
        }
        assert_eq!(
            ToHelper::Run { seq: 7, key: key() }.encode(),
            "RUN 7 1795000020 nightly al%20ice%25%FF 0123456789abcdef\n"
        );
        for m in [
            FromHelper::Go { seq: 1 },
            FromHelper::No {
                seq: 2,
                why: Denied::Taken("host-b".into()),
            },
            FromHelper::No {
                seq: 3,
                why: Denied::Paused,
            },
            FromHelper::No {
                seq: 6,
                why: Denied::Ran("host-c".into()),
            },
            FromHelper::No {
                seq: 4,
                why: Denied::Lease,
            },
            FromHelper::No {
                seq: 5,
                why: Denied::Unreachable("connection refused: is it up?".into()),
            },
            FromHelper::Log {
                error: true,
                text: "line one\nline two".into(),
            },
            FromHelper::Take {
                key: key(),
                attempt: 2,
            },
            FromHelper::Stopped,
        ] {
            let line = m.encode();
            assert_eq!(line.matches('\n').count(), 1);
            assert_eq!(FromHelper::decode(line.trim_end_matches('\n')), Ok(m));
        }
    }

    #[test]
    fn what_does_not_parse_is_an_error() {
        for bad in [
            "",
            "RUN",
            "RUN x 1 c o 0123456789abcdef",
            "RUN 1 1 bad/name o 0123456789abcdef",
            "RUN 1 1 c o 0123",
            "RUN 1 1 c %4 0123456789abcdef",
            "RUN 1 1 c  0123456789abcdef",
            "RUN 1 1 c o 0123456789abcdef extra",
            "END 1 c o 0123456789abcdef",
            "END 1 c o 0123456789abcdef nine",
            "ENTRY c o 0123456789abcdef f:1",
            "ENTRY bad/name o 0123456789abcdef f:1 x",
            "ENTRY c o 0123456789abcdef f:1 %zz",
            "LOADED 1",
            "LOADED -1 0",
        ] {
            assert!(ToHelper::decode(bad).is_err(), "{bad:?}");
        }
        for bad in ["GO", "GO -1", "NO 1", "NO 1 maybe", "LOG debug x", "HELLO"] {
            assert!(FromHelper::decode(bad).is_err(), "{bad:?}");
        }
    }

    fn loaded(place: &[u8], command: &[u8]) -> Loaded {
        Loaded {
            cluster: "nightly".into(),
            owner: b"al ice".to_vec(),
            entry: EntryKey(0x0123_4567_89ab_cdef),
            place: place.to_vec(),
            command: command.to_vec(),
            rerun: true,
        }
    }

    #[test]
    fn an_entry_line_is_bounded_and_its_long_place_and_command_are_cut() {
        let long = loaded(&[b'\n'; 5000], &"错误".repeat(2000).into_bytes());
        let line = ToHelper::Entry(long).encode();
        assert!(
            line.len() <= MAX_PLACE + MAX_COMMAND + 200,
            "{}",
            line.len()
        );
        let Ok(ToHelper::Entry(back)) = ToHelper::decode(line.trim_end_matches('\n')) else {
            panic!("{line}")
        };
        assert!(back.place.ends_with(b"...") && back.command.ends_with(b"..."));
        // The longest owner that fits still makes a line under the bound.
        let mut widest = loaded(&[b'\n'; 5000], &[b'\x01'; 5000]);
        widest.owner = vec![b'%'; MAX_OWNER / 3];
        assert!(widest.fits());
        assert!(ToHelper::Entry(widest.clone()).encode().len() <= MAX_LINE);
        widest.owner.push(b'%');
        assert!(!widest.fits());
    }

    #[test]
    fn lines_are_split_as_they_come_and_a_long_one_is_skipped_alone() {
        let mut reader = LineReader::default();
        assert_eq!(reader.push(b"GO 1\nGO"), vec![Ok("GO 1".to_string())]);
        assert_eq!(reader.push(b" 2\n"), vec![Ok("GO 2".to_string())]);
        // A line at the bound, in pieces: an error for it, and the next line reads.
        assert!(reader.push(&vec![b'x'; MAX_LINE - 10]).is_empty());
        assert!(reader.push(&[b'x'; 20]).is_empty());
        assert!(reader.buf.len() < MAX_LINE, "nothing of it is kept");
        let got = reader.push(&[&vec![b'y'; 5000][..], b"\nGO 3\n"].concat());
        assert_eq!(got.len(), 2);
        assert_eq!(
            got[0],
            Err(format!("a line of {} bytes (skipped)", MAX_LINE + 5010))
        );
        assert_eq!(got[1], Ok("GO 3".to_string()));
        let mut long = vec![b'x'; MAX_LINE];
        long.extend_from_slice(b"\nGO 4\n\xff\nGO 5\n");
        let got = reader.push(&long);
        assert!(got[0].is_err());
        assert_eq!(got[1], Ok("GO 4".to_string()));
        assert!(got[2].is_err(), "not UTF-8");
        assert_eq!(got[3], Ok("GO 5".to_string()));
    }

    #[test]
    fn texts_and_hosts_are_cut_by_escaped_bytes_and_read_back() {
        // 1,000 Cyrillic and CJK characters escape to 6,000 and 9,000 bytes.
        for text in [
            "Ошибка ".repeat(300),
            "错误".repeat(1000),
            "\u{7f}".repeat(5000),
        ] {
            for m in [
                FromHelper::Log {
                    error: true,
                    text: text.clone(),
                },
                FromHelper::No {
                    seq: 9,
                    why: Denied::Unreachable(text.clone()),
                },
                FromHelper::No {
                    seq: 9,
                    why: Denied::Taken(text.clone()),
                },
                FromHelper::No {
                    seq: 9,
                    why: Denied::Ran(text.clone()),
                },
            ] {
                let line = m.encode();
                assert!(line.len() <= MAX_TEXT + 40, "{} bytes", line.len());
                let back = FromHelper::decode(line.trim_end_matches('\n')).unwrap();
                let shown = match back {
                    FromHelper::Log { text, .. } => text,
                    FromHelper::No {
                        why: Denied::Unreachable(t) | Denied::Taken(t) | Denied::Ran(t),
                        ..
                    } => t,
                    other => panic!("{other:?}"),
                };
                assert!(shown.ends_with("..."), "{shown}");
                assert!(
                    text.starts_with(shown.trim_end_matches("...").trim_end_matches('\u{fffd}'))
                );
            }
        }
        assert_eq!(escape_cut(b"short", 10), "short");
        assert_eq!(cut_text("short", 10), "short");
        assert_eq!(cut_text("ééééé", 8), "éé...");
        assert_eq!(escape_cut(b"a b c d e f", 10), "a%20b...");
    }
}
