//! Options of the index, collection and database administration operations.

use std::time::Duration;

use bson::{Bson, Document};
use steadfast_core::options::WriteConcern;

options_struct! {
    /// Options of `Collection::create_index` and `Collection::create_indexes`.
    pub struct CreateIndexOptions {
        /// How many data-bearing members must build the index before it is ready (4.4+).
        [into] commit_quorum: Bson,
        /// The server-side time limit (deprecated in favour of timeoutMS).
        max_time: Duration,
        /// The write concern for this operation.
        write_concern: WriteConcern,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::drop_index` and `Collection::drop_indexes`.
    pub struct DropIndexOptions {
        /// The server-side time limit (deprecated in favour of timeoutMS).
        max_time: Duration,
        /// The write concern for this operation.
        write_concern: WriteConcern,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::list_indexes`.
    pub struct ListIndexesOptions {
        /// How many index descriptions each batch holds.
        batch_size: u32,
        /// The server-side time limit (deprecated in favour of timeoutMS).
        max_time: Duration,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Collection::drop`.
    pub struct DropCollectionOptions {
        /// The write concern for this operation.
        write_concern: WriteConcern,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Database::create_collection`.
    pub struct CreateCollectionOptions {
        /// Creates a capped collection (requires `size`).
        capped: bool,
        /// The maximum size in bytes of a capped collection.
        size: u64,
        /// The maximum number of documents of a capped collection.
        max: u64,
        /// A validator expression every inserted or updated document must match.
        [into] validator: Document,
        /// How strictly the validator applies (`off`, `strict`, `moderate`).
        [into] validation_level: String,
        /// Whether invalid documents are rejected (`error`) or only logged (`warn`).
        [into] validation_action: String,
        /// The default collation of the collection.
        [into] collation: Document,
        /// Creates a view on this collection or view.
        [into] view_on: String,
        /// The view's pipeline.
        pipeline: Vec<Document>,
        /// Time-series collection options.
        [into] timeseries: Document,
        /// Expires time-series documents after this long.
        expire_after: Duration,
        /// Clustered collection options.
        [into] clustered_index: Document,
        /// The write concern for this operation.
        write_concern: WriteConcern,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Database::list_collections` and `Database::list_collection_names`.
    pub struct ListCollectionsOptions {
        /// Which collections to list (matched against the listed documents).
        [into] filter: Document,
        /// Lists only the collections the user is allowed to read.
        authorized_collections: bool,
        /// How many collection descriptions each batch holds.
        batch_size: u32,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Client::list_databases` and `Client::list_database_names`.
    pub struct ListDatabasesOptions {
        /// Which databases to list.
        [into] filter: Document,
        /// Lists only the databases the user is allowed to read.
        authorized_databases: bool,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}

options_struct! {
    /// Options of `Database::drop`.
    pub struct DropDatabaseOptions {
        /// The write concern for this operation.
        write_concern: WriteConcern,
        /// A comment attached to the command.
        [into] comment: Bson,
    }
}
