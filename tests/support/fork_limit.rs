//! A real limit on a daemon's processes, to make its forks fail on purpose.

/// A real limit on the daemon's processes, as systemd's TasksMax or a container sets it: a pids
/// cgroup of its own (cgroup v1's pids hierarchy, or v2 with the pids controller enabled), or
/// where there is none, RLIMIT_NPROC on a daemon run as `nobody` (the kernel never applies
/// that limit to uid 0), whose jobs are then `nobody`'s.
pub enum ForkLimit {
    Cgroup {
        dir: std::path::PathBuf,
        root: std::path::PathBuf,
    },
    Rlimit {
        pid: u32,
        /// The soft limit the daemon started with, to give back.
        soft: String,
    },
}

impl ForkLimit {
    pub fn pids_cgroup_root() -> Option<std::path::PathBuf> {
        let v1 = std::path::Path::new("/sys/fs/cgroup/pids");
        let v2 = std::path::Path::new("/sys/fs/cgroup");
        if v1.join("cgroup.procs").exists() {
            Some(v1.to_path_buf())
        } else if std::fs::read_to_string(v2.join("cgroup.subtree_control"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "pids"))
        {
            Some(v2.to_path_buf())
        } else {
            None
        }
    }

    /// How the daemon must be started for the limit to bite, and the user its jobs run as.
    pub fn wrapper() -> (&'static [&'static str], &'static str) {
        if ForkLimit::pids_cgroup_root().is_some() {
            (&[], "root")
        } else {
            (
                &[
                    "setpriv",
                    "--reuid=nobody",
                    "--regid=nogroup",
                    "--clear-groups",
                    "--",
                ],
                "nobody",
            )
        }
    }

    /// Takes hold of the daemon `pid` (not limited yet).
    pub fn on(pid: u32) -> ForkLimit {
        match ForkLimit::pids_cgroup_root() {
            Some(root) => {
                let dir = root.join(format!("crond-test-fork-{}-{pid}", std::process::id()));
                std::fs::create_dir(&dir).expect("create the cgroup");
                std::fs::write(dir.join("cgroup.procs"), pid.to_string()).expect("cgroup.procs");
                ForkLimit::Cgroup { dir, root }
            }
            None => {
                let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
                let soft = limits
                    .lines()
                    .find_map(|l| l.strip_prefix("Max processes"))
                    .and_then(|l| l.split_whitespace().next())
                    .unwrap_or_default()
                    .to_string();
                assert!(!soft.is_empty(), "no NPROC limit read");
                ForkLimit::Rlimit { pid, soft }
            }
        }
    }

    /// The daemon's group may hold `processes` at once (a pids cgroup only).
    pub fn allow(&self, processes: u32) {
        let ForkLimit::Cgroup { dir, .. } = self else {
            panic!("a number of processes needs a pids cgroup");
        };
        std::fs::write(dir.join("pids.max"), processes.to_string()).expect("pids.max");
    }

    /// Forks fail (`block`) or work again.
    pub fn set(&self, block: bool) {
        match self {
            // The daemon itself is the one process the group may hold.
            ForkLimit::Cgroup { dir, .. } => {
                std::fs::write(dir.join("pids.max"), if block { "1" } else { "max" })
                    .expect("pids.max")
            }
            // The daemon is nobody's one process. Only the soft limit moves, and nobody moves
            // it: that needs no privilege (root here may lack CAP_SYS_RESOURCE, which changing
            // another user's limits takes).
            ForkLimit::Rlimit { pid, soft } => {
                let limit = format!("--nproc={}:", if block { "1" } else { soft });
                let status = std::process::Command::new("setpriv")
                    .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
                    .args(["prlimit", "--pid", &pid.to_string(), &limit])
                    .status()
                    .expect("run prlimit");
                assert!(status.success(), "prlimit {limit}");
            }
        }
    }
}

impl Drop for ForkLimit {
    fn drop(&mut self) {
        if let ForkLimit::Cgroup { dir, root } = self {
            // Whatever is left goes back to the root group, then the group can go.
            if let Ok(procs) = std::fs::read_to_string(dir.join("cgroup.procs")) {
                for pid in procs.split_whitespace() {
                    let _ = std::fs::write(root.join("cgroup.procs"), pid);
                }
            }
            let _ = std::fs::remove_dir(&dir);
        }
    }
}
