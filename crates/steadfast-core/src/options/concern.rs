//! Read and write concerns (read-write-concern.md).

use std::fmt;
use std::time::Duration;

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
#[derive(Clone, Debug, PartialEq, Eq, Default)]
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
}
