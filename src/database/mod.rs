//! The database of lists (docs/design.md §1): one source per crontab file — each user's file in the
//! spool directory, /etc/crontab, each file in /etc/cron.d whose name passes the run-parts rule;
//! or, in `--crontab` mode, only the files named (user format, run as the daemon's own user).
//!
//! The decisions are pure ([`trust`], [`names`], and `crontab::parse`); this module is the thin
//! shell that lists directories, opens each file with `O_NOFOLLOW` (a system or `--crontab`
//! file by a walk that shows the trust rule every link and directory on the way), checks it
//! from the open descriptor, reads and parses it. What a load found is returned as data
//! ([`Outcome`]); the daemon logs it and updates its agenda. Nothing here runs jobs or keeps time.

pub mod entries;
pub mod names;

use std::ffi::{OsStr, OsString};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::crontab::{self, Crontab, Format, Limits, header};
use crate::log::printable;
use crate::schedule::Zone;
use crate::sys::fs::{self, FileKind, WalkError};
use crate::sys::user::{Uid, User};
use crate::trust::{self, Kind, Refusal};

/// Where the crontabs are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    pub spool_dir: PathBuf,
    pub system_crontab: PathBuf,
    pub cron_d: PathBuf,
    /// `--crontab` mode: the files named, each a [`SourceKey::Given`]; when not empty, the
    /// spool dir, /etc/crontab and /etc/cron.d are not read.
    pub given: Vec<SourceKey>,
}

/// How files are judged and parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// cronie's `-p`: a user crontab may have any mode that others can't write.
    pub permit_any_mode: bool,
    /// Debian's `-l`: LSB names in /etc/cron.d.
    pub lsb_names: bool,
    /// The `~` seed (`schedule::host_seed` of the host name).
    pub seed: u64,
}

/// One crontab file.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceKey {
    /// /etc/crontab.
    System,
    /// A file in /etc/cron.d.
    CronD(OsString),
    /// A user's file in the spool directory (the name is the user's).
    User(OsString),
    /// A file named with `--crontab`, in the user format, run as the daemon's own user: its
    /// name (from passwd, or made up for a uid passwd doesn't know) and uid.
    Given {
        path: PathBuf,
        user: OsString,
        uid: Uid,
    },
}

impl SourceKey {
    pub fn path(&self, paths: &Paths) -> PathBuf {
        match self {
            SourceKey::System => paths.system_crontab.clone(),
            SourceKey::CronD(name) => paths.cron_d.join(name),
            SourceKey::User(name) => paths.spool_dir.join(name),
            SourceKey::Given { path, .. } => path.clone(),
        }
    }

    /// The first part of Debian's log lines: `*system*`, `*system*foo`, or the user, as bytes
    /// (the logger shows them through `log::printable`).
    pub fn who(&self) -> Vec<u8> {
        match self {
            SourceKey::System => b"*system*".to_vec(),
            SourceKey::CronD(name) => [b"*system*", name.as_bytes()].concat(),
            SourceKey::User(name) | SourceKey::Given { user: name, .. } => name.as_bytes().to_vec(),
        }
    }

    /// The last part: `/etc/crontab`, `/etc/cron.d/foo`, `crontabs/user` (as Debian), shown
    /// through `log::printable` like the user name beside it.
    pub fn tab_name(&self, paths: &Paths) -> String {
        match self {
            SourceKey::User(name) => {
                let dir = paths.spool_dir.file_name().unwrap_or_default();
                printable(&[dir.as_bytes(), b"/", name.as_bytes()].concat())
            }
            other => printable(other.path(paths).as_os_str().as_bytes()),
        }
    }

    /// The format the file is written in.
    pub fn format(&self) -> Format {
        match self {
            SourceKey::User(_) | SourceKey::Given { .. } => Format::User,
            _ => Format::System,
        }
    }

    /// The user a user crontab belongs to.
    pub fn owner_name(&self) -> Option<&[u8]> {
        match self {
            SourceKey::User(name) | SourceKey::Given { user: name, .. } => Some(name.as_bytes()),
            _ => None,
        }
    }
}

/// What loading a source found.
#[derive(Debug)]
pub enum Outcome {
    /// The file is trusted and parsed (bad lines are in `crontab.errors`).
    Loaded {
        /// The file's entries and problems (boxed: the other outcomes are small).
        crontab: Box<Crontab>,
        /// For a user's crontab, the uid its ownership was checked against: the job runs as
        /// this uid or not at all (a name deleted and created again is another account).
        owner_uid: Option<Uid>,
        /// What the change check compares: the file's mtime, and for a symlinked system file
        /// the link's and the target's together ([`mtime_ns`] computes the same).
        mtime_ns: i128,
        /// For a symlinked system file, the file it leads to (whose directory the daemon also
        /// watches, so an edit of the target is seen).
        target: Option<PathBuf>,
    },
    /// There is no such file (any more).
    Missing,
    /// The file failed a trust check; the detail of its log line (the file's name in the log,
    /// then, where the event does not say all, what the file is and what the rule allows).
    Refused(Refusal, String),
    /// A symlink or a directory on the way to the file failed a trust check.
    RefusedOnTheWay(OnTheWay),
    /// A spool file whose user has no passwd entry.
    Orphan,
    /// The file could not be opened or read.
    Failed(io::Error),
}

/// A symlink or a directory on the way to a file that [`trust::check_on_the_way`] refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OnTheWay {
    pub refusal: Refusal,
    /// Where it is, links on the way followed.
    pub at: PathBuf,
    pub owner: Uid,
    pub mode: u32,
}

impl OnTheWay {
    /// The detail of the log line: the file's name in the log (`tab`), then what was refused
    /// on the way to it, and why.
    pub fn detail(&self, tab: &str) -> String {
        let at = printable(self.at.as_os_str().as_bytes());
        match self.refusal {
            Refusal::WrongSymlinkOwner => {
                format!("{tab}: the link {at} is uid {}'s", self.owner.0)
            }
            _ => format!("{tab}: the directory {at} has mode {:04o}", self.mode),
        }
    }
}

/// Every source present now: /etc/crontab if it exists, the good names in /etc/cron.d and the
/// spool directory. A directory that can't be read contributes nothing (the error is returned
/// for logging).
pub fn list_sources(paths: &Paths, rules: &Rules) -> (Vec<SourceKey>, Vec<(PathBuf, io::Error)>) {
    let mut keys = Vec::new();
    let mut errors = Vec::new();
    if !paths.given.is_empty() {
        keys.extend(
            (paths.given.iter())
                .filter(|key| fs::link_facts(&key.path(paths)).is_ok())
                .cloned(),
        );
        return (keys, errors);
    }
    if fs::link_facts(&paths.system_crontab).is_ok() {
        keys.push(SourceKey::System);
    }
    for (dir, is_spool) in [(&paths.cron_d, false), (&paths.spool_dir, true)] {
        match std::fs::read_dir(dir) {
            Ok(entries) => {
                let mut names: Vec<OsString> = entries
                    .filter_map(|e| e.ok().map(|e| e.file_name()))
                    .collect();
                names.sort();
                for name in names {
                    if let Some(key) = key_for(name, is_spool, rules) {
                        keys.push(key);
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => errors.push((dir.clone(), e)),
        }
    }
    (keys, errors)
}

/// The source a name in the spool dir or /etc/cron.d stands for, if it is a crontab name.
pub fn key_for(name: OsString, in_spool: bool, rules: &Rules) -> Option<SourceKey> {
    if in_spool {
        names::spool_name_ok(name.as_bytes()).then_some(SourceKey::User(name))
    } else {
        names::cron_d_name_ok(name.as_bytes(), rules.lsb_names).then_some(SourceKey::CronD(name))
    }
}

/// Opens, checks, reads and parses one source.
pub fn load(key: &SourceKey, paths: &Paths, rules: &Rules) -> Outcome {
    let path = key.path(paths);
    let tab = key.tab_name(paths);
    let opened = match key {
        SourceKey::User(name) => open_user(&path, &tab, name, rules),
        SourceKey::Given { uid, .. } => {
            open_system(&path, &tab, Kind::Given { owner: *uid }, rules)
        }
        _ => open_system(&path, &tab, Kind::System, rules),
    };
    let Opened {
        mut file,
        size,
        owner_uid,
        stamp,
        target,
    } = match opened {
        Ok(Ok(found)) => found,
        Ok(Err(outcome)) => return outcome,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Outcome::Missing,
        Err(e) => return Outcome::Failed(e),
    };
    let limits = match key.format() {
        Format::User => Limits::USER,
        Format::System => Limits::SYSTEM,
    };
    // Room for the size read by `fstat` and one byte more, so that a file read at that size
    // is read without growing the buffer by doubling (each growth a copy) and its end is seen
    // without another allocation; never more than the limit allows.
    let room = size.min(limits.max_file).saturating_add(1);
    let mut text = Vec::with_capacity(usize::try_from(room).unwrap_or(0));
    if let Err(e) = (&mut file).take(limits.max_file + 1).read_to_end(&mut text) {
        return Outcome::Failed(e);
    }
    if text.len() as u64 > limits.max_file {
        // Refused whole rather than cut: a truncated file would load a different crontab.
        return Outcome::Failed(io::Error::other(format!(
            "larger than {} MiB",
            limits.max_file >> 20
        )));
    }
    Outcome::Loaded {
        crontab: Box::new(parse(key, &tab, &text, rules, owner_uid)),
        owner_uid,
        mtime_ns: stamp,
        target,
    }
}

/// Parses the text of source `key` (named `tab` in the logs), read and trusted (`owner_uid`:
/// the uid a user's crontab was checked for), in its format and within its limits. A user crontab that begins with the
/// header `crontab` writes is parsed without it, so that its lines are numbered as `crontab -l`
/// and `crontab -e` show them to the user.
pub fn parse(
    key: &SourceKey,
    tab: &str,
    text: &[u8],
    rules: &Rules,
    owner_uid: Option<Uid>,
) -> Crontab {
    let (format, limits, text) = match key.format() {
        Format::User => (Format::User, Limits::USER, header::strip_header(text)),
        Format::System => (Format::System, Limits::SYSTEM, text),
    };
    let mut zones = |name: &str| Zone::get(name);
    let mut options = crontab::ParseOptions {
        format,
        limits,
        seed: rules.seed,
        file: tab,
        zones: &mut zones,
        // System files, and root's own crontab, may hide a job from the log (cronie's '-').
        privileged: owner_uid.is_none_or(|uid| uid == Uid::ROOT),
    };
    crontab::parse(text, &mut options)
}

/// A source opened and trusted, not read yet.
struct Opened {
    file: std::fs::File,
    /// The size `fstat` gave (the text read may differ if the file is written meanwhile).
    size: u64,
    owner_uid: Option<Uid>,
    stamp: i128,
    target: Option<PathBuf>,
}

/// The change check's value: a file's mtime, or for a symlink its own and its target's mixed,
/// so that a change of either changes it.
fn change_stamp(link_mtime: i128, target_mtime: Option<i128>) -> i128 {
    match target_mtime {
        None => link_mtime,
        Some(t) => link_mtime.wrapping_mul(1_000_003) ^ t,
    }
}

/// A file refused by the trust rule, with its log line's detail: `tab`, and what
/// [`trust::explain`] says of the file (the users named as passwd names them).
fn refused(
    tab: &str,
    refusal: Refusal,
    facts: &fs::FileFacts,
    kind: Kind,
    rules: &Rules,
) -> Outcome {
    let name = |uid: Uid| {
        let user = User::resolve_uid(uid).ok().flatten()?;
        Some(printable(&user.name))
    };
    let detail = match trust::explain(refusal, facts, kind, rules.permit_any_mode, &name) {
        Some(found) => format!("{tab}: {found}"),
        None => tab.to_string(),
    };
    Outcome::Refused(refusal, detail)
}

fn open_user(
    path: &Path,
    tab: &str,
    name: &OsStr,
    rules: &Rules,
) -> io::Result<Result<Opened, Outcome>> {
    let (file, facts) = match fs::open_no_follow(path) {
        Ok(found) => found,
        Err(e) if fs::is_symlink_refusal(&e) => {
            return Ok(Err(Outcome::Refused(Refusal::NotRegular, tab.to_string())));
        }
        Err(e) => return Err(e),
    };
    let Some(user) = User::resolve_name(name.as_bytes())? else {
        return Ok(Err(Outcome::Orphan));
    };
    let kind = Kind::User { owner: user.uid };
    if let Err(refusal) = trust::check(&facts, kind, rules.permit_any_mode) {
        return Ok(Err(refused(tab, refusal, &facts, kind, rules)));
    }
    Ok(Ok(Opened {
        file,
        size: facts.size,
        owner_uid: Some(user.uid),
        stamp: change_stamp(facts.mtime_ns, None),
        target: None,
    }))
}

/// A system file (`Kind::System`) or a `--crontab` file (`Kind::Given`), opened by a walk that
/// shows [`trust::check_on_the_way`] every directory it goes through and every symlink before
/// following it (the one at `path` itself, and each on the way to its target); the file is
/// then checked by [`trust::check`].
fn open_system(
    path: &Path,
    tab: &str,
    kind: Kind,
    rules: &Rules,
) -> io::Result<Result<Opened, Outcome>> {
    let link = fs::link_facts(path)?;
    let symlink = link.kind == FileKind::Symlink;
    let mut rule = |met: fs::Met<'_>| {
        trust::check_on_the_way(&met.facts, kind).map_err(|refusal| OnTheWay {
            refusal,
            at: met.at.to_path_buf(),
            owner: met.facts.owner,
            mode: met.facts.mode,
        })
    };
    let walked = match fs::open_walked(path, &mut rule) {
        Ok(walked) => walked,
        // The link at the path itself: Debian's line, which names the path.
        Err(WalkError::Refused(found)) if found.at == path => {
            return Ok(Err(Outcome::Refused(found.refusal, tab.to_string())));
        }
        Err(WalkError::Refused(found)) => return Ok(Err(Outcome::RefusedOnTheWay(found))),
        Err(WalkError::Io(e)) => return Err(e),
    };
    let facts = walked.facts;
    if let Err(refusal) = trust::check(&facts, kind, rules.permit_any_mode) {
        return Ok(Err(refused(tab, refusal, &facts, kind, rules)));
    }
    Ok(Ok(Opened {
        file: walked.file,
        size: facts.size,
        owner_uid: match kind {
            Kind::Given { owner } => Some(owner),
            _ => None,
        },
        stamp: change_stamp(link.mtime_ns, symlink.then_some(facts.mtime_ns)),
        target: symlink.then_some(walked.resolved),
    }))
}

/// The change check's value for a source as it is now (the fallback without inotify): its
/// mtime, or for a symlink its own and its target's, as [`load`] recorded them.
pub fn mtime_ns(key: &SourceKey, paths: &Paths) -> Option<i128> {
    let path = key.path(paths);
    let link = fs::link_facts(&path).ok()?;
    let target = (link.kind == FileKind::Symlink)
        .then(|| std::fs::metadata(&path).ok())
        .flatten()
        .map(|m| {
            use std::os::unix::fs::MetadataExt;
            i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())
        });
    Some(change_stamp(link.mtime_ns, target))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::ffi::OsStringExt;

    #[test]
    fn log_names_show_a_user_name_through_mkprint() {
        let paths = Paths {
            spool_dir: "/var/spool/cron/crontabs".into(),
            system_crontab: "/etc/crontab".into(),
            cron_d: "/etc/cron.d".into(),
            given: Vec::new(),
        };
        let user = SourceKey::User(OsString::from_vec(b"jos\xe9".to_vec()));
        assert_eq!(user.who(), b"jos\xe9");
        assert_eq!(user.tab_name(&paths), "crontabs/jos\\351");
        let file = SourceKey::CronD("php".into());
        assert_eq!(file.who(), b"*system*php");
        assert_eq!(file.tab_name(&paths), "/etc/cron.d/php");
        assert_eq!(SourceKey::System.tab_name(&paths), "/etc/crontab");
    }

    #[test]
    fn a_user_crontab_is_numbered_without_crontabs_header_and_a_system_file_with_all_lines() {
        let rules = Rules {
            permit_any_mode: false,
            lsb_names: false,
            seed: 0,
        };
        let header = b"# DO NOT EDIT THIS FILE - edit the master and reinstall.\n\
# (- installed on Sat Nov 21 22:44:03 2026)\n\
# (Cron version -- crond 0.1.0)\n";
        let user = [&header[..], b"# mine\n* * * * * x\n"].concat();
        let key = SourceKey::User("alice".into());
        let tab = parse(&key, "crontabs/alice", &user, &rules, Some(Uid(1000)));
        assert_eq!(tab.entries[0].line, 2);
        let system = [&header[..], b"* * * * * root x\n"].concat();
        let tab = parse(&SourceKey::System, "/etc/crontab", &system, &rules, None);
        assert_eq!(tab.entries[0].line, 4);
    }
}
