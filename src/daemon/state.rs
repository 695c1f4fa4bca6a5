//! The daemon's state and its loop: sources and their entries, the agenda, the job queue, the
//! running jobs, and the descriptors it polls.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::running::Running;
use super::{Error, Options};
use crate::crontab::Crontab;
use crate::database::{self, Outcome, Paths, Rules, SourceKey};
use crate::job::{self, ChildSetup, JobSpec, MailSetup, OutputTo};
use crate::joblog::LogLevel;
use crate::log::{Level, Log, text};
use crate::mail;
use crate::queue::Queue;
use crate::schedule::{self, When, Zone};
use crate::sys::fs::{FileKind, PidLock};
use crate::sys::inotify::{Change, WatchId, Watcher};
use crate::sys::process;
use crate::sys::signal::SignalPipe;
use crate::sys::timer::{MinuteTimer, Tick};
use crate::timeline::{Agenda, EntryId, Movement, UtcMinute};

/// Jobs started between two looks at signals and events.
const START_BATCH: usize = 64;

/// What a watched directory holds.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Role {
    Spool,
    CronD,
    /// The directory of /etc/crontab; the file's name.
    SystemCrontab(OsString),
    /// The directory of /etc/localtime; its name.
    LocalTime(OsString),
}

#[derive(Debug, Default)]
struct Source {
    entries: Vec<EntryId>,
    mtime_ns: i128,
}

pub(super) struct Daemon {
    options: Options,
    paths: Paths,
    rules: Rules,
    log: Log,
    _lock: PidLock,
    agenda: Agenda,
    sources: BTreeMap<SourceKey, Source>,
    /// The job each agenda entry starts.
    jobs: HashMap<EntryId, Arc<JobSpec>>,
    /// Refused, orphaned or unreadable sources and why (as logged): looked at again every
    /// minute, logged again only when the reason changes.
    recheck: BTreeMap<SourceKey, String>,
    queue: Queue<(Option<EntryId>, Arc<JobSpec>)>,
    /// Running job children, by pid and by entry.
    running: Running,
    signals: SignalPipe,
    timer: MinuteTimer,
    watcher: Option<Watcher>,
    watches: HashMap<WatchId, Vec<Role>>,
    setup: ChildSetup,
    /// cronie's RANDOM_DELAY scale, in [0, 1), drawn once per daemon start.
    delay_factor: f64,
}

fn now() -> Timestamp {
    Timestamp::now()
}

/// cronie's RANDOM_DELAY factor: one draw per daemon start, so every job of a host with the
/// same RANDOM_DELAY starts the same time after its minute, and different hosts spread out.
fn random_delay_factor() -> f64 {
    let mut bytes = [0u8; 8];
    let drawn = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes));
    let bits = match drawn {
        Ok(()) => u64::from_le_bytes(bytes),
        // No /dev/urandom: the clock's nanoseconds still differ between hosts.
        Err(_) => now().as_nanosecond() as u64 ^ u64::from(std::process::id()),
    };
    (bits >> 11) as f64 / (1u64 << 53) as f64
}

/// RANDOM_DELAY minutes times the factor, in whole seconds.
fn scaled_delay(minutes: u32, factor: f64) -> u32 {
    (f64::from(minutes) * 60.0 * factor) as u32
}

fn local_zone() -> Zone {
    let tz = TimeZone::system();
    let name = tz.iana_name().unwrap_or("localtime").to_string();
    Zone::new(&name, tz)
}

impl Daemon {
    pub(super) fn start(options: Options, log: Log, lock: PidLock) -> Result<Daemon, Error> {
        let paths = options.paths();
        let rules = Rules {
            permit_any_mode: options.permit_any_mode,
            lsb_names: options.lsb_names,
            seed: schedule::host_seed(&crate::sys::hostname()),
        };
        let signals = SignalPipe::install().map_err(|e| Error::Io("signal handlers", e))?;
        let timer = MinuteTimer::new().map_err(|e| Error::Io("timerfd", e))?;
        let handled = UtcMinute::containing(now().as_second());
        let setup = ChildSetup {
            log,
            // Debian's mask is a byte; higher bits mean nothing.
            log_level: options
                .log_level
                .map_or(LogLevel::default(), |l| LogLevel((l & 0xff) as u8)),
            inherited_path: if options.inherit_path {
                std::env::var_os("PATH")
            } else {
                None
            },
            output: if options.output_to_syslog {
                OutputTo::Syslog
            } else {
                OutputTo::Mail(MailSetup {
                    command: options.mail_command(),
                    full_host: options.fqdn_in_subject,
                    charset: mail::charset_from_env(),
                })
            },
        };
        let mut daemon = Daemon {
            paths,
            rules,
            log,
            _lock: lock,
            agenda: Agenda::new(handled, local_zone()),
            sources: BTreeMap::new(),
            jobs: HashMap::new(),
            recheck: BTreeMap::new(),
            queue: Queue::default(),
            running: Running::default(),
            signals,
            timer,
            watcher: None,
            watches: HashMap::new(),
            setup,
            delay_factor: random_delay_factor(),
            options,
        };
        daemon.log.info(
            "CRON",
            "INFO",
            &format!(
                "RANDOM_DELAY will be scaled with factor {}% if used.",
                (daemon.delay_factor * 100.0) as u32
            ),
        );
        daemon.watch();
        let reboot = daemon.load_all(false);
        daemon.log.info(
            "CRON",
            "INFO",
            &format!(
                "{} entries loaded from {} files",
                daemon.agenda.len(),
                daemon.sources.len()
            ),
        );
        daemon.reboot(reboot);
        daemon.arm();
        // systemd's Type=notify: ready once every crontab is loaded (a no-op without systemd).
        let status = format!(
            "{} entries from {} files",
            daemon.agenda.len(),
            daemon.sources.len()
        );
        if let Err(e) = crate::sys::notify::notify(&format!(
            "READY=1\n{}",
            crate::sys::notify::status_message(&status)
        )) {
            daemon
                .log
                .event(Level::Error, "CRON", "ERROR", &format!("sd_notify: {e}"));
        }
        Ok(daemon)
    }

    /// Sets up inotify, or says why the daemon falls back to checking every minute.
    fn watch(&mut self) {
        if self.options.no_inotify {
            self.log.info(
                "CRON",
                "INFO",
                "inotify disabled (-i): checking files every minute",
            );
            return;
        }
        let watcher = match Watcher::new() {
            Ok(w) => w,
            Err(e) => {
                self.log.info(
                    "CRON",
                    "INFO",
                    &format!("inotify unavailable ({e}): checking files every minute"),
                );
                return;
            }
        };
        let dir_of = |p: &Path| -> (PathBuf, OsString) {
            (
                p.parent()
                    .filter(|d| !d.as_os_str().is_empty())
                    .map_or_else(|| PathBuf::from("/"), Path::to_path_buf),
                p.file_name().map(OsString::from).unwrap_or_default(),
            )
        };
        let (crontab_dir, crontab_name) = dir_of(&self.paths.system_crontab);
        let (tz_dir, tz_name) = dir_of(Path::new(crate::paths::LOCALTIME));
        let wanted = [
            (self.paths.spool_dir.clone(), Role::Spool, true),
            (self.paths.cron_d.clone(), Role::CronD, true),
            (crontab_dir, Role::SystemCrontab(crontab_name), true),
            (tz_dir, Role::LocalTime(tz_name), false),
        ];
        let mut watches: HashMap<WatchId, Vec<Role>> = HashMap::new();
        for (dir, role, needed) in wanted {
            match watcher.watch_dir(&dir) {
                Ok(id) => watches.entry(id).or_default().push(role),
                Err(e) if needed => {
                    self.log.info(
                        "CRON",
                        "INFO",
                        &format!(
                            "can't watch {} ({e}): checking files every minute",
                            dir.display()
                        ),
                    );
                    return;
                }
                Err(_) => {}
            }
        }
        self.log
            .info("CRON", "INFO", "running with inotify support");
        self.watcher = Some(watcher);
        self.watches = watches;
    }

    /// Loads every source; returns the @reboot jobs found.
    fn load_all(&mut self, announce: bool) -> Vec<Arc<JobSpec>> {
        let (keys, errors) = database::list_sources(&self.paths, &self.rules);
        for (dir, e) in errors {
            self.log.error(
                "CRON",
                "ERROR",
                &format!("can't read {}: {e}", dir.display()),
            );
        }
        let present: BTreeSet<SourceKey> = keys.iter().cloned().collect();
        let gone: Vec<SourceKey> = self
            .sources
            .keys()
            .chain(self.recheck.keys())
            .filter(|k| !present.contains(k))
            .cloned()
            .collect();
        let mut reboot = Vec::new();
        for key in gone.into_iter().chain(keys) {
            reboot.extend(self.reload(&key, announce));
        }
        reboot
    }

    /// Replaces one source's entries with what its file says now. Returns its @reboot jobs.
    fn reload(&mut self, key: &SourceKey, announce: bool) -> Vec<Arc<JobSpec>> {
        if let Some(old) = self.sources.remove(key) {
            for id in old.entries {
                self.agenda.remove(id);
                self.jobs.remove(&id);
            }
        }
        let who = key.who();
        let tab = key.tab_name(&self.paths);
        let (level, event, detail) = match database::load(key, &self.paths, &self.rules) {
            Outcome::Loaded {
                crontab, mtime_ns, ..
            } => {
                self.recheck.remove(key);
                if announce {
                    self.log.info(&who, "RELOAD", &tab);
                }
                return self.install(key, crontab, mtime_ns);
            }
            Outcome::Missing => {
                self.recheck.remove(key);
                return Vec::new();
            }
            Outcome::Refused(refusal) => (Level::Warning, refusal.to_string(), tab),
            // Rechecked every minute: passwd may come back (LDAP).
            Outcome::Orphan => (
                Level::Info,
                "ORPHAN".to_string(),
                "no passwd entry".to_string(),
            ),
            Outcome::Failed(e) => (
                Level::Error,
                "ERROR".to_string(),
                format!("can't read {tab}: {e}"),
            ),
        };
        let reason = format!("{event} ({detail})");
        if self.recheck.get(key) != Some(&reason) {
            self.log.event(level, &who, &event, &detail);
            self.recheck.insert(key.clone(), reason);
        }
        Vec::new()
    }

    fn install(&mut self, key: &SourceKey, crontab: Crontab, mtime_ns: i128) -> Vec<Arc<JobSpec>> {
        let path = key.path(&self.paths).display().to_string();
        let who = key.who();
        for d in &crontab.errors {
            self.log
                .event(Level::Error, &who, "ERROR", &d.in_file(&path).to_string());
        }
        for d in &crontab.warnings {
            self.log.event(
                Level::Warning,
                &who,
                "WARNING",
                &d.in_file(&path).to_string(),
            );
        }
        let mut source = Source {
            entries: Vec::new(),
            mtime_ns,
        };
        let mut reboot = Vec::new();
        for entry in crontab.entries {
            let user = match (key.owner_name(), &entry.user) {
                (Some(owner), _) => owner.to_vec(),
                (None, Some(user)) => user.clone(),
                (None, None) => continue,
            };
            let spec = Arc::new(JobSpec {
                user,
                command: entry.command.clone(),
                env: Arc::clone(&entry.env),
                delay_seconds: scaled_delay(entry.random_delay, self.delay_factor),
            });
            match entry.when {
                When::Reboot => reboot.push(spec),
                When::Periodic(schedule) => {
                    let id = self.agenda.insert(schedule, entry.zone.clone());
                    self.jobs.insert(id, spec);
                    source.entries.push(id);
                }
            }
        }
        self.sources.insert(key.clone(), source);
        reboot
    }

    /// @reboot: once per boot, marked by a file under /run (Debian).
    fn reboot(&mut self, jobs: Vec<Arc<JobSpec>>) {
        let marker = self.options.reboot_marker();
        match crate::sys::fs::create_marker(&marker) {
            Ok(true) => {
                self.log.info("CRON", "INFO", "Running @reboot jobs");
                let minute = UtcMinute::containing(now().as_second());
                for job in jobs {
                    self.queue.push((None, job), minute);
                }
            }
            Ok(false) => self.log.info(
                "CRON",
                "INFO",
                "Skipping @reboot jobs -- not system startup",
            ),
            Err(e) => self.log.error(
                "CRON",
                "ERROR",
                &format!(
                    "can't create {} ({e}): @reboot jobs not run",
                    marker.display()
                ),
            ),
        }
    }

    /// Arms the timer at the next minute something is due (or the next minute, when there is
    /// a backlog or files to look at every minute).
    fn arm(&mut self) {
        let now_minute = UtcMinute::containing(now().as_second());
        let every_minute =
            !self.queue.is_empty() || self.watcher.is_none() || !self.recheck.is_empty();
        let mut target = self.agenda.next_due();
        if every_minute {
            let next = now_minute.plus(1);
            target = Some(target.map_or(next, |t| t.min(next)));
        }
        // Nothing due at all: still wake hourly, so that a clock step is noticed.
        let target = target.unwrap_or(now_minute.plus(60));
        if let Err(e) = self.timer.arm_at(target.start_second()) {
            self.log
                .error("CRON", "ERROR", &format!("can't arm the timer: {e}"));
        }
    }

    pub(super) fn run(&mut self) -> Result<(), Error> {
        loop {
            self.start_due_jobs();
            let timeout = if self.queue.is_empty() { None } else { Some(0) };
            let ready = {
                let mut fds = vec![self.signals.fd(), self.timer.fd()];
                if let Some(w) = &self.watcher {
                    fds.push(w.fd());
                }
                crate::sys::poll::wait_readable(&fds, timeout).map_err(|e| Error::Io("poll", e))?
            };
            if ready[0] {
                let arrived = self.signals.drain();
                if arrived.child {
                    self.reap();
                }
                if arrived.terminate || arrived.interrupt {
                    self.log.info("CRON", "INFO", "Shutting down");
                    if self.running.len() > 0 {
                        self.log.info(
                            "CRON",
                            "INFO",
                            &format!(
                                "{} jobs still running; they finish on their own",
                                self.running.len()
                            ),
                        );
                    }
                    let _ = crate::sys::notify::stopping();
                    return Ok(());
                }
                if arrived.hangup {
                    self.log.reopen();
                    self.log
                        .info("CRON", "INFO", "SIGHUP: reloading every crontab");
                    self.load_all(true);
                    self.arm();
                }
            }
            if ready.get(2).copied().unwrap_or(false) {
                self.on_changes();
            }
            if ready[1] {
                match self.timer.read() {
                    Ok(Tick::Fired) => self.on_minute(false),
                    Ok(Tick::ClockChanged) => self.on_minute(true),
                    Ok(Tick::Nothing) => {}
                    Err(e) => return Err(Error::Io("timerfd read", e)),
                }
            }
        }
    }

    fn reap(&mut self) {
        // The job child logs its own end (it knows the command and the shell's status); the
        // daemon learns here which entry's job ended.
        for (pid, _exit) in process::reap() {
            self.running.ended(pid);
        }
    }

    /// A minute boundary (or a clock step): plan, queue, re-arm.
    fn on_minute(&mut self, clock_changed: bool) {
        let waiting = self.queue.end_cycle();
        if waiting > 0 {
            self.log.info(
                "CRON",
                "INFO",
                &format!("{waiting} jobs not started last minute: they start first now"),
            );
        }
        if self.watcher.is_none() {
            self.check_mtimes();
        }
        let recheck: Vec<SourceKey> = self.recheck.keys().cloned().collect();
        for key in recheck {
            self.reload(&key, true);
        }
        let minute = UtcMinute::containing(now().as_second());
        let (movement, runs) = self.agenda.advance(minute);
        match movement {
            Movement::Normal | Movement::Repeat => {}
            other => self.log.info(
                "CRON",
                "INFO",
                &format!(
                    "clock {}: {other:?}",
                    if clock_changed { "set" } else { "late" }
                ),
            ),
        }
        for run in runs {
            if let Some(job) = self.jobs.get(&run.entry) {
                self.queue
                    .push((Some(run.entry), Arc::clone(job)), run.minute);
            }
        }
        self.arm();
    }

    /// Starts queued jobs while this minute lasts, a batch at a time.
    fn start_due_jobs(&mut self) {
        let now_ms = now().as_millisecond();
        let deadline = (now_ms.div_euclid(60_000) + 1) * 60_000;
        for _ in 0..START_BATCH {
            let Some(queued) = self.queue.next(now_ms, deadline) else {
                break;
            };
            let (entry, spec) = &queued.job;
            match job::start(spec, &self.setup) {
                Ok(pid) => {
                    self.running.started(pid, *entry);
                }
                Err(e) => {
                    self.log.error(
                        &text(&spec.user),
                        "ERROR",
                        &format!("can't fork: {e}; retrying next minute"),
                    );
                    self.queue.put_back(queued);
                    break;
                }
            }
        }
        if self.queue.is_empty() {
            return;
        }
        // A backlog at the boundary is carried by the timer, armed for the next minute.
        self.arm();
    }

    fn on_changes(&mut self) {
        let changes: Vec<Change> = match self.watcher.as_ref().map(Watcher::read) {
            Some(Ok(changes)) => changes,
            Some(Err(e)) => {
                self.log
                    .error("CRON", "ERROR", &format!("inotify read failed: {e}"));
                return;
            }
            None => return,
        };
        let mut keys = BTreeSet::new();
        let mut rescan = false;
        let mut zone = false;
        for change in changes {
            if change.lost {
                rescan = true;
                continue;
            }
            let Some(name) = change.name else { continue };
            for role in self.watches.get(&change.watch).cloned().unwrap_or_default() {
                let key = match &role {
                    Role::Spool => database::key_for(name.clone(), true, &self.rules),
                    Role::CronD => database::key_for(name.clone(), false, &self.rules),
                    Role::SystemCrontab(file) if *file == name => Some(SourceKey::System),
                    Role::LocalTime(file) if *file == name => {
                        zone = true;
                        None
                    }
                    _ => None,
                };
                let Some(key) = key else { continue };
                // A bare create is a file still being written, unless it is a link (no
                // close-write will follow a symlink or a hard link).
                if change.created_only && !self.created_complete(&key) {
                    continue;
                }
                keys.insert(key);
            }
        }
        if zone {
            self.agenda.set_local_zone(local_zone());
            self.log.info("CRON", "INFO", "local time zone changed");
        }
        if rescan {
            self.log
                .info("CRON", "INFO", "lost a watch: checking files every minute");
            self.watcher = None;
            self.load_all(true);
        }
        for key in keys {
            self.reload(&key, true);
        }
        self.arm();
    }

    fn created_complete(&self, key: &SourceKey) -> bool {
        crate::sys::fs::link_facts(&key.path(&self.paths))
            .map(|f| f.kind != FileKind::Regular || f.links > 1)
            .unwrap_or(true)
    }

    /// Debian's check without inotify: reload what appeared, vanished or has a new mtime.
    fn check_mtimes(&mut self) {
        let (keys, _) = database::list_sources(&self.paths, &self.rules);
        let present: BTreeSet<SourceKey> = keys.iter().cloned().collect();
        let mut changed: Vec<SourceKey> = self
            .sources
            .keys()
            .filter(|k| !present.contains(k))
            .cloned()
            .collect();
        for key in keys {
            let known = self.sources.get(&key).map(|s| s.mtime_ns);
            if known.is_none() && self.recheck.contains_key(&key) {
                continue; // looked at every minute anyway
            }
            if known != database::mtime_ns(&key, &self.paths) || known.is_none() {
                changed.push(key);
            }
        }
        for key in changed {
            self.reload(&key, true);
        }
    }
}
