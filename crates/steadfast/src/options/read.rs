//! Options of the read operations.

use std::time::Duration;

use bson::{Bson, Document};
use steadfast_core::options::ReadConcern;
use steadfast_core::selection::SelectionCriteria;

use super::collation::Collation;
use super::types::{CursorType, Hint};

options_struct! {
    /// Options of `Collection::find`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct FindOptions {
        /// Lets the server write temporary files for large sorts (4.4+).
        allow_disk_use: bool,
        /// Returns partial results from a mongos when some shards are unavailable.
        allow_partial_results: bool,
        /// How many documents each batch (the first reply and every `getMore`) holds.
        #[serde(serialize_with = "steadfast_core::serde_util::u32_as_i32")]
        batch_size: u32,
        /// The collation, as a document (`{ locale: "fr" }`).
        collation: Collation,
        /// A comment attached to the command and its `getMore`s, for logs and profiling.
        [into] comment: Bson,
        /// Tailable cursors for capped collections.
        #[serde(skip)]
        cursor_type: CursorType,
        /// The index to use.
        [into] hint: Hint,
        /// The most documents the cursor returns in total. A negative limit asks for a single
        /// batch of at most `-limit` documents.
        #[serde(serialize_with = "steadfast_core::serde_util::i64_abs")]
        limit: i64,
        /// The exclusive upper bound of an index scan.
        [into] max: Document,
        /// How long a `getMore` of a tailable-await cursor waits for new documents.
        #[serde(skip)]
        max_await_time: Duration,
        /// The most index keys or documents the query examines (deprecated; servers 4.2+
        /// reject it).
        #[serde(serialize_with = "steadfast_core::serde_util::u64_as_i64")]
        max_scan: u64,
        /// The server-side time limit of the `find` (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// The inclusive lower bound of an index scan.
        [into] min: Document,
        /// Keeps an idle cursor open on the server beyond its usual 10-minute timeout.
        no_cursor_timeout: bool,
        /// The fields to return.
        [into] projection: Document,
        /// Returns only index keys.
        return_key: bool,
        /// Adds `$recordId` to every document.
        show_record_id: bool,
        /// How many matching documents to skip.
        #[serde(serialize_with = "steadfast_core::serde_util::u64_as_i64")]
        skip: u64,
        /// The order of the results.
        [into] sort: Document,
        /// Variables usable as `$$name` in the filter (5.0+).
        #[serde(rename = "let")]
        [into] let_vars: Document,
        /// The read concern for this operation, replacing the collection's.
        #[serde(skip_serializing)]
        read_concern: ReadConcern,
        /// The read preference for this operation, replacing the collection's.
        #[serde(skip)]
        selection_criteria: SelectionCriteria,
    }
}

options_struct! {
    /// Options of `Collection::find_one`: those of [`FindOptions`] that make sense for one
    /// document (the driver always sends `limit: 1` and `singleBatch: true`).
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct FindOneOptions {
        /// Lets the server write temporary files for a large sort (4.4+).
        allow_disk_use: bool,
        /// Returns partial results from a mongos when some shards are unavailable.
        allow_partial_results: bool,
        /// The collation.
        collation: Collation,
        /// A comment attached to the command.
        [into] comment: Bson,
        /// The index to use.
        [into] hint: Hint,
        /// The exclusive upper bound of an index scan.
        [into] max: Document,
        /// The most index keys or documents the query examines (deprecated; servers 4.2+
        /// reject it).
        #[serde(serialize_with = "steadfast_core::serde_util::u64_as_i64")]
        max_scan: u64,
        /// The server-side time limit (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// The inclusive lower bound of an index scan.
        [into] min: Document,
        /// The fields to return.
        [into] projection: Document,
        /// Returns only index keys.
        return_key: bool,
        /// Adds `$recordId` to the document.
        show_record_id: bool,
        /// How many matching documents to skip.
        #[serde(serialize_with = "steadfast_core::serde_util::u64_as_i64")]
        skip: u64,
        /// Which document comes first.
        [into] sort: Document,
        /// Variables usable as `$$name` in the filter (5.0+).
        #[serde(rename = "let")]
        [into] let_vars: Document,
        /// The read concern for this operation.
        #[serde(skip_serializing)]
        read_concern: ReadConcern,
        /// The read preference for this operation.
        #[serde(skip_serializing)]
        selection_criteria: SelectionCriteria,
    }
}

impl From<FindOneOptions> for FindOptions {
    fn from(one: FindOneOptions) -> Self {
        FindOptions {
            allow_disk_use: one.allow_disk_use,
            allow_partial_results: one.allow_partial_results,
            collation: one.collation,
            comment: one.comment,
            hint: one.hint,
            max: one.max,
            max_time: one.max_time,
            min: one.min,
            projection: one.projection,
            return_key: one.return_key,
            show_record_id: one.show_record_id,
            skip: one.skip,
            sort: one.sort,
            let_vars: one.let_vars,
            read_concern: one.read_concern,
            selection_criteria: one.selection_criteria,
            max_scan: one.max_scan,
            ..FindOptions::default()
        }
    }
}

options_struct! {
    /// Options of `Collection::aggregate` and `Database::aggregate`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct AggregateOptions {
        /// Lets stages write temporary files.
        allow_disk_use: bool,
        /// How many documents each batch holds (never sent with `$out`/`$merge`).
        #[serde(
            serialize_with = "steadfast_core::serde_util::batch_size_as_cursor",
            rename(serialize = "cursor")
        )]
        batch_size: u32,
        /// Skips document validation in `$out`/`$merge`.
        bypass_document_validation: bool,
        /// The collation.
        collation: Collation,
        /// A comment attached to the command and its `getMore`s.
        [into] comment: Bson,
        /// The index to use.
        [into] hint: Hint,
        /// Variables usable as `$$name` in the pipeline (5.0+).
        #[serde(rename = "let")]
        [into] let_vars: Document,
        /// How long a `getMore` of a tailable-await cursor waits for new documents.
        #[serde(rename = "maxAwaitTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_await_time: Duration,
        /// The server-side time limit (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// The read concern for this operation.
        #[serde(skip_serializing)]
        read_concern: ReadConcern,
        /// The read preference for this operation (ignored with `$out`/`$merge`, which run on
        /// the primary).
        #[serde(skip_serializing, rename = "readPreference")]
        selection_criteria: SelectionCriteria,
        /// The write concern of `$out`/`$merge`.
        #[serde(skip_serializing)]
        write_concern: steadfast_core::options::WriteConcern,
    }
}

options_struct! {
    /// Options of `Collection::count_documents`.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct CountOptions {
        /// The collation.
        collation: Collation,
        /// A comment attached to the command.
        [into] comment: Bson,
        /// The index to use.
        [into] hint: Hint,
        /// Counts at most this many documents.
        limit: u64,
        /// The server-side time limit (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// Skips this many matching documents before counting.
        #[serde(serialize_with = "steadfast_core::serde_util::u64_as_i64")]
        skip: u64,
        /// The read concern for this operation.
        #[serde(skip_serializing)]
        read_concern: ReadConcern,
        /// The read preference for this operation.
        #[serde(skip_serializing)]
        selection_criteria: SelectionCriteria,
    }
}

options_struct! {
    /// Options of `Collection::estimated_document_count`, which uses the `count` command.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct EstimatedDocumentCountOptions {
        /// A comment attached to the command.
        [into] comment: Bson,
        /// The server-side time limit (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// The read concern for this operation.
        #[serde(skip_serializing)]
        read_concern: ReadConcern,
        /// The read preference for this operation.
        #[serde(skip_serializing)]
        selection_criteria: SelectionCriteria,
    }
}

options_struct! {
    /// Options of `Collection::distinct`.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct DistinctOptions {
        /// The collation.
        collation: Collation,
        /// A comment attached to the command.
        [into] comment: Bson,
        /// The index to use.
        [into] hint: Hint,
        /// The server-side time limit (deprecated in favour of timeoutMS).
        #[serde(rename = "maxTimeMS", with = "steadfast_core::serde_util::duration_ms")]
        max_time: Duration,
        /// The read concern for this operation.
        #[serde(skip_serializing)]
        read_concern: ReadConcern,
        /// The read preference for this operation.
        #[serde(skip_serializing)]
        selection_criteria: SelectionCriteria,
    }
}
