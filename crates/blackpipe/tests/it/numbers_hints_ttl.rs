//! Decimal128 arithmetic and comparison, hints and natural order, and TTL expiry as the
//! official `mongodb` driver sees them. Like `fidelity`, these run unchanged against a real
//! replica set named by `BLACKPIPE_FIDELITY_URI` (the TTL test lowers its
//! `ttlMonitorSleepSecs` to one second there); checks of blackpipe's members are skipped then.

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Bson, Decimal128, Document, doc};
use futures_util::{StreamExt as _, TryStreamExt as _};
use mongodb::error::{Error, ErrorKind, WriteFailure};
use mongodb::options::Hint;
use mongodb::{Client, Collection};

use crate::fidelity::{Target, client_options};
use crate::support::within;

async fn client(uri: &str) -> Client {
    let options = client_options(uri, "numbers-hints-ttl").await;
    Client::with_options(options).expect("client options are valid")
}

/// A collection no other test uses (tests may share an external mongod).
fn unique_collection(client: &Client, prefix: &str) -> Collection<Document> {
    let name = format!("{prefix}_{}", bson::oid::ObjectId::new().to_hex());
    client.database("fidelity").collection(&name)
}

fn decimal(text: &str) -> Bson {
    Bson::Decimal128(text.parse::<Decimal128>().expect("a decimal literal"))
}

/// The server code of a command error or of a single write error.
fn code_of(error: &Error) -> Option<i32> {
    match &*error.kind {
        ErrorKind::Command(command) => Some(command.code),
        ErrorKind::Write(WriteFailure::WriteError(write)) => Some(write.code),
        _ => None,
    }
}

const NO_SUCH_INDEX: &str = "hint provided does not correspond to an existing index";

fn assert_bad_hint(error: &Error) {
    assert_eq!(code_of(error), Some(2), "{error}");
    assert!(error.to_string().contains(NO_SUCH_INDEX), "{error}");
}

#[tokio::test]
async fn decimal_arithmetic_is_exact_and_compares_by_exact_value() {
    let target = Target::replica_set().await;
    let client = client(&target.uri).await;
    let numbers = unique_collection(&client, "decimals");
    within(numbers.insert_many(vec![
        doc! { "_id": 1, "a": decimal("0.1"), "b": decimal("0.2") },
        doc! { "_id": 2, "a": 0.1, "b": 0.2 },
    ]))
    .await
    .unwrap();
    let projected: Vec<Document> = within(async {
        numbers
            .aggregate(vec![doc! { "$project": {
                "sum": { "$add": ["$a", "$b"] },
                "mixed": { "$add": ["$a", decimal("0.2")] },
                "converted": { "$toDecimal": "$a" },
            } }])
            .await?
            .try_collect()
            .await
    })
    .await
    .unwrap();
    assert_eq!(projected[0].get("sum"), Some(&decimal("0.3")));
    assert_eq!(projected[1].get("sum"), Some(&Bson::Double(0.1 + 0.2)));
    // A double operand is read at 15 significant digits, the result is a decimal.
    assert_eq!(
        projected[1].get("mixed"),
        Some(&decimal("0.300000000000000"))
    );
    assert_eq!(
        projected[1].get("converted"),
        Some(&decimal("0.100000000000000"))
    );
    within(numbers.update_one(doc! { "_id": 1 }, doc! { "$inc": { "a": decimal("0.2") } }))
        .await
        .unwrap();
    let matched = within(numbers.count_documents(doc! { "a": decimal("0.3") }))
        .await
        .unwrap();
    assert_eq!(matched, 1);
    // The double 0.1 is not the decimal 0.1.
    let matched = within(numbers.count_documents(doc! { "b": 0.2 }))
        .await
        .unwrap();
    assert_eq!(matched, 1);
    let matched = within(numbers.count_documents(doc! { "b": { "$lt": 0.2 } }))
        .await
        .unwrap();
    assert_eq!(matched, 1, "NumberDecimal('0.2') is below the double 0.2");
}

#[tokio::test]
async fn a_hint_naming_no_index_fails_with_bad_value() {
    let target = Target::replica_set().await;
    let client = client(&target.uri).await;
    let items = unique_collection(&client, "hints");
    within(items.insert_many((1..=3).map(|id| doc! { "_id": id, "x": id })))
        .await
        .unwrap();
    let missing = Hint::Name("missing_1".into());
    let error = within(items.find(doc! {}).hint(missing.clone()))
        .await
        .unwrap_err();
    assert_bad_hint(&error);
    let error = within(items.count_documents(doc! {}).hint(missing.clone()))
        .await
        .unwrap_err();
    assert_bad_hint(&error);
    let error = within(items.aggregate(vec![]).hint(Hint::Keys(doc! { "y": 1 })))
        .await
        .unwrap_err();
    assert_bad_hint(&error);
    let error = within(items.delete_one(doc! { "_id": 1 }).hint(missing.clone()))
        .await
        .unwrap_err();
    assert_bad_hint(&error);
    let error = within(
        items
            .update_one(doc! { "_id": 1 }, doc! { "$set": { "y": 1 } })
            .hint(missing.clone()),
    )
    .await
    .unwrap_err();
    assert_bad_hint(&error);
    let error = within(items.find_one_and_delete(doc! {}).hint(missing))
        .await
        .unwrap_err();
    assert_bad_hint(&error);
    // The _id index by key pattern is fine, and nothing was written by the refusals.
    let count = within(
        items
            .count_documents(doc! {})
            .hint(Hint::Keys(doc! { "_id": 1 })),
    )
    .await
    .unwrap();
    assert_eq!(count, 3);
}

async fn ids(cursor: mongodb::Cursor<Document>) -> Vec<i32> {
    let documents: Vec<Document> = within(cursor.try_collect()).await.unwrap();
    documents
        .iter()
        .map(|document| document.get_i32("_id").unwrap_or(-1))
        .collect()
}

#[tokio::test]
async fn natural_order_runs_both_ways_and_min_max_bound_the_hinted_index() {
    let target = Target::replica_set().await;
    let client = client(&target.uri).await;
    let name = format!("capped_{}", bson::oid::ObjectId::new().to_hex());
    let db = client.database("fidelity");
    within(db.create_collection(&name).capped(true).size(4096).max(3))
        .await
        .unwrap();
    let capped = db.collection::<Document>(&name);
    within(capped.insert_many((1..=5).map(|id| doc! { "_id": id, "x": 10 - id })))
        .await
        .unwrap();
    let newest_first = within(capped.find(doc! {}).sort(doc! { "$natural": -1 }))
        .await
        .unwrap();
    assert_eq!(ids(newest_first).await, vec![5, 4, 3]);
    let forward = within(
        capped
            .find(doc! {})
            .hint(Hint::Keys(doc! { "$natural": 1 })),
    )
    .await
    .unwrap();
    assert_eq!(ids(forward).await, vec![3, 4, 5]);

    let items = unique_collection(&client, "bounds");
    within(items.insert_many((1..=5).map(|id| doc! { "_id": id, "x": id * 10 })))
        .await
        .unwrap();
    within(items.create_index(mongodb::IndexModel::builder().keys(doc! { "x": 1 }).build()))
        .await
        .unwrap();
    let bounded = within(
        items
            .find(doc! {})
            .hint(Hint::Name("x_1".into()))
            .min(doc! { "x": 20 })
            .max(doc! { "x": 40 }),
    )
    .await
    .unwrap();
    assert_eq!(ids(bounded).await, vec![2, 3]);
    let error = within(items.find(doc! {}).min(doc! { "x": 20 }))
        .await
        .unwrap_err();
    assert_eq!(code_of(&error), Some(51173), "{error}");
}

/// A replica set whose TTL monitor runs every 200 ms (or the external one, told to run it
/// every second).
async fn ttl_target() -> Target {
    if std::env::var("BLACKPIPE_FIDELITY_URI").is_ok() {
        let target = Target::replica_set().await;
        let client = client(&target.uri).await;
        within(
            client
                .database("admin")
                .run_command(doc! { "setParameter": 1, "ttlMonitorSleepSecs": 1 }),
        )
        .await
        .unwrap();
        return target;
    }
    let config = DeploymentConfig::replica_set(3)
        .with_seed(5)
        .with_ttl_monitor_period(Duration::from_millis(200));
    let deployment = Deployment::start(config)
        .await
        .expect("the deployment starts");
    Target {
        uri: deployment.uri(),
        deployment: Some(deployment),
    }
}

/// The `_id`s of the next `count` delete events of `stream` (inserts and others skipped).
async fn next_deletes(
    stream: &mut mongodb::change_stream::ChangeStream<Document>,
    count: usize,
) -> Vec<i32> {
    let mut deleted = Vec::new();
    while deleted.len() < count {
        let event = within(stream.next()).await.expect("an event").unwrap();
        if event.get_str("operationType").ok() == Some("delete") {
            let id = event
                .get_document("documentKey")
                .and_then(|key| key.get_i32("_id"))
                .unwrap_or(-1);
            deleted.push(id);
        }
    }
    deleted.sort_unstable();
    deleted
}

#[tokio::test]
async fn ttl_deletes_expired_documents_through_the_op_log() {
    let target = ttl_target().await;
    let client = client(&target.uri).await;
    let events = unique_collection(&client, "ttl");
    let db = client.database("fidelity");
    within(db.run_command(doc! {
        "createIndexes": events.name(),
        "indexes": [{ "key": { "at": 1 }, "name": "at_1", "expireAfterSeconds": 3600 }],
    }))
    .await
    .unwrap();
    let mut stream = within(events.watch())
        .await
        .unwrap()
        .with_type::<Document>();
    let now = bson::DateTime::now();
    let two_hours_ago = bson::DateTime::from_millis(now.timestamp_millis() - 7_200_000);
    within(events.insert_many(vec![
        doc! { "_id": 1, "at": two_hours_ago },
        doc! { "_id": 2, "at": now },
        // An array expires with its earliest date.
        doc! { "_id": 3, "at": [now, two_hours_ago] },
        doc! { "_id": 4, "at": "not a date" },
    ]))
    .await
    .unwrap();
    assert_eq!(next_deletes(&mut stream, 2).await, vec![1, 3]);
    // collMod's new expiry takes effect at the next pass.
    within(db.run_command(doc! {
        "collMod": events.name(),
        "index": { "name": "at_1", "expireAfterSeconds": 0 },
    }))
    .await
    .unwrap();
    assert_eq!(next_deletes(&mut stream, 1).await, vec![2]);
    let left = within(events.count_documents(doc! {})).await.unwrap();
    assert_eq!(left, 1);
    if let Some(deployment) = &target.deployment {
        // The deletions replicated: the change stream only shows majority-committed events.
        for member in 0..3 {
            let store = deployment.member_store(member).expect("a member");
            assert_eq!(store.documents("fidelity", events.name()).len(), 1);
        }
    }
}
