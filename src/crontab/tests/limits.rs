//! The parser's bounds: line length, entries, assignments, the problems kept and the length of
//! a message, and the memory a parsed file holds (measured with the counting allocator).

use super::*;

/// The bound docs/limits.md states: parsing a file never holds more than `8 × its size +
/// PER_ENTRY × the entries loaded` bytes.
const PER_ENTRY: usize = 512;

fn held_by_parse(text: &[u8], format: Format, limits: Limits) -> (Crontab, usize) {
    crate::alloc_count::peak_during(|| parse_with(text, format, limits, false))
}

#[test]
fn limits_are_errors_not_crashes() {
    let limits = Limits {
        max_file: 1 << 20,
        max_line: 40,
        max_entries: 2,
        max_env: 2,
        max_every: 100,
        max_cluster: 100,
    };
    let long = format!("0 0 * * * {}\n", "x".repeat(100));
    let text = format!("A=1\nB=2\nA=3\n{long}* * * * * a\n* * * * * b\n* * * * * c\n");
    let tab = parse_with(text.as_bytes(), Format::User, limits, false);
    assert_eq!(
        shown(&tab.errors),
        [
            "tab:3:1: more than 2 variable assignments in one file",
            "tab:4:41: line longer than 40 bytes",
            "tab:7:1: more than 2 entries in one file; entry not loaded",
        ]
    );
    assert_eq!(tab.entries.len(), 2);
    assert_eq!(
        tab.entries[0].env.get(b"A"),
        Some(&b"1"[..]),
        "a repeated name counts as an assignment: A=3 was refused"
    );
}

#[test]
fn memory_stays_linear_when_entries_sit_between_reassignments_of_large_variables() {
    // The amplification case: six variables of 125,000 bytes, then A=0 and A=1 in turn between
    // entries, up to 1 MiB. A copy of the environment per assignment held 3.6 GB for 852 KiB.
    for (format, limits, entry) in [
        (Format::User, Limits::USER, "* * * * * true"),
        (Format::System, Limits::SYSTEM, "* * * * * root true"),
    ] {
        let mut text = Vec::new();
        for name in ["B", "C", "D", "E", "F", "G"] {
            text.extend_from_slice(format!("{name}={}\n", "v".repeat(125_000)).as_bytes());
        }
        let mut i = 0usize;
        while text.len() < 1 << 20 {
            text.extend_from_slice(format!("A={}\n{entry}\n", i % 2).as_bytes());
            i += 1;
        }
        let lines = text.iter().filter(|&&b| b == b'\n').count();
        let (tab, peak) = held_by_parse(&text, format, limits);
        let bound = 8 * text.len() + PER_ENTRY * tab.entries.len();
        assert!(
            peak <= bound,
            "{format:?}: {peak} bytes held for a {} byte file of {lines} lines, {} entries \
             (bound {bound})",
            text.len(),
            tab.entries.len()
        );
        // As much loaded as the limits let through (10,000 entries, or 10,000 assignments),
        // and each entry sees the large variables and its own A.
        assert!(tab.entries.len() >= 10_000, "{}", tab.entries.len());
        let last = tab.entries.last().unwrap();
        assert_eq!(last.env.get(b"G").map(<[u8]>::len), Some(125_000));
        assert_eq!(tab.entries[0].env.get(b"A"), Some(&b"0"[..]));
        assert_eq!(tab.entries[1].env.get(b"A"), Some(&b"1"[..]));
    }
}

#[test]
fn memory_stays_linear_for_a_file_of_one_byte_lines() {
    // A million bad lines: each is a problem, and the problems kept are bounded.
    let text = "x\n".repeat(1_000_000);
    let (tab, peak) = held_by_parse(text.as_bytes(), Format::System, Limits::SYSTEM);
    let bound = 8 * text.len();
    assert!(peak <= bound, "{peak} bytes held (bound {bound})");
    assert!(tab.entries.is_empty());
}

#[test]
fn problems_past_the_first_twenty_are_counted_not_kept() {
    // Twenty-five warnings first (LOGNAME can't be set), then five errors: the errors are past
    // the cap, and the file still counts as having errors.
    let mut text = "LOGNAME=x\n".repeat(25);
    text.push_str(&"bad\n".repeat(5));
    text.push_str("* * * * * ok\n");
    let tab = user(&text);
    assert_eq!(tab.warnings.len(), SHOWN_PROBLEMS);
    assert!(tab.errors.is_empty());
    assert!(tab.has_errors());
    assert_eq!(tab.not_shown(), 10);
    assert_eq!(
        tab.not_shown_line("tab").as_deref(),
        Some("(10 more problems in tab not shown)")
    );
    assert_eq!(tab.entries.len(), 1, "the good line still loads");
    let clean = user("* * * * * ok\n");
    assert_eq!(clean.not_shown_line("tab"), None);
    assert!(!clean.has_errors());
}

#[test]
fn a_message_that_echoes_a_long_value_is_cut() {
    let text = format!("RANDOM_DELAY={}\n", "9".repeat(100_000));
    let tab = user(&text);
    let message = &tab.errors[0].message;
    assert_eq!(message.len(), MAX_MESSAGE);
    assert!(message.starts_with("RANDOM_DELAY must be") && message.ends_with("..."));
    // Cut at a character boundary, never inside one.
    let text = format!("@{}\n", "é".repeat(200));
    let tab = user(&text);
    assert!(tab.errors[0].message.len() <= MAX_MESSAGE);
}

#[test]
fn a_file_may_hold_a_hundred_every_entries_and_the_next_is_an_error() {
    let mut text = String::new();
    for i in 0..101 {
        text.push_str(&format!("@every {}s job {i}\n", i + 1));
    }
    let tab = parse_with(text.as_bytes(), Format::User, Limits::USER, false);
    assert_eq!(
        shown(&tab.errors),
        ["tab:101:1: more than 100 @every entries in one file; entry not loaded"]
    );
    assert_eq!(tab.entries.len(), 100);
    assert_eq!(tab.entries[99].when.to_string(), "@every 1m40s");
}

#[test]
fn a_user_crontab_marks_at_most_its_bound_of_entries_for_the_cluster() {
    let limits = Limits {
        max_cluster: 2,
        ..Limits::USER
    };
    let text = "* * * * * local\nCRON_CLUSTER=c\n* * * * * one\n@reboot boot\n@every 5s tick\n\
                0 * * * * two\n0 1 * * * three\nCRON_CLUSTER=\n0 2 * * * four\n";
    let tab = parse_with(text.as_bytes(), Format::User, limits, false);
    assert_eq!(
        shown(&tab.errors),
        [
            "tab:7:1: more than 2 CRON_CLUSTER entries in one crontab; entry not loaded (it would \
          run on every host)"
        ]
    );
    let loaded: Vec<&[u8]> = tab.commands().collect();
    assert_eq!(
        loaded,
        [&b"local"[..], b"one", b"boot", b"tick", b"two", b"four"],
        "@reboot and @every run locally and are not counted; the entries after it load"
    );
    // Root's crontab (and system files, whose bound is usize::MAX) are not bounded.
    let root = parse_with(text.as_bytes(), Format::User, limits, true);
    assert!(root.errors.is_empty(), "{:?}", shown(&root.errors));
    assert_eq!(Limits::SYSTEM.max_cluster, usize::MAX);
}
