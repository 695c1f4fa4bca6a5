//! The real `cronctl notify` against real HTTP and HTTPS servers on loopback (std::net, and
//! OpenSSL with a CA made here): the paths and bodies of a success, a failure and a slot that
//! did not run, the webhook's JSON, a refused connection (three tries, then a logged failure),
//! an endpoint that does not answer (each try ends at 10 s), a redirect (not followed), and a
//! certificate checked against the CA given in SSL_CERT_FILE; and the mail of a slot that did
//! not run, piped to a shell command as cronie's `-m` MTA.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crond::history::{End, Mail, Outcome, Ran, Reason, Result as Slot, Trigger};

const RID: &str = "0f8e2b7c-1d2a-4e5f-8a9b-0c1d2e3f4a5b";

/// One request as the server read it.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    path: String,
    body: Vec<u8>,
}

/// How the server answers the n-th connection (from 0).
type Answer = Arc<dyn Fn(usize) -> (u16, Duration) + Send + Sync>;

fn read_request(stream: &mut impl Read) -> Option<Seen> {
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut words = line.split_whitespace();
    let (method, path) = (words.next()?.to_string(), words.next()?.to_string());
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        if header.trim().is_empty() {
            break;
        }
        if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen { method, path, body })
}

fn respond(stream: &mut impl Write, status: u16) {
    let text = format!(
        "HTTP/1.1 {status} X\r\nLocation: http://192.0.2.1/\r\nContent-Length: 2\r\n\r\nOK"
    );
    let _ = stream.write_all(text.as_bytes());
}

/// A plain HTTP server on loopback: its port and what it has seen.
fn serve(answer: Answer) -> (u16, Arc<Mutex<Vec<Seen>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { continue };
            let (status, delay) = answer(n);
            let kept = kept.clone();
            std::thread::spawn(move || {
                if let Some(request) = read_request(&mut stream) {
                    kept.lock().unwrap().push(request);
                }
                std::thread::sleep(delay);
                respond(&mut stream, status);
            });
        }
    });
    (port, seen)
}

fn ok() -> Answer {
    Arc::new(|_| (200, Duration::ZERO))
}

fn ran(end: End, output: &[u8]) -> Outcome {
    Outcome {
        entry: "0123456789ab".into(),
        place: "crontabs/alice:1".into(),
        user: "alice".into(),
        owner_uid: Some(1000),
        command: "backup".into(),
        trigger: Trigger::Schedule,
        slot: Some(1_790_000_000),
        host: "web1".into(),
        at_ms: 1_790_000_000_000,
        cluster: None,
        attempt: None,
        result: Slot::Ran(Ran {
            ended_ms: 1_790_000_001_000,
            end,
            timed_out: false,
            user_us: 1,
            system_us: 2,
            max_rss_kib: 3,
            output_bytes: output.len() as u64,
            head: output.to_vec(),
            tail: Vec::new(),
            mail: Mail::None,
        }),
    }
}

fn notify(phase: &str, env: &[(&str, String)], outcome: Option<&Outcome>) -> Output {
    notify_with(phase, &[], env, outcome)
}

/// `cronctl notify PHASE` with `options` too, and the job's environment `env` (TZ=UTC).
fn notify_with(
    phase: &str,
    options: &[&str],
    env: &[(&str, String)],
    outcome: Option<&Outcome>,
) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_cronctl"))
        .args(["notify", phase, "--rid", RID, "--log", "stderr"])
        .args(options)
        .env_clear()
        .env("LOGNAME", "alice")
        .env("TZ", "UTC")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let message = outcome.map(Outcome::encode).unwrap_or_default();
    child.stdin.take().unwrap().write_all(&message).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_start_a_success_a_failure_and_a_slot_not_run_ping_their_paths_with_their_bodies() {
    let (port, seen) = serve(ok());
    let ping = ("CRON_PING", format!("http://127.0.0.1:{port}/ping/abc"));
    assert!(
        notify("start", std::slice::from_ref(&ping), None)
            .status
            .success()
    );
    assert!(
        notify(
            "end",
            std::slice::from_ref(&ping),
            Some(&ran(End::Exited(0), b"fine\n"))
        )
        .status
        .success()
    );
    let long: Vec<u8> = (0..20_000).map(|i| b'a' + (i % 26) as u8).collect();
    let failed = ran(End::Exited(3), &long);
    assert!(
        notify("end", std::slice::from_ref(&ping), Some(&failed))
            .status
            .success()
    );
    assert!(
        notify(
            "end",
            std::slice::from_ref(&ping),
            Some(&ran(End::Signaled(9), b"x"))
        )
        .status
        .success()
    );
    let mut skipped = ran(End::Exited(0), b"");
    skipped.result = Slot::NotRun {
        reason: Reason::Overlap,
        words: "its run of 10:00 is still running (CRON_OVERLAP)".into(),
    };
    assert!(notify("end", &[ping], Some(&skipped)).status.success());
    let seen = seen.lock().unwrap().clone();
    let got: Vec<(&str, &str)> = seen
        .iter()
        .map(|s| (s.method.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        got,
        [
            ("GET", format!("/ping/abc/start?rid={RID}").as_str()),
            ("GET", format!("/ping/abc?rid={RID}").as_str()),
            ("POST", format!("/ping/abc/3?rid={RID}").as_str()),
            ("POST", format!("/ping/abc/fail?rid={RID}").as_str()),
            ("POST", format!("/ping/abc/fail?rid={RID}").as_str()),
        ]
    );
    assert!(seen[0].body.is_empty() && seen[1].body.is_empty());
    assert_eq!(
        seen[2].body,
        long[long.len() - 10 * 1024..],
        "the last 10 KiB"
    );
    assert_eq!(
        seen[4].body,
        b"its run of 10:00 is still running (CRON_OVERLAP)"
    );
}

/// `notify end` for `outcome`, as the daemon starts it for a slot to mail, the MTA cronie's
/// `-m` shell command `mta`.
fn notify_mail(mta: &str, env: &[(&str, String)], outcome: &Outcome) -> Output {
    let options = [
        "--mail-command",
        mta,
        "--mail-host",
        "web1",
        "--charset",
        "UTF-8",
    ];
    notify_with("end", &options, env, Some(outcome))
}

#[test]
fn a_slot_not_run_is_mailed_with_why_and_a_run_is_not_and_a_failed_mta_is_logged() {
    let dir = tempfile::tempdir().unwrap();
    let message = dir.path().join("message");
    let mta = format!("cat > {}", message.display());
    let mut skipped = ran(End::Exited(0), b"");
    skipped.result = Slot::NotRun {
        reason: Reason::Overlap,
        words: "its run of 10:00 is still running (CRON_OVERLAP)".into(),
    };
    let env = [("MAILTO", "ops@example.org".to_string())];
    let out = notify_mail(&mta, &env, &skipped);
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&message).unwrap();
    let (header, body) = text.split_once("\n\n").unwrap();
    assert!(
        header.starts_with("From: root (Cron Daemon)\nTo: ops@example.org\n"),
        "{header}"
    );
    assert!(
        header.contains("\nSubject: Cron <alice@web1> backup (did not run: overlap)\n"),
        "{header}"
    );
    assert!(
        header.contains("\nX-Cron-Env: <MAILTO=ops@example.org>"),
        "{header}"
    );
    assert_eq!(
        body,
        "crond did not start its run of 2026-09-21 14:13 UTC on web1:\n\
         its run of 10:00 is still running (CRON_OVERLAP)\n\n\
         Entry 0123456789ab (crontabs/alice:1). Its runs: cronctl history 0123456789ab\n"
    );
    // A run that ran is mailed by its job child, not here.
    std::fs::remove_file(&message).unwrap();
    let out = notify_mail(&mta, &env, &ran(End::Exited(1), b"boom\n"));
    assert!(out.status.success() && !message.exists(), "{out:?}");
    // An empty MAILTO asks for none; an MTA that fails is logged and the exit status says so.
    let none = [("MAILTO", String::new())];
    let out = notify_mail(&mta, &none, &skipped);
    assert!(out.status.success() && !message.exists(), "{out:?}");
    let out = notify_mail("cat >/dev/null; exit 3", &env, &skipped);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("(alice) MAIL ("), "{log}");
}

#[test]
fn notify_takes_one_mta_at_most() {
    let out = Command::new(env!("CARGO_BIN_EXE_cronctl"))
        .args([
            "notify",
            "end",
            "--rid",
            RID,
            "--sendmail",
            "/usr/sbin/sendmail",
        ])
        .args(["--mail-command", "cat"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "cronctl: notify: --sendmail and --mail-command name two MTAs: give one\n\
         Try 'cronctl -h' for more information.\n"
    );
}

#[test]
fn the_webhook_gets_the_outcome_as_cronctl_history_json_gives_it() {
    let (port, seen) = serve(ok());
    let hook = ("CRON_WEBHOOK", format!("http://127.0.0.1:{port}/hook"));
    let out = notify("end", &[hook], Some(&ran(End::Exited(2), b"boom\n")));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        (seen.len(), seen[0].method.as_str(), seen[0].path.as_str()),
        (1, "POST", "/hook")
    );
    let json: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
    assert_eq!(json["entry"], "0123456789ab");
    assert_eq!(json["exit"], 2);
    assert_eq!(json["failed"], true);
    assert_eq!(json["run"], serde_json::Value::Null);
    assert_eq!(json["place"], "crontabs/alice:1");
}

#[test]
fn a_refused_connection_is_tried_three_times_then_logged_as_not_delivered() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let ping = ("CRON_PING", format!("http://127.0.0.1:{port}/secret-key"));
    let out = notify("start", &[ping], None);
    assert_eq!(out.status.code(), Some(1));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("(alice) NOTIFY (CRON_PING to http://127.0.0.1:"),
        "{log}"
    );
    assert!(
        log.contains("not delivered: 3 tries, the last: Connection refused"),
        "{log}"
    );
    assert!(!log.contains("secret-key"), "the path is not logged: {log}");
}

#[test]
fn an_endpoint_that_does_not_answer_is_given_up_at_ten_seconds_and_tried_again() {
    // The first connection is answered after 15 s; the second at once.
    let (port, seen) = serve(Arc::new(|n| match n {
        0 => (200, Duration::from_secs(15)),
        _ => (200, Duration::ZERO),
    }));
    let ping = ("CRON_PING", format!("http://127.0.0.1:{port}/slow"));
    let started = std::time::Instant::now();
    let out = notify("start", &[ping], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(seen.lock().unwrap().len(), 2, "delivered on the second try");
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "the first try was given up"
    );
}

#[test]
fn a_redirect_is_not_followed_and_is_logged() {
    let (port, seen) = serve(Arc::new(|_| (302, Duration::ZERO)));
    let ping = ("CRON_PING", format!("http://127.0.0.1:{port}/moved"));
    let out = notify("start", &[ping], None);
    assert_eq!(out.status.code(), Some(1));
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(
        log.contains("answered 302, a redirect, which is not followed"),
        "{log}"
    );
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "one request, none to the Location"
    );
}

mod tls;

#[test]
fn https_checks_the_certificate_against_the_ca_in_ssl_cert_file() {
    let dir = tempfile::tempdir().unwrap();
    let (port, seen) = tls::serve(dir.path());
    let ping = ("CRON_PING", format!("https://127.0.0.1:{port}/tls"));
    let ca = (
        "SSL_CERT_FILE",
        dir.path().join("ca.pem").display().to_string(),
    );
    let out = notify("start", &[ping.clone(), ca], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(seen.lock().unwrap()[0], format!("/tls/start?rid={RID}"));
    let empty = (
        "SSL_CERT_FILE",
        dir.path().join("none.pem").display().to_string(),
    );
    let out = notify("start", &[ping, empty], None);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a CA it does not know is refused"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("TLS"));
}
