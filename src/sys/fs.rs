//! Files the daemon must not be fooled by: opens that refuse symlinks, the facts of an open file
//! read from its descriptor (not its path, which may have changed), and the pid-file lock.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{self, Flock, FlockArg, OFlag};
use nix::sys::stat::{self, FileStat, Mode, SFlag};

use crate::database::trust;
use crate::types::{Gid, Uid};

pub use crate::types::{FileFacts, FileKind};

impl FileFacts {
    fn from_stat(st: &FileStat) -> FileFacts {
        let kind = match SFlag::from_bits_truncate(st.st_mode & SFlag::S_IFMT.bits()) {
            SFlag::S_IFREG => FileKind::Regular,
            SFlag::S_IFDIR => FileKind::Directory,
            SFlag::S_IFLNK => FileKind::Symlink,
            _ => FileKind::Other,
        };
        FileFacts {
            kind,
            owner: Uid(st.st_uid),
            group: Gid(st.st_gid),
            mode: st.st_mode & 0o7777,
            #[allow(clippy::useless_conversion)] // nlink_t is u32 on some targets
            links: u64::from(st.st_nlink),
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime_ns: i128::from(st.st_mtime) * 1_000_000_000 + i128::from(st.st_mtime_nsec),
        }
    }
}

/// The facts of an open descriptor (`fstat`; an `O_PATH` descriptor too).
pub fn facts_of(fd: impl AsFd) -> io::Result<FileFacts> {
    stat::fstat(fd)
        .map(|st| FileFacts::from_stat(&st))
        .map_err(io::Error::from)
}

/// Opens `name`, relative to `dir` (or the working directory for [`AT_CWD`]), for reading
/// without following a final symlink (`O_NOFOLLOW`: a link gives `ELOOP`) and without blocking
/// on a FIFO; returns the file and the facts of what was opened. The one no-follow open of the
/// crate: the daemon's loader and crontab(1) both come here.
pub fn open_no_follow_at(dir: impl AsFd, name: &OsStr) -> io::Result<(File, FileFacts)> {
    let flags = OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    let fd = fcntl::openat(dir, name, flags, Mode::empty()).map_err(io::Error::from)?;
    let facts = facts_of(&fd)?;
    Ok((File::from(fd), facts))
}

/// The working directory, for the `*_at` functions.
pub const AT_CWD: BorrowedFd<'static> = fcntl::AT_FDCWD;

/// [`open_no_follow_at`] a path.
pub fn open_no_follow(path: &Path) -> io::Result<(File, FileFacts)> {
    open_no_follow_at(AT_CWD, path.as_os_str())
}

/// Opens for reading, following symlinks (only after the link itself was checked).
pub fn open_following(path: &Path) -> io::Result<(File, FileFacts)> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    let facts = facts_of(&file)?;
    Ok((file, facts))
}

/// The facts of a path itself (a symlink is not followed).
pub fn link_facts(path: &Path) -> io::Result<FileFacts> {
    stat::lstat(path)
        .map(|st| FileFacts::from_stat(&st))
        .map_err(io::Error::from)
}

/// Whether the error is "this was a symlink" from an `O_NOFOLLOW` open.
pub fn is_symlink_refusal(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// What the last directory of a path given to [`open_checked_dir`] must be, besides what every
/// directory on the path must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastDir {
    /// The daemon's own (the state directory): owned by `owner` and writable by no one else,
    /// sticky or not; with `make`, made (mode 0755) if it is missing.
    Own { make: bool },
    /// A directory the daemon puts a name in (the metrics socket's): as every other one.
    Holder,
}

/// Opens the directory `path` (absolute) one component at a time, each relative to the one
/// above with `O_NOFOLLOW | O_DIRECTORY`, and checks each on the descriptor it got (never again
/// by path): a directory, owned by root or `owner`, and not writable by group or others unless
/// it is sticky (then others can rename or remove only what they own). A symlink anywhere on
/// the path is refused, `..` too. Returns the last directory's descriptor, for the `*at` calls.
///
/// Why every directory and not only the last: whoever can write a directory on the path can
/// rename the one below it away and put another in its place — a symlink, a directory of their
/// own, or an old copy of the daemon's state directory kept aside — between any two calls by
/// path, or between two starts of the daemon. Walked this way, each step is the directory that
/// was checked, and no one but root (or `owner`) can change what the last one holds.
pub fn open_checked_dir(path: &Path, owner: Uid, last: LastDir) -> io::Result<OwnedFd> {
    use std::path::Component;
    let refuse = |at: &Path, why: String| io::Error::other(format!("{}: {why}", at.display()));
    let mut at = PathBuf::from("/");
    let mut components = path.components().peekable();
    if components.next() != Some(Component::RootDir) {
        return Err(refuse(path, "not an absolute path".into()));
    }
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC;
    let mut dir = fcntl::open("/", flags, Mode::empty()).map_err(io::Error::from)?;
    let mut is_last = components.peek().is_none();
    check_dir(&dir, &at, owner, is_last.then_some(last))?;
    while let Some(component) = components.next() {
        let name = match component {
            Component::Normal(name) => name,
            Component::CurDir => continue,
            _ => return Err(refuse(path, "a path with `..`".into())),
        };
        at.push(name);
        is_last = components.peek().is_none();
        let opened = match fcntl::openat(&dir, name, flags, Mode::empty()) {
            Err(nix::errno::Errno::ENOENT) if is_last && last == (LastDir::Own { make: true }) => {
                match stat::mkdirat(&dir, name, Mode::from_bits_truncate(0o755)) {
                    Ok(()) | Err(nix::errno::Errno::EEXIST) => {}
                    Err(e) => return Err(refuse(&at, io::Error::from(e).to_string())),
                }
                fcntl::openat(&dir, name, flags, Mode::empty())
            }
            other => other,
        };
        dir = match opened {
            Ok(fd) => fd,
            Err(e @ (nix::errno::Errno::ELOOP | nix::errno::Errno::ENOTDIR)) => {
                let what = match stat::fstatat(&dir, name, fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
                    Ok(st) if FileFacts::from_stat(&st).kind == FileKind::Symlink => {
                        "a symlink (give the directory's real path)".to_string()
                    }
                    _ => io::Error::from(e).to_string(),
                };
                return Err(refuse(&at, what));
            }
            Err(nix::errno::Errno::ENOENT) => {
                return Err(io::Error::new(
                    io::ErrorKind::NotFound,
                    format!("{}: no such directory", at.display()),
                ));
            }
            Err(e) => return Err(refuse(&at, io::Error::from(e).to_string())),
        };
        check_dir(&dir, &at, owner, is_last.then_some(last))?;
    }
    Ok(dir)
}

/// [`open_checked_dir`]'s rule for one directory (`last`: the rule of the last one, if it is),
/// as [`trust::check_dir`] decides it.
fn check_dir(dir: &OwnedFd, at: &Path, owner: Uid, last: Option<LastDir>) -> io::Result<()> {
    let facts = facts_of(dir)?;
    let which = match last {
        Some(LastDir::Own { .. }) => trust::Dir::Own,
        _ => trust::Dir::Other,
    };
    trust::check_dir(&facts, owner, which)
        .map_err(|why| io::Error::other(format!("{}: {why}", at.display())))
}

/// Renames `from` over `to` in the directory `dir` in one step (readers see the old file or the
/// new one, never half), then syncs the directory so that the rename itself survives a crash or
/// a power loss. The crate's one atomic replace: [`replace_file_at`] and crontab(1)'s install
/// (`SpoolDir::rename`) both end here.
///
/// `dir` may be an `O_PATH` descriptor: the sync reopens it for reading. When the caller may not
/// read the directory — crontab(1) run by a user, in Debian's spool directory (mode 1730: the
/// group may write and search it, not list it) — the sync is left out; the rename is done and
/// atomic all the same, and only root's writes get the stronger promise.
pub fn rename_durably_at(dir: BorrowedFd<'_>, from: &OsStr, to: &OsStr) -> io::Result<()> {
    fcntl::renameat(dir, from, dir, to).map_err(io::Error::from)?;
    let flags = OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
    match fcntl::openat(dir, ".", flags, Mode::empty()) {
        Ok(readable) => nix::unistd::fsync(&readable).map_err(io::Error::from),
        Err(nix::errno::Errno::EACCES) => Ok(()),
        Err(e) => Err(io::Error::from(e)),
    }
}

/// Replaces `name` in the directory `dir` (from [`open_checked_dir`]) with `bytes` so that a
/// crash or a power loss leaves the old contents or the new, never a mix: written beside
/// (`name.new`, opened relative to `dir`, never following a link, and checked to be a regular
/// file with one link), synced, and renamed over with [`rename_durably_at`].
pub fn replace_file_at(dir: &OwnedFd, name: &str, bytes: &[u8]) -> io::Result<()> {
    let new = format!("{name}.new");
    let fd = fcntl::openat(
        dir,
        new.as_str(),
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_TRUNC | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(0o644),
    )
    .map_err(io::Error::from)?;
    let facts = facts_of(&fd)?;
    if facts.kind != FileKind::Regular || facts.links != 1 {
        return Err(io::Error::other(format!(
            "{new}: not a regular file with one link"
        )));
    }
    let mut file = File::from(fd);
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    rename_durably_at(dir.as_fd(), OsStr::new(&new), OsStr::new(name))
}

/// A held exclusive lock on the pid file; released when the daemon exits.
#[derive(Debug)]
pub struct PidLock {
    _file: Flock<File>,
}

/// Why the pid file could not be taken.
#[derive(Debug)]
pub enum LockError {
    /// Another process holds the lock; its pid as the file says, if readable.
    Held(Option<i32>),
    Io(io::Error),
}

/// Opens (creating, mode 0644) and locks the pid file, then writes `pid`.
pub fn lock_pid_file(path: &Path) -> Result<PidLock, LockError> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o644)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
        .map_err(LockError::Io)?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(lock) => Ok(PidLock { _file: lock }),
        Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
            let mut text = String::new();
            let _ = file.read_to_string(&mut text);
            Err(LockError::Held(text.trim().parse().ok()))
        }
        Err((_, e)) => Err(LockError::Io(e.into())),
    }
}

impl PidLock {
    /// The descriptor number of the locked file (Debian logs it: `pidfile fd = 3`).
    pub fn fd(&self) -> i32 {
        use std::os::fd::AsRawFd;
        self._file.as_raw_fd()
    }
    /// Replaces the file's content with `pid` and a newline.
    pub fn write_pid(&mut self, pid: i32) -> io::Result<()> {
        let file: &mut File = &mut self._file;
        file.set_len(0)?;
        file.rewind()?;
        writeln!(file, "{pid}")?;
        file.flush()
    }
}

/// Creates a file that must not exist yet (`O_EXCL`); `Ok(false)` if it existed.
pub fn create_marker(path: &Path) -> io::Result<bool> {
    match OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o644)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(path)
    {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rename_through_a_path_only_descriptor_replaces_the_file_and_syncs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("old"), b"old").unwrap();
        std::fs::write(dir.path().join("new"), b"new").unwrap();
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = fcntl::openat(AT_CWD, dir.path(), flags, Mode::empty()).unwrap();
        rename_durably_at(fd.as_fd(), OsStr::new("new"), OsStr::new("old")).unwrap();
        assert_eq!(std::fs::read(dir.path().join("old")).unwrap(), b"new");
        assert!(!dir.path().join("new").exists());
    }
}
