//! `maxTimeMS` as mongod honours it: validated, and ending the time a command spends on the
//! server (a slow node, a slow command) with `MaxTimeMSExpired`, but not a `failCommand` block.
//!
//! The delays are ten minutes against limits of milliseconds, so which answer comes back never
//! depends on the machine's speed: a command that waited its delay would hang the test.

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Bson, Document, doc};

use crate::deployment::{client, start};

const FOREVER: Duration = Duration::from_secs(600);

fn code(reply: &Document) -> Option<i32> {
    reply.get_i32("code").ok()
}

fn is_ok(reply: &Document) -> bool {
    reply.get_f64("ok").ok() == Some(1.0)
}

async fn standalone() -> Deployment {
    start(DeploymentConfig::standalone()).await
}

#[tokio::test]
async fn a_slow_command_is_interrupted_at_its_max_time_ms() {
    let deployment = standalone().await;
    let mut connection = client(&deployment, 0).await;
    deployment.slow_commands(0, FOREVER).unwrap();
    let find = connection
        .round_trip(doc! { "find": "c", "maxTimeMS": 20, "$db": "db" })
        .await;
    assert_eq!(code(&find), Some(50), "{find}");
    assert_eq!(find.get_str("codeName").ok(), Some("MaxTimeMSExpired"));
    let insert = connection
        .round_trip(
            doc! { "insert": "c", "documents": [{"_id": 1}], "maxTimeMS": 20_i64, "$db": "db" },
        )
        .await;
    assert_eq!(code(&insert), Some(50), "{insert}");
    // Handshakes and trivial commands are not the store's work: they stay fast.
    assert!(is_ok(
        &connection
            .round_trip(doc! { "hello": 1, "$db": "admin" })
            .await
    ));
    assert!(is_ok(
        &connection
            .round_trip(doc! { "ping": 1, "$db": "admin" })
            .await
    ));
    deployment.slow_commands(0, Duration::ZERO).unwrap();
    let count = connection
        .round_trip(doc! { "count": "c", "$db": "db" })
        .await;
    assert_eq!(
        count.get_i32("n").ok(),
        Some(0),
        "the interrupted insert applied nothing"
    );
}

#[tokio::test]
async fn a_slow_command_without_a_limit_completes() {
    let deployment = standalone().await;
    let mut connection = client(&deployment, 0).await;
    deployment
        .slow_commands(0, Duration::from_millis(30))
        .unwrap();
    for limit in [None, Some(Bson::Int32(0)), Some(Bson::Int64(600_000))] {
        let mut find = doc! { "find": "c", "$db": "db" };
        if let Some(limit) = limit {
            find.insert("maxTimeMS", limit);
        }
        let reply = connection.round_trip(find.clone()).await;
        assert!(is_ok(&reply), "{find}: {reply}");
    }
}

#[tokio::test]
async fn a_slow_nodes_delay_ends_at_max_time_ms() {
    let deployment = standalone().await;
    let mut connection = client(&deployment, 0).await;
    deployment.slow(0, FOREVER).unwrap();
    let reply = connection
        .round_trip(doc! { "ping": 1, "maxTimeMS": 20.0, "$db": "admin" })
        .await;
    assert_eq!(code(&reply), Some(50), "{reply}");
}

#[tokio::test]
async fn an_await_data_get_mores_max_time_ms_is_its_wait_not_a_limit_on_a_slow_node() {
    let deployment = standalone().await;
    let mut connection = client(&deployment, 0).await;
    let setup = [
        doc! { "create": "cap", "capped": true, "size": 4096, "$db": "db" },
        doc! { "insert": "cap", "documents": [{"_id": 1}], "$db": "db" },
    ];
    for command in setup {
        let reply = connection.round_trip(command.clone()).await;
        assert!(is_ok(&reply), "{command}: {reply}");
    }
    let find = connection
        .round_trip(doc! {
            "find": "cap", "tailable": true, "awaitData": true, "batchSize": 1, "$db": "db",
        })
        .await;
    let id = find
        .get_document("cursor")
        .and_then(|c| c.get_i64("id"))
        .expect("a tailable cursor stays open");
    // The node's delay (100 ms) is longer than the getMore's await time (20 ms): mongod would
    // wait out the delay and answer an empty batch, never MaxTimeMSExpired, which a change
    // stream must not see (it is not resumable).
    deployment
        .slow_commands(0, Duration::from_millis(100))
        .unwrap();
    let more = connection
        .round_trip(doc! { "getMore": id, "collection": "cap", "maxTimeMS": 20, "$db": "db" })
        .await;
    assert!(is_ok(&more), "{more}");
}

#[tokio::test]
async fn block_connection_is_neither_cut_short_by_nor_counted_in_max_time_ms() {
    let deployment = standalone().await;
    let mut connection = client(&deployment, 0).await;
    let configure = doc! {
        "configureFailPoint": "failCommand", "mode": {"times": 1},
        "data": {"failCommands": ["find"], "blockConnection": true, "blockTimeMS": 100},
        "$db": "admin",
    };
    assert!(is_ok(&connection.round_trip(configure).await));
    // mongod reads maxTimeMS only after the fail point has blocked: the block is not
    // interrupted, and the limit starts afterwards.
    let reply = connection
        .round_trip(doc! { "find": "c", "maxTimeMS": 1, "$db": "db" })
        .await;
    assert!(is_ok(&reply), "{reply}");
}

#[tokio::test]
async fn a_malformed_max_time_ms_is_a_bad_value() {
    let deployment = standalone().await;
    let mut connection = client(&deployment, 0).await;
    for value in [
        Bson::Int32(-1),
        Bson::Int64(i64::from(i32::MAX) + 1),
        Bson::Double(1.5),
        Bson::String("20".into()),
    ] {
        for command in [doc! { "find": "c" }, doc! { "ping": 1 }] {
            let mut command = command;
            command.insert("maxTimeMS", value.clone());
            command.insert("$db", "db");
            let reply = connection.round_trip(command.clone()).await;
            assert_eq!(code(&reply), Some(2), "{command}: {reply}");
        }
    }
}

/// PyMongo's test suite turns `maxTimeAlwaysTimeOut` on to see a driver handle a timeout: every
/// operation with a time limit fails, getMores of a cursor opened with one included.
#[tokio::test]
async fn max_time_always_time_out_fails_every_operation_with_a_time_limit() {
    let deployment = standalone().await;
    let mut connection = client(&deployment, 0).await;
    let insert = connection
        .round_trip(
            doc! { "insert": "c", "documents": [{"_id": 1}, {"_id": 2}, {"_id": 3}], "$db": "db" },
        )
        .await;
    assert!(is_ok(&insert), "{insert}");
    let opened = connection
        .round_trip(doc! { "find": "c", "batchSize": 1, "maxTimeMS": 5_000, "$db": "db" })
        .await;
    let cursor = opened
        .get_document("cursor")
        .unwrap()
        .get_i64("id")
        .unwrap();
    let untimed = connection
        .round_trip(doc! { "find": "c", "batchSize": 1, "$db": "db" })
        .await;
    let on = connection
        .round_trip(doc! { "configureFailPoint": "maxTimeAlwaysTimeOut", "mode": "alwaysOn", "$db": "admin" })
        .await;
    assert!(is_ok(&on), "{on}");

    let timed = connection
        .round_trip(doc! { "find": "c", "maxTimeMS": 5_000, "$db": "db" })
        .await;
    assert_eq!(code(&timed), Some(50), "{timed}");
    let get_more = connection
        .round_trip(doc! { "getMore": cursor, "collection": "c", "$db": "db" })
        .await;
    assert_eq!(
        code(&get_more),
        Some(50),
        "a cursor opened with maxTimeMS: {get_more}"
    );
    let plain = connection
        .round_trip(doc! { "find": "c", "$db": "db" })
        .await;
    assert!(is_ok(&plain), "no time limit, no timeout: {plain}");
    let untimed_cursor = untimed
        .get_document("cursor")
        .unwrap()
        .get_i64("id")
        .unwrap();
    let untimed_more = connection
        .round_trip(doc! { "getMore": untimed_cursor, "collection": "c", "$db": "db" })
        .await;
    assert!(is_ok(&untimed_more), "{untimed_more}");

    let off = connection
        .round_trip(
            doc! { "configureFailPoint": "maxTimeAlwaysTimeOut", "mode": "off", "$db": "admin" },
        )
        .await;
    assert!(is_ok(&off), "{off}");
    assert!(
        off.get_i64("count").unwrap_or_default() >= 2
            || off.get_i32("count").unwrap_or_default() >= 2,
        "{off}"
    );
    let after = connection
        .round_trip(doc! { "find": "c", "maxTimeMS": 5_000, "$db": "db" })
        .await;
    assert!(is_ok(&after), "{after}");
}
