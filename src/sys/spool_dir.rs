//! File operations of the `crontab` command: the spool directory (reached through one directory
//! descriptor, so a path swapped under us changes nothing) and the private copy the editor works
//! on. (Its syslog lines go through [`super::syslog::open_as`].)
//!
//! Rules every function here keeps: files are created with `O_CREAT|O_EXCL|O_NOFOLLOW` and mode
//! 0600 (a planted file or symlink makes the call fail, never followed); files are opened with
//! `O_NOFOLLOW|O_NONBLOCK` and checked with `fstat` (a regular file, the expected owner) before a
//! byte is read; every descriptor is close-on-exec. This module decides nothing about users,
//! access or text: callers do.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

use nix::errno::Errno;
use nix::fcntl::{self, AT_FDCWD, OFlag};
use nix::sys::stat::{self, Mode, UtimensatFlags};
use nix::sys::time::TimeSpec;
use nix::unistd::{self, UnlinkatFlags};

use super::fs::{self, FileFacts, FileKind};
use super::user::{Gid, Uid};

/// Why a file could not be read back safely.
#[derive(Debug)]
pub enum ReadError {
    /// No such file.
    Missing,
    /// A symlink (`O_NOFOLLOW` refused it), a directory, a FIFO, a device...
    NotRegular,
    /// Owned by someone else.
    WrongOwner(Uid),
    /// Larger than the caller's bound.
    TooLarge(u64),
    Io(io::Error),
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReadError::Missing => f.write_str("no such file"),
            ReadError::NotRegular => f.write_str("not a regular file"),
            ReadError::WrongOwner(uid) => write!(f, "owned by uid {uid}"),
            ReadError::TooLarge(max) => write!(f, "larger than {max} bytes"),
            ReadError::Io(e) => e.fmt(f),
        }
    }
}

fn errno(e: Errno) -> io::Error {
    io::Error::from(e)
}

/// Opens `name` in `dir` for reading without following a symlink, and reads it if it is a
/// regular file owned by one of `owners`, at most `max` bytes.
fn read_checked(
    dir: impl AsFd,
    name: &OsStr,
    owners: &[Uid],
    max: u64,
) -> Result<Vec<u8>, ReadError> {
    let (file, facts) = match fs::open_no_follow_at(dir, name) {
        Ok(opened) => opened,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(ReadError::Missing),
        Err(e) if fs::is_symlink_refusal(&e) => return Err(ReadError::NotRegular),
        Err(e) => return Err(ReadError::Io(e)),
    };
    if facts.kind != FileKind::Regular {
        return Err(ReadError::NotRegular);
    }
    if !owners.contains(&facts.owner) {
        return Err(ReadError::WrongOwner(facts.owner));
    }
    let mut text = Vec::new();
    file.take(max.saturating_add(1))
        .read_to_end(&mut text)
        .map_err(ReadError::Io)?;
    if text.len() as u64 > max {
        return Err(ReadError::TooLarge(max));
    }
    Ok(text)
}

/// Creates `name` in `dir`: `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600 (whatever the umask). Fails
/// with `AlreadyExists` if anything — a file, a symlink, even a dangling one — is at that name.
pub fn create_exclusive(dir: impl AsFd, name: &OsStr) -> io::Result<File> {
    let flags =
        OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_RDWR | OFlag::O_CLOEXEC;
    let fd = fcntl::openat(dir, name, flags, Mode::from_bits_truncate(0o600)).map_err(errno)?;
    // The umask may have removed bits but never adds any; set the mode exactly.
    stat::fchmod(&fd, Mode::from_bits_truncate(0o600)).map_err(errno)?;
    Ok(File::from(fd))
}

/// Six random letters and digits for a temporary name (from the kernel's generator).
fn random_suffix() -> io::Result<String> {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    let mut bytes = [0u8; 6];
    super::random_bytes(&mut bytes)?;
    Ok(bytes
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect())
}

/// The spool directory (`/var/spool/cron/crontabs`), held open as an `O_PATH` descriptor: the
/// group may search and write it (mode 1730) but not list it, and every operation below is
/// relative to this descriptor.
#[derive(Debug)]
pub struct SpoolDir {
    path: PathBuf,
    fd: OwnedFd,
    facts: FileFacts,
}

impl SpoolDir {
    pub fn open(path: &Path) -> io::Result<SpoolDir> {
        let flags = OFlag::O_PATH | OFlag::O_DIRECTORY | OFlag::O_CLOEXEC;
        let fd = fcntl::openat(AT_FDCWD, path, flags, Mode::empty()).map_err(errno)?;
        let facts = fs::facts_of(&fd)?;
        Ok(SpoolDir {
            path: path.to_path_buf(),
            fd,
            facts,
        })
    }

    /// Owner, group and mode of the directory itself.
    pub fn facts(&self) -> FileFacts {
        self.facts
    }

    /// Reads the crontab `name` if it is a regular file (not a symlink) owned by one of `owners`.
    pub fn read(&self, name: &OsStr, owners: &[Uid], max: u64) -> Result<Vec<u8>, ReadError> {
        read_checked(&self.fd, name, owners, max)
    }

    /// Creates a new `tmp.XXXXXX` file (Debian's name, which the daemons skip), mode 0600.
    pub fn create_temp(&self) -> io::Result<(OsString, File)> {
        let mut last = None;
        for _ in 0..100 {
            let name = OsString::from(format!("tmp.{}", random_suffix()?));
            match create_exclusive(&self.fd, &name) {
                Ok(file) => return Ok((name, file)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(e),
            }
        }
        Err(last.unwrap_or_else(|| io::Error::other("no free temporary name")))
    }

    /// Renames `from` over `to` in one step: readers see the old file or the new one, never half;
    /// then syncs the directory when the caller may read it ([`fs::rename_durably_at`]).
    pub fn rename(&self, from: &OsStr, to: &OsStr) -> io::Result<()> {
        fs::rename_durably_at(self.fd.as_fd(), from, to)
    }

    /// Unlinks `name`; `Ok(false)` if there was nothing to unlink.
    pub fn remove(&self, name: &OsStr) -> io::Result<bool> {
        match unistd::unlinkat(&self.fd, name, UnlinkatFlags::NoRemoveDir) {
            Ok(()) => Ok(true),
            Err(Errno::ENOENT) => Ok(false),
            Err(e) => Err(errno(e)),
        }
    }

    /// Sets the directory's times to now, so the daemon notices a change (inotify sees the
    /// rename or unlink already; the daemon's mtime fallback sees this).
    pub fn touch(&self) -> io::Result<()> {
        stat::utimensat(
            AT_FDCWD,
            &self.path,
            &TimeSpec::UTIME_NOW,
            &TimeSpec::UTIME_NOW,
            UtimensatFlags::FollowSymlink,
        )
        .map_err(errno)
    }
}

/// Writes `text` to a freshly created file, gives it to `owner` if asked (root installing for
/// someone), and makes it durable before the caller renames it into place.
pub fn write_durably(file: &mut File, text: &[u8], owner: Option<(Uid, Gid)>) -> io::Result<()> {
    file.write_all(text)?;
    if let Some((uid, gid)) = owner {
        unistd::fchown(
            &*file,
            Some(unistd::Uid::from_raw(uid.0)),
            Some(unistd::Gid::from_raw(gid.0)),
        )
        .map_err(errno)?;
    }
    stat::fchmod(&*file, Mode::from_bits_truncate(0o600)).map_err(errno)?;
    file.sync_all()
}

/// The private copy of a crontab that the editor works on: a directory made by `mkdtemp` (mode
/// 0700, owned by the caller) holding one file `crontab` (mode 0600), as Debian does.
#[derive(Debug)]
pub struct PrivateCopy {
    dir: PathBuf,
    file: PathBuf,
}

impl PrivateCopy {
    /// Creates the directory in `tmpdir` and the file inside it with `text`.
    pub fn create(tmpdir: &Path, text: &[u8]) -> io::Result<PrivateCopy> {
        let dir = unistd::mkdtemp(&tmpdir.join("crontab.XXXXXX")).map_err(errno)?;
        let file = dir.join("crontab");
        let copy = PrivateCopy { dir, file };
        let mut f = create_exclusive(AT_FDCWD, copy.file.as_os_str())?;
        f.write_all(text)?;
        f.sync_all()?;
        Ok(copy)
    }

    /// The file's path, as given to the editor.
    pub fn path(&self) -> &Path {
        &self.file
    }

    /// Reads the file back after the editor ran: refused unless it is still a regular file (not
    /// a symlink: `O_NOFOLLOW`) owned by `owner`.
    pub fn read_back(&self, owner: Uid, max: u64) -> Result<Vec<u8>, ReadError> {
        read_checked(AT_FDCWD, self.file.as_os_str(), &[owner], max)
    }

    /// Removes the file (a symlink left there is removed, not followed) and the directory.
    pub fn remove(self) {
        let _ = std::fs::remove_file(&self.file);
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// `name` as an `OsStr` (user names are bytes).
pub fn os_name(name: &[u8]) -> OsString {
    OsString::from_vec(name.to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_exclusive_refuses_a_planted_symlink_and_leaves_its_target_alone() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"precious\n").unwrap();
        std::os::unix::fs::symlink(&target, dir.path().join("tmp.planted")).unwrap();
        let d = File::open(dir.path()).unwrap();
        let err = create_exclusive(&d, OsStr::new("tmp.planted")).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&target).unwrap(), b"precious\n");
    }

    #[test]
    fn create_exclusive_refuses_a_dangling_symlink_without_creating_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("would-be-created");
        std::os::unix::fs::symlink(&target, dir.path().join("tmp.x")).unwrap();
        let d = File::open(dir.path()).unwrap();
        assert!(create_exclusive(&d, OsStr::new("tmp.x")).is_err());
        assert!(!target.exists());
    }

    #[test]
    fn a_new_file_has_mode_0600_whatever_the_umask() {
        let dir = tempfile::tempdir().unwrap();
        let d = File::open(dir.path()).unwrap();
        let f = create_exclusive(&d, OsStr::new("f")).unwrap();
        let st = stat::fstat(&f).unwrap();
        assert_eq!(st.st_mode & 0o7777, 0o600);
    }

    #[test]
    fn a_private_copy_replaced_by_a_symlink_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, b"secret\n").unwrap();
        let copy = PrivateCopy::create(dir.path(), b"x\n").unwrap();
        std::fs::remove_file(copy.path()).unwrap();
        std::os::unix::fs::symlink(&secret, copy.path()).unwrap();
        let me = super::super::user::effective_uid();
        assert!(matches!(
            copy.read_back(me, 1000),
            Err(ReadError::NotRegular)
        ));
        copy.remove();
        assert_eq!(std::fs::read(&secret).unwrap(), b"secret\n");
    }

    #[test]
    fn a_private_copy_owned_by_someone_else_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let copy = PrivateCopy::create(dir.path(), b"x\n").unwrap();
        let me = super::super::user::effective_uid();
        let other = Uid(me.0.wrapping_add(1));
        assert!(matches!(
            copy.read_back(other, 1000),
            Err(ReadError::WrongOwner(_))
        ));
        assert_eq!(copy.read_back(me, 1000).unwrap(), b"x\n");
        assert!(matches!(copy.read_back(me, 1), Err(ReadError::TooLarge(1))));
        copy.remove();
    }
}
