//! The daemon's in-memory entries: who runs them ([`Owner`], one per file, or per user and run of
//! variables in a system file) and the 16 bytes each entry costs ([`JobSpec`]: its owner and
//! where its command sits in the owner's one allocation, the parser's packed text
//! ([`crate::crontab::packed`]), with its line number and its time fields as written). Made by
//! the load, kept by the scheduler, handed to the job child. The shell may keep a large file's
//! packed text where a forked job child does not have it ([`PackedText::OutOfForks`]); the job
//! child is then given a copy of its own entry ([`JobSpec::for_job_child`]).
//!
//! Pure: data and its accessors.

use std::borrow::Cow;
use std::ops::Deref;
use std::sync::Arc;

pub use crate::crontab::packed::Span;
use crate::crontab::{Env, packed};
use crate::log::JobFields;
use crate::types::Uid;

/// Who runs a crontab's entries and where they come from: one per file (one per user named in a
/// system file), shared by the file's entries.
#[derive(Debug)]
pub struct Owner {
    /// The user the jobs run as (the crontab's owner, or the user field of a system file).
    pub user: Vec<u8>,
    /// For a user's crontab, the uid whose ownership of the file was checked at load: the name
    /// must still resolve to it when the job starts, or the job is not run.
    pub uid: Option<Uid>,
    /// The crontab the entries come from, as logs show it (`crontabs/alice`, `/etc/cron.d/php`).
    pub tab: Arc<str>,
    /// The commands of the file's entries as the parser packed them
    /// ([`crate::crontab::packed`]): each after its time fields as written (at most
    /// [`packed::MAX_SCHEDULE_TEXT`] bytes), their length and its line number. An entry holds
    /// where its command is, not a copy (one allocation per file instead of one per entry).
    pub commands: Commands,
    /// cronie's `-` before the entries: no CMD, END or CMDEND line. A file's entries with and
    /// without it have an owner each (the flag costs the entry nothing).
    pub quiet: bool,
    /// The crontab's variables above the entries: the entries between two variable lines share
    /// an owner (a file with no variables between its entries has one owner per user), so the
    /// entry itself holds no pointer to them.
    pub env: Arc<Env>,
}

/// A file's commands in one allocation ([`crate::crontab::packed`]), shared by its owners. Not
/// an `Arc<[u8]>`: making one of those from the packed bytes copied them again, a large file's
/// commands held three times at the peak of its load.
pub type Commands = Arc<PackedText>;

/// A file's packed text as the daemon keeps it: in the heap, or (a large file's, the load's
/// choice: `daemon::sources::keep_packed`) in memory a fork leaves out of the child. At a fork
/// the kernel copies a page-table entry for every page of the daemon's memory, and tears it down
/// again when the job child exits, so with every loaded file's text in the heap each job cost
/// more the more entries the host had loaded, due or not. A job child reads only its own entry,
/// which it is given a copy of ([`JobSpec::for_job_child`]).
pub enum PackedText {
    Heap(Box<[u8]>),
    /// Bytes a forked child does not have: reading them there is a fault.
    OutOfForks(Box<dyn OutOfForks>),
}

/// Bytes the shell keeps where a forked job child does not have them
/// (`sys::memory::UnforkedBytes`).
pub trait OutOfForks: Send + Sync {
    fn bytes(&self) -> &[u8];
}

impl PackedText {
    /// Whether a forked job child would not have these bytes.
    pub fn is_out_of_forks(&self) -> bool {
        matches!(self, PackedText::OutOfForks(_))
    }
}

impl Deref for PackedText {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            PackedText::Heap(bytes) => bytes,
            PackedText::OutOfForks(bytes) => bytes.bytes(),
        }
    }
}

impl std::fmt::Debug for PackedText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let place = if self.is_out_of_forks() {
            "out of forks"
        } else {
            "heap"
        };
        write!(f, "PackedText({} bytes, {place})", self.len())
    }
}

/// A file's commands in one allocation, each after its time fields as written and its line
/// number (see [`Owner::commands`]), and where each is: what the parser gives the daemon,
/// made from a list (the tests' files).
#[cfg(test)]
pub fn pack_commands<'a>(
    commands: impl ExactSizeIterator<Item = (u32, &'a [u8], &'a [u8])>,
) -> (Commands, Vec<Span>) {
    let mut all = Vec::new();
    let spans = commands
        .map(|(line, schedule, command)| packed::push(&mut all, line, schedule, command))
        .collect();
    (Arc::new(PackedText::Heap(all.into_boxed_slice())), spans)
}

/// One job to start: 16 bytes, as the daemon keeps one per entry.
#[derive(Debug, Clone)]
pub struct JobSpec {
    pub owner: Arc<Owner>,
    /// The command as written (for the log), in the owner's commands.
    pub command: Span,
}

impl JobSpec {
    /// The crontab's variables above the entry.
    pub fn env(&self) -> &Arc<Env> {
        &self.owner.env
    }

    /// The user the job runs as.
    pub fn user(&self) -> &[u8] {
        &self.owner.user
    }

    /// cronie's `-` before the entry: no CMD, END or CMDEND line.
    pub fn quiet(&self) -> bool {
        self.owner.quiet
    }

    /// The entry's line in its file (0 when not known: the line number is missing).
    pub fn line(&self) -> u32 {
        packed::line(&self.owner.commands, self.command)
    }

    /// The time fields as written (`@daily`), cut at [`packed::MAX_SCHEDULE_TEXT`] bytes; empty
    /// when not known.
    pub fn schedule_text(&self) -> &[u8] {
        packed::schedule_text(&self.owner.commands, self.command)
    }

    /// Where the entry is written, `crontabs/alice:3`, as the JSON log's `entry` shows it.
    pub fn entry(&self) -> String {
        format!("{}:{}", self.owner.tab, self.line())
    }

    /// What the JSON log says of this job: its entry and command, and its shell's pid.
    pub fn log_fields(&self, pid: Option<u32>) -> JobFields {
        JobFields {
            entry: Some(self.entry()),
            command: Some(self.command().to_vec()),
            pid,
            ..JobFields::default()
        }
    }

    /// The command as written.
    pub fn command(&self) -> &[u8] {
        packed::command(&self.owner.commands, self.command)
    }

    /// What a job child is given, made before the fork: this spec when its owner's text is in
    /// the heap; when it is out of forks ([`PackedText::OutOfForks`]), a copy whose owner
    /// holds this entry's text alone (its line, time fields and command), so the child reads
    /// nothing the fork did not give it.
    pub fn for_job_child(&self) -> Cow<'_, JobSpec> {
        if !self.owner.commands.is_out_of_forks() {
            return Cow::Borrowed(self);
        }
        let (schedule, command) = (self.schedule_text(), self.command());
        let mut text = Vec::with_capacity(schedule.len() + packed::OVERHEAD + command.len());
        let span = packed::push(&mut text, self.line(), schedule, command);
        let owner = &self.owner;
        Cow::Owned(JobSpec {
            owner: Arc::new(Owner {
                user: owner.user.clone(),
                uid: owner.uid,
                tab: Arc::clone(&owner.tab),
                commands: Arc::new(PackedText::Heap(text.into_boxed_slice())),
                quiet: owner.quiet,
                env: Arc::clone(&owner.env),
            }),
            command: span,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The jobs of alice's crontab (uid 1000) whose packed text is `commands`.
    fn alices_jobs(commands: Commands, spans: Vec<Span>, quiet: bool) -> Vec<JobSpec> {
        let owner = Arc::new(Owner {
            user: b"alice".to_vec(),
            uid: Some(Uid(1000)),
            tab: "crontabs/alice".into(),
            commands,
            quiet,
            env: Arc::new(Env::default()),
        });
        spans
            .into_iter()
            .map(|command| JobSpec {
                owner: Arc::clone(&owner),
                command,
            })
            .collect()
    }

    #[test]
    fn a_job_finds_its_command_and_its_line_in_its_files_one_allocation() {
        let long = [b'1'; 300];
        let (commands, spans) = pack_commands(
            [
                (3, &b"@daily"[..], &b"echo a"[..]),
                (70_000, b"", b""),
                (70_001, &long[..], b"echo %c"),
            ]
            .into_iter(),
        );
        assert_eq!(commands.len(), 3 * 5 + 6 + 6 + 255 + 7);
        let jobs = alices_jobs(commands, spans, false);
        let seen: Vec<(&[u8], u32)> = jobs.iter().map(|j| (j.command(), j.line())).collect();
        assert_eq!(
            seen,
            [(&b"echo a"[..], 3), (b"", 70_000), (b"echo %c", 70_001)]
        );
        assert_eq!(jobs[2].entry(), "crontabs/alice:70001");
        let written: Vec<&[u8]> = jobs.iter().map(|j| j.schedule_text()).collect();
        assert_eq!(
            written,
            [&b"@daily"[..], b"", &long[..packed::MAX_SCHEDULE_TEXT]]
        );
    }

    #[test]
    fn a_job_child_gets_its_own_entry_when_the_file_is_kept_out_of_forks() {
        let fields = [b'5'; 300];
        // What the shell keeps out of forks, as bytes of the heap here.
        struct Kept(Box<[u8]>);
        impl OutOfForks for Kept {
            fn bytes(&self) -> &[u8] {
                &self.0
            }
        }
        let owner = |entries: &[(u32, &[u8], &[u8])], quiet| {
            let (commands, spans) = pack_commands(entries.iter().copied());
            let commands = if quiet {
                let bytes: &[u8] = &commands;
                Arc::new(PackedText::OutOfForks(Box::new(Kept(bytes.into()))))
            } else {
                commands
            };
            alices_jobs(commands, spans, quiet)
        };
        let small = owner(&[(3, b"@daily", b"echo a")], false);
        assert!(!small[0].owner.commands.is_out_of_forks());
        assert!(matches!(small[0].for_job_child(), Cow::Borrowed(_)));

        let large = owner(
            &[
                (1, b"* * * * *", b"echo first"),
                (70_001, &fields, b"echo %c"),
            ],
            true,
        );
        assert!(large[1].owner.commands.is_out_of_forks());
        for job in &large {
            let given = job.for_job_child();
            let Cow::Owned(copy) = &given else {
                panic!("a large file's entry is copied");
            };
            assert!(!copy.owner.commands.is_out_of_forks());
            assert!(copy.owner.commands.len() < job.owner.commands.len());
            assert_eq!(copy.command(), job.command());
            assert_eq!(copy.line(), job.line());
            assert_eq!(copy.schedule_text(), job.schedule_text());
            assert_eq!(copy.entry(), job.entry());
            assert_eq!(copy.user(), job.user());
            assert_eq!(copy.owner.uid, job.owner.uid);
            assert!(copy.quiet());
            assert!(Arc::ptr_eq(copy.env(), job.env()));
        }
        assert_eq!(large[1].for_job_child().command(), b"echo %c");
        assert_eq!(
            large[1].for_job_child().schedule_text(),
            &fields[..packed::MAX_SCHEDULE_TEXT]
        );
    }
}
