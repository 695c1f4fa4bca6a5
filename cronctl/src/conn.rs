//! What `cronctl` and its helper need of a PostgreSQL connection, as a trait: the real client
//! ([`crate::client`]) is one implementation, and the helper's unit tests drive its logic with a
//! fake.

use std::fmt;

use crond::cluster::conninfo::ConnInfo;

/// What a statement returned.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rows {
    /// The result columns' names (empty for a statement that returns no rows).
    pub columns: Vec<String>,
    /// Each row's values as text, `None` for NULL; as many per row as there are columns.
    pub rows: Vec<Vec<Option<String>>>,
    /// The count in the command tag: rows inserted, updated, deleted or selected.
    pub affected: u64,
}

/// Why a call failed: one line of text, whether the connection is gone, and the server's
/// SQLSTATE when the server said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DbError {
    pub text: String,
    /// The connection is unusable: the caller must connect again.
    pub lost: bool,
    /// The SQLSTATE of a server error (`23505` for a unique violation).
    pub code: Option<String>,
}

impl DbError {
    /// An error that leaves the connection usable.
    pub fn new(text: impl Into<String>) -> DbError {
        DbError {
            text: text.into(),
            lost: false,
            code: None,
        }
    }

    /// An error after which the caller must connect again.
    pub fn lost(text: impl Into<String>) -> DbError {
        DbError {
            text: text.into(),
            lost: true,
            code: None,
        }
    }

    pub fn is_connection_lost(&self) -> bool {
        self.lost
    }
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for DbError {}

/// A session with the database. Every call is bounded in time and in what it keeps in memory.
pub trait Connection {
    /// Runs one statement with text parameters (`None` is NULL) and returns its rows as text.
    fn query(&mut self, sql: &str, params: &[Option<&str>]) -> Result<Rows, DbError>;
    /// Runs statements separated by `;`, without parameters, stopping at the first error.
    fn batch(&mut self, sql: &str) -> Result<(), DbError>;
    /// Ends the session politely.
    fn close(self: Box<Self>);
}

/// Makes connections: the real client, or a fake.
pub trait Connect {
    /// Logs in as `info` says, to the first of its servers that fits; `passwords[i]` is the
    /// i-th server's password from the passfile (if any).
    fn connect(
        &self,
        info: &ConnInfo,
        passwords: &[Option<String>],
    ) -> Result<Box<dyn Connection>, String>;
}
