//! Fuzzes `crond::crontab::parse` with arbitrary bytes in both formats (the first byte picks the
//! format). It must never panic, and every entry it loads must print (`Crontab::to_line`) as a
//! line that parses back to an entry with the same schedule, user and command. It must not
//! relax that check for inputs that happen to be awkward: a failure here is a finding.

#![no_main]

use crond::crontab::{self, Format, Limits, ParseOptions};
use crond::schedule::Zone;
use libfuzzer_sys::fuzz_target;

fn parse(text: &[u8], format: Format) -> crontab::Crontab {
    // Zone lookups read the system tz database; a fixed small set keeps runs fast and
    // repeatable while still letting CRON_TZ succeed and fail.
    let mut zones = |name: &str| match name {
        "UTC" | "America/New_York" | "Australia/Lord_Howe" => Zone::get(name),
        _ => Zone::get("Not/A_Zone"),
    };
    let limits = Limits {
        max_file: 1 << 20,
        max_line: 4096,
        max_entries: 1000,
        max_env: 100,
        max_every: 10,
        max_cluster: 10,
    };
    let mut options = ParseOptions {
        format,
        limits,
        seed: 0x5eed,
        file: "crontabs/fuzz",
        zones: &mut zones,
        privileged: true,
    };
    crontab::parse(text, &mut options)
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, text)) = data.split_first() else {
        return;
    };
    let format = if selector & 1 == 0 {
        Format::User
    } else {
        Format::System
    };
    let parsed = parse(text, format);
    for (i, entry) in parsed.entries.iter().enumerate() {
        let _ = parsed.job_input(i);
        let mut line = parsed.to_line(i);
        line.push(b'\n');
        let again = parse(&line, format);
        assert!(
            !again.has_errors() && again.entries.len() == 1,
            "{:?} printed as {:?} does not load as one entry: {:?}",
            entry,
            String::from_utf8_lossy(&line),
            again.errors
        );
        let back = &again.entries[0];
        assert_eq!(back.when, entry.when, "schedule of {line:?}");
        assert_eq!(back.user, entry.user, "user of {line:?}");
        assert_eq!(again.command(0), parsed.command(i), "command of {line:?}");
    }
});
