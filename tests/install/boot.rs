//! The package under a real systemd: a Debian root (this host's release, minbase with systemd,
//! systemd-sysv and dbus) with `crond_*.deb` installed by apt, booted with `systemd-nspawn -b`,
//! and driven from the host with `nsenter` into the container's namespaces (`systemctl`,
//! `journalctl`, files). It checks what `systemd-analyze verify` and a fake notify socket can
//! not: that the unit the package enables starts at boot and on `systemctl start` as
//! Type=notify (active and running, no timeout, the daemon's STATUS= shown), under its alias
//! `cron.service`; that an `@reboot` job of a user crontab and one of /etc/cron.d run at boot;
//! that `journalctl -t cron` and `-t CRON` show Debian's identities and formats, with the cron
//! facility and each line once; that `systemctl reload cron` reloads; and that `systemctl stop
//! cron` stops only the daemon (KillMode=process): a running job goes on, finishes with the
//! daemon gone, and a later start skips @reboot jobs (once per boot).
//!
//! The jobs are `@reboot` entries rather than minute ones: booting is what they are for, they
//! run as soon as the daemon is up, and no minute boundary is waited for (faketime can not
//! reach a booted container's clock, and setting it would move the host's too).
//!
//! The root holds only what debootstrap's minbase and systemd bring: the package's Depends come
//! from the mirror at each run, as for an admin, so a missing one shows (procps, whose /bin/kill
//! the unit's ExecReload runs, was). nspawn runs with `--register=no --keep-unit` (no machined,
//! no host bus: the host's init need not be systemd) and `--private-network`, the container
//! driven with `nsenter` (machinectl and `systemd-run -M` need machined on the host).
//!
//! Needs root, systemd-nspawn (Debian's `systemd-container`), nsenter, debootstrap and Debian's
//! mirror; the root is bootstrapped once (about 1 min) and cached under cargo's target tmpdir,
//! then copied for the run (about 10 s in all, the boot under 1 s). A machine that can not boot
//! a container fails the test with nspawn's own words, never passes it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::support::install::*;

/// The container's PATH for the commands run in it (not the test's).
const PATH: &str = "/usr/sbin:/usr/bin:/sbin:/bin";

/// The @reboot job of /etc/cron.d that runs until /run/go exists: it is running when the
/// daemon is stopped.
const LONG_JOB: &str = "echo $$ > /run/long.pid; while [ ! -e /run/go ]; do sleep 0.2; done; \
                        echo finished > /root/long-finished";
const REBOOT_JOB: &str = "echo booted > /root/reboot-ran";

/// A booted container; halted (or killed) when dropped.
struct Machine {
    nspawn: Option<Child>,
    /// The container's init (systemd) as the host sees it.
    leader: u32,
    console: PathBuf,
}

impl Machine {
    /// `systemd-nspawn -b` of `root`, its console written to `console`; returns once systemd
    /// answers in it (not yet once the boot is over: see [`Machine::wait_booted`]).
    fn boot(root: &Path, console: &Path) -> Machine {
        let log = std::fs::File::create(console).expect("console log");
        let nspawn = Command::new("systemd-nspawn")
            .arg("--quiet")
            .arg("--directory")
            .arg(root)
            .args([
                "--boot",
                "--register=no",
                "--keep-unit",
                "--private-network",
            ])
            .arg("--console=pipe")
            .arg(format!("--machine=crondtest{}", std::process::id()))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("dup"))
            .stderr(log)
            .spawn()
            .expect("start systemd-nspawn");
        let mut machine = Machine {
            nspawn: Some(nspawn),
            leader: 0,
            console: console.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            machine.assert_running();
            let pid = machine.nspawn.as_ref().expect("nspawn").id();
            let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
                .unwrap_or_default();
            let init = children.split_whitespace().find(|c| {
                std::fs::read_to_string(format!("/proc/{c}/comm"))
                    .is_ok_and(|comm| comm.trim() == "systemd")
            });
            if let Some(init) = init {
                machine.leader = init.parse().expect("a pid");
                let out = machine.sh("systemctl is-system-running");
                // systemd answers on its private socket.
                let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
                if ["initializing", "starting", "running", "degraded"].contains(&state.as_str()) {
                    return machine;
                }
            }
            assert!(
                Instant::now() < deadline,
                "systemd did not answer in the container within 60 s\n{}",
                machine.console_text()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn console_text(&self) -> String {
        format!(
            "console and nspawn said:\n{}",
            std::fs::read_to_string(&self.console).unwrap_or_default()
        )
    }

    /// Fails with nspawn's words if it has exited (it could not boot the container).
    fn assert_running(&mut self) {
        let nspawn = self.nspawn.as_mut().expect("nspawn");
        if let Some(status) = nspawn.try_wait().expect("wait") {
            panic!(
                "systemd-nspawn exited ({status}) before systemd was up in the container: this \
                 machine can not boot a container (no CAP_SYS_ADMIN, no cgroup to delegate, or \
                 nspawn refused; leave the test out visibly with `--skip root_systemd`)\n{}",
                self.console_text()
            );
        }
    }

    /// `sh -c SCRIPT` in the container, as root, in all of its namespaces.
    fn sh(&self, script: &str) -> Output {
        run(Command::new("nsenter")
            .arg("--target")
            .arg(self.leader.to_string())
            .arg("--all")
            .args(["/bin/sh", "-c", script])
            .env_clear()
            .env("PATH", PATH)
            .env("SYSTEMD_COLORS", "0")
            .env("SYSTEMD_PAGER", ""))
    }

    /// `sh -c SCRIPT` in the container; must succeed. Returns stdout.
    fn sh_ok(&self, script: &str) -> String {
        let out = self.sh(script);
        assert!(
            out.status.success(),
            "in the container: {script}: {}\nstdout:\n{}\nstderr:\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&self.sh("systemctl status cron --no-pager -l").stdout)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits for the boot to end: `systemctl is-system-running --wait` says `running` (a
    /// failed unit, `degraded`, fails the test with the list).
    fn wait_booted(&self) {
        let out = self.sh("timeout 90 systemctl is-system-running --wait");
        let state = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(
            state,
            "running",
            "the container's boot did not end well:\n{}",
            String::from_utf8_lossy(
                &self
                    .sh("systemctl --failed --no-legend; journalctl -b -n 60")
                    .stdout
            )
        );
    }

    /// `systemctl show -p PROPERTY cron`, for the properties asked.
    fn show(&self, properties: &[&str]) -> Vec<(String, String)> {
        let text = self.sh_ok(&format!("systemctl show -p {} cron", properties.join(",")));
        let mut got: Vec<(String, String)> = text
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        got.sort_by_key(|(k, _)| properties.iter().position(|p| p == k));
        got
    }

    fn main_pid(&self) -> u32 {
        self.show(&["MainPID"])[0].1.parse().expect("MainPID")
    }

    /// `journalctl -t IDENT` of this boot, as `IDENT[PID]: message` lines.
    fn journal(&self, ident: &str) -> Vec<String> {
        self.sh_ok(&format!(
            "journalctl -b -t {ident} -o short --no-pager --no-hostname -q"
        ))
        .lines()
        .filter_map(|l| l.find(&format!("{ident}[")).map(|at| l[at..].to_string()))
        .collect()
    }

    /// Waits (at most `secs`) until `journalctl -t IDENT` has `count` lines ending in `message`
    /// (`IDENT[PID]: message`); returns their PIDs.
    fn wait_for(&self, ident: &str, message: &str, count: usize, secs: u64) -> Vec<u32> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let lines = self.journal(ident);
            let pids: Vec<u32> = lines
                .iter()
                .filter_map(|l| {
                    let rest = l.strip_prefix(&format!("{ident}["))?;
                    let (pid, text) = rest.split_once("]: ")?;
                    (text == message).then(|| pid.parse().ok())?
                })
                .collect();
            if pids.len() >= count {
                return pids;
            }
            assert!(
                Instant::now() < deadline,
                "fewer than {count} lines `{ident}[PID]: {message}` in the journal within {secs} s:\n{}",
                lines.join("\n")
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Halts the container as `machinectl poweroff` would (SIGTERM to nspawn: SIGRTMIN+3 to
    /// its init) and returns how long the shutdown took.
    fn halt(&mut self) -> Duration {
        let started = Instant::now();
        let mut nspawn = self.nspawn.take().expect("nspawn");
        let _ = Command::new("kill")
            .args(["-TERM", &nspawn.id().to_string()])
            .status();
        let deadline = started + Duration::from_secs(60);
        while nspawn.try_wait().expect("wait").is_none() {
            if Instant::now() > deadline {
                let _ = nspawn.kill();
                let _ = nspawn.wait();
                panic!("the container did not shut down within 60 s");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        started.elapsed()
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        if let Some(mut nspawn) = self.nspawn.take() {
            // A failed test: a second SIGTERM makes nspawn end the container at once.
            for _ in 0..2 {
                let _ = Command::new("kill")
                    .args(["-TERM", &nspawn.id().to_string()])
                    .status();
                std::thread::sleep(Duration::from_secs(2));
            }
            let _ = nspawn.kill();
            let _ = nspawn.wait();
        }
    }
}

/// A fresh copy of the cached root with the package installed (apt-get in a chroot, as an
/// image build would: its postinst enables crond.service), a root crontab made by the package's
/// crontab and a file in /etc/cron.d, each with an @reboot entry.
fn prepared_root(dir: &Path) -> PathBuf {
    let base = super::debian::bootstrapped("-systemd", "systemd,systemd-sysv,dbus");
    let deb = super::deb::deb();
    let root = dir.join("root");
    run_ok(Command::new("cp").arg("-a").arg(&base).arg(&root));
    std::fs::copy(&deb, root.join("tmp/crond.deb")).expect("copy the package");
    std::fs::copy("/etc/resolv.conf", root.join("etc/resolv.conf")).expect("resolv.conf");
    let script = format!(
        "set -e
         apt-get install -y -q --no-install-recommends /tmp/crond.deb
         rm /tmp/crond.deb /usr/sbin/policy-rc.d
         echo '@reboot {REBOOT_JOB}' | crontab -
         echo '@reboot root {LONG_JOB}' > /etc/cron.d/long"
    );
    run_ok(
        Command::new("chroot")
            .arg(&root)
            .args(["/bin/sh", "-c", &script])
            .env_clear()
            .env("PATH", PATH)
            .env("DEBIAN_FRONTEND", "noninteractive"),
    );
    root
}

// What the container showed goes to the test's output (`--nocapture`, or a failure).
#[allow(clippy::print_stderr)]
#[test]
fn root_systemd_boots_the_package_and_starts_reloads_and_stops_cron_as_debian() {
    let began = Instant::now();
    require_root();
    require_command("systemd-nspawn");
    require_command("nsenter");
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let root = prepared_root(dir.path());
    let prepared = began.elapsed();
    // (An absolute link into the root: not followed here.)
    assert!(
        std::fs::symlink_metadata(
            root.join("etc/systemd/system/multi-user.target.wants/crond.service")
        )
        .is_ok(),
        "the package did not enable crond.service"
    );

    let mut machine = Machine::boot(&root, &dir.path().join("console.log"));
    machine.wait_booted();
    let booted = began.elapsed();

    // Started at boot by the enabled unit, under both names, ready (Type=notify: active only
    // once READY=1 came) with the daemon's STATUS= line, never restarted.
    let state = machine.show(&[
        "Id",
        "Names",
        "Type",
        "ActiveState",
        "SubState",
        "Result",
        "NRestarts",
        "StatusText",
    ]);
    let text = |s: &[(String, String)]| {
        s.iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect::<String>()
    };
    eprintln!("at boot:\n{}", text(&state));
    let at = |k: &str| {
        state
            .iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    };
    assert_eq!(at("Id"), "crond.service");
    assert_eq!(at("Names"), "crond.service cron.service");
    assert_eq!(at("Type"), "notify");
    assert_eq!(
        (
            at("ActiveState"),
            at("SubState"),
            at("Result"),
            at("NRestarts")
        ),
        ("active", "running", "success", "0"),
        "{}",
        text(&state)
    );
    assert!(
        at("StatusText").contains(" from ") && at("StatusText").contains(" file"),
        "no STATUS= from the daemon: {}",
        text(&state)
    );
    let first = machine.main_pid();

    // Both @reboot jobs ran: Debian's identities, the daemon's lines from the unit's main pid.
    machine.wait_for("cron", "(CRON) INFO (Running @reboot jobs)", 1, 30);
    let cmd = format!("(root) CMD ({REBOOT_JOB})");
    machine.wait_for("CRON", &cmd, 1, 30);
    machine.wait_for("CRON", &format!("(root) CMD ({LONG_JOB})"), 1, 30);
    assert_eq!(
        std::fs::read_to_string(root.join("root/reboot-ran")).expect("the @reboot job ran"),
        "booted\n"
    );
    let daemon_pids = machine.wait_for("cron", "(CRON) INFO (running with inotify support)", 1, 5);
    assert_eq!(daemon_pids, [first], "cron[PID] is the unit's MainPID");
    // Every line of the daemon has the cron facility (9), and none is in the journal twice (it
    // logs to syslog only: not also through stderr).
    let all = machine.sh_ok("journalctl -b -t cron -o cat | wc -l");
    let cron_facility = machine.sh_ok("journalctl -b -t cron SYSLOG_FACILITY=9 -o cat | wc -l");
    assert_eq!(all, cron_facility, "lines of cron not in the cron facility");
    let daemon_lines = machine.journal("cron");
    eprintln!("journalctl -t cron:\n{}", daemon_lines.join("\n"));
    let mut unique = daemon_lines.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), daemon_lines.len(), "a line twice");
    eprintln!(
        "journalctl -t CRON:\n{}",
        machine.journal("CRON").join("\n")
    );

    // systemctl reload cron: SIGHUP to the same daemon, which reloads every crontab.
    machine.sh_ok("systemctl reload cron");
    machine.wait_for(
        "cron",
        "(CRON) INFO (SIGHUP: reloading every crontab and reading the clock)",
        1,
        10,
    );
    machine.wait_for("cron", "(root) RELOAD (crontabs/root)", 1, 10);
    machine.wait_for("cron", "(*system*long) RELOAD (/etc/cron.d/long)", 1, 10);
    assert_eq!(machine.main_pid(), first, "reload restarted the daemon");

    // systemctl stop cron with the long job running: the daemon stops (exit 0, a clean stop:
    // inactive, not failed), the job goes on in the unit's cgroup and finishes on its own.
    let job = machine.sh_ok("cat /run/long.pid").trim().to_string();
    let t = Instant::now();
    machine.sh_ok("systemctl stop cron");
    let stop_took = t.elapsed();
    let stopped = machine.show(&["ActiveState", "SubState", "Result", "MainPID"]);
    eprintln!(
        "after systemctl stop cron ({stop_took:?}):\n{}",
        text(&stopped)
    );
    assert_eq!(
        text(&stopped),
        "ActiveState=inactive\nSubState=dead\nResult=success\nMainPID=0\n"
    );
    machine.wait_for("cron", "(CRON) INFO (Shutting down)", 1, 5);
    machine.wait_for(
        "cron",
        "(CRON) INFO (1 job still running; it finishes on its own)",
        1,
        5,
    );
    assert!(
        machine.sh(&format!("kill -0 {job}")).status.success(),
        "the running job was killed with the daemon"
    );
    let cgroup = machine.sh_ok(&format!("cat /proc/{job}/cgroup"));
    eprintln!(
        "the job after the stop: pid {job}, cgroup {}",
        cgroup.lines().last().unwrap_or("")
    );
    assert!(
        !machine.sh(&format!("kill -0 {first}")).status.success(),
        "the daemon is still there"
    );
    machine.sh_ok("touch /run/go");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !root.join("root/long-finished").exists() {
        assert!(
            Instant::now() < deadline,
            "the job did not finish after the stop"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Its cron child closed the PAM session of both jobs: the second after the daemon's end.
    machine.wait_for(
        "CRON",
        "pam_unix(cron:session): session closed for user root",
        2,
        10,
    );

    // systemctl start cron: ready again at once (no start timeout: TimeoutStartSec is 90 s), a
    // new daemon, and the @reboot jobs are not run twice in one boot.
    let t = Instant::now();
    machine.sh_ok("systemctl start cron");
    let start_took = t.elapsed();
    let started = machine.show(&["ActiveState", "SubState", "Result", "NRestarts"]);
    eprintln!(
        "after systemctl start cron ({start_took:?}):\n{}",
        text(&started)
    );
    assert_eq!(
        text(&started),
        "ActiveState=active\nSubState=running\nResult=success\nNRestarts=0\n"
    );
    assert!(
        start_took < Duration::from_secs(10),
        "start took {start_took:?}"
    );
    let second = machine.main_pid();
    assert_ne!(second, first);
    let skip = machine.wait_for(
        "cron",
        "(CRON) INFO (Skipping @reboot jobs -- not system startup)",
        1,
        10,
    );
    assert_eq!(skip, [second]);
    assert_eq!(
        machine.wait_for("CRON", &cmd, 1, 1).len(),
        1,
        "@reboot ran twice"
    );

    let halt_took = machine.halt();
    eprintln!(
        "root prepared in {prepared:?}, booted at {booted:?}, stop {stop_took:?}, start \
         {start_took:?}, shutdown {halt_took:?}, all {:?}",
        began.elapsed()
    );
}
