//! The `cronnext` command line: argv → [`Options`] (with the [`Action`] it asks for), or a
//! [`UsageError`]. Which mode is meant is decided here, from the positional arguments.
//!
//! Pure: no syscalls, no environment, no clock. Times and zones stay text: they are read by
//! `cronnext::run`, once the zone they are in is known.

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::path::PathBuf;

/// What the command line asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    pub tz: Option<String>,
    pub after: Option<String>,
    pub until: Option<String>,
    pub count: Option<u64>,
    pub system: bool,
    /// `--id`: each run shows its entry's id, as `cronctl list` shows it.
    pub id: bool,
    pub action: Action,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    Help,
    Version,
    Expression(String),
    Files(Vec<PathBuf>),
}

pub const USAGE: &str = "\
usage: cronnext [--tz ZONE] [--after TIME] [--count N] 'EXPRESSION'
       cronnext [--system] [--id] [--tz ZONE] [--after TIME] [--until TIME] [--count N] FILE...

Prints when a cron expression, or the entries of crontab files, will next run, as crond runs
them (same code, same daylight-saving rules).

  --tz ZONE      zone of the expression and of the printed times (default: the local zone)
  --after TIME   start strictly after TIME, RFC 3339 (2026-03-08T00:00:00-05:00) or a local
                 date and time (2026-03-08T00:00) in --tz (default: now)
  -n, --count N  print N times (expression) or N runs per entry (files); default 1
  --until TIME   files: print every run up to TIME (with --count: at most N per entry)
  --system       files are in the system format (/etc/crontab, /etc/cron.d): a user field
  --id           files: print each entry's id (as cronctl list shows it) before its user
  -h, --help     this text
  -V, --version  the version
";

/// A usage error: printed with the usage line, exit status 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Options {
    /// Parses argv (without the program name).
    pub fn try_parse_from<I>(args: I) -> Result<Options, UsageError>
    where
        I: IntoIterator,
        I::Item: Into<OsString>,
    {
        use lexopt::prelude::*;
        let mut parser = lexopt::Parser::from_args(args);
        let mut out = Options {
            tz: None,
            after: None,
            until: None,
            count: None,
            system: false,
            id: false,
            action: Action::Help,
        };
        let mut positional: Vec<OsString> = Vec::new();
        let err = |e: lexopt::Error| UsageError(e.to_string());
        let text = |v: OsString| {
            v.into_string()
                .map_err(|v| UsageError(format!("not valid UTF-8: {}", v.to_string_lossy())))
        };
        let mut help = false;
        let mut version = false;
        while let Some(arg) = parser.next().map_err(err)? {
            match arg {
                Long("tz") => out.tz = Some(text(parser.value().map_err(err)?)?),
                Long("after") => out.after = Some(text(parser.value().map_err(err)?)?),
                Long("until") => out.until = Some(text(parser.value().map_err(err)?)?),
                Long("count") | Short('n') => {
                    let v = text(parser.value().map_err(err)?)?;
                    let n = v
                        .parse::<u64>()
                        .map_err(|_| UsageError(format!("--count needs a number, not '{v}'")))?;
                    out.count = Some(n);
                }
                Long("system") => out.system = true,
                Long("id") => out.id = true,
                Short('h') | Long("help") => help = true,
                Short('V') | Long("version") => version = true,
                Value(v) => positional.push(v),
                _ => return Err(err(arg.unexpected())),
            }
        }
        out.action = if help {
            Action::Help
        } else if version {
            Action::Version
        } else if positional.is_empty() {
            return Err(UsageError(
                "an expression or a crontab file is needed".into(),
            ));
        } else if positional.len() == 1 && !out.system && looks_like_expression(&positional[0]) {
            let expr = text(positional.remove(0))?;
            if out.until.is_some() {
                return Err(UsageError("--until applies to crontab files only".into()));
            }
            Action::Expression(expr)
        } else {
            Action::Files(positional.into_iter().map(PathBuf::from).collect())
        };
        Ok(out)
    }
}

fn looks_like_expression(arg: &OsString) -> bool {
    let bytes = arg.as_encoded_bytes();
    bytes.starts_with(b"@") || bytes.iter().any(|&b| b == b' ' || b == b'\t')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, UsageError> {
        Options::try_parse_from(args.iter().copied())
    }

    fn action(args: &[&str]) -> Action {
        parse(args).unwrap().action
    }

    fn files(names: &[&str]) -> Action {
        Action::Files(names.iter().map(PathBuf::from).collect())
    }

    #[test]
    fn one_argument_with_a_blank_or_an_at_is_an_expression() {
        assert_eq!(
            action(&["0 9 * * *"]),
            Action::Expression("0 9 * * *".into())
        );
        assert_eq!(
            action(&["0\t9\t*\t*\t*"]),
            Action::Expression("0\t9\t*\t*\t*".into())
        );
        assert_eq!(action(&["@daily"]), Action::Expression("@daily".into()));
    }

    #[test]
    fn anything_else_is_crontab_files() {
        assert_eq!(action(&["alice"]), files(&["alice"]));
        assert_eq!(
            action(&["alice", "0 9 * * *"]),
            files(&["alice", "0 9 * * *"])
        );
        // --system means files, even for an argument that looks like an expression.
        let o = parse(&["--system", "0 9 * * *"]).unwrap();
        assert!(o.system);
        assert_eq!(o.action, files(&["0 9 * * *"]));
    }

    #[test]
    fn the_options_are_kept_as_given() {
        let o = parse(&[
            "--tz",
            "Asia/Kathmandu",
            "--after=2026-07-01T08:59",
            "--until",
            "2026-07-02T00:00:00Z",
            "-n",
            "3",
            "tab",
        ])
        .unwrap();
        assert_eq!(o.tz.as_deref(), Some("Asia/Kathmandu"));
        assert_eq!(o.after.as_deref(), Some("2026-07-01T08:59"));
        assert_eq!(o.until.as_deref(), Some("2026-07-02T00:00:00Z"));
        assert_eq!(o.count, Some(3));
        assert!(!o.system);
        assert_eq!(parse(&["--count", "7", "@hourly"]).unwrap().count, Some(7));
    }

    #[test]
    fn help_and_version_need_no_expression_and_help_wins() {
        assert_eq!(action(&["-h"]), Action::Help);
        assert_eq!(action(&["--help", "0 9 * * *"]), Action::Help);
        assert_eq!(action(&["-V"]), Action::Version);
        assert_eq!(action(&["--version"]), Action::Version);
        assert_eq!(action(&["-V", "-h"]), Action::Help);
    }

    #[test]
    fn usage_errors() {
        let message = |args: &[&str]| parse(args).unwrap_err().0;
        assert_eq!(message(&[]), "an expression or a crontab file is needed");
        assert_eq!(
            message(&["--count", "many", "* * * * *"]),
            "--count needs a number, not 'many'"
        );
        assert_eq!(
            message(&["--until", "2027-01-01T00:00:00Z", "* * * * *"]),
            "--until applies to crontab files only"
        );
        assert!(message(&["--bogus", "* * * * *"]).contains("--bogus"));
        assert!(message(&["--tz"]).contains("--tz"));
    }

    #[test]
    fn an_argument_that_is_not_utf8_is_a_usage_error() {
        use std::os::unix::ffi::OsStringExt;
        let bad = OsString::from_vec(b"0 9 * * \xff".to_vec());
        let e = Options::try_parse_from([bad]).unwrap_err();
        assert!(e.0.starts_with("not valid UTF-8: 0 9 * * "), "{e}");
    }
}
