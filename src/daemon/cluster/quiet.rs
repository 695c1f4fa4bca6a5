//! What cluster mode says of runs it does not start, said once rather than once per entry per
//! minute: the runs of one minute not run for one reason (the database unreachable, the lease
//! expired, no answer in time, the helper lost) are one line per host with their count and the
//! first few commands; an entry paused in the cluster is said when it is first found paused and
//! when it runs again, not at every minute between.
//!
//! Pure: the link tells it what the helper answered and when; it returns the lines to log.

use std::collections::HashSet;

use crate::cluster::entry_id::EntryKey;
use crate::cluster::wire::RunKey;
use crate::log::{LogLine, messages, printable};

/// How long after a minute's first run not run the line that counts them is written: the
/// answers of one minute come together, within this.
pub(super) const GATHER_MS: i64 = 2_000;

/// How many commands the line names; the rest are counted.
const NAMED: usize = 3;

/// The longest command named, in bytes shown; a longer one is cut with `…`.
const NAME_MAX: usize = 40;

/// The most paused entries remembered; beyond, the set starts afresh (each is said again once).
const MAX_PAUSED: usize = 100_000;

/// The runs of one minute not run for one reason, not said yet.
#[derive(Debug)]
struct Batch {
    /// `HH:MM` of the runs' minute, as the log shows it.
    when: String,
    reason: String,
    count: usize,
    names: Vec<String>,
    /// When the line is written.
    due_ms: i64,
}

/// The runs not said yet, and the entries known to be paused.
#[derive(Debug, Default)]
pub(super) struct Quiet {
    batch: Option<Batch>,
    paused: HashSet<(String, Vec<u8>, EntryKey)>,
}

/// An entry's identity in the cluster, whatever the minute.
fn entry_of(key: &RunKey) -> (String, Vec<u8>, EntryKey) {
    (key.cluster.clone(), key.owner.clone(), key.entry)
}

impl Quiet {
    /// A run of minute `when` (`HH:MM`) with `command` not run for `reason`, at `now_ms`:
    /// counted in the minute's line. Returns the line of an earlier minute or reason, to log
    /// now.
    pub(super) fn not_run(
        &mut self,
        when: String,
        reason: String,
        command: &[u8],
        now_ms: i64,
    ) -> Option<LogLine> {
        let earlier = match &self.batch {
            Some(b) if b.when == when && b.reason == reason => None,
            Some(_) => self.flush(),
            None => None,
        };
        let batch = self.batch.get_or_insert_with(|| Batch {
            when,
            reason,
            count: 0,
            names: Vec::new(),
            due_ms: now_ms + GATHER_MS,
        });
        batch.count += 1;
        if batch.names.len() < NAMED {
            batch.names.push(short(command));
        }
        earlier
    }

    /// When the pending line is due.
    pub(super) fn due_ms(&self) -> Option<i64> {
        self.batch.as_ref().map(|b| b.due_ms)
    }

    /// The pending line, if it is due at `now_ms`.
    pub(super) fn due(&mut self, now_ms: i64) -> Option<LogLine> {
        match &self.batch {
            Some(b) if b.due_ms <= now_ms => self.flush(),
            _ => None,
        }
    }

    /// The pending line, due or not.
    pub(super) fn flush(&mut self) -> Option<LogLine> {
        let b = self.batch.take()?;
        let more = b.count - b.names.len();
        let mut names = b.names.join(", ");
        if more > 0 {
            names.push_str(&format!(" and {more} more"));
        }
        Some(messages::cluster_not_run_line(
            b.count, &b.when, &b.reason, &names,
        ))
    }

    /// A run of `key` was denied as paused: whether to say so (the first time only).
    pub(super) fn paused(&mut self, key: &RunKey) -> bool {
        if self.paused.len() >= MAX_PAUSED {
            self.paused.clear();
        }
        self.paused.insert(entry_of(key))
    }

    /// Whether a run of the entry `entry` of `owner` in `cluster` was last denied as paused.
    pub(super) fn is_paused(&self, cluster: &str, owner: &[u8], entry: EntryKey) -> bool {
        self.paused
            .contains(&(cluster.to_string(), owner.to_vec(), entry))
    }

    /// A run of `key` was answered otherwise than paused: whether it was paused before (to say
    /// that it runs again).
    pub(super) fn resumed(&mut self, key: &RunKey) -> bool {
        !self.paused.is_empty() && self.paused.remove(&entry_of(key))
    }
}

/// A command as the line names it: shown through `printable`, cut at [`NAME_MAX`] bytes.
fn short(command: &[u8]) -> String {
    let shown = printable(command);
    if shown.len() <= NAME_MAX {
        return shown;
    }
    let mut end = NAME_MAX;
    while !shown.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &shown[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(line: LogLine) -> String {
        String::from_utf8_lossy(&line.to_bytes()).into_owned()
    }

    #[test]
    fn a_minutes_runs_not_run_for_one_reason_are_one_line_with_a_count_and_three_names() {
        let mut q = Quiet::default();
        let why = || "the cluster database is unreachable (refused)".to_string();
        for (i, command) in ["echo a", "echo b", "echo c", "echo d"].iter().enumerate() {
            let said = q.not_run("12:40".into(), why(), command.as_bytes(), i as i64 * 10);
            assert!(said.is_none());
        }
        assert_eq!(q.due_ms(), Some(GATHER_MS));
        assert!(q.due(GATHER_MS - 1).is_none());
        let line = text(q.due(GATHER_MS).expect("due"));
        assert_eq!(
            line,
            "(CRON) CLUSTER (4 entries not run at 12:40: the cluster database is unreachable \
             (refused): echo a, echo b, echo c and 1 more)"
        );
        assert!(q.due(1 << 40).is_none(), "said once");
        // Another minute's runs make the line of the pending ones due at once.
        q.not_run("12:41".into(), why(), b"echo a", 0);
        let earlier = q.not_run("12:42".into(), why(), b"echo a", 0);
        assert!(text(earlier.unwrap()).starts_with("(CRON) CLUSTER (1 entry not run at 12:41: "));
    }

    #[test]
    fn a_paused_entry_is_said_when_first_found_paused_and_when_it_runs_again() {
        let mut q = Quiet::default();
        let key = |minute| RunKey {
            cluster: "web".into(),
            owner: b"root".to_vec(),
            entry: EntryKey(7),
            minute,
        };
        assert!(q.paused(&key(60)));
        assert!(!q.paused(&key(120)), "not every minute");
        assert!(q.resumed(&key(180)));
        assert!(!q.resumed(&key(240)), "once");
        assert!(q.paused(&key(300)), "paused again: said again");
    }

    #[test]
    fn a_long_command_is_cut() {
        let long = "x".repeat(100);
        assert_eq!(short(long.as_bytes()), format!("{}…", "x".repeat(NAME_MAX)));
    }
}
