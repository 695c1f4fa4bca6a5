//! Cluster mode (docs/cluster.md): several hosts run the same crontabs and each run of an entry
//! marked `CRON_CLUSTER=NAME` happens on one of them, claimed in PostgreSQL first. The daemon
//! never talks to the database itself: a helper process does (`cronctl helper`), and the two
//! speak [`wire`] lines over a socket.
//!
//! Pure: [`identity`] (an entry's id across hosts), [`wire`] (the daemon–helper lines),
//! [`parked`] (runs waiting for an answer). The helper and `cronctl` are in `crate::cronctl`.

pub mod identity;
pub mod parked;
pub mod wire;
