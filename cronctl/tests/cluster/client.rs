//! The client's calls and errors, each against a real server.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use cronctl::Client;
use crond::cluster::conninfo::{self, ConnInfo};

use crate::support::postgres::{MD5_PASSWORD, PASSWORD, PgServer};

pub fn info(text: &str) -> ConnInfo {
    conninfo::parse(text, "root").unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// The password for `info` from its passfile, as the helper will look it up.
pub fn password(info: &ConnInfo) -> Option<String> {
    let path = info.passfile.as_ref()?;
    let text = std::fs::read_to_string(path).expect("read the passfile");
    conninfo::pgpass_lookup(&text, &info.host, info.port, &info.dbname, &info.user)
}

/// Connects as the helper would, or the error.
pub fn try_connect(text: &str) -> Result<Client, String> {
    let info = info(text);
    let pw = password(&info);
    Client::connect(&info, pw.as_deref())
}

pub fn connect(text: &str) -> Client {
    try_connect(text).unwrap_or_else(|e| panic!("connect {text}: {e}"))
}

/// The one value of a one-row, one-column result.
pub fn scalar(client: &mut Client, sql: &str) -> Option<String> {
    let rows = client
        .query(sql, &[])
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(rows.rows.len(), 1, "{sql}: {rows:?}");
    assert_eq!(rows.rows[0].len(), 1, "{sql}: {rows:?}");
    rows.rows[0][0].clone()
}

#[test]
fn the_unix_socket_with_trust_logs_in_and_sends_the_startup_settings() {
    let pg = PgServer::start();
    let mut client = connect(&format!("{} application_name=crond-test", pg.conninfo()));
    let rows = client
        .query(
            "SELECT current_user, current_database(), current_setting('client_encoding'), \
                    current_setting('application_name'), $1::int + 1 AS answer",
            &[Some("41")],
        )
        .expect("query");
    assert_eq!(
        rows.columns,
        [
            "current_user",
            "current_database",
            "current_setting",
            "current_setting",
            "answer"
        ]
    );
    assert_eq!(
        rows.rows,
        [vec![
            Some("postgres".to_string()),
            Some("crond".to_string()),
            Some("UTF8".to_string()),
            Some("crond-test".to_string()),
            Some("42".to_string()),
        ]]
    );
    assert_eq!(rows.affected, 1);
    client.close();
    // The server saw the session end (Terminate).
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left =
            pg.psql("SELECT count(*) FROM pg_stat_activity WHERE application_name = 'crond-test'");
        if left.trim() == "0" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the session is still there: {left}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn tcp_logs_in_with_scram_sha_256_and_the_passfile_password() {
    let pg = PgServer::start();
    let stored = pg.psql("SELECT rolpassword FROM pg_authid WHERE rolname = 'crond_test'");
    assert!(stored.starts_with("SCRAM-SHA-256$"), "{stored}");
    let info = info(&pg.tcp_conninfo());
    assert_eq!(password(&info).as_deref(), Some(PASSWORD));
    let mut client = connect(&pg.tcp_conninfo());
    assert_eq!(
        scalar(&mut client, "SELECT current_user").as_deref(),
        Some("crond_test")
    );
    assert_eq!(
        scalar(
            &mut client,
            "SELECT client_addr FROM pg_stat_activity WHERE pid = pg_backend_pid()"
        )
        .as_deref(),
        Some("127.0.0.1")
    );
}

#[test]
fn md5_over_tcp_is_refused_by_default_and_allowed_by_require_auth_md5() {
    let pg = PgServer::start();
    let stored = pg.psql("SELECT rolpassword FROM pg_authid WHERE rolname = 'crond_md5'");
    assert!(stored.starts_with("md5"), "{stored}");
    let text = format!(
        "postgresql://crond_md5@127.0.0.1:{}/crond?passfile={}",
        pg.port(),
        pg.passfile().display()
    );
    assert_eq!(password(&info(&text)).as_deref(), Some(MD5_PASSWORD));
    let e = try_connect(&text).expect_err("md5 by default");
    assert_eq!(
        e,
        "require_auth=scram-sha-256,none (the default over TCP): the server asked for an md5 \
         password hash; refused without sending it (require_auth=md5, over \
         sslmode=verify-full only, allows it)"
    );
    let mut client = connect(&format!("{text}&require_auth=md5"));
    assert_eq!(
        scalar(&mut client, "SELECT current_user").as_deref(),
        Some("crond_md5")
    );
}

#[test]
fn a_wrong_or_missing_password_is_an_auth_error() {
    let pg = PgServer::start();
    let scram = info(&pg.tcp_conninfo());
    let e = Client::connect(&scram, Some("not-the-password")).expect_err("a wrong password");
    assert!(
        e.starts_with("FATAL 28P01: password authentication failed for user \"crond_test\""),
        "{e}"
    );
    let md5 = info(&format!(
        "host=127.0.0.1 port={} dbname=crond user=crond_md5 require_auth=md5",
        pg.port()
    ));
    let e = Client::connect(&md5, Some("not-the-password")).expect_err("a wrong password");
    assert!(e.contains("password authentication failed"), "{e}");
    let e = Client::connect(&scram, None).expect_err("no password");
    assert!(e.contains("asks for a password and none was found"), "{e}");
}

#[test]
fn a_missing_database_is_a_fatal_server_error() {
    let pg = PgServer::start();
    let info = info(&format!(
        "host={} port={} dbname=nosuch user=postgres",
        pg.socket_dir().display(),
        pg.port()
    ));
    let e = Client::connect(&info, None).expect_err("no such database");
    assert!(e.starts_with("FATAL 3D000: database \"nosuch\""), "{e}");
}

#[test]
fn parameters_carry_text_nulls_and_arrays() {
    let pg = PgServer::start();
    let mut client = connect(&pg.conninfo());
    let rows = client
        .query(
            "SELECT $1::text IS NULL AS was_null, $2::text AS echo, x \
             FROM unnest($3::text[]) AS x ORDER BY x",
            &[None, Some("héllo, 'world'"), Some(r#"{b,a,"c d",NULL}"#)],
        )
        .expect("query");
    assert_eq!(rows.columns, ["was_null", "echo", "x"]);
    let echo = Some("héllo, 'world'".to_string());
    let t = Some("t".to_string());
    assert_eq!(
        rows.rows,
        [
            vec![t.clone(), echo.clone(), Some("a".to_string())],
            vec![t.clone(), echo.clone(), Some("b".to_string())],
            vec![t.clone(), echo.clone(), Some("c d".to_string())],
            vec![t, echo, None],
        ]
    );
    assert_eq!(rows.affected, 4);
    let ids = client
        .query(
            "SELECT sum(x), count(x), min(x) FROM unnest($1::bigint[]) AS x",
            &[Some("{9000000000,1}")],
        )
        .expect("bigint array");
    let text = |v: &str| Some(v.to_string());
    assert_eq!(
        ids.rows,
        [vec![text("9000000001"), text("2"), text("1")]],
        "numeric, bigint"
    );
    let empty = client.query("SELECT 1 WHERE false", &[]).expect("no rows");
    assert!(empty.rows.is_empty());
    let odd = client
        .query("SELECT now()", &[])
        .expect_err("a timestamp is not read as text");
    assert!(odd.text.contains("::text"), "{odd}");
    assert!(!odd.lost, "the session goes on");
    assert_eq!(
        scalar(&mut client, "SELECT now()::text IS NOT NULL").as_deref(),
        Some("t")
    );
}

#[test]
fn a_unique_violation_is_23505_and_the_same_client_goes_on() {
    let pg = PgServer::start();
    let mut client = connect(&pg.conninfo());
    client
        .batch(
            "CREATE TABLE claims (entry text, minute bigint, host text, PRIMARY KEY (entry, minute));\n\
             CREATE INDEX claims_host ON claims (host);",
        )
        .expect("schema");
    let inserted = client
        .query(
            "INSERT INTO claims SELECT e, $2::bigint, $3 FROM unnest($1::text[]) AS e",
            &[Some("{a,b,c}"), Some("100"), Some("h1")],
        )
        .expect("insert");
    assert_eq!(inserted.affected, 3);
    assert!(inserted.columns.is_empty());
    let duplicate = client
        .query(
            "INSERT INTO claims VALUES ($1, $2::bigint, $3)",
            &[Some("a"), Some("100"), Some("h2")],
        )
        .expect_err("a duplicate claim");
    assert_eq!(duplicate.code.as_deref(), Some("23505"));
    assert!(!duplicate.is_connection_lost());
    assert!(
        duplicate.text.starts_with("ERROR 23505: duplicate key"),
        "{duplicate}"
    );
    // The session goes on: the claim can be taken the other way, and counts are right.
    let skipped = client
        .query(
            "INSERT INTO claims VALUES ($1, $2::bigint, $3) ON CONFLICT DO NOTHING",
            &[Some("a"), Some("100"), Some("h2")],
        )
        .expect("insert on conflict");
    assert_eq!(skipped.affected, 0);
    let updated = client
        .query(
            "UPDATE claims SET host = $1 WHERE entry <> $2",
            &[Some("h3"), Some("a")],
        )
        .expect("update");
    assert_eq!(updated.affected, 2);
    let deleted = client
        .query("DELETE FROM claims WHERE host = 'h3' RETURNING entry", &[])
        .expect("delete");
    assert_eq!(deleted.affected, 2);
    assert_eq!(deleted.rows.len(), 2);
    assert_eq!(
        pg.psql("SELECT entry || ':' || host FROM claims").trim(),
        "a:h1"
    );
}

#[test]
fn a_batch_stops_at_its_first_error_and_the_client_goes_on() {
    let pg = PgServer::start();
    let mut client = connect(&pg.conninfo());
    let e = client
        .batch("CREATE TABLE t (x int); INSERT INTO t VALUES (1); SELECT nosuch; INSERT INTO t VALUES (2);")
        .expect_err("an undefined column");
    assert_eq!(e.code.as_deref(), Some("42703"));
    assert!(!e.lost);
    // A simple-query batch is one implicit transaction: all of it is rolled back.
    assert_eq!(
        scalar(
            &mut client,
            "SELECT count(*) FROM pg_tables WHERE tablename = 't'"
        )
        .as_deref(),
        Some("0")
    );
    client.batch("").expect("an empty batch");
    client.query("", &[]).expect("an empty query");
    let nul = client.query("SELECT 1\0", &[]).expect_err("a NUL");
    assert!(!nul.lost);
    assert_eq!(scalar(&mut client, "SELECT 5").as_deref(), Some("5"));
}

#[test]
fn a_statement_past_the_client_timeout_loses_the_connection() {
    let pg = PgServer::start();
    let mut client = connect(&pg.conninfo());
    client.set_timeout(Duration::from_millis(500));
    let e = client
        .query("SELECT pg_sleep(3)", &[])
        .expect_err("a timeout");
    assert!(e.is_connection_lost());
    assert_eq!(e.text, "no answer from the server within 0.5s");
    let again = client.query("SELECT 1", &[]).expect_err("a lost client");
    assert!(again.is_connection_lost());
    assert!(again.text.contains("connect again"), "{again}");
    let mut fresh = connect(&pg.conninfo());
    assert_eq!(scalar(&mut fresh, "SELECT 1").as_deref(), Some("1"));
}

#[test]
fn the_servers_statement_timeout_ends_a_statement_and_the_session_goes_on() {
    let pg = PgServer::start();
    let mut client = connect(&pg.conninfo());
    client.batch("SET statement_timeout = 300").expect("set");
    let e = client
        .query("SELECT pg_sleep(3)", &[])
        .expect_err("cancelled by the server");
    assert_eq!(e.code.as_deref(), Some("57014"), "{e}");
    assert!(!e.lost);
    assert_eq!(scalar(&mut client, "SELECT 1").as_deref(), Some("1"));
}

#[test]
fn a_session_ended_while_idle_is_replaced_before_the_next_call() {
    let pg = PgServer::start();
    let mut client = connect(&format!("{} application_name=victim", pg.conninfo()));
    let first = scalar(&mut client, "SELECT pg_backend_pid()");
    assert_eq!(
        pg.psql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'victim'")
            .trim(),
        "t"
    );
    let second = scalar(&mut client, "SELECT pg_backend_pid()");
    assert_ne!(first, second, "a new session");
    // The new session has the statement timeout too: it comes with the login.
    assert_eq!(
        scalar(&mut client, "SHOW statement_timeout").as_deref(),
        Some("5s")
    );
    // The server's idle_session_timeout (PostgreSQL 14+) ends it again; the batch runs.
    client
        .batch("SET idle_session_timeout = '100ms'")
        .expect("set");
    std::thread::sleep(Duration::from_millis(600));
    client.batch("SELECT 1").expect("a batch on a new session");
    let third = scalar(&mut client, "SELECT pg_backend_pid()");
    assert_ne!(second, third, "ended by idle_session_timeout");
}

#[test]
fn a_session_ended_during_a_call_is_lost_with_the_servers_reason() {
    let pg = PgServer::start();
    let mut client = connect(&format!("{} application_name=victim", pg.conninfo()));
    let killer = std::thread::spawn({
        let conninfo = pg.conninfo();
        move || {
            let mut admin = connect(&conninfo);
            for _ in 0..200 {
                let rows = admin
                    .query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE application_name = 'victim' AND state = 'active'",
                        &[],
                    )
                    .expect("terminate");
                if !rows.rows.is_empty() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            panic!("the statement never ran");
        }
    });
    let e = client
        .query("SELECT pg_sleep(4)", &[])
        .expect_err("a terminated session");
    killer.join().expect("the killer");
    assert!(e.is_connection_lost(), "{e:?}");
    assert!(
        e.text.starts_with("FATAL 57P01: terminating connection"),
        "{e}"
    );
    let again = client.query("SELECT 1", &[]).expect_err("lost");
    assert!(again.text.contains("connect again"), "{again}");
}

#[test]
fn a_stopped_server_is_refused_and_a_restarted_one_accepts() {
    let pg = PgServer::start();
    let mut before = connect(&pg.conninfo());
    pg.stop();
    let e = before
        .query("SELECT 1", &[])
        .expect_err("the server is gone");
    assert!(e.is_connection_lost(), "{e:?}");
    for text in [
        format!("{} connect_timeout=2", pg.conninfo()),
        format!("{} connect_timeout=2", pg.tcp_conninfo()),
    ] {
        let e = try_connect(&text).expect_err("no server");
        assert!(e.starts_with("connect to "), "{text}: {e}");
    }
    pg.start_again();
    let mut after = connect(&pg.conninfo());
    assert_eq!(scalar(&mut after, "SELECT 2").as_deref(), Some("2"));
    let mut tcp = connect(&pg.tcp_conninfo());
    assert_eq!(scalar(&mut tcp, "SELECT 3").as_deref(), Some("3"));
}

#[test]
fn a_server_that_never_answers_the_login_times_out() {
    // Accepted by the kernel, never read: the client waits for the server's first message.
    let silent = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = silent.local_addr().expect("address").port();
    let e = try_connect(&format!(
        "host=127.0.0.1 port={port} user=x connect_timeout=1"
    ))
    .expect_err("no answer");
    assert_eq!(
        e,
        format!("connect to 127.0.0.1 port {port}: no answer within connect_timeout=1s")
    );
}

#[test]
fn a_real_servers_notices_notifications_and_parameter_changes_pass_the_guard() {
    let pg = PgServer::start();
    // Debug messages from the login on: PostgreSQL 15 sends one notice with the login's
    // parameter statuses, and many with every statement.
    pg.psql("ALTER ROLE crond_test SET client_min_messages = debug5");
    let mut client = connect(&format!(
        "host={} port={} dbname=crond user=crond_test",
        pg.socket_dir().display(),
        pg.port()
    ));
    // About 4.7 MB of notices in one statement, more than the login's bound of all of them.
    client
        .batch(
            "DO $$BEGIN FOR i IN 1..20000 LOOP \
             RAISE NOTICE 'notice % %', i, repeat('x', 100); END LOOP; END$$",
        )
        .expect("a notice loop");
    // About 2 MB of notifications, delivered to this session at the commit.
    client.batch("LISTEN crond_test").expect("listen");
    client
        .batch(
            "SELECT pg_notify('crond_test', i || repeat('x', 7000)) \
             FROM generate_series(1, 300) AS i",
        )
        .expect("notifications");
    // A reported parameter changed again and again: one name, many ParameterStatus.
    for i in 0..200 {
        client
            .batch(&format!("SET application_name = 'crond-{i}'"))
            .expect("set");
    }
    assert_eq!(
        scalar(&mut client, "SELECT current_setting('application_name')").as_deref(),
        Some("crond-199")
    );
}
