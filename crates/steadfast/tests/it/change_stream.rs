//! Change streams on the simulated replica set: a stream resumes across a stepdown and a
//! resumable `getMore` error without losing or repeating an event, and ends on the errors it
//! must not resume after.

use std::time::Duration;

use bson::{Bson, Document, doc};
use futures_util::TryStreamExt as _;
use steadfast::Collection;
use steadfast::change_stream::ChangeStream;
use steadfast::change_stream::event::{ChangeStreamEvent, OperationType};

use steadfast::event::{CommandEvent, Event};

use crate::retry_support::{
    HANG_GUARD, fail_command, harness, primary_host, replica_set, started, within,
};

/// A stream over `orders` whose getMores wait 10 ms for new events.
async fn watch(orders: &Collection<Document>) -> ChangeStream<ChangeStreamEvent<Document>> {
    within(orders.watch().max_await_time(Duration::from_millis(10)))
        .await
        .expect("the change stream opens")
}

/// The `_id` of the inserted document of each of the next `n` events.
async fn next_ids(stream: &mut ChangeStream<ChangeStreamEvent<Document>>, n: usize) -> Vec<i32> {
    let mut ids = Vec::with_capacity(n);
    for _ in 0..n {
        let event = within(stream.try_next())
            .await
            .expect("the next event")
            .expect("the stream is alive");
        assert_eq!(event.operation_type, OperationType::Insert);
        let key = event.document_key.expect("an insert has a document key");
        ids.push(key.get_i32("_id").expect("an integer _id"));
    }
    ids
}

async fn insert_range(orders: &Collection<Document>, range: std::ops::Range<i32>) {
    for id in range {
        within(orders.insert_one(doc! { "_id": id }))
            .await
            .expect("the insert (retried across a stepdown)");
    }
}

/// After a stepdown the old primary, now a secondary, may keep serving the cursor (as mongod
/// does): it is then killed, so the stream's next getMore fails with a network error and the
/// stream must resume on the new primary.
#[tokio::test]
async fn a_stream_resumes_across_a_stepdown_without_losing_or_repeating_an_event() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let mut stream = watch(&orders).await;
    insert_range(&orders, 0..5).await;
    assert_eq!(next_ids(&mut stream, 5).await, vec![0, 1, 2, 3, 4]);
    let token_before = stream.resume_token().expect("a token after five events");
    let old_primary = primary_host(&deployment).await;
    let old_index = within(deployment.wait_for_primary()).await;

    deployment.step_down(Duration::from_secs(60)).unwrap();
    insert_range(&orders, 5..8).await;
    within(deployment.kill(old_index)).await.unwrap();
    insert_range(&orders, 8..10).await;
    assert_eq!(next_ids(&mut stream, 5).await, vec![5, 6, 7, 8, 9]);

    let aggregates = started(&h.events, "aggregate");
    assert!(aggregates.len() >= 2, "the stream was opened again");
    let resumed = aggregates.last().expect("the resume");
    let stage = resumed.command.get_array("pipeline").unwrap()[0]
        .as_document()
        .and_then(|s| s.get_document("$changeStream").ok())
        .expect("a $changeStream stage first")
        .clone();
    assert!(stage.contains_key("resumeAfter"), "{stage}");
    assert!(!stage.contains_key("startAtOperationTime"), "{stage}");
    assert_ne!(resumed.connection.address.to_string(), old_primary);
    assert!(stream.is_alive());
    assert_ne!(stream.resume_token(), Some(token_before));
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_labelled_get_more_error_resumes_once_from_the_last_event() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let mut stream = watch(&orders).await;
    insert_range(&orders, 0..2).await;
    assert_eq!(next_ids(&mut stream, 2).await, vec![0, 1]);
    let token = stream.resume_token().expect("a token");
    fail_command(
        &primary_host(&deployment).await,
        Bson::Document(doc! { "times": 1 }),
        doc! { "failCommands": ["getMore"], "errorCode": 280,
        "errorLabels": ["ResumableChangeStreamError"] },
    )
    .await;
    insert_range(&orders, 2..4).await;
    let from = h.events.len();
    assert_eq!(next_ids(&mut stream, 2).await, vec![2, 3]);
    // The old cursor is killed in the background.
    let killed = h.events.wait_for(from, HANG_GUARD, |event| {
        matches!(event, Event::Command(CommandEvent::Started(e)) if e.command_name == "killCursors")
    });
    assert!(killed.await.is_some(), "the old cursor is killed");

    let aggregates = started(&h.events, "aggregate");
    assert_eq!(aggregates.len(), 2, "opened, then resumed once");
    let stage = aggregates[1].command.get_array("pipeline").unwrap()[0]
        .as_document()
        .and_then(|s| s.get_document("$changeStream").ok())
        .expect("a $changeStream stage first")
        .clone();
    let sent = stage.get("resumeAfter").expect("resumeAfter").clone();
    assert_eq!(
        Some(sent),
        bson::Bson::try_from(token.as_raw().clone()).ok()
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn an_unlabelled_server_error_ends_the_stream() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let mut stream = watch(&orders).await;
    fail_command(
        &primary_host(&deployment).await,
        Bson::Document(doc! { "times": 1 }),
        doc! { "failCommands": ["getMore"], "errorCode": 280 },
    )
    .await;
    let error = within(stream.try_next()).await.expect_err("not resumable");
    assert_eq!(error.code(), Some(280));
    assert!(!stream.is_alive());
    assert_eq!(within(stream.try_next()).await.unwrap(), None);
    assert_eq!(started(&h.events, "aggregate").len(), 1, "never resumed");
    h.client.shutdown().await;
}

fn is_get_more_started(event: &Event) -> bool {
    matches!(event, Event::Command(CommandEvent::Started(e)) if e.command_name == "getMore")
}

/// A `SessionChangeStream` call dropped while its getMore waits on the server: that getMore
/// may still take the next event server-side, so the next call must not reuse the cursor but
/// resume from the cached token, and the event still arrives.
#[tokio::test]
async fn a_call_abandoned_midway_makes_the_next_one_resume() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let mut session = within(h.client.start_session()).await.unwrap();
    let mut stream = within(
        orders
            .watch()
            .max_await_time(Duration::from_secs(30))
            .session(&mut session),
    )
    .await
    .expect("the change stream opens");
    let from = h.events.len();
    {
        let waiting = stream.next_if_any(&mut session);
        tokio::pin!(waiting);
        let get_more = h.events.wait_for(from, HANG_GUARD, is_get_more_started);
        tokio::select! {
            result = &mut waiting => panic!("nothing was written, yet the call ended: {result:?}"),
            started = get_more => assert!(started.is_some(), "the getMore was sent"),
        }
    }
    insert_range(&orders, 0..1).await;
    let event = within(stream.next(&mut session))
        .await
        .expect("the next event")
        .expect("the stream is alive");
    let key = event.document_key.expect("an insert has a document key");
    assert_eq!(key.get_i32("_id").ok(), Some(0));
    assert_eq!(
        started(&h.events, "aggregate").len(),
        2,
        "the stream resumed instead of reusing the cursor"
    );
    drop(stream);
    drop(session);
    h.client.shutdown().await;
}
