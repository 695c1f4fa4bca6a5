//! A file's entries' text in one allocation, as the parser writes it and the daemon keeps it:
//! for each entry its time fields as written (each run of blanks one space, at most
//! [`MAX_SCHEDULE_TEXT`] bytes), their length (1 byte), its line number (4 bytes,
//! little-endian), then its command. An entry holds where its command is ([`Span`]) and finds
//! its line and its schedule just before it: no allocation of its own, and the daemon takes the
//! parser's text as it is instead of copying each command again.
//!
//! Pure: bytes in, bytes out.

/// Where an entry's command sits in the packed text. A file is at most 64 MiB, so offsets fit
/// in u32.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub start: u32,
    pub len: u32,
}

/// The most bytes of an entry's time fields kept as written; longer ones (a list of every
/// minute spelt out) are kept cut, and shown ending `...`.
pub const MAX_SCHEDULE_TEXT: usize = 255;

/// Bytes an entry costs in the packed text besides its schedule and its command.
pub const OVERHEAD: usize = 5;

/// Appends an entry: `fields` are its time fields as written (blanks between them made one
/// space here), `command` its command.
pub fn push(text: &mut Vec<u8>, line: u32, fields: &[u8], command: &[u8]) -> Span {
    push_fields(text, line, fields, single_spaced(fields), command)
}

/// [`push`], told whether one space, and nothing else, already separates each field from the
/// next (the parser saw it as it read them).
pub fn push_fields(
    text: &mut Vec<u8>,
    line: u32,
    fields: &[u8],
    single_spaced: bool,
    command: &[u8],
) -> Span {
    let from = text.len();
    // Most files separate their fields with single spaces already: one copy then.
    if single_spaced {
        text.extend_from_slice(&fields[..fields.len().min(MAX_SCHEDULE_TEXT)]);
    } else {
        for field in fields
            .split(|b| matches!(b, b' ' | b'\t'))
            .filter(|f| !f.is_empty())
        {
            if text.len() > from {
                text.push(b' ');
            }
            text.extend_from_slice(field);
        }
        text.truncate(from + (text.len() - from).min(MAX_SCHEDULE_TEXT));
    }
    text.push((text.len() - from) as u8);
    text.extend_from_slice(&line.to_le_bytes());
    let span = Span {
        start: text.len() as u32,
        len: command.len() as u32,
    };
    text.extend_from_slice(command);
    span
}

/// Whether `fields` has no tab and no two spaces in a row (a short text: one pass, no search
/// set up).
fn single_spaced(fields: &[u8]) -> bool {
    let mut after_space = false;
    for &b in fields {
        if b == b'\t' || (b == b' ' && after_space) {
            return false;
        }
        after_space = b == b' ';
    }
    true
}

/// The command at `span`.
pub fn command(text: &[u8], span: Span) -> &[u8] {
    let start = span.start as usize;
    &text[start..start + span.len as usize]
}

/// The line number of the entry whose command is at `span` (0 when not known).
pub fn line(text: &[u8], span: Span) -> u32 {
    let start = span.start as usize;
    start
        .checked_sub(4)
        .and_then(|at| text.get(at..start))
        .and_then(|b| b.try_into().ok())
        .map_or(0, u32::from_le_bytes)
}

/// The time fields as written of the entry whose command is at `span` (empty when not known).
pub fn schedule_text(text: &[u8], span: Span) -> &[u8] {
    let Some(len_at) = (span.start as usize).checked_sub(OVERHEAD) else {
        return b"";
    };
    let len = usize::from(text[len_at]);
    len_at
        .checked_sub(len)
        .and_then(|from| text.get(from..len_at))
        .unwrap_or(b"")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_entry_finds_its_command_line_and_schedule_in_the_one_text() {
        let long = [b'1'; 300];
        let mut text = Vec::new();
        let spans = [
            push(&mut text, 3, b"@daily", b"echo a"),
            push(&mut text, 70_000, b"", b""),
            push(&mut text, 70_001, &long, b"echo %c"),
            push(&mut text, 9, b"*/5\t*  * * mon-fri", b"x"),
        ];
        assert_eq!(
            text.len(),
            4 * OVERHEAD + 6 + 6 + MAX_SCHEDULE_TEXT + 7 + 17 + 1
        );
        let seen: Vec<(&[u8], u32, &[u8])> = spans
            .iter()
            .map(|&s| (command(&text, s), line(&text, s), schedule_text(&text, s)))
            .collect();
        assert_eq!(
            seen,
            [
                (&b"echo a"[..], 3, &b"@daily"[..]),
                (b"", 70_000, b""),
                (b"echo %c", 70_001, &long[..MAX_SCHEDULE_TEXT]),
                (b"x", 9, b"*/5 * * * mon-fri"),
            ]
        );
    }

    #[test]
    fn blanks_between_fields_past_the_cap_are_cut_at_the_cap() {
        let fields: Vec<u8> = std::iter::repeat_n(&b"1,2\t\t"[..], 100)
            .flatten()
            .copied()
            .collect();
        let mut text = Vec::new();
        let span = push(&mut text, 1, &fields, b"c");
        let kept = schedule_text(&text, span);
        assert_eq!(kept.len(), MAX_SCHEDULE_TEXT);
        assert!(kept.starts_with(b"1,2 1,2 1,2"));
        assert!(!kept.contains(&b'\t'));
        assert_eq!(command(&text, span), b"c");
    }
}
