//! The mail addresses a crontab may set, MAILTO and MAILFROM, checked by Debian's `safe_p`
//! rule: the first byte alphanumeric, every other byte alphanumeric or one of `@!:%-.,_+=/`.
//! Nothing that passes can look like a sendmail option (`-oQ/tmp`), carry a blank into the
//! MTA's arguments or a line break into a header. The parser checks them when the crontab is
//! checked (`crontab -n`, install, the daemon's load); the mail planner checks again.
//!
//! Pure.

/// Debian's `safe_p` over one value. Empty is not safe.
pub fn is_safe_address(value: &[u8]) -> bool {
    first_unsafe_byte(value).is_none() && !value.is_empty()
}

/// Where `value` first breaks the rule, if it does.
fn first_unsafe_byte(value: &[u8]) -> Option<usize> {
    const DELIMS: &[u8] = b"@!:%-.,_+=/";
    value
        .iter()
        .enumerate()
        .position(|(i, b)| !(b.is_ascii_alphanumeric() || (i > 0 && DELIMS.contains(b))))
}

/// A MAILTO value (not empty: empty means no mail) is a comma-separated list, and the whole
/// and each address must be safe. `Err((offset in the value, message))`.
pub(super) fn check_mailto(value: &[u8]) -> Result<(), (usize, String)> {
    if let Some(at) = first_unsafe_byte(value) {
        return Err((at, unsafe_message("MAILTO", value[at])));
    }
    let mut start = 0;
    let mut any = false;
    for address in value.split(|&b| b == b',') {
        if let Some(at) = first_unsafe_byte(address) {
            return Err((start + at, unsafe_message("MAILTO", address[at])));
        }
        any |= !address.is_empty();
        start += address.len() + 1;
    }
    if !any {
        return Err((0, "MAILTO names no address".to_string()));
    }
    Ok(())
}

/// A MAILFROM value (not empty: empty means the default sender) must be safe.
pub(super) fn check_mailfrom(value: &[u8]) -> Result<(), (usize, String)> {
    match first_unsafe_byte(value) {
        Some(at) => Err((at, unsafe_message("MAILFROM", value[at]))),
        None => Ok(()),
    }
}

fn unsafe_message(var: &str, byte: u8) -> String {
    let shown = if byte.is_ascii_graphic() {
        format!("'{}'", byte as char)
    } else {
        format!("byte 0x{byte:02x}")
    };
    format!(
        "{var} may hold only letters, digits and @!:%-.,_+=/ (not first), not {shown}: \
         the line is ignored"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debians_safe_address_rule() {
        for good in ["root", "a@b.c", "x-y+z=w/v:u%t!s_r,q", "9lives@example.org"] {
            assert!(is_safe_address(good.as_bytes()), "{good}");
        }
        for bad in [
            "", "-oQ/tmp", "a b", "a\nb", "@host", "a;b", "a|b", "a$b", "é",
        ] {
            assert!(!is_safe_address(bad.as_bytes()), "{bad:?}");
        }
    }

    #[test]
    fn mailto_names_the_first_bad_byte_of_the_whole_or_of_an_address() {
        assert_eq!(check_mailto(b"a@b,c@d"), Ok(()));
        assert_eq!(check_mailto(b"a@b c").unwrap_err().0, 3);
        // The whole starts well, but the second address starts with '-'.
        assert_eq!(check_mailto(b"a@b,-oQ/tmp").unwrap_err().0, 4);
        assert_eq!(check_mailto(b"a@b,,c").map_err(|e| e.0), Ok(()));
        assert!(check_mailto(b"a@b").is_ok());
        assert!(check_mailto(b",").is_err());
    }

    #[test]
    fn mailfrom_is_one_safe_value() {
        assert_eq!(check_mailfrom(b"cron@host"), Ok(()));
        let (at, message) = check_mailfrom(b"x\rFrom: y").unwrap_err();
        assert_eq!(at, 1);
        assert!(message.contains("byte 0x0d"), "{message}");
    }
}
