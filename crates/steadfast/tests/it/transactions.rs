//! Transactions against blackpipe's replica set: a transfer that a stepdown interrupts is run
//! again whole by the convenient API and applied exactly once; a commit whose reply is lost is
//! retried and answered as committed; the commands carry the transaction's fields.

use std::time::Duration;

use bson::{Document, doc};
use futures_util::FutureExt as _;
use steadfast::error::{TRANSIENT_TRANSACTION_ERROR, UNKNOWN_TRANSACTION_COMMIT_RESULT};
use steadfast::event::{CommandEvent, Event};
use steadfast::{ClientSession, Collection, TransactionState};

use crate::recipes::{ReplicaSet, commands_received, fail_command, wait_for_commands};

/// What the transfer callback needs: the accounts, the deployment to step down, and how many
/// times the callback ran.
struct Transfer<'a> {
    accounts: Collection<Document>,
    set: &'a ReplicaSet,
    attempts: u32,
}

pub(crate) async fn seed(accounts: &Collection<Document>) {
    accounts
        .insert_many([
            doc! { "_id": 1, "balance": 100 },
            doc! { "_id": 2, "balance": 0 },
        ])
        .await
        .expect("the accounts exist");
}

pub(crate) fn balances(set: &ReplicaSet, coll: &str) -> Vec<(i32, i32)> {
    let mut stored: Vec<(i32, i32)> = set
        .stored(coll)
        .iter()
        .map(|d| {
            (
                d.get_i32("_id").expect("an id"),
                d.get_i32("balance").expect("a balance"),
            )
        })
        .collect();
    stored.sort_unstable();
    stored
}

/// Seeds `set`'s collection `name` with the two accounts and opens a transaction whose first
/// statement debits account 1 by 10 (not yet committed).
pub(crate) async fn debit_in_transaction(
    set: &ReplicaSet,
    name: &str,
) -> (Collection<Document>, ClientSession) {
    let accounts = set.collection(name);
    seed(&accounts).await;
    let mut session = set.client.start_session().await.expect("a session");
    session.start_transaction().await.expect("started");
    accounts
        .update_one(doc! { "_id": 1 }, doc! { "$inc": { "balance": -10 } })
        .session(&mut session)
        .await
        .expect("the transaction's first statement runs");
    (accounts, session)
}

/// Closes the connection instead of running the next `times` commitTransaction commands.
pub(crate) async fn fail_commits(set: &ReplicaSet, times: i32) {
    set.fail_point(fail_command(
        doc! { "times": times }.into(),
        &["commitTransaction"],
        doc! { "closeConnection": true },
    ))
    .await;
}

/// The commands named `name` the client has started, in order.
pub(crate) fn started_commands(set: &ReplicaSet, name: &str) -> Vec<Document> {
    set.events
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Command(CommandEvent::Started(started)) if started.command_name == name => {
                Some(started.command)
            }
            _ => None,
        })
        .collect()
}

/// Moves 10 from account 1 to account 2; on its first run, the primary steps down between the
/// two updates, which aborts the transaction on the server.
async fn transfer(
    session: &mut ClientSession,
    transfer: &mut Transfer<'_>,
) -> steadfast::error::Result<()> {
    transfer.attempts += 1;
    transfer
        .accounts
        .update_one(doc! { "_id": 1 }, doc! { "$inc": { "balance": -10 } })
        .session(&mut *session)
        .await?;
    if transfer.attempts == 1 {
        transfer
            .set
            .deployment
            .step_down(Duration::from_secs(30))
            .expect("the primary steps down");
    }
    transfer
        .accounts
        .update_one(doc! { "_id": 2 }, doc! { "$inc": { "balance": 10 } })
        .session(&mut *session)
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_transfer_interrupted_by_a_stepdown_runs_again_whole_and_applies_once() {
    let set = ReplicaSet::start().await;
    let accounts = set.collection("accounts");
    seed(&accounts).await;
    let old_primary = set.primary();
    let mut session = set.client.start_session().await.expect("a session");
    let context = Transfer {
        accounts: accounts.clone(),
        set: &set,
        attempts: 0,
    };

    let attempts = session
        .start_transaction()
        .and_run(context, |session, context| {
            async move {
                transfer(session, context).await?;
                Ok(context.attempts)
            }
            .boxed()
        })
        .await
        .expect("the transfer commits on the new primary");

    assert_eq!(
        attempts, 2,
        "the stepdown's transient error ran the transaction again"
    );
    assert_ne!(set.primary(), old_primary);
    assert_eq!(
        session.transaction_state(),
        TransactionState::Committed { empty: false }
    );
    set.heal().await;
    assert_eq!(
        balances(&set, "accounts"),
        vec![(1, 90), (2, 10)],
        "exactly one transfer applied, none half applied"
    );
    set.stop().await;
}

#[tokio::test]
async fn a_statement_after_a_stepdown_fails_transient_and_nothing_is_applied() {
    let set = ReplicaSet::start().await;
    let (accounts, mut session) = debit_in_transaction(&set, "manual").await;
    set.deployment
        .step_down(Duration::from_secs(30))
        .expect("the primary steps down");

    let error = accounts
        .update_one(doc! { "_id": 2 }, doc! { "$inc": { "balance": 10 } })
        .session(&mut session)
        .await
        .expect_err("the transaction died with its primary");
    assert!(
        error.contains_label(TRANSIENT_TRANSACTION_ERROR),
        "the application may run the transaction again: {error}"
    );
    session.abort_transaction().await.expect("abort is quiet");
    set.heal().await;
    assert_eq!(balances(&set, "manual"), vec![(1, 100), (2, 0)]);
    set.stop().await;
}

#[tokio::test]
async fn a_commit_whose_reply_is_lost_is_retried_with_a_majority_and_applies_once() {
    let set = ReplicaSet::start().await;
    let (_, mut session) = debit_in_transaction(&set, "commit").await;
    // The first commitTransaction is cut before it runs; the driver's one retry commits.
    fail_commits(&set, 1).await;

    session
        .commit_transaction()
        .await
        .expect("the retried commit succeeds");

    let commits = started_commands(&set, "commitTransaction");
    assert_eq!(commits.len(), 2, "one retry: {commits:?}");
    assert_eq!(commits[0].get("writeConcern"), None);
    assert_eq!(
        commits[1].get_document("writeConcern").ok(),
        Some(&doc! { "w": "majority", "wtimeout": 10_000_i64 })
    );
    assert_eq!(commits[0].get("txnNumber"), commits[1].get("txnNumber"));
    assert_eq!(commits[1].get_bool("autocommit").ok(), Some(false));
    set.heal().await;
    assert_eq!(balances(&set, "commit"), vec![(1, 90), (2, 0)]);
    set.stop().await;
}

#[tokio::test]
async fn a_commit_that_fails_twice_reports_an_unknown_result() {
    let set = ReplicaSet::start().await;
    let (_, mut session) = debit_in_transaction(&set, "unknown").await;
    fail_commits(&set, 2).await;

    let error = session
        .commit_transaction()
        .await
        .expect_err("both commit attempts lose their connection");
    assert!(
        error.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT),
        "{error}"
    );
    assert!(
        !error.contains_label(TRANSIENT_TRANSACTION_ERROR),
        "{error}"
    );
    // Committing again is how the application resolves the unknown outcome.
    session
        .commit_transaction()
        .await
        .expect("the re-run commit succeeds");
    set.heal().await;
    assert_eq!(balances(&set, "unknown"), vec![(1, 90), (2, 0)]);
    set.stop().await;
}

#[tokio::test]
async fn dropping_a_session_mid_transaction_aborts_it() {
    let set = ReplicaSet::start().await;
    let (accounts, session) = debit_in_transaction(&set, "dropped").await;
    let primary = set.primary();
    let baseline = commands_received(&set, primary);

    drop(session);
    wait_for_commands(&set, primary, baseline, 1).await;

    let aborts = started_commands(&set, "abortTransaction").len();
    assert_eq!(aborts, 1, "ending the session aborted its transaction");
    // The document is free again: a write outside any transaction meets no conflict.
    accounts
        .update_one(doc! { "_id": 1 }, doc! { "$inc": { "balance": 1 } })
        .await
        .expect("no write conflict with an aborted transaction");
    assert_eq!(balances(&set, "dropped"), vec![(1, 101), (2, 0)]);
    set.stop().await;
}
