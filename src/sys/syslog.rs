//! syslog through libc: `openlog("cron", LOG_PID, LOG_CRON)`, so a forked job child logs under
//! its own pid (as Debian's `CRON[pid]` lines) and glibc reconnects to /dev/log by itself.

use std::ffi::{CStr, CString};

pub use crate::types::Level;

impl Level {
    fn raw(self) -> libc::c_int {
        match self {
            Level::Info => libc::LOG_INFO,
            Level::Notice => libc::LOG_NOTICE,
            Level::Warning => libc::LOG_WARNING,
            Level::Error => libc::LOG_ERR,
        }
    }
}

/// Connects (lazily, as glibc does) under `ident` (`cron`, `CRON` in a job child, `crontab`
/// for crontab(1)), facility cron.
pub fn open_as(ident: &'static CStr) {
    // SAFETY: the ident is 'static, as openlog requires (it keeps the pointer); the flags are
    // plain integers.
    unsafe { libc::openlog(ident.as_ptr(), libc::LOG_PID, libc::LOG_CRON) };
}

/// Closes the connection (SIGHUP reopens it with the next message).
pub fn close() {
    // SAFETY: closelog takes no arguments and is harmless when nothing is open.
    unsafe { libc::closelog() };
}

/// Logs one message, which need not be UTF-8 (a job's output line with `-s`): the bytes go
/// to syslog as they are, NUL replaced by `\0`.
pub fn log_bytes(level: Level, message: &[u8]) {
    let mut bytes = Vec::with_capacity(message.len());
    for &b in message {
        if b == 0 {
            bytes.extend_from_slice(b"\\0");
        } else {
            bytes.push(b);
        }
    }
    let text = CString::new(bytes).expect("NUL bytes were replaced");
    // SAFETY: the format is the literal "%s" and its one argument is a valid C string that
    // lives until the call returns, so syslog reads no more than that string.
    unsafe { libc::syslog(level.raw(), c"%s".as_ptr(), text.as_ptr()) };
}
