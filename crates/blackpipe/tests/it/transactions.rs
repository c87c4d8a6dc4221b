//! Multi-document transactions through a simulated replica set: failover, fail points and
//! the error labels a driver sees on the wire.

use std::time::Duration;

use blackpipe::deployment::DeploymentConfig;
use bson::{Binary, Bson, Document, doc, spec::BinarySubtype};

use crate::deployment::{client, start};
use crate::support::RawClient;

fn lsid(session: u8) -> Document {
    doc! { "id": Binary { subtype: BinarySubtype::Uuid, bytes: vec![session; 16] } }
}

/// `command` in transaction `txn_number` of session `S` (its first statement if `first`).
fn in_transaction<const S: u8>(
    mut command: Document,
    db: &str,
    txn_number: i64,
    first: bool,
) -> Document {
    command.insert("lsid", lsid(S));
    command.insert("txnNumber", Bson::Int64(txn_number));
    if first {
        command.insert("startTransaction", true);
    }
    command.insert("autocommit", false);
    command.insert("$db", db);
    command
}

async fn insert_in_transaction<const S: u8>(
    node: &mut RawClient,
    id: i32,
    txn_number: i64,
) -> Document {
    node.round_trip(in_transaction::<S>(
        doc! { "insert": "c", "documents": [{ "_id": id }] },
        "db",
        txn_number,
        true,
    ))
    .await
}

async fn commit<const S: u8>(node: &mut RawClient, txn_number: i64) -> Document {
    node.round_trip(in_transaction::<S>(
        doc! { "commitTransaction": 1 },
        "admin",
        txn_number,
        false,
    ))
    .await
}

fn is_ok(reply: &Document) -> bool {
    reply.get_f64("ok").ok() == Some(1.0)
}

fn labels(reply: &Document) -> Vec<String> {
    reply
        .get_array("errorLabels")
        .map(|labels| {
            labels
                .iter()
                .filter_map(|label| label.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_stepdown_aborts_the_open_transaction_and_a_committed_one_stays_committed() {
    let deployment = start(DeploymentConfig::replica_set(2).with_auto_failover(false)).await;
    let mut primary = client(&deployment, 0).await;
    assert!(is_ok(&insert_in_transaction::<1>(&mut primary, 1, 1).await));
    assert!(is_ok(&commit::<1>(&mut primary, 1).await));
    let open = insert_in_transaction::<2>(&mut primary, 2, 1).await;
    assert!(is_ok(&open), "{open}");
    deployment.step_down(Duration::from_secs(60)).unwrap();
    deployment.elect(1).unwrap();
    let mut new_primary = client(&deployment, 1).await;
    let lost = commit::<2>(&mut new_primary, 1).await;
    assert_eq!(lost.get_i32("code").ok(), Some(251), "{lost}");
    assert_eq!(labels(&lost), vec!["TransientTransactionError"]);
    // A retry of the commit that happened before the stepdown still answers ok.
    let retried = commit::<1>(&mut new_primary, 1).await;
    assert!(is_ok(&retried), "{retried}");
    let ids: Vec<Bson> = deployment
        .store()
        .documents("db", "c")
        .iter()
        .filter_map(|document| document.get("_id").cloned())
        .collect();
    assert_eq!(ids, vec![Bson::Int32(1)]);
}

#[tokio::test]
async fn fail_points_on_transaction_commands_carry_mongods_labels() {
    let deployment = start(DeploymentConfig::replica_set(1)).await;
    let mut node = client(&deployment, 0).await;
    let configure = |commands: Vec<&str>, data: Document| {
        let mut data = data;
        data.insert("failCommands", commands);
        doc! {
            "configureFailPoint": "failCommand", "mode": { "times": 1 }, "data": data,
            "$db": "admin",
        }
    };
    node.round_trip(configure(vec!["insert"], doc! { "errorCode": 10107 }))
        .await;
    let failed = insert_in_transaction::<1>(&mut node, 1, 1).await;
    assert_eq!(
        labels(&failed),
        vec!["TransientTransactionError"],
        "{failed}"
    );

    node.round_trip(configure(
        vec!["commitTransaction"],
        doc! { "writeConcernError": { "code": 64, "errmsg": "waiting for replication timed out" } },
    ))
    .await;
    assert!(is_ok(&insert_in_transaction::<1>(&mut node, 2, 2).await));
    let committed = commit::<1>(&mut node, 2).await;
    assert!(is_ok(&committed), "{committed}");
    assert!(committed.contains_key("writeConcernError"), "{committed}");
    assert_eq!(deployment.store().documents("db", "c").len(), 1);

    node.round_trip(configure(
        vec!["commitTransaction"],
        doc! { "errorCode": 91 },
    ))
    .await;
    assert!(is_ok(&insert_in_transaction::<1>(&mut node, 3, 3).await));
    let shut_down = commit::<1>(&mut node, 3).await;
    assert_eq!(
        labels(&shut_down),
        vec!["RetryableWriteError"],
        "{shut_down}"
    );
    assert!(is_ok(&commit::<1>(&mut node, 3).await));
    assert_eq!(deployment.store().documents("db", "c").len(), 2);
}

#[tokio::test]
async fn the_transaction_lifetime_is_set_through_the_control_command() {
    let deployment = start(DeploymentConfig::replica_set(1)).await;
    let mut node = client(&deployment, 0).await;
    let set = node
        .round_trip(doc! { "blackpipe": "transactionLifetime", "secs": 0, "$db": "admin" })
        .await;
    assert!(is_ok(&set), "{set}");
    // Open for no time at all, the transaction is over by the end of its first statement.
    let expired = insert_in_transaction::<1>(&mut node, 1, 1).await;
    assert_eq!(expired.get_i32("code").ok(), Some(251), "{expired}");
    assert_eq!(labels(&expired), vec!["TransientTransactionError"]);
    let expired = commit::<1>(&mut node, 1).await;
    assert_eq!(expired.get_i32("code").ok(), Some(251), "{expired}");
    assert!(deployment.store().documents("db", "c").is_empty());
}

#[tokio::test]
async fn routers_return_recovery_tokens_and_commit_only_what_they_routed() {
    let deployment = start(DeploymentConfig::sharded(2)).await;
    let mut router = client(&deployment, 0).await;
    let mut other = client(&deployment, 1).await;
    let statement = insert_in_transaction::<1>(&mut router, 1, 1).await;
    assert_eq!(
        statement.get_document("recoveryToken").ok(),
        Some(&doc! { "recoveryShardId": "blackpipe-shard" }),
        "{statement}"
    );
    // The other router never saw the transaction and no commit decision exists.
    let unknown = commit::<1>(&mut other, 1).await;
    assert_eq!(unknown.get_i32("code").ok(), Some(251), "{unknown}");
    assert_eq!(labels(&unknown), vec!["TransientTransactionError"]);
    assert!(deployment.store().documents("db", "c").is_empty());

    assert!(is_ok(&insert_in_transaction::<2>(&mut router, 2, 1).await));
    assert!(is_ok(&commit::<2>(&mut router, 1).await));
    // Once committed, a retry on another router recovers the decision.
    let recovered = commit::<2>(&mut other, 1).await;
    assert!(is_ok(&recovered), "{recovered}");
    assert_eq!(deployment.store().documents("db", "c").len(), 1);
}

#[tokio::test]
async fn a_write_concern_no_member_count_satisfies_is_a_write_concern_error() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let mut node = client(&deployment, 0).await;
    assert!(is_ok(&insert_in_transaction::<1>(&mut node, 1, 1).await));
    let mut commit = in_transaction::<1>(doc! { "commitTransaction": 1 }, "admin", 1, false);
    commit.insert("writeConcern", doc! { "w": 10 });
    let reply = node.round_trip(commit).await;
    assert!(is_ok(&reply), "{reply}");
    let error = reply
        .get_document("writeConcernError")
        .expect("a writeConcernError");
    assert_eq!(error.get_i32("code").ok(), Some(100), "{reply}");
    assert!(labels(&reply).is_empty(), "{reply}");
    assert_eq!(deployment.store().documents("db", "c").len(), 1);

    let satisfiable = node
        .round_trip(doc! {
            "insert": "c", "documents": [{ "_id": 2 }], "writeConcern": { "w": 3 }, "$db": "db",
        })
        .await;
    assert!(
        !satisfiable.contains_key("writeConcernError"),
        "{satisfiable}"
    );
    // An aggregate that writes ($out) takes a write concern like a write.
    let out = node
        .round_trip(doc! {
            "aggregate": "c", "pipeline": [{ "$out": "copy" }], "cursor": {},
            "writeConcern": { "w": 10 }, "$db": "db",
        })
        .await;
    assert!(is_ok(&out), "{out}");
    let error = out
        .get_document("writeConcernError")
        .expect("a writeConcernError");
    assert_eq!(error.get_i32("code").ok(), Some(100), "{out}");
}

#[tokio::test]
async fn a_standalone_refuses_snapshot_reads_and_a_replica_set_member_serves_them() {
    let find = doc! {
        "find": "c", "filter": {}, "readConcern": { "level": "snapshot" }, "$db": "db",
    };
    let standalone = start(DeploymentConfig::standalone()).await;
    let refused = client(&standalone, 0).await.round_trip(find.clone()).await;
    assert_eq!(refused.get_i32("code").ok(), Some(123), "{refused}");
    let set = start(DeploymentConfig::replica_set(1)).await;
    let served = client(&set, 0).await.round_trip(find).await;
    assert!(is_ok(&served), "{served}");
    let cursor = served.get_document("cursor").expect("a cursor");
    assert!(cursor.get_timestamp("atClusterTime").is_ok(), "{served}");
}

/// As on mongod, a write outside a transaction to a document the open transaction wrote waits
/// for the transaction: until its `maxTimeMS` (MaxTimeMSExpired), or until the transaction
/// commits, after which it applies on top of the transaction's write. The transaction is not
/// aborted by the waiting write.
#[tokio::test]
async fn a_plain_write_waits_for_the_open_transaction_that_wrote_its_document() {
    let deployment = start(DeploymentConfig::replica_set(3)).await;
    let primary = deployment.wait_for_primary().await;
    let mut transaction = client(&deployment, primary).await;
    let mut plain = client(&deployment, primary).await;
    let seed = plain
        .round_trip(doc! { "insert": "c", "documents": [{ "_id": 1, "v": 0 }], "$db": "db" })
        .await;
    assert!(is_ok(&seed), "{seed}");
    let set = transaction
        .round_trip(in_transaction::<1>(
            doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$set": { "v": 1 } } }] },
            "db",
            1,
            true,
        ))
        .await;
    assert!(is_ok(&set), "{set}");
    let increment = |max_time: Option<i32>| {
        let mut command = doc! { "update": "c", "updates": [{ "q": { "_id": 1 }, "u": { "$inc": { "v": 10 } } }], "$db": "db" };
        if let Some(max_time) = max_time {
            command.insert("maxTimeMS", max_time);
        }
        command
    };
    let timed_out = plain.round_trip(increment(Some(50))).await;
    assert_eq!(timed_out.get_i32("code").ok(), Some(50), "{timed_out}");
    // Another document is not held: no wait.
    let other = plain
        .round_trip(
            doc! { "insert": "c", "documents": [{ "_id": 2 }], "maxTimeMS": 50, "$db": "db" },
        )
        .await;
    assert!(is_ok(&other), "{other}");

    let waiting = tokio::spawn(async move { plain.round_trip(increment(None)).await });
    let committed = commit::<1>(&mut transaction, 1).await;
    assert!(
        is_ok(&committed),
        "the waiting write did not abort the transaction: {committed}"
    );
    let applied = waiting.await.unwrap();
    assert_eq!(applied.get_i32("nModified").ok(), Some(1), "{applied}");
    let found = transaction
        .round_trip(doc! { "find": "c", "filter": { "_id": 1 }, "$db": "db" })
        .await;
    let document = found
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch")
        .unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(document.get_i32("v").ok(), Some(11), "{document}");
}
