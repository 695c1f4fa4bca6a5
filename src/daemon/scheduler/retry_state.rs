//! `CRON_RETRY` across a restart: the retries waiting for their time, kept in
//! `STATE_DIR/retries` (`--state-dir`, beside the `CRON_MISSED=once` state file, read and
//! written by the same rules: `missed`'s [`read_state_file`] and [`write_state_file`]).
//!
//! Each retry is a line: the entry's id as `cronctl list` shows it, the minute its queued run
//! names, its slot (Unix minutes, `-`: none), its trigger, the attempt (`2/3`), when it is due
//! (epoch ms) and whether the entry's run before the slot failed. The file holds at most
//! [`MAX_KEPT`] retries (those due first); a file that is not trusted, not what the daemon
//! writes, or holds more is logged and ignored: then no retry is started from it.
//!
//! This file holds the text and its file; the scheduler (`scheduler/retry.rs`) decides when it
//! is written and what each retry read back becomes (`history::retry::after_restart`).

use std::path::Path;

use super::missed::{parse_records, read_state_file, write_state_file};
use crate::cluster::entry_id::LocalId;
use crate::history::{Attempt, Trigger};
use crate::timeline::UtcMinute;

/// The file's name in the state directory.
pub(in crate::daemon) const FILE: &str = "retries";

/// What the file starts with: a foreign or older file is not read as ours.
const MAGIC: &str = "crond-retries 1";

/// The most retries kept; those due last past it are not.
pub(in crate::daemon) const MAX_KEPT: usize = 100_000;

/// The longest line read (a line the daemon writes is about 65 bytes).
const MAX_LINE: usize = 80;

/// The largest file read: the magic line and [`MAX_KEPT`] lines.
const MAX_BYTES: u64 = (MAGIC.len() + 1 + MAX_KEPT * (MAX_LINE + 1)) as u64;

/// One retry waiting for its time, as the file keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::daemon) struct Kept {
    /// Its entry's id (`cronctl list`).
    pub(in crate::daemon) id: LocalId,
    /// The minute its queued run names (its entry's next run comes after it).
    pub(in crate::daemon) due: UtcMinute,
    /// Its slot (Unix second) and trigger, as its first attempt's record gave them.
    pub(in crate::daemon) slot: Option<i64>,
    pub(in crate::daemon) trigger: Trigger,
    pub(in crate::daemon) attempt: Attempt,
    /// When it is to start (epoch ms).
    pub(in crate::daemon) at_ms: i64,
    /// Whether the entry's run before the slot failed (`CRON_NOTIFY=change`).
    pub(in crate::daemon) previous_failed: bool,
}

/// The retries to keep of `all`: those due first, at most [`MAX_KEPT`], in the order they are
/// due; and how many were left out.
pub(in crate::daemon) fn bounded(mut all: Vec<Kept>) -> (Vec<Kept>, usize) {
    all.sort_unstable_by_key(|k| (k.at_ms, k.id, k.due));
    let left_out = all.len().saturating_sub(MAX_KEPT);
    all.truncate(MAX_KEPT);
    (all, left_out)
}

/// The file's text for `kept`: the magic line, then one line a retry.
pub(in crate::daemon) fn format(kept: &[Kept]) -> String {
    use std::fmt::Write;
    let mut text = String::with_capacity(MAGIC.len() + 1 + kept.len() * 66);
    text.push_str(MAGIC);
    text.push('\n');
    for k in kept {
        let slot = k
            .slot
            .map_or_else(|| "-".to_string(), |s| s.div_euclid(60).to_string());
        let _ = writeln!(
            text,
            "{} {} {slot} {} {}/{} {} {}",
            k.id,
            k.due.0,
            k.trigger.code(),
            k.attempt.number,
            k.attempt.of,
            k.at_ms,
            u8::from(k.previous_failed)
        );
    }
    text
}

/// The retries a file's text holds; `Err` when it is not such a text, or holds more than
/// [`MAX_KEPT`].
pub(in crate::daemon) fn parse(text: &str) -> Result<Vec<Kept>, String> {
    parse_records(text, (MAGIC, MAX_KEPT), ("a retry", "retries"), parse_line)
}

/// One line of the file.
fn parse_line(line: &str) -> Option<Kept> {
    if line.len() > MAX_LINE {
        return None;
    }
    let fields: Vec<&str> = line.split(' ').collect();
    let [id, due, slot, trigger, attempt, at_ms, failed] = fields[..] else {
        return None;
    };
    let minute = |s: &str| -> Option<i64> {
        let m: i64 = s.parse().ok()?;
        jiff::Timestamp::from_second(m.checked_mul(60)?).ok()?;
        Some(m)
    };
    let (number, of) = attempt.split_once('/')?;
    let attempt = Attempt {
        number: number.parse().ok()?,
        of: of.parse().ok()?,
    };
    let at_ms: i64 = at_ms.parse().ok()?;
    jiff::Timestamp::from_millisecond(at_ms).ok()?;
    Some(Kept {
        id: LocalId::parse(id)?,
        due: UtcMinute(minute(due)?),
        slot: match slot {
            "-" => None,
            s => Some(minute(s)? * 60),
        },
        trigger: Trigger::parse(trigger)?,
        attempt: (2..=attempt.of)
            .contains(&attempt.number)
            .then_some(attempt)?,
        at_ms,
        previous_failed: match failed {
            "0" => false,
            "1" => true,
            _ => return None,
        },
    })
}

/// The retries the file in `dir` holds: `Ok(None)` when there is no file, `Err` with the reason
/// when there is one the daemon must not trust or can't read as its own.
pub(in crate::daemon) fn read(dir: &Path) -> Result<Option<Vec<Kept>>, String> {
    read_state_file(dir, FILE, MAX_BYTES)?
        .map(|text| parse(&text))
        .transpose()
}

/// Writes `kept` to the file in `dir` (made if it is missing), atomically.
pub(in crate::daemon) fn write(dir: &Path, kept: &[Kept]) -> std::io::Result<()> {
    write_state_file(dir, FILE, format(kept).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(id: u64, at_ms: i64) -> Kept {
        Kept {
            id: LocalId(id),
            due: UtcMinute(29_410_260),
            slot: Some(29_410_260 * 60),
            trigger: Trigger::Schedule,
            attempt: Attempt { number: 2, of: 3 },
            at_ms,
            previous_failed: false,
        }
    }

    #[test]
    fn the_file_lists_the_retries_and_reads_back_and_a_damaged_one_says_nothing() {
        let catch_up = Kept {
            trigger: Trigger::CatchUp,
            slot: Some(29_410_200 * 60),
            attempt: Attempt { number: 11, of: 11 },
            previous_failed: true,
            ..kept(0x0123_4567_89ab, 1_764_615_631_250)
        };
        let all = vec![kept(0xabc, 1_764_615_601_000), catch_up];
        let text = format(&all);
        assert_eq!(
            text,
            "crond-retries 1\n\
             000000000abc 29410260 29410260 schedule 2/3 1764615601000 0\n\
             0123456789ab 29410260 29410200 catch-up 11/11 1764615631250 1\n"
        );
        assert!(text.lines().all(|l| l.len() <= MAX_LINE));
        assert_eq!(parse(&text), Ok(all));
        assert_eq!(parse("crond-retries 1\n"), Ok(Vec::new()));
        let none = Kept {
            slot: None,
            ..kept(1, 0)
        };
        assert_eq!(parse(&format(&[none])), Ok(vec![none]));
        for bad in [
            "",
            "crond-retries 2\n",
            "crond-paused 1\n000000000abc\n",
            "crond-retries 1\nabc 29410260 29410260 schedule 2/3 1764615601000 0\n",
            "crond-retries 1\n000000000abc 29410260 29410260 sometime 2/3 1764615601000 0\n",
            "crond-retries 1\n000000000abc 29410260 29410260 schedule 1/3 1764615601000 0\n",
            "crond-retries 1\n000000000abc 29410260 29410260 schedule 4/3 1764615601000 0\n",
            "crond-retries 1\n000000000abc 29410260 29410260 schedule 2/3 1764615601000 2\n",
            "crond-retries 1\n000000000abc 29410260 29410260 schedule 2/3 1764615601000\n",
            "crond-retries 1\n000000000abc 29410260  29410260 schedule 2/3 1764615601000 0\n",
            "crond-retries 1\n000000000abc 99999999999999 - schedule 2/3 1764615601000 0\n",
            "crond-retries 1\n000000000abc 29410260 - schedule 2/3 99999999999999999 0\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn at_most_a_hundred_thousand_retries_are_kept_those_due_first_and_a_larger_file_is_refused() {
        let all: Vec<Kept> = (0..MAX_KEPT as u64 + 2)
            .rev()
            .map(|n| kept(n, 1_764_615_600_000 + n as i64))
            .collect();
        let (first, left_out) = bounded(all);
        assert_eq!((first.len(), left_out), (MAX_KEPT, 2));
        assert_eq!(first[0].id, LocalId(0));
        assert_eq!(first.last().unwrap().id, LocalId(MAX_KEPT as u64 - 1));
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), &first).unwrap();
        let size = std::fs::metadata(dir.path().join(FILE)).unwrap().len();
        assert!(size < 7 << 20, "{size} bytes");
        assert_eq!(read(dir.path()).unwrap().map(|k| k.len()), Some(MAX_KEPT));
        // One more line: the file is refused whole.
        let mut text = format(&first);
        text.push_str("00000000ffff 29410260 29410260 schedule 2/3 1764615601000 0\n");
        std::fs::write(dir.path().join(FILE), &text).unwrap();
        assert_eq!(
            read(dir.path()),
            Err(format!("more than {MAX_KEPT} retries"))
        );
        // Past the bytes a full file can have: not read at all.
        let long = format!("{MAGIC}\n{}", "x".repeat(MAX_BYTES as usize));
        std::fs::write(dir.path().join(FILE), long).unwrap();
        assert!(read(dir.path()).unwrap_err().starts_with("larger than"));
    }

    #[test]
    fn a_retries_file_that_fails_the_trust_check_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let all = vec![kept(5, 1_764_615_601_000)];
        write(dir.path(), &all).unwrap();
        assert_eq!(read(dir.path()), Ok(Some(all)));
        let path = dir.path().join(FILE);
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o666)).unwrap();
        let why = read(dir.path()).unwrap_err();
        assert!(why.contains("writable by others"), "{why}");
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", &path).unwrap();
        assert_eq!(read(dir.path()), Err("a symlink".to_string()));
        assert_eq!(read(&dir.path().join("none")), Ok(None));
    }
}
