//! The daemon's setup: the options it was started with and the pid-file lock it holds for its
//! life, and what start-up makes of them before the loop runs — the RANDOM_DELAY factor, the
//! job children's preparation (PAM preloaded, group sources loaded before any fork), the
//! cluster link. Nothing here runs after start-up.

use jiff::Timestamp;

use super::cli::Options;
use super::cluster::{self, ClusterLink};
use super::effects::{Effects, RealEffects};
use crate::database::Rules;
use crate::log::lines;
use crate::schedule;
use crate::sys::fs::PidLock;

pub(super) struct Setup {
    pub(super) options: Options,
    /// Held while the daemon runs.
    lock: PidLock,
}

impl Setup {
    pub(super) fn new(options: Options, lock: PidLock) -> Setup {
        Setup { options, lock }
    }

    /// How crontab files are judged: the options' leniencies and the host's seed for `H`.
    pub(super) fn rules(&self) -> Rules {
        Rules {
            permit_any_mode: self.options.permit_any_mode,
            lsb_names: self.options.lsb_names,
            seed: schedule::host_seed(&crate::sys::hostname()),
        }
    }

    /// Debian's first lines.
    pub(super) fn log_start_lines(&self, delay_factor: f64, fx: &mut dyn Effects) {
        fx.info(lines::pidfile_line(self.lock.fd()));
        fx.info(lines::random_delay_line(delay_factor));
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
        fx.info(lines::no_pam_line(why));
    }

    /// With `--cluster-db`: the link, its helper started.
    pub(super) fn cluster_link(&self, now: Timestamp, fx: &mut dyn Effects) -> Option<ClusterLink> {
        let o = &self.options;
        let conninfo = o.cluster_db.as_ref()?;
        let host = o
            .cluster_host
            .clone()
            .unwrap_or_else(|| String::from_utf8_lossy(&crate::sys::hostname()).into_owned());
        let program = o
            .cluster_helper
            .clone()
            .unwrap_or_else(cluster::default_helper);
        fx.info(lines::cluster_mode_line(&host, &program));
        let mut link = ClusterLink::new(
            program,
            conninfo,
            &host,
            o.cluster_keep_days,
            o.cluster_keep_runs,
            o.cluster_lease_s,
        );
        link.start_helper(now.as_millisecond(), fx);
        Some(link)
    }
}

impl Setup {
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
