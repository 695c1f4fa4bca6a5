//! The plaintext side of a connection, between the socket (or the TLS layer) and tokio-postgres:
//! every byte the server sends passes through [`Guard`] before the client library sees it.
//!
//! It parses only the framing (a tag byte and a 4-byte length per message) and does two things
//! tokio-postgres does not:
//!
//! - **A message is at most [`MAX_MESSAGE_BYTES`]** (64 MiB). A longer length is refused when
//!   its header arrives, before anything is buffered for it (tokio-postgres would buffer the
//!   whole message, however long the server says it is).
//! - **`require_auth`** (libpq 16). An authentication request (`R`) is held back until it has
//!   arrived whole and is checked against the methods the connection string allows; a request
//!   for a method not allowed fails the connection before tokio-postgres ever sees it, so no
//!   password, hash or SCRAM message is sent in answer. A server that lets the client in
//!   without asking (`AuthenticationOk` first) is refused unless `none` is allowed.
//!
//! A refusal is recorded in [`Shared`] so that the caller can report it as it is: tokio-postgres
//! only sees an I/O error.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};

use bytes::{Buf, BytesMut};
use crond::cluster::conninfo::RequireAuth;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::tls::{ChannelBinding, TlsStream};

/// The largest message accepted from the server.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;
/// The largest authentication request accepted (they are a few dozen bytes).
const MAX_AUTH_MESSAGE: usize = 64 << 10;
/// How much is read from the layer below at a time.
const READ_CHUNK: usize = 16 << 10;

/// What a connection attempt learnt that tokio-postgres's errors do not carry: why the guard
/// refused the server, and the first certificate check that failed.
#[derive(Debug, Default)]
pub struct Shared {
    refusal: Mutex<Option<String>>,
    verify: Mutex<Option<(i32, String)>>,
}

impl Shared {
    pub fn new() -> Arc<Shared> {
        Arc::new(Shared::default())
    }

    /// Records why the connection was refused (the first reason wins).
    pub fn refuse(&self, reason: &str) {
        let mut slot = self.refusal.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert_with(|| reason.to_string());
    }

    pub fn refusal(&self) -> Option<String> {
        self.refusal
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Records a failed certificate check: OpenSSL's code and text (the first wins).
    pub fn verify_failed(&self, code: i32, text: String) {
        let mut slot = self.verify.lock().unwrap_or_else(|e| e.into_inner());
        slot.get_or_insert((code, text));
    }

    pub fn verify_failure(&self) -> Option<(i32, String)> {
        self.verify
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

/// Where the authentication exchange stands.
#[derive(Debug)]
struct Auth {
    allowed: RequireAuth,
    /// The server asked for something (a password, md5, SASL).
    asked: bool,
    /// SASL began, and its final message came.
    sasl: bool,
    sasl_final: bool,
}

impl Auth {
    /// Checks one authentication request (the body of an `R` message).
    fn check(&mut self, body: &[u8]) -> Result<(), String> {
        let Some(code) = body.get(..4) else {
            return Err("the server sent an authentication request of less than 4 bytes".into());
        };
        let code = i32::from_be_bytes([code[0], code[1], code[2], code[3]]);
        let setting = &self.allowed.spelled;
        let refused = |what: &str, allow: &str| {
            format!(
                "{setting}: the server asked for {what}; refused without sending it \
                 ({allow} allows it)"
            )
        };
        match code {
            0 => {
                if !self.asked && !self.allowed.none {
                    return Err(format!(
                        "{setting}: the server let the client in without authentication (trust, \
                         peer or a client certificate), which require_auth=none allows"
                    ));
                }
                if self.sasl && !self.sasl_final && !self.allowed.none {
                    return Err(format!(
                        "{setting}: the server ended SCRAM authentication without proving it \
                         knows the password"
                    ));
                }
            }
            3 => {
                self.asked = true;
                if !self.allowed.password {
                    return Err(refused(
                        "the password in clear text",
                        "require_auth=password, over sslmode=verify-full only,",
                    ));
                }
            }
            5 => {
                self.asked = true;
                if !self.allowed.md5 {
                    return Err(refused(
                        "an md5 password hash",
                        "require_auth=md5, over sslmode=verify-full only,",
                    ));
                }
            }
            10 => {
                self.asked = true;
                if !self.allowed.scram {
                    return Err(refused(
                        "SCRAM-SHA-256 authentication",
                        "require_auth=scram-sha-256",
                    ));
                }
                self.sasl = true;
            }
            11 | 12 => {
                if !self.sasl {
                    return Err("the server sent a SASL message without starting SASL".into());
                }
                self.sasl_final |= code == 12;
            }
            2 | 6 | 7 | 8 | 9 => {
                return Err(format!(
                    "the server asks for Kerberos, SCM credentials, GSSAPI or SSPI \
                     (authentication request {code}), which this client lacks: use \
                     scram-sha-256, trust, peer or cert in pg_hba.conf"
                ));
            }
            other => {
                return Err(format!(
                    "the server asked for an unknown authentication method ({other})"
                ));
            }
        }
        Ok(())
    }
}

/// A stream whose incoming messages are checked as described in the module's header.
#[derive(Debug)]
pub struct Guard<S> {
    inner: S,
    /// Bytes read from `inner`, not yet handed up.
    pending: BytesMut,
    /// How many bytes at the front of `pending` are checked and may be handed up.
    checked: usize,
    /// Bytes of the current message's body still to pass (a message other than `R`).
    body_left: usize,
    auth: Auth,
    /// Set once the server is refused: every later read fails with it.
    failed: Option<String>,
    shared: Arc<Shared>,
    chunk: Box<[u8]>,
}

impl<S> Guard<S> {
    pub fn new(inner: S, allowed: RequireAuth, shared: Arc<Shared>) -> Guard<S> {
        Guard {
            inner,
            pending: BytesMut::new(),
            checked: 0,
            body_left: 0,
            auth: Auth {
                allowed,
                asked: false,
                sasl: false,
                sasl_final: false,
            },
            failed: None,
            shared,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
        }
    }

    /// Walks the framing of what arrived, moving `checked` past every byte that may go up.
    fn scan(&mut self) -> Result<(), String> {
        loop {
            let avail = self.pending.len() - self.checked;
            if self.body_left > 0 {
                let n = self.body_left.min(avail);
                if n == 0 {
                    return Ok(());
                }
                self.checked += n;
                self.body_left -= n;
                continue;
            }
            let head = &self.pending[self.checked..];
            if head.len() < 5 {
                return Ok(());
            }
            let tag = head[0];
            let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
            if len < 4 {
                return Err(format!(
                    "the server sent a message '{}' with an invalid length {len}",
                    tag.escape_ascii()
                ));
            }
            if len > MAX_MESSAGE_BYTES {
                return Err(format!(
                    "the server sent a message '{}' of {len} bytes, over the limit of {} MiB",
                    tag.escape_ascii(),
                    MAX_MESSAGE_BYTES >> 20
                ));
            }
            if tag == b'R' {
                if len > MAX_AUTH_MESSAGE {
                    return Err(format!(
                        "the server sent an authentication request of {len} bytes"
                    ));
                }
                if head.len() < 1 + len {
                    return Ok(());
                }
                self.auth.check(&head[5..1 + len])?;
                self.checked += 1 + len;
            } else {
                self.checked += 5;
                self.body_left = len - 4;
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guard<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if let Some(reason) = &this.failed {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    reason.clone(),
                )));
            }
            if this.checked > 0 {
                let n = this.checked.min(out.remaining());
                out.put_slice(&this.pending[..n]);
                this.pending.advance(n);
                this.checked -= n;
                return Poll::Ready(Ok(()));
            }
            let mut buf = ReadBuf::new(&mut this.chunk);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut buf))?;
            if buf.filled().is_empty() {
                // The end of the stream: what is held back was never checked and stays.
                return Poll::Ready(Ok(()));
            }
            this.pending.extend_from_slice(buf.filled());
            if let Err(reason) = this.scan() {
                this.shared.refuse(&reason);
                this.failed = Some(reason);
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guard<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Over TLS, the guard sits inside the TLS layer and passes its channel binding on.
impl<S: TlsStream + Unpin> TlsStream for Guard<S> {
    fn channel_binding(&self) -> ChannelBinding {
        self.inner.channel_binding()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allow(text: &str) -> RequireAuth {
        let info = crond::cluster::conninfo::parse(&format!("host=db require_auth={text}"), "u")
            .expect("conninfo");
        info.require_auth
    }

    fn tcp_default() -> RequireAuth {
        crond::cluster::conninfo::parse("host=db", "u")
            .expect("conninfo")
            .require_auth
    }

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        out.extend_from_slice(&(body.len() as u32 + 4).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    fn auth(code: i32, rest: &[u8]) -> Vec<u8> {
        let mut body = code.to_be_bytes().to_vec();
        body.extend_from_slice(rest);
        msg(b'R', &body)
    }

    /// Feeds `input` in pieces of `step` bytes; returns what was let through and the refusal.
    fn feed(allowed: RequireAuth, input: &[u8], step: usize) -> (Vec<u8>, Option<String>) {
        let mut guard = Guard::new((), allowed, Shared::new());
        let mut passed = Vec::new();
        for piece in input.chunks(step) {
            guard.pending.extend_from_slice(piece);
            if let Err(e) = guard.scan() {
                return (passed, Some(e));
            }
            passed.extend_from_slice(&guard.pending[..guard.checked]);
            guard.pending.advance(guard.checked);
            guard.checked = 0;
        }
        (passed, None)
    }

    #[test]
    fn a_cleartext_request_is_refused_by_default_over_tcp_and_never_passed_up() {
        for step in [1, 3, 1000] {
            let input = auth(3, b"");
            let (passed, refused) = feed(tcp_default(), &input, step);
            assert!(passed.is_empty(), "step {step}: {passed:?}");
            let e = refused.expect("refused");
            assert!(
                e.starts_with("require_auth=scram-sha-256,none (the default over TCP): the server asked for the password in clear text; refused without sending it"),
                "{e}"
            );
        }
    }

    #[test]
    fn md5_is_refused_by_default_and_allowed_when_named() {
        let input = auth(5, b"salt");
        assert!(feed(tcp_default(), &input, 2).1.is_some());
        let (passed, refused) = feed(allow("md5"), &input, 2);
        assert_eq!(refused, None);
        assert_eq!(passed, input);
    }

    #[test]
    fn scram_and_trust_pass_by_default_and_none_can_be_required_away() {
        let mut scram = auth(10, b"SCRAM-SHA-256\0\0");
        scram.extend(auth(11, b"r=x"));
        scram.extend(auth(12, b"v=y"));
        scram.extend(auth(0, b""));
        scram.extend(msg(b'Z', b"I"));
        assert_eq!(feed(tcp_default(), &scram, 7), (scram.clone(), None));
        let trust = [auth(0, b""), msg(b'Z', b"I")].concat();
        assert_eq!(feed(tcp_default(), &trust, 7), (trust.clone(), None));
        let e = feed(allow("scram-sha-256"), &trust, 7).1.expect("refused");
        assert!(e.contains("without authentication"), "{e}");
        let cut_short = [auth(10, b"SCRAM-SHA-256\0\0"), auth(0, b"")].concat();
        let e = feed(allow("scram-sha-256"), &cut_short, 100)
            .1
            .expect("refused");
        assert!(e.contains("without proving"), "{e}");
    }

    #[test]
    fn a_message_over_the_limit_is_refused_at_its_header() {
        let mut input = vec![b'D'];
        input.extend_from_slice(&0x7fff_fff0u32.to_be_bytes());
        let (passed, refused) = feed(tcp_default(), &input, 100);
        assert!(passed.is_empty());
        assert!(
            refused
                .expect("refused")
                .contains("over the limit of 64 MiB"),
            "refused"
        );
        let (_, refused) = feed(tcp_default(), b"Z\0\0\0\x02", 100);
        assert!(refused.expect("refused").contains("invalid length 2"));
    }

    #[test]
    fn other_messages_pass_as_they_arrive() {
        let row = msg(b'D', &[7; 100]);
        let (passed, refused) = feed(tcp_default(), &row, 10);
        assert_eq!(refused, None);
        assert_eq!(passed, row, "a body passes before its message is whole");
    }
}
