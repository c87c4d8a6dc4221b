//! Transactions written as for the official driver: `start_transaction` with options, manual
//! commit with the label-driven retry loops, the convenient `and_run` / `and_run2`, and
//! snapshot sessions.

use blackpipe::deployment::{Deployment, DeploymentConfig};
use futures_util::FutureExt;
use steadfast::bson::{Document, doc};
use steadfast::error::{Result, TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};
use steadfast::options::{
    Acknowledgment, ReadConcern, ReadPreference, SelectionCriteria, SessionOptions,
    TransactionOptions, WriteConcern,
};
use steadfast::{Client, ClientSession, Collection};

async fn replica_set() -> (Deployment, Client) {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3))
        .await
        .expect("the deployment starts");
    let client = Client::with_uri_str(deployment.uri())
        .await
        .expect("valid uri");
    (deployment, client)
}

fn majority() -> TransactionOptions {
    TransactionOptions::builder()
        .read_concern(ReadConcern::majority())
        .write_concern(WriteConcern::builder().w(Acknowledgment::Majority).build())
        .selection_criteria(SelectionCriteria::ReadPreference(ReadPreference::Primary))
        .build()
}

async fn move_funds(
    session: &mut ClientSession,
    accounts: &Collection<Document>,
    amount: i64,
) -> Result<()> {
    accounts
        .update_one(
            doc! { "_id": "alice" },
            doc! { "$inc": { "balance": -amount } },
        )
        .session(&mut *session)
        .await?;
    accounts
        .update_one(
            doc! { "_id": "bob" },
            doc! { "$inc": { "balance": amount } },
        )
        .session(&mut *session)
        .await?;
    Ok(())
}

/// The manual pattern of the official documentation: retry the commit while its outcome is
/// unknown, and the whole transaction while its errors are transient.
async fn commit_with_retry(session: &mut ClientSession) -> Result<()> {
    loop {
        match session.commit_transaction().await {
            Ok(()) => return Ok(()),
            Err(error) if error.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT) => continue,
            Err(error) => return Err(error),
        }
    }
}

async fn run_manually(client: &Client, accounts: &Collection<Document>) -> Result<()> {
    let mut session = client.start_session().await?;
    loop {
        session.start_transaction().with_options(majority()).await?;
        let attempt = match move_funds(&mut session, accounts, 30).await {
            Ok(()) => commit_with_retry(&mut session).await,
            Err(error) => {
                session.abort_transaction().await?;
                Err(error)
            }
        };
        match attempt {
            Err(error) if error.contains_label(TRANSIENT_TRANSACTION_ERROR) => continue,
            other => return other,
        }
    }
}

async fn balances(accounts: &Collection<Document>) -> Vec<(String, i64)> {
    let mut cursor = accounts
        .find(doc! {})
        .sort(doc! { "_id": 1 })
        .await
        .expect("find");
    let mut found = Vec::new();
    while cursor.advance().await.expect("next") {
        let account = cursor.deserialize_current().expect("a document");
        found.push((
            account.get_str("_id").expect("id").to_string(),
            account.get_i64("balance").expect("balance"),
        ));
    }
    found
}

#[tokio::test]
async fn transfers_commit_manually_and_through_the_convenient_api() {
    let (deployment, client) = replica_set().await;
    let accounts = client.database("bank").collection::<Document>("accounts");
    accounts
        .insert_many(vec![
            doc! { "_id": "alice", "balance": 100_i64 },
            doc! { "_id": "bob", "balance": 0_i64 },
        ])
        .await
        .expect("seeded");

    run_manually(&client, &accounts)
        .await
        .expect("the manual transfer");

    let mut session = client.start_session().await.expect("a session");
    let moved = session
        .start_transaction()
        .with_options(majority())
        .and_run(accounts.clone(), |session, accounts| {
            async move {
                move_funds(session, accounts, 20).await?;
                Ok(20)
            }
            .boxed()
        })
        .await
        .expect("the convenient transfer");
    assert_eq!(moved, 20);

    let audit = client.database("bank").collection::<Document>("audit");
    session
        .start_transaction()
        .and_run2(async |session| {
            audit
                .insert_one(doc! { "moved": 50_i64 })
                .session(session)
                .await?;
            Ok(())
        })
        .await
        .expect("the closure transaction");

    assert_eq!(
        balances(&accounts).await,
        vec![("alice".to_string(), 50), ("bob".to_string(), 50)]
    );
    client.shutdown().await;
    deployment.stop().await;
}

#[tokio::test]
async fn an_aborted_transaction_leaves_nothing_and_misuse_is_an_error() {
    let (deployment, client) = replica_set().await;
    let accounts = client.database("bank").collection::<Document>("aborted");
    let mut session = client.start_session().await.expect("a session");
    session.start_transaction().await.expect("started");
    accounts
        .insert_one(doc! { "_id": "carol", "balance": 5_i64 })
        .session(&mut session)
        .await
        .expect("inserted in the transaction");
    session.abort_transaction().await.expect("aborted");
    assert!(
        session.commit_transaction().await.is_err(),
        "commit after abort"
    );
    assert!(session.abort_transaction().await.is_err(), "abort twice");
    assert_eq!(accounts.count_documents(doc! {}).await.expect("count"), 0);
    client.shutdown().await;
    deployment.stop().await;
}

#[tokio::test]
async fn a_snapshot_session_reads_at_one_point_in_time() {
    let (deployment, client) = replica_set().await;
    let items = client.database("shop").collection::<Document>("items");
    items
        .insert_one(doc! { "_id": 1, "stock": 3 })
        .await
        .expect("seeded");
    let options = SessionOptions::builder().snapshot(true).build();
    let mut session = client
        .start_session()
        .with_options(options)
        .await
        .expect("a snapshot session");
    let first = items
        .find_one(doc! { "_id": 1 })
        .session(&mut session)
        .await
        .expect("the first read");
    assert_eq!(first.and_then(|d| d.get_i32("stock").ok()), Some(3));
    assert!(session.snapshot_time().is_some());
    items
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "stock": 2 } })
        .await
        .expect("a write outside the session");
    let again = items
        .find_one(doc! { "_id": 1 })
        .session(&mut session)
        .await
        .expect("the second read");
    assert_eq!(
        again.and_then(|d| d.get_i32("stock").ok()),
        Some(3),
        "the session keeps reading at its snapshot"
    );
    assert!(
        session.start_transaction().await.is_err(),
        "no transactions in a snapshot session"
    );
    client.shutdown().await;
    deployment.stop().await;
}
