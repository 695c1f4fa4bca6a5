//! The `cronctl` package: the `cronctl` command (whose logic is crond's library,
//! `crond::cronctl_main`) and the PostgreSQL client it reaches the cluster database with.
//!
//! The client is here, not in crond's crate, so that the daemon's binary links no database
//! code, no TLS library and no async runtime (`.ci/crond-links-no-db`). It is tokio-postgres on
//! a current-thread runtime ([`client`]), OpenSSL for TLS ([`tls`]), and two things of ours
//! that tokio-postgres lacks: the guard on the server's messages (their sizes, libpq 16's
//! `require_auth`: [`guard`]) and values as text ([`text`]). docs/cluster.md says why.

mod cli;
pub mod client;
mod commands;
pub mod conn;
mod control;
mod db;
pub mod guard;
pub mod helper;
mod socket;
mod sql;
mod text;
pub mod tls;

pub use cli::USAGE;
pub use client::{Client, RealConnector};
pub use commands::cronctl_main;
pub use db::{STATEMENT_TIMEOUT, read_private_file};
