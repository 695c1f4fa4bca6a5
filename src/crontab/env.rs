//! `NAME = value` lines, read as Vixie's `load_env` reads them: the name may be quoted and ends at
//! a blank or `=`; blanks around `=` are optional; the value may be quoted with `'` or `"` (to
//! keep leading or trailing blanks, or to be empty), and a quoted value may be followed only by
//! blanks. Nothing is expanded (`$HOME` stays `$HOME`).
//!
//! Pure: the process's own environment is never read here.

use std::collections::HashMap;
use std::sync::Arc;

use super::policy::Policy;

/// The environment an entry gets from its crontab: the variables set above it, in the order
/// they were first set (a later line with the same name replaces the value in place).
///
/// Held as a chain of assignments, newest first, shared between snapshots: an assignment adds
/// one link holding its own name and value and nothing else, so a file's environments together
/// take memory linear in the file, however many entries sit between however many assignments
/// (a copy per assignment made a 138 KB file cost 200 MB). Reading walks the chain: its length
/// is bounded by the crontab's variable limit, which counts every assignment.
#[derive(Clone, Default)]
pub struct Env {
    newest: Option<Arc<Link>>,
    /// The extensions' variables as they stand here (`CRON_OVERLAP`, ...), read once per
    /// assignment so that the daemon never walks the chain to find them.
    policy: Policy,
}

struct Link {
    name: Box<[u8]>,
    value: Box<[u8]>,
    older: Option<Arc<Link>>,
}

impl Drop for Link {
    /// Unlinks the chain iteratively: the default drop would recurse once per link.
    fn drop(&mut self) {
        let mut older = self.older.take();
        while let Some(link) = older {
            match Arc::try_unwrap(link) {
                Ok(mut link) => older = link.older.take(),
                // Shared further down: another environment still holds the rest.
                Err(_) => break,
            }
        }
    }
}

impl Env {
    fn links(&self) -> impl Iterator<Item = &Link> {
        std::iter::successors(self.newest.as_deref(), |link| link.older.as_deref())
    }

    /// The value of `name`: the latest assignment of it.
    pub fn get(&self, name: &[u8]) -> Option<&[u8]> {
        self.links()
            .find(|link| &*link.name == name)
            .map(|link| &*link.value)
    }

    /// `CRON_OVERLAP`, `CRON_MISSED` and `CRON_TIMEOUT` as they stand for the entries holding
    /// this environment.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Every variable once, in the order first set, with its latest value.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut oldest_first: Vec<&Link> = self.links().collect();
        oldest_first.reverse();
        let mut order: Vec<(&[u8], &[u8])> = Vec::new();
        let mut index: HashMap<&[u8], usize> = HashMap::new();
        for link in oldest_first {
            match index.get(&*link.name) {
                Some(&i) => order[i].1 = &link.value,
                None => {
                    index.insert(&link.name, order.len());
                    order.push((&link.name, &link.value));
                }
            }
        }
        order.into_iter()
    }

    /// This environment with one more assignment; `self` and every entry holding it are
    /// unchanged and share everything with the result. A policy variable's value was checked
    /// by the parser (a bad one is never assigned).
    pub(crate) fn with(self: &Arc<Env>, name: &[u8], value: &[u8]) -> Arc<Env> {
        Arc::new(Env {
            policy: self.policy.with(name, value).unwrap_or(self.policy),
            newest: Some(Arc::new(Link {
                name: name.into(),
                value: value.into(),
                older: self.newest.clone(),
            })),
        })
    }
}

impl PartialEq for Env {
    fn eq(&self, other: &Env) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Env {}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(
                self.iter()
                    .map(|(n, v)| (String::from_utf8_lossy(n), String::from_utf8_lossy(v))),
            )
            .finish()
    }
}

/// What a line that is not a comment turned out to be.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum EnvLine<'a> {
    /// Not an assignment: parse it as an entry.
    NotEnv,
    Assign {
        name: &'a [u8],
        value: &'a [u8],
    },
    /// It is an assignment, but malformed (offset of the problem in the line, message).
    Bad(usize, String),
}

fn is_blank(b: u8) -> bool {
    b == b' ' || b == b'\t'
}

/// Reads `line` (leading blanks allowed) as an assignment if it is one.
pub(super) fn parse_env_line(line: &[u8]) -> EnvLine<'_> {
    let mut pos = 0;
    while pos < line.len() && is_blank(line[pos]) {
        pos += 1;
    }
    let (name, after_name) = match line.get(pos) {
        Some(&q @ (b'"' | b'\'')) => match line[pos + 1..].iter().position(|&b| b == q) {
            Some(n) => (&line[pos + 1..pos + 1 + n], pos + n + 2),
            None => return EnvLine::NotEnv,
        },
        _ => {
            let end = line[pos..]
                .iter()
                .position(|&b| is_blank(b) || b == b'=')
                .map_or(line.len(), |n| pos + n);
            (&line[pos..end], end)
        }
    };
    let mut eq = after_name;
    while eq < line.len() && is_blank(line[eq]) {
        eq += 1;
    }
    if name.is_empty() || line.get(eq) != Some(&b'=') {
        return EnvLine::NotEnv;
    }
    let mut v = eq + 1;
    while v < line.len() && is_blank(line[v]) {
        v += 1;
    }
    let value = match line.get(v) {
        Some(&q @ (b'"' | b'\'')) => {
            let Some(n) = line[v + 1..].iter().position(|&b| b == q) else {
                return EnvLine::Bad(v, format!("unterminated {} quote in the value", q as char));
            };
            let close = v + 1 + n;
            if let Some(junk) = line[close + 1..].iter().position(|&b| !is_blank(b)) {
                return EnvLine::Bad(
                    close + 1 + junk,
                    "unexpected text after the quoted value".to_string(),
                );
            }
            &line[v + 1..close]
        }
        _ => {
            let end = line
                .iter()
                .rposition(|&b| !is_blank(b))
                .map_or(v, |n| (n + 1).max(v));
            &line[v..end]
        }
    };
    EnvLine::Assign { name, value }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assign<'a>(name: &'a str, value: &'a str) -> EnvLine<'a> {
        EnvLine::Assign {
            name: name.as_bytes(),
            value: value.as_bytes(),
        }
    }

    #[test]
    fn assignments_allow_blanks_around_the_equals_sign() {
        assert_eq!(parse_env_line(b"PATH=/bin"), assign("PATH", "/bin"));
        assert_eq!(
            parse_env_line(b"  PATH = /bin:/usr/bin  "),
            assign("PATH", "/bin:/usr/bin")
        );
        assert_eq!(parse_env_line(b"A\t=\tb c"), assign("A", "b c"));
    }

    #[test]
    fn quotes_keep_blanks_and_allow_empty_values() {
        assert_eq!(parse_env_line(b"A=' x '"), assign("A", " x "));
        assert_eq!(parse_env_line(b"MAILTO=\"\""), assign("MAILTO", ""));
        assert_eq!(parse_env_line(b"MAILTO=''  "), assign("MAILTO", ""));
        assert_eq!(parse_env_line(b"MAILTO="), assign("MAILTO", ""));
        assert_eq!(parse_env_line(b"'MY VAR'=1"), assign("MY VAR", "1"));
        assert_eq!(parse_env_line(b"A=\"it's\""), assign("A", "it's"));
    }

    #[test]
    fn values_are_not_expanded() {
        assert_eq!(
            parse_env_line(b"PATH=$HOME/bin:$PATH"),
            assign("PATH", "$HOME/bin:$PATH")
        );
        assert_eq!(parse_env_line(b"A=b=c"), assign("A", "b=c"));
    }

    #[test]
    fn entries_are_not_assignments() {
        assert_eq!(parse_env_line(b"* * * * * FOO=bar"), EnvLine::NotEnv);
        assert_eq!(parse_env_line(b"0 0 * * * a=b"), EnvLine::NotEnv);
        assert_eq!(parse_env_line(b"@daily x=1"), EnvLine::NotEnv);
        assert_eq!(parse_env_line(b"FOO BAR=1"), EnvLine::NotEnv);
    }

    #[test]
    fn junk_after_a_quoted_value_is_an_error_at_its_column() {
        assert_eq!(
            parse_env_line(b"MAILTO=\"a,b\" x"),
            EnvLine::Bad(13, "unexpected text after the quoted value".to_string())
        );
        assert!(matches!(parse_env_line(b"A=\"open"), EnvLine::Bad(2, _)));
    }
}
