//! Anonymous temporary files: a file with no name, so it vanishes when its last descriptor
//! closes, whatever happens to the process (a job child killed by SIGKILL leaves nothing behind).
//!
//! Linux's `O_TMPFILE` gives such a file directly. Where the file system does not support it
//! (some network and FUSE file systems answer `EOPNOTSUPP`/`EISDIR`), the fallback creates a file
//! with a fresh name (`O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600) and unlinks it at once; the name then
//! exists for a few microseconds and nobody else can have opened it (`O_EXCL` proves we created
//! it, 0600 keeps others out).
//!
//! The file belongs to the process's effective uid: the job child calls this after dropping
//! privileges, so a job's spooled output is owned by, and counted against the quota of, its
//! user. Nothing here decides *when* to spill; that is `job::output`'s business.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::paths::TMP_DIR;

/// The directory temporary files go to, the one TMPDIR rule of the crate (a job's spilled
/// output in the daemon, the editor's copy in crontab(1)): `$TMPDIR` when it is an absolute
/// path, else [`TMP_DIR`] (/tmp). A relative or empty TMPDIR would name a different place in
/// each working directory, so it is ignored.
pub fn default_dir() -> PathBuf {
    dir_from(std::env::var_os("TMPDIR"))
}

fn dir_from(tmpdir: Option<std::ffi::OsString>) -> PathBuf {
    match tmpdir {
        Some(dir) if Path::new(&dir).is_absolute() => PathBuf::from(dir),
        _ => PathBuf::from(TMP_DIR),
    }
}

/// An open, readable and writable file in `dir` that has no name.
pub fn anonymous(dir: &Path) -> io::Result<File> {
    match OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_EXCL | libc::O_CLOEXEC)
        .open(dir)
    {
        Ok(file) => Ok(file),
        // EISDIR: a kernel or file system without O_TMPFILE sees only O_DIRECTORY|O_RDWR.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP | libc::EISDIR | libc::EINVAL)
            ) =>
        {
            create_and_unlink(dir)
        }
        Err(e) => Err(e),
    }
}

/// The fallback: a fresh name, created exclusively, removed before anyone else can use it.
fn create_and_unlink(dir: &Path) -> io::Result<File> {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    for _ in 0..100 {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = dir.join(format!(".crond-out.{}.{n}.{nanos:x}", std::process::id()));
        match OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(&path)
        {
            Ok(file) => {
                std::fs::remove_file(&path)?;
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no free temporary file name in {}", dir.display()),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek, SeekFrom, Write};
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn only_an_absolute_tmpdir_is_taken() {
        assert_eq!(dir_from(Some("/var/tmp".into())), Path::new("/var/tmp"));
        assert_eq!(dir_from(Some("scratch".into())), Path::new("/tmp"));
        assert_eq!(dir_from(Some("".into())), Path::new("/tmp"));
        assert_eq!(dir_from(None), Path::new("/tmp"));
    }

    #[test]
    fn an_anonymous_file_has_no_name_and_keeps_what_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = anonymous(dir.path()).unwrap();
        f.write_all(b"spooled output").unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        let mut back = String::new();
        f.read_to_string(&mut back).unwrap();
        assert_eq!(back, "spooled output");
        assert_eq!(
            f.metadata().unwrap().nlink(),
            0,
            "the file must have no link"
        );
        assert_eq!(f.metadata().unwrap().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_fallback_leaves_no_name_behind() {
        let dir = tempfile::tempdir().unwrap();
        let mut f = create_and_unlink(dir.path()).unwrap();
        f.write_all(b"x").unwrap();
        assert_eq!(f.metadata().unwrap().nlink(), 0);
        assert_eq!(f.metadata().unwrap().mode() & 0o777, 0o600);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_missing_directory_is_an_error_not_a_file_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope");
        assert!(anonymous(&missing).is_err());
    }
}
