//! The daemon's in-memory entries: who runs them ([`Owner`], one per file, or per user and run of
//! variables in a system file) and the 16 bytes each entry costs ([`JobSpec`]: its owner and
//! where its command sits in the owner's one allocation, [`pack_commands`], with its line
//! number and its time fields as written). Made by the load,
//! kept by the scheduler, handed to the job child.
//!
//! Pure: data and its accessors.

use std::sync::Arc;

use crate::crontab::Env;
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
    /// The commands of the file's entries, one after the other, each after its time fields as
    /// written (at most [`MAX_SCHEDULE_TEXT`] bytes), their length (1 byte) and its line number
    /// (4 bytes, little-endian): an entry holds where its command is, not a copy (one
    /// allocation per file instead of one per entry), and finds its line and its schedule just
    /// before it. The schedule text costs its length plus one byte per entry (`*/5 * * * *`:
    /// 12 bytes), in this one allocation.
    pub commands: Commands,
    /// cronie's `-` before the entries: no CMD, END or CMDEND line. A file's entries with and
    /// without it have an owner each (the flag costs the entry nothing).
    pub quiet: bool,
    /// The crontab's variables above the entries: the entries between two variable lines share
    /// an owner (a file with no variables between its entries has one owner per user), so the
    /// entry itself holds no pointer to them.
    pub env: Arc<Env>,
}

/// A file's commands in one allocation ([`pack_commands`]), shared by its owners. A box in the
/// `Arc` rather than an `Arc<[u8]>`: making one of those from the packed bytes copied them
/// again, a large file's commands held three times at the peak of its load.
pub type Commands = Arc<Box<[u8]>>;

/// Where an entry's command sits in its owner's [`Owner::commands`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub len: u32,
}

/// The most bytes of an entry's time fields kept as written; longer ones (a list of every
/// minute spelt out) are kept cut, and shown ending `...`.
pub const MAX_SCHEDULE_TEXT: usize = 255;

/// A file's commands in one allocation, each after its time fields as written and its line
/// number (see [`Owner::commands`]), and where each is. A file is at most 64 MiB, so offsets
/// fit in u32.
pub fn pack_commands<'a>(
    commands: impl ExactSizeIterator<Item = (u32, &'a [u8], &'a [u8])> + Clone,
) -> (Commands, Vec<Span>) {
    let mut spans = Vec::with_capacity(commands.len());
    // Sized once: growing it by doubling copied a large file's commands again at each step.
    let size = commands
        .clone()
        .map(|(_, schedule, command)| schedule.len().min(MAX_SCHEDULE_TEXT) + 5 + command.len())
        .sum();
    let mut all = Vec::with_capacity(size);
    for (line, schedule, command) in commands {
        let schedule = &schedule[..schedule.len().min(MAX_SCHEDULE_TEXT)];
        all.extend_from_slice(schedule);
        all.push(schedule.len() as u8);
        all.extend_from_slice(&line.to_le_bytes());
        spans.push(Span {
            start: all.len() as u32,
            len: command.len() as u32,
        });
        all.extend_from_slice(command);
    }
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
        let start = self.command.start as usize;
        start
            .checked_sub(4)
            .and_then(|at| self.owner.commands.get(at..start))
            .and_then(|b| b.try_into().ok())
            .map_or(0, u32::from_le_bytes)
    }

    /// The time fields as written (`@daily`), cut at [`MAX_SCHEDULE_TEXT`] bytes; empty when
    /// not known.
    pub fn schedule_text(&self) -> &[u8] {
        let start = self.command.start as usize;
        let Some(len_at) = start.checked_sub(5) else {
            return b"";
        };
        let len = usize::from(self.owner.commands[len_at]);
        len_at
            .checked_sub(len)
            .and_then(|from| self.owner.commands.get(from..len_at))
            .unwrap_or(b"")
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
        let start = self.command.start as usize;
        &self.owner.commands[start..start + self.command.len as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let owner = Arc::new(Owner {
            user: b"alice".to_vec(),
            uid: None,
            tab: "crontabs/alice".into(),
            commands,
            quiet: false,
            env: Arc::new(Env::default()),
        });
        let jobs: Vec<JobSpec> = spans
            .into_iter()
            .map(|command| JobSpec {
                owner: Arc::clone(&owner),
                command,
            })
            .collect();
        let seen: Vec<(&[u8], u32)> = jobs.iter().map(|j| (j.command(), j.line())).collect();
        assert_eq!(
            seen,
            [(&b"echo a"[..], 3), (b"", 70_000), (b"echo %c", 70_001)]
        );
        assert_eq!(jobs[2].entry(), "crontabs/alice:70001");
        let written: Vec<&[u8]> = jobs.iter().map(|j| j.schedule_text()).collect();
        assert_eq!(written, [&b"@daily"[..], b"", &long[..MAX_SCHEDULE_TEXT]]);
    }
}
