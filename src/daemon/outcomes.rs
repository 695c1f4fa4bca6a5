//! The job children's word on how each run ended: one pipe that every job child writes one line
//! into when its run ends (the job's exit status or signal, or why nothing of it ran: an unknown
//! user, a PAM refusal, a shell that could not start), after its pid (`job::report`). This owner
//! reads it and keeps each line until the child is reaped; the loop then hands it to the
//! scheduler with the child's exit, so an entry's last runs say why they failed.
//!
//! Bounds: the pipe holds [`PIPE_BYTES`] (a line is a few dozen bytes, at most
//! `job::report::MAX_SAID`); a child whose line the full pipe does not take loses it (its run
//! shows without a reason). At most [`MAX_HEARD`] lines wait for their child's reaping; past
//! that the oldest pids' lines are let go.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd};

use crate::job::Report;
use crate::job::report::{MAX_SAID, Said};

/// The pipe's buffer: tens of thousands of lines, so a burst of ending jobs waits for the
/// loop's next turn without losing any.
const PIPE_BYTES: usize = 1 << 20;

/// The most lines kept for children not reaped yet (more children than that do not run at
/// once: each is a process the daemon has forked and reaps).
pub(super) const MAX_HEARD: usize = 1 << 16;

/// The read end and what was read from it.
#[derive(Debug)]
pub(super) struct Outcomes {
    read: File,
    /// A line read in part (the rest comes with the next read).
    partial: Vec<u8>,
    /// What each job child said, by pid, until it is reaped.
    heard: HashMap<i32, Said>,
}

impl Outcomes {
    /// The pipe: this owner on its read end, and the write end every job child is handed.
    pub(super) fn open() -> io::Result<(Outcomes, Report)> {
        let (read, write) = crate::sys::pipe::shared_lines(PIPE_BYTES)?;
        let outcomes = Outcomes {
            read: File::from(read),
            partial: Vec::new(),
            heard: HashMap::new(),
        };
        Ok((outcomes, Report::new(write)))
    }

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.read.as_fd()
    }

    /// Reads every whole line there is now.
    pub(super) fn read(&mut self) {
        let mut buffer = [0u8; 16 << 10];
        loop {
            match (&self.read).read(&mut buffer) {
                Ok(0) => return,
                Ok(n) => self.hear(&buffer[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // WouldBlock: all read; nothing else can fail on a pipe's read end.
                Err(_) => return,
            }
        }
    }

    /// Takes what the child `pid` said, when it is reaped.
    pub(super) fn take(&mut self, pid: i32) -> Option<Said> {
        self.heard.remove(&pid)
    }

    fn hear(&mut self, bytes: &[u8]) {
        self.partial.extend_from_slice(bytes);
        let mut start = 0;
        while let Some(end) = self.partial[start..].iter().position(|&b| b == b'\n') {
            let line = &self.partial[start..start + end];
            if let Some((pid, said)) = Said::parse_outcome(line) {
                if self.heard.len() >= MAX_HEARD {
                    // Children that were never reaped as such: none in a daemon that reaps
                    // all of its own; bounded all the same.
                    self.heard.clear();
                }
                self.heard.insert(pid, said);
            }
            start += end + 1;
        }
        self.partial.drain(..start);
        if self.partial.len() > MAX_SAID {
            self.partial.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::report::End;

    #[test]
    fn each_childs_line_is_kept_until_it_is_taken_whatever_the_reads_cut() {
        let (mut outcomes, write) = Outcomes::open().unwrap();
        let ended = |code| Said::Ended {
            end: End::Exited(code),
            duration_ms: 5,
        };
        let lines: String = (1..=3)
            .map(|pid| ended(pid).outcome_line(pid as u32).unwrap())
            .collect();
        let (a, b) = lines.split_at(7);
        use std::io::Write;
        let mut file = File::from(write.fd().try_clone_to_owned().unwrap());
        file.write_all(a.as_bytes()).unwrap();
        outcomes.read();
        assert_eq!(outcomes.take(1), None, "a line read in part is not heard");
        file.write_all(b.as_bytes()).unwrap();
        file.write_all(b"junk that is not a line\n9 started 1 alice\n")
            .unwrap();
        outcomes.read();
        for pid in 1..=3 {
            assert_eq!(outcomes.take(pid), Some(ended(pid)));
            assert_eq!(outcomes.take(pid), None);
        }
        assert_eq!(outcomes.take(9), None);
        assert!(outcomes.heard.is_empty() && outcomes.partial.is_empty());
    }

    #[test]
    fn lines_past_the_bounds_are_let_go() {
        let (mut outcomes, _write) = Outcomes::open().unwrap();
        let line = |pid: i32| format!("{pid} exited 0 1\n");
        let many: String = (0..MAX_HEARD as i32 + 1).map(line).collect();
        outcomes.hear(many.as_bytes());
        assert_eq!(outcomes.heard.len(), 1);
        outcomes.hear(&vec![b'x'; MAX_SAID + 1]);
        assert!(outcomes.partial.is_empty());
        outcomes.hear(line(5).as_bytes());
        assert!(outcomes.take(5).is_some());
    }
}
