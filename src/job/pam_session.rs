//! The job's PAM session, as Debian's job child opens it (do_command.c): as root, before any
//! process of the job is started, service `cron` for the job's user: the account check (an expired or refused
//! account's job does not run; the refusal is logged in PAM's words, as Debian logs it), the
//! user's groups on this process (Debian's and cronie's `initgroups`), the credentials (a
//! module such as pam_group adds groups to this process's there: the job's processes take this
//! process's groups from then on, not the list computed before the fork), the session
//! (pam_limits' limits, pam_loginuid's audit uid, pam_env's variables). The job then runs from this same process, which stays root: each of its processes
//! becomes the user between its clone and its exec and closes every descriptor above stderr
//! first (the modules ran as root here and may have opened some without close-on-exec)
//! (`sys::as_user`); after the shell this process closes the session, then deletes the
//! credentials, and ends. So the per-job cost of PAM is the job child's, never the daemon's,
//! and no second copy of the daemon is made for it.
//!
//! A module that starts a thread when it is loaded (its ELF constructor) is not loaded in the
//! daemon (`preload_pam`): the daemon stays single-threaded. The job child loads it; the shell's
//! clone shares memory and makes only raw system calls, which is sound with that thread there
//! (as glibc's posix_spawn is); the stdin writer's fork makes only async-signal-safe calls.

#[cfg(feature = "pam")]
use super::run_job;
use super::user_lookup::Identity;
use super::{ChildSetup, JobSpec, PamSetup};
#[cfg(feature = "pam")]
use crate::log::{Level, LogLine};

/// Runs the job inside a PAM session; returns the job child's exit status.
#[cfg(feature = "pam")]
pub(super) fn run_in_session(
    spec: &JobSpec,
    setup: &ChildSetup,
    identity: &Identity,
    pam: &PamSetup,
    first: bool,
) -> i32 {
    let log = setup.log;
    let (session, identity) = match open(identity, pam) {
        Ok(opened) => opened,
        Err(NotOpened::Pam(e)) => {
            // Debian logs pam_strerror's text alone (`Authentication failure`), and pam_unix
            // logs its own line with the user's name, to syslog. Where that line never arrives
            // (stderr in a container, the JSON log) ours names the user and the entry.
            let reason = format!("PAM refused the session: {}", e.message);
            log.line(Level::Error, &refusal(spec, setup, e.message));
            setup.notify_not_started(spec, identity, crate::history::Reason::Refused, &reason);
            setup.tell_not_started(crate::history::Reason::Refused, reason);
            return 1;
        }
        Err(NotOpened::Groups(e)) => {
            let said = format!("can't take the user's groups, job not run: {e}");
            log.error(spec.user(), "ERROR", &said);
            let words = format!("can't take the user's groups: {e}");
            setup.tell_not_started(crate::history::Reason::NotStarted, words);
            return 1;
        }
    };
    let env = session.environment();
    let code = run_job(spec, setup, &identity, env, first);
    if let Err(e) = session.close() {
        log.line(Level::Error, &refusal(spec, setup, e.message));
    }
    code
}

/// Why the session was not opened.
#[cfg(feature = "pam")]
enum NotOpened {
    /// A PAM step failed (the account refused, a module's error).
    Pam(crate::sys::pam::PamError),
    /// This process's groups could not be set or read.
    Groups(std::io::Error),
}

/// Opens `identity`'s session, in Debian's and cronie's order: the account check, the user's
/// groups on this process (so a group a module adds is added to the user's, and root's own are
/// gone before any module runs), the credentials, then the session. Returns the session and the
/// identity the job's processes take: with this process's groups as the credentials left them.
#[cfg(feature = "pam")]
fn open(
    identity: &Identity,
    pam: &PamSetup,
) -> Result<(crate::sys::pam::Pam, Identity), NotOpened> {
    let confdir = pam.confdir.as_deref();
    let mut session =
        crate::sys::pam::Pam::start(crate::paths::PAM_SERVICE, &identity.user.name, confdir)
            .map_err(NotOpened::Pam)?;
    session.account().map_err(NotOpened::Pam)?;
    identity.take_groups_here().map_err(NotOpened::Groups)?;
    session.establish_credentials().map_err(NotOpened::Pam)?;
    let identity = identity
        .with_groups_of_this_process()
        .map_err(NotOpened::Groups)?;
    session.open_session().map_err(NotOpened::Pam)?;
    Ok((session, identity))
}

/// PAM's text as Debian logs it, bare, naming the job's user and entry off syslog.
#[cfg(feature = "pam")]
fn refusal(spec: &JobSpec, setup: &ChildSetup, message: impl Into<Vec<u8>>) -> LogLine {
    LogLine::bare(message).naming(spec.user(), setup.log_fields(spec, None))
}

/// In the daemon, before any job: loads the modules of the PAM service (`cron`) once (see
/// [`crate::sys::pam::preload`]), so that a job child's `pam_start` does not load them again.
/// Logged: how many modules are kept, or why none (the jobs then load them, or fail to start
/// their session, and say so).
#[cfg(feature = "pam")]
pub fn preload_pam(pam: &PamSetup, log: crate::log::Log) {
    use crate::sys::pam::Preload;
    match crate::sys::pam::preload(crate::paths::PAM_SERVICE, pam.confdir.as_deref()) {
        Ok(Preload::Kept {
            modules,
            threads: 1,
        }) => log.daemon(
            crate::log::Level::Info,
            "INFO",
            &format!(
                "PAM service cron: {} loaded",
                crate::log::line::count(modules as u64, "module", "modules")
            ),
        ),
        // A module started a thread here although it did not in the trial: nothing can take
        // it back, and no job can be forked. Said as plainly as possible.
        Ok(Preload::Kept { threads, .. }) => log.daemon(
            crate::log::Level::Error,
            "ERROR",
            &format!(
                "PAM service cron: loading its modules left the daemon with {threads} threads; \
                 no job can start (restart crond, or remove the module that starts a thread)"
            ),
        ),
        Ok(Preload::Threaded { threads }) => log.daemon(
            crate::log::Level::Warning,
            "WARNING",
            &format!(
                "PAM service cron not preloaded: loading its modules starts threads ({threads} \
                 in all), and the daemon must stay single-threaded; each job loads them itself"
            ),
        ),
        Err(e) => log.daemon(
            crate::log::Level::Error,
            "WARNING",
            &format!("PAM service cron not loaded: {e}"),
        ),
    }
}

#[cfg(not(feature = "pam"))]
pub fn preload_pam(_pam: &PamSetup, _log: crate::log::Log) {}

/// Without PAM in the build the daemon never sets [`ChildSetup::pam`]; should it, the job does
/// not run (a session that was asked for is never skipped silently).
#[cfg(not(feature = "pam"))]
pub(super) fn run_in_session(
    spec: &JobSpec,
    setup: &ChildSetup,
    _identity: &Identity,
    _pam: &PamSetup,
    _first: bool,
) -> i32 {
    setup.log.error(
        spec.user(),
        "ERROR",
        "a PAM session was asked for but crond was built without PAM; job not run",
    );
    setup.tell_not_started(
        crate::history::Reason::NotStarted,
        "a PAM session was asked for but crond was built without PAM",
    );
    1
}
