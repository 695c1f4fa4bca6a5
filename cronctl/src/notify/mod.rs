//! `cronctl notify start|end --rid UUID [--log DEST] [--log-format FORMAT]`: a run's
//! `CRON_PING` and `CRON_WEBHOOK` requests, sent as the job's user. The job child starts it
//! (ids dropped before the exec, as for the MTA) and does not wait for it: the root daemon
//! opens no connection for a user and links no HTTP code, and a dead endpoint delays no job.
//!
//! `start` pings `URL/start?rid=UUID`. `end` reads the run's outcome on its standard input (one
//! history message, `crond::history::Outcome::encode`), then pings `URL?rid=UUID` for a
//! success, `URL/CODE?rid=UUID` for a non-zero exit and `URL/fail?rid=UUID` for a signal, a
//! time limit or a slot that did not run, with the last [`MAX_BODY`] bytes of the output (or
//! the reason it did not run) as the body (healthchecks.io's protocol); and POSTs the outcome
//! as `cronctl history --json` gives it to the webhook.
//!
//! Each request has [`TIMEOUT`] and [`TRIES`] tries, [`BACKOFF`] apart; a redirect is not
//! followed. One that is not delivered is logged (`NOTIFY`, as `CRON`) where the daemon logs.
//! So a helper lives at most about `2 × (3 × 10 s + 3 s)`, whatever its endpoints do.

pub mod http;

use std::io::Read;
use std::time::Duration;

use crond::history::notify::Verdict;
use crond::history::{End, Fields, Outcome, Result as Slot};
use crond::log::{Destination, Format, Log, messages};

use http::{Request, Url};

/// The most of a run's output a failure ping carries.
pub const MAX_BODY: usize = 10 * 1024;
/// One request's bound: connection, TLS, request and status line.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Tries per request.
pub const TRIES: u32 = 3;
/// The wait after the first failed try; doubled after each.
pub const BACKOFF: Duration = Duration::from_secs(1);

/// Which of a run's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Start,
    End,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyArgs {
    pub phase: Phase,
    /// The run's id (a UUID), which healthchecks.io matches a start with its end by.
    pub rid: String,
    pub log: Destination,
    pub format: Format,
}

/// Whether `rid` is a UUID as healthchecks.io takes it (8-4-4-4-12 hex digits).
pub fn is_rid(rid: &str) -> bool {
    let parts: Vec<&str> = rid.split('-').collect();
    parts.iter().map(|p| p.len()).eq([8, 4, 4, 4, 12])
        && parts
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The command: its exit status is 0 when every request was delivered, 1 when one was not
/// (logged), 2 when its input was not an outcome.
pub fn run(args: &NotifyArgs) -> u8 {
    let log = Log::open(args.log, args.format).for_job_child();
    let user = std::env::var("LOGNAME").unwrap_or_default();
    let say = |what: &str, site: &str, why: &str| {
        log.line(
            crond::types::Level::Error,
            &messages::ping_failed_line(user.as_bytes(), what, site, why),
        );
    };
    let ping = std::env::var("CRON_PING").ok().and_then(|u| Url::parse(&u));
    let webhook = std::env::var("CRON_WEBHOOK")
        .ok()
        .and_then(|u| Url::parse(&u));
    let mut failed = false;
    let outcome = match args.phase {
        Phase::Start => None,
        Phase::End => match read_outcome() {
            Some(outcome) => Some(outcome),
            None => return 2,
        },
    };
    if let Some(url) = &ping {
        let (url, body) = ping_of(url, &args.rid, outcome.as_ref());
        let request = Request {
            method: if body.is_empty() { "GET" } else { "POST" },
            url: &url,
            content_type: "text/plain; charset=utf-8",
            body: &body,
        };
        if let Err(why) = deliver(&request) {
            say("CRON_PING", &url.site(), &why);
            failed = true;
        }
    }
    if let (Some(url), Some(outcome)) = (&webhook, &outcome) {
        let zone = crond::schedule::Zone::utc();
        let body = crate::history::render::json_outcome(outcome, &zone);
        let request = Request {
            method: "POST",
            url,
            content_type: "application/json",
            body: body.as_bytes(),
        };
        if let Err(why) = deliver(&request) {
            say("CRON_WEBHOOK", &url.site(), &why);
            failed = true;
        }
    }
    u8::from(failed)
}

/// The outcome on standard input: one history message.
fn read_outcome() -> Option<Outcome> {
    let mut message = Vec::new();
    let limit = crond::history::MAX_MESSAGE as u64;
    std::io::stdin()
        .take(limit)
        .read_to_end(&mut message)
        .ok()?;
    let fields = Fields::parse(&message).ok()?;
    Outcome::decode(&fields).ok()
}

/// The ping for a start (`outcome` `None`) or an end: its URL and its body.
pub fn ping_of(url: &Url, rid: &str, outcome: Option<&Outcome>) -> (Url, Vec<u8>) {
    let Some(outcome) = outcome else {
        return (url.with_segment("start").with_query("rid", rid), Vec::new());
    };
    let (url, body) = match (&outcome.result, Verdict::of(outcome)) {
        (_, Verdict::Succeeded) => (url.clone(), Vec::new()),
        (Slot::Ran(ran), _) => {
            let mut output = ran.head.clone();
            output.extend_from_slice(&ran.tail);
            let tail = output[output.len().saturating_sub(MAX_BODY)..].to_vec();
            match ran.end {
                End::Exited(code) if code != 0 && !ran.timed_out => {
                    (url.with_segment(&code.to_string()), tail)
                }
                _ => (url.with_segment("fail"), tail),
            }
        }
        (Slot::NotRun { words, .. }, _) => (url.with_segment("fail"), words.as_bytes().to_vec()),
    };
    (url.with_query("rid", rid), body)
}

/// Sends `request` up to [`TRIES`] times: `Ok` on a 2xx answer; a redirect or another 4xx is
/// not tried again; a 5xx, a 429 or no answer is, after [`BACKOFF`] (doubled each time).
pub fn deliver(request: &Request<'_>) -> Result<(), String> {
    let mut wait = BACKOFF;
    let mut last = String::new();
    for n in 1..=TRIES {
        match http::send(request, TIMEOUT) {
            Ok(status) if (200..300).contains(&status) => return Ok(()),
            Ok(status) if (300..400).contains(&status) => {
                return Err(format!(
                    "answered {status}, a redirect, which is not followed"
                ));
            }
            Ok(status) if status != 429 && status < 500 => {
                return Err(format!("answered {status}"));
            }
            Ok(status) => last = format!("answered {status}"),
            Err(e) => last = e.to_string(),
        }
        if n < TRIES {
            std::thread::sleep(wait);
            wait *= 2;
        }
    }
    Err(format!("{TRIES} tries, the last: {last}"))
}
