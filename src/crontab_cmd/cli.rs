//! The `crontab` command line, parsed into [`Options`] (an action, the user, the path
//! overrides). Invalid combinations die here, with Debian's usage messages.
//!
//! Pure: no syscalls, no environment. Whether the overrides are honoured is decided later, from
//! the process's privilege.

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::fmt;
use std::os::unix::ffi::OsStringExt;
use std::path::PathBuf;

/// Where a new crontab comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    Stdin,
    File(PathBuf),
}

impl Input {
    /// The name diagnostics use (`-` for stdin, as Debian).
    pub fn name(&self) -> String {
        match self {
            Input::Stdin => "-".to_string(),
            Input::File(p) => p.to_string_lossy().into_owned(),
        }
    }
}

/// What the user asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// `crontab [file|-]`: replace the crontab.
    Install(Input),
    /// `-l`
    List,
    /// `-e`
    Edit,
    /// `-r`, `-ri` (ask first).
    Remove {
        ask: bool,
    },
    /// `-n file` (Debian) or `-T file` (cronie): check only.
    Check(Input),
    Help,
    Version,
}

/// Paths given on the command line (honoured only without setgid privilege).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    pub spool_dir: Option<PathBuf>,
    pub allow_file: Option<PathBuf>,
    pub deny_file: Option<PathBuf>,
}

impl Overrides {
    pub fn any(&self) -> bool {
        self.spool_dir.is_some() || self.allow_file.is_some() || self.deny_file.is_some()
    }
}

/// A parsed command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub action: Action,
    /// `-u USER`
    pub user: Option<Vec<u8>>,
    pub overrides: Overrides,
}

/// A usage error: printed as `crontab: usage error: MESSAGE` and the usage text; exit 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UsageError {
    pub message: String,
    /// For an unknown option, getopt's own line (`invalid option -- 'x'`), which Debian's
    /// crontab prints first.
    pub getopt: Option<String>,
}

impl UsageError {
    fn new(message: impl Into<String>) -> UsageError {
        UsageError {
            message: message.into(),
            getopt: None,
        }
    }

    fn unrecognized(getopt: String) -> UsageError {
        UsageError {
            message: "unrecognized option".into(),
            getopt: Some(getopt),
        }
    }
}

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

pub const USAGE: &str = "\
usage:\tcrontab [-u user] [-n] file
\tcrontab [ -u user ] [ -i ] { -e | -l | -r }

\t-h\t(displays this help message)
\t-V\t(prints the version)

\tfile\t(default operation is replace, per 1003.2; - or no file: standard input)
\t-n\t(dry run: checks the syntax, then bails out; -T is the same)
\t-u user\t(choose the user whose crontab is touched)

\t-e\t(edit user's crontab)
\t-l\t(list user's crontab)
\t-r\t(delete user's crontab)

\t-i\t(prompt before deleting user's crontab)

for tests, ignored when crontab runs setgid:
\t--spool-dir DIR\t(the crontabs directory)
\t--allow-file FILE, --deny-file FILE\t(cron.allow and cron.deny)
";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    List,
    Edit,
    Remove,
}

/// The flags that choose the action, as read from the command line.
#[derive(Default)]
struct Flags {
    op: Option<Op>,
    ask: bool,
    check: bool,
    help: bool,
    version: bool,
    files: Vec<OsString>,
}

impl Flags {
    /// Records `-l`, `-e` or `-r`: one of them, any number of times.
    fn set_op(&mut self, new: Op) -> Result<(), UsageError> {
        match self.op {
            Some(old) if old != new => Err(UsageError::new("only one operation permitted")),
            _ => {
                self.op = Some(new);
                Ok(())
            }
        }
    }

    /// The action: help or version before anything else, then `-l`, `-e` or `-r` (with no
    /// file), else installing or (`-n`) checking one file or stdin.
    fn action(mut self) -> Result<Action, UsageError> {
        if self.help {
            return Ok(Action::Help);
        }
        if self.version {
            return Ok(Action::Version);
        }
        if let Some(op) = self.op {
            if !self.files.is_empty() || self.check {
                return Err(UsageError::new("no arguments permitted after this option"));
            }
            return Ok(match op {
                Op::List => Action::List,
                Op::Edit => Action::Edit,
                Op::Remove => Action::Remove { ask: self.ask },
            });
        }
        if self.files.len() > 1 {
            return Err(UsageError::new("only one file may be installed"));
        }
        let input = match self.files.pop() {
            None => Input::Stdin,
            Some(f) if f == "-" => Input::Stdin,
            Some(f) => Input::File(PathBuf::from(f)),
        };
        Ok(if self.check {
            Action::Check(input)
        } else {
            Action::Install(input)
        })
    }
}

impl Options {
    /// Parses argv without the program name.
    pub fn try_parse_from<I>(args: I) -> Result<Options, UsageError>
    where
        I: IntoIterator,
        I::Item: Into<OsString>,
    {
        use lexopt::prelude::*;
        let mut parser = lexopt::Parser::from_args(args);
        let mut flags = Flags::default();
        let mut user = None;
        let mut overrides = Overrides::default();
        let path = |v: Result<OsString, lexopt::Error>| {
            v.map(PathBuf::from)
                .map_err(|e| UsageError::new(e.to_string()))
        };
        while let Some(arg) = parser.next().map_err(|e| UsageError::new(e.to_string()))? {
            match arg {
                Short('u') => {
                    let v = parser.value().map_err(|e| UsageError::new(e.to_string()))?;
                    user = Some(v.into_vec());
                }
                Short('l') => flags.set_op(Op::List)?,
                Short('e') => flags.set_op(Op::Edit)?,
                Short('r') => flags.set_op(Op::Remove)?,
                Short('i') => flags.ask = true,
                Short('n') | Short('T') => flags.check = true,
                Short('h') | Long("help") => flags.help = true,
                Short('V') | Long("version") => flags.version = true,
                Long("spool-dir") => overrides.spool_dir = Some(path(parser.value())?),
                Long("allow-file") => overrides.allow_file = Some(path(parser.value())?),
                Long("deny-file") => overrides.deny_file = Some(path(parser.value())?),
                Value(v) => flags.files.push(v),
                Short(c) => {
                    let line = format!("invalid option -- '{c}'");
                    return Err(UsageError::unrecognized(line));
                }
                Long(name) => {
                    let line = format!("unrecognized option '--{name}'");
                    return Err(UsageError::unrecognized(line));
                }
            }
        }
        Ok(Options {
            action: flags.action()?,
            user,
            overrides,
        })
    }
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

    #[test]
    fn no_argument_and_a_dash_both_read_stdin() {
        assert_eq!(action(&[]), Action::Install(Input::Stdin));
        assert_eq!(action(&["-"]), Action::Install(Input::Stdin));
    }

    #[test]
    fn a_file_is_installed_and_n_or_t_only_checks_it() {
        let f = Input::File(PathBuf::from("tab"));
        assert_eq!(action(&["tab"]), Action::Install(f.clone()));
        assert_eq!(action(&["-n", "tab"]), Action::Check(f.clone()));
        assert_eq!(action(&["-T", "tab"]), Action::Check(f));
    }

    #[test]
    fn the_operations_and_their_user() {
        let c = parse(&["-u", "bob", "-l"]).unwrap();
        assert_eq!(c.action, Action::List);
        assert_eq!(c.user.as_deref(), Some(&b"bob"[..]));
        assert_eq!(action(&["-e"]), Action::Edit);
        assert_eq!(action(&["-r"]), Action::Remove { ask: false });
        assert_eq!(action(&["-ri"]), Action::Remove { ask: true });
        assert_eq!(action(&["-i", "-r"]), Action::Remove { ask: true });
        assert_eq!(action(&["-V"]), Action::Version);
        assert_eq!(action(&["-h"]), Action::Help);
    }

    #[test]
    fn two_operations_are_a_usage_error() {
        assert_eq!(
            parse(&["-l", "-r"]).unwrap_err().message,
            "only one operation permitted"
        );
        assert!(parse(&["-l", "file"]).is_err());
        assert!(parse(&["-n", "-l"]).is_err());
        assert!(parse(&["a", "b"]).is_err());
    }

    #[test]
    fn an_unknown_option_is_a_usage_error() {
        let e = parse(&["-x"]).unwrap_err();
        assert_eq!(e.message, "unrecognized option");
        assert_eq!(e.getopt.as_deref(), Some("invalid option -- 'x'"));
        let e = parse(&["--nope"]).unwrap_err();
        assert_eq!(e.getopt.as_deref(), Some("unrecognized option '--nope'"));
        assert!(parse(&["-u"]).is_err());
    }

    #[test]
    fn path_overrides_are_parsed_for_later_judgement() {
        let c = parse(&[
            "--spool-dir",
            "/s",
            "--allow-file=/a",
            "--deny-file",
            "/d",
            "-l",
        ])
        .unwrap();
        assert_eq!(c.overrides.spool_dir, Some(PathBuf::from("/s")));
        assert_eq!(c.overrides.allow_file, Some(PathBuf::from("/a")));
        assert_eq!(c.overrides.deny_file, Some(PathBuf::from("/d")));
        assert!(c.overrides.any());
    }
}
