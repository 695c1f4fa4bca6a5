//! `cronctl helper`: the process through which a daemon in cluster mode reaches PostgreSQL
//! (docs/cluster.md "The helper"). The daemon starts it with a socket as stdin and stdout and
//! sends [`wire`] requests; the helper answers each, keeps this host's lease alive, watches runs
//! other hosts claimed (to take over those whose host's lease ends before they start), records
//! ends and prunes the history. It may block on the database (every call is bounded: 5 s by
//! default); the daemon never does. When the daemon stops (`STOP`), the runs it was told to
//! start and did not fork go back to being claims; when it goes (end of input), the helper
//! gives the lease up, so that other hosts take over at once, and exits.
//!
//! [`machine`] decides (pure, over a [`store::Store`]); this file reads the daemon's lines,
//! reads the clock, and writes the answers.

mod machine;
mod store;
#[cfg(test)]
mod tests;

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::time::Instant;

use crond::cluster::wire::{self, FromHelper, Loaded, MAX_LISTED, ToHelper};

use crate::conn::Connect;
use crate::db;
use machine::Machine;
use store::SqlStore;

/// What the helper is told on its command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperArgs {
    pub db: String,
    pub host: String,
    pub keep_days: u32,
    /// Runs of one entry the history keeps (older ones past it are pruned).
    pub keep_runs: u32,
    pub lease_s: u32,
}

/// The most input read from the daemon before the runs read are claimed (64 KiB at a time).
const MAX_READS_PER_TURN: usize = 16;

/// Runs the helper until its input ends. Exit status 0, or 1 when the daemon's socket breaks.
pub fn run(args: HelperArgs, connector: &dyn Connect) -> u8 {
    let (input, mut out) = match (stdio_file(0), stdio_file(1)) {
        (Ok(i), Ok(o)) => (i, o),
        _ => return 1,
    };
    let info = match db::conninfo(&args.db) {
        Ok(info) => info,
        Err(e) => {
            send(
                &mut out,
                vec![FromHelper::Log {
                    error: true,
                    text: e.to_string(),
                }],
            );
            return 1;
        }
    };
    let store = SqlStore::new(connector, info, &args.host, db::new_session(), args.lease_s);
    let mut machine = Machine::new(args, store, Instant::now());
    let status = serve(&mut machine, input, &mut out);
    machine.release();
    status
}

/// Standard input or output as a file of its own (unbuffered, so that poll sees all input).
fn stdio_file(fd: i32) -> std::io::Result<File> {
    let owned = match fd {
        0 => std::io::stdin().as_fd().try_clone_to_owned()?,
        _ => std::io::stdout().as_fd().try_clone_to_owned()?,
    };
    Ok(File::from(owned))
}

fn send(out: &mut File, messages: Vec<FromHelper>) {
    let mut text = String::new();
    for message in messages {
        text.push_str(&message.encode());
    }
    // A daemon that is gone is seen as the end of input.
    let _ = out.write_all(text.as_bytes());
}

/// The loop: wake for input or the machine's next deadline, hand it what came, send what it
/// says. Returns when the input ends (0) or breaks (1).
fn serve<S: store::Store>(machine: &mut Machine<S>, mut input: File, out: &mut File) -> u8 {
    let mut reader = wire::LineReader::default();
    let mut chunk = vec![0u8; 64 * 1024];
    // The `ENTRY` lines of a list, until its `LOADED` (at most `MAX_LISTED` of them).
    let mut listing: Vec<Loaded> = Vec::new();
    loop {
        machine.on_tick(Instant::now());
        send(out, machine.take_outbox());
        let timeout = machine
            .next_wake()
            .saturating_duration_since(Instant::now());
        let mut wait = timeout.as_millis().min(60_000) as u32;
        let mut runs = Vec::new();
        let mut forked = Vec::new();
        let mut ends = Vec::new();
        let mut stop = false;
        // Everything the daemon has sent so far (up to a bound), so that the runs of one
        // minute go to the database in few statements.
        for _ in 0..MAX_READS_PER_TURN {
            let mut registry = crond::sys::poll::Registry::new();
            registry.add((), input.as_fd(), crond::sys::poll::Interest::Read);
            if !registry
                .wait(Some(wait))
                .is_ok_and(|ready| ready.contains(()))
            {
                break;
            }
            wait = 0;
            let n = match input.read(&mut chunk) {
                Ok(0) => {
                    // A daemon that stops waits a second at most for `STOPPED`: a busy helper
                    // may read its last lines only after it is gone. They still count.
                    machine.on_input_end(forked, ends, stop, Instant::now());
                    send(out, machine.take_outbox());
                    return 0;
                }
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return 1,
            };
            let mut errors = Vec::new();
            for line in reader.push(&chunk[..n]) {
                match line.and_then(|line| ToHelper::decode(&line)) {
                    Ok(ToHelper::Run { seq, key }) => runs.push((seq, key)),
                    Ok(ToHelper::Forked { key }) => forked.push(key),
                    Ok(ToHelper::End { key, status }) => ends.push((key, status)),
                    Ok(ToHelper::Entry(entry)) if listing.len() < MAX_LISTED => listing.push(entry),
                    Ok(ToHelper::Entry(_)) => {}
                    Ok(ToHelper::Stop) => stop = true,
                    Ok(ToHelper::Loaded { count, omitted }) => {
                        let list = std::mem::take(&mut listing);
                        let lost = count.saturating_sub(list.len());
                        machine.on_loaded(list, omitted + lost);
                    }
                    Err(e) => errors.push(FromHelper::Log {
                        error: true,
                        text: format!("protocol error from the daemon: {e}; line skipped"),
                    }),
                }
            }
            send(out, errors);
        }
        machine.on_requests(runs, forked, ends, Instant::now());
        if stop {
            // After the `FORKED`s that came before it.
            machine.stop(Instant::now());
        }
        send(out, machine.take_outbox());
    }
}
