//! Every message of the catalogue ([`messages`]), and the lines built around it (a job's facts,
//! a refused file, a bare PAM line), rendered by the JSON writer and checked against the schema
//! ([`json::KEYS`], [`json::EVENTS`]) that crond(8) documents.

use std::collections::BTreeSet;
use std::io;
use std::path::Path;

use super::json::{self, Frame, Kind};
use super::line::{JobFields, LogLine};
use super::messages::{self as m, JobExit, JobLogMask};
use crate::crontab::policy::LimitAction;
use crate::types::{Level, Uid};

/// One line of each function of the catalogue, by the function's name.
fn catalogue() -> Vec<(&'static str, LogLine)> {
    let e = || io::Error::from_raw_os_error(libc::ENOENT);
    let p = Path::new("/var/spool/cron/crontabs");
    let all = JobLogMask(15);
    let killed = JobExit::Signaled {
        signal: 9,
        core_dumped: false,
    };
    let mut lines = vec![
        ("cmd_line", m::cmd_line(all, b"alice", 42, b"date").unwrap()),
        ("failed_line", m::failed_line(all, 42, killed).unwrap()),
        ("end_line", m::end_line(all, b"alice", 42, b"date").unwrap()),
        ("cmdend_line", m::cmdend_line(b"alice", b"date")),
        (
            "home_notice_line",
            m::home_notice_line(b"alice", b"/home/alice", &e(), "crontabs/alice:3"),
        ),
        (
            "output_dropped_line",
            m::output_dropped_line(b"alice", 1, 1024),
        ),
        (
            "timeout_line",
            m::timeout_line(b"alice", b"sleep 99", 90, LimitAction::Term),
        ),
        (
            "skip_line",
            m::skip_line(b"alice", b"sleep 99", "10:00", true),
        ),
        ("wait_line", m::wait_line(b"alice", b"sleep 99", "10:00")),
        (
            "ping_failed_line",
            m::ping_failed_line(
                b"alice",
                "CRON_PING",
                "https://hc-ping.com",
                "3 tries, the last: connection refused",
            ),
        ),
        (
            "late_line",
            m::late_line(b"alice", b"sleep 99", "10:00", "2m10s"),
        ),
        (
            "retry_line",
            m::retry_line(b"alice", b"false", "2/3", "10:00:31"),
        ),
        (
            "retry_dropped_line",
            m::retry_dropped_line(b"alice", b"false", "2/3", "10:01:05", "10:01"),
        ),
        (
            "retry_kept_line",
            m::retry_kept_line(b"alice", b"false", "2/3", "10:02:00"),
        ),
        (
            "retry_made_up_line",
            m::retry_made_up_line(b"alice", b"false", "2/3", "10:02:00"),
        ),
        (
            "retry_missed_line",
            m::retry_missed_line(b"alice", b"false", "2/3", "10:02:00", false),
        ),
        (
            "fork_given_up_line",
            m::fork_given_up_line(b"alice", b"sleep 99", "10:00", 61, "10:01"),
        ),
        (
            "run_now_line",
            m::run_now_line(b"alice", b"date", "crontabs/alice:3", "root (uid 0, pid 7)"),
        ),
        (
            "cluster_not_run_line",
            m::cluster_not_run_line(4, "10:01", "the cluster database is unreachable", "echo a"),
        ),
        (
            "user_back_line",
            m::user_back_line(b"alice", "crontabs/alice", Some(Uid(1000))),
        ),
        (
            "cluster_line",
            m::cluster_line(b"alice", b"date", "10:05 runs on host-b".into()),
        ),
        (
            "missed_line",
            m::missed_line(b"alice", b"date", "2026-11-21 11:00"),
        ),
        (
            "unknown_user_line",
            m::unknown_user_line(b"nobody2", "/etc/crontab"),
        ),
        (
            "uid_changed_line",
            m::uid_changed_line(b"alice", Uid(1000), Uid(1001), "crontabs/alice"),
        ),
        ("cmdout_more_line", m::cmdout_more_line(b"alice", 1)),
        ("no_mta_line", m::no_mta_line()),
        ("mta_status_line", m::mta_status_line(b"alice", 6, 0x4b00)),
        ("unsafe_mail_line", m::unsafe_mail_line(b"alice", b"-oQ")),
        ("started_line", m::started_line(Path::new("/run/crond.pid"))),
        ("random_delay_line", m::random_delay_line(0.5)),
        ("no_pam_line", m::no_pam_line("--no-pam")),
        ("fork_ok_line", m::fork_ok_line()),
        (
            "waiting_for_crontab_line",
            m::waiting_for_crontab_line("/app/crontab: no such file"),
        ),
        (
            "state_dir_made_private_line",
            m::state_dir_made_private_line(p, 0o755),
        ),
        ("death_line", m::death_line("can't read /etc/crontab")),
        ("loaded_line", m::loaded_line(1, 1)),
        ("notify_failed_line", m::notify_failed_line(&e())),
        ("shutting_down_line", m::shutting_down_line()),
        ("still_running_line", m::still_running_line(1)),
        ("stopping_jobs_line", m::stopping_jobs_line(2, 10)),
        ("no_job_process_line", m::no_job_process_line()),
        ("every_job_ended_line", m::every_job_ended_line()),
        ("kill_left_line", m::kill_left_line("timeout", 1)),
        ("not_reported_line", m::not_reported_line(1)),
        ("foreign_proc_line", m::foreign_proc_line("1", 4242)),
        ("cant_list_jobs_line", m::cant_list_jobs_line(&e())),
        ("waiting_dropped_line", m::waiting_dropped_line(1)),
        ("hangup_line", m::hangup_line()),
        (
            "zone_unread_line",
            m::zone_unread_line("/etc/localtime: bad"),
        ),
        ("zone_kept_line", m::zone_kept_line("/etc/localtime: bad")),
        ("zone_changed_line", m::zone_changed_line("Europe/Paris")),
        ("inotify_read_line", m::inotify_read_line(&e())),
        ("rescan_line", m::rescan_line("inotify queue overflowed")),
        ("inotify_disabled_line", m::inotify_disabled_line()),
        (
            "inotify_unavailable_line",
            m::inotify_unavailable_line(&e()),
        ),
        ("unwatched_dir_line", m::unwatched_dir_line(p, &e())),
        ("inotify_line", m::inotify_line()),
        (
            "unwatched_target_line",
            m::unwatched_target_line(p, &e(), p),
        ),
        ("unlisted_dir_line", m::unlisted_dir_line(p, &e())),
        ("reload_line", m::reload_line(b"alice", "crontabs/alice")),
        (
            "refused_line",
            m::refused_line(b"alice", "ORPHAN".into(), "no passwd entry".into()),
        ),
        (
            "file_error_line",
            m::file_error_line(b"alice", "crontabs/alice:3:1: bad minute".into()),
        ),
        (
            "file_warning_line",
            m::file_warning_line(b"alice", "crontabs/alice:3:17: %".into()),
        ),
        (
            "delay_cancelled_line",
            m::delay_cancelled_line(b"alice", 1, "crontabs/alice"),
        ),
        ("reboot_line", m::reboot_line()),
        ("no_reboot_line", m::no_reboot_line()),
        ("reboot_marker_line", m::reboot_marker_line(p, &e())),
        ("unarmed_line", m::unarmed_line(&e())),
        ("postponed_line", m::postponed_line(1)),
        ("clock_set_in_place_line", m::clock_set_in_place_line()),
        ("clock_late_line", m::clock_late_line(3)),
        ("clock_set_line", m::clock_set_line(-60)),
        (
            "fork_failed_line",
            m::fork_failed_line("Resource temporarily unavailable"),
        ),
        (
            "fork_still_failing_line",
            m::fork_still_failing_line("EAGAIN", 1),
        ),
        ("fork_works_line", m::fork_works_line(1)),
        ("state_unwritten_line", m::state_unwritten_line(p, &e())),
        ("state_ignored_line", m::state_ignored_line(p, "not root's")),
        (
            "resume_gone_line",
            m::resume_gone_line("0123456789ab", "root"),
        ),
        ("paused_gone_line", m::paused_gone_line(3)),
        (
            "paused_ignored_line",
            m::paused_ignored_line(p, "not root's"),
        ),
        ("retries_gone_line", m::retries_gone_line(p, 2)),
        (
            "retries_left_out_line",
            m::retries_left_out_line(p, 2, 100_000),
        ),
        ("retries_unwritten_line", m::retries_unwritten_line(p, &e())),
        (
            "retries_ignored_line",
            m::retries_ignored_line(p, "not root's"),
        ),
        (
            "pause_line",
            m::pause_line(
                b"alice",
                b"date",
                "crontabs/alice:3 0123456789ab",
                true,
                "root",
            ),
        ),
        ("cluster_mode_line", m::cluster_mode_line("host-a", p)),
        (
            "cluster_db_unproven_line",
            m::cluster_db_unproven_line("no TLS"),
        ),
        ("helper_started_line", m::helper_started_line(77)),
        ("helper_unstarted_line", m::helper_unstarted_line(p, &e())),
        ("helper_lost_line", m::helper_lost_line("exited")),
        ("helper_protocol_line", m::helper_protocol_line("bad line")),
        ("history_unstarted_line", m::history_unstarted_line(p, &e())),
        ("history_lost_line", m::history_lost_line(77, 2)),
        ("history_dir_line", m::history_dir_line(p, &e())),
        (
            "history_not_recorded_line",
            m::history_not_recorded_line(3, "the queue of outcomes was full"),
        ),
        (
            "history_writer_line",
            m::history_writer_line("the store was set aside"),
        ),
        (
            "outcome_not_recorded_line",
            m::outcome_not_recorded_line(b"alice", "crontabs/alice:3", &e()),
        ),
        (
            "helper_said_line",
            m::helper_said_line(true, "lost the database"),
        ),
        ("metrics_at_line", m::metrics_at_line("127.0.0.1:9100")),
        ("control_socket_line", m::control_socket_line(p)),
        ("no_control_socket_line", m::no_control_socket_line(p, &e())),
        (
            "control_turned_away_line",
            m::control_turned_away_line(&[(1000, 1)]),
        ),
    ];
    for piece in m::cmdout_lines(b"alice", b"hello\0world") {
        lines.push(("cmdout_lines", piece));
    }
    lines
}

/// The functions of the catalogue that make lines, read from its source: `pub fn NAME_line(`.
fn catalogue_functions() -> BTreeSet<String> {
    include_str!("messages.rs")
        .lines()
        .filter_map(|l| l.strip_prefix("pub fn "))
        .filter_map(|l| l.split('(').next())
        .filter(|name| name.ends_with("_line") || name.ends_with("_lines"))
        .map(str::to_owned)
        .collect()
}

/// The object for `line`, parsed, after it was checked against the schema.
fn checked(line: &LogLine) -> serde_json::Map<String, serde_json::Value> {
    let frame = Frame {
        time: "2026-11-21T10:00:00.004+01:00",
        host: "vm",
        source: "cron[4242]",
        level: Level::Notice,
    };
    let text = String::from_utf8(json::render(line, &frame)).expect("UTF-8");
    assert!(!text.contains('\n'), "one line: {text}");
    let value: serde_json::Value = serde_json::from_str(&text).expect(&text);
    let object = value.as_object().expect("an object").clone();
    for (name, value) in &object {
        let key = json::KEYS.iter().find(|k| k.name == name);
        let key = key.unwrap_or_else(|| panic!("unknown key {name}: {text}"));
        let right = match key.kind {
            Kind::String => value.is_string(),
            Kind::Integer => value.is_i64(),
        };
        assert!(right, "{name} is not a {:?}: {text}", key.kind);
    }
    for key in json::KEYS.iter().filter(|k| k.always) {
        assert!(object.contains_key(key.name), "no {}: {text}", key.name);
    }
    let level = object["level"].as_str().unwrap();
    assert!(json::LEVELS.contains(&level), "level {level}: {text}");
    if let Some(event) = object.get("event") {
        let event = event.as_str().unwrap();
        assert!(json::EVENTS.contains(&event), "event {event}: {text}");
    }
    // Written in the schema's order (a quote inside a value is escaped, so `"key":` is a key).
    let at: Vec<usize> = (json::KEYS.iter())
        .filter_map(|k| text.find(&format!("\"{}\":", k.name)))
        .collect();
    assert!(at.is_sorted(), "keys in the schema's order: {text}");
    object
}

#[test]
fn every_message_of_the_catalogue_is_driven_here() {
    let driven: BTreeSet<String> = catalogue().iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(driven, catalogue_functions());
}

#[test]
fn every_message_of_the_catalogue_matches_the_json_schema() {
    for (name, line) in catalogue() {
        if name == "cmdend_line" {
            // cronie's CMDEND is text only: the job child logs END as JSON instead.
            continue;
        }
        let object = checked(&line);
        assert!(object.contains_key("event"), "{name}");
        // The daemon's own lines name no user; the text log keeps Debian's `(CRON)`.
        assert_eq!(
            object.contains_key("user"),
            !line.is_daemon(),
            "{name}: {object:?}"
        );
        if line.is_daemon() {
            assert!(line.to_string().starts_with("(CRON) "), "{name}");
        }
    }
}

#[test]
fn a_jobs_lines_with_all_their_facts_match_the_json_schema() {
    let ended = JobFields {
        entry: Some("crontabs/alice:3".into()),
        id: Some("55a1449ee9d3".into()),
        command: Some(b"date +\xff".to_vec()),
        pid: Some(4243),
        exit_status: Some(3),
        signal: None,
        duration_ms: Some(12),
    };
    let killed = JobFields {
        exit_status: None,
        signal: Some(9),
        ..ended.clone()
    };
    let end = m::end_line(JobLogMask(2), b"alice", 4243, b"date").unwrap();
    let object = checked(&end.clone().with_job(ended));
    assert_eq!(object["exit_status"], 3);
    assert_eq!(object["user"], "alice");
    checked(&end.with_job(killed.clone()));
    let failed = m::failed_line(JobLogMask(4), 4243, JobExit::Exited(3)).unwrap();
    let object = checked(&failed.with_job(killed.clone()));
    assert!(!object.contains_key("user"), "Debian's (CRON) error line");
    for piece in m::cmdout_lines(b"alice", b"out") {
        assert_eq!(
            checked(&piece.with_job(killed.clone()))["entry"],
            "crontabs/alice:3"
        );
    }
    // PAM's refusal, logged bare as Debian logs it: no event, the job's user.
    let bare = LogLine::bare("User account has expired").naming(b"alice", killed);
    let object = checked(&bare);
    assert!(!object.contains_key("event"));
    assert_eq!(object["user"], "alice");
    assert!(!checked(&LogLine::bare("x")).contains_key("user"));
}

#[test]
fn every_refused_files_event_is_in_the_schema() {
    use crate::trust::Refusal;
    for refusal in [
        Refusal::NotRegular,
        Refusal::InsecureModeUser,
        Refusal::InsecureModeSystem,
        Refusal::WrongOwner,
        Refusal::WrongSymlinkOwner,
        Refusal::HardLinks,
        Refusal::InsecureDirectory,
    ] {
        checked(&m::refused_line(
            b"*system*",
            refusal.to_string(),
            "/etc/cron.d/x".into(),
        ));
    }
}

#[test]
fn crond_8_documents_every_key_level_and_event() {
    let page = include_str!("../../man/crond.8");
    let section = page
        .split(".Sh JSON LOG")
        .nth(1)
        .expect("crond.8 has a JSON LOG section");
    let section = section.split("\n.Sh ").next().unwrap();
    for key in json::KEYS {
        assert!(
            section.contains(&format!(".It Li {}", key.name)),
            "{}",
            key.name
        );
    }
    for word in json::LEVELS.iter().chain(json::EVENTS) {
        let named = ["Ql", "Li"].iter().any(|m| {
            section.contains(&format!("{m} {word}")) || section.contains(&format!("{m} \"{word}\""))
        });
        assert!(named, "{word}");
    }
}
