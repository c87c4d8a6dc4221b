//! A write outside a transaction to a document that an open transaction has written waits for
//! that transaction to commit or abort, as on mongod (where it retries its write conflict until
//! the document is free or its `maxTimeMS` runs out). The store never blocks: the caller asks
//! [`Store::write_blocker`] before running the write and, when told to, waits on the returned
//! [`TransactionWait`] holding no lock, then asks again.
//!
//! The documents a write would touch are found as the write would find them (an insert's
//! `_id`s, the matches of an update's, delete's or findAndModify's filter); a transaction that
//! takes one of them between the check and the write is still aborted by the write, as before.

use bson::{Bson, DateTime, Document};

use super::registry::DocumentKey;
use crate::Store;
use crate::catalog::read;
use crate::change_signal::ChangeSubscription;
use crate::key::encode_key;
use crate::query::Filter;

/// What a blocked write waits on: the end of some open transaction.
#[derive(Debug)]
pub struct TransactionWait {
    ended: ChangeSubscription,
}

impl TransactionWait {
    /// Completes once a transaction ended after the write looked (at once if one already had).
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an end seen by a cancelled call is still reported by the next one.
    pub async fn ended(&mut self) {
        self.ended.changed().await;
    }
}

impl Store {
    /// For `command` run on `db` outside a transaction: a wait when it would write a document
    /// an open transaction has written (run it once the wait completes, after asking again),
    /// `None` when nothing blocks it. Commands in a transaction, and commands that are not
    /// document writes, are never blocked.
    pub fn write_blocker(&self, db: &str, command: &Document) -> Option<TransactionWait> {
        if command.contains_key("autocommit") || self.transaction_registry.holds_none() {
            return None;
        }
        // Subscribed before looking, so that a transaction ending in between still wakes it.
        let wait = TransactionWait {
            ended: self.transaction_registry.subscribe_ended(),
        };
        let keys = self.written_keys(db, command);
        self.transaction_registry.holds_any(&keys).then_some(wait)
    }

    /// Aborts the transactions whose lifetime (`transactionLifetimeLimitSeconds`) ended at
    /// wall time `now`, as mongod's reaper does; returns how many.
    pub fn abort_expired_transactions(&self, now: DateTime) -> usize {
        self.transaction_registry
            .abort_expired(now.timestamp_millis())
    }

    /// The documents `command` would write, as `(namespace, encoded _id)`.
    fn written_keys(&self, db: &str, command: &Document) -> Vec<DocumentKey> {
        let name = command
            .keys()
            .next()
            .map(String::as_str)
            .unwrap_or_default();
        let Some(Bson::String(collection)) = command.get(name) else {
            return Vec::new();
        };
        let ns = format!("{db}.{collection}");
        let key = |id: &Bson| (ns.clone(), encode_key(id));
        let statements = |field: &str| {
            command
                .get_array(field)
                .map(Vec::as_slice)
                .unwrap_or_default()
        };
        match name {
            "insert" => statements("documents")
                .iter()
                .filter_map(|document| document.as_document()?.get("_id"))
                .map(key)
                .collect(),
            "update" => statements("updates")
                .iter()
                .filter_map(Bson::as_document)
                .flat_map(|statement| {
                    let multi = matches!(statement.get("multi"), Some(Bson::Boolean(true)));
                    self.matching_ids(db, collection, statement.get_document("q").ok(), multi)
                })
                .map(|id| key(&id))
                .collect(),
            "delete" => statements("deletes")
                .iter()
                .filter_map(Bson::as_document)
                .flat_map(|statement| {
                    let all = statement
                        .get("limit")
                        .and_then(crate::value_order::Number::of)
                        .is_some_and(|limit| limit.as_f64() == 0.0);
                    self.matching_ids(db, collection, statement.get_document("q").ok(), all)
                })
                .map(|id| key(&id))
                .collect(),
            "findAndModify" | "findandmodify" => self
                .matching_ids(db, collection, command.get_document("query").ok(), false)
                .iter()
                .map(key)
                .collect(),
            _ => Vec::new(),
        }
    }

    /// The `_id`s of the documents of `db.collection` that `filter` matches (only the first
    /// unless `all`); none when the filter does not parse (the write will fail on it).
    fn matching_ids(
        &self,
        db: &str,
        collection: &str,
        filter: Option<&Document>,
        all: bool,
    ) -> Vec<Bson> {
        let Some(handle) = self.catalog.collection(db, collection) else {
            return Vec::new();
        };
        let empty = Document::new();
        let Ok(filter) = Filter::parse(filter.unwrap_or(&empty)) else {
            return Vec::new();
        };
        let collection = read(&handle);
        collection
            .matching_records(&filter, (!all).then_some(1))
            .into_iter()
            .filter_map(|record| collection.get(record)?.get("_id").cloned())
            .collect()
    }
}
