//! The control socket's protocol (`cronctl list`, `cronctl run`, `cronctl status`; crond.8
//! "CONTROL SOCKET"): what a request line says ([`parse_request`]), who may see and run what
//! ([`may_see`]), and the answers ([`render()`]). Pure: the daemon reads the socket, the peer's
//! credentials and the clock, and hands this module a snapshot of what it knows.
//!
//! One request line (at most [`MAX_REQUEST`] bytes, ending `\n`), one answer, then the daemon
//! closes the connection:
//!
//! ```text
//! list [--wide|--json] [PATTERN]  every entry the asker may see (PATTERN: part of FILE:LINE
//!                             or user), sorted by next run; `--wide`: every column
//! status [--json]             the daemon's version, uptime, entries, jobs running, clock, zone
//! run [--wait] FILE:LINE|ID   one run of that entry now, as the scheduler would start it
//! pause FILE:LINE|ID          its scheduled runs not started from now on, until `resume`
//! resume FILE:LINE|ID         (kept across reloads and restarts)
//! show [--json] FILE:LINE|ID  one entry whole: its line, environment, next and last runs,
//!                             and why it does not run, if it does not
//! history [...] [ENTRY]       recorded outcomes, newest first ([`asked`]: answered by the
//! logs [--raw] ENTRY [RUN]    history writer, which the connection is passed to)
//! ```
//!
//! The answer's first line is `OK` or `ERROR message`; the rest is a table (the default) or one
//! JSON object per line (`--json`). A `run` is answered once its job child has said whether the
//! job started as its user ([`report`]); with `--wait`, once the job has ended, and the first
//! line is then `EXIT status` (the status a shell gives it: 128 plus a signal's number). An answer is at most [`MAX_ANSWER_ROOT`] bytes for root and
//! [`MAX_ANSWER_USER`] for other users: a list longer than that ends with a line that says how
//! many entries were left out.
//!
//! Who sees what: root (uid 0) every entry; any other user the entries that run as that user —
//! a user's own crontab (whose uid was checked at load) and the lines of system files whose
//! user field is that user's name. Nothing else is shown, counted, run, paused or resumed for
//! them: an entry they may not see is "no such entry" to them.
//!
//! The client, `cronctl` (a package of its own), uses the public part: where the private
//! socket is ([`private_path`]), the bound of an answer ([`MAX_ANSWER_ROOT`]), and what `run`,
//! `show`, `pause` and `resume` take ([`parse_target`]), checked before it connects. The rest
//! is the daemon's.

pub(crate) mod asked;
mod render;
pub(crate) mod report;
mod show;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) use render::render;

use crate::cluster::entry_id::{EntryKey, LOCAL_ID_DIGITS, LocalId};
use crate::crontab::policy::Policy;
use crate::metrics::LastRun;
use crate::schedule::Zone;

/// The private socket beside the shared one at `path` (mode 0600, for root and the daemon's
/// own user): `.private` before its extension (`/run/crond.sock` → `/run/crond.private.sock`),
/// or at its end when it has none.
pub fn private_path(path: &Path) -> PathBuf {
    let stem = path.file_stem().unwrap_or_default();
    let mut name = stem.to_os_string();
    name.push(".private");
    if let Some(extension) = path.extension() {
        name.push(".");
        name.push(extension);
    }
    path.with_file_name(name)
}

/// The longest request line read; a longer one is answered `ERROR` and closed.
pub(crate) const MAX_REQUEST: usize = 4096;

/// The most bytes of an answer to root.
pub const MAX_ANSWER_ROOT: usize = 8 << 20;

/// The fewest bytes an entry takes in a `list` answer (a table row; a JSON object takes more):
/// a snapshot holds at most an answer's bound over this many entries, and counts the rest.
pub(crate) const MIN_ENTRY_BYTES: usize = 200;

/// The most bytes of an answer to any other user.
pub(crate) const MAX_ANSWER_USER: usize = 1 << 20;

/// How an answer is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Table,
    /// One JSON object per line.
    Json,
}

/// Which entry a `run` names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `FILE:LINE`, as `list` and the JSON log's `entry` show it (`crontabs/alice:3`).
    Place { tab: String, line: u32 },
    /// The id `list` shows in its ID column, or a prefix of it: 4 to
    /// [`LOCAL_ID_DIGITS`] lower-case hex digits.
    Id(String),
}

/// What a client asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    List {
        format: Format,
        /// `--wide`: the table has every column, nothing cut.
        wide: bool,
        /// Only entries whose `FILE:LINE` or user contains it.
        pattern: Option<String>,
    },
    Status {
        format: Format,
    },
    Run {
        target: Target,
        /// `--wait`: answered when the job has ended.
        wait: bool,
    },
    Show {
        target: Target,
        format: Format,
    },
    /// `pause` (`pause: true`) or `resume`.
    Pause {
        target: Target,
        pause: bool,
    },
    /// Answered by the history writer, which the client's connection is passed to.
    History(asked::HistoryAsk),
    Logs(asked::LogsAsk),
}

/// Who is asking: the connection's credentials (`SO_PEERCRED`) and the name passwd gives the
/// uid now, when that name gives the uid back (`None`: no passwd entry, or a name that belongs
/// to another uid; such a user sees their own crontab's entries, and no system file's line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peer {
    pub uid: u32,
    pub pid: i32,
    pub name: Option<Vec<u8>>,
}

impl Peer {
    pub fn is_root(&self) -> bool {
        self.uid == 0
    }

    /// The most bytes an answer to this peer may have.
    pub fn max_answer(&self) -> usize {
        if self.is_root() {
            MAX_ANSWER_ROOT
        } else {
            MAX_ANSWER_USER
        }
    }

    /// `alice (uid 1000, pid 4242)`, as the log names who asked for a run.
    pub fn describe(&self) -> String {
        let name = self.name.as_deref().map_or_else(
            || "?".to_string(),
            |n| String::from_utf8_lossy(n).into_owned(),
        );
        format!("{name} (uid {}, pid {})", self.uid, self.pid)
    }
}

/// Whether `peer` may see and run an entry that runs as `user`; `checked_uid`: the uid its
/// crontab's ownership was checked for at load (a user's crontab, or a `--crontab` file: the
/// daemon's own uid), `None` for a system file's line. Root may see everything; a user the
/// entries that run as their uid: a crontab checked for that uid (whatever name passwd gives
/// it, or none), and the system files' lines whose user field is the peer's name — the name the
/// daemon sets in [`Peer::name`] only when it names the peer's uid both ways, since such a
/// line runs as whatever uid its name resolves to.
pub(crate) fn may_see(peer: &Peer, user: &[u8], checked_uid: Option<u32>) -> bool {
    if peer.is_root() {
        return true;
    }
    match checked_uid {
        Some(uid) => uid == peer.uid,
        None => peer.name.as_deref() == Some(user),
    }
}

/// Parses one request line (without its `\n`).
pub(crate) fn parse_request(line: &[u8]) -> Result<Request, String> {
    let text = std::str::from_utf8(line).map_err(|_| "the request is not UTF-8".to_string())?;
    let text = text.strip_suffix('\r').unwrap_or(text);
    let (verb, rest) = text.split_once(' ').unwrap_or((text, ""));
    match verb {
        "list" => {
            let mut format = Format::Table;
            let mut wide = false;
            let mut pattern = None;
            for word in rest.split(' ').filter(|w| !w.is_empty()) {
                match word {
                    "--json" => format = Format::Json,
                    "--wide" => wide = true,
                    w if pattern.is_none() && !w.starts_with('-') => pattern = Some(w.to_string()),
                    w => return Err(format!("list: unexpected {w:?}")),
                }
            }
            Ok(Request::List {
                format,
                wide,
                pattern,
            })
        }
        "status" => match rest.trim() {
            "" => Ok(Request::Status {
                format: Format::Table,
            }),
            "--json" => Ok(Request::Status {
                format: Format::Json,
            }),
            other => Err(format!("status: unexpected {other:?}")),
        },
        "run" => {
            let rest = rest.trim();
            let (wait, target) = match rest.strip_prefix("--wait ") {
                Some(target) => (true, target.trim()),
                None => (false, rest),
            };
            Ok(Request::Run {
                target: parse_target(target).map_err(|e| e.to_string())?,
                wait,
            })
        }
        "show" => {
            let rest = rest.trim();
            let (format, target) = match rest.strip_prefix("--json ") {
                Some(target) => (Format::Json, target.trim()),
                None => (Format::Table, rest),
            };
            Ok(Request::Show {
                target: parse_target(target).map_err(|e| e.to_string())?,
                format,
            })
        }
        verb @ ("pause" | "resume") => Ok(Request::Pause {
            target: parse_target(rest.trim()).map_err(|e| e.to_string())?,
            pause: verb == "pause",
        }),
        "history" => asked::parse_history(rest).map(Request::History),
        "logs" => asked::parse_logs(rest).map(Request::Logs),
        "" => Err("an empty request".to_string()),
        other => Err(format!(
            "unknown request {other:?} (list, status, run, show, pause, resume, history or logs)"
        )),
    }
}

/// `FILE:LINE` or an ID (or a prefix of at least 4 of its hex digits).
pub fn parse_target(text: &str) -> Result<Target, TargetError> {
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_hexdigit()) {
        if !(4..=LOCAL_ID_DIGITS).contains(&text.len()) {
            return Err(TargetError::NotId(text.to_string()));
        }
        return Ok(Target::Id(text.to_ascii_lowercase()));
    }
    let Some((tab, line)) = text.rsplit_once(':') else {
        return Err(TargetError::NoColon(text.to_string()));
    };
    match line.parse() {
        Ok(line) if !tab.is_empty() => Ok(Target::Place {
            tab: tab.to_string(),
            line,
        }),
        _ => Err(TargetError::Neither(text.to_string())),
    }
}

/// Why a text names no entry to run; each says the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TargetError {
    /// Hex digits only, too few or too many for an id or its prefix.
    NotId(String),
    /// No `:`: not FILE:LINE (the hint says where ids come from).
    NoColon(String),
    /// An empty FILE or a LINE that is not a number.
    Neither(String),
}

impl fmt::Display for TargetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TargetError::NotId(text) => write!(
                f,
                "{text:?} is not an id (4 to {LOCAL_ID_DIGITS} of the hex digits cronctl list shows)"
            ),
            TargetError::NoColon(text) => write!(
                f,
                "{text:?} is neither FILE:LINE nor an id from cronctl list"
            ),
            TargetError::Neither(text) => write!(f, "{text:?} is neither FILE:LINE nor an id"),
        }
    }
}

impl std::error::Error for TargetError {}

/// One entry as `list` shows it: what the daemon knows of it at the moment of the request.
#[derive(Debug, Clone)]
pub(crate) struct EntryView {
    /// Its id on this host, stable across reloads.
    pub id: LocalId,
    /// Where the scheduler keeps it now (what a run is started by).
    pub slot: u64,
    /// The crontab, as logs show it (`crontabs/alice`, `/etc/cron.d/php`).
    pub tab: Arc<str>,
    pub line: u32,
    pub user: Vec<u8>,
    /// The time fields as written.
    pub schedule: Vec<u8>,
    /// The entry's `CRON_TZ`, if it has one.
    pub cron_tz: Option<String>,
    /// The zone its times are read in: its `CRON_TZ`, else the daemon's.
    pub zone: Zone,
    /// Its next run, epoch seconds (`None`: never again).
    pub next_s: Option<i64>,
    /// Its last runs that ended, oldest first: the last only, in a list.
    pub runs: Vec<LastRun>,
    /// The pids of its job children running now.
    pub running: Vec<i32>,
    pub policy: Policy,
    /// Its `CRON_CLUSTER` and its id in the cluster, when the cluster shares its runs.
    pub cluster: Option<(String, EntryKey)>,
    /// Paused on this host (`cronctl pause`): its scheduled runs do not start.
    pub paused: bool,
    pub command: Vec<u8>,
    /// What a look at this one entry adds (`show`): `None` in a list.
    pub detail: Option<Detail>,
}

/// What `show` tells of an entry beyond a list's row.
#[derive(Debug, Clone, Default)]
pub(crate) struct Detail {
    /// Whether its file is a system one, whose lines name their user.
    pub system: bool,
    /// Its environment as the crontab sets it (`MAILTO`, `SHELL`, `CRON_*`, …), in order.
    pub env: Vec<(Vec<u8>, Vec<u8>)>,
    /// Its next runs after the one in `next_s`, epoch seconds (at most [`NEXT_RUNS`] in all).
    pub later: Vec<i64>,
    /// Whether the cluster it shares runs with said it is paused.
    pub paused: bool,
}

/// How many next runs `show` gives.
pub(crate) const NEXT_RUNS: usize = 5;

impl EntryView {
    /// `FILE:LINE`.
    pub fn place(&self) -> String {
        format!("{}:{}", self.tab, self.line)
    }

    /// Its last run that ended.
    pub fn last(&self) -> Option<&LastRun> {
        self.runs.last()
    }

    /// Whether it is the entry `target` names.
    pub fn is(&self, target: &Target) -> bool {
        match target {
            Target::Id(prefix) => self.id.to_string().starts_with(prefix.as_str()),
            Target::Place { tab, line } => *self.tab == **tab && self.line == *line,
        }
    }
}

/// A file or a line that did not load, as `list` shows it ("not loaded: REASON"; an orphaned
/// crontab's "user unknown").
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NotLoaded {
    /// The crontab, as logs show it.
    pub tab: String,
    /// The line, as the user edits it; `None` for the whole file.
    pub line: Option<u32>,
    /// A user's crontab's user (a spool file's name, a `--crontab` file's user).
    pub user: Option<Vec<u8>>,
    /// For a `--crontab` file, the uid it is checked for (the daemon's).
    pub checked_uid: Option<u32>,
    pub reason: String,
    /// A user's crontab whose user passwd does not know.
    pub orphan: bool,
}

impl NotLoaded {
    /// `FILE:LINE`, or `FILE` for the whole file.
    pub fn place(&self) -> String {
        match self.line {
            Some(line) => format!("{}:{line}", self.tab),
            None => self.tab.clone(),
        }
    }

    /// Whether `peer` may see it: root all; a user what is in their own crontab (a spool file
    /// of the name passwd gives their uid, a `--crontab` file checked for their uid). A system
    /// file's bad line names no user anyone could be sure of: root's only.
    pub fn may_be_seen_by(&self, peer: &Peer) -> bool {
        if peer.is_root() {
            return true;
        }
        match (self.checked_uid, &self.user) {
            (Some(uid), _) => uid == peer.uid,
            (None, Some(name)) => peer.name.as_deref() == Some(name.as_slice()),
            (None, None) => false,
        }
    }
}

/// The daemon as `status` shows it.
#[derive(Debug, Clone)]
pub(crate) struct StatusView {
    pub version: &'static str,
    pub pid: i32,
    /// When the daemon started, and now: epoch milliseconds.
    pub started_ms: i64,
    pub now_ms: i64,
    pub zone: Zone,
    /// Entries the asker may see (all, for root), and how many of their jobs run now.
    pub entries: usize,
    pub running: usize,
    /// Whether the counts are the asker's own (not root).
    pub own_only: bool,
}

/// What an answer is made from: the daemon's state at the request, the entries already
/// filtered by [`may_see`] and [`Want::wants`] (at most [`Want::max_entries`] of them).
#[derive(Debug, Clone)]
pub(crate) struct Snapshot {
    pub status: StatusView,
    pub entries: Vec<EntryView>,
    /// Entries wanted past [`Want::max_entries`]: counted, not made.
    pub omitted: usize,
    /// What did not load that the asker may see and the request wants (a list's, or the one
    /// place a `show` names).
    pub not_loaded: Vec<NotLoaded>,
}

/// Which entries a request needs in its snapshot, so that the daemon makes only those (a
/// `status` none, a `run` the one it names, a `list` those its pattern matches, up to what the
/// answer can hold).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Want<'a> {
    /// Whether entries are made at all (`status` only counts them).
    pub entries: bool,
    pub pattern: Option<&'a str>,
    pub target: Option<&'a Target>,
    pub max_entries: usize,
    /// Each entry made with its [`Detail`] (`show`).
    pub detail: bool,
}

impl Request {
    /// What the snapshot for this request must hold, for `peer`.
    pub fn want(&self, peer: &Peer) -> Want<'_> {
        let none = Want {
            entries: false,
            pattern: None,
            target: None,
            max_entries: 0,
            detail: false,
        };
        match self {
            Request::Status { .. } | Request::History(asked::HistoryAsk { target: None, .. }) => {
                none
            }
            Request::History(asked::HistoryAsk {
                target: Some(target),
                ..
            })
            | Request::Logs(asked::LogsAsk { target, .. }) => Want {
                entries: true,
                target: Some(target),
                max_entries: MAX_CANDIDATES,
                ..none
            },
            Request::List { pattern, .. } => Want {
                entries: true,
                pattern: pattern.as_deref(),
                max_entries: peer.max_answer() / MIN_ENTRY_BYTES,
                ..none
            },
            // Enough for an id's prefix that names more than one entry to list them.
            Request::Run { target, .. }
            | Request::Show { target, .. }
            | Request::Pause { target, .. } => Want {
                entries: true,
                target: Some(target),
                max_entries: MAX_CANDIDATES,
                detail: matches!(self, Request::Show { .. }),
                ..none
            },
        }
    }
}

impl Want<'_> {
    /// Of `all` that did not load, what the request wants and `peer` may see: a list's (its
    /// pattern applied to the place and the user), the one place a `show` names (a line, or
    /// its whole file), at most [`Want::max_entries`].
    pub fn not_loaded(&self, peer: &Peer, all: Vec<NotLoaded>) -> Vec<NotLoaded> {
        if !self.entries {
            return Vec::new();
        }
        let wanted = |n: &NotLoaded| match (self.target, self.pattern) {
            (Some(Target::Place { tab, line }), _) => {
                *tab == n.tab && n.line.is_none_or(|l| l == *line)
            }
            (Some(Target::Id(_)), _) => false,
            (None, Some(p)) => {
                n.place().contains(p)
                    || n.user
                        .as_deref()
                        .is_some_and(|u| String::from_utf8_lossy(u).contains(p))
            }
            (None, None) => true,
        };
        all.into_iter()
            .filter(|n| n.may_be_seen_by(peer) && wanted(n))
            .take(self.max_entries)
            .collect()
    }

    /// Whether the entry `id`, `tab:line`, run as `user`, is one the request needs (who may
    /// see it is [`may_see`]'s question, asked first).
    pub fn wants(&self, id: LocalId, tab: &str, line: u32, user: &[u8]) -> bool {
        if !self.entries {
            return false;
        }
        if let Some(target) = self.target {
            return match target {
                Target::Id(prefix) => id.to_string().starts_with(prefix.as_str()),
                Target::Place { tab: t, line: l } => t == tab && *l == line,
            };
        }
        self.pattern.is_none_or(|p| {
            format!("{tab}:{line}").contains(p) || String::from_utf8_lossy(user).contains(p)
        })
    }
}

/// The answer to a `run`, as the daemon carried it out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Ran {
    /// Forked: the job child's pid (the answer waits for what it says, when it can say it).
    Started(i32),
    /// Not started: the entry's `CRON_OVERLAP` (skip, or queue with a run already waiting).
    Skipped,
    /// Will start when the entry's running job ends (`CRON_OVERLAP=queue`).
    Waiting,
    /// The fork failed: the run is in the queue and is tried again.
    Queued,
}

/// The answer to a `run`: the entry `place` and what became of the run.
pub(crate) fn ran_answer(place: &str, ran: &Ran) -> Vec<u8> {
    match ran {
        Ran::Started(pid) => format!("OK\nstarted {place}: job pid {pid}\n"),
        Ran::Skipped => format!(
            "ERROR {place} is running and its CRON_OVERLAP does not start another run: \
             nothing started\n"
        ),
        Ran::Waiting => {
            format!("OK\n{place} is running: this run starts when it ends (CRON_OVERLAP=queue)\n")
        }
        Ran::Queued => format!(
            "ERROR {place} did not start: the fork failed; the run is queued and retried in a \
             second\n"
        ),
    }
    .into_bytes()
}

/// The answer to a `pause` (`pause`) or a `resume` of entry `e`: whether it changed
/// (`changed`; else it was so already), then the entry, so that a pause of the wrong one is
/// seen.
pub(crate) fn pause_answer(e: &EntryView, pause: bool, changed: bool) -> Vec<u8> {
    let id = e.id;
    let said = match (pause, changed) {
        (true, true) => {
            format!("paused: its scheduled runs do not start until cronctl resume {id}")
        }
        (true, false) => format!("was paused already (cronctl resume {id} resumes it)"),
        (false, true) => "resumed: its scheduled runs start again".to_string(),
        (false, false) => "was not paused".to_string(),
    };
    let place = render::printable(e.place().as_bytes());
    let user = render::printable(&e.user);
    let command = render::printable(&e.command);
    format!("OK\n{id}: {said}\n  {place}  {user}  {command}\n").into_bytes()
}

/// The answer to root's `resume` of id `id`, which no loaded entry has, found paused.
pub(crate) fn gone_resumed_answer(id: LocalId) -> Vec<u8> {
    format!("OK\n{id}: resumed (no entry of this host has this id now)\n").into_bytes()
}

/// An `ERROR` answer.
pub(crate) fn error_answer(message: &str) -> Vec<u8> {
    let one_line: String = message
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("ERROR {one_line}\n").into_bytes()
}

/// The entry of `snapshot` that `target` names, or the answer that says it is not there (to
/// this asker: an entry they may not see is not named differently from one that does not
/// exist).
/// An id's prefix that names more than one entry is an error that lists them.
pub(crate) fn find<'a>(snapshot: &'a Snapshot, target: &Target) -> Result<&'a EntryView, Vec<u8>> {
    let mut found = snapshot.entries.iter().filter(|e| e.is(target));
    let Some(first) = found.next() else {
        let named = match target {
            Target::Id(id) => format!("id {id}"),
            Target::Place { tab, line } => format!("{tab}:{line}"),
        };
        return Err(error_answer(&format!(
            "no entry {named} that you may see (see cronctl list)"
        )));
    };
    let others: Vec<&EntryView> = found.collect();
    if others.is_empty() {
        return Ok(first);
    }
    let mut candidates: Vec<String> = std::iter::once(first)
        .chain(others)
        .map(|e| format!("{} ({})", e.id, e.place()))
        .collect();
    if snapshot.omitted > 0 {
        candidates.push(format!("{} more", snapshot.omitted));
    }
    Err(error_answer(&format!(
        "the id prefix {} names more than one entry: {}; give more digits",
        match target {
            Target::Id(id) => id.as_str(),
            Target::Place { .. } => "",
        },
        candidates.join(", ")
    )))
}

/// The most entries an ambiguous id prefix lists.
const MAX_CANDIDATES: usize = 8;

#[cfg(test)]
mod tests;
