//! What the helper asks of the cluster database, as a trait: [`Store`]. [`SqlStore`] carries it
//! out with the statements of [`sql`] over a [`Connection`]; the helper's tests use an in-memory
//! store with the same rules. A store keeps at most one connection and drops it when it breaks.

use std::collections::HashMap;

use crond::cluster::conninfo::ConnInfo;
use crond::cluster::wire::{Loaded, RunKey};

use crate::conn::{Connect, Connection, DbError, Rows};
use crate::{db, sql};

/// Why a call failed, as far as the runs it carried are concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
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
    pub fn text(&self) -> &str {
        match self {
            Failure::Down(t) | Failure::Lost(t) | Failure::Slow(t) | Failure::Refused(t) => t,
        }
    }
}

/// What a claim found for one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// This session holds the claim (new, or from an earlier try whose answer was lost).
    Held,
    /// This session holds it and marked it started on an earlier try: start it.
    Started,
    /// Started by the host named.
    Ran(String),
    /// Claimed by the host named, not started.
    Taken(String),
    Paused,
    /// This host's lease is not live: no claim.
    Lease,
}

/// What a look at a watched run found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Watched {
    /// Its holder's lease ended before it started it: it is this session's now.
    Mine,
    /// Started by the host named.
    Ran(String),
    /// Its claim is gone from the table.
    Gone,
    /// Still claimed by a live host, not started.
    Waiting,
}

/// The cluster database as the helper uses it. Calls other than `connect` expect a connection
/// (`connected()`); a call that breaks it drops it and says [`Failure::Lost`].
pub trait Store {
    fn connected(&self) -> bool;
    /// Connects, makes the tables (the first time) and takes this host's lease; `Ok(false)`
    /// when another session holds the host's name.
    fn connect(&mut self) -> Result<bool, String>;
    /// Renews the lease; `Ok(false)` as for `connect`.
    fn lease(&mut self) -> Result<bool, Failure>;
    /// How far this host's clock was ahead of the database's (negative: behind), in ms, at the
    /// last lease taken or renewed; `None` before one.
    fn clock_skew_ms(&self) -> Option<i64>;
    /// The hosts holding a live lease, by name.
    fn live_hosts(&mut self) -> Result<Vec<String>, Failure>;
    /// Claims `runs`; one answer per run, in order.
    fn claim(&mut self, runs: &[RunKey]) -> Result<Vec<Claim>, Failure>;
    /// Marks this session's claimed `runs` started; for each, whether it was.
    fn start(&mut self, runs: &[RunKey]) -> Result<Vec<bool>, Failure>;
    /// Gives back this session's started `runs` that never ran (claims again); how many were.
    fn unstart(&mut self, runs: &[RunKey]) -> Result<usize, Failure>;
    /// Takes over the watched `runs` whose holder's lease ended before it started them.
    fn take_over(&mut self, runs: &[RunKey]) -> Result<Vec<Watched>, Failure>;
    /// Takes over (and marks started) at most `most` runs no daemon waits for, their holder's
    /// lease gone, of entries this host listed, their minute some seconds past: claims not
    /// started, and first attempts ended `unknown` of entries to run again ([`sql::ADOPT`]);
    /// each with its attempt.
    fn adopt(&mut self, most: usize) -> Result<Vec<(RunKey, u32)>, Failure>;
    /// Records the exit statuses of runs that ended.
    fn end(&mut self, ends: &[(RunKey, i32)]) -> Result<(), Failure>;
    /// Makes this host's rows of loaded entries `entries`; `Ok(false)` when this session does
    /// not hold the host's lease (nothing written).
    fn list(&mut self, entries: &[Loaded]) -> Result<bool, Failure>;
    /// Ends the runs started by sessions whose lease ended, not ended nor recorded, as
    /// `unknown`: the hosts that started them, one per run.
    fn unknown(&mut self) -> Result<Vec<String>, Failure>;
    /// Prunes the history; how many runs and hosts went.
    fn prune(&mut self, keep_days: u32, keep_runs: u32) -> Result<(u64, u64), Failure>;
    /// Gives the lease back and closes the connection (the daemon is gone).
    fn release(&mut self);
}

/// SQLSTATEs of a server that is busy rather than unwilling: statement timeout (57014), lock
/// not available (55P03), serialization failure (40001), deadlock (40P01), too many
/// connections (53300).
fn is_busy(code: Option<&str>) -> bool {
    matches!(code, Some("57014" | "55P03" | "40001" | "40P01" | "53300"))
}

/// [`Store`] on PostgreSQL, through a [`Connect`].
pub struct SqlStore<'c> {
    connector: &'c dyn Connect,
    info: ConnInfo,
    host: String,
    session: i64,
    lease_s: u32,
    client: Option<Box<dyn Connection>>,
    schema_ready: bool,
    /// This host's clock less the database's at the last lease (ms).
    skew_ms: Option<i64>,
}

impl<'c> SqlStore<'c> {
    pub fn new(
        connector: &'c dyn Connect,
        info: ConnInfo,
        host: &str,
        session: i64,
        lease_s: u32,
    ) -> SqlStore<'c> {
        SqlStore {
            connector,
            info,
            host: host.to_string(),
            session,
            lease_s,
            client: None,
            schema_ready: false,
            skew_ms: None,
        }
    }

    /// Runs `statement` with every parameter given (as text).
    fn query(&mut self, statement: &str, params: &[String]) -> Result<Rows, Failure> {
        let client = self
            .client
            .as_mut()
            .ok_or_else(|| Failure::Down("not connected".into()))?;
        let p: Vec<Option<&str>> = params.iter().map(|s| Some(s.as_str())).collect();
        client.query(statement, &p).map_err(|e| self.failed(e))
    }

    fn failed(&mut self, e: DbError) -> Failure {
        let text = e.to_string();
        if e.is_connection_lost() {
            if let Some(client) = self.client.take() {
                client.close();
            }
            Failure::Lost(text)
        } else if is_busy(e.code.as_deref()) {
            Failure::Slow(text)
        } else {
            Failure::Refused(text)
        }
    }

    fn lease_params(&self) -> [String; 3] {
        [
            self.host.clone(),
            self.session.to_string(),
            self.lease_s.to_string(),
        ]
    }

    /// Runs a batch statement: $1..$4 the arrays of the runs' key parts, $5 host, $6 session,
    /// and `more` after them; the rows by run key.
    fn batch<'a>(
        &mut self,
        statement: &str,
        keys: impl Iterator<Item = &'a RunKey>,
        more: &[String],
    ) -> Result<HashMap<RowKey, (String, String)>, Failure> {
        let rows: Vec<RowKey> = keys.map(row_key).collect();
        let mut params = vec![
            sql::array(rows.iter().map(|r| &r.0)),
            sql::array(rows.iter().map(|r| &r.1)),
            sql::array(rows.iter().map(|r| &r.2)),
            sql::array(rows.iter().map(|r| &r.3)),
            self.host.clone(),
            self.session.to_string(),
        ];
        params.extend_from_slice(more);
        Ok(by_key(&self.query(statement, &params)?))
    }
}

impl Store for SqlStore<'_> {
    fn connected(&self) -> bool {
        self.client.is_some()
    }

    fn connect(&mut self) -> Result<bool, String> {
        let mut client = db::connect(self.connector, &self.info).map_err(|e| e.to_string())?;
        if !self.schema_ready {
            client.batch(sql::SCHEMA).map_err(|e| e.to_string())?;
            self.schema_ready = true;
        }
        let params = self.lease_params();
        let p: Vec<Option<&str>> = params.iter().map(|s| Some(s.as_str())).collect();
        let rows = client.query(sql::LEASE, &p).map_err(|e| e.to_string())?;
        self.client = Some(client);
        Ok(!rows.rows.is_empty())
    }

    fn lease(&mut self) -> Result<bool, Failure> {
        let params = self.lease_params();
        let before = unix_ms();
        let rows = self.query(sql::LEASE, &params)?;
        // The server read its clock between the two readings of ours: compared with their
        // middle, the error is at most half the round trip.
        let middle = before + (unix_ms() - before) / 2;
        let server = rows.rows.first().and_then(|r| r.get(1).cloned().flatten());
        if let Some(server) = server.and_then(|ms| ms.parse::<i64>().ok()) {
            self.skew_ms = Some(middle - server);
        }
        Ok(!rows.rows.is_empty())
    }

    fn clock_skew_ms(&self) -> Option<i64> {
        self.skew_ms
    }

    fn live_hosts(&mut self) -> Result<Vec<String>, Failure> {
        let rows = self.query(sql::LIVE_HOSTS, &[])?;
        Ok(rows
            .rows
            .iter()
            .filter_map(|r| r.first().cloned().flatten())
            .collect())
    }

    fn claim(&mut self, runs: &[RunKey]) -> Result<Vec<Claim>, Failure> {
        let outcome = self.batch(&sql::claim(), runs.iter(), &[])?;
        Ok(runs
            .iter()
            .map(|key| match outcome.get(&row_key(key)) {
                Some((what, host)) => match what.as_str() {
                    "claimed" => Claim::Held,
                    "started" => Claim::Started,
                    "paused" => Claim::Paused,
                    "ran" => Claim::Ran(host.clone()),
                    "taken" => Claim::Taken(host.clone()),
                    _ => Claim::Lease,
                },
                None => Claim::Lease,
            })
            .collect())
    }

    fn start(&mut self, runs: &[RunKey]) -> Result<Vec<bool>, Failure> {
        let started = self.batch(&sql::start(), runs.iter(), &[])?;
        Ok(runs
            .iter()
            .map(|key| started.contains_key(&row_key(key)))
            .collect())
    }

    fn unstart(&mut self, runs: &[RunKey]) -> Result<usize, Failure> {
        Ok(self.batch(&sql::unstart(), runs.iter(), &[])?.len())
    }

    fn adopt(&mut self, most: usize) -> Result<Vec<(RunKey, u32)>, Failure> {
        // Runs whose minute came more than the wait before a claim of another host's share
        // ago (this host's clock names the minutes): this daemon's own request for a run of
        // the minute, when it makes one, comes first and is answered by the takeover.
        let latest = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64)
            - super::machine::DEFER.as_secs() as i64;
        let params = [
            self.host.clone(),
            self.session.to_string(),
            most.to_string(),
            latest.to_string(),
        ];
        let rows = self.query(sql::ADOPT, &params)?;
        Ok(rows
            .rows
            .iter()
            .filter_map(|r| {
                let text = |i: usize| r.get(i).cloned().flatten();
                let key = RunKey {
                    cluster: text(0)?,
                    owner: text(1)?.into_bytes(),
                    entry: text(2)?.parse().ok()?,
                    minute: text(3)?.parse().ok()?,
                };
                Some((key, text(4)?.parse().ok()?))
            })
            .collect())
    }

    fn take_over(&mut self, runs: &[RunKey]) -> Result<Vec<Watched>, Failure> {
        let outcome = self.batch(&sql::take_over(), runs.iter(), &[])?;
        Ok(runs
            .iter()
            .map(|key| match outcome.get(&row_key(key)) {
                Some((what, host)) => match what.as_str() {
                    "mine" => Watched::Mine,
                    "ran" => Watched::Ran(host.clone()),
                    "gone" => Watched::Gone,
                    _ => Watched::Waiting,
                },
                None => Watched::Waiting,
            })
            .collect())
    }

    fn end(&mut self, ends: &[(RunKey, i32)]) -> Result<(), Failure> {
        let statuses = sql::array(ends.iter().map(|(_, status)| status.to_string()));
        self.batch(sql::END, ends.iter().map(|(key, _)| key), &[statuses])
            .map(|_| ())
    }

    fn list(&mut self, entries: &[Loaded]) -> Result<bool, Failure> {
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        let params = [
            sql::array(entries.iter().map(|e| e.cluster.as_str())),
            sql::array(entries.iter().map(|e| text(&e.owner))),
            sql::array(entries.iter().map(|e| e.entry.to_string())),
            sql::array(entries.iter().map(|e| text(&e.place))),
            sql::array(entries.iter().map(|e| text(&e.command))),
            self.host.clone(),
            self.session.to_string(),
            sql::array(entries.iter().map(|e| e.rerun.to_string())),
        ];
        Ok(!self.query(sql::LIST, &params)?.rows.is_empty())
    }

    fn unknown(&mut self) -> Result<Vec<String>, Failure> {
        let rows = self.query(sql::UNKNOWN, &[])?;
        Ok(rows
            .rows
            .into_iter()
            .map(|r| r.into_iter().next().flatten().unwrap_or_default())
            .collect())
    }

    fn prune(&mut self, keep_days: u32, keep_runs: u32) -> Result<(u64, u64), Failure> {
        let rows = self.query(sql::PRUNE, &[keep_days.to_string(), keep_runs.to_string()])?;
        let count = |i: usize| {
            rows.rows
                .first()
                .and_then(|r| r.get(i).cloned().flatten())
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        Ok((count(0), count(1)))
    }

    fn release(&mut self) {
        if let Some(mut client) = self.client.take() {
            let _ = client.query(
                sql::RELEASE,
                &[Some(&self.host), Some(&self.session.to_string())],
            );
            client.close();
        }
    }
}

/// This host's clock, in Unix milliseconds.
fn unix_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
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
