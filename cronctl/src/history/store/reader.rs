//! The store's reading side: one connection per answering thread. Every select filters the
//! rows by who asks in SQL (`Query::may_see`'s rule), so a row the asker may not see is never
//! read into memory, nor counted, nor named in an error.

use std::path::Path;

use crond::history::{Gap, Query};
use rusqlite::types::Value;
use rusqlite::{Connection, OpenFlags, params_from_iter};

use super::{StoreError, Stored, columns, connect, stored};

/// The most gaps one answer shows.
const MAX_GAPS: i64 = 100;

/// The most candidates an ambiguous prefix lists.
const MAX_CANDIDATES: usize = 8;

/// Who asks, as the query says: every row (`all`), or those of `uid`'s crontabs and of the
/// system lines of the user `name`.
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    pub all: bool,
    pub uid: u32,
    pub name: Option<&'a str>,
}

impl<'a> Seen<'a> {
    pub fn of(query: &'a Query) -> Seen<'a> {
        Seen {
            all: query.all,
            uid: query.uid,
            name: query.name.as_deref(),
        }
    }

    /// The condition on `runs` (`TRUE` for all), its values appended to `values`.
    fn clause(&self, values: &mut Vec<Value>) -> String {
        if self.all {
            return "1".into();
        }
        values.push(Value::Integer(i64::from(self.uid)));
        match self.name {
            Some(name) => {
                values.push(Value::Text(name.to_string()));
                format!(
                    "(owner_uid = ?{} OR (owner_uid IS NULL AND user = ?{}))",
                    values.len() - 1,
                    values.len()
                )
            }
            None => format!("owner_uid = ?{}", values.len()),
        }
    }
}

/// What an entry's id or prefix names among the rows the asker may see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// No entry.
    Nothing,
    /// One entry: its whole id.
    One(String),
    /// More than one: each id with its place (at most [`MAX_CANDIDATES`]).
    Several(Vec<(String, String)>),
}

/// What `history` asks, the entry resolved to a whole id.
#[derive(Debug, Clone, Copy)]
pub struct HistoryAsk<'a> {
    pub entry: Option<&'a str>,
    pub user: Option<&'a str>,
    pub failed: bool,
    pub since_ms: Option<i64>,
    pub limit: u32,
}

/// The outcomes a `history` lists, newest first, and the gaps among them (newest first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    pub rows: Vec<Stored>,
    pub gaps: Vec<(i64, Gap)>,
    /// What the list lacks, said after it.
    pub note: Option<String>,
}

/// A reading connection.
#[derive(Debug)]
pub struct Reader {
    conn: Connection,
}

impl Reader {
    /// Opens the store at `path` to read (the writer has made it: no file is created here).
    pub fn open(path: &Path) -> Result<Reader, StoreError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = connect(path, flags)?;
        conn.execute_batch("PRAGMA query_only=1")?;
        Ok(Reader { conn })
    }

    /// The entry `text` names (a whole id, or a prefix of 4 or more hex digits) among those
    /// the asker may see.
    pub fn resolve(&self, text: &str, seen: Seen<'_>) -> Result<Found, StoreError> {
        let text = text.to_ascii_lowercase();
        let mut values = vec![Value::Text(text.clone()), Value::Text(format!("{text}~"))];
        let visible = seen.clause(&mut values);
        let sql = format!(
            "SELECT e.entry, (SELECT place FROM runs WHERE runs.entry = e.entry \
             ORDER BY at_ms DESC LIMIT 1) FROM entries e \
             WHERE e.entry >= ?1 AND e.entry < ?2 AND e.rows > 0 AND EXISTS \
             (SELECT 1 FROM runs WHERE runs.entry = e.entry AND {visible}) \
             ORDER BY e.entry LIMIT {}",
            MAX_CANDIDATES + 1
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let found = stmt
            .query_map(params_from_iter(values), |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<Vec<(String, Option<String>)>>>()?;
        if let Some((id, _)) = found.iter().find(|(id, _)| *id == text) {
            return Ok(Found::One(id.clone()));
        }
        Ok(match found.len() {
            0 => Found::Nothing,
            1 => Found::One(found[0].0.clone()),
            _ => Found::Several(
                found
                    .into_iter()
                    .take(MAX_CANDIDATES)
                    .map(|(id, place)| (id, place.unwrap_or_default()))
                    .collect(),
            ),
        })
    }

    /// The outcomes `ask` names that the asker may see, newest first, and the gaps since the
    /// oldest of them.
    pub fn history(&self, ask: &HistoryAsk<'_>, seen: Seen<'_>) -> Result<Listing, StoreError> {
        let mut values = Vec::new();
        let mut conditions = vec![seen.clause(&mut values)];
        if let Some(entry) = ask.entry {
            values.push(Value::Text(entry.to_string()));
            conditions.push(format!("entry = ?{}", values.len()));
        }
        if let Some(user) = ask.user {
            values.push(Value::Text(user.to_string()));
            conditions.push(format!("user = ?{}", values.len()));
        }
        if ask.failed {
            conditions.push("failed = 1".into());
        }
        if let Some(since) = ask.since_ms {
            values.push(Value::Integer(since));
            conditions.push(format!("at_ms >= ?{}", values.len()));
        }
        let sql = format!(
            "SELECT {} FROM runs WHERE {} ORDER BY at_ms DESC, id DESC LIMIT {}",
            columns(false),
            conditions.join(" AND "),
            ask.limit
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let rows = stmt
            .query_map(params_from_iter(values), stored)?
            .collect::<rusqlite::Result<Vec<Stored>>>()?;
        // The gaps that reach into the time the list covers: since the oldest row listed when
        // the limit cut the list, else since `--since` (or ever).
        let from = match rows.last() {
            Some(oldest) if rows.len() as u32 >= ask.limit => Some(oldest.outcome.at_ms),
            _ => ask.since_ms,
        };
        let gaps = self.gaps(from.unwrap_or(i64::MIN))?;
        Ok(Listing {
            rows,
            gaps,
            note: None,
        })
    }

    /// The latest record of `entry` (a whole id) as a cluster entry, when the asker may see it.
    pub fn latest_cluster_record(
        &self,
        entry: &str,
        seen: Seen<'_>,
    ) -> Result<Option<Stored>, StoreError> {
        let mut values = vec![Value::Text(entry.to_string())];
        let visible = seen.clause(&mut values);
        let sql = format!(
            "SELECT {} FROM runs WHERE entry = ?1 AND {visible} AND cluster IS NOT NULL \
             ORDER BY at_ms DESC, id DESC LIMIT 1",
            columns(false)
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query_map(params_from_iter(values), stored)?;
        Ok(rows.next().transpose()?)
    }

    fn gaps(&self, from_ms: i64) -> Result<Vec<(i64, Gap)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, from_ms, to_ms, lost, why FROM gaps WHERE to_ms >= ?1 \
             ORDER BY to_ms DESC, id DESC LIMIT ?2",
        )?;
        let gaps = stmt
            .query_map(rusqlite::params![from_ms, MAX_GAPS], |r| {
                Ok((
                    r.get(0)?,
                    Gap {
                        from_ms: r.get(1)?,
                        to_ms: r.get(2)?,
                        lost: r.get::<_, i64>(3)?.max(0) as u64,
                        why: r.get(4)?,
                    },
                ))
            })?
            .collect::<rusqlite::Result<Vec<_>>>()?;
        Ok(gaps)
    }

    /// Run `run` of `entry` (a whole id), or (`None`) the entry's last run that ran, with its
    /// output, when the asker may see it.
    pub fn run(
        &self,
        entry: &str,
        run: Option<i64>,
        seen: Seen<'_>,
    ) -> Result<Option<Stored>, StoreError> {
        let mut values = vec![Value::Text(entry.to_string())];
        let visible = seen.clause(&mut values);
        let which = match run {
            Some(run) => {
                values.push(Value::Integer(run));
                format!("id = ?{}", values.len())
            }
            None => "reason IS NULL".to_string(),
        };
        let sql = format!(
            "SELECT {} FROM runs WHERE entry = ?1 AND {visible} AND {which} \
             ORDER BY at_ms DESC, id DESC LIMIT 1",
            columns(true)
        );
        let mut stmt = self.conn.prepare(&sql)?;
        let mut rows = stmt.query_map(params_from_iter(values), stored)?;
        Ok(rows.next().transpose()?)
    }
}
