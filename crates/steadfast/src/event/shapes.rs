//! Serde helpers giving the monitoring events the official driver's serialized shapes:
//! addresses as `{"Tcp": {"host", "port"}}`, errors as their message, server descriptions as
//! steadfast-core lays them out, and durations in milliseconds where the specification's
//! test files write them so.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use steadfast_core::ServerAddress;
use steadfast_core::description::public::SerializeServerDescription;

pub(super) use steadfast_core::description::public::{deserialize_address, serialize_address};

use super::sdam::ServerDescription;
use crate::error::Error;

/// The address a deserialized CMAP event carries: the specification's test files leave it
/// out, and the official driver fills in an empty host.
pub(super) fn empty_address() -> ServerAddress {
    ServerAddress::Tcp {
        host: String::new(),
        port: None,
    }
}

/// An error serializes as its message.
pub(super) fn serialize_error<S: Serializer>(
    error: &Error,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(error)
}

/// A server description in steadfast-core's serialized layout.
pub(super) fn serialize_server_description<S: Serializer>(
    description: &ServerDescription,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    SerializeServerDescription(description).serialize(serializer)
}

/// Reads an optional duration written as whole milliseconds (as the specification's test files
/// write `maxIdleTimeMS`) or in serde's own `{"secs", "nanos"}` shape (as it serializes).
pub(super) fn deserialize_optional_millis<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Duration>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Shape {
        Millis(u64),
        Duration(Duration),
    }
    Ok(
        Option::<Shape>::deserialize(deserializer)?.map(|shape| match shape {
            Shape::Millis(millis) => Duration::from_millis(millis),
            Shape::Duration(duration) => duration,
        }),
    )
}
