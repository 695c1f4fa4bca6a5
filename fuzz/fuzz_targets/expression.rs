//! Fuzzes `crond::schedule::parse_expression` with arbitrary text: it must never panic, an
//! accepted expression must print (`Display`) as text that parses to the same value, and
//! `next_after` on it must return (no panic, no endless search) in a zone with DST. It must not
//! weaken those checks to make a finding go away.

#![no_main]

use std::sync::OnceLock;

use crond::schedule::{When, Zone, parse_expression};
use jiff::Timestamp;
use libfuzzer_sys::fuzz_target;

fn zone() -> &'static Zone {
    static ZONE: OnceLock<Zone> = OnceLock::new();
    ZONE.get_or_init(|| Zone::get("Australia/Lord_Howe").expect("tzdata is installed"))
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(when) = parse_expression(text, 42) else {
        return;
    };
    let printed = when.to_string();
    assert_eq!(
        parse_expression(&printed, 42),
        Ok(when),
        "{text:?} printed as {printed:?}"
    );
    if let When::Periodic(schedule) = when {
        // Start times spread over 1970..2106 from the input's length and bytes.
        let seed = data.iter().fold(data.len() as u64, |h, &b| {
            h.wrapping_mul(0x100_0000_01b3) ^ u64::from(b)
        });
        let after = Timestamp::from_second((seed % 4_300_000_000) as i64).unwrap();
        if let Some(next) = schedule.next_after(after, zone()) {
            assert!(next > after, "{text:?}: {next} is not after {after}");
            let local = zone().civil(next);
            let _ = schedule.matches(local);
        }
    }
});
