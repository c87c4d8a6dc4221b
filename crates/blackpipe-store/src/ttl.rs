//! mongod's TTL monitor, one pass at a time: documents whose TTL-indexed date (the earliest,
//! for an array of dates) is older than the index's `expireAfterSeconds` are deleted through
//! the ordinary `delete` command, so the deletions reach the op log, the secondaries and
//! change streams like any other. The store reads no clock: the caller passes `now`, and
//! blackpipe's deployment runs the passes on mongod's 60-second period (configurable).

use bson::{Bson, DateTime, Document, doc};

use crate::catalog::read;
use crate::commands::CommandContext;
use crate::{Store, integer};

/// A TTL index of one collection: the indexed field, its expiry and its partial filter.
#[derive(Debug, Clone, PartialEq)]
struct TtlIndex {
    db: String,
    collection: String,
    field: String,
    expire_after_seconds: i64,
    partial_filter: Option<Document>,
}

impl TtlIndex {
    /// The TTL index a `listIndexes` entry describes, if any: mongod expires only through
    /// single-field indexes (not `_id`) whose `expireAfterSeconds` is a number.
    fn of(db: &str, collection: &str, spec: &Document) -> Option<TtlIndex> {
        let seconds = spec.get("expireAfterSeconds").and_then(integer::integral)?;
        let key = spec.get_document("key").ok()?;
        let (field, _) = key.iter().next().filter(|_| key.len() == 1)?;
        if field == "_id" {
            return None;
        }
        Some(TtlIndex {
            db: db.to_owned(),
            collection: collection.to_owned(),
            field: field.clone(),
            expire_after_seconds: seconds,
            partial_filter: spec.get_document("partialFilterExpression").ok().cloned(),
        })
    }

    /// The expiry a collection's own options set: `expireAfterSeconds` of a clustered
    /// collection expires by `_id` (dates only), of a time-series collection by its
    /// `timeField`.
    fn of_collection(db: &str, collection: &str, options: &Document) -> Option<TtlIndex> {
        let seconds = options
            .get("expireAfterSeconds")
            .and_then(integer::integral)?;
        let field = if options.contains_key("clusteredIndex") {
            "_id".to_owned()
        } else {
            options
                .get_document("timeseries")
                .ok()?
                .get_str("timeField")
                .ok()?
                .to_owned()
        };
        Some(TtlIndex {
            db: db.to_owned(),
            collection: collection.to_owned(),
            field,
            expire_after_seconds: seconds,
            partial_filter: None,
        })
    }

    /// The `delete` command removing this index's expired documents at `now`.
    fn delete_command(&self, now: DateTime) -> Document {
        let cutoff = DateTime::from_millis(
            now.timestamp_millis()
                .saturating_sub(self.expire_after_seconds.saturating_mul(1000)),
        );
        // `$lt` on a date matches only dates (type bracketing), and an array when any element
        // (so the earliest) is older: mongod's rule for arrays of dates.
        let expired = doc! { &self.field: { "$lt": cutoff } };
        let filter = match &self.partial_filter {
            Some(partial) => doc! { "$and": [Bson::Document(partial.clone()), expired] },
            None => expired,
        };
        doc! {
            "delete": &self.collection,
            "deletes": [{ "q": filter, "limit": 0 }],
        }
    }
}

impl Store {
    /// One pass of mongod's TTL monitor at wall time `now`: deletes every document past its TTL
    /// index's expiry, recording each deletion in the op log like a client's delete (so
    /// secondaries apply it and change streams report it). Run it only where writes are
    /// accepted (a primary or a standalone). Returns how many documents were deleted.
    pub fn expire_ttl(&self, now: DateTime) -> usize {
        let context = CommandContext::new(now);
        let mut deleted = 0;
        for index in self.ttl_indexes() {
            let reply = self
                .execute(&index.db, &index.delete_command(now), &context)
                .reply;
            deleted += reply
                .get("n")
                .and_then(integer::integral)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(0);
        }
        deleted
    }

    /// Every TTL index of every collection, and the expiry of clustered and time-series
    /// collections (capped collections never expire, as in mongod).
    fn ttl_indexes(&self) -> Vec<TtlIndex> {
        let mut indexes = Vec::new();
        for db in self.catalog.database_names() {
            for (name, handle) in self.catalog.collections(&db) {
                let collection = read(&handle);
                if collection.is_capped() {
                    continue;
                }
                indexes.extend(TtlIndex::of_collection(&db, &name, &collection.options));
                indexes.extend(
                    collection
                        .index_specs()
                        .iter()
                        .filter_map(|spec| TtlIndex::of(&db, &name, spec)),
                );
            }
        }
        indexes
    }
}
