// One realistic program written as for the official driver from start to end: options and a
// command event handler, a typed collection, a unique index, an unordered insert_many, a sorted
// and limited find consumed as a stream, an upsert, an aggregation, the catalog names and a
// duplicate-key error matched through `*e.kind`. Only the crate name is steadfast's.
//
// Included (`include!`) twice: by steadfast's port tests, and by steadfast-bench's test that
// builds and runs it against the official crate renamed to `steadfast`, so both drivers are
// held to the same program and the same results. Plain comments only: no inner attributes or
// doc comments, which `include!` cannot take.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use blackpipe::deployment::{Deployment, DeploymentConfig};
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};
use steadfast::bson::{Document, doc};
use steadfast::error::{ErrorKind, RETRYABLE_WRITE_ERROR, Result, WriteFailure};
use steadfast::event::EventHandler;
use steadfast::event::command::CommandEvent;
use steadfast::options::{ClientOptions, IndexOptions, WriteConcern};
use steadfast::{Client, Collection, IndexModel};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Book {
    title: String,
    author: String,
    year: i32,
}

fn book(title: &str, author: &str, year: i32) -> Book {
    Book {
        title: title.to_string(),
        author: author.to_string(),
        year,
    }
}

async fn library(uri: &str, inserts_seen: Arc<AtomicUsize>) -> Result<Vec<String>> {
    let mut options = ClientOptions::parse(uri).await?;
    options.app_name = Some("library".to_string());
    options.write_concern = Some(WriteConcern::majority());
    options.command_event_handler = Some(EventHandler::callback(move |event| {
        if let CommandEvent::Started(started) = event {
            if started.command_name == "insert" {
                inserts_seen.fetch_add(1, Ordering::SeqCst);
            }
        }
    }));
    let client = Client::with_options(options)?;
    let db = client.database("library");
    let books: Collection<Book> = db.collection("books");

    let unique_title = IndexModel::builder()
        .keys(doc! { "title": 1 })
        .options(IndexOptions::builder().unique(true).build())
        .build();
    books.create_index(unique_title).await?;

    let inserted = books
        .insert_many(vec![
            book("Dune", "Herbert", 1965),
            book("Emma", "Austen", 1815),
            book("Persuasion", "Austen", 1817),
            book("Neuromancer", "Gibson", 1984),
        ])
        .ordered(false)
        .await?;
    assert_eq!(inserted.inserted_ids.len(), 4);

    let mut modern = books
        .find(doc! { "year": { "$gt": 1900 } })
        .sort(doc! { "year": -1 })
        .limit(1)
        .await?;
    let mut newest = Vec::new();
    while let Some(found) = modern.try_next().await? {
        newest.push(found.title);
    }
    assert_eq!(newest, ["Neuromancer"]);

    let upserted = books
        .update_one(
            doc! { "title": "Ubik" },
            doc! { "$set": { "author": "Dick", "year": 1969 } },
        )
        .upsert(true)
        .await?;
    assert!(upserted.upserted_id.is_some());

    let mut by_author = books
        .aggregate(vec![
            doc! { "$group": { "_id": "$author", "books": { "$sum": 1 } } },
            doc! { "$sort": { "books": -1, "_id": 1 } },
        ])
        .await?;
    let first: Document = by_author.try_next().await?.expect("a group");
    assert_eq!(first.get_str("_id").ok(), Some("Austen"));
    // The official driver's shutdown waits for every cursor and session to be dropped.
    drop((modern, by_author));

    match books.insert_one(book("Dune", "Anderson", 2021)).await {
        Err(error) => {
            match *error.kind {
                ErrorKind::Write(WriteFailure::WriteError(ref refused)) => {
                    assert_eq!(refused.code, 11000);
                }
                ref other => panic!("a duplicate key is a write error, got {other:?}"),
            }
            assert!(!error.contains_label(RETRYABLE_WRITE_ERROR));
        }
        Ok(_) => panic!("the unique index refuses a second Dune"),
    }

    assert_eq!(books.count_documents(doc! { "author": "Austen" }).await?, 2);
    assert_eq!(books.list_index_names().await?, ["_id_", "title_1"]);
    assert!(
        client
            .list_database_names()
            .await?
            .contains(&"library".to_string())
    );
    let names = db
        .list_collection_names()
        .filter(doc! { "name": "books" })
        .await?;
    client.shutdown().await;
    Ok(names)
}


// Runs the program against an embedded blackpipe replica set and checks what it saw.
async fn run_library_against_blackpipe() {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3))
        .await
        .expect("the replica set starts");
    let inserts_seen = Arc::new(AtomicUsize::new(0));
    // A generous bound that only keeps a hung program from hanging the test run.
    let uri = deployment.uri();
    let run = library(&uri, Arc::clone(&inserts_seen));
    let names = tokio::time::timeout(std::time::Duration::from_secs(120), run)
        .await
        .expect("the program finishes")
        .expect("the program runs");
    assert_eq!(names, ["books"]);
    assert_eq!(
        inserts_seen.load(Ordering::SeqCst),
        2,
        "one insert for insert_many, one for the refused insert_one"
    );
}
