//! The history store: one SQLite file (WAL, `synchronous=NORMAL`) that the writer alone writes
//! and its answering threads read, each through a connection of its own.
//!
//! `runs` holds one row per outcome (its id is the run's number `cronctl logs` takes), `gaps`
//! the outcomes that never reached the file. Two small tables kept by triggers, `users` (rows
//! and bytes of each user) and `entries` (rows of each entry), let the bounds be checked
//! without reading `runs` whole.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crond::history::{
    Attempt, ClusterRun, End, Gap, Mail, Outcome, Ran, Reason, Result as Slot, Trigger,
};
use rusqlite::{Connection, ErrorCode, OpenFlags, Transaction, params};

/// The schema's version (`PRAGMA user_version`).
pub const SCHEMA_VERSION: i64 = 3;

/// The bytes a row counts for beside its command and output.
pub const ROW_OVERHEAD: i64 = 200;

/// The most rows one step of pruning deletes (one short transaction: the intake waits no
/// longer than that).
const PRUNE_CHUNK: i64 = 500;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS runs(
    id INTEGER PRIMARY KEY,
    entry TEXT NOT NULL,
    place TEXT NOT NULL,
    user TEXT NOT NULL,
    owner_uid INTEGER,
    command TEXT NOT NULL,
    trigger TEXT NOT NULL,
    slot INTEGER,
    host TEXT NOT NULL,
    at_ms INTEGER NOT NULL,
    ended_ms INTEGER,
    exit INTEGER,
    signal INTEGER,
    timed_out INTEGER NOT NULL DEFAULT 0,
    user_us INTEGER,
    system_us INTEGER,
    max_rss_kib INTEGER,
    output_bytes INTEGER,
    head BLOB,
    tail BLOB,
    mail TEXT,
    mail_words TEXT,
    reason TEXT,
    words TEXT,
    failed INTEGER NOT NULL,
    size INTEGER NOT NULL,
    cluster TEXT,
    cluster_entry TEXT,
    cluster_minute INTEGER,
    attempt INTEGER,
    attempts INTEGER
);
CREATE INDEX IF NOT EXISTS runs_entry ON runs(entry, at_ms);
CREATE INDEX IF NOT EXISTS runs_at ON runs(at_ms);
CREATE INDEX IF NOT EXISTS runs_failed ON runs(at_ms) WHERE failed = 1;
CREATE INDEX IF NOT EXISTS runs_owner ON runs(owner_uid, at_ms);
CREATE INDEX IF NOT EXISTS runs_user ON runs(user, at_ms);
CREATE TABLE IF NOT EXISTS gaps(
    id INTEGER PRIMARY KEY,
    from_ms INTEGER NOT NULL,
    to_ms INTEGER NOT NULL,
    lost INTEGER NOT NULL,
    why TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS gaps_to ON gaps(to_ms);
CREATE TABLE IF NOT EXISTS users(
    user TEXT PRIMARY KEY,
    rows INTEGER NOT NULL,
    bytes INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS entries(
    entry TEXT PRIMARY KEY,
    rows INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TRIGGER IF NOT EXISTS runs_added AFTER INSERT ON runs BEGIN
    INSERT INTO users VALUES (new.user, 1, new.size)
        ON CONFLICT(user) DO UPDATE SET rows = rows + 1, bytes = bytes + new.size;
    INSERT INTO entries VALUES (new.entry, 1)
        ON CONFLICT(entry) DO UPDATE SET rows = rows + 1;
END;
CREATE TRIGGER IF NOT EXISTS runs_removed AFTER DELETE ON runs BEGIN
    UPDATE users SET rows = rows - 1, bytes = bytes - old.size WHERE user = old.user;
    UPDATE entries SET rows = rows - 1 WHERE entry = old.entry;
END;
";

/// What version 1's `runs` lacks: a cluster entry's identity and claim.
const TO_VERSION_2: &str = "
ALTER TABLE runs ADD COLUMN cluster TEXT;
ALTER TABLE runs ADD COLUMN cluster_entry TEXT;
ALTER TABLE runs ADD COLUMN cluster_minute INTEGER;
";

/// What version 2's `runs` lacks: which attempt of its slot a run is (`CRON_RETRY`).
const TO_VERSION_3: &str = "
ALTER TABLE runs ADD COLUMN attempt INTEGER;
ALTER TABLE runs ADD COLUMN attempts INTEGER;
";

/// Why the store could not do what it was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreError {
    /// The file is not a database, or is corrupt: it is set aside and a new one made.
    Broken(String),
    /// It can't be written now (disk full, read-only, I/O error): the batch is dropped and the
    /// next one tried.
    Unwritable(String),
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Broken(why) | StoreError::Unwritable(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> StoreError {
        let broken = matches!(
            e.sqlite_error_code(),
            Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase)
        );
        if broken {
            StoreError::Broken(e.to_string())
        } else {
            StoreError::Unwritable(e.to_string())
        }
    }
}

/// What the bounds keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub keep_days: u32,
    pub keep_runs: u32,
    pub max_size: u64,
}

/// What one message adds to the store (outcomes are most of them: not boxed).
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(clippy::large_enum_variant)]
pub enum Item {
    Outcome(Outcome),
    Gap(Gap),
}

/// A connection with the store's settings: WAL, `synchronous=NORMAL`, a busy timeout.
fn connect(path: &Path, flags: OpenFlags) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(path, flags)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    Ok(conn)
}

/// The writer's connection.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    /// The size bound was passed: users over their share are being cut down to it.
    trimming: bool,
}

impl Store {
    /// Opens (or creates) the store at `path` and checks it (`PRAGMA quick_check`).
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = connect(path, flags)?;
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Unwritable(format!(
                "the store's journal mode stays {mode}"
            )));
        }
        conn.execute_batch("PRAGMA synchronous=NORMAL")?;
        let check: String = conn.query_row("PRAGMA quick_check", [], |r| r.get(0))?;
        if check != "ok" {
            return Err(StoreError::Broken(format!("quick_check says {check}")));
        }
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION {
            return Err(StoreError::Broken(format!(
                "its schema is version {version}, newer than this writer's {SCHEMA_VERSION}"
            )));
        }
        if version == 1 {
            conn.execute_batch(TO_VERSION_2)?;
        }
        if version == 1 || version == 2 {
            conn.execute_batch(TO_VERSION_3)?;
        }
        conn.execute_batch(SCHEMA)?;
        conn.execute_batch(&format!("PRAGMA user_version={SCHEMA_VERSION}"))?;
        Ok(Store {
            conn,
            trimming: false,
        })
    }

    /// Adds `items` in one transaction: all or none.
    pub fn insert(&mut self, items: &[Item]) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        for item in items {
            match item {
                Item::Outcome(o) => insert_outcome(&tx, o)?,
                Item::Gap(g) => insert_gap(&tx, g)?,
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Deletes at most [`PRUNE_CHUNK`] rows the bounds do not keep, the oldest first: `true`
    /// when more may be left (the caller calls again, between batches).
    pub fn prune_step(&mut self, bounds: &Bounds, now_ms: i64) -> Result<bool, StoreError> {
        let cutoff = now_ms - i64::from(bounds.keep_days) * 86_400_000;
        let gone = self.conn.execute(
            "DELETE FROM gaps WHERE id IN (SELECT id FROM gaps WHERE to_ms < ?1 LIMIT ?2)",
            params![cutoff, PRUNE_CHUNK],
        )?;
        if gone > 0 {
            return Ok(true);
        }
        let gone = self.conn.execute(
            "DELETE FROM runs WHERE id IN \
             (SELECT id FROM runs WHERE at_ms < ?1 ORDER BY at_ms LIMIT ?2)",
            params![cutoff, PRUNE_CHUNK],
        )?;
        if gone > 0 {
            return Ok(true);
        }
        if self.prune_runs_per_entry(bounds.keep_runs)? {
            return Ok(true);
        }
        if self.prune_size(bounds.max_size)? {
            return Ok(true);
        }
        self.conn.execute_batch(
            "DELETE FROM users WHERE rows <= 0; DELETE FROM entries WHERE rows <= 0;",
        )?;
        Ok(false)
    }

    /// One entry over `keep_runs` rows loses its oldest (up to a chunk).
    fn prune_runs_per_entry(&mut self, keep_runs: u32) -> Result<bool, StoreError> {
        let over: Option<(String, i64)> = optional(self.conn.query_row(
            "SELECT entry, rows FROM entries WHERE rows > ?1 LIMIT 1",
            [keep_runs],
            |r| Ok((r.get(0)?, r.get(1)?)),
        ))?;
        let Some((entry, rows)) = over else {
            return Ok(false);
        };
        let excess = (rows - i64::from(keep_runs)).min(PRUNE_CHUNK);
        self.conn.execute(
            "DELETE FROM runs WHERE id IN \
             (SELECT id FROM runs WHERE entry = ?1 ORDER BY at_ms, id LIMIT ?2)",
            params![entry, excess],
        )?;
        Ok(true)
    }

    /// Over `max_size` bytes in all: each user over their share (`max_size` over the number of
    /// users with rows) loses their oldest rows (up to a chunk), so one user's output never
    /// pushes out another's history.
    fn prune_size(&mut self, max_size: u64) -> Result<bool, StoreError> {
        let (users, total): (i64, i64) = self.conn.query_row(
            "SELECT count(*), coalesce(sum(bytes), 0) FROM users WHERE rows > 0",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )?;
        let max = i64::try_from(max_size).unwrap_or(i64::MAX);
        // Once over the bound, every user over their share is cut down to it (not only until
        // the total is back under the bound): the room is shared out again.
        self.trimming |= total > max;
        if users == 0 || !self.trimming {
            return Ok(false);
        }
        let share = max / users;
        let over: Option<(String, i64)> = optional(self.conn.query_row(
            "SELECT user, bytes FROM users WHERE rows > 0 AND bytes > ?1 \
             ORDER BY bytes DESC LIMIT 1",
            [share],
            |r| Ok((r.get(0)?, r.get(1)?)),
        ))?;
        let Some((user, bytes)) = over else {
            self.trimming = false;
            return Ok(false);
        };
        // The oldest rows whose sizes add up to the excess (a chunk at most).
        let mut excess = bytes - share;
        let mut ids = Vec::new();
        {
            let mut stmt = self
                .conn
                .prepare("SELECT id, size FROM runs WHERE user = ?1 ORDER BY at_ms, id LIMIT ?2")?;
            let mut rows = stmt.query(params![user, PRUNE_CHUNK])?;
            while let Some(row) = rows.next()? {
                if excess <= 0 {
                    break;
                }
                ids.push(row.get::<_, i64>(0)?);
                excess -= row.get::<_, i64>(1)?;
            }
        }
        let tx = self.conn.transaction()?;
        {
            let mut delete = tx.prepare("DELETE FROM runs WHERE id = ?1")?;
            for id in &ids {
                delete.execute([id])?;
            }
        }
        tx.commit()?;
        Ok(!ids.is_empty())
    }
}

/// `Ok(None)` for a query that found no row.
pub fn optional<T>(r: rusqlite::Result<T>) -> rusqlite::Result<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(rusqlite::Error::QueryReturnedNoRows) => Ok(None),
        Err(e) => Err(e),
    }
}

/// What a row counts for against `--max-size`.
fn row_size(o: &Outcome) -> i64 {
    let output = match &o.result {
        Slot::Ran(ran) => ran.head.len() + ran.tail.len(),
        Slot::NotRun { words, .. } => words.len(),
    };
    (o.command.len() + output) as i64 + ROW_OVERHEAD
}

fn insert_outcome(tx: &Transaction<'_>, o: &Outcome) -> rusqlite::Result<()> {
    let mut stmt = tx.prepare_cached(
        "INSERT INTO runs (entry, place, user, owner_uid, command, trigger, slot, host, at_ms, \
         ended_ms, exit, signal, timed_out, user_us, system_us, max_rss_kib, output_bytes, head, \
         tail, mail, mail_words, reason, words, failed, size, cluster, cluster_entry, \
         cluster_minute, attempt, attempts) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, \
         ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, \
         ?28, ?29, ?30)",
    )?;
    let none_ran: Ran = Ran {
        ended_ms: 0,
        end: End::Exited(0),
        timed_out: false,
        user_us: 0,
        system_us: 0,
        max_rss_kib: 0,
        output_bytes: 0,
        head: Vec::new(),
        tail: Vec::new(),
        mail: Mail::None,
    };
    let (ran, reason, words) = match &o.result {
        Slot::Ran(ran) => (Some(ran), None, None),
        Slot::NotRun { reason, words } => (None, Some(reason.code()), Some(words.as_str())),
    };
    let r = ran.unwrap_or(&none_ran);
    let (exit, signal) = match (ran.is_some(), r.end) {
        (false, _) => (None, None),
        (true, End::Exited(code)) => (Some(code), None),
        (true, End::Signaled(signal)) => (None, Some(signal)),
    };
    let (mail, mail_words) = match &r.mail {
        Mail::None => (None, None),
        Mail::Sent => (Some("sent"), None),
        Mail::Failed(words) => (Some("failed"), Some(words.as_str())),
    };
    let count = |n: u64| ran.map(|_| i64::try_from(n).unwrap_or(i64::MAX));
    stmt.execute(params![
        o.entry,
        o.place,
        o.user,
        o.owner_uid,
        o.command,
        o.trigger.code(),
        o.slot,
        o.host,
        o.at_ms,
        ran.map(|r| r.ended_ms),
        exit,
        signal,
        r.timed_out,
        count(r.user_us),
        count(r.system_us),
        count(r.max_rss_kib),
        count(r.output_bytes),
        ran.map(|r| r.head.as_slice()),
        ran.map(|r| r.tail.as_slice()),
        mail,
        mail_words,
        reason,
        words,
        o.failed(),
        row_size(o),
        o.cluster.as_ref().map(|c| c.cluster.as_str()),
        o.cluster.as_ref().map(|c| c.entry.to_string()),
        o.cluster.as_ref().and_then(|c| c.minute),
        o.attempt.map(|a| a.number),
        o.attempt.map(|a| a.of),
    ])?;
    Ok(())
}

fn insert_gap(tx: &Transaction<'_>, g: &Gap) -> rusqlite::Result<()> {
    tx.prepare_cached("INSERT INTO gaps (from_ms, to_ms, lost, why) VALUES (?1, ?2, ?3, ?4)")?
        .execute(params![
            g.from_ms,
            g.to_ms,
            i64::try_from(g.lost).unwrap_or(i64::MAX),
            g.why
        ])?;
    Ok(())
}

/// Renames the store at `path` (and its `-wal` and `-shm`) to `PATH.broken-UNIXTIME`: the
/// name it now has.
pub fn set_aside(path: &Path, now_s: i64) -> std::io::Result<PathBuf> {
    let mut aside = path.as_os_str().to_owned();
    aside.push(format!(".broken-{now_s}"));
    let aside = PathBuf::from(aside);
    for suffix in ["-wal", "-shm"] {
        let mut from = path.as_os_str().to_owned();
        from.push(suffix);
        let mut to = aside.as_os_str().to_owned();
        to.push(suffix);
        match std::fs::rename(&from, &to) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    match std::fs::rename(path, &aside) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(aside),
    }
}

/// One stored outcome: its run number and what was recorded (the output's ends only when
/// asked for).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    pub run: i64,
    pub outcome: Outcome,
}

/// One row of `runs` back into its outcome (`head` and `tail` when the select has them).
fn stored(row: &rusqlite::Row<'_>) -> rusqlite::Result<Stored> {
    let text = |i: usize| -> rusqlite::Result<String> {
        Ok(row.get::<_, Option<String>>(i)?.unwrap_or_default())
    };
    let reason: Option<String> = row.get(20)?;
    let result = match reason {
        Some(code) => Slot::NotRun {
            reason: Reason::parse(&code).unwrap_or(Reason::NotStarted),
            words: text(21)?,
        },
        None => {
            let count = |i| -> rusqlite::Result<u64> {
                Ok(row.get::<_, Option<i64>>(i)?.unwrap_or(0).max(0) as u64)
            };
            let end = match row.get::<_, Option<i32>>(12)? {
                Some(signal) => End::Signaled(signal),
                None => End::Exited(row.get::<_, Option<i32>>(11)?.unwrap_or(0)),
            };
            Slot::Ran(Ran {
                ended_ms: row.get::<_, Option<i64>>(10)?.unwrap_or(0),
                end,
                timed_out: row.get(13)?,
                user_us: count(14)?,
                system_us: count(15)?,
                max_rss_kib: count(16)?,
                output_bytes: count(17)?,
                head: row.get::<_, Option<Vec<u8>>>(22)?.unwrap_or_default(),
                tail: row.get::<_, Option<Vec<u8>>>(23)?.unwrap_or_default(),
                mail: match row.get::<_, Option<String>>(18)?.as_deref() {
                    None => Mail::None,
                    Some("sent") => Mail::Sent,
                    Some(_) => Mail::Failed(text(19)?),
                },
            })
        }
    };
    Ok(Stored {
        run: row.get(0)?,
        outcome: Outcome {
            entry: row.get(1)?,
            place: row.get(2)?,
            user: row.get(3)?,
            owner_uid: row.get(4)?,
            command: row.get(5)?,
            trigger: Trigger::parse(&row.get::<_, String>(6)?).unwrap_or(Trigger::Schedule),
            slot: row.get(7)?,
            host: row.get(8)?,
            at_ms: row.get(9)?,
            cluster: cluster_run(row.get(24)?, row.get(25)?, row.get(26)?),
            attempt: attempt(row.get(27)?, row.get(28)?),
            result,
        },
    })
}

/// Which attempt of its slot a run is, from its columns (none when they are not both there or
/// make no sense).
fn attempt(number: Option<u8>, of: Option<u8>) -> Option<Attempt> {
    let (number, of) = (number?, of?);
    (1..=of).contains(&number).then_some(Attempt { number, of })
}

/// A cluster entry's identity from its columns (none when they are not all there).
fn cluster_run(
    cluster: Option<String>,
    entry: Option<String>,
    minute: Option<i64>,
) -> Option<ClusterRun> {
    Some(ClusterRun {
        cluster: cluster?,
        entry: entry?.parse().ok()?,
        minute,
    })
}

/// The columns [`stored`] reads, the output's ends as empty blobs (`with_output` false) or as
/// they are.
fn columns(with_output: bool) -> String {
    let output = if with_output {
        "head, tail"
    } else {
        "NULL, NULL"
    };
    format!(
        "id, entry, place, user, owner_uid, command, trigger, slot, host, at_ms, ended_ms, exit, \
         signal, timed_out, user_us, system_us, max_rss_kib, output_bytes, mail, mail_words, \
         reason, words, {output}, cluster, cluster_entry, cluster_minute, attempt, attempts"
    )
}

mod reader;

pub use reader::{Found, HistoryAsk, Listing, Reader, Seen};

#[cfg(test)]
mod tests;
