//! Reaching the cluster database from `cronctl` and its helper: the connection settings
//! (`--db`, `CRON_CLUSTER_DB`, or /etc/default/cron), the password from a `passfile` that only
//! the caller's user can read, and the bounds every connection gets.

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use crond::cluster::conninfo::{self, ConnInfo};
use crond::sys::fs::open_no_follow;
use crond::sys::user::{User, effective_uid};
use crond::trust;

use crate::conn::{Connect, Connection};

/// The most read of a passfile or of /etc/default/cron (64 KiB).
const MAX_READ: u64 = 64 * 1024;

/// Where the daemon's settings live on Debian (`CRON_CLUSTER_DB=...`).
pub const DEFAULTS_FILE: &str = "/etc/default/cron";

/// The connection settings: `--db`, else `CRON_CLUSTER_DB` from the environment, else from
/// /etc/default/cron.
pub fn settings(given: Option<String>) -> Result<String, SetupError> {
    if let Some(db) = given {
        return Ok(db);
    }
    if let Ok(db) = std::env::var("CRON_CLUSTER_DB")
        && !db.trim().is_empty()
    {
        return Ok(db);
    }
    let mut text = String::new();
    if let Ok(file) = std::fs::File::open(DEFAULTS_FILE) {
        // A shell fragment of a few lines: what lies past 64 KiB is not read.
        let _ = file.take(MAX_READ).read_to_string(&mut text);
    }
    defaults_value(&text, "CRON_CLUSTER_DB").ok_or(SetupError::NoDatabase)
}

/// `NAME=value`, `NAME="value"` or `NAME='value'` in a shell-style defaults file (the last one
/// set wins; comments and other lines are skipped).
pub fn defaults_value(text: &str, name: &str) -> Option<String> {
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        let Some(rest) = line.strip_prefix(name).and_then(|r| r.strip_prefix('=')) else {
            continue;
        };
        let value = match rest.as_bytes().first() {
            Some(&q @ (b'"' | b'\'')) => rest[1..].split(q as char).next().unwrap_or(""),
            _ => rest.split_whitespace().next().unwrap_or(""),
        };
        found = Some(value.to_string()).filter(|v| !v.is_empty());
    }
    found
}

/// Parses the settings with the caller's user name as the default user.
pub fn conninfo(text: &str) -> Result<ConnInfo, SetupError> {
    let user = User::resolve_uid(effective_uid())
        .ok()
        .flatten()
        .map(|u| String::from_utf8_lossy(&u.name).into_owned())
        .unwrap_or_else(|| "root".to_string());
    conninfo::parse(text, &user).map_err(SetupError::ConnInfo)
}

/// The password for each of `info`'s servers from its passfile, which must be a regular file
/// of the caller's own that no one else can read or write (as libpq demands of ~/.pgpass).
fn passwords(info: &ConnInfo) -> Result<Vec<Option<String>>, SetupError> {
    let Some(path) = &info.passfile else {
        return Ok(vec![None; info.servers.len()]);
    };
    let text = read_passfile(path)?;
    Ok(info
        .servers
        .iter()
        .map(|s| conninfo::pgpass_lookup(&text, &s.host, s.port, &info.dbname, &info.user))
        .collect())
}

fn read_passfile(path: &Path) -> Result<String, SetupError> {
    let bytes = read_private_file(path, "passfile")?;
    String::from_utf8(bytes).map_err(|_| SetupError::NotUtf8(path.to_path_buf()))
}

/// A secret file (a passfile, a TLS client key): a regular file, not a symlink, owned by the
/// user reading it with no group or other permission bits (as libpq demands of ~/.pgpass and
/// of a client key), at most 64 KiB. `what` names the setting in errors.
pub fn read_private_file(path: &Path, what: &'static str) -> Result<Vec<u8>, SetupError> {
    let fail = |why| SetupError::Private {
        what,
        path: path.to_path_buf(),
        why,
    };
    let (file, facts) = open_no_follow(path).map_err(|e| fail(Private::Io(e)))?;
    trust::check_private(&facts, effective_uid()).map_err(|why| fail(Private::Untrusted(why)))?;
    if facts.size > MAX_READ {
        return Err(fail(Private::TooLarge));
    }
    let mut bytes = Vec::new();
    file.take(MAX_READ)
        .read_to_end(&mut bytes)
        .map_err(|e| fail(Private::Io(e)))?;
    Ok(bytes)
}

/// Connects with the password from the passfile. The statement bound is the connection's own
/// (`ConnInfo::statement_timeout_ms`, sent at login: no `SET`, which a pooler in transaction
/// mode would leave on whichever server session ran it).
pub fn connect(
    connector: &dyn Connect,
    info: &ConnInfo,
) -> Result<Box<dyn Connection>, SetupError> {
    let passwords = passwords(info)?;
    connector
        .connect(info, &passwords)
        .map_err(SetupError::Connect)
}

/// Why no connection could be made: the settings, the passfile, or the connection itself.
#[derive(Debug)]
pub enum SetupError {
    /// No `--db`, `CRON_CLUSTER_DB` or setting in [`DEFAULTS_FILE`].
    NoDatabase,
    ConnInfo(conninfo::ConnInfoError),
    /// A secret file (`what` names its setting) that can't be used.
    Private {
        what: &'static str,
        path: PathBuf,
        why: Private,
    },
    /// The passfile is not UTF-8.
    NotUtf8(PathBuf),
    /// The connection failed, as the client says it.
    Connect(String),
}

/// What is wrong with a secret file.
#[derive(Debug)]
pub enum Private {
    Io(io::Error),
    Untrusted(trust::Untrusted),
    /// Over [`MAX_READ`].
    TooLarge,
}

impl fmt::Display for SetupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SetupError::NoDatabase => write!(
                f,
                "no cluster database: give --db CONNINFO, or set CRON_CLUSTER_DB in \
                 {DEFAULTS_FILE}"
            ),
            SetupError::ConnInfo(e) => write!(f, "--cluster-db: {e}"),
            SetupError::Private { what, path, why } => {
                write!(f, "{what} {}: ", path.display())?;
                match why {
                    Private::Io(e) => write!(f, "{e}"),
                    Private::Untrusted(why) => write!(f, "{why}"),
                    Private::TooLarge => write!(f, "larger than {MAX_READ} bytes"),
                }
            }
            SetupError::NotUtf8(path) => write!(f, "passfile {}: not UTF-8", path.display()),
            SetupError::Connect(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for SetupError {}

/// A random session number for this helper: claims made under another session of the same
/// host name (a crashed helper's) are no longer this host's.
pub fn new_session() -> i64 {
    let mut bytes = [0u8; 8];
    if crond::sys::random_bytes(&mut bytes).is_err() {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        bytes = (t.as_nanos() as u64 ^ u64::from(std::process::id())).to_le_bytes();
    }
    (u64::from_le_bytes(bytes) >> 1) as i64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_passfile_others_can_read_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pgpass");
        std::fs::write(&path, "*:*:*:cron:secret\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = read_passfile(&path).unwrap_err().to_string();
        assert!(e.contains("mode 0600") && e.contains("0644"), "{e}");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert_eq!(read_passfile(&path).unwrap(), "*:*:*:cron:secret\n");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(read_passfile(&link).is_err(), "a symlink is not followed");
    }

    #[test]
    fn the_defaults_file_gives_the_last_setting_quoted_or_not() {
        let text =
            "# crond\nEXTRA_OPTS=\"-L 15\"\nCRON_CLUSTER_DB=\"host=/run/postgresql dbname=cron\"\n";
        assert_eq!(
            defaults_value(text, "CRON_CLUSTER_DB").as_deref(),
            Some("host=/run/postgresql dbname=cron")
        );
        assert_eq!(
            defaults_value("CRON_CLUSTER_DB=postgresql:///cron\n", "CRON_CLUSTER_DB").as_deref(),
            Some("postgresql:///cron")
        );
        assert_eq!(
            defaults_value(
                "#CRON_CLUSTER_DB=x\nCRON_CLUSTER_DB_X=y\n",
                "CRON_CLUSTER_DB"
            ),
            None
        );
        assert_eq!(
            defaults_value("CRON_CLUSTER_DB=''\n", "CRON_CLUSTER_DB"),
            None
        );
    }
}
