//! Read and write concerns (read-write-concern.md).

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
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
///
/// It (de)serialises as the server's `writeConcern` document: `{ w, wtimeout, j }`, `wtimeout`
/// in milliseconds.
#[derive(Clone, Debug, PartialEq, Eq, Default, TypedBuilder, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct WriteConcern {
    /// The `w` field.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub w: Option<Acknowledgment>,
    /// The `wtimeout` field (deprecated in favour of timeoutMS); zero means no limit.
    #[serde(
        default,
        rename = "wtimeout",
        alias = "wtimeoutMS",
        skip_serializing_if = "Option::is_none",
        serialize_with = "serialize_millis",
        deserialize_with = "deserialize_millis"
    )]
    pub w_timeout: Option<Duration>,
    /// The `j` field: wait for the journal.
    #[serde(
        default,
        rename = "j",
        alias = "journal",
        skip_serializing_if = "Option::is_none"
    )]
    pub journal: Option<bool>,
}

/// A duration as whole milliseconds (saturating at `i64::MAX`).
fn serialize_millis<S: Serializer>(
    value: &Option<Duration>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(duration) => {
            serializer.serialize_i64(i64::try_from(duration.as_millis()).unwrap_or(i64::MAX))
        }
        None => serializer.serialize_none(),
    }
}

/// Whole milliseconds as a duration; a negative count is an error.
fn deserialize_millis<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    Option::<u64>::deserialize(deserializer).map(|millis| millis.map(Duration::from_millis))
}

impl Serialize for Acknowledgment {
    /// A node count as an `Int32` (an `Int64` past `i32::MAX`), anything else as its name.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Acknowledgment::Nodes(n) => match i32::try_from(*n) {
                Ok(n) => serializer.serialize_i32(n),
                Err(_) => serializer.serialize_i64(i64::from(*n)),
            },
            Acknowledgment::Majority => serializer.serialize_str("majority"),
            Acknowledgment::Custom(name) => serializer.serialize_str(name),
        }
    }
}

impl<'de> Deserialize<'de> for Acknowledgment {
    /// A non-negative integer is a node count; a string is `majority` or a tag set name.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Nodes(u32),
            Name(String),
        }
        Ok(match Written::deserialize(deserializer)? {
            Written::Nodes(n) => Acknowledgment::Nodes(n),
            Written::Name(name) => Acknowledgment::from(name),
        })
    }
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

impl Serialize for ReadConcernLevel {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ReadConcernLevel {
    /// Any string; unknown levels are kept as [`ReadConcernLevel::Custom`].
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(|level| ReadConcernLevel::parse(&level))
    }
}

impl fmt::Display for ReadConcernLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A read concern; it (de)serialises as the server's `readConcern` document, `{ level }`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use bson::doc;

    use super::*;

    #[test]
    fn constructors_set_the_one_field_they_name() {
        assert_eq!(WriteConcern::majority().w, Some(Acknowledgment::Majority));
        assert_eq!(WriteConcern::nodes(0).w, Some(Acknowledgment::Nodes(0)));
        assert!(WriteConcern::nodes(0).is_unacknowledged());
        assert_eq!(WriteConcern::custom("majority"), WriteConcern::majority());
        assert_eq!(
            WriteConcern::custom("east").w,
            Some(Acknowledgment::Custom("east".to_string()))
        );
        assert_eq!(ReadConcern::snapshot().level, ReadConcernLevel::Snapshot);
        assert_eq!(ReadConcern::custom("local"), ReadConcern::local());
        assert_eq!(
            ReadConcern::custom("future").level,
            ReadConcernLevel::Custom("future".to_string())
        );
    }

    #[test]
    fn concerns_serialise_as_the_server_documents() {
        let concern = WriteConcern::builder()
            .w(Acknowledgment::Nodes(2))
            .w_timeout(Duration::from_millis(1500))
            .journal(true)
            .build();
        let written = bson::serialize_to_document(&concern).expect("serialises");
        assert_eq!(written, doc! { "w": 2, "wtimeout": 1500_i64, "j": true });
        assert_eq!(
            bson::serialize_to_document(&WriteConcern::default()).expect("serialises"),
            doc! {}
        );
        let read: WriteConcern = bson::deserialize_from_document(
            doc! { "w": "majority", "wtimeoutMS": 10, "journal": false },
        )
        .expect("deserialises");
        assert_eq!(read.w, Some(Acknowledgment::Majority));
        assert_eq!(read.w_timeout, Some(Duration::from_millis(10)));
        assert_eq!(read.journal, Some(false));
        assert!(bson::deserialize_from_document::<WriteConcern>(doc! { "wtimeout": -1 }).is_err());
        assert_eq!(
            bson::serialize_to_document(&ReadConcern::majority()).expect("serialises"),
            doc! { "level": "majority" }
        );
    }
}
