//! `cronctl helper`: the process through which a daemon in cluster mode reaches PostgreSQL
//! (docs/cluster.md "The helper"). The daemon starts it with a socket as stdin and stdout and
//! sends [`wire`] requests; the helper answers each, keeps this host's lease alive, watches runs
//! other hosts claimed (to take over those whose host's lease ends before they start), records
//! ends and prunes the history. It may block on the database (every call is bounded: 5 s by
//! default); the daemon never does. When the daemon goes (end of input), the helper gives the
//! lease up, so that other hosts take over at once, and exits.
//!
//! Runs are spread over the live hosts: each run is meant for one of them
//! ([`run_weight`]), which claims it at once; the others leave it [`DEFER`] and then claim it
//! only if no host has (a host that is down, or slow, or lacks the entry). A run is answered
//! `unreachable` only when the database can't be reached; a statement it was too slow for is
//! tried again.

use std::collections::{HashMap, VecDeque};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use crate::cluster::conninfo::ConnInfo;
use crate::cluster::identity::run_weight;
use crate::cluster::parked::{MAX_PARKED, TAKEOVER_WAIT_MS};
use crate::cluster::wire::{self, Denied, FromHelper, RunKey, ToHelper};

use super::conn::{Connect, Connection, DbError, Rows};
use super::db;
use super::sql;

/// What the helper is told on its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperArgs {
    pub db: String,
    pub host: String,
    pub keep_days: u32,
    /// Runs of one entry the history keeps (older ones past it are pruned).
    pub keep_runs: u32,
    pub lease_s: u32,
}

/// How often the history is pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// How long the helper waits between connection attempts.
const RECONNECT_EVERY: Duration = Duration::from_secs(5);

/// How long a run meant for another live host is left to it before this host claims it (if
/// no host has: that host is slow, stopped, or lacks the entry).
pub const DEFER: Duration = Duration::from_secs(5);

/// The most runs one claim, start or end statement carries: a batch of them stays far inside
/// the statement timeout (about 20 ms per 1,000 runs on a local server).
const MAX_BATCH: usize = 1_000;

/// Runs whose statement the database was too slow for (or whose connection broke mid-way) are
/// tried again after this.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// The most input read from the daemon before the runs read are claimed (64 KiB at a time).
const MAX_READS_PER_TURN: usize = 16;

/// Why a call failed, as far as the runs it carried are concerned.
#[derive(Debug)]
enum Failure {
    /// No connection, and none could be made: the database is unreachable.
    Down(String),
    /// The connection broke during the call (it may have done its work or not).
    Lost(String),
    /// The server gave up on the statement (its timeout, a lock, a serialization conflict):
    /// the same statement may go through later.
    Slow(String),
    /// Any other error of the server: trying again would not help.
    Refused(String),
}

impl Failure {
    fn text(&self) -> &str {
        match self {
            Failure::Down(t) | Failure::Lost(t) | Failure::Slow(t) | Failure::Refused(t) => t,
        }
    }
}

/// SQLSTATEs of a server that is busy rather than unwilling: statement timeout (57014), lock
/// not available (55P03), serialization failure (40001), deadlock (40P01), too many
/// connections (53300).
fn is_busy(code: Option<&str>) -> bool {
    matches!(code, Some("57014" | "55P03" | "40001" | "40P01" | "53300"))
}

/// A run another host claimed, watched for a takeover.
#[derive(Debug)]
struct Watched {
    seq: u64,
    key: RunKey,
    since: Instant,
}

struct Helper<'c> {
    connector: &'c dyn Connect,
    args: HelperArgs,
    info: ConnInfo,
    session: i64,
    client: Option<Box<dyn Connection>>,
    next_connect: Instant,
    /// Why the database is out of reach, while it is (logged once per outage).
    down: Option<String>,
    schema_ready: bool,
    next_lease: Instant,
    next_prune: Instant,
    /// When the watched runs are looked at next.
    next_takeover: Instant,
    watched: Vec<Watched>,
    /// The hosts holding a live lease (this one among them once its lease is taken), by name.
    live: Vec<String>,
    /// Runs meant for another live host, each with when this host claims it if no host has.
    deferred: VecDeque<(Instant, u64, RunKey)>,
    /// Runs to claim now, in order.
    pending: VecDeque<(u64, RunKey)>,
    /// When the pending runs are tried again after a failure.
    retry_at: Option<Instant>,
    out: File,
}

/// Runs the helper until its input ends. Exit status 0, or 1 when the daemon's socket breaks.
pub fn run(args: HelperArgs, connector: &dyn Connect) -> u8 {
    let (input, out) = match (stdio_file(0), stdio_file(1)) {
        (Ok(i), Ok(o)) => (i, o),
        _ => return 1,
    };
    let info = match db::conninfo(&args.db) {
        Ok(info) => info,
        Err(e) => {
            let mut out = out;
            let _ = out.write_all(
                FromHelper::Log {
                    error: true,
                    text: e,
                }
                .encode()
                .as_bytes(),
            );
            return 1;
        }
    };
    let now = Instant::now();
    let mut helper = Helper {
        connector,
        session: db::new_session(),
        args,
        info,
        client: None,
        next_connect: now,
        down: None,
        schema_ready: false,
        next_lease: now,
        next_prune: now,
        next_takeover: now,
        watched: Vec::new(),
        live: Vec::new(),
        deferred: VecDeque::new(),
        pending: VecDeque::new(),
        retry_at: None,
        out,
    };
    helper.serve(input)
}

/// Standard input or output as a file of its own (unbuffered, so that poll sees all input).
fn stdio_file(fd: i32) -> std::io::Result<File> {
    let owned = match fd {
        0 => std::io::stdin().as_fd().try_clone_to_owned()?,
        _ => std::io::stdout().as_fd().try_clone_to_owned()?,
    };
    Ok(File::from(owned))
}

impl Helper<'_> {
    fn serve(&mut self, mut input: File) -> u8 {
        let mut reader = wire::LineReader::default();
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            self.periodic();
            self.claim_pending();
            let timeout = self.next_wake().saturating_duration_since(Instant::now());
            let mut wait = timeout.as_millis().min(60_000) as u32;
            let mut runs = Vec::new();
            let mut ends = Vec::new();
            // Everything the daemon has sent so far (up to a bound), so that the runs of one
            // minute go to the database in few statements.
            for _ in 0..MAX_READS_PER_TURN {
                let mut registry = crate::sys::poll::Registry::new();
                registry.add((), input.as_fd(), crate::sys::poll::Interest::Read);
                if !registry
                    .wait(Some(wait))
                    .is_ok_and(|ready| ready.contains(()))
                {
                    break;
                }
                wait = 0;
                let n = match input.read(&mut chunk) {
                    Ok(0) => {
                        self.release();
                        return 0;
                    }
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => {
                        self.release();
                        return 1;
                    }
                };
                for line in reader.push(&chunk[..n]) {
                    match line.and_then(|line| ToHelper::decode(&line)) {
                        Ok(ToHelper::Run { seq, key }) => runs.push((seq, key)),
                        Ok(ToHelper::End { key, status }) => ends.push((key, status)),
                        Err(e) => self.log(
                            true,
                            format!("protocol error from the daemon: {e}; line skipped"),
                        ),
                    }
                }
            }
            self.arrived(runs);
            self.end(ends);
        }
    }

    /// When the loop must wake without input: the lease, the prune, the takeover check, a
    /// deferred run's turn, a retry.
    fn next_wake(&self) -> Instant {
        let mut at = self.next_lease.min(self.next_prune);
        if !self.watched.is_empty() {
            at = at.min(self.next_takeover);
        }
        if let Some(&(when, _, _)) = self.deferred.front() {
            at = at.min(when);
        }
        if !self.pending.is_empty() {
            at = at.min(self.retry_at.unwrap_or_else(Instant::now));
        }
        at
    }

    /// Whether this host is the live host meant to claim `key`'s run.
    fn meant_for_me(&self, key: &RunKey) -> bool {
        let me = self.args.host.as_str();
        let weight = |host: &str| run_weight(host, &key.cluster, &key.owner, key.entry, key.minute);
        let mine = weight(me);
        self.live
            .iter()
            .filter(|h| h.as_str() != me)
            .all(|other| weight(other) < mine)
    }

    /// New `RUN`s: this host's share goes to be claimed now, the rest waits [`DEFER`].
    fn arrived(&mut self, runs: Vec<(u64, RunKey)>) {
        let later = Instant::now() + DEFER;
        for (seq, key) in runs {
            if self.meant_for_me(&key) {
                self.pending.push_back((seq, key));
            } else {
                self.deferred.push_back((later, seq, key));
            }
        }
        self.claim_pending();
    }

    /// Takeover checks run twice per lease renewal.
    fn takeover_every(&self) -> Duration {
        Duration::from_millis(u64::from(self.args.lease_s) * 1000 / 6)
            .max(Duration::from_millis(200))
    }

    fn periodic(&mut self) {
        let now = Instant::now();
        if now >= self.next_lease {
            self.next_lease = now
                + Duration::from_secs(u64::from(self.args.lease_s) / 3).max(Duration::from_secs(1));
            self.renew_lease();
        }
        if now >= self.next_prune && self.client.is_some() {
            self.next_prune = now + PRUNE_EVERY;
            self.prune();
        }
        if !self.watched.is_empty() && now >= self.next_takeover {
            self.next_takeover = now + self.takeover_every();
            self.take_over();
        }
        while let Some(&(when, _, _)) = self.deferred.front() {
            if when > now {
                break;
            }
            if let Some((_, seq, key)) = self.deferred.pop_front() {
                self.pending.push_back((seq, key));
            }
        }
    }

    fn send(&mut self, message: &FromHelper) {
        // A daemon that is gone is seen as the end of input.
        let _ = self.out.write_all(message.encode().as_bytes());
    }

    fn log(&mut self, error: bool, text: String) {
        self.send(&FromHelper::Log { error, text });
    }

    /// The connection, made (schema, lease) if there is none and it is time to try.
    fn client(&mut self) -> Result<&mut Box<dyn Connection>, String> {
        if self.client.is_none() {
            let now = Instant::now();
            if now < self.next_connect {
                return Err(self
                    .down
                    .clone()
                    .unwrap_or_else(|| "not connected".to_string()));
            }
            self.next_connect = now + RECONNECT_EVERY;
            match self.connect() {
                Ok(client) => {
                    if let Some(why) = self.down.take() {
                        self.log(false, format!("database reachable again (was: {why})"));
                    } else {
                        self.log(
                            false,
                            format!("connected to the database as host {}", self.args.host),
                        );
                    }
                    self.client = Some(client);
                }
                Err(e) => {
                    if self.down.is_none() {
                        self.log(
                            true,
                            format!(
                                "database unreachable: {e}; cluster runs do not start here \
                                 until it is back (retrying every {} s)",
                                RECONNECT_EVERY.as_secs()
                            ),
                        );
                    }
                    self.down = Some(e.clone());
                    return Err(e);
                }
            }
        }
        self.client
            .as_mut()
            .ok_or_else(|| "not connected".to_string())
    }

    fn connect(&mut self) -> Result<Box<dyn Connection>, String> {
        let mut client = db::connect(self.connector, &self.info)?;
        if !self.schema_ready {
            client.batch(sql::SCHEMA).map_err(|e| e.to_string())?;
            self.schema_ready = true;
        }
        let rows = client
            .query(
                sql::LEASE,
                &[
                    Some(&self.args.host),
                    Some(&self.session.to_string()),
                    Some(&self.args.lease_s.to_string()),
                ],
            )
            .map_err(|e| e.to_string())?;
        if rows.rows.is_empty() {
            self.log(true, self.name_taken());
        }
        if let Ok(rows) = client.query(sql::LIVE_HOSTS, &[]) {
            self.live = hosts(&rows);
        }
        Ok(client)
    }

    fn name_taken(&self) -> String {
        format!(
            "the host name {} holds a live lease of another crond: this one claims nothing \
             until that lease ends (give each host its own --cluster-host)",
            self.args.host
        )
    }

    /// Runs `f` on the connection; a lost connection is dropped (the next call reconnects at
    /// once).
    fn with_client<T>(
        &mut self,
        f: impl FnOnce(&mut dyn Connection) -> Result<T, DbError>,
    ) -> Result<T, Failure> {
        let client = self.client().map_err(Failure::Down)?;
        match f(client.as_mut()) {
            Ok(t) => Ok(t),
            Err(e) => {
                let text = e.to_string();
                if e.is_connection_lost() {
                    if let Some(client) = self.client.take() {
                        client.close();
                    }
                    self.next_connect = Instant::now();
                    self.down = Some(text.clone());
                    self.log(true, format!("database connection lost: {text}"));
                    Err(Failure::Lost(text))
                } else if is_busy(e.code.as_deref()) {
                    self.log(true, format!("database busy: {text}; trying again"));
                    Err(Failure::Slow(text))
                } else {
                    self.log(true, format!("database error: {text}"));
                    Err(Failure::Refused(text))
                }
            }
        }
    }

    fn renew_lease(&mut self) {
        let params = [
            self.args.host.clone(),
            self.session.to_string(),
            self.args.lease_s.to_string(),
        ];
        let renewed = self.query_texts(sql::LEASE, &params);
        if let Ok(rows) = renewed
            && rows.rows.is_empty()
        {
            let text = self.name_taken();
            self.log(true, text);
        }
        if let Ok(rows) = self.query_texts(sql::LIVE_HOSTS, &[]) {
            self.live = hosts(&rows);
        }
    }

    fn release(&mut self) {
        if let Some(mut client) = self.client.take() {
            let _ = client.query(
                sql::RELEASE,
                &[Some(&self.args.host), Some(&self.session.to_string())],
            );
            client.close();
        }
    }

    fn prune(&mut self) {
        let days = [
            self.args.keep_days.to_string(),
            self.args.keep_runs.to_string(),
        ];
        if let Ok(rows) = self.query_texts(sql::PRUNE, &days) {
            let count = |i: usize| {
                rows.rows
                    .first()
                    .and_then(|r| r.get(i).cloned().flatten())
                    .unwrap_or_default()
            };
            let (runs, hosts) = (count(0), count(1));
            if runs != "0" || hosts != "0" {
                self.log(
                    false,
                    format!(
                        "pruned {runs} runs and {hosts} hosts older than {} days",
                        self.args.keep_days
                    ),
                );
            }
        }
    }

    /// Runs `statement` with every parameter given (as text).
    fn query_texts(&mut self, statement: &str, params: &[String]) -> Result<Rows, Failure> {
        self.with_client(|c| {
            let p: Vec<Option<&str>> = params.iter().map(|s| Some(s.as_str())).collect();
            c.query(statement, &p)
        })
    }

    /// Runs a batch statement: $1..$4 the arrays of the runs' key parts, $5 host, $6 session,
    /// and `more` after them.
    fn query_batch<'a>(
        &mut self,
        statement: &str,
        keys: impl Iterator<Item = &'a RunKey>,
        more: &[String],
    ) -> Result<Rows, Failure> {
        let rows: Vec<RowKey> = keys.map(row_key).collect();
        let mut params = vec![
            sql::array(rows.iter().map(|r| &r.0)),
            sql::array(rows.iter().map(|r| &r.1)),
            sql::array(rows.iter().map(|r| &r.2)),
            sql::array(rows.iter().map(|r| &r.3)),
            self.args.host.clone(),
            self.session.to_string(),
        ];
        params.extend_from_slice(more);
        self.query_texts(statement, &params)
    }

    fn unreachable(&mut self, runs: impl IntoIterator<Item = (u64, RunKey)>, why: &str) {
        for (seq, _) in runs {
            self.send(&FromHelper::No {
                seq,
                why: Denied::Unreachable(why.to_string()),
            });
        }
    }

    /// Claims the pending runs, a batch at a time, unless a retry is not due yet.
    fn claim_pending(&mut self) {
        if self.retry_at.is_some_and(|at| Instant::now() < at) {
            return;
        }
        self.retry_at = None;
        while !self.pending.is_empty() {
            let n = self.pending.len().min(MAX_BATCH);
            let batch: Vec<(u64, RunKey)> = self.pending.drain(..n).collect();
            if let Err(again) = self.claim(batch) {
                for run in again.into_iter().rev() {
                    self.pending.push_front(run);
                }
                self.retry_at = Some(Instant::now() + RETRY_AFTER);
                return;
            }
        }
    }

    /// Runs `statement` for `runs`; a broken connection is made again and the statement tried
    /// once more at once. `Err` with the runs when they are to be tried again later; `Ok(None)`
    /// when they were answered `unreachable`.
    fn batch_for(
        &mut self,
        statement: &str,
        runs: Vec<(u64, RunKey)>,
        more: &[String],
    ) -> Result<Option<(Rows, Runs)>, Runs> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.query_batch(statement, runs.iter().map(|(_, k)| k), more) {
                Ok(rows) => return Ok(Some((rows, runs))),
                Err(Failure::Lost(_)) if tries == 1 => continue,
                Err(Failure::Lost(_) | Failure::Slow(_)) => return Err(runs),
                Err(e @ (Failure::Down(_) | Failure::Refused(_))) => {
                    self.unreachable(runs, e.text());
                    return Ok(None);
                }
            }
        }
    }

    /// One claim statement for `runs` and an answer for each; the claimed ones are started.
    fn claim(&mut self, runs: Vec<(u64, RunKey)>) -> Result<(), Vec<(u64, RunKey)>> {
        let Some((rows, runs)) = self.batch_for(&sql::claim(), runs, &[])? else {
            return Ok(());
        };
        let outcome = by_key(&rows);
        let mut claimed = Vec::new();
        let mut go = Vec::new();
        for (seq, key) in runs {
            let (what, host) = outcome
                .get(&row_key(&key))
                .cloned()
                .unwrap_or_else(|| ("lease".to_string(), String::new()));
            match what.as_str() {
                "claimed" => claimed.push((seq, key)),
                "started" => go.push(seq),
                "paused" => self.send(&FromHelper::No {
                    seq,
                    why: Denied::Paused,
                }),
                "ran" => self.send(&FromHelper::No {
                    seq,
                    why: Denied::Ran(host),
                }),
                "taken" => {
                    self.send(&FromHelper::No {
                        seq,
                        why: Denied::Taken(host),
                    });
                    self.watch(seq, key);
                }
                _ => self.send(&FromHelper::No {
                    seq,
                    why: Denied::Lease,
                }),
            }
        }
        for seq in go {
            self.send(&FromHelper::Go { seq });
        }
        self.start(claimed)
    }

    /// Marks claimed runs started and says `GO` for each; one no longer this host's is `NO`.
    /// `Err` with the runs to claim again later (the claim statement finds them this
    /// session's, started or not).
    fn start(&mut self, claimed: Vec<(u64, RunKey)>) -> Result<(), Vec<(u64, RunKey)>> {
        if claimed.is_empty() {
            return Ok(());
        }
        let Some((rows, claimed)) = self.batch_for(&sql::start(), claimed, &[])? else {
            return Ok(());
        };
        let started = by_key(&rows);
        for (seq, key) in claimed {
            let message = match started.contains_key(&row_key(&key)) {
                true => FromHelper::Go { seq },
                false => FromHelper::No {
                    seq,
                    why: Denied::Lease,
                },
            };
            self.send(&message);
        }
        Ok(())
    }

    fn watch(&mut self, seq: u64, key: RunKey) {
        if self.watched.len() >= MAX_PARKED {
            self.watched.remove(0);
        }
        self.watched.push(Watched {
            seq,
            key,
            since: Instant::now(),
        });
    }

    /// Runs other hosts claimed: taken over (started here) when their host's lease ended
    /// before they started; forgotten once they started there (`NO ran`) or after the
    /// daemon's own bound.
    fn take_over(&mut self) {
        let limit = Duration::from_millis(TAKEOVER_WAIT_MS as u64);
        self.watched.retain(|w| w.since.elapsed() < limit);
        if self.watched.is_empty() {
            return;
        }
        let watched = std::mem::take(&mut self.watched);
        let keys: Vec<&RunKey> = watched.iter().map(|w| &w.key).collect();
        let rows = match self.query_batch(&sql::take_over(), keys.into_iter(), &[]) {
            Ok(rows) => rows,
            Err(_) => {
                self.watched = watched;
                return;
            }
        };
        let outcome = by_key(&rows);
        let mut mine = Vec::new();
        for w in watched {
            let (what, host) = outcome
                .get(&row_key(&w.key))
                .cloned()
                .unwrap_or_else(|| ("waiting".to_string(), String::new()));
            match what.as_str() {
                "mine" => mine.push((w.seq, w.key)),
                "ran" => self.send(&FromHelper::No {
                    seq: w.seq,
                    why: Denied::Ran(host),
                }),
                "gone" => self.send(&FromHelper::No {
                    seq: w.seq,
                    why: Denied::Unreachable("its claim was deleted".into()),
                }),
                _ => self.watched.push(w),
            }
        }
        if !mine.is_empty() {
            let hosts = mine.len();
            self.log(
                false,
                format!("took over {hosts} runs claimed by hosts whose lease ended before they started them"),
            );
        }
        // Claimed here now: a start that fails is tried again through the claim.
        if let Err(again) = self.start(mine) {
            self.pending.extend(again);
        }
    }

    /// Runs that ended: one statement per batch. An end that can't be written is lost (the
    /// run shows as started, not ended, in the history).
    fn end(&mut self, ends: Vec<(RunKey, i32)>) {
        for batch in ends.chunks(MAX_BATCH) {
            let statuses = sql::array(batch.iter().map(|(_, status)| status.to_string()));
            let _ = self.query_batch(sql::END, batch.iter().map(|(key, _)| key), &[statuses]);
        }
    }
}

/// The host names of a [`sql::LIVE_HOSTS`] result.
fn hosts(rows: &Rows) -> Vec<String> {
    rows.rows
        .iter()
        .filter_map(|r| r.first().cloned().flatten())
        .collect()
}

/// The owner as the tables hold it (text; a name that is not UTF-8 is shown lossily, and the
/// entry id still tells its entries apart).
fn owner_text(key: &RunKey) -> String {
    String::from_utf8_lossy(&key.owner).into_owned()
}

type RowKey = (String, String, String, String);

/// Runs by their request number.
type Runs = Vec<(u64, RunKey)>;

fn row_key(key: &RunKey) -> RowKey {
    (
        key.cluster.clone(),
        owner_text(key),
        key.entry.to_string(),
        key.minute.to_string(),
    )
}

/// Rows of (cluster, owner, entry, minute[, what, host]) by their key.
fn by_key(rows: &Rows) -> HashMap<RowKey, (String, String)> {
    rows.rows
        .iter()
        .filter_map(|r| {
            let text = |i: usize| r.get(i).cloned().flatten();
            Some((
                (text(0)?, text(1)?, text(2)?, text(3)?),
                (text(4).unwrap_or_default(), text(5).unwrap_or_default()),
            ))
        })
        .collect()
}
