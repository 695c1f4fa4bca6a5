//! Crontab mode: reads each file, parses it with the daemon's parser, and prints `TIME USER
//! COMMAND` for the next runs of every entry, sorted by time; an entry under the extensions'
//! variables shows them between the user and the command, `[overlap=skip timeout=1m30s]`, and a
//! cluster entry its cluster and id, `[cluster=nightly id=0123456789abcdef]`. An entry with `H`
//! shows the five fields it resolves to first, `[H: 37 4 * * *]`.
//!
//! Must not stop at a file's errors (they are printed, the good entries still are, and the exit
//! status is 2), nor print without bound (at most [`MAX_LINES`] lines).
//!
//! With `--system`, a file in a directory named `cron.d` whose name crond does not read there
//! (`foo.dpkg-old`, `.placeholder`: the daemon's own rule, [`names::cron_d_name_ok`], without
//! crond's `-l`) is skipped and said so on stderr: `cronnext --system /etc/cron.d/*` shows
//! what the daemon runs. Notes about an entry (`@reboot`, `@every`) name it as `FILE:LINE`.

use std::io::Write;
use std::path::{Path, PathBuf};

use jiff::Timestamp;

use super::Failure;
use crate::cluster::entry_id::{EntryKey, Identity, LocalId, LocalIds, entry_key};
use crate::crontab::policy::Policy;
use crate::crontab::{self, Format, Limits, ParseOptions, header};
use crate::database::names;
use crate::schedule::{Schedule, When, Zone};
use crate::sys::user::{Uid, User};

/// Most lines printed in crontab mode with `--until`, so that `* * * * *` over a decade ends.
const MAX_LINES: usize = 1_000_000;

/// One line of output: a run of one entry.
struct Run<'a> {
    at: Timestamp,
    /// Its entry's id, as `cronctl list` shows it.
    id: LocalId,
    user: &'a [u8],
    /// The schedule of an entry with `H`, whose fields it shows as they resolve.
    hashed: Option<&'a Schedule>,
    /// `CRON_OVERLAP`, `CRON_MISSED`, `CRON_TIMEOUT` when not the defaults.
    policy: Policy,
    /// `CRON_CLUSTER`'s name and the entry's id in the cluster (`cronctl pause` takes it).
    cluster: Option<(&'a [u8], EntryKey)>,
    command: &'a [u8],
}

/// What crontab mode is asked for, the command line read against the context.
pub(super) struct Request<'a> {
    pub files: &'a [PathBuf],
    /// [`Format::System`] with `--system` (a user field on each line).
    pub format: Format,
    /// `--tz` or the local zone: of the printed times, and of the entries without `CRON_TZ`.
    pub zone: &'a Zone,
    /// Runs strictly after this instant (`--after`, or now).
    pub after: Timestamp,
    /// `--until`: every run up to this instant.
    pub until: Option<Timestamp>,
    /// `--count`: runs per entry (default 1, or no limit with `until`).
    pub count: Option<u64>,
    /// Seed for cronie's `~` ([`crate::schedule::host_seed`]).
    pub seed: u64,
    /// `--id`: each run shows its entry's id.
    pub id: bool,
}

/// Whether crond reads `path` as a system crontab: a file in a directory named `cron.d` must
/// have a name the daemon accepts there; any other path (`/etc/crontab`, a file being tried
/// out) is read as given.
fn read_by_crond(path: &Path) -> bool {
    let Some(name) = path.file_name() else {
        return true;
    };
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    // The directory's own name, after `.`, `..` and symbolic links (`cd /etc/cron.d; cronnext
    // --system *`); the file itself may be a link anywhere.
    let in_cron_d = std::fs::canonicalize(dir)
        .ok()
        .is_some_and(|dir| dir.file_name().is_some_and(|d| d == "cron.d"));
    !in_cron_d || names::cron_d_name_ok(name.as_encoded_bytes(), false)
}

/// One file read and parsed: the owner of its entries (its name, for a user's crontab), the name
/// it is shown by, and what was loaded.
struct Loaded {
    owner: Vec<u8>,
    shown: String,
    /// The file as crond's logs name it (`crontabs/alice`), which its entries' ids are made of.
    logged: String,
    tab: crontab::Crontab,
}

/// Prints the runs `request` asks for; returns the exit status (2 if a file has errors).
pub(super) fn run(
    request: &Request<'_>,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<u8, Failure> {
    let mut status = 0;
    let mut tabs = Vec::new();
    for path in request.files {
        if request.format == Format::System && !read_by_crond(path) {
            writeln!(
                err,
                "cronnext: {}: skipped: crond does not read this file ({})",
                path.display(),
                names::CRON_D_NAME_RULE
            )?;
            continue;
        }
        let loaded = load(path, request, err)?;
        if loaded.tab.has_errors() {
            status = 2;
        }
        tabs.push(loaded);
    }
    let mut runs: Vec<Run<'_>> = Vec::new();
    for loaded in &tabs {
        push_runs(loaded, request, &mut runs, err)?;
    }
    runs.sort_by_key(|r| r.at);
    for run in &runs {
        print_run(run, request, out)?;
    }
    Ok(status)
}

/// Reads and parses one file as crond would, and prints its diagnostics to `err`.
fn load(path: &Path, request: &Request<'_>, err: &mut dyn Write) -> Result<Loaded, Failure> {
    let text =
        std::fs::read(path).map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
    let owner = std::fs::metadata(path)
        .map(|meta| user_of_file(Uid(std::os::unix::fs::MetadataExt::uid(&meta))))
        .map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))?;
    let logged = logged_name(path, request.format, &owner);
    let mut zones = |name: &str| Zone::get(name);
    let mut options = ParseOptions {
        format: request.format,
        limits: Limits::SYSTEM,
        seed: request.seed,
        // The entries' `H` values are hashed with the file's name, as crond's are.
        file: &logged,
        zones: &mut zones,
        // cronnext shows what a file says; who may write '-' is the daemon's check.
        privileged: true,
    };
    // A user crontab installed by `crontab` is numbered as `crontab -l` shows it, as crond
    // numbers it: without the header `crontab` wrote at its top.
    let text = match request.format {
        Format::User => header::strip_header(&text),
        Format::System => &text[..],
    };
    let tab = crontab::parse(text, &mut options);
    let shown = path.display().to_string();
    for d in &tab.warnings {
        writeln!(err, "{} (warning)", d.in_file(&shown))?;
    }
    for d in &tab.errors {
        writeln!(err, "{}", d.in_file(&shown))?;
    }
    if let Some(more) = tab.not_shown_line(&shown) {
        writeln!(err, "{more}")?;
    }
    Ok(Loaded {
        owner,
        shown,
        logged,
        tab,
    })
}

/// The name crond's logs give the file at `path`: a user's crontab named for the user it runs
/// as, as the spool's are (`/var/spool/cron/crontabs/alice`), by its directory's name and its
/// own (`crontabs/alice`); any other file by its path.
fn logged_name(path: &Path, format: Format, owner: &[u8]) -> String {
    let dir = path.parent().and_then(Path::file_name);
    match (format, dir, path.file_name()) {
        (Format::User, Some(dir), Some(name)) if name.as_encoded_bytes() == owner => {
            format!("{}/{}", dir.to_string_lossy(), name.to_string_lossy())
        }
        _ => path.display().to_string(),
    }
}

/// Whom crond runs a user-format file's entries as, by the file's owner, so that an entry's
/// cluster id here is the daemon's: a crontab in the spool is refused unless its owner is the
/// user it is named for, and runs as that owner; a `--crontab` file (owned by root or by the
/// daemon's user) runs as the daemon's own user, taken here to be the one running cronnext. A
/// uid passwd does not know is named as the daemon names its own (LOGNAME or USER, else the
/// number).
fn user_of_file(owner: Uid) -> Vec<u8> {
    let me = crate::sys::user::effective_uid();
    let uid = if owner == Uid::ROOT { me } else { owner };
    if let Ok(Some(found)) = User::resolve_uid(uid) {
        return found.name;
    }
    if uid != me {
        return uid.0.to_string().into_bytes();
    }
    let var = |name: &str| std::env::var_os(name).map(std::ffi::OsString::into_encoded_bytes);
    let logname = var("LOGNAME").or_else(|| var("USER"));
    crate::job::env::user_without_passwd(
        uid,
        crate::sys::user::effective_gid(),
        logname.as_deref(),
        None,
    )
    .name
}

/// Adds the runs of each entry of one file that `request` asks for to `runs` (never past
/// [`MAX_LINES`] in all); an `@reboot` or `@every` entry, which has no times to show, is
/// named on `err` instead.
fn push_runs<'a>(
    loaded: &'a Loaded,
    request: &Request<'_>,
    runs: &mut Vec<Run<'a>>,
    err: &mut dyn Write,
) -> Result<(), Failure> {
    let Loaded {
        owner,
        shown,
        logged,
        tab,
    } = loaded;
    let mut ids = LocalIds::default();
    let per_entry = request
        .count
        .unwrap_or(if request.until.is_some() { u64::MAX } else { 1 });
    for (entry, command) in tab.entries.iter().zip(tab.commands()) {
        let user = entry.user.as_deref().unwrap_or(owner);
        let schedule: &Schedule = match &entry.when {
            When::Periodic(s) => s,
            // Counted as crond counts them (no schedule, no zone): each @every entry has an id
            // there too.
            When::Every(seconds) => {
                let identity = Identity {
                    schedule: &Schedule::never(),
                    zone: None,
                    user,
                    command,
                };
                ids.next(&identity, Some(*seconds), logged, entry.env.get(b"CRON_ID"));
                writeln!(
                    err,
                    "cronnext: {shown}:{}: {} runs at crond's start plus each interval",
                    entry.line, entry.when
                )?;
                continue;
            }
            When::Reboot => {
                writeln!(
                    err,
                    "cronnext: {shown}:{}: @reboot runs once when crond starts at boot",
                    entry.line
                )?;
                continue;
            }
        };
        let id = ids.next(
            &Identity {
                schedule,
                zone: entry.zone.as_ref().map(Zone::name),
                user,
                command,
            },
            None,
            logged,
            entry.env.get(b"CRON_ID"),
        );
        let entry_zone = entry.zone.as_ref().unwrap_or(request.zone);
        let cluster = cluster_of(entry, schedule, user, command);
        let times = times(
            schedule,
            entry_zone,
            request,
            per_entry,
            MAX_LINES - runs.len(),
        );
        runs.extend(times.into_iter().map(|at| Run {
            at,
            id,
            user,
            hashed: entry.hashed.then_some(schedule),
            policy: entry.env.policy(),
            cluster,
            command,
        }));
    }
    Ok(())
}

/// `CRON_CLUSTER`'s name and the entry's id in the cluster, for an entry the cluster runs.
fn cluster_of<'a>(
    entry: &'a crate::crontab::Entry,
    schedule: &Schedule,
    user: &[u8],
    command: &[u8],
) -> Option<(&'a [u8], EntryKey)> {
    let name = (entry.env.get(b"CRON_CLUSTER")).filter(|_| entry.env.policy().clustered)?;
    let id = entry_key(schedule, entry.zone.as_ref().map(Zone::name), user, command);
    Some((name, id))
}

/// The next times of `schedule` in `zone` that `request` asks for: after its start, not past
/// its end, at most `per_entry` of them and at most `room`.
fn times(
    schedule: &Schedule,
    zone: &Zone,
    request: &Request<'_>,
    per_entry: u64,
    room: usize,
) -> Vec<Timestamp> {
    let mut out = Vec::new();
    let mut at = request.after;
    while (out.len() as u64) < per_entry && out.len() < room {
        let Some(next) = schedule.next_after(at, zone) else {
            break;
        };
        if request.until.is_some_and(|u| next > u) {
            break;
        }
        out.push(next);
        at = next;
    }
    out
}

/// Prints one run: `TIME [ID] USER [H: FIELDS] [POLICY] COMMAND`, the time in the request's
/// zone.
fn print_run(run: &Run<'_>, request: &Request<'_>, out: &mut dyn Write) -> Result<(), Failure> {
    write!(out, "{} ", request.zone.format_rfc3339(run.at))?;
    if request.id {
        write!(out, "{} ", run.id)?;
    }
    out.write_all(run.user)?;
    out.write_all(b" ")?;
    if let Some(schedule) = run.hashed {
        write!(out, "[H: {schedule}] ")?;
    }
    match run.cluster {
        Some((name, id)) => {
            let mut policy = run.policy;
            policy.clustered = false;
            out.write_all(b"[cluster=")?;
            out.write_all(name)?;
            write!(out, " id={id}")?;
            if !policy.is_default() {
                write!(out, " {policy}")?;
            }
            out.write_all(b"] ")?;
        }
        None if !run.policy.is_default() => write!(out, "[{}] ", run.policy)?,
        None => {}
    }
    out.write_all(run.command)?;
    out.write_all(b"\n")?;
    Ok(())
}
