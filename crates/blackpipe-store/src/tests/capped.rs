//! Capped collections and their tailable (awaitData) cursors.

use std::time::Duration;

use bson::{Bson, Document, doc};

use super::{at, batch, cursor_id, error_code, ids, insert, new_store, run, run_ok};
use crate::{CommandContext, CommandOutcome, Store};

/// A store with capped collection `c` created with `options` (merged into the `create`).
fn capped_store(options: Document) -> Store {
    let store = new_store();
    let mut create = doc! { "create": "c", "capped": true };
    create.extend(options);
    run_ok(&store, "db", create);
    store
}

fn insert_ids(store: &Store, ids: impl IntoIterator<Item = i32>) {
    insert(
        store,
        "c",
        ids.into_iter().map(|id| doc! { "_id": id }).collect(),
    );
}

fn batch_ids(reply: &Document) -> Vec<i32> {
    batch(reply)
        .iter()
        .map(|document| document.get_i32("_id").unwrap_or(-1))
        .collect()
}

fn outcome(store: &Store, command: Document) -> CommandOutcome {
    store.execute("db", &command, &CommandContext::new(at(0)))
}

fn get_more(store: &Store, id: i64) -> CommandOutcome {
    outcome(store, doc! { "getMore": id, "collection": "c" })
}

/// Opens a tailable cursor on `c`, returning the first batch's ids and the cursor id.
fn tail(store: &Store, extra: Document) -> (Vec<i32>, i64) {
    let mut find = doc! { "find": "c", "tailable": true };
    find.extend(extra);
    let reply = run_ok(store, "db", find);
    (batch_ids(&reply), cursor_id(&reply))
}

#[test]
fn create_rounds_the_size_up_and_list_collections_shows_the_options() {
    let store = capped_store(doc! { "size": 1000, "max": 3 });
    let reply = run_ok(&store, "db", doc! { "listCollections": 1 });
    let entries = batch(&reply);
    let options = entries[0].get_document("options").unwrap();
    assert_eq!(
        options,
        &doc! { "capped": true, "size": 1024_i64, "max": 3_i64 }
    );
}

#[test]
fn bad_capped_options_get_mongods_errors() {
    let store = new_store();
    let cases = [
        (doc! { "create": "a", "capped": true }, 72),
        (doc! { "create": "a", "capped": true, "size": -1 }, 2),
        (doc! { "create": "a", "capped": true, "size": "big" }, 14),
        (doc! { "create": "a", "max": 5 }, 2),
        (
            doc! { "create": "a", "capped": true, "size": 4096, "max": 1_i64 << 31 },
            2,
        ),
        (
            doc! { "create": "a", "capped": true, "size": 4096, "expireAfterSeconds": 5 },
            72,
        ),
    ];
    for (command, code) in cases {
        assert_eq!(
            error_code(&run(&store, "db", command.clone())),
            code,
            "{command}"
        );
    }
}

#[test]
fn inserts_past_max_remove_the_oldest_documents() {
    let store = capped_store(doc! { "size": 100_000, "max": 3 });
    insert_ids(&store, 1..=5);
    assert_eq!(ids(&store, "c", doc! {}), [3, 4, 5]);
}

#[test]
fn inserts_past_size_remove_the_oldest_documents() {
    // Each document takes 102 bytes: two fit in 256, a third does not.
    let store = capped_store(doc! { "size": 200 });
    let padding = "x".repeat(80);
    let documents = (1..=5)
        .map(|id| doc! { "_id": id, "pad": padding.clone() })
        .collect();
    insert(&store, "c", documents);
    assert_eq!(ids(&store, "c", doc! {}), [4, 5]);
}

#[test]
fn a_document_larger_than_the_collection_is_refused() {
    let store = capped_store(doc! { "size": 256 });
    let reply = run_ok(
        &store,
        "db",
        doc! { "insert": "c", "documents": [{ "_id": 1, "pad": "x".repeat(300) }] },
    );
    let errors = reply.get_array("writeErrors").unwrap();
    let code = errors[0].as_document().unwrap().get_i32("code").unwrap();
    assert_eq!(code, 2);
}

#[test]
fn documents_keep_their_insertion_order() {
    let store = capped_store(doc! { "size": 4096 });
    insert_ids(&store, [5, 1, 3]);
    assert_eq!(ids(&store, "c", doc! {}), [5, 1, 3]);
}

#[test]
fn a_tailable_find_keeps_its_cursor_open_when_the_results_run_out() {
    let store = capped_store(doc! { "size": 4096 });
    insert_ids(&store, [1, 2]);
    let (first, id) = tail(&store, doc! {});
    assert_eq!(first, [1, 2]);
    assert_ne!(id, 0);
    let more = get_more(&store, id);
    assert_eq!(batch_ids(&more.reply), Vec::<i32>::new());
    assert_eq!(cursor_id(&more.reply), id);
    // Without awaitData the empty batch is the answer: nothing to wait for.
    assert!(more.awaiting_inserts.is_none());
}

#[test]
fn a_tailable_get_more_returns_the_matching_documents_inserted_since() {
    let store = capped_store(doc! { "size": 4096 });
    insert_ids(&store, [1, 2]);
    let (_, id) = tail(
        &store,
        doc! { "filter": { "_id": { "$gte": 2 } }, "projection": { "_id": 1 } },
    );
    insert(
        &store,
        "c",
        vec![doc! { "_id": 0, "n": 1 }, doc! { "_id": 3, "n": 1 }],
    );
    let more = get_more(&store, id);
    assert_eq!(batch(&more.reply), [doc! { "_id": 3 }]);
    assert_eq!(cursor_id(&more.reply), id);
}

#[test]
fn a_tail_outlives_capping_of_the_records_it_already_passed() {
    let store = capped_store(doc! { "size": 4096, "max": 2 });
    insert_ids(&store, 1..=3);
    let (first, id) = tail(&store, doc! { "batchSize": 1 });
    assert_eq!(first, [2]);
    // The rest of the first results, then nothing new.
    assert_eq!(batch_ids(&get_more(&store, id).reply), [3]);
    assert_eq!(batch_ids(&get_more(&store, id).reply), Vec::<i32>::new());
    // Record 2 goes; the tail is at 3, which stays.
    insert_ids(&store, [4]);
    assert_eq!(batch_ids(&get_more(&store, id).reply), [4]);
    insert_ids(&store, [5]);
    assert_eq!(batch_ids(&get_more(&store, id).reply), [5]);
}

#[test]
fn a_tail_whose_record_was_capped_away_loses_its_position() {
    let store = capped_store(doc! { "size": 4096, "max": 2 });
    insert_ids(&store, [1, 2]);
    let (_, id) = tail(&store, doc! {});
    // 3 and 4 push out 1 and 2, the record the cursor stopped at.
    insert_ids(&store, [3, 4]);
    assert_eq!(error_code(&get_more(&store, id).reply), 136);
    // The cursor is closed.
    assert_eq!(error_code(&get_more(&store, id).reply), 43);
}

#[test]
fn a_tail_on_a_dropped_collection_is_killed_even_if_one_of_that_name_returns() {
    let store = capped_store(doc! { "size": 4096 });
    insert_ids(&store, [1]);
    let (_, id) = tail(&store, doc! {});
    run_ok(&store, "db", doc! { "drop": "c" });
    run_ok(
        &store,
        "db",
        doc! { "create": "c", "capped": true, "size": 4096 },
    );
    insert_ids(&store, [1, 2]);
    assert_eq!(error_code(&get_more(&store, id).reply), 175);
}

#[test]
fn an_await_data_get_more_that_finds_nothing_waits_for_an_insert() {
    let store = capped_store(doc! { "size": 4096 });
    insert_ids(&store, [1]);
    let (_, id) = tail(&store, doc! { "awaitData": true });
    let more = outcome(
        &store,
        doc! { "getMore": id, "collection": "c", "maxTimeMS": 250 },
    );
    assert_eq!(batch_ids(&more.reply), Vec::<i32>::new());
    assert_eq!(cursor_id(&more.reply), id);
    let mut wait = more.awaiting_inserts.expect("an awaitData cursor waits");
    assert_eq!(wait.max_wait(), Duration::from_millis(250));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        tokio::select! {
            biased;
            () = wait.inserted() => panic!("woken before any insert"),
            () = std::future::ready(()) => {}
        }
        insert_ids(&store, [2]);
        wait.inserted().await;
    });
    assert_eq!(batch_ids(&get_more(&store, id).reply), [2]);
}

#[test]
fn an_await_data_get_more_without_max_time_waits_one_second() {
    let store = capped_store(doc! { "size": 4096 });
    insert_ids(&store, [1]);
    let (_, id) = tail(&store, doc! { "awaitData": true });
    let wait = get_more(&store, id).awaiting_inserts.expect("waits");
    assert_eq!(wait.max_wait(), Duration::from_secs(1));
}

#[test]
fn tailable_finds_that_mongod_refuses() {
    let store = capped_store(doc! { "size": 4096 });
    insert_ids(&store, [1]);
    insert(&store, "plain", vec![doc! { "_id": 1 }]);
    let cases = [
        (doc! { "find": "plain", "tailable": true }, 2),
        (
            doc! { "find": "c", "tailable": true, "sort": { "_id": 1 } },
            2,
        ),
        (
            doc! { "find": "c", "tailable": true, "singleBatch": true },
            2,
        ),
        (doc! { "find": "c", "awaitData": true }, 9),
    ];
    for (command, code) in cases {
        assert_eq!(
            error_code(&run(&store, "db", command.clone())),
            code,
            "{command}"
        );
    }
    let (first, id) = tail(&store, doc! { "sort": { "$natural": 1 } });
    assert_eq!((first, id != 0), (vec![1], true));
}

#[test]
fn a_tailable_find_on_an_empty_capped_collection_keeps_no_cursor() {
    let store = capped_store(doc! { "size": 4096 });
    assert_eq!(tail(&store, doc! {}), (Vec::new(), 0));
}

#[test]
fn max_time_on_a_get_more_is_refused_for_a_tail_without_await_data() {
    let store = capped_store(doc! { "size": 4096 });
    insert_ids(&store, [1]);
    let (_, id) = tail(&store, doc! {});
    let reply = run(
        &store,
        "db",
        doc! { "getMore": id, "collection": "c", "maxTimeMS": 100 },
    );
    assert_eq!(error_code(&reply), 2);
    assert!(matches!(reply.get("ok"), Some(Bson::Double(value)) if *value == 0.0));
}
