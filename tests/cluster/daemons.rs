//! Cluster mode end to end: real `crond` daemons (each with its own tree, pid file and host
//! name, as separate machines would have) sharing one private PostgreSQL, under libfaketime ten
//! times faster than real time, each with its `cronctl helper`. Runs are counted from what the
//! jobs themselves wrote and from the history table.
//! Needs root: the daemons run root's crontab.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use crate::support::daemon::{Crond, FAKETIME_LIB, Tree, chown, require_root, wait_for_file};
use crate::support::fork_limit::ForkLimit;
use crate::support::golden::{Scrub, assert_golden};
use crate::support::pgbouncer::PgBouncer;
use crate::support::postgres::PgServer;
use crate::support::user::TestUser;
use crond::cluster::wire::START_WINDOW;

/// The `cronctl` binary: built by the cronctl package (a default workspace member, so `cargo
/// test` at the repository's root builds it) beside crond in the same target directory.
/// `env!("CARGO_BIN_EXE_cronctl")` exists only inside the package that owns the binary.
pub fn cronctl_bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let dir = Path::new(env!("CARGO_BIN_EXE_crond"))
            .parent()
            .expect("a binary has a directory");
        let bin = dir.join("cronctl");
        assert!(
            bin.is_file(),
            "{} is not built: run `cargo test` at the repository's root (or `cargo build -p \
             cronctl` first)",
            bin.display()
        );
        bin.to_string_lossy().into_owned()
    })
}

/// The fake time the daemons start at: 10 s (1 s real) before 10:01.
const START: &str = "2026-11-21 10:00:50";

/// The fake clock of a daemon started at [`START`] when `base` was now.
fn fake_now(base: Instant) -> String {
    fake_since(START, base)
}

/// The daemon tests of this file run one at a time: each runs daemons whose clocks go 10 times
/// as fast as the real one (their helper's 6 s deadlines are 0.6 s real), a PostgreSQL server
/// or two, and hundreds of jobs; two of them together on a 2-core machine starve each other's
/// helpers past those deadlines. A test that failed leaves the lock to the next one.
fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The fake clock of a daemon started at `start` when `base` was now.
fn fake_since(start: &str, base: Instant) -> String {
    let start = jiff::civil::DateTime::strptime("%Y-%m-%d %H:%M:%S", start).expect("start");
    let elapsed = base.elapsed().as_millis() as i64 * 10;
    let now = start
        .checked_add(jiff::Span::new().milliseconds(elapsed))
        .expect("fake now");
    now.strftime("%Y-%m-%d %H:%M:%S").to_string()
}

/// A host: its tree and its daemon (restarted with a new log number).
struct Host {
    name: String,
    tree: Tree,
    crond: Option<Crond>,
    starts: usize,
}

impl Host {
    fn new(name: &str, crontab: &str) -> Host {
        let tree = Tree::new();
        tree.user_crontab("root", crontab, 0o600, "root");
        Host {
            name: name.into(),
            tree,
            crond: None,
            starts: 0,
        }
    }

    fn start(&mut self, pg: &PgServer, at: &str) {
        self.start_on(&pg.conninfo(), at);
    }

    /// Starts the daemon with its clock at `at`, running `speed` times as fast as the real one.
    fn start_clock(&mut self, pg: &PgServer, at: &str, speed: u32) {
        self.starts += 1;
        let conninfo = pg.conninfo();
        let extra = [
            "--no-pam",
            "--cluster-db",
            conninfo.as_str(),
            "--cluster-host",
            self.name.as_str(),
            "--cluster-lease",
            "5",
            "--cluster-helper",
            cronctl_bin(),
        ];
        let crond = Crond::start_fast(&self.tree, self.starts, at, speed, &extra);
        crond.wait_for_log("connected to the database", 20);
        self.crond = Some(crond);
    }

    /// Starts the daemon with `conninfo` as its cluster database.
    fn start_on(&mut self, conninfo: &str, at: &str) {
        self.starts += 1;
        let extra = [
            "--no-pam",
            "--cluster-db",
            conninfo,
            "--cluster-host",
            self.name.as_str(),
            "--cluster-lease",
            "5",
            "--cluster-helper",
            cronctl_bin(),
        ];
        let crond = Crond::start_at(&self.tree, self.starts, at, &extra);
        crond.wait_for_log("connected to the database", 20);
        self.crond = Some(crond);
    }

    fn crond(&self) -> &Crond {
        self.crond.as_ref().expect("running")
    }

    /// The helper's pid, from the daemon's log.
    fn helper_pid(&self) -> u32 {
        let line = self
            .crond()
            .wait_for_log("cluster helper started (pid ", 10);
        let pid = line
            .split("(pid ")
            .nth(1)
            .expect("pid")
            .trim_end_matches(')');
        pid.parse().expect("a pid")
    }

    /// Waits (real time) until the daemon's only children are its helper and its history
    /// writer: every job has ended.
    fn wait_for_jobs(&self, secs: u64) {
        let helper = self.helper_pid();
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            let list = self.crond().job_children();
            if list.iter().all(|&c| c == helper) {
                return;
            }
            assert!(Instant::now() < deadline, "jobs still running: {list:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGKILL to the daemon (and with `host_dies`, to its helper too: no lease given back).
    fn kill(&mut self, host_dies: bool) {
        let helper = self.helper_pid();
        let mut crond = self.crond.take().expect("running");
        let mut child = crond.child.take().expect("child");
        if host_dies {
            kill9(helper);
        }
        child.kill().expect("SIGKILL");
        child.wait().expect("reaped");
        if !host_dies {
            // The helper sees its input end, gives the lease back and exits.
            wait_gone(helper);
        }
    }
}

fn kill9(pid: u32) {
    let status = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success(), "kill -9 {pid}");
}

fn wait_gone(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Path::new(&format!("/proc/{pid}")).exists() {
        // A zombie (not reaped by its dead parent yet) has gone too.
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        if stat.contains(") Z ") || stat.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "process {pid} still there");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Sleeps until `t` seconds (real) after `base`.
fn sleep_until(base: Instant, t: f64) {
    let at = base + Duration::from_secs_f64(t);
    if let Some(left) = at.checked_duration_since(Instant::now()) {
        std::thread::sleep(left);
    }
}

/// A small xorshift generator, seeded from the clock (the seed is printed, so a failing run can
/// be repeated with CLUSTER_TEST_SEED).
struct Rng(u64);

impl Rng {
    // The seed goes to the test's captured output, shown when it fails.
    #[allow(clippy::print_stderr)]
    fn new() -> Rng {
        let seed = std::env::var("CLUSTER_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| {
                SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap()
                    .as_nanos() as u64
                    | 1
            });
        eprintln!("cluster test seed: CLUSTER_TEST_SEED={seed}");
        Rng(seed)
    }

    /// Uniform in [lo, hi).
    fn between(&mut self, lo: f64, hi: f64) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        lo + (hi - lo) * ((self.0 >> 11) as f64 / (1u64 << 53) as f64)
    }
}

/// A world-writable directory for the jobs' record, shared by all hosts.
fn shared_out() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("crond-cluster-")
        .tempdir()
        .expect("tempdir");
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o1777)).expect("chmod");
    dir
}

#[test]
fn three_hosts_run_each_of_a_thousand_slots_once_through_kills_and_a_database_restart() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let out = shared_out();
    let ran = out.path().join("ran");
    // 1,000 slots: entry k runs at 10:0m, m = 1 + k / 100 (100 runs in each of 10 minutes).
    let mut crontab = String::from("CRON_CLUSTER=batch\n");
    for k in 0..1000 {
        let minute = 1 + k / 100;
        crontab.push_str(&format!(
            "{minute} 10 * * * echo {k} >> {}\n",
            ran.display()
        ));
    }
    let mut hosts: Vec<Host> = ["host-a", "host-b", "host-c"]
        .iter()
        .map(|name| Host::new(name, &crontab))
        .collect();
    let mut rng = Rng::new();
    let base = Instant::now();
    for host in &mut hosts {
        let at = fake_now(base);
        host.start(&pg, &at);
    }
    // Real second t is fake 10:00:50 + 10 t: the boundary of 10:0m comes at t = 6 m - 5.
    // Each host is killed once at a random time, each kill inside a different window, and
    // comes back a few seconds later; host-c dies with its helper (its lease is not given
    // back: the others wait for it to run out); the database restarts between two minutes.
    // host-a is down across the boundary of 10:07 (t = 37): the host whose clock runs ahead
    // wins every minute's race, and it may be host-a every time (its clock starts first), so
    // without that the check below that another host took over would rest on luck.
    let mut kills: Vec<(usize, f64, f64, bool)> = vec![
        (1, rng.between(4.0, 12.0), rng.between(3.0, 6.0), false),
        (0, rng.between(33.0, 36.0), rng.between(4.0, 6.0), false),
        (2, rng.between(44.0, 50.0), rng.between(3.0, 6.0), true),
    ];
    kills.sort_by(|a, b| a.1.total_cmp(&b.1));
    let mut killed_at: Vec<(String, SystemTime)> = Vec::new();
    let mut db_restarted = false;
    for (host, at, down_for, dies) in kills {
        if !db_restarted && at > 26.0 {
            // Between 10:05 (t = 25) and 10:06 (t = 31).
            sleep_until(base, 26.5);
            pg.stop();
            pg.start_again();
            db_restarted = true;
        }
        sleep_until(base, at);
        killed_at.push((hosts[host].name.clone(), SystemTime::now()));
        hosts[host].kill(dies);
        sleep_until(base, at + down_for);
        let now = fake_now(base);
        hosts[host].start(&pg, &now);
    }
    assert!(db_restarted);
    // 10:10 is at t = 55; a takeover needs a lease (5 s) after the kill at most.
    sleep_until(base, 62.0);
    for host in &hosts {
        host.wait_for_jobs(30);
    }
    let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
    for line in fs::read_to_string(&ran).unwrap_or_default().lines() {
        *counts
            .entry(line.trim().parse().expect("a slot number"))
            .or_default() += 1;
    }
    let twice: Vec<_> = counts.iter().filter(|&(_, &n)| n > 1).collect();
    assert!(twice.is_empty(), "slots run more than once: {twice:?}");
    // The history: one row per slot, each started by one host.
    let history =
        pg.psql("SELECT count(*), count(started), count(DISTINCT (entry, minute)) FROM crond_runs");
    assert_eq!(
        history.trim(),
        "1000|1000|1000",
        "claims, starts, distinct slots"
    );
    // A slot not in the record may only be one the database marked started on a host that was
    // killed right then, before its daemon forked the job (at most once: docs/cluster.md).
    // "Right then" is within 5 s: a host works through a minute's hundred starts one fork at
    // a time, and on a loaded machine the last can still be unforked more than 2 s after the
    // first (seen once: 37 slots of 10:02 lost in a run whose first kill fell in that minute,
    // failing the 2 s this window was before).
    let missing: Vec<u32> = (0..1000).filter(|k| !counts.contains_key(k)).collect();
    if !missing.is_empty() {
        let rows = pg.psql(
            "SELECT host, extract(epoch from started)::float8 FROM crond_runs ORDER BY started",
        );
        let mut started_by: HashMap<String, Vec<f64>> = HashMap::new();
        for row in rows.lines() {
            let (host, at) = row.split_once('|').expect("host|started");
            started_by
                .entry(host.to_string())
                .or_default()
                .push(at.parse().expect("epoch"));
        }
        let near_a_kill = |host: &str| {
            killed_at.iter().any(|(h, at)| {
                let kill = at
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap()
                    .as_secs_f64();
                h == host
                    && started_by
                        .get(host)
                        .is_some_and(|s| s.iter().any(|&t| t <= kill && kill - t < 5.0))
            })
        };
        assert!(
            missing.len() <= 100 && killed_at.iter().any(|(h, _)| near_a_kill(h)),
            "{} slots never ran and no host was killed right after starting them: {missing:?}",
            missing.len()
        );
    }
    // The first host to ask claims a minute's batch; when it was down, another one ran them.
    let per_host = pg.psql("SELECT host, count(*) FROM crond_runs GROUP BY host ORDER BY host");
    assert!(
        per_host.lines().count() >= 2,
        "one host ran everything: {per_host}"
    );
    // Every host registered again after its restart.
    let hosts_table = pg.psql("SELECT host FROM crond_hosts ORDER BY host");
    assert_eq!(hosts_table.trim(), "host-a\nhost-b\nhost-c");
}

/// The entry's id as cronnext prints it: `[cluster=NAME id=HEX]`.
fn entry_id(crontab: &Path, command: &str) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_cronnext"))
        .arg(crontab)
        .output()
        .expect("cronnext");
    let text = String::from_utf8_lossy(&output.stdout);
    let line = text
        .lines()
        .find(|l| l.ends_with(command))
        .unwrap_or_else(|| panic!("no line for {command} in {text}"));
    line.split(" id=")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .expect("an id")
        .to_string()
}

/// The outcomes a host recorded (its `cronctl history --json`), each as (command, status or
/// reason).
fn local_history(host: &Host) -> Vec<(String, String)> {
    let socket = host.tree.pid_file().with_file_name("crond.sock");
    let output = Command::new(cronctl_bin())
        .arg("--socket")
        .arg(socket)
        .args(["history", "--json", "--limit", "1000"])
        .output()
        .expect("cronctl");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON object");
            let said = v["reason"].as_str().or(v["status"].as_str()).unwrap_or("");
            (
                v["command"].as_str().unwrap_or("").to_string(),
                said.to_string(),
            )
        })
        .collect()
}

/// A host's `cronctl history ARGS --json` through its daemon's socket, one object a line.
fn history_json(tree: &Tree, args: &[&str]) -> Vec<serde_json::Value> {
    let socket = tree.pid_file().with_file_name("crond.sock");
    let output = Command::new(cronctl_bin())
        .arg("--socket")
        .arg(socket)
        .arg("history")
        .args(args)
        .arg("--json")
        .output()
        .expect("cronctl");
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON object"))
        .collect()
}

#[test]
fn each_host_lists_every_hosts_runs_of_a_cluster_entry_in_one_history() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let crontab = "CRON_CLUSTER=web\n* * * * * echo out; exit 3\n";
    let mut hosts: Vec<Host> = ["node-1", "node-2"]
        .iter()
        .map(|n| Host::new(n, crontab))
        .collect();
    let cluster_id = entry_id(&hosts[0].tree.spool().join("root"), "echo out; exit 3");
    let base = Instant::now();
    for host in &mut hosts {
        let at = fake_now(base);
        host.start(&pg, &at);
    }
    // 10:01, 10:02 and 10:03 (t = 1, 7, 13): each on one host.
    sleep_until(base, 15.0);
    let local_id = |host: &Host| -> String {
        let all = history_json(&host.tree, &["--limit", "1"]);
        all[0]["entry"].as_str().expect("an entry id").to_string()
    };
    let ids: Vec<String> = hosts.iter().map(local_id).collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    let lists = loop {
        let lists: Vec<Vec<serde_json::Value>> = hosts
            .iter()
            .zip(&ids)
            .map(|(host, id)| history_json(&host.tree, &[id.as_str()]))
            .collect();
        let whole = |list: &Vec<serde_json::Value>| {
            list.len() == 3
                && list
                    .iter()
                    .all(|v| v["exit"] == 3 && v["output_bytes"] == 4)
        };
        if lists.iter().all(whole) || Instant::now() > deadline {
            break lists;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let mut elsewhere = 0;
    for (host, list) in hosts.iter().zip(&lists) {
        // One line per slot, newest first, every one ran (on one host or the other) with the
        // facts that host recorded; the runs of the other host have no run number here.
        let slots: Vec<&str> = list
            .iter()
            .map(|v| v["slot"].as_str().unwrap_or(""))
            .collect();
        assert_eq!(
            slots,
            [
                "2026-11-21T10:03:00+00:00",
                "2026-11-21T10:02:00+00:00",
                "2026-11-21T10:01:00+00:00"
            ],
            "{}: {list:#?}",
            host.name
        );
        for v in list {
            assert_eq!(v["exit"], 3, "{v}");
            assert_eq!(v["output_bytes"], 4, "{v}");
            assert_eq!(v["trigger"], "schedule", "{v}");
            assert_eq!(v["cluster"], "web", "{v}");
            assert_eq!(
                v["cluster_entry"].as_str(),
                Some(cluster_id.as_str()),
                "{v}"
            );
            assert!(
                v["user_us"].is_number() && v["duration_ms"].is_number(),
                "{v}"
            );
            if v["host"] == host.name.as_str() {
                assert!(v["run"].is_number(), "{v}");
            } else {
                assert!(v["run"].is_null(), "{v}");
                elsewhere += 1;
            }
        }
    }
    assert_eq!(
        lists[0].iter().map(|v| &v["host"]).collect::<Vec<_>>(),
        lists[1].iter().map(|v| &v["host"]).collect::<Vec<_>>(),
        "both hosts list the same runs"
    );
    assert_eq!(
        elsewhere, 3,
        "each slot is another host's on one of the two lists"
    );
    // The claims' rows have what the hosts recorded.
    let rows = pg.psql(
        "SELECT count(*) FROM crond_runs WHERE exit = 3 AND output_bytes = 4 \
         AND trigger = 'schedule' AND ended_ms >= run_ms AND user_us IS NOT NULL",
    );
    assert_eq!(rows.trim(), "3");
}

#[test]
fn a_run_whose_host_died_while_it_ran_has_an_unknown_outcome_in_the_others_history() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let crontab = "CRON_CLUSTER=web\n1 10 * * * sleep 30\n";
    let mut hosts: Vec<Host> = ["node-1", "node-2"]
        .iter()
        .map(|n| Host::new(n, crontab))
        .collect();
    let base = Instant::now();
    for host in &mut hosts {
        let at = fake_now(base);
        host.start(&pg, &at);
    }
    // 10:01 (t = 1): one host starts it; that host dies while it runs (its helper too: no
    // lease given back, no end written).
    wait_for_value(
        &pg,
        "SELECT count(*) FROM crond_runs WHERE started IS NOT NULL",
        "1",
        10,
    );
    let ran_on = pg.psql("SELECT host FROM crond_runs").trim().to_string();
    let (dead, alive) = match ran_on.as_str() {
        "node-1" => (0, 1),
        _ => (1, 0),
    };
    hosts[dead].kill(true);
    // Once the dead host's lease has run out, the survivor ends the run as unknown, and says
    // so once.
    wait_for_value(
        &pg,
        "SELECT reason FROM crond_runs WHERE ended IS NOT NULL",
        "unknown",
        20,
    );
    let line = hosts[alive]
        .crond()
        .wait_for_log("has no known outcome", 10);
    assert!(
        line.contains(&format!("1 run started on {ran_on} has no known outcome")),
        "{line}"
    );
    // The survivor's history of the entry has the slot once, as unknown, on the dead host.
    let entry = history_json(&hosts[alive].tree, &["--limit", "1"])[0]["entry"]
        .as_str()
        .expect("the survivor's record of the slot")
        .to_string();
    let list = history_json(&hosts[alive].tree, &[entry.as_str()]);
    assert_eq!(list.len(), 1, "{list:#?}");
    let v = &list[0];
    assert_eq!(v["status"], "unknown", "{v}");
    assert_eq!(v["reason"], "unknown", "{v}");
    assert_eq!(v["host"].as_str(), Some(ran_on.as_str()), "{v}");
    assert_eq!(v["slot"], "2026-11-21T10:01:00+00:00", "{v}");
    let words = v["words"].as_str().unwrap_or("");
    assert!(
        words.contains("which stopped before the end was written"),
        "{v}"
    );
}

fn cronctl(pg: &PgServer, args: &[&str]) -> String {
    let output = Command::new(cronctl_bin())
        .arg("--db")
        .arg(pg.conninfo())
        .args(args)
        .output()
        .expect("cronctl");
    assert!(
        output.status.success(),
        "cronctl {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn a_paused_entry_runs_on_no_host_until_resumed_and_cronctl_shows_it_all() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let out = shared_out();
    let (a, b) = (out.path().join("a"), out.path().join("b"));
    let (cmd_a, cmd_b) = (
        format!("echo a >> {}", a.display()),
        format!("echo b >> {}", b.display()),
    );
    let crontab = format!("CRON_CLUSTER=web\n* * * * * {cmd_a}\n* * * * * {cmd_b}\n");
    let mut hosts: Vec<Host> = ["node-1", "node-2"]
        .iter()
        .map(|n| Host::new(n, &crontab))
        .collect();
    let id_a = entry_id(&hosts[0].tree.spool().join("root"), &cmd_a);
    // Tables made by cronctl itself (the daemons are not up yet: no host has loaded the
    // entry, so it takes --force).
    let said = cronctl(&pg, &["pause", "--force", "web", "root", &id_a]);
    assert!(said.contains("paused"), "{said}");
    assert_eq!(
        cronctl(&pg, &["paused"]).lines().count(),
        2,
        "header + the entry"
    );
    let base = Instant::now();
    for host in &mut hosts {
        let at = fake_now(base);
        host.start(&pg, &at);
    }
    // 10:01 and 10:02 (t = 1, 7): b runs once a minute on one host; a on none.
    sleep_until(base, 9.0);
    let b_runs = fs::read_to_string(&b).unwrap_or_default();
    assert_eq!(b_runs.lines().count(), 2, "b once per minute: {b_runs:?}");
    assert!(!a.exists(), "a paused entry ran");
    let paused_line = hosts
        .iter()
        .map(|h| h.crond().wait_for_log("not run: paused in the cluster", 5))
        .next()
        .unwrap();
    assert!(paused_line.contains("CLUSTER"), "{paused_line}");
    // Said once on each host that was answered so, not at 10:02 again.
    for host in &hosts {
        let log = host.crond().log_text();
        assert!(
            log.matches("not run: paused in the cluster").count() <= 1,
            "{log}"
        );
    }
    // Resumed: it runs at the next minute (10:03 at t = 13), on one host.
    let said = cronctl(&pg, &["resume", "web", "root", &id_a]);
    assert!(said.contains("resumed"), "{said}");
    sleep_until(base, 15.0);
    let a_runs = fs::read_to_string(&a).unwrap_or_default();
    assert_eq!(a_runs.lines().count(), 1, "{a_runs:?}");
    // Each host's history: a paused at 10:01 and 10:02 on both; each minute's run of b (and
    // a's at 10:03) ran on one host and is `other-host` on the other.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (said, counts) = loop {
        let said: Vec<Vec<(String, String)>> = hosts.iter().map(local_history).collect();
        let count = |cmd: &str, what: &str| {
            said.iter()
                .flatten()
                .filter(|(c, s)| c == cmd && s == what)
                .count()
        };
        let counts = [
            count(&cmd_a, "paused"),
            count(&cmd_b, "ok"),
            count(&cmd_b, "other-host"),
            count(&cmd_a, "ok"),
            count(&cmd_a, "other-host"),
        ];
        if counts == [4, 3, 3, 1, 1] || Instant::now() > deadline {
            break (said, counts);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(counts, [4, 3, 3, 1, 1], "{said:#?}");
    // Each host that said it paused says once that it runs again.
    for host in &hosts {
        let log = host.crond().log_text();
        let resumed = log.matches("resumed in the cluster: runs again").count();
        let paused = log.matches("not run: paused in the cluster").count();
        assert_eq!(resumed, paused, "{log}");
    }
    // What cronctl shows.
    let listed = cronctl(&pg, &["hosts"]);
    assert!(
        listed.contains("node-1")
            && listed.contains("node-2")
            && listed.matches("live").count() == 2,
        "{listed}"
    );
    let history = cronctl(&pg, &["history", "--entry", &id_a]);
    assert_eq!(history.lines().count(), 2, "header + one run: {history}");
    assert!(history.contains("2026-11-21T10:03:00Z"), "{history}");
}

#[test]
fn without_the_database_a_cluster_run_does_not_start_and_local_entries_do() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let out = shared_out();
    let (c, l) = (out.path().join("clustered"), out.path().join("local"));
    let crontab = format!(
        "* * * * * echo local >> {}\nCRON_CLUSTER=web\n* * * * * echo c >> {}\n\
         * * * * * echo job-b\n* * * * * echo job-c\n* * * * * echo job-d\n",
        l.display(),
        c.display()
    );
    let tree = Tree::new();
    tree.user_crontab("root", &crontab, 0o600, "root");
    // A socket directory with no server in it.
    let nowhere = out.path().join("no-server");
    fs::create_dir(&nowhere).unwrap();
    let conninfo = format!(
        "host={} dbname=crond user=postgres connect_timeout=1",
        nowhere.display()
    );
    let crond = Crond::start_at(
        &tree,
        1,
        START,
        &[
            "--no-pam",
            "--cluster-db",
            &conninfo,
            "--cluster-helper",
            cronctl_bin(),
        ],
    );
    // One line a minute for the four entries, naming three.
    let line = crond.wait_for_log("(CRON) CLUSTER (4 entries not run at 10:01: ", 15);
    assert!(
        line.contains("the cluster database is unreachable (")
            && line.contains("): echo c >> ")
            && line.ends_with(", echo job-b, echo job-c and 1 more)"),
        "{line}"
    );
    crond.wait_for_log("database unreachable", 5);
    crate::support::daemon::wait_for_file(&l, 10);
    assert!(!c.exists(), "a cluster run started with no claim");
    crond.wait_for_log("(CRON) CLUSTER (4 entries not run at 10:02: ", 15);
    let log = crond.log_text();
    assert_eq!(
        log.matches(" CLUSTER (").count(),
        2,
        "no line per entry: {log}"
    );
    // Each cluster slot is recorded as a claim lost, with the database's words; the local
    // entry ran.
    let list = history_json(&tree, &["--limit", "100"]);
    let said = |v: &serde_json::Value| {
        (
            v["command"].as_str().unwrap_or("").to_string(),
            v["reason"].as_str().unwrap_or("ran").to_string(),
        )
    };
    let lost: Vec<&serde_json::Value> = list
        .iter()
        .filter(|v| v["reason"] == "claim-lost")
        .collect();
    assert!(lost.len() >= 8, "4 entries at 10:01 and 10:02: {list:#?}");
    for v in &lost {
        assert!(
            v["command"] != format!("echo local >> {}", l.display()),
            "{v}"
        );
        let words = v["words"].as_str().unwrap_or("");
        assert!(
            words.starts_with("the cluster database is unreachable ("),
            "{v}"
        );
        assert_eq!(v["cluster"], "web", "{v}");
    }
    assert!(
        list.iter()
            .map(said)
            .any(|(c, r)| c.starts_with("echo local") && r == "ran"),
        "{list:#?}"
    );
    drop(crond);

    // The same crontab on a daemon without --cluster-db: the entry is an ordinary one.
    let tree = Tree::new();
    tree.user_crontab("root", &crontab, 0o600, "root");
    let local = Crond::start_at(&tree, 1, START, &["--no-pam"]);
    local.wait_for_log("CMD (echo c", 15);
    crate::support::daemon::wait_for_file(&c, 15);
}

#[test]
fn a_claim_whose_host_died_before_starting_it_is_taken_over() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let out = shared_out();
    let ran = out.path().join("ran");
    let command = format!("echo ran >> {}", ran.display());
    let crontab = format!("CRON_CLUSTER=ops\n1 10 * * * {command}\n");
    let mut host = Host::new("node-1", &crontab);
    let id = entry_id(&host.tree.spool().join("root"), &command);
    // A host that claimed the 10:01 run and died before starting it: its lease ran out.
    cronctl(&pg, &["paused"]);
    pg.psql(&format!(
        "INSERT INTO crond_hosts (host, session, lease_until) VALUES ('ghost', 1, now() - interval '1 s');
         INSERT INTO crond_runs (cluster, owner, entry, minute, host, session)
         VALUES ('ops', 'root', '{id}', '2026-11-21 10:01:00+00', 'ghost', 1);"
    ));
    let base = Instant::now();
    host.start(&pg, &fake_now(base));
    let line = host
        .crond()
        .wait_for_log("claimed by a host that stopped before starting it", 20);
    assert!(line.contains("10:01"), "{line}");
    crate::support::daemon::wait_for_file(&ran, 10);
    let row = pg.psql("SELECT host, taken_from, started IS NOT NULL FROM crond_runs");
    assert_eq!(row.trim(), "node-1|ghost|t");
    // Once: 20 s of the daemon's time later, nothing took it over a second time.
    std::thread::sleep(Duration::from_secs(2));
    let lines = fs::read_to_string(&ran).expect("ran");
    assert_eq!(lines, "ran\n", "{}", host.crond().log_text());
}

#[test]
fn a_host_stopped_while_its_forks_fail_gives_its_started_runs_back_and_the_other_runs_them_once() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    assert!(
        ForkLimit::pids_cgroup_root().is_some(),
        "this test needs a pids cgroup (cgroup v1's pids, or v2 with pids enabled)"
    );
    let pg = PgServer::start();
    let out = shared_out();
    let n = 40;
    let files = [out.path().join("a"), out.path().join("b")];
    let mut a = Host::new("node-a", &numbered_crontab(&files[0], n));
    let mut b = Host::new("node-b", &numbered_crontab(&files[1], n));
    // 3 s (real) before 10:01, for the limit to be in place before it.
    let (base, start) = (Instant::now(), "2026-11-21 10:00:30");
    a.start(&pg, &fake_since(start, base));
    b.start(&pg, &fake_since(start, base));
    // node-b's forks fail from before 10:01: it is granted its share, marks it started, and
    // can start none of it.
    let limit = ForkLimit::on(b.crond().pid());
    limit.set(true);
    b.crond().wait_for_log("can't fork", 20);
    let started_on_b =
        "SELECT count(*) FROM crond_runs WHERE host = 'node-b' AND started IS NOT NULL";
    let any = "SELECT count(*) > 0 FROM crond_runs WHERE host = 'node-b' AND started IS NOT NULL";
    wait_for_value(&pg, any, "t", 10);
    // Its whole share marked (each retried fork holds it up a second, fake).
    std::thread::sleep(Duration::from_millis(500));
    let marked: usize = pg.psql(started_on_b).trim().parse().expect("a count");
    // A clean stop: the helper gives those runs back, then the lease.
    let helper = b.helper_pid();
    let mut crond = b.crond.take().expect("running");
    assert!(crond.stop().success());
    wait_gone(helper);
    drop(limit);
    let said = crond.wait_for_log("gave back", 5);
    assert!(
        said.contains(&format!(
            "gave back {marked} runs marked started and not forked"
        )),
        "{said}"
    );
    // node-a takes them over (the holder's lease is gone) and runs them with its own share.
    let got = wait_for_numbers(&[&files[0], &files[1]], n, 30);
    std::thread::sleep(Duration::from_millis(500));
    assert!(got[1].is_empty(), "node-b ran {:?}", got[1]);
    assert_each_once(&[numbers(&files[0])], n);
    let rows = pg.psql(
        "SELECT count(*) FILTER (WHERE reason = 'unknown'),
                count(*) FILTER (WHERE taken_from = 'node-b' AND host = 'node-a')
         FROM crond_runs",
    );
    assert_eq!(
        rows.trim(),
        format!("0|{marked}"),
        "none unknown, each taken over"
    );
    drop(crond);
}

/// The crontab of `per_minute` cluster entries due at each of 10:01 to 10:0`minutes`: entry k
/// runs at 10:0m, m = 1 + k / per_minute, and appends k to `ran`.
fn minutes_crontab(ran: &Path, minutes: usize, per_minute: usize) -> String {
    let mut crontab = String::from("CRON_CLUSTER=batch\n");
    for k in 0..minutes * per_minute {
        let minute = 1 + k / per_minute;
        crontab.push_str(&format!(
            "{minute} 10 * * * echo {k} >> {}\n",
            ran.display()
        ));
    }
    crontab
}

/// How many times each slot number was written to `ran`.
fn run_counts(ran: &Path) -> BTreeMap<u32, u32> {
    let mut counts: BTreeMap<u32, u32> = BTreeMap::new();
    for k in slots_ran(ran) {
        *counts.entry(k).or_default() += 1;
    }
    counts
}

#[test]
fn a_rolling_restart_of_three_hosts_runs_every_slot_once() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let out = shared_out();
    let ran = out.path().join("ran");
    let (minutes, per_minute) = (3, 100);
    let crontab = minutes_crontab(&ran, minutes, per_minute);
    let mut hosts: Vec<Host> = ["roll-a", "roll-b", "roll-c"]
        .iter()
        .map(|name| Host::new(name, &crontab))
        .collect();
    let base = Instant::now();
    for host in &mut hosts {
        host.start(&pg, &fake_now(base));
    }
    // The boundary of 10:0m comes at real t = 6 m - 5. Each host in turn is stopped (SIGTERM)
    // just after one of them, while that minute's runs are claimed and started, and started
    // again a second later (10 s of its time).
    for (i, host) in hosts.iter_mut().enumerate() {
        let boundary = 6.0 * (i as f64 + 1.0) - 5.0;
        sleep_until(base, boundary + 0.1);
        let helper = host.helper_pid();
        let mut crond = host.crond.take().expect("running");
        assert!(crond.stop().success(), "{}", crond.log_text());
        wait_gone(helper);
        sleep_until(base, boundary + 1.1);
        host.start(&pg, &fake_now(base));
    }
    let n = (minutes * per_minute) as u32;
    let deadline = Instant::now() + Duration::from_secs(30);
    while run_counts(&ran).len() < n as usize && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    for host in &hosts {
        host.wait_for_jobs(30);
    }
    let counts = run_counts(&ran);
    let twice: Vec<_> = counts.iter().filter(|&(_, &c)| c > 1).collect();
    let missing: Vec<u32> = (0..n).filter(|k| !counts.contains_key(k)).collect();
    assert!(
        twice.is_empty() && missing.is_empty(),
        "twice: {twice:?}; never ran: {missing:?}\n{}",
        what_did_not_run(&pg, &hosts)
    );
    let rows = pg.psql("SELECT count(*), count(started), count(DISTINCT host) FROM crond_runs");
    assert_eq!(
        rows.trim(),
        format!("{n}|{n}|3"),
        "one started row per slot"
    );
}

/// For a failure's message: the rows of runs not ended or ended with a reason, and what each
/// host logged of cluster runs but the runs another host ran.
fn what_did_not_run(pg: &PgServer, hosts: &[Host]) -> String {
    let rows = pg.psql(
        "SELECT host, minute, claimed, started, ended, trigger, reason, words FROM crond_runs \
         WHERE ended IS NULL OR reason IS NOT NULL ORDER BY claimed",
    );
    let mut said = format!("rows not ended or not run:\n{rows}");
    for host in hosts {
        let log = host
            .crond
            .as_ref()
            .map(|c| c.log_text())
            .unwrap_or_default();
        let lines: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("CLUSTER") && !l.contains(" runs on "))
            .collect();
        said.push_str(&format!("{}:\n{}\n", host.name, lines.join("\n")));
    }
    said
}

#[test]
fn a_host_frozen_past_its_lease_starts_nothing_twice_and_every_slot_has_an_outcome() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let out = shared_out();
    let ran = out.path().join("ran");
    let (minutes, per_minute) = (2, 150);
    let crontab = minutes_crontab(&ran, minutes, per_minute);
    let mut hosts: Vec<Host> = ["cold-a", "cold-b"]
        .iter()
        .map(|name| Host::new(name, &crontab))
        .collect();
    let base = Instant::now();
    for host in &mut hosts {
        host.start(&pg, &fake_now(base));
    }
    // cold-b's daemon and helper are stopped (SIGSTOP) as 10:01's runs come up (where in its
    // work on them depends on the machine's load: before its claims, between a start and its
    // fork, or after), for 8 s: its lease (5 s of the database's clock) runs out, cold-a claims
    // what cold-b had not, takes over its claims, and ends as `unknown` what cold-b had marked
    // started. Then cold-b goes on (SIGCONT) where it was: its starts are refused (its lease
    // ran out), what it forks is what it had marked started.
    let frozen = [hosts[1].crond().pid(), hosts[1].helper_pid()];
    let signal = |sig: &str| {
        for pid in frozen {
            let status = Command::new("kill")
                .args([sig, &pid.to_string()])
                .status()
                .expect("kill");
            assert!(status.success(), "kill {sig} {pid}");
        }
    };
    sleep_until(base, 1.1);
    signal("-STOP");
    std::thread::sleep(Duration::from_secs(8));
    signal("-CONT");
    // 10:02 (t = 7) came during the freeze: cold-a runs it, and cold-b finds it run.
    let n = (minutes * per_minute) as u32;
    let deadline = Instant::now() + Duration::from_secs(30);
    while run_counts(&ran).len() < n as usize && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    std::thread::sleep(Duration::from_secs(2));
    for host in &hosts {
        host.wait_for_jobs(30);
    }
    let counts = run_counts(&ran);
    let twice: Vec<_> = counts.iter().filter(|&(_, &c)| c > 1).collect();
    assert!(twice.is_empty(), "slots run more than once: {twice:?}");
    // Every slot has one row, started by one host, and ended: it ran, or it did not and says
    // why. A run cold-b marked started and had not forked is ended `unknown` by cold-a's look
    // (cold-b's lease ran out), or `claim-lost` by cold-b itself when it wakes first and finds
    // its lease gone: then it does not fork it.
    let rows = pg.psql(
        "SELECT count(*), count(started), count(ended), count(DISTINCT (entry, minute)) \
         FROM crond_runs",
    );
    assert_eq!(
        rows.trim(),
        format!("{n}|{n}|{n}|{n}"),
        "one started and ended row per slot"
    );
    let not_run: u32 = pg
        .psql("SELECT count(*) FROM crond_runs WHERE reason IN ('unknown', 'claim-lost')")
        .trim()
        .parse()
        .expect("a count");
    let missing = (0..n).filter(|k| !counts.contains_key(k)).count() as u32;
    assert!(
        missing <= not_run && not_run <= START_WINDOW as u32,
        "{missing} slots never ran, {not_run} recorded unknown or claim-lost (at most a start \
         window)\n{}",
        what_did_not_run(&pg, &hosts)
    );
    if not_run > 0 {
        let said = hosts.iter().any(|h| {
            let log = h.crond().log_text();
            log.contains("lease in the cluster database has expired")
                || log.contains("(recorded as unknown)")
        });
        assert!(said, "{not_run} runs not run and no host's log says so");
    }
}

/// The lines of `log` that say the host's clock is off the database's, or agrees again.
fn clock_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("this host's clock"))
        .collect()
}

#[test]
fn a_host_whose_clock_is_off_the_databases_says_so_once_and_one_in_time_says_nothing() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let real = |offset_s: i64| {
        let now = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(offset_s);
        now.strftime("%Y-%m-%d %H:%M:%S").to_string()
    };
    let crontab = "CRON_CLUSTER=skew\n0 0 1 1 * true\n";
    let mut hosts: Vec<Host> = ["fast", "slow", "true"]
        .iter()
        .map(|name| Host::new(name, crontab))
        .collect();
    // At the real speed: 20 s ahead, 20 s behind, and in time (libfaketime's own start).
    for (host, offset) in hosts.iter_mut().zip([20, -20, 0]) {
        host.start_clock(&pg, &real(offset), 1);
    }
    // A few lease renewals (a third of 5 s each).
    std::thread::sleep(Duration::from_secs(6));
    let logs: Vec<String> = hosts.iter().map(|h| h.crond().log_text()).collect();
    // The seconds said, as far as the host's clock is off (its start took a moment).
    let off = |line: &str, how: &str| -> f64 {
        let said = line
            .split("this host's clock is ")
            .nth(1)
            .and_then(|rest| {
                rest.split(&format!(" s {how} the database's (more than 5 s)"))
                    .next()
            })
            .unwrap_or_else(|| panic!("no '{how}' in {line}"));
        said.parse().unwrap_or_else(|_| panic!("{said} in {line}"))
    };
    let fast = clock_lines(&logs[0]);
    assert_eq!(fast.len(), 1, "{}", logs[0]);
    assert!(fast[0].contains("(CRON) ERROR (cluster: "), "{}", fast[0]);
    assert!(
        (17.0..21.0).contains(&off(fast[0], "ahead of")),
        "{}",
        fast[0]
    );
    assert!(
        fast[0].contains("its cluster runs start that much early"),
        "{}",
        fast[0]
    );
    let slow = clock_lines(&logs[1]);
    assert_eq!(slow.len(), 1, "{}", logs[1]);
    assert!(
        (19.0..23.0).contains(&off(slow[0], "behind")),
        "{}",
        slow[0]
    );
    assert!(clock_lines(&logs[2]).is_empty(), "{}", logs[2]);
}

#[test]
fn hosts_twenty_seconds_apart_run_each_slot_once_and_miss_no_minute() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let out = shared_out();
    let ran = out.path().join("ran");
    let (minutes, per_minute) = (3, 100);
    let crontab = minutes_crontab(&ran, minutes, per_minute);
    let mut hosts: Vec<Host> = ["early", "late"]
        .iter()
        .map(|name| Host::new(name, &crontab))
        .collect();
    // One host's clock 20 s ahead of the other's (40 s apart), both ten times as fast.
    let base = Instant::now();
    hosts[0].start(&pg, &fake_since("2026-11-21 10:00:50", base));
    hosts[1].start(&pg, &fake_since("2026-11-21 10:00:10", base));
    // The late host reaches 10:03 at real t = 17.
    let n = (minutes * per_minute) as u32;
    let deadline = base + Duration::from_secs(40);
    while run_counts(&ran).len() < n as usize && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    sleep_until(base, 20.0);
    for host in &hosts {
        host.wait_for_jobs(30);
    }
    let counts = run_counts(&ran);
    let twice: Vec<_> = counts.iter().filter(|&(_, &c)| c > 1).collect();
    let missing: Vec<u32> = (0..n).filter(|k| !counts.contains_key(k)).collect();
    assert!(
        twice.is_empty() && missing.is_empty(),
        "twice: {twice:?}; never ran: {missing:?}"
    );
    let rows = pg.psql("SELECT count(*), count(started) FROM crond_runs");
    assert_eq!(rows.trim(), format!("{n}|{n}"));
    // Both clocks are far from the database's (libfaketime's date is in the past): each host
    // says so once.
    for host in &hosts {
        let log = host.crond().log_text();
        assert_eq!(clock_lines(&log).len(), 1, "{log}");
    }
}

/// A TCP proxy on loopback to the database's TCP port that can be cut: while cut, it forwards
/// nothing either way and connects nothing (the connections stay open: a network that drops
/// packets, not one that refuses them).
struct Partition {
    port: u16,
    cut: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Partition {
    fn to(upstream: u16) -> Partition {
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind the proxy");
        let port = listener.local_addr().expect("address").port();
        let cut = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = std::sync::Arc::clone(&cut);
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let flag = std::sync::Arc::clone(&flag);
                std::thread::spawn(move || {
                    while flag.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    let Ok(server) = std::net::TcpStream::connect(("127.0.0.1", upstream)) else {
                        return;
                    };
                    let pipes = [
                        (client.try_clone(), server.try_clone()),
                        (server.try_clone(), client.try_clone()),
                    ];
                    for (from, to) in pipes {
                        let (Ok(from), Ok(to)) = (from, to) else {
                            return;
                        };
                        let flag = std::sync::Arc::clone(&flag);
                        std::thread::spawn(move || Partition::pipe(from, to, &flag));
                    }
                });
            }
        });
        Partition { port, cut }
    }

    /// Copies `from` to `to` while not cut, until either end closes.
    fn pipe(
        mut from: std::net::TcpStream,
        mut to: std::net::TcpStream,
        cut: &std::sync::atomic::AtomicBool,
    ) {
        use std::io::{Read, Write};
        let _ = from.set_read_timeout(Some(Duration::from_millis(20)));
        let mut buf = [0u8; 16 * 1024];
        loop {
            if cut.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
                continue;
            }
            match from.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break,
            }
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
    }

    fn set_cut(&self, cut: bool) {
        self.cut.store(cut, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn a_host_cut_off_from_the_database_claims_nothing_and_the_other_runs_its_share_once() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let out = shared_out();
    let ran = out.path().join("ran");
    let (minutes, per_minute) = (4, 100);
    let crontab = minutes_crontab(&ran, minutes, per_minute);
    // part-a reaches the database directly, part-b through the proxy, both over TCP as the
    // same role (a passfile for the proxy's port).
    let proxy = Partition::to(pg.port());
    let passfile = out.path().join("passfile");
    fs::write(
        &passfile,
        format!(
            "*:{}:*:crond_test:{}\n",
            proxy.port,
            crate::support::postgres::PASSWORD
        ),
    )
    .expect("passfile");
    fs::set_permissions(&passfile, fs::Permissions::from_mode(0o600)).expect("chmod");
    let through_proxy = format!(
        "host=127.0.0.1 port={} dbname=crond user=crond_test passfile={}",
        proxy.port,
        passfile.display()
    );
    let mut hosts: Vec<Host> = ["part-a", "part-b"]
        .iter()
        .map(|name| Host::new(name, &crontab))
        .collect();
    let base = Instant::now();
    hosts[0].start_on(&pg.tcp_conninfo(), &fake_now(base));
    hosts[1].start_on(&through_proxy, &fake_now(base));
    // 10:01 (t = 1) is shared; the cut comes before 10:02 (t = 7) and lasts past 10:03
    // (t = 13): part-b's lease (5 s of the database's clock) runs out meanwhile. 10:04 (t = 19)
    // comes after it is mended.
    sleep_until(base, 5.0);
    proxy.set_cut(true);
    let cut_at: f64 = pg
        .psql("SELECT extract(epoch FROM now())")
        .trim()
        .parse()
        .expect("epoch");
    sleep_until(base, 16.0);
    proxy.set_cut(false);
    let n = (minutes * per_minute) as u32;
    let deadline = Instant::now() + Duration::from_secs(30);
    while run_counts(&ran).len() < n as usize && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    sleep_until(base, 26.0);
    for host in &hosts {
        host.wait_for_jobs(30);
    }
    let counts = run_counts(&ran);
    let twice: Vec<_> = counts.iter().filter(|&(_, &c)| c > 1).collect();
    assert!(twice.is_empty(), "slots run more than once: {twice:?}");
    // What part-b marked started as the cut came and never forked is ended unknown by part-a.
    let missing = (0..n).filter(|k| !counts.contains_key(k)).count();
    let unknown: usize = pg
        .psql("SELECT count(*) FROM crond_runs WHERE reason = 'unknown'")
        .trim()
        .parse()
        .expect("a count");
    assert!(
        missing <= unknown && unknown <= START_WINDOW,
        "{missing} slots never ran, {unknown} ended unknown"
    );
    // Cut off, part-b claimed nothing: the minutes of the cut ran on part-a.
    let during = pg.psql(&format!(
        "SELECT count(*) FILTER (WHERE host = 'part-b'), count(*) FROM crond_runs
         WHERE claimed > to_timestamp({cut_at} + 1)
           AND minute IN ('2026-11-21 10:02:00+00', '2026-11-21 10:03:00+00')"
    ));
    assert_eq!(
        during.trim(),
        format!("0|{}", 2 * per_minute),
        "part-b's claims, all claims"
    );
    // Mended, part-b claims its share again.
    let after = pg.psql(
        "SELECT count(*) FROM crond_runs WHERE host = 'part-b' AND minute = '2026-11-21 10:04:00+00'",
    );
    assert!(
        after.trim().parse::<u32>().expect("a count") > 0,
        "part-b ran none of 10:04"
    );
    let log = hosts[1].crond().log_text();
    assert!(
        log.contains("unreachable") || log.contains("connection lost"),
        "{log}"
    );
}

/// `pid` and every process under it.
fn with_descendants(pid: u32) -> Vec<u32> {
    let mut all = vec![pid];
    let mut i = 0;
    while i < all.len() {
        let list = format!("/proc/{0}/task/{0}/children", all[i]);
        let children = fs::read_to_string(list).unwrap_or_default();
        all.extend(
            children
                .split_whitespace()
                .filter_map(|p| p.parse::<u32>().ok()),
        );
        i += 1;
    }
    all
}

#[test]
fn a_run_whose_host_died_is_started_again_elsewhere_only_with_cluster_rerun_unknown() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let out = shared_out();
    let ran = out.path().join("ran");
    // Entries 0 to 19 may run twice (CRON_CLUSTER_RERUN=unknown), 20 to 39 may not. Each job
    // writes its number, then runs 5 s (real time: the jobs are not under libfaketime).
    let mut crontab = String::from("CRON_CLUSTER=rr\nCRON_CLUSTER_RERUN=unknown\n");
    for k in 0..40 {
        if k == 20 {
            crontab.push_str("CRON_CLUSTER_RERUN=never\n");
        }
        crontab.push_str(&format!(
            "1 10 * * * echo {k} >> {}; sleep 5\n",
            ran.display()
        ));
    }
    let mut hosts: Vec<Host> = ["rr-a", "rr-b"]
        .iter()
        .map(|name| Host::new(name, &crontab))
        .collect();
    let base = Instant::now();
    for host in &mut hosts {
        host.start(&pg, &fake_now(base));
    }
    // 10:01 comes at t = 1; rr-b's jobs run from then. At t = 2 the host dies: its daemon,
    // helper and jobs are killed; no end is written, its lease (5 s) runs out.
    sleep_until(base, 2.0);
    let b_pid = hosts[1].crond().pid();
    let doomed = with_descendants(b_pid);
    for pid in &doomed {
        let _ = Command::new("kill")
            .args(["-STOP", &pid.to_string()])
            .status();
    }
    for pid in &doomed {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let mut dead = hosts.pop().expect("rr-b");
    if let Some(mut crond) = dead.crond.take()
        && let Some(mut child) = crond.child.take()
    {
        let _ = child.wait();
    }
    // rr-a ends rr-b's runs as unknown, and starts again those that may run twice.
    let on_b = pg.psql("SELECT count(*) FROM crond_runs WHERE host = 'rr-b'");
    let on_b: u32 = on_b.trim().parse().expect("a count");
    assert!(on_b > 0, "rr-b ran none of the minute");
    wait_for_value(
        &pg,
        "SELECT count(*) FROM crond_runs WHERE host = 'rr-b' AND reason IS NULL",
        "0",
        30,
    );
    // The runs are ended `unknown` first and taken again at a later look: wait until no
    // unknown first attempt of an entry to run again is left, then for the second attempts to
    // end and be recorded.
    wait_for_value(
        &pg,
        "SELECT count(*) FROM crond_runs r
         WHERE r.reason = 'unknown' AND r.attempt = 1
           AND EXISTS (SELECT 1 FROM crond_entries e
               WHERE (e.cluster, e.owner, e.entry) = (r.cluster, r.owner, r.entry) AND e.rerun)",
        "0",
        30,
    );
    wait_for_value(
        &pg,
        "SELECT count(*) FROM crond_runs WHERE attempt = 2 AND trigger IS NULL",
        "0",
        30,
    );
    hosts[0].wait_for_jobs(30);
    let counts = run_counts(&ran);
    let twice: Vec<u32> = counts
        .iter()
        .filter(|&(_, &c)| c == 2)
        .map(|(&k, _)| k)
        .collect();
    assert!(counts.values().all(|&c| c <= 2), "{counts:?}");
    assert!(
        twice.iter().all(|&k| k < 20),
        "only entries to run again ran twice: {twice:?}"
    );
    assert_eq!(counts.len(), 40, "every slot ran: {counts:?}");
    // The history: each slot rr-b started is the second attempt of rr-a (to run again) or
    // unknown (not to run again), each once.
    let rows = pg.psql(
        "SELECT count(*) FILTER (WHERE attempt = 2 AND host = 'rr-a' AND taken_from = 'rr-b'
                                  AND trigger = 'rerun' AND reason IS NULL),
                count(*) FILTER (WHERE host = 'rr-b' AND reason = 'unknown' AND attempt = 1),
                count(*)
         FROM crond_runs",
    );
    let want = format!("{}|{}|40", twice.len(), on_b as usize - twice.len());
    assert_eq!(rows.trim(), want, "again, unknown, slots");
    assert!(!twice.is_empty(), "none of rr-b's share was to run again");
    let log = hosts[0].crond().log_text();
    assert!(
        log.contains(&format!("starting again {} run", twice.len())),
        "{log}"
    );
}

/// Per host: the crontab of `n` cluster entries due at 10:01 (the minute after [`START`]) and
/// at no other time, each appending its number to the file `$OUT` (an environment line: the
/// entries are the same entries on every host). Due every minute, a later minute's runs could
/// stand in for lost 10:01 runs, or show as their seconds: that hid lost runs until stop 39
/// (`sql::take_over`).
fn numbered_crontab(out: &Path, n: usize) -> String {
    let mut text = format!("OUT={}\nCRON_CLUSTER=load\n", out.display());
    for k in 0..n {
        text.push_str(&format!("1 10 * * * echo {k} >> $OUT\n"));
    }
    text
}

/// The numbers each host's jobs wrote.
fn numbers(path: &Path) -> Vec<usize> {
    fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().parse().expect("a number"))
        .collect()
}

/// Waits (real time) until the hosts' files hold `n` numbers in all.
fn wait_for_numbers(files: &[&Path], n: usize, secs: u64) -> Vec<Vec<usize>> {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let got: Vec<Vec<usize>> = files.iter().map(|f| numbers(f)).collect();
        if got.iter().map(Vec::len).sum::<usize>() >= n || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn assert_each_once(got: &[Vec<usize>], n: usize) {
    let mut seen = vec![0; n];
    for k in got.iter().flatten() {
        seen[*k] += 1;
    }
    let missing: Vec<usize> = (0..n).filter(|&k| seen[k] == 0).collect();
    let twice: Vec<usize> = (0..n).filter(|&k| seen[k] > 1).collect();
    assert!(
        missing.is_empty() && twice.is_empty(),
        "not run: {missing:?}; twice: {twice:?}"
    );
}

#[test]
fn two_hosts_share_a_minutes_runs_and_each_runs_once() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let out = shared_out();
    let n = 300;
    let files = [out.path().join("a"), out.path().join("b")];
    let mut hosts = vec![
        Host::new("node-a", &numbered_crontab(&files[0], n)),
        Host::new("node-b", &numbered_crontab(&files[1], n)),
    ];
    let base = Instant::now();
    for host in &mut hosts {
        host.start(&pg, &fake_now(base));
    }
    // The 10:01 boundary comes ~1 s (real) after the start.
    wait_for_numbers(&[&files[0], &files[1]], n, 30);
    std::thread::sleep(Duration::from_millis(500));
    let got: Vec<Vec<usize>> = files.iter().map(|f| numbers(f)).collect();
    assert_each_once(&got, n);
    // Spread by weight over both live hosts, not to whichever asks first. (The split is fixed
    // by the entries' ids; the bound leaves room for a host slow enough that the other claimed
    // part of its share after the wait.)
    let a = got[0].len();
    assert!(
        (n / 4..=n * 3 / 4).contains(&a),
        "node-a ran {a} of {n}, node-b {}",
        got[1].len()
    );
    let rows = pg.psql("SELECT count(*), count(DISTINCT entry) FROM crond_runs");
    assert_eq!(rows.trim(), format!("{n}|{n}"));
}

#[test]
fn a_host_that_stops_claiming_has_its_share_run_by_the_other_once() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let out = shared_out();
    let n = 60;
    let files = [out.path().join("a"), out.path().join("b")];
    let mut a = Host::new("node-a", &numbered_crontab(&files[0], n));
    let mut b = Host::new("node-b", &numbered_crontab(&files[1], n));
    let base = Instant::now();
    a.start(&pg, &fake_now(base));
    b.start(&pg, &fake_now(base));
    // node-b's helper stops before the boundary: its daemon still asks, nothing answers, and
    // its lease is not renewed.
    let helper = b.helper_pid().to_string();
    let signal = |sig: &str| {
        let status = Command::new("kill")
            .args([sig, &helper])
            .status()
            .expect("kill");
        assert!(status.success());
    };
    signal("-STOP");
    let got = wait_for_numbers(&[&files[0], &files[1]], n, 30);
    assert_each_once(&got, n);
    assert_eq!(got[1].len(), 0, "node-b ran {:?}", got[1]);
    a.crond().wait_for_log("CMD (echo 0 >>", 5);
    // node-b's helper comes back: it finds every run started by node-a, and none runs twice.
    signal("-CONT");
    b.crond().wait_for_log("runs on node-a", 20);
    std::thread::sleep(Duration::from_millis(500));
    let got: Vec<Vec<usize>> = files.iter().map(|f| numbers(f)).collect();
    assert_each_once(&got, n);
}

#[test]
fn a_database_that_answers_slowly_delays_the_runs_and_loses_none() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let out = shared_out();
    let n = 20;
    let file = out.path().join("a");
    let mut host = Host::new("node-a", &numbered_crontab(&file, n));
    let base = Instant::now();
    host.start(&pg, &fake_now(base));
    // Just before 10:01 (1 s real after the start) a transaction locks the runs table for 3 s
    // real (30 s of the daemon's fake time): every claim waits on the lock. The helper runs
    // under the daemon's libfaketime, so its 6 s call timeout is 0.6 s real: it gives a claim
    // up and tries again while the server still holds the first try, which inserts the rows
    // once the lock goes; the try after it can't see them (`sql::take_over`). Under load that
    // left the 10:01 runs waiting for this host's own lease to end, and none ran.
    let mut locker = pg.psql_background(
        "BEGIN; LOCK TABLE crond_runs IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(3); COMMIT;",
    );
    let got = wait_for_numbers(&[&file], n, 30);
    assert!(locker.wait().expect("psql").success());
    // A run given up says why in the log.
    let log = host.crond().log_text();
    assert!(!log.contains("not run"), "{log}");
    assert_eq!(got[0].len(), n, "{log}");
    assert_each_once(&got, n);
}

#[test]
fn a_line_the_helper_should_never_send_is_skipped_and_the_other_runs_start() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let out = shared_out();
    let ran = out.path().join("ran");
    // A helper that first sends a line past the protocol's bound, then one that does not
    // parse, then answers every request GO.
    let helper = out.path().join("helper.sh");
    fs::write(
        &helper,
        "#!/bin/sh\nhead -c 5000 /dev/zero | tr '\\0' x; echo\necho 'WHAT is this'\n\
         while read -r word seq rest; do [ \"$word\" = RUN ] && echo \"GO $seq\"; done\n",
    )
    .unwrap();
    fs::set_permissions(&helper, fs::Permissions::from_mode(0o755)).unwrap();
    let tree = Tree::new();
    tree.user_crontab(
        "root",
        &format!(
            "CRON_CLUSTER=web\n* * * * * echo one >> {r}\n* * * * * echo two >> {r}\n",
            r = ran.display()
        ),
        0o600,
        "root",
    );
    let crond = Crond::start_at(
        &tree,
        1,
        START,
        &[
            "--no-pam",
            "--cluster-db",
            "host=/nowhere dbname=crond",
            "--cluster-helper",
            helper.to_str().unwrap(),
        ],
    );
    let line = crond.wait_for_log("protocol error: a line of 5000 bytes (skipped)", 15);
    assert!(line.contains("line skipped"), "{line}");
    crond.wait_for_log("bad answer 'WHAT is this'", 5);
    let text = wait_for_lines(&ran, 2, 15);
    assert!(text.contains("one") && text.contains("two"), "{text}");
    assert!(
        !crond.log_text().contains("cluster helper lost"),
        "{}",
        crond.log_text()
    );
}

/// Waits (real time) until `path` holds `n` lines.
fn wait_for_lines(path: &Path, n: usize, secs: u64) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let text = fs::read_to_string(path).unwrap_or_default();
        if text.lines().count() >= n || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn cluster_history_is_pruned_by_age_and_by_runs_per_entry() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    cronctl(&pg, &["paused"]); // makes the tables
    // e1: 20 runs three hours ago and older; e2: 20 runs within the last hour; e3: one run of
    // 40 days ago.
    pg.psql(
        "INSERT INTO crond_runs (cluster, owner, entry, minute, host, session)
         SELECT 'c', 'root', 'e1', date_trunc('minute', now()) - interval '3 hours'
                - make_interval(mins => k), 'h', 1 FROM generate_series(0, 19) k;
         INSERT INTO crond_runs (cluster, owner, entry, minute, host, session)
         SELECT 'c', 'root', 'e2', date_trunc('minute', now()) - make_interval(mins => k), 'h', 1
         FROM generate_series(0, 19) k;
         INSERT INTO crond_runs (cluster, owner, entry, minute, host, session)
         VALUES ('c', 'root', 'e3', now() - interval '40 days', 'h', 1);
         INSERT INTO crond_hosts (host, session, lease_until) VALUES
             ('gone', 1, now() - interval '40 days'), ('away', 2, now() - interval '1 day');
         INSERT INTO crond_entries (cluster, owner, entry, host, place, command)
         SELECT 'c', 'root', 'e1', h, 'tab:1', 'x' FROM unnest('{gone,away,never}'::text[]) h;",
    );
    let mut helper = Command::new(cronctl_bin())
        .args([
            "helper",
            "--db",
            &pg.conninfo(),
            "--host",
            "h1",
            "--keep-runs",
            "10",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("cronctl helper");
    // It prunes as soon as it is connected; its lines go to the daemon (here: us).
    let stdout = helper.stdout.take().expect("stdout");
    let line = std::io::BufRead::lines(std::io::BufReader::new(stdout))
        .map(|l| l.expect("a line"))
        .find(|l| l.contains("pruned"))
        .expect("a prune line");
    drop(helper.stdin.take());
    helper.wait().expect("helper exits at the end of its input");
    assert!(line.contains("pruned%2011%20runs"), "{line}");
    let left = pg.psql("SELECT entry, count(*) FROM crond_runs GROUP BY entry ORDER BY entry");
    assert_eq!(
        left.trim(),
        "e1|10\ne2|20",
        "the newest 10 of e1, all of the recent e2"
    );
    // The entries of a host whose lease ended past the keep time (or of no host) go with it.
    let hosts = pg.psql("SELECT host FROM crond_entries ORDER BY host");
    assert_eq!(hosts.trim(), "away");
}

#[test]
fn the_helper_makes_its_hosts_rows_the_daemons_last_list_of_entries() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let mut helper = Command::new(cronctl_bin())
        .args(["helper", "--db", &pg.conninfo(), "--host", "h1"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("cronctl helper");
    let stdout = helper.stdout.take().expect("stdout");
    let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
    assert!(
        lines
            .next()
            .expect("a line")
            .expect("UTF-8")
            .contains("connected")
    );
    let mut stdin = helper.stdin.take().expect("stdin");
    let rows = "SELECT owner || ' ' || entry || ' ' || place || ' ' || command \
                FROM crond_entries WHERE host = 'h1' ORDER BY entry";
    std::io::Write::write_all(
        &mut stdin,
        b"ENTRY web al%20ice 00000000000000a1 never tab:1 echo%20one\n\
          ENTRY web bob 00000000000000b2 never tab:2 echo%20two\nLOADED 2 0\n",
    )
    .expect("write");
    wait_for_value(
        &pg,
        &format!("SELECT string_agg(r, ';') FROM ({rows}) AS t(r)"),
        "al ice 00000000000000a1 tab:1 echo one;bob 00000000000000b2 tab:2 echo two",
        10,
    );
    // The next load moved one entry and dropped the other.
    std::io::Write::write_all(
        &mut stdin,
        b"ENTRY web bob 00000000000000b2 never tab:5 echo%20two\nLOADED 1 0\n",
    )
    .expect("write");
    wait_for_value(
        &pg,
        &format!("SELECT string_agg(r, ';') FROM ({rows}) AS t(r)"),
        "bob 00000000000000b2 tab:5 echo two",
        10,
    );
    drop(stdin);
    helper.wait().expect("helper exits at the end of its input");
}

/// The slots `ran` records, sorted.
fn slots_ran(ran: &Path) -> Vec<u32> {
    let mut slots: Vec<u32> = fs::read_to_string(ran)
        .unwrap_or_default()
        .lines()
        .map(|l| l.trim().parse().expect("a slot number"))
        .collect();
    slots.sort_unstable();
    slots
}

#[test]
fn the_helper_keeps_claiming_when_the_server_ends_its_idle_sessions() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    // Every session idle for 50 ms (real time) is ended by the server: the helper's between
    // two of its calls (with a 5 s lease it renews every 5/3 fake seconds, 170 ms real).
    pg.psql("ALTER SYSTEM SET idle_session_timeout = '50ms'");
    pg.psql("SELECT pg_reload_conf()");
    let out = shared_out();
    let ran = out.path().join("ran");
    let mut crontab = String::from("CRON_CLUSTER=idle\n");
    for m in 1..=4 {
        crontab.push_str(&format!("{m} 10 * * * echo {m} >> {}\n", ran.display()));
    }
    let mut host = Host::new("host-a", &crontab);
    let base = Instant::now();
    host.start(&pg, &fake_now(base));
    // 10:04 is at t = 19; the session the helper started with is long gone by then.
    sleep_until(base, 21.0);
    host.wait_for_jobs(30);
    assert_eq!(slots_ran(&ran), [1, 2, 3, 4]);
    let log = host.crond().log_text();
    assert!(!log.contains("not run"), "{log}");
    assert!(
        pg.log()
            .contains("terminating connection due to idle-session timeout"),
        "the server never ended a session:\n{}",
        pg.log()
    );
    assert_eq!(
        pg.psql("SELECT count(*) FILTER (WHERE started IS NOT NULL) FROM crond_runs")
            .trim(),
        "4"
    );
}

#[test]
fn two_hosts_claim_through_pgbouncer_in_transaction_mode_sharing_one_server_connection() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    // pgbouncer passes no startup options: the role carries the statement timeout instead.
    pg.psql("ALTER ROLE crond_test SET statement_timeout = '5s'");
    let bouncer = PgBouncer::start(&pg, 1, true);
    let out = shared_out();
    let ran = out.path().join("ran");
    // 60 slots: entry k runs at 10:0m, m = 1 + k / 20.
    let mut crontab = String::from("CRON_CLUSTER=pooled\n");
    for k in 0..60 {
        crontab.push_str(&format!(
            "{} 10 * * * echo {k} >> {}\n",
            1 + k / 20,
            ran.display()
        ));
    }
    let mut hosts: Vec<Host> = ["host-a", "host-b"]
        .iter()
        .map(|name| Host::new(name, &crontab))
        .collect();
    let base = Instant::now();
    for host in &mut hosts {
        host.start_on(&bouncer.conninfo(), &fake_now(base));
    }
    // 10:03 is at t = 13.
    sleep_until(base, 15.0);
    for host in &hosts {
        host.wait_for_jobs(30);
    }
    assert_eq!(slots_ran(&ran), (0..60).collect::<Vec<u32>>());
    assert_eq!(
        pg.psql("SELECT count(*), count(started), count(DISTINCT host) FROM crond_runs")
            .trim(),
        "60|60|2",
        "each run claimed and started once, the runs spread over both hosts"
    );
    // One server connection served both helpers (and the daemons' statements ran on it).
    let sessions = pg.psql(
        "SELECT count(*) FROM pg_stat_activity WHERE usename = 'crond_test' AND backend_type = 'client backend'",
    );
    assert_eq!(sessions.trim(), "1", "{}", bouncer.log());
    for host in &hosts {
        let log = host.crond().log_text();
        assert!(!log.contains("not run"), "{log}");
    }
    // cronctl through it: the schema batch (an advisory lock in one transaction) and a query.
    let output = Command::new(cronctl_bin())
        .args(["--db", &bouncer.conninfo(), "history", "--limit", "1"])
        .output()
        .expect("run cronctl");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // A pgbouncer that refuses the startup option: the refusal says what to do.
    let strict = PgBouncer::start(&pg, 1, false);
    let output = Command::new(cronctl_bin())
        .args(["--db", &strict.conninfo(), "hosts"])
        .output()
        .expect("run cronctl");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("unsupported startup parameter: options")
            && stderr.contains("ignore_startup_parameters = options"),
        "{stderr}"
    );
}

/// `cronctl --db … ARGS` as a user sees it: the command line, what it printed, and its exit
/// status when it is not 0.
fn transcript(pg: &PgServer, args: &[&str]) -> String {
    let output = Command::new(cronctl_bin())
        .arg("--db")
        .arg(pg.conninfo())
        .args(args)
        .output()
        .expect("cronctl");
    let mut text = format!("$ cronctl {}\n", args.join(" "));
    text.push_str(&String::from_utf8_lossy(&output.stdout));
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    if let Some(code) = output.status.code().filter(|c| *c != 0) {
        text.push_str(&format!("(exit status {code})\n"));
    }
    text
}

/// Every `YYYY-MM-DDTHH:MM:SSZ` in `text` as that pattern (same width: columns stay aligned).
fn scrub_times(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        let shape = b"dddd-dd-ddTdd:dd:ddZ";
        let is_time = bytes.len() - i >= shape.len()
            && shape.iter().zip(&bytes[i..]).all(|(s, b)| match s {
                b'd' => b.is_ascii_digit(),
                s => s == b,
            });
        if is_time {
            out.push_str("YYYY-MM-DDTHH:MM:SSZ");
            i += shape.len();
        } else {
            let c = text[i..].chars().next().expect("a char");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// Polls `sql` (one value) until it is `want`, for up to `secs` seconds.
fn wait_for_value(pg: &PgServer, sql: &str, want: &str, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let got = pg.psql(sql);
        if got.trim() == want {
            return;
        }
        assert!(Instant::now() < deadline, "{sql}: {got:?}, not {want}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn cronctl_shows_each_entry_where_it_is_written_and_pause_names_what_it_paused() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    // A name of fixed length, so that the scrubbed tables keep their columns.
    let out = tempfile::Builder::new()
        .prefix("crond-view-")
        .tempdir_in("/tmp")
        .expect("tempdir");
    let dir = out.path().display().to_string();
    let wait = format!("while [ ! -e {dir}/go ]; do sleep 1; done");
    let report = "/usr/local/bin/nightly-report --all-regions --summary-to=/var/lib/reports/summary.txt --quiet";
    let crontab = format!("CRON_CLUSTER=web\n1 10 * * * {wait}\n0 4 * * * {report}\n");
    // node-2's file has a comment more: the same entries, a line lower.
    let mut node2 = Host::new("node-2", &format!("# node-2\n{crontab}"));
    let mut node1 = Host::new("node-1", &crontab);
    let (id_wait, id_report) = (
        entry_id(&node1.tree.spool().join("root"), &wait),
        entry_id(&node1.tree.spool().join("root"), report),
    );
    // node-2 lists its entries and goes (its lease given back) before 10:01.
    node2.start(&pg, "2026-11-21 09:58:00");
    let count = "SELECT count(*) FROM crond_entries WHERE host = ";
    wait_for_value(&pg, &format!("{count}'node-2'"), "2", 20);
    node2.kill(false);
    node1.start(&pg, START);
    wait_for_value(&pg, &format!("{count}'node-1'"), "2", 20);
    // The 10:01 run, claimed and running on node-1 until `go`.
    let started = format!(
        "SELECT count(*) FROM crond_runs WHERE entry = '{id_wait}' AND started IS NOT NULL"
    );
    wait_for_value(&pg, &started, "1", 20);
    let scrub = |text: &str| {
        scrub_times(
            &Scrub::new()
                .replace(&id_wait, "<ID-WAIT>_______")
                .replace(&id_report, "<ID-REPORT>_____")
                .replace(&dir, "/tmp/crond-view-OUTDIR")
                .apply(text),
        )
    };
    let shown = |files: &[(&str, &[&[&str]])]| {
        for (name, commands) in files {
            let text: String = commands.iter().map(|args| transcript(&pg, args)).collect();
            assert_golden(name, &scrub(&text));
        }
    };
    let unknown = "0123456789abcdef";
    shown(&[
        (
            "cronctl-entries.txt",
            &[&["entries"], &["entries", "--wide"]],
        ),
        ("cronctl-claims.txt", &[&["claims"], &["claims", "--wide"]]),
        (
            "cronctl-pause.txt",
            &[
                &["pause", "web", "root", unknown],
                &["pause", "--force", "web", "root", unknown],
                &["pause", "web", "root", &id_report],
                &["paused"],
                &["resume", "web", "root", &id_report],
                &["resume", "web", "root", &id_report],
            ],
        ),
    ]);
    fs::write(out.path().join("go"), "").expect("go");
    let ended =
        format!("SELECT count(*) FROM crond_runs WHERE entry = '{id_wait}' AND ended IS NOT NULL");
    wait_for_value(&pg, &ended, "1", 20);
    shown(&[(
        "cronctl-history.txt",
        &[&["history"], &["history", "--wide"]],
    )]);
}

/// The user `user` running `program ARGS` (setpriv, as a container's user would).
fn as_user(user: &str, program: &str) -> Command {
    let mut command = Command::new("setpriv");
    command
        .arg(format!("--reuid={user}"))
        .arg(format!("--regid={user}"))
        .args(["--init-groups", program]);
    command
}

#[test]
fn a_crontab_daemons_claims_carry_the_id_cronnext_prints_as_the_daemons_user() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    let user = TestUser::create("cl", &[]);
    let tree = Tree::new();
    let own_dir = |name: &str| {
        let path = tree.path().join(name);
        fs::create_dir(&path).expect("mkdir");
        fs::set_permissions(&path, fs::Permissions::from_mode(0o700)).expect("chmod");
        chown(&path, &user.name);
        path
    };
    let (runtime, state) = (own_dir("runtime"), own_dir("state"));
    let ran = tree.out("ran");
    let file = tree.path().join("crontab");
    let command = format!("echo ran >> {}", ran.display());
    tree.write_file(
        &file,
        &format!("CRON_CLUSTER=web\n* * * * * {command}\n"),
        0o644,
    );
    chown(&file, &user.name);
    let mut daemon = as_user(&user.name, "env");
    daemon
        .arg(format!("LD_PRELOAD={FAKETIME_LIB}"))
        .arg(env!("CARGO_BIN_EXE_crond"))
        .args(["-f", "--log", "stderr", "--crontab"])
        .arg(&file)
        .arg("--state-dir")
        .arg(&state)
        .args(["--cluster-db", &pg.conninfo(), "--cluster-host", "box-1"])
        .args(["--cluster-helper", cronctl_bin()])
        .env("FAKETIME", format!("@{START} x10"))
        .env("FAKETIME_DONT_RESET", "1")
        .env("TZ", "UTC")
        .env("XDG_RUNTIME_DIR", &runtime);
    let crond = Crond::spawn(&mut daemon, tree.log_file(1));
    crond.wait_for_log("connected to the database", 20);
    wait_for_file(&ran, 30);
    // cronnext, run as the daemon's user, names the entry as the daemon does.
    let printed = as_user(&user.name, env!("CARGO_BIN_EXE_cronnext"))
        .arg(&file)
        .output()
        .expect("cronnext");
    let text = String::from_utf8_lossy(&printed.stdout);
    let id = text
        .lines()
        .find(|l| l.ends_with(&command))
        .and_then(|l| l.split(" id=").nth(1))
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no id in {text}"));
    let claims = pg.psql("SELECT DISTINCT owner || ' ' || entry FROM crond_runs");
    assert_eq!(claims.trim(), format!("{} {id}", user.name), "{text}");
    let listed = pg.psql("SELECT owner || ' ' || entry || ' ' || place FROM crond_entries");
    assert_eq!(
        listed.trim(),
        format!("{} {id} {}:2", user.name, file.display())
    );
}

/// A fake start 30 s (3 s real) before 10:01: time for both hosts to connect first.
const LATER_START: &str = "2026-11-21 10:00:30";

/// What became of a minute's `n` numbered runs (see [`numbered_crontab`]).
#[derive(Debug, Default)]
struct Tally {
    /// Slots that ran at least once.
    ran: usize,
    /// Slots that ran more than once.
    twice: Vec<usize>,
    /// Slots that ran nowhere, counted by the reason a host recorded (`claim-lost: words`).
    not_run: BTreeMap<String, usize>,
    /// Slots that ran nowhere and that no host recorded.
    unaccounted: Vec<usize>,
    /// Seconds (the hosts' time) from the minute's start to the last start in `crond_runs`.
    last_start_s: f64,
}

/// The slot number of a command `echo K >> $OUT`.
fn slot_of(command: &str) -> Option<usize> {
    command
        .strip_prefix("echo ")?
        .split(' ')
        .next()?
        .parse()
        .ok()
}

/// Counts the runs: from the jobs' files, the hosts' own records of runs they did not start,
/// and the start times in `db`'s `crond_runs`; `minute` is when (real) the minute began.
fn tally(db: &PgServer, hosts: &[&Host], files: &[&Path], n: usize, minute: SystemTime) -> Tally {
    let mut seen = vec![0; n];
    for k in files.iter().flat_map(|f| numbers(f)) {
        seen[k] += 1;
    }
    let mut reasons: HashMap<usize, String> = HashMap::new();
    for host in hosts {
        let socket = host.tree.pid_file().with_file_name("crond.sock");
        let list = history_json(&host.tree, &["--limit", "1000"]);
        assert!(socket.exists());
        for v in list {
            let (Some(k), Some(reason)) = (
                slot_of(v["command"].as_str().unwrap_or("")),
                v["reason"].as_str(),
            ) else {
                continue;
            };
            if reason != "other-host" {
                let words = v["words"].as_str().unwrap_or("");
                // The database's own words vary (the error of the moment): the first clause.
                let words = words.split(" (").next().unwrap_or(words);
                reasons.insert(k, format!("{reason}: {words}"));
            }
        }
    }
    let mut t = Tally::default();
    for (k, &count) in seen.iter().enumerate() {
        match (count, reasons.get(&k)) {
            (0, Some(why)) => *t.not_run.entry(why.clone()).or_default() += 1,
            (0, None) => t.unaccounted.push(k),
            (c, _) => {
                t.ran += 1;
                if c > 1 {
                    t.twice.push(k);
                }
            }
        }
    }
    let last =
        db.psql("SELECT coalesce(max(extract(epoch from started)), 0)::float8 FROM crond_runs");
    let minute_s = minute
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64();
    t.last_start_s = (last.trim().parse::<f64>().unwrap_or(0.0) - minute_s).max(0.0) * 10.0;
    t
}

/// Polls [`tally`] until every slot ran or has a recorded reason, or `secs` (real) pass.
fn settled_tally(
    db: &PgServer,
    hosts: &[&Host],
    files: &[&Path],
    n: usize,
    minute: SystemTime,
    secs: u64,
) -> Tally {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let t = tally(db, hosts, files, n, minute);
        if t.unaccounted.is_empty() || Instant::now() > deadline {
            return t;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The figures, in the test's output (`--nocapture`), for docs/cluster.md.
#[allow(clippy::print_stderr)]
fn report(what: &str, t: &Tally, n: usize) {
    eprintln!(
        "{what}: {} of {n} ran, twice {:?}, not run {:?}, unaccounted {:?}, last start {:.1} s \
         after the minute",
        t.ran, t.twice, t.not_run, t.unaccounted, t.last_start_s
    );
}

/// Two hosts on `conninfo`, each with `n` cluster entries of 10:01 that write their number to
/// `a` or `b` in the directory returned, started 3 s (real) before that minute, which is
/// returned as a wall-clock time.
fn two_hosts_with_numbered_runs(
    conninfo: &str,
    n: usize,
) -> (tempfile::TempDir, Vec<Host>, SystemTime) {
    let out = shared_out();
    let mut hosts = vec![
        Host::new("node-a", &numbered_crontab(&out.path().join("a"), n)),
        Host::new("node-b", &numbered_crontab(&out.path().join("b"), n)),
    ];
    let (base, wall) = (Instant::now(), SystemTime::now());
    for host in &mut hosts {
        host.start_on(conninfo, &fake_since(LATER_START, base));
    }
    (out, hosts, wall + Duration::from_secs(3))
}

#[test]
fn a_database_restart_while_a_minutes_runs_are_claimed_runs_none_twice_and_loses_none_unsaid() {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let pg = PgServer::start();
    // The server's default (the fixture turns it off for speed): a commit the server
    // acknowledged survives the immediate stop below.
    pg.commit_durably();
    let n = 300;
    let (out, hosts, minute) = two_hosts_with_numbered_runs(&pg.conninfo(), n);
    let files = [out.path().join("a"), out.path().join("b")];
    let paths = [files[0].as_path(), files[1].as_path()];
    // Once the first runs have started, the server stops at once (its sessions cut mid-claim)
    // and starts again half a second (real; 5 s of the hosts' time) later.
    let before: usize = wait_for_numbers(&paths, 10, 30).iter().map(Vec::len).sum();
    pg.stop();
    std::thread::sleep(Duration::from_millis(500));
    pg.start_again();
    assert!(before < n, "all {before} runs started before the stop");
    // Every run is answered within 2 minutes of the hosts' time (12 s real).
    let host_refs: Vec<&Host> = hosts.iter().collect();
    settled_tally(&pg, &host_refs, &paths, n, minute, 20);
    for host in &hosts {
        host.wait_for_jobs(30);
    }
    let t = tally(&pg, &host_refs, &paths, n, minute);
    report("database restart mid-minute", &t, n);
    assert!(t.twice.is_empty(), "{t:?}");
    assert!(t.unaccounted.is_empty(), "{t:?}");
    assert!(t.ran >= before, "{t:?}");
}

/// Two hosts on a primary and its streaming standby (`host=P,S port=p,s
/// target_session_attrs=read-write`); once a minute's first runs have started, the primary
/// stops at once and the standby is promoted. With `synchronous`, every commit waited for the
/// standby. What became of the runs, counted on the promoted standby.
fn failover(synchronous: bool) -> Tally {
    require_root();
    let _one_at_a_time = one_at_a_time();
    let primary = PgServer::start();
    let standby = PgServer::start_standby_of(&primary);
    if synchronous {
        primary.replicate_synchronously();
    } else {
        primary.commit_durably();
    }
    let conninfo = format!(
        "host={},{} port={},{} dbname=crond user=postgres target_session_attrs=read-write",
        primary.socket_dir().display(),
        standby.socket_dir().display(),
        primary.port(),
        standby.port()
    );
    let n = 300;
    let (out, hosts, minute) = two_hosts_with_numbered_runs(&conninfo, n);
    let files = [out.path().join("a"), out.path().join("b")];
    let paths = [files[0].as_path(), files[1].as_path()];
    let before: usize = wait_for_numbers(&paths, 10, 30).iter().map(Vec::len).sum();
    primary.stop();
    standby.promote();
    let promoted = standby.psql("SELECT now()");
    assert!(before < n, "all {before} runs started before the failover");
    let host_refs: Vec<&Host> = hosts.iter().collect();
    settled_tally(&standby, &host_refs, &paths, n, minute, 20);
    for host in &hosts {
        host.wait_for_jobs(30);
    }
    // Both helpers found the promoted standby (a session ended while idle is opened again
    // there without a word in the log): each renews its lease there, to 5 s past the server's
    // now, which a lease written on the primary before it stopped can't reach.
    let leases = format!(
        "SELECT count(*) FROM crond_hosts WHERE lease_until > '{}'::timestamptz + interval '5 s'",
        promoted.trim()
    );
    wait_for_value(&standby, &leases, "2", 20);
    tally(&standby, &host_refs, &paths, n, minute)
}

#[test]
fn a_primary_lost_mid_minute_fails_over_to_its_synchronous_standby_running_none_twice() {
    let t = failover(true);
    report("failover, synchronous standby", &t, 300);
    assert!(t.twice.is_empty(), "{t:?}");
    assert!(t.unaccounted.is_empty(), "{t:?}");
}

/// The cost of asynchronous replication, measured (`--ignored --nocapture`): a start the old
/// primary acknowledged and never sent is claimed again on the promoted standby.
#[test]
#[ignore = "a measurement: runs may start twice by design"]
fn a_primary_lost_mid_minute_fails_over_to_an_asynchronous_standby() {
    let t = failover(false);
    report("failover, asynchronous standby", &t, 300);
}
