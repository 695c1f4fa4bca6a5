//! The writer's two loops. The intake (the main thread) reads standard input, a
//! `SOCK_SEQPACKET` socket, one message at a time, and never waits on the store: outcomes and
//! gaps go to the store's thread through a bounded queue, queries with their client's
//! connection too. The store's thread inserts them in transactions (committed when the
//! socket goes idle, and at least every [`COMMIT_EVERY`] while messages keep coming), hands
//! queries to the answering threads once what came before them is committed, and prunes.
//!
//! What goes wrong is said on the same socket, as `log` messages for the daemon's log.

use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use crond::history::{Fields, Gap, LogMessage, MAX_MESSAGE, Outcome, Query};
use crond::sys::seqpacket;

use super::answer::{Job, Pool};
use super::cluster::{ClusterDb, Mirror};
use super::journal::{self, Journal};
use super::store::{self, Bounds, Item, Store, StoreError};

/// The longest a received outcome waits for its commit while more keep coming.
pub const COMMIT_EVERY: Duration = Duration::from_millis(200);

/// How often the bounds are enforced (and at start).
const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// How often the same trouble is told in the log, at most.
const TELL_EVERY: Duration = Duration::from_secs(60);

/// The most bytes of messages waiting between the intake and the store's thread: past it,
/// outcomes are counted lost (and recorded as a gap) rather than the socket left unread.
const QUEUE_BYTES: usize = 64 << 20;

/// The most items one transaction holds.
const MAX_BATCH: usize = 5_000;

/// `cronctl history-writer`'s options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterArgs {
    pub store: PathBuf,
    pub host: String,
    pub keep_days: u32,
    pub keep_runs: u32,
    pub max_size: u64,
    pub journal: JournalChoice,
    /// `--cluster-db`: the cluster database's settings, where the runs of cluster entries are
    /// copied (the host's name there is `host`).
    pub cluster_db: Option<String>,
}

/// `--journal`: the system journal's socket when it exists, none, or this socket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JournalChoice {
    Default,
    Off,
    At(PathBuf),
}

/// The defaults: 30 days, 1,000 runs per entry, 256 MiB.
pub const DEFAULT_KEEP_DAYS: u32 = 30;
pub const DEFAULT_KEEP_RUNS: u32 = 1_000;
pub const DEFAULT_MAX_SIZE: u64 = 256 << 20;

/// Lines for the daemon's log, sent back on the writer's socket (never waiting: a full socket
/// loses the line).
#[derive(Debug, Clone)]
struct Say(Arc<OwnedFd>);

impl Say {
    fn log(&self, level: u8, text: String) {
        let message = LogMessage { level, text }.encode();
        let _ = seqpacket::send(self.0.as_fd(), &message);
    }
}

/// What the intake hands the store's thread.
#[derive(Debug)]
enum Intake {
    Item(Item),
    Query(Job),
}

impl Intake {
    /// About what it holds in memory.
    fn size(&self) -> usize {
        match self {
            Intake::Item(Item::Outcome(o)) => match &o.result {
                crond::history::Result::Ran(r) => {
                    r.head.len() + r.tail.len() + o.command.len() + 512
                }
                crond::history::Result::NotRun { words, .. } => words.len() + o.command.len() + 512,
            },
            _ => 512,
        }
    }
}

/// The queue from the intake to the store's thread, with the bytes it holds.
#[derive(Debug, Clone)]
struct Queue {
    tx: Sender<Intake>,
    bytes: Arc<AtomicUsize>,
}

/// Outcomes that did not reach the store: how many, when, and why.
#[derive(Debug, Clone, Default)]
struct Lost {
    count: u64,
    from_ms: i64,
    to_ms: i64,
    why: String,
}

impl Lost {
    fn add(&mut self, count: u64, why: &str) {
        let now = now_ms();
        if self.count == 0 {
            self.from_ms = now;
        }
        self.count += count;
        self.to_ms = now;
        self.why = why.to_string();
    }

    fn gap(&self) -> Gap {
        Gap {
            from_ms: self.from_ms,
            to_ms: self.to_ms,
            lost: self.count,
            why: self.why.clone(),
        }
    }
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Runs the writer on standard input until every sender has closed its end: the exit status
/// (0; 1 when standard input is not the socket it must be).
pub fn run(args: &WriterArgs) -> u8 {
    // The store and its -wal and -shm files are the writer's alone.
    crond::sys::fs::set_umask(0o077);
    let Ok(socket) = std::io::stdin().as_fd().try_clone_to_owned() else {
        return 1;
    };
    let socket = Arc::new(socket);
    let say = Say(socket.clone());
    let lost_in_queue = Arc::new(Mutex::new(Lost::default()));
    let (tx, rx) = mpsc::channel();
    let queue = Queue {
        tx,
        bytes: Arc::new(AtomicUsize::new(0)),
    };
    let writer = {
        let (args, say, lost) = (args.clone(), say.clone(), lost_in_queue.clone());
        let bytes = queue.bytes.clone();
        std::thread::Builder::new()
            .name("history-store".into())
            .spawn(
                move || match StoreLoop::new(&args, say.clone(), lost, bytes) {
                    Ok(mut store) => store.run(&rx),
                    // The intake finds the queue gone and ends: the daemon restarts the writer.
                    Err(e) => say.log(3, format!("history: the writer could not start: {e}")),
                },
            )
    };
    let Ok(writer) = writer else { return 1 };
    let status = intake(&socket, &queue, &say, &lost_in_queue);
    drop(queue);
    let _ = writer.join();
    status
}

/// Reads messages until every sender is gone (0) or the socket fails (1).
fn intake(socket: &OwnedFd, queue: &Queue, say: &Say, lost: &Mutex<Lost>) -> u8 {
    let mut buf = vec![0u8; MAX_MESSAGE];
    let mut unreadable = Unreadable::default();
    loop {
        let (len, passed) = match seqpacket::recv(socket.as_fd(), &mut buf) {
            // Every sender has closed its end (an empty message from one still there is only
            // an empty message).
            Ok((0, None)) if crond::sys::poll::hung_up(socket.as_fd()) => return 0,
            Ok((0, None)) => {
                unreadable.note(say, "an empty message");
                continue;
            }
            Ok(got) => got,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                unreadable.note(say, "a message longer than the most a message may be");
                continue;
            }
            // The last sender closed its end with log lines of ours unread.
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return 0,
            Err(_) => return 1,
        };
        let message = match read(&buf[..len], passed) {
            Ok(message) => message,
            Err(why) => {
                unreadable.note(say, &why);
                continue;
            }
        };
        let size = message.size();
        if queue.bytes.load(Ordering::Acquire) + size > QUEUE_BYTES {
            let count = match &message {
                Intake::Item(Item::Outcome(_)) => 1,
                Intake::Item(Item::Gap(g)) => g.lost,
                // A query is not dropped: its answer waits in line, as the rest.
                Intake::Query(_) => 0,
            };
            if count > 0 {
                if let Ok(mut lost) = lost.lock() {
                    lost.add(count, "the history writer's queue was full");
                }
                continue;
            }
        }
        queue.bytes.fetch_add(size, Ordering::AcqRel);
        if queue.tx.send(message).is_err() {
            return 1;
        }
    }
}

/// One message as the store's thread takes it; a passed descriptor with a message that is not
/// a readable query still gets its answer (an error).
fn read(message: &[u8], passed: Option<OwnedFd>) -> Result<Intake, String> {
    let fields = Fields::parse(message);
    if let Some(fd) = passed {
        let client = UnixStream::from(fd);
        let query = fields
            .ok()
            .filter(|f| f.kind() == Some(b"query"))
            .and_then(|f| Query::decode(&f).ok());
        return Ok(Intake::Query(Job { query, client }));
    }
    let fields = fields.map_err(|e| e.to_string())?;
    match fields.kind() {
        Some(b"outcome") => Outcome::decode(&fields)
            .map(|o| Intake::Item(Item::Outcome(o)))
            .map_err(|e| e.to_string()),
        Some(b"gap") => Gap::decode(&fields)
            .map(|g| Intake::Item(Item::Gap(g)))
            .map_err(|e| e.to_string()),
        Some(b"query") => Err("a query came without its client's connection".into()),
        _ => Err("a message of no kind the writer takes".into()),
    }
}

/// Messages that could not be read: counted, and told at most once a minute.
#[derive(Debug, Default)]
struct Unreadable {
    count: u64,
    told: Option<Instant>,
}

impl Unreadable {
    fn note(&mut self, say: &Say, why: &str) {
        self.count += 1;
        if self.told.is_some_and(|t| t.elapsed() < TELL_EVERY) {
            return;
        }
        self.told = Some(Instant::now());
        say.log(
            4,
            format!(
                "history: {} not read: {why}",
                crond::words::count(self.count, "message", "messages")
            ),
        );
        self.count = 0;
    }
}

/// The store's thread: the store (or none, while it can't be opened), what waits for the next
/// commit, what was lost since the last one that worked.
struct StoreLoop {
    path: PathBuf,
    bounds: Bounds,
    store: Option<Store>,
    reopen_at: Instant,
    pending: Vec<Item>,
    lost: Lost,
    lost_in_queue: Arc<Mutex<Lost>>,
    queued_bytes: Arc<AtomicUsize>,
    told_at: Option<Instant>,
    prune_at: Instant,
    pruning: bool,
    journal: Option<Journal>,
    mirror: Option<Mirror>,
    say: Say,
    pool: Pool,
    generation: Arc<AtomicU64>,
}

impl StoreLoop {
    fn new(
        args: &WriterArgs,
        say: Say,
        lost: Arc<Mutex<Lost>>,
        queued_bytes: Arc<AtomicUsize>,
    ) -> std::io::Result<StoreLoop> {
        let generation = Arc::new(AtomicU64::new(0));
        let journal = match &args.journal {
            JournalChoice::Off => None,
            JournalChoice::At(path) => Some(Journal::new(path)?),
            JournalChoice::Default => {
                let path = std::path::Path::new(journal::DEFAULT_SOCKET);
                if path.exists() {
                    Some(Journal::new(path)?)
                } else {
                    None
                }
            }
        };
        let cluster = match &args.cluster_db {
            None => None,
            Some(text) => match crate::db::conninfo(text) {
                Ok(info) => Some(ClusterDb {
                    info,
                    host: args.host.clone(),
                }),
                Err(e) => {
                    say.log(3, format!("history: --cluster-db is not usable: {e}"));
                    None
                }
            },
        };
        let mirror = match &cluster {
            Some(db) => {
                let say = say.clone();
                Some(Mirror::start(
                    db.clone(),
                    Arc::new(move |level, text| say.log(level, text)),
                )?)
            }
            None => None,
        };
        let mut this = StoreLoop {
            path: args.store.clone(),
            bounds: Bounds {
                keep_days: args.keep_days,
                keep_runs: args.keep_runs,
                max_size: args.max_size,
            },
            store: None,
            reopen_at: Instant::now(),
            pending: Vec::new(),
            lost: Lost::default(),
            lost_in_queue: lost,
            queued_bytes,
            told_at: None,
            prune_at: Instant::now() + PRUNE_EVERY,
            pruning: true,
            journal,
            mirror,
            say,
            pool: Pool::start(args.store.clone(), generation.clone(), cluster)?,
            generation,
        };
        this.open();
        Ok(this)
    }

    /// Opens the store: a broken file is set aside and a new one made; one that can't be
    /// opened now is tried again a minute later.
    fn open(&mut self) {
        self.reopen_at = Instant::now() + TELL_EVERY;
        match Store::open(&self.path) {
            Ok(store) => {
                self.store = Some(store);
                self.generation.fetch_add(1, Ordering::AcqRel);
            }
            Err(StoreError::Broken(why)) => self.set_aside(&why),
            Err(StoreError::Unwritable(why)) => self.say.log(
                3,
                format!(
                    "history: the store {} can't be opened: {why}",
                    self.path.display()
                ),
            ),
        }
    }

    /// Renames the broken store out of the way, makes a new one, and records the gap there.
    fn set_aside(&mut self, why: &str) {
        self.store = None;
        let now = now_ms();
        let path = self.path.display();
        match store::set_aside(&self.path, now.div_euclid(1000)) {
            Ok(aside) => self.say.log(
                3,
                format!(
                    "history: the store {path} was set aside as {}: {why}",
                    aside.display()
                ),
            ),
            Err(e) => self.say.log(
                3,
                format!("history: the broken store {path} could not be set aside: {e} ({why})"),
            ),
        }
        self.pending.insert(
            0,
            Item::Gap(Gap {
                from_ms: now,
                to_ms: now,
                lost: 0,
                why: format!("the store was set aside: {why}"),
            }),
        );
        match Store::open(&self.path) {
            Ok(store) => self.store = Some(store),
            Err(e) => self.say.log(
                3,
                format!("history: no new store could be made at {path}: {e}"),
            ),
        }
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    fn run(&mut self, rx: &Receiver<Intake>) {
        loop {
            let wait = if self.pruning {
                Duration::ZERO
            } else {
                self.prune_at.saturating_duration_since(Instant::now())
            };
            match rx.recv_timeout(wait) {
                Ok(first) => {
                    self.take(first);
                    if !self.drain(rx) {
                        break;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            self.flush();
            if Instant::now() >= self.prune_at {
                self.prune_at = Instant::now() + PRUNE_EVERY;
                self.pruning = true;
            }
            if self.pruning {
                self.prune_step();
            }
        }
        self.flush();
    }

    /// Takes what else is queued, for up to [`COMMIT_EVERY`] or [`MAX_BATCH`] items: `false`
    /// when the intake is gone.
    fn drain(&mut self, rx: &Receiver<Intake>) -> bool {
        let deadline = Instant::now() + COMMIT_EVERY;
        while Instant::now() < deadline && self.pending.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(next) => self.take(next),
                Err(TryRecvError::Empty) => return true,
                Err(TryRecvError::Disconnected) => return false,
            }
        }
        true
    }

    fn take(&mut self, message: Intake) {
        self.queued_bytes
            .fetch_sub(message.size(), Ordering::AcqRel);
        match message {
            Intake::Item(item) => self.pending.push(item),
            Intake::Query(job) => {
                // What was sent before the query is in the store before it is answered.
                self.flush();
                self.pool.submit(job);
            }
        }
    }

    /// Commits what is pending (with a gap for what was lost before, once writes work again);
    /// a batch that can't be written is dropped and counted.
    fn flush(&mut self) {
        if let Ok(mut queue) = self.lost_in_queue.lock()
            && queue.count > 0
        {
            let why = queue.why.clone();
            self.lost.add(queue.count, &why);
            *queue = Lost::default();
        }
        if self.pending.is_empty() && self.lost.count == 0 {
            return;
        }
        if self.store.is_none() && Instant::now() >= self.reopen_at {
            self.open();
        }
        // The gap of what was lost before goes first, so a batch that fails again is counted
        // without it.
        let with_gap = self.lost.count > 0;
        let mut items = std::mem::take(&mut self.pending);
        if with_gap {
            items.insert(0, Item::Gap(self.lost.gap()));
        }
        let result = match self.store.as_mut() {
            Some(store) => store.insert(&items),
            None => Err(StoreError::Unwritable("the store is not open".into())),
        };
        let result = match result {
            Err(StoreError::Broken(why)) => {
                self.set_aside(&why);
                items.append(&mut self.pending);
                match self.store.as_mut() {
                    Some(store) => store.insert(&items),
                    None => Err(StoreError::Unwritable(why)),
                }
            }
            other => other,
        };
        match result {
            Ok(()) => {
                self.lost = Lost::default();
                self.journal_each(&items);
                if let Some(mirror) = &self.mirror {
                    mirror.send(items.iter().filter_map(|item| match item {
                        Item::Outcome(o) => Some(o),
                        Item::Gap(_) => None,
                    }));
                }
            }
            Err(e) => self.drop_batch(&items[usize::from(with_gap)..], &e.to_string()),
        }
    }

    /// Counts the outcomes of a batch that could not be written, and says so (once a minute at
    /// most).
    fn drop_batch(&mut self, items: &[Item], why: &str) {
        let dropped: u64 = items
            .iter()
            .map(|item| match item {
                Item::Outcome(_) => 1,
                Item::Gap(g) => g.lost,
            })
            .sum();
        self.lost
            .add(dropped, &format!("the store could not be written: {why}"));
        if self.told_at.is_some_and(|t| t.elapsed() < TELL_EVERY) {
            return;
        }
        self.told_at = Some(Instant::now());
        self.say.log(
            3,
            format!(
                "history: {} not recorded: {why}",
                crond::words::count(self.lost.count, "outcome", "outcomes")
            ),
        );
    }

    fn journal_each(&mut self, items: &[Item]) {
        let Some(journal) = self.journal.as_mut() else {
            return;
        };
        for item in items {
            if let Item::Outcome(o) = item
                && let Some(line) = journal.send(o)
            {
                self.say.log(4, line);
            }
        }
    }

    /// One chunk of pruning; done when nothing is left over the bounds.
    fn prune_step(&mut self) {
        let Some(store) = self.store.as_mut() else {
            self.pruning = false;
            return;
        };
        match store.prune_step(&self.bounds, now_ms()) {
            Ok(more) => self.pruning = more,
            Err(StoreError::Broken(why)) => {
                self.pruning = false;
                self.set_aside(&why);
            }
            Err(StoreError::Unwritable(_)) => self.pruning = false,
        }
    }
}
