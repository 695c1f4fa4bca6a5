//! What a job child tells the daemon. The child of a run asked for with `cronctl run` says, on
//! a pipe the daemon hands it at the fork, one line when the job's command has started as its
//! user (or could not), and one when the job has ended; the daemon answers the waiting
//! connection with `control::report`'s words. Every job child says how its run ended (or why
//! nothing of it ran) on one pipe all children share, the line after its pid
//! ([`Said::outcome_line`]): what `cronctl list` and `cronctl show` give as a run's result.
//! Pure: the child writes the lines, the daemon reads them back with [`Said::parse`] and
//! [`Said::parse_outcome`].

use crate::history::Reason;

/// One thing the job child says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Said {
    /// The shell runs the command as `user`, with pid `pid`.
    Started { pid: u32, user: String },
    /// Nothing of the job runs, for this reason (its code, and a sentence, logged by the
    /// child too).
    NotStarted { why: Reason, reason: String },
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
            Said::NotStarted { why, reason } => {
                format!("failed {} {}\n", why.code(), one_line(reason))
            }
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
            "failed" => {
                let (code, reason) = rest.split_once(' ').unwrap_or((rest, ""));
                Some(Said::NotStarted {
                    why: Reason::parse(code)?,
                    reason: reason.to_string(),
                })
            }
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

impl Said {
    /// The line a job child with pid `pid` writes on the pipe of outcomes when this ends its
    /// run (its end, or the reason nothing ran; `None` for the start), cut to fit one atomic
    /// write of a pipe.
    pub fn outcome_line(&self, pid: u32) -> Option<String> {
        if let Said::Started { .. } = self {
            return None;
        }
        let mut line = format!("{pid} {}", self.line());
        if line.len() > MAX_SAID {
            crate::words::truncate_at_char(&mut line, MAX_SAID - 1);
            line.push('\n');
        }
        Some(line)
    }

    /// One line as [`Said::outcome_line`] wrote it (without its `\n`): the child's pid and
    /// what it said.
    pub fn parse_outcome(line: &[u8]) -> Option<(i32, Said)> {
        let space = line.iter().position(|&b| b == b' ')?;
        let pid = std::str::from_utf8(&line[..space]).ok()?.parse().ok()?;
        let said = Said::parse(&line[space + 1..])?;
        (!matches!(said, Said::Started { .. })).then_some((pid, said))
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
                why: Reason::UserUnknown,
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

    #[test]
    fn the_line_of_an_outcome_reads_back_as_the_childs_pid_and_what_it_said() {
        let ended = Said::Ended {
            end: End::Signaled(9),
            duration_ms: 70,
        };
        let line = ended.outcome_line(4242).unwrap();
        assert_eq!(line, "4242 signaled 9 70\n");
        assert_eq!(
            Said::parse_outcome(line.trim_end().as_bytes()),
            Some((4242, ended))
        );
        let started = Said::Started {
            pid: 1,
            user: "alice".into(),
        };
        assert_eq!(started.outcome_line(7), None);
        assert_eq!(Said::parse_outcome(b"7 started 1 alice"), None);
        assert_eq!(Said::parse_outcome(b"x exited 0 1"), None);
        // A reason too long for one write of a pipe is cut, within a character.
        let long = Said::NotStarted {
            why: Reason::Refused,
            reason: "é".repeat(MAX_SAID),
        };
        let line = long.outcome_line(7).unwrap();
        assert!(
            line.len() <= MAX_SAID && line.ends_with('\n'),
            "{}",
            line.len()
        );
        let (pid, Said::NotStarted { reason, .. }) =
            Said::parse_outcome(line.trim_end().as_bytes()).unwrap()
        else {
            panic!("{line:?}");
        };
        assert!(pid == 7 && reason.starts_with("éé"));
    }
}
