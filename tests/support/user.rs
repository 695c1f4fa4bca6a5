//! Real users, created for one test with `useradd` and removed with `userdel` when dropped.
//!
//! useradd and userdel take /etc/passwd's lock and fail at once when another holds it, so every
//! creation and removal is serialised: a mutex between the threads of one test binary, and an
//! `flock` on a file in /run/lock between binaries (cargo runs them one after another, but a
//! second `cargo test` may run beside the first).

use std::fs::File;
use std::process::Command;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use nix::fcntl::{Flock, FlockArg};

static THREADS: Mutex<()> = Mutex::new(());
static SERIAL: AtomicU32 = AtomicU32::new(0);

/// Holds the lock on /etc/passwd's tools while alive.
pub fn passwd_lock() -> (std::sync::MutexGuard<'static, ()>, Flock<File>) {
    let threads = THREADS.lock().unwrap_or_else(|e| e.into_inner());
    let file = File::create("/run/lock/crond-tests-useradd.lock").expect("create the lock file");
    let lock = Flock::lock(file, FlockArg::LockExclusive)
        .map_err(|(_, e)| e)
        .expect("flock the lock file");
    (threads, lock)
}

/// A user that exists for the length of a test.
pub struct TestUser {
    pub name: String,
    remove_home: bool,
}

impl TestUser {
    /// `useradd ARGS NAME`, the name made of `tag`, this process and a counter (unique across
    /// the threads and binaries of a run). With `-m` in `args`, the home goes with the user.
    pub fn create(tag: &str, args: &[&str]) -> TestUser {
        super::root::require_root();
        let name = format!(
            "crt{tag}{}x{}",
            std::process::id() % 100_000,
            SERIAL.fetch_add(1, Ordering::Relaxed)
        );
        let _lock = passwd_lock();
        // A leftover of a killed earlier run with the same pid: gone first.
        let _ = Command::new("userdel").arg("-r").arg(&name).output();
        let out = Command::new("useradd")
            .args(args)
            .arg(&name)
            .output()
            .expect("run useradd");
        assert!(
            out.status.success(),
            "useradd {args:?} {name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let _ = std::fs::remove_file(format!("/var/mail/{name}"));
        TestUser {
            name,
            remove_home: args.contains(&"-m"),
        }
    }
}

impl Drop for TestUser {
    fn drop(&mut self) {
        let _lock = passwd_lock();
        let mut userdel = Command::new("userdel");
        if self.remove_home {
            userdel.arg("-r");
        }
        let _ = userdel.arg(&self.name).output();
        let _ = std::fs::remove_file(format!("/var/mail/{}", self.name));
    }
}
