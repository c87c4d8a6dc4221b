//! The CRUD API against blackpipe's simulated standalone and its in-memory store: every method
//! round-trips, cursors span several batches, bulk writes split, and server failures come back
//! as typed errors.

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Bson, Document, doc};
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use steadfast::error::WriteFailure;
use steadfast::options::{FindOptions, IndexModel, IndexOptions, ReturnDocument};
use steadfast::{
    Client, Collection, DeleteModel, ErrorKind, InsertOneModel, ReplaceOneModel, UpdateModel,
    WriteModel,
};

/// A standalone deployment and a client connected to it.
async fn standalone() -> (Deployment, Client) {
    let deployment = Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("the deployment starts");
    let client = Client::with_uri_str(&deployment.uri())
        .await
        .expect("valid connection string");
    (deployment, client)
}

/// Requests other than hellos that node 0 has received so far.
fn non_hello_commands(deployment: &Deployment) -> u64 {
    let counters = deployment.counters(0).expect("node 0 exists");
    counters.commands() - counters.hellos()
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Order {
    #[serde(rename = "_id", skip_serializing_if = "Option::is_none")]
    id: Option<bson::oid::ObjectId>,
    sku: String,
    qty: i32,
}

fn order(sku: &str, qty: i32) -> Order {
    Order {
        id: None,
        sku: sku.to_string(),
        qty,
    }
}

#[tokio::test]
async fn typed_documents_round_trip_with_generated_ids() {
    let (_deployment, client) = standalone().await;
    let orders: Collection<Order> = client.database("shop").collection("orders");

    let inserted = orders.insert_one(order("pen", 2)).await.unwrap();
    let Bson::ObjectId(id) = inserted.inserted_id else {
        panic!(
            "expected a generated ObjectId, got {:?}",
            inserted.inserted_id
        );
    };
    let found = orders.find_one(doc! { "_id": id }).await.unwrap().unwrap();
    assert_eq!(
        found,
        Order {
            id: Some(id),
            ..order("pen", 2)
        }
    );

    let many = orders
        .insert_many([order("ink", 5), order("pad", 1), order("pen", 7)])
        .await
        .unwrap();
    assert_eq!(many.inserted_ids.len(), 3);
    assert!(
        many.inserted_ids
            .values()
            .all(|id| matches!(id, Bson::ObjectId(_)))
    );

    assert_eq!(orders.count_documents(doc! {}).await.unwrap(), 4);
    assert_eq!(
        orders.count_documents(doc! { "sku": "pen" }).await.unwrap(),
        2
    );
    assert_eq!(
        orders
            .count_documents(doc! {})
            .skip(1)
            .limit(2)
            .await
            .unwrap(),
        2
    );
    assert_eq!(orders.estimated_document_count().await.unwrap(), 4);
    let mut skus = orders.distinct("sku", doc! {}).await.unwrap();
    skus.sort_by_key(|v| v.to_string());
    assert_eq!(skus, ["ink", "pad", "pen"].map(|s| Bson::String(s.into())));
    assert!(
        orders
            .find_one(doc! { "sku": "none" })
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn updates_replacements_and_deletes_report_counts() {
    let (_deployment, client) = standalone().await;
    let items = client.database("shop").collection::<Document>("items");
    items
        .insert_many(
            (0..5).map(|i| doc! { "_id": i, "kind": if i < 3 { "a" } else { "b" }, "n": 0 }),
        )
        .await
        .unwrap();

    let one = items
        .update_one(doc! { "kind": "a" }, doc! { "$inc": { "n": 1 } })
        .await
        .unwrap();
    assert_eq!(
        (one.matched_count, one.modified_count, one.upserted_id),
        (1, 1, None)
    );
    let many = items
        .update_many(doc! { "kind": "a" }, doc! { "$set": { "seen": true } })
        .await
        .unwrap();
    assert_eq!((many.matched_count, many.modified_count), (3, 3));
    let upsert = items
        .update_one(doc! { "_id": 99 }, doc! { "$set": { "kind": "c" } })
        .upsert(true)
        .await
        .unwrap();
    assert_eq!(
        (upsert.matched_count, upsert.upserted_id),
        (0, Some(Bson::Int32(99)))
    );

    let replaced = items
        .replace_one(doc! { "_id": 4 }, doc! { "kind": "z" })
        .await
        .unwrap();
    assert_eq!((replaced.matched_count, replaced.modified_count), (1, 1));
    assert_eq!(
        items.find_one(doc! { "_id": 4 }).await.unwrap(),
        Some(doc! { "_id": 4, "kind": "z" })
    );

    let deleted = items.delete_one(doc! { "kind": "a" }).await.unwrap();
    assert_eq!(deleted.deleted_count, 1);
    let deleted = items.delete_many(doc! {}).await.unwrap();
    assert_eq!(deleted.deleted_count, 5);
    assert_eq!(items.count_documents(doc! {}).await.unwrap(), 0);

    // Client-side validation: nothing is sent for a malformed update or replacement.
    let error = items
        .update_one(doc! {}, doc! { "n": 1 })
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    let error = items
        .replace_one(doc! {}, doc! { "$set": { "n": 1 } })
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
}

#[tokio::test]
async fn find_with_options_and_a_cursor_over_several_batches() {
    let (deployment, client) = standalone().await;
    let numbers = client.database("math").collection::<Document>("numbers");
    numbers
        .insert_many((0..23).map(|i| doc! { "_id": i, "square": i * i }))
        .await
        .unwrap();

    let before = non_hello_commands(&deployment);
    let cursor = numbers
        .find(doc! { "_id": { "$gte": 3 } })
        .sort(doc! { "_id": -1 })
        .projection(doc! { "square": 0 })
        .batch_size(4)
        .await
        .unwrap();
    let all: Vec<Document> = cursor.try_collect().await.unwrap();
    let ids: Vec<i32> = all.iter().map(|d| d.get_i32("_id").unwrap()).collect();
    assert_eq!(ids, (3..23).rev().collect::<Vec<_>>());
    assert!(all.iter().all(|d| !d.contains_key("square")));
    // 20 documents in batches of 4: one find, then getMores until the server closes it.
    let sent = non_hello_commands(&deployment) - before;
    assert!((5..=6).contains(&sent), "{sent} commands for 5 batches");

    let limited: Vec<Document> = numbers
        .find(doc! {})
        .with_options(FindOptions::default().skip(5).limit(7).batch_size(3))
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(limited.len(), 7);
    assert_eq!(limited[0].get_i32("_id").ok(), Some(5));

    let mut cursor = numbers.find(doc! { "_id": { "$lt": 2 } }).await.unwrap();
    assert!(cursor.advance().await.unwrap());
    assert_eq!(
        cursor.deserialize_current().unwrap().get_i32("_id").ok(),
        Some(0)
    );
    assert!(cursor.advance().await.unwrap());
    assert!(!cursor.advance().await.unwrap());
    assert!(cursor.is_exhausted());
}

#[tokio::test]
async fn find_and_modify_family() {
    let (_deployment, client) = standalone().await;
    let counters = client.database("app").collection::<Document>("counters");
    counters
        .insert_one(doc! { "_id": "a", "n": 1 })
        .await
        .unwrap();

    let before = counters
        .find_one_and_update(doc! { "_id": "a" }, doc! { "$inc": { "n": 1 } })
        .await
        .unwrap();
    assert_eq!(before, Some(doc! { "_id": "a", "n": 1 }));
    let after = counters
        .find_one_and_update(doc! { "_id": "a" }, doc! { "$inc": { "n": 1 } })
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(after, Some(doc! { "_id": "a", "n": 3 }));
    let created = counters
        .find_one_and_update(doc! { "_id": "b" }, doc! { "$set": { "n": 10 } })
        .upsert(true)
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(created, Some(doc! { "_id": "b", "n": 10 }));
    let replaced = counters
        .find_one_and_replace(doc! { "_id": "b" }, doc! { "m": 1 })
        .return_document(ReturnDocument::After)
        .await
        .unwrap();
    assert_eq!(replaced, Some(doc! { "_id": "b", "m": 1 }));
    let deleted = counters
        .find_one_and_delete(doc! {})
        .sort(doc! { "_id": 1 })
        .await
        .unwrap();
    assert_eq!(deleted, Some(doc! { "_id": "a", "n": 3 }));
    assert!(
        counters
            .find_one_and_delete(doc! { "_id": "zzz" })
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn aggregation_on_a_collection() {
    let (_deployment, client) = standalone().await;
    let db = client.database("sales");
    let sales = db.collection::<Document>("sales");
    sales
        .insert_many([
            doc! { "region": "east", "amount": 5 },
            doc! { "region": "west", "amount": 7 },
            doc! { "region": "east", "amount": 3 },
        ])
        .await
        .unwrap();
    let totals: Vec<Document> = sales
        .aggregate([
            doc! { "$group": { "_id": "$region", "total": { "$sum": "$amount" } } },
            doc! { "$sort": { "_id": 1 } },
        ])
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        totals,
        [
            doc! { "_id": "east", "total": 8 },
            doc! { "_id": "west", "total": 7 }
        ]
    );
}

#[tokio::test]
async fn indexes_collections_and_databases() {
    let (_deployment, client) = standalone().await;
    let db = client.database("catalog");
    db.create_collection("products").await.unwrap();
    let products = db.collection::<Document>("products");

    let created = products
        .create_index(
            IndexModel::builder()
                .keys(doc! { "sku": 1 })
                .options(IndexOptions::default().unique(true))
                .build(),
        )
        .await
        .unwrap();
    assert_eq!(created.index_name, "sku_1");
    let names = products
        .create_indexes([IndexModel::new(doc! { "a": 1, "b": -1 })])
        .await
        .unwrap()
        .index_names;
    assert_eq!(names, ["a_1_b_-1"]);
    let mut listed = products.list_index_names().await.unwrap();
    listed.sort();
    assert_eq!(listed, ["_id_", "a_1_b_-1", "sku_1"]);
    let models: Vec<IndexModel> = products
        .list_indexes()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    let unique = models.iter().find(|m| m.keys == doc! { "sku": 1 }).unwrap();
    assert_eq!(unique.options.as_ref().and_then(|o| o.unique), Some(true));

    // A duplicate key is a typed write error with the server's code and message.
    products.insert_one(doc! { "sku": "x" }).await.unwrap();
    let error = products.insert_one(doc! { "sku": "x" }).await.unwrap_err();
    let ErrorKind::Write(WriteFailure::WriteError(refused)) = error.kind() else {
        panic!("expected a write error, got {error:?}");
    };
    assert_eq!(refused.code, 11000);
    assert!(refused.message.contains("duplicate key"), "{error}");
    assert_eq!(error.code(), Some(11000));

    products.drop_index("a_1_b_-1").await.unwrap();
    assert_eq!(products.list_index_names().await.unwrap().len(), 2);
    products.drop_indexes().await.unwrap();
    assert_eq!(products.list_index_names().await.unwrap(), ["_id_"]);

    db.collection::<Document>("other")
        .insert_one(doc! {})
        .await
        .unwrap();
    let mut collections = db.list_collection_names().await.unwrap();
    collections.sort();
    assert_eq!(collections, ["other", "products"]);
    let specs: Vec<_> = db
        .list_collections()
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    assert_eq!(specs.len(), 2);
    assert!(
        client
            .list_database_names()
            .await
            .unwrap()
            .contains(&"catalog".to_string())
    );
    let databases = client.list_databases().await.unwrap();
    assert!(databases.iter().any(|d| d.name == "catalog"));

    products.drop().await.unwrap();
    products.drop().await.unwrap(); // Dropping a missing collection is not an error.
    assert_eq!(db.list_collection_names().await.unwrap(), ["other"]);
    db.drop().await.unwrap();
    assert!(
        !client
            .list_database_names()
            .await
            .unwrap()
            .contains(&"catalog".to_string())
    );
}

#[tokio::test]
async fn ordered_and_unordered_bulk_writes_with_write_errors() {
    let (_deployment, client) = standalone().await;
    let items = client.database("bulk").collection::<Document>("items");
    items.insert_one(doc! { "_id": 1 }).await.unwrap();
    let models = || {
        vec![
            WriteModel::InsertOne(InsertOneModel::new(doc! { "_id": 0 })),
            WriteModel::InsertOne(InsertOneModel::new(doc! { "_id": 1 })), // duplicate
            WriteModel::UpdateOne(UpdateModel::new(
                doc! { "_id": 0 },
                doc! { "$set": { "x": 1 } },
            )),
            WriteModel::ReplaceOne(
                ReplaceOneModel::new(doc! { "_id": 5 }, doc! { "y": 1 }).upsert(true),
            ),
            WriteModel::DeleteOne(DeleteModel::new(doc! { "_id": 1 })),
        ]
    };

    let error = items.bulk_write(models()).await.unwrap_err();
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        panic!("expected a bulk write failure, got {error:?}");
    };
    assert_eq!(failure.write_errors.len(), 1);
    assert_eq!(failure.write_errors[&1].code, 11000);
    // Ordered: nothing after the failed insert ran.
    assert_eq!(items.count_documents(doc! {}).await.unwrap(), 2);
    assert!(items.find_one(doc! { "x": 1 }).await.unwrap().is_none());

    items.delete_many(doc! {}).await.unwrap();
    items.insert_one(doc! { "_id": 1 }).await.unwrap();
    let error = items.bulk_write(models()).ordered(false).await.unwrap_err();
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        panic!("expected a bulk write failure, got {error:?}");
    };
    assert_eq!(failure.write_errors.len(), 1);
    assert!(
        failure.write_errors.contains_key(&1),
        "the caller's position"
    );
    // Unordered: everything else ran.
    assert!(
        items
            .find_one(doc! { "_id": 0, "x": 1 })
            .await
            .unwrap()
            .is_some()
    );
    assert!(items.find_one(doc! { "_id": 5 }).await.unwrap().is_some());
    assert!(items.find_one(doc! { "_id": 1 }).await.unwrap().is_none());

    items.delete_many(doc! {}).await.unwrap();
    let result = items.bulk_write(models()).await.unwrap();
    assert_eq!(
        (
            result.inserted_count,
            result.matched_count,
            result.modified_count,
            result.upserted_count,
            result.deleted_count
        ),
        (2, 1, 1, 1, 1)
    );
    assert_eq!(result.upserted_ids.get(&3), Some(&Bson::Int32(5)));
    assert_eq!(result.inserted_ids.get(&1), Some(&Bson::Int32(1)));
}

#[tokio::test]
async fn a_large_insert_many_is_split_into_several_commands() {
    let deployment = Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("the deployment starts");
    // blackpipe stores the 100,000-document batch on this test's one thread, during which
    // nothing else runs: on a loaded machine (a debug build, the whole suite in parallel) that
    // took longer than the monitor's default 10 s check timeout, the monitor's check failed
    // when the thread came back, the pool was cleared and the insert was retried (a third
    // command). The wait is this test's doing, not the server's: a generous timeout keeps the
    // count about batching.
    let uri = format!("{}&connectTimeoutMS=600000", deployment.uri());
    let client = Client::with_uri_str(&uri)
        .await
        .expect("valid connection string");
    let items = client.database("bulk").collection::<Document>("many");
    // One more than the server's maxWriteBatchSize (100 000).
    let count = 100_001;
    let before = non_hello_commands(&deployment);
    let result = items
        .insert_many((0..count).map(|i| doc! { "_id": i }))
        .await
        .unwrap();
    assert_eq!(
        non_hello_commands(&deployment) - before,
        2,
        "two insert commands"
    );
    assert_eq!(result.inserted_ids.len(), count as usize);
    assert_eq!(
        items.estimated_document_count().await.unwrap(),
        count as u64
    );
}

#[tokio::test]
async fn an_oversized_document_is_rejected_before_anything_is_sent() {
    let (deployment, client) = standalone().await;
    let items = client.database("bulk").collection::<Document>("big");
    items.insert_one(doc! { "warm": "up" }).await.unwrap();
    let before = non_hello_commands(&deployment);
    let big = doc! { "blob": "x".repeat(16 * 1024 * 1024 + 1) };
    let error = items
        .insert_many([doc! { "small": 1 }, big])
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    assert_eq!(non_hello_commands(&deployment), before, "nothing was sent");
    assert_eq!(items.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test]
async fn write_concern_errors_are_typed_write_failures() {
    let (_deployment, client) = standalone().await;
    client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": { "times": 1 },
            "data": {
                "failCommands": ["insert"],
                "writeConcernError": { "code": 100, "codeName": "UnsatisfiableWriteConcern", "errmsg": "not enough data-bearing nodes" },
            },
        })
        .await
        .unwrap();
    let items = client.database("wc").collection::<Document>("items");
    let error = items.insert_one(doc! { "_id": 1 }).await.unwrap_err();
    let ErrorKind::Write(WriteFailure::WriteConcernError(wce)) = error.kind() else {
        panic!("expected a write concern error, got {error:?}");
    };
    assert_eq!(wce.code, 100);
    assert_eq!(wce.message, "not enough data-bearing nodes");
    // The write itself was applied.
    assert_eq!(items.count_documents(doc! {}).await.unwrap(), 1);
}

#[tokio::test]
async fn server_errors_are_typed_command_errors() {
    let (_deployment, client) = standalone().await;
    let items = client.database("err").collection::<Document>("items");
    items.insert_one(doc! { "a": 1 }).await.unwrap();
    let error = items
        .find(doc! { "a": { "$noSuchOperator": 1 } })
        .await
        .unwrap_err();
    let ErrorKind::Command(command) = error.kind() else {
        panic!("expected a command error, got {error:?}");
    };
    assert_ne!(command.code, 0);
    assert!(!command.message.is_empty());
    assert_eq!(error.code(), Some(command.code));
}

#[tokio::test]
async fn a_retried_batch_of_a_split_insert_many_is_applied_exactly_once() {
    let deployment = Deployment::start(DeploymentConfig::replica_set(1))
        .await
        .expect("the deployment starts");
    deployment.wait_for_primary().await;
    let client = Client::with_uri_str(&deployment.uri()).await.unwrap();
    let items = client.database("retry").collection::<Document>("items");
    items.insert_one(doc! { "warm": "up" }).await.unwrap();
    // The first batch command is applied, then its connection is closed before the reply:
    // the driver resends that batch with the same txnNumber and the server replays its reply.
    client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "onPrimaryTransactionalWrite",
            "mode": { "times": 1 },
            "data": { "closeConnection": true },
        })
        .await
        .unwrap();
    // One more than maxWriteBatchSize: two batch commands.
    let count = 100_001;
    let result = items
        .insert_many((0..count).map(|i| doc! { "n": i }))
        .await
        .unwrap();
    assert_eq!(result.inserted_ids.len(), count as usize);
    assert_eq!(
        items
            .count_documents(doc! { "n": { "$exists": true } })
            .await
            .unwrap(),
        count as u64,
        "every document exactly once"
    );
    let fired = client
        .database("admin")
        .run_command(doc! { "configureFailPoint": "onPrimaryTransactionalWrite", "mode": "off" })
        .await
        .unwrap();
    assert_eq!(
        fired
            .get_i64("count")
            .ok()
            .or(fired.get_i32("count").ok().map(i64::from)),
        Some(1),
        "the fail point fired: {fired}"
    );

    // update_many is not a retryable write: the same failure reaches the caller.
    client
        .database("admin")
        .run_command(doc! {
            "configureFailPoint": "failCommand",
            "mode": { "times": 1 },
            "data": { "failCommands": ["update"], "closeConnection": true },
        })
        .await
        .unwrap();
    let error = items
        .update_many(doc! {}, doc! { "$set": { "seen": true } })
        .await
        .unwrap_err();
    assert!(error.is_network_error(), "{error}");
}
