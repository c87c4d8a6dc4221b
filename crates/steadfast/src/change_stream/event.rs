//! The events a change stream returns: [`ChangeStreamEvent`] and its parts.

use bson::{DateTime, Document, RawBson, Timestamp};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The opaque position of a change stream: an event's `_id`, or the server's post-batch token.
/// Pass it to `resume_after` or `start_after` to start a new stream where this one stood; it
/// serialises as the server sent it, so it can be stored.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ResumeToken(pub(crate) RawBson);

impl ResumeToken {
    /// The token as the server sent it.
    pub fn as_raw(&self) -> &RawBson {
        &self.0
    }
}

impl From<RawBson> for ResumeToken {
    fn from(raw: RawBson) -> Self {
        ResumeToken(raw)
    }
}

/// One change event (insert, update, replace, delete, drop, rename, dropDatabase, invalidate,
/// ...). `T` is the type of the full documents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
// The derive would require `T: Default` for the `#[serde(default)]` documents, which are
// `Option`s (absent means `None` whatever `T` is).
#[serde(rename_all = "camelCase", bound(deserialize = "T: Deserialize<'de>"))]
#[non_exhaustive]
pub struct ChangeStreamEvent<T> {
    /// The event's resume token.
    #[serde(rename = "_id")]
    pub id: ResumeToken,
    /// What happened.
    pub operation_type: OperationType,
    /// The database and collection it happened in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns: Option<ChangeNamespace>,
    /// The kind of the created object (`create` events with expanded events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ns_type: Option<ChangeNamespaceType>,
    /// The new namespace of a `rename`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<ChangeNamespace>,
    /// The session of the transaction the change was part of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lsid: Option<Document>,
    /// The transaction number of the transaction the change was part of.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_number: Option<i64>,
    /// The `_id` (and shard key) of the changed document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document_key: Option<Document>,
    /// The fields an update changed and removed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_description: Option<UpdateDescription>,
    /// The cluster time of the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_time: Option<Timestamp>,
    /// The wall-clock time of the change on the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_time: Option<DateTime>,
    /// The document after an insert or replace (and after an update with `full_document`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_document: Option<T>,
    /// The document before the change, with `full_document_before_change`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub full_document_before_change: Option<T>,
}

/// What an update changed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UpdateDescription {
    /// The fields set, with their new values.
    pub updated_fields: Document,
    /// The fields removed.
    pub removed_fields: Vec<String>,
    /// Arrays shortened by the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncated_arrays: Option<Vec<TruncatedArray>>,
    /// Which path components of the updated fields are array indexes (expanded events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disambiguated_paths: Option<Document>,
}

/// An array an update shortened.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TruncatedArray {
    /// The array's path.
    pub field: String,
    /// Its length afterwards.
    pub new_size: i32,
}

/// The kind of a change event.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum OperationType {
    /// A document was inserted.
    Insert,
    /// A document was updated.
    Update,
    /// A document was replaced.
    Replace,
    /// A document was deleted.
    Delete,
    /// The collection was dropped.
    Drop,
    /// The collection was renamed.
    Rename,
    /// The database was dropped.
    DropDatabase,
    /// The stream can go no further (its collection or database went away).
    Invalidate,
    /// Any other kind, by its server name.
    Other(String),
}

impl OperationType {
    /// The kind as the server spells it.
    pub fn as_str(&self) -> &str {
        match self {
            OperationType::Insert => "insert",
            OperationType::Update => "update",
            OperationType::Replace => "replace",
            OperationType::Delete => "delete",
            OperationType::Drop => "drop",
            OperationType::Rename => "rename",
            OperationType::DropDatabase => "dropDatabase",
            OperationType::Invalidate => "invalidate",
            OperationType::Other(other) => other,
        }
    }

    fn from_name(name: &str) -> Self {
        match name {
            "insert" => OperationType::Insert,
            "update" => OperationType::Update,
            "replace" => OperationType::Replace,
            "delete" => OperationType::Delete,
            "drop" => OperationType::Drop,
            "rename" => OperationType::Rename,
            "dropDatabase" => OperationType::DropDatabase,
            "invalidate" => OperationType::Invalidate,
            other => OperationType::Other(other.to_string()),
        }
    }
}

impl Serialize for OperationType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for OperationType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        Ok(OperationType::from_name(&name))
    }
}

/// A database and, for collection events, a collection.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ChangeNamespace {
    /// The database.
    pub db: String,
    /// The collection (absent for database-level events).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub coll: Option<String>,
}

/// The kind of object a `create` event made.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum ChangeNamespaceType {
    /// A collection.
    Collection,
    /// A time-series collection.
    Timeseries,
    /// A view.
    View,
    /// Any other kind, by its server name.
    #[serde(untagged)]
    Other(String),
}

#[cfg(test)]
mod tests {
    use bson::rawdoc;

    use super::*;

    #[test]
    fn an_update_event_reads_with_every_part() {
        let raw = rawdoc! {
            "_id": { "_data": "82AB" },
            "operationType": "update",
            "ns": { "db": "shop", "coll": "orders" },
            "documentKey": { "_id": 7 },
            "updateDescription": { "updatedFields": { "n": 2 }, "removedFields": ["x"],
                                   "truncatedArrays": [ { "field": "a", "newSize": 1 } ] },
            "clusterTime": bson::Timestamp { time: 9, increment: 1 },
            "lsid": { "id": 1 },
            "txnNumber": 3_i64,
        };
        let event: ChangeStreamEvent<Document> =
            bson::deserialize_from_slice(raw.as_bytes()).expect("a well-formed event");
        assert_eq!(event.operation_type, OperationType::Update);
        assert_eq!(event.ns.and_then(|ns| ns.coll).as_deref(), Some("orders"));
        let update = event.update_description.expect("an update description");
        assert_eq!(update.removed_fields, vec!["x".to_string()]);
        assert_eq!(update.truncated_arrays.map(|a| a[0].new_size), Some(1));
        assert_eq!(event.txn_number, Some(3));
        assert!(event.full_document.is_none());
    }

    #[test]
    fn an_unknown_operation_type_is_kept_by_name() {
        let raw = rawdoc! { "_id": { "_data": "01" }, "operationType": "reshardCollection" };
        let event: ChangeStreamEvent<Document> =
            bson::deserialize_from_slice(raw.as_bytes()).expect("a well-formed event");
        assert_eq!(
            event.operation_type,
            OperationType::Other("reshardCollection".into())
        );
        assert_eq!(event.operation_type.as_str(), "reshardCollection");
    }
}
