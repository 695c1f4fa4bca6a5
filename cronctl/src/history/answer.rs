//! Queries, answered on threads of their own so that no client (slow, stuck or gone) holds up
//! the intake of outcomes: [`WORKERS`] threads, each with its own reading connection to the
//! store; [`QUEUED`] more queries wait their turn, and one past those is answered `ERROR busy`.
//! Each answer is written with a time limit ([`WRITE_TIMEOUT`]) and its connection closed:
//! every query is answered exactly once.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crond::history::{Asked, Query};
use crond::schedule::Zone;

use super::cluster::{self, ClusterDb};
use super::render;
use super::store::{Found, HistoryAsk, Listing, Reader, Seen, StoreError};

/// The most queries answered at once.
pub const WORKERS: usize = 4;

/// The most queries waiting for a worker.
pub const QUEUED: usize = 4;

/// How long an answer may take to be written to its client.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// One query and the client's connection it came with (`None`: the query could not be read).
#[derive(Debug)]
pub struct Job {
    pub query: Option<Query>,
    pub client: UnixStream,
}

/// The answering threads.
#[derive(Debug)]
pub struct Pool {
    jobs: SyncSender<Job>,
}

impl Pool {
    /// Starts the workers on the store at `path`; each reopens its connection when
    /// `generation` changes (the store was set aside and a new one made). With `cluster`, a
    /// cluster entry's history has every host's runs from the cluster database.
    pub fn start(
        path: PathBuf,
        generation: Arc<AtomicU64>,
        cluster: Option<ClusterDb>,
    ) -> std::io::Result<Pool> {
        let (jobs, queue) = mpsc::sync_channel(QUEUED);
        let queue = Arc::new(Mutex::new(queue));
        for n in 0..WORKERS {
            let (queue, path, generation) = (queue.clone(), path.clone(), generation.clone());
            let cluster = cluster.clone();
            std::thread::Builder::new()
                .name(format!("history-answer-{n}"))
                .spawn(move || work(&queue, &path, &generation, cluster.as_ref()))?;
        }
        Ok(Pool { jobs })
    }

    /// Hands `job` to a worker, or answers `ERROR busy` when all are busy and the queue full.
    pub fn submit(&self, job: Job) {
        match self.jobs.try_send(job) {
            Ok(()) => {}
            Err(TrySendError::Full(job) | TrySendError::Disconnected(job)) => {
                // A few bytes into an empty socket buffer: this never waits.
                let _ = job.client.set_nonblocking(true);
                let _ = (&job.client).write_all(&render::error("busy"));
            }
        }
    }
}

/// A worker: takes queries until the pool is gone.
fn work(
    queue: &Mutex<Receiver<Job>>,
    path: &std::path::Path,
    generation: &AtomicU64,
    cluster: Option<&ClusterDb>,
) {
    let mut reader: Option<(u64, Reader)> = None;
    loop {
        let job = match queue.lock() {
            Ok(queue) => queue.recv(),
            Err(_) => return,
        };
        let Ok(job) = job else { return };
        let answer = match &job.query {
            None => render::error("the history writer could not read the query"),
            Some(query) => {
                let now = generation.load(Ordering::Acquire);
                if reader.as_ref().is_none_or(|(g, _)| *g != now) {
                    reader = Reader::open(path).ok().map(|r| (now, r));
                }
                match &reader {
                    Some((_, r)) => answer(query, r, cluster).unwrap_or_else(|e| {
                        render::error(&format!("the history could not be read: {e}"))
                    }),
                    None => render::error("the history store is not there"),
                }
            }
        };
        reply(job.client, &answer);
    }
}

/// Writes `answer` within [`WRITE_TIMEOUT`], then closes the connection.
fn reply(client: UnixStream, answer: &[u8]) {
    let _ = client.set_nonblocking(false);
    let _ = client.set_write_timeout(Some(WRITE_TIMEOUT));
    let _ = (&client).write_all(answer);
    let _ = client.shutdown(std::net::Shutdown::Both);
}

/// Whether `text` may name an entry: its id, or a prefix of 4 or more of its hex digits.
fn is_entry(text: &str) -> bool {
    (4..=12).contains(&text.len()) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The answer to `query`, read through `reader` (and, for a cluster entry's history, from
/// `cluster` too).
pub fn answer(
    query: &Query,
    reader: &Reader,
    cluster: Option<&ClusterDb>,
) -> Result<Vec<u8>, StoreError> {
    let zone = Zone::get(&query.zone).unwrap_or_else(|_| Zone::utc());
    let seen = Seen::of(query);
    let named = |text: &str| -> Result<Result<Option<String>, Vec<u8>>, StoreError> {
        if !is_entry(text) {
            return Ok(Err(render::error(&format!(
                "'{text}' is not an entry's id (12 hex digits) or a prefix of 4 or more of them"
            ))));
        }
        Ok(match reader.resolve(text, seen)? {
            Found::One(id) => Ok(Some(id)),
            Found::Nothing => Ok(None),
            several => Err(render::ambiguous(text, &several)),
        })
    };
    match &query.asked {
        Asked::History {
            entry,
            user,
            failed,
            since_ms,
            limit,
        } => {
            let id = match entry.as_deref().map(named).transpose()? {
                Some(Err(error)) => return Ok(error),
                // No entry by that name that the asker may see: nothing to list.
                Some(Ok(None)) => return Ok(render::history(query, &Listing::default(), &zone)),
                Some(Ok(Some(id))) => Some(id),
                None => None,
            };
            let ask = HistoryAsk {
                entry: id.as_deref(),
                user: user.as_deref(),
                failed: *failed,
                since_ms: *since_ms,
                limit: *limit,
            };
            let mut listing = reader.history(&ask, seen)?;
            if let (Some(db), Some(id)) = (cluster, id.as_deref())
                && let Some(like) = reader.latest_cluster_record(id, seen)?
            {
                match db.runs(&like.outcome, &ask) {
                    Ok(remote) => {
                        let rows = std::mem::take(&mut listing.rows);
                        listing.rows = cluster::merge(rows, remote, *limit as usize);
                    }
                    Err(why) => {
                        listing.note = Some(format!(
                            "the cluster database could not be read ({why}): this host's \
                             records only"
                        ))
                    }
                }
            }
            Ok(render::history(query, &listing, &zone))
        }
        Asked::Logs { entry, run, raw } => {
            let id = match named(entry)? {
                Err(error) => return Ok(error),
                Ok(None) => return Ok(render::error("no such run")),
                Ok(Some(id)) => id,
            };
            let stored = reader.run(&id, *run, seen)?;
            Ok(render::logs(query, &id, stored.as_ref(), *raw))
        }
    }
}
