//! The daemon's start-up ([`start`]) and its setup: the options it was started with and the
//! pid-file lock it holds for its life, and what start-up makes of them before the loop runs —
//! the RANDOM_DELAY factor, the job children's preparation (PAM preloaded, group sources
//! loaded before any fork), the owners with their listeners, the cluster link and its helper,
//! and the first load of every crontab. Nothing here runs after start-up but [`Setup`]'s
//! answers about a stop.

use std::rc::Rc;

use jiff::Timestamp;

use super::Error;
use super::cli::Options;
use super::clock::{Clock, WallClock};
use super::cluster::{self, ClusterLink};
use super::control::ControlServer;
use super::effects::{Effects, RealEffects};
use super::history::{self, HistoryLink};
use super::metrics_server::MetricsServer;
use super::outcomes::Outcomes;
use super::reactor::{Daemon, Reactor};
use super::scheduler::Scheduler;
use super::sources::{Announce, Sources};
use super::world::{RealWorld, World};
use crate::database::Rules;
use crate::log::{Log, messages};
use crate::sys::fs::PidLock;
use crate::sys::signal::SignalPipe;
use crate::sys::timer::MinuteTimer;

/// Sets the daemon up and loads every crontab: ready to [`Daemon::run`].
pub(super) fn start(options: Options, log: Log, lock: PidLock) -> Result<Daemon, Error> {
    let clock = WallClock;
    let now = clock.now();
    let signals = SignalPipe::install().map_err(|e| Error::Io("signal handlers", e))?;
    let timer = Rc::new(MinuteTimer::new().map_err(|e| Error::Io("timerfd", e))?);
    let mut child = options.child_setup(log, crate::sys::user::effective_uid().0 == 0)?;
    let (outcomes, write_end) = Outcomes::open().map_err(|e| Error::Io("pipe", e))?;
    child.outcomes = Some(write_end);
    let mut fx = RealEffects::new(log, child, Rc::clone(&timer));
    let setup = Setup::new(options, lock);
    let delay_factor = random_delay_factor(now);
    let o = &setup.options;
    let (sources, zone) = Sources::new(
        o.paths(),
        setup.rules(),
        o.localtime(),
        delay_factor,
        &mut fx,
    );
    let scheduler = Scheduler::new(now, zone, o.state_dir());
    setup.log_start_lines(delay_factor, &mut fx);
    setup.prepare_job_children(&mut fx);
    let metrics = match o.metrics.at.is_empty() {
        true => None,
        false => Some(MetricsServer::listen(
            &o.metrics.at,
            o.metrics.group.as_deref(),
            o.metrics.entries_on_tcp,
            &mut fx,
        )?),
    };
    let control = ControlServer::listen(o.control_socket(), now.as_millisecond(), &mut fx)?;
    // Started before the crontabs are loaded: the helper and the writer are small when they
    // fork.
    let cluster = setup.cluster_link(now, &mut fx);
    let history = setup.history_link(now, &mut fx);
    let world = RealWorld::new(signals, timer);
    let mut daemon = Daemon {
        reactor: Reactor::new(Box::new(clock), world, fx),
        setup,
        scheduler,
        sources,
        cluster,
        metrics,
        control,
        outcomes: Some(outcomes),
        history,
    };
    let (entries, files) = load_at_start(&mut daemon, now);
    // systemd's Type=notify: ready once every crontab is loaded (a no-op without systemd).
    let status = format!(
        "{} from {}",
        crate::log::line::count(entries as u64, "entry", "entries"),
        crate::log::line::count(files as u64, "file", "files")
    );
    if let Err(e) = crate::sys::notify::notify(&format!(
        "READY=1\n{}",
        crate::sys::notify::status_message(&status)
    )) {
        daemon.reactor.fx().error(messages::notify_failed_line(&e));
    }
    Ok(daemon)
}

/// Watches the files, reads the paused entries, loads every crontab, runs @reboot and what
/// was missed, and arms the timer. `started`: when the start began. Returns how many entries
/// from how many files.
pub(super) fn load_at_start<W: World, F: Effects>(
    d: &mut Daemon<W, F>,
    started: Timestamp,
) -> (usize, usize) {
    d.sources.watch(d.setup.options.no_inotify, d.reactor.fx());
    // The entries paused are known before any run of theirs comes up.
    d.scheduler.load_paused(d.reactor.fx());
    // `@every` intervals count from the start.
    d.scheduler.set_every_base(started.as_millisecond());
    let reboot = d.load_all(Announce::Never, started);
    let (entries, files) = (d.scheduler.len(), d.sources.len());
    d.reactor.fx().info(messages::loaded_line(entries, files));
    let now = d.reactor.read_clock();
    let marker = d.setup.options.reboot_marker();
    let fx = d.reactor.fx();
    d.scheduler.reboot(reboot, &marker, now, fx);
    d.scheduler.make_up_after_start(now, fx);
    // The retries waiting when the daemon stopped, by their entries' ids.
    d.scheduler.restore_retries(now, fx);
    d.arm(now);
    (entries, files)
}

pub(super) struct Setup {
    pub(super) options: Options,
    /// Held while the daemon runs (never read: the lock is released when it is dropped).
    _lock: PidLock,
}

impl Daemon {
    /// After a clean stop: the control sockets and the pid file go, each only when it is still
    /// this daemon's, so that nothing says a daemon runs when none does.
    pub(super) fn clean_up(self) {
        if let Some(control) = &self.control {
            control.remove_sockets();
        }
        let path = self.setup.options.pid_file();
        let _ = self.setup._lock.remove(&path);
    }
}

impl Setup {
    pub(super) fn new(options: Options, lock: PidLock) -> Setup {
        Setup {
            options,
            _lock: lock,
        }
    }

    /// How crontab files are judged: the options' leniencies and the host's seed for `H`.
    pub(super) fn rules(&self) -> Rules {
        self.options.rules()
    }

    /// The first lines: which crond and its pid file, and Debian's RANDOM_DELAY line.
    pub(super) fn log_start_lines(&self, delay_factor: f64, fx: &mut dyn Effects) {
        fx.info(messages::started_line(&self.options.pid_file()));
        fx.info(messages::random_delay_line(delay_factor));
    }

    /// What every job child needs, loaded once here before any fork (docs/daemon.md), and the
    /// line that says when jobs run without PAM.
    pub(super) fn prepare_job_children(&self, fx: &mut RealEffects) {
        crate::sys::user::load_group_sources();
        if let Some(pam) = &fx.setup().pam {
            crate::job::preload_pam(pam, fx.log);
            return;
        }
        let why = if !cfg!(feature = "pam") {
            "built without PAM"
        } else if self.options.no_pam {
            "--no-pam"
        } else if self.options.crontab_mode() {
            "--crontab"
        } else {
            "not root"
        };
        fx.info(messages::no_pam_line(why));
    }

    /// With `--cluster-db`: the link, its helper started.
    pub(super) fn cluster_link(&self, now: Timestamp, fx: &mut dyn Effects) -> Option<ClusterLink> {
        let o = &self.options;
        let conninfo = o.cluster.db.as_ref()?;
        let host = self.host_name();
        let program = o
            .cluster
            .helper
            .clone()
            .unwrap_or_else(cluster::default_helper);
        fx.info(messages::cluster_mode_line(&host, &program));
        let mut link = ClusterLink::new(
            program,
            conninfo,
            &host,
            o.cluster.keep_days,
            o.cluster.keep_runs,
            o.cluster.lease_s,
        );
        link.start_helper(now.as_millisecond(), fx);
        Some(link)
    }
}

impl Setup {
    /// This host's name in records and in the cluster: `--cluster-host`, else the hostname.
    fn host_name(&self) -> String {
        self.options
            .cluster
            .host
            .clone()
            .unwrap_or_else(|| String::from_utf8_lossy(&crate::sys::hostname()).into_owned())
    }

    /// The run history (unless `--history off`): its link, the writer started.
    pub(super) fn history_link(&self, now: Timestamp, fx: &mut dyn Effects) -> Option<HistoryLink> {
        let o = &self.options.history;
        let store = match &o.store {
            Some(path) if path.as_os_str() == "off" => return None,
            Some(path) => path.clone(),
            None => {
                // The state directory is made here when it is not there yet (root's, 0700 under
                // the umask, each directory on the way checked as the daemon's files are).
                let dir = self.options.state_dir();
                let euid = crate::sys::user::effective_uid();
                let last = crate::sys::fs::LastDir::Own { make: true };
                if let Err(e) = crate::sys::fs::open_checked_dir(&dir, euid, last) {
                    fx.error(messages::history_dir_line(&dir, &e));
                    return None;
                }
                dir.join(history::STORE_NAME)
            }
        };
        let program = o.writer.clone().unwrap_or_else(cluster::default_helper);
        let host = self.host_name();
        let mut args: Vec<std::ffi::OsString> = vec!["history-writer".into(), "--store".into()];
        args.push(store.into_os_string());
        args.extend(["--host".into(), host.clone().into()]);
        // A cluster entry's runs are copied to the cluster database too, under the host's
        // name there.
        if let Some(conninfo) = &self.options.cluster.db {
            args.extend(["--db".into(), conninfo.into()]);
        }
        let numbers = [
            ("--keep-days", o.keep_days.map(u64::from)),
            ("--keep-runs", o.keep_runs.map(u64::from)),
            ("--max-size", o.max_size),
        ];
        for (flag, value) in numbers {
            if let Some(value) = value {
                args.extend([flag.into(), value.to_string().into()]);
            }
        }
        let keep = o.keep_output.unwrap_or(crate::history::DEFAULT_KEEP_OUTPUT);
        let now_ms = now.as_millisecond();
        Some(HistoryLink::new((program, args), (keep, host), now_ms, fx))
    }

    /// Whether SIGTERM stops the running jobs (`daemon::stop`): as PID 1 (a container, where
    /// the daemon's exit kills what is left), or with `--stop-jobs`.
    pub(super) fn stops_jobs(&self) -> bool {
        self.options.stop_jobs || crate::sys::process::own_pid().0 == 1
    }

    /// How long a graceful stop waits for the jobs after SIGTERM (`--stop-timeout`).
    pub(super) fn stop_timeout_s(&self) -> u32 {
        self.options
            .stop_timeout_s
            .unwrap_or(super::cli::DEFAULT_STOP_TIMEOUT_S)
    }
}

/// cronie's RANDOM_DELAY factor: one draw per daemon start, so every job of a host with the
/// same RANDOM_DELAY starts the same time after its minute, and different hosts spread out.
pub(super) fn random_delay_factor(now: Timestamp) -> f64 {
    let mut bytes = [0u8; 8];
    let bits = match crate::sys::random_bytes(&mut bytes) {
        Ok(()) => u64::from_le_bytes(bytes),
        // No /dev/urandom: the clock's nanoseconds still differ between hosts.
        Err(_) => now.as_nanosecond() as u64 ^ u64::from(std::process::id()),
    };
    (bits >> 11) as f64 / (1u64 << 53) as f64
}
