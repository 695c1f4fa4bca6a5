//! The only module that talks to the kernel and libc, and the only one allowed `unsafe`: every
//! block says why it is sound. Everything here exposes a safe function with a typed result;
//! nothing outside `sys` imports `libc` or `nix`.

#[cfg(test)]
pub mod alloc_count;
pub mod notify;
#[cfg(feature = "pam")]
pub mod pam;
pub mod pipe;
pub mod setgid;
pub mod spool_dir;
pub mod tmpfile;
pub mod user;

/// Fills `bytes` from the kernel's generator (`/dev/urandom`: never blocks once the system has
/// booted). The crate's one source of randomness: temporary names and RANDOM_DELAY's draw.
pub fn random_bytes(bytes: &mut [u8]) -> std::io::Result<()> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")?.read_exact(bytes)
}

/// The host name (the node name of `uname`), as bytes; empty if it can't be read.
pub fn hostname() -> Vec<u8> {
    nix::unistd::gethostname()
        .map(|h| h.into_encoded_bytes())
        .unwrap_or_default()
}
pub mod as_user;
pub mod fs;
pub mod inotify;
pub mod job_processes;
pub mod listen;
pub mod memory;
pub mod poll;
pub mod process;
pub mod pump;
pub mod seqpacket;
pub mod signal;
pub mod spawn;
pub mod syslog;
pub mod timer;
