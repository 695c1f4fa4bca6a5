//! Random messages in random order: outcomes, gaps, queries (some not readable), bytes that are
//! no message, messages longer than the most a message may be. The writer never ends before
//! its socket closes, and each query gets exactly one answer.

use std::io::Read;

use super::*;

/// xorshift64*: the same sequence for a seed, no crate needed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next() as u8).collect()
    }
}

/// One random query: history or logs, of a random entry text, with random flags.
fn random_query(rng: &mut Rng) -> Query {
    let entries = [
        "aaaa",
        "aaaa00000001",
        "bbbb0000000",
        "zz",
        "",
        "abcdefabcdef0",
    ];
    let entry = entries[rng.below(entries.len() as u64) as usize].to_string();
    let asked = if rng.below(2) == 0 {
        Asked::History {
            entry: (rng.below(2) == 0).then_some(entry),
            user: (rng.below(3) == 0).then(|| "alice".to_string()),
            failed: rng.below(2) == 0,
            since_ms: (rng.below(2) == 0).then(|| base_ms() + rng.below(10_000) as i64),
            limit: 1 + rng.below(200) as u32,
        }
    } else {
        Asked::Logs {
            entry,
            run: (rng.below(2) == 0).then(|| rng.below(50) as i64 - 5),
            raw: rng.below(2) == 0,
        }
    };
    let mut q = query(
        asked,
        rng.below(2) == 0,
        1000 + rng.below(3) as u32,
        Some("alice"),
    );
    q.json = rng.below(2) == 0;
    q.wide = rng.below(2) == 0;
    q.zone = ["UTC", "Europe/Paris", "Not/AZone", ""][rng.below(4) as usize].into();
    q.max_answer = rng.below(1 << 16);
    q
}

/// One random message that is not a query.
fn random_message(rng: &mut Rng) -> Vec<u8> {
    match rng.below(6) {
        0 | 1 => {
            let entry = format!("{:04x}00000001", 0xaaaa + rng.below(3));
            let len = rng.below(300) as usize;
            let out = rng.bytes(len);
            let mut o = outcome(
                &entry,
                "alice",
                Some(1000 + rng.below(2) as u32),
                rng.below(10_000) as i64,
                out,
            );
            if rng.below(3) == 0 {
                o.result = Slot::NotRun {
                    reason: crond::history::Reason::Overlap,
                    words: String::from_utf8_lossy(&rng.bytes(20)).into_owned(),
                };
            }
            o.encode()
        }
        2 => crond::history::Gap {
            from_ms: rng.below(10_000) as i64,
            to_ms: rng.below(10_000) as i64,
            lost: rng.below(100),
            why: "test".into(),
        }
        .encode(),
        3 => {
            // Never empty: an empty message reads as every sender gone when none is left.
            let len = 1 + rng.below(400) as usize;
            rng.bytes(len)
        }
        4 => {
            // A real message cut or with a byte changed.
            let mut m = outcome("aaaa00000001", "alice", None, 1, Vec::new()).encode();
            let at = rng.below(m.len() as u64) as usize;
            if rng.below(2) == 0 {
                m.truncate(at);
            } else {
                m[at] = rng.next() as u8;
            }
            m
        }
        _ => vec![b'k'; MAX_MESSAGE + 1 + rng.below(1000) as usize],
    }
}

#[test]
fn random_messages_never_end_the_writer_and_each_query_is_answered_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let mut writer = Writer::start(&store, &[]);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut clients = Vec::new();
    for _ in 0..600 {
        match rng.below(5) {
            0 => {
                let q = random_query(&mut rng);
                clients.push(writer.ask(&q));
            }
            1 => {
                // A connection passed with bytes that are no query: answered with an error.
                let (client, passed) = UnixStream::pair().unwrap();
                let len = rng.below(100) as usize;
                let junk = rng.bytes(len);
                send_passing(&writer.socket, &junk, &passed);
                clients.push(client);
            }
            _ => {
                let m = random_message(&mut rng);
                match seqpacket::send(writer.socket.as_fd(), &m) {
                    // Longer than a socket's message may be: the kernel refuses it here.
                    Err(e) if m.len() > MAX_MESSAGE && e.raw_os_error() == Some(90) => {}
                    other => {
                        if other.is_err() {
                            send_on(&writer.socket, &m).unwrap();
                        }
                    }
                }
            }
        }
        // Read answers as they come, so at most a few are answered at once.
        if clients.len() >= 6 {
            for client in clients.drain(..) {
                one_answer(client);
            }
        }
        assert!(
            writer.child.try_wait().unwrap().is_none(),
            "the writer ended"
        );
    }
    for client in clients {
        one_answer(client);
    }
    writer.close();
}

/// The client's answer: `OK` or `ERROR` first, then the connection closed (one answer).
fn one_answer(mut client: UnixStream) {
    client
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut answer = Vec::new();
    client.read_to_end(&mut answer).unwrap();
    let first = answer.split(|&b| b == b'\n').next().unwrap_or_default();
    assert!(
        first == b"OK" || first.starts_with(b"ERROR "),
        "{:?}",
        String::from_utf8_lossy(&answer)
    );
}
