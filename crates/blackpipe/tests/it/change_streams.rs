//! Change streams through the wire: awaitData getMores woken by writes, resuming on another
//! member, the standalone refusal, and the labels of failing getMores.

use blackpipe::deployment::DeploymentConfig;
use bson::{Bson, Document, doc};

use crate::deployment::{client, start};
use crate::support::{RawClient, reply_document, within};

fn cursor(reply: &Document) -> &Document {
    reply
        .get_document("cursor")
        .unwrap_or_else(|_| panic!("no cursor in {reply}"))
}

fn events(reply: &Document) -> Vec<Document> {
    let cursor = cursor(reply);
    let batch = cursor
        .get_array("firstBatch")
        .or_else(|_| cursor.get_array("nextBatch"))
        .unwrap_or_else(|_| panic!("no batch in {reply}"));
    batch
        .iter()
        .filter_map(|event| event.as_document().cloned())
        .collect()
}

fn document_keys(reply: &Document) -> Vec<i32> {
    events(reply)
        .iter()
        .filter_map(|event| event.get_document("documentKey").ok()?.get_i32("_id").ok())
        .collect()
}

/// Opens a change stream on `db.c` with `options`; returns the reply.
async fn watch(connection: &mut RawClient, options: Document) -> Document {
    connection
        .round_trip(doc! {
            "aggregate": "c", "pipeline": [{ "$changeStream": options }], "cursor": {}, "$db": "db",
        })
        .await
}

fn id_of(reply: &Document) -> i64 {
    cursor(reply)
        .get_i64("id")
        .unwrap_or_else(|_| panic!("no cursor id in {reply}"))
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
async fn an_await_data_get_more_returns_the_event_of_a_write_from_another_client() {
    let deployment = start(DeploymentConfig::replica_set(1)).await;
    let mut watcher = client(&deployment, 0).await;
    let mut writer = client(&deployment, 0).await;
    let opened = watch(&mut watcher, doc! {}).await;
    let id = id_of(&opened);
    // A ten-minute await: the reply can only come from the write waking the getMore (or from
    // the getMore running after it), never from the await time passing.
    watcher
        .send_command(doc! { "getMore": id, "collection": "c", "maxTimeMS": 600_000, "$db": "db" })
        .await;
    writer
        .round_trip(doc! { "insert": "c", "documents": [{ "_id": 1 }], "$db": "db" })
        .await;
    let more = reply_document(&within(watcher.expect_message()).await);
    assert_eq!(document_keys(&more), [1], "{more}");
    assert_eq!(id_of(&more), id);
    assert!(cursor(&more).contains_key("postBatchResumeToken"));
}

#[tokio::test]
async fn a_token_from_one_member_resumes_on_the_next_primary() {
    let deployment = start(DeploymentConfig::replica_set(3).with_auto_failover(false)).await;
    let mut first = client(&deployment, 0).await;
    let id = id_of(&watch(&mut first, doc! {}).await);
    first
        .round_trip(doc! { "insert": "c", "documents": [{ "_id": 1 }, { "_id": 2 }], "$db": "db" })
        .await;
    let more = first
        .round_trip(doc! { "getMore": id, "collection": "c", "batchSize": 1, "$db": "db" })
        .await;
    let token = events(&more)[0]
        .get_document("_id")
        .cloned()
        .expect("a resume token");
    deployment.elect(1).unwrap();
    let mut second = client(&deployment, 1).await;
    second
        .round_trip(doc! { "insert": "c", "documents": [{ "_id": 3 }], "$db": "db" })
        .await;
    let resumed = watch(&mut second, doc! { "resumeAfter": token }).await;
    assert_eq!(document_keys(&resumed), [2, 3], "{resumed}");
}

#[tokio::test]
async fn a_standalone_refuses_a_change_stream() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let mut connection = client(&deployment, 0).await;
    let refused = watch(&mut connection, doc! {}).await;
    assert_eq!(refused.get_i32("code").ok(), Some(40573), "{refused}");
}

async fn configure(connection: &mut RawClient, fail_point: Document) {
    let mut command = fail_point;
    command.insert("$db", "admin");
    let reply = connection.round_trip(command).await;
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{reply}");
}

#[tokio::test]
async fn get_more_errors_of_a_change_stream_are_labelled_as_mongod_labels_them() {
    let deployment = start(DeploymentConfig::replica_set(1)).await;
    let mut connection = client(&deployment, 0).await;
    let id = id_of(&watch(&mut connection, doc! {}).await);
    let get_more = doc! { "getMore": id, "collection": "c", "maxTimeMS": 1, "$db": "db" };
    // Raised while the getMore runs: the server labels a resumable code.
    configure(
        &mut connection,
        doc! {
            "configureFailPoint": "failGetMoreAfterCursorCheckout",
            "mode": { "times": 1 }, "data": { "errorCode": 6 },
        },
    )
    .await;
    let failed = connection.round_trip(get_more.clone()).await;
    assert_eq!(failed.get_i32("code").ok(), Some(6), "{failed}");
    assert_eq!(labels(&failed), ["ResumableChangeStreamError"]);
    // A code mongod does not resume after gets no label.
    configure(
        &mut connection,
        doc! {
            "configureFailPoint": "failGetMoreAfterCursorCheckout",
            "mode": { "times": 1 }, "data": { "errorCode": 280 },
        },
    )
    .await;
    let fatal = connection.round_trip(get_more.clone()).await;
    assert_eq!(fatal.get_i32("code").ok(), Some(280), "{fatal}");
    assert!(labels(&fatal).is_empty(), "{fatal}");
    // failCommand answers before the command runs: only the labels it was given.
    configure(
        &mut connection,
        doc! {
            "configureFailPoint": "failCommand", "mode": { "times": 1 },
            "data": { "failCommands": ["getMore"], "errorCode": 6 },
        },
    )
    .await;
    let injected = connection.round_trip(get_more.clone()).await;
    assert_eq!(injected.get_i32("code").ok(), Some(6), "{injected}");
    assert!(labels(&injected).is_empty(), "{injected}");
    configure(&mut connection, doc! {
        "configureFailPoint": "failCommand", "mode": { "times": 1 },
        "data": { "failCommands": ["getMore"], "errorCode": 50, "errorLabels": ["ResumableChangeStreamError"] },
    })
    .await;
    let given = connection.round_trip(get_more.clone()).await;
    assert_eq!(labels(&given), ["ResumableChangeStreamError"]);
    // The cursor survived all of it.
    let after = connection.round_trip(get_more).await;
    assert_eq!(after.get_f64("ok").ok(), Some(1.0), "{after}");
    assert_eq!(Bson::Int64(id_of(&after)), Bson::Int64(id));
}

#[tokio::test]
async fn a_quiescing_member_labels_a_change_stream_get_more_resumable() {
    let deployment = start(DeploymentConfig::replica_set(3).with_auto_failover(false)).await;
    let mut connection = client(&deployment, 0).await;
    let id = id_of(&watch(&mut connection, doc! {}).await);
    let get_more = doc! { "getMore": id, "collection": "c", "$db": "db" };
    let shutdown = deployment.shutdown_node(0, std::time::Duration::from_secs(600));
    tokio::pin!(shutdown);
    // Biased: the shutdown is polled first, so the node is quiescing when the getMore arrives.
    let reply = tokio::select! {
        biased;
        _ = &mut shutdown => panic!("the quiesce period cannot end first"),
        reply = connection.round_trip(get_more) => reply,
    };
    assert_eq!(reply.get_i32("code").ok(), Some(91), "{reply}");
    assert_eq!(labels(&reply), ["ResumableChangeStreamError"]);
}
