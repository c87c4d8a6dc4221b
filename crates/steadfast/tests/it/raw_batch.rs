//! `.batch()`: the cursors that hand out whole server batches (`steadfast::raw_batch_cursor`)
//! against blackpipe's scripted server: one item per reply, the same getMores as a document
//! cursor, and a cursor dropped early is killed.

use blackpipe::scripted::Matcher;
use bson::{Bson, Document, doc};
use futures_util::{StreamExt, TryStreamExt};
use steadfast::raw_batch_cursor::RawBatch;

use crate::crud_wire::{client_for, cursor_reply, script_cursor};
use crate::server;

/// The `i` of each document of `batch`.
fn values(batch: &RawBatch) -> Vec<i32> {
    batch
        .doc_slices()
        .unwrap()
        .into_iter()
        .map(|entry| entry.unwrap().as_document().unwrap().get_i32("i").unwrap())
        .collect()
}

#[tokio::test]
async fn find_batch_hands_out_each_reply_whole_and_an_exhausted_cursor_is_not_killed() {
    let server = server().await;
    script_cursor(&server, &[(0..2, 7), (2..4, 7), (4..5, 0)]);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let batches: Vec<RawBatch> = items
        .find(doc! {})
        .batch_size(2)
        .batch()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let all: Vec<Vec<i32>> = batches.iter().map(values).collect();
    assert_eq!(all, [vec![0, 1], vec![2, 3], vec![4]]);
    // The whole reply: the opening command's batch, then the getMores'.
    let cursor = batches[0].as_raw_document().get_document("cursor").unwrap();
    assert!(cursor.get_array("firstBatch").is_ok());
    assert_eq!(cursor.get_i64("id").ok(), Some(7));
    let last = batches[2].as_raw_document().get_document("cursor").unwrap();
    assert!(last.get_array("nextBatch").is_ok());
    assert_eq!(last.get_i64("id").ok(), Some(0));
    let get_mores = server.requests_matching(&Matcher::command("getMore"));
    assert_eq!(get_mores.len(), 2);
    for get_more in &get_mores {
        assert_eq!(get_more.command().get_i64("getMore").ok(), Some(7));
        assert_eq!(get_more.command().get_i64("batchSize").ok(), Some(2));
    }
    // A ping round trip orders the check after anything the cursor might have sent.
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .unwrap();
    assert!(
        server
            .requests_matching(&Matcher::command("killCursors"))
            .is_empty()
    );
}

#[tokio::test]
async fn an_empty_first_batch_is_a_batch_of_its_own() {
    let server = server().await;
    script_cursor(&server, &[(0..0, 7), (0..1, 0)]);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let batches: Vec<Vec<i32>> = items
        .find(doc! {})
        .batch()
        .await
        .unwrap()
        .map(|batch| values(&batch.unwrap()))
        .collect()
        .await;
    assert_eq!(batches, [vec![], vec![0]]);
}

#[tokio::test]
async fn an_aggregate_batch_cursor_dropped_early_is_killed_on_its_server() {
    let server = server().await;
    server
        .rule(
            Matcher::command("aggregate"),
            cursor_reply("firstBatch", 0..2, 42),
        )
        .always();
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut cursor = items
        .aggregate([doc! { "$match": {} }])
        .batch_size(2)
        .batch()
        .await
        .unwrap();
    let first = cursor.next().await.unwrap().unwrap();
    assert_eq!(values(&first), [0, 1]);
    drop(cursor);
    let kill = server
        .next_request(Matcher::command("killCursors"))
        .await
        .unwrap();
    assert_eq!(kill.database(), "db");
    assert_eq!(kill.command().get_str("killCursors").ok(), Some("items"));
    assert_eq!(
        kill.command().get_array("cursors").unwrap(),
        &vec![Bson::Int64(42)]
    );
    kill.reply(doc! { "cursorsKilled": [42_i64], "ok": 1 })
        .unwrap();
    // The batch outlives its cursor.
    assert_eq!(values(&first), [0, 1]);
}

#[tokio::test]
async fn a_session_batch_cursor_fetches_in_its_session_and_is_killed_when_dropped() {
    let server = server().await;
    script_cursor(&server, &[(0..2, 9), (2..3, 9)]);
    let client = client_for(&server).await;
    let items = client.database("db").collection::<Document>("items");
    let mut session = client.start_session().await.unwrap();
    let mut cursor = items
        .find(doc! {})
        .batch_size(2)
        .session(&mut session)
        .batch()
        .await
        .unwrap();
    let batches: Vec<Vec<i32>> = cursor
        .stream(&mut session)
        .take(2)
        .map(|batch| values(&batch.unwrap()))
        .collect()
        .await;
    assert_eq!(batches, [vec![0, 1], vec![2]]);
    let find = &server.requests_matching(&Matcher::command("find"))[0];
    let get_more = &server.requests_matching(&Matcher::command("getMore"))[0];
    assert_eq!(
        find.command().get_document("lsid").unwrap(),
        get_more.command().get_document("lsid").unwrap()
    );
    drop(cursor);
    let kill = server
        .next_request(Matcher::command("killCursors"))
        .await
        .unwrap();
    assert_eq!(
        kill.command().get_array("cursors").unwrap(),
        &vec![Bson::Int64(9)]
    );
    kill.reply(doc! { "cursorsKilled": [9_i64], "ok": 1 })
        .unwrap();
}

#[tokio::test]
async fn listings_and_cursor_commands_hand_out_batches_too() {
    let server = server().await;
    for command in ["listIndexes", "listCollections", "find"] {
        server
            .rule(
                Matcher::command(command),
                cursor_reply("firstBatch", 0..3, 0),
            )
            .once();
    }
    let client = client_for(&server).await;
    let db = client.database("db");
    let items = db.collection::<Document>("items");
    let indexes: Vec<RawBatch> = items
        .list_indexes()
        .batch()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let collections: Vec<RawBatch> = db
        .list_collections()
        .batch()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let command: Vec<RawBatch> = db
        .run_cursor_command(doc! { "find": "items" })
        .batch()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    for batches in [indexes, collections, command] {
        assert_eq!(batches.len(), 1);
        assert_eq!(values(&batches[0]), [0, 1, 2]);
    }
}
