//! The job's standard input (DESIGN §5): the text after the first unescaped `%` goes to the
//! shell through a pipe written by a separate process that writes and exits, as Vixie's
//! "wicked uncle ernie" does. A pipe holds 64 KiB; if the job child wrote a larger text itself,
//! a job that never reads stdin would block it forever (and with it the output capture and the
//! mail). The writer process blocks instead, and dies with EPIPE as soon as the shell is gone.
//! Without `%` the shell's stdin is /dev/null.
//!
//! This module decides nothing about the text: `crontab::JobInput::stdin` already applied the
//! `%` rule (further `%` become newlines, a final newline is added). It does no logging.

use std::io;
use std::process::Stdio;

use crate::sys::pipe::{self, WriterExit, WriterProcess};

/// The shell's standard input, ready to hand to `Command::stdin`, and the writer behind it.
#[derive(Debug)]
pub struct JobStdin {
    shell_end: Option<Stdio>,
    writer: Option<WriterProcess>,
}

impl JobStdin {
    /// Prepares the shell's stdin: /dev/null for `None`; otherwise a pipe, with a writer process
    /// started at once. The writer may start writing before the shell exists; the pipe buffers
    /// what it can and the writer waits for the rest.
    ///
    /// Call it in the job child after dropping privileges and resetting signal handlers (see
    /// [`pipe::spawn_writer`]).
    pub fn start(text: Option<&[u8]>) -> io::Result<JobStdin> {
        match text {
            None => Ok(JobStdin {
                shell_end: Some(Stdio::null()),
                writer: None,
            }),
            Some(text) => {
                let (read_end, write_end) = pipe::pipe()?;
                let writer = pipe::spawn_writer(write_end, text)?;
                Ok(JobStdin {
                    shell_end: Some(Stdio::from(read_end)),
                    writer: Some(writer),
                })
            }
        }
    }

    /// The end to give the shell (`Command::stdin`). Drop the `Command` after spawning, so the
    /// job child holds no copy of the read end: otherwise a writer whose shell has exited
    /// would wait for a reader that is the job child itself.
    pub fn take_for_shell(&mut self) -> Stdio {
        self.shell_end.take().unwrap_or_else(Stdio::null)
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
