//! Replication as a real replica set has it, through raw wire clients: stale secondaries,
//! write concerns that wait and time out, read concerns, elections that need the newest op
//! log, rollback of what only an isolated primary held, retryable writes across it, and a
//! restarted member that keeps its data.

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use blackpipe::store::OplogOp;
use bson::{Bson, Document, Timestamp, doc};

use crate::deployment::{client, start};
use crate::support::within;

const DB: &str = "repl";

/// A three-member set whose elections happen only when a test asks.
async fn manual_set() -> Deployment {
    start(DeploymentConfig::replica_set(3).with_auto_failover(false)).await
}

fn insert(id: i32, write_concern: Document) -> Document {
    doc! { "insert": "c", "documents": [{ "_id": id }], "writeConcern": write_concern, "$db": DB }
}

fn find(extra: Document) -> Document {
    let mut command =
        doc! { "find": "c", "$db": DB, "$readPreference": { "mode": "secondaryPreferred" } };
    command.extend(extra);
    command
}

fn ids(reply: &Document) -> Vec<Bson> {
    reply
        .get_document("cursor")
        .and_then(|cursor| cursor.get_array("firstBatch"))
        .unwrap_or_else(|_| panic!("no firstBatch in {reply}"))
        .iter()
        .filter_map(|document| document.as_document()?.get("_id").cloned())
        .collect()
}

async fn ids_on(deployment: &Deployment, member: usize, extra: Document) -> Vec<Bson> {
    ids(&client(deployment, member)
        .await
        .round_trip(find(extra))
        .await)
}

/// A set whose member 0 holds `{_id: 2}`, written with w:1 while it was cut off from the
/// others, which then elected member 1; `{_id: 1}` is majority-committed on every member.
async fn a_w1_write_left_on_a_deposed_primary() -> Deployment {
    let deployment = manual_set().await;
    let mut old_primary = client(&deployment, 0).await;
    old_primary
        .round_trip(insert(1, doc! { "w": "majority" }))
        .await;
    deployment.partition_from(0, &[1, 2]).unwrap();
    old_primary.round_trip(insert(2, doc! { "w": 1 })).await;
    deployment.elect(1).unwrap();
    deployment
}

fn write_concern_code(reply: &Document) -> Option<i32> {
    reply
        .get_document("writeConcernError")
        .ok()
        .and_then(|error| error.get_i32("code").ok())
}

fn operation_time(reply: &Document) -> Timestamp {
    reply
        .get_timestamp("operationTime")
        .unwrap_or_else(|_| panic!("no operationTime in {reply}"))
}

#[tokio::test]
async fn a_paused_secondary_serves_stale_reads_until_it_resumes() {
    let deployment = manual_set().await;
    deployment.pause_replication(Some(1)).unwrap();
    let reply = client(&deployment, 0)
        .await
        .round_trip(insert(1, doc! { "w": 1 }))
        .await;
    assert_eq!(reply.get_i32("n").ok(), Some(1), "{reply}");
    assert_eq!(ids_on(&deployment, 1, doc! {}).await, Vec::<Bson>::new());
    assert_eq!(ids_on(&deployment, 2, doc! {}).await, [Bson::Int32(1)]);
    deployment.resume_replication(Some(1)).unwrap();
    assert_eq!(ids_on(&deployment, 1, doc! {}).await, [Bson::Int32(1)]);
}

#[tokio::test]
async fn a_lagging_secondary_applies_the_write_once_its_lag_has_passed() {
    let deployment = manual_set().await;
    deployment
        .set_member_replication_lag(1, Duration::from_millis(300))
        .unwrap();
    let reply = client(&deployment, 0)
        .await
        .round_trip(insert(1, doc! { "w": 1 }))
        .await;
    assert_eq!(reply.get_i32("n").ok(), Some(1), "{reply}");
    assert_eq!(ids_on(&deployment, 1, doc! {}).await, Vec::<Bson>::new());
    within(deployment.wait_for_replication(1)).await;
    assert_eq!(ids_on(&deployment, 1, doc! {}).await, [Bson::Int32(1)]);
}

#[tokio::test]
async fn a_majority_write_without_a_majority_times_out_with_64_and_stays_applied() {
    let deployment = manual_set().await;
    deployment.pause_replication(None).unwrap();
    let mut primary = client(&deployment, 0).await;
    let reply = primary
        .round_trip(insert(1, doc! { "w": "majority", "wtimeout": 200 }))
        .await;
    assert_eq!(reply.get_i32("n").ok(), Some(1), "{reply}");
    assert_eq!(write_concern_code(&reply), Some(64), "{reply}");
    let error = reply.get_document("writeConcernError").unwrap();
    assert_eq!(error.get_str("codeName").ok(), Some("WriteConcernTimeout"));
    assert_eq!(
        error
            .get_document("errInfo")
            .unwrap()
            .get_bool("wtimeout")
            .ok(),
        Some(true)
    );
    assert_eq!(ids_on(&deployment, 0, doc! {}).await, [Bson::Int32(1)]);
    // maxTimeMS ends the same wait with MaxTimeMSExpired.
    let mut command = insert(2, doc! { "w": "majority" });
    command.insert("maxTimeMS", 200);
    let reply = primary.round_trip(command).await;
    assert_eq!(write_concern_code(&reply), Some(50), "{reply}");
    // Once one secondary applies, the majority is there.
    deployment.resume_replication(Some(2)).unwrap();
    let reply = primary
        .round_trip(insert(3, doc! { "w": "majority", "wtimeout": 10_000 }))
        .await;
    assert_eq!(write_concern_code(&reply), None, "{reply}");
}

#[tokio::test]
async fn a_numeric_w_waits_for_that_many_members() {
    let deployment = manual_set().await;
    deployment.pause_replication(Some(2)).unwrap();
    let mut primary = client(&deployment, 0).await;
    let reply = primary
        .round_trip(insert(1, doc! { "w": 2, "wtimeout": 5_000 }))
        .await;
    assert_eq!(write_concern_code(&reply), None, "{reply}");
    let reply = primary
        .round_trip(insert(2, doc! { "w": 3, "wtimeout": 200 }))
        .await;
    assert_eq!(write_concern_code(&reply), Some(64), "{reply}");
    let reply = primary.round_trip(insert(3, doc! { "w": 4 })).await;
    assert_eq!(write_concern_code(&reply), Some(100), "{reply}");
    let reply = primary.round_trip(insert(4, doc! { "w": "dc2" })).await;
    assert_eq!(write_concern_code(&reply), Some(79), "{reply}");
}

#[tokio::test]
async fn the_implicit_default_write_concern_is_majority() {
    let deployment = manual_set().await;
    deployment.pause_replication(None).unwrap();
    let mut command = doc! { "insert": "c", "documents": [{ "_id": 1 }], "$db": DB };
    command.insert("maxTimeMS", 200);
    let reply = client(&deployment, 0).await.round_trip(command).await;
    assert_eq!(write_concern_code(&reply), Some(50), "{reply}");
}

#[tokio::test]
async fn after_cluster_time_makes_a_lagging_secondary_wait_for_the_write() {
    let deployment = manual_set().await;
    deployment.pause_replication(Some(1)).unwrap();
    let reply = client(&deployment, 0)
        .await
        .round_trip(insert(1, doc! { "w": 1 }))
        .await;
    let written = operation_time(&reply);
    let causal = doc! { "readConcern": { "afterClusterTime": written } };
    let mut bounded = causal.clone();
    bounded.insert("maxTimeMS", 200);
    let reply = client(&deployment, 1).await.round_trip(find(bounded)).await;
    assert_eq!(reply.get_i32("code").ok(), Some(50), "{reply}");
    let mut secondary = client(&deployment, 1).await;
    let waiting = tokio::spawn(async move { ids(&secondary.round_trip(find(causal)).await) });
    tokio::task::yield_now().await;
    deployment.resume_replication(Some(1)).unwrap();
    assert_eq!(within(waiting).await.unwrap(), [Bson::Int32(1)]);
}

#[tokio::test]
async fn majority_reads_see_the_committed_snapshot() {
    let deployment = manual_set().await;
    let mut primary = client(&deployment, 0).await;
    primary
        .round_trip(insert(1, doc! { "w": "majority" }))
        .await;
    deployment.pause_replication(None).unwrap();
    primary.round_trip(insert(2, doc! { "w": 1 })).await;
    let majority = doc! { "readConcern": { "level": "majority" } };
    let local = doc! { "readConcern": { "level": "local" } };
    assert_eq!(
        ids_on(&deployment, 0, majority.clone()).await,
        [Bson::Int32(1)]
    );
    assert_eq!(
        ids_on(&deployment, 0, local).await,
        [Bson::Int32(1), Bson::Int32(2)]
    );
    deployment.resume_replication(None).unwrap();
    assert_eq!(
        ids_on(&deployment, 0, majority).await,
        [Bson::Int32(1), Bson::Int32(2)]
    );
}

#[tokio::test]
async fn linearizable_reads_run_on_the_primary_once_a_majority_confirms_it() {
    let deployment = manual_set().await;
    let linearizable = doc! { "readConcern": { "level": "linearizable" }, "maxTimeMS": 200 };
    let reply = client(&deployment, 1)
        .await
        .round_trip(find(linearizable.clone()))
        .await;
    assert_eq!(reply.get_i32("code").ok(), Some(10107), "{reply}");
    client(&deployment, 0)
        .await
        .round_trip(insert(1, doc! { "w": 1 }))
        .await;
    assert_eq!(
        ids_on(&deployment, 0, linearizable.clone()).await,
        [Bson::Int32(1)]
    );
    deployment.pause_replication(None).unwrap();
    client(&deployment, 0)
        .await
        .round_trip(insert(2, doc! { "w": 1 }))
        .await;
    let reply = client(&deployment, 0)
        .await
        .round_trip(find(linearizable))
        .await;
    assert_eq!(reply.get_i32("code").ok(), Some(50), "{reply}");
}

#[tokio::test]
async fn only_a_member_with_the_newest_op_log_can_win_an_election() {
    let deployment = manual_set().await;
    deployment.pause_replication(Some(2)).unwrap();
    client(&deployment, 0)
        .await
        .round_trip(insert(1, doc! { "w": 2 }))
        .await;
    deployment.kill(0).await.unwrap();
    let refused = deployment.elect(2).unwrap_err();
    assert!(refused.to_string().contains("election failed"), "{refused}");
    deployment.elect(1).unwrap();
    assert_eq!(deployment.primary(), Some(1));
}

/// A new primary notes its term in the op log (mongod's "new primary" no-op) before it takes
/// writes: the deposed primary, whose w:1 write it lacks, can then never win an election
/// back and bring that write back once others have rolled it back, even if the new primary
/// wrote nothing else.
#[tokio::test]
async fn a_deposed_primary_cannot_win_back_with_a_write_the_new_term_lacks() {
    let deployment = a_w1_write_left_on_a_deposed_primary().await;
    let new_term = deployment
        .member_store(1)
        .unwrap()
        .oplog_since(deployment.member_store(2).unwrap().op_time());
    assert!(new_term.is_empty(), "member 2 holds the new primary's note");
    deployment.pause_replication(Some(0)).unwrap();
    deployment.heal(0).unwrap();
    deployment.step_down(Duration::from_secs(60)).unwrap();
    let refused = deployment.elect(0).unwrap_err();
    assert!(refused.to_string().contains("election failed"), "{refused}");
    deployment.resume_replication(Some(0)).unwrap();
    deployment.elect(2).unwrap();
    deployment.wait_for_replication(0).await;
    assert_eq!(ids_on(&deployment, 0, doc! {}).await, [Bson::Int32(1)]);
    let rolled_back: Vec<Bson> = deployment
        .rollbacks()
        .into_iter()
        .filter_map(|write| write.id)
        .collect();
    assert_eq!(rolled_back, [Bson::Int32(2)]);
}

#[tokio::test]
async fn an_isolated_primary_loses_its_w1_write_to_a_rollback_and_the_majority_write_survives() {
    let deployment = manual_set().await;
    let mut old_primary = client(&deployment, 0).await;
    old_primary
        .round_trip(insert(1, doc! { "w": "majority" }))
        .await;
    deployment.partition_from(0, &[1, 2]).unwrap();
    let reply = old_primary.round_trip(insert(2, doc! { "w": 1 })).await;
    assert_eq!(
        reply.get_i32("n").ok(),
        Some(1),
        "the isolated primary acknowledges w:1: {reply}"
    );
    let discarded_time = operation_time(&reply);
    let reply = old_primary
        .round_trip(insert(3, doc! { "w": "majority", "wtimeout": 200 }))
        .await;
    assert_eq!(write_concern_code(&reply), Some(64), "{reply}");
    deployment.elect(1).unwrap();
    // A causal read whose time comes from the discarded branch does not wait forever: nothing
    // the set holds lies between (mongod's primary would write a no-op to get past it).
    let causal = doc! { "readConcern": { "afterClusterTime": discarded_time }, "maxTimeMS": 5_000 };
    assert_eq!(ids_on(&deployment, 2, causal).await, [Bson::Int32(1)]);
    let reply = client(&deployment, 1)
        .await
        .round_trip(insert(4, doc! { "w": "majority" }))
        .await;
    assert_eq!(write_concern_code(&reply), None, "{reply}");
    deployment.heal(0).unwrap();
    for member in 0..3 {
        assert_eq!(
            ids_on(&deployment, member, doc! {}).await,
            [Bson::Int32(1), Bson::Int32(4)],
            "member {member}"
        );
    }
    let rolled_back: Vec<Bson> = deployment
        .rollbacks()
        .into_iter()
        .map(|write| {
            assert_eq!(write.member, 0);
            assert_eq!(write.ns, "repl.c");
            write.id.expect("document writes carry their _id")
        })
        .collect();
    assert_eq!(rolled_back, [Bson::Int32(2), Bson::Int32(3)]);
    let listed = client(&deployment, 1)
        .await
        .round_trip(doc! { "blackpipe": "rollbacks", "$db": "admin" })
        .await;
    let writes = listed.get_array("writes").unwrap();
    assert_eq!(writes.len(), 2, "{listed}");
    assert_eq!(
        writes[0]
            .as_document()
            .unwrap()
            .get_document("document")
            .ok(),
        Some(&doc! { "_id": 2 })
    );
}

/// A former primary that rejoins but cannot roll back yet (its replication paused) learns no
/// commit point from the new primary: the commit point is of the set's branch, and the writes
/// it alone holds are not on it. A majority read (or a change stream) there never shows them.
#[tokio::test]
async fn a_diverged_member_learns_no_commit_point_until_it_rolls_back() {
    let deployment = a_w1_write_left_on_a_deposed_primary().await;
    let reply = client(&deployment, 1)
        .await
        .round_trip(insert(3, doc! { "w": "majority" }))
        .await;
    assert_eq!(write_concern_code(&reply), None, "{reply}");
    deployment.pause_replication(Some(0)).unwrap();
    deployment.heal(0).unwrap();
    // Another write: a replication pass with the diverged member in contact with the primary.
    client(&deployment, 1)
        .await
        .round_trip(insert(4, doc! { "w": "majority" }))
        .await;
    let majority = doc! { "readConcern": { "level": "majority" } };
    assert_eq!(
        ids_on(&deployment, 0, majority.clone()).await,
        [Bson::Int32(1)],
        "the write only the old primary holds is not majority-committed"
    );
    deployment.resume_replication(Some(0)).unwrap();
    deployment.wait_for_replication(0).await;
    assert_eq!(
        ids_on(&deployment, 0, majority).await,
        [Bson::Int32(1), Bson::Int32(3), Bson::Int32(4)]
    );
}

#[tokio::test]
async fn a_retried_write_whose_first_attempt_was_rolled_back_is_applied_again() {
    let deployment = manual_set().await;
    let lsid = doc! { "id": bson::Binary { subtype: bson::spec::BinarySubtype::Uuid, bytes: vec![7; 16] } };
    let retryable = |id: i32, txn: i64| {
        let mut command = insert(id, doc! { "w": 1 });
        command.insert("lsid", lsid.clone());
        command.insert("txnNumber", txn);
        command
    };
    // Replicated before the failover: the retry on the new primary is answered, not applied.
    client(&deployment, 0)
        .await
        .round_trip(retryable(1, 1))
        .await;
    // Only the isolated primary holds the second.
    deployment.partition_from(0, &[1, 2]).unwrap();
    client(&deployment, 0)
        .await
        .round_trip(retryable(2, 2))
        .await;
    deployment.elect(1).unwrap();
    deployment.heal(0).unwrap();
    let mut new_primary = client(&deployment, 1).await;
    let reply = new_primary.round_trip(retryable(2, 2)).await;
    assert_eq!(reply.get_i32("n").ok(), Some(1), "{reply}");
    let store = deployment.member_store(1).unwrap();
    assert_eq!(
        store.writes_applied("repl.c"),
        2,
        "1 replicated, 2 applied on retry"
    );
    let reply = new_primary.round_trip(retryable(2, 2)).await;
    assert_eq!(reply.get_i32("n").ok(), Some(1), "{reply}");
    assert_eq!(
        store.writes_applied("repl.c"),
        2,
        "the second retry replays"
    );
    let stale = new_primary.round_trip(retryable(1, 1)).await;
    assert_eq!(
        stale.get_i32("code").ok(),
        Some(225),
        "TransactionTooOld: {stale}"
    );
}

#[tokio::test]
async fn a_restarted_member_keeps_its_data_and_catches_up() {
    let deployment = manual_set().await;
    let mut primary = client(&deployment, 0).await;
    primary.round_trip(insert(1, doc! { "w": 3 })).await;
    deployment.kill(2).await.unwrap();
    let reply = primary
        .round_trip(insert(2, doc! { "w": "majority" }))
        .await;
    assert_eq!(write_concern_code(&reply), None, "{reply}");
    deployment.restart(2).await.unwrap();
    within(deployment.wait_for_replication(2)).await;
    assert_eq!(
        ids_on(&deployment, 2, doc! {}).await,
        [Bson::Int32(1), Bson::Int32(2)]
    );
}

#[tokio::test]
async fn change_streams_return_only_majority_committed_events() {
    let deployment = manual_set().await;
    let mut primary = client(&deployment, 0).await;
    primary.round_trip(doc! { "create": "c", "$db": DB }).await;
    let opened = primary
        .round_trip(doc! { "aggregate": "c", "pipeline": [{ "$changeStream": {} }], "cursor": {}, "$db": DB })
        .await;
    let cursor = opened
        .get_document("cursor")
        .unwrap()
        .get_i64("id")
        .unwrap();
    deployment.pause_replication(None).unwrap();
    primary.round_trip(insert(1, doc! { "w": 1 })).await;
    let get_more = doc! { "getMore": cursor, "collection": "c", "maxTimeMS": 200, "$db": DB };
    let batch = primary.round_trip(get_more.clone()).await;
    let events = |reply: &Document| {
        reply
            .get_document("cursor")
            .unwrap()
            .get_array("nextBatch")
            .unwrap()
            .len()
    };
    assert_eq!(events(&batch), 0, "not majority committed yet: {batch}");
    deployment.resume_replication(None).unwrap();
    let batch = primary.round_trip(get_more).await;
    assert_eq!(events(&batch), 1, "{batch}");
}

#[tokio::test]
async fn status_reports_each_members_optimes_and_the_commit_point() {
    let deployment = manual_set().await;
    deployment.pause_replication(Some(2)).unwrap();
    client(&deployment, 0)
        .await
        .round_trip(insert(1, doc! { "w": 2 }))
        .await;
    let status = client(&deployment, 0)
        .await
        .round_trip(doc! { "blackpipe": "status", "$db": "admin" })
        .await;
    let replication = status.get_document("replication").unwrap();
    let members = replication.get_array("members").unwrap();
    let applied = |index: usize| {
        members[index]
            .as_document()
            .unwrap()
            .get_timestamp("appliedOpTime")
            .unwrap()
    };
    assert_eq!(applied(0), applied(1));
    assert!(applied(2) < applied(0));
    assert_eq!(
        replication.get_timestamp("majorityCommitPoint").ok(),
        Some(applied(0))
    );
}

/// The official driver connected straight to member `index`.
async fn official(deployment: &Deployment, index: usize) -> mongodb::Client {
    let uri = format!(
        "mongodb://{}/?directConnection=true&serverSelectionTimeoutMS=5000",
        deployment.host(index).expect("member exists")
    );
    mongodb::Client::with_uri_str(uri).await.unwrap()
}

async fn official_ids(deployment: &Deployment, index: usize) -> Vec<Bson> {
    use futures_util::TryStreamExt;
    let collection = official(deployment, index)
        .await
        .database(DB)
        .collection::<Document>("c");
    let documents: Vec<Document> =
        within(async { collection.find(doc! {}).await.unwrap().try_collect().await })
            .await
            .unwrap();
    documents
        .into_iter()
        .filter_map(|document| document.get("_id").cloned())
        .collect()
}

#[tokio::test]
async fn through_the_official_driver_a_w1_write_vanishes_and_a_majority_write_survives() {
    use mongodb::options::{Acknowledgment, WriteConcern};
    let deployment = manual_set().await;
    let old_primary = official(&deployment, 0).await;
    let collection = old_primary.database(DB).collection::<Document>("c");
    deployment.partition_from(0, &[1, 2]).unwrap();
    let w1 = WriteConcern::builder().w(Acknowledgment::Nodes(1)).build();
    within(
        collection
            .insert_one(doc! { "_id": "w1" })
            .write_concern(w1),
    )
    .await
    .expect("the isolated primary acknowledges w:1");
    let majority = WriteConcern::builder()
        .w(Acknowledgment::Majority)
        .w_timeout(Duration::from_millis(200))
        .build();
    let error = within(
        collection
            .insert_one(doc! { "_id": "timed out" })
            .write_concern(majority),
    )
    .await
    .expect_err("no majority reaches the isolated primary");
    assert!(
        matches!(&*error.kind, mongodb::error::ErrorKind::Write(mongodb::error::WriteFailure::WriteConcernError(wce)) if wce.code == 64),
        "{error}"
    );
    deployment.elect(1).unwrap();
    let new_primary = official(&deployment, 1).await;
    within(
        new_primary
            .database(DB)
            .collection::<Document>("c")
            .insert_one(doc! { "_id": "majority" })
            .write_concern(WriteConcern::majority()),
    )
    .await
    .unwrap();
    deployment.heal(0).unwrap();
    for member in 0..3 {
        assert_eq!(
            official_ids(&deployment, member).await,
            [Bson::String("majority".into())],
            "member {member}"
        );
    }
    // The collection the first write created implicitly is rolled back with it.
    let listed: Vec<(OplogOp, Option<Bson>)> = deployment
        .rollbacks()
        .into_iter()
        .map(|write| (write.op, write.id))
        .collect();
    assert_eq!(
        listed,
        [
            (OplogOp::Command, None),
            (OplogOp::Insert, Some(Bson::String("w1".into()))),
            (OplogOp::Insert, Some(Bson::String("timed out".into())))
        ]
    );
}

#[tokio::test]
async fn a_caught_up_member_of_higher_priority_takes_over() {
    use blackpipe::deployment::MemberOptions;
    let config = DeploymentConfig::replica_set_with(vec![
        MemberOptions::electable(),
        MemberOptions::electable().with_priority(2.0),
        MemberOptions::electable(),
    ])
    .with_election_delay(Duration::from_millis(50));
    let deployment = start(config).await;
    assert_eq!(
        deployment.primary(),
        Some(1),
        "the highest priority is elected first"
    );
    deployment.kill(1).await.unwrap();
    let interim = within(deployment.wait_for_primary()).await;
    assert_ne!(interim, 1);
    let reply = client(&deployment, interim)
        .await
        .round_trip(insert(1, doc! { "w": "majority" }))
        .await;
    assert_eq!(write_concern_code(&reply), None, "{reply}");
    deployment.restart(1).await.unwrap();
    within(deployment.wait_until(|topology| topology.primary() == Some(1))).await;
    assert_eq!(ids_on(&deployment, 1, doc! {}).await, [Bson::Int32(1)]);
}
