//! Which file names in /etc/cron.d and the spool directory are crontabs. Pure: the caller lists
//! the directory and passes each name in.
//!
//! /etc/cron.d follows Debian (research §2.5): run-parts' classic rule `^[a-zA-Z0-9_-]+$`, or
//! with `-l` the LSB rule: `^_?([a-z0-9_.]+-)+[a-z0-9]+$` unless it ends in `dpkg-old` or
//! `dpkg-dist`, else `^[a-z0-9][a-z0-9-]*$`. So `foo.dpkg-old`, `.swp` files and editor backups
//! are never read.

/// The classic rule of [`cron_d_name_ok`] in words, for messages about a name it refuses.
pub const CRON_D_NAME_RULE: &str =
    "a name in cron.d holds only letters, digits, '_' and '-', as run-parts requires";

/// Debian's run-parts name rule for /etc/cron.d (`lsb`: cron's `-l`).
pub fn cron_d_name_ok(name: &[u8], lsb: bool) -> bool {
    if name.is_empty() || name[0] == b'.' {
        return false;
    }
    if !lsb {
        return name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    }
    if lsb_hierarchical(name) {
        let dpkg = name.ends_with(b"dpkg-old") || name.ends_with(b"dpkg-dist");
        return !dpkg;
    }
    let lower_or_digit = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    lower_or_digit(name[0]) && name.iter().all(|&b| lower_or_digit(b) || b == b'-')
}

/// `^_?([a-z0-9_.]+-)+[a-z0-9]+$`
fn lsb_hierarchical(name: &[u8]) -> bool {
    let body = name.strip_prefix(b"_").unwrap_or(name);
    let Some(last_dash) = body.iter().rposition(|&b| b == b'-') else {
        return false;
    };
    let (head, tail) = (&body[..last_dash], &body[last_dash + 1..]);
    let tail_ok = !tail.is_empty()
        && tail
            .iter()
            .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit());
    // `head` is one or more `[a-z0-9_.]+` groups joined by `-`.
    let head_ok = !head.is_empty()
        && head.split(|&b| b == b'-').all(|group| {
            !group.is_empty()
                && group.iter().all(|&b| {
                    b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'.'
                })
        });
    tail_ok && head_ok
}

/// Spool entries that are not crontabs: hidden files and crontab(1)'s temporary files
/// (`tmp.XXXXXX`, renamed into place when complete).
pub fn spool_name_ok(name: &[u8]) -> bool {
    !name.is_empty() && name[0] != b'.' && !name.starts_with(b"tmp.") && !name.contains(&b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classic_names_allow_letters_digits_underscore_and_dash_only() {
        for ok in ["php", "e2scrub_all", "Sys-Stat", "0hourly"] {
            assert!(cron_d_name_ok(ok.as_bytes(), false), "{ok}");
        }
        for bad in ["foo.dpkg-old", ".placeholder", "foo~", "a.b", ""] {
            assert!(!cron_d_name_ok(bad.as_bytes(), false), "{bad}");
        }
    }

    #[test]
    fn lsb_names_follow_debian_cron_minus_l() {
        for ok in ["php", "my-job", "_debian.org-foo", "a.b-c", "0hourly"] {
            assert!(cron_d_name_ok(ok.as_bytes(), true), "{ok}");
        }
        for bad in [
            "foo.dpkg-old",
            "foo.dpkg-dist",
            "Upper",
            "a.b",
            "-x",
            "ab_c",
        ] {
            assert!(!cron_d_name_ok(bad.as_bytes(), true), "{bad}");
        }
    }

    #[test]
    fn spool_temporaries_and_hidden_files_are_skipped() {
        assert!(spool_name_ok(b"alice"));
        assert!(!spool_name_ok(b"tmp.Xa81"));
        assert!(!spool_name_ok(b".alice.swp"));
    }
}
