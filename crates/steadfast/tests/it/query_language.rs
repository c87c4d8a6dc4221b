//! The query language through steadfast's own API against blackpipe: regular expressions in
//! filters and `$pull`, the positional `$`, `$[]` and `$[<identifier>]` in updates, and the
//! positional and `$elemMatch` projections, with mongod's error codes reaching the caller
//! typed. (`blackpipe/tests/it/query_language.rs` checks the same answers through the official
//! driver, and against a real mongod when one is named.)

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Bson, Document, Regex, doc};
use futures_util::TryStreamExt;
use steadfast::error::WriteFailure;
use steadfast::options::ReturnDocument;
use steadfast::{Client, Collection, ErrorKind};

async fn collection(name: &str) -> (Deployment, Collection<Document>) {
    let deployment = Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("the deployment starts");
    let client = Client::with_uri_str(&deployment.uri())
        .await
        .expect("valid connection string");
    let collection = client.database("query_language").collection(name);
    (deployment, collection)
}

fn re(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(Regex {
        pattern: pattern.to_owned().try_into().expect("no NUL"),
        options: options.to_owned().try_into().expect("no NUL"),
    })
}

async fn ids(collection: &Collection<Document>, filter: Document) -> Vec<i32> {
    let found: Vec<Document> = collection
        .find(filter)
        .sort(doc! { "_id": 1 })
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap();
    found
        .iter()
        .map(|doc| doc.get_i32("_id").unwrap())
        .collect()
}

#[tokio::test]
async fn regular_expressions_filter_and_pull() {
    let (_deployment, people) = collection("people").await;
    people
        .insert_many([
            doc! { "_id": 1, "name": "Ann", "tags": ["apple", "kiwi"] },
            doc! { "_id": 2, "name": "anna", "tags": ["Avocado"] },
            doc! { "_id": 3, "name": "Bob", "tags": [] },
        ])
        .await
        .unwrap();
    assert_eq!(
        ids(&people, doc! { "name": re("^ann", "i") }).await,
        vec![1, 2]
    );
    assert_eq!(
        ids(&people, doc! { "name": { "$in": [re("^b", "i"), "Ann"] } }).await,
        vec![1, 3]
    );
    assert_eq!(
        ids(&people, doc! { "name": { "$not": { "$regex": "n" } } }).await,
        vec![3]
    );
    people
        .update_many(doc! {}, doc! { "$pull": { "tags": re("^a", "i") } })
        .await
        .unwrap();
    assert_eq!(
        ids(&people, doc! { "tags": { "$size": 0 } }).await,
        vec![2, 3]
    );
    let error = people
        .find(doc! { "name": { "$regex": "a(?=b)" } })
        .await
        .unwrap_err();
    let ErrorKind::Command(command) = error.kind() else {
        panic!("expected a command error, got {error:?}");
    };
    assert_eq!(command.code, 51091);
    assert!(
        command.message.starts_with("Regular expression is invalid"),
        "{error}"
    );
}

#[tokio::test]
async fn positional_updates_and_projections() {
    let (_deployment, orders) = collection("orders").await;
    orders
        .insert_one(doc! { "_id": 1, "grades": [80, 85, 90], "items": [{ "sku": "a", "qty": 1 }, { "sku": "b", "qty": 1 }] })
        .await
        .unwrap();
    orders
        .update_one(
            doc! { "items.sku": "b" },
            doc! { "$inc": { "items.$.qty": 4 } },
        )
        .await
        .unwrap();
    orders
        .update_one(doc! { "_id": 1 }, doc! { "$inc": { "grades.$[high]": 1 } })
        .array_filters([doc! { "high": { "$gte": 85 } }])
        .await
        .unwrap();
    let updated = orders
        .find_one_and_update(
            doc! { "_id": 1 },
            doc! { "$set": { "items.$[].seen": true } },
        )
        .return_document(ReturnDocument::After)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        updated,
        doc! { "_id": 1, "grades": [80, 86, 91], "items": [{ "sku": "a", "qty": 1, "seen": true }, { "sku": "b", "qty": 5, "seen": true }] }
    );
    let projected = orders
        .find_one(doc! { "grades": { "$gt": 85 } })
        .projection(doc! { "grades.$": 1 })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(projected, doc! { "_id": 1, "grades": [86] });
    let projected = orders
        .find_one(doc! {})
        .projection(doc! { "items": { "$elemMatch": { "qty": { "$gt": 1 } } }, "_id": 0 })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        projected,
        doc! { "items": [{ "sku": "b", "qty": 5, "seen": true }] }
    );
    let error = orders
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "grades.$": 0 } })
        .await
        .unwrap_err();
    let ErrorKind::Write(WriteFailure::WriteError(refused)) = error.kind() else {
        panic!("expected a write error, got {error:?}");
    };
    assert_eq!(refused.code, 2);
    assert_eq!(
        refused.message,
        "The positional operator did not find the match needed from the query."
    );
}
