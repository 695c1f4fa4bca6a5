//! The local zone as `TZ` or the zone file (/etc/localtime) sets it, read from the file itself:
//! for the daemon's schedule (`daemon::zone` reads it again when the file changes) and for the
//! time stamps of the log on stderr. Not through jiff's system zone, which, to name the zone a
//! link leads to, lists the whole zone database (some 600 files under /usr/share/zoneinfo,
//! 170 KiB of heap kept for the daemon's life); `TZ` is read the same way (`from_tz`).

use std::fmt;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use jiff::tz::TimeZone;

use crate::schedule::Zone;

/// The largest zone file read: TZif files are a few KiB (the largest in tzdata is under
/// 4 KiB); anything bigger is not one.
pub const MAX_ZONE_FILE: u64 = 256 << 10;

/// Whether `TZ` names the zone (set and not empty).
pub fn from_env() -> bool {
    std::env::var_os("TZ").is_some_and(|tz| !tz.is_empty())
}

/// The local zone: `TZ`'s if set, else the zone file's (named for the tz database entry its
/// link leads to, `localtime` when it is not a link). An error names what is wrong with the
/// file; the caller decides what stands instead.
pub fn read(path: &Path) -> Result<Zone, ZoneFileError> {
    if let Some(tz) = std::env::var_os("TZ").filter(|tz| !tz.is_empty()) {
        let dir = std::env::var_os("TZDIR").unwrap_or_else(|| ZONE_DIR.into());
        return Ok(from_tz(&tz, Path::new(&dir)).unwrap_or_else(|| {
            let tz = TimeZone::system();
            let name = tz.iana_name().unwrap_or("localtime").to_string();
            Zone::new(&name, tz)
        }));
    }
    read_file(path)
}

/// Where the tz database's zone files are, unless `TZDIR` says.
const ZONE_DIR: &str = "/usr/share/zoneinfo";

/// The zone a `TZ` value names, as glibc reads it: `NAME` or `:NAME` a zone file in `dir`
/// (`America/New_York`, `UTC`) or at an absolute path, else a POSIX TZ string
/// (`EST5EDT,M3.2.0,M11.1.0`). Read as the zone file is, not through jiff's database, which
/// lists every zone before it looks one up (0.7 ms of a start and 156 KiB of heap kept, with
/// `TZ=UTC`, as containers often run). `None` for what this does not read (not UTF-8, a name
/// with `..`, neither a zone file nor a POSIX string): jiff's reading of `TZ` decides then.
fn from_tz(tz: &std::ffi::OsStr, dir: &Path) -> Option<Zone> {
    let value = tz.to_str()?;
    let name = value.strip_prefix(':').unwrap_or(value);
    if name.is_empty() || name.split('/').any(|part| part == "..") {
        return None;
    }
    let file = if name.starts_with('/') {
        Path::new(name).to_path_buf()
    } else {
        dir.join(name)
    };
    if file.is_file() {
        let shown = name.rsplit_once("zoneinfo/").map_or(name, |(_, n)| n);
        return read_named(&file, shown).ok();
    }
    match name {
        "UTC" => Some(Zone::utc()),
        _ => Zone::posix(name),
    }
}

/// The zone of the file at `path`, whatever `TZ` says.
fn read_file(path: &Path) -> Result<Zone, ZoneFileError> {
    let name = std::fs::read_link(path)
        .ok()
        .and_then(|target| {
            let target = target.to_string_lossy().into_owned();
            target
                .split_once("zoneinfo/")
                .map(|(_, name)| name.to_string())
        })
        .unwrap_or_else(|| "localtime".to_string());
    read_named(path, &name)
}

/// The zone file at `path`, under `name`.
fn read_named(path: &Path, name: &str) -> Result<Zone, ZoneFileError> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_ZONE_FILE + 1).read_to_end(&mut bytes))
        .map_err(|e| ZoneFileError::Unreadable(path.to_path_buf(), e))?;
    if bytes.len() as u64 > MAX_ZONE_FILE {
        return Err(ZoneFileError::TooLarge(path.to_path_buf()));
    }
    TimeZone::tzif(name, &bytes)
        .map(|tz| Zone::new(name, tz))
        .map_err(|e| ZoneFileError::NotTzif(path.to_path_buf(), e))
}

/// What is wrong with a zone file, naming it.
#[derive(Debug)]
pub enum ZoneFileError {
    Unreadable(PathBuf, io::Error),
    /// Over [`MAX_ZONE_FILE`].
    TooLarge(PathBuf),
    NotTzif(PathBuf, jiff::Error),
}

impl fmt::Display for ZoneFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ZoneFileError::Unreadable(path, e) => write!(f, "can't read {}: {e}", path.display()),
            ZoneFileError::TooLarge(path) => write!(
                f,
                "{} is larger than {} KiB: not a zone file",
                path.display(),
                MAX_ZONE_FILE >> 10
            ),
            ZoneFileError::NotTzif(path, e) => {
                write!(f, "{} is not a zone file: {e}", path.display())
            }
        }
    }
}

impl std::error::Error for ZoneFileError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tz_names_a_zone_file_an_absolute_path_or_a_posix_string_as_glibc_reads_it() {
        let dir = Path::new("/usr/share/zoneinfo");
        let zone = |tz: &str| from_tz(std::ffi::OsStr::new(tz), dir);
        // 2026-07-01 12:00 UTC: New York is at -4, Paris at +2.
        let summer = jiff::Timestamp::from_second(1_782_907_200).unwrap();
        let offset = |z: &Zone| z.time_zone().to_offset(summer).seconds() / 3600;
        for (tz, name, hours) in [
            ("America/New_York", "America/New_York", -4),
            (":America/New_York", "America/New_York", -4),
            ("/usr/share/zoneinfo/Europe/Paris", "Europe/Paris", 2),
            (":/usr/share/zoneinfo/Europe/Paris", "Europe/Paris", 2),
            ("UTC", "UTC", 0),
            ("EST5EDT,M3.2.0,M11.1.0", "EST5EDT,M3.2.0,M11.1.0", -4),
            ("<+0330>-3:30", "<+0330>-3:30", 3),
        ] {
            let z = zone(tz).unwrap_or_else(|| panic!("{tz} read"));
            assert_eq!((z.name(), offset(&z)), (name, hours), "{tz}");
        }
        // Without a zone file in the directory, UTC is still UTC.
        let empty = tempfile::tempdir().unwrap();
        let utc = from_tz(std::ffi::OsStr::new("UTC"), empty.path()).unwrap();
        assert_eq!((utc.name(), offset(&utc)), ("UTC", 0));
        // What this does not read is left to jiff.
        for tz in ["Nowhere/Atlantis", "../../etc/passwd", "FOO", ""] {
            assert!(zone(tz).is_none(), "{tz}");
        }
    }

    #[test]
    fn a_zone_file_is_read_whole_and_anything_else_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("localtime");
        std::os::unix::fs::symlink("/usr/share/zoneinfo/America/New_York", &link).unwrap();
        assert_eq!(read_file(&link).unwrap().name(), "America/New_York");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; MAX_ZONE_FILE as usize + 1]).unwrap();
        assert!(
            read_file(&big)
                .unwrap_err()
                .to_string()
                .contains("larger than 256 KiB")
        );
        let junk = dir.path().join("junk");
        std::fs::write(&junk, b"not tzif").unwrap();
        assert!(
            read_file(&junk)
                .unwrap_err()
                .to_string()
                .contains("is not a zone file")
        );
        assert!(
            read_file(&dir.path().join("missing"))
                .unwrap_err()
                .to_string()
                .contains("can't read")
        );
    }
}
