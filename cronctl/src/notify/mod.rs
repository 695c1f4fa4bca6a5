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
//! With `--sendmail PATH` (or `--mail-command CMD`, cronie's `-m`), `end` also mails a slot that
//! did not run: its entry's `CRON_NOTIFY` is `failure` or `change` and the daemon decided it is
//! told ([`mail_not_run`]). The mail goes as a run's does (MAILTO, MAILFROM, the same header),
//! its subject saying `(did not run: REASON)`, its body why.
//!
//! Each request has [`TIMEOUT`] and [`TRIES`] tries, [`BACKOFF`] apart; a redirect is not
//! followed. One that is not delivered is logged (`NOTIFY`, as `CRON`) where the daemon logs.
//! So a helper lives at most about `2 × (3 × 10 s + 3 s)`, whatever its endpoints do.

pub mod http;

use std::io::Read;
use std::os::unix::ffi::OsStringExt;
use std::time::Duration;

use crond::job::mail::send::MTA_TIMEOUT;
use crond::job::mail::{self as mta, JobMail, MailCommand, MailConfig, MailOutcome, Plan};
use crond::job::output::TextKind;
use crond::log::messages::JobExit;

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
    /// `end`: how to mail a slot that did not run (`None`: it is not mailed).
    pub mail: Option<NotRunMail>,
}

/// How the daemon mails: its MTA, the host its subjects name (`None`: this one's short name),
/// its locale's charset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRunMail {
    pub command: MailCommand,
    pub host: Option<String>,
    pub charset: String,
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
    if let (Some(mail), Some(outcome)) = (&args.mail, &outcome) {
        failed |= !mail_not_run(mail, outcome, &log);
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

/// Mails `outcome`, a slot that did not run, as the daemon mails a run's output, from this
/// process (the job's user, with the job's environment): `false` when the mail failed (logged
/// as a run's mail failure is). A run that ran is not mailed here.
pub fn mail_not_run(mail: &NotRunMail, outcome: &Outcome, log: &Log) -> bool {
    let Slot::NotRun { reason, .. } = &outcome.result else {
        return true;
    };
    let env: Vec<(Vec<u8>, Vec<u8>)> = std::env::vars_os()
        .map(|(name, value)| (name.into_vec(), value.into_vec()))
        .collect();
    let job = JobMail {
        user: outcome.user.as_bytes(),
        command: outcome.command.as_bytes(),
        env: &env,
        exit: JobExit::Exited(0),
        timed_out: None,
        not_run: Some(reason.code()),
    };
    let host = match &mail.host {
        Some(host) => host.as_bytes().to_vec(),
        None => mta::subject_host(&crond::sys::hostname(), false),
    };
    let config = MailConfig {
        host,
        charset: mail.charset.clone(),
        command: mail.command.clone(),
    };
    let body = not_run_body(outcome);
    let kind = if body.is_ascii() {
        TextKind::Ascii
    } else {
        TextKind::Utf8
    };
    let sent = match mta::plan(&job, &config, false, kind) {
        Plan::Send { recipients, header } => {
            let body = body.as_bytes();
            mta::deliver(
                &config.command,
                &recipients,
                &header,
                body,
                &env,
                MTA_TIMEOUT,
            )
        }
        Plan::Unsafe { value } => MailOutcome::UnsafeAddress { value },
        Plan::Empty | Plan::MailtoEmpty | Plan::Off => return true,
    };
    if let Some(line) = sent.log_line(outcome.user.as_bytes()) {
        let level = match sent {
            MailOutcome::NoMta => crond::types::Level::Info,
            _ => crond::types::Level::Error,
        };
        log.line(level, &line);
    }
    matches!(sent, MailOutcome::Sent { .. })
}

/// The body of the mail of a slot that did not run: when, where, why, and where to look.
pub fn not_run_body(outcome: &Outcome) -> String {
    let Slot::NotRun { words, .. } = &outcome.result else {
        return String::new();
    };
    let zone = jiff::tz::TimeZone::system();
    let at = |s: i64| {
        jiff::Timestamp::from_second(s)
            .map(|t| {
                t.to_zoned(zone.clone())
                    .strftime("%Y-%m-%d %H:%M %Z")
                    .to_string()
            })
            .unwrap_or_default()
    };
    let slot = match outcome.slot {
        Some(slot) => format!("its run of {}", at(slot)),
        None => "a run".to_string(),
    };
    let attempt = match &outcome.attempt {
        Some(a) => format!(" (attempt {} of {})", a.number, a.of),
        None => String::new(),
    };
    format!(
        "crond did not start {slot}{attempt} on {host}:\n{words}\n\n\
         Entry {entry} ({place}). Its runs: cronctl history {entry}\n",
        host = outcome.host,
        entry = outcome.entry,
        place = outcome.place,
    )
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
