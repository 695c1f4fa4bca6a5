//! What the parser says about a file: one [`Diagnostic`] per problem, named by line and column,
//! and the bounds on how many are kept and how long each may be.
//!
//! Pure.

use std::fmt;

/// One problem in a file. `line` and `column` count from 1; columns count bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl Diagnostic {
    /// `FILE:LINE:COLUMN: message`, the form every tool and log line uses.
    pub fn in_file<'a>(&'a self, file: &'a str) -> impl fmt::Display + 'a {
        struct InFile<'a>(&'a Diagnostic, &'a str);
        impl fmt::Display for InFile<'_> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let d = self.0;
                write!(f, "{}:{}:{}: {}", self.1, d.line, d.column, d.message)
            }
        }
        InFile(self, file)
    }
}

/// How many problems of one file are kept and shown (logged at load, printed by `crontab -n`
/// and install); the rest are counted. One bad file must not flood the log: a million bad lines
/// made a million log lines and held 180 MB.
pub const SHOWN_PROBLEMS: usize = 20;

/// The longest diagnostic message, in bytes: a message that echoes what was written (a bad
/// word, a zone name, a value) is cut there, with `...`, so one line of a file can't make a
/// 100 KB line of log or of `crontab -n` output.
pub const MAX_MESSAGE: usize = 200;

pub(super) fn capped(mut message: String) -> String {
    if message.len() > MAX_MESSAGE {
        crate::words::truncate_at_char(&mut message, MAX_MESSAGE - 3);
        message.push_str("...");
    }
    message
}
