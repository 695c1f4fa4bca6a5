//! The `%` rule of crontab(5), as Vixie's `do_command` applies it: a backslash escapes the next
//! byte (and is dropped only before `%`); the first unescaped `%` ends the command, and the text
//! after it is the job's standard input, with every further unescaped `%` a newline and a final
//! newline added when missing. [`format_percent`] finds the `%` that was meant for `date` or
//! `printf` and cuts the command instead, cron's best-known trap.
//!
//! Pure: bytes in, bytes out.

/// What the shell runs and what it reads on stdin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInput {
    pub command: Vec<u8>,
    /// `None`: no `%` in the command, stdin is /dev/null.
    pub stdin: Option<Vec<u8>>,
}

pub fn split_percent(raw: &[u8]) -> JobInput {
    let mut command = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'\\' if i + 1 < raw.len() => {
                if raw[i + 1] != b'%' {
                    command.push(b'\\');
                }
                command.push(raw[i + 1]);
                i += 2;
            }
            b'%' => {
                return JobInput {
                    command,
                    stdin: Some(stdin_text(&raw[i + 1..])),
                };
            }
            b => {
                command.push(b);
                i += 1;
            }
        }
    }
    JobInput {
        command,
        stdin: None,
    }
}

/// A `%` that ends the command where a format was surely meant (`date +%F`): where it is, and
/// how the word it is in reads escaped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatPercent {
    /// The byte offset of the `%` in the command.
    pub at: usize,
    /// The word the `%` is in, with every unescaped `%` of it written `\%`.
    pub escaped: String,
}

impl FormatPercent {
    /// The warning's text.
    pub fn message(&self) -> String {
        format!(
            "'%' ends the command here and the rest becomes its standard input; write {} if \
             the % belongs to the command",
            self.escaped
        )
    }
}

/// The first unescaped `%` of `command`, when it starts a date or printf conversion (`%F`,
/// `%Y`, `%s`, `%-5d`, `%02d`) in a place where a format is written: a word that starts with
/// `+` (`date +%F`), inside quotes (`printf '%s\n'`, `date "+%F %T"`), or after a `date` or
/// `printf` word of the same simple command. A `%` that starts intended standard input (`mail -s hi root%body`: a plain
/// word, no quotes, no date) does not count, nor one that starts no conversion (`echo 100%`).
pub fn format_percent(command: &[u8]) -> Option<FormatPercent> {
    let at = first_unescaped_percent(command)?;
    if !starts_conversion(&command[at + 1..]) {
        return None;
    }
    let word_start = command[..at]
        .iter()
        .rposition(|&b| b == b' ' || b == b'\t')
        .map_or(0, |i| i + 1);
    let word = &command[word_start..at];
    let in_format_word = word.iter().find(|&&b| b != b'\'' && b != b'"') == Some(&b'+');
    let in_quotes = quoted_at(command, at);
    // The words of the same simple command, before this one.
    let before = &command[..word_start];
    let segment = before
        .iter()
        .rposition(|b| matches!(b, b';' | b'|' | b'&' | b'('))
        .map_or(before, |i| &before[i + 1..]);
    let after_format_tool = segment
        .split(|&b| b == b' ' || b == b'\t')
        .map(|w| w.rsplit(|&b| b == b'/').next().unwrap_or(w))
        .any(|w| w == b"date" || w == b"printf");
    if !(in_format_word || in_quotes || after_format_tool) {
        return None;
    }
    let word_end = command[at..]
        .iter()
        .position(|&b| b == b' ' || b == b'\t')
        .map_or(command.len(), |i| at + i);
    Some(FormatPercent {
        at,
        escaped: escape_percents(&command[word_start..word_end]),
    })
}

fn first_unescaped_percent(command: &[u8]) -> Option<usize> {
    let mut i = 0;
    while i < command.len() {
        match command[i] {
            b'\\' => i += 2,
            b'%' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Whether `rest` (what follows a `%`) is a conversion: flags, a width and a precision, then a
/// letter that date(1) or printf(1) converts.
fn starts_conversion(rest: &[u8]) -> bool {
    let spec = rest
        .iter()
        .position(|b| !matches!(b, b'-' | b'_' | b'0'..=b'9' | b'^' | b'#' | b'.' | b'+'))
        .map(|i| rest[i]);
    matches!(
        spec,
        Some(
            b'a' | b'A'
                | b'b'
                | b'B'
                | b'c'
                | b'C'
                | b'd'
                | b'D'
                | b'e'
                | b'E'
                | b'f'
                | b'F'
                | b'g'
                | b'G'
                | b'h'
                | b'H'
                | b'i'
                | b'I'
                | b'j'
                | b'k'
                | b'l'
                | b'm'
                | b'M'
                | b'n'
                | b'N'
                | b'o'
                | b'p'
                | b'P'
                | b'q'
                | b'r'
                | b'R'
                | b's'
                | b'S'
                | b't'
                | b'T'
                | b'u'
                | b'U'
                | b'V'
                | b'w'
                | b'W'
                | b'x'
                | b'X'
                | b'y'
                | b'Y'
                | b'z'
                | b'Z'
        )
    )
}

/// Whether byte `at` of `command` is inside single or double quotes, as the shell reads them.
fn quoted_at(command: &[u8], at: usize) -> bool {
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < at {
        match (quote, command[i]) {
            (None, b'\\') => i += 1,
            (None, q @ (b'\'' | b'"')) => quote = Some(q),
            (Some(q), b) if b == q => quote = None,
            _ => {}
        }
        i += 1;
    }
    quote.is_some()
}

/// `word` as text, with each unescaped `%` written `\%`.
fn escape_percents(word: &[u8]) -> String {
    let mut out = Vec::with_capacity(word.len() + 4);
    let mut i = 0;
    while i < word.len() {
        match word[i] {
            b'\\' => {
                out.extend_from_slice(&word[i..(i + 2).min(word.len())]);
                i += 2;
            }
            b'%' => {
                out.extend_from_slice(b"\\%");
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    crate::words::printable(&out)
}

fn stdin_text(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + 1);
    let mut i = 0;
    while i < raw.len() {
        match raw[i] {
            b'\\' if raw.get(i + 1) == Some(&b'%') => {
                out.push(b'%');
                i += 2;
            }
            b'%' => {
                out.push(b'\n');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    if out.last() != Some(&b'\n') {
        out.push(b'\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(raw: &str) -> (String, Option<String>) {
        let j = split_percent(raw.as_bytes());
        (
            String::from_utf8(j.command).unwrap(),
            j.stdin.map(|s| String::from_utf8(s).unwrap()),
        )
    }

    fn warned(command: &str) -> Option<(usize, String)> {
        format_percent(command.as_bytes()).map(|w| (w.at, w.escaped))
    }

    #[test]
    fn a_percent_meant_for_date_or_printf_is_found_with_its_word_escaped() {
        assert_eq!(warned("date +%F"), Some((6, r"+\%F".into())));
        assert_eq!(
            warned("tar czf /b/$(date +%Y-%m-%d).tgz /srv"),
            Some((19, r"+\%Y-\%m-\%d).tgz".into()))
        );
        assert_eq!(warned("date '+%F %T'"), Some((7, r"'+\%F".into())));
        assert_eq!(warned(r"printf '%s\n' hi"), Some((8, r"'\%s\n'".into())));
        assert_eq!(warned("printf %d 5"), Some((7, r"\%d".into())));
        assert_eq!(
            warned("/usr/bin/date -d yesterday +%s"),
            Some((28, r"+\%s".into()))
        );
        assert_eq!(
            warned(r#"awk '{printf "%-10s", $1}' f"#),
            Some((14, r#""\%-10s","#.into()))
        );
        assert_eq!(
            warned(r#"echo "load %02d" > f"#),
            Some((11, r#"\%02d""#.into()))
        );
    }

    #[test]
    fn a_percent_that_starts_intended_stdin_or_no_conversion_is_not_found() {
        // Intended standard input: a plain word, no quotes, no date or printf before it.
        assert_eq!(warned("mail -s hi root%body"), None);
        assert_eq!(warned("cat > /tmp/x%hello%world"), None);
        assert_eq!(warned("sendmail root%Subject: hi%%body"), None);
        // No conversion after the %.
        assert_eq!(warned("echo '100%'"), None);
        assert_eq!(warned("date +%"), None);
        assert_eq!(warned("printf '% '"), None);
        // Escaped, as crontab(5) says to write it.
        assert_eq!(warned(r"date +\%F"), None);
        assert_eq!(warned(r"printf '\%s\n' hi"), None);
        // Only the first unescaped % counts: it is the one that cuts.
        assert_eq!(warned(r"date +\%F | mail root%done"), None);
        assert_eq!(warned("true"), None);
    }

    #[test]
    fn the_warning_says_what_happens_and_how_to_write_it() {
        let w = format_percent(b"date +%F").unwrap();
        assert_eq!(
            w.message(),
            r"'%' ends the command here and the rest becomes its standard input; write +\%F if the % belongs to the command"
        );
    }

    #[test]
    fn a_command_without_percent_has_no_stdin() {
        assert_eq!(split("echo hi"), ("echo hi".into(), None));
    }

    #[test]
    fn the_first_percent_starts_stdin_and_later_ones_are_newlines() {
        assert_eq!(
            split("mail -s hi root%line 1%line 2"),
            ("mail -s hi root".into(), Some("line 1\nline 2\n".into()))
        );
        assert_eq!(split("cat%"), ("cat".into(), Some("\n".into())));
        assert_eq!(split("cat%a%"), ("cat".into(), Some("a\n".into())));
    }

    #[test]
    fn backslash_percent_is_a_literal_percent() {
        assert_eq!(split(r"date +\%Y-\%m-\%d"), ("date +%Y-%m-%d".into(), None));
        assert_eq!(
            split(r"cat%100\% sure"),
            ("cat".into(), Some("100% sure\n".into()))
        );
    }

    #[test]
    fn other_backslashes_are_kept() {
        assert_eq!(split(r"printf 'a\n'"), (r"printf 'a\n'".into(), None));
        // `\\` escapes the second backslash, so the `%` after it is a real separator.
        assert_eq!(split(r"echo \\%x"), (r"echo \\".into(), Some("x\n".into())));
        assert_eq!(split("trailing\\"), ("trailing\\".into(), None));
    }

    #[test]
    fn bytes_that_are_not_utf8_survive() {
        let j = split_percent(b"echo \xe9t\xe9%\xff");
        assert_eq!(j.command, b"echo \xe9t\xe9");
        assert_eq!(j.stdin.as_deref(), Some(&b"\xff\n"[..]));
    }
}
