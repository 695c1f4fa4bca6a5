//! The bytes of a history message: fields `NAME LEN\n` + `LEN` bytes + `\n`, the first named
//! `kind`. Pure.

use std::fmt;

/// Builds one message.
#[derive(Debug)]
pub(crate) struct Writer(Vec<u8>);

impl Writer {
    pub(crate) fn new(kind: &str) -> Writer {
        let mut w = Writer(Vec::with_capacity(512));
        w.bytes("kind", kind.as_bytes());
        w
    }

    pub(crate) fn bytes(&mut self, name: &str, value: &[u8]) {
        self.0.extend_from_slice(name.as_bytes());
        self.0
            .extend_from_slice(format!(" {}\n", value.len()).as_bytes());
        self.0.extend_from_slice(value);
        self.0.push(b'\n');
    }

    pub(crate) fn text(&mut self, name: &str, value: &str) {
        self.bytes(name, value.as_bytes());
    }

    pub(crate) fn number(&mut self, name: &str, value: i64) {
        self.bytes(name, value.to_string().as_bytes());
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// Why a message could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The framing is broken at this byte.
    Framing(usize),
    /// A field the message needs is not there.
    Missing(&'static str),
    /// A field's value is not what it must be.
    Bad(&'static str),
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Framing(at) => write!(f, "a message is cut or malformed at byte {at}"),
            WireError::Missing(name) => write!(f, "a message has no {name}"),
            WireError::Bad(name) => write!(f, "a message's {name} is not valid"),
        }
    }
}

impl std::error::Error for WireError {}

/// A message's fields, borrowed from its bytes; a name given twice keeps its first value.
#[derive(Debug)]
pub struct Fields<'a> {
    fields: Vec<(&'a str, &'a [u8])>,
}

impl<'a> Fields<'a> {
    /// Splits a message into its fields.
    pub fn parse(message: &'a [u8]) -> Result<Fields<'a>, WireError> {
        let mut fields = Vec::new();
        let mut at = 0;
        while at < message.len() {
            let rest = &message[at..];
            let newline = rest
                .iter()
                .take(64)
                .position(|&b| b == b'\n')
                .ok_or(WireError::Framing(at))?;
            let header =
                std::str::from_utf8(&rest[..newline]).map_err(|_| WireError::Framing(at))?;
            let (name, len) = header.split_once(' ').ok_or(WireError::Framing(at))?;
            let len: usize = len.parse().map_err(|_| WireError::Framing(at))?;
            let start = newline + 1;
            let end = start.checked_add(len).ok_or(WireError::Framing(at))?;
            if rest.len() < end + 1 || rest[end] != b'\n' || name.is_empty() {
                return Err(WireError::Framing(at));
            }
            fields.push((name, &rest[start..end]));
            at += end + 1;
        }
        Ok(Fields { fields })
    }

    /// The message's kind (`outcome`, `query`, `log`).
    pub fn kind(&self) -> Option<&'a [u8]> {
        self.get("kind")
    }

    pub fn get(&self, name: &str) -> Option<&'a [u8]> {
        self.fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| *v)
    }

    /// A field as text (`None`: not there); not UTF-8 is an error.
    pub fn text(&self, name: &'static str) -> Result<Option<String>, WireError> {
        self.get(name)
            .map(|v| {
                std::str::from_utf8(v)
                    .map(str::to_string)
                    .map_err(|_| WireError::Bad(name))
            })
            .transpose()
    }

    /// A field as a whole number (`None`: not there).
    pub fn number(&self, name: &'static str) -> Result<Option<i64>, WireError> {
        self.get(name)
            .map(|v| {
                std::str::from_utf8(v)
                    .ok()
                    .and_then(|t| t.parse().ok())
                    .ok_or(WireError::Bad(name))
            })
            .transpose()
    }
}
