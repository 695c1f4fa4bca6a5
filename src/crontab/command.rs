//! The `%` rule of crontab(5), as Vixie's `do_command` applies it: a backslash escapes the next
//! byte (and is dropped only before `%`); the first unescaped `%` ends the command, and the text
//! after it is the job's standard input, with every further unescaped `%` a newline and a final
//! newline added when missing.
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
