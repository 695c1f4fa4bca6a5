//! `cronctl` (cronctl(8)), the one package that holds it: the command, the cluster helper and
//! the PostgreSQL client.
//!
//! - `list`, `run`, `show`, `status`, `history` and `logs` go through crond's control socket
//!   ([`control`]): no database and no privilege.
//! - `hosts`, `claims`, `history --db|--cluster|--entry`, `paused`, `pause` and `resume` read
//!   or change the cluster database ([`commands`], connected as [`db`] says).
//! - `cronctl history-writer` is the process that keeps the daemon's run history in a SQLite
//!   file and answers `history` and `logs` ([`history`]).
//! - `cronctl notify` sends a run's `CRON_PING` and `CRON_WEBHOOK` requests, as the job's
//!   user ([`notify`]).
//! - `cronctl helper` is the process through which crond reaches the database ([`helper`]: a
//!   pure state machine over a store, and the statements of [`sql`]).
//! - The command line is [`cli`]; [`cronctl_main`] is the binary's `main`.
//!
//! The database is reached through the [`conn`] traits, so that the helper's logic runs on a
//! fake in its unit tests. The real client is tokio-postgres on a current-thread runtime
//! ([`client`]), OpenSSL for TLS ([`tls`]), and two things of ours that tokio-postgres lacks:
//! the guard on the server's messages (their sizes, libpq 16's `require_auth`: [`guard`]) and
//! values as text ([`text`]). docs/cluster.md says why.
//!
//! The client is here, not in crond's crate, so that the daemon's binary links no database
//! code, no TLS library and no async runtime (`.ci/crond-links-no-db`). What the daemon and
//! cronctl share comes from crond's library: the lines between the daemon and the helper and
//! the connection settings (`crond::cluster`), the control socket's paths and bounds
//! (`crond::control`), and the system calls (`crond::sys`: this package has no `unsafe`).

#![forbid(unsafe_code)]
// Most modules are the package's own; the docs are read with `cargo doc
// --document-private-items`, where these links resolve.
#![allow(rustdoc::private_intra_doc_links)]

mod cli;
pub mod client;
mod commands;
pub mod conn;
mod control;
mod db;
pub mod guard;
mod helper;
pub mod history;
pub mod notify;
mod show;
mod socket;
mod sql;
mod text;
pub mod tls;

use std::io::Write;
use std::process::ExitCode;

pub use client::{Client, RealConnector};

use cli::{Command, USAGE};
use conn::Connect;

/// `cronctl`'s `main`, with `connector` to reach the database (the binary's is
/// [`RealConnector`]). Exit status 0; 1 for a database error; 2 for a usage error.
pub fn cronctl_main(connector: &dyn Connect) -> ExitCode {
    let invocation = match cli::parse(std::env::args_os().skip(1)) {
        Ok(i) => i,
        // No command: the usage, as `git` without one; else the error and where help is.
        Err(cli::UsageError::NoCommand) => {
            let _ = writeln!(std::io::stderr().lock(), "{USAGE}");
            return ExitCode::from(2);
        }
        Err(e) => {
            let _ = writeln!(
                std::io::stderr().lock(),
                "cronctl: {e}\nTry 'cronctl -h' for more information."
            );
            return ExitCode::from(2);
        }
    };
    let command = match invocation.command {
        Command::Help => return print(USAGE),
        Command::Version => return print(&format!("cronctl {}", env!("CARGO_PKG_VERSION"))),
        Command::Helper(args) => return ExitCode::from(helper::run(args, connector)),
        Command::HistoryWriter(args) => return ExitCode::from(history::run(&args)),
        Command::Notify(args) => return ExitCode::from(notify::run(&args)),
        Command::Control { socket, request } if request.starts_with("logs ") => {
            let socket = socket.unwrap_or_else(control::default_socket);
            return logs(&socket, &request);
        }
        Command::Control { socket, request } if request.starts_with("show ") => {
            let socket = socket.unwrap_or_else(control::default_socket);
            return show(&socket, &request);
        }
        Command::Control { socket, request } => {
            let socket = socket.unwrap_or_else(control::default_socket);
            return match control::ask(&socket, &request) {
                Ok((text, 0)) => print(&text),
                // `run --wait`: the job's status, as a shell gives it.
                Ok((text, status)) => {
                    print(&text);
                    ExitCode::from(status)
                }
                Err(e) => {
                    let _ = writeln!(std::io::stderr().lock(), "cronctl: {e}");
                    ExitCode::from(1)
                }
            };
        }
        other => other,
    };
    match commands::report(connector, invocation.db, &command) {
        Ok(text) => print(text.trim_end_matches('\n')),
        Err(e) => {
            // A server's message is text from the database too.
            let text = commands::printable(&e.to_string());
            let _ = writeln!(std::io::stderr().lock(), "cronctl: {text}");
            ExitCode::from(1)
        }
    }
}

/// `logs`: the run's output as the answer has it (with `--raw`, the bytes the job wrote; else
/// already spelled out by the writer), a newline added only to end escaped text.
fn logs(socket: &std::path::Path, request: &str) -> ExitCode {
    match control::ask_bytes(socket, request) {
        Ok((mut output, _)) => {
            let raw = request.starts_with("logs --raw ");
            if !raw && !output.is_empty() && !output.ends_with(b"\n") {
                output.push(b'\n');
            }
            let mut out = std::io::stdout().lock();
            match out.write_all(&output).and_then(|()| out.flush()) {
                Ok(()) => ExitCode::SUCCESS,
                Err(_) => ExitCode::from(1),
            }
        }
        Err(e) => {
            let _ = writeln!(std::io::stderr().lock(), "cronctl: {e}");
            ExitCode::from(1)
        }
    }
}

/// `show`: the daemon's answer, with the entry's last runs from the run history, asked for on
/// a second connection (the daemon's own last runs when the history can't be read).
fn show(socket: &std::path::Path, request: &str) -> ExitCode {
    let answer = match control::ask(socket, request) {
        Ok((text, _)) => text,
        Err(e) => {
            let _ = writeln!(std::io::stderr().lock(), "cronctl: {e}");
            return ExitCode::from(1);
        }
    };
    let json = request.starts_with("show --json ");
    let Some(id) = show::entry_id(&answer, json) else {
        return print(&answer);
    };
    let history = control::ask(socket, &show::history_request(id))
        .map(|(text, _)| text)
        .map_err(|e| e.to_string());
    let history = history.as_deref().map_err(String::as_str);
    print(&show::with_history(&answer, json, history))
}

/// Prints `text` and a newline; nothing for no text (a `--json` answer with no object).
fn print(text: &str) -> ExitCode {
    if text.is_empty() {
        return ExitCode::SUCCESS;
    }
    match writeln!(std::io::stdout().lock(), "{text}") {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::from(1),
    }
}
