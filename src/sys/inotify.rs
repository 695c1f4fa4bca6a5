//! The inotify descriptor, read in the daemon's poll loop (no thread, unlike the `notify` crate).

use std::ffi::OsString;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use nix::sys::inotify::{AddWatchFlags as W, InitFlags, Inotify};

/// A watched directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WatchId(nix::sys::inotify::WatchDescriptor);

/// One change, reduced to what the daemon acts on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub watch: WatchId,
    /// The file inside the directory; `None` for the directory itself.
    pub name: Option<OsString>,
    /// Only created (a symlink or hard link appears without a close-write).
    pub created_only: bool,
    /// Events were lost: the watch is gone or the queue overflowed. Rescan.
    pub lost: Option<Lost>,
}

/// Why events were lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lost {
    /// The watched directory was removed or moved away.
    Watch,
    /// More events came than the kernel queues (`fs.inotify.max_queued_events`).
    Overflow,
}

#[derive(Debug)]
pub struct Watcher {
    ino: Inotify,
}

const EVENTS: W = W::IN_CLOSE_WRITE
    .union(W::IN_MOVED_TO)
    .union(W::IN_MOVED_FROM)
    .union(W::IN_DELETE)
    .union(W::IN_ATTRIB)
    .union(W::IN_CREATE)
    .union(W::IN_DELETE_SELF)
    .union(W::IN_MOVE_SELF)
    .union(W::IN_ONLYDIR);

impl Watcher {
    pub fn new() -> io::Result<Watcher> {
        Inotify::init(InitFlags::IN_CLOEXEC | InitFlags::IN_NONBLOCK)
            .map(|ino| Watcher { ino })
            .map_err(io::Error::from)
    }

    /// Watches a directory for files written, renamed, removed or re-permissioned.
    pub fn watch_dir(&self, dir: &Path) -> io::Result<WatchId> {
        self.ino
            .add_watch(dir, EVENTS)
            .map(WatchId)
            .map_err(io::Error::from)
    }

    /// Everything queued now (never blocks).
    pub fn read(&self) -> io::Result<Vec<Change>> {
        let mut out = Vec::new();
        loop {
            match self.ino.read_events() {
                Ok(events) if events.is_empty() => break,
                Ok(events) => {
                    for e in events {
                        let lost = if e.mask.contains(W::IN_Q_OVERFLOW) {
                            Some(Lost::Overflow)
                        } else if e
                            .mask
                            .intersects(W::IN_DELETE_SELF | W::IN_MOVE_SELF | W::IN_IGNORED)
                        {
                            Some(Lost::Watch)
                        } else {
                            None
                        };
                        let created_only = e.mask == W::IN_CREATE;
                        out.push(Change {
                            watch: WatchId(e.wd),
                            name: e.name,
                            created_only,
                            lost,
                        });
                    }
                }
                Err(nix::errno::Errno::EAGAIN) => break,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Ok(out)
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.ino.as_fd()
    }
}
