//! The extensions' variables (docs/design.md §8, crontab.5 "Extensions"): like `CRON_TZ` and
//! `RANDOM_DELAY`, each applies to the entries below it, and a file without them means what it
//! means to Debian's cron.
//!
//! Pure.
//!
//! * `CRON_OVERLAP=allow|skip|queue`: what a run does when the entry's previous run is still
//!   going (default `allow`, Vixie's behaviour).
//! * `CRON_MISSED=skip|once`: whether runs missed while the daemon was not running are made up
//!   once at start-up (default `skip`).
//! * `CRON_TIMEOUT=DURATION`: the job's process group gets SIGTERM at the limit and SIGKILL
//!   [`KILL_AFTER_S`] seconds later (empty or `0`: no limit, the default).
//! * `CRON_CLUSTER=NAME`: the entries below are cluster entries (docs/cluster.md): on a daemon
//!   with a cluster database each run is claimed there first and runs on one host only; on a
//!   daemon without one they run as any other entry. `NAME` is 1 to 63 letters, digits, `.`,
//!   `_` or `-`; empty: local again (the default).
//! * `CRON_CLUSTER_RERUN=never|unknown`: for cluster entries that may run twice (idempotent):
//!   `unknown` starts a run once more, on another host, when its host died after starting it
//!   and before its end was written (at least once instead of at most once). Default `never`.
//! * `CRON_ID=NAME`: the entries below are named: each one's id (`cronctl list`, the run
//!   history) is made of its file, its user and this name, not its schedule and command, so it
//!   stays when the line is edited. `NAME` as `CRON_CLUSTER`'s; empty: ids from the line again
//!   (the default). Set it above the line it names, and again (or empty) below: entries that
//!   share a name are told apart by their order.
//! * `CRON_HASH=entry|host`: what the `H` fields of the entries below are hashed from
//!   (crontab.5 "Extensions"): `entry` (the default) the entry alone, so one file gives the same
//!   times on every host; `host` the entry and the host's name, so that many hosts given one file
//!   spread its runs over the range rather than all firing in the same minute.
//! * `CRON_NOTIFY=always|failure|change|never`: which runs notify (mail, `CRON_PING`,
//!   `CRON_WEBHOOK`): every one (the default, or the daemon's `--notify`), the failed ones, the
//!   first failure and the first success after failures, or none (`crate::history::notify`).
//! * `CRON_RETRY=N`: a run that failed (a non-zero exit, a signal, its `CRON_TIMEOUT`) is
//!   started again, up to `N` more times (0 to [`MAX_RETRIES`]; empty or `0`: never, the
//!   default), as attempts of the same slot (`crate::timeline::retry` decides when).
//! * `CRON_RETRY_DELAY=DURATION`: the wait before the first retry (1 s to [`MAX_RETRY_DELAY_S`]
//!   s; empty: [`DEFAULT_RETRY_DELAY_S`]); each later wait is twice the last, up to 10 minutes.
//!
//! A duration is one or more `NUMBER UNIT` parts with units `s`, `m`, `h`, `d` (`90s`, `2h`,
//! `1h30m`); a bare number is seconds. The value is checked when the file is parsed: a bad one is
//! an error at its column and the line is ignored (the entries below keep what was in force).

use std::fmt;
use std::num::NonZeroU16;

pub use crate::schedule::duration::{Duration, DurationError, MAX_DURATION_S, parse_duration};

/// What `CRON_TIMEOUT` does to the job's process group: SIGTERM at the limit, SIGKILL
/// [`KILL_AFTER_S`] seconds later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitAction {
    Term,
    Kill,
}

/// What a run does when the previous run of its entry has not ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Overlap {
    /// Start anyway (Vixie's behaviour).
    #[default]
    Allow,
    /// Do not start; log `SKIP`.
    Skip,
    /// Start once the running one ends; at most one run waits per entry.
    Queue,
}

/// Whether runs missed while the daemon was down are made up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Missed {
    /// As Vixie's cron: a missed minute is gone.
    #[default]
    Skip,
    /// One run at start-up for all that were missed (anacron's promise).
    Once,
}

/// What an entry's `H` fields are hashed from (`CRON_HASH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum HashFrom {
    /// The entry alone: the same value on every host.
    #[default]
    Entry,
    /// The entry and the host's name: a value of its own on each host.
    Host,
}

/// Which runs notify their user (`CRON_NOTIFY`; `crate::history::notify` decides).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Notify {
    /// Every run (mail when there is output): Vixie's behaviour.
    #[default]
    Always,
    /// Only the runs that failed, and the slots that did not run (but for a pause and a run on
    /// another host).
    Failure,
    /// The first failure, and the first success after failures.
    Change,
    /// None: no mail, no ping, no webhook.
    Never,
}

impl Notify {
    pub const ALL: [Notify; 4] = [
        Notify::Always,
        Notify::Failure,
        Notify::Change,
        Notify::Never,
    ];

    /// The word `CRON_NOTIFY` and `--notify` take.
    pub fn word(self) -> &'static str {
        match self {
            Notify::Always => "always",
            Notify::Failure => "failure",
            Notify::Change => "change",
            Notify::Never => "never",
        }
    }

    pub fn parse(word: &str) -> Option<Notify> {
        Notify::ALL.into_iter().find(|n| n.word() == word)
    }
}

/// The extensions in force for an entry: 28 bytes (24 before `CRON_RETRY`'s three), held
/// once per assignment (in the environment), not per entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Policy {
    pub overlap: Overlap,
    pub missed: Missed,
    /// `CRON_TIMEOUT` in seconds; `None`: no limit.
    pub timeout_s: Option<u32>,
    /// `CRON_LATE` in seconds: a scheduled run that would start later than this after its
    /// time is not started; `None`: no limit.
    pub late_s: Option<u32>,
    /// `CRON_CLUSTER` is set (its name is the environment's value): runs are claimed first.
    pub clustered: bool,
    /// `CRON_CLUSTER_RERUN=unknown`: a cluster run whose outcome was lost with its host is
    /// started once more elsewhere.
    pub rerun_unknown: bool,
    /// `CRON_HASH`: whether the host's name is in the `H` seed.
    pub hash: HashFrom,
    /// `CRON_NOTIFY`; `None`: not set, the daemon's `--notify` decides.
    pub notify: Option<Notify>,
    /// `CRON_RETRY`: how many times a failed run is started again (0: never).
    pub retries: u8,
    /// `CRON_RETRY_DELAY` in seconds; `None`: not set, [`DEFAULT_RETRY_DELAY_S`].
    pub retry_delay_s: Option<NonZeroU16>,
}

/// The most retries `CRON_RETRY` takes.
pub const MAX_RETRIES: u8 = 10;

/// The wait before a first retry when `CRON_RETRY_DELAY` is not set, in seconds.
pub const DEFAULT_RETRY_DELAY_S: u16 = 30;

/// The longest `CRON_RETRY_DELAY`, in seconds (an hour).
pub const MAX_RETRY_DELAY_S: u16 = 3600;

/// The longest cluster name, in bytes.
pub const MAX_CLUSTER_NAME: usize = 63;

/// Whether `name` may name a cluster: 1 to [`MAX_CLUSTER_NAME`] of `A-Z a-z 0-9 . _ -`.
pub fn is_cluster_name(name: &[u8]) -> bool {
    (1..=MAX_CLUSTER_NAME).contains(&name.len())
        && name
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// Seconds between the SIGTERM of a timed-out job and the SIGKILL of what is left of it.
pub const KILL_AFTER_S: u32 = 10;

/// Whether `name` is one of the variables of this module.
pub fn is_policy_name(name: &[u8]) -> bool {
    matches!(
        name,
        b"CRON_OVERLAP"
            | b"CRON_MISSED"
            | b"CRON_TIMEOUT"
            | b"CRON_LATE"
            | b"CRON_CLUSTER"
            | b"CRON_CLUSTER_RERUN"
            | b"CRON_ID"
            | b"CRON_HASH"
            | b"CRON_NOTIFY"
            | b"CRON_RETRY"
            | b"CRON_RETRY_DELAY"
    )
}

/// Why a value is not one its policy variable takes; each names the variable and the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PolicyError {
    Overlap(String),
    Missed(String),
    Timeout(DurationError),
    Late(DurationError),
    Cluster(String),
    Rerun(String),
    Id(String),
    Hash(String),
    Notify(String),
    Retry(String),
    RetryDelay(String),
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyError::Overlap(text) => write!(
                f,
                "CRON_OVERLAP must be allow, skip or queue, not '{}'",
                text.escape_debug()
            ),
            PolicyError::Missed(text) => write!(
                f,
                "CRON_MISSED must be skip or once, not '{}'",
                text.escape_debug()
            ),
            PolicyError::Timeout(e) => write!(f, "CRON_TIMEOUT: {e}"),
            PolicyError::Late(e) => write!(f, "CRON_LATE: {e}"),
            PolicyError::Cluster(text) => write!(
                f,
                "CRON_CLUSTER must be 1 to {MAX_CLUSTER_NAME} letters, digits, '.', '_' \
                 or '-', not '{}'",
                text.escape_debug()
            ),
            PolicyError::Rerun(text) => write!(
                f,
                "CRON_CLUSTER_RERUN must be never or unknown, not '{}'",
                text.escape_debug()
            ),
            PolicyError::Id(text) => write!(
                f,
                "CRON_ID must be 1 to {MAX_CLUSTER_NAME} letters, digits, '.', '_' or '-', \
                 not '{}'",
                text.escape_debug()
            ),
            PolicyError::Hash(text) => write!(
                f,
                "CRON_HASH must be entry or host, not '{}'",
                text.escape_debug()
            ),
            PolicyError::Notify(text) => write!(
                f,
                "CRON_NOTIFY must be always, failure, change or never, not '{}'",
                text.escape_debug()
            ),
            PolicyError::Retry(text) => write!(
                f,
                "CRON_RETRY must be a number of retries from 0 to {MAX_RETRIES}, not '{}'",
                text.escape_debug()
            ),
            PolicyError::RetryDelay(text) => write!(
                f,
                "CRON_RETRY_DELAY must be a duration from 1s to {} (e.g. 30s, 2m), not '{}'",
                Duration(u32::from(MAX_RETRY_DELAY_S)),
                text.escape_debug()
            ),
        }
    }
}

impl std::error::Error for PolicyError {}

impl Policy {
    /// This policy with `name=value` applied; `Err` with a message when the value is not one
    /// the variable takes. A name that is not a policy variable changes nothing.
    pub fn with(self, name: &[u8], value: &[u8]) -> Result<Policy, PolicyError> {
        if !is_policy_name(name) {
            // Every assignment of a file comes here: any other variable costs one compare.
            return Ok(self);
        }
        let mut policy = self;
        let text = std::str::from_utf8(value).unwrap_or("\u{fffd}");
        match name {
            b"CRON_OVERLAP" => {
                policy.overlap = match text {
                    "" | "allow" => Overlap::Allow,
                    "skip" => Overlap::Skip,
                    "queue" => Overlap::Queue,
                    _ => return Err(PolicyError::Overlap(text.to_string())),
                }
            }
            b"CRON_MISSED" => {
                policy.missed = match text {
                    "" | "skip" => Missed::Skip,
                    "once" => Missed::Once,
                    _ => return Err(PolicyError::Missed(text.to_string())),
                }
            }
            b"CRON_TIMEOUT" => {
                policy.timeout_s = match text {
                    "" | "0" => None,
                    _ => Some(parse_duration(text).map_err(PolicyError::Timeout)?),
                }
            }
            b"CRON_LATE" => {
                policy.late_s = match text {
                    "" | "0" => None,
                    _ => Some(parse_duration(text).map_err(PolicyError::Late)?),
                }
            }
            b"CRON_CLUSTER" => {
                if !value.is_empty() && !is_cluster_name(value) {
                    return Err(PolicyError::Cluster(text.to_string()));
                }
                policy.clustered = !value.is_empty();
            }
            b"CRON_CLUSTER_RERUN" => {
                policy.rerun_unknown = match text {
                    "" | "never" => false,
                    "unknown" => true,
                    _ => return Err(PolicyError::Rerun(text.to_string())),
                }
            }
            b"CRON_HASH" => {
                policy.hash = match text {
                    "" | "entry" => HashFrom::Entry,
                    "host" => HashFrom::Host,
                    _ => return Err(PolicyError::Hash(text.to_string())),
                }
            }
            b"CRON_NOTIFY" => {
                policy.notify = match text {
                    "" => None,
                    _ => Some(Notify::parse(text).ok_or(PolicyError::Notify(text.to_string()))?),
                }
            }
            b"CRON_RETRY" => policy.retries = parse_retries(text)?,
            b"CRON_RETRY_DELAY" => policy.retry_delay_s = parse_retry_delay(text)?,
            // The name is read from the environment where an id is made; here it is checked.
            b"CRON_ID" if !value.is_empty() && !is_cluster_name(value) => {
                return Err(PolicyError::Id(text.to_string()));
            }
            _ => {}
        }
        Ok(policy)
    }

    /// `CRON_RETRY_DELAY`, or its default, in seconds.
    pub fn retry_delay(&self) -> u16 {
        self.retry_delay_s
            .map_or(DEFAULT_RETRY_DELAY_S, NonZeroU16::get)
    }

    /// Whether anything differs from a file without the variables.
    pub fn is_default(&self) -> bool {
        *self == Policy::default()
    }
}

/// `CRON_RETRY`'s value: empty is 0.
fn parse_retries(text: &str) -> Result<u8, PolicyError> {
    if text.is_empty() {
        return Ok(0);
    }
    text.parse::<u8>()
        .ok()
        .filter(|n| *n <= MAX_RETRIES && text.bytes().all(|b| b.is_ascii_digit()))
        .ok_or(PolicyError::Retry(text.to_string()))
}

/// `CRON_RETRY_DELAY`'s value: empty is the default (`None`).
fn parse_retry_delay(text: &str) -> Result<Option<NonZeroU16>, PolicyError> {
    if text.is_empty() {
        return Ok(None);
    }
    let bad = || PolicyError::RetryDelay(text.to_string());
    let seconds = parse_duration(text).map_err(|_| bad())?;
    let seconds = u16::try_from(seconds)
        .ok()
        .filter(|&s| s <= MAX_RETRY_DELAY_S)
        .ok_or_else(bad)?;
    NonZeroU16::new(seconds).map(Some).ok_or_else(bad)
}

impl fmt::Display for Policy {
    /// `overlap=skip missed=once timeout=90s`: what differs from the default.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        match self.overlap {
            Overlap::Allow => {}
            Overlap::Skip => parts.push("overlap=skip".to_string()),
            Overlap::Queue => parts.push("overlap=queue".to_string()),
        }
        if self.missed == Missed::Once {
            parts.push("missed=once".to_string());
        }
        if let Some(s) = self.timeout_s {
            parts.push(format!("timeout={}", Duration(s)));
        }
        if let Some(s) = self.late_s {
            parts.push(format!("late={}", Duration(s)));
        }
        if self.clustered {
            parts.push("cluster".to_string());
        }
        if self.rerun_unknown {
            parts.push("rerun=unknown".to_string());
        }
        if self.hash == HashFrom::Host {
            parts.push("hash=host".to_string());
        }
        if let Some(notify) = self.notify {
            parts.push(format!("notify={}", notify.word()));
        }
        if self.retries > 0 {
            parts.push(format!("retry={}", self.retries));
        }
        if let Some(delay) = self.retry_delay_s {
            parts.push(format!("retry-delay={}", Duration(u32::from(delay.get()))));
        }
        f.write_str(&parts.join(" "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_is_as_small_as_its_comment_says() {
        assert_eq!(std::mem::size_of::<Policy>(), 28);
    }

    #[test]
    fn each_variable_takes_its_own_values_and_empty_means_the_default() {
        let p = Policy::default();
        assert!(p.is_default());
        let p = p.with(b"CRON_OVERLAP", b"skip").unwrap();
        let p = p.with(b"CRON_MISSED", b"once").unwrap();
        let p = p.with(b"CRON_TIMEOUT", b"90s").unwrap();
        assert_eq!(
            p,
            Policy {
                overlap: Overlap::Skip,
                missed: Missed::Once,
                timeout_s: Some(90),
                late_s: None,
                clustered: false,
                rerun_unknown: false,
                hash: HashFrom::Entry,
                notify: None,
                retries: 0,
                retry_delay_s: None,
            }
        );
        assert_eq!(p.to_string(), "overlap=skip missed=once timeout=1m30s");
        let q = p.with(b"CRON_OVERLAP", b"queue").unwrap();
        assert_eq!(q.overlap, Overlap::Queue);
        assert_eq!(
            p.with(b"PATH", b"/bin"),
            Ok(p),
            "other names change nothing"
        );
        let back = p
            .with(b"CRON_OVERLAP", b"")
            .and_then(|p| p.with(b"CRON_MISSED", b""))
            .and_then(|p| p.with(b"CRON_TIMEOUT", b"0"))
            .unwrap();
        assert!(back.is_default());
        assert!(p.with(b"CRON_OVERLAP", b"Skip").is_err());
        let c = p.with(b"CRON_CLUSTER", b"nightly-1.eu_west").unwrap();
        assert!(c.clustered);
        assert_eq!(
            c.to_string(),
            "overlap=skip missed=once timeout=1m30s cluster"
        );
        assert!(!c.with(b"CRON_CLUSTER", b"").unwrap().clustered);
        assert!(p.with(b"CRON_CLUSTER", b"two words").is_err());
        assert!(p.with(b"CRON_CLUSTER", &[b'a'; 64]).is_err());
        assert!(p.with(b"CRON_CLUSTER", &[b'a'; 63]).unwrap().clustered);
        assert!(p.with(b"CRON_MISSED", b"always").is_err());
        assert!(
            p.with(b"CRON_TIMEOUT", b"soon")
                .unwrap_err()
                .to_string()
                .starts_with("CRON_TIMEOUT: 'soon' is not a duration")
        );
        let rerun = p.with(b"CRON_CLUSTER_RERUN", b"unknown").unwrap();
        assert!(rerun.rerun_unknown);
        assert!(rerun.to_string().ends_with("rerun=unknown"), "{rerun}");
        assert!(
            !rerun
                .with(b"CRON_CLUSTER_RERUN", b"never")
                .unwrap()
                .rerun_unknown
        );
        assert!(
            !rerun
                .with(b"CRON_CLUSTER_RERUN", b"")
                .unwrap()
                .rerun_unknown
        );
        assert_eq!(
            p.with(b"CRON_CLUSTER_RERUN", b"always")
                .unwrap_err()
                .to_string(),
            "CRON_CLUSTER_RERUN must be never or unknown, not 'always'"
        );
        let late = p.with(b"CRON_LATE", b"2m").unwrap();
        assert_eq!(late.late_s, Some(120));
        assert_eq!(
            late.to_string(),
            "overlap=skip missed=once timeout=1m30s late=2m"
        );
        assert!(late.with(b"CRON_LATE", b"0").unwrap().late_s.is_none());
        assert!(late.with(b"CRON_LATE", b"").unwrap().late_s.is_none());
        assert!(
            p.with(b"CRON_LATE", b"367d")
                .unwrap_err()
                .to_string()
                .starts_with("CRON_LATE: ")
        );
        let host = p.with(b"CRON_HASH", b"host").unwrap();
        assert_eq!(host.hash, HashFrom::Host);
        assert_eq!(
            host.to_string(),
            "overlap=skip missed=once timeout=1m30s hash=host"
        );
        assert_eq!(host.with(b"CRON_HASH", b"entry").unwrap(), p);
        assert_eq!(host.with(b"CRON_HASH", b"").unwrap(), p);
        assert_eq!(
            p.with(b"CRON_HASH", b"Host").unwrap_err().to_string(),
            "CRON_HASH must be entry or host, not 'Host'"
        );
    }

    #[test]
    fn cron_notify_takes_its_four_words_and_empty_gives_the_choice_back_to_the_daemon() {
        let p = Policy::default();
        for notify in Notify::ALL {
            let q = p.with(b"CRON_NOTIFY", notify.word().as_bytes()).unwrap();
            assert_eq!(q.notify, Some(notify));
            assert_eq!(q.to_string(), format!("notify={}", notify.word()));
            assert_eq!(q.with(b"CRON_NOTIFY", b"").unwrap().notify, None);
        }
        assert_eq!(
            p.with(b"CRON_NOTIFY", b"Failure").unwrap_err().to_string(),
            "CRON_NOTIFY must be always, failure, change or never, not 'Failure'"
        );
        assert!(p.with(b"CRON_NOTIFY", b"errors").is_err());
    }

    #[test]
    fn cron_retry_takes_0_to_10_and_cron_retry_delay_1s_to_an_hour() {
        let p = Policy::default();
        assert_eq!(p.retries, 0);
        assert_eq!(p.retry_delay(), 30);
        for n in 0..=MAX_RETRIES {
            let q = p.with(b"CRON_RETRY", n.to_string().as_bytes()).unwrap();
            assert_eq!(q.retries, n);
        }
        let q = p.with(b"CRON_RETRY", b"3").unwrap();
        assert_eq!(q.to_string(), "retry=3");
        assert_eq!(q.with(b"CRON_RETRY", b"").unwrap().retries, 0);
        for bad in ["11", "-1", "+2", "three", "1.5", "300", " 2"] {
            assert_eq!(
                p.with(b"CRON_RETRY", bad.as_bytes())
                    .unwrap_err()
                    .to_string(),
                format!("CRON_RETRY must be a number of retries from 0 to 10, not '{bad}'"),
            );
        }
        let d = p.with(b"CRON_RETRY_DELAY", b"1").unwrap();
        assert_eq!(d.retry_delay(), 1);
        assert_eq!(d.to_string(), "retry-delay=1s");
        assert_eq!(
            p.with(b"CRON_RETRY_DELAY", b"2m").unwrap().retry_delay(),
            120
        );
        assert_eq!(
            p.with(b"CRON_RETRY_DELAY", b"1h").unwrap().retry_delay(),
            3600
        );
        assert_eq!(d.with(b"CRON_RETRY_DELAY", b"").unwrap().retry_delay(), 30);
        for bad in ["0", "3601", "1h1s", "soon", "2d"] {
            assert_eq!(
                p.with(b"CRON_RETRY_DELAY", bad.as_bytes())
                    .unwrap_err()
                    .to_string(),
                format!(
                    "CRON_RETRY_DELAY must be a duration from 1s to 1h (e.g. 30s, 2m), not '{bad}'"
                ),
            );
        }
    }
}
