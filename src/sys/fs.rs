//! Files the daemon must not be fooled by: opens that refuse symlinks or show each one on the
//! way to the caller's rule, the facts of an open file read from its descriptor (not its path,
//! which may have changed), and the pid-file lock.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use nix::fcntl::{self, Flock, FlockArg, OFlag};
use nix::sys::stat::{self, FileStat, Mode, SFlag};

use crate::trust;
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

/// The most symlinks one [`open_walked`] follows, as the kernel's own path lookup (`ELOOP`
/// past it).
pub const MAX_LINKS: usize = 40;

/// What [`open_walked`] meets on its way, shown to the caller's rule before the walk goes on:
/// a symlink it is about to follow or a directory it is about to go through (`facts`, from the
/// descriptor that holds it), and where (`at`: the path as resolved so far, this name last).
#[derive(Debug, Clone, Copy)]
pub struct Met<'a> {
    pub at: &'a Path,
    pub facts: FileFacts,
}

/// A file [`open_walked`] opened: the file, its facts, and the path it was found at once
/// every symlink was followed.
#[derive(Debug)]
pub struct Walked {
    pub file: File,
    pub facts: FileFacts,
    pub resolved: PathBuf,
}

/// Why [`open_walked`] did not open the file.
#[derive(Debug)]
pub enum WalkError<E> {
    /// The caller's rule refused a link or a directory on the way.
    Refused(E),
    Io(io::Error),
}

impl<E> From<io::Error> for WalkError<E> {
    fn from(e: io::Error) -> Self {
        WalkError::Io(e)
    }
}

impl<E> From<nix::errno::Errno> for WalkError<E> {
    fn from(e: nix::errno::Errno) -> Self {
        WalkError::Io(e.into())
    }
}

/// Opens `path` for reading as [`open_no_follow_at`] does, resolving it one component at a
/// time as the kernel would, but showing `rule` every directory it goes through (the first
/// one, `/` or the working directory, too) and every symlink before it is followed, each
/// from a descriptor that holds it (`O_PATH | O_NOFOLLOW`: a link read with `readlinkat` is
/// the link that was shown). A link the rule refuses is not followed, and the open ends
/// there. At most [`MAX_LINKS`] links are followed.
///
/// Why each link and not only the last: following the path in one `open` trusts whoever owns
/// any link on the way, and the owner of a link chooses where the rest of the path leads.
pub fn open_walked<E>(
    path: &Path,
    rule: &mut dyn FnMut(Met<'_>) -> Result<(), E>,
) -> Result<Walked, WalkError<E>> {
    let (start, at) = match path.is_absolute() {
        true => ("/", PathBuf::from("/")),
        false => (".", PathBuf::new()),
    };
    let mut walk = Walk {
        dir: fcntl::openat(AT_CWD, start, Walk::DIR, Mode::empty())?,
        at,
        rest: std::collections::VecDeque::new(),
        links: 0,
    };
    walk.check_dir(rule)?;
    walk.go_to(path, rule)?;
    while let Some(component) = walk.rest.pop_front() {
        use std::path::Component;
        match Path::new(&component).components().next() {
            Some(Component::Normal(name)) => {
                if let Some(found) = walk.step(name, rule)? {
                    return Ok(found);
                }
            }
            Some(Component::ParentDir) => walk.enter(OsStr::new(".."), None, rule)?,
            _ => {}
        }
    }
    Err(WalkError::Io(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: not a path to a file", path.display()),
    )))
}

/// Where [`open_walked`] is: the directory it is in, its path as resolved so far, the
/// components still to go, and how many links it followed.
struct Walk {
    dir: OwnedFd,
    at: PathBuf,
    rest: std::collections::VecDeque<std::ffi::OsString>,
    links: usize,
}

impl Walk {
    const DIR: OFlag = OFlag::O_PATH
        .union(OFlag::O_DIRECTORY)
        .union(OFlag::O_NOFOLLOW)
        .union(OFlag::O_CLOEXEC);
    const HOLD: OFlag = OFlag::O_PATH
        .union(OFlag::O_NOFOLLOW)
        .union(OFlag::O_CLOEXEC);

    /// Puts `path`'s components in front of those still to go: from `/` for an absolute link
    /// target (`/` shown to the rule again), else from where the walk is (a relative target
    /// is relative to the link's directory).
    fn go_to<E>(
        &mut self,
        path: &Path,
        rule: &mut dyn FnMut(Met<'_>) -> Result<(), E>,
    ) -> Result<(), WalkError<E>> {
        if path.is_absolute() && self.at != Path::new("/") {
            self.dir = fcntl::openat(AT_CWD, "/", Self::DIR, Mode::empty())?;
            self.at = PathBuf::from("/");
            self.check_dir(rule)?;
        }
        let names = path.components().filter(|c| c.as_os_str() != "/");
        for (i, name) in names.enumerate() {
            self.rest.insert(i, name.as_os_str().to_os_string());
        }
        Ok(())
    }

    /// Shows the rule the directory the walk is in.
    fn check_dir<E>(
        &self,
        rule: &mut dyn FnMut(Met<'_>) -> Result<(), E>,
    ) -> Result<(), WalkError<E>> {
        let facts = facts_of(&self.dir)?;
        rule(Met {
            at: &self.at,
            facts,
        })
        .map_err(WalkError::Refused)
    }

    /// Goes into the directory `name`, held by `held` (`None`: `..`, opened here), which the
    /// rule is shown.
    fn enter<E>(
        &mut self,
        name: &OsStr,
        held: Option<OwnedFd>,
        rule: &mut dyn FnMut(Met<'_>) -> Result<(), E>,
    ) -> Result<(), WalkError<E>> {
        match held {
            Some(fd) => {
                self.dir = fd;
                self.at.push(name);
            }
            None => {
                self.dir = fcntl::openat(&self.dir, name, Self::DIR, Mode::empty())?;
                self.at.pop();
            }
        }
        self.check_dir(rule)
    }

    /// One name: the file itself when it is the last and not a link (returned), else a
    /// directory gone into or a link followed.
    fn step<E>(
        &mut self,
        name: &OsStr,
        rule: &mut dyn FnMut(Met<'_>) -> Result<(), E>,
    ) -> Result<Option<Walked>, WalkError<E>> {
        if self.rest.is_empty() {
            match open_no_follow_at(&self.dir, name) {
                Ok((file, facts)) => {
                    let resolved = self.at.join(name);
                    return Ok(Some(Walked {
                        file,
                        facts,
                        resolved,
                    }));
                }
                Err(e) if is_symlink_refusal(&e) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let held = fcntl::openat(&self.dir, name, Self::HOLD, Mode::empty())?;
        let facts = facts_of(&held)?;
        match facts.kind {
            FileKind::Symlink => self.follow(name, held, facts, rule)?,
            FileKind::Directory => self.enter(name, Some(held), rule)?,
            // Replaced since the open above: looked at again, as a link followed.
            _ if self.rest.is_empty() => {
                self.count_link()?;
                self.rest.push_front(name.to_os_string());
            }
            _ => return Err(io::Error::from_raw_os_error(libc::ENOTDIR).into()),
        }
        Ok(None)
    }

    /// Follows the link `name`, held by `held`, once the rule has accepted it.
    fn follow<E>(
        &mut self,
        name: &OsStr,
        held: OwnedFd,
        facts: FileFacts,
        rule: &mut dyn FnMut(Met<'_>) -> Result<(), E>,
    ) -> Result<(), WalkError<E>> {
        let at = self.at.join(name);
        rule(Met { at: &at, facts }).map_err(WalkError::Refused)?;
        self.count_link()?;
        // An empty name reads the link the descriptor holds (Linux 2.6.39).
        let target = fcntl::readlinkat(&held, "")?;
        self.go_to(Path::new(&target), rule)
    }

    fn count_link(&mut self) -> io::Result<()> {
        self.links += 1;
        if self.links > MAX_LINKS {
            return Err(io::Error::from_raw_os_error(libc::ELOOP));
        }
        Ok(())
    }
}

/// What the last directory of a path given to [`open_checked_dir`] must be, besides what every
/// directory on the path must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastDir {
    /// The daemon's own (the state directory): owned by `owner` and writable by no one else,
    /// sticky or not; with `make`, made (mode 0700) if it is missing.
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
                match stat::mkdirat(&dir, name, Mode::from_bits_truncate(0o700)) {
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
            Err(e @ nix::errno::Errno::EACCES) => {
                // Someone else's, shut to us: the rule's reason says more than EACCES.
                if let Ok(st) = stat::fstatat(&dir, name, fcntl::AtFlags::AT_SYMLINK_NOFOLLOW) {
                    let facts = FileFacts::from_stat(&st);
                    check_facts(&facts, &at, owner, is_last.then_some(last))?;
                }
                return Err(refuse(&at, io::Error::from(e).to_string()));
            }
            Err(e) => return Err(refuse(&at, io::Error::from(e).to_string())),
        };
        check_dir(&dir, &at, owner, is_last.then_some(last))?;
    }
    Ok(dir)
}

/// Sets the process's umask to `mask` and gives the one it replaces. The umask is the
/// process's, not a thread's: call it before other threads create files (the history writer
/// sets 077 first thing, so its store and the store's `-wal` and `-shm` are made 0600).
pub fn set_umask(mask: u32) -> u32 {
    stat::umask(Mode::from_bits_truncate(mask)).bits()
}

/// Sets the permission bits of the open file or directory `fd` to `mode` (`fchmod`: the file
/// that was opened and checked, not whatever its path names now).
pub fn set_mode(fd: &OwnedFd, mode: u32) -> io::Result<()> {
    stat::fchmod(fd, Mode::from_bits_truncate(mode)).map_err(io::Error::from)
}

/// [`open_checked_dir`]'s rule for one directory (`last`: the rule of the last one, if it is),
/// as [`trust::check_dir`] decides it.
fn check_dir(dir: &OwnedFd, at: &Path, owner: Uid, last: Option<LastDir>) -> io::Result<()> {
    check_facts(&facts_of(dir)?, at, owner, last)
}

/// [`check_dir`] on the facts of a directory at `at`.
fn check_facts(facts: &FileFacts, at: &Path, owner: Uid, last: Option<LastDir>) -> io::Result<()> {
    let which = match last {
        Some(LastDir::Own { .. }) => trust::Dir::Own,
        _ => trust::Dir::Other,
    };
    trust::check_dir(facts, owner, which)
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
    /// At a clean stop: removes the pid file at `path` while the lock is still held, when the
    /// name still leads to the locked file (one put there since is left), then lets the lock go.
    pub fn remove(self, path: &Path) -> io::Result<()> {
        use std::os::unix::fs::MetadataExt;
        let held = self._file.metadata()?;
        let there = std::fs::symlink_metadata(path)?;
        if (held.dev(), held.ino()) == (there.dev(), there.ino()) {
            std::fs::remove_file(path)?;
        }
        Ok(())
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

    /// Follows `path` with a rule that refuses the link or directory at `refuse` and records
    /// what it was shown.
    fn walk(path: &Path, refuse: &Path) -> (Result<Walked, WalkError<PathBuf>>, Vec<PathBuf>) {
        let mut shown = Vec::new();
        let mut rule = |met: Met<'_>| {
            shown.push(met.at.to_path_buf());
            match met.at == refuse {
                true => Err(met.at.to_path_buf()),
                false => Ok(()),
            }
        };
        let walked = open_walked(path, &mut rule);
        (walked, shown)
    }

    #[test]
    fn a_walk_shows_the_rule_every_link_and_directory_and_stops_at_a_refused_one() {
        let dir = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(base.join("real/sub")).unwrap();
        std::fs::write(base.join("real/file"), b"found").unwrap();
        // abs -> BASE/mid/sub/up (absolute), mid -> real (relative), real/sub/up -> ../file.
        std::os::unix::fs::symlink("real", base.join("mid")).unwrap();
        std::os::unix::fs::symlink("../file", base.join("real/sub/up")).unwrap();
        std::os::unix::fs::symlink(base.join("mid/sub/up"), base.join("abs")).unwrap();
        let (walked, shown) = walk(&base.join("abs"), Path::new("/nowhere"));
        let walked = walked.map_err(|_| "refused").unwrap();
        assert_eq!(walked.resolved, base.join("real/file"));
        assert_eq!(walked.facts.kind, FileKind::Regular);
        assert_eq!(std::io::read_to_string(walked.file).unwrap(), "found");
        for expected in ["abs", "mid", "real", "real/sub", "real/sub/up"] {
            assert!(
                shown.contains(&base.join(expected)),
                "{expected}: {shown:?}"
            );
        }
        assert_eq!(shown.first().map(PathBuf::as_path), Some(Path::new("/")));
        // Refused: the link in the middle, and the directory its target is.
        for refused in [base.join("mid"), base.join("real/sub")] {
            let (walked, _) = walk(&base.join("abs"), &refused);
            assert!(matches!(walked, Err(WalkError::Refused(at)) if at == refused));
        }
        // A file that is not there, and links that lead to each other.
        let (walked, _) = walk(&base.join("real/none"), Path::new("/nowhere"));
        assert!(matches!(walked, Err(WalkError::Io(e)) if e.kind() == io::ErrorKind::NotFound));
        std::os::unix::fs::symlink("loop2", base.join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", base.join("loop2")).unwrap();
        let (walked, shown) = walk(&base.join("loop1"), Path::new("/nowhere"));
        assert!(matches!(walked, Err(WalkError::Io(e)) if e.raw_os_error() == Some(libc::ELOOP)));
        let links = (shown.iter())
            .filter(|p| p.parent() == Some(&base) && p.to_string_lossy().contains("/loop"))
            .count();
        assert_eq!(
            links,
            MAX_LINKS + 1,
            "one past the bound is shown, then ELOOP"
        );
    }

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
