//! Files the daemon must not be fooled by: opens that refuse symlinks, the facts of an open file
//! read from its descriptor (not its path, which may have changed), and the pid-file lock.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

use nix::fcntl::{self, Flock, FlockArg, OFlag};
use nix::sys::stat::{self, FileStat, Mode, SFlag};

use super::user::{Gid, Uid};

/// What kind of file a descriptor or a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Regular,
    Directory,
    Symlink,
    Other,
}

/// What `fstat` (or `lstat`, for a link) says about a file: the facts the daemon's trust rule
/// and crontab(1) check, read once from the descriptor, never again from the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileFacts {
    pub kind: FileKind,
    pub owner: Uid,
    pub group: Gid,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
    pub links: u64,
    pub size: u64,
    /// Modification time in nanoseconds since the epoch (the fallback change check).
    pub mtime_ns: i128,
}

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

/// Makes the daemon's own directory if it is missing (mode 0755); returns its facts, which the
/// caller checks (owner, mode, kind: a symlink is not followed).
pub fn make_own_dir(path: &Path) -> io::Result<FileFacts> {
    match std::fs::DirBuilder::new().mode(0o755).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    link_facts(path)
}

/// Replaces `dir/name` with `bytes` so that a crash or a power loss leaves the old contents or
/// the new, never a mix: written beside (`name.new`, never following a link), synced, renamed
/// over, and the directory synced so the rename itself is on disk.
pub fn replace_file(dir: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let dir_file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir)?;
    let new = format!("{name}.new");
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o644)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(dir.join(&new))?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    fcntl::renameat(&dir_file, new.as_str(), &dir_file, name).map_err(io::Error::from)?;
    dir_file.sync_all()
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
