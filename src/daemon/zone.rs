//! The daemon's local zone: read from /etc/localtime (or `--localtime`) itself, not through a
//! cache, and looked at again every minute, as Debian's cron does, so that a change is seen
//! with or without inotify and however it was made — the link pointed elsewhere, the file
//! replaced by a rename, or rewritten in place by a tzdata upgrade. `TZ` in the daemon's
//! environment, when set, wins, as for any program (and then the file is not looked at).

use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use jiff::tz::TimeZone;

use crate::schedule::Zone;

/// What says that the zone file changed: where the link leads and the times and sizes of the
/// link and of the file. Equal stamps: the same zone, no need to read it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Stamp {
    target: Option<PathBuf>,
    link: (i64, i64, u64),
    file: Option<(i64, i64, u64, u64)>,
}

/// The stamp of the zone file now; `None` when the zone comes from `TZ`.
pub(super) fn stamp(path: &Path) -> Option<Stamp> {
    if from_env() {
        return None;
    }
    let link = std::fs::symlink_metadata(path).ok();
    let file = std::fs::metadata(path).ok();
    Some(Stamp {
        target: std::fs::read_link(path).ok(),
        link: link.map_or((0, 0, 0), |m| (m.mtime(), m.mtime_nsec(), m.ino())),
        file: file.map(|m| (m.mtime(), m.mtime_nsec(), m.ino(), m.size())),
    })
}

fn from_env() -> bool {
    std::env::var_os("TZ").is_some_and(|tz| !tz.is_empty())
}

/// The largest zone file read: TZif files are a few KiB (the largest in tzdata is under
/// 4 KiB); anything bigger is not one.
pub(super) const MAX_ZONE_FILE: u64 = 256 << 10;

/// The local zone: `TZ`'s if set, else the zone file's (named for the tz database entry its
/// link leads to, `localtime` when it is not a link). An error names what is wrong with the
/// file; the caller decides what stands instead.
pub(super) fn read(path: &Path) -> Result<Zone, String> {
    if from_env() {
        let tz = TimeZone::system();
        let name = tz.iana_name().unwrap_or("localtime").to_string();
        return Ok(Zone::new(&name, tz));
    }
    read_file(path)
}

/// The zone of the file at `path`, whatever `TZ` says.
fn read_file(path: &Path) -> Result<Zone, String> {
    let name = std::fs::read_link(path)
        .ok()
        .and_then(|target| {
            let target = target.to_string_lossy().into_owned();
            target
                .split_once("zoneinfo/")
                .map(|(_, name)| name.to_string())
        })
        .unwrap_or_else(|| "localtime".to_string());
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_ZONE_FILE + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("can't read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_ZONE_FILE {
        return Err(format!(
            "{} is larger than {} KiB: not a zone file",
            path.display(),
            MAX_ZONE_FILE >> 10
        ));
    }
    TimeZone::tzif(&name, &bytes)
        .map(|tz| Zone::new(&name, tz))
        .map_err(|e| format!("{} is not a zone file: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zone_file_is_read_whole_and_anything_else_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("localtime");
        std::os::unix::fs::symlink("/usr/share/zoneinfo/America/New_York", &link).unwrap();
        assert_eq!(read_file(&link).unwrap().name(), "America/New_York");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; MAX_ZONE_FILE as usize + 1]).unwrap();
        assert!(read_file(&big).unwrap_err().contains("larger than 256 KiB"));
        let junk = dir.path().join("junk");
        std::fs::write(&junk, b"not tzif").unwrap();
        assert!(read_file(&junk).unwrap_err().contains("is not a zone file"));
        assert!(
            read_file(&dir.path().join("missing"))
                .unwrap_err()
                .contains("can't read")
        );
    }
}
