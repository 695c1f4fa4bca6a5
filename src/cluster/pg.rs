//! A small synchronous PostgreSQL client: one blocking socket, no threads, every call bounded by
//! a deadline.
//!
//! Messages are encoded and decoded by `postgres_protocol` (which also does md5 and
//! SCRAM-SHA-256); this module frames them, bounds them, and drives the two query protocols.
//! Parameters and results are text only: the SQL casts what it needs (`$1::bigint[]`).
//!
//! Every read and write gets the time left before the call's deadline as its socket timeout, so
//! a call returns within its timeout (connect: `connect_timeout_s`; queries: [`Client::timeout`])
//! whatever the server does. Two waits are outside it: resolving a TCP host name (the system
//! resolver's own timeouts apply) and connecting a Unix socket whose listen queue is full.
//!
//! A failed write to a peer that has gone raises SIGPIPE: the process must keep it ignored, as
//! Rust's runtime leaves it.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use fallible_iterator::FallibleIterator;
use postgres_protocol::IsNull;
use postgres_protocol::authentication::md5_hash;
use postgres_protocol::authentication::sasl::{ChannelBinding, SCRAM_SHA_256, ScramSha256};
use postgres_protocol::message::backend::{ErrorFields, Message};
use postgres_protocol::message::frontend;

use super::conninfo::{ConnInfo, Host};

/// The largest message accepted from the server; a longer one is a protocol error.
pub const MAX_MESSAGE_BYTES: usize = 64 << 20;
/// The most result text one query may return (the sum of its values' lengths).
pub const MAX_RESULT_BYTES: usize = 64 << 20;
/// The query timeout until [`Client::set_timeout`] changes it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

/// How much is read from the socket at a time.
const READ_CHUNK: usize = 16 << 10;

/// What went wrong with a call.
#[derive(Debug)]
pub enum Error {
    /// The socket failed, closed, or the call's deadline passed (kind `TimedOut`).
    Io(io::Error),
    /// The server reported an error.
    Server {
        /// `ERROR`, `FATAL` or `PANIC` (the non-localised severity).
        severity: String,
        /// The SQLSTATE, e.g. `23505` for a unique violation.
        code: String,
        /// The server's primary message.
        message: String,
    },
    /// Logging in failed: a wrong or missing password, or a method this client lacks.
    Auth(String),
    /// The server sent something this client cannot take (malformed, unexpected, too big).
    Protocol(String),
}

impl Error {
    /// The connection is unusable and the caller must connect again: any I/O or protocol error,
    /// and server errors that end the session (FATAL, PANIC, SQLSTATE classes 08 and 57P0x:
    /// connection failures, shutdowns). False for [`Error::Auth`], where reconnecting with the
    /// same password is no cure, and for ordinary server errors, after which the client goes on.
    pub fn is_connection_lost(&self) -> bool {
        match self {
            Error::Io(_) | Error::Protocol(_) => true,
            Error::Server { severity, code, .. } => {
                severity == "FATAL"
                    || severity == "PANIC"
                    || code.starts_with("08")
                    || code.starts_with("57P0")
            }
            Error::Auth(_) => false,
        }
    }

    /// The SQLSTATE of a server error.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Server { code, .. } => Some(code),
            _ => None,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "PostgreSQL connection: {e}"),
            Error::Server {
                severity,
                code,
                message,
            } => write!(f, "{severity} {code}: {}", one_line(message)),
            Error::Auth(m) => write!(f, "PostgreSQL authentication: {}", one_line(m)),
            Error::Protocol(m) => write!(f, "PostgreSQL protocol: {}", one_line(m)),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}

/// Newlines in server text become spaces: every error is one line.
fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

pub use crate::cronctl::conn::Rows;

/// The socket to the server.
#[derive(Debug)]
enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn set_read_timeout(&self, t: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(Some(t)),
            Stream::Tcp(s) => s.set_read_timeout(Some(t)),
        }
    }

    fn set_write_timeout(&self, t: Duration) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(Some(t)),
            Stream::Tcp(s) => s.set_write_timeout(Some(t)),
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.write_all(buf),
            Stream::Tcp(s) => s.write_all(buf),
        }
    }
}

/// A logged-in session with one server. Not for sharing between threads; one call at a time.
pub struct Client {
    stream: Stream,
    /// Bytes received and not yet taken as messages.
    input: BytesMut,
    /// Messages being built for the next write.
    output: BytesMut,
    /// The time allowed for one query or batch.
    timeout: Duration,
    /// The current call's deadline.
    deadline: Instant,
    /// A lost connection: every later call fails at once.
    broken: bool,
}

/// The buffers stay out: the output may hold a password message or its md5 hash.
impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("stream", &self.stream)
            .field("timeout", &self.timeout)
            .field("broken", &self.broken)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Connects, logs in (trust, cleartext password, md5 or SCRAM-SHA-256; `password` is used
    /// only if the server asks for one) and waits until the server is ready for queries, all
    /// within `info.connect_timeout_s`.
    pub fn connect(info: &ConnInfo, password: Option<&str>) -> Result<Client, Error> {
        let limit = Duration::from_secs(u64::from(info.connect_timeout_s.max(1)));
        let deadline = Instant::now() + limit;
        let stream = open(info, deadline, limit)?;
        let mut client = Client {
            stream,
            input: BytesMut::new(),
            output: BytesMut::new(),
            timeout: limit,
            deadline,
            broken: false,
        };
        client.startup(info, password)?;
        client.timeout = DEFAULT_TIMEOUT;
        Ok(client)
    }

    /// Sets the time allowed for each later [`Client::query`] or [`Client::batch`] (at least one
    /// millisecond). A call that runs out of time returns an `Io` error of kind `TimedOut`, and
    /// the connection is then lost: the server may still be working on the statement.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout.max(Duration::from_millis(1));
    }

    /// The time allowed for each query or batch.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs one statement with the extended query protocol (unnamed statement and portal).
    /// Parameters are sent as text (`None` is NULL) with their types left for the server to
    /// infer; every result column comes back as text. SQL with a NUL byte, or more than 32767
    /// parameters, is refused with an `Io` error of kind `InvalidInput` before anything is sent,
    /// and the client stays usable.
    pub fn query(&mut self, sql: &str, params: &[Option<&str>]) -> Result<Rows, Error> {
        check_sql(sql)?;
        if params.len() > usize::from(u16::MAX >> 1) {
            return Err(invalid_input(format!(
                "{} parameters are more than the protocol allows",
                params.len()
            )));
        }
        self.begin_call()?;
        let result = self.query_inner(sql, params);
        self.end_call(result)
    }

    /// Runs one or more statements without parameters with the simple query protocol (schema
    /// creation). The first failing statement ends the batch with its error.
    pub fn batch(&mut self, sql: &str) -> Result<(), Error> {
        check_sql(sql)?;
        self.begin_call()?;
        let result = self.batch_inner(sql);
        self.end_call(result)
    }

    /// Says goodbye to the server (Terminate) and closes the socket.
    pub fn close(mut self) {
        if !self.broken {
            self.deadline = Instant::now() + self.timeout;
            frontend::terminate(&mut self.output);
            let _ = self.send();
        }
    }

    fn begin_call(&mut self) -> Result<(), Error> {
        if self.broken {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::NotConnected,
                "the connection was lost earlier: connect again",
            )));
        }
        self.deadline = Instant::now() + self.timeout;
        self.output.clear();
        Ok(())
    }

    fn end_call<T>(&mut self, result: Result<T, Error>) -> Result<T, Error> {
        if let Err(e) = &result
            && e.is_connection_lost()
        {
            self.broken = true;
        }
        result
    }

    fn query_inner(&mut self, sql: &str, params: &[Option<&str>]) -> Result<Rows, Error> {
        frontend::parse("", sql, std::iter::empty(), &mut self.output)?;
        let bound = frontend::bind(
            "",
            "",
            std::iter::empty(),
            params.iter(),
            |param, buf| match param {
                Some(text) => {
                    buf.extend_from_slice(text.as_bytes());
                    Ok(IsNull::No)
                }
                None => Ok(IsNull::Yes),
            },
            std::iter::empty(),
            &mut self.output,
        );
        if bound.is_err() {
            return Err(Error::Protocol(
                "the parameters could not be encoded".into(),
            ));
        }
        frontend::describe(b'P', "", &mut self.output)?;
        frontend::execute("", 0, &mut self.output)?;
        frontend::sync(&mut self.output);
        self.send()?;
        self.collect()
    }

    fn batch_inner(&mut self, sql: &str) -> Result<(), Error> {
        frontend::query(sql, &mut self.output)?;
        self.send()?;
        self.collect().map(|_| ())
    }

    /// Reads the answer to what was sent, up to ReadyForQuery. A server error of severity ERROR
    /// is returned after ReadyForQuery, so the session goes on; a FATAL one at once.
    fn collect(&mut self) -> Result<Rows, Error> {
        let mut rows = Rows::default();
        let mut failed: Option<Error> = None;
        let mut text_bytes = 0usize;
        loop {
            let (tag, message) = self.receive()?;
            match message {
                Message::ParseComplete
                | Message::BindComplete
                | Message::NoData
                | Message::EmptyQueryResponse
                | Message::CopyOutResponse(_)
                | Message::CopyData(_)
                | Message::CopyDone => {}
                Message::RowDescription(body) => {
                    rows.columns = body
                        .fields()
                        .map(|field| Ok(field.name().to_string()))
                        .collect()
                        .map_err(|e| malformed("RowDescription", &e))?;
                    rows.rows.clear();
                }
                Message::DataRow(body) => {
                    let mut values = Vec::with_capacity(rows.columns.len());
                    let mut ranges = body.ranges();
                    while let Some(range) = ranges.next().map_err(|e| malformed("DataRow", &e))? {
                        let value = match range {
                            None => None,
                            Some(range) => {
                                let bytes = body.buffer().get(range).ok_or_else(|| {
                                    Error::Protocol("a DataRow value is out of bounds".into())
                                })?;
                                text_bytes = text_bytes.saturating_add(bytes.len());
                                let text = std::str::from_utf8(bytes).map_err(|_| {
                                    Error::Protocol(
                                        "the server sent a value that is not UTF-8".into(),
                                    )
                                })?;
                                Some(text.to_string())
                            }
                        };
                        values.push(value);
                    }
                    if values.len() != rows.columns.len() {
                        return Err(Error::Protocol(format!(
                            "a row of {} values for {} columns",
                            values.len(),
                            rows.columns.len()
                        )));
                    }
                    if text_bytes > MAX_RESULT_BYTES {
                        failed.get_or_insert(Error::Protocol(format!(
                            "the result is over {} MiB",
                            MAX_RESULT_BYTES >> 20
                        )));
                    } else if failed.is_none() {
                        rows.rows.push(values);
                    }
                }
                Message::CommandComplete(body) => {
                    let command = body.tag().map_err(|e| malformed("CommandComplete", &e))?;
                    rows.affected = affected_count(command);
                }
                Message::CopyInResponse(_) => {
                    frontend::copy_fail("COPY FROM STDIN is not supported", &mut self.output)?;
                    self.send()?;
                }
                Message::ErrorResponse(body) => {
                    let error = server_error(body.fields())?;
                    if error.is_connection_lost() {
                        return Err(error);
                    }
                    failed.get_or_insert(error);
                }
                Message::ReadyForQuery(_) => {
                    return match failed {
                        Some(e) => Err(e),
                        None => Ok(rows),
                    };
                }
                Message::NoticeResponse(_)
                | Message::ParameterStatus(_)
                | Message::NotificationResponse(_) => {}
                _ => return Err(unexpected(tag)),
            }
        }
    }

    /// The startup message, authentication, and the wait for ReadyForQuery.
    fn startup(&mut self, info: &ConnInfo, password: Option<&str>) -> Result<(), Error> {
        frontend::startup_message(
            [
                ("user", info.user.as_str()),
                ("database", info.dbname.as_str()),
                ("application_name", info.application_name.as_str()),
                ("client_encoding", "UTF8"),
            ],
            &mut self.output,
        )
        .map_err(|_| Error::Protocol("a connection setting contains a NUL byte".into()))?;
        self.send()?;
        self.authenticate(&info.user, password)?;
        loop {
            let (tag, message) = self.receive()?;
            match message {
                Message::ReadyForQuery(_) => return Ok(()),
                Message::BackendKeyData(_)
                | Message::ParameterStatus(_)
                | Message::NoticeResponse(_)
                | Message::NotificationResponse(_) => {}
                Message::ErrorResponse(body) => return Err(server_error(body.fields())?),
                _ => return Err(unexpected(tag)),
            }
        }
    }

    /// Answers the server's authentication requests until AuthenticationOk.
    fn authenticate(&mut self, user: &str, password: Option<&str>) -> Result<(), Error> {
        let mut scram: Option<ScramSha256> = None;
        loop {
            let (tag, message) = self.receive()?;
            match message {
                Message::AuthenticationOk => return Ok(()),
                Message::AuthenticationCleartextPassword => {
                    let pw = needed(password, "a password")?;
                    frontend::password_message(pw.as_bytes(), &mut self.output)
                        .map_err(|_| Error::Auth("the password contains a NUL byte".into()))?;
                    self.send()?;
                }
                Message::AuthenticationMd5Password(body) => {
                    let pw = needed(password, "an md5 password")?;
                    let hash = md5_hash(user.as_bytes(), pw.as_bytes(), body.salt());
                    frontend::password_message(hash.as_bytes(), &mut self.output)?;
                    self.send()?;
                }
                Message::AuthenticationSasl(body) => {
                    let pw = needed(password, "a SCRAM-SHA-256 password")?;
                    let mut offered = body.mechanisms();
                    let mut found = false;
                    while let Some(name) = offered
                        .next()
                        .map_err(|e| malformed("AuthenticationSASL", &e))?
                    {
                        found |= name == SCRAM_SHA_256;
                    }
                    if !found {
                        return Err(Error::Auth(
                            "the server offers no SASL mechanism this client has (SCRAM-SHA-256)"
                                .into(),
                        ));
                    }
                    let state = ScramSha256::new(pw.as_bytes(), ChannelBinding::unsupported());
                    frontend::sasl_initial_response(
                        SCRAM_SHA_256,
                        state.message(),
                        &mut self.output,
                    )?;
                    self.send()?;
                    scram = Some(state);
                }
                Message::AuthenticationSaslContinue(body) => {
                    let Some(state) = scram.as_mut() else {
                        return Err(unexpected(tag));
                    };
                    state.update(body.data()).map_err(|e| {
                        Error::Auth(format!("the server's SCRAM challenge is invalid: {e}"))
                    })?;
                    frontend::sasl_response(state.message(), &mut self.output)?;
                    self.send()?;
                }
                Message::AuthenticationSaslFinal(body) => {
                    let Some(mut state) = scram.take() else {
                        return Err(unexpected(tag));
                    };
                    state.finish(body.data()).map_err(|e| {
                        Error::Auth(format!(
                            "the server did not prove it knows the password (SCRAM): {e}"
                        ))
                    })?;
                }
                Message::AuthenticationKerberosV5
                | Message::AuthenticationScmCredential
                | Message::AuthenticationGss
                | Message::AuthenticationGssContinue(_)
                | Message::AuthenticationSspi => {
                    return Err(Error::Auth(
                        "the server asks for Kerberos, GSSAPI or SSPI, which this client lacks: \
                         use trust, peer, md5 or scram-sha-256 in pg_hba.conf"
                            .into(),
                    ));
                }
                Message::NoticeResponse(_) | Message::ParameterStatus(_) => {}
                Message::ErrorResponse(body) => {
                    let error = server_error(body.fields())?;
                    return Err(match error {
                        Error::Server { code, message, .. } if code.starts_with("28") => {
                            Error::Auth(format!("{message} (SQLSTATE {code})"))
                        }
                        other => other,
                    });
                }
                _ => return Err(unexpected(tag)),
            }
        }
    }

    /// The time left before the call's deadline, or a timeout error.
    fn remaining(&self) -> Result<Duration, Error> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(self.timed_out());
        }
        Ok(left)
    }

    fn timed_out(&self) -> Error {
        Error::Io(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("no answer from the server within {:?}", self.timeout),
        ))
    }

    /// Writes what was built in `output`.
    fn send(&mut self) -> Result<(), Error> {
        let left = self.remaining()?;
        self.stream.set_write_timeout(left)?;
        let written = self.stream.write_all(&self.output);
        self.output.clear();
        match written {
            Ok(()) => Ok(()),
            Err(e) if is_timeout(&e) => Err(self.timed_out()),
            Err(e) => Err(Error::Io(e)),
        }
    }

    /// Reads one whole message: its tag and the message decoded.
    fn receive(&mut self) -> Result<(u8, Message), Error> {
        self.fill(5)?;
        let tag = self.input[0];
        let len = u32::from_be_bytes([self.input[1], self.input[2], self.input[3], self.input[4]]);
        let len = usize::try_from(len).unwrap_or(usize::MAX);
        if len < 4 {
            return Err(Error::Protocol(format!(
                "message '{}' has an invalid length {len}",
                tag.escape_ascii()
            )));
        }
        if len > MAX_MESSAGE_BYTES {
            return Err(Error::Protocol(format!(
                "message '{}' of {len} bytes is over the limit of {} MiB",
                tag.escape_ascii(),
                MAX_MESSAGE_BYTES >> 20
            )));
        }
        self.fill(1 + len)?;
        match Message::parse(&mut self.input) {
            Ok(Some(message)) => Ok((tag, message)),
            Ok(None) => Err(Error::Protocol("a message was cut short".into())),
            Err(e) => Err(malformed_tag(tag, &e)),
        }
    }

    /// Reads until `input` holds at least `want` bytes. The buffer grows with what arrives, never
    /// ahead of it.
    fn fill(&mut self, want: usize) -> Result<(), Error> {
        let mut chunk = [0u8; READ_CHUNK];
        while self.input.len() < want {
            let left = self.remaining()?;
            self.stream.set_read_timeout(left)?;
            match self.stream.read(&mut chunk) {
                Ok(0) => {
                    return Err(Error::Io(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the server closed the connection",
                    )));
                }
                Ok(n) => self.input.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if is_timeout(&e) => return Err(self.timed_out()),
                Err(e) => return Err(Error::Io(e)),
            }
        }
        Ok(())
    }
}

/// Opens the socket: the Unix socket in the directory, or each address of the TCP host in turn.
fn open(info: &ConnInfo, deadline: Instant, limit: Duration) -> Result<Stream, Error> {
    match &info.host {
        Host::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{}", info.port));
            UnixStream::connect(&path).map(Stream::Unix).map_err(|e| {
                Error::Io(io::Error::new(
                    e.kind(),
                    format!("connect to {}: {e}", path.display()),
                ))
            })
        }
        Host::Tcp(name) => {
            let addrs = (name.as_str(), info.port)
                .to_socket_addrs()
                .map_err(|e| Error::Io(io::Error::new(e.kind(), format!("resolve {name}: {e}"))))?;
            let mut last: Option<io::Error> = None;
            for addr in addrs {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                match TcpStream::connect_timeout(&addr, left) {
                    Ok(stream) => {
                        // Login messages are small; waiting to fill a packet only adds latency.
                        let _ = stream.set_nodelay(true);
                        return Ok(Stream::Tcp(stream));
                    }
                    Err(e) => {
                        last = Some(io::Error::new(e.kind(), format!("connect to {addr}: {e}")))
                    }
                }
            }
            Err(Error::Io(last.unwrap_or_else(|| {
                io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "connect to {name} port {}: no address answered within {limit:?}",
                        info.port
                    ),
                )
            })))
        }
    }
}

/// A read or write that ran out of its socket timeout.
fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// The password, or the Auth error for a server that wants one when none was found.
fn needed<'a>(password: Option<&'a str>, what: &str) -> Result<&'a str, Error> {
    password.ok_or_else(|| {
        Error::Auth(format!(
            "the server asks for {what} and none was found: put it in the passfile"
        ))
    })
}

/// The count at the end of a command tag: `INSERT 0 3` is 3, `UPDATE 2` is 2, `CREATE TABLE` 0.
fn affected_count(tag: &str) -> u64 {
    tag.rsplit(' ')
        .next()
        .and_then(|last| last.parse().ok())
        .unwrap_or(0)
}

/// An ErrorResponse's fields as an [`Error::Server`].
fn server_error(mut fields: ErrorFields<'_>) -> Result<Error, Error> {
    let mut severity = String::new();
    let mut localised = String::new();
    let mut code = String::new();
    let mut message = String::new();
    while let Some(field) = fields.next().map_err(|e| malformed("ErrorResponse", &e))? {
        let value = String::from_utf8_lossy(field.value_bytes()).into_owned();
        match field.type_() {
            b'V' => severity = value,
            b'S' => localised = value,
            b'C' => code = value,
            b'M' => message = value,
            _ => {}
        }
    }
    if severity.is_empty() {
        severity = localised;
    }
    Ok(Error::Server {
        severity,
        code,
        message,
    })
}

/// SQL the protocol cannot carry, refused before anything is sent (the client stays usable).
fn check_sql(sql: &str) -> Result<(), Error> {
    if sql.contains('\0') {
        return Err(invalid_input("the SQL contains a NUL byte".into()));
    }
    Ok(())
}

fn invalid_input(message: String) -> Error {
    Error::Io(io::Error::new(io::ErrorKind::InvalidInput, message))
}

fn malformed(what: &str, e: &io::Error) -> Error {
    Error::Protocol(format!("malformed {what} message: {e}"))
}

fn malformed_tag(tag: u8, e: &io::Error) -> Error {
    Error::Protocol(format!("malformed message '{}': {e}", tag.escape_ascii()))
}

fn unexpected(tag: u8) -> Error {
    Error::Protocol(format!(
        "unexpected message '{}' from the server",
        tag.escape_ascii()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_affected_count_is_the_last_number_of_the_tag() {
        assert_eq!(affected_count("INSERT 0 3"), 3);
        assert_eq!(affected_count("UPDATE 2"), 2);
        assert_eq!(affected_count("DELETE 0"), 0);
        assert_eq!(affected_count("SELECT 12"), 12);
        assert_eq!(affected_count("CREATE TABLE"), 0);
        assert_eq!(affected_count(""), 0);
    }

    fn server(severity: &str, code: &str) -> Error {
        Error::Server {
            severity: severity.into(),
            code: code.into(),
            message: "m".into(),
        }
    }

    #[test]
    fn io_protocol_fatal_and_shutdown_errors_mean_the_connection_is_lost() {
        assert!(Error::Io(io::Error::other("x")).is_connection_lost());
        assert!(Error::Protocol("x".into()).is_connection_lost());
        assert!(server("FATAL", "3D000").is_connection_lost());
        assert!(server("PANIC", "XX000").is_connection_lost());
        assert!(server("ERROR", "57P01").is_connection_lost());
        assert!(server("ERROR", "08006").is_connection_lost());
        assert!(!server("ERROR", "23505").is_connection_lost());
        assert!(
            !server("ERROR", "57014").is_connection_lost(),
            "a cancelled query"
        );
        assert!(!Error::Auth("x".into()).is_connection_lost());
    }

    #[test]
    fn a_server_error_displays_as_one_line_with_its_sqlstate() {
        let e = Error::Server {
            severity: "ERROR".into(),
            code: "23505".into(),
            message: "duplicate key value\nviolates".into(),
        };
        assert_eq!(e.to_string(), "ERROR 23505: duplicate key value violates");
        assert_eq!(e.code(), Some("23505"));
    }

    /// An ErrorResponse body as the server sends it.
    fn error_body(fields: &[(u8, &[u8])]) -> BytesMut {
        let mut body = Vec::new();
        for (t, v) in fields {
            body.push(*t);
            body.extend_from_slice(v);
            body.push(0);
        }
        body.push(0);
        let mut msg = BytesMut::new();
        msg.extend_from_slice(b"E");
        msg.extend_from_slice(&u32::try_from(body.len() + 4).unwrap_or(0).to_be_bytes());
        msg.extend_from_slice(&body);
        msg
    }

    fn parse_error(mut msg: BytesMut) -> Error {
        match Message::parse(&mut msg) {
            Ok(Some(Message::ErrorResponse(body))) => match server_error(body.fields()) {
                Ok(e) | Err(e) => e,
            },
            _ => panic!("not an ErrorResponse"),
        }
    }

    #[test]
    fn a_server_error_prefers_the_unlocalised_severity_and_tolerates_bad_utf8() {
        let e = parse_error(error_body(&[
            (b'S', b"FEHLER"),
            (b'V', b"ERROR"),
            (b'C', b"42P01"),
            (b'M', b"Relation \xff fehlt"),
        ]));
        match e {
            Error::Server {
                severity,
                code,
                message,
            } => {
                assert_eq!(severity, "ERROR");
                assert_eq!(code, "42P01");
                assert_eq!(message, "Relation \u{fffd} fehlt");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_truncated_error_response_is_a_protocol_error() {
        let mut msg = BytesMut::new();
        msg.extend_from_slice(b"E\0\0\0\x07Cab");
        let Ok(Some(Message::ErrorResponse(body))) = Message::parse(&mut msg) else {
            panic!("not parsed");
        };
        assert!(matches!(
            server_error(body.fields()),
            Err(Error::Protocol(_))
        ));
    }

    /// A client logged in to a fake server that has sent `reply`; the server's end is returned
    /// too (dropping it closes the connection).
    fn fake(reply: &[u8]) -> (Client, UnixStream) {
        let (ours, mut theirs) = UnixStream::pair().expect("socketpair");
        theirs.write_all(reply).expect("write the reply");
        let mut client = Client {
            stream: Stream::Unix(ours),
            input: BytesMut::new(),
            output: BytesMut::new(),
            timeout: DEFAULT_TIMEOUT,
            deadline: Instant::now(),
            broken: false,
        };
        client.set_timeout(Duration::from_millis(300));
        (client, theirs)
    }

    /// One backend message: tag, length, body.
    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![tag];
        out.extend_from_slice(&u32::try_from(body.len() + 4).unwrap_or(0).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    /// RowDescription of one text column named `c`.
    fn one_column() -> Vec<u8> {
        let mut body = vec![0, 1, b'c', 0];
        body.extend_from_slice(&[0; 4]); // table oid
        body.extend_from_slice(&[0; 2]); // column number
        body.extend_from_slice(&25u32.to_be_bytes()); // text
        body.extend_from_slice(&(-1i16).to_be_bytes());
        body.extend_from_slice(&(-1i32).to_be_bytes());
        body.extend_from_slice(&[0; 2]); // text format
        msg(b'T', &body)
    }

    fn data_row(values: &[Option<&[u8]>]) -> Vec<u8> {
        let mut body = u16::try_from(values.len())
            .unwrap_or(0)
            .to_be_bytes()
            .to_vec();
        for v in values {
            match v {
                None => body.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(v) => {
                    body.extend_from_slice(&u32::try_from(v.len()).unwrap_or(0).to_be_bytes());
                    body.extend_from_slice(v);
                }
            }
        }
        msg(b'D', &body)
    }

    fn answer(parts: &[Vec<u8>]) -> Vec<u8> {
        let mut out = msg(b'1', b"");
        out.extend(msg(b'2', b""));
        for p in parts {
            out.extend_from_slice(p);
        }
        out
    }

    #[test]
    fn debug_shows_no_buffer() {
        let (mut client, _server) = fake(b"");
        client.output.extend_from_slice(b"p\0\0\0\x0dsecret-pw\0");
        let shown = format!("{client:?}");
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("broken: false"), "{shown}");
    }

    #[test]
    fn sql_the_protocol_cannot_carry_is_refused_and_the_client_stays_usable() {
        let reply = answer(&[msg(b'n', b""), msg(b'C', b"SELECT 0\0"), msg(b'Z', b"I")]);
        let (mut client, _server) = fake(&reply);
        let nul = client.query("SELECT 1\0", &[]).expect_err("a NUL");
        assert!(matches!(&nul, Error::Io(e) if e.kind() == io::ErrorKind::InvalidInput));
        assert!(client.batch("\0").is_err());
        let many = vec![None; 40_000];
        assert!(client.query("SELECT", &many).is_err());
        assert!(client.query("SELECT", &[]).is_ok());
    }

    #[test]
    fn a_fake_answer_is_read_into_rows() {
        let reply = answer(&[
            msg(b'S', b"TimeZone\0UTC\0"),
            one_column(),
            data_row(&[Some(b"a")]),
            msg(b'N', b"SNOTICE\0Mhello\0\0"),
            data_row(&[None]),
            msg(b'C', b"SELECT 2\0"),
            msg(b'Z', b"I"),
        ]);
        let (mut client, _server) = fake(&reply);
        let rows = client.query("SELECT", &[]).expect("rows");
        assert_eq!(rows.columns, ["c"]);
        assert_eq!(rows.rows, [vec![Some("a".to_string())], vec![None]]);
        assert_eq!(rows.affected, 2);
    }

    #[test]
    fn a_message_over_the_limit_is_refused_before_it_is_read() {
        let mut reply = vec![b'D'];
        reply.extend_from_slice(&0x7fff_fff0u32.to_be_bytes());
        reply.extend_from_slice(&[0; 100]);
        let (mut client, _server) = fake(&reply);
        match client.query("SELECT", &[]) {
            Err(Error::Protocol(m)) => assert!(m.contains("over the limit of 64 MiB"), "{m}"),
            other => panic!("{other:?}"),
        }
        assert!(
            client.input.capacity() < 1 << 20,
            "nothing allocated from the length"
        );
    }

    #[test]
    fn a_length_under_four_is_a_protocol_error() {
        let (mut client, _server) = fake(b"Z\0\0\0\x02");
        assert!(matches!(
            client.query("SELECT", &[]),
            Err(Error::Protocol(_))
        ));
    }

    #[test]
    fn an_unknown_message_is_a_protocol_error() {
        let (mut client, _server) = fake(&msg(b'!', b""));
        assert!(matches!(
            client.query("SELECT", &[]),
            Err(Error::Protocol(_))
        ));
    }

    #[test]
    fn a_value_that_is_not_utf8_is_a_protocol_error() {
        let reply = answer(&[one_column(), data_row(&[Some(b"\xff")])]);
        let (mut client, _server) = fake(&reply);
        match client.query("SELECT", &[]) {
            Err(Error::Protocol(m)) => assert!(m.contains("not UTF-8"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_row_with_the_wrong_number_of_values_is_a_protocol_error() {
        let reply = answer(&[one_column(), data_row(&[None, None])]);
        let (mut client, _server) = fake(&reply);
        assert!(matches!(
            client.query("SELECT", &[]),
            Err(Error::Protocol(_))
        ));
    }

    #[test]
    fn a_value_longer_than_its_row_is_a_protocol_error() {
        let mut row = vec![0, 1];
        row.extend_from_slice(&1000u32.to_be_bytes());
        row.extend_from_slice(b"short");
        let reply = answer(&[one_column(), msg(b'D', &row)]);
        let (mut client, _server) = fake(&reply);
        assert!(matches!(
            client.query("SELECT", &[]),
            Err(Error::Protocol(_))
        ));
    }

    #[test]
    fn a_server_closing_mid_message_is_an_io_error() {
        let mut reply = msg(b'C', b"SELECT 1\0");
        reply.truncate(6);
        let (mut client, server) = fake(&reply);
        server
            .shutdown(std::net::Shutdown::Write)
            .expect("shutdown");
        match client.query("SELECT", &[]) {
            Err(Error::Io(e)) => assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_silent_server_times_out_and_the_client_is_then_lost() {
        let (mut client, _server) = fake(b"");
        let start = Instant::now();
        let e = client.query("SELECT", &[]).expect_err("no answer");
        let took = start.elapsed();
        assert!(
            matches!(&e, Error::Io(io) if io.kind() == io::ErrorKind::TimedOut),
            "{e:?}"
        );
        assert!(e.is_connection_lost());
        assert!(
            took >= Duration::from_millis(300) && took < Duration::from_secs(3),
            "{took:?}"
        );
        let again = client.query("SELECT 1", &[]).expect_err("lost");
        assert!(matches!(&again, Error::Io(io) if io.kind() == io::ErrorKind::NotConnected));
    }

    #[test]
    fn a_server_error_is_returned_after_ready_for_query_and_the_client_goes_on() {
        let mut reply = msg(b'E', b"SERROR\0VERROR\0C23505\0Mduplicate\0\0");
        reply.extend(msg(b'Z', b"I"));
        reply.extend(answer(&[
            msg(b'n', b""),
            msg(b'C', b"UPDATE 4\0"),
            msg(b'Z', b"I"),
        ]));
        let (mut client, _server) = fake(&reply);
        let e = client.query("INSERT", &[]).expect_err("the error");
        assert_eq!(e.to_string(), "ERROR 23505: duplicate");
        assert!(!e.is_connection_lost());
        let rows = client
            .query("UPDATE", &[Some("x"), None])
            .expect("the next query");
        assert_eq!(rows.affected, 4);
        assert!(rows.columns.is_empty());
    }

    #[test]
    fn a_fatal_error_is_returned_at_once() {
        let reply = msg(b'E', b"SFATAL\0VFATAL\0C57P01\0Mterminating\0\0");
        let (mut client, _server) = fake(&reply);
        let e = client.query("SELECT", &[]).expect_err("fatal");
        assert!(e.is_connection_lost());
        assert_eq!(e.code(), Some("57P01"));
    }
}

/// [`Client`] as the helper's [`Connection`](crate::cronctl::conn::Connection).
#[derive(Debug, Clone, Copy, Default)]
pub struct PgConnect;

impl crate::cronctl::conn::Connect for PgConnect {
    fn connect(
        &self,
        info: &ConnInfo,
        password: Option<&str>,
    ) -> Result<Box<dyn crate::cronctl::conn::Connection>, String> {
        let mut client = Client::connect(info, password).map_err(|e| e.to_string())?;
        client.set_timeout(DEFAULT_TIMEOUT);
        Ok(Box::new(client))
    }
}

fn db_error(e: Error) -> crate::cronctl::conn::DbError {
    crate::cronctl::conn::DbError {
        lost: e.is_connection_lost(),
        code: e.code().map(str::to_string),
        text: e.to_string(),
    }
}

impl crate::cronctl::conn::Connection for Client {
    fn query(
        &mut self,
        sql: &str,
        params: &[Option<&str>],
    ) -> Result<Rows, crate::cronctl::conn::DbError> {
        Client::query(self, sql, params).map_err(db_error)
    }

    fn batch(&mut self, sql: &str) -> Result<(), crate::cronctl::conn::DbError> {
        Client::batch(self, sql).map_err(db_error)
    }

    fn close(self: Box<Self>) {
        Client::close(*self)
    }
}
