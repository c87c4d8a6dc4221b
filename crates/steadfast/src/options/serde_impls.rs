//! Serde forms of the typed `createCollection` and `createIndexes` values, as the server (and
//! the official driver) spell them: the same documents the commands carry.

use bson::{Bson, Document};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::collection::{
    ChangeStreamPreAndPostImages, ClusteredIndex, CommitQuorum, IndexOptionDefaults,
    TimeseriesOptions,
};
use super::index::{IndexVersion, Sphere2DIndexVersion, TextIndexVersion};

/// `Serialize` through the type's `From<_> for Bson`: the value is written exactly as the
/// command sends it.
macro_rules! serialize_as_bson {
    ($($ty:ty),+ $(,)?) => {
        $(
            impl Serialize for $ty {
                fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                    Bson::from(self.clone()).serialize(serializer)
                }
            }
        )+
    };
}

serialize_as_bson!(
    TimeseriesOptions,
    ClusteredIndex,
    ChangeStreamPreAndPostImages,
    IndexOptionDefaults,
    CommitQuorum,
    IndexVersion,
    TextIndexVersion,
    Sphere2DIndexVersion,
);

/// `Deserialize` of an index version: any whole non-negative number.
macro_rules! deserialize_version {
    ($($ty:ident),+ $(,)?) => {
        $(
            impl<'de> Deserialize<'de> for $ty {
                fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                    let value = Bson::deserialize(deserializer)?;
                    $ty::from_bson(&value).ok_or_else(|| {
                        D::Error::custom(format!(
                            concat!("invalid ", stringify!($ty), " {}: expected a whole non-negative number"),
                            value
                        ))
                    })
                }
            }
        )+
    };
}

deserialize_version!(IndexVersion, TextIndexVersion, Sphere2DIndexVersion);

#[derive(Deserialize)]
struct ClusteredIndexForm {
    key: Document,
    unique: bool,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    v: Option<i32>,
}

/// Either the clustered index's description or `true` (the default clustered index on
/// `_id`), as Atlas lists time-series collections.
#[derive(Deserialize)]
#[serde(untagged)]
enum ClusteredIndexOrFlag {
    Index(ClusteredIndexForm),
    Flag(bool),
}

impl<'de> Deserialize<'de> for ClusteredIndex {
    /// Reads `{ key, unique, name?, v? }`, or `true` for the default clustered index.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        match ClusteredIndexOrFlag::deserialize(deserializer)? {
            ClusteredIndexOrFlag::Index(form) => Ok(ClusteredIndex {
                key: form.key,
                unique: form.unique,
                name: form.name,
                v: form.v,
            }),
            ClusteredIndexOrFlag::Flag(true) => Ok(ClusteredIndex::default()),
            ClusteredIndexOrFlag::Flag(false) => Err(D::Error::custom(
                "clusteredIndex false names no clustered index",
            )),
        }
    }
}

#[derive(Deserialize)]
struct ImagesForm {
    enabled: bool,
}

impl<'de> Deserialize<'de> for ChangeStreamPreAndPostImages {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        ImagesForm::deserialize(deserializer).map(|form| ChangeStreamPreAndPostImages {
            enabled: form.enabled,
        })
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexOptionDefaultsForm {
    storage_engine: Document,
}

impl<'de> Deserialize<'de> for IndexOptionDefaults {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        IndexOptionDefaultsForm::deserialize(deserializer).map(|form| IndexOptionDefaults {
            storage_engine: form.storage_engine,
        })
    }
}

impl<'de> Deserialize<'de> for CommitQuorum {
    /// Reads a number of members, `"votingMembers"`, `"majority"` or a replica set tag name.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Bson::deserialize(deserializer)?;
        if let Bson::String(name) = &value {
            return Ok(match name.as_str() {
                "votingMembers" => CommitQuorum::VotingMembers,
                "majority" => CommitQuorum::Majority,
                _ => CommitQuorum::Custom(name.clone()),
            });
        }
        super::index::bson_as_u64(&value)
            .and_then(|n| u32::try_from(n).ok())
            .map(CommitQuorum::Nodes)
            .ok_or_else(|| {
                D::Error::custom(format!(
                    "invalid commit quorum {value}: expected a member count or a name"
                ))
            })
    }
}
