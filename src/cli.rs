//! What the command lines share (`daemon::cli`, and cronctl's in its own package): reading an
//! option's value, and saying what is wrong with it.
//!
//! Pure: argv in, values or errors out.

#![forbid(unsafe_code)]

use std::fmt;

/// A number option's value that is not a number, or not in its range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberError {
    /// The option as written, `-L` or `--stop-timeout`.
    pub option: &'static str,
    /// The value as given (lossily, when it is not UTF-8).
    pub value: String,
    pub low: u32,
    pub high: u32,
    /// What the number counts (`seconds`), or empty.
    pub unit: &'static str,
}

impl fmt::Display for NumberError {
    /// `-L: 'abc' is not a whole number (0 or more)`, `--stop-timeout: 5000 is out of range (0 to 3600
    /// seconds)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (option, value, low, high) = (self.option, &self.value, self.low, self.high);
        let unit = if self.unit.is_empty() {
            String::new()
        } else {
            format!(" {}", self.unit)
        };
        let digits = value.strip_prefix('-').unwrap_or(value);
        if high == u32::MAX {
            write!(f, "{option}: '{value}' is not a whole number (0 or more)")
        } else if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            write!(
                f,
                "{option}: {value} is out of range ({low} to {high}{unit})"
            )
        } else {
            write!(
                f,
                "{option}: '{value}' is not a number ({low} to {high}{unit})"
            )
        }
    }
}

impl std::error::Error for NumberError {}

/// The next value of `parser`, a number from `low` to `high` (both included) of `unit`s (or
/// `""`); a missing value is lexopt's error, a wrong one a [`NumberError`] in lexopt's
/// `Custom`.
pub fn in_range(
    parser: &mut lexopt::Parser,
    option: &'static str,
    (low, high): (u32, u32),
    unit: &'static str,
) -> Result<u32, lexopt::Error> {
    let v = parser.value()?;
    let number = v.to_str().and_then(|t| t.parse().ok());
    number.filter(|n| (low..=high).contains(n)).ok_or_else(|| {
        lexopt::Error::Custom(Box::new(NumberError {
            option,
            value: v.to_string_lossy().into_owned(),
            low,
            high,
            unit,
        }))
    })
}

/// lexopt's errors in the words of the other messages: `-x: unknown option`, `--log needs a
/// value`, `unexpected argument 'x'`, `--log: 'x' is not valid (syslog, stderr or both)`.
pub fn args_error(e: &lexopt::Error) -> String {
    use lexopt::Error as E;
    match e {
        E::MissingValue {
            option: Some(option),
        } => format!("{option} needs a value"),
        E::MissingValue { option: None } => "a value is missing".into(),
        E::UnexpectedOption(option) => format!("{option}: unknown option"),
        E::UnexpectedArgument(value) => {
            format!("unexpected argument '{}'", value.to_string_lossy())
        }
        // The parsers write `--log (syslog, stderr or both)`: the option, then what it takes.
        E::UnexpectedValue { option, value } => {
            let value = value.to_string_lossy();
            match option.split_once(" (") {
                Some((name, takes)) => format!("{name}: '{value}' is not valid ({takes}"),
                None => format!("{option}: '{value}' is not valid"),
            }
        }
        E::NonUnicodeValue(value) => {
            format!("'{}' is not UTF-8", value.to_string_lossy())
        }
        E::ParsingFailed { value, error } => format!("'{value}': {error}"),
        E::Custom(e) => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(value: &str) -> Result<u32, String> {
        let mut parser = lexopt::Parser::from_args(["--stop-timeout", value]);
        parser.next().unwrap();
        in_range(&mut parser, "--stop-timeout", (0, 3600), "seconds").map_err(|e| e.to_string())
    }

    #[test]
    fn lexopts_errors_name_the_option_and_what_it_takes() {
        let value = lexopt::Error::UnexpectedValue {
            option: "--log (syslog, stderr or both)".into(),
            value: "disk".into(),
        };
        assert_eq!(
            args_error(&value),
            "--log: 'disk' is not valid (syslog, stderr or both)"
        );
        let missing = lexopt::Error::MissingValue {
            option: Some("--log".into()),
        };
        assert_eq!(args_error(&missing), "--log needs a value");
        let unknown = lexopt::Error::UnexpectedOption("--frobnicate".into());
        assert_eq!(args_error(&unknown), "--frobnicate: unknown option");
    }

    #[test]
    fn a_number_out_of_range_or_not_a_number_names_the_option_and_the_range() {
        assert_eq!(read("3600"), Ok(3600));
        assert_eq!(
            read("5000").unwrap_err(),
            "--stop-timeout: 5000 is out of range (0 to 3600 seconds)"
        );
        assert_eq!(
            read("abc").unwrap_err(),
            "--stop-timeout: 'abc' is not a number (0 to 3600 seconds)"
        );
        assert_eq!(
            read("-1").unwrap_err(),
            "--stop-timeout: -1 is out of range (0 to 3600 seconds)"
        );
    }
}
