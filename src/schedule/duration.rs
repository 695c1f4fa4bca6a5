//! Durations as crontabs write them (`CRON_TIMEOUT=90s`, `@every 1h30m`): one or more `NUMBER
//! UNIT` parts with units `s`, `m`, `h`, `d`, or a bare number of seconds; from 1 s to
//! [`MAX_DURATION_S`].
//!
//! Pure: text in, seconds out.

use std::fmt;

/// The longest duration written in a crontab: 366 days (a longer one is a mistake).
pub const MAX_DURATION_S: u32 = 366 * 86_400;

/// Seconds, shown the way they are written: `90s`, `2h`, `1h30m`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Duration(pub u32);

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut left = self.0;
        if left == 0 {
            return f.write_str("0s");
        }
        for (unit, size) in [("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)] {
            if left >= size {
                write!(f, "{}{unit}", left / size)?;
                left %= size;
            }
        }
        Ok(())
    }
}

/// `90s`, `2h`, `1h30m`, `45` (seconds): from 1 s to [`MAX_DURATION_S`].
pub fn parse_duration(text: &str) -> Result<u32, DurationError> {
    let bad = || DurationError::NotDuration(text.to_string());
    if text.is_empty() {
        return Err(bad());
    }
    if let Ok(seconds) = text.parse::<u64>() {
        return within(seconds, text);
    }
    let mut total: u64 = 0;
    let mut rest = text;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 || digits > 9 {
            return Err(bad());
        }
        let number: u64 = rest[..digits].parse().map_err(|_| bad())?;
        let size = match rest.as_bytes().get(digits) {
            Some(b's') => 1,
            Some(b'm') => 60,
            Some(b'h') => 3_600,
            Some(b'd') => 86_400,
            _ => return Err(bad()),
        };
        total = total.saturating_add(number.saturating_mul(size));
        rest = &rest[digits + 1..];
    }
    within(total, text)
}

fn within(seconds: u64, text: &str) -> Result<u32, DurationError> {
    match u32::try_from(seconds) {
        Ok(s @ 1..=MAX_DURATION_S) => Ok(s),
        Ok(0) => Err(DurationError::Zero(text.to_string())),
        _ => Err(DurationError::TooLong(text.to_string())),
    }
}

/// Why a text is not a duration: each names the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DurationError {
    NotDuration(String),
    Zero(String),
    /// Over [`MAX_DURATION_S`].
    TooLong(String),
}

impl fmt::Display for DurationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DurationError::NotDuration(text) => write!(
                f,
                "'{}' is not a duration (NUMBER then s, m, h or d, e.g. 90s, 2h, 1h30m)",
                text.escape_debug()
            ),
            DurationError::Zero(text) => write!(f, "'{}' is zero", text.escape_debug()),
            DurationError::TooLong(text) => write!(
                f,
                "'{}' is longer than {}",
                text.escape_debug(),
                Duration(MAX_DURATION_S)
            ),
        }
    }
}

impl std::error::Error for DurationError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_numbers_with_units_or_bare_seconds() {
        assert_eq!(parse_duration("90s"), Ok(90));
        assert_eq!(parse_duration("2h"), Ok(7_200));
        assert_eq!(parse_duration("1h30m"), Ok(5_400));
        assert_eq!(parse_duration("1d2h3m4s"), Ok(93_784));
        assert_eq!(parse_duration("45"), Ok(45));
        assert_eq!(parse_duration("366d"), Ok(MAX_DURATION_S));
        for bad in ["", "s", "1x", "1 h", "-5s", "1.5h", "h1", "90S", "1h30"] {
            assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
        }
        assert!(
            parse_duration("0s")
                .unwrap_err()
                .to_string()
                .contains("zero")
        );
        assert!(
            parse_duration("367d")
                .unwrap_err()
                .to_string()
                .contains("longer than 366d")
        );
        assert!(parse_duration("99999999999999999999s").is_err());
    }

    #[test]
    fn durations_are_shown_as_they_are_written() {
        assert_eq!(Duration(90).to_string(), "1m30s");
        assert_eq!(Duration(7_200).to_string(), "2h");
        assert_eq!(Duration(93_784).to_string(), "1d2h3m4s");
    }
}
