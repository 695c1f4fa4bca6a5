//! The helper's decisions against an in-memory database with the rules of `sql.rs` (one row per
//! run, leases fence claims and starts, a takeover only from a holder whose lease ended), on a
//! made-up clock: two hosts at once, a stopped host, a busy, broken or missing database.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::time::{Duration, Instant};

use super::*;
use crond::cluster::entry_id::EntryKey;

pub(in crate::helper) struct Row {
    pub(in crate::helper) host: String,
    session: i64,
    pub(in crate::helper) started: bool,
    /// Its end was written (`END`, or ended as `unknown`).
    pub(in crate::helper) ended: bool,
    unknown: bool,
    /// 2 once started again after an unknown first attempt.
    attempt: u32,
}

impl Row {
    /// A claim of `host`'s `session`, not started.
    fn claimed(host: &str, session: i64) -> Row {
        Row {
            host: host.to_string(),
            session,
            started: false,
            ended: false,
            unknown: false,
            attempt: 1,
        }
    }
}

/// The database every fake store shares, and the clock its leases are judged by.
pub(in crate::helper) struct World {
    clock: Rc<Cell<Instant>>,
    hosts: HashMap<String, (i64, Instant)>,
    pub(in crate::helper) runs: HashMap<RunKey, Row>,
    down: bool,
    /// A claim does not see the rows already there (`sql::take_over` says when PostgreSQL's
    /// does that): it answers "taken" by no host.
    claims_miss_rows: bool,
    /// Each host's loaded entries, as its last list wrote them.
    listed: HashMap<String, Vec<Loaded>>,
}

impl World {
    fn new(clock: &Rc<Cell<Instant>>) -> Rc<RefCell<World>> {
        Rc::new(RefCell::new(World {
            clock: Rc::clone(clock),
            hosts: HashMap::new(),
            runs: HashMap::new(),
            down: false,
            claims_miss_rows: false,
            listed: HashMap::new(),
        }))
    }

    fn now(&self) -> Instant {
        self.clock.get()
    }

    fn live(&self, host: &str, session: i64) -> bool {
        self.hosts
            .get(host)
            .is_some_and(|&(s, until)| s == session && until > self.now())
    }
}

pub(in crate::helper) struct FakeStore {
    world: Rc<RefCell<World>>,
    host: String,
    session: i64,
    lease: Duration,
    connected: bool,
    /// Failures the next calls meet, in order.
    fail: Rc<RefCell<VecDeque<Failure>>>,
    /// This host's clock less the database's, as the last lease found it.
    skew: Rc<Cell<Option<i64>>>,
}

impl FakeStore {
    fn failed(&mut self) -> Result<(), Failure> {
        match self.fail.borrow_mut().pop_front() {
            Some(f) => {
                if matches!(f, Failure::Lost(_)) {
                    self.connected = false;
                }
                Err(f)
            }
            None => Ok(()),
        }
    }
}

impl Store for FakeStore {
    fn connected(&self) -> bool {
        self.connected
    }

    fn connect(&mut self) -> Result<bool, String> {
        if self.world.borrow().down {
            return Err("connection refused".into());
        }
        self.connected = true;
        self.lease().map_err(|f| f.text().to_string())
    }

    fn lease(&mut self) -> Result<bool, Failure> {
        self.failed()?;
        let mut w = self.world.borrow_mut();
        let now = w.now();
        let free = w
            .hosts
            .get(&self.host)
            .is_none_or(|&(s, until)| s == self.session || until <= now);
        if free {
            w.hosts
                .insert(self.host.clone(), (self.session, now + self.lease));
        }
        Ok(free)
    }

    fn clock_skew_ms(&self) -> Option<i64> {
        self.skew.get()
    }

    fn live_hosts(&mut self) -> Result<Vec<String>, Failure> {
        self.failed()?;
        let w = self.world.borrow();
        let mut live: Vec<String> = w
            .hosts
            .iter()
            .filter(|(_, (_, until))| *until > w.now())
            .map(|(h, _)| h.clone())
            .collect();
        live.sort();
        Ok(live)
    }

    fn claim(&mut self, runs: &[RunKey]) -> Result<Vec<Claim>, Failure> {
        self.failed()?;
        let mut w = self.world.borrow_mut();
        let live = w.live(&self.host, self.session);
        Ok(runs
            .iter()
            .map(|key| {
                if !live {
                    return Claim::Lease;
                }
                match w.runs.get(key) {
                    Some(_) if w.claims_miss_rows => Claim::Taken(String::new()),
                    None => {
                        w.runs
                            .insert(key.clone(), Row::claimed(&self.host, self.session));
                        Claim::Held
                    }
                    Some(r) if r.host == self.host && r.session == self.session => {
                        match r.started {
                            false => Claim::Held,
                            true => Claim::Started,
                        }
                    }
                    Some(r) if r.started => Claim::Ran(r.host.clone()),
                    Some(r) => Claim::Taken(r.host.clone()),
                }
            })
            .collect())
    }

    fn start(&mut self, runs: &[RunKey]) -> Result<Vec<bool>, Failure> {
        self.failed()?;
        let mut w = self.world.borrow_mut();
        let live = w.live(&self.host, self.session);
        Ok(runs
            .iter()
            .map(|key| match w.runs.get_mut(key) {
                Some(r)
                    if live && r.host == self.host && r.session == self.session && !r.started =>
                {
                    r.started = true;
                    true
                }
                _ => false,
            })
            .collect())
    }

    fn unstart(&mut self, runs: &[RunKey]) -> Result<usize, Failure> {
        self.failed()?;
        let mut w = self.world.borrow_mut();
        let mut given = 0;
        for key in runs {
            if let Some(r) = w.runs.get_mut(key)
                && r.host == self.host
                && r.session == self.session
                && r.started
                && !r.ended
            {
                r.started = false;
                given += 1;
            }
        }
        Ok(given)
    }

    fn adopt(&mut self, most: usize) -> Result<Vec<(RunKey, u32)>, Failure> {
        self.failed()?;
        let mut w = self.world.borrow_mut();
        if !w.live(&self.host, self.session) {
            return Ok(Vec::new());
        }
        let listed = w.listed.get(&self.host).cloned().unwrap_or_default();
        let mut found: Vec<(RunKey, u32)> = w
            .runs
            .iter()
            .filter_map(|(k, r)| {
                let rerun = listed
                    .iter()
                    .find(|l| (&l.cluster, &l.owner, l.entry) == (&k.cluster, &k.owner, k.entry))?
                    .rerun;
                let claim = !r.started && !r.ended;
                let again = rerun && r.unknown && r.attempt == 1;
                ((claim || again) && !w.live(&r.host, r.session))
                    .then(|| (k.clone(), r.attempt + u32::from(again)))
            })
            .collect();
        found.sort_by_key(|(k, _)| (k.minute, k.entry.0));
        found.truncate(most);
        for (key, attempt) in &found {
            let mut row = Row::claimed(&self.host, self.session);
            (row.started, row.attempt) = (true, *attempt);
            w.runs.insert(key.clone(), row);
        }
        Ok(found)
    }

    fn take_over(&mut self, runs: &[RunKey]) -> Result<Vec<Watched>, Failure> {
        self.failed()?;
        let mut w = self.world.borrow_mut();
        let me_live = w.live(&self.host, self.session);
        Ok(runs
            .iter()
            .map(|key| {
                let Some(r) = w.runs.get(key) else {
                    return Watched::Gone;
                };
                if r.started {
                    return Watched::Ran(r.host.clone());
                }
                let own = r.host == self.host && r.session == self.session;
                if me_live && (own || !w.live(&r.host, r.session)) {
                    w.runs
                        .insert(key.clone(), Row::claimed(&self.host, self.session));
                    return Watched::Mine;
                }
                Watched::Waiting
            })
            .collect())
    }

    fn end(&mut self, ends: &[(RunKey, i32)]) -> Result<(), Failure> {
        self.failed()?;
        let mut w = self.world.borrow_mut();
        for (key, _) in ends {
            if let Some(r) = w.runs.get_mut(key)
                && r.host == self.host
                && r.session == self.session
            {
                r.ended = true;
                r.unknown = false;
            }
        }
        Ok(())
    }

    fn unknown(&mut self) -> Result<Vec<String>, Failure> {
        self.failed()?;
        let mut w = self.world.borrow_mut();
        let dead: Vec<RunKey> = w
            .runs
            .iter()
            .filter(|(_, r)| r.started && !r.ended && !w.live(&r.host, r.session))
            .map(|(k, _)| k.clone())
            .collect();
        Ok(dead
            .into_iter()
            .filter_map(|k| {
                let r = w.runs.get_mut(&k)?;
                (r.ended, r.unknown) = (true, true);
                Some(r.host.clone())
            })
            .collect())
    }

    fn list(&mut self, entries: &[Loaded]) -> Result<bool, Failure> {
        self.failed()?;
        let mut w = self.world.borrow_mut();
        if !w.live(&self.host, self.session) {
            return Ok(false);
        }
        w.listed.insert(self.host.clone(), entries.to_vec());
        Ok(true)
    }

    fn prune(&mut self, _: u32, _: u32) -> Result<(u64, u64), Failure> {
        self.failed()?;
        Ok((0, 0))
    }

    fn release(&mut self) {
        let mut w = self.world.borrow_mut();
        let now = w.now();
        if let Some(entry) = w.hosts.get_mut(&self.host)
            && entry.0 == self.session
        {
            entry.1 = now;
        }
    }
}

/// A host: its machine and the failures its store will meet.
pub(in crate::helper) struct Host {
    pub(in crate::helper) machine: Machine<FakeStore>,
    fail: Rc<RefCell<VecDeque<Failure>>>,
    skew: Rc<Cell<Option<i64>>>,
    clock: Rc<Cell<Instant>>,
    pub(in crate::helper) said: Vec<FromHelper>,
    /// The runs asked for, by request number.
    pub(in crate::helper) asked: HashMap<u64, RunKey>,
    /// The daemon forks each run at its `GO` and says so (`FORKED`); `false`: it says nothing.
    pub(in crate::helper) forks: bool,
    /// The `GO`s said `FORKED` to.
    forked: std::collections::HashSet<u64>,
    /// The `TAKE`s said `FORKED` to.
    forked_taken: std::collections::HashSet<RunKey>,
}

impl Host {
    fn new(world: &Rc<RefCell<World>>, name: &str, session: i64) -> Host {
        let clock = Rc::clone(&world.borrow().clock);
        let fail = Rc::new(RefCell::new(VecDeque::new()));
        let skew = Rc::new(Cell::new(None));
        let store = FakeStore {
            skew: Rc::clone(&skew),
            world: Rc::clone(world),
            host: name.into(),
            session,
            lease: Duration::from_secs(30),
            connected: false,
            fail: Rc::clone(&fail),
        };
        let args = HelperArgs {
            db: String::new(),
            host: name.into(),
            keep_days: 30,
            keep_runs: 1440,
            lease_s: 30,
        };
        Host {
            machine: Machine::new(args, store, clock.get()),
            fail,
            skew,
            clock,
            said: Vec::new(),
            asked: HashMap::new(),
            forks: true,
            forked: std::collections::HashSet::new(),
            forked_taken: std::collections::HashSet::new(),
        }
    }

    pub(in crate::helper) fn tick(&mut self) {
        self.machine.on_tick(self.clock.get());
        self.hear();
    }

    pub(in crate::helper) fn ask(&mut self, runs: &[(u64, RunKey)]) {
        self.asked.extend(runs.iter().cloned());
        self.machine
            .on_requests(runs.to_vec(), Vec::new(), Vec::new(), self.clock.get());
        self.hear();
    }

    /// Takes what the helper said; as the daemon does, forks each run it is told `GO` for
    /// and says so, until no new `GO` comes.
    fn hear(&mut self) {
        loop {
            self.said.extend(self.machine.take_outbox());
            if !self.forks {
                return;
            }
            let go = self.go();
            let new: Vec<u64> = go
                .into_iter()
                .filter(|seq| !self.forked.contains(seq))
                .collect();
            let mut forked: Vec<RunKey> = new
                .iter()
                .filter_map(|seq| self.asked.get(seq).cloned())
                .collect();
            self.forked.extend(new);
            // A run taken over without a request is forked at its `TAKE`, once.
            let took = self.took();
            forked.extend(
                took.into_iter()
                    .filter(|k| self.forked_taken.insert(k.clone())),
            );
            if forked.is_empty() {
                return;
            }
            self.machine
                .on_requests(Vec::new(), forked, Vec::new(), self.clock.get());
        }
    }

    /// The runs said `TAKE` for.
    fn took(&self) -> Vec<RunKey> {
        self.said
            .iter()
            .filter_map(|m| match m {
                FromHelper::Take { key, .. } => Some(key.clone()),
                _ => None,
            })
            .collect()
    }

    pub(in crate::helper) fn go(&self) -> Vec<u64> {
        self.said
            .iter()
            .filter_map(|m| match m {
                FromHelper::Go { seq } => Some(*seq),
                _ => None,
            })
            .collect()
    }

    fn no(&self) -> Vec<(u64, Denied)> {
        self.said
            .iter()
            .filter_map(|m| match m {
                FromHelper::No { seq, why } => Some((*seq, why.clone())),
                _ => None,
            })
            .collect()
    }
}

/// Where the made-up clock starts: any instant will do.
fn start() -> Instant {
    Instant::now() // core-boundary: allow (an arbitrary start for the made-up clock)
}

fn key(entry: u64) -> RunKey {
    RunKey {
        cluster: "c".into(),
        owner: b"root".to_vec(),
        entry: EntryKey(entry.wrapping_mul(0x9e37_79b9_7f4a_7c15)),
        minute: 1_795_000_020,
    }
}

pub(in crate::helper) fn runs(n: u64) -> Vec<(u64, RunKey)> {
    (0..n).map(|k| (k, key(k))).collect()
}

pub(in crate::helper) fn advance(clock: &Rc<Cell<Instant>>, by: Duration) {
    clock.set(clock.get() + by);
}

/// Two hosts that know of each other (both leases taken, the live set read again).
pub(in crate::helper) fn two_hosts() -> (Rc<Cell<Instant>>, Rc<RefCell<World>>, Host, Host) {
    let clock = Rc::new(Cell::new(start()));
    let world = World::new(&clock);
    let (mut a, mut b) = (Host::new(&world, "a", 1), Host::new(&world, "b", 2));
    a.tick();
    b.tick();
    advance(&clock, Duration::from_secs(10));
    a.tick();
    b.tick();
    (clock, world, a, b)
}

#[test]
fn two_hosts_share_the_runs_by_weight_and_each_run_starts_once() {
    let (clock, world, mut a, mut b) = two_hosts();
    let asked = runs(400);
    a.ask(&asked);
    b.ask(&asked);
    let (first_a, first_b) = (a.go().len(), b.go().len());
    assert_eq!(
        first_a + first_b,
        400,
        "each host claimed its share at once"
    );
    assert!((150..=250).contains(&first_a), "a: {first_a}, b: {first_b}");
    // The other host's share is looked at after the wait: started there, so `NO ran`.
    advance(&clock, DEFER);
    a.tick();
    b.tick();
    assert_eq!(a.go().len() + b.go().len(), 400, "no run starts twice");
    assert_eq!(a.no().len(), first_b);
    assert_eq!(b.no().len(), first_a);
    assert!(
        a.no()
            .iter()
            .all(|(_, why)| *why == Denied::Ran("b".into())),
        "{:?}",
        a.no()
    );
    assert_eq!(world.borrow().runs.len(), 400);
    assert!(world.borrow().runs.values().all(|r| r.started));
}

#[test]
fn a_host_that_stops_claiming_has_its_share_claimed_by_the_other_after_the_wait() {
    let (clock, _world, mut a, _b) = two_hosts();
    // b is alive (its lease runs) but never claims.
    a.ask(&runs(100));
    let mine = a.go().len();
    assert!(mine < 100 && mine > 0, "{mine}");
    advance(&clock, DEFER - Duration::from_millis(1));
    a.tick();
    assert_eq!(a.go().len(), mine, "b's share waits out the wait");
    advance(&clock, Duration::from_millis(1));
    a.tick();
    assert_eq!(a.go().len(), 100, "then a claims and starts it");
    assert!(a.no().is_empty());
}

#[test]
fn a_busy_database_delays_the_runs_and_none_is_given_up() {
    let clock = Rc::new(Cell::new(start()));
    let world = World::new(&clock);
    let mut a = Host::new(&world, "a", 1);
    a.tick();
    a.fail.borrow_mut().extend([
        Failure::Slow("57014 statement timeout".into()),
        Failure::Slow("57014 statement timeout".into()),
    ]);
    a.ask(&runs(10));
    assert!(a.go().is_empty() && a.no().is_empty(), "{:?}", a.said);
    assert_eq!(a.machine.next_wake(), clock.get() + RETRY_AFTER);
    advance(&clock, RETRY_AFTER);
    a.tick();
    assert!(a.go().is_empty(), "the second try was slow too");
    advance(&clock, RETRY_AFTER);
    a.tick();
    assert_eq!(a.go(), (0..10).collect::<Vec<u64>>());
    assert!(a.no().is_empty());
}

#[test]
fn a_connection_lost_during_a_claim_is_made_again_and_the_claim_tried_at_once() {
    let clock = Rc::new(Cell::new(start()));
    let world = World::new(&clock);
    let mut a = Host::new(&world, "a", 1);
    a.tick();
    a.fail
        .borrow_mut()
        .push_back(Failure::Lost("server closed the connection".into()));
    a.ask(&runs(5));
    assert_eq!(a.go(), vec![0, 1, 2, 3, 4]);
    assert!(
        a.said
            .iter()
            .any(|m| matches!(m, FromHelper::Log { text, .. } if text.contains("connection lost")))
    );
}

#[test]
fn a_database_that_can_not_be_reached_answers_each_run_unreachable_at_once() {
    let clock = Rc::new(Cell::new(start()));
    let world = World::new(&clock);
    world.borrow_mut().down = true;
    let mut a = Host::new(&world, "a", 1);
    a.tick();
    a.ask(&runs(3));
    let no = a.no();
    assert_eq!(no.len(), 3);
    assert!(
        no.iter()
            .all(|(_, why)| matches!(why, Denied::Unreachable(t) if t.contains("refused")))
    );
    // Back: the next runs are claimed (after the reconnect wait).
    world.borrow_mut().down = false;
    advance(&clock, RECONNECT_EVERY);
    a.tick();
    a.ask(&[(7, key(7))]);
    assert_eq!(a.go(), vec![7]);
}

#[test]
fn a_claim_whose_holder_stops_before_starting_it_is_taken_over_within_a_lease() {
    let clock = Rc::new(Cell::new(start()));
    let world = World::new(&clock);
    let mut a = Host::new(&world, "a", 1);
    a.tick();
    // A host `ghost` claimed the run and stopped: its lease ends in 20 s.
    let now = clock.get();
    world
        .borrow_mut()
        .hosts
        .insert("ghost".into(), (9, now + Duration::from_secs(20)));
    world
        .borrow_mut()
        .runs
        .insert(key(1), Row::claimed("ghost", 9));
    a.ask(&[(1, key(1))]);
    assert_eq!(a.no(), vec![(1, Denied::Taken("ghost".into()))]);
    // Looked at every 5 s (a sixth of the lease): waiting while the ghost's lease runs...
    for _ in 0..3 {
        advance(&clock, Duration::from_secs(5));
        a.tick();
        assert!(a.go().is_empty(), "taken over while its holder's lease ran");
    }
    // ...taken over and started here at the first look after it ended.
    advance(&clock, Duration::from_secs(5));
    a.tick();
    assert_eq!(a.go(), vec![1]);
    assert!(
        a.said.iter().any(
            |m| matches!(m, FromHelper::Log { text, .. } if text.contains("took over 1 runs"))
        )
    );
    let w = world.borrow();
    let row = &w.runs[&key(1)];
    assert!(row.host == "a" && row.started);
}

#[test]
fn a_run_this_session_holds_but_its_claim_saw_as_anothers_starts_at_the_next_look() {
    let clock = Rc::new(Cell::new(start()));
    let world = World::new(&clock);
    let mut a = Host::new(&world, "a", 1);
    a.tick();
    // An earlier try of this claim, given up on, committed its row while the next try ran,
    // which could not see it and answered "taken" by no host.
    world.borrow_mut().runs.insert(key(1), Row::claimed("a", 1));
    world.borrow_mut().claims_miss_rows = true;
    a.ask(&[(1, key(1))]);
    assert_eq!(a.no(), vec![(1, Denied::Taken(String::new()))]);
    world.borrow_mut().claims_miss_rows = false;
    // Its own live lease is no reason to wait: started at the next look, 5 s on.
    advance(&clock, Duration::from_secs(5));
    a.tick();
    assert_eq!(a.go(), vec![1]);
    let w = world.borrow();
    let row = &w.runs[&key(1)];
    assert!(row.host == "a" && row.session == 1 && row.started);
}

fn loaded(entry: u64) -> Loaded {
    Loaded {
        cluster: "c".into(),
        owner: b"root".to_vec(),
        entry: EntryKey(entry),
        place: format!("crontabs/root:{entry}").into_bytes(),
        command: b"backup".to_vec(),
        rerun: false,
    }
}

#[test]
fn the_daemons_list_of_entries_is_written_tried_again_when_busy_and_fenced_by_the_lease() {
    let clock = Rc::new(Cell::new(start()));
    let world = World::new(&clock);
    let mut a = Host::new(&world, "a", 1);
    a.tick();
    a.fail
        .borrow_mut()
        .push_back(Failure::Slow("57014 statement timeout".into()));
    a.machine.on_loaded(vec![loaded(1), loaded(2)], 0);
    a.tick();
    assert!(world.borrow().listed.is_empty(), "the database was busy");
    assert_eq!(a.machine.next_wake(), clock.get() + RETRY_AFTER);
    advance(&clock, RETRY_AFTER);
    a.tick();
    assert_eq!(world.borrow().listed["a"].len(), 2);
    // A later list replaces it; one past the daemon's bound says so.
    a.machine.on_loaded(vec![loaded(3)], 4);
    a.tick();
    assert_eq!(world.borrow().listed["a"], vec![loaded(3)]);
    assert!(a.said.iter().any(
        |m| matches!(m, FromHelper::Log { error: true, text } if text.starts_with("4 cluster entries past"))
    ));
    // Another session holds the name: nothing is written until this one has the lease.
    let mut twin = Host::new(&world, "a", 9);
    twin.machine.on_loaded(vec![loaded(5)], 0);
    twin.tick();
    assert_eq!(world.borrow().listed["a"], vec![loaded(3)]);
}

#[test]
fn at_most_a_window_of_runs_is_marked_started_and_not_yet_forked() {
    let clock = Rc::new(Cell::new(start()));
    let world = World::new(&clock);
    let mut a = Host::new(&world, "a", 1);
    a.tick();
    a.forks = false;
    let started = || world.borrow().runs.values().filter(|r| r.started).count();
    a.ask(&runs(1000));
    // Every run is claimed at once (a claim not started is taken over if the host dies); only
    // a window of them is marked started and answered GO.
    assert_eq!(world.borrow().runs.len(), 1000);
    assert_eq!((started(), a.go().len()), (START_WINDOW, START_WINDOW));
    // The daemon forked a few: too few to be worth a statement yet.
    let said = |a: &mut Host, seqs: std::ops::Range<u64>| {
        let keys = seqs.map(|seq| a.asked[&seq].clone()).collect();
        a.machine
            .on_requests(Vec::new(), keys, Vec::new(), a.clock.get());
        a.said.extend(a.machine.take_outbox());
    };
    said(&mut a, 0..10);
    assert_eq!(started(), START_WINDOW);
    // Half the window free: one statement marks that half while the daemon forks the rest.
    let half = START_WINDOW as u64 / 2;
    said(&mut a, 10..half);
    assert_eq!(started(), START_WINDOW + START_WINDOW / 2);
    assert_eq!(a.go().len(), START_WINDOW + START_WINDOW / 2);
    // A daemon that never says it acted on its runs holds the window up for FORK_WAIT only.
    advance(&clock, FORK_WAIT);
    a.tick();
    assert_eq!(started(), 2 * START_WINDOW + START_WINDOW / 2);
    // As the daemon forks, every run starts, once.
    a.forks = true;
    a.hear();
    a.tick();
    let mut go = a.go();
    go.sort_unstable();
    go.dedup();
    assert_eq!(go.len(), 1000);
    assert_eq!(started(), 1000);
}

#[test]
fn runs_a_dead_host_started_and_never_ended_are_ended_unknown_once_and_said() {
    let (clock, world, mut a, mut b) = two_hosts();
    b.forks = true;
    let all = runs(40);
    a.ask(&all);
    b.ask(&all);
    advance(&clock, DEFER);
    a.tick();
    b.tick();
    let mut on_b: Vec<RunKey> = world
        .borrow()
        .runs
        .iter()
        .filter(|(_, r)| r.host == "b" && r.started)
        .map(|(k, _)| k.clone())
        .collect();
    assert!(on_b.len() > 2, "b runs its share");
    // b's daemon wrote the end of one of them, then b died (its lease runs out).
    let ended = on_b.pop().unwrap();
    b.machine.on_requests(
        Vec::new(),
        Vec::new(),
        vec![(ended.clone(), 0)],
        clock.get(),
    );
    drop(b);
    a.said.clear();
    advance(&clock, Duration::from_secs(31));
    a.tick();
    let w = world.borrow();
    let unknown: Vec<&RunKey> = w
        .runs
        .iter()
        .filter(|(_, r)| r.unknown)
        .map(|(k, _)| k)
        .collect();
    assert_eq!(
        unknown.len(),
        on_b.len(),
        "every run b started and did not end"
    );
    assert!(
        !w.runs[&ended].unknown,
        "a run whose end was written is known"
    );
    assert!(
        w.runs
            .values()
            .filter(|r| r.host == "a")
            .all(|r| !r.unknown)
    );
    drop(w);
    let said: Vec<String> = a
        .said
        .iter()
        .filter_map(|m| match m {
            FromHelper::Log { text, .. } if text.contains("no known outcome") => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        said,
        [format!(
            "{} runs started on b have no known outcome: that host stopped before writing their \
             end (recorded as unknown)",
            on_b.len()
        )]
    );
    // Said once: the next look finds nothing more.
    a.said.clear();
    advance(&clock, Duration::from_secs(10));
    a.tick();
    assert!(
        !a.said
            .iter()
            .any(|m| matches!(m, FromHelper::Log { text, .. } if text.contains("unknown")))
    );
}

#[test]
fn a_stopping_daemons_unforked_runs_are_given_back_and_taken_over_by_the_other_host_once() {
    let (clock, world, mut a, mut b) = two_hosts();
    // b's daemon is told GO and forks nothing (its forks fail, or it is about to stop).
    b.forks = false;
    let all = runs(400);
    // Both daemons have the entries loaded, and listed them.
    let list: Vec<Loaded> = all
        .iter()
        .map(|(_, k)| Loaded {
            cluster: k.cluster.clone(),
            owner: k.owner.clone(),
            entry: k.entry,
            place: b"crontabs/root:1".to_vec(),
            command: b"backup".to_vec(),
            rerun: false,
        })
        .collect();
    a.machine.on_loaded(list.clone(), 0);
    b.machine.on_loaded(list, 0);
    a.ask(&all);
    b.ask(&all);
    // b was granted a window of its share and marked it started; the rest of its share is
    // claimed. After the wait, a is told b ran the first and watches the others.
    let b_go = b.go();
    assert!(b_go.len() >= 32, "b marked a window of its share started");
    advance(&clock, DEFER);
    a.tick();
    let ran_on_b = a
        .no()
        .iter()
        .filter(|(_, why)| *why == Denied::Ran("b".into()))
        .count();
    assert_eq!(
        ran_on_b,
        b_go.len(),
        "a waits for none of the runs b marked started"
    );
    // b forked the first two (and said so before STOP), then stopped.
    let forked: Vec<RunKey> = b_go[..2].iter().map(|seq| b.asked[seq].clone()).collect();
    b.machine
        .on_requests(Vec::new(), forked.clone(), Vec::new(), clock.get());
    b.machine.stop(clock.get());
    b.said.extend(b.machine.take_outbox());
    let started_on_b = |w: &World| {
        w.runs
            .values()
            .filter(|r| r.host == "b" && r.started)
            .count()
    };
    assert_eq!(
        started_on_b(&world.borrow()),
        2,
        "only what b forked stays started"
    );
    let gave_back = format!("gave back {} runs", b_go.len() - 2);
    assert!(
        b.said
            .iter()
            .any(|m| matches!(m, FromHelper::Log { text, .. } if text.contains(&gave_back))),
        "{:?}",
        b.said
    );
    assert!(matches!(b.said.last(), Some(FromHelper::Stopped)));
    // A run asked for after STOP is neither claimed nor answered.
    let rows = world.borrow().runs.len();
    b.ask(&[(9_999, key(9_999))]);
    assert_eq!(world.borrow().runs.len(), rows);
    assert!(
        a.took().is_empty(),
        "nothing to take over while b holds its lease"
    );
    // The daemon exits: the lease goes. a takes over the claims it watched (GO) and, a window
    // at a time, the runs b gave back, which no request waits for (TAKE); each once.
    b.machine.release();
    for _ in 0..20 {
        advance(&clock, a.machine.takeover_every());
        a.tick();
    }
    let w = world.borrow();
    assert!(w.runs.values().all(|r| r.started), "every run started");
    assert_eq!(started_on_b(&w), 2);
    let mut go = a.go();
    go.sort_unstable();
    go.dedup();
    let mut took = a.took();
    took.sort_by_key(|k| k.entry.0);
    took.dedup();
    assert_eq!(took.len(), a.took().len(), "each taken once");
    assert_eq!(took.len(), b_go.len() - 2, "the runs b gave back");
    assert_eq!(
        go.len() + took.len(),
        398,
        "a started all but the two b forked"
    );
    for key in &forked {
        assert_eq!(w.runs[key].host, "b");
    }
    drop(w);
    // a's daemon asks for one of them later (its RANDOM_DELAY): it ran here already, no GO.
    a.said.clear();
    a.ask(&[(5_000, took[0].clone())]);
    advance(&clock, DEFER);
    a.tick();
    assert_eq!(a.no(), vec![(5_000, Denied::Ran("a".into()))]);
    assert!(a.go().is_empty(), "{:?}", a.said);
}

#[test]
fn a_clock_off_the_databases_past_the_tolerance_is_said_once_and_its_return_once() {
    let clock = Rc::new(Cell::new(start()));
    let world = World::new(&clock);
    let mut a = Host::new(&world, "a", 1);
    let logs = |a: &Host| -> Vec<(bool, String)> {
        a.said
            .iter()
            .filter_map(|m| match m {
                FromHelper::Log { error, text } if text.contains("clock") => {
                    Some((*error, text.clone()))
                }
                _ => None,
            })
            .collect()
    };
    let renewals = |a: &mut Host, n: usize| {
        for _ in 0..n {
            advance(&a.clock.clone(), Duration::from_secs(10));
            a.tick();
        }
    };
    // Within the tolerance: nothing.
    a.skew.set(Some(4_900));
    renewals(&mut a, 3);
    assert!(logs(&a).is_empty(), "{:?}", logs(&a));
    // 20 s ahead: said once, however many renewals find it so.
    a.skew.set(Some(20_300));
    renewals(&mut a, 5);
    let said = logs(&a);
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(said[0].0, "an error");
    assert!(
        said[0]
            .1
            .starts_with("this host's clock is 20.3 s ahead of the database's (more than 5 s)"),
        "{}",
        said[0].1
    );
    // Back to 3 s: still past half the tolerance, nothing; at 1 s, said once.
    a.skew.set(Some(3_000));
    renewals(&mut a, 2);
    assert_eq!(logs(&a).len(), 1);
    a.skew.set(Some(-1_000));
    renewals(&mut a, 3);
    let said = logs(&a);
    assert_eq!(said.len(), 2, "{said:?}");
    assert_eq!(
        said[1],
        (
            false,
            "this host's clock agrees with the database's again".into()
        )
    );
    // 20 s behind: said once, as behind.
    a.skew.set(Some(-20_000));
    renewals(&mut a, 3);
    let said = logs(&a);
    assert_eq!(said.len(), 3, "{said:?}");
    assert!(
        said[2].1.contains("20.0 s behind the database's"),
        "{}",
        said[2].1
    );
}

#[test]
fn a_run_lost_with_its_host_is_started_once_more_elsewhere_only_for_entries_to_run_again() {
    let (clock, world, mut a, mut b) = two_hosts();
    let all = runs(40);
    // Even entries are to run again when their outcome is lost; both hosts listed them.
    let list: Vec<Loaded> = all
        .iter()
        .map(|(seq, k)| Loaded {
            cluster: k.cluster.clone(),
            owner: k.owner.clone(),
            entry: k.entry,
            place: b"crontabs/root:1".to_vec(),
            command: b"backup".to_vec(),
            rerun: seq % 2 == 0,
        })
        .collect();
    a.machine.on_loaded(list.clone(), 0);
    b.machine.on_loaded(list, 0);
    a.ask(&all);
    b.ask(&all);
    advance(&clock, DEFER);
    a.tick();
    b.tick();
    let on_b: Vec<(u64, RunKey)> = all
        .iter()
        .filter(|(_, k)| world.borrow().runs[k].host == "b")
        .cloned()
        .collect();
    assert!(on_b.len() > 4, "b ran its share");
    // b dies while its jobs run: no END, its lease runs out.
    drop(b);
    advance(&clock, Duration::from_secs(31));
    a.tick();
    for _ in 0..3 {
        advance(&clock, a.machine.takeover_every());
        a.tick();
    }
    let took = a.took();
    let again: Vec<u64> = on_b
        .iter()
        .filter(|(_, k)| took.contains(k))
        .map(|(seq, _)| *seq)
        .collect();
    let even = on_b.iter().filter(|(seq, _)| seq % 2 == 0).count();
    assert_eq!(
        again.len(),
        even,
        "each of b's runs to run again, once: {again:?}"
    );
    assert!(again.iter().all(|seq| seq % 2 == 0), "{again:?}");
    assert!(
        a.said
            .iter()
            .all(|m| !matches!(m, FromHelper::Take { attempt, .. } if *attempt != 2))
    );
    let w = world.borrow();
    for (seq, key) in &on_b {
        let row = &w.runs[key];
        match seq % 2 {
            0 => assert!(row.host == "a" && row.attempt == 2 && !row.unknown && row.started),
            _ => assert!(row.host == "b" && row.attempt == 1 && row.unknown),
        }
    }
    drop(w);
    // Later looks take nothing more.
    let said = a.said.len();
    advance(&clock, Duration::from_secs(10));
    a.tick();
    assert_eq!(a.took().len(), took.len(), "{:?}", &a.said[said..]);
    assert!(
        a.said
            .iter()
            .any(|m| matches!(m, FromHelper::Log { text, .. }
            if text.starts_with(&format!("starting again {even} runs whose first start")))),
        "{:?}",
        a.said
    );
}

#[test]
fn a_daemon_gone_without_stop_leaves_its_marked_runs_started_for_the_unknown_look() {
    let (clock, world, _a, mut b) = two_hosts();
    b.forks = false;
    let all = runs(200);
    b.ask(&all);
    let b_go = b.go();
    assert!(!b_go.is_empty());
    // Killed: no STOP. A run marked started may have been forked without its FORKED said, so
    // none is given back (at most once).
    b.machine
        .on_input_end(Vec::new(), Vec::new(), false, clock.get());
    b.machine.release();
    let w = world.borrow();
    let started = w
        .runs
        .values()
        .filter(|r| r.host == "b" && r.started)
        .count();
    assert_eq!(started, b_go.len());
}
