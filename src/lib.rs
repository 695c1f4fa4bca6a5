//! crond: a memory-safe replacement for Vixie cron (Debian's `cron`, Fedora's `cronie`).
//!
//! The crate is split as docs/design.md §2 says: a functional core that decides and a thin shell
//! that acts.
//!
//! * Core (pure: no clock reads, no syscalls, no files; a file is core when its module header
//!   carries the marker `.ci/core-boundary` looks for, and that script checks each): [`types`]
//!   (the ids, file facts and log level both sides name), [`hash`] (FNV-1a), [`schedule`] (time
//!   fields, fire times, DST), [`crontab`] (the file format), [`timeline`] (clock-step rules and
//!   the heaps of next fire times, and [`timeline::queue`]: due jobs and the cycle deadline),
//!   [`trust`] (which files and directories to trust, from their facts),
//!   [`crontab_cmd::access`] (cron.allow/deny), [`metrics`] (the daemon's counters and their
//!   text), [`history`] (one slot's recorded outcome and the messages to the history writer),
//!   [`control`] (the control socket's requests, who may see which entry, and the answers
//!   of `cronctl list`, `show`, `run`, `status`).
//! * Shell: [`daemon`] (the poll loop), [`database`] (which files to trust and load, and the
//!   entries in memory: `database::entries`), [`job`] (the job child: its stdin writer, output
//!   capture, and `job::mail`, the mail of what a job leaves behind), [`log`] (the one
//!   `(who) EVENT (detail)` line, the catalogue of every line's wording in `log::messages`, and
//!   the sinks),
//!   [`crontab_cmd`] (crontab(1)), [`cronnext`], [`cluster`] (cluster mode: an entry's id, the
//!   daemon–helper lines, runs waiting for a claim, the connection settings — pure), and
//!   [`sys`], the only module that calls libc.
//! * `src/bin/*` are one call each: [`crond_main`], [`crontab_main`], [`cronnext_main`].
//!   Argument parsing is in the library, with its tests: `daemon::cli`, `crontab_cmd::cli`,
//!   `cronnext::cli`, and what they share, [`cli`].
//! * `cronctl` is a package of its own (`cronctl/`): the command, the cluster helper that the
//!   daemon starts, and the PostgreSQL client, which crond's binary does not link. It uses this
//!   library for what it shares with the daemon: [`cluster`] (the helper's side of the lines,
//!   the connection settings), the control socket's paths and bounds and `run`'s target
//!   ([`control`]), [`sys`], the rule for a secret file ([`trust::check_private`]), [`cli`] and
//!   [`protect_list`].
//!
//! `unsafe` is denied everywhere; the one module allowed to hold it is `sys`, and each block
//! there says why it is sound.

#![deny(unsafe_code)]
// The library exists for the three binaries, the cronctl package and its own tests: most modules
// are crate-private (the public ones are what those use), and the docs are read with
// `cargo doc --document-private-items`, where these links resolve.
#![allow(rustdoc::private_intra_doc_links)]

pub mod cli;
pub mod cluster;
pub mod control;
pub(crate) mod cronnext;
pub mod crontab;
pub(crate) mod crontab_cmd;
pub(crate) mod daemon;
pub(crate) mod database;
pub(crate) mod hash;
pub mod history;
pub mod job;
pub(crate) mod localtime;
pub mod log;
pub(crate) mod metrics;
pub mod paths;
pub mod schedule;
#[allow(unsafe_code)]
pub mod sys;
pub mod timeline;
pub mod trust;
pub mod types;
pub mod words;

/// The unit tests' counting allocator, for the core's tests to state memory bounds: it counts
/// bytes in the allocator and makes no syscall, so the core may use it (its `unsafe impl` is
/// why it lives in `sys`).
#[cfg(test)]
pub(crate) use sys::alloc_count;

pub use cronnext::cronnext_main;
pub use crontab_cmd::crontab_main;
// cronctl spells out the control bytes of the database's text as `crontab -l` does.
pub use crontab_cmd::text::protect_list;
pub use daemon::crond_main;
