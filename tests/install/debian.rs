//! The swap an admin makes, in a real Debian root: `debootstrap` (this host's release, minbase)
//! with Debian's own `cron` installed and in use (user crontabs made by Debian's crontab, a file
//! in /etc/cron.d, /etc/cron.allow), then `apt-get install ./crond_*.deb`. Everything the admin
//! had is kept and loaded; Debian's cron and ours, each run in the root under libfaketime across
//! one minute boundary, log the same job lines with the same syslog priorities (an expired
//! account refused by PAM, a locked one run); cron.allow still decides who may use crontab; and
//! `apt-get install` of a package that Depends on `cron` keeps ours.
//!
//! Needs root, `debootstrap` and Debian's mirror (the registries CI reaches). The bootstrapped
//! root is cached under cargo's target tmpdir and copied for each run.

use std::fs::File;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use nix::fcntl::{Flock, FlockArg};

use crate::support::install::*;

const MIRROR: &str = "http://deb.debian.org/debian";

/// This host's Debian release: the root must run the binaries built here (same glibc).
pub(crate) fn codename() -> String {
    let text = std::fs::read_to_string("/etc/os-release").expect("/etc/os-release");
    text.lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|v| v.trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
        .expect("a Debian host with VERSION_CODENAME in /etc/os-release")
}

/// A minbase root with Debian's cron, bootstrapped once per target dir.
fn base_root() -> PathBuf {
    bootstrapped("", "cron")
}

/// A minbase root of this host's release with the packages `include` (debootstrap's
/// comma-separated list), bootstrapped once per target dir as `debian-RELEASE{suffix}`, in
/// which no package's script starts a service (policy-rc.d).
///
/// Several tests want the same root, and run at once: the first to come bootstraps it while the
/// others wait on a lock beside it (an `flock`, which holds between the threads of this binary
/// as between binaries), and they find it complete. Without the lock, a second test would
/// remove the root and bootstrap another into the same directory while the first still
/// bootstraps or copies it.
pub(crate) fn bootstrapped(suffix: &str, include: &str) -> PathBuf {
    let release = codename();
    let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("debian-{release}{suffix}"));
    let lock_file = base.with_file_name(format!("debian-{release}{suffix}.lock"));
    let file =
        File::create(&lock_file).unwrap_or_else(|e| panic!("create {}: {e}", lock_file.display()));
    let _lock = Flock::lock(file, FlockArg::LockExclusive)
        .unwrap_or_else(|(_, e)| panic!("flock {}: {e}", lock_file.display()));
    let done = base.join(".crond-test-complete");
    if done.exists() {
        return base;
    }
    require_command("debootstrap");
    let _ = std::fs::remove_dir_all(&base);
    run_ok(
        Command::new("debootstrap")
            .arg("--variant=minbase")
            .arg(format!("--include={include}"))
            .arg(&release)
            .arg(&base)
            .arg(MIRROR),
    );
    // No service is started inside the root by a package's scripts.
    let policy = base.join("usr/sbin/policy-rc.d");
    std::fs::write(&policy, "#!/bin/sh\nexit 101\n").expect("policy-rc.d");
    std::fs::set_permissions(&policy, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::fs::write(&done, "").expect("marker");
    base
}

/// A fresh copy of the base root, removed when dropped.
struct Root {
    dir: tempfile::TempDir,
}

impl Root {
    fn new() -> Root {
        let base = base_root();
        let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
        run_ok(
            Command::new("cp")
                .arg("-a")
                .arg(format!("{}/.", base.display()))
                .arg(dir.path()),
        );
        let lib = dir.path().join(FAKETIME_LIB.trim_start_matches('/'));
        std::fs::create_dir_all(lib.parent().expect("a dir")).expect("mkdir");
        std::fs::copy(FAKETIME_LIB, &lib).expect("libfaketime is installed (.ci/deps)");
        std::fs::copy("/etc/resolv.conf", dir.path().join("etc/resolv.conf")).expect("resolv.conf");
        Root { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn file(&self, rel: &str) -> PathBuf {
        self.path().join(rel.trim_start_matches('/'))
    }

    /// `sh -c SCRIPT` in the root as root; must succeed.
    fn sh(&self, script: &str) -> String {
        run_ok(
            Command::new("chroot")
                .arg(self.path())
                .args(["/bin/sh", "-c", script])
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )
    }

    /// `crontab ARGS` in the root as `user` (uid and primary group, as a login would give).
    fn crontab_as(&self, user: &str, args: &[&str]) -> std::process::Output {
        run(Command::new("chroot")
            .arg(format!("--userspec={user}:{user}"))
            .arg(self.path())
            .arg("/usr/bin/crontab")
            .args(args))
    }

    /// Starts `argv` in the root, in a private mount namespace with /proc, under libfaketime
    /// from a few seconds before 10:00.
    fn start_daemon(&self, argv: &[&str]) -> Child {
        let script = format!(
            "mount -t proc proc '{0}/proc' && exec chroot '{0}' \"$@\"",
            self.path().display()
        );
        Command::new("unshare")
            .args(["-m", "--propagation", "private", "sh", "-c", &script, "sh"])
            .arg("env")
            .arg(format!("LD_PRELOAD={FAKETIME_LIB}"))
            .arg("FAKETIME=@2026-11-21 09:59:56")
            .args(argv)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the daemon in the root")
    }
}

/// Receives what the root's programs send to syslog (/dev/log in the root).
struct Syslog {
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Syslog {
    fn listen(root: &Root) -> Syslog {
        let path = root.file("/dev/log");
        let _ = std::fs::remove_file(&path);
        let socket = UnixDatagram::bind(&path).expect("bind /dev/log in the root");
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .expect("chmod /dev/log");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            while let Ok(n) = socket.recv(&mut buf) {
                let line = String::from_utf8_lossy(&buf[..n]).trim_end().to_string();
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Syslog {
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// Collects lines until `count` of them contain `needle` (at most `secs` seconds).
    fn wait_for(&mut self, needle: &str, count: usize, secs: u64) {
        let deadline = Instant::now() + Duration::from_secs(secs);
        while self.seen.iter().filter(|l| l.contains(needle)).count() < count {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!(
                    "fewer than {count} syslog lines with {needle:?} within {secs} s:\n{}",
                    self.seen.join("\n")
                ),
            }
        }
    }

    /// What an admin's log rules match, sorted: every line of the job children (ident `CRON`:
    /// cron's own and those the PAM modules write through it, a trace of the PAM calls made),
    /// and the daemon's lines about files, as (priority, `IDENT: message`)
    /// with the pids taken out.
    fn lines(&self) -> Vec<(u8, String)> {
        let mut lines: Vec<(u8, String)> = self
            .seen
            .iter()
            .filter_map(|l| {
                let pri = l.strip_prefix('<')?.split('>').next()?.parse().ok()?;
                let (ident, rest) = [" CRON[", " cron["]
                    .iter()
                    .find_map(|tag| Some((&tag[1..5], &l[l.find(tag)? + 1..])))?;
                // Debian's MAIL line has a newline before its `)` (a stray `\n` in its format,
                // which a log shows as `#012`); ours does not: the one difference let through.
                let message = without_pids(&rest[rest.find("]: ")? + 3..]).replace("\n)", ")");
                let daemons = ["NOT A REGULAR FILE"];
                (ident == "CRON" || daemons.iter().any(|d| message.contains(d)))
                    .then(|| (pri, format!("{ident}: {message}")))
            })
            .collect();
        lines.sort_by(|a, b| a.1.cmp(&b.1).then(a.0.cmp(&b.0)));
        lines
    }
}

/// `(u) CMD ([123] cmd)` → `(u) CMD (cmd)`: Debian's `-L 8` pid differs between runs.
fn without_pids(message: &str) -> String {
    let mut out = message.to_string();
    for event in [" CMD ([", " END (["] {
        if let Some(at) = out.find(event) {
            let open = at + event.len() - 1;
            if let Some(close) = out[open..].find("] ") {
                out.replace_range(open..open + close + 2, "");
            }
        }
    }
    out
}

fn stop(mut daemon: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &daemon.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while daemon.try_wait().expect("wait").is_none() {
        assert!(Instant::now() < deadline, "the daemon did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_for_text(path: &Path, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && !text.is_empty()
        {
            return text;
        }
        assert!(
            Instant::now() < deadline,
            "{} did not appear within {secs} s",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs the root's `cron` (Debian's or ours) over 10:00 and returns its lines, once the four
/// entries due have ended (alice's, the locked account's, the cron.d file's two) and the expired
/// account's has been refused.
fn one_minute(root: &Root, argv: &[&str]) -> Vec<(u8, String)> {
    for f in ["alice", "locked", "expired", "site"] {
        let _ = std::fs::remove_file(root.file(&format!("/tmp/{f}-ran")));
    }
    let mut syslog = Syslog::listen(root);
    let daemon = root.start_daemon(argv);
    for f in ["alice", "locked", "site"] {
        wait_for_text(&root.file(&format!("/tmp/{f}-ran")), 30);
    }
    syslog.wait_for(") END (", 4, 15);
    syslog.wait_for("session closed for user", 4, 5);
    syslog.wait_for("Authentication failure", 1, 5);
    stop(daemon);
    assert!(
        !root.file("/tmp/expired-ran").exists(),
        "an expired account's job ran"
    );
    syslog.lines()
}

#[test]
fn root_swapping_debians_cron_for_ours_in_a_debian_root_keeps_and_loads_everything() {
    require_root();
    require_command("unshare");
    let deb = super::deb::deb();
    let root = Root::new();

    // A system that used Debian's cron: users, crontabs installed by Debian's crontab, an
    // account that is locked and one that has expired, a cron.d file and a cron.allow.
    root.sh("set -e
         for u in alice bob locked expired; do useradd -m -s /bin/sh $u; done
         printf 'alice:a1\\nbob:b1\\nlocked:l1\\nexpired:e1\\n' | chpasswd
         usermod -L locked
         chage -E 0 expired
         for u in alice locked expired; do
             echo \"0 10 * * * echo ran > /tmp/$u-ran\" | crontab -u $u -
         done
         printf '0 10 * * * root echo ran > /tmp/site-ran\\n0 10 * * * root echo hello\\n' \\
             > /etc/cron.d/site
         mkdir /etc/cron.d/not-a-file
         printf '#!/bin/sh\\ncat > /dev/null\\nexit 75\\n' > /usr/sbin/sendmail
         chmod 755 /usr/sbin/sendmail
         printf 'root\\nalice\\nlocked\\nexpired\\n' > /etc/cron.allow");
    let kept = [
        "/var/spool/cron/crontabs/alice",
        "/var/spool/cron/crontabs/locked",
        "/var/spool/cron/crontabs/expired",
        "/etc/cron.d/site",
        "/etc/cron.allow",
        "/etc/crontab",
    ];
    let before: Vec<(Vec<u8>, (u32, u32), u32)> = kept
        .iter()
        .map(|p| {
            let f = root.file(p);
            (std::fs::read(&f).expect(p), owner(&f), mode(&f))
        })
        .collect();

    // Debian's cron, as it runs on Debian (-L 15: start, end, failure, pids).
    let debian = one_minute(&root, &["/usr/sbin/cron", "-f", "-L", "15"]);

    // The swap.
    std::fs::copy(&deb, root.file("/tmp/crond.deb")).expect("copy the package");
    root.sh("apt-get install -y -q /tmp/crond.deb");
    let status = root.sh("dpkg-query -W -f '${Package} ${Status}\\n' cron crond");
    assert!(
        status.contains("crond install ok installed")
            && !status.contains("cron install ok installed"),
        "{status}"
    );
    for (p, (text, own, m)) in kept.iter().zip(&before) {
        let f = root.file(p);
        assert_eq!(&std::fs::read(&f).expect(p), text, "{p} changed");
        assert_eq!(
            (owner(&f), mode(&f)),
            (*own, *m),
            "{p}: owner or mode changed"
        );
    }

    // Ours, named cron as the unit runs it, logging to syslog as Debian's.
    let ours = one_minute(
        &root,
        &["/usr/sbin/cron", "-f", "--log", "syslog", "-L", "15"],
    );
    // The same lines; the same priorities but where ours is deliberately more severe (a file
    // that is not a crontab, a failed MTA: Debian logs both at info).
    let texts = |lines: &[(u8, String)]| lines.iter().map(|l| l.1.clone()).collect::<Vec<_>>();
    assert_eq!(
        texts(&ours),
        texts(&debian),
        "the lines differ from Debian's"
    );
    for ((p_ours, text), (p_debian, _)) in ours.iter().zip(&debian) {
        if text.contains("NOT A REGULAR FILE") || text.contains(") MAIL (") {
            assert!(p_ours < p_debian, "{text}: <{p_ours}>, Debian <{p_debian}>");
        } else {
            assert_eq!(p_ours, p_debian, "the priority of {text}");
        }
    }

    // crontab(1) reads what Debian's wrote, and cron.allow still decides.
    let out = root.crontab_as("alice", &["-l"]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "0 10 * * * echo ran > /tmp/alice-ran\n"
    );
    let out = root.crontab_as("bob", &["-l"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).starts_with("You (bob) are not allowed"),
        "{out:?}"
    );

    // A package that Depends on cron is satisfied by ours.
    root.sh("apt-get install -y -q --no-install-recommends lockout");
    let status = root.sh("dpkg-query -W -f '${Package} ${Status}\\n' cron crond lockout");
    assert!(
        status.contains("crond install ok installed")
            && status.contains("lockout install ok installed")
            && !status.contains("cron install ok installed"),
        "{status}"
    );
}
