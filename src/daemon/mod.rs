//! The daemon (docs/design.md §1, §2 "Shell"): start-up (root check, pid-file lock, daemonizing),
//! then one single-threaded `poll` loop, the reactor (`reactor.rs`), over the descriptors of
//! its owners — the scheduler, the sources, the cluster link, the metrics server, the control
//! socket — which keep their state private and act through one effects interface
//! (docs/daemon.md). Decisions are made by the pure parts (`timeline`, `trust`, the
//! daemon's tables); the owners carry them out with the time the reactor reads once per turn.

mod check;
pub mod cli;
mod clock;
mod cluster;
mod container;
mod control;
mod effects;
mod handoff;
mod history;
mod metrics_server;
mod notices;
mod options;
mod outcomes;
mod reactor;
mod scheduler;
mod setup;
mod sources;
mod stop;
mod world;

use std::fmt;
use std::io::{self, Write};
use std::process::ExitCode;

pub use cli::Options;
pub use cli::{Action, USAGE};

use crate::log::{Level, Log, messages};
use crate::sys::fs::{self, LockError};
use crate::sys::process;
use crate::sys::spawn::{self, Forked};
use crate::sys::user::effective_uid;

/// Why the daemon did not start or stopped with an error.
#[derive(Debug)]
pub enum Error {
    NotRoot,
    /// Another instance holds the pid file.
    Locked {
        path: String,
        other: Option<i32>,
    },
    Io(&'static str, io::Error),
    /// A setting that can't be used (named in the message).
    Config(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotRoot => write!(
                f,
                "must be run as root (or with --crontab FILE, or with --spool-dir, \
                 --system-crontab, --cron-d, --pid-file, --reboot-marker and --state-dir all given)"
            ),
            Error::Locked { path, other } => match other {
                Some(pid) => write!(f, "can't lock {path}, otherpid may be {pid}"),
                None => write!(f, "can't lock {path}, otherpid may be unknown"),
            },
            Error::Io(what, e) => write!(f, "{what}: {e}"),
            Error::Config(message) => f.write_str(message),
        }
    }
}

/// `crond`'s `main`: parses argv, then runs the daemon (or prints the version or the usage).
/// Exit status 0, or 1 for a usage error or a daemon that could not start or died.
pub fn crond_main() -> ExitCode {
    let options = match Options::try_parse_from(std::env::args_os().skip(1)) {
        Ok(options) => options,
        Err(e) => {
            let _ = writeln!(
                io::stderr().lock(),
                "crond: {e}\nTry 'crond -h' for more information."
            );
            return ExitCode::from(1);
        }
    };
    let out = match options.action {
        Action::Version => format!("crond {}", env!("CARGO_PKG_VERSION")),
        Action::Help => USAGE.to_string(),
        Action::Check => {
            let mut options = options;
            if let Err(e) = options.absolutize() {
                let _ = writeln!(io::stderr().lock(), "crond: can't resolve a path: {e}");
                return ExitCode::from(1);
            }
            return ExitCode::from(check::run(&options));
        }
        Action::Run => {
            return match run(options) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    let _ = writeln!(io::stderr().lock(), "crond: {e}");
                    ExitCode::from(1)
                }
            };
        }
    };
    let _ = writeln!(io::stdout().lock(), "{out}");
    ExitCode::SUCCESS
}

/// Runs the daemon until SIGTERM or SIGINT. Returns only in the process that should exit (the
/// parent after daemonizing returns `Ok` at once).
pub fn run(mut options: Options) -> Result<(), Error> {
    options
        .absolutize()
        .map_err(|e| Error::Io("can't resolve a path", e))?;
    // Said here, before the daemon detaches, where the admin sees it.
    options
        .kept_env()
        .map_err(|e| Error::Config(e.to_string()))?;
    debug_assert_eq!(
        process::thread_count(),
        Some(1),
        "crond must be single-threaded"
    );
    // Said here, where the admin (or the container's log) sees it, before anything starts.
    check::before_start(&options).map_err(Error::Config)?;
    let made_private = options.prepare_crontab_mode()?;
    if effective_uid().0 != 0 && !options.all_paths_overridden() && !options.crontab_mode() {
        return Err(Error::NotRoot);
    }
    let pid_path = options.pid_file();
    let mut lock = fs::lock_pid_file(&pid_path).map_err(|e| match e {
        LockError::Held(other) => Error::Locked {
            path: pid_path.display().to_string(),
            other,
        },
        LockError::Io(e) => Error::Io("can't open the pid file", e),
    })?;
    if options.cluster.db.is_none() {
        // /etc/default/cron, through the unit's EnvironmentFile (docs/cluster.md).
        options.cluster.db = std::env::var("CRON_CLUSTER_DB")
            .ok()
            .filter(|v| !v.trim().is_empty());
    }
    if let Some(db) = &options.cluster.db {
        // Checked here, where the admin sees it, rather than by the helper in the log.
        crate::cluster::conninfo::parse(db, "root")
            .map_err(|e| Error::Config(format!("--cluster-db: {e}")))?;
    }
    let forked = !options.foreground;
    if forked {
        match spawn::fork_single_threaded().map_err(|e| Error::Io("fork", e))? {
            // The lock belongs to the open file, which the child shares: the parent writes the
            // child's pid (so it is there when the parent's exit is seen, as systemd's
            // Type=forking expects) and goes.
            Forked::Parent(child) => {
                return lock
                    .write_pid(child.0)
                    .map_err(|e| Error::Io("can't write the pid file", e));
            }
            Forked::Child => {
                process::setsid().map_err(|e| Error::Io("setsid", e))?;
                process::chdir(std::path::Path::new("/")).map_err(|e| Error::Io("chdir /", e))?;
                process::std_fds_to_dev_null().map_err(|e| Error::Io("/dev/null", e))?;
            }
        }
    }
    if !forked {
        lock.write_pid(process::own_pid().0)
            .map_err(|e| Error::Io("can't write the pid file", e))?;
    }
    let log = Log::open(options.log_destination(), options.log_format);
    if forked {
        log.line(Level::Info, &messages::fork_ok_line());
    }
    for problem in check::waited_for(&options) {
        log.line(Level::Notice, &messages::waiting_for_crontab_line(&problem));
    }
    if let Some(mode) = made_private {
        let line = messages::state_dir_made_private_line(&options.state_dir(), mode);
        log.line(Level::Notice, &line);
    }
    let result = setup::start(options, log, lock)
        .and_then(|mut d| d.run().map(|()| d))
        .map(reactor::Daemon::clean_up);
    if let Err(e) = &result {
        log.line(Level::Error, &messages::death_line(&e.to_string()));
    }
    result
}
