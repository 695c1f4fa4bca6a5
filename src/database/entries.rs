//! The daemon's in-memory entries: who runs them ([`Owner`], one per file, or per user and run of
//! variables in a system file) and the 16 bytes each entry costs ([`JobSpec`]: its owner and
//! where its command sits in the owner's one allocation, the parser's packed text
//! ([`crate::crontab::packed`]), with its line number and its time fields as written). Made by
//! the load, kept by the scheduler, handed to the job child.
//!
//! Pure: data and its accessors.

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
pub type Commands = Arc<Box<[u8]>>;

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
    (Arc::new(all.into_boxed_slice()), spans)
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
}
