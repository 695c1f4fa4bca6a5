//! The helper's decisions, as a state machine driven by what comes in (the daemon's requests, the
//! passing of time) and carried out on a [`Store`]; what it says to the daemon collects in an
//! outbox. Pure apart from the store: the time is an argument, so the unit tests drive it with
//! an in-memory store and a made-up clock.
//!
//! Runs are spread over the live hosts: each run is meant for one of them ([`run_weight`]),
//! which claims it at once; the others leave it [`DEFER`] and then claim it only if no host has
//! (a host that is down, or slow, or lacks the entry). A run is answered `unreachable` only when
//! the database can't be reached; a statement it was too slow for is tried again.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crond::cluster::entry_id::run_weight;
use crond::cluster::parked::{MAX_PARKED, TAKEOVER_WAIT_MS};
use crond::cluster::wire::{Denied, FromHelper, Loaded, MAX_LISTED, RunKey, START_WINDOW};

use super::HelperArgs;
use super::store::{Claim, Failure, Store, Watched};

/// How long a run meant for another live host is left to it before this host claims it (if
/// no host has: that host is slow, stopped, or lacks the entry).
pub const DEFER: Duration = Duration::from_secs(5);

/// The most runs one claim, start or end statement carries: a batch of them stays far inside
/// the statement timeout (about 20 ms per 1,000 runs on a local server).
pub const MAX_BATCH: usize = 1_000;

/// Runs whose statement the database was too slow for (or whose connection broke mid-way) are
/// tried again after this.
pub const RETRY_AFTER: Duration = Duration::from_secs(1);

/// How long a run marked started counts against [`START_WINDOW`] without the daemon's word
/// that it acted on it (a daemon that never says so holds up no run for longer).
pub const FORK_WAIT: Duration = Duration::from_secs(10);

/// The fewest runs one start statement marks while more wait (unless fewer wait): the window
/// refills a quarter or more at a time, so that a statement is under way while the daemon
/// still has most of the window to fork.
const MIN_START_BATCH: usize = START_WINDOW / 4;

/// How far a host's clock may be from the database's before it is said: past it, a host ahead
/// claims runs before the hosts they are meant for ask (their wait, [`DEFER`], is over for it),
/// and a host behind has its share run by the others.
pub const CLOCK_TOLERANCE: Duration = DEFER;

/// How long the ends of runs may wait to be written while runs wait to be started: one
/// statement a second for them instead of one between every two starts.
pub const END_EVERY: Duration = Duration::from_secs(1);

/// How often the history is pruned.
const PRUNE_EVERY: Duration = Duration::from_secs(3600);

/// How long the helper waits between connection attempts.
pub const RECONNECT_EVERY: Duration = Duration::from_secs(5);

/// Runs by their request number.
type Runs = Vec<(u64, RunKey)>;

/// A run another host claimed, watched for a takeover.
#[derive(Debug)]
struct Watch {
    seq: u64,
    key: RunKey,
    since: Instant,
}

/// The helper's state between two events.
pub struct Machine<S: Store> {
    args: HelperArgs,
    store: S,
    /// The time of the event being handled.
    now: Instant,
    next_connect: Instant,
    /// Why the database is out of reach, while it is (logged once per outage).
    down: Option<String>,
    next_lease: Instant,
    next_prune: Instant,
    /// When the watched runs are looked at next.
    next_takeover: Instant,
    watched: Vec<Watch>,
    /// The hosts holding a live lease (this one among them once its lease is taken), by name.
    live: Vec<String>,
    /// Runs meant for another live host, each with when this host claims it if no host has.
    deferred: VecDeque<(Instant, u64, RunKey)>,
    /// Runs to claim now, in order.
    pending: VecDeque<(u64, RunKey)>,
    /// Runs this session claimed, to be marked started as the window has room, in order.
    to_start: VecDeque<(u64, RunKey)>,
    /// Runs marked started and answered `GO` that the daemon has not said it acted on
    /// (`FORKED`), with when each was marked. Those marked less than [`FORK_WAIT`] ago are the
    /// window (at most [`START_WINDOW`]); the older ones are kept (for an hour) so that a stop
    /// gives them back too.
    in_flight: HashMap<RunKey, Instant>,
    /// The daemon said `STOP`: nothing more is claimed or started.
    stopped: bool,
    /// Ends of runs not written yet, and when the first of them came.
    ends: Vec<(RunKey, i32)>,
    ends_since: Option<Instant>,
    /// This host's clock was last said to be off the database's by more than
    /// [`CLOCK_TOLERANCE`] (said once, until it is back within half of it).
    clock_off: bool,
    /// Runs taken over without a request (`TAKE`), with when (kept an hour, at most
    /// [`MAX_PARKED`]): a request for one of them later (the daemon's own run of that minute,
    /// after a `RANDOM_DELAY`) finds it started by this session, and is told it ran here, not
    /// `GO` again.
    adopted: HashMap<RunKey, Instant>,
    /// When the pending runs are tried again after a failure.
    retry_at: Option<Instant>,
    /// What is to be said to the daemon, in order.
    outbox: Vec<FromHelper>,
    /// The daemon's list of the cluster entries it has loaded, until it is written, with how
    /// many it left out.
    listed: Option<(Vec<Loaded>, usize)>,
    /// When the list is written next (after a failure, or without the lease).
    list_at: Instant,
}

impl<S: Store> Machine<S> {
    pub fn new(args: HelperArgs, store: S, now: Instant) -> Machine<S> {
        Machine {
            args,
            store,
            now,
            next_connect: now,
            down: None,
            next_lease: now,
            next_prune: now,
            next_takeover: now,
            watched: Vec::new(),
            live: Vec::new(),
            deferred: VecDeque::new(),
            pending: VecDeque::new(),
            to_start: VecDeque::new(),
            in_flight: HashMap::new(),
            stopped: false,
            ends: Vec::new(),
            ends_since: None,
            clock_off: false,
            adopted: HashMap::new(),
            retry_at: None,
            outbox: Vec::new(),
            listed: None,
            list_at: now,
        }
    }

    /// What is to be said to the daemon since the last call.
    pub fn take_outbox(&mut self) -> Vec<FromHelper> {
        std::mem::take(&mut self.outbox)
    }

    /// When the machine must be woken without input: the lease, the prune, the takeover check,
    /// a deferred run's turn, a retry.
    pub fn next_wake(&self) -> Instant {
        // The takeover look also adopts claims nobody waits for: it comes even with nothing
        // watched.
        let mut at = self.next_lease.min(self.next_prune).min(self.next_takeover);
        if let Some(&(when, _, _)) = self.deferred.front() {
            at = at.min(when);
        }
        if !self.pending.is_empty() {
            at = at.min(self.retry_at.unwrap_or(self.now));
        }
        if !self.to_start.is_empty()
            && let Some(oldest) = self.in_window().min()
        {
            at = at.min(oldest + FORK_WAIT);
        }
        if self.listed.is_some() {
            at = at.min(self.list_at);
        }
        if let Some(since) = self.ends_since {
            at = at.min(since + END_EVERY);
        }
        at
    }

    /// The daemon listed the cluster entries it has loaded (`omitted` more were past its
    /// bound): written as this host's rows at the next turn, replacing a list not written yet.
    pub fn on_loaded(&mut self, entries: Vec<Loaded>, omitted: usize) {
        self.listed = Some((entries, omitted));
        self.list_at = self.now;
    }

    /// Requests from the daemon: `RUN`s (this host's share goes to be claimed now, the rest
    /// waits [`DEFER`]), `FORKED`s (the window has room for more starts) and `END`s.
    pub fn on_requests(
        &mut self,
        runs: Runs,
        forked: Vec<RunKey>,
        ends: Vec<(RunKey, i32)>,
        now: Instant,
    ) {
        self.now = now;
        for key in &forked {
            self.in_flight.remove(key);
        }
        let later = now + DEFER;
        // A stopping daemon sends no more runs; any still on their way start nowhere here.
        let runs = if self.stopped { Vec::new() } else { runs };
        for (seq, key) in runs {
            if self.meant_for_me(&key) {
                self.pending.push_back((seq, key));
            } else {
                self.deferred.push_back((later, seq, key));
            }
        }
        self.claim_pending();
        self.start_window();
        if !ends.is_empty() {
            self.ends_since.get_or_insert(now);
            self.ends.extend(ends);
        }
        self.write_ends(false);
        self.write_list();
    }

    /// Writes the ends of runs that came: at once when no run waits to be started (or
    /// `all`), else once they have waited [`END_EVERY`] or fill a statement, so that the
    /// starts of a busy minute are not held up by a statement between every two of them.
    fn write_ends(&mut self, all: bool) {
        let Some(since) = self.ends_since else {
            return;
        };
        let due = all
            || self.to_start.is_empty()
            || self.ends.len() >= MAX_BATCH
            || self.now.saturating_duration_since(since) >= END_EVERY;
        if !due {
            return;
        }
        let ends = std::mem::take(&mut self.ends);
        self.ends_since = None;
        for batch in ends.chunks(MAX_BATCH) {
            // An end that can't be written is lost: the run shows as started, not ended.
            let _ = self.call(|s| s.end(batch));
        }
    }

    /// Writes the daemon's list of its entries when it is due: tried again after a failure,
    /// and at the next lease renewal while this session does not hold the lease.
    fn write_list(&mut self) {
        if self.now < self.list_at {
            return;
        }
        let Some((entries, omitted)) = self.listed.take() else {
            return;
        };
        match self.call(|s| s.list(&entries)) {
            Ok(true) if omitted > 0 => self.log(
                true,
                format!(
                    "{omitted} cluster entries past the bound ({MAX_LISTED} entries) are not \
                     listed in the database: cronctl entries does not show them"
                ),
            ),
            Ok(true) => {}
            Ok(false) => {
                self.list_at = self.next_lease;
                self.listed = Some((entries, omitted));
            }
            Err(_) => {
                self.list_at = self.now + RETRY_AFTER;
                self.listed = Some((entries, omitted));
            }
        }
    }

    /// Time passed: the lease, the prune, the takeover check, deferred runs, retries.
    pub fn on_tick(&mut self, now: Instant) {
        self.now = now;
        if now >= self.next_lease {
            self.next_lease = now
                + Duration::from_secs(u64::from(self.args.lease_s) / 3).max(Duration::from_secs(1));
            self.renew_lease();
        }
        if now >= self.next_prune && self.store.connected() {
            self.next_prune = now + PRUNE_EVERY;
            self.prune();
        }
        if now >= self.next_takeover {
            self.next_takeover = now + self.takeover_every();
            if !self.watched.is_empty() {
                self.take_over();
            }
            self.adopt();
        }
        while let Some(&(when, _, _)) = self.deferred.front() {
            if when > now {
                break;
            }
            if let Some((_, seq, key)) = self.deferred.pop_front() {
                self.pending.push_back((seq, key));
            }
        }
        self.claim_pending();
        self.start_window();
        self.write_ends(false);
        self.write_list();
    }

    /// The daemon is gone: the lease goes back, so that other hosts take over at once.
    pub fn release(&mut self) {
        self.write_ends(true);
        self.store.release();
    }

    /// The daemon's input ended (it exited, or was killed), after it said `forked`, `ends` and
    /// perhaps `STOP` (`stop`) in the last turn, which the helper had not acted on yet. What it
    /// said still holds: the ends are written, and after a `STOP` (a clean stop that did not
    /// wait for `STOPPED`, its `FORKED`s all before it) the runs it did not fork are given back,
    /// as [`Machine::stop`] does. Runs it asked for start nowhere.
    pub fn on_input_end(
        &mut self,
        forked: Vec<RunKey>,
        ends: Vec<(RunKey, i32)>,
        stop: bool,
        now: Instant,
    ) {
        self.now = now;
        for key in &forked {
            self.in_flight.remove(key);
        }
        if !ends.is_empty() {
            self.ends_since.get_or_insert(now);
            self.ends.extend(ends);
        }
        self.write_ends(true);
        if stop {
            self.stop(now);
        }
    }

    /// The daemon is stopping (`STOP`, after the `FORKED` of every run it forked): the runs
    /// marked started that it did not fork are given back as claims, which other hosts take
    /// over once the lease goes (at the daemon's exit); nothing more is claimed or started.
    /// The lease is still renewed and `END`s still written while its jobs finish.
    pub fn stop(&mut self, now: Instant) {
        self.now = now;
        self.stopped = true;
        self.pending.clear();
        self.deferred.clear();
        self.to_start.clear();
        self.watched.clear();
        self.write_ends(true);
        self.give_back();
        self.outbox.push(FromHelper::Stopped);
    }

    /// Gives back the runs marked started and not forked, and says how it went.
    fn give_back(&mut self) {
        let unforked: Vec<RunKey> = self.in_flight.drain().map(|(key, _)| key).collect();
        if unforked.is_empty() {
            return;
        }
        let mut given = 0;
        for batch in unforked.chunks(MAX_BATCH) {
            match self.call(|s| s.unstart(batch)) {
                Ok(n) => given += n,
                Err(_) => {
                    let left = crond::words::count(
                        (unforked.len() - given) as u64,
                        "run marked started",
                        "runs marked started",
                    );
                    self.log(
                        true,
                        format!(
                            "stopping: {left} and not forked could not be given back: \
                             they end as unknown"
                        ),
                    );
                    return;
                }
            }
        }
        self.log(
            false,
            format!(
                "stopping: gave back {}: other hosts take them over",
                crond::words::count(
                    given as u64,
                    "run marked started and not forked",
                    "runs marked started and not forked"
                )
            ),
        );
    }

    /// When each run of the window was marked started: those not acted on for less than
    /// [`FORK_WAIT`].
    fn in_window(&self) -> impl Iterator<Item = Instant> + '_ {
        let now = self.now;
        self.in_flight
            .values()
            .copied()
            .filter(move |since| now.saturating_duration_since(*since) < FORK_WAIT)
    }

    fn log(&mut self, error: bool, text: String) {
        self.outbox.push(FromHelper::Log { error, text });
    }

    fn no(&mut self, seq: u64, why: Denied) {
        self.outbox.push(FromHelper::No { seq, why });
    }

    /// Whether this host is the live host meant to claim `key`'s run.
    fn meant_for_me(&self, key: &RunKey) -> bool {
        let me = self.args.host.as_str();
        let weight = |host: &str| run_weight(host, &key.cluster, &key.owner, key.entry, key.minute);
        let mine = weight(me);
        self.live
            .iter()
            .filter(|h| h.as_str() != me)
            .all(|other| weight(other) < mine)
    }

    /// Takeover checks run twice per lease renewal.
    pub(super) fn takeover_every(&self) -> Duration {
        Duration::from_millis(u64::from(self.args.lease_s) * 1000 / 6)
            .max(Duration::from_millis(200))
    }

    fn name_taken(&self) -> String {
        format!(
            "the host name {} holds a live lease of another crond: this one claims nothing \
             until that lease ends (give each host its own --cluster-host)",
            self.args.host
        )
    }

    /// A connection, made if there is none and it is time to try: `Err` with why not.
    fn ensure_connected(&mut self) -> Result<(), String> {
        if self.store.connected() {
            return Ok(());
        }
        if self.now < self.next_connect {
            return Err(self
                .down
                .clone()
                .unwrap_or_else(|| "not connected".to_string()));
        }
        self.next_connect = self.now + RECONNECT_EVERY;
        match self.store.connect() {
            Ok(held) => {
                match self.down.take() {
                    Some(why) => self.log(false, format!("database reachable again (was: {why})")),
                    None => self.log(
                        false,
                        format!("connected to the database as host {}", self.args.host),
                    ),
                }
                if !held {
                    let text = self.name_taken();
                    self.log(true, text);
                }
                if let Ok(live) = self.store.live_hosts() {
                    self.live = live;
                }
                Ok(())
            }
            Err(e) => {
                if self.down.is_none() {
                    self.log(
                        true,
                        format!(
                            "database unreachable: {e}; cluster runs do not start here until \
                             it is back (retrying every {} s)",
                            RECONNECT_EVERY.as_secs()
                        ),
                    );
                }
                self.down = Some(e.clone());
                Err(e)
            }
        }
    }

    /// Runs `f` on the store, connected first; a failure is logged, and a lost connection is
    /// made again at the next call.
    fn call<T>(&mut self, f: impl FnOnce(&mut S) -> Result<T, Failure>) -> Result<T, Failure> {
        self.ensure_connected().map_err(Failure::Down)?;
        let result = f(&mut self.store);
        match &result {
            Err(Failure::Lost(text)) => {
                self.next_connect = self.now;
                self.down = Some(text.clone());
                self.log(true, format!("database connection lost: {text}"));
            }
            Err(Failure::Slow(text)) => {
                self.log(true, format!("database busy: {text}; trying again"))
            }
            Err(Failure::Refused(text)) => self.log(true, format!("database error: {text}")),
            Err(Failure::Down(_)) | Ok(_) => {}
        }
        result
    }

    fn renew_lease(&mut self) {
        if let Ok(false) = self.call(|s| s.lease()) {
            let text = self.name_taken();
            self.log(true, text);
        }
        if let Ok(live) = self.call(|s| s.live_hosts()) {
            self.live = live;
        }
        self.check_clock();
        self.end_unknown();
    }

    /// Says once when this host's clock is off the database's by more than
    /// [`CLOCK_TOLERANCE`], and once when it is back within half of it.
    fn check_clock(&mut self) {
        let Some(skew_ms) = self.store.clock_skew_ms() else {
            return;
        };
        let off = skew_ms.unsigned_abs();
        let tolerance = CLOCK_TOLERANCE.as_millis() as u64;
        if !self.clock_off && off > tolerance {
            self.clock_off = true;
            let seconds = format!("{}.{} s", off / 1000, off % 1000 / 100);
            let (how, cost) = if skew_ms > 0 {
                (
                    "ahead of",
                    "its cluster runs start that much early, and it claims runs meant for \
                     other hosts before they ask",
                )
            } else {
                (
                    "behind",
                    "its cluster runs start that much late, and other hosts run its share of \
                     them",
                )
            };
            let text = format!(
                "this host's clock is {seconds} {how} the database's (more than {} s): {cost}; \
                 keep the hosts' clocks in sync (NTP)",
                CLOCK_TOLERANCE.as_secs()
            );
            self.log(true, text);
        } else if self.clock_off && off <= tolerance / 2 {
            self.clock_off = false;
            let text = "this host's clock agrees with the database's again".to_string();
            self.log(false, text);
        }
    }

    /// Runs whose host stopped after marking them started and before writing their end are
    /// ended as `unknown` (by whichever live host looks first), and said, per host.
    fn end_unknown(&mut self) {
        let Ok(hosts) = self.call(|s| s.unknown()) else {
            return;
        };
        let mut by_host: Vec<(String, usize)> = Vec::new();
        for host in hosts {
            match by_host.iter_mut().find(|(h, _)| *h == host) {
                Some((_, n)) => *n += 1,
                None => by_host.push((host, 1)),
            }
        }
        for (host, n) in by_host {
            self.log(
                true,
                format!(
                    "{} started on {host} {} no known outcome: that host stopped before \
                     writing {} end (recorded as unknown)",
                    crond::words::count(n as u64, "run", "runs"),
                    if n == 1 { "has" } else { "have" },
                    if n == 1 { "its" } else { "their" },
                ),
            );
        }
    }

    fn prune(&mut self) {
        let (days, runs) = (self.args.keep_days, self.args.keep_runs);
        if let Ok((runs, hosts)) = self.call(|s| s.prune(days, runs))
            && (runs, hosts) != (0, 0)
        {
            self.log(
                false,
                format!("pruned {runs} runs and {hosts} hosts older than {days} days"),
            );
        }
    }

    fn unreachable(&mut self, runs: Runs, why: &str) {
        for (seq, _) in runs {
            self.no(seq, Denied::Unreachable(why.to_string()));
        }
    }

    /// Claims the pending runs, a batch at a time, unless a retry is not due yet.
    fn claim_pending(&mut self) {
        if self.retry_at.is_some_and(|at| self.now < at) {
            return;
        }
        self.retry_at = None;
        while !self.pending.is_empty() {
            let n = self.pending.len().min(MAX_BATCH);
            let batch: Runs = self.pending.drain(..n).collect();
            if let Err(again) = self.claim(batch) {
                for run in again.into_iter().rev() {
                    self.pending.push_front(run);
                }
                self.retry_at = Some(self.now + RETRY_AFTER);
                return;
            }
            // The window refills between two claims of a thousand runs: the daemon forks what
            // it was given while the next batch is claimed.
            self.start_window();
        }
    }

    /// Runs `f` for the keys of `runs`; a broken connection is made again and `f` tried once
    /// more at once. `Err` with the runs when they are to be tried again later; `Ok(None)` when
    /// they were answered `unreachable`.
    fn batch_for<T>(
        &mut self,
        runs: Runs,
        f: impl Fn(&mut S, &[RunKey]) -> Result<T, Failure>,
    ) -> Result<Option<(T, Runs)>, Runs> {
        let keys: Vec<RunKey> = runs.iter().map(|(_, k)| k.clone()).collect();
        let mut result = self.call(|s| f(s, &keys));
        if let Err(Failure::Lost(_)) = result {
            result = self.call(|s| f(s, &keys));
        }
        match result {
            Ok(t) => Ok(Some((t, runs))),
            Err(Failure::Lost(_) | Failure::Slow(_)) => Err(runs),
            Err(e @ (Failure::Down(_) | Failure::Refused(_))) => {
                self.unreachable(runs, e.text());
                Ok(None)
            }
        }
    }

    /// One claim for `runs` and an answer for each; the claimed ones are started.
    fn claim(&mut self, runs: Runs) -> Result<(), Runs> {
        let Some((outcome, runs)) = self.batch_for(runs, |s, keys| s.claim(keys))? else {
            return Ok(());
        };
        let mut claimed = Vec::new();
        let mut go = Vec::new();
        for ((seq, key), what) in runs.into_iter().zip(outcome) {
            match what {
                Claim::Held => claimed.push((seq, key)),
                Claim::Started if self.adopted.contains_key(&key) => {
                    let me = self.args.host.clone();
                    self.no(seq, Denied::Ran(me));
                }
                Claim::Started => {
                    self.in_flight.insert(key, self.now);
                    go.push(seq);
                }
                Claim::Paused => self.no(seq, Denied::Paused),
                Claim::Ran(host) => self.no(seq, Denied::Ran(host)),
                Claim::Taken(host) => {
                    self.no(seq, Denied::Taken(host));
                    self.watch(seq, key);
                }
                Claim::Lease => self.no(seq, Denied::Lease),
            }
        }
        self.outbox
            .extend(go.into_iter().map(|seq| FromHelper::Go { seq }));
        self.to_start.extend(claimed);
        Ok(())
    }

    /// Marks claimed runs started as the window has room (a run the daemon never said it
    /// acted on leaves it after [`FORK_WAIT`]): a host that dies has at most [`START_WINDOW`]
    /// runs marked started and not forked; its other claims are taken over.
    fn start_window(&mut self) {
        let (now, kept) = (self.now, Duration::from_millis(TAKEOVER_WAIT_MS as u64));
        self.in_flight
            .retain(|_, since| now.saturating_duration_since(*since) < kept);
        loop {
            let room = START_WINDOW.saturating_sub(self.in_window().count());
            let n = room.min(self.to_start.len());
            if n == 0 || n < MIN_START_BATCH.min(self.to_start.len()) {
                return;
            }
            let batch: Runs = self.to_start.drain(..n).collect();
            match self.start(batch) {
                Ok(()) => {}
                Err(again) => {
                    // Claimed again later: the claim finds them this session's.
                    self.pending.extend(again);
                    self.retry_at = Some(self.now + RETRY_AFTER);
                    return;
                }
            }
        }
    }

    /// Marks claimed runs started and says `GO` for each; one no longer this host's is `NO`.
    /// `Err` with the runs to claim again later (the claim finds them this session's, started
    /// or not).
    fn start(&mut self, claimed: Runs) -> Result<(), Runs> {
        if claimed.is_empty() {
            return Ok(());
        }
        let Some((started, claimed)) = self.batch_for(claimed, |s, keys| s.start(keys))? else {
            return Ok(());
        };
        for ((seq, key), started) in claimed.into_iter().zip(started) {
            match started {
                true => {
                    self.in_flight.insert(key, self.now);
                    self.outbox.push(FromHelper::Go { seq });
                }
                false => self.no(seq, Denied::Lease),
            }
        }
        Ok(())
    }

    /// Claims that no daemon waits for any more (their host stopped or died before starting
    /// them, after the other hosts had been told they ran there, or before they asked), of
    /// entries this host listed, as the window has room: made this session's, marked started
    /// and said `TAKE` (the daemon starts each; `FORKED` frees the window as for a `GO`).
    fn adopt(&mut self) {
        if self.stopped || !self.store.connected() {
            return;
        }
        let room = START_WINDOW.saturating_sub(self.in_window().count());
        if room == 0 {
            return;
        }
        let Ok(taken) = self.call(|s| s.adopt(room)) else {
            return;
        };
        self.say_taken(&taken);
        let (now, kept) = (self.now, Duration::from_millis(TAKEOVER_WAIT_MS as u64));
        self.adopted
            .retain(|_, since| now.saturating_duration_since(*since) < kept);
        for (key, attempt) in taken {
            if self.adopted.len() >= MAX_PARKED {
                // The oldest goes: an hour's worth of takeovers is far below the bound.
                if let Some(oldest) = self.adopted.iter().min_by_key(|(_, t)| **t) {
                    let oldest = oldest.0.clone();
                    self.adopted.remove(&oldest);
                }
            }
            self.adopted.insert(key.clone(), now);
            self.in_flight.insert(key.clone(), now);
            self.outbox.push(FromHelper::Take { key, attempt });
        }
    }

    /// Logs what [`Machine::adopt`] took: claims never started, and runs started again.
    fn say_taken(&mut self, taken: &[(RunKey, u32)]) {
        let again = taken.iter().filter(|(_, attempt)| *attempt > 1).count();
        let claims = taken.len() - again;
        let them = |n: usize| if n == 1 { "it" } else { "them" };
        if claims > 0 {
            let text = format!(
                "took over {}: their host stopped before starting {} and no other host was \
                 waiting for {}",
                crond::words::count(claims as u64, "run", "runs"),
                them(claims),
                them(claims),
            );
            self.log(false, text);
        }
        if again > 0 {
            let text = format!(
                "starting again {} whose first start has no known outcome (its host died): \
                 CRON_CLUSTER_RERUN=unknown",
                crond::words::count(again as u64, "run", "runs"),
            );
            self.log(false, text);
        }
    }

    fn watch(&mut self, seq: u64, key: RunKey) {
        if self.watched.len() >= MAX_PARKED {
            self.watched.remove(0);
        }
        self.watched.push(Watch {
            seq,
            key,
            since: self.now,
        });
    }

    /// Runs other hosts claimed: taken over (started here) when their host's lease ended
    /// before they started; forgotten once they started there (`NO ran`) or after the
    /// daemon's own bound.
    fn take_over(&mut self) {
        let (now, limit) = (self.now, Duration::from_millis(TAKEOVER_WAIT_MS as u64));
        self.watched
            .retain(|w| now.saturating_duration_since(w.since) < limit);
        if self.watched.is_empty() {
            return;
        }
        // A batch at a time, the window refilled between two: a look at thousands of runs
        // other hosts claimed does not hold up this host's own starts.
        let mut watched = std::mem::take(&mut self.watched);
        let (mut waiting, mut took) = (Vec::new(), 0);
        while !watched.is_empty() {
            let n = watched.len().min(MAX_BATCH);
            let batch: Vec<Watch> = watched.drain(..n).collect();
            let keys: Vec<RunKey> = batch.iter().map(|w| w.key.clone()).collect();
            let Ok(outcome) = self.call(|s| s.take_over(&keys)) else {
                waiting.extend(batch);
                waiting.append(&mut watched);
                break;
            };
            let mut mine = Vec::new();
            for (w, what) in batch.into_iter().zip(outcome) {
                match what {
                    Watched::Mine => mine.push((w.seq, w.key)),
                    Watched::Ran(host) => self.no(w.seq, Denied::Ran(host)),
                    Watched::Gone => {
                        self.no(w.seq, Denied::Unreachable("its claim was deleted".into()))
                    }
                    Watched::Waiting => waiting.push(w),
                }
            }
            took += mine.len();
            // Started here as the window has room, before what this host claimed of its own.
            for run in mine.into_iter().rev() {
                self.to_start.push_front(run);
            }
            self.start_window();
        }
        waiting.append(&mut self.watched);
        self.watched = waiting;
        if took > 0 {
            self.log(
                false,
                format!(
                    "took over {took} runs claimed by hosts whose lease ended before they \
                     started them (or by an abandoned try of this host's claim)"
                ),
            );
        }
    }
}

#[cfg(test)]
pub(super) mod tests;
