//! `cronctl helper`: the process through which a daemon in cluster mode reaches PostgreSQL
//! (docs/cluster.md "The helper"). The daemon starts it with a socket as stdin and stdout and
//! sends [`wire`] requests; the helper answers each, keeps this host's lease alive, watches runs
//! other hosts claimed (to take over those whose host's lease ends before they start), records
//! ends and prunes the history. It may block on the database (every call is bounded: 5 s by
//! default); the daemon never does. When the daemon goes (end of input), the helper gives the
//! lease up, so that other hosts take over at once, and exits.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use crate::cluster::conninfo::ConnInfo;
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
    pub lease_s: u32,
}

/// How often the history is pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// How long the helper waits between connection attempts.
const RECONNECT_EVERY: Duration = Duration::from_secs(5);

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
            let timeout = self.next_wake().saturating_duration_since(Instant::now());
            let ready = crate::sys::poll::wait_readable(
                &[input.as_fd()],
                Some(timeout.as_millis().min(60_000) as u32),
            );
            if !matches!(ready.as_deref(), Ok([true])) {
                continue;
            }
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
            let mut runs = Vec::new();
            let mut ends = Vec::new();
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
            if !runs.is_empty() {
                self.claim(runs);
            }
            for (key, status) in ends {
                self.end(&key, status);
            }
        }
    }

    /// When the loop must wake without input: the lease, the prune, the takeover check.
    fn next_wake(&self) -> Instant {
        let mut at = self.next_lease.min(self.next_prune);
        if !self.watched.is_empty() {
            at = at.min(self.next_takeover);
        }
        at
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
        Ok(client)
    }

    fn name_taken(&self) -> String {
        format!(
            "the host name {} holds a live lease of another crond: this one claims nothing \
             until that lease ends (give each host its own --cluster-host)",
            self.args.host
        )
    }

    /// Runs `f` on the connection; a lost connection is dropped (the next call reconnects).
    fn with_client<T>(
        &mut self,
        f: impl FnOnce(&mut dyn Connection) -> Result<T, DbError>,
    ) -> Result<T, String> {
        let client = self.client()?;
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
                } else {
                    self.log(true, format!("database error: {text}"));
                }
                Err(text)
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
        let days = [self.args.keep_days.to_string()];
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
    fn query_texts(&mut self, statement: &str, params: &[String]) -> Result<Rows, String> {
        self.with_client(|c| {
            let p: Vec<Option<&str>> = params.iter().map(|s| Some(s.as_str())).collect();
            c.query(statement, &p)
        })
    }

    /// Runs a batch statement: $1..$4 the arrays of the runs' key parts, $5 host, $6 session.
    fn query_batch<'a>(
        &mut self,
        statement: &str,
        keys: impl Iterator<Item = &'a RunKey>,
    ) -> Result<Rows, String> {
        let rows: Vec<RowKey> = keys.map(row_key).collect();
        let params = [
            sql::array(rows.iter().map(|r| &r.0)),
            sql::array(rows.iter().map(|r| &r.1)),
            sql::array(rows.iter().map(|r| &r.2)),
            sql::array(rows.iter().map(|r| &r.3)),
            self.args.host.clone(),
            self.session.to_string(),
        ];
        self.query_texts(statement, &params)
    }

    /// `RUN` requests: one claim statement, one start statement, an answer each.
    fn claim(&mut self, runs: Vec<(u64, RunKey)>) {
        let rows = match self.query_batch(&sql::claim(), runs.iter().map(|(_, k)| k)) {
            Ok(rows) => rows,
            Err(e) => {
                for (seq, _) in runs {
                    self.send(&FromHelper::No {
                        seq,
                        why: Denied::Unreachable(e.clone()),
                    });
                }
                return;
            }
        };
        let outcome = by_key(&rows);
        let mut claimed = Vec::new();
        for (seq, key) in runs {
            let (what, host) = outcome
                .get(&row_key(&key))
                .cloned()
                .unwrap_or_else(|| ("lease".to_string(), String::new()));
            match what.as_str() {
                "claimed" => claimed.push((seq, key)),
                "paused" => self.send(&FromHelper::No {
                    seq,
                    why: Denied::Paused,
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
        self.start(claimed);
    }

    /// Marks claimed runs started and says `GO` for each; one no longer this host's is `NO`.
    fn start(&mut self, claimed: Vec<(u64, RunKey)>) {
        if claimed.is_empty() {
            return;
        }
        match self.query_batch(&sql::start(), claimed.iter().map(|(_, k)| k)) {
            Ok(rows) => {
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
            }
            Err(e) => {
                for (seq, _) in claimed {
                    self.send(&FromHelper::No {
                        seq,
                        why: Denied::Unreachable(e.clone()),
                    });
                }
            }
        }
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
        let rows = match self.query_batch(&sql::take_over(), watched.iter().map(|w| &w.key)) {
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
        self.start(mine);
    }

    fn end(&mut self, key: &RunKey, status: i32) {
        let (cluster, owner, entry, minute) = row_key(key);
        let params = [
            cluster,
            owner,
            entry,
            minute,
            self.args.host.clone(),
            self.session.to_string(),
            status.to_string(),
        ];
        let _ = self.query_texts(sql::END, &params);
    }
}

/// The owner as the tables hold it (text; a name that is not UTF-8 is shown lossily, and the
/// entry id still tells its entries apart).
fn owner_text(key: &RunKey) -> String {
    String::from_utf8_lossy(&key.owner).into_owned()
}

type RowKey = (String, String, String, String);

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
