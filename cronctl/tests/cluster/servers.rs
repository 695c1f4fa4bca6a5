//! Several servers in one connection string: tried in order, kept by `target_session_attrs`,
//! against a real primary and its real streaming standby.

use crate::client::{connect, scalar, try_connect};
use crate::support::postgres::PgServer;

/// `host=A,B port=a,b` for the servers given, as `postgres` on their sockets.
fn hosts(servers: &[&PgServer], more: &str) -> String {
    let dirs: Vec<String> = servers
        .iter()
        .map(|s| s.socket_dir().display().to_string())
        .collect();
    let ports: Vec<String> = servers.iter().map(|s| s.port().to_string()).collect();
    format!(
        "host={} port={} dbname=crond user=postgres connect_timeout=5 {more}",
        dirs.join(","),
        ports.join(",")
    )
}

/// The port of the server a new connection reaches.
fn reached(text: &str) -> String {
    let mut client = connect(text);
    let port = scalar(&mut client, "SELECT current_setting('port')").expect("a port");
    client.close();
    port
}

#[test]
fn a_server_that_is_not_there_is_skipped_for_the_next() {
    let pg = PgServer::start();
    let gone = tempfile::tempdir().expect("a directory with no server");
    let text = format!(
        "host={},{} port=5999,{} dbname=crond user=postgres",
        gone.path().display(),
        pg.socket_dir().display(),
        pg.port()
    );
    assert_eq!(reached(&text), pg.port().to_string());
    let uri = format!(
        "postgresql://{}:5999,{}:{}/crond?user=postgres",
        gone.path().display().to_string().replace('/', "%2F"),
        pg.socket_dir().display().to_string().replace('/', "%2F"),
        pg.port()
    );
    assert_eq!(reached(&uri), pg.port().to_string());
}

#[test]
fn target_session_attrs_picks_the_primary_or_the_standby() {
    let primary = PgServer::start();
    let standby = PgServer::start_standby_of(&primary);
    let (p, s) = (primary.port().to_string(), standby.port().to_string());
    let both = [&standby, &primary];
    assert_eq!(reached(&hosts(&both, "")), s, "any: the first that logs in");
    for (attrs, want) in [
        ("read-write", &p),
        ("primary", &p),
        ("read-only", &s),
        ("standby", &s),
    ] {
        assert_eq!(
            reached(&hosts(&both, &format!("target_session_attrs={attrs}"))),
            *want,
            "{attrs}"
        );
    }
    let primary_first = [&primary, &standby];
    let prefer = "target_session_attrs=prefer-standby";
    assert_eq!(reached(&hosts(&primary_first, prefer)), s);
    assert_eq!(
        reached(&hosts(&[&primary], prefer)),
        p,
        "prefer-standby takes a primary when no server is a standby"
    );
}

#[test]
fn when_no_server_fits_the_error_names_each_and_why() {
    let primary = PgServer::start();
    let standby = PgServer::start_standby_of(&primary);
    primary.stop();
    let text = hosts(&[&standby, &primary], "target_session_attrs=read-write");
    let e = try_connect(&text).expect_err("no primary is up");
    let (s_dir, p_dir) = (
        standby.socket_dir().display(),
        primary.socket_dir().display(),
    );
    let s_said = format!(
        "{s_dir} port {}: the server is read-only, and target_session_attrs=read-write was \
         asked for",
        standby.port()
    );
    assert!(
        e.starts_with("no server could be used (target_session_attrs=read-write): "),
        "{e}"
    );
    assert!(e.contains(&s_said), "{e}");
    assert!(
        e.contains(&format!("; {p_dir} port {}: ", primary.port())),
        "{e}"
    );
}

#[test]
fn a_session_lost_while_idle_follows_the_promoted_standby() {
    let primary = PgServer::start();
    let standby = PgServer::start_standby_of(&primary);
    let text = hosts(&[&primary, &standby], "target_session_attrs=read-write");
    let mut client = connect(&text);
    let port = scalar(&mut client, "SELECT current_setting('port')");
    assert_eq!(port, Some(primary.port().to_string()));
    primary.stop();
    standby.promote();
    // The server ended the session while it was idle: the next call opens a new one, on the
    // first server that accepts writes now.
    let port = scalar(&mut client, "SELECT current_setting('port')");
    assert_eq!(port, Some(standby.port().to_string()));
    client
        .batch("CREATE TABLE written_after_failover (x int)")
        .expect("the promoted standby takes writes");
    client.close();
}
