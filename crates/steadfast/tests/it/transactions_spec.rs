//! Transactions specification rules against blackpipe: a commit is retried and labelled as a
//! retryable write even with retryWrites off; an operation of a transaction may not carry its
//! own read or write concern; withTransaction reports running out of time as a timeout that
//! keeps the last error's labels; a retried commit leaves its session unpinned.

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use blackpipe::scripted::Matcher;
use blackpipe::server::{CommandError, Reaction};
use bson::{Document, doc};
use steadfast::error::{
    RETRYABLE_WRITE_ERROR, TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT,
};
use steadfast::options::{Acknowledgment, CollectionOptions, ReadConcern, WriteConcern};
use steadfast::{ErrorKind, TransactionState};

use crate::recipes::{DB, ReplicaSet, fail_command};
use crate::retry_support::{self, harness, started, succeeded, within};
use crate::transactions::{balances, debit_in_transaction, fail_commits, started_commands};

/// The labels a commit whose last attempt got no reply must carry, and the one it must not.
fn assert_unknown_and_retryable(error: &steadfast::Error) {
    assert!(error.has_label(RETRYABLE_WRITE_ERROR), "{error}");
    assert!(
        error.has_label(UNKNOWN_TRANSACTION_COMMIT_RESULT),
        "{error}"
    );
    assert!(!error.has_label(TRANSIENT_TRANSACTION_ERROR), "{error}");
}

#[tokio::test]
async fn a_commit_cut_twice_without_retry_writes_is_retried_and_labelled_unknown() {
    let set = ReplicaSet::start_with_query("&retryWrites=false").await;
    let (_, mut session) = debit_in_transaction(&set, "no_retry_writes").await;
    fail_commits(&set, 2).await;

    let error = session
        .commit_transaction()
        .await
        .expect_err("both commit attempts lose their connection");

    assert_unknown_and_retryable(&error);
    let commits = started_commands(&set, "commitTransaction");
    assert_eq!(
        commits.len(),
        2,
        "commit is retried whatever retryWrites says"
    );
    assert_eq!(
        commits[1].get_document("writeConcern").ok(),
        Some(&doc! { "w": "majority", "wtimeout": 10_000_i64 })
    );
    set.heal().await;
    set.stop().await;
}

#[tokio::test]
async fn a_commit_retried_after_a_server_error_then_cut_is_labelled_unknown() {
    // A scripted primary answers the first commit with a retryable server error and hangs
    // up on the retry: two different failures in a row, which one fail point cannot script.
    let server = crate::prose::scripted_primary().await;
    server
        .rule(Matcher::command("insert"), doc! { "ok": 1, "n": 1 })
        .always();
    let interrupted = CommandError::new(11600, "InterruptedAtShutdown", "scripted")
        .with_labels([RETRYABLE_WRITE_ERROR]);
    server
        .rule(
            Matcher::command("commitTransaction"),
            Reaction::Error(interrupted),
        )
        .once();
    server
        .rule(Matcher::command("commitTransaction"), Reaction::HangUp)
        .always();
    let h = harness(
        &crate::uri(&server, "directConnection=true"),
        "&retryWrites=false",
    )
    .await;
    let items = h.client.database("db").collection::<Document>("items");
    let mut session = within(h.client.start_session()).await.expect("a session");
    within(session.start_transaction()).await.expect("started");
    within(items.insert_one(doc! { "_id": 1 }).session(&mut session))
        .await
        .expect("the statement runs");

    let error = within(session.commit_transaction())
        .await
        .expect_err("the retry loses its connection");

    assert!(error.is_network_error(), "{error}");
    assert_unknown_and_retryable(&error);
    assert_eq!(started(&h.events, "commitTransaction").len(), 2);
    h.client.shutdown().await;
}

/// Whether `error` is the client error the transactions specification prescribes for an
/// operation that sets its own `concern` ("read" or "write") in a transaction.
fn is_refused_concern(error: &steadfast::Error, concern: &str) -> bool {
    let message = format!("Cannot set {concern} concern after starting a transaction.");
    matches!(error.kind(), ErrorKind::InvalidArgument { .. })
        && error.to_string().contains(&message)
}

#[tokio::test]
async fn an_operation_with_its_own_concern_is_refused_and_leaves_the_transaction_starting() {
    let set = ReplicaSet::start().await;
    let items = set.collection("own_concerns");
    let mut session = set.client.start_session().await.expect("a session");
    session.start_transaction().await.expect("started");
    let majority = WriteConcern::builder().w(Acknowledgment::Majority).build();

    let error = items
        .insert_one(doc! { "_id": 1 })
        .write_concern(majority.clone())
        .session(&mut session)
        .await
        .expect_err("an insert may not set its own write concern");
    assert!(is_refused_concern(&error, "write"), "{error}");
    assert_eq!(session.transaction_state(), TransactionState::Starting);
    let error = items
        .find(doc! {})
        .read_concern(ReadConcern::majority())
        .session(&mut session)
        .await
        .expect_err("a find may not set its own read concern");
    assert!(is_refused_concern(&error, "read"), "{error}");
    assert_eq!(session.transaction_state(), TransactionState::Starting);
    assert!(started_commands(&set, "insert").is_empty());
    assert!(started_commands(&set, "find").is_empty());

    // A concern inherited from the collection is not the operation's own: it is ignored.
    let options = CollectionOptions::default().write_concern(majority);
    let inherited = set
        .client
        .database(DB)
        .collection_with_options::<Document>("own_concerns", options);
    inherited
        .insert_one(doc! { "_id": 2 })
        .session(&mut session)
        .await
        .expect("an inherited write concern is ignored in a transaction");
    session.commit_transaction().await.expect("commits");
    let inserts = started_commands(&set, "insert");
    assert_eq!(inserts.len(), 1);
    assert_eq!(inserts[0].get("writeConcern"), None);
    assert_eq!(inserts[0].get_bool("startTransaction").ok(), Some(true));
    assert_eq!(set.stored("own_concerns"), vec![doc! { "_id": 2 }]);
    set.stop().await;
}

#[tokio::test]
async fn with_transaction_out_of_time_reports_a_timeout_with_the_last_errors_labels() {
    let set = ReplicaSet::start().await;
    let items = set.collection("out_of_time");
    set.fail_point(fail_command(
        doc! { "times": 1 }.into(),
        &["insert"],
        doc! { "errorCode": 112, "errorLabels": [TRANSIENT_TRANSACTION_ERROR] },
    ))
    .await;
    let mut session = set.client.start_session().await.expect("a session");
    let limit = Duration::from_millis(300);

    let error = session
        .start_transaction()
        .timeout(limit)
        .and_run2(async |session| {
            let error = items
                .insert_one(doc! { "_id": 1 })
                .session(&mut *session)
                .await
                .expect_err("the fail point refuses the insert");
            // The transient error comes back once the limit has passed: no time for another
            // attempt.
            tokio::time::sleep(limit + Duration::from_millis(100)).await;
            Err::<(), _>(error)
        })
        .await
        .expect_err("the time limit ends the retries");

    assert!(error.is_timeout(), "{error}");
    assert!(error.has_label(TRANSIENT_TRANSACTION_ERROR), "{error}");
    let last = std::error::Error::source(&error)
        .and_then(|source| source.downcast_ref::<steadfast::Error>())
        .expect("the last error is the timeout's source");
    assert_eq!(last.code(), Some(112), "{last}");
    assert!(balances(&set, "out_of_time").is_empty());
    set.heal().await;
    set.stop().await;
}

#[tokio::test]
async fn a_commit_retried_successfully_on_a_sharded_cluster_unpins_the_session() {
    let deployment = Deployment::start(DeploymentConfig::sharded(2).with_seed(5))
        .await
        .expect("the cluster starts");
    // The client knows one router only, so the retry goes back to the mongos that holds the
    // transaction: another would find, through the recovery token, that it never committed.
    let router = deployment.host(0).expect("router 0 has a host");
    let h = harness(&format!("mongodb://{router}/?directConnection=false"), "").await;
    let items = h.client.database("shop").collection::<Document>("items");
    let mut session = within(h.client.start_session()).await.expect("a session");
    within(session.start_transaction()).await.expect("started");
    within(items.insert_one(doc! { "_id": 1 }).session(&mut session))
        .await
        .expect("the statement runs");
    let pinned = session
        .pinned_mongos()
        .cloned()
        .expect("the transaction is pinned to its mongos");
    retry_support::fail_command(
        &pinned.to_string(),
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["commitTransaction"], "closeConnection": true },
    )
    .await;

    within(session.commit_transaction())
        .await
        .expect("the retried commit succeeds");

    assert_eq!(started(&h.events, "commitTransaction").len(), 2);
    assert_eq!(succeeded(&h.events, "commitTransaction").len(), 1);
    assert_eq!(
        session.pinned_mongos(),
        None,
        "a commit retried after a retryable error unpins the session"
    );
    h.client.shutdown().await;
    deployment.stop().await;
}
