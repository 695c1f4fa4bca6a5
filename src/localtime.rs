//! The local zone as `TZ` or the zone file (/etc/localtime) sets it, read from the file itself:
//! for the daemon's schedule (`daemon::zone` reads it again when the file changes) and for the
//! time stamps of the log on stderr. Not through jiff's system zone, which, to name the zone a
//! link leads to, lists the whole zone database (some 600 files under /usr/share/zoneinfo,
//! 170 KiB of heap kept for the daemon's life).

use std::io::Read;
use std::path::Path;

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
pub fn read(path: &Path) -> Result<Zone, String> {
    if from_env() {
        let tz = TimeZone::system();
        let name = tz.iana_name().unwrap_or("localtime").to_string();
        return Ok(Zone::new(&name, tz));
    }
    read_file(path)
}

/// The zone of the file at `path`, whatever `TZ` says.
fn read_file(path: &Path) -> Result<Zone, String> {
    let name = std::fs::read_link(path)
        .ok()
        .and_then(|target| {
            let target = target.to_string_lossy().into_owned();
            target
                .split_once("zoneinfo/")
                .map(|(_, name)| name.to_string())
        })
        .unwrap_or_else(|| "localtime".to_string());
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_ZONE_FILE + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("can't read {}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_ZONE_FILE {
        return Err(format!(
            "{} is larger than {} KiB: not a zone file",
            path.display(),
            MAX_ZONE_FILE >> 10
        ));
    }
    TimeZone::tzif(&name, &bytes)
        .map(|tz| Zone::new(&name, tz))
        .map_err(|e| format!("{} is not a zone file: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zone_file_is_read_whole_and_anything_else_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let link = dir.path().join("localtime");
        std::os::unix::fs::symlink("/usr/share/zoneinfo/America/New_York", &link).unwrap();
        assert_eq!(read_file(&link).unwrap().name(), "America/New_York");
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; MAX_ZONE_FILE as usize + 1]).unwrap();
        assert!(read_file(&big).unwrap_err().contains("larger than 256 KiB"));
        let junk = dir.path().join("junk");
        std::fs::write(&junk, b"not tzif").unwrap();
        assert!(read_file(&junk).unwrap_err().contains("is not a zone file"));
        assert!(
            read_file(&dir.path().join("missing"))
                .unwrap_err()
                .contains("can't read")
        );
    }
}
