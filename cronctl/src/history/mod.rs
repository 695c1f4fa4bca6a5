//! `cronctl history-writer`: the process that keeps crond's run history in a SQLite file. The
//! daemon starts it with one end of a `SOCK_SEQPACKET` socket as its standard input, on which
//! the daemon and every job child send their messages (`crond::history`): outcomes and gaps to
//! store, queries to answer on the client connection passed with them. It answers `log`
//! messages back on the same socket for the daemon's log.

mod answer;
pub mod cluster;
pub mod journal;
pub mod render;
pub mod store;
mod writer;

pub use answer::answer;
pub use writer::{
    COMMIT_EVERY, DEFAULT_KEEP_DAYS, DEFAULT_KEEP_RUNS, DEFAULT_MAX_SIZE, JournalChoice,
    WriterArgs, run,
};
