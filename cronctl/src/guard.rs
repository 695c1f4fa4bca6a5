//! The plaintext side of a connection, between the socket (or the TLS layer) and tokio-postgres:
//! every byte the server sends passes through [`Guard`] before the client library sees it.
//!
//! It parses only the framing (a tag byte and a 4-byte length per message) and does three things
//! tokio-postgres does not:
//!
//! - **A message is at most [`MAX_MESSAGE_BYTES`]** (64 MiB). A longer length is refused when
//!   its header arrives, before anything is buffered for it (tokio-postgres would buffer the
//!   whole message, however long the server says it is).
//! - **What tokio-postgres keeps is bounded.** It keeps every `ParameterStatus` (`S`) for the
//!   connection's life, one value per name, and every `NoticeResponse` (`N`) that comes during
//!   the login until the login ends. So a `ParameterStatus` is at most
//!   [`MAX_PARAMETER_STATUS`] bytes (libpq's own limit for it) and names at most
//!   [`MAX_PARAMETERS`] parameters in all; a notice, an error or a notification is at most
//!   [`MAX_NOTICE_BYTES`]; and before the login ends (the first `ReadyForQuery`) the
//!   parameter statuses, notices and notifications together are at most
//!   [`MAX_LOGIN_ASYNC_BYTES`] and [`MAX_LOGIN_ASYNC_MESSAGES`]. After the login there is no
//!   total: tokio-postgres drops each notice and notification once read, and a server may
//!   rightly send many (a `RAISE NOTICE` in a loop).
//! - **`require_auth`** (libpq 16). An authentication request (`R`) is held back until it has
//!   arrived whole and is checked against the methods the connection string allows; a request
//!   for a method not allowed fails the connection before tokio-postgres ever sees it, so no
//!   password, hash or SCRAM message is sent in answer. A server that lets the client in
//!   without asking (`AuthenticationOk` first) is refused unless `none` is allowed. A server
//!   on a Unix socket that an unexpected user runs ([`crate::socket::untrusted_server`]) is
//!   refused any request that needs the password, whatever `require_auth` allows.
//!
//! A refusal is recorded in [`Shared`] so that the caller can report it as it is: tokio-postgres
//! only sees an I/O error.

use std::fmt;
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
/// The largest `ParameterStatus` accepted, its length field included: libpq's limit for every
/// message but rows, row descriptions, copy data, function results, errors, notices and
/// notifications, so a server that libpq talks to passes. PostgreSQL 15 sends 13 at login,
/// of 20 to 50 bytes.
pub const MAX_PARAMETER_STATUS: usize = 30_000;
/// The most parameter names a connection may report (PostgreSQL 15 reports 13, later versions
/// a few more; an extension may add its own).
pub const MAX_PARAMETERS: usize = 64;
/// The largest `NoticeResponse`, `ErrorResponse` or `NotificationResponse` accepted. The
/// server's own are a few hundred bytes (a notice of PostgreSQL 15 with its context: about
/// 240), a notification's payload is under 8,000 bytes; tokio-postgres copies each into
/// strings of its own, so one of 64 MiB would cost the client twice that.
pub const MAX_NOTICE_BYTES: usize = 64 << 10;
/// The most bytes of `ParameterStatus`, `NoticeResponse` and `NotificationResponse` before the
/// login ends (PostgreSQL 15: 13 parameter statuses, about 370 bytes, and no notice unless
/// `client_min_messages` asks for debug messages, which adds one).
pub const MAX_LOGIN_ASYNC_BYTES: usize = 1 << 20;
/// The most of those messages before the login ends.
pub const MAX_LOGIN_ASYNC_MESSAGES: usize = 1_000;
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

/// Why the guard refused the server: said in the connection's error, as the reason it ended.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Refusal {
    ShortAuthRequest,
    /// An authentication request longer than [`MAX_AUTH_MESSAGE`].
    LongAuthRequest(usize),
    /// `AuthenticationOk` first, and `require_auth` (as spelled) does not allow `none`.
    NoAuthentication(String),
    /// `AuthenticationOk` before SCRAM's final message, `require_auth` as spelled.
    ScramUnproven(String),
    /// A request for `what`, which `require_auth` (as spelled in `setting`) does not allow;
    /// `allow` says what would.
    NotAllowed {
        setting: String,
        what: &'static str,
        allow: &'static str,
    },
    /// A request for `what`, which needs the password, from a server not trusted (`why`).
    Untrusted {
        why: String,
        what: &'static str,
    },
    SaslNotStarted,
    /// Kerberos, SCM credentials, GSSAPI or SSPI (the request's code).
    MethodLacking(i32),
    UnknownMethod(i32),
    /// A message of kind `tag` and length `len`, over its kind's limit `most`.
    OverLimit {
        tag: u8,
        len: usize,
        most: usize,
    },
    /// Over [`MAX_LOGIN_ASYNC_BYTES`] or [`MAX_LOGIN_ASYNC_MESSAGES`] before the login ended.
    LoginFlood,
    /// Over [`MAX_PARAMETERS`] parameter names.
    TooManyParameters,
    /// A message's length under 4 (the length field's own).
    BadLength {
        tag: u8,
        len: usize,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::ShortAuthRequest => {
                f.write_str("the server sent an authentication request of less than 4 bytes")
            }
            Refusal::LongAuthRequest(len) => {
                write!(
                    f,
                    "the server sent an authentication request of {len} bytes"
                )
            }
            Refusal::NoAuthentication(setting) => write!(
                f,
                "{setting}: the server let the client in without authentication (trust, \
                 peer or a client certificate), which require_auth=none allows"
            ),
            Refusal::ScramUnproven(setting) => write!(
                f,
                "{setting}: the server ended SCRAM authentication without proving it \
                 knows the password"
            ),
            Refusal::NotAllowed {
                setting,
                what,
                allow,
            } => write!(
                f,
                "{setting}: the server asked for {what}; refused without sending it \
                 ({allow} allows it)"
            ),
            Refusal::Untrusted { why, what } => {
                write!(f, "{why}: it asked for {what}; refused without sending it")
            }
            Refusal::SaslNotStarted => {
                f.write_str("the server sent a SASL message without starting SASL")
            }
            Refusal::MethodLacking(code) => write!(
                f,
                "the server asks for Kerberos, SCM credentials, GSSAPI or SSPI \
                 (authentication request {code}), which this client lacks: use \
                 scram-sha-256, trust, peer or cert in pg_hba.conf"
            ),
            Refusal::UnknownMethod(code) => write!(
                f,
                "the server asked for an unknown authentication method ({code})"
            ),
            Refusal::OverLimit { tag, len, most } => write!(
                f,
                "the server sent {} of {len} bytes, over the limit of {}",
                kind(*tag),
                size(*most)
            ),
            Refusal::LoginFlood => write!(
                f,
                "the server sent more than {} or {MAX_LOGIN_ASYNC_MESSAGES} parameter statuses, \
                 notices and notifications before the login ended",
                size(MAX_LOGIN_ASYNC_BYTES)
            ),
            Refusal::TooManyParameters => write!(
                f,
                "the server reported more than {MAX_PARAMETERS} parameters (ParameterStatus)"
            ),
            Refusal::BadLength { tag, len } => write!(
                f,
                "the server sent a message '{}' with an invalid length {len}",
                tag.escape_ascii()
            ),
        }
    }
}

/// Where the authentication exchange stands.
#[derive(Debug)]
struct Auth {
    allowed: RequireAuth,
    /// Why the server is not to be sent the password in any form (a Unix socket served by an
    /// unexpected user), if it is not.
    untrusted: Option<String>,
    /// The server asked for something (a password, md5, SASL).
    asked: bool,
    /// SASL began, and its final message came.
    sasl: bool,
    sasl_final: bool,
}

impl Auth {
    /// Checks one authentication request (the body of an `R` message).
    fn check(&mut self, body: &[u8]) -> Result<(), Refusal> {
        let Some(code) = body.get(..4) else {
            return Err(Refusal::ShortAuthRequest);
        };
        let code = i32::from_be_bytes([code[0], code[1], code[2], code[3]]);
        match code {
            0 => self.let_in()?,
            3 => self.asked_for(
                "the password in clear text",
                self.allowed.password,
                "require_auth=password, over sslmode=verify-full only,",
            )?,
            5 => self.asked_for(
                "an md5 password hash",
                self.allowed.md5,
                "require_auth=md5, over sslmode=verify-full only,",
            )?,
            10 => {
                // Not even SCRAM to an untrusted server: whoever made the socket could pass the
                // exchange on to the real server and take over the session it opens.
                self.asked_for(
                    "SCRAM-SHA-256 authentication",
                    self.allowed.scram,
                    "require_auth=scram-sha-256",
                )?;
                self.sasl = true;
            }
            11 | 12 => {
                if !self.sasl {
                    return Err(Refusal::SaslNotStarted);
                }
                self.sasl_final |= code == 12;
            }
            2 | 6 | 7 | 8 | 9 => return Err(Refusal::MethodLacking(code)),
            other => return Err(Refusal::UnknownMethod(other)),
        }
        Ok(())
    }

    /// `AuthenticationOk`: refused when the server asked for nothing, or ended SCRAM before
    /// its final message (its proof that it knows the password), unless `none` is allowed.
    fn let_in(&self) -> Result<(), Refusal> {
        let setting = || self.allowed.spelled.clone();
        if !self.asked && !self.allowed.none {
            return Err(Refusal::NoAuthentication(setting()));
        }
        if self.sasl && !self.sasl_final && !self.allowed.none {
            return Err(Refusal::ScramUnproven(setting()));
        }
        Ok(())
    }

    /// A request for `what`, which needs the password: refused unless `allowed` (the setting
    /// `allow` names allows it) and the server is trusted.
    fn asked_for(
        &mut self,
        what: &'static str,
        allowed: bool,
        allow: &'static str,
    ) -> Result<(), Refusal> {
        self.asked = true;
        if !allowed {
            return Err(Refusal::NotAllowed {
                setting: self.allowed.spelled.clone(),
                what,
                allow,
            });
        }
        self.trusted(what)
    }

    /// Fails a request for `what` (which needs the password) when the server is not trusted.
    fn trusted(&self, what: &'static str) -> Result<(), Refusal> {
        match &self.untrusted {
            Some(why) => Err(Refusal::Untrusted {
                why: why.clone(),
                what,
            }),
            None => Ok(()),
        }
    }
}

/// What tokio-postgres keeps of the server's asynchronous messages, counted as they pass.
#[derive(Debug, Default)]
struct Kept {
    /// The first `ReadyForQuery` passed: the login is over.
    logged_in: bool,
    /// Bytes and messages of `S`, `N` and `A` before that.
    login_bytes: usize,
    login_messages: usize,
    /// The parameter names reported so far.
    names: Vec<Box<[u8]>>,
}

impl Kept {
    /// Counts a message with tag `tag` and length `len` when its header arrives.
    fn header(&mut self, tag: u8, len: usize) -> Result<(), Refusal> {
        let most = match tag {
            b'S' => MAX_PARAMETER_STATUS,
            b'N' | b'E' | b'A' => MAX_NOTICE_BYTES,
            _ => MAX_MESSAGE_BYTES,
        };
        if len > most {
            return Err(Refusal::OverLimit { tag, len, most });
        }
        if tag == b'Z' {
            self.logged_in = true;
        }
        if self.logged_in || !matches!(tag, b'S' | b'N' | b'A') {
            return Ok(());
        }
        self.login_bytes += 1 + len;
        self.login_messages += 1;
        if self.login_bytes > MAX_LOGIN_ASYNC_BYTES
            || self.login_messages > MAX_LOGIN_ASYNC_MESSAGES
        {
            return Err(Refusal::LoginFlood);
        }
        Ok(())
    }

    /// Checks the name of a whole `ParameterStatus` (its body).
    fn parameter(&mut self, body: &[u8]) -> Result<(), Refusal> {
        let name = body.split(|&b| b == 0).next().unwrap_or_default();
        if self.names.iter().any(|known| **known == *name) {
            return Ok(());
        }
        if self.names.len() >= MAX_PARAMETERS {
            return Err(Refusal::TooManyParameters);
        }
        self.names.push(name.into());
        Ok(())
    }
}

/// A message's kind, for errors.
fn kind(tag: u8) -> String {
    let name = match tag {
        b'S' => "ParameterStatus",
        b'N' => "NoticeResponse",
        b'E' => "ErrorResponse",
        b'A' => "NotificationResponse",
        _ => return format!("a message '{}'", tag.escape_ascii()),
    };
    format!("a message '{}' ({name})", tag as char)
}

/// A size for errors: in MiB or KiB when it is a whole number of them.
fn size(bytes: usize) -> String {
    if bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
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
    /// Bytes of the current message's body still to pass (a message passed as it arrives).
    body_left: usize,
    auth: Auth,
    kept: Kept,
    /// The header at `checked` is counted already (a message held until it is whole).
    counted: bool,
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
                untrusted: None,
                asked: false,
                sasl: false,
                sasl_final: false,
            },
            kept: Kept::default(),
            counted: false,
            failed: None,
            shared,
            chunk: vec![0; READ_CHUNK].into_boxed_slice(),
        }
    }

    /// Refuses every authentication request that needs the password, for the reason given
    /// (see [`crate::socket::untrusted_server`]).
    pub fn untrusted(mut self, why: Option<String>) -> Guard<S> {
        self.auth.untrusted = why;
        self
    }

    /// Walks the framing of what arrived, moving `checked` past every byte that may go up.
    fn scan(&mut self) -> Result<(), Refusal> {
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
                return Err(Refusal::BadLength { tag, len });
            }
            if !self.counted {
                self.kept.header(tag, len)?;
                self.counted = true;
            }
            // An authentication request and a parameter status are held until whole and
            // checked; any other message passes as it arrives.
            match tag {
                b'R' | b'S' => {
                    if tag == b'R' && len > MAX_AUTH_MESSAGE {
                        return Err(Refusal::LongAuthRequest(len));
                    }
                    if head.len() < 1 + len {
                        return Ok(());
                    }
                    let body = &head[5..1 + len];
                    if tag == b'R' {
                        self.auth.check(body)?;
                    } else {
                        self.kept.parameter(body)?;
                    }
                    self.checked += 1 + len;
                    self.counted = false;
                }
                _ => {
                    self.counted = false;
                    self.checked += 5;
                    self.body_left = len - 4;
                }
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
                let reason = reason.to_string();
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

    /// Feeds `input` in pieces of `step` bytes; returns what was checked and the refusal (the
    /// stream hands nothing more up once it refused).
    fn feed(allowed: RequireAuth, input: &[u8], step: usize) -> (Vec<u8>, Option<String>) {
        let mut guard = Guard::new((), allowed, Shared::new());
        let mut passed = Vec::new();
        for piece in input.chunks(step) {
            guard.pending.extend_from_slice(piece);
            let outcome = guard.scan();
            passed.extend_from_slice(&guard.pending[..guard.checked]);
            if let Err(e) = outcome {
                return (passed, Some(e.to_string()));
            }
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

    fn parameter(name: &str, value: &str) -> Vec<u8> {
        msg(b'S', format!("{name}\0{value}\0").as_bytes())
    }

    fn notice(text: &str) -> Vec<u8> {
        msg(b'N', format!("SNOTICE\0C00000\0M{text}\0\0").as_bytes())
    }

    /// What PostgreSQL 15 sends to a trust login, in order.
    fn login() -> Vec<u8> {
        let mut out = auth(0, b"");
        for (name, value) in [
            ("application_name", "crond"),
            ("client_encoding", "UTF8"),
            ("DateStyle", "ISO, MDY"),
            ("default_transaction_read_only", "off"),
            ("in_hot_standby", "off"),
            ("integer_datetimes", "on"),
            ("IntervalStyle", "postgres"),
            ("is_superuser", "on"),
            ("server_encoding", "UTF8"),
            ("server_version", "15.18 (Debian 15.18-0+deb12u1)"),
            ("session_authorization", "postgres"),
            ("standard_conforming_strings", "on"),
            ("TimeZone", "Etc/UTC"),
        ] {
            out.extend(parameter(name, value));
        }
        out.extend(msg(b'K', &[0; 8]));
        out
    }

    #[test]
    fn a_real_login_passes_whole_in_any_pieces() {
        let mut input = login();
        input.extend(notice("a debug message at login"));
        input.extend(msg(b'Z', b"I"));
        for step in [1, 5, 7, 1000] {
            assert_eq!(feed(tcp_default(), &input, step), (input.clone(), None));
        }
    }

    #[test]
    fn a_parameter_status_over_libpqs_limit_is_refused_at_its_header() {
        let fits = parameter("x", &"v".repeat(MAX_PARAMETER_STATUS - 7));
        assert_eq!(fits.len(), 1 + MAX_PARAMETER_STATUS);
        let input = [auth(0, b""), fits].concat();
        assert_eq!(feed(tcp_default(), &input, 4096), (input.clone(), None));
        let mut over = auth(0, b"");
        over.push(b'S');
        over.extend_from_slice(&(4u32 << 20).to_be_bytes());
        let (passed, refused) = feed(tcp_default(), &over, 100);
        assert_eq!(passed, auth(0, b""));
        assert_eq!(
            refused.as_deref(),
            Some(
                "the server sent a message 'S' (ParameterStatus) of 4194304 bytes, over the \
                 limit of 30000 bytes"
            )
        );
    }

    #[test]
    fn notices_errors_and_notifications_over_64_kib_are_refused_at_their_header() {
        for tag in [b'N', b'E', b'A'] {
            let fits = msg(tag, &vec![b'x'; MAX_NOTICE_BYTES - 4]);
            let input = [auth(0, b""), msg(b'Z', b"I"), fits].concat();
            assert_eq!(feed(tcp_default(), &input, 4096), (input.clone(), None));
            let over = [auth(0, b""), msg(tag, &vec![b'x'; MAX_NOTICE_BYTES - 3])].concat();
            let e = feed(tcp_default(), &over, 4096).1.expect("refused");
            assert!(
                e.starts_with(&format!("the server sent a message '{}' (", tag as char))
                    && e.ends_with(" of 65537 bytes, over the limit of 64 KiB"),
                "{e}"
            );
        }
    }

    #[test]
    fn before_the_login_ends_its_asynchronous_messages_are_bounded_in_all() {
        // Notices of 2 KB: the mebibyte is reached before the count.
        let mut input = auth(0, b"");
        let one = notice(&"n".repeat(2000));
        let fit = MAX_LOGIN_ASYNC_BYTES / one.len();
        for _ in 0..fit {
            input.extend_from_slice(&one);
        }
        let whole = input.len();
        input.extend_from_slice(&one);
        let (passed, refused) = feed(tcp_default(), &input, 64 << 10);
        assert_eq!(passed.len(), whole, "all but the last notice passed");
        assert_eq!(
            refused.as_deref(),
            Some(
                "the server sent more than 1 MiB or 1000 parameter statuses, notices and \
                 notifications before the login ended"
            )
        );
        // Empty notices: the count is reached first; parameter statuses count too.
        let mut input = [auth(0, b""), parameter("a", "1")].concat();
        for _ in 1..MAX_LOGIN_ASYNC_MESSAGES {
            input.extend(msg(b'N', b"\0"));
        }
        let whole = input.len();
        input.extend(parameter("a", "2"));
        let (passed, refused) = feed(tcp_default(), &input, 100);
        assert_eq!(passed.len(), whole);
        assert!(refused.expect("refused").contains("before the login ended"));
    }

    #[test]
    fn after_the_login_notices_pass_without_a_total() {
        // PostgreSQL's RAISE NOTICE in a loop: thousands of notices in one statement.
        let mut input = login();
        input.extend(msg(b'Z', b"I"));
        let one = notice(&"n".repeat(200));
        for _ in 0..(2 * MAX_LOGIN_ASYNC_BYTES / one.len()) {
            input.extend_from_slice(&one);
        }
        input.extend(parameter("application_name", "again"));
        input.extend(msg(b'Z', b"I"));
        let (passed, refused) = feed(tcp_default(), &input, 64 << 10);
        assert_eq!(refused, None);
        assert_eq!(passed.len(), input.len());
    }

    #[test]
    fn more_than_64_parameter_names_are_refused_and_a_name_sent_again_is_not_counted() {
        let mut input = [login(), msg(b'Z', b"I")].concat();
        for i in 13..MAX_PARAMETERS {
            input.extend(parameter(&format!("custom.p{i}"), "1"));
        }
        for _ in 0..MAX_PARAMETERS {
            input.extend(parameter("TimeZone", "UTC"));
        }
        let whole = input.len();
        input.extend(parameter("one.more", "1"));
        let (passed, refused) = feed(tcp_default(), &input, 333);
        assert_eq!(passed.len(), whole);
        assert_eq!(
            refused.as_deref(),
            Some("the server reported more than 64 parameters (ParameterStatus)")
        );
    }

    #[test]
    fn an_untrusted_server_is_sent_no_password_in_any_form_and_may_let_the_client_in() {
        let socket = crond::cluster::conninfo::parse("host=/tmp", "u")
            .expect("conninfo")
            .require_auth;
        let why = "the server on /tmp/.s.PGSQL.5432 runs as uid 1000";
        for (request, what) in [
            (auth(3, b""), "the password in clear text"),
            (auth(5, b"salt"), "an md5 password hash"),
            (
                auth(10, b"SCRAM-SHA-256\0\0"),
                "SCRAM-SHA-256 authentication",
            ),
        ] {
            let mut guard =
                Guard::new((), socket.clone(), Shared::new()).untrusted(Some(why.into()));
            guard.pending.extend_from_slice(&request);
            assert_eq!(
                guard.scan().map_err(|e| e.to_string()),
                Err(format!(
                    "{why}: it asked for {what}; refused without sending it"
                ))
            );
            assert_eq!(guard.checked, 0, "nothing of it passed");
            // The same request from a trusted server passes.
            assert_eq!(feed(socket.clone(), &request, 3), (request.clone(), None));
        }
        let trust = [auth(0, b""), msg(b'Z', b"I")].concat();
        let mut guard = Guard::new((), socket, Shared::new()).untrusted(Some(why.into()));
        guard.pending.extend_from_slice(&trust);
        assert_eq!(guard.scan(), Ok(()));
        assert_eq!(guard.checked, trust.len());
    }

    #[test]
    fn other_messages_pass_as_they_arrive() {
        let row = msg(b'D', &[7; 100]);
        let (passed, refused) = feed(tcp_default(), &row, 10);
        assert_eq!(refused, None);
        assert_eq!(passed, row, "a body passes before its message is whole");
    }
}
