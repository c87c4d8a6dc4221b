//! Collations, `$text` and `$where` as the official `mongodb` driver sees them: locale orders,
//! strengths, numeric ordering, collated unique indexes and a collection's default collation.
//! Like `fidelity`, these run unchanged against a real replica set named by
//! `BLACKPIPE_FIDELITY_URI`, and assert mongod 8.0's documented answers.

use bson::{Document, doc};
use futures_util::TryStreamExt as _;
use mongodb::error::{ErrorKind, WriteFailure};
use mongodb::options::{Collation, CollationStrength, IndexOptions};
use mongodb::{Client, Collection, IndexModel};

use crate::fidelity::{Target, client_options};
use crate::support::within;

async fn client(target: &Target) -> Client {
    let options = client_options(&target.uri, "collations").await;
    Client::with_options(options).expect("client options are valid")
}

fn unique_name(prefix: &str) -> String {
    format!("{prefix}_{}", bson::oid::ObjectId::new().to_hex())
}

fn strings(found: &[Document]) -> Vec<&str> {
    found
        .iter()
        .map(|document| document.get_str("s").unwrap())
        .collect()
}

async fn seeded(client: &Client, words: &[&str]) -> Collection<Document> {
    let collection = client
        .database("collations")
        .collection::<Document>(&unique_name("words"));
    let documents: Vec<Document> = words
        .iter()
        .enumerate()
        .map(|(id, word)| doc! { "_id": i32::try_from(id).unwrap(), "s": *word })
        .collect();
    within(collection.insert_many(documents)).await.unwrap();
    collection
}

#[tokio::test]
async fn locale_strength_and_numeric_ordering_decide_matches_and_order() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let words = seeded(
        &client,
        &["b10", "b9", "Côte", "cote", "côte", "zebra", "ärger"],
    )
    .await;
    let numeric = Collation::builder()
        .locale("en")
        .numeric_ordering(true)
        .build();
    let sorted: Vec<Document> = within(async {
        words
            .find(doc! { "s": { "$lt": "c" } })
            .sort(doc! { "s": 1 })
            .collation(numeric)
            .await?
            .try_collect()
            .await
    })
    .await
    .unwrap();
    assert_eq!(strings(&sorted), ["ärger", "b9", "b10"]);
    let primary = Collation::builder()
        .locale("fr")
        .strength(CollationStrength::Primary)
        .build();
    let count = within(
        words
            .count_documents(doc! { "s": "COTE" })
            .collation(primary),
    )
    .await
    .unwrap();
    assert_eq!(count, 3);
    let swedish = Collation::builder().locale("sv").build();
    let last: Vec<Document> = within(async {
        words
            .find(doc! {})
            .sort(doc! { "s": -1 })
            .limit(1)
            .collation(swedish)
            .await?
            .try_collect()
            .await
    })
    .await
    .unwrap();
    assert_eq!(strings(&last), ["ärger"], "in Swedish ä sorts after z");
}

#[tokio::test]
async fn a_collated_unique_index_and_a_default_collation() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let database = client.database("collations");
    let name = unique_name("people");
    let loose = Collation::builder()
        .locale("en")
        .strength(CollationStrength::Secondary)
        .build();
    within(database.create_collection(&name).collation(loose.clone()))
        .await
        .unwrap();
    let people = database.collection::<Document>(&name);
    let index = IndexModel::builder()
        .keys(doc! { "email": 1 })
        .options(IndexOptions::builder().unique(true).build())
        .build();
    within(people.create_index(index)).await.unwrap();
    within(people.insert_one(doc! { "_id": 1, "email": "Ann@Example.com" }))
        .await
        .unwrap();
    let duplicate = within(people.insert_one(doc! { "_id": 2, "email": "ann@example.COM" }))
        .await
        .unwrap_err();
    match &*duplicate.kind {
        ErrorKind::Write(WriteFailure::WriteError(write)) => assert_eq!(write.code, 11000),
        _ => panic!("a duplicate key error, got {duplicate}"),
    }
    let found = within(people.find_one(doc! { "email": "ANN@EXAMPLE.COM" }))
        .await
        .unwrap();
    assert!(found.is_some(), "the collection's collation applies");
    let indexes: Vec<IndexModel> =
        within(async { people.list_indexes().await?.try_collect().await })
            .await
            .unwrap();
    let inherited = indexes[1]
        .options
        .as_ref()
        .and_then(|options| options.collation.as_ref())
        .expect("the index inherits the collection's collation");
    assert!(
        matches!(inherited.strength, Some(CollationStrength::Secondary)),
        "{inherited:?}"
    );
}

#[tokio::test]
async fn text_search_and_where_are_refused_with_mongods_codes() {
    if std::env::var_os("BLACKPIPE_FIDELITY_URI").is_some() {
        // A real mongod has both; there is nothing to compare.
        eprintln!("skipped: a real mongod (BLACKPIPE_FIDELITY_URI) has text search and JavaScript");
        return;
    }
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let words = seeded(&client, &["coffee shop"]).await;
    let code = |error: mongodb::error::Error| match &*error.kind {
        ErrorKind::Command(command) => command.code,
        _ => panic!("a command error, got {error}"),
    };
    let text = within(async {
        words
            .find(doc! { "$text": { "$search": "coffee" } })
            .await?
            .try_collect::<Vec<_>>()
            .await
    })
    .await
    .unwrap_err();
    assert_eq!(code(text), 27);
    let javascript = within(async {
        words
            .find(doc! { "$where": "true" })
            .await?
            .try_collect::<Vec<_>>()
            .await
    })
    .await
    .unwrap_err();
    assert_eq!(code(javascript), 2);
}
