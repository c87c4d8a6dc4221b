//! Tailable awaitData cursors on a capped collection, through the wire: a getMore that finds
//! nothing new waits for an insert from another connection, or answers an empty batch (not an
//! error) at its `maxTimeMS`.

use blackpipe::deployment::DeploymentConfig;
use bson::{Bson, Document, doc};

use crate::deployment::{client, start};
use crate::support::within;

fn next_batch(reply: &Document) -> Vec<Bson> {
    reply
        .get_document("cursor")
        .and_then(|cursor| cursor.get_array("nextBatch"))
        .cloned()
        .unwrap_or_else(|_| panic!("no nextBatch in {reply}"))
}

fn cursor_id(reply: &Document) -> i64 {
    reply
        .get_document("cursor")
        .and_then(|cursor| cursor.get_i64("id"))
        .unwrap_or_else(|_| panic!("no cursor in {reply}"))
}

#[tokio::test]
async fn an_await_data_get_more_returns_a_document_inserted_by_another_client() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let mut tailer = client(&deployment, 0).await;
    let mut writer = client(&deployment, 0).await;
    for command in [
        doc! { "create": "log", "capped": true, "size": 4096, "$db": "db" },
        doc! { "insert": "log", "documents": [{ "_id": 1 }], "$db": "db" },
    ] {
        writer.round_trip(command).await;
    }
    let find = tailer
        .round_trip(doc! { "find": "log", "tailable": true, "awaitData": true, "$db": "db" })
        .await;
    let id = cursor_id(&find);
    assert_ne!(id, 0, "{find}");
    // A ten-minute await: the reply can only come from the insert waking the getMore (or
    // from the getMore running after it), never from the await time passing.
    tailer
        .send_command(
            doc! { "getMore": id, "collection": "log", "maxTimeMS": 600_000, "$db": "db" },
        )
        .await;
    writer
        .round_trip(doc! { "insert": "log", "documents": [{ "_id": 2 }], "$db": "db" })
        .await;
    let more = crate::support::reply_document(&within(tailer.expect_message()).await);
    assert_eq!(next_batch(&more), [Bson::Document(doc! { "_id": 2 })]);
    assert_eq!(cursor_id(&more), id);
}

#[tokio::test]
async fn an_await_data_get_more_with_nothing_new_answers_an_empty_batch() {
    let deployment = start(DeploymentConfig::standalone()).await;
    let mut connection = client(&deployment, 0).await;
    for command in [
        doc! { "create": "log", "capped": true, "size": 4096, "$db": "db" },
        doc! { "insert": "log", "documents": [{ "_id": 1 }], "$db": "db" },
    ] {
        connection.round_trip(command).await;
    }
    let find = connection
        .round_trip(doc! { "find": "log", "tailable": true, "awaitData": true, "$db": "db" })
        .await;
    let id = cursor_id(&find);
    let more = connection
        .round_trip(doc! { "getMore": id, "collection": "log", "maxTimeMS": 10, "$db": "db" })
        .await;
    assert_eq!(more.get_f64("ok").ok(), Some(1.0), "{more}");
    assert_eq!(next_batch(&more), []);
    assert_eq!(cursor_id(&more), id);
}
