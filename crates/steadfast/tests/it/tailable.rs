//! Tailable cursors on a capped collection: `next` keeps sending `getMore`s until a document
//! arrives, and under timeoutMS all of them share the one timeout of that `next` (CSOT). The
//! tests wait for command events, never for time.

use std::time::Duration;

use bson::{Document, doc};
use futures_util::TryStreamExt;
use steadfast::event::{CommandEvent, Event};
use steadfast::options::CursorType;
use steadfast::{Collection, Cursor};

use crate::retry_support::{HANG_GUARD, harness, replica_set, within};

/// A capped collection `log` in `shop` holding `{_id: 1}`.
async fn capped_log(client: &steadfast::Client) -> Collection<Document> {
    let db = client.database("shop");
    within(db.run_command(doc! { "create": "log", "capped": true, "size": 4096 }))
        .await
        .expect("the capped collection is created");
    let log = db.collection::<Document>("log");
    within(log.insert_one(doc! { "_id": 1 })).await.unwrap();
    log
}

/// A tailable awaitData cursor over `log` whose getMores wait 10 ms for new documents.
async fn tail(log: &Collection<Document>, timeout: Option<Duration>) -> Cursor<Document> {
    let find = log
        .find(doc! {})
        .cursor_type(CursorType::TailableAwait)
        .max_await_time(Duration::from_millis(10));
    match timeout {
        Some(timeout) => within(find.timeout(timeout)).await,
        None => within(find).await,
    }
    .expect("the tailable find")
}

fn is_get_more_started(event: &Event) -> bool {
    matches!(event, Event::Command(CommandEvent::Started(e)) if e.command_name == "getMore")
}

#[tokio::test]
async fn next_waits_through_empty_batches_for_the_next_document() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let log = capped_log(&h.client).await;
    let mut cursor = tail(&log, None).await;
    let first = within(cursor.try_next())
        .await
        .unwrap()
        .expect("the first document");
    assert_eq!(first.get_i32("_id").ok(), Some(1));

    let from = h.events.len();
    let waiting = tokio::spawn(async move { cursor.try_next().await });
    // Two getMores in one `next`: the first brought nothing, and the call kept asking.
    let (second_get_more, _) = h
        .events
        .wait_for(from, HANG_GUARD, is_get_more_started)
        .await
        .expect("a getMore");
    h.events
        .wait_for(second_get_more + 1, HANG_GUARD, is_get_more_started)
        .await
        .expect("a second getMore from the same next()");
    within(log.insert_one(doc! { "_id": 2 })).await.unwrap();
    let second = within(waiting)
        .await
        .unwrap()
        .unwrap()
        .expect("the stream does not end on an empty batch");
    assert_eq!(second.get_i32("_id").ok(), Some(2));
    h.client.shutdown().await;
}

#[tokio::test]
async fn one_timeout_bounds_all_the_getmores_of_a_next() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let log = capped_log(&h.client).await;
    let mut cursor = tail(&log, Some(Duration::from_millis(300))).await;
    within(cursor.try_next())
        .await
        .unwrap()
        .expect("the first document");
    // Nothing else arrives. A timeout refreshed per getMore would never expire (the hang
    // guard would fail the test); a stream that ended on the empty batch would return None.
    let error = within(cursor.try_next())
        .await
        .expect_err("next ends with the timeout");
    assert!(error.is_timeout(), "{error}");
    h.client.shutdown().await;
}

#[tokio::test]
async fn try_advance_returns_after_one_empty_batch_and_the_cursor_stays_open() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let log = capped_log(&h.client).await;
    let mut cursor = tail(&log, None).await;
    assert!(
        within(cursor.try_advance()).await.unwrap(),
        "the first document"
    );
    assert!(
        !within(cursor.try_advance()).await.unwrap(),
        "nothing new yet"
    );
    assert!(!cursor.is_exhausted(), "a tailable cursor stays open");
    within(log.insert_one(doc! { "_id": 2 })).await.unwrap();
    assert!(within(cursor.advance()).await.unwrap());
    assert_eq!(
        cursor.deserialize_current().unwrap().get_i32("_id").ok(),
        Some(2)
    );
    h.client.shutdown().await;
}
