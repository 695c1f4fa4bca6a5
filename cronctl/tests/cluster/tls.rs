//! TLS and authentication as libpq does them, against a real server with `ssl = on` and
//! certificates made by the `openssl` command (tests/support/postgres.rs `Certs`), and against
//! a fake server that records what the client sends.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::sync::mpsc;

use crate::client::{connect, scalar, try_connect};
use crate::support::postgres::{CLEAR_PASSWORD, PASSWORD, PgServer};

/// A TCP connection string as `crond_test` (SCRAM) to `host`, with `extra` settings.
fn tcp(pg: &PgServer, host: &str, extra: &str) -> String {
    format!(
        "host={host} port={} dbname=crond user=crond_test passfile={} {extra}",
        pg.port(),
        pg.passfile().display()
    )
}

/// Whether this session is encrypted, as the server sees it.
fn ssl_in_use(client: &mut cronctl::Client) -> String {
    scalar(
        client,
        "SELECT ssl::text FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
    )
    .unwrap_or_default()
}

#[test]
fn verify_full_accepts_the_name_in_the_certificate_and_refuses_another() {
    let pg = PgServer::start_tls();
    let ca = pg.certs().ca.display().to_string();
    for host in ["localhost", "127.0.0.1"] {
        let mut client = connect(&tcp(
            &pg,
            host,
            &format!("sslmode=verify-full sslrootcert={ca}"),
        ));
        assert_eq!(ssl_in_use(&mut client), "true", "{host}");
    }
    // 127.0.0.2 reaches the same server; its certificate names localhost and 127.0.0.1 only.
    let e = try_connect(&tcp(
        &pg,
        "127.0.0.2",
        &format!("sslmode=verify-full sslrootcert={ca}"),
    ))
    .expect_err("a name the certificate does not hold");
    assert_eq!(
        e,
        "sslmode=verify-full: server certificate does not match host name \"127.0.0.2\""
    );
    // verify-ca checks the chain only.
    let mut client = connect(&tcp(
        &pg,
        "127.0.0.2",
        &format!("sslmode=verify-ca sslrootcert={ca}"),
    ));
    assert_eq!(ssl_in_use(&mut client), "true");
}

#[test]
fn a_certificate_from_another_ca_or_the_system_store_is_not_trusted() {
    let pg = PgServer::start_tls();
    let other = pg.certs().other_ca.display().to_string();
    for (extra, roots) in [
        (
            format!("sslmode=verify-ca sslrootcert={other}"),
            format!("sslrootcert={other}"),
        ),
        // The default roots are the system's, which do not hold the fixture's CA.
        (
            "sslmode=verify-full".to_string(),
            "the system's CA store".to_string(),
        ),
        (
            "sslrootcert=system".to_string(),
            "the system's CA store".to_string(),
        ),
        // require with a root file checks the chain, as libpq does with a root.crt.
        (
            format!("sslmode=require sslrootcert={other}"),
            format!("sslrootcert={other}"),
        ),
    ] {
        let e = try_connect(&tcp(&pg, "localhost", &extra)).expect_err(&extra);
        assert!(
            e.contains("server certificate not trusted") && e.contains(&roots),
            "{extra}: {e}"
        );
    }
}

#[test]
fn prefer_and_require_encrypt_without_checking_and_disable_does_not() {
    let pg = PgServer::start_tls();
    // The default sslmode is prefer: TLS when the server has it.
    let mut client = connect(&tcp(&pg, "127.0.0.2", ""));
    assert_eq!(ssl_in_use(&mut client), "true");
    let mut client = connect(&tcp(&pg, "127.0.0.2", "sslmode=require"));
    assert_eq!(ssl_in_use(&mut client), "true");
    let mut client = connect(&tcp(&pg, "127.0.0.1", "sslmode=disable"));
    assert_eq!(ssl_in_use(&mut client), "false");
    let mut client = connect(&tcp(&pg, "127.0.0.1", "sslmode=allow"));
    assert_eq!(
        ssl_in_use(&mut client),
        "false",
        "allow tries without TLS first"
    );
}

#[test]
fn require_against_a_server_without_tls_fails_and_prefer_goes_without() {
    let pg = PgServer::start();
    let e = try_connect(&tcp(&pg, "127.0.0.1", "sslmode=require")).expect_err("no TLS");
    assert_eq!(
        e,
        format!(
            "sslmode=require: the server at 127.0.0.1 port {} does not accept TLS connections",
            pg.port()
        )
    );
    for mode in ["verify-ca", "verify-full"] {
        let e =
            try_connect(&tcp(&pg, "127.0.0.1", &format!("sslmode={mode}"))).expect_err("no TLS");
        assert!(e.starts_with(&format!("sslmode={mode}: ")), "{e}");
    }
    let mut client = connect(&tcp(&pg, "127.0.0.1", ""));
    assert_eq!(ssl_in_use(&mut client), "false");
}

#[test]
fn a_client_certificate_logs_in_where_pg_hba_says_cert() {
    let pg = PgServer::start_tls();
    let c = pg.certs();
    let text = format!(
        "host=localhost port={} dbname=crond user=crond_cert sslmode=verify-full \
         sslrootcert={} sslcert={} sslkey={}",
        pg.port(),
        c.ca.display(),
        c.client_cert.display(),
        c.client_key.display()
    );
    let mut client = connect(&text);
    assert_eq!(
        scalar(&mut client, "SELECT current_user").as_deref(),
        Some("crond_cert")
    );
    // Without it, pg_hba's cert line refuses the role.
    let without = format!(
        "host=localhost port={} dbname=crond user=crond_cert sslmode=verify-full sslrootcert={}",
        pg.port(),
        c.ca.display()
    );
    let e = try_connect(&without).expect_err("no client certificate");
    assert!(e.starts_with("FATAL 28000:"), "{e}");
    // A key others may read is refused before anything is sent, as libpq refuses it.
    std::fs::set_permissions(&c.client_key, std::fs::Permissions::from_mode(0o640)).expect("chmod");
    let e = try_connect(&text).expect_err("a key others can read");
    assert!(
        e.starts_with(&format!("sslkey {}: must be owned", c.client_key.display())),
        "{e}"
    );
    std::fs::set_permissions(&c.client_key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let link = c.client_key.with_extension("link");
    std::os::unix::fs::symlink(&c.client_key, &link).expect("symlink");
    let e = try_connect(&text.replace(
        &c.client_key.display().to_string(),
        &link.display().to_string(),
    ))
    .expect_err("a symlink");
    assert!(e.starts_with("sslkey "), "{e}");
}

#[test]
fn scram_uses_channel_binding_over_tls_and_require_fails_without_tls() {
    let pg = PgServer::start_tls();
    let ca = pg.certs().ca.display().to_string();
    let mut client = connect(&tcp(
        &pg,
        "localhost",
        &format!("sslmode=verify-full sslrootcert={ca} channel_binding=require"),
    ));
    assert_eq!(ssl_in_use(&mut client), "true");
    assert_eq!(
        scalar(&mut client, "SELECT current_user").as_deref(),
        Some("crond_test")
    );
    let e = try_connect(&tcp(
        &pg,
        "127.0.0.1",
        "sslmode=disable channel_binding=require",
    ))
    .expect_err("no TLS, no binding");
    assert!(e.starts_with("channel_binding=require: "), "{e}");
    // On the Unix socket (trust) there is no SCRAM, so no binding either.
    let e =
        try_connect(&format!("{} channel_binding=require", pg.conninfo())).expect_err("no SCRAM");
    assert!(e.starts_with("channel_binding=require: "), "{e}");
}

#[test]
fn a_cleartext_password_request_over_tcp_is_refused_unless_allowed() {
    let pg = PgServer::start_tls();
    let ca = pg.certs().ca.display().to_string();
    let clear = |extra: &str| {
        format!(
            "host=localhost port={} dbname=crond user=crond_clear passfile={} {extra}",
            pg.port(),
            pg.passfile().display()
        )
    };
    for extra in [
        "sslmode=disable",
        &format!("sslmode=verify-full sslrootcert={ca}"),
    ] {
        let e = try_connect(&clear(extra)).expect_err("cleartext by default");
        assert!(
            e.starts_with(
                "require_auth=scram-sha-256,none (the default over TCP): the server asked for \
                 the password in clear text; refused without sending it"
            ),
            "{extra}: {e}"
        );
    }
    let log = pg.log();
    assert!(
        log.contains("connection received: host=127.0.0.1"),
        "the server saw the attempts:\n{log}"
    );
    assert!(
        !log.contains("password authentication failed") && !log.contains("user=crond_clear "),
        "a password reached the server:\n{log}"
    );
    // Allowed by name, over verified TLS, it logs in.
    let mut client = connect(&clear(&format!(
        "sslmode=verify-full sslrootcert={ca} require_auth=password"
    )));
    assert_eq!(
        scalar(&mut client, "SELECT current_user").as_deref(),
        Some("crond_clear")
    );
    // require_auth=scram-sha-256 alone refuses a server that asks nothing (trust).
    let e = try_connect(&format!("{} require_auth=scram-sha-256", pg.conninfo()))
        .expect_err("trust without none");
    assert!(e.contains("without authentication"), "{e}");
}

/// A fake server on a Unix socket that asks for `request` (an authentication request code)
/// and reports every byte the client sent after the startup message.
fn record_after_auth_request(code: i32) -> (tempfile::TempDir, mpsc::Receiver<Vec<u8>>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let listener = UnixListener::bind(dir.path().join(".s.PGSQL.5432")).expect("bind");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut len = [0u8; 4];
        if stream.read_exact(&mut len).is_err() {
            return;
        }
        let mut startup = vec![0u8; u32::from_be_bytes(len) as usize - 4];
        if stream.read_exact(&mut startup).is_err() {
            return;
        }
        let mut request = vec![b'R', 0, 0, 0, 8];
        request.extend_from_slice(&code.to_be_bytes());
        if code == 5 {
            request[4] = 12;
            request.extend_from_slice(b"salt");
        }
        let _ = stream.write_all(&request);
        let mut after = Vec::new();
        let _ = stream.read_to_end(&mut after);
        let _ = tx.send(after);
    });
    (dir, rx)
}

#[test]
fn a_refused_password_request_gets_no_answer_at_all() {
    for (code, allow, what) in [
        (3, "require_auth=scram-sha-256", "in clear text"),
        (5, "require_auth=!md5", "an md5 password hash"),
    ] {
        let (dir, received) = record_after_auth_request(code);
        let info = crate::client::info(&format!(
            "host={} user=crond dbname=crond {allow}",
            dir.path().display()
        ));
        let e = cronctl::Client::connect(&info, Some(CLEAR_PASSWORD)).expect_err("refused");
        assert!(
            e.contains(what) && e.contains("refused without sending it"),
            "{e}"
        );
        let after = received.recv().expect("what the client sent");
        assert!(
            after.is_empty() || !after.contains(&b'p'),
            "the client answered: {after:?}"
        );
        assert!(
            !after
                .windows(CLEAR_PASSWORD.len())
                .any(|w| w == CLEAR_PASSWORD.as_bytes()),
            "the password was sent"
        );
    }
    // The same fake, allowed: the password goes out (the recording works).
    let (dir, received) = record_after_auth_request(3);
    let info = crate::client::info(&format!(
        "host={} user=crond dbname=crond",
        dir.path().display()
    ));
    let _ = cronctl::Client::connect(&info, Some(CLEAR_PASSWORD));
    let after = received.recv().expect("what the client sent");
    assert!(
        after
            .windows(CLEAR_PASSWORD.len())
            .any(|w| w == CLEAR_PASSWORD.as_bytes()),
        "a socket allows cleartext by default: {after:?}"
    );
    let _ = PASSWORD;
}

#[test]
fn root_a_socket_server_run_by_another_user_than_its_directorys_owner_gets_no_password() {
    crate::support::root::require_root();
    // The server runs as postgres, in a socket directory of postgres's.
    let pg = PgServer::start_tls();
    let out = std::process::Command::new("id")
        .args(["-u", "postgres"])
        .output()
        .expect("id -u postgres");
    let postgres = String::from_utf8_lossy(&out.stdout).trim().to_string();
    // The same server seen from a directory anyone may write to, as /tmp: root's, mode 1777.
    let shared = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o1777))
        .expect("chmod 1777");
    let name = format!(".s.PGSQL.{}", pg.port());
    std::os::unix::fs::symlink(pg.socket_dir().join(&name), shared.path().join(&name))
        .expect("symlink");
    let clear = |dir: &std::path::Path| {
        format!(
            "host={} port={} dbname=crond user=crond_clear passfile={}",
            dir.display(),
            pg.port(),
            pg.passfile().display()
        )
    };
    let e = try_connect(&clear(shared.path())).expect_err("not trusted");
    assert_eq!(
        e,
        format!(
            "the server on {}/{name} runs as uid {postgres}, neither root, this user (uid 0) nor \
             the owner of {} (uid 0), who alone decide what listens there: it asked for the \
             password in clear text; refused without sending it",
            shared.path().display(),
            shared.path().display()
        )
    );
    let log = pg.log();
    assert!(
        log.contains("connection received: host=[local]"),
        "the server saw the attempt:\n{log}"
    );
    assert!(
        !log.contains("password authentication failed") && !log.contains("user=crond_clear"),
        "a password reached the server:\n{log}"
    );
    // Asked for no password (trust), the client goes on: nothing secret is at stake.
    let mut client = connect(&format!(
        "host={} port={} dbname=crond user=postgres",
        shared.path().display(),
        pg.port()
    ));
    assert_eq!(
        scalar(&mut client, "SELECT current_user").as_deref(),
        Some("postgres")
    );
    // From the directory the server's user owns, the password goes.
    let mut client = connect(&clear(pg.socket_dir()));
    assert_eq!(
        scalar(&mut client, "SELECT current_user").as_deref(),
        Some("crond_clear")
    );
    assert!(pg.log().contains("connection authorized: user=crond_clear"));
}
