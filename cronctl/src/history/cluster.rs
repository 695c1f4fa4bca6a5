//! Cluster entries' runs in the cluster database. Each run of a cluster entry has one row in
//! `crond_runs`, its claim (made by the helper of the host that runs it). The writer of that
//! host copies into the row what the run did (its record, less the output, which stays on that
//! host), and `cronctl history ENTRY` on any host merges the rows of every host with its own
//! records: one list, one line per slot.
//!
//! The copy runs on a thread of its own ([`Mirror`]) behind a bounded queue: the database may
//! be slow or gone, and the store's thread never waits for it. A batch the database does not
//! take is dropped and counted, and said at most once a minute; the host's own store has the
//! records all the same.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::time::{Duration, Instant};

use crond::cluster::conninfo::ConnInfo;
use crond::history::{ClusterRun, End, Mail, Outcome, Ran, Reason, Result as Slot, Trigger};

use super::store::{HistoryAsk, Stored};
use crate::client::RealConnector;
use crate::conn::{Connection, Rows};
use crate::{db, sql};

/// The most batches waiting for the database (a batch is what one commit of the store holds).
pub const QUEUED: usize = 64;

/// The most runs one statement records.
pub const MAX_ROWS: usize = 1_000;

/// How long after a failed connection the next is tried.
const RETRY_AFTER: Duration = Duration::from_secs(10);

/// How often the same trouble is said, at most.
const TELL_EVERY: Duration = Duration::from_secs(60);

/// The cluster database as the writer reaches it: `--cluster-db`'s settings and this host's
/// name in the cluster.
#[derive(Debug, Clone)]
pub struct ClusterDb {
    pub info: ConnInfo,
    pub host: String,
}

impl ClusterDb {
    fn connect(&self) -> Result<Box<dyn Connection>, String> {
        let mut client = db::connect(&RealConnector, &self.info).map_err(|e| e.to_string())?;
        client.batch(sql::SCHEMA).map_err(|e| e.to_string())?;
        Ok(client)
    }

    /// The runs of `run`'s entry (of `owner`) that started on any host, as `ask` narrows
    /// them, newest first; `like` is the entry's latest record here, whose id, place and
    /// command they are given.
    pub fn runs(&self, like: &Outcome, ask: &HistoryAsk<'_>) -> Result<Vec<Stored>, String> {
        let Some(run) = &like.cluster else {
            return Ok(Vec::new());
        };
        let mut client = self.connect()?;
        let (limit, entry) = (ask.limit.to_string(), run.entry.to_string());
        let since = ask.since_ms.map(|ms| ms.div_euclid(1000).to_string());
        let params = [
            Some(run.cluster.as_str()),
            Some(like.user.as_str()),
            Some(entry.as_str()),
            Some(limit.as_str()),
            since.as_deref(),
            Some(if ask.failed { "t" } else { "f" }),
        ];
        let rows = client.query(sql::ENTRY_RUNS, &params);
        client.close();
        Ok(from_rows(&rows.map_err(|e| e.to_string())?, like))
    }
}

/// The rows of [`sql::ENTRY_RUNS`] as outcomes of the entry `like` is a record of: those that
/// have ended (a run still going has no outcome yet). Run 0: not kept on this host.
fn from_rows(rows: &Rows, like: &Outcome) -> Vec<Stored> {
    let mut out = Vec::with_capacity(rows.rows.len());
    for row in &rows.rows {
        let text = |i: usize| row.get(i).cloned().flatten();
        let number = |i: usize| text(i).and_then(|t| t.parse::<i64>().ok());
        let count = |i: usize| number(i).unwrap_or(0).max(0) as u64;
        let (Some(minute), Some(at_ms)) = (number(0), number(3)) else {
            continue;
        };
        let result = match text(15) {
            Some(code) => Slot::NotRun {
                reason: Reason::parse(&code).unwrap_or(Reason::NotStarted),
                words: text(16).unwrap_or_default(),
            },
            None => {
                let Some(ended_ms) = number(4) else { continue };
                // Without a record, the helper's status alone: the job child's exit (0 ok,
                // 1 failed, its code not known, 2 timed out) or minus the signal.
                let status = number(7);
                let end = match (number(5), number(6), status) {
                    (_, Some(signal), _) => End::Signaled(signal as i32),
                    (Some(code), None, _) => End::Exited(code as i32),
                    (None, None, Some(status)) if status < 0 => End::Signaled(-status as i32),
                    (None, None, None | Some(0)) => End::Exited(0),
                    (None, None, Some(_)) => End::Exited(1),
                };
                let unrecorded = number(5).is_none() && number(6).is_none();
                Slot::Ran(Ran {
                    ended_ms,
                    end,
                    timed_out: text(8).is_some_and(|t| t == "t" || t == "true")
                        || (unrecorded && status == Some(2)),
                    user_us: count(9),
                    system_us: count(10),
                    max_rss_kib: count(11),
                    output_bytes: count(12),
                    head: Vec::new(),
                    tail: Vec::new(),
                    mail: match text(13).as_deref() {
                        None => Mail::None,
                        Some("sent") => Mail::Sent,
                        Some(_) => Mail::Failed(text(14).unwrap_or_default()),
                    },
                })
            }
        };
        let cluster = like.cluster.as_ref().map(|c| ClusterRun {
            minute: Some(minute),
            ..c.clone()
        });
        out.push(Stored {
            run: 0,
            outcome: Outcome {
                trigger: text(2)
                    .and_then(|t| Trigger::parse(&t))
                    .unwrap_or(Trigger::Schedule),
                slot: Some(minute),
                host: text(1).unwrap_or_default(),
                at_ms,
                cluster,
                result,
                ..like.clone()
            },
        });
    }
    out
}

/// The minute of the claim a record is of, if it is a cluster run's.
fn claim_minute(s: &Stored) -> Option<i64> {
    s.outcome.cluster.as_ref().and_then(|c| c.minute)
}

/// One list of a cluster entry's outcomes, newest first, at most `limit`: one line per slot.
/// A run this host recorded is its own record (it has the output); else a run the cluster's
/// rows show on some host (a slot this host did not run: another host did); else this host's
/// record of why it did not run the slot (paused, the claim lost, ...). Records of no claim
/// (`cronctl run`) are kept as they are.
pub fn merge(local: Vec<Stored>, cluster: Vec<Stored>, limit: usize) -> Vec<Stored> {
    let ran_here: std::collections::HashSet<i64> = local
        .iter()
        .filter(|s| matches!(s.outcome.result, Slot::Ran(_)))
        .filter_map(claim_minute)
        .collect();
    let elsewhere: Vec<Stored> = cluster
        .into_iter()
        .filter(|s| claim_minute(s).is_some_and(|m| !ran_here.contains(&m)))
        .collect();
    let shown: std::collections::HashSet<i64> = elsewhere.iter().filter_map(claim_minute).collect();
    let mut all: Vec<Stored> = local
        .into_iter()
        .filter(|s| {
            matches!(s.outcome.result, Slot::Ran(_))
                || claim_minute(s).is_none_or(|m| !shown.contains(&m))
        })
        .chain(elsewhere)
        .collect();
    all.sort_by_key(|s| std::cmp::Reverse((s.outcome.at_ms, s.run)));
    all.truncate(limit);
    all
}

/// The writer's copy of its cluster runs' records into the cluster database.
#[derive(Debug)]
pub struct Mirror {
    batches: SyncSender<Vec<Outcome>>,
    /// Records dropped because the queue was full, not yet said.
    dropped: Arc<AtomicU64>,
}

/// What the mirror says in the daemon's log (the writer's `Say`).
pub type Tell = Arc<dyn Fn(u8, String) + Send + Sync>;

impl Mirror {
    /// Starts the thread that writes to `db`.
    pub fn start(db: ClusterDb, tell: Tell) -> std::io::Result<Mirror> {
        let (batches, queue) = mpsc::sync_channel(QUEUED);
        let dropped = Arc::new(AtomicU64::new(0));
        let shared = dropped.clone();
        std::thread::Builder::new()
            .name("history-cluster".into())
            .spawn(move || Copier::new(db, tell, shared).run(&queue))?;
        Ok(Mirror { batches, dropped })
    }

    /// Queues the records of cluster runs among `outcomes` (those with a claim) for the
    /// database, never waiting: a full queue drops them, counted.
    pub fn send<'a>(&self, outcomes: impl Iterator<Item = &'a Outcome>) {
        let batch: Vec<Outcome> = outcomes
            .filter(|o| o.cluster.as_ref().is_some_and(|c| c.minute.is_some()))
            .map(|o| Outcome {
                result: match &o.result {
                    Slot::Ran(ran) => Slot::Ran(Ran {
                        head: Vec::new(),
                        tail: Vec::new(),
                        ..ran.clone()
                    }),
                    other => other.clone(),
                },
                ..o.clone()
            })
            .collect();
        if batch.is_empty() {
            return;
        }
        let count = batch.len() as u64;
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            self.batches.try_send(batch)
        {
            self.dropped.fetch_add(count, Ordering::AcqRel);
        }
    }
}

/// The mirror's thread.
struct Copier {
    db: ClusterDb,
    tell: Tell,
    client: Option<Box<dyn Connection>>,
    retry_at: Instant,
    dropped_in_queue: Arc<AtomicU64>,
    /// Records not written since it was last said, and why.
    lost: u64,
    why: String,
    told_at: Option<Instant>,
}

impl Copier {
    fn new(db: ClusterDb, tell: Tell, dropped_in_queue: Arc<AtomicU64>) -> Copier {
        Copier {
            db,
            tell,
            client: None,
            retry_at: Instant::now(),
            dropped_in_queue,
            lost: 0,
            why: String::new(),
            told_at: None,
        }
    }

    fn run(&mut self, queue: &Receiver<Vec<Outcome>>) {
        while let Ok(mut batch) = queue.recv() {
            while batch.len() < MAX_ROWS {
                match queue.try_recv() {
                    Ok(more) => batch.extend(more),
                    Err(_) => break,
                }
            }
            let dropped = self.dropped_in_queue.swap(0, Ordering::AcqRel);
            if dropped > 0 {
                self.lose(dropped, "the queue to the cluster database was full");
            }
            for chunk in batch.chunks(MAX_ROWS) {
                if let Err(why) = self.write(chunk) {
                    self.lose(chunk.len() as u64, &why);
                }
            }
        }
        if let Some(client) = self.client.take() {
            client.close();
        }
    }

    fn write(&mut self, runs: &[Outcome]) -> Result<(), String> {
        if self.client.is_none() {
            if Instant::now() < self.retry_at {
                return Err(self.why.clone());
            }
            self.retry_at = Instant::now() + RETRY_AFTER;
            self.client = Some(self.db.connect()?);
        }
        let params = record_params(runs, &self.db.host);
        let p: Vec<Option<&str>> = params.iter().map(|s| Some(s.as_str())).collect();
        let Some(client) = self.client.as_mut() else {
            return Err("not connected".into());
        };
        match client.query(sql::RECORD, &p) {
            Ok(_) => Ok(()),
            Err(e) => {
                if e.is_connection_lost()
                    && let Some(client) = self.client.take()
                {
                    client.close();
                }
                Err(e.to_string())
            }
        }
    }

    fn lose(&mut self, count: u64, why: &str) {
        self.lost += count;
        self.why = why.to_string();
        if self.told_at.is_some_and(|t| t.elapsed() < TELL_EVERY) {
            return;
        }
        self.told_at = Some(Instant::now());
        (self.tell)(
            4,
            format!(
                "history: {} of cluster runs not copied to the cluster database: {why} \
                 (this host's history has them)",
                crond::words::count(self.lost, "record", "records")
            ),
        );
        self.lost = 0;
    }
}

/// [`sql::RECORD`]'s parameters for `runs`, this host `host`.
fn record_params(runs: &[Outcome], host: &str) -> Vec<String> {
    let column = |f: &dyn Fn(&Outcome) -> Option<String>| sql::nullable_array(runs.iter().map(f));
    let ran = |o: &Outcome| match &o.result {
        Slot::Ran(ran) => Some(ran.clone()),
        Slot::NotRun { .. } => None,
    };
    let of_ran = |f: fn(&Ran) -> Option<String>| column(&|o| ran(o).and_then(|r| f(&r)));
    let claim = |o: &Outcome| {
        o.cluster.clone().unwrap_or(ClusterRun {
            cluster: String::new(),
            entry: crond::cluster::entry_id::EntryKey(0),
            minute: None,
        })
    };
    vec![
        column(&|o| Some(claim(o).cluster)),
        column(&|o| Some(o.user.clone())),
        column(&|o| Some(claim(o).entry.to_string())),
        column(&|o| claim(o).minute.map(|m| m.to_string())),
        host.to_string(),
        column(&|o| Some(o.trigger.code().to_string())),
        column(&|o| Some(o.at_ms.to_string())),
        of_ran(|r| Some(r.ended_ms.to_string())),
        of_ran(|r| match r.end {
            End::Exited(code) => Some(code.to_string()),
            End::Signaled(_) => None,
        }),
        of_ran(|r| match r.end {
            End::Signaled(signal) => Some(signal.to_string()),
            End::Exited(_) => None,
        }),
        of_ran(|r| Some(r.timed_out.to_string())),
        of_ran(|r| Some(r.user_us.to_string())),
        of_ran(|r| Some(r.system_us.to_string())),
        of_ran(|r| Some(r.max_rss_kib.to_string())),
        of_ran(|r| Some(r.output_bytes.to_string())),
        of_ran(|r| match &r.mail {
            Mail::None => None,
            Mail::Sent => Some("sent".into()),
            Mail::Failed(_) => Some("failed".into()),
        }),
        of_ran(|r| match &r.mail {
            Mail::Failed(words) => Some(words.clone()),
            _ => None,
        }),
        column(&|o| match &o.result {
            Slot::NotRun { reason, .. } => Some(reason.code().to_string()),
            Slot::Ran(_) => None,
        }),
        column(&|o| match &o.result {
            Slot::NotRun { words, .. } => Some(words.clone()),
            Slot::Ran(_) => None,
        }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crond::cluster::entry_id::EntryKey;

    /// A record of the cluster entry's run due at `minute` (Unix s), kept here as run `run`
    /// (0: a cluster row), started on `host`.
    fn record(run: i64, minute: i64, host: &str, result: Slot) -> Stored {
        Stored {
            run,
            outcome: Outcome {
                entry: "0123456789ab".into(),
                place: "crontabs/root:2".into(),
                user: "root".into(),
                owner_uid: Some(0),
                command: "backup".into(),
                trigger: Trigger::Schedule,
                slot: Some(minute),
                host: host.into(),
                at_ms: minute * 1000 + 40,
                cluster: Some(ClusterRun {
                    cluster: "web".into(),
                    entry: EntryKey(0xfeed),
                    minute: Some(minute),
                }),
                attempt: None,
                result,
            },
        }
    }

    fn ran(code: i32) -> Slot {
        Slot::Ran(Ran {
            ended_ms: 0,
            end: End::Exited(code),
            timed_out: false,
            user_us: 1,
            system_us: 2,
            max_rss_kib: 3,
            output_bytes: 4,
            head: b"out\n".to_vec(),
            tail: Vec::new(),
            mail: Mail::None,
        })
    }

    fn not_run(reason: Reason) -> Slot {
        Slot::NotRun {
            reason,
            words: reason.code().into(),
        }
    }

    fn shown(list: &[Stored]) -> Vec<(i64, i64, &str)> {
        list.iter()
            .map(|s| (s.outcome.slot.unwrap_or(0), s.run, s.outcome.host.as_str()))
            .collect()
    }

    #[test]
    fn one_line_per_slot_this_hosts_run_first_then_the_clusters_then_why_not_here() {
        let local = vec![
            record(7, 300, "a", not_run(Reason::Paused)),
            record(6, 240, "a", not_run(Reason::OtherHost)),
            record(5, 180, "a", ran(3)),
            record(4, 120, "a", not_run(Reason::ClaimLost)),
            record(3, 60, "a", not_run(Reason::OtherHost)),
        ];
        let cluster = vec![
            record(0, 240, "b", ran(0)),
            record(0, 180, "a", ran(3)),
            record(0, 120, "b", ran(1)),
        ];
        let merged = merge(local.clone(), cluster.clone(), 100);
        assert_eq!(
            shown(&merged),
            [
                (300, 7, "a"),
                (240, 0, "b"),
                (180, 5, "a"),
                (120, 0, "b"),
                (60, 3, "a"),
            ]
        );
        // This host's own run keeps its output; the list is cut to the limit, newest first.
        assert!(matches!(&merged[2].outcome.result, Slot::Ran(r) if !r.head.is_empty()));
        assert_eq!(
            shown(&merge(local.clone(), cluster, 2)),
            [(300, 7, "a"), (240, 0, "b")]
        );
        // No cluster rows (none started yet, or none asked for): this host's records as they are.
        assert_eq!(shown(&merge(local.clone(), Vec::new(), 100)), shown(&local));
        // A manual run has no claim: it stays whatever the cluster says.
        let mut manual = record(9, 240, "a", ran(0));
        manual.outcome.cluster.as_mut().unwrap().minute = None;
        let cluster = vec![record(0, 240, "b", ran(0))];
        let merged = merge(vec![manual], cluster, 100);
        assert_eq!(merged.len(), 2, "{merged:?}");
    }

    #[test]
    fn cluster_rows_read_back_as_outcomes_of_the_entry_and_unended_runs_are_left_out() {
        let like = record(1, 60, "a", ran(0)).outcome;
        // A row of `sql::ENTRY_RUNS`: the cells given by their column, NULL elsewhere.
        let row = |given: &[(usize, &str)]| {
            let mut cells = vec![None; 17];
            for &(i, text) in given {
                cells[i] = Some(text.to_string());
            }
            cells
        };
        let rows = Rows {
            columns: Vec::new(),
            affected: 4,
            rows: vec![
                // Recorded by the writer of host b.
                row(&[
                    (0, "120"),
                    (1, "b"),
                    (2, "catch-up"),
                    (3, "120500"),
                    (4, "121500"),
                    (6, "9"),
                    (7, "-9"),
                    (8, "t"),
                    (9, "10"),
                    (10, "20"),
                    (11, "30"),
                    (12, "40"),
                    (13, "failed"),
                    (14, "the MTA exited 75"),
                ]),
                // Only the helper's end: the status alone (2: timed out).
                row(&[(0, "180"), (1, "c"), (3, "180100"), (4, "180900"), (7, "2")]),
                // Started on d and not ended yet: no outcome.
                row(&[(0, "240"), (1, "d"), (3, "240100")]),
                // Granted, then refused by PAM on host e.
                row(&[
                    (0, "300"),
                    (1, "e"),
                    (2, "schedule"),
                    (3, "300100"),
                    (7, "1"),
                    (15, "refused"),
                    (16, "account expired"),
                ]),
            ],
        };
        let got = from_rows(&rows, &like);
        assert_eq!(got.len(), 3, "{got:?}");
        let b = &got[0].outcome;
        assert_eq!((got[0].run, b.host.as_str(), b.slot), (0, "b", Some(120)));
        assert_eq!(
            (b.trigger, b.at_ms, &b.place),
            (Trigger::CatchUp, 120_500, &like.place)
        );
        assert_eq!(b.cluster.as_ref().and_then(|c| c.minute), Some(120));
        let Slot::Ran(r) = &b.result else {
            panic!("{b:?}")
        };
        assert_eq!(
            (
                r.end,
                r.timed_out,
                r.user_us,
                r.system_us,
                r.max_rss_kib,
                r.output_bytes
            ),
            (End::Signaled(9), true, 10, 20, 30, 40)
        );
        assert_eq!(r.mail, Mail::Failed("the MTA exited 75".into()));
        assert!(matches!(
            &got[1].outcome.result,
            Slot::Ran(r) if r.end == End::Exited(1) && r.timed_out
        ));
        assert!(matches!(
            &got[2].outcome.result,
            Slot::NotRun { reason: Reason::Refused, words } if words == "account expired"
        ));
    }

    #[test]
    fn a_database_out_of_reach_costs_the_copy_said_and_a_full_queue_drops_counting() {
        let dir = tempfile::tempdir().unwrap();
        let settings = format!(
            "host={} dbname=x user=root connect_timeout=1",
            dir.path().display()
        );
        let info = crond::cluster::conninfo::parse(&settings, "root").unwrap();
        let (said, heard) = mpsc::channel::<String>();
        let said = std::sync::Mutex::new(said);
        // The copier's first word waits on this gate: meanwhile nothing leaves the queue.
        let gate = Arc::new(std::sync::Mutex::new(()));
        let held = gate.lock().unwrap();
        let shared = gate.clone();
        let tell: Tell = Arc::new(move |_, text| {
            let _ = said.lock().unwrap().send(text);
            let _open = shared.lock();
        });
        let mirror = Mirror::start(
            ClusterDb {
                info,
                host: "h".into(),
            },
            tell,
        )
        .unwrap();
        let one = [record(1, 60, "h", ran(0)).outcome];
        mirror.send(one.iter());
        let first = heard.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(
            first.starts_with(
                "history: 1 record of cluster runs not copied to the cluster database: "
            ) && first.ends_with("(this host's history has them)"),
            "{first}"
        );
        // A run without a claim (`cronctl run`) and a local entry's are not copied at all.
        let mut manual = record(2, 120, "h", ran(0)).outcome;
        manual.cluster.as_mut().unwrap().minute = None;
        let local = Outcome {
            cluster: None,
            ..manual.clone()
        };
        mirror.send([manual, local].iter());
        assert_eq!(mirror.dropped.load(Ordering::Acquire), 0);
        for _ in 0..QUEUED + 3 {
            mirror.send(one.iter());
        }
        assert_eq!(
            mirror.dropped.load(Ordering::Acquire),
            3,
            "past the queue's bound"
        );
        drop(held);
    }

    #[test]
    fn a_batchs_parameters_are_one_array_per_column_nulls_where_nothing_was_recorded() {
        let runs = [
            record(1, 60, "a", ran(3)).outcome,
            record(2, 120, "a", not_run(Reason::Refused)).outcome,
        ];
        let p = record_params(&runs, "node-1");
        assert_eq!(p.len(), 19, "$1..$19");
        assert_eq!(p[0], r#"{"web","web"}"#);
        assert_eq!(p[2], format!(r#"{{"{0}","{0}"}}"#, EntryKey(0xfeed)));
        assert_eq!(p[3], r#"{"60","120"}"#);
        assert_eq!(p[4], "node-1");
        assert_eq!(p[8], r#"{"3",NULL}"#, "exit");
        assert_eq!(p[9], "{NULL,NULL}", "signal");
        assert_eq!(p[14], r#"{"4",NULL}"#, "output bytes");
        assert_eq!(p[17], r#"{NULL,"refused"}"#);
    }
}
