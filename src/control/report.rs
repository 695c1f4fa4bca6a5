//! The answers to a run that waits for its job (`cronctl run`, `cronctl run --wait`), from
//! what its job child said ([`crate::job::report`]). Pure.

use crate::job::report::{End, Said, one_line};

/// The answer to a run of `place` that waits for its job, once the child said `said`: `None`
/// while there is more to wait for (it started, and `wait` asks for the end too).
pub(crate) fn said_answer(place: &str, said: &Said, wait: bool) -> Option<Vec<u8>> {
    let text = match said {
        Said::Started { .. } if wait => return None,
        Said::Started { pid, user } => format!("OK\nstarted {place} as {user}, pid {pid}\n"),
        Said::NotStarted { reason, .. } => {
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
    match short_signal_name(signal) {
        Some(name) => format!("signal {signal} ({name})"),
        None => format!("signal {signal}"),
    }
}

/// The name of a signal (`SIGKILL`) by its number, as Linux numbers them on x86 and arm (the
/// architectures crond is tested on; a number it does not know is shown as a number).
pub(super) fn short_signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        1 => "SIGHUP",
        2 => "SIGINT",
        3 => "SIGQUIT",
        4 => "SIGILL",
        5 => "SIGTRAP",
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
        16 => "SIGSTKFLT",
        17 => "SIGCHLD",
        18 => "SIGCONT",
        19 => "SIGSTOP",
        20 => "SIGTSTP",
        21 => "SIGTTIN",
        22 => "SIGTTOU",
        23 => "SIGURG",
        24 => "SIGXCPU",
        25 => "SIGXFSZ",
        26 => "SIGVTALRM",
        27 => "SIGPROF",
        28 => "SIGWINCH",
        29 => "SIGIO",
        30 => "SIGPWR",
        31 => "SIGSYS",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(any(target_arch = "x86_64", target_arch = "x86", target_arch = "aarch64"))]
    #[test]
    fn every_signal_is_named_as_the_system_names_it() {
        for n in 1..32 {
            let system = nix::sys::signal::Signal::try_from(n); // core-boundary: allow (the system's names)
            assert_eq!(short_signal_name(n), system.ok().map(|s| s.as_str()), "{n}");
        }
        assert_eq!(short_signal_name(64), None);
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
            why: crate::history::Reason::Refused,
            reason: "user unknown\n(getpwnam)".into(),
        };
        assert_eq!(
            answer(&refused, true).unwrap(),
            "ERROR crontabs/alice:3 did not start: user unknown (getpwnam)\n"
        );
    }
}
