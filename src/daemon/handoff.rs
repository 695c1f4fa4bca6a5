//! What flows between the daemon's owners, through the reactor: a reload's [`Change`] (sources
//! → scheduler), a run that comes up ([`Run`], scheduler → cluster link), the link's answer
//! ([`Claim`], and [`Granted`] runs later: cluster link → scheduler), and what a launch did
//! ([`Launched`]: scheduler → cluster link, and → control socket for a run asked for there).
//! Plain data: no owner holds another's, and none calls another; the reactor passes these
//! from one to the next.

use crate::cluster::entry_id::EntryKey;
use crate::cluster::wire::RunKey;
use crate::database::entries::JobSpec;
use crate::schedule::{Schedule, Zone};
use crate::timeline::queue::Queued;
use crate::timeline::{Due, EntryId, UtcMinute};
use crate::types::Pid;

/// A run whose time has come: the job, its entry (`None`: @reboot) and its minute.
pub(super) type Run = Queued<Due<JobSpec>>;

/// What a reload of one crontab file asks of the scheduler.
#[derive(Debug, Default)]
pub(super) struct Change {
    /// Who the file is (`*system*…` or the user), and its name, for the scheduler's line.
    pub(super) who: Vec<u8>,
    pub(super) tab: String,
    /// The file's entries before the reload: they have not started a run since this load.
    pub(super) reset: Vec<EntryId>,
    /// Entries kept unchanged, whose job now points into the new text.
    pub(super) rebind: Vec<(EntryId, JobSpec)>,
    /// New entries, in the file's order: the scheduler answers with their ids, in this order.
    pub(super) add: Vec<NewEntry>,
    /// Entries the file no longer has (all of them when it is gone or refused): removed after
    /// the new ones are added.
    pub(super) remove: Vec<EntryId>,
    /// The file's @reboot jobs (run at start-up only).
    pub(super) reboot: Vec<JobSpec>,
}

/// An entry a reload adds.
#[derive(Debug)]
pub(super) enum NewEntry {
    Periodic {
        schedule: Schedule,
        zone: Option<Zone>,
        job: JobSpec,
        /// RANDOM_DELAY, scaled, in seconds.
        delay: u32,
    },
    Every {
        seconds: u32,
        job: JobSpec,
    },
}

/// A run's identity in the cluster, as the scheduler (which knows the entry's schedule)
/// tells the link: `None` for a run that is always local (@reboot, `@every`, no
/// `CRON_CLUSTER`).
pub(super) type ClusterEntry = Option<EntryKey>;

/// What the cluster link does with a run that comes up.
#[derive(Debug)]
pub(super) enum Claim {
    /// Not a cluster run: start it as any other.
    Local(Run),
    /// The database said this host runs it earlier, and its fork failed: start it again.
    Granted(Granted),
    /// Parked for the helper's answer (or refused, and logged).
    Taken,
}

/// A cluster run this host is to start; its key goes back with [`Launched`].
#[derive(Debug)]
pub(super) struct Granted {
    pub(super) run: Run,
    pub(super) key: RunKey,
}

/// What became of a run handed to the scheduler to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Launched {
    Started(Pid),
    /// Not started under CRON_OVERLAP: skipped (logged, counted).
    Skipped,
    /// Not started yet under CRON_OVERLAP=queue: it starts when the entry's running job ends
    /// (logged).
    Waiting,
    /// The fork failed: the run is back in line, first.
    Failed {
        entry: Option<EntryId>,
        due: UtcMinute,
    },
}

/// For the owners' tests: the [`Change`] that adds the entries of a user's crontab `text`
/// (alice's, uid 1000), as the sources would make it.
#[cfg(test)]
pub(super) fn change_of(text: &str) -> Change {
    use crate::crontab::{Format, Limits, ParseOptions};
    use crate::database::entries::Owner;
    use crate::schedule::When;
    use crate::types::Uid;
    use std::sync::Arc;
    let mut zones = |name: &str| Zone::get(name);
    let mut options = ParseOptions {
        format: Format::User,
        limits: Limits::USER,
        seed: 7,
        file: "crontabs/alice",
        zones: &mut zones,
        privileged: false,
    };
    let crontab = crate::crontab::parse(text.as_bytes(), &mut options);
    assert!(crontab.errors.is_empty(), "{:?}", crontab.errors);
    let (entries, spans, text) = crontab.into_packed();
    let commands = Arc::new(text.into_boxed_slice());
    let mut change = Change {
        who: b"alice".to_vec(),
        tab: "crontabs/alice".into(),
        ..Change::default()
    };
    for (entry, command) in entries.into_iter().zip(spans) {
        let owner = Arc::new(Owner {
            user: b"alice".to_vec(),
            uid: Some(Uid(1000)),
            tab: "crontabs/alice".into(),
            commands: Arc::clone(&commands),
            quiet: entry.quiet,
            env: Arc::clone(&entry.env),
        });
        let job = JobSpec { owner, command };
        match entry.when {
            When::Periodic(schedule) => change.add.push(NewEntry::Periodic {
                schedule,
                zone: entry.zone,
                job,
                delay: 0,
            }),
            When::Every(seconds) => change.add.push(NewEntry::Every { seconds, job }),
            When::Reboot => change.reboot.push(job),
        }
    }
    change
}
