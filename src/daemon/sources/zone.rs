//! The daemon's local zone: read from /etc/localtime (or `--localtime`) itself, not through a
//! cache, and looked at again every minute, as Debian's cron does, so that a change is seen
//! with or without inotify and however it was made — the link pointed elsewhere, the file
//! replaced by a rename, or rewritten in place by a tzdata upgrade. `TZ` in the daemon's
//! environment, when set, wins, as for any program (and then the file is not looked at). The
//! reading itself is [`crate::localtime`]'s; here, what says the file changed.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub(in crate::daemon) use crate::localtime::read;

/// What says that the zone file changed: where the link leads and the times and sizes of the
/// link and of the file. Equal stamps: the same zone, no need to read it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::daemon) struct Stamp {
    target: Option<PathBuf>,
    link: (i64, i64, u64),
    file: Option<(i64, i64, u64, u64)>,
}

/// The stamp of the zone file now; `None` when the zone comes from `TZ`.
pub(in crate::daemon) fn stamp(path: &Path) -> Option<Stamp> {
    if crate::localtime::from_env() {
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
