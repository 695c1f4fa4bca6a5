//! The commands that read the cluster database (docs/cluster.md) — hosts and their leases, the
//! entries the hosts have loaded, claims, history, paused entries — and pause/resume of an
//! entry on every host: one connection, the schema made if missing, a statement or two, the
//! rows as a table. Each entry id is shown with where it is written and its command, as the
//! hosts listed them (`-` for an id no host has loaded).

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

/// The widest row a table prints by default: its last column (the command) is cut with `…` to
/// fit, down to [`MIN_LAST`] characters; `--wide` shows it whole.
const WIDTH: usize = 100;

/// The least of the last column a table shows when its other columns are wide.
const MIN_LAST: usize = 24;

/// `place` and `command` of the entry of the row aliased `r` (its `cluster`, `owner` and
/// `entry`), as the host `host` listed it (a SQL expression), else as the first host did.
fn entry_of(host: &str) -> String {
    format!(
        "LEFT JOIN LATERAL (SELECT e.place, e.command FROM crond_entries e
             WHERE (e.cluster, e.owner, e.entry) = (r.cluster, r.owner, r.entry)
             ORDER BY e.host = {host} DESC, e.host LIMIT 1) e ON true"
    )
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
    let out = run_command(client.as_mut(), command);
    client.close();
    out
}

/// Why a database command gave no text: no connection, the database's error, or a pause of an
/// entry no host has loaded (without `--force`).
#[derive(Debug)]
pub(crate) enum ReportError {
    Setup(SetupError),
    Db(DbError),
    NotLoaded(Target),
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReportError::Setup(e) => write!(f, "{e}"),
            ReportError::Db(e) => write!(f, "{e}"),
            ReportError::NotLoaded(t) => write!(
                f,
                "no host has loaded entry {} of {} in cluster {} (cronctl entries lists them); \
                 --force pauses it anyway",
                t.entry, t.user, t.cluster
            ),
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

fn run_command(client: &mut dyn Connection, command: &Command) -> Result<String, ReportError> {
    Ok(match command {
        Command::Hosts => hosts(client)?,
        Command::Entries { cluster, wide } => entries(client, cluster.as_deref(), *wide)?,
        Command::Claims { cluster, wide } => claims(client, cluster.as_deref(), *wide)?,
        Command::History {
            cluster,
            entry,
            limit,
            wide,
        } => history(client, cluster.as_deref(), *entry, *limit, *wide)?,
        Command::Paused { wide } => paused(client, *wide)?,
        Command::Pause {
            target,
            pause,
            force,
        } => pause_entry(client, target, *pause, *force)?,
        Command::Help
        | Command::Version
        | Command::Helper(_)
        | Command::HistoryWriter(_)
        | Command::Notify(_)
        | Command::Control { .. } => String::new(),
    })
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
        true,
        &[],
    ))
}

/// `entries`: the cluster entries the hosts have loaded, of one cluster or all, one row per
/// place an entry is written at, with the hosts that loaded it there (an entry's rows
/// together).
fn entries(
    client: &mut dyn Connection,
    cluster: Option<&str>,
    wide: bool,
) -> Result<String, DbError> {
    let rows = client.query(
        &format!(
            "SELECT cluster, entry, owner, place, string_agg(host, ',' ORDER BY host),
                    min(command)
             FROM crond_entries
             WHERE $1::text IS NULL OR cluster = $1
             GROUP BY cluster, owner, entry, place
             ORDER BY cluster, owner,
                      min(place) OVER (PARTITION BY cluster, owner, entry), entry, place
             LIMIT {}",
            cli::MAX_LIMIT
        ),
        &[cluster],
    )?;
    Ok(table(
        &["CLUSTER", "ENTRY", "USER", "PLACE", "HOSTS", "COMMAND"],
        &rows,
        wide,
        &[],
    ))
}

/// `claims`: the runs claimed and not ended, of one cluster or all.
fn claims(
    client: &mut dyn Connection,
    cluster: Option<&str>,
    wide: bool,
) -> Result<String, DbError> {
    let rows = client.query(
        &format!(
            "SELECT r.cluster, r.owner, r.entry, coalesce(e.place, '-'), {}, r.host,
                    CASE WHEN r.started IS NULL THEN 'claimed' ELSE 'running' END, {},
                    coalesce(e.command, '-')
             FROM crond_runs r {}
             WHERE r.ended IS NULL AND ($1::text IS NULL OR r.cluster = $1)
             ORDER BY r.minute, r.cluster, r.owner, r.entry LIMIT {}",
            ts("r.minute"),
            ts("r.claimed"),
            entry_of("r.host"),
            cli::MAX_LIMIT
        ),
        &[cluster],
    )?;
    Ok(table(
        &[
            "CLUSTER", "USER", "ENTRY", "PLACE", "DUE", "HOST", "STATE", "CLAIMED", "COMMAND",
        ],
        &rows,
        wide,
        &["USER", "CLAIMED"],
    ))
}

/// `history`: the latest `limit` runs, of one cluster or all, one entry or all.
fn history(
    client: &mut dyn Connection,
    cluster: Option<&str>,
    entry: Option<EntryKey>,
    limit: u32,
    wide: bool,
) -> Result<String, DbError> {
    let entry = entry.map(|e| e.to_string());
    let rows = client.query(
        &format!(
            "SELECT r.cluster, r.owner, r.entry, coalesce(e.place, '-'), {}, r.host, {}, {}, {},
                    coalesce(r.reason, r.status::text, ''), coalesce(r.taken_from, ''),
                    coalesce(e.command, '-')
             FROM crond_runs r {}
             WHERE ($1::text IS NULL OR r.cluster = $1) AND ($2::text IS NULL OR r.entry = $2)
             ORDER BY r.minute DESC, r.cluster, r.owner, r.entry LIMIT $3::int",
            ts("r.minute"),
            ts("r.claimed"),
            ts("r.started"),
            ts("r.ended"),
            entry_of("r.host")
        ),
        &[cluster, entry.as_deref(), Some(&limit.to_string())],
    )?;
    Ok(table(
        &[
            "CLUSTER",
            "USER",
            "ENTRY",
            "PLACE",
            "DUE",
            "HOST",
            "CLAIMED",
            "STARTED",
            "ENDED",
            "STATUS",
            "TAKEN FROM",
            "COMMAND",
        ],
        &rows,
        wide,
        &["USER", "CLAIMED", "STARTED", "ENDED", "TAKEN FROM"],
    ))
}

/// `paused`: the entries paused on every host, and since when.
fn paused(client: &mut dyn Connection, wide: bool) -> Result<String, DbError> {
    let rows = client.query(
        &format!(
            "SELECT r.cluster, r.owner, r.entry, coalesce(e.place, '-'), {},
                    coalesce(e.command, '-')
             FROM crond_paused r {}
             ORDER BY r.cluster, r.owner, r.entry",
            ts("r.since"),
            entry_of("''")
        ),
        &[],
    )?;
    Ok(table(
        &["CLUSTER", "USER", "ENTRY", "PLACE", "SINCE", "COMMAND"],
        &rows,
        wide,
        &[],
    ))
}

/// `pause` (refused for an entry no host has loaded, unless `force`) and `resume`: what was
/// done, and the entry it was done to (where it is written and its command).
fn pause_entry(
    client: &mut dyn Connection,
    target: &Target,
    pause: bool,
    force: bool,
) -> Result<String, ReportError> {
    let entry = target.entry.to_string();
    let params = [
        Some(target.cluster.as_str()),
        Some(target.user.as_str()),
        Some(entry.as_str()),
    ];
    let loaded = client.query(
        "SELECT place, command, host FROM crond_entries
         WHERE (cluster, owner, entry) = ($1, $2, $3) ORDER BY place, host",
        &params,
    )?;
    if pause && loaded.rows.is_empty() && !force {
        return Err(ReportError::NotLoaded(target.clone()));
    }
    let name = format!("{} {} {}", target.cluster, target.user, entry);
    let said = if pause {
        let rows = client.query(
            "INSERT INTO crond_paused (cluster, owner, entry) VALUES ($1, $2, $3)
             ON CONFLICT DO NOTHING",
            &params,
        )?;
        match rows.affected {
            0 => format!("{name}: paused already"),
            _ => format!("{name}: paused: no host claims its runs from now on"),
        }
    } else {
        let rows = client.query(
            "DELETE FROM crond_paused WHERE (cluster, owner, entry) = ($1, $2, $3)",
            &params,
        )?;
        match rows.affected {
            0 => format!("{name}: was not paused"),
            _ => format!("{name}: resumed"),
        }
    };
    Ok(format!("{said}\n{}", described(&loaded)))
}

/// The entry of rows (place, command, host), each indented: `PLACE  COMMAND`, one line per
/// place, with its hosts when the hosts do not all agree on it.
fn described(loaded: &Rows) -> String {
    let cell = |r: &Vec<Option<String>>, i: usize| {
        printable(r.get(i).cloned().flatten().as_deref().unwrap_or(""))
    };
    let mut places: Vec<(String, String, Vec<String>)> = Vec::new();
    for row in &loaded.rows {
        let (place, command, host) = (cell(row, 0), cell(row, 1), cell(row, 2));
        match places.iter_mut().find(|(p, _, _)| *p == place) {
            Some((_, _, hosts)) => hosts.push(host),
            None => places.push((place, command, vec![host])),
        }
    }
    if places.is_empty() {
        return "  no host has loaded it".to_string();
    }
    let agree = places.len() == 1;
    let lines: Vec<String> = places
        .into_iter()
        .map(|(place, command, hosts)| match agree {
            true => format!("  {place}  {command}"),
            false => format!("  {place} ({})  {command}", hosts.join(", ")),
        })
        .collect();
    lines.join("\n")
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

/// `cell` cut to `max` characters, the last of them `…` when it is cut.
fn cut(cell: &str, max: usize) -> String {
    if cell.chars().count() <= max {
        return cell.to_string();
    }
    let mut out: String = cell.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Rows under a header, each column as wide as its widest cell; unless `wide`, the columns
/// named in `wide_only` are left out and the last column is cut so that a row fits [`WIDTH`]
/// columns (to no less than [`MIN_LAST`] characters).
fn table(header: &[&str], rows: &Rows, wide: bool, wide_only: &[&str]) -> String {
    let shown: Vec<usize> = (0..header.len())
        .filter(|&i| wide || !wide_only.contains(&header[i]))
        .collect();
    let header: Vec<&str> = shown.iter().map(|&i| header[i]).collect();
    let mut cells: Vec<Vec<String>> = rows
        .rows
        .iter()
        .map(|r| {
            shown
                .iter()
                .map(|&i| printable(r.get(i).cloned().flatten().as_deref().unwrap_or_default()))
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    if !wide && let Some((_, others)) = widths.split_last() {
        let used: usize = others.iter().map(|w| w + 2).sum();
        let room = WIDTH.saturating_sub(used + 1).max(MIN_LAST);
        for row in &mut cells {
            if let Some(last) = row.last_mut() {
                *last = cut(last, room);
            }
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
    line(header);
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
        let out = table(&["HOST", "FROM", "X"], &rows, false, &[]);
        assert!(!out.chars().any(|c| c.is_control() && c != '\n'), "{out:?}");
        assert_eq!(out.lines().count(), 2, "{out:?}");
        assert!(out.contains("evil\\033]0;pwned\\007\\r\\b"), "{out:?}");
        assert!(out.contains("a\\tb\\nc\\u{9b}31m"), "{out:?}");
    }

    fn rows(cells: &[&[&str]]) -> Rows {
        Rows {
            rows: cells
                .iter()
                .map(|r| r.iter().map(|c| Some(c.to_string())).collect())
                .collect(),
            ..Rows::default()
        }
    }

    #[test]
    fn the_last_column_is_cut_to_fit_a_hundred_columns_unless_wide() {
        let long = "x".repeat(300);
        let rows = rows(&[&["web", &long]]);
        let out = table(&["CLUSTER", "COMMAND"], &rows, false, &[]);
        assert!(out.lines().all(|l| l.chars().count() < WIDTH), "{out}");
        assert!(out.lines().nth(1).unwrap().ends_with("x…"), "{out}");
        let whole = table(&["CLUSTER", "COMMAND"], &rows, true, &[]);
        assert!(whole.ends_with(&format!("{long}\n")), "{whole}");
        assert_eq!(cut("short", 5), "short");
        assert_eq!(cut("ééééé", 4), "ééé…");
    }

    #[test]
    fn an_entry_is_described_by_its_place_and_command_with_hosts_only_where_they_differ() {
        let same = rows(&[&["tab:3", "backup", "a"], &["tab:3", "backup", "b"]]);
        assert_eq!(described(&same), "  tab:3  backup");
        let differ = rows(&[&["tab:3", "backup", "a"], &["tab:4", "backup", "b"]]);
        assert_eq!(
            described(&differ),
            "  tab:3 (a)  backup\n  tab:4 (b)  backup"
        );
        assert_eq!(described(&rows(&[])), "  no host has loaded it");
    }
}
