//! The one non-blocking byte pump: what a socket has now is read in chunks and handed to the
//! caller, and what the caller queues goes out as the socket takes it, without ever waiting.
//! `WouldBlock` ends a step, `Interrupted` is retried, end-of-file and errors are said. Used by
//! the daemon's poll loop for the cluster helper's socket and the metrics connections; the
//! descriptor must be non-blocking (else a step waits like any read or write).
//!
//! No syscall of its own: it drives any `Read`/`Write`, so its tests run on socketpairs.

use std::fmt;
use std::io::{self, Read, Write};

/// The buffers of one non-blocking stream: a read chunk and the bytes queued to be sent.
#[derive(Debug)]
pub struct Pump {
    chunk: Box<[u8]>,
    unsent: Vec<u8>,
    /// How much of `unsent` went out already.
    sent: usize,
    /// The most bytes that may wait unsent after a flush.
    max_unsent: usize,
}

/// How a [`Pump::fill`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filled {
    /// Nothing more to read now, the bound was reached, or the taker said stop.
    Open,
    /// End of file: the peer closed its side.
    End,
}

/// How a [`Pump::flush`] ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flushed {
    /// Everything queued went out.
    All,
    /// The socket took what it could; the rest waits for it to be writable.
    Partly,
}

/// Why a flush failed.
#[derive(Debug)]
pub enum FlushError {
    /// A write took nothing (the peer is gone).
    Closed,
    /// More than the bound waits unsent (the peer does not read): this many bytes.
    Backlog(usize),
    Io(io::Error),
}

impl fmt::Display for FlushError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlushError::Closed => f.write_str("closed"),
            FlushError::Backlog(n) => write!(f, "{n} bytes unread"),
            FlushError::Io(e) => e.fmt(f),
        }
    }
}

impl Pump {
    /// Reads in chunks of `chunk` bytes; at most `max_unsent` bytes may wait unsent.
    pub fn new(chunk: usize, max_unsent: usize) -> Pump {
        Pump {
            chunk: vec![0u8; chunk].into_boxed_slice(),
            unsent: Vec::new(),
            sent: 0,
            max_unsent,
        }
    }

    /// Reads what `from` has now, chunk by chunk, handing each to `take`, until it would block,
    /// `bound` bytes were read (the loop has other descriptors to serve), `take` returns
    /// `false`, or end of file.
    pub fn fill(
        &mut self,
        from: &mut impl Read,
        bound: usize,
        take: &mut dyn FnMut(&[u8]) -> bool,
    ) -> io::Result<Filled> {
        let mut read = 0usize;
        while read < bound {
            match from.read(&mut self.chunk) {
                Ok(0) => return Ok(Filled::End),
                Ok(n) => {
                    read += n;
                    if !take(&self.chunk[..n]) {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(Filled::Open)
    }

    /// Queues `bytes` to be sent by [`Pump::flush`].
    pub fn queue(&mut self, bytes: &[u8]) {
        if self.sent > 0 {
            self.unsent.drain(..self.sent);
            self.sent = 0;
        }
        self.unsent.extend_from_slice(bytes);
    }

    /// How many queued bytes have not gone out yet.
    pub fn unsent(&self) -> usize {
        self.unsent.len() - self.sent
    }

    /// Writes what `to` takes now. An error when the peer is gone, on a write error, and when
    /// more than the bound is left waiting.
    pub fn flush(&mut self, to: &mut impl Write) -> Result<Flushed, FlushError> {
        while self.unsent() > 0 {
            match to.write(&self.unsent[self.sent..]) {
                Ok(0) => return Err(FlushError::Closed),
                Ok(n) => self.sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(FlushError::Io(e)),
            }
        }
        if self.unsent() == 0 {
            self.unsent.clear();
            self.sent = 0;
            return Ok(Flushed::All);
        }
        if self.unsent() > self.max_unsent {
            return Err(FlushError::Backlog(self.unsent()));
        }
        Ok(Flushed::Partly)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::net::UnixStream;

    fn nonblocking_pair() -> (UnixStream, UnixStream) {
        let (a, b) = UnixStream::pair().unwrap();
        a.set_nonblocking(true).unwrap();
        b.set_nonblocking(true).unwrap();
        (a, b)
    }

    fn read_all_now(from: &mut UnixStream) -> Vec<u8> {
        let mut got = Vec::new();
        let mut pump = Pump::new(4096, 0);
        pump.fill(from, usize::MAX, &mut |b| {
            got.extend_from_slice(b);
            true
        })
        .unwrap();
        got
    }

    #[test]
    fn what_the_socket_takes_goes_and_the_rest_waits_for_the_next_flush() {
        let (mut ours, mut theirs) = nonblocking_pair();
        let mut pump = Pump::new(1024, usize::MAX);
        let message: Vec<u8> = (0..4 << 20).map(|i| (i % 251) as u8).collect();
        pump.queue(&message);
        assert_eq!(pump.flush(&mut ours).unwrap(), Flushed::Partly);
        let waiting = pump.unsent();
        assert!(waiting > 0 && waiting < message.len(), "a partial write");
        let mut got = read_all_now(&mut theirs);
        pump.queue(b"and more");
        // Flushed and read in turns until everything has arrived, in order.
        while pump.flush(&mut ours).unwrap() == Flushed::Partly {
            got.extend(read_all_now(&mut theirs));
        }
        got.extend(read_all_now(&mut theirs));
        assert_eq!(&got[..message.len()], &message[..]);
        assert_eq!(&got[message.len()..], b"and more");
        assert_eq!(pump.unsent(), 0);
    }

    #[test]
    fn a_peer_that_does_not_read_is_given_up_past_the_bound() {
        let (mut ours, _theirs) = nonblocking_pair();
        let mut small = Pump::new(1024, 1 << 20);
        small.queue(&[b'x'; 1024]);
        assert_eq!(small.flush(&mut ours).unwrap(), Flushed::All);
        let mut big = Pump::new(1024, 1 << 20);
        big.queue(&vec![b'x'; 2 << 20]);
        match big.flush(&mut ours) {
            Err(FlushError::Backlog(n)) => assert!(n > 1 << 20, "{n}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_closed_peer_is_an_error_to_write_and_the_end_to_read() {
        let (mut ours, theirs) = nonblocking_pair();
        drop(theirs);
        let mut pump = Pump::new(1024, usize::MAX);
        pump.queue(b"hello");
        assert!(pump.flush(&mut ours).is_err());
        assert_eq!(
            pump.fill(&mut ours, usize::MAX, &mut |_| true).unwrap(),
            Filled::End
        );
    }

    #[test]
    fn a_fill_stops_at_would_block_at_its_bound_and_when_the_taker_says() {
        let (mut ours, mut theirs) = nonblocking_pair();
        let mut pump = Pump::new(100, 0);
        // Nothing there: it would block, the stream stays open.
        assert_eq!(
            pump.fill(&mut ours, usize::MAX, &mut |_| true).unwrap(),
            Filled::Open
        );
        theirs.write_all(&[b'y'; 1000]).unwrap();
        let mut chunks = Vec::new();
        let filled = pump.fill(&mut ours, 250, &mut |b| {
            chunks.push(b.len());
            true
        });
        assert_eq!(filled.unwrap(), Filled::Open);
        assert_eq!(
            chunks,
            [100, 100, 100],
            "chunks of 100 until 250 were passed"
        );
        let mut taken = 0;
        pump.fill(&mut ours, usize::MAX, &mut |b| {
            taken += b.len();
            false
        })
        .unwrap();
        assert_eq!(taken, 100, "one chunk, then the taker said stop");
        assert_eq!(read_all_now(&mut ours).len(), 600);
    }
}
