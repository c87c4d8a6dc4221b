//! Change streams: the events of each kind of write, their scopes, batches and errors.

use bson::{Bson, Document, doc};

use super::{batch, cursor_id, error_code, insert, new_store, run, run_ok};
use crate::{CommandContext, Store};

/// Opens a change stream with `aggregate: target` in `db` and pipeline `stages`; returns the
/// reply.
fn open(store: &Store, db: &str, target: Bson, stages: Vec<Document>) -> Document {
    run(
        store,
        db,
        doc! { "aggregate": target, "pipeline": stages, "cursor": {} },
    )
}

/// Opens a stream on `db.c` with `$changeStream: options`, returning the cursor id.
fn watch_c(store: &Store, options: Document) -> i64 {
    let reply = open(
        store,
        "db",
        "c".into(),
        vec![doc! { "$changeStream": options }],
    );
    let id = cursor_id(&reply);
    assert!(id > 0, "no open cursor: {reply}");
    id
}

/// The next batch of change-stream cursor `id` (its `collection` field as the driver sends it).
pub(super) fn next(store: &Store, db: &str, collection: &str, id: i64) -> Document {
    run_ok(store, db, doc! { "getMore": id, "collection": collection })
}

fn types(events: &[Document]) -> Vec<String> {
    events
        .iter()
        .map(|event| event.get_str("operationType").unwrap_or("?").to_owned())
        .collect()
}

pub(super) fn resume_token(reply: &Document) -> Document {
    reply
        .get_document("cursor")
        .and_then(|cursor| cursor.get_document("postBatchResumeToken"))
        .cloned()
        .unwrap_or_else(|_| panic!("no postBatchResumeToken in {reply}"))
}

#[test]
fn a_stream_shows_insert_update_replace_and_delete_in_the_order_applied() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 0 }]);
    let id = watch_c(&store, doc! {});
    insert(
        &store,
        "c",
        vec![doc! { "_id": 1, "a": 1, "arr": [1, 2, 3], "gone": true }],
    );
    run_ok(
        &store,
        "db",
        doc! { "update": "c", "updates": [
            { "q": { "_id": 1 }, "u": [{ "$set": { "a": 2, "arr": [1, 5] } }, { "$unset": "gone" }] },
            { "q": { "_id": 1 }, "u": { "b": 1 } },
        ] },
    );
    run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": { "_id": 1 }, "limit": 1 }] },
    );
    let events = batch(&next(&store, "db", "c", id));
    assert_eq!(types(&events), ["insert", "update", "replace", "delete"]);
    let [inserted, updated, replaced, deleted] = &events[..] else {
        unreachable!()
    };
    assert_eq!(
        inserted.get_document("fullDocument").ok(),
        Some(&doc! { "_id": 1, "a": 1, "arr": [1, 2, 3], "gone": true })
    );
    assert_eq!(
        inserted.get_document("ns").ok(),
        Some(&doc! { "db": "db", "coll": "c" })
    );
    assert_eq!(
        inserted.get_document("documentKey").ok(),
        Some(&doc! { "_id": 1 })
    );
    assert!(matches!(
        inserted.get("clusterTime"),
        Some(Bson::Timestamp(_))
    ));
    assert!(matches!(inserted.get("wallTime"), Some(Bson::DateTime(_))));
    assert_eq!(
        updated.get_document("updateDescription").ok(),
        Some(&doc! {
            "updatedFields": { "a": 2, "arr.1": 5 },
            "removedFields": ["gone"],
            "truncatedArrays": [{ "field": "arr", "newSize": 2 }],
        })
    );
    assert!(
        !updated.contains_key("fullDocument"),
        "default fullDocument: {updated}"
    );
    assert_eq!(
        replaced.get_document("fullDocument").ok(),
        Some(&doc! { "_id": 1, "b": 1 })
    );
    assert_eq!(
        deleted.get_document("documentKey").ok(),
        Some(&doc! { "_id": 1 })
    );
    assert!(!deleted.contains_key("fullDocumentBeforeChange"));
    let tokens: Vec<&Bson> = events.iter().filter_map(|event| event.get("_id")).collect();
    assert_eq!(tokens.len(), 4);
    assert!(
        tokens.windows(2).all(|pair| pair[0] != pair[1]),
        "tokens repeat"
    );
}

#[test]
fn every_batch_carries_a_post_batch_resume_token_and_batch_size_splits_without_loss() {
    let store = new_store();
    let reply = open(&store, "db", "c".into(), vec![doc! { "$changeStream": {} }]);
    assert!(batch(&reply).is_empty());
    resume_token(&reply);
    let id = cursor_id(&reply);
    insert(&store, "c", (1..=5).map(|n| doc! { "_id": n }).collect());
    let mut seen = Vec::new();
    for _ in 0..3 {
        let reply = run_ok(
            &store,
            "db",
            doc! { "getMore": id, "collection": "c", "batchSize": 2 },
        );
        let events = batch(&reply);
        if let (2, Some(last)) = (events.len(), events.last()) {
            // A batch cut short by its size ends at its last event.
            assert_eq!(last.get_document("_id").ok(), Some(&resume_token(&reply)));
        }
        seen.extend(events.iter().filter_map(|event| {
            event
                .get_document("documentKey")
                .ok()
                .and_then(|key| key.get_i32("_id").ok())
        }));
        assert_eq!(cursor_id(&reply), id, "a change stream stays open");
    }
    assert_eq!(seen, [1, 2, 3, 4, 5]);
    let empty = next(&store, "db", "c", id);
    assert!(batch(&empty).is_empty());
    resume_token(&empty);
}

#[test]
fn a_get_more_that_finds_nothing_asks_its_caller_to_wait_for_a_write() {
    let store = new_store();
    let id = watch_c(&store, doc! {});
    let command = doc! { "getMore": id, "collection": "c", "maxTimeMS": 50 };
    let idle = store.execute("db", &command, &CommandContext::new(super::at(0)));
    let wait = idle
        .awaiting_inserts
        .expect("an empty change-stream getMore waits");
    assert_eq!(wait.max_wait(), std::time::Duration::from_millis(50));
    insert(&store, "other", vec![doc! { "_id": 1 }]);
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let found = store.execute("db", &command, &CommandContext::new(super::at(0)));
    assert!(found.awaiting_inserts.is_none());
    assert_eq!(types(&batch(&found.reply)), ["insert"]);
}

#[test]
fn a_collection_drop_shows_drop_then_invalidate_and_closes_the_cursor() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let id = watch_c(&store, doc! {});
    run_ok(&store, "db", doc! { "drop": "c" });
    let reply = next(&store, "db", "c", id);
    assert_eq!(types(&batch(&reply)), ["drop", "invalidate"]);
    assert_eq!(cursor_id(&reply), 0);
    assert_eq!(
        error_code(&run(
            &store,
            "db",
            doc! { "getMore": id, "collection": "c" }
        )),
        43
    );
}

#[test]
fn a_rename_shows_its_target_then_invalidates_a_collection_stream() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let id = watch_c(&store, doc! {});
    run_ok(
        &store,
        "admin",
        doc! { "renameCollection": "db.c", "to": "db.d" },
    );
    let reply = next(&store, "db", "c", id);
    let events = batch(&reply);
    assert_eq!(types(&events), ["rename", "invalidate"]);
    assert_eq!(
        events[0].get_document("to").ok(),
        Some(&doc! { "db": "db", "coll": "d" })
    );
    assert_eq!(cursor_id(&reply), 0);
}

#[test]
fn a_database_stream_sees_its_collections_and_ends_at_drop_database() {
    let store = new_store();
    let reply = open(&store, "db", 1.into(), vec![doc! { "$changeStream": {} }]);
    let id = cursor_id(&reply);
    assert_eq!(
        reply
            .get_document("cursor")
            .and_then(|cursor| cursor.get_str("ns"))
            .ok(),
        Some("db.$cmd.aggregate")
    );
    insert(&store, "a", vec![doc! { "_id": 1 }]);
    run_ok(
        &store,
        "other",
        doc! { "insert": "a", "documents": [{ "_id": 2 }] },
    );
    insert(&store, "b", vec![doc! { "_id": 3 }]);
    run_ok(&store, "db", doc! { "dropDatabase": 1 });
    let reply = next(&store, "db", "$cmd.aggregate", id);
    let events = batch(&reply);
    assert_eq!(
        types(&events),
        [
            "insert",
            "insert",
            "drop",
            "drop",
            "dropDatabase",
            "invalidate"
        ]
    );
    assert_eq!(
        events[4].get_document("ns").ok(),
        Some(&doc! { "db": "db" })
    );
    assert_eq!(cursor_id(&reply), 0);
}

#[test]
fn a_cluster_stream_sees_every_database_but_the_internal_ones() {
    let store = new_store();
    let stage = doc! { "$changeStream": { "allChangesForCluster": true } };
    let id = cursor_id(&open(&store, "admin", 1.into(), vec![stage]));
    run_ok(
        &store,
        "one",
        doc! { "insert": "a", "documents": [{ "_id": 1 }] },
    );
    run_ok(
        &store,
        "config",
        doc! { "insert": "a", "documents": [{ "_id": 2 }] },
    );
    run_ok(
        &store,
        "two",
        doc! { "insert": "b", "documents": [{ "_id": 3 }] },
    );
    run_ok(&store, "one", doc! { "dropDatabase": 1 });
    let events = batch(&next(&store, "admin", "$cmd.aggregate", id));
    assert_eq!(types(&events), ["insert", "insert", "drop", "dropDatabase"]);
    let db_of = |event: &Document| {
        event
            .get_document("ns")
            .and_then(|ns| ns.get_str("db"))
            .map(str::to_owned)
    };
    assert_eq!(db_of(&events[1]).ok().as_deref(), Some("two"));
    // Without allChangesForCluster, admin cannot be watched.
    let refused = open(
        &store,
        "admin",
        1.into(),
        vec![doc! { "$changeStream": {} }],
    );
    assert_eq!(error_code(&refused), 73);
}

#[test]
fn stages_after_change_stream_filter_and_reshape_events() {
    let store = new_store();
    let reply = open(
        &store,
        "db",
        "c".into(),
        vec![
            doc! { "$changeStream": {} },
            doc! { "$match": { "fullDocument.keep": true } },
            doc! { "$project": { "documentKey": 1 } },
        ],
    );
    let id = cursor_id(&reply);
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "keep": false },
            doc! { "_id": 2, "keep": true },
        ],
    );
    let reply = next(&store, "db", "c", id);
    let events = batch(&reply);
    assert_eq!(events.len(), 1);
    assert_eq!(
        events[0].get_document("documentKey").ok(),
        Some(&doc! { "_id": 2 })
    );
    assert_eq!(events[0].keys().collect::<Vec<_>>(), ["_id", "documentKey"]);
}

#[test]
fn an_event_whose_id_the_pipeline_removed_is_a_non_resumable_fatal_error() {
    let store = new_store();
    let reply = open(
        &store,
        "db",
        "c".into(),
        vec![
            doc! { "$changeStream": {} },
            doc! { "$project": { "_id": 0 } },
        ],
    );
    let id = cursor_id(&reply);
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let failed = run(&store, "db", doc! { "getMore": id, "collection": "c" });
    assert_eq!(error_code(&failed), 280);
    assert_eq!(
        failed.get_array("errorLabels").ok(),
        Some(&vec![Bson::String("NonResumableChangeStreamError".into())])
    );
    assert_eq!(
        store.open_cursor_count(),
        0,
        "a fatal error closes the cursor"
    );
}

#[test]
fn a_malformed_change_stream_gets_mongods_errors() {
    let store = new_store();
    let attempt = |stages: Vec<Document>| error_code(&open(&store, "db", "c".into(), stages));
    let stream = |options: Document| doc! { "$changeStream": options };
    assert_eq!(attempt(vec![doc! { "$match": {} }, stream(doc! {})]), 40602);
    assert_eq!(attempt(vec![stream(doc! {}), stream(doc! {})]), 40602);
    assert_eq!(attempt(vec![stream(doc! {}), doc! { "$out": "x" }]), 20);
    assert_eq!(
        attempt(vec![stream(doc! {}), doc! { "$group": { "_id": 1 } }]),
        20
    );
    assert_eq!(
        attempt(vec![stream(doc! {}), doc! { "$unsupported": "foo" }]),
        40324
    );
    assert_eq!(attempt(vec![stream(doc! { "bogus": 1 })]), 40415);
    assert_eq!(attempt(vec![stream(doc! { "fullDocument": "never" })]), 2);
    assert_eq!(attempt(vec![stream(doc! { "fullDocument": 1 })]), 14);
    assert_eq!(attempt(vec![doc! { "$changeStream": 1 }]), 9);
    let ts = Bson::Timestamp(bson::Timestamp {
        time: 1,
        increment: 0,
    });
    let token = resume_token(&open(&store, "db", "c".into(), vec![stream(doc! {})]));
    assert_eq!(
        attempt(vec![stream(
            doc! { "startAtOperationTime": ts, "resumeAfter": token }
        )]),
        40674
    );
    assert_eq!(
        attempt(vec![stream(doc! { "allChangesForCluster": true })]),
        72
    );
    let not_first = run(
        &store,
        "db",
        doc! {
            "aggregate": 1, "pipeline": [{ "$documents": [] }, { "$changeStream": {} }], "cursor": {},
        },
    );
    assert_eq!(error_code(&not_first), 40602);
}

#[test]
fn update_lookup_shows_the_current_document_and_images_follow_the_collection_option() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "create": "c", "changeStreamPreAndPostImages": { "enabled": true } },
    );
    insert(&store, "c", vec![doc! { "_id": 1, "n": 0 }]);
    let lookup = watch_c(&store, doc! { "fullDocument": "updateLookup" });
    let images = watch_c(
        &store,
        doc! {
            "fullDocument": "required", "fullDocumentBeforeChange": "required",
        },
    );
    let inc =
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$inc": { "n": 1 } } }] };
    run_ok(&store, "db", inc.clone());
    run_ok(&store, "db", inc);
    let looked_up = batch(&next(&store, "db", "c", lookup));
    // The lookup happens when the event is read: both show the document as it is now.
    for event in &looked_up {
        assert_eq!(
            event.get_document("fullDocument").ok(),
            Some(&doc! { "_id": 1, "n": 2 })
        );
    }
    let imaged = batch(&next(&store, "db", "c", images));
    let image = |event: &Document, field: &str| {
        event
            .get_document(field)
            .ok()
            .and_then(|d| d.get_i32("n").ok())
    };
    assert_eq!(image(&imaged[0], "fullDocumentBeforeChange"), Some(0));
    assert_eq!(image(&imaged[0], "fullDocument"), Some(1));
    assert_eq!(image(&imaged[1], "fullDocumentBeforeChange"), Some(1));
    assert_eq!(image(&imaged[1], "fullDocument"), Some(2));
}

#[test]
fn a_required_image_the_collection_does_not_record_fails_the_get_more() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    let required = watch_c(&store, doc! { "fullDocumentBeforeChange": "required" });
    let available = watch_c(&store, doc! { "fullDocumentBeforeChange": "whenAvailable" });
    run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": {}, "limit": 0 }] },
    );
    let failed = run(
        &store,
        "db",
        doc! { "getMore": required, "collection": "c" },
    );
    assert_eq!(error_code(&failed), 47);
    let events = batch(&next(&store, "db", "c", available));
    assert_eq!(events[0].get("fullDocumentBeforeChange"), Some(&Bson::Null));
}

#[test]
fn expanded_events_show_catalog_changes_and_collection_uuids() {
    let store = new_store();
    let plain = cursor_id(&open(
        &store,
        "db",
        1.into(),
        vec![doc! { "$changeStream": {} }],
    ));
    let expanded_stage = doc! { "$changeStream": { "showExpandedEvents": true } };
    let expanded = cursor_id(&open(&store, "db", 1.into(), vec![expanded_stage]));
    run_ok(&store, "db", doc! { "create": "c" });
    insert(&store, "c", vec![doc! { "_id": 1 }]);
    run_ok(
        &store,
        "db",
        doc! {
            "createIndexes": "c", "indexes": [{ "key": { "x": 1 }, "name": "x_1" }],
        },
    );
    run_ok(&store, "db", doc! { "dropIndexes": "c", "index": "x_1" });
    let shown = batch(&next(&store, "db", "$cmd.aggregate", expanded));
    assert_eq!(
        types(&shown),
        ["create", "insert", "createIndexes", "dropIndexes"]
    );
    assert!(
        shown
            .iter()
            .all(|event| event.contains_key("collectionUUID"))
    );
    let created = shown[2]
        .get_document("operationDescription")
        .and_then(|d| d.get_array("indexes"));
    assert_eq!(created.map(Vec::len).ok(), Some(1));
    let hidden = batch(&next(&store, "db", "$cmd.aggregate", plain));
    assert_eq!(types(&hidden), ["insert"]);
    assert!(!hidden[0].contains_key("collectionUUID"));
}

#[test]
fn coll_mod_turns_images_on_and_shows_as_a_modify_event() {
    let store = new_store();
    insert(&store, "c", vec![doc! { "_id": 1, "n": 0 }]);
    let id = watch_c(
        &store,
        doc! {
            "showExpandedEvents": true, "fullDocumentBeforeChange": "whenAvailable",
        },
    );
    let images_on = doc! { "collMod": "c", "changeStreamPreAndPostImages": { "enabled": true } };
    run_ok(&store, "db", images_on);
    run_ok(
        &store,
        "db",
        doc! { "delete": "c", "deletes": [{ "q": {}, "limit": 0 }] },
    );
    let events = batch(&next(&store, "db", "c", id));
    assert_eq!(types(&events), ["modify", "delete"]);
    assert_eq!(
        events[1].get_document("fullDocumentBeforeChange").ok(),
        Some(&doc! { "_id": 1, "n": 0 })
    );
    assert_eq!(
        error_code(&run(&store, "db", doc! { "collMod": "missing" })),
        26
    );
    assert_eq!(
        error_code(&run(&store, "db", doc! { "collMod": "c", "bogus": 1 })),
        40415
    );
    let malformed = doc! { "collMod": "c", "changeStreamPreAndPostImages": { "enabled": 1 } };
    assert_eq!(error_code(&run(&store, "db", malformed)), 9);
}

#[test]
fn the_suites_projections_reshape_events_and_keep_their_ids() {
    let ns = doc! { "db": "db", "coll": "c" };
    let cases = [
        (
            doc! { "operationType": "addedInFutureMongoDBVersion", "ns": 1 },
            ns.clone(),
        ),
        (
            doc! { "operationType": 1, "ns": 1, "newField": "newFieldValue" },
            ns.clone(),
        ),
        (
            doc! { "operationType": "insert", "ns.viewOn": "db.coll" },
            doc! { "viewOn": "db.coll" },
        ),
        (
            doc! { "operationType": "insert", "ns": { "db": "$ns.db", "coll": "$ns.coll", "viewOn": "db.coll" } },
            doc! { "db": "db", "coll": "c", "viewOn": "db.coll" },
        ),
        (
            doc! { "optype": "$operationType", "ns": 1, "newField": "value" },
            ns,
        ),
    ];
    for (projection, expected_ns) in cases {
        let store = new_store();
        let stages = vec![
            doc! { "$changeStream": {} },
            doc! { "$project": projection.clone() },
        ];
        let id = cursor_id(&open(&store, "db", "c".into(), stages));
        insert(&store, "c", vec![doc! { "_id": 1 }]);
        let reply = next(&store, "db", "c", id);
        let events = batch(&reply);
        assert_eq!(events.len(), 1, "{projection}: {reply}");
        assert!(events[0].contains_key("_id"), "{projection}: {reply}");
        assert_eq!(
            events[0].get_document("ns").ok(),
            Some(&expected_ns),
            "{projection}: {reply}"
        );
    }
}

#[test]
fn an_event_too_large_for_a_reply_is_an_error_not_an_oversized_batch() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "create": "c", "changeStreamPreAndPostImages": { "enabled": true } },
    );
    let large = "x".repeat(9 * 1024 * 1024);
    insert(&store, "c", vec![doc! { "_id": 1, "text": large.clone() }]);
    let id = watch_c(&store, doc! { "fullDocumentBeforeChange": "required" });
    let replace =
        doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "text": large, "v": 2 } }] };
    run_ok(&store, "db", replace);
    // The replacement and its pre-image together pass 16 MiB.
    let failed = run(&store, "db", doc! { "getMore": id, "collection": "c" });
    assert_eq!(error_code(&failed), 10334);
}

#[test]
fn a_change_stream_reads_with_majority_read_concern_only() {
    let store = crate::Store::default();
    let stream = |concern: Option<&str>| {
        let mut command =
            bson::doc! { "aggregate": "c", "pipeline": [{ "$changeStream": {} }], "cursor": {} };
        if let Some(level) = concern {
            command.insert("readConcern", bson::doc! { "level": level });
        }
        super::run(&store, "db", command)
    };
    assert_eq!(super::error_code(&stream(Some("local"))), 72);
    assert_eq!(super::error_code(&stream(Some("snapshot"))), 72);
    assert!(stream(Some("majority")).get_document("cursor").is_ok());
    assert!(stream(None).get_document("cursor").is_ok());
}
