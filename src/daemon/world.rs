//! What the reactor waits on and reads besides the owners: the `poll`, the signals, the
//! children reaped, the minute timer's word, systemd's notice of a stop and the memory given
//! back to the system. [`World`] is the reactor's one way to them (as [`Effects`] is the
//! owners'). [`RealWorld`] holds the signals' pipe and the timer and does them.
//!
//! [`Effects`]: super::effects::Effects

use std::io;
use std::os::fd::BorrowedFd;
use std::rc::Rc;
use std::time::Duration;

use super::reactor::Token;
use crate::sys::poll::{Interest, Registry};
use crate::sys::process::{self, Exit};
use crate::sys::signal::{Arrived, SignalPipe};
use crate::sys::timer::{MinuteTimer, Tick};
use crate::types::Pid;

/// What the loop waits on and reads, besides the owners' descriptors.
pub(super) trait World {
    /// One `poll` over the owners' descriptors `fds` and the world's own (the signals'
    /// [`Token::Signals`] and the timer's [`Token::Timer`]): the tokens of those ready; none
    /// when `timeout_ms` passed (`None`: no limit) or a signal interrupted it.
    fn wait(
        &mut self,
        fds: &[(Token, BorrowedFd<'_>, Interest)],
        timeout_ms: Option<u32>,
    ) -> io::Result<Vec<Token>>;
    /// The signals that arrived since the last look.
    fn drain_signals(&mut self) -> Arrived;
    /// The children that ended, reaped.
    fn reap(&mut self) -> Vec<(Pid, Exit)>;
    /// What the timer says once [`Token::Timer`] is ready.
    fn read_timer(&mut self) -> io::Result<Tick>;
    /// Waits up to `timeout_ms` for a signal only (the graceful stop's wait for job children,
    /// where the timer does not count).
    fn wait_for_signal(&mut self, timeout_ms: u32);
    /// Tells systemd the daemon is stopping, so the exit is not read as a crash (a no-op
    /// without systemd).
    fn notify_stopping(&mut self);
    /// Gives the memory a reload or a large answer freed back to the system.
    fn give_back_memory(&mut self);
}

/// The world itself: the signals' self-pipe and the timer (shared with the effects, which arm
/// it).
pub(super) struct RealWorld {
    signals: SignalPipe,
    timer: Rc<MinuteTimer>,
}

impl RealWorld {
    pub(super) fn new(signals: SignalPipe, timer: Rc<MinuteTimer>) -> RealWorld {
        RealWorld { signals, timer }
    }
}

impl World for RealWorld {
    fn wait(
        &mut self,
        fds: &[(Token, BorrowedFd<'_>, Interest)],
        timeout_ms: Option<u32>,
    ) -> io::Result<Vec<Token>> {
        let mut registry = Registry::new();
        registry.add(Token::Signals, self.signals.fd(), Interest::Read);
        registry.add(Token::Timer, self.timer.fd(), Interest::Read);
        for &(token, fd, interest) in fds {
            registry.add(token, fd, interest);
        }
        Ok(registry.wait(timeout_ms)?.iter().collect())
    }

    fn drain_signals(&mut self) -> Arrived {
        self.signals.drain()
    }

    fn reap(&mut self) -> Vec<(Pid, Exit)> {
        process::reap()
    }

    fn read_timer(&mut self) -> io::Result<Tick> {
        self.timer.read()
    }

    fn wait_for_signal(&mut self, timeout_ms: u32) {
        let mut registry = Registry::new();
        registry.add((), self.signals.fd(), Interest::Read);
        if registry.wait(Some(timeout_ms)).is_err() {
            // poll itself failed: no better way to wait than a short sleep.
            std::thread::sleep(Duration::from_millis(50.min(u64::from(timeout_ms))));
        }
    }

    fn notify_stopping(&mut self) {
        let _ = crate::sys::notify::stopping();
    }

    fn give_back_memory(&mut self) {
        crate::sys::memory::give_back_free_memory();
    }
}
