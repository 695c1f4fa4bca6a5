//! Values as text, both ways: the helper's interface ([`crate::conn`]) speaks text, and
//! tokio-postgres speaks binary for results.
//!
//! - Parameters go in text format with their type left for the server to infer (as `psql`
//!   sends them): [`TextParam`] with [`unspecified`].
//! - Result values come back in binary format (tokio-postgres asks for that); [`Cell`] spells
//!   the common types as PostgreSQL's own text output does. Other types are an error that says
//!   to cast the column to text in the SQL (which the cluster statements do).

use std::error::Error;
use std::fmt::{self, Write as _};

use bytes::BytesMut;
use tokio_postgres::types::{Format, FromSql, IsNull, Kind, ToSql, Type, to_sql_checked};

/// A parameter: text, or NULL.
#[derive(Debug, Clone, Copy)]
pub struct TextParam<'a>(pub Option<&'a str>);

impl ToSql for TextParam<'_> {
    fn to_sql(&self, _: &Type, out: &mut BytesMut) -> Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self.0 {
            Some(text) => {
                out.extend_from_slice(text.as_bytes());
                Ok(IsNull::No)
            }
            None => Ok(IsNull::Yes),
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, _: &Type) -> Format {
        Format::Text
    }

    to_sql_checked!();
}

/// The parameter type "unspecified" (OID 0): the server infers it from the SQL (`$1::bigint`).
pub fn unspecified() -> Type {
    Type::new(String::new(), 0, Kind::Pseudo, String::new())
}

/// A result value as text, `None` for NULL.
#[derive(Debug)]
pub struct Cell(pub Option<String>);

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Cell, Box<dyn Error + Sync + Send>> {
        Ok(Cell(Some(to_text(ty, raw)?)))
    }

    fn from_sql_null(_: &Type) -> Result<Cell, Box<dyn Error + Sync + Send>> {
        Ok(Cell(None))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// Why a value could not be read as text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ValueError {
    NotUtf8,
    UnknownJsonb,
    /// A value of the named type whose length is not the type's.
    Length {
        ty: String,
        len: usize,
    },
    /// A NUMERIC whose digits, weight, sign or scale are out of bounds.
    Numeric,
    /// A value of the named type that is not well formed.
    Malformed(String),
    /// The named type, which this client does not spell.
    Unread(String),
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::NotUtf8 => f.write_str("the server sent a value that is not UTF-8"),
            ValueError::UnknownJsonb => f.write_str("a jsonb value in an unknown format"),
            ValueError::Length { ty, len } => write!(f, "a {ty} value of {len} bytes"),
            ValueError::Numeric => f.write_str("a malformed numeric value"),
            ValueError::Malformed(ty) => write!(f, "a malformed {ty} value"),
            ValueError::Unread(ty) => write!(
                f,
                "a column of type {ty} is not read as text by this client: cast it (::text) in \
                 the SQL"
            ),
        }
    }
}

impl Error for ValueError {}

fn utf8(raw: &[u8]) -> Result<String, ValueError> {
    String::from_utf8(raw.to_vec()).map_err(|_| ValueError::NotUtf8)
}

fn fixed<const N: usize>(ty: &Type, raw: &[u8]) -> Result<[u8; N], ValueError> {
    raw.try_into().map_err(|_| ValueError::Length {
        ty: ty.name().to_string(),
        len: raw.len(),
    })
}

/// One binary value as PostgreSQL's text output spells it.
pub fn to_text(ty: &Type, raw: &[u8]) -> Result<String, ValueError> {
    Ok(match *ty {
        Type::TEXT
        | Type::VARCHAR
        | Type::BPCHAR
        | Type::NAME
        | Type::UNKNOWN
        | Type::JSON
        | Type::XML => utf8(raw)?,
        Type::JSONB => match raw.split_first() {
            Some((1, text)) => utf8(text)?,
            _ => return Err(ValueError::UnknownJsonb),
        },
        Type::CHAR => utf8(raw)?,
        Type::BOOL => match raw {
            [0] => "f".into(),
            [_] => "t".into(),
            _ => {
                return Err(ValueError::Length {
                    ty: "bool".into(),
                    len: raw.len(),
                });
            }
        },
        Type::INT2 => i16::from_be_bytes(fixed(ty, raw)?).to_string(),
        Type::INT4 => i32::from_be_bytes(fixed(ty, raw)?).to_string(),
        Type::INT8 => i64::from_be_bytes(fixed(ty, raw)?).to_string(),
        Type::OID | Type::XID | Type::CID | Type::REGCLASS | Type::REGTYPE | Type::REGPROC => {
            u32::from_be_bytes(fixed(ty, raw)?).to_string()
        }
        Type::FLOAT4 => float(f64::from(f32::from_be_bytes(fixed(ty, raw)?))),
        Type::FLOAT8 => float(f64::from_be_bytes(fixed(ty, raw)?)),
        Type::NUMERIC => numeric(raw)?,
        Type::UUID => {
            let b: [u8; 16] = fixed(ty, raw)?;
            let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
            format!(
                "{}-{}-{}-{}-{}",
                &hex[..8],
                &hex[8..12],
                &hex[12..16],
                &hex[16..20],
                &hex[20..]
            )
        }
        Type::BYTEA => {
            let mut s = String::with_capacity(2 + raw.len() * 2);
            s.push_str("\\x");
            for b in raw {
                let _ = write!(s, "{b:02x}");
            }
            s
        }
        Type::INET | Type::CIDR => inet(ty, raw)?,
        _ => return Err(ValueError::Unread(ty.name().to_string())),
    })
}

fn float(x: f64) -> String {
    if x.is_nan() {
        "NaN".into()
    } else if x.is_infinite() {
        if x > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        x.to_string()
    }
}

/// NUMERIC's binary form: digit count, weight (of the first base-10000 digit), sign, display
/// scale, then the digits.
fn numeric(raw: &[u8]) -> Result<String, ValueError> {
    let bad = || ValueError::Numeric;
    let word = |i: usize| -> Result<u16, ValueError> {
        raw.get(i..i + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(bad)
    };
    let ndigits = usize::from(word(0)?);
    let weight = i64::from(word(2)? as i16);
    let sign = word(4)?;
    let dscale = usize::from(word(6)?);
    if raw.len() != 8 + 2 * ndigits || dscale > 0x3fff {
        return Err(bad());
    }
    match sign {
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        0x0000 | 0x4000 => {}
        _ => return Err(bad()),
    }
    let digits: Vec<u16> = (0..ndigits)
        .map(|i| word(8 + 2 * i))
        .collect::<Result<_, _>>()?;
    if digits.iter().any(|d| *d > 9999) || weight.unsigned_abs() > 0x7fff {
        return Err(bad());
    }
    let digit = |i: i64| -> u16 {
        usize::try_from(i)
            .ok()
            .and_then(|i| digits.get(i).copied())
            .unwrap_or(0)
    };
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    if weight < 0 {
        s.push('0');
    } else {
        for i in 0..=weight {
            if i == 0 {
                let _ = write!(s, "{}", digit(i));
            } else {
                let _ = write!(s, "{:04}", digit(i));
            }
        }
    }
    if dscale > 0 {
        s.push('.');
        let mut frac = String::new();
        let mut i = weight + 1;
        while frac.len() < dscale {
            let _ = write!(frac, "{:04}", digit(i));
            i += 1;
        }
        frac.truncate(dscale);
        s.push_str(&frac);
    }
    Ok(s)
}

/// INET and CIDR: family, bits, is-cidr flag, address length, address. An inet host address
/// (all bits) is shown without its prefix length, as PostgreSQL does.
fn inet(ty: &Type, raw: &[u8]) -> Result<String, ValueError> {
    let bad = || ValueError::Malformed(ty.name().to_string());
    let [family, bits, _, len, addr @ ..] = raw else {
        return Err(bad());
    };
    let (text, max) = match (family, len, addr.len()) {
        (2, 4, 4) => (
            std::net::Ipv4Addr::new(addr[0], addr[1], addr[2], addr[3]).to_string(),
            32,
        ),
        (3, 16, 16) => {
            let b: [u8; 16] = addr.try_into().map_err(|_| bad())?;
            (std::net::Ipv6Addr::from(b).to_string(), 128)
        }
        _ => return Err(bad()),
    };
    Ok(if *ty == Type::INET && *bits == max {
        text
    } else {
        format!("{text}/{bits}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(ndigits: u16, weight: i16, sign: u16, dscale: u16, digits: &[u16]) -> Vec<u8> {
        let mut v = Vec::new();
        for w in [ndigits, weight as u16, sign, dscale] {
            v.extend_from_slice(&w.to_be_bytes());
        }
        for d in digits {
            v.extend_from_slice(&d.to_be_bytes());
        }
        v
    }

    #[test]
    fn numerics_read_as_postgres_prints_them() {
        let t = |raw: Vec<u8>| to_text(&Type::NUMERIC, &raw).expect("numeric");
        assert_eq!(t(num(3, 2, 0, 0, &[9, 0, 1])), "900000001");
        assert_eq!(t(num(0, 0, 0, 0, &[])), "0");
        assert_eq!(t(num(2, 0, 0x4000, 2, &[12, 3400])), "-12.34");
        assert_eq!(t(num(1, -1, 0, 5, &[50])), "0.00500");
        assert_eq!(t(num(0, 0, 0, 3, &[])), "0.000");
        assert_eq!(t(num(0, 0, 0xC000, 0, &[])), "NaN");
        assert!(to_text(&Type::NUMERIC, &[0, 1]).is_err());
        assert!(to_text(&Type::NUMERIC, &num(1, 0, 0, 0, &[10000])).is_err());
    }

    #[test]
    fn scalars_read_as_postgres_prints_them() {
        assert_eq!(to_text(&Type::BOOL, &[1]).unwrap(), "t");
        assert_eq!(to_text(&Type::INT8, &(-5i64).to_be_bytes()).unwrap(), "-5");
        assert_eq!(
            to_text(&Type::FLOAT8, &1.5f64.to_be_bytes()).unwrap(),
            "1.5"
        );
        assert_eq!(
            to_text(&Type::INET, &[2, 32, 0, 4, 127, 0, 0, 1]).unwrap(),
            "127.0.0.1"
        );
        assert_eq!(
            to_text(&Type::CIDR, &[2, 8, 1, 4, 10, 0, 0, 0]).unwrap(),
            "10.0.0.0/8"
        );
        assert_eq!(to_text(&Type::BYTEA, &[0xde, 0xad]).unwrap(), "\\xdead");
        assert!(to_text(&Type::INT4, &[0, 1]).is_err());
        assert!(to_text(&Type::TEXT, &[0xff]).is_err());
        let e = to_text(&Type::TIMESTAMPTZ, &[0; 8])
            .unwrap_err()
            .to_string();
        assert!(e.contains("timestamptz") && e.contains("::text"), "{e}");
    }
}
