//! Options of `watch()` on a client, database or collection.

use std::time::Duration;

use bson::{Bson, Timestamp};
use serde::{Deserialize, Serialize};

use super::Collation;
use crate::change_stream::event::ResumeToken;
use steadfast_core::options::ReadConcern;
use steadfast_core::selection::SelectionCriteria;

options_struct! {
    /// Options of `watch()` (`Client::watch`, `Database::watch`, `Collection::watch`).
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ChangeStreamOptions {
        /// What `full_document` holds for update events (by default nothing).
        full_document: FullDocumentType,
        /// What `full_document_before_change` holds (by default nothing).
        full_document_before_change: FullDocumentBeforeChangeType,
        /// Starts after the event with this token (the stream must not have been invalidated
        /// since). Mutually exclusive with `start_after` and `start_at_operation_time`: the
        /// server rejects more than one.
        resume_after: ResumeToken,
        /// Starts with the changes at or after this cluster time.
        start_at_operation_time: Timestamp,
        /// Starts after the event with this token, even past an invalidate event (a dropped or
        /// renamed collection).
        start_after: ResumeToken,
        /// How long each `getMore` waits on the server for new events.
        #[serde(skip_serializing, rename = "maxAwaitTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_await_time: Duration,
        /// How many events each batch holds.
        #[serde(skip_serializing)]
        batch_size: u32,
        /// The collation.
        #[serde(skip_serializing)]
        collation: Collation,
        /// The read concern of the `aggregate`.
        #[serde(skip_serializing)]
        read_concern: ReadConcern,
        /// The read preference (also used to select a server again on resume).
        #[serde(skip_serializing)]
        selection_criteria: SelectionCriteria,
        /// Asks for the expanded set of events (DDL events, 6.0+).
        show_expanded_events: bool,
        /// A comment attached to the `aggregate` and its `getMore`s.
        [into] comment: Bson,
    }
}

/// How the `full_document` field of update events is filled (`fullDocument`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum FullDocumentType {
    /// The current majority-committed version of the updated document.
    UpdateLookup,
    /// The post-image, when the collection records one.
    WhenAvailable,
    /// The post-image; the server fails the stream when there is none.
    Required,
    /// Another value, sent as is.
    #[serde(untagged)]
    Other(String),
}

impl FullDocumentType {
    /// The value as the server spells it.
    pub fn as_str(&self) -> &str {
        match self {
            FullDocumentType::UpdateLookup => "updateLookup",
            FullDocumentType::WhenAvailable => "whenAvailable",
            FullDocumentType::Required => "required",
            FullDocumentType::Other(other) => other,
        }
    }
}

/// How the `full_document_before_change` field is filled (`fullDocumentBeforeChange`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum FullDocumentBeforeChangeType {
    /// The pre-image, when the collection records one.
    WhenAvailable,
    /// The pre-image; the server fails the stream when there is none.
    Required,
    /// No pre-image.
    Off,
    /// Another value, sent as is.
    #[serde(untagged)]
    Other(String),
}

impl FullDocumentBeforeChangeType {
    /// The value as the server spells it.
    pub fn as_str(&self) -> &str {
        match self {
            FullDocumentBeforeChangeType::WhenAvailable => "whenAvailable",
            FullDocumentBeforeChangeType::Required => "required",
            FullDocumentBeforeChangeType::Off => "off",
            FullDocumentBeforeChangeType::Other(other) => other,
        }
    }
}
