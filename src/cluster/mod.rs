//! Cluster mode's database side: the PostgreSQL client and its connection settings. The protocol
//! between hosts (what is claimed, and how) is in docs/cluster.md.

pub mod conninfo;
pub mod pg;
