//! Cluster mode (docs/cluster.md): several hosts run the same crontabs and each run of an entry
//! marked `CRON_CLUSTER=NAME` happens on one of them, claimed in PostgreSQL first. The daemon
//! never talks to the database itself: a helper process does (`cronctl helper`), and the two
//! speak [`wire`] lines over a socket.
//!
//! Pure: [`identity`] (an entry's id across hosts), [`wire`] (the daemon–helper lines),
//! [`parked`] (runs waiting for an answer), [`conninfo`] (libpq's connection settings and
//! pgpass). The helper and the database client are not here: they live in the `cronctl`
//! package (`cronctl/`), which uses these modules for its side of the lines, so that crond's
//! binary links no database code, TLS library or async runtime (checked by
//! `.ci/crond-links-no-db`).

/// How many runs of one entry the history keeps at least, by default and at most
/// (`--cluster-keep-runs`): older runs past it go at the hourly prune, as do runs older than
/// `--cluster-keep` days.
pub const DEFAULT_KEEP_RUNS: u32 = 1_440;
pub const MIN_KEEP_RUNS: u32 = 10;
pub const MAX_KEEP_RUNS: u32 = 1_000_000;

pub mod conninfo;
pub mod entry_id;
pub mod parked;
pub mod wire;
