//! A question to the history writer, sent by the daemon with the asking client's connection:
//! what is asked (`cronctl history`, `cronctl logs`, the last outcomes of `cronctl show`), and
//! who asks, as the daemon checked it. Pure.

use super::wire::{self, Fields, WireError};

/// The most outcomes one `history` answer lists.
pub const MAX_LISTED: u32 = 10_000;

/// What `cronctl history` lists by default.
pub const DEFAULT_LISTED: u32 = 100;

/// What is asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// `cronctl history`: outcomes, newest first.
    History {
        /// One entry: its whole id, or (for an entry no longer loaded) a prefix of 4 or more
        /// hex digits. `None`: every entry the asker may see.
        entry: Option<String>,
        /// Only this user's entries (`--user`).
        user: Option<String>,
        /// Only failures ([`super::Outcome::failed`]).
        failed: bool,
        /// Only outcomes at or after this time, in Unix milliseconds (`--since`).
        since_ms: Option<i64>,
        /// At most this many (at most [`MAX_LISTED`]).
        limit: u32,
    },
    /// `cronctl logs ENTRY [RUN]`: the kept output of one run.
    Logs {
        entry: String,
        /// The run's number as `history` shows it; `None`: the entry's last run that ran.
        run: Option<i64>,
        /// `--raw`: the bytes as they are; else control bytes are spelled out.
        raw: bool,
    },
}

/// One question, with what the daemon knows of who asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Query {
    pub asked: Asked,
    /// One JSON object per line instead of a table.
    pub json: bool,
    /// `--wide`: the table has every column, nothing cut.
    pub wide: bool,
    /// The asker may see every outcome (root).
    pub all: bool,
    /// The asker's uid: they see the outcomes whose `owner_uid` is theirs...
    pub uid: u32,
    /// ... and those of system lines (no `owner_uid`) whose user is this name (the name passwd
    /// gives their uid, when it gives the uid back).
    pub name: Option<String>,
    /// The daemon's clock when asked, in Unix milliseconds.
    pub now_ms: i64,
    /// The zone times are shown in (the daemon's local zone, an IANA name or a TZ string).
    pub zone: String,
    /// The most bytes the answer may have (the control socket's bound for the asker).
    pub max_answer: u64,
}

impl Query {
    pub fn encode(&self) -> Vec<u8> {
        let mut m = wire::Writer::new("query");
        match &self.asked {
            Asked::History {
                entry,
                user,
                failed,
                since_ms,
                limit,
            } => {
                m.text("asked", "history");
                if let Some(entry) = entry {
                    m.text("entry", entry);
                }
                if let Some(user) = user {
                    m.text("user", user);
                }
                if *failed {
                    m.number("failed", 1);
                }
                if let Some(since) = since_ms {
                    m.number("since_ms", *since);
                }
                m.number("limit", i64::from(*limit));
            }
            Asked::Logs { entry, run, raw } => {
                m.text("asked", "logs");
                m.text("entry", entry);
                if let Some(run) = run {
                    m.number("run", *run);
                }
                if *raw {
                    m.number("raw", 1);
                }
            }
        }
        for (flag, name) in [(self.json, "json"), (self.wide, "wide"), (self.all, "all")] {
            if flag {
                m.number(name, 1);
            }
        }
        m.number("uid", i64::from(self.uid));
        if let Some(name) = &self.name {
            m.text("name", name);
        }
        m.number("now_ms", self.now_ms);
        m.text("zone", &self.zone);
        m.number("max_answer", self.max_answer as i64);
        m.finish()
    }

    pub fn decode(fields: &Fields<'_>) -> Result<Query, WireError> {
        let flag = |name| -> Result<bool, WireError> { Ok(fields.number(name)? == Some(1)) };
        let asked = match fields.text("asked")?.as_deref() {
            Some("history") => Asked::History {
                entry: fields.text("entry")?,
                user: fields.text("user")?,
                failed: flag("failed")?,
                since_ms: fields.number("since_ms")?,
                limit: fields
                    .number("limit")?
                    .unwrap_or(i64::from(DEFAULT_LISTED))
                    .clamp(1, i64::from(MAX_LISTED)) as u32,
            },
            Some("logs") => Asked::Logs {
                entry: fields.text("entry")?.ok_or(WireError::Missing("entry"))?,
                run: fields.number("run")?,
                raw: flag("raw")?,
            },
            _ => return Err(WireError::Bad("asked")),
        };
        Ok(Query {
            asked,
            json: flag("json")?,
            wide: flag("wide")?,
            all: flag("all")?,
            uid: u32::try_from(fields.number("uid")?.ok_or(WireError::Missing("uid"))?)
                .map_err(|_| WireError::Bad("uid"))?,
            name: fields.text("name")?,
            now_ms: fields
                .number("now_ms")?
                .ok_or(WireError::Missing("now_ms"))?,
            zone: fields.text("zone")?.unwrap_or_default(),
            max_answer: fields.number("max_answer")?.unwrap_or(1 << 20).max(0) as u64,
        })
    }

    /// Whether the asker may read an outcome of `user` whose crontab was checked for
    /// `owner_uid` (as `control::may_see` decides for `cronctl list`).
    pub fn may_see(&self, user: &str, owner_uid: Option<u32>) -> bool {
        if self.all {
            return true;
        }
        match owner_uid {
            Some(uid) => uid == self.uid,
            None => self.name.as_deref() == Some(user),
        }
    }
}
