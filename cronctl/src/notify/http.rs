//! The smallest HTTP/1.1 client `cronctl notify` needs: one request per connection
//! (`Connection: close`), over TCP or over TLS with OpenSSL (the system's CA store, the
//! certificate's name checked against the URL's host), every step within one deadline.
//! Redirects are never followed: a 3xx is an answer, which the caller refuses.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use openssl::ssl::{SslConnector, SslMethod};

/// A URL as `CRON_PING` and `CRON_WEBHOOK` take it: `http://` or `https://`, a host, an
/// optional port, a path and query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub tls: bool,
    /// The host as written (an IPv6 address without its brackets).
    pub host: String,
    pub port: u16,
    /// The path and query, `/` at least.
    pub path: String,
}

impl Url {
    pub fn parse(text: &str) -> Option<Url> {
        let (tls, rest) = if let Some(rest) = text.strip_prefix("https://") {
            (true, rest)
        } else {
            (false, text.strip_prefix("http://")?)
        };
        if text.bytes().any(|b| b <= b' ' || b == 0x7f) {
            return None;
        }
        let (authority, path) = match rest.find(['/', '?']) {
            Some(i) if rest.as_bytes()[i] == b'?' => (&rest[..i], format!("/{}", &rest[i..])),
            Some(i) => (&rest[..i], rest[i..].to_string()),
            None => (rest, "/".to_string()),
        };
        if authority.contains('@') {
            return None;
        }
        let (host, port) = match authority.strip_prefix('[') {
            Some(v6) => {
                let (host, after) = v6.split_once(']')?;
                (host, after.strip_prefix(':'))
            }
            None => match authority.rsplit_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            },
        };
        let port = match port {
            Some(p) => p.parse().ok().filter(|&p| p > 0)?,
            None if tls => 443,
            None => 80,
        };
        (!host.is_empty()).then(|| Url {
            tls,
            host: host.to_string(),
            port,
            path,
        })
    }

    /// `https://host[:port]`: the URL without its path, which often holds a check's key.
    pub fn site(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        let host = match self.host.contains(':') {
            true => format!("[{}]", self.host),
            false => self.host.clone(),
        };
        match (self.tls, self.port) {
            (true, 443) | (false, 80) => format!("{scheme}://{host}"),
            _ => format!("{scheme}://{host}:{}", self.port),
        }
    }

    /// This URL with `segment` added to its path (before the query).
    pub fn with_segment(&self, segment: &str) -> Url {
        let (path, query) = match self.path.split_once('?') {
            Some((p, q)) => (p, Some(q)),
            None => (self.path.as_str(), None),
        };
        let mut path = format!("{}/{segment}", path.trim_end_matches('/'));
        if let Some(q) = query {
            path = format!("{path}?{q}");
        }
        Url {
            path,
            ..self.clone()
        }
    }

    /// This URL with `name=value` added to its query.
    pub fn with_query(&self, name: &str, value: &str) -> Url {
        let sep = if self.path.contains('?') { '&' } else { '?' };
        Url {
            path: format!("{}{sep}{name}={value}", self.path),
            ..self.clone()
        }
    }
}

/// One request: `method`, and a body of `content_type` (none when `body` is empty and the
/// method is GET).
#[derive(Debug)]
pub struct Request<'a> {
    pub method: &'a str,
    pub url: &'a Url,
    pub content_type: &'a str,
    pub body: &'a [u8],
}

/// What came back: the status code.
pub type Status = u16;

/// Sends `request` and reads the status line; every step ends by `timeout` from now.
pub fn send(request: &Request<'_>, timeout: Duration) -> io::Result<Status> {
    let deadline = Instant::now() + timeout;
    let stream = connect(request.url, deadline)?;
    let head = head(request);
    if request.url.tls {
        let connector = SslConnector::builder(SslMethod::tls_client())
            .map_err(io::Error::other)?
            .build();
        let mut tls = connector
            .connect(&request.url.host, stream)
            .map_err(|e| io::Error::other(format!("TLS: {e}")))?;
        exchange(&mut tls, &head, request.body)
    } else {
        let mut stream = stream;
        exchange(&mut stream, &head, request.body)
    }
}

fn head(request: &Request<'_>) -> Vec<u8> {
    let url = request.url;
    let host = match (url.host.contains(':'), url.tls, url.port) {
        (true, _, _) => format!("[{}]:{}", url.host, url.port),
        (false, true, 443) | (false, false, 80) => url.host.clone(),
        (false, _, port) => format!("{}:{port}", url.host),
    };
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {host}\r\nUser-Agent: cronctl-notify/{}\r\n\
         Connection: close\r\nContent-Length: {}\r\n",
        request.method,
        url.path,
        env!("CARGO_PKG_VERSION"),
        request.body.len()
    );
    if !request.body.is_empty() {
        head.push_str(&format!("Content-Type: {}\r\n", request.content_type));
    }
    head.push_str("\r\n");
    head.into_bytes()
}

/// A TCP connection to the URL's host (each of its addresses in turn), with read and write
/// timeouts that end at `deadline`.
fn connect(url: &Url, deadline: Instant) -> io::Result<TcpStream> {
    let mut last = io::Error::new(io::ErrorKind::NotFound, "the host has no address");
    for addr in (url.host.as_str(), url.port).to_socket_addrs()? {
        let left = left(deadline)?;
        match TcpStream::connect_timeout(&addr, left) {
            Ok(stream) => {
                let left = Some(self::left(deadline)?);
                stream.set_read_timeout(left)?;
                stream.set_write_timeout(left)?;
                return Ok(stream);
            }
            Err(e) => last = e,
        }
    }
    Err(last)
}

fn left(deadline: Instant) -> io::Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    match left.is_zero() {
        true => Err(io::Error::new(io::ErrorKind::TimedOut, "timed out")),
        false => Ok(left),
    }
}

/// Writes the request and reads the answer's status line (the rest is not read: the
/// connection is closed).
fn exchange(stream: &mut (impl Read + Write), head: &[u8], body: &[u8]) -> io::Result<Status> {
    stream.write_all(head)?;
    stream.write_all(body)?;
    stream.flush()?;
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    while line.len() < 256 && !line.ends_with(b"\n") {
        match stream.read(&mut byte)? {
            0 => break,
            _ => line.push(byte[0]),
        }
    }
    let text = String::from_utf8_lossy(&line);
    let mut words = text.split_whitespace();
    match (words.next(), words.next().and_then(|c| c.parse().ok())) {
        (Some(v), Some(code)) if v.starts_with("HTTP/1.") => Ok(code),
        _ => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "no HTTP status line in the answer",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_into_host_port_and_path_and_their_segments_go_before_the_query() {
        let u = Url::parse("https://hc-ping.com/5f2c").unwrap();
        assert_eq!((u.tls, u.host.as_str(), u.port), (true, "hc-ping.com", 443));
        assert_eq!(
            u.with_segment("fail").with_query("rid", "x").path,
            "/5f2c/fail?rid=x"
        );
        assert_eq!(u.site(), "https://hc-ping.com");
        let q = Url::parse("http://127.0.0.1:8080/p/?k=v").unwrap();
        assert_eq!(q.with_segment("start").path, "/p/start?k=v");
        assert_eq!(q.with_query("rid", "r").path, "/p/?k=v&rid=r");
        assert_eq!(q.site(), "http://127.0.0.1:8080");
        let v6 = Url::parse("http://[::1]:9/x").unwrap();
        assert_eq!((v6.host.as_str(), v6.port), ("::1", 9));
        assert_eq!(Url::parse("http://h").unwrap().path, "/");
        for bad in [
            "ftp://h/",
            "http://",
            "http://h:0/",
            "http://u@h/",
            "http://h/a b",
            "h/x",
        ] {
            assert_eq!(Url::parse(bad), None, "{bad}");
        }
    }
}
