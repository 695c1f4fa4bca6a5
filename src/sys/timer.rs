//! The minute timer: a timerfd on CLOCK_REALTIME, armed at an absolute wall-clock second with
//! TFD_TIMER_CANCEL_ON_SET, so it fires at :00 exactly and a step of the clock (settimeofday,
//! an NTP step, resume) wakes the daemon at once with ECANCELED.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};

use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};

/// What reading the timer says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tick {
    /// The armed instant was reached.
    Fired,
    /// The wall clock was set: the deadline means nothing now; re-plan.
    ClockChanged,
    /// Nothing yet (a spurious wake).
    Nothing,
}

#[derive(Debug)]
pub struct MinuteTimer {
    fd: TimerFd,
}

impl MinuteTimer {
    pub fn new() -> io::Result<MinuteTimer> {
        TimerFd::new(
            ClockId::CLOCK_REALTIME,
            TimerFlags::TFD_CLOEXEC | TimerFlags::TFD_NONBLOCK,
        )
        .map(|fd| MinuteTimer { fd })
        .map_err(io::Error::from)
    }

    /// Arms the timer for the wall-clock instant `unix_second` (replacing any earlier one).
    pub fn arm_at(&self, unix_second: i64) -> io::Result<()> {
        // A 32-bit `time_t` (i686, armhf) holds seconds up to 2038 only: an instant past that is
        // refused rather than wrapped into the past.
        let second = libc::time_t::try_from(unix_second)
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        self.fd
            .set(
                Expiration::OneShot(TimeSpec::new(second, 0)),
                TimerSetTimeFlags::TFD_TIMER_ABSTIME | TimerSetTimeFlags::TFD_TIMER_CANCEL_ON_SET,
            )
            .map_err(io::Error::from)
    }

    /// Reads the timer without blocking.
    pub fn read(&self) -> io::Result<Tick> {
        let mut buf = [0u8; 8];
        match nix::unistd::read(&self.fd, &mut buf) {
            Ok(_) => Ok(Tick::Fired),
            Err(nix::errno::Errno::ECANCELED) => Ok(Tick::ClockChanged),
            Err(nix::errno::Errno::EAGAIN) | Err(nix::errno::Errno::EINTR) => Ok(Tick::Nothing),
            Err(e) => Err(e.into()),
        }
    }

    pub fn fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
