//! Small value types shared by several option structs.

use std::time::Duration;

use bson::{Bson, Document};
use serde::{Deserialize, Deserializer, Serialize};

/// The index a query should use: its name or its key pattern. It (de)serialises as the bare
/// name or key document, as the server's `hint` field.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Hint {
    /// The index's key pattern, e.g. `{ "age": 1 }`.
    Keys(Document),
    /// The index's name, e.g. `"age_1"`.
    Name(String),
}

impl Hint {
    /// The value sent as the command's `hint`.
    pub(crate) fn to_bson(&self) -> Bson {
        match self {
            Hint::Keys(keys) => Bson::Document(keys.clone()),
            Hint::Name(name) => Bson::String(name.clone()),
        }
    }
}

impl From<Document> for Hint {
    fn from(keys: Document) -> Self {
        Hint::Keys(keys)
    }
}

impl From<&str> for Hint {
    fn from(name: &str) -> Self {
        Hint::Name(name.to_string())
    }
}

impl From<String> for Hint {
    fn from(name: String) -> Self {
        Hint::Name(name)
    }
}

/// Which version of the document the find-and-modify family returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReturnDocument {
    /// The document as it was before the modification (the default).
    #[default]
    Before,
    /// The document as it is after the modification.
    After,
}

impl<'de> Deserialize<'de> for ReturnDocument {
    /// `"before"` or `"after"`, in any case.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        if name.eq_ignore_ascii_case("before") {
            Ok(ReturnDocument::Before)
        } else if name.eq_ignore_ascii_case("after") {
            Ok(ReturnDocument::After)
        } else {
            Err(serde::de::Error::custom(format!(
                "returnDocument is before or after, not {name:?}"
            )))
        }
    }
}

/// How timeoutMS applies to a cursor (CSOT `timeoutMode`), set with `.timeout_mode(..)` on the
/// actions that open cursors; it requires a timeout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TimeoutMode {
    /// One deadline for the opening command and every `getMore` of the cursor: a cursor opened
    /// at `T` fetches nothing after `T + timeout` (documents already buffered are still
    /// returned). The default for non-tailable cursors; not allowed for tailable ones.
    CursorLifetime,
    /// The opening command, and each fetch of the cursor, gets the whole timeout afresh; the
    /// opening command carries no `maxTimeMS`. The default (and the only mode) for tailable
    /// cursors; not allowed for an aggregation with `$out` or `$merge`.
    Iteration,
}

/// The kind of cursor a `find` opens (deserialised from `nonTailable`, `tailable` or
/// `tailableAwait`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CursorType {
    /// An ordinary cursor, exhausted once every result was returned (the default).
    #[default]
    NonTailable,
    /// A cursor that stays open at the end of a capped collection and returns documents
    /// inserted later.
    Tailable,
    /// A tailable cursor whose `getMore`s wait (up to `max_await_time`) for new documents.
    TailableAwait,
}

/// What an update applies: a document of update operators (`{ "$set": { .. } }`) or an
/// aggregation pipeline (`[ { "$set": { .. } }, .. ]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum UpdateModifications {
    /// Update operators; the first key must start with `$`.
    Document(Document),
    /// An aggregation pipeline (servers 4.2+).
    Pipeline(Vec<Document>),
}

impl UpdateModifications {
    /// The value sent as the update statement's `u` (or findAndModify's `update`).
    pub(crate) fn to_bson(&self) -> Bson {
        match self {
            UpdateModifications::Document(doc) => Bson::Document(doc.clone()),
            UpdateModifications::Pipeline(stages) => {
                Bson::Array(stages.iter().cloned().map(Bson::Document).collect())
            }
        }
    }
}

impl From<Document> for UpdateModifications {
    fn from(doc: Document) -> Self {
        UpdateModifications::Document(doc)
    }
}

impl From<Vec<Document>> for UpdateModifications {
    fn from(stages: Vec<Document>) -> Self {
        UpdateModifications::Pipeline(stages)
    }
}

/// A duration as the whole milliseconds a `maxTimeMS`-style field carries (saturating).
pub(crate) fn duration_ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// Appends `hint` to `body` when set.
pub(crate) fn append_hint(body: &mut Document, hint: Option<&Hint>) {
    if let Some(hint) = hint {
        body.insert("hint", hint.to_bson());
    }
}
