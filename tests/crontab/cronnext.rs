//! `cronnext` end to end: the real binary, its output, messages and exit codes.

use std::path::Path;
use std::process::{Command, Output};

fn cronnext(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_cronnext"))
        .args(args)
        .env("TZ", "America/New_York")
        .output()
        .expect("cronnext runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("UTF-8 output")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn an_expression_prints_the_next_times_in_rfc3339_with_the_zone_offset() {
    let o = cronnext(&[
        "--tz",
        "America/New_York",
        "--after",
        "2026-03-08T00:00:00-05:00",
        "--count",
        "3",
        "30 2 * * *",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "2026-03-08T03:00:00-04:00\n2026-03-09T02:30:00-04:00\n2026-03-10T02:30:00-04:00\n"
    );
}

#[test]
fn the_count_defaults_to_one_and_the_zone_to_the_local_zone() {
    // TZ=America/New_York is the local zone of the child.
    let o = cronnext(&["--after", "2026-07-01T00:00:00Z", "0 12 * * *"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "2026-07-01T12:00:00-04:00\n");
}

#[test]
fn times_are_strictly_after_the_after_time() {
    let o = cronnext(&[
        "--tz",
        "UTC",
        "--after",
        "2026-07-01T12:00:00Z",
        "0 12 * * *",
    ]);
    assert_eq!(stdout(&o), "2026-07-02T12:00:00+00:00\n");
}

#[test]
fn after_may_be_a_local_time_in_the_given_zone() {
    let o = cronnext(&[
        "--tz",
        "Asia/Kathmandu",
        "--after",
        "2026-07-01T08:59",
        "0 9 * * *",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(stdout(&o), "2026-07-01T09:00:00+05:45\n");
}

#[test]
fn without_after_the_next_time_is_in_the_future() {
    let o = cronnext(&["--tz", "UTC", "* * * * *"]);
    assert_eq!(o.status.code(), Some(0));
    let printed: jiff::Timestamp = stdout(&o).trim().parse().expect("an RFC 3339 time");
    let now = jiff::Timestamp::now();
    assert!(
        printed > now - jiff::SignedDuration::from_secs(1),
        "{printed} vs {now}"
    );
    assert!(
        printed <= now + jiff::SignedDuration::from_secs(61),
        "{printed} vs {now}"
    );
}

#[test]
fn an_invalid_expression_shows_the_column_and_exits_with_two() {
    let o = cronnext(&["0 0 * * 5#3"]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(stdout(&o), "");
    assert_eq!(
        stderr(&o),
        "cronnext: 0 0 * * 5#3\ncronnext:          ^\ncronnext: column 10: '#' (nth weekday) is not cron syntax, in the day of week field\n"
    );
}

#[test]
fn usage_errors_exit_with_one() {
    for args in [
        &["--count", "many", "* * * * *"][..],
        &["--bogus", "* * * * *"],
        &["--tz", "Mars/Olympus", "* * * * *"],
        &["--after", "yesterday", "* * * * *"],
        &[],
        &["--until", "2027-01-01T00:00:00Z", "* * * * *"],
    ] {
        let o = cronnext(args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).starts_with("cronnext: "),
            "{args:?}: {}",
            stderr(&o)
        );
        assert_eq!(stdout(&o), "", "{args:?}");
    }
}

#[test]
fn reboot_prints_nothing_and_says_why() {
    let o = cronnext(&["@reboot"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "");
    assert!(
        stderr(&o).contains("@reboot runs once when crond starts at boot"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_expression_that_never_runs_prints_nothing_and_says_so() {
    let o = cronnext(&["0 0 30 2 *"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), "");
    assert!(stderr(&o).contains("never runs"), "{}", stderr(&o));
}

#[test]
fn help_and_version_go_to_stdout() {
    let o = cronnext(&["--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(stdout(&o).starts_with("usage: cronnext"));
    let o = cronnext(&["-V"]);
    assert_eq!(
        stdout(&o),
        format!("cronnext (crond) {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// The user running the tests: whom crond, run by them with `--crontab`, runs a file of theirs
/// (or root's) as, and so whom cronnext names (whatever the file is called).
fn me() -> String {
    let o = Command::new("id").arg("-un").output().expect("id -un");
    String::from_utf8(o.stdout).unwrap().trim().to_string()
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write test crontab");
    path.to_str().expect("UTF-8 temp path").to_string()
}

#[test]
fn crontab_files_list_the_next_run_of_every_entry_sorted_with_user_and_command() {
    let dir = tempfile::tempdir().unwrap();
    let alice = write(
        dir.path(),
        "alice",
        "0 9 * * * morning\n30 8 * * * earlier\n@reboot boot\n",
    );
    let bob = write(
        dir.path(),
        "bob",
        "CRON_TZ=Europe/London\n0 13 * * * lunch in london\n",
    );
    let o = cronnext(&[
        "--tz",
        "UTC",
        "--after",
        "2026-07-01T00:00:00Z",
        &alice,
        &bob,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "2026-07-01T08:30:00+00:00 {me} earlier\n\
             2026-07-01T09:00:00+00:00 {me} morning\n\
             2026-07-01T12:00:00+00:00 {me} lunch in london\n",
            me = me()
        )
    );
    // The note names the entry, FILE:LINE: with several files, which one.
    assert!(
        stderr(&o).contains(&format!(
            "cronnext: {alice}:3: @reboot runs once when crond starts at boot\n"
        )),
        "{}",
        stderr(&o)
    );
}

#[test]
fn files_in_cron_d_that_crond_does_not_read_are_skipped_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let cron_d = dir.path().join("cron.d");
    std::fs::create_dir(&cron_d).unwrap();
    let job = "0 9 * * * root echo from-";
    let good = write(&cron_d, "e2scrub_all", &format!("{job}good\n"));
    let old = write(&cron_d, "php.dpkg-old", &format!("{job}old\n"));
    let hidden = write(&cron_d, ".placeholder", &format!("{job}hidden\n"));
    let dotted = write(&cron_d, "backup.sh", &format!("{job}dotted\n"));
    // Outside a cron.d directory a file is read as given, whatever its name.
    let tried = write(dir.path(), "trying.out", &format!("{job}tried\n"));
    let mut args = vec!["--system", "--tz", "UTC", "--after", "2026-07-01T00:00:00Z"];
    args.extend([&*good, &*old, &*hidden, &*dotted, &*tried]);
    let o = cronnext(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "2026-07-01T09:00:00+00:00 root echo from-good\n\
         2026-07-01T09:00:00+00:00 root echo from-tried\n"
    );
    let why = "skipped: crond does not read this file (a name in cron.d holds only letters, \
               digits, '_' and '-', as run-parts requires)";
    assert_eq!(
        stderr(&o),
        format!("cronnext: {old}: {why}\ncronnext: {hidden}: {why}\ncronnext: {dotted}: {why}\n")
    );
    // The same through a relative path, as `cd /etc/cron.d; cronnext --system *` gives them.
    let o = Command::new(env!("CARGO_BIN_EXE_cronnext"))
        .args(["--system", "--tz", "UTC", "--after", "2026-07-01T00:00:00Z"])
        .args(["e2scrub_all", "php.dpkg-old"])
        .current_dir(&cron_d)
        .output()
        .unwrap();
    assert_eq!(
        stdout(&o),
        "2026-07-01T09:00:00+00:00 root echo from-good\n"
    );
    assert_eq!(stderr(&o), format!("cronnext: php.dpkg-old: {why}\n"));
}

#[test]
fn an_entry_under_the_extensions_variables_shows_them_before_its_command() {
    let dir = tempfile::tempdir().unwrap();
    let carol = write(
        dir.path(),
        "carol",
        "0 9 * * * plain\nCRON_OVERLAP=skip\nCRON_TIMEOUT=90m\nCRON_MISSED=once\n0 10 * * * guarded\n\
         CRON_OVERLAP=sometimes\nCRON_LATE=1m\n0 11 * * * still guarded\n",
    );
    let o = cronnext(&["--tz", "UTC", "--after", "2026-07-01T00:00:00Z", &carol]);
    assert_eq!(o.status.code(), Some(2), "the bad value is an error");
    assert!(
        stderr(&o).contains(&format!(
            "{carol}:6:14: CRON_OVERLAP must be allow, skip or queue, not 'sometimes'"
        )),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        stdout(&o),
        format!(
            "2026-07-01T09:00:00+00:00 {me} plain\n\
             2026-07-01T10:00:00+00:00 {me} [overlap=skip missed=once timeout=1h30m] guarded\n\
             2026-07-01T11:00:00+00:00 {me} [overlap=skip missed=once timeout=1h30m late=1m] \
             still guarded\n",
            me = me()
        )
    );
}

#[test]
fn the_system_format_takes_the_user_from_each_line() {
    let dir = tempfile::tempdir().unwrap();
    let tab = write(
        dir.path(),
        "crontab",
        "SHELL=/bin/sh\n17 * * * * root cd / && run-parts --report /etc/cron.hourly\n",
    );
    let o = cronnext(&[
        "--system",
        "--tz",
        "UTC",
        "--after",
        "2026-07-01T00:00:00Z",
        "--count",
        "2",
        &tab,
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        "2026-07-01T00:17:00+00:00 root cd / && run-parts --report /etc/cron.hourly\n\
         2026-07-01T01:17:00+00:00 root cd / && run-parts --report /etc/cron.hourly\n"
    );
}

#[test]
fn until_lists_every_run_up_to_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let tab = write(dir.path(), "carol", "*/20 * * * * tick\n");
    let o = cronnext(&[
        "--tz",
        "UTC",
        "--after",
        "2026-07-01T00:00:00Z",
        "--until",
        "2026-07-01T01:00:00Z",
        &tab,
    ]);
    assert_eq!(
        stdout(&o),
        format!(
            "2026-07-01T00:20:00+00:00 {me} tick\n\
             2026-07-01T00:40:00+00:00 {me} tick\n\
             2026-07-01T01:00:00+00:00 {me} tick\n",
            me = me()
        )
    );
}

#[test]
fn a_crontab_with_errors_reports_them_prints_the_good_entries_and_exits_with_two() {
    let dir = tempfile::tempdir().unwrap();
    let tab = write(dir.path(), "dave", "0 0 * * * fine\n0 0 * * L bad\n");
    let o = cronnext(&["--tz", "UTC", "--after", "2026-07-01T00:00:00Z", &tab]);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        stdout(&o),
        format!("2026-07-02T00:00:00+00:00 {} fine\n", me())
    );
    assert_eq!(
        stderr(&o),
        format!("{tab}:2:9: 'L' (last day) is not cron syntax, in the day of week field\n")
    );
}

#[test]
fn an_unreadable_file_is_a_usage_error() {
    let o = cronnext(&["/nonexistent/crontab"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("/nonexistent/crontab"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn an_entry_with_h_shows_the_fields_it_resolves_to_and_runs_at_them() {
    let dir = tempfile::tempdir().unwrap();
    let tab = write(
        dir.path(),
        "crontab",
        "H H(0-7) * * * root backup\nH/20 * * * * root poll\n",
    );
    let args = [
        "--system",
        "--tz",
        "UTC",
        "--after",
        "2026-06-30T23:59:00Z",
        "--count",
        "2",
        &tab,
    ];
    let o = cronnext(&args);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    // The same every time: the values come from the entry, not from a random pick.
    assert_eq!(stdout(&cronnext(&args)), out);
    let resolved = |command: &str| -> (Vec<String>, Vec<String>) {
        let lines: Vec<&str> = out.lines().filter(|l| l.ends_with(command)).collect();
        assert_eq!(lines.len(), 2, "{out}");
        let fields = lines[0]
            .split("[H: ")
            .nth(1)
            .unwrap()
            .split(']')
            .next()
            .unwrap();
        let times = lines.iter().map(|l| l[11..16].to_string()).collect();
        (fields.split(' ').map(String::from).collect(), times)
    };
    let (fields, times) = resolved("backup");
    assert_eq!(&fields[2..], ["*", "*", "*"], "{out}");
    let (minute, hour): (u32, u32) = (fields[0].parse().unwrap(), fields[1].parse().unwrap());
    assert!(minute < 60 && hour < 8, "{out}");
    let at = format!("{hour:02}:{minute:02}");
    assert_eq!(times, [at.clone(), at], "{out}");
    // H/20: three minutes 20 apart, the first below 20; the runs are the first two of them.
    let (fields, times) = resolved("poll");
    let minutes: Vec<u32> = fields[0].split(',').map(|m| m.parse().unwrap()).collect();
    assert!(minutes.len() == 3 && minutes[0] < 20, "{out}");
    assert_eq!(minutes[1], minutes[0] + 20);
    assert_eq!(times[0], format!("00:{:02}", minutes[0]), "{out}");
    assert_eq!(times[1], format!("00:{:02}", minutes[1]), "{out}");
}

#[test]
fn an_expression_with_h_says_what_it_resolves_to_on_stderr() {
    let o = cronnext(&[
        "--tz",
        "UTC",
        "--after",
        "2026-07-01T00:00:00Z",
        "H H * * *",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.starts_with("cronnext: H H * * * resolves to "), "{err}");
    let fields = err.split("resolves to ").nth(1).unwrap();
    let mut parts = fields.split(' ');
    let minute: u32 = parts.next().unwrap().parse().unwrap();
    let hour: u32 = parts.next().unwrap().parse().unwrap();
    assert_eq!(
        stdout(&o).trim_end(),
        format!("2026-07-01T{hour:02}:{minute:02}:00+00:00")
    );
    let o = cronnext(&["H(5-2) * * * *"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("column 3: range 5-2 is reversed"),
        "{}",
        stderr(&o)
    );
}
