//! The socket to the server, opened here rather than by tokio-postgres so that the [`Guard`]
//! (crate::guard) can sit on it and TLS can be negotiated as libpq does.
//!
//! TCP sockets get keepalives (first probe after 20 s idle, then every 5 s, dead after 3
//! unanswered) and `TCP_USER_TIMEOUT` of 20 s (data unacknowledged that long breaks the
//! connection), so that a connection to a host that vanished ends even while the helper is idle.
//! The caller bounds the whole open with the connect timeout, name resolution included.
//!
//! Over a Unix socket, [`untrusted_server`] says whether the server may be sent the password:
//! the process listening on the socket (its peer credentials, which no file can fake) must run
//! as root, as this process's user, or as the owner of the socket's directory. Anyone else
//! could have made the socket: in a directory others may write to (`/tmp`), or while the real
//! server was down. Debian's /var/run/postgresql is the server's own (postgres, mode 2775).

use std::fmt;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crond::cluster::conninfo::{ConnInfo, Host};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::{TcpStream, UnixStream};

const KEEPALIVE_IDLE: Duration = Duration::from_secs(20);
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(5);
const KEEPALIVE_COUNT: u32 = 3;
const TCP_USER_TIMEOUT: Duration = Duration::from_secs(20);

/// A connected socket.
#[derive(Debug)]
pub enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// Connects to the Unix socket in the directory, or to each address of the TCP host in turn.
pub async fn open(info: &ConnInfo) -> Result<Socket, SocketError> {
    match &info.host {
        Host::Unix(dir) => {
            let path = dir.join(format!(".s.PGSQL.{}", info.port));
            UnixStream::connect(&path)
                .await
                .map(Socket::Unix)
                .map_err(|e| SocketError::Connect(path.display().to_string(), e))
        }
        Host::Tcp(name) => {
            let addrs = tokio::net::lookup_host((name.as_str(), info.port))
                .await
                .map_err(|e| SocketError::Resolve(name.clone(), e))?;
            let mut last = SocketError::NoAddress(name.clone());
            for addr in addrs {
                match TcpStream::connect(addr).await {
                    Ok(stream) => {
                        tune(&stream);
                        return Ok(Socket::Tcp(stream));
                    }
                    Err(e) => last = SocketError::Connect(addr.to_string(), e),
                }
            }
            Err(last)
        }
    }
}

/// Why no connection to the server was opened, or TLS not agreed on it.
#[derive(Debug)]
pub enum SocketError {
    /// Connecting to the socket path or address shown failed.
    Connect(String, io::Error),
    Resolve(String, io::Error),
    /// The host name resolved to no address.
    NoAddress(String),
    /// Sending the SSLRequest or reading its answer failed.
    AskingForTls(io::Error),
    /// The SSLRequest's answer was this byte, neither `S` nor `N`.
    NotPostgres(u8),
}

impl fmt::Display for SocketError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SocketError::Connect(to, e) => write!(f, "connect to {to}: {e}"),
            SocketError::Resolve(name, e) => write!(f, "resolve {name}: {e}"),
            SocketError::NoAddress(name) => write!(f, "resolve {name}: no address"),
            SocketError::AskingForTls(e) => write!(f, "asking for TLS: {e}"),
            SocketError::NotPostgres(byte) => write!(
                f,
                "the server answered the TLS request with '{}' (not a PostgreSQL server?)",
                [*byte].escape_ascii()
            ),
        }
    }
}

impl std::error::Error for SocketError {}

/// Why the server on a Unix socket is not trusted with the password (see the module's
/// header), or `None`: trusted, or over TCP.
pub fn untrusted_server(socket: &Socket, info: &ConnInfo) -> Option<String> {
    let (Socket::Unix(stream), Host::Unix(dir)) = (socket, &info.host) else {
        return None;
    };
    let path = dir.join(format!(".s.PGSQL.{}", info.port));
    let server = match stream.peer_cred() {
        Ok(cred) => cred.uid(),
        Err(e) => {
            return Some(format!(
                "can't tell who runs the server on {}: {e}",
                path.display()
            ));
        }
    };
    let me = crond::sys::user::effective_uid().0;
    let owner = match std::fs::metadata(dir) {
        Ok(meta) => meta.uid(),
        Err(e) => return Some(format!("{}: {e}", dir.display())),
    };
    if server == 0 || server == me || server == owner {
        return None;
    }
    Some(format!(
        "the server on {} runs as uid {server}, neither root, this user (uid {me}) nor the \
         owner of {} (uid {owner}), who alone decide what listens there",
        path.display(),
        dir.display()
    ))
}

/// No delay for small messages, keepalives and the user timeout. Best effort: a kernel without
/// one of them still connects.
fn tune(stream: &TcpStream) {
    let _ = stream.set_nodelay(true);
    let sock = socket2::SockRef::from(stream);
    let keepalive = socket2::TcpKeepalive::new()
        .with_time(KEEPALIVE_IDLE)
        .with_interval(KEEPALIVE_INTERVAL)
        .with_retries(KEEPALIVE_COUNT);
    let _ = sock.set_tcp_keepalive(&keepalive);
    let _ = sock.set_tcp_user_timeout(Some(TCP_USER_TIMEOUT));
}

/// Asks the server for TLS (SSLRequest) and reads its one-byte answer: true for `S`.
pub async fn ask_for_tls(socket: &mut Socket) -> Result<bool, SocketError> {
    // Length 8, then the request code 1234 5679.
    const SSL_REQUEST: [u8; 8] = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];
    socket
        .write_all(&SSL_REQUEST)
        .await
        .map_err(SocketError::AskingForTls)?;
    let mut answer = [0u8];
    socket
        .read_exact(&mut answer)
        .await
        .map_err(SocketError::AskingForTls)?;
    match answer[0] {
        b'S' => Ok(true),
        b'N' => Ok(false),
        other => Err(SocketError::NotPostgres(other)),
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Socket::Unix(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_flush(cx),
            Socket::Unix(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Socket::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Socket::Unix(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
