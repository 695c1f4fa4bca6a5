//! Linux-PAM for the job child, as Debian's cron calls it: `pam_start("cron", user)`, the tty
//! item `cron`, `pam_acct_mgmt`, `pam_setcred(ESTABLISH)`, `pam_open_session`, all silent; the
//! PAM environment; and at the end `pam_close_session`, `pam_setcred(DELETE)`, `pam_end` — the
//! session is closed before the credentials it was opened with are deleted, as Linux-PAM's
//! guide, OpenSSH and Debian's cron do; credentials established for a session that then failed
//! to open are deleted too.
//!
//! Our own binding of the nine functions used (no crate: the maintained ones wrap far more than
//! this, and `pam-sys` is generated bindings we would audit anyway; sudo-rs made the same
//! choice). libpam is linked by its soname, `libpam.so.0`, so building needs no -dev package.
//!
//! The conversation never prompts: a module that asks for anything (a password, a token, a
//! binary challenge) gets `PAM_CONV_ERR`, so a stack that would need a person fails instead of
//! hanging; messages for display only (`PAM_ERROR_MSG`, `PAM_TEXT_INFO`) are accepted and
//! dropped (the job child has no one to show them to).

use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::Path;
use std::ptr;

/// libpam's opaque handle.
#[repr(C)]
struct PamHandle {
    _private: [u8; 0],
}

#[repr(C)]
struct PamMessage {
    msg_style: c_int,
    msg: *const c_char,
}

#[repr(C)]
struct PamResponse {
    resp: *mut c_char,
    resp_retcode: c_int,
}

type ConvFn = unsafe extern "C" fn(
    num_msg: c_int,
    msg: *mut *const PamMessage,
    resp: *mut *mut PamResponse,
    appdata: *mut c_void,
) -> c_int;

#[repr(C)]
struct PamConv {
    conv: Option<ConvFn>,
    appdata_ptr: *mut c_void,
}

// Linux-PAM's values (security/_pam_types.h).
const PAM_SUCCESS: c_int = 0;
const PAM_CONV_ERR: c_int = 19;
const PAM_SILENT: c_int = 0x8000;
const PAM_ESTABLISH_CRED: c_int = 0x0002;
const PAM_DELETE_CRED: c_int = 0x0004;
const PAM_TTY: c_int = 3;
const PAM_ERROR_MSG: c_int = 3;
const PAM_TEXT_INFO: c_int = 4;

#[link(name = "libpam.so.0", kind = "dylib", modifiers = "+verbatim")]
unsafe extern "C" {
    fn pam_start(
        service: *const c_char,
        user: *const c_char,
        conv: *const PamConv,
        pamh: *mut *mut PamHandle,
    ) -> c_int;
    fn pam_start_confdir(
        service: *const c_char,
        user: *const c_char,
        conv: *const PamConv,
        confdir: *const c_char,
        pamh: *mut *mut PamHandle,
    ) -> c_int;
    fn pam_end(pamh: *mut PamHandle, status: c_int) -> c_int;
    fn pam_set_item(pamh: *mut PamHandle, item_type: c_int, item: *const c_void) -> c_int;
    fn pam_acct_mgmt(pamh: *mut PamHandle, flags: c_int) -> c_int;
    fn pam_setcred(pamh: *mut PamHandle, flags: c_int) -> c_int;
    fn pam_open_session(pamh: *mut PamHandle, flags: c_int) -> c_int;
    fn pam_close_session(pamh: *mut PamHandle, flags: c_int) -> c_int;
    fn pam_getenvlist(pamh: *mut PamHandle) -> *mut *mut c_char;
    fn pam_strerror(pamh: *mut PamHandle, errnum: c_int) -> *const c_char;
}

/// The conversation: accepts (and drops) the messages for display, `PAM_ERROR_MSG` and
/// `PAM_TEXT_INFO`; refuses anything else, which wants an answer: the echo prompts, Linux-PAM's
/// `PAM_BINARY_PROMPT` (a module would read a null response as an empty answer), styles of
/// other implementations, and numbers not known at all.
///
/// # Safety
/// Called by libpam with `num_msg` messages and a place for the responses.
unsafe extern "C" fn conversation(
    num_msg: c_int,
    msg: *mut *const PamMessage,
    resp: *mut *mut PamResponse,
    _appdata: *mut c_void,
) -> c_int {
    if num_msg <= 0 || msg.is_null() || resp.is_null() {
        return PAM_CONV_ERR;
    }
    for i in 0..num_msg as usize {
        // SAFETY: libpam passes `num_msg` valid message pointers (Linux-PAM's layout: an array
        // of pointers), each to a message it owns for the call.
        let style = unsafe { (**msg.add(i)).msg_style };
        if style != PAM_ERROR_MSG && style != PAM_TEXT_INFO {
            return PAM_CONV_ERR;
        }
    }
    // No answers: libpam accepts a null response array for display-only messages.
    // SAFETY: `resp` was checked non-null; libpam gave it to be written.
    unsafe { *resp = ptr::null_mut() };
    PAM_SUCCESS
}

static CONVERSATION: PamConv = PamConv {
    conv: Some(conversation),
    appdata_ptr: ptr::null_mut(),
};

// SAFETY: the static holds a function pointer and a null pointer, never written: sharing it
// between threads can't race.
unsafe impl Sync for PamConv {}

/// A PAM step that failed: which, libpam's code, and its message (`pam_strerror`), which is what
/// Debian logs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PamError {
    pub step: &'static str,
    pub code: i32,
    pub message: String,
}

impl std::fmt::Display for PamError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.step, self.message)
    }
}

/// A started PAM transaction for one job. Dropping it deletes credentials still established
/// and ends it (`pam_end`) without closing a session; [`Pam::close`] closes what was opened
/// first.
#[derive(Debug)]
pub struct Pam {
    handle: *mut PamHandle,
    session_open: bool,
    credentials: bool,
    last: c_int,
}

impl Pam {
    /// `pam_start(service, user)`, reading the service from `confdir` when given (else
    /// /etc/pam.d), then the tty item Debian sets (`cron`).
    pub fn start(service: &CStr, user: &[u8], confdir: Option<&Path>) -> Result<Pam, PamError> {
        let user = CString::new(user).map_err(|_| PamError {
            step: "pam_start",
            code: -1,
            message: "user name with a NUL byte".into(),
        })?;
        let confdir = confdir
            .map(|d| CString::new(d.as_os_str().as_encoded_bytes()))
            .transpose()
            .map_err(|_| PamError {
                step: "pam_start",
                code: -1,
                message: "PAM directory with a NUL byte".into(),
            })?;
        let mut handle: *mut PamHandle = ptr::null_mut();
        // SAFETY: every pointer is valid for the call (NUL-terminated strings we own, the
        // 'static conversation, a place for the handle); libpam copies the strings and the
        // conversation.
        let code = unsafe {
            match &confdir {
                Some(dir) => pam_start_confdir(
                    service.as_ptr(),
                    user.as_ptr(),
                    &CONVERSATION,
                    dir.as_ptr(),
                    &mut handle,
                ),
                None => pam_start(service.as_ptr(), user.as_ptr(), &CONVERSATION, &mut handle),
            }
        };
        if code != PAM_SUCCESS || handle.is_null() {
            let error = PamError {
                step: "pam_start",
                code,
                message: message_of(handle, code),
            };
            if !handle.is_null() {
                // SAFETY: a handle pam_start returned, ended once.
                unsafe { pam_end(handle, code) };
            }
            return Err(error);
        }
        let mut pam = Pam {
            handle,
            session_open: false,
            credentials: false,
            last: PAM_SUCCESS,
        };
        // SAFETY: a live handle and a NUL-terminated 'static string, which libpam copies.
        let code = unsafe { pam_set_item(pam.handle, PAM_TTY, c"cron".as_ptr().cast()) };
        pam.check("pam_set_item", code)?;
        Ok(pam)
    }

    /// `pam_acct_mgmt(PAM_SILENT)`: may this user run something now (expiry, access rules)?
    pub fn account(&mut self) -> Result<(), PamError> {
        // SAFETY: a live handle.
        let code = unsafe { pam_acct_mgmt(self.handle, PAM_SILENT) };
        self.check("pam_acct_mgmt", code)
    }

    /// `pam_setcred(PAM_ESTABLISH_CRED | PAM_SILENT)`.
    pub fn establish_credentials(&mut self) -> Result<(), PamError> {
        // SAFETY: a live handle.
        let code = unsafe { pam_setcred(self.handle, PAM_ESTABLISH_CRED | PAM_SILENT) };
        self.check("pam_setcred", code)?;
        self.credentials = true;
        Ok(())
    }

    /// `pam_open_session(PAM_SILENT)`: limits, loginuid, the environment modules.
    pub fn open_session(&mut self) -> Result<(), PamError> {
        // SAFETY: a live handle.
        let code = unsafe { pam_open_session(self.handle, PAM_SILENT) };
        self.check("pam_open_session", code)?;
        self.session_open = true;
        Ok(())
    }

    /// The PAM environment (`pam_getenvlist`), as `NAME=value` pairs.
    pub fn environment(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        // SAFETY: a live handle; the list and its strings are ours to free (pam_getenvlist(3)).
        let list = unsafe { pam_getenvlist(self.handle) };
        if list.is_null() {
            return out;
        }
        let mut i = 0;
        loop {
            // SAFETY: the list is a NULL-terminated array of pointers; `i` stops at the NULL.
            let item = unsafe { *list.add(i) };
            if item.is_null() {
                break;
            }
            // SAFETY: each item is a NUL-terminated string libpam allocated for us.
            let bytes = unsafe { CStr::from_ptr(item) }.to_bytes();
            if let Some(eq) = bytes.iter().position(|&b| b == b'=') {
                out.push((bytes[..eq].to_vec(), bytes[eq + 1..].to_vec()));
            }
            // SAFETY: allocated with malloc by libpam, freed once, not used after.
            unsafe { libc::free(item.cast()) };
            i += 1;
        }
        // SAFETY: the array itself, malloc'ed by libpam, freed once.
        unsafe { libc::free(list.cast()) };
        out
    }

    /// Closes the session, then deletes the credentials (each if it was established; the
    /// session first, as it was opened with them), ends the transaction. Returns the close's
    /// error, if any (nothing more can be done about it); the credentials are deleted anyway.
    pub fn close(mut self) -> Result<(), PamError> {
        let mut result = Ok(());
        if self.session_open {
            // SAFETY: a live handle.
            let code = unsafe { pam_close_session(self.handle, PAM_SILENT) };
            self.session_open = false;
            result = self.check("pam_close_session", code);
        }
        self.delete_credentials();
        result
    }

    /// `pam_setcred(PAM_DELETE_CRED)` if credentials were established and not deleted yet. Its
    /// own failure is not reported: there is nothing left to do about it.
    fn delete_credentials(&mut self) {
        if self.credentials {
            // SAFETY: a live handle.
            unsafe { pam_setcred(self.handle, PAM_DELETE_CRED | PAM_SILENT) };
            self.credentials = false;
        }
    }

    fn check(&mut self, step: &'static str, code: c_int) -> Result<(), PamError> {
        self.last = code;
        if code == PAM_SUCCESS {
            return Ok(());
        }
        Err(PamError {
            step,
            code,
            message: message_of(self.handle, code),
        })
    }
}

impl Drop for Pam {
    fn drop(&mut self) {
        // A transaction given up after `establish_credentials` (the session did not open) does
        // not leave them behind.
        self.delete_credentials();
        // SAFETY: the handle is live (it is ended only here), and ended once.
        unsafe { pam_end(self.handle, self.last) };
    }
}

/// What [`preload`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preload {
    /// The modules are loaded in this process and stay: `modules` of them. `threads` is this
    /// process's thread count afterwards: 1 unless a module started a thread here although it
    /// did not in the trial (it can't be taken back: see [`preload`]).
    Kept { modules: usize, threads: usize },
    /// Not loaded here: loading them started threads (`threads` in all) in a trial child.
    Threaded { threads: usize },
}

/// Loads the modules of `service` into this single-threaded process and keeps them loaded, so
/// that the job children forked later find them mapped and relocated: their own `pam_start`
/// then costs a reference count, not an `open`, `mmap` and symbol relocation per module and per
/// library they need. A transaction is started (which reads the service and `dlopen`s its
/// modules: their ELF constructors, and their libraries', run in this process, though no
/// `pam_sm_*` function is called), each `pam_*.so` then mapped gets one more reference of ours,
/// and the transaction ends: no PAM handle outlives this call, so none is shared across a fork.
/// A module replaced on disk later (a package upgrade) is picked up at the daemon's next start,
/// as any library the daemon has loaded.
///
/// A constructor may start a thread, and a process with two threads may not fork the way the
/// daemon does (`fork_single_threaded` refuses). Once a thread runs, loading can't be undone
/// (unloading its code under it would crash the process), so the load is first tried in a
/// child forked for it, which reports its thread count and exits: only if it had one thread is
/// the stack loaded here, and [`Preload::Threaded`] otherwise (the jobs then load it
/// themselves). A constructor that starts a thread in the daemon but did not in the trial (it
/// decides on something that changed in between) is reported in [`Preload::Kept`]'s `threads`.
pub fn preload(service: &CStr, confdir: Option<&Path>) -> Result<Preload, PamError> {
    let threads = threads_when_loaded(service, confdir)?;
    if threads > 1 {
        return Ok(Preload::Threaded { threads });
    }
    let modules = keep_loaded(service, confdir)?;
    let threads = super::process::thread_count().unwrap_or(1);
    Ok(Preload::Kept { modules, threads })
}

/// The load of [`preload`], in this process.
fn keep_loaded(service: &CStr, confdir: Option<&Path>) -> Result<usize, PamError> {
    let pam = Pam::start(service, b"root", confdir)?;
    let mut kept = 0;
    for path in loaded_objects() {
        let is_module = path
            .rsplit(|&b| b == b'/')
            .next()
            .is_some_and(|name| name.starts_with(b"pam_") && name.ends_with(b".so"));
        if !is_module {
            continue;
        }
        let Ok(path) = CString::new(path) else {
            continue;
        };
        // SAFETY: a NUL-terminated path; RTLD_NOLOAD only takes a reference to an object that
        // is already loaded (libpam loaded it), running no initialiser. The handle is never
        // closed on purpose: that reference is what keeps the module mapped.
        let handle = unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_NOW | libc::RTLD_NOLOAD) };
        kept += usize::from(!handle.is_null());
    }
    drop(pam);
    Ok(kept)
}

/// The trial of [`preload`]: in a child forked for it, starts a transaction of `service` (which
/// loads its modules) and reads the child's thread count then; the child sends it, or
/// `pam_start`'s error, through a pipe and exits. The count is 1 when /proc can't be read (as
/// `fork_single_threaded` counts it).
fn threads_when_loaded(service: &CStr, confdir: Option<&Path>) -> Result<usize, PamError> {
    use super::process;
    use super::spawn::{self, Forked};
    use std::io::{Read, Write};

    let failed = |step: &'static str, e: std::io::Error| PamError {
        step,
        code: -1,
        message: format!("trial load: {e}"),
    };
    let (read_end, write_end) = super::pipe::pipe().map_err(|e| failed("pipe", e))?;
    match spawn::fork_single_threaded().map_err(|e| failed("fork", e))? {
        Forked::Child => {
            drop(read_end);
            // The daemon's handlers write to its signal pipe: not from this child.
            super::signal::reset_in_child();
            let report = match Pam::start(service, b"root", confdir) {
                // The transaction is not ended: with a thread running module code, unloading
                // the module could crash this child before it reports; `_exit` is enough.
                Ok(pam) => {
                    std::mem::forget(pam);
                    format!("ok {}", process::thread_count().unwrap_or(1))
                }
                Err(e) => format!("error {} {}", e.code, e.message),
            };
            let mut pipe = std::fs::File::from(write_end);
            let code = i32::from(pipe.write_all(report.as_bytes()).is_err());
            process::exit_immediately(code)
        }
        Forked::Parent(pid) => {
            drop(write_end);
            let mut report = String::new();
            let read = std::fs::File::from(read_end)
                .take(4096)
                .read_to_string(&mut report);
            let exit = process::wait_for(pid);
            read.map_err(|e| failed("pipe", e))?;
            match exit {
                Ok(process::Exit::Code(0)) => {}
                Ok(other) => {
                    return Err(failed(
                        "fork",
                        std::io::Error::other(format!("the trial child ended with {other:?}")),
                    ));
                }
                Err(e) => return Err(failed("wait", e)),
            }
            parse_trial(&report)
        }
    }
}

/// What the trial child of [`threads_when_loaded`] sent: `ok THREADS` or `error CODE MESSAGE`.
fn parse_trial(report: &str) -> Result<usize, PamError> {
    let bad = || PamError {
        step: "pam_start",
        code: -1,
        message: format!("trial load: unreadable report {report:?}"),
    };
    if let Some(n) = report.strip_prefix("ok ") {
        return n.parse().map_err(|_| bad());
    }
    let rest = report.strip_prefix("error ").ok_or_else(bad)?;
    let (code, message) = rest.split_once(' ').ok_or_else(bad)?;
    Err(PamError {
        step: "pam_start",
        code: code.parse().map_err(|_| bad())?,
        message: message.to_string(),
    })
}

/// The paths of the shared objects mapped in this process.
fn loaded_objects() -> Vec<Vec<u8>> {
    unsafe extern "C" fn each(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut c_void,
    ) -> c_int {
        // SAFETY: dl_iterate_phdr passes a valid info for the call, and `data` is the Vec
        // given below, borrowed mutably for the iteration only.
        unsafe {
            let paths = &mut *data.cast::<Vec<Vec<u8>>>();
            let name = (*info).dlpi_name;
            if !name.is_null() {
                paths.push(CStr::from_ptr(name).to_bytes().to_vec());
            }
        }
        0
    }
    let mut paths: Vec<Vec<u8>> = Vec::new();
    // SAFETY: the callback only reads the info it is given and pushes into `paths`, which
    // outlives the call.
    unsafe { libc::dl_iterate_phdr(Some(each), (&raw mut paths).cast()) };
    paths
}

/// libpam's text for `code` (what Debian logs), or the number if it has none.
fn message_of(handle: *mut PamHandle, code: c_int) -> String {
    // SAFETY: pam_strerror accepts any handle (it ignores it in Linux-PAM) and returns a
    // static string or NULL.
    let text = unsafe { pam_strerror(handle, code) };
    if text.is_null() {
        return format!("PAM error {code}");
    }
    // SAFETY: a NUL-terminated static string from libpam.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A service file in a directory of its own, so the tests need no /etc/pam.d change.
    fn service(dir: &Path, name: &str, text: &str) {
        std::fs::write(dir.join(name), text).unwrap();
    }

    #[test]
    fn a_permitting_stack_opens_and_closes_a_session_and_gives_its_environment() {
        let dir = tempfile::tempdir().unwrap();
        service(
            dir.path(),
            "cron",
            "account required pam_permit.so\nauth required pam_permit.so\n\
             session required pam_permit.so\n",
        );
        let mut pam = Pam::start(c"cron", b"root", Some(dir.path())).unwrap();
        pam.account().unwrap();
        pam.establish_credentials().unwrap();
        pam.open_session().unwrap();
        assert!(pam.environment().is_empty());
        pam.close().unwrap();
    }

    #[test]
    fn preloaded_modules_stay_mapped_after_the_transaction_ends() {
        // pam_warn is used by no other test of this process, so it is mapped only if the
        // preload keeps it (tests run as threads of one process).
        let mapped = || {
            loaded_objects()
                .iter()
                .any(|p| p.ends_with(b"/pam_warn.so"))
        };
        assert!(!mapped(), "pam_warn.so is already loaded");
        let dir = tempfile::tempdir().unwrap();
        service(
            dir.path(),
            "cron",
            "account required pam_warn.so\naccount required pam_permit.so\n",
        );
        // The load itself: `preload` first tries it in a forked child, which the test
        // harness (threads) is refused; the daemon tests show that half.
        let kept = keep_loaded(c"cron", Some(dir.path())).unwrap();
        assert!(kept >= 2, "{kept} modules kept");
        assert!(mapped(), "pam_warn.so was unloaded with the transaction");
        // No service file: an error the daemon logs (the jobs will say the same), no crash.
        let none = tempfile::tempdir().unwrap();
        let err = keep_loaded(c"cron", Some(none.path())).unwrap_err();
        assert_eq!(err.step, "pam_start");
    }

    #[test]
    fn the_trial_childs_report_is_a_thread_count_or_pams_error() {
        assert_eq!(parse_trial("ok 1"), Ok(1));
        assert_eq!(parse_trial("ok 3"), Ok(3));
        let err = parse_trial("error 6 Critical error - immediate abort").unwrap_err();
        assert_eq!((err.step, err.code), ("pam_start", 6));
        assert_eq!(err.message, "Critical error - immediate abort");
        assert!(parse_trial("").is_err());
        assert!(parse_trial("ok many").is_err());
    }

    /// tests/support/pam_test_module.c built into `dir`: a module that writes each call it
    /// gets to its `log=` file, and fails its session with `fail_open`.
    fn test_module(dir: &Path) -> std::path::PathBuf {
        let so = dir.join("pam_crond_test.so");
        let status = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(&so)
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/support/pam_test_module.c"
            ))
            .status()
            .expect("run cc");
        assert!(status.success(), "cc failed");
        so
    }

    #[test]
    fn the_session_is_closed_before_its_credentials_are_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let module = test_module(dir.path());
        let calls = dir.path().join("calls");
        let with = format!("{} log={}", module.display(), calls.display());
        service(
            dir.path(),
            "cron",
            &format!("auth required {with}\nsession required {with}\n"),
        );
        let mut pam = Pam::start(c"cron", b"root", Some(dir.path())).unwrap();
        pam.establish_credentials().unwrap();
        pam.open_session().unwrap();
        pam.close().unwrap();
        assert_eq!(
            std::fs::read_to_string(&calls).unwrap(),
            "setcred establish\nopen_session\nclose_session\nsetcred delete\n"
        );
    }

    #[test]
    fn credentials_established_for_a_session_that_fails_to_open_are_deleted() {
        let dir = tempfile::tempdir().unwrap();
        let module = test_module(dir.path());
        let calls = dir.path().join("calls");
        let with = format!("{} log={}", module.display(), calls.display());
        service(
            dir.path(),
            "cron",
            &format!("auth required {with}\nsession required {with} fail_open\n"),
        );
        let mut pam = Pam::start(c"cron", b"root", Some(dir.path())).unwrap();
        pam.establish_credentials().unwrap();
        let err = pam.open_session().unwrap_err();
        assert_eq!(err.step, "pam_open_session");
        // As the job child gives up: the transaction is dropped.
        drop(pam);
        assert_eq!(
            std::fs::read_to_string(&calls).unwrap(),
            "setcred establish\nopen_session\nsetcred delete\n"
        );
    }

    #[test]
    fn a_binary_prompt_gets_a_conversation_error_and_messages_for_display_pass() {
        let ask = |style: c_int| {
            let message = PamMessage {
                msg_style: style,
                msg: c"a question".as_ptr(),
            };
            let mut messages = [&raw const message];
            let mut responses: *mut PamResponse = ptr::null_mut();
            // SAFETY: one valid message and a place for the responses, as libpam passes them;
            // both outlive the call.
            let code = unsafe {
                conversation(
                    1,
                    messages.as_mut_ptr(),
                    &raw mut responses,
                    ptr::null_mut(),
                )
            };
            (code, responses.is_null())
        };
        // Linux-PAM's PAM_BINARY_PROMPT: it wants an answer, which a job has none to give.
        assert_eq!(ask(7), (PAM_CONV_ERR, true));
        assert_eq!(ask(1), (PAM_CONV_ERR, true), "PAM_PROMPT_ECHO_OFF");
        assert_eq!(ask(2), (PAM_CONV_ERR, true), "PAM_PROMPT_ECHO_ON");
        assert_eq!(
            ask(5),
            (PAM_CONV_ERR, true),
            "PAM_RADIO_TYPE (other systems)"
        );
        assert_eq!(ask(PAM_ERROR_MSG), (PAM_SUCCESS, true));
        assert_eq!(ask(PAM_TEXT_INFO), (PAM_SUCCESS, true));
    }

    #[test]
    fn a_refusing_account_stack_says_why_in_pams_words() {
        let dir = tempfile::tempdir().unwrap();
        service(dir.path(), "cron", "account required pam_deny.so\n");
        let mut pam = Pam::start(c"cron", b"root", Some(dir.path())).unwrap();
        let err = pam.account().unwrap_err();
        assert_eq!(err.step, "pam_acct_mgmt");
        // pam_deny answers PAM_AUTH_ERR in every stack.
        assert_eq!(err.message, "Authentication failure");
    }

    #[test]
    fn the_environment_modules_variables_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let env = dir.path().join("environment");
        std::fs::write(&env, "SITE_PROXY=http://proxy:3128\nLANG=C.UTF-8\n").unwrap();
        service(
            dir.path(),
            "cron",
            &format!(
                "session required pam_env.so conffile=/dev/null envfile={}\n",
                env.display()
            ),
        );
        let mut pam = Pam::start(c"cron", b"root", Some(dir.path())).unwrap();
        pam.open_session().unwrap();
        let mut got = pam.environment();
        got.sort();
        assert_eq!(
            got,
            vec![
                (b"LANG".to_vec(), b"C.UTF-8".to_vec()),
                (b"SITE_PROXY".to_vec(), b"http://proxy:3128".to_vec()),
            ]
        );
        pam.close().unwrap();
    }
}
