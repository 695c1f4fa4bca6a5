//! The metrics endpoint (`--metrics`), served from the daemon's poll loop: no thread in the
//! forking daemon, no HTTP library. Each connection is read until its request head is whole,
//! answered (`metrics::answer`) and closed; what the socket can't take at once is written when
//! it is writable again.
//!
//! Bounds: at most [`MAX_CONNECTIONS`] at once (more are closed on accept), a head of at most
//! `metrics::MAX_REQUEST` bytes, and [`DEADLINE_MS`] for the whole exchange: a client that
//! stalls is dropped, and never holds the loop.

use std::io;
use std::os::fd::BorrowedFd;

use super::Error;
use super::event_loop::{Daemon, wall_clock};
use super::options::MetricsAt;
use crate::metrics::{self, MAX_REQUEST};
use crate::sys::listen::{Listener, Stream};

/// Connections served at once.
pub(super) const MAX_CONNECTIONS: usize = 16;

/// Connections taken from the listener's backlog per wake-up of the loop.
const ACCEPTS_PER_WAKE: usize = 64;

/// How long a connection may take from accept to the last byte of the answer.
pub(super) const DEADLINE_MS: i64 = 5_000;

#[derive(Debug)]
struct Connection {
    stream: Stream,
    request: Vec<u8>,
    /// The answer and how much of it went out.
    reply: Option<(Vec<u8>, usize)>,
    deadline_ms: i64,
}

#[derive(Debug)]
pub(super) struct MetricsServer {
    listener: Listener,
    connections: Vec<Connection>,
}

impl MetricsServer {
    pub(super) fn new(listener: Listener) -> MetricsServer {
        MetricsServer {
            listener,
            connections: Vec::new(),
        }
    }

    /// The descriptors to poll: the listener (readable), then each connection (readable while
    /// its request comes, writable while its answer goes).
    pub(super) fn fds(&self) -> Vec<(BorrowedFd<'_>, bool)> {
        let mut fds = vec![(self.listener.fd(), false)];
        fds.extend(
            self.connections
                .iter()
                .map(|c| (c.stream.fd(), c.reply.is_some())),
        );
        fds
    }

    /// How long the loop may sleep before a connection's deadline.
    pub(super) fn timeout_ms(&self, now_ms: i64) -> Option<u32> {
        self.connections
            .iter()
            .map(|c| {
                c.deadline_ms
                    .saturating_sub(now_ms)
                    .clamp(0, i64::from(u32::MAX)) as u32
            })
            .min()
    }

    /// Serves what `ready` (one flag per [`MetricsServer::fds`] entry) says can go on, drops
    /// connections past their deadline, accepts new ones.
    pub(super) fn serve(&mut self, ready: &[bool], now_ms: i64, render: &dyn Fn() -> String) {
        let mut keep = Vec::with_capacity(self.connections.len());
        for (i, mut c) in std::mem::take(&mut self.connections)
            .into_iter()
            .enumerate()
        {
            let go_on = if ready.get(i + 1).copied().unwrap_or(false) {
                step(&mut c, render).unwrap_or(false)
            } else {
                true
            };
            if go_on && now_ms < c.deadline_ms {
                keep.push(c);
            }
        }
        self.connections = keep;
        if ready.first().copied().unwrap_or(false) {
            // Take the waiting connections, at most a backlog's worth per wake-up (a client
            // that connects without end can't keep the loop here); past the bound they are
            // closed at once.
            for _ in 0..ACCEPTS_PER_WAKE {
                let Ok(Some(stream)) = self.listener.accept() else {
                    break;
                };
                if self.connections.len() >= MAX_CONNECTIONS {
                    continue;
                }
                self.connections.push(Connection {
                    stream,
                    request: Vec::new(),
                    reply: None,
                    deadline_ms: now_ms + DEADLINE_MS,
                });
            }
        }
    }
}

impl Daemon {
    /// Answers the metrics endpoint's connections that `ready` says can go on.
    pub(super) fn serve_metrics(&mut self, ready: &[bool]) {
        let now_ms = wall_clock().as_millisecond();
        let Some(mut server) = self.metrics_server.take() else {
            return;
        };
        let render = || {
            self.metrics.render(self.running.len(), |id| {
                self.cycle.get(id).map(|(_, _, job, _)| job.entry())
            })
        };
        server.serve(ready, now_ms, &render);
        self.metrics_server = Some(server);
    }

    /// The metrics endpoint's socket (`--metrics`).
    pub(super) fn listen_for_metrics(&self, at: &MetricsAt) -> Result<MetricsServer, Error> {
        let listener = match at {
            MetricsAt::Unix(path) => {
                let group = match &self.options.metrics_group {
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
                crate::sys::listen::listen_unix(path, group)
            }
            MetricsAt::Tcp(addr) => crate::sys::listen::listen_tcp(*addr),
        }
        .map_err(|e| Error::Io("--metrics", e))?;
        let shown = match at {
            MetricsAt::Unix(path) => format!("unix:{}", path.display()),
            MetricsAt::Tcp(addr) => addr.to_string(),
        };
        self.log
            .info("CRON", "INFO", &format!("metrics served at {shown}"));
        Ok(MetricsServer::new(listener))
    }
}

/// One step of a connection: read what came, or write what can go. `Ok(false)`: done, close.
fn step(c: &mut Connection, render: &dyn Fn() -> String) -> io::Result<bool> {
    if let Some((reply, sent)) = &mut c.reply {
        loop {
            match c.stream.write(&reply[*sent..]) {
                Ok(0) => return Ok(false),
                Ok(n) => {
                    *sent += n;
                    if *sent == reply.len() {
                        return Ok(false);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    let mut buf = [0u8; 2048];
    loop {
        match c.stream.read(&mut buf) {
            // The client closed before its request was whole.
            Ok(0) => return Ok(false),
            Ok(n) => {
                let room = MAX_REQUEST.saturating_sub(c.request.len());
                c.request.extend_from_slice(&buf[..n.min(room)]);
                if let Some(reply) = metrics::answer(&c.request, render) {
                    c.reply = Some((reply, 0));
                    // Most answers fit the socket's buffer: try at once.
                    return step(c, render);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
