//! Read and write concerns (read-write-concern.md).

use std::fmt;
use std::time::Duration;

use typed_builder::TypedBuilder;

use super::OptionsError;

/// The `w` field of a write concern: how many members must acknowledge a write.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Acknowledgment {
    /// A number of members; 0 means unacknowledged.
    Nodes(u32),
    /// A majority of voting members.
    Majority,
    /// A custom write concern name defined by the replica set's tags.
    Custom(String),
}

impl Acknowledgment {
    /// Reads `w` as written in a connection string: a non-negative integer, `majority`, or any
    /// other string (a custom tag set name). Returns `None` for a negative or oversized integer.
    pub fn parse(value: &str) -> Option<Self> {
        if let Ok(n) = value.parse::<i64>() {
            return u32::try_from(n).ok().map(Acknowledgment::Nodes);
        }
        if value == "majority" {
            return Some(Acknowledgment::Majority);
        }
        Some(Acknowledgment::Custom(value.to_string()))
    }
}

impl From<u32> for Acknowledgment {
    fn from(nodes: u32) -> Self {
        Acknowledgment::Nodes(nodes)
    }
}

impl From<&str> for Acknowledgment {
    /// `"majority"` is [`Acknowledgment::Majority`]; any other name is a custom tag set's.
    fn from(name: &str) -> Self {
        Acknowledgment::from(name.to_string())
    }
}

impl From<String> for Acknowledgment {
    /// `"majority"` is [`Acknowledgment::Majority`]; any other name is a custom tag set's.
    fn from(name: String) -> Self {
        if name == "majority" {
            Acknowledgment::Majority
        } else {
            Acknowledgment::Custom(name)
        }
    }
}

impl fmt::Display for Acknowledgment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Acknowledgment::Nodes(n) => write!(f, "{n}"),
            Acknowledgment::Majority => f.write_str("majority"),
            Acknowledgment::Custom(name) => f.write_str(name),
        }
    }
}

/// A write concern. Every field is optional: an empty write concern means "the server's
/// default", which is not the same as `{w: 1}`.
///
/// Built with [`WriteConcern::majority`], [`WriteConcern::nodes`], [`WriteConcern::custom`] or
/// field by field with `WriteConcern::builder().w(Acknowledgment::Majority).journal(true).build()`.
#[derive(Clone, Debug, PartialEq, Eq, Default, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct WriteConcern {
    /// The `w` field.
    pub w: Option<Acknowledgment>,
    /// The `wtimeout` field (deprecated in favour of timeoutMS); zero means no limit.
    pub w_timeout: Option<Duration>,
    /// The `j` field: wait for the journal.
    pub journal: Option<bool>,
}

impl WriteConcern {
    /// `{ w: <nodes> }`: the write is acknowledged once `nodes` members have it (0: not at all).
    pub fn nodes(nodes: u32) -> Self {
        Acknowledgment::Nodes(nodes).into()
    }

    /// `{ w: "majority" }`: the write is acknowledged once a majority of voting members have it.
    pub fn majority() -> Self {
        Acknowledgment::Majority.into()
    }

    /// `{ w: <name> }` for a write concern the replica set defines by tags (`"majority"` is the
    /// same as [`WriteConcern::majority`]).
    pub fn custom(name: impl AsRef<str>) -> Self {
        Acknowledgment::from(name.as_ref()).into()
    }

    /// Whether no field is set (the server default applies and nothing is sent).
    pub fn is_empty(&self) -> bool {
        self.w.is_none() && self.w_timeout.is_none() && self.journal.is_none()
    }

    /// Whether writes with this concern are unacknowledged (`w: 0` without `j: true`).
    pub fn is_unacknowledged(&self) -> bool {
        self.w == Some(Acknowledgment::Nodes(0)) && self.journal != Some(true)
    }

    /// Checks the one inconsistent combination the specification lists.
    ///
    /// # Errors
    /// [`OptionsError::Conflict`] for `w=0` with `journal=true`.
    pub fn validate(&self) -> Result<(), OptionsError> {
        if self.w == Some(Acknowledgment::Nodes(0)) && self.journal == Some(true) {
            return Err(OptionsError::Conflict {
                first: "w",
                second: "journal",
                reason: "an unacknowledged write (w=0) cannot wait for the journal",
            });
        }
        Ok(())
    }
}

impl From<Acknowledgment> for WriteConcern {
    fn from(w: Acknowledgment) -> Self {
        WriteConcern {
            w: Some(w),
            ..WriteConcern::default()
        }
    }
}

/// A read concern level. Unknown levels are kept as written so that newer servers can be used.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ReadConcernLevel {
    /// `local`.
    Local,
    /// `majority`.
    Majority,
    /// `linearizable`.
    Linearizable,
    /// `available`.
    Available,
    /// `snapshot`.
    Snapshot,
    /// Any other level, sent to the server unchanged.
    Custom(String),
}

impl ReadConcernLevel {
    /// Reads a level name; unknown names become [`ReadConcernLevel::Custom`].
    pub fn parse(value: &str) -> Self {
        match value {
            "local" => ReadConcernLevel::Local,
            "majority" => ReadConcernLevel::Majority,
            "linearizable" => ReadConcernLevel::Linearizable,
            "available" => ReadConcernLevel::Available,
            "snapshot" => ReadConcernLevel::Snapshot,
            other => ReadConcernLevel::Custom(other.to_string()),
        }
    }

    /// The level as sent on the wire.
    pub fn as_str(&self) -> &str {
        match self {
            ReadConcernLevel::Local => "local",
            ReadConcernLevel::Majority => "majority",
            ReadConcernLevel::Linearizable => "linearizable",
            ReadConcernLevel::Available => "available",
            ReadConcernLevel::Snapshot => "snapshot",
            ReadConcernLevel::Custom(level) => level,
        }
    }
}

impl fmt::Display for ReadConcernLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A read concern.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct ReadConcern {
    /// The level.
    pub level: ReadConcernLevel,
}

impl ReadConcern {
    /// A read concern with the given level.
    pub fn new(level: ReadConcernLevel) -> Self {
        ReadConcern { level }
    }

    /// `{ level: "majority" }`: data acknowledged by a majority, which no rollback can undo.
    pub fn majority() -> Self {
        ReadConcernLevel::Majority.into()
    }

    /// `{ level: "local" }`: the member's most recent data (the server default for most reads).
    pub fn local() -> Self {
        ReadConcernLevel::Local.into()
    }

    /// `{ level: "linearizable" }`: majority-committed data reflecting every write acknowledged
    /// before the read started (primary only).
    pub fn linearizable() -> Self {
        ReadConcernLevel::Linearizable.into()
    }

    /// `{ level: "available" }`: the member's data with no guarantee (sharded orphans included).
    pub fn available() -> Self {
        ReadConcernLevel::Available.into()
    }

    /// `{ level: "snapshot" }`: majority-committed data at one point in time.
    pub fn snapshot() -> Self {
        ReadConcernLevel::Snapshot.into()
    }

    /// A read concern with a level this crate does not name, sent as written (a known name
    /// gives the known level).
    pub fn custom(level: impl AsRef<str>) -> Self {
        ReadConcernLevel::parse(level.as_ref()).into()
    }
}

impl From<ReadConcernLevel> for ReadConcern {
    fn from(level: ReadConcernLevel) -> Self {
        ReadConcern { level }
    }
}
