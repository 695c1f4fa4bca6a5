//! The plain data that the functional core and `sys` both name: kernel ids, a passwd entry, the
//! facts of a file and the level of a log line. `sys` fills these in (from `getpwnam_r`,
//! `fstat`, `getpid`) and re-exports them where its callers have always found them
//! (`sys::user::Uid`, `sys::fs::FileFacts`, ...); pure code names them here, so that naming a
//! uid does not mean importing the module that talks to the kernel.
//!
//! Pure: data and formatting only; the functions that read these from the system are in `sys`.
//! Kernel ids are newtypes so a uid can't be passed where a gid is expected.

#![forbid(unsafe_code)]

use std::fmt;
use std::path::PathBuf;

/// A user id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Uid(pub u32);

/// A group id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gid(pub u32);

/// A process id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Pid(pub i32);

impl Uid {
    pub const ROOT: Uid = Uid(0);
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for Gid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for Pid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A passwd entry (looked up by `sys::user::User::resolve_name` and `resolve_uid`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    pub name: Vec<u8>,
    pub uid: Uid,
    pub gid: Gid,
    pub home: PathBuf,
    pub shell: PathBuf,
}

/// What kind of file a descriptor or a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Regular,
    Directory,
    Symlink,
    Other,
}

/// What `fstat` (or `lstat`, for a link) says about a file: the facts the daemon's trust rule
/// and crontab(1) check, read once from the descriptor, never again from the path
/// (`sys::fs::facts_of`).
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

/// The syslog level of a message (syslog(3): the priority is the facility, always cron, and
/// this level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    Info,
    /// Normal but worth a look: logged once where every run would repeat it.
    Notice,
    Warning,
    Error,
}
