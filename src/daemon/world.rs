//! What the reactor waits on and reads besides the owners: the `poll`, the signals, the
//! children reaped, the minute timer's word, systemd's notice of a stop and the memory given
//! back to the system. [`World`] is the reactor's one way to them (as [`Effects`] is the
//! owners'). [`RealWorld`] holds the signals' pipe and the timer and does them; [`Scripted`]
//! (tests) plays a script instead — at each turn, how long the wait took on a fake clock, which
//! tokens are ready, what the signals, the reaping and the timer say — so the reactor's rules
//! are unit-tested turn by turn, with no signal, child, timer or poll.
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

/// One turn of a [`Scripted`] world: how long its wait takes on the fake clock, which tokens it
/// finds ready, and what the signals, the reaping and the timer then say.
#[cfg(test)]
#[derive(Debug, Clone)]
pub(super) struct Beat {
    after_ms: i64,
    ready: Vec<Token>,
    signals: Arrived,
    reaped: Vec<(Pid, Exit)>,
    tick: Tick,
}

#[cfg(test)]
impl Beat {
    /// A wait that ends `after_ms` later with nothing ready (its timeout).
    pub(super) fn after(after_ms: i64) -> Beat {
        Beat {
            after_ms,
            ready: Vec::new(),
            signals: Arrived::default(),
            reaped: Vec::new(),
            tick: Tick::Nothing,
        }
    }

    /// `token` is ready too.
    pub(super) fn ready(mut self, token: Token) -> Beat {
        self.ready.push(token);
        self
    }

    /// The timer is ready and says `tick`.
    pub(super) fn timer(self, tick: Tick) -> Beat {
        Beat { tick, ..self }.ready(Token::Timer)
    }

    /// The signals' pipe is ready, and the drain says `signals`.
    pub(super) fn signals(self, signals: Arrived) -> Beat {
        Beat { signals, ..self }.ready(Token::Signals)
    }

    /// SIGCHLD came, and these children are reaped.
    pub(super) fn reaped(self, reaped: Vec<(Pid, Exit)>) -> Beat {
        let signals = Arrived {
            child: true,
            ..self.signals
        };
        Beat { reaped, ..self }.signals(signals)
    }
}

/// A world that plays a script of [`Beat`]s, one per wait, on a fake clock it moves, and
/// writes down what the reactor did with it. A beat may make ready only what the reactor
/// registered for that wait (else the test is wrong, and it panics); past the script's end
/// the wait fails, which ends [`Daemon::run`](super::reactor::Daemon::run).
#[cfg(test)]
#[derive(Debug)]
pub(super) struct Scripted {
    clock: super::clock::FakeClock,
    script: std::collections::VecDeque<Beat>,
    /// The beat of the last wait, whose signals, reaped children and tick are read once.
    this: Option<Beat>,
    /// Each wait: the tokens registered and the timeout.
    pub(super) waits: Vec<(Vec<Token>, Option<u32>)>,
    pub(super) stopping_notified: usize,
    pub(super) memory_given_back: usize,
}

#[cfg(test)]
impl Scripted {
    /// A world on `clock` (a clone of the reactor's) with nothing scripted yet.
    pub(super) fn new(clock: super::clock::FakeClock) -> Scripted {
        Scripted {
            clock,
            script: Default::default(),
            this: None,
            waits: Vec::new(),
            stopping_notified: 0,
            memory_given_back: 0,
        }
    }

    /// Plays `beat` at the next wait after those scripted before.
    pub(super) fn then(&mut self, beat: Beat) {
        self.script.push_back(beat);
    }

    /// The last wait's timeout.
    pub(super) fn last_timeout(&self) -> Option<u32> {
        self.waits.last().and_then(|(_, timeout)| *timeout)
    }
}

#[cfg(test)]
impl World for Scripted {
    fn wait(
        &mut self,
        fds: &[(Token, BorrowedFd<'_>, Interest)],
        timeout_ms: Option<u32>,
    ) -> io::Result<Vec<Token>> {
        let mut polled = vec![Token::Signals, Token::Timer];
        polled.extend(fds.iter().map(|&(token, _, _)| token));
        self.waits.push((polled.clone(), timeout_ms));
        let beat = self
            .script
            .pop_front()
            .ok_or_else(|| io::Error::other("the script is over"))?;
        for token in &beat.ready {
            assert!(
                polled.contains(token),
                "{token:?} is not polled: {polled:?}"
            );
        }
        self.clock.advance_ms(beat.after_ms);
        let ready = beat.ready.clone();
        self.this = Some(beat);
        Ok(ready)
    }

    fn drain_signals(&mut self) -> Arrived {
        self.this
            .as_mut()
            .map_or_else(Arrived::default, |beat| std::mem::take(&mut beat.signals))
    }

    fn reap(&mut self) -> Vec<(Pid, Exit)> {
        self.this
            .as_mut()
            .map(|beat| std::mem::take(&mut beat.reaped))
            .unwrap_or_default()
    }

    fn read_timer(&mut self) -> io::Result<Tick> {
        Ok(self.this.as_mut().map_or(Tick::Nothing, |beat| {
            std::mem::replace(&mut beat.tick, Tick::Nothing)
        }))
    }

    /// Plays the next beat as a wait on the signals alone.
    fn wait_for_signal(&mut self, timeout_ms: u32) {
        let _ = self.wait(&[], Some(timeout_ms));
    }

    fn notify_stopping(&mut self) {
        self.stopping_notified += 1;
    }

    fn give_back_memory(&mut self) {
        self.memory_given_back += 1;
    }
}
