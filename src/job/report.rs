//! What the job child of a run asked for with `cronctl run` tells the daemon, on a pipe the
//! daemon hands it at the fork: one line when the job's command has started as its user (or
//! could not), and one when the job has ended. Pure: the job child writes [`Said::line`], the
//! daemon reads the lines back with [`Said::parse`] and answers the waiting connection with
//! `control::report`'s words.

/// One thing the job child says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// The shell runs the command as `user`, with pid `pid`.
    Started { pid: u32, user: String },
    /// Nothing of the job runs, for this reason (a sentence, logged by the child too).
    NotStarted { reason: String },
    /// The shell ended, after `duration_ms`.
    Ended { end: End, duration_ms: u64 },
}

/// How the job's shell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    Exited(i32),
    Signaled(i32),
}

impl End {
    /// The exit status a shell gives for it: the code, or 128 plus the signal.
    pub fn status(self) -> i32 {
        match self {
            End::Exited(code) => code,
            End::Signaled(signal) => 128 + signal,
        }
    }
}

/// The longest line read back; what comes past it is dropped.
pub(crate) const MAX_SAID: usize = 1024;

impl Said {
    /// The line the job child writes, `\n` included (a reason is kept to one line).
    pub fn line(&self) -> String {
        match self {
            Said::Started { pid, user } => format!("started {pid} {}\n", one_line(user)),
            Said::NotStarted { reason } => format!("failed {}\n", one_line(reason)),
            Said::Ended {
                end: End::Exited(code),
                duration_ms,
            } => format!("exited {code} {duration_ms}\n"),
            Said::Ended {
                end: End::Signaled(signal),
                duration_ms,
            } => format!("signaled {signal} {duration_ms}\n"),
        }
    }

    /// One line as [`Said::line`] wrote it (without its `\n`); `None` for anything else.
    pub fn parse(line: &[u8]) -> Option<Said> {
        let text = std::str::from_utf8(line).ok()?;
        let (verb, rest) = text.split_once(' ')?;
        let numbers = || -> Option<(i32, u64)> {
            let (a, b) = rest.split_once(' ')?;
            Some((a.parse().ok()?, b.parse().ok()?))
        };
        match verb {
            "started" => {
                let (pid, user) = rest.split_once(' ')?;
                Some(Said::Started {
                    pid: pid.parse().ok()?,
                    user: user.to_string(),
                })
            }
            "failed" => Some(Said::NotStarted {
                reason: rest.to_string(),
            }),
            "exited" => numbers().map(|(code, duration_ms)| Said::Ended {
                end: End::Exited(code),
                duration_ms,
            }),
            "signaled" => numbers().map(|(signal, duration_ms)| Said::Ended {
                end: End::Signaled(signal),
                duration_ms,
            }),
            _ => None,
        }
    }
}

pub(crate) fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_the_child_writes_reads_back_as_what_it_said() {
        for said in [
            Said::Started {
                pid: 42,
                user: "alice".into(),
            },
            Said::NotStarted {
                reason: "user unknown".into(),
            },
            Said::Ended {
                end: End::Exited(3),
                duration_ms: 2100,
            },
            Said::Ended {
                end: End::Signaled(9),
                duration_ms: 5,
            },
        ] {
            let line = said.line();
            assert_eq!(line.matches('\n').count(), 1, "{line:?}");
            assert_eq!(Said::parse(line.trim_end().as_bytes()), Some(said));
        }
        assert_eq!(Said::parse(b"started x alice"), None);
        assert_eq!(Said::parse(b"exited 3"), None);
        assert_eq!(Said::parse(b"hello"), None);
    }
}
