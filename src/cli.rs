//! What the command lines share (`daemon::cli`, and cronctl's in its own package): reading an
//! option's value.
//!
//! Pure: argv in, values or errors out.

#![forbid(unsafe_code)]

/// The next value of `parser`, a number from `low` to `high` (both included); anything else is
/// lexopt's `UnexpectedValue` for `"{option}, {low} to {high}"`.
pub fn in_range(
    parser: &mut lexopt::Parser,
    option: &str,
    low: u32,
    high: u32,
) -> Result<u32, lexopt::Error> {
    let v = parser.value()?;
    v.to_str()
        .and_then(|t| t.parse().ok())
        .filter(|n| (low..=high).contains(n))
        .ok_or_else(|| lexopt::Error::UnexpectedValue {
            option: format!("{option}, {low} to {high}"),
            value: v.clone(),
        })
}
