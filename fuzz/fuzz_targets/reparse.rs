//! Fuzzes `crond::crontab::incremental::reparse`: a file made of the input's lines repeated to
//! 1,100 lines, then one edit (a line replaced by the patch's lines, the patch inserted, or a
//! line removed). What the reparse keeps of the old entries, with its middle between, must be
//! the entries of a whole parse of the new text, and its problems the same. A failure here is a
//! finding: a reload that runs other entries than the file says.

#![no_main]

use crond::crontab::incremental::{Reparse, parse_tracked, reparse};
use crond::crontab::{self, Entry, Format, Limits, ParseOptions};
use crond::schedule::{When, Zone};
use libfuzzer_sys::fuzz_target;

const LINES: usize = 1_100;

fn options<'a>(
    format: Format,
    zones: &'a mut dyn FnMut(&str) -> Result<Zone, crond::schedule::ZoneError>,
) -> ParseOptions<'a> {
    ParseOptions {
        format,
        limits: Limits {
            max_file: 1 << 20,
            max_line: 4096,
            max_entries: 1_200,
            max_env: 2_000,
            max_every: 10,
            max_cluster: 10,
        },
        seed: 0x5eed,
        zones,
        privileged: true,
    }
}

fn kept(entries: &[Entry]) -> Vec<&Entry> {
    entries
        .iter()
        .filter(|e| !matches!(e.when, When::Reboot))
        .collect()
}

fuzz_target!(|data: &[u8]| {
    let [selector, hi, lo, op, rest @ ..] = data else {
        return;
    };
    let format = if selector & 1 == 0 {
        Format::User
    } else {
        Format::System
    };
    let (seed, patch) = match rest.iter().position(|&b| b == 0xff) {
        Some(at) => (&rest[..at], &rest[at + 1..]),
        None => (rest, &[][..]),
    };
    let seed_lines: Vec<&[u8]> = seed.split(|&b| b == b'\n').collect();
    let mut lines: Vec<&[u8]> = seed_lines.iter().copied().cycle().take(LINES).collect();
    let old = lines.join(&b'\n');
    let at = usize::from(u16::from_be_bytes([*hi, *lo])) % lines.len();
    let patch_lines: Vec<&[u8]> = patch.split(|&b| b == b'\n').collect();
    match op % 3 {
        0 => {
            lines.splice(at..=at, patch_lines);
        }
        1 => {
            lines.splice(at..at, patch_lines);
        }
        _ => {
            lines.remove(at);
        }
    }
    let new = lines.join(&b'\n');
    let (mut old, mut new) = (old, new);
    old.push(b'\n');
    new.push(b'\n');
    let mut zones = |name: &str| match name {
        "UTC" | "America/New_York" | "Australia/Lord_Howe" => Zone::get(name),
        _ => Zone::get("Not/A_Zone"),
    };
    let Some(fingerprint) = parse_tracked(&old, &mut options(format, &mut zones)).1 else {
        return;
    };
    let whole_old = crontab::parse(&old, &mut options(format, &mut zones));
    let whole_new = crontab::parse(&new, &mut options(format, &mut zones));
    match reparse(&new, &mut options(format, &mut zones), &fingerprint) {
        Reparse::Whole(crontab, _) => {
            assert_eq!(crontab.entries, whole_new.entries);
            assert_eq!(crontab.errors, whole_new.errors);
        }
        Reparse::Partial {
            front,
            back,
            middle,
            ..
        } => {
            let old_kept = kept(&whole_old.entries);
            let mut got: Vec<&Entry> = old_kept[..front].to_vec();
            got.extend(kept(&middle.entries));
            got.extend(&old_kept[old_kept.len() - back..]);
            assert_eq!(got, kept(&whole_new.entries));
            assert_eq!(middle.errors, whole_new.errors);
            assert_eq!(middle.warnings, whole_new.warnings);
        }
    }
});
