//! `CRON_MISSED=once` (crontab.5 "Extensions"): runs an entry missed while the daemon was not
//! running, or while the machine slept, are made up by one run.
//!
//! The daemon remembers one fact across restarts: the last minute it handled, in
//! `STATE_DIR/handled` (`--state-dir`, default /var/lib/crond), rewritten atomically (written
//! beside, synced, renamed over) whenever it starts runs and while entries with `once` exist,
//! and when it stops. Every fire time after that minute and before the one it starts in went
//! unhandled: at start-up each `once` entry with such a time runs once; the same check follows a
//! forward step of the clock (a resume from suspend). The file is trusted only if it is a
//! regular file of the daemon's user, not writable by others, small, and says what it should,
//! in a directory no one else can change: the state directory the daemon's user's and writable
//! by no one else, every directory above it owned by root (or that user) and not writable by
//! others unless sticky, no symlink on the way — the rule the writer follows too, every step
//! relative to the directory's descriptor. Anything else is logged and ignored (then nothing is
//! made up: no run is invented from a file the daemon did not write).
//!
//! This file reads and writes the state file; the scheduler (`daemon/scheduler/`) decides
//! when, and which runs are made up.

use std::io::Read;
use std::path::Path;

use jiff::Timestamp;

use crate::sys::fs;
use crate::timeline::UtcMinute;
use crate::trust;

/// The file's name in the state directory.
pub(in crate::daemon) const FILE: &str = "handled";

/// What the file starts with: a foreign or older file is not read as ours.
const MAGIC: &str = "crond-handled 1";

/// The largest file read (it holds two short lines).
const MAX_BYTES: u64 = 4096;

/// The file's text for minute `handled`: the magic line, the minute (Unix minutes), and the
/// time for a reader.
pub(in crate::daemon) fn format(handled: UtcMinute) -> String {
    let when = Timestamp::from_second(handled.start_second())
        .map(|t| t.to_string())
        .unwrap_or_default();
    format!("{MAGIC}\n{}\n{when}\n", handled.0)
}

/// The minute a file's text holds; `None` when it is not such a text.
pub(in crate::daemon) fn parse(text: &str) -> Option<UtcMinute> {
    let mut lines = text.lines();
    if lines.next()? != MAGIC {
        return None;
    }
    let minute: i64 = lines.next()?.trim().parse().ok()?;
    Timestamp::from_second(minute.checked_mul(60)?).ok()?;
    Some(UtcMinute(minute))
}

/// Writes minute `handled` to the state file in `dir` (made if it is missing), atomically.
pub(in crate::daemon) fn write(dir: &Path, handled: UtcMinute) -> std::io::Result<()> {
    write_state_file(dir, FILE, format(handled).as_bytes())
}

/// Writes `text` to the file `name` in the state directory `dir` (made if it is missing),
/// atomically (written beside, synced, renamed over): the one way the daemon writes a state
/// file.
pub(in crate::daemon) fn write_state_file(
    dir: &Path,
    name: &str,
    text: &[u8],
) -> std::io::Result<()> {
    open_state_dir(dir, true).and_then(|fd| fs::replace_file_at(&fd, name, text))
}

/// The minute the state file in `dir` holds: `Ok(None)` when there is no file, `Err` with the
/// reason when there is one the daemon must not trust.
pub(in crate::daemon) fn read(dir: &Path) -> Result<Option<UtcMinute>, String> {
    read_trusted(dir)
}

/// The state directory `dir` (`make`: made if it is missing), for the writer and the reader
/// alike: every directory on its path opened relative to the one above without following a
/// link and checked on its descriptor (`fs::open_checked_dir`), and `dir` itself the daemon's
/// user's, writable by no one else. So no one but root can put a file in it, or swap it or a
/// directory above it for another (a symlink, their own directory, an old copy kept aside whose
/// `handled` would replay make-up runs).
fn open_state_dir(dir: &Path, make: bool) -> std::io::Result<std::os::fd::OwnedFd> {
    fs::open_checked_dir(
        dir,
        crate::sys::user::effective_uid(),
        fs::LastDir::Own { make },
    )
}

/// The minute in the file `handled` in the state directory `dir`: `Ok(None)` when there is no
/// file, `Err` with the reason when there is one (or a directory) the daemon must not trust.
fn read_trusted(dir: &Path) -> Result<Option<UtcMinute>, String> {
    let Some(text) = read_state_file(dir, FILE, MAX_BYTES)? else {
        return Ok(None);
    };
    parse(&text)
        .map(Some)
        .ok_or_else(|| "not what the daemon writes there".to_string())
}

/// The records of a state file's `text`: its first line must be `magic`, then each line is one
/// record, read by `record` (`None`: not one; `one` names a record in the error), `max` at
/// most (`many` names them).
pub(in crate::daemon) fn parse_records<T>(
    text: &str,
    (magic, max): (&str, usize),
    (one, many): (&str, &str),
    record: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, String> {
    let mut lines = text.lines();
    if lines.next() != Some(magic) {
        return Err("not what the daemon writes there".to_string());
    }
    let mut records = Vec::new();
    for line in lines {
        if records.len() == max {
            return Err(format!("more than {max} {many}"));
        }
        let r = record(line).ok_or_else(|| format!("{:?} is not {one}", line.escape_debug()))?;
        records.push(r);
    }
    Ok(records)
}

/// The text of the file `name` in the state directory `dir`, at most `max_bytes`: `Ok(None)`
/// when there is no file, `Err` with the reason when there is one (or a directory) the daemon
/// must not trust (the checks above), or a larger one. The one way the daemon reads a state
/// file.
pub(in crate::daemon) fn read_state_file(
    dir: &Path,
    name: &str,
    max_bytes: u64,
) -> Result<Option<String>, String> {
    let dir_fd = match open_state_dir(dir, false) {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("the state directory is not trusted: {e}")),
    };
    let (file, facts) = match fs::open_no_follow_at(&dir_fd, name.as_ref()) {
        Ok(opened) => opened,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if fs::is_symlink_refusal(&e) => return Err("a symlink".to_string()),
        Err(e) => return Err(e.to_string()),
    };
    trust::check_state_file(&facts, crate::sys::user::effective_uid())
        .map_err(|why| why.to_string())?;
    let mut text = String::new();
    file.take(max_bytes + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() as u64 > max_bytes {
        return Err(format!("larger than {max_bytes} bytes"));
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_says_the_minute_and_reads_back() {
        let text = format(UtcMinute(29_410_260));
        assert_eq!(text, "crond-handled 1\n29410260\n2025-12-01T19:00:00Z\n");
        assert_eq!(parse(&text), Some(UtcMinute(29_410_260)));
    }

    #[test]
    fn a_state_file_past_four_kibibytes_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE);
        let mut text = format(UtcMinute(29_410_260));
        std::fs::write(&path, &text).unwrap();
        assert_eq!(read_trusted(dir.path()), Ok(Some(UtcMinute(29_410_260))));
        text.push_str(&"x".repeat(MAX_BYTES as usize));
        std::fs::write(&path, &text).unwrap();
        assert_eq!(
            read_trusted(dir.path()),
            Err("larger than 4096 bytes".to_string())
        );
        std::fs::remove_file(&path).unwrap();
        assert_eq!(read_trusted(dir.path()), Ok(None));
        assert_eq!(read_trusted(&dir.path().join("none")), Ok(None));
    }

    #[test]
    fn the_state_directory_is_trusted_only_where_no_one_else_can_change_it() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let tmp = tempfile::tempdir().unwrap();
        let mode = |p: &Path, m: u32| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap()
        };
        let with_file = |d: &Path| {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join(FILE), format(UtcMinute(29_410_260))).unwrap();
        };
        let good = tmp.path().join("good");
        with_file(&good);
        assert_eq!(read_trusted(&good), Ok(Some(UtcMinute(29_410_260))));
        // Under a directory others may write (not sticky): they could swap `state` for an old
        // copy. Neither read nor written, nor made.
        let open = tmp.path().join("open");
        std::fs::create_dir(&open).unwrap();
        mode(&open, 0o777);
        let state = open.join("state");
        with_file(&state);
        let why = read_trusted(&state).unwrap_err();
        assert!(
            why.ends_with(&format!(
                "{}: writable by group or others (mode 777)",
                open.display()
            )),
            "{why}"
        );
        assert!(open_state_dir(&state, true).is_err());
        assert!(open_state_dir(&open.join("new"), true).is_err());
        assert!(!open.join("new").exists(), "not made there");
        // Writable by others itself, sticky or not.
        for m in [0o777, 0o1777, 0o775] {
            mode(&good, m);
            let why = read_trusted(&good).unwrap_err();
            assert!(why.contains("writable by group or others"), "{why}");
        }
        mode(&good, 0o755);
        // A symlink at the state directory's path, or on the way to it.
        let link = tmp.path().join("link");
        symlink(&good, &link).unwrap();
        for path in [link.clone(), link.join("sub")] {
            let why = read_trusted(&path).unwrap_err();
            assert!(
                why.ends_with(&format!(
                    "{}: a symlink (give the directory's real path)",
                    link.display()
                )),
                "{why}"
            );
        }
        // A sticky directory on the way is fine: others can't rename what they don't own.
        let sticky = tmp.path().join("sticky");
        std::fs::create_dir(&sticky).unwrap();
        mode(&sticky, 0o1777);
        let fd = open_state_dir(&sticky.join("state"), true).unwrap();
        fs::replace_file_at(&fd, FILE, format(UtcMinute(29_410_261)).as_bytes()).unwrap();
        assert_eq!(
            read_trusted(&sticky.join("state")),
            Ok(Some(UtcMinute(29_410_261)))
        );
        assert!(!sticky.join("state").join("handled.new").exists());
    }

    #[test]
    fn a_file_that_is_not_ours_or_is_damaged_says_nothing() {
        for bad in [
            "",
            "crond-handled 1\n",
            "crond-handled 2\n29410260\n",
            "crond-handled 1\nsoon\n",
            "crond-handled 1\n99999999999999999\n",
            "anacron 1\n29410260\n",
            "crond-handled 1\x00\n29410260\n",
        ] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
    }
}
