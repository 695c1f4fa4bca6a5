//! A reparse must give what a whole parse gives: the old entries it keeps at the front and the
//! back, with the middle between them, are the whole parse's entries (lines, schedules,
//! commands, variables, zones, delays), and the problems are the same.

use super::*;
use crate::crontab::{Crontab, Entry, Format, Limits, parse};
use crate::schedule::ZoneError;

fn options_with<'a>(
    zones: &'a mut dyn FnMut(&str) -> Result<Zone, ZoneError>,
    limits: Limits,
) -> ParseOptions<'a> {
    ParseOptions {
        format: Format::System,
        limits,
        seed: 7,
        zones,
        privileged: true,
    }
}

fn zone(name: &str) -> Result<Zone, ZoneError> {
    Zone::get(name)
}

/// A system file of `n` lines: entries, variables now and then, a zone, a delay, comments, an
/// @reboot.
fn base(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| match i % 97 {
            0 => format!("V{}=value{i}", i % 5),
            13 => "CRON_TZ=Europe/Paris".to_string(),
            14 => format!("RANDOM_DELAY={}", i % 7),
            40 => "CRON_TZ=".to_string(),
            50 => "# a comment".to_string(),
            51 => String::new(),
            60 => "@reboot root echo boot".to_string(),
            _ => format!("{} {} * * * root job {i}", i % 60, (i / 60) % 24),
        })
        .collect()
}

fn text(lines: &[String]) -> Vec<u8> {
    let mut t = lines.join("\n").into_bytes();
    t.push(b'\n');
    t
}

/// The entries the daemon keeps (all but `@reboot`), each with its command and its time
/// fields as written.
fn kept(tab: &Crontab) -> Vec<(&Entry, &[u8], &[u8])> {
    (0..tab.entries.len())
        .map(|i| (&tab.entries[i], tab.command(i), tab.schedule_text(i)))
        .filter(|(e, _, _)| !matches!(e.when, When::Reboot))
        .collect()
}

/// Parses `new` against `old`'s fingerprint and checks it against a whole parse; returns the
/// new fingerprint and whether the parse was partial.
fn check(
    old: &[u8],
    new: &[u8],
    fingerprint: &Fingerprint,
    limits: Limits,
) -> (Option<Fingerprint>, bool) {
    let mut zones = zone;
    let whole_old = parse(old, &mut options_with(&mut zones, limits));
    let whole_new = parse(new, &mut options_with(&mut zones, limits));
    let old_kept = kept(&whole_old);
    match reparse(new, &mut options_with(&mut zones, limits), fingerprint) {
        Reparse::Whole(crontab, fp) => {
            assert_eq!(crontab.entries, whole_new.entries);
            assert!(crontab.commands().eq(whole_new.commands()));
            assert_eq!(crontab.errors, whole_new.errors);
            (fp, false)
        }
        Reparse::Partial {
            front,
            back,
            middle,
            fingerprint,
        } => {
            let mut got = old_kept[..front].to_vec();
            got.extend(kept(&middle));
            got.extend(&old_kept[old_kept.len() - back..]);
            assert_eq!(got, kept(&whole_new), "kept entries");
            assert_eq!(middle.errors, whole_new.errors);
            assert_eq!(middle.warnings, whole_new.warnings);
            assert_eq!(*middle.env, *whole_new.env, "the file's last variables");
            (fingerprint, true)
        }
    }
}

fn fingerprint_of(t: &[u8], limits: Limits) -> Fingerprint {
    let mut zones = zone;
    parse_tracked(t, &mut options_with(&mut zones, limits))
        .1
        .expect("a clean file of several chunks has a fingerprint")
}

#[test]
fn edits_anywhere_give_what_a_whole_parse_gives_and_only_the_changed_chunks_are_parsed() {
    let lines = base(3_000);
    let old = text(&lines);
    let fp = fingerprint_of(&old, Limits::SYSTEM);
    assert_eq!(fp.chunks(), 3_000usize.div_ceil(CHUNK_LINES));
    type Edit = fn(&mut Vec<String>);
    let edits: [(&str, Edit, bool); 12] = [
        ("nothing", |_| {}, true),
        (
            "an entry's minute",
            |l| l[1_000] = "7 7 * * * root job 1000".into(),
            true,
        ),
        (
            "the first line",
            |l| l[1] = "1 1 * * * root first".into(),
            true,
        ),
        (
            "the last line",
            |l| l[2_999] = "2 2 * * * root last".into(),
            true,
        ),
        (
            "a variable (its entries below change)",
            |l| l[970] = "V0=changed".into(),
            true,
        ),
        (
            "a zone",
            |l| l[13 + 97 * 5] = "CRON_TZ=Asia/Tokyo".into(),
            true,
        ),
        (
            "a line inserted",
            |l| l.insert(1_500, "5 5 * * * root new".into()),
            true,
        ),
        ("a line removed", |l| drop(l.remove(2_000)), true),
        ("lines appended", |l| l.extend(base(600)), true),
        ("lines cut at the end", |l| l.truncate(1_100), true),
        (
            "a bad line",
            |l| l[1_200] = "61 * * * * root bad".into(),
            true,
        ),
        (
            "a bad zone",
            |l| l[13 + 97 * 3] = "CRON_TZ=Nowhere/Nothing".into(),
            true,
        ),
    ];
    for (what, edit, partial) in edits {
        let mut new_lines = lines.clone();
        edit(&mut new_lines);
        let new = text(&new_lines);
        let (next, was_partial) = check(&old, &new, &fp, Limits::SYSTEM);
        assert_eq!(was_partial, partial, "{what}");
        // A second edit against the fingerprint the first left.
        if let Some(next) = next {
            let mut again = new_lines.clone();
            let at = again.len() / 3;
            again[at] = "3 3 * * * root again".into();
            check(&new, &text(&again), &next, Limits::SYSTEM);
        }
    }
}

#[test]
fn a_change_parses_one_chunk_when_the_state_after_it_is_the_old_one() {
    let lines = base(2_000);
    let old = text(&lines);
    let fp = fingerprint_of(&old, Limits::SYSTEM);
    let mut new_lines = lines.clone();
    new_lines[1_001] = "9 9 * * * root changed".into();
    let mut zones = zone;
    let Reparse::Partial {
        middle,
        front,
        back,
        ..
    } = reparse(
        &text(&new_lines),
        &mut options_with(&mut zones, Limits::SYSTEM),
        &fp,
    )
    else {
        panic!("partial");
    };
    // Line 1,002 is in the fourth chunk (lines 769–1,024): only its entries were parsed.
    let lines_parsed: Vec<u32> = middle.entries.iter().map(|e| e.line).collect();
    assert!(
        lines_parsed.iter().all(|&l| (769..=1_024).contains(&l)),
        "{lines_parsed:?}"
    );
    assert!(lines_parsed.contains(&1_002));
    assert!(front > 0 && back > 0);
}

#[test]
fn a_back_that_would_pass_a_limit_is_parsed_again() {
    let limits = Limits {
        max_entries: 2_000,
        ..Limits::SYSTEM
    };
    // 2,000 entries (the limit) and a comment on line 1,001.
    let lines: Vec<String> = (0..2_001)
        .map(|i| match i {
            1_000 => "# room for one more".to_string(),
            _ => format!("{} * * * * root j{i}", i % 60),
        })
        .collect();
    let old = text(&lines);
    let fp = fingerprint_of(&old, limits);
    // The comment becomes an entry: the lines keep their numbers, but the file's last entry
    // is now over the limit, which only a parse of the back can say.
    let mut new_lines = lines.clone();
    new_lines[1_000] = "1 * * * * root one more".into();
    let (_, partial) = check(&old, &text(&new_lines), &fp, limits);
    assert!(!partial, "the limit's error must come from a whole parse");
    // One entry fewer instead: the back is kept, with its counts moved.
    let mut fewer = lines.clone();
    fewer[10] = "# gone".into();
    let (next, partial) = check(&old, &text(&fewer), &fp, limits);
    assert!(partial);
    // Then the comment becomes an entry: 2,000 again, within the limit, partial.
    let mut back_to_limit = fewer.clone();
    back_to_limit[1_000] = "1 * * * * root one more".into();
    let (_, partial) = check(&text(&fewer), &text(&back_to_limit), &next.unwrap(), limits);
    assert!(partial);
}

#[test]
fn small_unclean_or_unterminated_files_have_no_fingerprint() {
    let mut zones = zone;
    let small = text(&base(100));
    assert!(
        parse_tracked(&small, &mut options_with(&mut zones, Limits::SYSTEM))
            .1
            .is_none()
    );
    let mut bad = base(2_000);
    bad[3] = "bad line".into();
    assert!(
        parse_tracked(&text(&bad), &mut options_with(&mut zones, Limits::SYSTEM))
            .1
            .is_none()
    );
    let mut open = text(&base(2_000));
    open.pop();
    assert!(
        parse_tracked(&open, &mut options_with(&mut zones, Limits::SYSTEM))
            .1
            .is_none()
    );
}

mod any_edits {
    use super::*;
    use proptest::prelude::*;

    /// A line of kind `kind` (0..12 for a clean file; 12 and 13 are problems) for line index `i`.
    fn line(kind: u8, i: usize) -> String {
        match kind {
            0..=5 => format!("{} {} * * * root job{i}", i % 60, i % 24),
            6 => format!("V{}=v{i}", i % 3),
            7 => "CRON_TZ=Europe/Paris".to_string(),
            8 => "CRON_TZ=".to_string(),
            9 => format!("RANDOM_DELAY={}", i % 5),
            10 => "# a comment".to_string(),
            11 => format!("@reboot root boot{i}"),
            12 => format!("bad line {i}"),
            _ => "CRON_TZ=Nowhere/Nothing".to_string(),
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        /// Whatever the file and whatever a few edits do to it (a line replaced, inserted or
        /// removed, problems among them), the reparse gives what a whole parse gives, and so
        /// does a second edit parsed against the fingerprint the first left.
        #[test]
        fn give_what_a_whole_parse_gives(
            kinds in prop::collection::vec(0u8..12, 1_024..1_400),
            edits in prop::collection::vec((0u8..3, any::<prop::sample::Index>(), 0u8..14), 1..4),
            second in (any::<prop::sample::Index>(), 0u8..12),
        ) {
            let lines: Vec<String> = kinds.iter().enumerate().map(|(i, &k)| line(k, i)).collect();
            let old = text(&lines);
            let mut zones = zone;
            let Some(fp) = parse_tracked(&old, &mut options_with(&mut zones, Limits::SYSTEM)).1
            else {
                return Ok(());
            };
            let mut new_lines = lines.clone();
            for (op, at, kind) in edits {
                let i = at.index(new_lines.len());
                match op {
                    0 => new_lines[i] = line(kind, i),
                    1 => new_lines.insert(i, line(kind, i)),
                    _ => drop(new_lines.remove(i)),
                }
            }
            let new = text(&new_lines);
            let (next, _) = check(&old, &new, &fp, Limits::SYSTEM);
            if let Some(next) = next {
                let mut again = new_lines.clone();
                let i = second.0.index(again.len());
                again[i] = line(second.1, i + 1);
                check(&new, &text(&again), &next, Limits::SYSTEM);
            }
        }
    }
}

#[test]
fn each_chunk_counts_the_lines_that_may_be_entries() {
    // Two whole chunks and a last one of three lines: in each, every fourth line a comment,
    // and the second chunk's first line blank.
    let mut text = String::new();
    for i in 0..2 * CHUNK_LINES + 3 {
        text.push_str(match i % 4 {
            _ if i == CHUNK_LINES => " \t",
            0 => "  # a comment",
            _ => "* * * * * root x",
        });
        text.push('\n');
    }
    let Chunks {
        ranges,
        entry_lines,
        ends,
    } = chunk_ranges(text.as_bytes()).expect("a final newline");
    assert_eq!(ranges.len(), 3);
    // Each newline, in order.
    let newlines: Vec<u32> = text.match_indices('\n').map(|(at, _)| at as u32).collect();
    assert_eq!(ends, newlines);
    let whole = CHUNK_LINES as u32 * 3 / 4;
    assert_eq!(entry_lines, [whole, whole, 2]);
    let parsed: usize = ranges
        .iter()
        .map(|r| {
            let mut zones = zone;
            let mut options = options_with(&mut zones, Limits::SYSTEM);
            parse(&text.as_bytes()[r.clone()], &mut options)
                .entries
                .len()
        })
        .sum();
    assert_eq!(parsed, entry_lines.iter().sum::<u32>() as usize);
}

#[test]
fn a_cuts_lines_are_the_texts_lines_chunk_by_chunk() {
    // Lines of every length from empty to 40 bytes, over more chunks than a fingerprint needs.
    let text: String = (0..CHUNK_LINES * MIN_CHUNKS + 17)
        .map(|i| format!("{}\n", "x".repeat(i % 41)))
        .collect();
    let cut = Cut::new(text.as_bytes(), &Keys::new()).expect("enough chunks");
    let by_chunk: Vec<&[u8]> = (0..cut.chunks.ranges.len())
        .flat_map(|at| {
            let lines: Vec<&[u8]> = cut.lines(at).collect();
            assert!(lines.len() <= CHUNK_LINES);
            lines
        })
        .collect();
    let whole: Vec<&[u8]> =
        crate::crontab::split_lines(&text.as_bytes()[..text.len() - 1]).collect();
    assert_eq!(by_chunk, whole);
}
