//! The public timeoutMS API: `.timeout(..)` on an operation over its collection's, a session's
//! `default_timeout`, and the cursor modes (`TimeoutMode`). Assertions read the `maxTimeMS` the
//! driver sent, which shows which timeout was in force without measuring time.

use std::time::Duration;

use bson::{Document, doc};
use futures_util::TryStreamExt;
use steadfast::event::{CommandEvent, Event, EventRecorder};
use steadfast::options::{CollectionOptions, TimeoutMode};
use steadfast::{ErrorKind, SessionOptions};

use crate::retry_support::{fail_command, harness, primary_host, replica_set, started, within};

const LONG: Duration = Duration::from_secs(60);

/// The `maxTimeMS` of the last `name` command sent, if it had one.
fn last_max_time(events: &EventRecorder, name: &str) -> Option<i64> {
    let sent = started(events, name);
    let last = sent.last().unwrap_or_else(|| panic!("no {name} was sent"));
    last.command.get("maxTimeMS").and_then(|v| match v {
        bson::Bson::Int32(n) => Some(i64::from(*n)),
        bson::Bson::Int64(n) => Some(*n),
        _ => None,
    })
}

#[tokio::test]
async fn an_operations_timeout_overrides_its_collections() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h
        .client
        .database("shop")
        .collection_with_options::<Document>("orders", CollectionOptions::default().timeout(LONG));
    within(orders.insert_one(doc! { "_id": 1 })).await.unwrap();
    let inherited = last_max_time(&h.events, "insert").expect("maxTimeMS under timeoutMS");
    assert!(
        inherited > 2_000,
        "the collection's 60 s applies: {inherited}"
    );

    within(
        orders
            .insert_one(doc! { "_id": 2 })
            .timeout(Duration::from_secs(2)),
    )
    .await
    .unwrap();
    let own = last_max_time(&h.events, "insert").expect("maxTimeMS under timeoutMS");
    assert!(
        (1..=2_000).contains(&own),
        "the operation's 2 s applies: {own}"
    );

    // Zero means no limit: no maxTimeMS at all, although the collection has a timeout.
    within(orders.insert_one(doc! { "_id": 3 }).timeout(Duration::ZERO))
        .await
        .unwrap();
    assert_eq!(last_max_time(&h.events, "insert"), None);
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_sessions_default_timeout_beats_the_collections_but_not_the_operations() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h
        .client
        .database("shop")
        .collection_with_options::<Document>("orders", CollectionOptions::default().timeout(LONG));
    let mut session = h
        .client
        .start_session_with_options(
            SessionOptions::default().default_timeout(Duration::from_secs(2)),
        )
        .await
        .unwrap();
    within(orders.insert_one(doc! { "_id": 1 }).session(&mut session))
        .await
        .unwrap();
    let from_session = last_max_time(&h.events, "insert").expect("maxTimeMS");
    assert!((1..=2_000).contains(&from_session), "{from_session}");

    within(
        orders
            .insert_one(doc! { "_id": 2 })
            .session(&mut session)
            .timeout(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let from_operation = last_max_time(&h.events, "insert").expect("maxTimeMS");
    assert!((1..=1_000).contains(&from_operation), "{from_operation}");
    drop(session);
    h.client.shutdown().await;
}

#[tokio::test]
async fn iteration_mode_sends_no_max_time_and_cursor_lifetime_does() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    within(orders.insert_many((0..4).map(|i| doc! { "_id": i })))
        .await
        .unwrap();

    let cursor = within(orders.find(doc! {}).batch_size(2).timeout(LONG))
        .await
        .unwrap();
    let all: Vec<Document> = within(cursor.try_collect()).await.unwrap();
    assert_eq!(all.len(), 4);
    assert!(
        last_max_time(&h.events, "find").is_some(),
        "cursor lifetime"
    );
    assert_eq!(
        last_max_time(&h.events, "getMore"),
        None,
        "never on getMore"
    );

    let cursor = within(
        orders
            .find(doc! {})
            .batch_size(2)
            .timeout(LONG)
            .timeout_mode(TimeoutMode::Iteration),
    )
    .await
    .unwrap();
    let all: Vec<Document> = within(cursor.try_collect()).await.unwrap();
    assert_eq!(all.len(), 4);
    assert_eq!(last_max_time(&h.events, "find"), None, "iteration");
    h.client.shutdown().await;
}

#[tokio::test]
async fn cursor_options_that_csot_forbids_are_invalid_arguments() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let no_timeout = within(orders.find(doc! {}).timeout_mode(TimeoutMode::Iteration))
        .await
        .unwrap_err();
    assert!(
        matches!(no_timeout.kind(), ErrorKind::InvalidArgument { .. }),
        "{no_timeout}"
    );
    let writes = within(
        orders
            .aggregate([doc! { "$out": "elsewhere" }])
            .timeout(LONG)
            .timeout_mode(TimeoutMode::Iteration),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(writes.kind(), ErrorKind::InvalidArgument { .. }),
        "{writes}"
    );
    assert!(started(&h.events, "find").is_empty());
    assert!(started(&h.events, "aggregate").is_empty());
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_cursor_lifetime_deadline_covers_its_get_mores_and_iteration_refreshes_it() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    within(orders.insert_many((0..2).map(|i| doc! { "_id": i })))
        .await
        .unwrap();
    let host = primary_host(&deployment).await;
    let block = |times: i32| {
        let host = host.clone();
        async move {
            fail_command(
                &host,
                doc! { "times": times }.into(),
                doc! {
                    "failCommands": ["find", "getMore"],
                    "blockConnection": true,
                    "blockTimeMS": 600,
                },
            )
            .await;
        }
    };
    // find and getMore each take at least 600 ms: together they cannot fit in 1 s.
    block(2).await;
    let cursor = within(
        orders
            .find(doc! {})
            .batch_size(1)
            .timeout(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    let error = within(cursor.try_collect::<Vec<Document>>())
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");

    // In iteration mode each of them gets the whole second.
    block(2).await;
    let cursor = within(
        orders
            .find(doc! {})
            .batch_size(1)
            .timeout(Duration::from_secs(1))
            .timeout_mode(TimeoutMode::Iteration),
    )
    .await
    .unwrap();
    let all: Vec<Document> = within(cursor.try_collect()).await.unwrap();
    assert_eq!(all.len(), 2);
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_max_time_expired_write_concern_error_is_a_timeout_only_under_timeout_ms() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let host = primary_host(&deployment).await;
    let wce = doc! {
        "failCommands": ["insert"],
        "writeConcernError": { "code": 50, "errmsg": "operation exceeded time limit" },
    };
    fail_command(&host, doc! { "times": 1 }.into(), wce.clone()).await;
    let error = within(orders.insert_one(doc! { "_id": 1 }).timeout(LONG))
        .await
        .unwrap_err();
    assert!(error.is_timeout(), "{error}");
    let source = std::error::Error::source(&error)
        .and_then(|s| s.downcast_ref::<steadfast::Error>())
        .expect("the write concern error is the source");
    assert!(matches!(source.kind(), ErrorKind::Write(_)), "{source}");

    fail_command(&host, doc! { "times": 1 }.into(), wce).await;
    let error = within(orders.insert_one(doc! { "_id": 2 }))
        .await
        .unwrap_err();
    assert!(!error.is_timeout(), "no timeoutMS: {error}");
    assert!(matches!(error.kind(), ErrorKind::Write(_)), "{error}");
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_timed_out_get_more_ends_the_cursor_which_kills_its_server_cursor_when_dropped() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    within(orders.insert_many((0..3).map(|i| doc! { "_id": i })))
        .await
        .unwrap();
    let host = primary_host(&deployment).await;
    fail_command(
        &host,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["getMore"], "blockConnection": true, "blockTimeMS": 2000 },
    )
    .await;
    let mut cursor = within(
        orders
            .find(doc! {})
            .batch_size(1)
            .timeout(Duration::from_millis(300))
            .timeout_mode(TimeoutMode::Iteration),
    )
    .await
    .unwrap();
    assert!(within(cursor.advance()).await.unwrap(), "the first batch");
    let error = within(cursor.advance()).await.unwrap_err();
    assert!(error.is_timeout(), "{error}");
    // The timed-out reply may have held a batch: nothing more is yielded, none is skipped.
    assert!(!within(cursor.advance()).await.unwrap());
    assert!(cursor.is_exhausted());
    // Not killed behind the caller's back while it still holds the cursor: only when dropped.
    assert!(started(&h.events, "killCursors").is_empty());
    drop(cursor);
    let is_kill = |event: &Event| matches!(event, Event::Command(CommandEvent::Started(e)) if e.command_name == "killCursors");
    let killed = h.events.wait_for(0, LONG, is_kill).await;
    assert!(
        killed.is_some(),
        "dropping the cursor kills its server cursor"
    );
    h.client.shutdown().await;
}
