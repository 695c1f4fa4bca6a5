//! The commands that read the cluster database (docs/cluster.md) — hosts and their leases,
//! claims, history, paused entries — and pause/resume of an entry on every host: one
//! connection, the schema made if missing, one statement, its rows as a table.

use std::fmt;

use crond::cluster::entry_id::EntryKey;

use crate::cli::{Command, Target};
use crate::conn::{Connect, Connection, DbError, Rows};
use crate::db::SetupError;
use crate::{cli, db, sql};

/// A time column as UTC RFC 3339, or empty.
fn ts(column: &str) -> String {
    format!("coalesce(to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), '')")
}

/// Runs a database command with the settings `db` (or the defaults): its text, or the error.
pub(crate) fn report(
    connector: &dyn Connect,
    db: Option<String>,
    command: &Command,
) -> Result<String, ReportError> {
    let info = db::conninfo(&db::settings(db)?)?;
    let mut client = db::connect(connector, &info)?;
    client.batch(sql::SCHEMA)?;
    let out = run_command(client.as_mut(), command).map_err(ReportError::Db);
    client.close();
    out
}

/// Why a database command gave no text: no connection, or the database's error.
#[derive(Debug)]
pub(crate) enum ReportError {
    Setup(SetupError),
    Db(DbError),
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Setup(e) => write!(f, "{e}"),
            ReportError::Db(e) => write!(f, "{e}"),
        }
    }
}

impl From<SetupError> for ReportError {
    fn from(e: SetupError) -> ReportError {
        ReportError::Setup(e)
    }
}

impl From<DbError> for ReportError {
    fn from(e: DbError) -> ReportError {
        ReportError::Db(e)
    }
}

fn run_command(client: &mut dyn Connection, command: &Command) -> Result<String, DbError> {
    match command {
        Command::Hosts => hosts(client),
        Command::Claims { cluster } => claims(client, cluster.as_deref()),
        Command::History {
            cluster,
            entry,
            limit,
        } => history(client, cluster.as_deref(), *entry, *limit),
        Command::Paused => paused(client),
        Command::Pause { target, pause } => pause_entry(client, target, *pause),
        Command::Help | Command::Version | Command::Helper(_) | Command::Control { .. } => {
            Ok(String::new())
        }
    }
}

/// `hosts`: each host's lease and session.
fn hosts(client: &mut dyn Connection) -> Result<String, DbError> {
    let rows = client.query(
        &format!(
            "SELECT host, CASE WHEN lease_until > now() THEN 'live' ELSE 'expired' END,
                    {}, {}, {}, session::text
             FROM crond_hosts ORDER BY host",
            ts("lease_until"),
            ts("started"),
            ts("seen")
        ),
        &[],
    )?;
    Ok(table(
        &[
            "HOST",
            "LEASE",
            "LEASE UNTIL",
            "SESSION START",
            "SEEN",
            "SESSION",
        ],
        &rows,
    ))
}

/// `claims`: the runs claimed and not ended, of one cluster or all.
fn claims(client: &mut dyn Connection, cluster: Option<&str>) -> Result<String, DbError> {
    let rows = client.query(
        &format!(
            "SELECT cluster, owner, entry, {}, host,
                    CASE WHEN started IS NULL THEN 'claimed' ELSE 'running' END, {}
             FROM crond_runs
             WHERE ended IS NULL AND ($1::text IS NULL OR cluster = $1)
             ORDER BY minute, cluster, owner, entry LIMIT {}",
            ts("minute"),
            ts("claimed"),
            cli::MAX_LIMIT
        ),
        &[cluster],
    )?;
    Ok(table(
        &[
            "CLUSTER", "USER", "ENTRY", "DUE", "HOST", "STATE", "CLAIMED",
        ],
        &rows,
    ))
}

/// `history`: the latest `limit` runs, of one cluster or all, one entry or all.
fn history(
    client: &mut dyn Connection,
    cluster: Option<&str>,
    entry: Option<EntryKey>,
    limit: u32,
) -> Result<String, DbError> {
    let entry = entry.map(|e| e.to_string());
    let rows = client.query(
        &format!(
            "SELECT cluster, owner, entry, {}, host, {}, {}, {},
                    coalesce(status::text, ''), coalesce(taken_from, '')
             FROM crond_runs
             WHERE ($1::text IS NULL OR cluster = $1) AND ($2::text IS NULL OR entry = $2)
             ORDER BY minute DESC, cluster, owner, entry LIMIT $3::int",
            ts("minute"),
            ts("claimed"),
            ts("started"),
            ts("ended")
        ),
        &[cluster, entry.as_deref(), Some(&limit.to_string())],
    )?;
    Ok(table(
        &[
            "CLUSTER",
            "USER",
            "ENTRY",
            "DUE",
            "HOST",
            "CLAIMED",
            "STARTED",
            "ENDED",
            "STATUS",
            "TAKEN FROM",
        ],
        &rows,
    ))
}

/// `paused`: the entries paused on every host, and since when.
fn paused(client: &mut dyn Connection) -> Result<String, DbError> {
    let rows = client.query(
        &format!(
            "SELECT cluster, owner, entry, {} FROM crond_paused
             ORDER BY cluster, owner, entry",
            ts("since")
        ),
        &[],
    )?;
    Ok(table(&["CLUSTER", "USER", "ENTRY", "SINCE"], &rows))
}

fn pause_entry(
    client: &mut dyn Connection,
    target: &Target,
    pause: bool,
) -> Result<String, DbError> {
    let entry = target.entry.to_string();
    let params = [
        Some(target.cluster.as_str()),
        Some(target.user.as_str()),
        Some(entry.as_str()),
    ];
    let name = format!("{} {} {}", target.cluster, target.user, entry);
    if pause {
        let rows = client.query(
            "INSERT INTO crond_paused (cluster, owner, entry) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
            &params,
        )?;
        Ok(match rows.affected {
            0 => format!("{name}: paused already"),
            _ => format!("{name}: paused: no host claims its runs from now on"),
        })
    } else {
        let rows = client.query(
            "DELETE FROM crond_paused WHERE (cluster, owner, entry) = ($1, $2, $3)",
            &params,
        )?;
        Ok(match rows.affected {
            0 => format!("{name}: was not paused"),
            _ => format!("{name}: resumed"),
        })
    }
}

/// A cell as it may reach a terminal: what the database holds (host names, `taken_from`, user
/// names) is anyone's text, so every control character is spelled out as `crontab -l` does
/// (tab and newline too: a cell is one line), and the C1 controls (U+0080 to U+009F, which some
/// terminals take as escape sequences) as `\u{9b}`.
pub(crate) fn printable(cell: &str) -> String {
    let mut out = String::with_capacity(cell.len());
    for c in cell.chars() {
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            c if c.is_ascii_control() => {
                out.push_str(&String::from_utf8_lossy(&crond::protect_list(&[c as u8])))
            }
            c if crond::log::line::is_hidden_control(c) => {
                out.push_str(&format!("\\u{{{:x}}}", u32::from(c)))
            }
            c => out.push(c),
        }
    }
    out
}

/// Rows under a header, each column as wide as its widest cell.
fn table(header: &[&str], rows: &Rows) -> String {
    let cells: Vec<Vec<String>> = rows
        .rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|c| printable(c.as_deref().unwrap_or_default()))
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cols: Vec<&str>| {
        let mut text = String::new();
        for (i, (c, w)) in cols.iter().zip(&widths).enumerate() {
            if i + 1 == cols.len() {
                text.push_str(c);
            } else {
                text.push_str(&format!("{c:<w$}  "));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for row in &cells {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_text_reaches_the_terminal_with_every_control_spelled_out() {
        let rows = Rows {
            rows: vec![vec![
                Some("evil\u{1b}]0;pwned\u{7}\r\u{8}".to_string()),
                Some("a\tb\nc\u{9b}31m".to_string()),
                None,
            ]],
            ..Rows::default()
        };
        let out = table(&["HOST", "FROM", "X"], &rows);
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        assert_eq!(out.lines().count(), 2, "{out:?}");
        assert!(out.contains("evil\\033]0;pwned\\007\\r\\b"), "{out:?}");
        assert!(out.contains("a\\tb\\nc\\u{9b}31m"), "{out:?}");
    }
}
