//! Unit tests of the store, by area.

mod admin;
// Accumulators and window functions (accumulators).
mod agg_accumulators;
mod agg_windows;
// Single-input stages and system variables (stages-single).
mod agg_bucket;
mod agg_densify;
mod agg_fill;
mod agg_sample_redact;
// Stages reading other collections and running sub-pipelines (stages-multi).
mod agg_graph_lookup;
mod agg_lookup;
mod agg_lookup_context;
mod agg_union_facet;
mod aggregate;
mod atomic_commit;
mod bounds;
mod bulk_write;
mod capped;
mod change_signal;
mod change_stream;
mod change_stream_resume;
mod coll_stats;
mod collation;
mod collectionless;
mod crud_features;
mod cursors;
mod decimal;
mod expiry;
mod explain;
mod expr_arrays;
mod expr_convert;
mod expr_date_arith;
mod expr_dates;
mod expr_eval;
mod expr_math;
mod expr_sets;
mod expr_strings;
mod expr_vars;
mod expr_vars_scalar;
mod find_and_modify;
mod fork_and_clock;
mod hints;
mod integer;
mod limits;
mod majority;
mod oplog;
mod positional;
mod projection;
mod query;
mod regex;
mod replication;
mod retryable_writes;
mod snapshot_reads;
mod system_vars;
mod transactions;
mod transfers;
mod ttl;
mod update;
mod update_description;
mod update_pipelines;
mod validation;
mod value_order;
mod views;
mod writes;

use bson::{Bson, DateTime, Document, doc};

use super::{CommandContext, Store, StoreOptions};

/// A fixed clock: 2024-01-01T00:00:00Z plus `seconds`.
fn at(seconds: i64) -> DateTime {
    DateTime::from_millis(1_704_067_200_000 + seconds * 1000)
}

fn new_store() -> Store {
    Store::new(StoreOptions::default().with_seed(7))
}

/// Runs a command in database `db` at the fixed clock.
fn run(store: &Store, db: &str, command: Document) -> Document {
    store
        .execute(db, &command, &CommandContext::new(at(0)))
        .reply
}

/// Runs a command that must succeed and returns its reply.
fn run_ok(store: &Store, db: &str, command: Document) -> Document {
    let reply = run(store, db, command.clone());
    assert_eq!(
        reply.get("ok"),
        Some(&Bson::Double(1.0)),
        "command {command} failed: {reply}"
    );
    reply
}

/// The code of a failed command.
fn error_code(reply: &Document) -> i32 {
    assert_eq!(
        reply.get("ok"),
        Some(&Bson::Double(0.0)),
        "expected a failure: {reply}"
    );
    reply.get_i32("code").unwrap_or_default()
}

fn insert(store: &Store, collection: &str, documents: Vec<Document>) {
    let reply = run_ok(
        store,
        "db",
        doc! { "insert": collection, "documents": documents },
    );
    assert!(!reply.contains_key("writeErrors"), "insert failed: {reply}");
}

/// `cursor.firstBatch` or `cursor.nextBatch` of a cursor reply.
fn batch(reply: &Document) -> Vec<Document> {
    let cursor = reply
        .get_document("cursor")
        .unwrap_or_else(|_| panic!("no cursor in {reply}"));
    let items = cursor
        .get_array("firstBatch")
        .or_else(|_| cursor.get_array("nextBatch"))
        .unwrap_or_else(|_| panic!("no batch in {reply}"));
    items
        .iter()
        .filter_map(|item| item.as_document().cloned())
        .collect()
}

fn cursor_id(reply: &Document) -> i64 {
    reply
        .get_document("cursor")
        .and_then(|cursor| cursor.get_i64("id"))
        .unwrap_or(-1)
}

/// All documents matching `filter` through a single-batch find.
fn find(store: &Store, collection: &str, filter: Document) -> Vec<Document> {
    batch(&run_ok(
        store,
        "db",
        doc! { "find": collection, "filter": filter, "batchSize": 1000 },
    ))
}

/// The `_id`s of the documents matching `filter`, as i32.
fn ids(store: &Store, collection: &str, filter: Document) -> Vec<i32> {
    find(store, collection, filter)
        .iter()
        .map(|document| document.get_i32("_id").unwrap_or(-1))
        .collect()
}

#[test]
fn the_store_can_be_shared_between_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Store>();
}
