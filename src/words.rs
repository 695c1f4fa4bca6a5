//! Words for people: a count with its noun in English, and text made safe to show (Vixie's
//! `mkprint`; the characters a terminal would act on). Used by the log, the crontab parser's
//! messages and the control socket's answers.
//!
//! Pure.

/// A count and its noun as English says it: `count(1, "entry", "entries")` is `1 entry`,
/// `count(0, …)` and `count(2, …)` the plural.
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Whether `c` changes how a terminal shows the text around it without showing itself: a
/// control character (C0, DEL, C1: U+009B is an escape sequence's start on some terminals), a
/// bidirectional control (U+061C, U+200E, U+200F, U+202A to U+202E, U+2066 to U+2069: a line
/// can be made to read backwards) or an invisible format character (U+200B to U+200D, U+2060
/// to U+2065, U+FEFF). Such characters in a user's text are spelled out before they reach
/// another user's terminal.
pub fn is_hidden_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200b}'..='\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// Vixie's `mkprint`: printable ASCII as is, control bytes as `^X`, DEL as `^?`, bytes above
/// 127 as a backslash and three octal digits. Its result is printable ASCII, so rendering twice
/// changes nothing.
pub fn printable(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            0..=31 => {
                s.push('^');
                s.push((b + b'@') as char);
            }
            32..=126 => s.push(b as char),
            127 => s.push_str("^?"),
            _ => s.push_str(&format!("\\{b:03o}")),
        }
    }
    s
}

/// Cuts `text` to at most `max` bytes, at the end of a character.
pub fn truncate_at_char(text: &mut String, max: usize) {
    let end = cut_at_char(text, max).len();
    text.truncate(end);
}

/// `text`'s first `max` bytes at most, ending at a character's end.
pub fn cut_at_char(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidirectional_and_invisible_format_characters_are_hidden_controls_and_letters_are_not() {
        for c in [
            '\u{1b}', '\u{7f}', '\u{9b}', '\u{202e}', '\u{2066}', '\u{200b}', '\u{feff}',
        ] {
            assert!(is_hidden_control(c), "{c:?}");
        }
        for c in ['a', 'é', '\u{05d0}', '\u{2028}', '€', ' '] {
            assert!(!is_hidden_control(c), "{c:?}");
        }
    }

    #[test]
    fn mkprint_shows_control_bytes_as_carets_and_high_bytes_in_octal() {
        assert_eq!(printable(b"a\tb\x7f\xc3\xa9"), "a^Ib^?\\303\\251");
        assert_eq!(printable(b"\0\x1f"), "^@^_");
        assert_eq!(printable(b"plain ASCII ~ \\ ok"), "plain ASCII ~ \\ ok");
    }
}
