//! syslog through libc: `openlog("cron", LOG_PID, LOG_CRON)`, so a forked job child logs under
//! its own pid (as Debian's `CRON[pid]` lines) and glibc reconnects to /dev/log by itself.

use std::ffi::CString;

/// Message priorities the daemon uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    Info,
    Notice,
    Warning,
    Error,
}

impl Priority {
    fn raw(self) -> libc::c_int {
        match self {
            Priority::Info => libc::LOG_INFO,
            Priority::Notice => libc::LOG_NOTICE,
            Priority::Warning => libc::LOG_WARNING,
            Priority::Error => libc::LOG_ERR,
        }
    }
}

/// Connects (lazily, as glibc does) under the ident `cron`, facility cron.
pub fn open() {
    // SAFETY: the ident is a 'static C string literal, as openlog requires (it keeps the
    // pointer); the flags are plain integers.
    unsafe { libc::openlog(c"cron".as_ptr(), libc::LOG_PID, libc::LOG_CRON) };
}

/// Closes the connection (SIGHUP reopens it with the next message).
pub fn close() {
    // SAFETY: closelog takes no arguments and is harmless when nothing is open.
    unsafe { libc::closelog() };
}

/// Logs one message; NUL bytes are replaced so the message is never cut short.
pub fn log(priority: Priority, message: &str) {
    let text = CString::new(message.replace('\0', "\\0")).expect("NUL bytes were replaced");
    // SAFETY: the format is the literal "%s" and its one argument is a valid C string that
    // lives until the call returns, so syslog reads no more than that string.
    unsafe { libc::syslog(priority.raw(), c"%s".as_ptr(), text.as_ptr()) };
}
