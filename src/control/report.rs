//! What the job child of a run asked for with `cronctl run` tells the daemon, on a pipe the
//! daemon hands it at the fork: one line when the job's command has started as its user (or
//! could not), and one when the job has ended. Pure: the job child writes [`Said::line`], the
//! daemon reads the lines back with [`Said::parse`] and answers the waiting connection with
//! [`said_answer`].

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

fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// The answer to a run of `place` that waits for its job, once the child said `said`: `None`
/// while there is more to wait for (it started, and `wait` asks for the end too).
pub(crate) fn said_answer(place: &str, said: &Said, wait: bool) -> Option<Vec<u8>> {
    let text = match said {
        Said::Started { .. } if wait => return None,
        Said::Started { pid, user } => format!("OK\nstarted {place} as {user}, pid {pid}\n"),
        Said::NotStarted { reason } => {
            format!("ERROR {place} did not start: {}\n", one_line(reason))
        }
        Said::Ended { end, duration_ms } => {
            let after = seconds(*duration_ms);
            let how = match end {
                End::Exited(code) => format!("exited with status {code}"),
                End::Signaled(signal) => format!("was killed by {}", signal_name(*signal)),
            };
            format!("EXIT {}\n{place} {how} after {after}\n", end.status())
        }
    };
    Some(text.into_bytes())
}

/// The answer when the child's pipe closed before it said what the run waits for: `started`
/// whether the job had started already.
pub(crate) fn silent_answer(place: &str, started: bool) -> Vec<u8> {
    let what = if started {
        "its job child ended without saying how the job ended"
    } else {
        "its job child ended without starting the job"
    };
    format!("ERROR {place}: {what} (see crond's log)\n").into_bytes()
}

/// The answer when the child said nothing within `seconds` of the start.
pub(crate) fn no_word_answer(place: &str, seconds: i64) -> Vec<u8> {
    format!(
        "ERROR {place}: its job child has not said within {seconds} s whether the job started \
         (see crond's log)\n"
    )
    .into_bytes()
}

/// The answer to a run still waited for when the daemon stops.
pub(crate) fn stopping_answer(place: &str, started: bool) -> Vec<u8> {
    let what = if started {
        "the job goes on; its end is in crond's log"
    } else {
        "whether the job starts is in crond's log"
    };
    format!("ERROR crond is stopping while {place} runs: {what}\n").into_bytes()
}

/// `2.1s`, `0.0s`; `3m05s` past a minute, `2h03m` past an hour.
fn seconds(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0..60 => format!("{}.{}s", s, (ms % 1000) / 100),
        60..3600 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// `signal 9 (SIGKILL)`: the number, and the name of the common ones.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        10 => "SIGUSR1",
        11 => "SIGSEGV",
        12 => "SIGUSR2",
        13 => "SIGPIPE",
        14 => "SIGALRM",
        15 => "SIGTERM",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        _ => return format!("signal {signal}"),
    };
    format!("signal {signal} ({name})")
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

    #[test]
    fn the_answers_say_the_entry_what_became_of_it_and_the_status_a_shell_would() {
        let place = "crontabs/alice:3";
        let answer = |said: &Said, wait| {
            said_answer(place, said, wait).map(|a| String::from_utf8(a).unwrap())
        };
        let started = Said::Started {
            pid: 42,
            user: "alice".into(),
        };
        assert_eq!(
            answer(&started, false).unwrap(),
            "OK\nstarted crontabs/alice:3 as alice, pid 42\n"
        );
        assert_eq!(answer(&started, true), None, "--wait waits for the end");
        let ended = |end, duration_ms| Said::Ended { end, duration_ms };
        assert_eq!(
            answer(&ended(End::Exited(1), 2_150), true).unwrap(),
            "EXIT 1\ncrontabs/alice:3 exited with status 1 after 2.1s\n"
        );
        assert_eq!(
            answer(&ended(End::Signaled(9), 185_000), true).unwrap(),
            "EXIT 137\ncrontabs/alice:3 was killed by signal 9 (SIGKILL) after 3m05s\n"
        );
        let refused = Said::NotStarted {
            reason: "user unknown\n(getpwnam)".into(),
        };
        assert_eq!(
            answer(&refused, true).unwrap(),
            "ERROR crontabs/alice:3 did not start: user unknown (getpwnam)\n"
        );
    }
}
