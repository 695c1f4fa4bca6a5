//! Where the control socket's owner ([`ControlServer`]) meets the daemon's state: the socket
//! made at start-up, the snapshot it answers from (the cycle's entries, the running jobs, the
//! metrics' last runs), and the runs it asks for carried out through the scheduler's own start
//! path ([`Daemon::launch`]: `CRON_OVERLAP` applies, the job child logs CMD and END as for any
//! run), each logged first with who asked. The owner itself knows nothing of the daemon.

use jiff::Timestamp;

use super::Error;
use super::control::{ControlServer, RunOrder};
use super::event_loop::{Daemon, wall_clock};
use crate::control::{Ran, StatusView};
use crate::log::{Level, lines};
use crate::timeline::queue::Queued;
use crate::timeline::{Due, UtcMinute};

/// An answer made of this many entries or more gives its memory back to the system afterwards
/// (as a reload that freed memory does).
const LARGE_ANSWER_ENTRIES: usize = 1_000;

impl Daemon {
    /// The control socket (`--control-socket`, by default `crond.sock` beside the pid file).
    /// One given on the command line that can't be made stops the start; the default one is
    /// logged and left out.
    pub(super) fn listen_for_control(
        &self,
        started: Timestamp,
    ) -> Result<Option<ControlServer>, Error> {
        let Some((path, given)) = self.options.control_socket() else {
            return Ok(None);
        };
        match crate::sys::listen::listen_unix_for_all(&path) {
            Ok(listener) => {
                self.log.info(
                    "CRON",
                    "INFO",
                    &format!(
                        "control socket at {} (cronctl list|run|status)",
                        path.display()
                    ),
                );
                Ok(Some(ControlServer::new(listener, started.as_millisecond())))
            }
            Err(e) if given => Err(Error::Io("--control-socket", e)),
            Err(e) => {
                self.log.error(
                    "CRON",
                    "ERROR",
                    &format!("no control socket at {}: {e}", path.display()),
                );
                Ok(None)
            }
        }
    }

    /// Serves the control socket's connections that `ready` says can go on, and starts the
    /// runs asked for.
    pub(super) fn serve_control(&mut self, ready: &[super::control::Token]) {
        let Some(mut server) = self.control.take() else {
            return;
        };
        let now = wall_clock();
        let status = StatusView {
            version: env!("CARGO_PKG_VERSION"),
            pid: std::process::id() as i32,
            started_ms: server.started_ms(),
            now_ms: now.as_millisecond(),
            zone: self.cycle.local_zone().clone(),
            entries: 0,
            running: 0,
            own_only: false,
        };
        // How many entries the answers were made of: after a large list, the memory goes back.
        let made = std::cell::Cell::new(0usize);
        let snapshot = |peer: &crate::control::Peer, want: &crate::control::Want<'_>| {
            let snap = super::control::snapshot(
                peer,
                want,
                &self.cycle,
                self.running.jobs(),
                &self.metrics,
                status.clone(),
            );
            made.set(made.get() + snap.entries.len());
            snap
        };
        let orders = server.serve(ready, now.as_millisecond(), &snapshot);
        if made.get() >= LARGE_ANSWER_ENTRIES {
            self.freed = true;
        }
        for order in orders {
            match self.run_now(&order, now) {
                Some(ran) => server.ran(order.ticket, &order.place, &ran),
                None => server.refused(order.ticket, "the entry is gone (its crontab changed)"),
            }
        }
        self.control = Some(server);
    }

    /// Starts one run of the entry `order` names now, as the scheduler starts a due run.
    /// `None`: the entry is gone.
    fn run_now(&mut self, order: &RunOrder, now: Timestamp) -> Option<Ran> {
        let (_, _, job, _) = self.cycle.get(order.entry)?;
        let job = job.clone();
        let asked_by = order.peer.describe();
        let line = lines::run_now_line(job.user(), job.command(), &order.place, &asked_by)
            .with_job(job.log_fields(None));
        self.log.line(Level::Info, &line);
        let now_ms = now.as_millisecond();
        let waiting = self.running.waiting();
        let queued = Queued {
            job: Due {
                entry: Some(order.entry),
                job,
            },
            due: UtcMinute::containing(now.as_second()),
            postponed: 0,
            start_ms: now_ms,
        };
        Some(match self.launch(queued, now_ms) {
            Ok(Some(pid)) => Ran::Started(pid),
            Ok(None) if self.running.waiting() > waiting => Ran::Waiting,
            Ok(None) => Ran::Skipped,
            Err(queued) => {
                self.cycle.put_back(queued, now_ms);
                self.arm(now);
                Ran::Queued
            }
        })
    }
}
