//! Unit tests of the crontab format: both formats, environment lines, specials, diagnostics with
//! line and column, and the rule that a bad line never hides a good one.

use super::*;
use crate::schedule::{Class, Field, Schedule};

fn parse_with(text: &[u8], format: Format, limits: Limits, privileged: bool) -> Crontab {
    let mut zones = |name: &str| Zone::get(name);
    let mut options = ParseOptions {
        format,
        limits,
        seed: 7,
        file: "crontabs/alice",
        zones: &mut zones,
        privileged,
    };
    parse(text, &mut options)
}

/// A user's crontab, not root's.
fn user(text: &str) -> Crontab {
    parse_with(text.as_bytes(), Format::User, Limits::USER, false)
}

/// Root's crontab.
fn root(text: &str) -> Crontab {
    parse_with(text.as_bytes(), Format::User, Limits::USER, true)
}

fn system(text: &str) -> Crontab {
    parse_with(text.as_bytes(), Format::System, Limits::SYSTEM, false)
}

fn shown(diags: &[Diagnostic]) -> Vec<String> {
    diags.iter().map(|d| d.in_file("tab").to_string()).collect()
}

fn schedule(entry: &Entry) -> &Schedule {
    match &entry.when {
        When::Periodic(s) => s,
        other => panic!("expected a periodic entry, not {other}"),
    }
}

fn env_of(entry: &Entry) -> Vec<(String, String)> {
    entry
        .env
        .iter()
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect()
}

#[test]
fn a_user_crontab_yields_entries_with_their_line_numbers_and_commands() {
    let tab = user("# comment\n\n*/5 * * * * /usr/bin/backup --fast\n@reboot  echo up\n");
    assert!(tab.errors.is_empty(), "{:?}", shown(&tab.errors));
    assert!(tab.warnings.is_empty(), "{:?}", shown(&tab.warnings));
    assert_eq!(tab.entries.len(), 2);
    assert_eq!(tab.entries[0].line, 3);
    assert_eq!(tab.command(0), b"/usr/bin/backup --fast");
    assert_eq!(tab.entries[0].user, None);
    assert_eq!(schedule(&tab.entries[0]).class(), Class::Wildcard);
    assert_eq!(tab.entries[1].line, 4);
    assert_eq!(tab.entries[1].when, When::Reboot);
    assert_eq!(tab.command(1), b"echo up");
}

#[test]
fn the_system_format_takes_a_user_between_the_time_fields_and_the_command() {
    let tab = system(
        "SHELL=/bin/sh\n17 *\t* * *\troot    cd / && run-parts --report /etc/cron.hourly\n@daily www-data /srv/rotate\n",
    );
    assert!(tab.errors.is_empty(), "{:?}", shown(&tab.errors));
    assert_eq!(tab.entries.len(), 2);
    assert_eq!(tab.entries[0].user.as_deref(), Some(&b"root"[..]));
    assert_eq!(
        tab.command(0),
        b"cd / && run-parts --report /etc/cron.hourly"
    );
    assert_eq!(tab.entries[1].user.as_deref(), Some(&b"www-data"[..]));
    assert_eq!(tab.command(1), b"/srv/rotate");
}

#[test]
fn cronies_dash_before_the_time_fields_makes_a_quiet_entry_in_roots_crontab_and_system_files() {
    let tab = root("-*/5 * * * * date\n-@daily backup\n0 0 * * * loud\n");
    assert!(tab.errors.is_empty(), "{:?}", shown(&tab.errors));
    let quiet: Vec<bool> = tab.entries.iter().map(|e| e.quiet).collect();
    assert_eq!(quiet, [true, true, false]);
    assert_eq!(schedule(&tab.entries[0]).class(), Class::Wildcard);
    assert_eq!(tab.command(0), b"date");
    assert_eq!(tab.to_line(0), b"-*/5 * * * * date");
    assert_eq!(tab.command(1), b"backup");
    assert_eq!(tab.to_line(2), b"0 0 * * * loud");
    // The `-` does not change a `~` pick: adding it keeps the entry's minute.
    let picked = |t: &Crontab| *schedule(&t.entries[0]);
    assert_eq!(
        picked(&root("-~ * * * * job\n")),
        picked(&root("~ * * * * job\n"))
    );

    let tab = system("-17 * * * * root run-parts /etc/cron.hourly\n");
    assert!(tab.errors.is_empty(), "{:?}", shown(&tab.errors));
    assert!(tab.entries[0].quiet);
    assert_eq!(tab.entries[0].user.as_deref(), Some(&b"root"[..]));
}

#[test]
fn a_users_crontab_may_not_hide_a_job_from_the_log_and_the_other_entries_still_load() {
    let tab = user("0 1 * * * first\n  -0 2 * * * hidden\n0 3 * * * third\n");
    assert_eq!(
        shown(&tab.errors),
        ["tab:2:3: only root's crontab and system files may use '-' (no CMD log line)"]
    );
    let commands: Vec<&[u8]> = tab.commands().collect();
    assert_eq!(commands, [&b"first"[..], b"third"]);
    assert!(tab.entries.iter().all(|e| !e.quiet));
}

#[test]
fn a_system_entry_without_a_user_or_a_command_is_an_error() {
    let tab = system("0 0 * * *\n0 0 * * * root\n0 0 * * * root   \n");
    assert_eq!(
        shown(&tab.errors),
        [
            "tab:1:10: missing user name after the time fields",
            "tab:2:15: missing command",
            "tab:3:18: missing command",
        ]
    );
    assert!(tab.entries.is_empty());
}

#[test]
fn comments_are_whole_lines_only() {
    let tab = user("  # indented comment\n0 0 * * * echo a # not a comment\n");
    assert_eq!(tab.entries.len(), 1);
    assert_eq!(tab.command(0), b"echo a # not a comment");
}

#[test]
fn environment_lines_apply_to_the_entries_below_them() {
    let tab = user(
        "MAILTO=ops@example.com\n0 1 * * * first\nMAILTO = \"\"\nFOO='  spaced  '\n0 2 * * * second\nMAILTO=dev\n",
    );
    assert!(tab.errors.is_empty(), "{:?}", shown(&tab.errors));
    assert_eq!(
        env_of(&tab.entries[0]),
        [("MAILTO".into(), "ops@example.com".into())]
    );
    assert_eq!(
        env_of(&tab.entries[1]),
        [
            ("MAILTO".into(), "".into()),
            ("FOO".into(), "  spaced  ".into())
        ]
    );
    assert_eq!(
        tab.env.get(b"MAILTO"),
        Some(&b"dev"[..]),
        "the file's final environment"
    );
    assert_eq!(tab.entries[0].env.get(b"FOO"), None);
}

#[test]
fn entries_between_two_variable_lines_share_one_environment() {
    let tab = user("A=1\n* * * * * a\n* * * * * b\nB=2\n* * * * * c\n");
    assert!(Arc::ptr_eq(&tab.entries[0].env, &tab.entries[1].env));
    assert!(!Arc::ptr_eq(&tab.entries[1].env, &tab.entries[2].env));
}

#[test]
fn logname_and_user_can_not_be_overridden() {
    let tab = user("LOGNAME=root\nUSER=root\n* * * * * id\n");
    assert!(tab.errors.is_empty());
    assert_eq!(
        shown(&tab.warnings),
        [
            "tab:1:1: LOGNAME can not be set: cron sets it to the crontab's owner; line ignored",
            "tab:2:1: USER can not be set: cron sets it to the crontab's owner; line ignored",
        ]
    );
    assert_eq!(tab.entries[0].env.iter().count(), 0);
}

#[test]
fn cron_tz_sets_the_zone_of_the_entries_below_and_an_empty_value_resets_it() {
    let tab = user(
        "0 9 * * * local\nCRON_TZ=America/New_York\n0 9 * * * ny\nCRON_TZ=:Europe/London\n0 9 * * * london\nCRON_TZ=\n0 9 * * * local again\n",
    );
    assert!(tab.errors.is_empty(), "{:?}", shown(&tab.errors));
    let zones: Vec<Option<&str>> = tab
        .entries
        .iter()
        .map(|e| e.zone.as_ref().map(Zone::name))
        .collect();
    assert_eq!(
        zones,
        [None, Some("America/New_York"), Some("Europe/London"), None]
    );
    // The variable itself stays in the job's environment, as any other.
    assert_eq!(
        tab.entries[1].env.get(b"CRON_TZ"),
        Some(&b"America/New_York"[..])
    );
}

#[test]
fn an_unknown_cron_tz_is_an_error_and_the_entries_under_it_do_not_load() {
    let tab = user("CRON_TZ=Mars/Olympus\n0 9 * * * a\n0 10 * * * b\nCRON_TZ=UTC\n0 11 * * * c\n");
    let errors = shown(&tab.errors);
    assert_eq!(errors.len(), 3, "{errors:?}");
    assert!(
        errors[0].starts_with("tab:1:1: unknown time zone 'Mars/Olympus'"),
        "{errors:?}"
    );
    assert_eq!(
        errors[1],
        "tab:2:1: entry not loaded: the CRON_TZ on line 1 is not a valid zone"
    );
    assert_eq!(
        errors[2],
        "tab:3:1: entry not loaded: the CRON_TZ on line 1 is not a valid zone"
    );
    assert_eq!(tab.entries.len(), 1);
    assert_eq!(tab.command(0), b"c");
}

#[test]
fn random_delay_is_read_in_minutes_and_a_bad_value_is_an_error() {
    let tab = user(
        "RANDOM_DELAY=30\n0 1 * * * a\nRANDOM_DELAY=soon\n0 2 * * * b\nRANDOM_DELAY=0\n0 3 * * * c\n",
    );
    assert_eq!(
        shown(&tab.errors),
        ["tab:3:1: RANDOM_DELAY must be a number of minutes from 0 to 1440, not 'soon'"]
    );
    let delays: Vec<u32> = tab.entries.iter().map(|e| e.random_delay).collect();
    assert_eq!(delays, [30, 30, 0]);
}

#[test]
fn cron_retry_and_its_delay_apply_below_them_and_a_bad_value_is_an_error_at_its_column() {
    let tab = user(concat!(
        "CRON_RETRY=2\nCRON_RETRY_DELAY=5s\n0 1 * * * retried\n",
        "CRON_RETRY=11\nCRON_RETRY_DELAY = 2h\n0 2 * * * kept\n",
        "CRON_RETRY=0\n0 3 * * * not retried\n",
    ));
    assert_eq!(
        shown(&tab.errors),
        [
            "tab:4:12: CRON_RETRY must be a number of retries from 0 to 10, not '11'",
            "tab:5:20: CRON_RETRY_DELAY must be a duration from 1s to 1h (e.g. 30s, 2m), not '2h'",
        ]
    );
    let retries: Vec<(u8, u16)> = (tab.entries.iter())
        .map(|e| (e.env.policy().retries, e.env.policy().retry_delay()))
        .collect();
    assert_eq!(retries, [(2, 5), (2, 5), (0, 5)]);
}

#[test]
fn the_extensions_variables_apply_below_them_and_a_bad_value_is_an_error_at_its_column() {
    use crate::crontab::policy::{Missed, Overlap};
    let tab = user(concat!(
        "0 1 * * * plain\n",
        "CRON_OVERLAP=skip\nCRON_TIMEOUT = 90s\n0 2 * * * limited\n",
        "CRON_OVERLAP=sometimes\nCRON_TIMEOUT=\"1 hour\"\nCRON_MISSED=once\n0 3 * * * kept\n",
        "CRON_OVERLAP=queue\nCRON_TIMEOUT=0\n0 4 * * * queued\n",
    ));
    assert_eq!(
        shown(&tab.errors),
        [
            "tab:5:14: CRON_OVERLAP must be allow, skip or queue, not 'sometimes'",
            "tab:6:15: CRON_TIMEOUT: '1 hour' is not a duration (NUMBER then s, m, h or d, e.g. 90s, 2h, 1h30m)",
        ]
    );
    let policies: Vec<_> = tab.entries.iter().map(|e| e.env.policy()).collect();
    assert!(policies[0].is_default());
    assert_eq!(
        (policies[1].overlap, policies[1].timeout_s),
        (Overlap::Skip, Some(90))
    );
    // The bad lines changed nothing: the entry below keeps skip and 90 s, and gets once.
    assert_eq!(
        (
            policies[2].overlap,
            policies[2].timeout_s,
            policies[2].missed
        ),
        (Overlap::Skip, Some(90), Missed::Once)
    );
    assert_eq!(
        (policies[3].overlap, policies[3].timeout_s),
        (Overlap::Queue, None)
    );
    // They are variables like the others: the job sees them.
    assert_eq!(tab.entries[1].env.get(b"CRON_TIMEOUT"), Some(&b"90s"[..]));
}

#[test]
fn a_bad_line_is_reported_with_line_and_column_and_the_good_lines_still_load() {
    let tab = user(
        "0 0 * * * good one\n0 0 * * 5#3 bad\n61 * * * * bad too\n@daily good two\nnonsense here\n",
    );
    assert_eq!(
        shown(&tab.errors),
        [
            "tab:2:10: '#' (nth weekday) is not cron syntax, in the day of week field",
            "tab:3:1: 61 is out of range 0-59 in the minute field",
            "tab:5:1: 'nonsense' is not a number, in the minute field (or is this meant to be NAME=value?)",
        ]
    );
    let commands: Vec<&[u8]> = tab.commands().collect();
    assert_eq!(commands, [&b"good one"[..], b"good two"]);
}

#[test]
fn a_six_field_expression_with_seconds_is_caught() {
    let tab = user("0 0 12 * * * /usr/bin/true\n0 0 12 * * */2 x\n");
    assert_eq!(tab.errors.len(), 2, "{:?}", shown(&tab.errors));
    assert!(
        tab.errors[0].message.contains("not six"),
        "{:?}",
        shown(&tab.errors)
    );
    assert_eq!(tab.errors[0].column, 12);
    assert!(tab.entries.is_empty());
    // The sixth field alone or before a tab is caught too; a command that only starts with
    // `*` is a command.
    let tab = user("0 0 12 * * *\n0 0 12 * * *\tx\n0 0 12 * * *.sh\n0 0 12 * * **/x\n");
    let lines: Vec<u32> = tab.errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [1, 2], "{:?}", shown(&tab.errors));
    let commands: Vec<&[u8]> = tab.commands().collect();
    assert_eq!(commands, [&b"*.sh"[..], b"**/x"]);
}

#[test]
fn an_entry_without_a_command_is_an_error() {
    let tab = user("0 0 * * *\n@daily\n");
    assert_eq!(
        shown(&tab.errors),
        ["tab:1:10: missing command", "tab:2:7: missing command"]
    );
}

#[test]
fn a_missing_final_newline_is_a_warning_and_the_last_line_still_loads() {
    let tab = user("0 0 * * * a\n0 1 * * * b");
    assert!(tab.errors.is_empty());
    assert_eq!(
        shown(&tab.warnings),
        ["tab:2:1: missing newline at the end of the file"]
    );
    assert_eq!(tab.entries.len(), 2);
    assert_eq!(tab.command(1), b"b");
}

#[test]
fn an_empty_file_is_an_empty_crontab() {
    for text in ["", "\n", "# only a comment\n"] {
        let tab = user(text);
        assert!(
            tab.entries.is_empty() && tab.errors.is_empty() && tab.warnings.is_empty(),
            "{text:?}"
        );
    }
}

#[test]
fn dos_line_endings_are_dropped_with_a_warning() {
    let tab = user("MAILTO=a\r\n0 0 * * * run\r\n");
    assert!(tab.errors.is_empty());
    assert_eq!(tab.command(0), b"run");
    assert_eq!(tab.entries[0].env.get(b"MAILTO"), Some(&b"a"[..]));
    assert_eq!(
        shown(&tab.warnings),
        [
            "tab:1:9: carriage return at the end of the line (DOS line ending) ignored",
            "tab:2:14: carriage return at the end of the line (DOS line ending) ignored",
        ]
    );
}

#[test]
fn commands_that_are_not_utf8_survive_byte_for_byte() {
    let tab = parse_with(
        b"0 0 * * * echo caf\xe9 \xff%\xfe\n",
        Format::User,
        Limits::USER,
        false,
    );
    assert!(tab.errors.is_empty());
    assert_eq!(tab.command(0), b"echo caf\xe9 \xff%\xfe");
    let input = tab.job_input(0);
    assert_eq!(input.command, b"echo caf\xe9 \xff");
    assert_eq!(input.stdin.as_deref(), Some(&b"\xfe\n"[..]));
}

#[test]
fn a_nul_byte_makes_the_line_an_error() {
    let tab = parse_with(
        b"0 0 * * * echo a\x00b\n0 0 * * * ok\n",
        Format::User,
        Limits::USER,
        false,
    );
    assert_eq!(shown(&tab.errors), ["tab:1:17: NUL byte in the line"]);
    assert_eq!(tab.entries.len(), 1);
    // A CR after the NUL is what the line is refused for (it hides text, even in a comment);
    // a NUL in a comment is no error.
    let tab = parse_with(
        b"0 0 * * * a\x00b\rc\n# x\x00y\n# x\ry\n0 0 * * * \x00\x00\n",
        Format::User,
        Limits::USER,
        false,
    );
    assert_eq!(
        shown(&tab.errors),
        [
            "tab:1:14: carriage return inside the line (it would hide text on a terminal)",
            "tab:3:4: carriage return inside the line (it would hide text on a terminal)",
            "tab:4:11: NUL byte in the line",
        ]
    );
    assert!(tab.entries.is_empty());
}

#[test]
fn a_repeated_name_keeps_its_first_place_with_its_last_value() {
    let tab = user("A=1\nB=2\n* * * * * one\nA=3\n* * * * * two\n");
    let pair = |n: &str, v: &str| (n.to_string(), v.to_string());
    assert_eq!(env_of(&tab.entries[0]), [pair("A", "1"), pair("B", "2")]);
    assert_eq!(env_of(&tab.entries[1]), [pair("A", "3"), pair("B", "2")]);
}

#[test]
fn a_schedule_that_can_never_run_loads_with_a_warning() {
    let tab = user("0 0 30 2 * never\n");
    assert!(tab.errors.is_empty());
    assert_eq!(tab.entries.len(), 1);
    assert_eq!(
        shown(&tab.warnings),
        ["tab:1:1: this schedule can never run (no such day in the chosen months)"]
    );
}

#[test]
fn a_malformed_assignment_is_an_error_at_its_column() {
    let tab = user("MAILTO=\"a,b\" x\n0 0 * * * ok\n");
    assert_eq!(
        shown(&tab.errors),
        ["tab:1:14: unexpected text after the quoted value"]
    );
    assert_eq!(tab.entries.len(), 1);
    assert_eq!(tab.entries[0].env.iter().count(), 0);
}

#[test]
fn the_random_pick_is_the_same_on_every_parse_of_the_same_file() {
    let a = user("~ ~ * * * backup\n");
    let b = user("~ ~ * * * backup\n");
    let (sa, sb) = (schedule(&a.entries[0]), schedule(&b.entries[0]));
    assert_eq!(sa, sb);
    assert_eq!(sa.bits(Field::Minute).count_ones(), 1);
}

#[test]
fn an_entry_prints_as_a_line_that_parses_back_to_the_same_entry() {
    let text = "*/7 1-5 * jan,jun sun-tue\troot  echo '%' \\% é\n@reboot nobody /bin/true\n";
    let tab = system(text);
    assert!(tab.errors.is_empty(), "{:?}", shown(&tab.errors));
    for (i, entry) in tab.entries.iter().enumerate() {
        let mut line = tab.to_line(i);
        line.push(b'\n');
        let again = parse_with(&line, Format::System, Limits::SYSTEM, false);
        assert!(again.errors.is_empty(), "{:?}", shown(&again.errors));
        let e = &again.entries[0];
        assert_eq!(
            (&e.when, &e.user, again.command(0)),
            (&entry.when, &entry.user, tab.command(i))
        );
    }
}

#[test]
fn a_carriage_return_inside_a_line_makes_it_an_error() {
    // What a terminal shows of this line is "0 0 * * * harmless": the CR hides the rest.
    let tab = user("0 0 * * * evil #\r0 0 * * * harmless\n* * * * * ok\n");
    assert_eq!(
        shown(&tab.errors),
        ["tab:1:17: carriage return inside the line (it would hide text on a terminal)"]
    );
    assert_eq!(tab.entries.len(), 1);
    // Lone CRs as line separators (old Mac files) are one line full of CRs: refused too.
    let tab = user("0 0 * * * a\r0 0 * * * b\r");
    assert!(tab.entries.is_empty() && tab.has_errors());
    // In a variable's value just the same.
    let tab = user("MAILTO=root\rx@evil\n");
    assert!(tab.has_errors() && tab.env.get(b"MAILTO").is_none());
}

#[test]
fn unsafe_mail_settings_are_errors_at_the_values_column_and_not_in_force() {
    let tab = user("MAILTO=ok@host\nMAILTO = -oQ/tmp\nMAILFROM=\"a b\"\nMAILTO=\n* * * * * x\n");
    assert_eq!(tab.errors.len(), 2, "{:?}", tab.errors);
    assert_eq!((tab.errors[0].line, tab.errors[0].column), (2, 10));
    assert!(tab.errors[0].message.starts_with("MAILTO may hold only"));
    assert_eq!((tab.errors[1].line, tab.errors[1].column), (3, 12));
    // An empty MAILTO (no mail) and MAILFROM (the default sender) are fine.
    assert_eq!(tab.entries[0].env.get(b"MAILTO"), Some(&b""[..]));
    assert_eq!(tab.entries[0].env.get(b"MAILFROM"), None);
}

mod limits;

#[test]
fn each_entry_keeps_its_time_fields_as_written_one_space_apart_without_the_dash_or_the_user() {
    let c = user(
        "@daily a\n */5  *\t* * mon-fri   b\n@every 1h30m c\n@every  2h d\n\t1 2 3 4 5 e\n\
         1 2 3 4\t5 f\n1 2 3 4 5\tg\n",
    );
    let written: Vec<&[u8]> = (0..c.entries.len()).map(|i| c.schedule_text(i)).collect();
    assert_eq!(
        written,
        [
            &b"@daily"[..],
            b"*/5 * * * mon-fri",
            b"@every 1h30m",
            b"@every 2h",
            b"1 2 3 4 5",
            b"1 2 3 4 5",
            b"1 2 3 4 5"
        ]
    );
    let s = system("- 0 3 * * sun  root  backup\n@reboot www-data warm\n");
    let written: Vec<&[u8]> = (0..s.entries.len()).map(|i| s.schedule_text(i)).collect();
    assert_eq!(written, [&b"0 3 * * sun"[..], b"@reboot"]);
}

#[test]
fn lines_are_cut_where_split_cuts_them() {
    for text in [
        &b""[..],
        b"\n",
        b"\n\n",
        b"a",
        b"a\n",
        b"a\nb",
        b"a\n\nb\n",
        b"* * * * * x\r\n# c\n\0\n",
    ] {
        let ours: Vec<&[u8]> = super::split_lines(text).collect();
        let std: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
        assert_eq!(ours, std, "{:?}", String::from_utf8_lossy(text));
    }
}

/// A user's crontab named `file`, on the host of seed `host`.
fn user_in(text: &str, file: &str, host: u64) -> Crontab {
    let mut zones = |name: &str| Zone::get(name);
    let mut options = ParseOptions {
        format: Format::User,
        limits: Limits::USER,
        seed: host,
        file,
        zones: &mut zones,
        privileged: false,
    };
    parse(text.as_bytes(), &mut options)
}

/// The schedules of a crontab's entries, as text.
fn schedules(tab: &Crontab) -> Vec<String> {
    assert!(tab.errors.is_empty(), "{:?}", tab.errors);
    tab.entries.iter().map(|e| e.when.to_string()).collect()
}

#[test]
fn h_values_come_from_the_entry_and_stay_when_other_lines_change() {
    let alone = user_in("H H * * * backup\n", "crontabs/alice", 7);
    assert!(alone.entries[0].hashed);
    let first = schedules(&alone)[0].clone();
    assert!(!first.contains('H'), "{first}");
    // Other lines above it, before and after an edit of theirs, and the blanks of its own.
    for text in [
        "# nightly\nMAILTO=\"\"\n0 5 * * * other\nH H * * * backup\n",
        "0 6 * * * other --changed\nH\tH  * * *   backup\n",
    ] {
        let tab = user_in(text, "crontabs/alice", 7);
        assert_eq!(schedules(&tab).last(), Some(&first), "{text:?}");
    }
    // Another host gives the same values: by default the host is not in the seed.
    assert_eq!(
        schedules(&user_in("H H * * * backup\n", "crontabs/alice", 8))[0],
        first
    );
    // Another command, another file, another spelling of the fields: other values.
    for (text, file) in [
        ("H H * * * restore\n", "crontabs/alice"),
        ("H H * * * backup\n", "crontabs/bob"),
        ("H H(0-23) * * * backup\n", "crontabs/alice"),
    ] {
        assert_ne!(
            schedules(&user_in(text, file, 7))[0],
            first,
            "{text:?} {file}"
        );
    }
    // Identical lines get values of their own, the first of them the lone line's.
    let twice = schedules(&user_in(
        "H H * * * backup\nH H * * * backup\n",
        "crontabs/alice",
        7,
    ));
    assert_eq!(twice[0], first);
    assert_ne!(twice[1], first);
    // A plain line says it has no H.
    assert!(!user_in("5 4 * * * x\n", "crontabs/alice", 7).entries[0].hashed);
}

#[test]
fn a_cron_id_keeps_the_h_values_through_edits_and_cron_hash_host_mixes_in_the_host() {
    let named = |text: &str, host: u64| {
        schedules(&user_in(
            &format!("CRON_ID=backup\n{text}\n"),
            "crontabs/alice",
            host,
        ))[0]
            .clone()
    };
    let before = named("H H * * * backup", 7);
    assert_eq!(named("H H * * * backup --full", 7), before);
    assert_ne!(
        named("H H * * * backup", 7),
        schedules(&user_in("H H * * * backup\n", "crontabs/alice", 7))[0]
    );
    let on_host = |host: u64| {
        schedules(&user_in(
            "CRON_HASH=host\nH H * * * backup\n",
            "crontabs/alice",
            host,
        ))[0]
            .clone()
    };
    let plain = schedules(&user_in("H H * * * backup\n", "crontabs/alice", 7))[0].clone();
    // Of 20 hosts, many get values of their own, and none of them changes with a reload.
    let hosts: std::collections::HashSet<String> = (0..20).map(on_host).collect();
    assert!(hosts.len() >= 15, "{hosts:?}");
    assert_eq!(on_host(3), on_host(3));
    assert!(hosts.len() > 1 && hosts.iter().any(|h| *h != plain));
    // Back to the default below `CRON_HASH=entry`.
    let back = user_in(
        "CRON_HASH=host\nCRON_HASH=entry\nH H * * * backup\n",
        "crontabs/alice",
        3,
    );
    assert_eq!(schedules(&back)[0], plain);
    let bad = user_in("CRON_HASH=always\n", "crontabs/alice", 3);
    assert_eq!(
        shown(&bad.errors),
        ["tab:1:11: CRON_HASH must be entry or host, not 'always'"]
    );
}

#[test]
fn a_system_file_hashes_its_user_field_too() {
    let in_system = |text: &str| {
        let mut zones = |name: &str| Zone::get(name);
        let mut options = ParseOptions {
            format: Format::System,
            limits: Limits::SYSTEM,
            seed: 7,
            file: "/etc/cron.d/backup",
            zones: &mut zones,
            privileged: false,
        };
        schedules(&parse(text.as_bytes(), &mut options))
    };
    let root = in_system("H H * * * root backup\n");
    assert_eq!(
        in_system("0 0 * * * www true\nH H * * * root backup\n")[1],
        root[0]
    );
    assert_ne!(in_system("H H * * * www backup\n")[0], root[0]);
}
