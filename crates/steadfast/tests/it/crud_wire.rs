//! Exact wire checks of the CRUD API against blackpipe's scripted server: how bulk writes are
//! split into commands and how replies map to results and errors.

use std::ops::Range;

use blackpipe::scripted::{Matcher, Responder, ScriptedServer};
use blackpipe::server::{Outcome, Reaction};
use bson::{Bson, Document, doc};
use futures_util::TryStreamExt;
use steadfast::{Client, ErrorKind};

use crate::{client, server};

/// Answers every write command with `n` = its number of statements (and nothing else).
pub(crate) fn acknowledge_writes(server: &ScriptedServer) {
    for (command, sequence) in [
        ("insert", "documents"),
        ("update", "updates"),
        ("delete", "deletes"),
    ] {
        server
            .rule(
                Matcher::command(command),
                Responder::from_fn(move |request, _| {
                    let n = request
                        .command()
                        .get_array(sequence)
                        .map(|a| a.len())
                        .unwrap_or(0);
                    Outcome::from(Reaction::reply(doc! { "n": n as i32, "ok": 1 }))
                }),
            )
            .always();
    }
}

/// The number of statements of every recorded `command`, in order.
fn batch_sizes(server: &ScriptedServer, command: &str, sequence: &str) -> Vec<usize> {
    server
        .requests_matching(&Matcher::command(command))
        .iter()
        .map(|r| {
            assert!(
                r.request().came_in_sequence(sequence),
                "statements travel as a document sequence"
            );
            r.command()
                .get_array(sequence)
                .map(|a| a.len())
                .unwrap_or(0)
        })
        .collect()
}

pub(crate) async fn client_for(server: &ScriptedServer) -> Client {
    client(server, "serverSelectionTimeoutMS=5000").await
}

#[tokio::test]
async fn insert_many_is_split_by_max_write_batch_size() {
    let server = server().await;
    server.patch_hello(doc! { "maxWriteBatchSize": 3 });
    acknowledge_writes(&server);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let result = items
        .insert_many((0..10).map(|i| doc! { "i": i }))
        .await
        .unwrap();
    assert_eq!(result.inserted_ids.len(), 10);
    assert_eq!(batch_sizes(&server, "insert", "documents"), [3, 3, 3, 1]);
    // Every document got an _id, first, before it was sent.
    for request in server.requests_matching(&Matcher::command("insert")) {
        for document in request.command().get_array("documents").unwrap() {
            let document = document.as_document().unwrap();
            assert_eq!(document.keys().next().map(String::as_str), Some("_id"));
        }
        assert_eq!(request.command().get_bool("ordered").ok(), Some(true));
    }
}

#[tokio::test]
async fn insert_many_is_split_by_max_message_size() {
    let server = server().await;
    // Room for about three 10 kB documents once the driver's 16 KiB overhead is set aside
    // (the document limit is lowered too: a message always holds the largest document).
    server.patch_hello(
        doc! { "maxBsonObjectSize": 32_000, "maxMessageSizeBytes": 16 * 1024 + 32_000 },
    );
    acknowledge_writes(&server);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    items
        .insert_many((0..7).map(|i| doc! { "i": i, "pad": "p".repeat(10_000) }))
        .await
        .unwrap();
    assert_eq!(batch_sizes(&server, "insert", "documents"), [3, 3, 1]);
}

#[tokio::test]
async fn mixed_bulk_writes_send_one_command_per_run_and_batch() {
    let server = server().await;
    server.patch_hello(doc! { "maxWriteBatchSize": 2 });
    acknowledge_writes(&server);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let models = vec![
        steadfast::WriteModel::InsertOne(steadfast::InsertOneModel::new(doc! { "a": 1 })),
        steadfast::WriteModel::DeleteOne(steadfast::DeleteModel::new(doc! { "a": 1 })),
        steadfast::WriteModel::InsertOne(steadfast::InsertOneModel::new(doc! { "a": 2 })),
        steadfast::WriteModel::InsertOne(steadfast::InsertOneModel::new(doc! { "a": 3 })),
        steadfast::WriteModel::InsertOne(steadfast::InsertOneModel::new(doc! { "a": 4 })),
        steadfast::WriteModel::DeleteMany(steadfast::DeleteModel::new(doc! {})),
    ];
    let result = items.bulk_write(models.clone()).await.unwrap();
    assert_eq!((result.inserted_count, result.deleted_count), (4, 2));
    // Ordered: insert [1] | delete [1] | insert [2, 1] | delete [1].
    let order: Vec<String> = server
        .requests()
        .into_iter()
        .filter(|r| matches!(r.command_name(), "insert" | "delete"))
        .map(|r| r.command_name().to_string())
        .collect();
    assert_eq!(order, ["insert", "delete", "insert", "insert", "delete"]);
    assert_eq!(batch_sizes(&server, "insert", "documents"), [1, 2, 1]);
}

#[tokio::test]
async fn write_errors_across_batches_are_reported_at_the_callers_positions() {
    let server = server().await;
    server.patch_hello(doc! { "maxWriteBatchSize": 2 });
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let insert = tokio::spawn(async move {
        items
            .insert_many((0..5).map(|i| doc! { "_id": i }))
            .ordered(false)
            .await
    });
    // Batch [0, 1]: fine. Batch [2, 3]: its index 1 (the caller's 3) fails. Batch [4]: fine.
    server
        .next_request(Matcher::command("insert"))
        .await
        .unwrap()
        .reply(doc! { "n": 2, "ok": 1 })
        .unwrap();
    let second = server
        .next_request(Matcher::command("insert"))
        .await
        .unwrap();
    assert_eq!(second.command().get_bool("ordered").ok(), Some(false));
    second
        .reply(doc! {
            "n": 1,
            "writeErrors": [ { "index": 1, "code": 11000, "codeName": "DuplicateKey", "errmsg": "E11000 duplicate key error" } ],
            "ok": 1,
        })
        .unwrap();
    server
        .next_request(Matcher::command("insert"))
        .await
        .unwrap()
        .reply(doc! { "n": 1, "ok": 1 })
        .unwrap();
    let error = insert.await.unwrap().unwrap_err();
    let ErrorKind::InsertMany(failure) = error.kind() else {
        panic!("expected an insert_many failure, got {error:?}");
    };
    let write_errors = failure.write_errors.as_deref().unwrap_or_default();
    assert_eq!(write_errors.len(), 1);
    assert_eq!(write_errors[0].index, 3);
    assert_eq!(write_errors[0].code, 11000);
    assert_eq!(write_errors[0].code_name.as_deref(), Some("DuplicateKey"));
    assert_eq!(write_errors[0].message, "E11000 duplicate key error");
    let mut inserted: Vec<usize> = failure.inserted_ids.keys().copied().collect();
    inserted.sort_unstable();
    assert_eq!(inserted, [0, 1, 2, 4]);
}

#[tokio::test]
async fn an_ordered_bulk_stops_after_the_batch_with_a_write_error() {
    let server = server().await;
    server.patch_hello(doc! { "maxWriteBatchSize": 2 });
    server
        .rule(
            Matcher::command("insert"),
            doc! { "n": 0, "writeErrors": [ { "index": 0, "code": 121, "errmsg": "Document failed validation" } ], "ok": 1 },
        )
        .always();
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let error = items
        .insert_many((0..6).map(|i| doc! { "_id": i }))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Some(121));
    assert_eq!(
        batch_sizes(&server, "insert", "documents"),
        [2],
        "no batch after the failure"
    );
}

#[tokio::test]
async fn write_concern_errors_fail_the_write_but_do_not_stop_an_ordered_bulk() {
    let server = server().await;
    server.patch_hello(doc! { "maxWriteBatchSize": 1 });
    server
        .rule(
            Matcher::command("insert"),
            doc! {
                "n": 1,
                "writeConcernError": { "code": 64, "codeName": "WriteConcernFailed", "errmsg": "waiting for replication timed out", "errInfo": { "wtimeout": true } },
                "ok": 1,
            },
        )
        .always();
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let error = items
        .insert_many([doc! { "_id": 1 }, doc! { "_id": 2 }])
        .await
        .unwrap_err();
    let ErrorKind::InsertMany(failure) = error.kind() else {
        panic!("expected an insert_many failure, got {error:?}");
    };
    assert!(failure.write_errors.is_none());
    let wce = failure.write_concern_error.as_ref().unwrap();
    assert_eq!(
        (wce.code, wce.message.as_str()),
        (64, "waiting for replication timed out")
    );
    assert_eq!(wce.details, Some(doc! { "wtimeout": true }));
    assert_eq!(batch_sizes(&server, "insert", "documents"), [1, 1]);
}

#[tokio::test]
async fn an_oversized_document_is_rejected_and_nothing_is_sent() {
    let server = server().await;
    server.patch_hello(doc! { "maxBsonObjectSize": 1000 });
    acknowledge_writes(&server);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let error = items
        .insert_many([doc! { "ok": 1 }, doc! { "big": "b".repeat(2000) }])
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    assert!(
        server
            .requests_matching(&Matcher::command("insert"))
            .is_empty()
    );
}

/// Scripts a cursor of `{i: n}` documents: `find` answers the first batch, then each `getMore`
/// the next one, each rule used once. A batch's id is the cursor id its reply carries (0 once
/// the server has closed the cursor).
pub(crate) fn script_cursor(server: &ScriptedServer, batches: &[(Range<i32>, i64)]) {
    for (n, (documents, id)) in batches.iter().enumerate() {
        let (command, batch) = if n == 0 {
            ("find", "firstBatch")
        } else {
            ("getMore", "nextBatch")
        };
        let reply = cursor_reply(batch, documents.clone(), *id);
        server.rule(Matcher::command(command), reply).once();
    }
}

/// A find whose first batch holds `first` documents of a cursor with id 42.
pub(crate) fn cursor_reply(
    batch: &str,
    documents: impl IntoIterator<Item = i32>,
    id: i64,
) -> Document {
    let documents: Vec<Bson> = documents
        .into_iter()
        .map(|i| Bson::Document(doc! { "i": i }))
        .collect();
    doc! { "cursor": { "id": id, "ns": "db.items", batch: documents }, "ok": 1 }
}

#[tokio::test]
async fn typed_command_errors_carry_the_servers_code_and_message() {
    let server = server().await;
    server
        .rule(
            Matcher::command("aggregate"),
            Reaction::error(
                16436,
                "Location16436",
                "Unrecognized pipeline stage name: '$nope'",
            ),
        )
        .always();
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let error = items.aggregate([doc! { "$nope": {} }]).await.unwrap_err();
    let ErrorKind::Command(command) = error.kind() else {
        panic!("expected a command error, got {error:?}");
    };
    assert_eq!(command.code, 16436);
    assert_eq!(command.code_name, "Location16436");
    assert!(command.message.contains("$nope"));
}

#[tokio::test]
async fn a_writing_aggregation_carries_the_write_concern_and_no_batch_size() {
    let server = server().await;
    server
        .rule(
            Matcher::command("aggregate"),
            cursor_reply("firstBatch", 0..0, 0),
        )
        .always();
    let client = client(&server, "serverSelectionTimeoutMS=5000&w=majority").await;
    let db = client.database("db");
    let items = db.collection::<Document>("items");
    let out: Vec<Document> = items
        .aggregate([doc! { "$match": {} }, doc! { "$out": "archive" }])
        .batch_size(5)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(out.is_empty());
    let read: Vec<Document> = items
        .aggregate([doc! { "$match": {} }])
        .batch_size(5)
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert!(read.is_empty());
    let _: Vec<Document> = db
        .aggregate([doc! { "$currentOp": {} }])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();

    let requests = server.requests_matching(&Matcher::command("aggregate"));
    let (writing, reading, database) = (
        requests[0].command(),
        requests[1].command(),
        requests[2].command(),
    );
    assert_eq!(
        writing.get_document("cursor").ok(),
        Some(&doc! {}),
        "no batch size with $out"
    );
    assert_eq!(
        writing.get_document("writeConcern").ok(),
        Some(&doc! { "w": "majority" })
    );
    assert_eq!(
        reading.get_document("cursor").ok(),
        Some(&doc! { "batchSize": 5_i64 })
    );
    assert!(
        reading.get("writeConcern").is_none(),
        "a read sends no write concern"
    );
    assert_eq!(database.get_i32("aggregate").ok(), Some(1));
    assert_eq!(requests[2].database(), "db");
}
