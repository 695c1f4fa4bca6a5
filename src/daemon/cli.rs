//! The `crond` command line: argv → [`Options`] (with the [`Action`] and the [`MetricsAt`]s it
//! asks for), or a [`UsageError`]. The types live here with their parser; what they mean once
//! the defaults fill them is `daemon/options.rs`. Pure: no syscalls, no environment; the paths
//! are made absolute and checked later, by `daemon::run`.
//!
//! Flags (docs/design.md §6): Debian's `-f -l -n -L LEVEL`; cronie's `-s -m CMD|off -P -p -i -V`;
//! and the path overrides `--spool-dir --system-crontab --cron-d --pid-file --reboot-marker
//! --sendmail --localtime`, plus `--log syslog|stderr|both`, `--max-output SIZE` (bytes, or with a
//! K, M or G suffix, binary; 0: no limit), `--notify always|failure|change|never` (the
//! default of the files without `CRON_NOTIFY`), `--no-pam` and `--pam-dir DIR`; for containers
//! `--crontab FILE` (repeatable: user-format files run as the daemon's own user, instead of the
//! spool and the system files), `--keep-env NAME,...|'*'`, `--stop-jobs` and
//! `--stop-timeout SECONDS`.

use std::ffi::OsString;
use std::fmt;
use std::path::PathBuf;

use crate::cli::{args_error, in_range};
use crate::cluster::{MAX_KEEP_RUNS, MIN_KEEP_RUNS};
use crate::crontab::policy::Notify;
use crate::job::env::{self, KeepEnv};
use crate::log::{Destination, Format};

/// `crond -h`: the options, one line each, grouped as crond(8) describes them.
pub const USAGE: &str = "\
usage: crond [OPTION]...
       crond -f --crontab FILE... [OPTION]...
       crond --check --crontab FILE...

Debian's and cronie's options:
  -f                        stay in the foreground (as systemd runs it)
  -l                        names in /etc/cron.d follow the LSB namespaces
  -n                        the full host name in the subject of job mail
  -L LEVEL                  what to log of jobs: the sum of 1 start, 2 end, 4 failed, 8 pid
  -s                        job output to the log (CMDOUT) instead of mail
  -m CMD|off                mail with CMD instead of sendmail; off: no mail
  -P                        jobs inherit the daemon's PATH
  -p                        permit any mode on users' crontabs
  -i                        no inotify: look at the crontabs every minute
  -V                        print the version
  -h                        print this help

Logging and jobs:
  --log syslog|stderr|both  where the log goes (default syslog; both with -f)
  --log-format text|json    Debian's lines, or one JSON object per line
  --max-output SIZE         most output of a job kept and mailed (default 100M; 0: no limit)
  --notify always|failure|change|never
                            which runs mail (and ping) where CRON_NOTIFY is not set
                            (default always)
  --no-pam                  run jobs without a PAM session
  --pam-dir DIR             read the PAM service cron from DIR
  --control-socket PATH|off
                            the control socket cronctl asks (default beside the pid file)

Containers:
  --crontab FILE            run FILE as the daemon's own user (repeatable; no spool)
  --check                   check the --crontab files as crond would load them, and exit
  --wait-for-crontab        start even when no --crontab file can be loaded yet
  --keep-env NAME,...|'*'   variables of the daemon's environment that jobs keep
  --stop-jobs               on SIGTERM, stop the running jobs first (default as PID 1)
  --stop-timeout SECONDS    how long a stop waits before SIGKILL (0 to 3600; default 10)

History (every run's outcome and output, read with cronctl history and logs):
  --history FILE|off        the store (default history.db in the state directory)
  --history-output SIZE     bytes kept of each end of a run's output (default 32K; 0 to 64K)
  --history-days DAYS       how long outcomes are kept (1 to 3650; default 30)
  --history-runs N          outcomes kept per entry (10 to 100000; default 1000)
  --history-size SIZE       the store's most bytes, shared among users (default 256M)
  --history-writer PATH     the cronctl that writes the store (default beside crond)

Metrics and cluster mode:
  --metrics unix:PATH|ADDRESS:PORT
                            serve metrics there (repeatable)
  --metrics-group NAME      the group that may read the metrics socket
  --metrics-entries-on-tcp  per-entry series on a TCP place too
  --cluster-db CONNINFO     run cluster entries once across hosts, with this database
  --cluster-host NAME       this host's name in the cluster (default: the host name)
  --cluster-helper PATH     the cronctl that runs as the helper
  --cluster-keep DAYS       how long the history is kept (1 to 3650; default 30)
  --cluster-keep-runs N     how many runs of each entry the history keeps
  --cluster-lease SECONDS   how long an unrenewed lease lasts (3 to 300; default 30)

Paths (for tests and containers):
  --spool-dir DIR           users' crontabs (default /var/spool/cron/crontabs)
  --system-crontab FILE     the system crontab (default /etc/crontab)
  --cron-d DIR              system crontab fragments (default /etc/cron.d)
  --pid-file FILE           the pid file (default /run/crond.pid)
  --reboot-marker FILE      records that @reboot ran (default /run/crond.reboot)
  --sendmail PATH           the sendmail program (default /usr/sbin/sendmail)
  --localtime FILE          the local time zone's file (default /etc/localtime)
  --state-dir DIR           the daemon's state (default /var/lib/crond)
";

/// What the command line asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Action {
    /// Run the daemon.
    #[default]
    Run,
    /// `-V`
    Version,
    /// `-h`, `--help`
    Help,
    /// `--check`: check the `--crontab` files and exit.
    Check,
}

/// Everything the command line can say.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Options {
    pub action: Action,
    /// `-f`: stay in the foreground.
    pub foreground: bool,
    /// `-l`: LSB names in /etc/cron.d.
    pub lsb_names: bool,
    /// `-n` (Debian): the full host name in the mail subject.
    pub fqdn_in_subject: bool,
    /// `-L LEVEL`: Debian's bitmask (1 start, 2 end, 4 failed, 8 pid); `None` = 1.
    pub log_level: Option<u32>,
    /// `-s`: job output to syslog instead of mail.
    pub output_to_syslog: bool,
    /// `-m CMD|off`, as given (`None`: sendmail).
    pub mail: Option<OsString>,
    /// `-P`: jobs inherit the daemon's PATH.
    pub inherit_path: bool,
    /// `-p`: permit any crontab mode (not group/world-writable).
    pub permit_any_mode: bool,
    /// `-i`: no inotify; check mtimes every minute.
    pub no_inotify: bool,
    pub spool_dir: Option<PathBuf>,
    pub system_crontab: Option<PathBuf>,
    pub cron_d: Option<PathBuf>,
    pub pid_file: Option<PathBuf>,
    pub reboot_marker: Option<PathBuf>,
    pub sendmail: Option<PathBuf>,
    /// `--log`; `None`: syslog when daemonized, both with `-f`.
    pub log: Option<Destination>,
    /// `--log-format text|json`.
    pub log_format: Format,
    /// `--localtime FILE`: the local zone's file (default /etc/localtime).
    pub localtime: Option<PathBuf>,
    /// `--notify POLICY`: which runs notify where their file has no `CRON_NOTIFY`.
    pub notify: Notify,
    /// `--max-output SIZE` in bytes, as given (`None`: the default; `Some(0)`: no limit).
    pub max_output: Option<u64>,
    /// `--no-pam`: jobs run without a PAM session.
    pub no_pam: bool,
    /// `--pam-dir DIR`: read the PAM service `cron` from DIR instead of /etc/pam.d.
    pub pam_dir: Option<PathBuf>,
    /// `--state-dir DIR`: where the daemon keeps its state (default /var/lib/crond).
    pub state_dir: Option<PathBuf>,
    /// `--metrics*`: the metrics endpoint's.
    pub metrics: MetricsOptions,
    /// `--history*`: the run history's.
    pub history: HistoryOptions,
    /// `--cluster-*`: cluster mode's.
    pub cluster: ClusterOptions,
    /// `--crontab FILE`, once per file (at most [`MAX_CRONTAB_FILES`]): run these user-format
    /// files as the daemon's own user, and no spool, /etc/crontab or /etc/cron.d.
    pub crontabs: Vec<PathBuf>,
    /// `--check`: check the `--crontab` files and exit (the action is [`Action::Check`]).
    pub check: bool,
    /// `--wait-for-crontab`: start even when no `--crontab` file can be loaded yet.
    pub wait_for_crontab: bool,
    /// `--keep-env NAME,...` (names add up over repeats) or `--keep-env '*'`.
    pub keep_env: Option<KeepEnv>,
    /// `--stop-jobs`: on SIGTERM, stop the running jobs before exiting (the default as PID 1).
    pub stop_jobs: bool,
    /// `--stop-timeout SECONDS`: how long a stop waits for jobs after SIGTERM before SIGKILL
    /// (default [`DEFAULT_STOP_TIMEOUT_S`]).
    pub stop_timeout_s: Option<u32>,
    /// `--control-socket PATH|off`, as given (`None`: `crond.sock` beside the pid file).
    pub control_socket: Option<PathBuf>,
}

/// The most `--crontab` files.
pub const MAX_CRONTAB_FILES: usize = 64;
/// The most `--stop-timeout`, and its default (Docker's own grace before SIGKILL).
pub const MAX_STOP_TIMEOUT_S: u32 = 3600;
pub const DEFAULT_STOP_TIMEOUT_S: u32 = 10;

/// The metrics endpoint's options (`--metrics*`), which its owner reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricsOptions {
    /// `--metrics unix:PATH|ADDRESS:PORT`, once per place (at most
    /// [`MAX_METRICS_TARGETS`]): where to serve the metrics, each with its own connections.
    pub at: Vec<MetricsAt>,
    /// `--metrics-entries-on-tcp`: the per-entry series go to TCP clients too (any local user).
    pub entries_on_tcp: bool,
    /// `--metrics-group NAME`: the group that may read the metrics socket besides root.
    pub group: Option<String>,
}

/// The run history's options (`--history*`), which the history link's start reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HistoryOptions {
    /// `--history FILE|off`: the store; `None`: `history.db` in the state directory;
    /// `Some("off")`: no history.
    pub store: Option<PathBuf>,
    /// `--history-output SIZE`: bytes kept of each end of a run's output.
    pub keep_output: Option<u64>,
    /// `--history-days DAYS`.
    pub keep_days: Option<u32>,
    /// `--history-runs N`.
    pub keep_runs: Option<u32>,
    /// `--history-size SIZE`.
    pub max_size: Option<u64>,
    /// `--history-writer PATH`: the `cronctl` that writes the store (default: beside crond).
    pub writer: Option<PathBuf>,
}

/// Cluster mode's options (`--cluster-*`), which the cluster link's start reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterOptions {
    /// `--cluster-db CONNINFO` (or `CRON_CLUSTER_DB` in the environment): cluster mode's
    /// database, in libpq's syntax. `None`: cluster entries run as local ones.
    pub db: Option<String>,
    /// `--cluster-host NAME`: this host's name in the cluster (default: the host name).
    pub host: Option<String>,
    /// `--cluster-helper PATH`: the `cronctl` that runs as the helper (default: beside crond).
    pub helper: Option<PathBuf>,
    /// `--cluster-keep DAYS`: how long the history is kept (default 30).
    pub keep_days: Option<u32>,
    /// `--cluster-keep-runs N`: how many runs of each entry the history keeps (default 1,440).
    pub keep_runs: Option<u32>,
    /// `--cluster-lease SECONDS`: how long this host's lease lasts unrenewed (default 30).
    pub lease_s: Option<u32>,
}

/// The most `--metrics` places.
pub const MAX_METRICS_TARGETS: usize = 4;

/// Where the metrics are served.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MetricsAt {
    /// A Unix socket: mode 0600, or 0660 with `--metrics-group`.
    Unix(PathBuf),
    /// A TCP port on a loopback address (any local user can read it: the per-entry series are
    /// left out unless `--metrics-entries-on-tcp`).
    Tcp(std::net::SocketAddr),
}

/// A usage error: printed as `crond: MESSAGE` and where the options are listed; exit
/// status 1.
#[derive(Debug)]
pub struct UsageError(lexopt::Error);

impl fmt::Display for UsageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&args_error(&self.0))
    }
}

impl From<lexopt::Error> for UsageError {
    fn from(e: lexopt::Error) -> UsageError {
        UsageError(e)
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
        let mut o = Options::default();
        let mut parser = lexopt::Parser::from_args(args);
        let path = |p: &mut lexopt::Parser| -> Result<PathBuf, lexopt::Error> {
            Ok(PathBuf::from(p.value()?))
        };
        while let Some(arg) = parser.next()? {
            match arg {
                Short('f') => o.foreground = true,
                Short('l') => o.lsb_names = true,
                Short('n') => o.fqdn_in_subject = true,
                // Any number, as Debian's atoi: bits above 15 mean nothing.
                Short('L') => o.log_level = Some(in_range(&mut parser, "-L", (0, u32::MAX), "")?),
                Short('s') => o.output_to_syslog = true,
                Short('m') => o.mail = Some(parser.value()?),
                Short('P') => o.inherit_path = true,
                Short('p') => o.permit_any_mode = true,
                Short('i') => o.no_inotify = true,
                Short('V') => o.action = Action::Version,
                Short('h') | Long("help") => o.action = Action::Help,
                Long("spool-dir") => o.spool_dir = Some(path(&mut parser)?),
                Long("system-crontab") => o.system_crontab = Some(path(&mut parser)?),
                Long("cron-d") => o.cron_d = Some(path(&mut parser)?),
                Long("pid-file") => o.pid_file = Some(path(&mut parser)?),
                Long("reboot-marker") => o.reboot_marker = Some(path(&mut parser)?),
                Long("sendmail") => o.sendmail = Some(path(&mut parser)?),
                Long("localtime") => o.localtime = Some(path(&mut parser)?),
                Long("no-pam") => o.no_pam = true,
                Long("pam-dir") => o.pam_dir = Some(path(&mut parser)?),
                Long("state-dir") => o.state_dir = Some(path(&mut parser)?),
                Long("metrics") => {
                    let at = metrics_at(&mut parser, &o.metrics.at)?;
                    o.metrics.at.push(at);
                }
                Long("metrics-entries-on-tcp") => o.metrics.entries_on_tcp = true,
                Long("metrics-group") => {
                    o.metrics.group = Some(text(&mut parser, "--metrics-group")?)
                }
                Long(name) if name.starts_with("history") => {
                    let name = name.to_string();
                    history_option(&name, &mut parser, &mut o.history)?
                }
                Long("cluster-db") => o.cluster.db = Some(text(&mut parser, "--cluster-db")?),
                Long("cluster-host") => o.cluster.host = Some(cluster_host(&mut parser)?),
                Long("cluster-helper") => o.cluster.helper = Some(path(&mut parser)?),
                Long("cluster-keep") => {
                    o.cluster.keep_days =
                        Some(in_range(&mut parser, "--cluster-keep", (1, 3650), "days")?)
                }
                Long("cluster-keep-runs") => o.cluster.keep_runs = Some(keep_runs(&mut parser)?),
                Long("cluster-lease") => o.cluster.lease_s = Some(lease(&mut parser)?),
                Long("crontab") => o.crontabs.push(crontab_file(&mut parser, &o.crontabs)?),
                Long("keep-env") => o.keep_env = Some(keep_env(&mut parser, o.keep_env.take())?),
                Long("stop-jobs") => o.stop_jobs = true,
                Long("check") => o.check = true,
                Long("wait-for-crontab") => o.wait_for_crontab = true,
                Long("stop-timeout") => o.stop_timeout_s = Some(stop_timeout(&mut parser)?),
                Long("control-socket") => o.control_socket = Some(path(&mut parser)?),
                Long("max-output") => o.max_output = Some(max_output(&mut parser)?),
                Long("log") => o.log = Some(log_destination(&mut parser)?),
                Long("log-format") => o.log_format = log_format(&mut parser)?,
                Long("notify") => o.notify = notify(&mut parser)?,
                _ => return Err(arg.unexpected().into()),
            }
            // -V and -h answer at once, whatever follows (as getopt-based crons do).
            if o.action != Action::Run {
                return Ok(o);
            }
        }
        o.check_together()?;
        if o.check {
            o.action = Action::Check;
        }
        Ok(o)
    }

    /// What the options say together: `--metrics-entries-on-tcp` needs a TCP place.
    fn check_together(&self) -> Result<(), lexopt::Error> {
        if self.metrics.entries_on_tcp
            && !self
                .metrics
                .at
                .iter()
                .any(|m| matches!(m, MetricsAt::Tcp(_)))
        {
            return Err(lexopt::Error::Custom(
                "--metrics-entries-on-tcp without a --metrics ADDRESS:PORT".into(),
            ));
        }
        if !self.crontabs.is_empty() {
            let given = [
                (self.spool_dir.is_some(), "--spool-dir"),
                (self.system_crontab.is_some(), "--system-crontab"),
                (self.cron_d.is_some(), "--cron-d"),
            ];
            if let Some((_, flag)) = given.iter().find(|(given, _)| *given) {
                return Err(lexopt::Error::Custom(
                    format!("--crontab runs only the files it names: no {flag} with it").into(),
                ));
            }
        }
        let alone = [
            (self.check, "--check"),
            (self.wait_for_crontab, "--wait-for-crontab"),
        ];
        if let Some((_, flag)) = alone.iter().find(|(given, _)| *given)
            && self.crontabs.is_empty()
        {
            return Err(lexopt::Error::Custom(
                format!("{flag} is for --crontab files: give one with --crontab FILE").into(),
            ));
        }
        Ok(())
    }
}

/// `--crontab FILE`, one more after those `given`.
fn crontab_file(parser: &mut lexopt::Parser, given: &[PathBuf]) -> Result<PathBuf, lexopt::Error> {
    if given.len() == MAX_CRONTAB_FILES {
        return Err(lexopt::Error::Custom(
            format!("--crontab given more than {MAX_CRONTAB_FILES} times").into(),
        ));
    }
    Ok(PathBuf::from(parser.value()?))
}

/// `--cluster-keep-runs N`.
fn keep_runs(parser: &mut lexopt::Parser) -> Result<u32, lexopt::Error> {
    let runs = (MIN_KEEP_RUNS, MAX_KEEP_RUNS);
    in_range(parser, "--cluster-keep-runs", runs, "runs")
}

/// `--cluster-lease SECONDS`.
fn lease(parser: &mut lexopt::Parser) -> Result<u32, lexopt::Error> {
    in_range(parser, "--cluster-lease", (3, 300), "seconds")
}

/// `--stop-timeout SECONDS`.
fn stop_timeout(parser: &mut lexopt::Parser) -> Result<u32, lexopt::Error> {
    in_range(parser, "--stop-timeout", (0, MAX_STOP_TIMEOUT_S), "seconds")
}

/// `--keep-env NAME,...` or `--keep-env '*'`, added to what earlier ones said (`before`).
fn keep_env(
    parser: &mut lexopt::Parser,
    before: Option<KeepEnv>,
) -> Result<KeepEnv, lexopt::Error> {
    let v = parser.value()?;
    let bad = |why: &str| lexopt::Error::UnexpectedValue {
        option: format!("--keep-env ({why})"),
        value: v.clone(),
    };
    let bytes = v.as_encoded_bytes();
    if bytes == b"*" {
        return Ok(KeepEnv::All);
    }
    let mut names = match before {
        Some(KeepEnv::All) => return Ok(KeepEnv::All),
        Some(KeepEnv::Names(names)) => names,
        None => Vec::new(),
    };
    for name in bytes.split(|&b| b == b',') {
        env::check_keep_name(name).map_err(bad)?;
        if !names.iter().any(|n| n == name) {
            names.push(name.to_vec());
        }
    }
    if names.len() > env::MAX_KEPT_VARS {
        return Err(bad("too many names"));
    }
    Ok(KeepEnv::Names(names))
}

/// `--metrics unix:PATH|ADDRESS:PORT`, one more place after those `given`.
fn metrics_at(
    parser: &mut lexopt::Parser,
    given: &[MetricsAt],
) -> Result<MetricsAt, lexopt::Error> {
    let v = parser.value()?;
    let at =
        v.to_str()
            .and_then(parse_metrics_at)
            .ok_or_else(|| lexopt::Error::UnexpectedValue {
                option: "--metrics (unix:PATH, or a loopback ADDRESS:PORT)".into(),
                value: v.clone(),
            })?;
    if given.len() == MAX_METRICS_TARGETS {
        return Err(lexopt::Error::Custom(
            format!("--metrics given more than {MAX_METRICS_TARGETS} times").into(),
        ));
    }
    Ok(at)
}

/// `--cluster-host NAME`: a name [`is_cluster_host`] accepts.
fn cluster_host(parser: &mut lexopt::Parser) -> Result<String, lexopt::Error> {
    let v = parser.value()?;
    v.to_str()
        .filter(|h| is_cluster_host(h))
        .map(str::to_string)
        .ok_or_else(|| lexopt::Error::UnexpectedValue {
            option: "--cluster-host (1 to 253 letters, digits, '.', '_', '-')".into(),
            value: v.clone(),
        })
}

/// `--max-output SIZE`, in bytes.
fn max_output(parser: &mut lexopt::Parser) -> Result<u64, lexopt::Error> {
    let v = parser.value()?;
    v.to_str()
        .and_then(parse_size)
        .ok_or_else(|| lexopt::Error::UnexpectedValue {
            option: "--max-output (bytes, or with a K, M or G suffix)".into(),
            value: v.clone(),
        })
}

/// One `--history*` option.
fn history_option(
    name: &str,
    parser: &mut lexopt::Parser,
    o: &mut HistoryOptions,
) -> Result<(), lexopt::Error> {
    match name {
        "history" => o.store = Some(PathBuf::from(parser.value()?)),
        "history-output" => o.keep_output = Some(history_output(parser)?),
        "history-days" => {
            o.keep_days = Some(in_range(parser, "--history-days", (1, 3650), "days")?)
        }
        "history-runs" => {
            o.keep_runs = Some(in_range(parser, "--history-runs", (10, 100_000), "runs")?)
        }
        "history-size" => o.max_size = Some(history_size(parser)?),
        "history-writer" => o.writer = Some(PathBuf::from(parser.value()?)),
        other => return Err(lexopt::Error::UnexpectedOption(format!("--{other}"))),
    }
    Ok(())
}

/// `--history-output SIZE`: at most [`crate::history::MAX_KEEP_OUTPUT`].
fn history_output(parser: &mut lexopt::Parser) -> Result<u64, lexopt::Error> {
    let v = parser.value()?;
    v.to_str()
        .and_then(parse_size)
        .filter(|&n| n <= crate::history::MAX_KEEP_OUTPUT)
        .ok_or_else(|| lexopt::Error::UnexpectedValue {
            option: "--history-output (0 to 64K bytes, or with a K suffix)".into(),
            value: v.clone(),
        })
}

/// `--history-size SIZE`: at least 1 MiB.
fn history_size(parser: &mut lexopt::Parser) -> Result<u64, lexopt::Error> {
    let v = parser.value()?;
    v.to_str()
        .and_then(parse_size)
        .filter(|&n| n >= 1 << 20)
        .ok_or_else(|| lexopt::Error::UnexpectedValue {
            option: "--history-size (1M or more, with a K, M or G suffix)".into(),
            value: v.clone(),
        })
}

/// `--log syslog|stderr|both`.
fn log_destination(parser: &mut lexopt::Parser) -> Result<Destination, lexopt::Error> {
    let v = parser.value()?;
    match v.to_str() {
        Some("syslog") => Ok(Destination::Syslog),
        Some("stderr") => Ok(Destination::Stderr),
        Some("both") => Ok(Destination::Both),
        _ => Err(lexopt::Error::UnexpectedValue {
            option: "--log (syslog, stderr or both)".into(),
            value: v,
        }),
    }
}

/// `--log-format text|json`.
fn log_format(parser: &mut lexopt::Parser) -> Result<Format, lexopt::Error> {
    let v = parser.value()?;
    match v.to_str() {
        Some("text") => Ok(Format::Text),
        Some("json") => Ok(Format::Json),
        _ => Err(lexopt::Error::UnexpectedValue {
            option: "--log-format (text or json)".into(),
            value: v,
        }),
    }
}

/// `--notify always|failure|change|never`.
fn notify(parser: &mut lexopt::Parser) -> Result<Notify, lexopt::Error> {
    let v = parser.value()?;
    v.to_str()
        .and_then(Notify::parse)
        .ok_or_else(|| lexopt::Error::UnexpectedValue {
            option: "--notify (always, failure, change or never)".into(),
            value: v.clone(),
        })
}

/// A UTF-8 option value.
fn text(parser: &mut lexopt::Parser, option: &str) -> Result<String, lexopt::Error> {
    let v = parser.value()?;
    v.to_str()
        .map(str::to_string)
        .ok_or_else(|| lexopt::Error::UnexpectedValue {
            option: option.into(),
            value: v.clone(),
        })
}

/// A host name as the cluster's tables hold it.
pub fn is_cluster_host(name: &str) -> bool {
    (1..=253).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// `unix:/run/crond.metrics` (an absolute path) or `127.0.0.1:9100` / `[::1]:9100` (loopback
/// only: a TCP port can't be limited to a group).
fn parse_metrics_at(text: &str) -> Option<MetricsAt> {
    if let Some(path) = text.strip_prefix("unix:") {
        let path = std::path::PathBuf::from(path);
        return path.is_absolute().then_some(MetricsAt::Unix(path));
    }
    let addr: std::net::SocketAddr = text.parse().ok()?;
    addr.ip().is_loopback().then_some(MetricsAt::Tcp(addr))
}

/// A size as `--max-output` takes it: a number of bytes, or with a `K`, `M` or `G` suffix
/// (binary multiples; either case; a trailing `B` or `iB` allowed). `None` if it isn't one.
pub fn parse_size(text: &str) -> Option<u64> {
    let upper = text.to_ascii_uppercase();
    let number = upper
        .strip_suffix("IB")
        .or_else(|| upper.strip_suffix('B'))
        .unwrap_or(&upper);
    let (digits, shift) = match number.as_bytes().last()? {
        b'K' => (&number[..number.len() - 1], 10),
        b'M' => (&number[..number.len() - 1], 20),
        b'G' => (&number[..number.len() - 1], 30),
        _ => (number, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: u64 = digits.parse().ok()?;
    n.checked_mul(1 << shift)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, UsageError> {
        Options::try_parse_from(args)
    }

    #[test]
    fn every_flag_lands_in_its_field() {
        let o = parse(&[
            "-f",
            "-l",
            "-n",
            "-L",
            "15",
            "-s",
            "-m",
            "off",
            "-P",
            "-p",
            "-i",
            "--spool-dir",
            "/s",
            "--system-crontab",
            "/c",
            "--cron-d",
            "/d",
            "--pid-file",
            "/p",
            "--reboot-marker",
            "/r",
            "--sendmail",
            "/m",
            "--log",
            "both",
            "--log-format",
            "json",
            "--max-output",
            "2M",
            "--localtime",
            "/z",
            "--no-pam",
            "--pam-dir",
            "/q",
            "--state-dir",
            "/t",
            "--metrics",
            "unix:/run/m",
            "--metrics",
            "127.0.0.1:9100",
            "--metrics-group",
            "adm",
            "--metrics-entries-on-tcp",
            "--cluster-db",
            "host=/run/postgresql dbname=cron",
            "--cluster-host",
            "node-1.example",
            "--cluster-helper",
            "/h",
            "--cluster-keep",
            "7",
            "--cluster-keep-runs",
            "100",
            "--cluster-lease",
            "10",
            "--keep-env",
            "TZ,LANG",
            "--keep-env",
            "LANG,FOO",
            "--stop-jobs",
            "--stop-timeout",
            "30",
            "--control-socket",
            "/run/c.sock",
            "--history",
            "/h.db",
            "--history-output",
            "4K",
            "--history-days",
            "7",
            "--history-runs",
            "50",
            "--history-size",
            "8M",
            "--history-writer",
            "/w",
            "--notify",
            "change",
        ])
        .expect("parses");
        let expected = Options {
            action: Action::Run,
            foreground: true,
            lsb_names: true,
            fqdn_in_subject: true,
            log_level: Some(15),
            output_to_syslog: true,
            mail: Some("off".into()),
            inherit_path: true,
            permit_any_mode: true,
            no_inotify: true,
            spool_dir: Some("/s".into()),
            system_crontab: Some("/c".into()),
            cron_d: Some("/d".into()),
            pid_file: Some("/p".into()),
            reboot_marker: Some("/r".into()),
            sendmail: Some("/m".into()),
            log: Some(Destination::Both),
            log_format: Format::Json,
            notify: Notify::Change,
            max_output: Some(2 << 20),
            localtime: Some("/z".into()),
            no_pam: true,
            pam_dir: Some("/q".into()),
            state_dir: Some("/t".into()),
            history: HistoryOptions {
                store: Some("/h.db".into()),
                keep_output: Some(4096),
                keep_days: Some(7),
                keep_runs: Some(50),
                max_size: Some(8 << 20),
                writer: Some("/w".into()),
            },
            metrics: MetricsOptions {
                at: vec![
                    MetricsAt::Unix("/run/m".into()),
                    MetricsAt::Tcp("127.0.0.1:9100".parse().unwrap()),
                ],
                entries_on_tcp: true,
                group: Some("adm".into()),
            },
            cluster: ClusterOptions {
                db: Some("host=/run/postgresql dbname=cron".into()),
                host: Some("node-1.example".into()),
                helper: Some("/h".into()),
                keep_days: Some(7),
                keep_runs: Some(100),
                lease_s: Some(10),
            },
            crontabs: Vec::new(),
            check: false,
            wait_for_crontab: false,
            keep_env: Some(KeepEnv::Names(vec![
                b"TZ".to_vec(),
                b"LANG".to_vec(),
                b"FOO".to_vec(),
            ])),
            stop_jobs: true,
            stop_timeout_s: Some(30),
            control_socket: Some("/run/c.sock".into()),
        };
        assert_eq!(o, expected);
        assert!(o.all_paths_overridden());
        assert_eq!(o.control_socket(), Some(("/run/c.sock".into(), true)));
        let off = parse(&["--control-socket", "off"]).unwrap();
        assert_eq!(off.control_socket(), None);
        let beside = parse(&["--pid-file", "/tmp/t/crond.pid"]).unwrap();
        assert_eq!(
            beside.control_socket(),
            Some(("/tmp/t/crond.sock".into(), false))
        );
        assert_eq!(
            Options::default().control_socket(),
            Some(("/run/crond.sock".into(), false))
        );
    }

    #[test]
    fn check_and_wait_for_crontab_need_a_crontab_file() {
        assert!(parse(&["--check"]).is_err());
        assert!(parse(&["-f", "--wait-for-crontab"]).is_err());
        let o = parse(&["--check", "--crontab", "/app/crontab"]).expect("parses");
        assert_eq!(o.action, Action::Check);
        let o = parse(&["-f", "--crontab", "/app/crontab", "--wait-for-crontab"]).expect("parses");
        assert_eq!((o.action, o.wait_for_crontab), (Action::Run, true));
    }

    #[test]
    fn a_log_level_past_15_is_taken_as_debian_takes_it() {
        // Debian's cron reads -L with atoi and looks only at the low bits: a setup with
        // `-L 255` must still start.
        assert_eq!(parse(&["-L", "255"]).expect("parses").log_level, Some(255));
        assert!(parse(&["-L", "x"]).is_err());
    }

    #[test]
    fn clustered_flags_and_a_mail_command() {
        let o = parse(&["-fi", "-m", "/usr/bin/mymail -x", "-L8"]).expect("parses");
        assert!(o.foreground && o.no_inotify);
        assert_eq!(o.mail, Some("/usr/bin/mymail -x".into()));
        assert_eq!(o.log_level, Some(8));
        assert!(!o.all_paths_overridden());
    }

    #[test]
    fn sizes_take_binary_suffixes_and_nothing_else() {
        assert_eq!(parse_size("0"), Some(0));
        assert_eq!(parse_size("1500"), Some(1500));
        assert_eq!(parse_size("64k"), Some(64 << 10));
        assert_eq!(parse_size("100M"), Some(100 << 20));
        assert_eq!(parse_size("100MiB"), Some(100 << 20));
        assert_eq!(parse_size("2GB"), Some(2 << 30));
        for bad in ["", "M", "-1", "1.5M", "10T", "1 M", "99999999999999999999G"] {
            assert_eq!(parse_size(bad), None, "{bad:?}");
        }
        assert!(parse(&["--max-output", "lots"]).is_err());
    }

    #[test]
    fn history_options_take_their_ranges_and_refuse_past_them() {
        let o = parse(&["--history-output", "64K", "--history-size", "1M"]).unwrap();
        assert_eq!(o.history.keep_output, Some(64 << 10));
        assert_eq!(o.history.max_size, Some(1 << 20));
        assert_eq!(
            parse(&["--history-output", "0"])
                .unwrap()
                .history
                .keep_output,
            Some(0)
        );
        let ok = parse(&["--history-days", "3650", "--history-runs", "100000"]).unwrap();
        assert_eq!(
            (ok.history.keep_days, ok.history.keep_runs),
            (Some(3650), Some(100_000))
        );
        for bad in [
            ["--history-output", "65537"],
            ["--history-output", "lots"],
            ["--history-size", "1048575"],
            ["--history-days", "0"],
            ["--history-days", "3651"],
            ["--history-runs", "9"],
            ["--history-runs", "100001"],
            ["--history-turbo", "1"],
        ] {
            assert!(parse(&bad).is_err(), "{bad:?}");
        }
        let off = parse(&["--history", "off"]).unwrap();
        assert_eq!(off.history.store, Some("off".into()));
    }

    #[test]
    fn container_flags_parse_and_their_bad_values_are_refused() {
        let o = parse(&["--crontab", "a", "--crontab", "/b", "--keep-env", "*"]).unwrap();
        assert_eq!(o.crontabs, [PathBuf::from("a"), PathBuf::from("/b")]);
        assert_eq!(o.keep_env, Some(KeepEnv::All));
        let o = parse(&["--keep-env", "*", "--keep-env", "TZ"]).unwrap();
        assert_eq!(o.keep_env, Some(KeepEnv::All), "'*' stays everything");
        for bad in ["HOME", "TZ,", "A=B", "LOGNAME,TZ", "", "**"] {
            assert!(parse(&["--keep-env", bad]).is_err(), "{bad:?}");
        }
        let names = |n: usize| {
            (0..n)
                .map(|i| format!("V{i}"))
                .collect::<Vec<_>>()
                .join(",")
        };
        let most = names(env::MAX_KEPT_VARS);
        assert!(parse(&["--keep-env", &most]).is_ok());
        let too_many = names(env::MAX_KEPT_VARS + 1);
        assert!(parse(&["--keep-env", &too_many]).is_err(), "past the bound");
        assert!(parse(&["--stop-timeout", "0"]).is_ok());
        assert!(parse(&["--stop-timeout", "3601"]).is_err());
        assert!(parse(&["--stop-timeout", "-1"]).is_err());
        assert!(parse(&["--crontab", "a", "--spool-dir", "/s"]).is_err());
        assert!(parse(&["--cron-d", "/d", "--crontab", "a"]).is_err());
        let many: Vec<&str> = ["--crontab", "f"].repeat(MAX_CRONTAB_FILES + 1);
        assert!(parse(&many).is_err(), "at most {MAX_CRONTAB_FILES} files");
        assert!(parse(&many[2..]).is_ok());
    }

    #[test]
    fn bad_input_is_refused() {
        assert!(parse(&["--log", "journal"]).is_err());
        assert!(parse(&["--log-format", "yaml"]).is_err());
        assert!(parse(&["--notify", "errors"]).is_err());
        assert_eq!(parse(&[]).unwrap().notify, Notify::Always);
        let n = parse(&["-n", "--notify", "failure"]).unwrap();
        assert!(
            n.fqdn_in_subject && n.notify == Notify::Failure,
            "-n stays the full host name in the subject"
        );
        assert!(
            parse(&["--metrics", "0.0.0.0:9100"]).is_err(),
            "not loopback"
        );
        assert!(parse(&["--metrics", "unix:relative"]).is_err());
        assert!(parse(&["--cluster-host", "a b"]).is_err());
        assert!(parse(&["--cluster-host", ""]).is_err());
        assert!(parse(&["--cluster-keep", "0"]).is_err());
        assert!(parse(&["--cluster-keep", "3651"]).is_err());
        assert!(parse(&["--cluster-keep-runs", "9"]).is_err());
        assert!(parse(&["--cluster-keep-runs", "1000001"]).is_err());
        assert_eq!(
            parse(&["--metrics", "[::1]:9100"]).unwrap().metrics.at,
            [MetricsAt::Tcp("[::1]:9100".parse().unwrap())]
        );
        assert!(
            parse(&["--metrics-entries-on-tcp", "--metrics", "unix:/run/m"]).is_err(),
            "no TCP port to say it of"
        );
        let five: Vec<&str> = ["--metrics", "unix:/run/m"].repeat(MAX_METRICS_TARGETS + 1);
        assert!(
            parse(&five).is_err(),
            "at most {MAX_METRICS_TARGETS} places"
        );
        assert!(parse(&five[2..]).is_ok());
        assert!(parse(&["-L", "x"]).is_err());
        assert!(parse(&["-q"]).is_err());
        assert!(parse(&["extra"]).is_err());
        assert_eq!(parse(&["-V"]).map(|o| o.action).ok(), Some(Action::Version));
        assert_eq!(
            parse(&["-h", "-q"]).map(|o| o.action).ok(),
            Some(Action::Help)
        );
    }
}
