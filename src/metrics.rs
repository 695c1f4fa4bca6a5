//! The daemon's counters and their Prometheus text exposition (`--metrics`). Pure: the daemon
//! tells it what happened, with the time and the entry's id; rendering takes a function that
//! tells where an entry is written.
//!
//! ```text
//! crond_runs_total 12                      jobs started
//! crond_failures_total 1                   jobs that ran and failed (or could not run)
//! crond_timeouts_total 0                   jobs that reached CRON_TIMEOUT
//! crond_skipped_total 3                    runs CRON_OVERLAP did not start
//! crond_missed_total 1                     runs CRON_MISSED=once made up
//! crond_not_run_total{reason="overlap"} 3   slots that did not run, by reason
//!                                           (`history::Reason`'s codes, each always there)
//! crond_jobs_running 2
//! crond_run_duration_seconds_bucket{le="1"} 10 ... (a histogram of job durations)
//! crond_last_success_timestamp_seconds{entry="0123456789ab",place="crontabs/alice:3"} 1795600800
//! crond_last_status{entry="0123456789ab",place="crontabs/alice:3"} 0
//!                                           the last slot's outcome: the exit status
//!                                           (128 + a signal's number), -1: it did not run
//! ```
//!
//! `entry` is the entry's id as `cronctl list`, the run history and the JSON log give it; `place`
//! is where it is written (FILE:LINE), for people. The id comes with each outcome the daemon
//! counts and is kept with the entry's series: a scrape makes no id.
//!
//! Bounded: one last-success series per entry that succeeded, at most [`MAX_ENTRY_SERIES`]
//! (the most recent); a scrape of a daemon with 100,000 entries stays small. The per-entry
//! series can be left out (`render`'s `entries`): the daemon does so for TCP clients, whom it
//! can't tell from any local user.

use std::collections::HashMap;
use std::fmt::Write;

use crate::history::Reason;
use crate::job::report::Said;
use crate::timeline::EntryId;

/// Upper bounds of the duration histogram's buckets, in seconds.
pub const BUCKETS: [f64; 9] = [0.1, 1.0, 5.0, 10.0, 60.0, 300.0, 900.0, 3600.0, 14400.0];

/// The most per-entry series a scrape shows.
pub const MAX_ENTRY_SERIES: usize = 10_000;

/// How a job child ended, as its exit code tells the daemon (`job::child_exit_code`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Succeeded,
    Failed,
    TimedOut,
}

/// An entry's run that ended, as the daemon saw its job child end (the scheduler keeps the
/// last few per entry; `cronctl list` and `cronctl show` show them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastRun {
    /// When it started, epoch ms.
    pub started_ms: i64,
    pub duration_ms: i64,
    pub outcome: Outcome,
    /// What its job child said of its end: the job's exit status or signal, or why nothing
    /// of it ran (`None`: the child said nothing the daemon read).
    pub said: Option<Said>,
}

/// An entry as its series name it: the daemon's key for it, and its id as `cronctl list` shows
/// it (12 hex digits).
pub type Named<'a> = (EntryId, &'a str);

#[derive(Debug, Default)]
pub struct Metrics {
    runs: u64,
    failures: u64,
    timeouts: u64,
    skipped: u64,
    missed: u64,
    /// Counts per bucket (not cumulative), then the count above the last bound.
    buckets: [u64; BUCKETS.len() + 1],
    duration_sum_s: f64,
    last_success: HashMap<EntryId, i64>,
    /// Slots that did not run, by [`Reason::ALL`]'s order.
    not_run: [u64; Reason::ALL.len()],
    /// Each entry's last outcome: its exit status (128 plus a signal), -1 not run.
    last_status: HashMap<EntryId, i32>,
    /// The id of each entry that has a series, as its last outcome gave it: the `entry` label.
    ids: HashMap<EntryId, Box<str>>,
}

impl Metrics {
    pub fn started(&mut self) {
        self.runs += 1;
    }

    /// A job child that could not make the job's processes (`job::NOT_STARTED`): its run goes
    /// back in the queue and is counted when it starts again.
    pub fn not_started(&mut self) {
        self.runs = self.runs.saturating_sub(1);
    }

    pub fn skipped(&mut self) {
        self.skipped += 1;
    }

    pub fn missed(&mut self) {
        self.missed += 1;
    }

    /// A job child ended after `duration_ms`, at `now_s` (epoch seconds).
    pub fn ended(
        &mut self,
        entry: Option<Named<'_>>,
        outcome: Outcome,
        duration_ms: i64,
        now_s: i64,
    ) {
        let seconds = duration_ms.max(0) as f64 / 1000.0;
        let bucket = BUCKETS
            .iter()
            .position(|&bound| seconds <= bound)
            .unwrap_or(BUCKETS.len());
        self.buckets[bucket] += 1;
        self.duration_sum_s += seconds;
        match outcome {
            Outcome::Succeeded => {
                if let Some((key, id)) = entry {
                    self.last_success.insert(key, now_s);
                    self.name(key, id);
                    self.keep_bounded();
                }
            }
            Outcome::Failed => self.failures += 1,
            Outcome::TimedOut => {
                self.failures += 1;
                self.timeouts += 1;
            }
        }
    }

    /// A slot that did not run, and why (of `entry`, when it has one).
    pub fn not_run(&mut self, entry: Option<Named<'_>>, reason: Reason) {
        if let Some(i) = Reason::ALL.iter().position(|&r| r == reason) {
            self.not_run[i] += 1;
        }
        self.set_status(entry, -1);
    }

    /// The exit status of `entry`'s last run (128 plus a signal's number).
    pub fn set_status(&mut self, entry: Option<Named<'_>>, status: i32) {
        if let Some((key, id)) = entry
            && (self.last_status.len() < MAX_ENTRY_SERIES || self.last_status.contains_key(&key))
        {
            self.last_status.insert(key, status);
            self.name(key, id);
        }
    }

    /// Whether `entry` has a series (and so an id kept for it).
    pub fn has_series(&self, entry: EntryId) -> bool {
        self.ids.contains_key(&entry)
    }

    /// `entry`'s id changed (its file was loaded again): its series take the new one. Nothing
    /// for an entry without a series.
    pub fn rename(&mut self, entry: EntryId, id: &str) {
        if let Some(kept) = self.ids.get_mut(&entry)
            && **kept != *id
        {
            *kept = id.into();
        }
    }

    /// Keeps `id` as the `entry` label of `key`'s series.
    fn name(&mut self, key: EntryId, id: &str) {
        match self.ids.get_mut(&key) {
            Some(kept) if **kept == *id => {}
            Some(kept) => *kept = id.into(),
            None => {
                self.ids.insert(key, id.into());
            }
        }
    }

    /// An entry is gone (its file changed or went): its series goes too.
    pub fn forget(&mut self, entry: EntryId) {
        self.last_success.remove(&entry);
        self.last_status.remove(&entry);
        self.ids.remove(&entry);
    }

    fn keep_bounded(&mut self) {
        if self.last_success.len() <= MAX_ENTRY_SERIES {
            return;
        }
        // Drop the oldest tenth at once, so the cost is paid rarely.
        let mut times: Vec<i64> = self.last_success.values().copied().collect();
        let cut = times.len() - MAX_ENTRY_SERIES * 9 / 10;
        let (_, &mut threshold, _) = times.select_nth_unstable(cut);
        self.last_success.retain(|_, &mut t| t >= threshold);
        while self.last_success.len() > MAX_ENTRY_SERIES * 9 / 10 {
            // Ties at the threshold: drop any of them.
            let Some(&id) = self.last_success.keys().next() else {
                break;
            };
            self.last_success.remove(&id);
        }
        let (success, status) = (&self.last_success, &self.last_status);
        self.ids
            .retain(|key, _| success.contains_key(key) || status.contains_key(key));
    }

    /// The exposition, with `running` jobs now; `place` tells where an entry is written
    /// (`crontabs/alice:3`; `None`: gone, not shown). With `entries` false the per-entry series
    /// (whose labels name every crontab and line) are left out, family and all: what a client
    /// the daemon can't tell apart from any local user gets (a TCP port, `--metrics`).
    pub fn render(
        &self,
        running: usize,
        entries: bool,
        place: impl Fn(EntryId) -> Option<String>,
    ) -> String {
        let mut out = String::with_capacity(2048);
        let counters = [
            ("crond_runs_total", "Jobs started.", self.runs),
            (
                "crond_failures_total",
                "Jobs that failed: a non-zero exit, a signal, a time limit, or not run at all.",
                self.failures,
            ),
            (
                "crond_timeouts_total",
                "Jobs ended by CRON_TIMEOUT.",
                self.timeouts,
            ),
            (
                "crond_skipped_total",
                "Runs not started by CRON_OVERLAP (skip, or queue with one waiting).",
                self.skipped,
            ),
            (
                "crond_missed_total",
                "Runs made up by CRON_MISSED=once.",
                self.missed,
            ),
        ];
        for (name, help, value) in counters {
            let _ = write!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n"
            );
        }
        out.push_str(
            "# HELP crond_not_run_total Slots that did not run, by reason.\n\
             # TYPE crond_not_run_total counter\n",
        );
        for (reason, n) in Reason::ALL.iter().zip(self.not_run) {
            let _ = writeln!(
                out,
                "crond_not_run_total{{reason=\"{}\"}} {n}",
                reason.code()
            );
        }
        let _ = write!(
            out,
            "# HELP crond_jobs_running Job children running now.\n\
             # TYPE crond_jobs_running gauge\ncrond_jobs_running {running}\n"
        );
        self.render_durations(&mut out);
        if entries {
            self.render_entries(&mut out, place);
        }
        out
    }

    /// The histogram of how long jobs ran.
    fn render_durations(&self, out: &mut String) {
        out.push_str(
            "# HELP crond_run_duration_seconds How long jobs ran.\n\
             # TYPE crond_run_duration_seconds histogram\n",
        );
        let mut cumulative = 0;
        for (bound, count) in BUCKETS.iter().zip(self.buckets) {
            cumulative += count;
            let _ = writeln!(
                out,
                "crond_run_duration_seconds_bucket{{le=\"{bound}\"}} {cumulative}"
            );
        }
        cumulative += self.buckets[BUCKETS.len()];
        let _ = write!(
            out,
            "crond_run_duration_seconds_bucket{{le=\"+Inf\"}} {cumulative}\n\
             crond_run_duration_seconds_sum {}\n\
             crond_run_duration_seconds_count {cumulative}\n",
            self.duration_sum_s
        );
    }

    /// The time each entry's job last succeeded and each entry's last status, by the entry's
    /// place, sorted: an entry gone since (no place) or without a kept id is left out.
    fn render_entries(&self, out: &mut String, place: impl Fn(EntryId) -> Option<String>) {
        out.push_str(
            "# HELP crond_last_success_timestamp_seconds When each entry's job last succeeded.\n\
             # TYPE crond_last_success_timestamp_seconds gauge\n",
        );
        for (labels, at) in self.labeled(&self.last_success, &place) {
            let _ = writeln!(out, "crond_last_success_timestamp_seconds{{{labels}}} {at}");
        }
        out.push_str(
            "# HELP crond_last_status Each entry's last slot: its exit status (128 plus a \
             signal's number), or -1 when it did not run.\n\
             # TYPE crond_last_status gauge\n",
        );
        for (labels, status) in self.labeled(&self.last_status, &place) {
            let _ = writeln!(out, "crond_last_status{{{labels}}} {status}");
        }
    }

    /// The values of `series` with their labels (`entry="ID",place="FILE:LINE"`), sorted by
    /// place.
    fn labeled<T: Copy>(
        &self,
        series: &HashMap<EntryId, T>,
        place: impl Fn(EntryId) -> Option<String>,
    ) -> Vec<(String, T)> {
        let mut shown: Vec<(String, &str, T)> = series
            .iter()
            .filter_map(|(key, &value)| Some((place(*key)?, &**self.ids.get(key)?, value)))
            .collect();
        shown.sort_unstable_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        shown
            .into_iter()
            .map(|(place, id, value)| {
                let labels = format!(
                    "entry=\"{}\",place=\"{}\"",
                    label_value(id),
                    label_value(&place)
                );
                (labels, value)
            })
            .collect()
    }
}

/// The longest request head read; a longer one is answered 431 and closed.
pub const MAX_REQUEST: usize = 8192;

/// The answer to an HTTP request whose bytes so far are `request`: `None` while its head is
/// incomplete. `GET /metrics` (or `/`) gets the exposition from `render`; anything else an
/// error status. Every answer closes the connection.
pub fn answer(request: &[u8], render: impl FnOnce() -> String) -> Option<Vec<u8>> {
    let Some(end) = request.windows(4).position(|w| w == b"\r\n\r\n") else {
        return (request.len() >= MAX_REQUEST)
            .then(|| response("431 Request Header Fields Too Large", "text/plain", ""));
    };
    let head = String::from_utf8_lossy(&request[..end]);
    let mut first = head.lines().next().unwrap_or("").split(' ');
    let (method, path) = (first.next().unwrap_or(""), first.next().unwrap_or(""));
    let path = path.split('?').next().unwrap_or("");
    Some(match (method, path) {
        ("GET" | "HEAD", "/metrics" | "/") => {
            let body = render();
            let mut r = response("200 OK", "text/plain; version=0.0.4; charset=utf-8", &body);
            if method == "HEAD" {
                r.truncate(r.len() - body.len());
            }
            r
        }
        ("GET" | "HEAD", _) => response("404 Not Found", "text/plain", "only /metrics\n"),
        _ => response("405 Method Not Allowed", "text/plain", "GET only\n"),
    })
}

fn response(status: &str, content_type: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A label value as the text format wants it: backslash, quote and newline escaped.
fn label_value(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_histogram_and_last_success_render_in_the_text_format() {
        let mut m = Metrics::default();
        let (a, b) = ((EntryId(1), "0123456789ab"), (EntryId(2), "ba9876543210"));
        for _ in 0..3 {
            m.started();
        }
        m.ended(Some(a), Outcome::Succeeded, 50, 1_000);
        m.ended(Some(b), Outcome::Failed, 2_500, 1_001);
        m.ended(Some(a), Outcome::TimedOut, 90_000, 1_090);
        m.skipped();
        m.missed();
        let text = m.render(1, true, |id| {
            (id == a.0).then(|| "crontabs/a\"b:3".to_string())
        });
        for line in [
            "crond_runs_total 3\n",
            "crond_failures_total 2\n",
            "crond_timeouts_total 1\n",
            "crond_skipped_total 1\n",
            "crond_missed_total 1\n",
            "crond_jobs_running 1\n",
            "crond_run_duration_seconds_bucket{le=\"0.1\"} 1\n",
            "crond_run_duration_seconds_bucket{le=\"1\"} 1\n",
            "crond_run_duration_seconds_bucket{le=\"5\"} 2\n",
            "crond_run_duration_seconds_bucket{le=\"60\"} 2\n",
            "crond_run_duration_seconds_bucket{le=\"300\"} 3\n",
            "crond_run_duration_seconds_bucket{le=\"+Inf\"} 3\n",
            "crond_run_duration_seconds_sum 92.55\n",
            "crond_run_duration_seconds_count 3\n",
            "crond_last_success_timestamp_seconds{entry=\"0123456789ab\",\
             place=\"crontabs/a\\\"b:3\"} 1000\n",
        ] {
            assert!(text.contains(line), "{line:?} missing from:\n{text}");
        }
        assert_eq!(
            text.matches("crond_last_success_timestamp_seconds{")
                .count(),
            1,
            "b never succeeded"
        );
        m.forget(a.0);
        assert!(!m.render(0, true, |_| Some("x".into())).contains("entry="));
    }

    #[test]
    fn without_entries_no_series_names_an_entry_and_the_totals_stay() {
        let mut m = Metrics::default();
        m.started();
        m.ended(
            Some((EntryId(1), "0123456789ab")),
            Outcome::Succeeded,
            50,
            1_000,
        );
        let name = |_| Some("crontabs/alice:3".to_string());
        let all = m.render(0, true, name);
        assert!(
            all.contains("{entry=\"0123456789ab\",place=\"crontabs/alice:3\"} 1000\n"),
            "{all}"
        );
        let totals = m.render(0, false, name);
        assert!(!totals.contains("entry="), "{totals}");
        assert!(!totals.contains("alice"), "{totals}");
        assert!(!totals.contains("last_success"), "{totals}");
        assert!(totals.contains("crond_runs_total 1\n"), "{totals}");
        assert!(
            totals.contains("crond_run_duration_seconds_count 1\n"),
            "{totals}"
        );
        assert_eq!(all.strip_prefix(totals.as_str()).map(|_| ()), Some(()));
    }

    #[test]
    fn slots_not_run_are_counted_by_reason_and_each_entrys_last_status_is_shown() {
        let mut m = Metrics::default();
        let (a, b) = ((EntryId(1), "00000000000a"), (EntryId(2), "00000000000b"));
        m.not_run(Some(a), Reason::Overlap);
        m.not_run(None, Reason::UserUnknown);
        m.not_run(Some(b), Reason::Overlap);
        m.set_status(Some(b), 137);
        let name = |id: EntryId| Some(format!("crontabs/alice:{}", id.0));
        let text = m.render(0, true, name);
        assert!(
            text.contains("crond_not_run_total{reason=\"overlap\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("crond_not_run_total{reason=\"user-unknown\"} 1\n"));
        // Every reason has its series, at 0 until it happens.
        assert_eq!(
            text.matches("crond_not_run_total{").count(),
            Reason::ALL.len()
        );
        assert!(text.contains("crond_not_run_total{reason=\"clock-step\"} 0\n"));
        let status = |id, line| {
            format!("crond_last_status{{entry=\"{id}\",place=\"crontabs/alice:{line}\"}}")
        };
        assert!(text.contains(&format!("{} -1\n", status(a.1, 1))), "{text}");
        assert!(
            text.contains(&format!("{} 137\n", status(b.1, 2))),
            "{text}"
        );
        m.forget(a.0);
        let text = m.render(0, true, name);
        assert!(!text.contains("crontabs/alice:1\""), "{text}");
        assert!(!m.render(0, false, name).contains("crond_last_status{"));
    }

    #[test]
    fn a_get_of_metrics_gets_the_text_and_anything_else_an_error_status() {
        let body = || "crond_runs_total 1\n".to_string();
        assert_eq!(answer(b"GET /metrics HTTP/1.1\r\nHost: x\r\n", body), None);
        let ok = answer(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", body).unwrap();
        let ok = String::from_utf8(ok).unwrap();
        assert!(ok.starts_with("HTTP/1.1 200 OK\r\n"), "{ok}");
        assert!(ok.contains("Content-Length: 19\r\n"));
        assert!(ok.ends_with("\r\n\r\ncrond_runs_total 1\n"));
        let head = answer(b"HEAD / HTTP/1.0\r\n\r\n", body).unwrap();
        assert!(
            String::from_utf8(head)
                .unwrap()
                .ends_with("Connection: close\r\n\r\n")
        );
        let missing = answer(b"GET /x HTTP/1.1\r\n\r\n", body).unwrap();
        assert!(missing.starts_with(b"HTTP/1.1 404 "));
        let post = answer(b"POST /metrics HTTP/1.1\r\n\r\n", body).unwrap();
        assert!(post.starts_with(b"HTTP/1.1 405 "));
        let endless = vec![b'a'; MAX_REQUEST];
        assert!(
            answer(&endless, body)
                .unwrap()
                .starts_with(b"HTTP/1.1 431 ")
        );
    }

    #[test]
    fn the_last_success_series_stay_bounded_and_keep_the_most_recent() {
        let mut m = Metrics::default();
        for i in 0..(MAX_ENTRY_SERIES as u64 + 1) {
            let id = format!("{i:012x}");
            m.ended(Some((EntryId(i), &id)), Outcome::Succeeded, 1, i as i64);
        }
        assert!(m.last_success.len() <= MAX_ENTRY_SERIES);
        assert_eq!(
            m.ids.len(),
            m.last_success.len(),
            "no id kept without its series"
        );
        assert!(
            m.last_success
                .contains_key(&EntryId(MAX_ENTRY_SERIES as u64))
        );
        assert!(!m.last_success.contains_key(&EntryId(0)));
    }

    #[test]
    fn an_entrys_series_carry_the_id_of_its_last_outcome_and_take_a_new_one_when_renamed() {
        let mut m = Metrics::default();
        let entry = EntryId(7);
        m.ended(Some((entry, "0123456789ab")), Outcome::Succeeded, 1, 1_000);
        m.set_status(Some((entry, "0123456789ab")), 0);
        assert!(m.has_series(entry) && !m.has_series(EntryId(8)));
        m.rename(EntryId(8), "ffffffffffff");
        assert!(!m.has_series(EntryId(8)), "no series, no id kept");
        m.rename(entry, "0123456789ac");
        let text = m.render(0, true, |_| Some("crontabs/alice:2".into()));
        let labels = "{entry=\"0123456789ac\",place=\"crontabs/alice:2\"}";
        assert!(
            text.contains(&format!(
                "crond_last_success_timestamp_seconds{labels} 1000\n"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!("crond_last_status{labels} 0\n")),
            "{text}"
        );
        assert!(!text.contains("0123456789ab"), "{text}");
        // A line whose place is gone (removed, not yet forgotten) has no series.
        assert!(!m.render(0, true, |_| None).contains("entry="));
    }
}
