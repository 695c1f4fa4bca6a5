//! A blocking PostgreSQL session for `cronctl` and its helper: tokio-postgres, driven by a
//! current-thread tokio runtime that the session owns (no thread of its own; name resolution
//! may borrow tokio's blocking pool), behind [`crate::conn::Connection`].
//!
//! Several servers (`host=a,b`) are tried in order, each within `connect_timeout`, and the
//! first that logs in and fits `target_session_attrs` is kept: for `read-write` and
//! `read-only`, `SHOW transaction_read_only` says; for `primary` and `standby`,
//! `pg_is_in_recovery()`. A server that does not fit is logged out of and the next tried.
//!
//! Bounds:
//! - **Time.** Connecting (name resolution, TCP, TLS, login) within `connect_timeout`, for each
//!   server tried; each
//!   call within [`CALL_TIMEOUT`], one second past the server's `statement_timeout` (set by
//!   the caller) so that a slow statement ends with the server's error and the connection
//!   lives; a call that runs out of time loses the connection (the server may still be at it).
//! - **Memory.** A message is at most 64 MiB, and what tokio-postgres keeps of the server's
//!   parameter statuses and notices is bounded too ([`crate::guard`]); a result is read as a
//!   stream and counted as it comes: each row costs [`ROW_COST`] bytes, each value
//!   [`VALUE_COST`] plus its wire bytes (a NULL included), up to [`MAX_RESULT_BYTES`], and at
//!   most [`MAX_RESULT_ROWS`] rows; past either the call fails and the connection is dropped
//!   (a server streaming rows without end is stopped there, not at the deadline).

use std::sync::Arc;
use std::time::Duration;

use crond::cluster::conninfo::{ChannelBinding, ConnInfo, Host, SessionAttrs, SslMode};
use futures_util::StreamExt;
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_postgres::error::Severity;
use tokio_postgres::{NoTls, SimpleQueryMessage};

use crate::conn::{Connect, Connection, DbError, Rows};
use crate::guard::{Guard, Shared};
use crate::socket::{self, Socket};
use crate::text::{Cell, TextParam, unspecified};
use crate::tls::{self, GuardedTls};

/// The time one query or batch may take on the client's side.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(6);
/// The most a result may cost, counted as the module's header says.
pub const MAX_RESULT_BYTES: usize = 64 << 20;
/// The most rows a result may have.
pub const MAX_RESULT_ROWS: usize = 100_000;
/// What a row costs besides its values (its vector, its place in the result).
pub const ROW_COST: usize = 48;
/// What a value costs besides its bytes (an `Option<String>`).
pub const VALUE_COST: usize = 24;

/// The connection task: tokio-postgres's I/O half, running while a call runs.
type Task = JoinHandle<Result<(), tokio_postgres::Error>>;

/// A logged-in session: the client half, its connection task, and what the guard saw.
type Session = (tokio_postgres::Client, Task, Arc<Shared>);

/// The runtime, shut down without waiting when dropped: a name lookup stuck in the resolver
/// (tokio's blocking pool) must not hold the caller past its deadline.
struct Rt(Option<Runtime>);

impl Rt {
    fn new() -> Result<Rt, String> {
        tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()
            .map(|rt| Rt(Some(rt)))
            .map_err(|e| format!("cannot start the client's runtime: {e}"))
    }
}

impl std::ops::Deref for Rt {
    type Target = Runtime;
    fn deref(&self) -> &Runtime {
        self.0.as_ref().expect("a runtime until dropped")
    }
}

impl Drop for Rt {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// A logged-in session. A session the server ended while it was idle (a restart,
/// `idle_session_timeout`, `pg_terminate_backend`, a pooler's `server_idle_timeout`) is
/// replaced by a new one before the next call is sent: nothing of that call reached the old
/// session, and the session holds no state of its own (its `statement_timeout` comes with the
/// login), so the call runs as if nothing happened; that session may be on another of the
/// servers, found as at the first login. A session that ends during a call is reported lost:
/// the caller cannot know what the server did.
pub struct Client {
    rt: Rt,
    info: ConnInfo,
    /// Kept for that new session, one for each server (never shown: no Debug field).
    passwords: Vec<Option<String>>,
    /// `None` once the connection is lost.
    client: Option<tokio_postgres::Client>,
    task: Option<Task>,
    shared: Arc<Shared>,
    timeout: Duration,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("connected", &self.client.is_some())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// The real [`Connect`]: what `cronctl` and its helper use.
#[derive(Debug, Clone, Copy, Default)]
pub struct RealConnector;

impl Connect for RealConnector {
    fn connect(
        &self,
        info: &ConnInfo,
        passwords: &[Option<String>],
    ) -> Result<Box<dyn Connection>, String> {
        Ok(Box::new(Client::connect_each(info, passwords)?))
    }
}

/// Why a call failed, before it becomes a [`DbError`].
enum Failure {
    Pg(tokio_postgres::Error),
    /// The result was too big: the connection is dropped.
    Bound(String),
    /// A value could not be read as text; the connection goes on.
    Value(String),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Failure {
        Failure::Pg(e)
    }
}

/// The running cost of a result.
#[derive(Default)]
struct Budget {
    bytes: usize,
    rows: usize,
}

impl Budget {
    fn add(&mut self, wire_bytes: usize, values: usize) -> Result<(), Failure> {
        self.rows += 1;
        self.bytes = self
            .bytes
            .saturating_add(ROW_COST + wire_bytes + VALUE_COST * values);
        if self.rows > MAX_RESULT_ROWS {
            return Err(Failure::Bound(format!(
                "the result has more than {MAX_RESULT_ROWS} rows: stopped reading it"
            )));
        }
        if self.bytes > MAX_RESULT_BYTES {
            return Err(Failure::Bound(format!(
                "the result is over {} MiB (counting {ROW_COST} bytes a row and {VALUE_COST} a \
                 value, NULLs included): stopped reading it",
                MAX_RESULT_BYTES >> 20
            )));
        }
        Ok(())
    }
}

impl Client {
    /// Connects and logs in, all within `info.connect_timeout_s` for each server tried.
    /// `password` (for every server) is sent only in answer to a request `require_auth` allows.
    pub fn connect(info: &ConnInfo, password: Option<&str>) -> Result<Client, String> {
        let passwords = vec![password.map(str::to_string); info.servers.len()];
        Client::connect_each(info, &passwords)
    }

    /// Connects to the first of `info`'s servers that logs in and fits
    /// `target_session_attrs`; `passwords[i]` is for the i-th server.
    pub fn connect_each(info: &ConnInfo, passwords: &[Option<String>]) -> Result<Client, String> {
        let rt = Rt::new()?;
        let (client, task, shared) = login_any(&rt, info, passwords)?;
        Ok(Client {
            rt,
            info: info.clone(),
            passwords: passwords.to_vec(),
            client: Some(client),
            task: Some(task),
            shared,
            timeout: CALL_TIMEOUT,
        })
    }

    /// Sets the time allowed for each later call (at least a millisecond).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout.max(Duration::from_millis(1));
    }

    /// Opens a new session in place of one the server ended while idle.
    fn reconnect(&mut self) -> Result<(), String> {
        let (client, task, shared) = login_any(&self.rt, &self.info, &self.passwords)?;
        self.client = Some(client);
        self.task = Some(task);
        self.shared = shared;
        Ok(())
    }

    /// Runs one statement with text parameters (their types inferred by the server, as
    /// `$1::bigint` says) and reads its rows as text.
    pub fn query(&mut self, sql: &str, params: &[Option<&str>]) -> Result<Rows, DbError> {
        check_sql(sql)?;
        if params.len() > usize::from(u16::MAX >> 1) {
            return Err(DbError::new(format!(
                "{} parameters are more than the protocol allows",
                params.len()
            )));
        }
        let client = self.take_client()?;
        let outcome = within(&self.rt, self.timeout, query_call(&client, sql, params));
        self.client = Some(client);
        self.finish(outcome)
    }

    /// Runs statements separated by `;` (the simple query protocol), stopping at the first
    /// error; rows are counted against the bounds and dropped.
    pub fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        check_sql(sql)?;
        let client = self.take_client()?;
        let outcome = within(&self.rt, self.timeout, batch_call(&client, sql));
        self.client = Some(client);
        self.finish(outcome)
    }

    /// Ends the session: Terminate, then the socket is closed (within a second).
    pub fn close(mut self) {
        drop(self.client.take());
        if let Some(task) = self.task.take() {
            let _ = within(&self.rt, Duration::from_secs(1), task);
        }
    }

    fn take_client(&mut self) -> Result<tokio_postgres::Client, DbError> {
        if self.client.is_some() {
            // Let the connection task read what came while the session was idle: the server's
            // last word on a session it ended (terminated, idle_session_timeout, shutdown).
            // A few turns: the first polls the I/O driver, the next runs the task it woke.
            let task = self.task.as_ref();
            self.rt.block_on(async {
                for _ in 0..3 {
                    tokio::task::yield_now().await;
                    if task.is_none_or(JoinHandle::is_finished) {
                        break;
                    }
                }
            });
            if self.task.as_ref().is_some_and(JoinHandle::is_finished) {
                let reason = self.ended().unwrap_or_else(|| {
                    DbError::lost("the server closed the connection".to_string())
                });
                self.drop_connection();
                // Nothing of this call was sent: a new session takes it.
                if let Err(e) = self.reconnect() {
                    return Err(DbError {
                        text: format!("{}; connecting again: {e}", reason.text),
                        ..reason
                    });
                }
            }
        }
        self.client
            .take()
            .ok_or_else(|| DbError::lost("the connection was lost earlier: connect again"))
    }

    /// Why the connection task ended, once it has.
    fn ended(&mut self) -> Option<DbError> {
        let task = self.task.take()?;
        if !task.is_finished() {
            self.task = Some(task);
            return None;
        }
        Some(match self.rt.block_on(task) {
            Ok(Err(e)) => match e.as_db_error() {
                Some(db) => DbError {
                    lost: true,
                    ..server_error(db)
                },
                None => DbError::lost(describe(&e)),
            },
            _ => DbError::lost("the server closed the connection"),
        })
    }

    /// A call's outcome; a lost connection is dropped.
    fn finish<T>(
        &mut self,
        outcome: Result<Result<T, Failure>, tokio::time::error::Elapsed>,
    ) -> Result<T, DbError> {
        let result = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(Failure::Value(text))) => DbError::new(text),
            Ok(Err(Failure::Bound(text))) => DbError::lost(text),
            Ok(Err(Failure::Pg(e))) => self.pg_error(&e),
            Err(_) => DbError::lost(format!(
                "no answer from the server within {}s",
                self.timeout.as_secs_f32()
            )),
        };
        if result.lost {
            self.drop_connection();
        }
        Err(result)
    }

    fn drop_connection(&mut self) {
        self.client = None;
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }

    /// A tokio-postgres error as a [`DbError`]: a server error with its SQLSTATE, or the
    /// reason the connection ended (the guard's, the server's last word, or the I/O error).
    fn pg_error(&mut self, e: &tokio_postgres::Error) -> DbError {
        if let Some(db) = e.as_db_error() {
            return server_error(db);
        }
        if let Some(reason) = self.shared.refusal() {
            return DbError::lost(reason);
        }
        if let Some(ended) = self.ended() {
            return ended;
        }
        DbError::lost(describe(e))
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Connection for Client {
    fn query(&mut self, sql: &str, params: &[Option<&str>]) -> Result<Rows, DbError> {
        Client::query(self, sql, params)
    }

    fn batch(&mut self, sql: &str) -> Result<(), DbError> {
        Client::batch(self, sql)
    }

    fn close(self: Box<Self>) {
        Client::close(*self)
    }
}

/// Runs `call` on the runtime for at most `limit` (the timer is made inside the runtime).
fn within<F: std::future::Future>(
    rt: &Runtime,
    limit: Duration,
    call: F,
) -> Result<F::Output, tokio::time::error::Elapsed> {
    rt.block_on(async { tokio::time::timeout(limit, call).await })
}

async fn query_call(
    client: &tokio_postgres::Client,
    sql: &str,
    params: &[Option<&str>],
) -> Result<Rows, Failure> {
    let typed = params.iter().map(|p| (TextParam(*p), unspecified()));
    let stream = client.query_typed_raw(sql, typed).await?;
    let mut stream = std::pin::pin!(stream);
    let mut rows = Rows::default();
    let mut budget = Budget::default();
    while let Some(row) = stream.next().await {
        let row = row?;
        budget.add(row.raw_size_bytes(), row.len())?;
        if rows.columns.is_empty() {
            rows.columns = row.columns().iter().map(|c| c.name().to_string()).collect();
        }
        let mut values = Vec::with_capacity(row.len());
        for i in 0..row.len() {
            let Cell(value) = row.try_get::<_, Cell>(i).map_err(|e| {
                let why =
                    std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string());
                Failure::Value(format!(
                    "column {} ({}): {why}",
                    i + 1,
                    row.columns()[i].name()
                ))
            })?;
            values.push(value);
        }
        rows.rows.push(values);
    }
    rows.affected = stream.rows_affected().unwrap_or(0);
    Ok(rows)
}

async fn batch_call(client: &tokio_postgres::Client, sql: &str) -> Result<(), Failure> {
    let stream = client.simple_query_raw(sql).await?;
    let mut stream = std::pin::pin!(stream);
    let mut budget = Budget::default();
    while let Some(message) = stream.next().await {
        if let SimpleQueryMessage::Row(row) = message? {
            let bytes = (0..row.len())
                .map(|i| 4 + row.get(i).map_or(0, str::len))
                .sum();
            budget.add(bytes, row.len())?;
        }
    }
    Ok(())
}

/// SQL the protocol cannot carry, refused before anything is sent (the session goes on).
fn check_sql(sql: &str) -> Result<(), DbError> {
    if sql.contains('\0') {
        return Err(DbError::new("the SQL contains a NUL byte"));
    }
    Ok(())
}

/// A server error as one line, `SEVERITY CODE: message`; lost when it ends the session (FATAL,
/// PANIC, SQLSTATE classes 08 and 57P0x).
fn server_error(db: &tokio_postgres::error::DbError) -> DbError {
    let code = db.code().code().to_string();
    let severity = match db.parsed_severity() {
        Some(s) => s.to_string(),
        None => db.severity().to_string(),
    };
    let lost = matches!(
        db.parsed_severity(),
        Some(Severity::Fatal | Severity::Panic)
    ) || code.starts_with("08")
        || code.starts_with("57P0");
    DbError {
        text: one_line(&format!("{severity} {code}: {}", db.message())),
        lost,
        code: Some(code),
    }
}

/// An error and its causes, as one line.
fn describe(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let more = s.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = s.source();
    }
    one_line(&text)
}

fn one_line(text: &str) -> String {
    text.replace(['\n', '\r'], " ")
}

/// Logs in to the first server that fits `info.target_session_attrs` (for `prefer-standby`, a
/// standby, else any), trying each in order; the error names each server and why it was not
/// kept, or is the one server's own error.
fn login_any(
    rt: &Runtime,
    info: &ConnInfo,
    passwords: &[Option<String>],
) -> Result<Session, String> {
    let passes = match info.target_session_attrs {
        SessionAttrs::PreferStandby => vec![SessionAttrs::Standby, SessionAttrs::Any],
        wanted => vec![wanted],
    };
    let servers = info.each_server();
    let mut failures = Vec::new();
    for wanted in passes {
        failures.clear();
        for (i, one) in servers.iter().enumerate() {
            let password = passwords.get(i).and_then(Option::as_deref);
            let shared = Shared::new();
            let why = match login_within(rt, one, password, &shared) {
                Ok((client, task)) => match fits(rt, &client, wanted) {
                    Ok(()) => return Ok((client, task, shared)),
                    Err(why) => {
                        // Terminate, then the socket is closed.
                        drop(client);
                        let _ = within(rt, Duration::from_secs(1), task);
                        why
                    }
                },
                Err(e) => e,
            };
            failures.push(format!("{} port {}: {why}", one.host, one.port));
        }
    }
    match (servers.len(), failures.pop()) {
        (1, Some(only)) if info.target_session_attrs == SessionAttrs::Any => {
            let at = format!("{} port {}: ", servers[0].host, servers[0].port);
            Err(only.strip_prefix(&at).unwrap_or(&only).to_string())
        }
        (_, last) => {
            failures.extend(last);
            Err(format!(
                "no server could be used (target_session_attrs={}): {}",
                info.target_session_attrs.name(),
                failures.join("; ")
            ))
        }
    }
}

/// Whether a logged-in server is what `wanted` asks for, or why not.
fn fits(rt: &Runtime, client: &tokio_postgres::Client, wanted: SessionAttrs) -> Result<(), String> {
    let (sql, want, not) = match wanted {
        SessionAttrs::Any | SessionAttrs::PreferStandby => return Ok(()),
        SessionAttrs::ReadWrite => ("SHOW transaction_read_only", "off", "read-only"),
        SessionAttrs::ReadOnly => ("SHOW transaction_read_only", "on", "read-write"),
        SessionAttrs::Primary => ("SELECT pg_catalog.pg_is_in_recovery()", "f", "a standby"),
        SessionAttrs::Standby => ("SELECT pg_catalog.pg_is_in_recovery()", "t", "a primary"),
    };
    let answer = match within(rt, CALL_TIMEOUT, client.simple_query(sql)) {
        Ok(Ok(messages)) => messages.into_iter().find_map(|m| match m {
            SimpleQueryMessage::Row(row) => row.get(0).map(str::to_string),
            _ => None,
        }),
        Ok(Err(e)) => return Err(format!("{sql}: {}", describe(&e))),
        Err(_) => {
            return Err(format!(
                "{sql}: no answer within {}s",
                CALL_TIMEOUT.as_secs()
            ));
        }
    };
    match answer {
        Some(value) if value == want => Ok(()),
        Some(_) => Err(format!(
            "the server is {not}, and target_session_attrs={} was asked for",
            wanted.name()
        )),
        None => Err(format!("{sql}: no answer")),
    }
}

/// Logs in within `info.connect_timeout_s`.
fn login_within(
    rt: &Runtime,
    info: &ConnInfo,
    password: Option<&str>,
    shared: &Arc<Shared>,
) -> Result<(tokio_postgres::Client, Task), String> {
    let limit = Duration::from_secs(u64::from(info.connect_timeout_s.max(1)));
    rt.block_on(async {
        match tokio::time::timeout(limit, login(info, password, shared)).await {
            Ok(result) => result,
            Err(_) => Err(shared.refusal().unwrap_or_else(|| {
                format!(
                    "connect to {} port {}: no answer within connect_timeout={}s",
                    info.host,
                    info.port,
                    limit.as_secs()
                )
            })),
        }
    })
}

fn pg_config(info: &ConnInfo, password: Option<&str>) -> tokio_postgres::Config {
    let mut config = tokio_postgres::Config::new();
    config
        .user(&info.user)
        .dbname(&info.dbname)
        .application_name(&info.application_name)
        .options(format!(
            "-c statement_timeout={}",
            info.statement_timeout_ms
        ))
        .channel_binding(match info.channel_binding {
            ChannelBinding::Disable => tokio_postgres::config::ChannelBinding::Disable,
            ChannelBinding::Prefer => tokio_postgres::config::ChannelBinding::Prefer,
            ChannelBinding::Require => tokio_postgres::config::ChannelBinding::Require,
        });
    if let Some(pw) = password {
        config.password(pw);
    }
    config
}

/// Opens, negotiates TLS as `sslmode` says, logs in, and starts the connection task.
async fn login(
    info: &ConnInfo,
    password: Option<&str>,
    shared: &Arc<Shared>,
) -> Result<(tokio_postgres::Client, Task), String> {
    let name = match &info.host {
        Host::Tcp(name) => name.clone(),
        // libpq never uses TLS on a Unix socket; sslmode is ignored there.
        Host::Unix(_) => {
            return plain(
                socket::open(info).await.map_err(|e| e.to_string())?,
                info,
                password,
                shared,
            )
            .await;
        }
    };
    match info.sslmode {
        SslMode::Disable => {
            plain(
                socket::open(info).await.map_err(|e| e.to_string())?,
                info,
                password,
                shared,
            )
            .await
        }
        SslMode::Allow => {
            match plain(
                socket::open(info).await.map_err(|e| e.to_string())?,
                info,
                password,
                shared,
            )
            .await
            {
                // Refused without TLS (pg_hba's hostssl): once more with it, as libpq does.
                Err(e) if e.contains(" 28000:") || e.contains(" 28P01:") => {
                    let mut socket = socket::open(info).await.map_err(|e| e.to_string())?;
                    if !socket::ask_for_tls(&mut socket)
                        .await
                        .map_err(|e| e.to_string())?
                    {
                        return Err(e);
                    }
                    over_tls(socket, &name, info, password, shared).await
                }
                other => other,
            }
        }
        mode => {
            let mut socket = socket::open(info).await.map_err(|e| e.to_string())?;
            if socket::ask_for_tls(&mut socket)
                .await
                .map_err(|e| e.to_string())?
            {
                over_tls(socket, &name, info, password, shared).await
            } else if mode == SslMode::Prefer {
                plain(socket, info, password, shared).await
            } else {
                Err(format!(
                    "sslmode={}: the server at {name} port {} does not accept TLS connections",
                    mode.name(),
                    info.port
                ))
            }
        }
    }
}

/// Logs in without TLS, the guard on the socket.
async fn plain(
    socket: Socket,
    info: &ConnInfo,
    password: Option<&str>,
    shared: &Arc<Shared>,
) -> Result<(tokio_postgres::Client, Task), String> {
    let mut config = pg_config(info, password);
    config.ssl_mode(tokio_postgres::config::SslMode::Disable);
    let untrusted = socket::untrusted_server(&socket, info);
    let guarded =
        Guard::new(socket, info.require_auth.clone(), Arc::clone(shared)).untrusted(untrusted);
    match config.connect_raw(guarded, NoTls).await {
        Ok((client, connection)) => Ok((client, tokio::spawn(connection))),
        Err(e) => Err(login_error(&e, info, shared, None)),
    }
}

/// Logs in over TLS (the server said yes to the SSLRequest), the guard inside the TLS layer.
async fn over_tls(
    socket: Socket,
    host: &str,
    info: &ConnInfo,
    password: Option<&str>,
    shared: &Arc<Shared>,
) -> Result<(tokio_postgres::Client, Task), String> {
    let tls = GuardedTls::new(info, host, shared).map_err(|e| e.to_string())?;
    let mut config = pg_config(info, password);
    // The SSLRequest is done: tokio-postgres starts the handshake at once.
    config
        .ssl_mode(tokio_postgres::config::SslMode::Require)
        .ssl_negotiation(tokio_postgres::config::SslNegotiation::Direct);
    match config.connect_raw(socket, tls).await {
        Ok((client, connection)) => Ok((client, tokio::spawn(connection))),
        Err(e) => Err(login_error(&e, info, shared, Some(host))),
    }
}

/// Why logging in failed, naming the setting where one decided it.
fn login_error(
    e: &tokio_postgres::Error,
    info: &ConnInfo,
    shared: &Shared,
    tls_host: Option<&str>,
) -> String {
    if let Some(reason) = shared.refusal() {
        return reason;
    }
    if let Some(db) = e.as_db_error() {
        let text = server_error(db).text;
        if db.message().contains("unsupported startup parameter") {
            return format!(
                "{text} (a connection pooler? cronctl sends statement_timeout in the startup \
                 packet as options: give pgbouncer ignore_startup_parameters = options and the \
                 role its statement_timeout; see docs/cluster.md)"
            );
        }
        return text;
    }
    let text = describe(e);
    if let Some(host) = tls_host
        && text.starts_with("error performing TLS handshake")
    {
        let detail = text
            .strip_prefix("error performing TLS handshake: ")
            .unwrap_or(&text);
        return tls::handshake_error(info, host, shared, detail);
    }
    if text.contains("password missing") {
        return format!(
            "the server asks for a password and none was found for user {}: put it in the \
             passfile (passfile=PATH)",
            info.user
        );
    }
    if text.contains("channel binding") {
        return format!(
            "channel_binding={}: the server did not use SCRAM channel binding ({text}); it needs \
             TLS and SCRAM-SHA-256",
            info.channel_binding.name()
        );
    }
    text
}
