//! The metrics server, one of the daemon's owners: the endpoint (`--metrics`), served from the
//! daemon's poll loop: no thread in the forking daemon, no HTTP library. It holds its sockets
//! and nothing else: the reactor gives it the ready tokens, the time and a function that
//! renders the exposition from the scheduler's counters. Each connection is read until its request head is whole,
//! answered (`metrics::answer`) and closed; what the socket can't take at once is written when
//! it is writable again.
//!
//! Each `--metrics` place (a Unix socket, a TCP port) has a pool of its own: a client of one
//! (any local user can reach a TCP port) can't take the connections of another (the Unix socket
//! is root's and `--metrics-group`'s). Bounds, per pool: at most [`MAX_CONNECTIONS`] at once, a
//! head of at most `metrics::MAX_REQUEST` bytes within [`HEAD_DEADLINE_MS`] of the accept, and
//! [`DEADLINE_MS`] for the whole exchange: a client that stalls is dropped, and never holds the
//! loop. A full pool's listener is not polled: the connections past the bound wait in the
//! kernel's backlog (they are neither accepted nor closed), so clients that connect without end
//! cost the daemon nothing until a connection of the pool ends, and then one accept each.
//!
//! What a TCP client is shown: the totals, without the per-entry series (their labels name
//! every crontab and line), unless `--metrics-entries-on-tcp`; a loopback port can't be limited
//! to anyone. The Unix socket shows everything.

use std::io;
use std::os::fd::BorrowedFd;

use super::Error;
use super::cli::MetricsAt;
use super::effects::Effects;
use crate::log::messages;
use crate::metrics::{self, MAX_REQUEST};
use crate::sys::listen::{Listener, Stream};
use crate::sys::poll::Interest;
use crate::sys::pump::{Filled, FlushError, Flushed, Pump};
use crate::types::Gid;

/// Connections served at once, per place.
pub(super) const MAX_CONNECTIONS: usize = 16;

/// How long a connection may take from accept to the end of its request head (a scraper sends
/// it at once; a client that says nothing gives its slot back soon).
pub(super) const HEAD_DEADLINE_MS: i64 = 2_000;

/// How long a connection may take from accept to the last byte of the answer.
pub(super) const DEADLINE_MS: i64 = 5_000;

/// What a descriptor of the server is, in the poll: a place's listener, or a connection of its
/// pool (by place, then by position in the pool, both as of [`MetricsServer::fds`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Token {
    Listener(usize),
    Connection(usize, usize),
}

/// How much of a request is read at once.
const READ_CHUNK: usize = 2048;

#[derive(Debug)]
struct Connection {
    stream: Stream,
    request: Vec<u8>,
    /// Reads the request; then sends the answer.
    pump: Pump,
    /// Whether the answer is made (and queued in `pump`).
    replying: bool,
    accepted_ms: i64,
}

impl Connection {
    /// When it is dropped: [`HEAD_DEADLINE_MS`] after the accept while the head is coming,
    /// [`DEADLINE_MS`] once it is being answered.
    fn deadline_ms(&self) -> i64 {
        self.accepted_ms
            + if self.replying {
                DEADLINE_MS
            } else {
                HEAD_DEADLINE_MS
            }
    }
}

/// One place's listener and its connections.
#[derive(Debug)]
struct Pool {
    listener: Listener,
    /// Whether its clients see the per-entry series.
    entries: bool,
    connections: Vec<Connection>,
}

impl Pool {
    /// Whether its listener is polled (and accepted from): only while a slot is free.
    fn accepting(&self) -> bool {
        self.connections.len() < MAX_CONNECTIONS
    }

    fn serve(
        &mut self,
        listener_ready: bool,
        ready: &dyn Fn(usize) -> bool,
        now_ms: i64,
        render: &dyn Fn(bool) -> String,
    ) {
        let entries = self.entries;
        let exposition = || render(entries);
        let mut keep = Vec::with_capacity(self.connections.len());
        for (i, mut c) in std::mem::take(&mut self.connections)
            .into_iter()
            .enumerate()
        {
            let go_on = if ready(i) {
                step(&mut c, &exposition).unwrap_or(false)
            } else {
                true
            };
            if go_on && now_ms < c.deadline_ms() {
                keep.push(c);
            }
        }
        self.connections = keep;
        if !listener_ready {
            return;
        }
        // Only as many as there are free slots: the rest wait in the backlog, and the listener
        // is not polled again until a slot is free.
        while self.accepting() {
            let Ok(Some(stream)) = self.listener.accept() else {
                break;
            };
            let mut c = Connection {
                stream,
                request: Vec::new(),
                pump: Pump::new(READ_CHUNK, usize::MAX),
                replying: false,
                accepted_ms: now_ms,
            };
            // A scraper's request is usually there already: answered in this same wake-up.
            if step(&mut c, &exposition).unwrap_or(false) {
                self.connections.push(c);
            }
        }
    }
}

#[derive(Debug)]
pub(super) struct MetricsServer {
    pools: Vec<Pool>,
}

impl MetricsServer {
    /// The descriptors to poll, each with its token: per place, its listener (readable) while
    /// it has a free slot, then each connection (readable while its request comes, writable
    /// while its answer goes).
    pub(super) fn fds(&self) -> Vec<(Token, BorrowedFd<'_>, Interest)> {
        let mut fds = Vec::new();
        for (p, pool) in self.pools.iter().enumerate() {
            if pool.accepting() {
                fds.push((Token::Listener(p), pool.listener.fd(), Interest::Read));
            }
            fds.extend(pool.connections.iter().enumerate().map(|(c, conn)| {
                let interest = match conn.replying {
                    true => Interest::Write,
                    false => Interest::Read,
                };
                (Token::Connection(p, c), conn.stream.fd(), interest)
            }));
        }
        fds
    }

    /// How long the loop may sleep before a connection's deadline.
    pub(super) fn timeout_ms(&self, now_ms: i64) -> Option<u32> {
        self.pools
            .iter()
            .flat_map(|p| &p.connections)
            .map(|c| {
                c.deadline_ms()
                    .saturating_sub(now_ms)
                    .clamp(0, i64::from(u32::MAX)) as u32
            })
            .min()
    }

    /// Serves what `ready` (tokens of [`MetricsServer::fds`], from the same state) says can go
    /// on, drops connections past their deadline, accepts new ones into free slots.
    /// `render(entries)` is the exposition, with the per-entry series or without.
    pub(super) fn serve(&mut self, ready: &[Token], now_ms: i64, render: &dyn Fn(bool) -> String) {
        for (p, pool) in self.pools.iter_mut().enumerate() {
            let listener_ready = pool.accepting() && ready.contains(&Token::Listener(p));
            let connection_ready = |c: usize| ready.contains(&Token::Connection(p, c));
            pool.serve(listener_ready, &connection_ready, now_ms, render);
        }
    }
}

impl MetricsServer {
    /// The sockets of every `--metrics` place (each place once); `group` may read the Unix
    /// socket (`--metrics-group`), TCP clients see the per-entry series with
    /// `entries_on_tcp`.
    pub(super) fn listen(
        places: &[MetricsAt],
        group: Option<&str>,
        entries_on_tcp: bool,
        fx: &mut dyn Effects,
    ) -> Result<MetricsServer, Error> {
        // Looked up only for a Unix socket: a TCP port has no group.
        let unix = places.iter().any(|at| matches!(at, MetricsAt::Unix(_)));
        let group = match group.filter(|_| unix) {
            None => None,
            Some(name) => Some(
                crate::sys::user::group_id(name)
                    .map_err(|e| Error::Io("--metrics-group", e))?
                    .ok_or_else(|| {
                        Error::Io(
                            "--metrics-group",
                            std::io::Error::other(format!("no group named {name}")),
                        )
                    })?,
            ),
        };
        let mut pools = Vec::with_capacity(places.len());
        for at in places {
            pools.push(listen_at(at, group, entries_on_tcp, fx)?);
        }
        Ok(MetricsServer { pools })
    }
}

fn listen_at(
    at: &MetricsAt,
    group: Option<Gid>,
    entries_on_tcp: bool,
    fx: &mut dyn Effects,
) -> Result<Pool, Error> {
    let listener = match at {
        MetricsAt::Unix(path) => crate::sys::listen::listen_unix(path, group),
        MetricsAt::Tcp(addr) => crate::sys::listen::listen_tcp(*addr),
    }
    .map_err(|e| Error::Io("--metrics", e))?;
    let (shown, entries) = match at {
        MetricsAt::Unix(path) => (format!("unix:{}", path.display()), true),
        MetricsAt::Tcp(addr) if entries_on_tcp => (
            format!("{addr} (with the per-entry series: any local user can read them)"),
            true,
        ),
        MetricsAt::Tcp(addr) => (
            format!("{addr} (totals only: no per-entry series on TCP)"),
            false,
        ),
    };
    fx.info(messages::metrics_at_line(&shown));
    Ok(Pool {
        listener,
        entries,
        connections: Vec::new(),
    })
}

/// One step of a connection: read what came, or write what can go. `Ok(false)`: done, close.
fn step(c: &mut Connection, render: &dyn Fn() -> String) -> io::Result<bool> {
    if c.replying {
        return match c.pump.flush(&mut c.stream) {
            Ok(Flushed::All) | Err(FlushError::Closed) => Ok(false),
            Ok(Flushed::Partly) => Ok(true),
            Err(FlushError::Io(e)) => Err(e),
            // No bound is set on what waits: the answer is made once and is finite.
            Err(FlushError::Backlog(_)) => Ok(false),
        };
    }
    let mut reply = None;
    let request = &mut c.request;
    let filled = c.pump.fill(&mut c.stream, usize::MAX, &mut |chunk| {
        let room = MAX_REQUEST.saturating_sub(request.len());
        request.extend_from_slice(&chunk[..chunk.len().min(room)]);
        reply = metrics::answer(request, render);
        reply.is_none()
    })?;
    if let Some(reply) = reply {
        c.pump.queue(&reply);
        c.replying = true;
        // Most answers fit the socket's buffer: try at once.
        return step(c, render);
    }
    // End of file: the client closed before its request was whole.
    Ok(filled == Filled::Open)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::clock::{Clock, FakeClock};
    use crate::daemon::effects::Recorded;
    use std::io::{Read, Write};
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::net::UnixStream;

    #[test]
    fn a_scrape_is_answered_from_the_snapshot_it_is_given_and_a_silent_client_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        // Its mode as meant, whatever umask another test's bind had set meanwhile.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let path = dir.path().join("metrics.sock");
        let mut fx = Recorded::default();
        let places = [MetricsAt::Unix(path.clone())];
        let mut server = MetricsServer::listen(&places, None, false, &mut fx).unwrap();
        assert_eq!(
            fx.logged(&format!("metrics served at unix:{}", path.display()))
                .len(),
            1
        );
        let clock = FakeClock::at("2026-11-27T10:00:00Z");
        let mut client = UnixStream::connect(&path).unwrap();
        client.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        let render = |entries: bool| format!("crond_runs_total 7 entries={entries}\n");
        // The listener is ready: accepted and answered in the same wake-up.
        let tokens: Vec<Token> = server.fds().iter().map(|(t, _, _)| *t).collect();
        assert_eq!(tokens, [Token::Listener(0)]);
        server.serve(&tokens, clock.now().as_millisecond(), &render);
        let mut answer = String::new();
        client.read_to_string(&mut answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(
            answer.ends_with("crond_runs_total 7 entries=true\n"),
            "{answer}"
        );
        // A client that says nothing keeps its slot until the head's deadline, not after.
        let _silent = UnixStream::connect(&path).unwrap();
        server.serve(&[Token::Listener(0)], clock.now().as_millisecond(), &render);
        assert_eq!(
            server.fds().len(),
            2,
            "the listener and the silent connection"
        );
        let deadline = server.timeout_ms(clock.now().as_millisecond());
        assert_eq!(deadline, Some(HEAD_DEADLINE_MS as u32));
        clock.advance_ms(HEAD_DEADLINE_MS);
        server.serve(&[], clock.now().as_millisecond(), &render);
        assert_eq!(server.fds().len(), 1, "only the listener");
    }
}
