//! Options of the write operations.

use std::time::Duration;

use bson::{Bson, Document};
use steadfast_core::options::WriteConcern;

use super::collation::Collation;
use super::types::{Hint, ReturnDocument};

options_struct! {
    /// Options of `Collection::insert_one`.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct InsertOneOptions {
        /// Skips the collection's document validation.
        bypass_document_validation: bool,
        /// The write concern for this operation, replacing the collection's.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::insert_many`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct InsertManyOptions {
        /// Skips the collection's document validation.
        bypass_document_validation: bool,
        /// Whether to stop at the first failed document (`true`, the default) or insert every
        /// document that can be.
        ordered: bool,
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// A comment attached to every batch command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::update_one` and `Collection::update_many`.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct UpdateOptions {
        /// Which array elements the `$[identifier]` operators apply to.
        array_filters: Vec<Document>,
        /// Skips the collection's document validation.
        bypass_document_validation: bool,
        /// The collation.
        collation: Collation,
        /// The index to use.
        [into] hint: Hint,
        /// Inserts a document when none matches.
        upsert: bool,
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// Variables usable as `$$name` in the filter and update (5.0+).
        #[serde(rename = "let")]
        [into] let_vars: Document,
        /// A comment attached to the command.
        [into] comment: Bson,
        /// Which matching document `update_one` updates first (8.0+; not allowed with
        /// `update_many`).
        [into] sort: Document,
    }
}

options_struct! {
    /// Options of `Collection::replace_one`.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ReplaceOptions {
        /// Skips the collection's document validation.
        bypass_document_validation: bool,
        /// The collation.
        collation: Collation,
        /// The index to use.
        [into] hint: Hint,
        /// Inserts the replacement when no document matches.
        upsert: bool,
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// Variables usable as `$$name` in the filter (5.0+).
        #[serde(rename = "let")]
        [into] let_vars: Document,
        /// A comment attached to the command.
        [into] comment: Bson,
        /// Which matching document is replaced first (8.0+).
        [into] sort: Document,
    }
}

impl From<ReplaceOptions> for UpdateOptions {
    fn from(replace: ReplaceOptions) -> Self {
        UpdateOptions {
            bypass_document_validation: replace.bypass_document_validation,
            collation: replace.collation,
            hint: replace.hint,
            upsert: replace.upsert,
            write_concern: replace.write_concern,
            let_vars: replace.let_vars,
            comment: replace.comment,
            sort: replace.sort,
            array_filters: None,
        }
    }
}

options_struct! {
    /// Options of `Collection::delete_one` and `Collection::delete_many`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct DeleteOptions {
        /// The collation.
        collation: Collation,
        /// The index to use.
        [into] hint: Hint,
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// Variables usable as `$$name` in the filter (5.0+).
        #[serde(rename = "let")]
        [into] let_vars: Document,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::find_one_and_delete`.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct FindOneAndDeleteOptions {
        /// The server-side time limit (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// The fields of the returned document.
        [into] projection: Document,
        /// Which matching document is deleted first.
        [into] sort: Document,
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// The collation.
        collation: Collation,
        /// The index to use.
        [into] hint: Hint,
        /// Variables usable as `$$name` in the filter (5.0+).
        #[serde(rename = "let")]
        [into] let_vars: Document,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::find_one_and_update`.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct FindOneAndUpdateOptions {
        /// Which array elements the `$[identifier]` operators apply to.
        array_filters: Vec<Document>,
        /// Skips the collection's document validation.
        bypass_document_validation: bool,
        /// The server-side time limit (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// The fields of the returned document.
        [into] projection: Document,
        /// Whether the document before (default) or after the update is returned.
        return_document: ReturnDocument,
        /// Which matching document is updated first.
        [into] sort: Document,
        /// Inserts a document when none matches.
        upsert: bool,
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// The collation.
        collation: Collation,
        /// The index to use.
        [into] hint: Hint,
        /// Variables usable as `$$name` (5.0+).
        #[serde(rename = "let")]
        [into] let_vars: Document,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::find_one_and_replace`.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct FindOneAndReplaceOptions {
        /// Skips the collection's document validation.
        bypass_document_validation: bool,
        /// The server-side time limit (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// The fields of the returned document.
        [into] projection: Document,
        /// Whether the document before (default) or after the replacement is returned.
        return_document: ReturnDocument,
        /// Which matching document is replaced first.
        [into] sort: Document,
        /// Inserts the replacement when no document matches.
        upsert: bool,
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// The collation.
        collation: Collation,
        /// The index to use.
        [into] hint: Hint,
        /// Variables usable as `$$name` (5.0+).
        #[serde(rename = "let")]
        [into] let_vars: Document,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::bulk_write`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct BulkWriteOptions {
        /// Whether to run the models in order and stop at the first failure (`true`, the
        /// default), or run every model that can be, in any order.
        ordered: bool,
        /// Skips the collection's document validation.
        bypass_document_validation: bool,
        /// The write concern for this operation.
        #[serde(skip_serializing)]
        write_concern: WriteConcern,
        /// Variables usable as `$$name` (5.0+).
        #[serde(rename = "let")]
        [into] let_vars: Document,
        /// A comment attached to every batch command.
        [into] comment: Bson,
    }
}
