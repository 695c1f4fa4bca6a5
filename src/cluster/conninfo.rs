//! The connection string and the password file, both in libpq's formats, parsed without touching
//! a file or the network.
//!
//! Pure: the caller reads the password file and passes its text in.
//!
//! Two syntaxes are read, as libpq reads them: `key=value` pairs (`host=/run/x port=5433`,
//! values optionally in single quotes with `\'` and `\\` escapes) and URIs
//! (`postgresql://user@host:port/dbname?param=value`). Only the settings crond uses are known;
//! anything else is an error that names it, so a typo is not silently ignored. A password is
//! never taken from the string: it belongs in a passfile only root can read.
//!
//! TLS and authentication settings follow libpq 16: `sslmode` (default `prefer`), `sslrootcert`
//! (a file, or `system`; default: the system's CA store), `sslcert`/`sslkey`, `channel_binding`
//! and `require_auth`, whose default here is stricter than libpq's over TCP: SCRAM-SHA-256 or no
//! authentication, never a password in clear or as md5 unless the string allows it. crond
//! parses this text at start to refuse a bad `--cluster-db` early, without any client code.
//!
//! Several servers may be named, as libpq 16 names them: `host=a,b port=1,2` (one port for all,
//! or one per host; an empty item is the default) or `postgresql://a:1,b:2/db`. The client tries
//! them in order, each within `connect_timeout`, and keeps the first that logs in and fits
//! `target_session_attrs` (`any`, `read-write`, `read-only`, `primary`, `standby`,
//! `prefer-standby`).

use std::fmt;
use std::path::{Path, PathBuf};

/// Where the server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Host {
    /// A Unix socket directory; the socket in it is `.s.PGSQL.<port>`.
    Unix(PathBuf),
    /// A host name or an IP address literal (without brackets).
    Tcp(String),
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Unix(dir) => write!(f, "{}", dir.display()),
            Host::Tcp(name) => f.write_str(name),
        }
    }
}

/// One server of the list, with the authentication methods it may use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    pub host: Host,
    pub port: u16,
    /// `require_auth` as given, or the default for this host (stricter over TCP).
    pub require_auth: RequireAuth,
}

/// The most servers one connection string may name.
pub const MAX_HOSTS: usize = 16;

/// libpq's `target_session_attrs`: what a server must be to be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionAttrs {
    /// Any server that logs in (the default).
    Any,
    /// A server whose `transaction_read_only` is `off`.
    ReadWrite,
    /// A server whose `transaction_read_only` is `on`.
    ReadOnly,
    /// A server not in recovery (`pg_is_in_recovery()` false).
    Primary,
    /// A server in recovery: a standby.
    Standby,
    /// A standby if one of the servers is, else any.
    PreferStandby,
}

impl SessionAttrs {
    /// The setting's value, for messages.
    pub fn name(self) -> &'static str {
        match self {
            SessionAttrs::Any => "any",
            SessionAttrs::ReadWrite => "read-write",
            SessionAttrs::ReadOnly => "read-only",
            SessionAttrs::Primary => "primary",
            SessionAttrs::Standby => "standby",
            SessionAttrs::PreferStandby => "prefer-standby",
        }
    }
}

/// The settings of one connection, all filled in (defaults applied).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnInfo {
    /// The server's socket directory or network address: the first of `servers`, or in a copy
    /// made by [`ConnInfo::each_server`], that copy's server.
    pub host: Host,
    /// The TCP port, or the number in the Unix socket's name (of the same server).
    pub port: u16,
    /// Every server named, in the order they are tried (at least one).
    pub servers: Vec<Server>,
    /// What a server must be to be kept.
    pub target_session_attrs: SessionAttrs,
    /// The database; the user name unless given.
    pub dbname: String,
    /// The role to log in as; the caller's default (the OS user) unless given.
    pub user: String,
    /// The password file to look the password up in (`passfile=`), if one was named.
    pub passfile: Option<PathBuf>,
    /// Seconds allowed for connecting and logging in (1 to [`MAX_CONNECT_TIMEOUT_S`]).
    pub connect_timeout_s: u32,
    /// The name the server shows in `pg_stat_activity`.
    pub application_name: String,
    /// Whether and how TLS is used over TCP (never over a Unix socket, as libpq).
    pub sslmode: SslMode,
    /// The CAs a server certificate is checked against; `None` is the system's store.
    pub sslrootcert: Option<RootCert>,
    /// A client certificate (PEM) and its key, presented when the server asks.
    pub sslcert: Option<(PathBuf, PathBuf)>,
    /// SCRAM channel binding over TLS.
    pub channel_binding: ChannelBinding,
    /// The authentication requests the client answers (for `host`); any other fails the
    /// connection before a password is sent.
    pub require_auth: RequireAuth,
    /// The server's `statement_timeout` for the session, in milliseconds: sent in the startup
    /// message (`options=-c statement_timeout=N`), so that a session the client opens again
    /// has it too. Not a connection-string key: cronctl sets it.
    pub statement_timeout_ms: u32,
}

impl ConnInfo {
    /// A copy of the settings for each server in turn: `host`, `port` and `require_auth` are
    /// that server's.
    pub fn each_server(&self) -> Vec<ConnInfo> {
        self.servers
            .iter()
            .map(|server| ConnInfo {
                host: server.host.clone(),
                port: server.port,
                require_auth: server.require_auth.clone(),
                ..self.clone()
            })
            .collect()
    }

    /// Why nothing proves that one of the servers is the database, or `None`: the first server
    /// [`ConnInfo::unauthenticated_host`] finds unproven.
    pub fn unauthenticated_server(&self) -> Option<String> {
        self.each_server()
            .iter()
            .find_map(ConnInfo::unauthenticated_host)
    }

    /// Why nothing proves that the server is the database, or `None`. Over TCP that proof is
    /// `sslmode=verify-full` (a trusted CA signed a certificate naming the host),
    /// `sslmode=verify-ca` with a CA file of the admin's own (the system's store would accept
    /// any public certificate), or `channel_binding=require` (SCRAM bound to the TLS session:
    /// the server holds the password's verifier). Without one, libpq's defaults
    /// (`sslmode=prefer`, a `require_auth` that includes `none`) let anyone on the network path
    /// answer in the server's place. On a Unix socket the client checks who runs the server
    /// when it connects.
    fn unauthenticated_host(&self) -> Option<String> {
        let Host::Tcp(name) = &self.host else {
            return None;
        };
        let proven = match self.sslmode {
            SslMode::VerifyFull => true,
            SslMode::VerifyCa => matches!(self.sslrootcert, Some(RootCert::File(_))),
            _ => false,
        };
        if proven || self.channel_binding == ChannelBinding::Require {
            return None;
        }
        Some(format!(
            "over TCP with sslmode={}, nothing proves that {name} is the database: anyone on \
             the network path can answer in its place (and decide which host runs what); give \
             sslmode=verify-full, with sslrootcert naming the server's CA",
            self.sslmode.name()
        ))
    }
}

/// libpq's `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// Without TLS first; with TLS (unverified) if the server refuses that.
    Allow,
    /// TLS if the server has it (unverified unless `sslrootcert` names a file), else without.
    Prefer,
    /// TLS, or no connection; the certificate is checked only if `sslrootcert` names a file.
    Require,
    /// TLS with a certificate signed by a trusted CA.
    VerifyCa,
    /// As `VerifyCa`, and the certificate names the host.
    VerifyFull,
}

impl SslMode {
    /// The setting's value, for messages.
    pub fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Allow => "allow",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }
}

/// libpq's `sslrootcert`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootCert {
    /// `system`: the system's CA store (libpq 16's spelling); implies `verify-full`.
    System,
    /// A PEM file of CA certificates, used instead of the system's store.
    File(PathBuf),
}

/// libpq's `channel_binding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelBinding {
    Disable,
    /// SCRAM-SHA-256-PLUS when TLS is up and the server offers it.
    Prefer,
    /// SCRAM-SHA-256-PLUS or no connection.
    Require,
}

impl ChannelBinding {
    pub fn name(self) -> &'static str {
        match self {
            ChannelBinding::Disable => "disable",
            ChannelBinding::Prefer => "prefer",
            ChannelBinding::Require => "require",
        }
    }
}

/// The authentication methods a connection accepts (libpq 16's `require_auth`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequireAuth {
    /// A cleartext password (`password`).
    pub password: bool,
    /// An md5 hash of the password (`md5`).
    pub md5: bool,
    /// SCRAM-SHA-256 (`scram-sha-256`).
    pub scram: bool,
    /// No authentication exchange at all: trust, peer, a client certificate (`none`).
    pub none: bool,
    /// The setting as given, or the default with a note, for messages.
    pub spelled: String,
}

/// The statement timeout cronctl and its helper give every session (5 s).
pub const DEFAULT_STATEMENT_TIMEOUT_MS: u32 = 5_000;

/// The default `require_auth` over TCP: a password never leaves in clear or as md5.
pub const DEFAULT_TCP_REQUIRE_AUTH: &str = "scram-sha-256,none";

/// The socket directory used when no host is given (Debian's, as its libpq).
pub const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";
/// The port used when none is given.
pub const DEFAULT_PORT: u16 = 5432;
/// The connect timeout used when none is given, or 0.
pub const DEFAULT_CONNECT_TIMEOUT_S: u32 = 5;
/// The largest connect timeout accepted.
pub const MAX_CONNECT_TIMEOUT_S: u32 = 60;
/// The application name used when none is given.
pub const DEFAULT_APPLICATION_NAME: &str = "crond";

const PASSWORD_REFUSED: &str = "a password may not be given in the connection string: put it in \
                                a passfile readable only by root (passfile=PATH)";

/// Why a connection string was refused; shown as a sentence that names the setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnInfoError {
    /// `password=`, or a password in the URI: it belongs in a passfile.
    Password,
    /// A setting crond does not know (a typo is not silently ignored).
    UnknownSetting(String),
    /// `host` names more than [`MAX_HOSTS`] servers.
    TooManyHosts(usize),
    /// `port` lists a number of ports other than one or the number of hosts.
    PortsForHosts {
        ports: usize,
        hosts: usize,
    },
    BadSessionAttrs(String),
    /// `host` holds a blank, a control character or a `/` past its start.
    BadHost(String),
    BadPort(String),
    /// No `user`, and the caller's default is empty.
    NoUser,
    /// The setting named holds a NUL byte.
    Nul(&'static str),
    TimeoutOverMaximum(u32),
    BadTimeout(String),
    BadSslMode(String),
    /// `sslrootcert=system` with an `sslmode` other than `verify-full`.
    SystemRootCertWith(SslMode),
    CertWithoutKey,
    KeyWithoutCert,
    BadChannelBinding(String),
    /// `require_auth` (as given) mixes `!method` with `method`.
    RequireAuthMixed(String),
    /// `require_auth` (as given) names a method this client lacks.
    RequireAuthUnsupported {
        text: String,
        method: String,
    },
    /// `require_auth` (as given) names no method at all.
    RequireAuthInvalid {
        text: String,
        method: String,
    },
    /// `require_auth` (as given) names a method twice.
    RequireAuthRepeated {
        text: String,
        method: String,
    },
    /// A `key=value` pair's key without its `=`.
    MissingEquals(String),
    /// A `=` with no key before it.
    NoName,
    /// The quoted value of the key has no closing quote.
    Unterminated(String),
    /// Text right after the closing quote of the key's value.
    AfterQuote(String),
    /// A URI's host with `[` and no `]`.
    Unbracketed(String),
    /// A URI's host with text after `]` other than a port.
    AfterBracket(String),
    /// A URI's query parameter without `=`.
    ParameterWithoutEquals(String),
    /// A bad `%XX` in the part of the URI named.
    BadEscape(String),
    /// The part of the URI named is not UTF-8 once decoded.
    NotUtf8(String),
}

impl fmt::Display for ConnInfoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ConnInfoError as E;
        match self {
            E::Password => f.write_str(PASSWORD_REFUSED),
            E::UnknownSetting(key) => write!(f, "unknown connection setting '{key}'"),
            E::TooManyHosts(_) | E::PortsForHosts { .. } | E::BadSessionAttrs(_) => {
                self.fmt_servers(f)
            }
            E::BadHost(h) => write!(
                f,
                "host '{}' is not a host name or address",
                h.escape_debug()
            ),
            E::BadPort(p) => write!(
                f,
                "port '{}' is not a number from 1 to 65535",
                p.escape_debug()
            ),
            E::NoUser => f.write_str("no user given, and no default user"),
            E::Nul(what) => write!(f, "{what} contains a NUL byte"),
            E::TimeoutOverMaximum(n) => write!(
                f,
                "connect_timeout {n} is over the maximum of {MAX_CONNECT_TIMEOUT_S} seconds"
            ),
            E::BadTimeout(t) => write!(
                f,
                "connect_timeout '{}' is not a number of seconds",
                t.escape_debug()
            ),
            E::BadSslMode(mode) => write!(
                f,
                "invalid sslmode value '{}' (disable, allow, prefer, require, verify-ca or \
                 verify-full)",
                mode.escape_debug()
            ),
            E::SystemRootCertWith(mode) => write!(
                f,
                "sslmode={} may not be used with sslrootcert=system (use verify-full)",
                mode.name()
            ),
            E::CertWithoutKey => f.write_str("sslcert needs sslkey (the client key file)"),
            E::KeyWithoutCert => f.write_str("sslkey needs sslcert (the client certificate)"),
            E::BadChannelBinding(value) => write!(
                f,
                "invalid channel_binding value '{}' (disable, prefer or require)",
                value.escape_debug()
            ),
            E::RequireAuthMixed(text) => write!(
                f,
                "require_auth={text}: negative and positive methods cannot be mixed"
            ),
            E::RequireAuthUnsupported { text, method } => write!(
                f,
                "require_auth={text}: {method} is not supported by this client \
                 (password, md5, scram-sha-256, none)"
            ),
            E::RequireAuthInvalid { text, method } => write!(
                f,
                "require_auth={text}: invalid method '{}' (password, md5, scram-sha-256, \
                 none, each may be negated with !)",
                method.escape_debug()
            ),
            E::RequireAuthRepeated { text, method } => write!(
                f,
                "require_auth={text}: method '{method}' is given more than once"
            ),
            E::MissingEquals(key) => {
                write!(f, "missing '=' after '{key}' in the connection string")
            }
            E::NoName => f.write_str("a connection setting has no name before '='"),
            E::Unterminated(key) => write!(f, "unterminated quoted value of '{key}'"),
            E::AfterQuote(key) => write!(f, "text right after the quoted value of '{key}'"),
            E::Unbracketed(host) => write!(f, "host '{host}': '[' without ']'"),
            E::AfterBracket(host) => write!(f, "host '{host}': text after ']'"),
            E::ParameterWithoutEquals(param) => write!(f, "URI parameter '{param}' has no '='"),
            E::BadEscape(what) => write!(f, "invalid percent escape in the URI's {what}"),
            E::NotUtf8(what) => write!(f, "the URI's {what} is not UTF-8 once decoded"),
        }
    }
}

impl ConnInfoError {
    /// The messages of the settings that choose among several servers.
    fn fmt_servers(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ConnInfoError as E;
        match self {
            E::TooManyHosts(n) => write!(f, "{n} hosts given: at most {MAX_HOSTS} are tried"),
            E::PortsForHosts { ports, hosts } => write!(
                f,
                "could not match {ports} port numbers to {hosts} hosts (give one port for all, \
                 or one for each host)"
            ),
            E::BadSessionAttrs(value) => write!(
                f,
                "invalid target_session_attrs value '{}' (any, read-write, read-only, primary, \
                 standby or prefer-standby)",
                value.escape_debug()
            ),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for ConnInfoError {}

/// The settings as given, before defaults.
#[derive(Default)]
struct Given {
    host: Option<String>,
    port: Option<String>,
    dbname: Option<String>,
    user: Option<String>,
    passfile: Option<String>,
    connect_timeout: Option<String>,
    application_name: Option<String>,
    sslmode: Option<String>,
    sslrootcert: Option<String>,
    sslcert: Option<String>,
    sslkey: Option<String>,
    channel_binding: Option<String>,
    require_auth: Option<String>,
    target_session_attrs: Option<String>,
}

/// Parses a connection string in either of libpq's syntaxes. `default_user` is the user when
/// none is given (libpq takes the OS user's name; this module reads no system state).
pub fn parse(text: &str, default_user: &str) -> Result<ConnInfo, ConnInfoError> {
    let trimmed = text.trim();
    let mut given = Given::default();
    if let Some(rest) = trimmed
        .strip_prefix("postgresql://")
        .or_else(|| trimmed.strip_prefix("postgres://"))
    {
        parse_uri(rest, &mut given)?;
    } else {
        for (key, value) in split_pairs(trimmed)? {
            set(&mut given, &key, value)?;
        }
    }
    finish(given, default_user)
}

/// Records one setting; later ones override earlier ones, as in libpq.
fn set(given: &mut Given, key: &str, value: String) -> Result<(), ConnInfoError> {
    let slot = match key {
        "host" => &mut given.host,
        "port" => &mut given.port,
        "dbname" => &mut given.dbname,
        "user" => &mut given.user,
        "passfile" => &mut given.passfile,
        "connect_timeout" => &mut given.connect_timeout,
        "application_name" => &mut given.application_name,
        "sslmode" => &mut given.sslmode,
        "sslrootcert" => &mut given.sslrootcert,
        "sslcert" => &mut given.sslcert,
        "sslkey" => &mut given.sslkey,
        "channel_binding" => &mut given.channel_binding,
        "require_auth" => &mut given.require_auth,
        "target_session_attrs" => &mut given.target_session_attrs,
        "password" => return Err(ConnInfoError::Password),
        _ => return Err(ConnInfoError::UnknownSetting(key.to_string())),
    };
    *slot = Some(value);
    Ok(())
}

/// Applies the defaults and checks every value.
fn finish(given: Given, default_user: &str) -> Result<ConnInfo, ConnInfoError> {
    let addresses = hosts_and_ports(given.host.as_deref(), given.port.as_deref())?;
    let user = match given.user {
        Some(u) if !u.is_empty() => u,
        _ => default_user.to_string(),
    };
    if user.is_empty() {
        return Err(ConnInfoError::NoUser);
    }
    let dbname = match given.dbname {
        Some(d) if !d.is_empty() => d,
        _ => user.clone(),
    };
    let connect_timeout_s = connect_timeout(given.connect_timeout.as_deref())?;
    let application_name = match given.application_name {
        Some(a) => a,
        None => DEFAULT_APPLICATION_NAME.to_string(),
    };
    for (what, value) in [
        ("user", &user),
        ("dbname", &dbname),
        ("application_name", &application_name),
    ] {
        if value.contains('\0') {
            return Err(ConnInfoError::Nul(what));
        }
    }
    let passfile = path("passfile", given.passfile)?;
    let sslrootcert = match given.sslrootcert.as_deref() {
        Some("system") => Some(RootCert::System),
        _ => path("sslrootcert", given.sslrootcert)?.map(RootCert::File),
    };
    let sslmode = sslmode(given.sslmode.as_deref(), sslrootcert.as_ref())?;
    let sslcert = match (
        path("sslcert", given.sslcert)?,
        path("sslkey", given.sslkey)?,
    ) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        (Some(_), None) => return Err(ConnInfoError::CertWithoutKey),
        (None, Some(_)) => return Err(ConnInfoError::KeyWithoutCert),
    };
    let channel_binding = channel_binding(given.channel_binding.as_deref())?;
    let target_session_attrs = session_attrs(given.target_session_attrs.as_deref())?;
    let mut servers = Vec::with_capacity(addresses.len());
    for (host, port) in addresses {
        let require_auth = match given.require_auth.as_deref() {
            None | Some("") => default_require_auth(&host)?,
            Some(text) => parse_require_auth(text)?,
        };
        servers.push(Server {
            host,
            port,
            require_auth,
        });
    }
    let first = servers[0].clone();
    Ok(ConnInfo {
        host: first.host,
        port: first.port,
        servers,
        target_session_attrs,
        dbname,
        user,
        passfile,
        connect_timeout_s,
        application_name,
        sslmode,
        sslrootcert,
        sslcert,
        channel_binding,
        require_auth: first.require_auth,
        statement_timeout_ms: DEFAULT_STATEMENT_TIMEOUT_MS,
    })
}

/// The servers' addresses, as libpq pairs them: the comma-separated hosts (at most
/// [`MAX_HOSTS`]) with one port for all or one each; an empty item is the default host or port.
fn hosts_and_ports(
    hosts: Option<&str>,
    ports: Option<&str>,
) -> Result<Vec<(Host, u16)>, ConnInfoError> {
    let hosts: Vec<&str> = hosts.unwrap_or("").split(',').collect();
    if hosts.len() > MAX_HOSTS {
        return Err(ConnInfoError::TooManyHosts(hosts.len()));
    }
    let ports: Vec<&str> = ports.unwrap_or("").split(',').collect();
    if ports.len() != 1 && ports.len() != hosts.len() {
        return Err(ConnInfoError::PortsForHosts {
            ports: ports.len(),
            hosts: hosts.len(),
        });
    }
    let mut out = Vec::with_capacity(hosts.len());
    for (i, h) in hosts.iter().enumerate() {
        let p = if ports.len() == 1 { ports[0] } else { ports[i] };
        out.push((host(h)?, port(Some(p))?));
    }
    Ok(out)
}

/// `target_session_attrs`, `any` unless given.
fn session_attrs(given: Option<&str>) -> Result<SessionAttrs, ConnInfoError> {
    Ok(match given {
        None | Some("") | Some("any") => SessionAttrs::Any,
        Some("read-write") => SessionAttrs::ReadWrite,
        Some("read-only") => SessionAttrs::ReadOnly,
        Some("primary") => SessionAttrs::Primary,
        Some("standby") => SessionAttrs::Standby,
        Some("prefer-standby") => SessionAttrs::PreferStandby,
        Some(other) => return Err(ConnInfoError::BadSessionAttrs(other.to_string())),
    })
}

/// One server's address: a socket directory when it starts with `/` or is empty, else a host
/// name or address.
fn host(given: &str) -> Result<Host, ConnInfoError> {
    match given {
        "" => Ok(Host::Unix(PathBuf::from(DEFAULT_SOCKET_DIR))),
        h if h.contains('\0') => Err(ConnInfoError::Nul("host")),
        h if h.starts_with('/') => Ok(Host::Unix(PathBuf::from(h))),
        h => {
            if h.chars()
                .any(|c| c.is_whitespace() || c.is_control() || c == '/')
            {
                return Err(ConnInfoError::BadHost(h.to_string()));
            }
            Ok(Host::Tcp(h.to_string()))
        }
    }
}

/// The port: digits only, from 1 to 65535; [`DEFAULT_PORT`] when not given.
fn port(given: Option<&str>) -> Result<u16, ConnInfoError> {
    match given {
        None | Some("") => Ok(DEFAULT_PORT),
        Some(p) => match p.parse::<u16>() {
            Ok(n) if n > 0 && p.bytes().all(|b| b.is_ascii_digit()) => Ok(n),
            _ => Err(ConnInfoError::BadPort(p.to_string())),
        },
    }
}

/// `connect_timeout` in seconds: digits only, 0 (as not given) meaning the default, at most
/// [`MAX_CONNECT_TIMEOUT_S`].
fn connect_timeout(given: Option<&str>) -> Result<u32, ConnInfoError> {
    let Some(t) = given.filter(|t| !t.is_empty()) else {
        return Ok(DEFAULT_CONNECT_TIMEOUT_S);
    };
    match t.parse::<u32>() {
        Ok(n) if t.bytes().all(|b| b.is_ascii_digit()) => match n {
            0 => Ok(DEFAULT_CONNECT_TIMEOUT_S),
            n if n <= MAX_CONNECT_TIMEOUT_S => Ok(n),
            n => Err(ConnInfoError::TimeoutOverMaximum(n)),
        },
        _ => Err(ConnInfoError::BadTimeout(t.to_string())),
    }
}

/// A file named by a setting: none when not given or empty; a NUL byte is refused.
fn path(what: &'static str, value: Option<String>) -> Result<Option<PathBuf>, ConnInfoError> {
    match value {
        Some(p) if p.contains('\0') => Err(ConnInfoError::Nul(what)),
        Some(p) if !p.is_empty() => Ok(Some(PathBuf::from(p))),
        _ => Ok(None),
    }
}

/// `sslmode`, whose default is `prefer`, or `verify-full` with `sslrootcert=system`, which
/// allows no other mode.
fn sslmode(given: Option<&str>, rootcert: Option<&RootCert>) -> Result<SslMode, ConnInfoError> {
    let system = rootcert == Some(&RootCert::System);
    let mode = match given {
        None | Some("") if system => SslMode::VerifyFull,
        None | Some("") => SslMode::Prefer,
        Some("disable") => SslMode::Disable,
        Some("allow") => SslMode::Allow,
        Some("prefer") => SslMode::Prefer,
        Some("require") => SslMode::Require,
        Some("verify-ca") => SslMode::VerifyCa,
        Some("verify-full") => SslMode::VerifyFull,
        Some(other) => {
            return Err(ConnInfoError::BadSslMode(other.to_string()));
        }
    };
    if system && mode != SslMode::VerifyFull {
        return Err(ConnInfoError::SystemRootCertWith(mode));
    }
    Ok(mode)
}

/// `channel_binding`, `prefer` unless given.
fn channel_binding(given: Option<&str>) -> Result<ChannelBinding, ConnInfoError> {
    match given {
        None | Some("") | Some("prefer") => Ok(ChannelBinding::Prefer),
        Some("disable") => Ok(ChannelBinding::Disable),
        Some("require") => Ok(ChannelBinding::Require),
        Some(other) => Err(ConnInfoError::BadChannelBinding(other.to_string())),
    }
}

/// The methods allowed when `require_auth` is not given: over TCP
/// [`DEFAULT_TCP_REQUIRE_AUTH`], on a Unix socket any.
fn default_require_auth(host: &Host) -> Result<RequireAuth, ConnInfoError> {
    Ok(match host {
        Host::Tcp(_) => {
            let mut r = parse_require_auth(DEFAULT_TCP_REQUIRE_AUTH)?;
            r.spelled = format!("require_auth={DEFAULT_TCP_REQUIRE_AUTH} (the default over TCP)");
            r
        }
        Host::Unix(_) => RequireAuth {
            password: true,
            md5: true,
            scram: true,
            none: true,
            spelled: "require_auth (any method, the default on a Unix socket)".to_string(),
        },
    })
}

/// `require_auth` as libpq 16 reads it: a comma list of methods that the server may use, or of
/// `!`-negated methods it may not (the two forms do not mix; none is named twice).
fn parse_require_auth(text: &str) -> Result<RequireAuth, ConnInfoError> {
    let mut named: Vec<&str> = Vec::new();
    let mut negated = None;
    for item in text.split(',') {
        let (neg, method) = match item.strip_prefix('!') {
            Some(m) => (true, m),
            None => (false, item),
        };
        if *negated.get_or_insert(neg) != neg {
            return Err(ConnInfoError::RequireAuthMixed(text.to_string()));
        }
        match method {
            "password" | "md5" | "scram-sha-256" | "none" => {}
            "gss" | "sspi" | "creds" => {
                return Err(ConnInfoError::RequireAuthUnsupported {
                    text: text.to_string(),
                    method: method.to_string(),
                });
            }
            _ => {
                return Err(ConnInfoError::RequireAuthInvalid {
                    text: text.to_string(),
                    method: method.to_string(),
                });
            }
        }
        if named.contains(&method) {
            return Err(ConnInfoError::RequireAuthRepeated {
                text: text.to_string(),
                method: method.to_string(),
            });
        }
        named.push(method);
    }
    let listed = |m: &str| named.contains(&m) != negated.unwrap_or(false);
    Ok(RequireAuth {
        password: listed("password"),
        md5: listed("md5"),
        scram: listed("scram-sha-256"),
        none: listed("none"),
        spelled: format!("require_auth={text}"),
    })
}

/// Splits `key=value key2 = 'quoted \' value'` into pairs, unescaping values.
fn split_pairs(text: &str) -> Result<Vec<(String, String)>, ConnInfoError> {
    let mut pairs = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.peek().is_none() {
            return Ok(pairs);
        }
        let mut key = String::new();
        while let Some(c) = chars.next_if(|c| *c != '=' && !c.is_whitespace()) {
            key.push(c);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        if chars.next() != Some('=') {
            return Err(ConnInfoError::MissingEquals(key));
        }
        if key.is_empty() {
            return Err(ConnInfoError::NoName);
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'\'').is_some() {
            loop {
                match chars.next() {
                    None => {
                        return Err(ConnInfoError::Unterminated(key));
                    }
                    Some('\'') => break,
                    Some('\\') => match chars.next() {
                        Some(c) => value.push(c),
                        None => return Err(ConnInfoError::Unterminated(key)),
                    },
                    Some(c) => value.push(c),
                }
            }
            if chars.peek().is_some_and(|c| !c.is_whitespace()) {
                return Err(ConnInfoError::AfterQuote(key));
            }
        } else {
            while let Some(c) = chars.next_if(|c| !c.is_whitespace()) {
                if c == '\\' {
                    if let Some(escaped) = chars.next() {
                        value.push(escaped);
                    }
                } else {
                    value.push(c);
                }
            }
        }
        pairs.push((key, value));
    }
}

/// Parses what follows `postgresql://`.
fn parse_uri(rest: &str, given: &mut Given) -> Result<(), ConnInfoError> {
    let (main, query) = match rest.split_once('?') {
        Some((m, q)) => (m, Some(q)),
        None => (rest, None),
    };
    let (authority, path) = match main.split_once('/') {
        Some((a, p)) => (a, Some(p)),
        None => (main, None),
    };
    let hostport = match authority.rsplit_once('@') {
        Some((userinfo, hostport)) => {
            if userinfo.contains(':') {
                return Err(ConnInfoError::Password);
            }
            let user = percent_decode(userinfo, "user")?;
            if !user.is_empty() {
                given.user = Some(user);
            }
            hostport
        }
        None => authority,
    };
    let mut hosts = Vec::new();
    let mut ports = Vec::new();
    for item in hostport.split(',') {
        let (host, port) = uri_host_port(item)?;
        hosts.push(host);
        ports.push(port);
    }
    if hosts.iter().any(|h| !h.is_empty()) {
        given.host = Some(hosts.join(","));
    }
    if ports.iter().any(Option::is_some) {
        given.port = Some(
            ports
                .iter()
                .map(|p| p.as_deref().unwrap_or(""))
                .collect::<Vec<_>>()
                .join(","),
        );
    }
    if let Some(path) = path {
        let dbname = percent_decode(path, "dbname")?;
        if !dbname.is_empty() {
            given.dbname = Some(dbname);
        }
    }
    if let Some(query) = query {
        for param in query.split('&').filter(|p| !p.is_empty()) {
            let Some((key, value)) = param.split_once('=') else {
                return Err(ConnInfoError::ParameterWithoutEquals(param.to_string()));
            };
            let key = percent_decode(key, "parameter name")?;
            let value = percent_decode(value, &key)?;
            set(given, &key, value)?;
        }
    }
    Ok(())
}

/// One `host[:port]` of a URI's list (an IPv6 address in brackets), decoded.
fn uri_host_port(hostport: &str) -> Result<(String, Option<String>), ConnInfoError> {
    let (host, port) = if let Some(bracketed) = hostport.strip_prefix('[') {
        let Some((inside, after)) = bracketed.split_once(']') else {
            return Err(ConnInfoError::Unbracketed(hostport.to_string()));
        };
        let port = match after {
            "" => None,
            p => match p.strip_prefix(':') {
                Some(p) => Some(p),
                None => return Err(ConnInfoError::AfterBracket(hostport.to_string())),
            },
        };
        (inside.to_string(), port)
    } else {
        match hostport.split_once(':') {
            Some((h, p)) => (percent_decode(h, "host")?, Some(p)),
            None => (percent_decode(hostport, "host")?, None),
        }
    };
    if host.contains(',') {
        return Err(ConnInfoError::BadHost(host));
    }
    let port = port.map(|p| percent_decode(p, "port")).transpose()?;
    Ok((host, port))
}

/// Decodes `%XX` escapes; the result must be UTF-8. `what` names the part in errors.
fn percent_decode(text: &str, what: &str) -> Result<String, ConnInfoError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok());
            match hex {
                Some(b) => out.push(b),
                None => return Err(ConnInfoError::BadEscape(what.to_string())),
            }
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| ConnInfoError::NotUtf8(what.to_string()))
}

/// The password for a connection from a `.pgpass`-format text: the first line whose
/// `hostname:port:database:username` fields match (each may be `*`; `\:` and `\\` escape), as
/// libpq looks it up. For a Unix socket, the hostname field is matched against `localhost` when
/// the socket directory is the default one ([`DEFAULT_SOCKET_DIR`]), else against the directory's
/// path, as libpq does.
pub fn pgpass_lookup(
    text: &str,
    host: &Host,
    port: u16,
    dbname: &str,
    user: &str,
) -> Option<String> {
    let hostname = match host {
        Host::Unix(dir) if dir == Path::new(DEFAULT_SOCKET_DIR) => "localhost".to_string(),
        Host::Unix(dir) => dir.to_string_lossy().into_owned(),
        Host::Tcp(name) => name.clone(),
    };
    let port = port.to_string();
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut rest = line;
        let mut matched = true;
        for token in [hostname.as_str(), port.as_str(), dbname, user] {
            match match_field(rest, token) {
                Some(after) => rest = after,
                None => {
                    matched = false;
                    break;
                }
            }
        }
        if matched {
            return Some(unescape_password(rest));
        }
    }
    None
}

/// Matches one `:`-terminated field at the start of `line` against `token`; returns what follows
/// the colon.
fn match_field<'a>(line: &'a str, token: &str) -> Option<&'a str> {
    if let Some(after) = line.strip_prefix("*:") {
        return Some(after);
    }
    let mut chars = line.char_indices();
    let mut want = token.chars();
    while let Some((i, c)) = chars.next() {
        let literal = match c {
            ':' => {
                return want.next().is_none().then(|| &line[i + 1..]);
            }
            '\\' => match chars.next() {
                Some((_, escaped)) => escaped,
                None => return None,
            },
            c => c,
        };
        if want.next() != Some(literal) {
            return None;
        }
    }
    None
}

/// The password field: up to an unescaped `:` or the end, with escapes removed.
fn unescape_password(field: &str) -> String {
    let mut out = String::new();
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        match c {
            ':' => break,
            '\\' => match chars.next() {
                Some(escaped) => out.push(escaped),
                None => out.push('\\'),
            },
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(text: &str) -> ConnInfo {
        parse(text, "cron").unwrap_or_else(|e| panic!("{text:?}: {e}"))
    }

    fn err(text: &str) -> String {
        match parse(text, "cron") {
            Ok(info) => panic!("{text:?} parsed as {info:?}"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn an_empty_string_gives_every_default() {
        let info = ok("");
        let any = RequireAuth {
            password: true,
            md5: true,
            scram: true,
            none: true,
            spelled: "require_auth (any method, the default on a Unix socket)".into(),
        };
        assert_eq!(
            info,
            ConnInfo {
                host: Host::Unix(PathBuf::from("/var/run/postgresql")),
                port: 5432,
                servers: vec![Server {
                    host: Host::Unix(PathBuf::from("/var/run/postgresql")),
                    port: 5432,
                    require_auth: any.clone(),
                }],
                target_session_attrs: SessionAttrs::Any,
                dbname: "cron".into(),
                user: "cron".into(),
                passfile: None,
                connect_timeout_s: 5,
                application_name: "crond".into(),
                sslmode: SslMode::Prefer,
                sslrootcert: None,
                sslcert: None,
                channel_binding: ChannelBinding::Prefer,
                require_auth: any,
                statement_timeout_ms: 5000,
            }
        );
    }

    #[test]
    fn key_value_pairs_set_every_field() {
        let info = ok(
            "host=db.example port=6543 dbname=jobs user=alice passfile=/etc/crond/pgpass \
             connect_timeout=12 application_name=crond-a",
        );
        assert_eq!(info.host, Host::Tcp("db.example".into()));
        assert_eq!(info.port, 6543);
        assert_eq!(info.dbname, "jobs");
        assert_eq!(info.user, "alice");
        assert_eq!(info.passfile, Some(PathBuf::from("/etc/crond/pgpass")));
        assert_eq!(info.connect_timeout_s, 12);
        assert_eq!(info.application_name, "crond-a");
    }

    #[test]
    fn the_database_defaults_to_the_user_given() {
        assert_eq!(ok("user=alice").dbname, "alice");
        assert_eq!(ok("postgresql://bob@h").dbname, "bob");
    }

    #[test]
    fn spaces_around_the_equals_sign_are_allowed() {
        let info = ok("  host = 10.0.0.1   port= 5433 ");
        assert_eq!(info.host, Host::Tcp("10.0.0.1".into()));
        assert_eq!(info.port, 5433);
    }

    #[test]
    fn quoted_values_keep_spaces_and_unescape_quotes_and_backslashes() {
        let info = ok(r"application_name='cron job\'s \\ host' dbname=''");
        assert_eq!(info.application_name, r"cron job's \ host");
        assert_eq!(info.dbname, "cron", "an empty dbname is the default");
    }

    #[test]
    fn an_unquoted_value_may_escape_characters() {
        assert_eq!(ok(r"application_name=a\ b").application_name, "a b");
    }

    #[test]
    fn a_later_setting_overrides_an_earlier_one() {
        assert_eq!(ok("port=1 port=2").port, 2);
    }

    #[test]
    fn a_host_starting_with_a_slash_is_a_socket_directory() {
        assert_eq!(
            ok("host=/tmp/pg").host,
            Host::Unix(PathBuf::from("/tmp/pg"))
        );
    }

    #[test]
    fn unknown_keys_are_refused_by_name() {
        assert_eq!(
            err("hostaddr=1.2.3.4"),
            "unknown connection setting 'hostaddr'"
        );
        assert_eq!(
            err("postgresql://h/db?options=-c"),
            "unknown connection setting 'options'"
        );
    }

    #[test]
    fn every_sslmode_is_read_and_prefer_is_the_default() {
        assert_eq!(ok("").sslmode, SslMode::Prefer);
        for (text, mode) in [
            ("disable", SslMode::Disable),
            ("allow", SslMode::Allow),
            ("prefer", SslMode::Prefer),
            ("require", SslMode::Require),
            ("verify-ca", SslMode::VerifyCa),
            ("verify-full", SslMode::VerifyFull),
        ] {
            assert_eq!(ok(&format!("sslmode={text}")).sslmode, mode);
            assert_eq!(ok(&format!("postgres://h?sslmode={text}")).sslmode, mode);
            assert_eq!(mode.name(), text);
        }
        assert!(err("sslmode=maybe").starts_with("invalid sslmode value 'maybe'"));
    }

    #[test]
    fn sslrootcert_system_means_verify_full_and_refuses_a_weaker_mode() {
        let info = ok("host=db sslrootcert=system");
        assert_eq!(info.sslrootcert, Some(RootCert::System));
        assert_eq!(info.sslmode, SslMode::VerifyFull);
        assert_eq!(
            err("host=db sslrootcert=system sslmode=require"),
            "sslmode=require may not be used with sslrootcert=system (use verify-full)"
        );
        assert_eq!(
            ok("sslrootcert=/etc/ssl/ca.pem").sslrootcert,
            Some(RootCert::File(PathBuf::from("/etc/ssl/ca.pem")))
        );
        assert_eq!(ok("sslrootcert=/etc/ssl/ca.pem").sslmode, SslMode::Prefer);
    }

    #[test]
    fn a_client_certificate_needs_its_key_and_the_key_its_certificate() {
        assert_eq!(
            ok("sslcert=/c.pem sslkey=/c.key").sslcert,
            Some((PathBuf::from("/c.pem"), PathBuf::from("/c.key")))
        );
        assert!(err("sslcert=/c.pem").contains("sslcert needs sslkey"));
        assert!(err("sslkey=/c.key").contains("sslkey needs sslcert"));
    }

    #[test]
    fn channel_binding_is_prefer_unless_given() {
        assert_eq!(ok("").channel_binding, ChannelBinding::Prefer);
        assert_eq!(
            ok("channel_binding=require").channel_binding,
            ChannelBinding::Require
        );
        assert_eq!(
            ok("channel_binding=disable").channel_binding,
            ChannelBinding::Disable
        );
        assert!(err("channel_binding=yes").contains("invalid channel_binding value 'yes'"));
    }

    fn methods(r: &RequireAuth) -> (bool, bool, bool, bool) {
        (r.password, r.md5, r.scram, r.none)
    }

    #[test]
    fn only_a_tcp_server_nothing_proves_is_warned_of() {
        let warned = |text: &str| ok(text).unauthenticated_server();
        assert_eq!(
            warned("host=db.example").as_deref(),
            Some(
                "over TCP with sslmode=prefer, nothing proves that db.example is the database: \
                 anyone on the network path can answer in its place (and decide which host runs \
                 what); give sslmode=verify-full, with sslrootcert naming the server's CA"
            )
        );
        for weak in [
            "host=10.0.0.5 sslmode=disable",
            "host=db sslmode=require sslrootcert=/etc/ca.pem",
            "host=db sslmode=verify-ca",
            "host=db sslmode=require require_auth=scram-sha-256",
        ] {
            assert!(warned(weak).is_some(), "{weak}");
        }
        for proven in [
            "host=db sslmode=verify-full",
            "host=db sslrootcert=system",
            "host=db sslmode=verify-ca sslrootcert=/etc/ca.pem",
            "host=db sslmode=require channel_binding=require",
            "",
            "host=/run/postgresql",
            "postgresql:///cron",
        ] {
            assert_eq!(warned(proven), None, "{proven}");
        }
    }

    #[test]
    fn over_tcp_the_default_refuses_cleartext_and_md5_and_a_socket_takes_any() {
        let tcp = ok("host=db.example").require_auth;
        assert_eq!(methods(&tcp), (false, false, true, true));
        assert!(
            tcp.spelled.contains("the default over TCP"),
            "{}",
            tcp.spelled
        );
        let unix = ok("host=/run/pg").require_auth;
        assert_eq!(methods(&unix), (true, true, true, true));
    }

    #[test]
    fn require_auth_lists_methods_or_negates_them_as_libpq_16() {
        let r = |t: &str| methods(&ok(&format!("host=db require_auth={t}")).require_auth);
        assert_eq!(r("md5"), (false, true, false, false));
        assert_eq!(r("scram-sha-256"), (false, false, true, false));
        assert_eq!(r("password,md5,scram-sha-256"), (true, true, true, false));
        assert_eq!(r("!password"), (false, true, true, true));
        assert_eq!(r("!none,!password"), (false, true, true, false));
        assert_eq!(r("none"), (false, false, false, true));
        assert_eq!(
            ok("host=db require_auth=md5").require_auth.spelled,
            "require_auth=md5"
        );
        assert!(err("require_auth=md5,!password").contains("cannot be mixed"));
        assert!(err("require_auth=md5,md5").contains("more than once"));
        assert!(err("require_auth=gss").contains("not supported"));
        assert!(err("require_auth=kerberos").contains("invalid method 'kerberos'"));
        assert!(err("require_auth=md5,").contains("invalid method ''"));
    }

    #[test]
    fn a_password_in_the_key_value_string_is_refused() {
        assert_eq!(err("user=a password=secret"), PASSWORD_REFUSED);
        assert!(err("password=x").contains("passfile=PATH"));
    }

    #[test]
    fn a_password_in_the_url_is_refused() {
        assert_eq!(err("postgresql://alice:secret@db/jobs"), PASSWORD_REFUSED);
        assert_eq!(err("postgresql://alice:@db"), PASSWORD_REFUSED);
        assert_eq!(err("postgresql://db?password=secret"), PASSWORD_REFUSED);
    }

    #[test]
    fn a_uri_sets_user_host_port_and_database() {
        let info = ok("postgresql://alice@db.example:6543/jobs?connect_timeout=9");
        assert_eq!(info.user, "alice");
        assert_eq!(info.host, Host::Tcp("db.example".into()));
        assert_eq!(info.port, 6543);
        assert_eq!(info.dbname, "jobs");
        assert_eq!(info.connect_timeout_s, 9);
    }

    #[test]
    fn the_short_scheme_postgres_is_accepted() {
        assert_eq!(ok("postgres://h").host, Host::Tcp("h".into()));
    }

    #[test]
    fn a_bare_uri_gives_the_defaults() {
        assert_eq!(ok("postgresql://"), ok(""));
        assert_eq!(ok("postgresql:///"), ok(""));
    }

    #[test]
    fn a_uri_is_percent_decoded() {
        let info = ok("postgresql://al%69ce@h/my%20db?application_name=a%26b");
        assert_eq!(info.user, "alice");
        assert_eq!(info.dbname, "my db");
        assert_eq!(info.application_name, "a&b");
    }

    #[test]
    fn an_encoded_slash_host_in_a_uri_is_a_socket_directory() {
        let info = ok("postgresql://%2Fvar%2Flib%2Fpg:5433/jobs");
        assert_eq!(info.host, Host::Unix(PathBuf::from("/var/lib/pg")));
        assert_eq!(info.port, 5433);
    }

    #[test]
    fn a_host_parameter_in_a_uri_may_name_a_socket_directory() {
        let info = ok("postgresql:///jobs?host=/run/pg&port=5499");
        assert_eq!(info.host, Host::Unix(PathBuf::from("/run/pg")));
        assert_eq!(info.port, 5499);
        assert_eq!(info.dbname, "jobs");
    }

    #[test]
    fn a_bracketed_ipv6_address_in_a_uri_is_a_tcp_host() {
        let info = ok("postgresql://[::1]:7000/x");
        assert_eq!(info.host, Host::Tcp("::1".into()));
        assert_eq!(info.port, 7000);
        assert_eq!(ok("postgresql://[fe80::1]").port, 5432);
        assert!(err("postgresql://[::1").contains("'[' without ']'"));
    }

    #[test]
    fn a_bad_percent_escape_is_refused() {
        assert_eq!(
            err("postgresql://h/%zz"),
            "invalid percent escape in the URI's dbname"
        );
        assert_eq!(
            err("postgresql://h/%4"),
            "invalid percent escape in the URI's dbname"
        );
        assert_eq!(
            err("postgresql://h/%ff"),
            "the URI's dbname is not UTF-8 once decoded"
        );
    }

    #[test]
    fn bad_ports_are_refused_with_the_value() {
        for bad in ["0", "65536", "-1", "+5", "abc"] {
            assert_eq!(
                err(&format!("port={bad}")),
                format!("port '{bad}' is not a number from 1 to 65535")
            );
        }
        assert!(err("postgresql://h:x/db").contains("port 'x'"));
    }

    #[test]
    fn connect_timeout_zero_means_the_default_and_over_sixty_is_refused() {
        assert_eq!(ok("connect_timeout=0").connect_timeout_s, 5);
        assert_eq!(ok("connect_timeout=60").connect_timeout_s, 60);
        assert_eq!(
            err("connect_timeout=61"),
            "connect_timeout 61 is over the maximum of 60 seconds"
        );
        assert_eq!(
            err("connect_timeout=-1"),
            "connect_timeout '-1' is not a number of seconds"
        );
    }

    fn addresses(info: &ConnInfo) -> Vec<(Host, u16)> {
        info.servers
            .iter()
            .map(|s| (s.host.clone(), s.port))
            .collect()
    }

    fn unix(dir: &str) -> Host {
        Host::Unix(PathBuf::from(dir))
    }

    fn tcp(name: &str) -> Host {
        Host::Tcp(name.into())
    }

    #[test]
    fn several_hosts_take_one_port_each_or_one_for_all() {
        let info = ok("host=/run/a,/run/b port=5433,5434");
        assert_eq!(
            addresses(&info),
            [(unix("/run/a"), 5433), (unix("/run/b"), 5434)]
        );
        assert_eq!((info.host.clone(), info.port), (unix("/run/a"), 5433));
        assert_eq!(
            addresses(&ok("host=db1,10.0.0.2 port=6000")),
            [(tcp("db1"), 6000), (tcp("10.0.0.2"), 6000)]
        );
        assert_eq!(
            addresses(&ok("host=db1,db2")),
            [(tcp("db1"), 5432), (tcp("db2"), 5432)]
        );
        assert_eq!(
            addresses(&ok("host=db1,,/run/c port=1,,3")),
            [
                (tcp("db1"), 1),
                (unix(DEFAULT_SOCKET_DIR), 5432),
                (unix("/run/c"), 3)
            ],
            "an empty item is the default host or port"
        );
    }

    #[test]
    fn a_uri_may_list_hosts_each_with_its_port() {
        let info = ok("postgresql://a:1,b:2/db?target_session_attrs=read-write");
        assert_eq!(addresses(&info), [(tcp("a"), 1), (tcp("b"), 2)]);
        assert_eq!(info.dbname, "db");
        assert_eq!(info.target_session_attrs, SessionAttrs::ReadWrite);
        assert_eq!(
            addresses(&ok("postgresql://a,b:2/db")),
            [(tcp("a"), 5432), (tcp("b"), 2)]
        );
        assert_eq!(
            addresses(&ok("postgresql://[::1]:7,%2Frun%2Fpg:8,h")),
            [(tcp("::1"), 7), (unix("/run/pg"), 8), (tcp("h"), 5432)]
        );
        assert_eq!(
            addresses(&ok("postgresql:///db?host=/run/a,/run/b&port=1,2")),
            [(unix("/run/a"), 1), (unix("/run/b"), 2)]
        );
    }

    #[test]
    fn each_server_gets_its_own_copy_and_its_own_default_require_auth() {
        let info = ok("host=/run/a,db.example port=1,2 user=x");
        let each = info.each_server();
        assert_eq!(each.len(), 2);
        assert_eq!((each[0].host.clone(), each[0].port), (unix("/run/a"), 1));
        assert_eq!((each[1].host.clone(), each[1].port), (tcp("db.example"), 2));
        assert_eq!(methods(&each[0].require_auth), (true, true, true, true));
        assert_eq!(methods(&each[1].require_auth), (false, false, true, true));
        assert_eq!(each[1].user, "x");
        assert_eq!(each[1].servers, info.servers);
        let given = ok("host=/run/a,db.example require_auth=md5").each_server();
        assert_eq!(methods(&given[0].require_auth), (false, true, false, false));
        assert_eq!(methods(&given[1].require_auth), (false, true, false, false));
    }

    #[test]
    fn an_unproven_tcp_server_anywhere_in_the_list_is_warned_of() {
        let warned = |text: &str| ok(text).unauthenticated_server();
        assert_eq!(warned("host=/run/a,/run/b"), None);
        let second = warned("host=/run/a,db2 sslmode=require").expect("db2 is unproven");
        assert!(second.contains("nothing proves that db2"), "{second}");
        assert_eq!(warned("host=db1,db2 sslmode=verify-full"), None);
    }

    #[test]
    fn every_target_session_attrs_is_read_and_any_is_the_default() {
        assert_eq!(ok("").target_session_attrs, SessionAttrs::Any);
        for attrs in [
            SessionAttrs::Any,
            SessionAttrs::ReadWrite,
            SessionAttrs::ReadOnly,
            SessionAttrs::Primary,
            SessionAttrs::Standby,
            SessionAttrs::PreferStandby,
        ] {
            let text = format!("target_session_attrs={}", attrs.name());
            assert_eq!(ok(&text).target_session_attrs, attrs);
        }
        assert_eq!(
            err("target_session_attrs=master"),
            "invalid target_session_attrs value 'master' (any, read-write, read-only, primary, \
             standby or prefer-standby)"
        );
    }

    #[test]
    fn ports_that_do_not_match_the_hosts_are_refused() {
        assert_eq!(
            err("host=a,b,c port=1,2"),
            "could not match 2 port numbers to 3 hosts (give one port for all, or one for each \
             host)"
        );
        assert_eq!(
            err("host=a port=1,2"),
            "could not match 2 port numbers to 1 hosts (give one port for all, or one for each \
             host)"
        );
        assert_eq!(
            err("host=a,b port=1,x"),
            "port 'x' is not a number from 1 to 65535"
        );
        assert!(err("host=a,b\\ c").contains("not a host name"));
        assert!(err("postgresql://a:1,[::1/db").contains("'[' without ']'"));
        assert!(err("postgresql://a%2Cb/db").contains("not a host name"));
    }

    #[test]
    fn more_than_sixteen_hosts_are_refused() {
        let hosts = vec!["h"; 17].join(",");
        assert_eq!(
            err(&format!("host={hosts}")),
            "17 hosts given: at most 16 are tried"
        );
        assert_eq!(
            ok(&format!("host={}", vec!["h"; 16].join(",")))
                .servers
                .len(),
            16
        );
    }

    #[test]
    fn malformed_key_value_text_is_refused_naming_the_part() {
        assert_eq!(
            err("host"),
            "missing '=' after 'host' in the connection string"
        );
        assert_eq!(err("=x"), "a connection setting has no name before '='");
        assert_eq!(err("dbname='abc"), "unterminated quoted value of 'dbname'");
        assert_eq!(
            err("dbname='a'b"),
            "text right after the quoted value of 'dbname'"
        );
        assert!(err("host='a b'").contains("not a host name"));
    }

    #[test]
    fn a_nul_byte_in_a_name_is_refused() {
        assert_eq!(err("postgresql://h/a%00b"), "dbname contains a NUL byte");
    }

    #[test]
    fn no_user_and_no_default_is_refused() {
        assert!(parse("", "").is_err());
    }

    const PGPASS: &str = "\
# a comment: *:*:*:*:never
db.example:5432:jobs:alice:alice-pw
db.example:*:*:bob:bob\\:pw\\\\x
/run/pg:5499:*:*:socket-pw
localhost:5432:*:carol:local-pw
*:*:*:*:fallback
";

    #[test]
    fn pgpass_finds_the_first_matching_line() {
        let h = Host::Tcp("db.example".into());
        assert_eq!(
            pgpass_lookup(PGPASS, &h, 5432, "jobs", "alice").as_deref(),
            Some("alice-pw")
        );
        assert_eq!(
            pgpass_lookup(PGPASS, &h, 5433, "jobs", "alice").as_deref(),
            Some("fallback")
        );
    }

    #[test]
    fn pgpass_unescapes_colons_and_backslashes() {
        let h = Host::Tcp("db.example".into());
        assert_eq!(
            pgpass_lookup(PGPASS, &h, 1, "x", "bob").as_deref(),
            Some(r"bob:pw\x")
        );
    }

    #[test]
    fn pgpass_escapes_in_a_matched_field_match_the_literal_character() {
        let text = "a\\:b:*:*:*:pw\n";
        assert_eq!(
            pgpass_lookup(text, &Host::Tcp("a:b".into()), 1, "d", "u").as_deref(),
            Some("pw")
        );
        assert_eq!(
            pgpass_lookup(text, &Host::Tcp("a".into()), 1, "d", "u"),
            None
        );
    }

    #[test]
    fn pgpass_matches_a_socket_directory_by_its_path() {
        let h = Host::Unix(PathBuf::from("/run/pg"));
        assert_eq!(
            pgpass_lookup(PGPASS, &h, 5499, "d", "u").as_deref(),
            Some("socket-pw")
        );
    }

    #[test]
    fn pgpass_matches_the_default_socket_directory_as_localhost() {
        let h = Host::Unix(PathBuf::from(DEFAULT_SOCKET_DIR));
        assert_eq!(
            pgpass_lookup(PGPASS, &h, 5432, "d", "carol").as_deref(),
            Some("local-pw")
        );
    }

    #[test]
    fn pgpass_skips_comments_and_short_lines_and_may_find_nothing() {
        let text = "# *:*:*:*:commented\n\nh:1:d\n*:*:*:u:found\r\n";
        let h = Host::Tcp("h".into());
        assert_eq!(pgpass_lookup(text, &h, 1, "d", "x"), None);
        assert_eq!(
            pgpass_lookup(text, &h, 1, "d", "u").as_deref(),
            Some("found")
        );
    }

    #[test]
    fn pgpass_password_ends_at_an_unescaped_colon() {
        let text = "*:*:*:*:pw:extra\n";
        assert_eq!(
            pgpass_lookup(text, &Host::Tcp("h".into()), 1, "d", "u").as_deref(),
            Some("pw")
        );
    }
}
