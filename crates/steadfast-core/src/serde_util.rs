//! Serde helpers shared by the option types of steadfast and steadfast-core: durations as the
//! whole milliseconds (or seconds) the server's `...MS` fields carry, unsigned numbers as the
//! signed BSON integers the server expects. Not a stable API.

use std::time::Duration;

use serde::{Deserialize, Deserializer, Serializer, ser::Error as _};

/// A whole number of time units as an `Int64` (saturating), or nothing.
fn write_whole<S: Serializer>(whole: Option<u128>, serializer: S) -> Result<S::Ok, S::Error> {
    match whole {
        Some(whole) => serializer.serialize_i64(i64::try_from(whole).unwrap_or(i64::MAX)),
        None => serializer.serialize_none(),
    }
}

/// `Option<Duration>` as whole milliseconds (an `Int64`, saturating); read back from any
/// non-negative whole number. For `#[serde(with = "...")]`.
pub mod duration_ms {
    use super::*;

    /// Writes the duration as whole milliseconds, or nothing.
    ///
    /// # Errors
    /// Only the serializer's own.
    pub fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        write_whole(value.map(|duration| duration.as_millis()), serializer)
    }

    /// Reads whole milliseconds.
    ///
    /// # Errors
    /// A negative or non-numeric value.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(deserializer).map(|ms| ms.map(Duration::from_millis))
    }
}

/// `Option<Duration>` as whole seconds (an `Int64`, saturating). For `#[serde(with = "...")]`.
pub mod duration_secs {
    use super::*;

    /// Writes the duration as whole seconds, or nothing.
    ///
    /// # Errors
    /// Only the serializer's own.
    pub fn serialize<S: Serializer>(
        value: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        write_whole(
            value.map(|duration| u128::from(duration.as_secs())),
            serializer,
        )
    }

    /// Reads whole seconds.
    ///
    /// # Errors
    /// A negative or non-numeric value.
    pub fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        Option::<u64>::deserialize(deserializer).map(|s| s.map(Duration::from_secs))
    }
}

/// Writes an `Option<u32>` as an `Int32`.
///
/// # Errors
/// A value above `i32::MAX`.
pub fn u32_as_i32<S: Serializer>(value: &Option<u32>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => serializer.serialize_i32(
            i32::try_from(*v).map_err(|_| S::Error::custom(format!("{v} exceeds i32::MAX")))?,
        ),
        None => serializer.serialize_none(),
    }
}

/// Writes an `Option<u64>` as an `Int64`.
///
/// # Errors
/// A value above `i64::MAX`.
pub fn u64_as_i64<S: Serializer>(value: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => serializer.serialize_i64(
            i64::try_from(*v).map_err(|_| S::Error::custom(format!("{v} exceeds i64::MAX")))?,
        ),
        None => serializer.serialize_none(),
    }
}

/// Writes an `Option<i64>` as its absolute value (a `find` limit: the sign only asks for a
/// single batch, which the command says with `singleBatch`).
///
/// # Errors
/// Only the serializer's own.
pub fn i64_abs<S: Serializer>(value: &Option<i64>, serializer: S) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => serializer.serialize_i64(v.saturating_abs()),
        None => serializer.serialize_none(),
    }
}

/// Writes an `Option<u32>` batch size as the `cursor` document of an `aggregate` or
/// `listCollections` command: `{ batchSize: <Int32> }` (the field is renamed `cursor`).
///
/// # Errors
/// A value above `i32::MAX`.
pub fn batch_size_as_cursor<S: Serializer>(
    value: &Option<u32>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    use serde::Serialize;
    match value {
        Some(v) => {
            let size =
                i32::try_from(*v).map_err(|_| S::Error::custom(format!("{v} exceeds i32::MAX")))?;
            bson::doc! { "batchSize": size }.serialize(serializer)
        }
        None => serializer.serialize_none(),
    }
}
