//! The job's standard input (docs/design.md §5): the text after the first unescaped `%` goes to the
//! shell through a pipe written by a separate process that writes and exits, as Vixie's
//! "wicked uncle ernie" does. A pipe holds 64 KiB; if the job child wrote a larger text itself,
//! a job that never reads stdin would block it forever (and with it the output capture and the
//! mail). The writer process blocks instead, and dies with EPIPE as soon as the shell is gone.
//! Without `%` the shell's stdin is /dev/null.
//!
//! This module decides nothing about the text: `crontab::JobInput::stdin` already applied the
//! `%` rule (further `%` become newlines, a final newline is added). It does no logging.

use std::io;
use std::os::fd::OwnedFd;
#[cfg(test)]
use std::process::Stdio;

use crate::sys::as_user::Credentials;
use crate::sys::pipe::{self, WriterExit, WriterProcess};

/// The shell's standard input (the read end of the writer's pipe, or none: /dev/null), and the
/// writer behind it.
#[derive(Debug)]
pub struct JobStdin {
    shell_end: Option<OwnedFd>,
    writer: Option<WriterProcess>,
}

impl JobStdin {
    /// Prepares the shell's stdin: /dev/null for `None`; otherwise a pipe, with a writer process
    /// started at once. The writer may start writing before the shell exists; the pipe buffers
    /// what it can and the writer waits for the rest.
    ///
    /// Call it in the job child after resetting signal handlers (see [`pipe::spawn_writer`]).
    pub fn start(text: Option<&[u8]>) -> io::Result<JobStdin> {
        JobStdin::start_as(text, None)
    }

    /// [`JobStdin::start`] with the writer running as `creds`'s user (`None`: as this process).
    /// An error when the writer could not be forked.
    pub fn start_as(text: Option<&[u8]>, creds: Option<&Credentials>) -> io::Result<JobStdin> {
        match text {
            None => Ok(JobStdin {
                shell_end: None,
                writer: None,
            }),
            Some(text) => {
                let (read_end, write_end) = pipe::pipe()?;
                let writer = pipe::spawn_writer_as(write_end, text, creds)?;
                Ok(JobStdin {
                    shell_end: Some(read_end),
                    writer: Some(writer),
                })
            }
        }
    }

    /// The end to give the shell (`None`: /dev/null). The job child must hold no copy of it
    /// once the shell has started: otherwise a writer whose shell has exited would wait for a
    /// reader that is the job child itself.
    pub fn take_shell_end(&mut self) -> Option<OwnedFd> {
        self.shell_end.take()
    }

    /// [`JobStdin::take_shell_end`] for `std::process::Command` (the tests' jobs).
    #[cfg(test)]
    pub fn take_for_shell(&mut self) -> Stdio {
        self.shell_end.take().map_or_else(Stdio::null, Stdio::from)
    }

    /// The writer's process id, if there is one.
    #[cfg(test)]
    pub fn writer_pid(&self) -> Option<u32> {
        self.writer.as_ref().map(WriterProcess::pid)
    }

    /// Reaps the writer. Call it after the shell has exited: the writer has then finished
    /// (everything written, or EPIPE), unless a process the shell left behind holds the pipe
    /// without reading it; such a writer is killed, and that reads as `ReaderGone`. `None`
    /// when there was no `%` text.
    pub fn wait(mut self) -> io::Result<Option<WriterExit>> {
        self.shell_end = None;
        self.writer.take().map(WriterProcess::stop).transpose()
    }
}

#[cfg(test)]
mod tests;
