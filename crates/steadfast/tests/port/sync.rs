//! A blocking program written as for the official driver's `mongodb::sync` (crate renamed):
//! options parsed with `.run()`, a typed collection, an index, inserts, a sorted find iterated
//! with `for` and with `advance`/`deserialize_current`, an upsert, a transaction through
//! `and_run` and one committed by hand, a change stream, a duplicate-key error matched through
//! `*e.kind`, and `shutdown().run()`. It runs from a plain `#[test]`, with no runtime of its
//! own; the embedded deployment runs on a runtime the test keeps for it.

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use serde::{Deserialize, Serialize};
use steadfast::IndexModel;
use steadfast::bson::{Document, doc};
use steadfast::error::{ErrorKind, Result, WriteFailure};
use steadfast::options::{ClientOptions, IndexOptions};
use steadfast::sync::{Client, ClientSession, Collection};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Book {
    title: String,
    year: i32,
}

fn book(title: &str, year: i32) -> Book {
    Book {
        title: title.to_string(),
        year,
    }
}

fn transfer(session: &mut ClientSession, accounts: &Collection<Document>) -> Result<()> {
    accounts
        .update_one(doc! { "_id": "alice" }, doc! { "$inc": { "balance": -5 } })
        .session(&mut *session)
        .run()?;
    accounts
        .update_one(doc! { "_id": "bob" }, doc! { "$inc": { "balance": 5 } })
        .session(&mut *session)
        .run()?;
    Ok(())
}

fn shelf(uri: &str) -> Result<(Vec<String>, Vec<i64>, String)> {
    let mut options = ClientOptions::parse(uri).run()?;
    options.app_name = Some("shelf".to_string());
    let client = Client::with_options(options)?;
    let db = client.database("shelf");
    let books: Collection<Book> = db.collection("books");

    let unique_title = IndexModel::builder()
        .keys(doc! { "title": 1 })
        .options(IndexOptions::builder().unique(true).build())
        .build();
    books.create_index(unique_title).run()?;
    let mut events = books
        .watch()
        .max_await_time(Duration::from_millis(10))
        .run()?;
    books
        .insert_many(vec![
            book("Dune", 1965),
            book("Emma", 1815),
            book("Ubik", 1969),
        ])
        .run()?;

    let mut titles = Vec::new();
    for found in books.find(doc! {}).sort(doc! { "year": 1 }).run()? {
        titles.push(found?.title);
    }
    let mut cursor = books.find(doc! { "year": { "$gt": 1900 } }).run()?;
    let mut modern = 0;
    while cursor.advance()? {
        assert!(cursor.deserialize_current()?.year > 1900);
        modern += 1;
    }
    assert_eq!(modern, 2);

    let first = events.next().expect("the stream is alive")?;
    let first_id = first.full_document.expect("an insert's document").title;

    match books.insert_one(book("Dune", 2021)).run() {
        Err(error) => match *error.kind {
            ErrorKind::Write(WriteFailure::WriteError(ref refused)) => {
                assert_eq!(refused.code, 11000);
            }
            ref other => panic!("a duplicate key is a write error, got {other:?}"),
        },
        Ok(_) => panic!("the unique index refuses a second Dune"),
    }

    let accounts: Collection<Document> = db.collection("accounts");
    accounts
        .insert_many([
            doc! { "_id": "alice", "balance": 20_i64 },
            doc! { "_id": "bob", "balance": 0_i64 },
        ])
        .run()?;
    let mut session = client.start_session().run()?;
    session
        .start_transaction()
        .and_run(&accounts, |session, accounts| transfer(session, accounts))?;
    session.start_transaction().run()?;
    transfer(&mut session, &accounts)?;
    session.commit_transaction().run()?;
    let mut balances = Vec::new();
    for account in accounts.find(doc! {}).sort(doc! { "_id": 1 }).run()? {
        balances.push(account?.get_i64("balance").expect("a balance"));
    }

    assert!(
        client
            .list_database_names()
            .run()?
            .contains(&"shelf".to_string())
    );
    drop((events, session));
    client.shutdown().run();
    Ok((titles, balances, first_id))
}

#[test]
fn a_blocking_program_written_for_the_official_sync_api_runs_unchanged() {
    let server_runtime = tokio::runtime::Runtime::new().expect("the deployment's runtime");
    let deployment = server_runtime
        .block_on(Deployment::start(DeploymentConfig::replica_set(3)))
        .expect("the replica set starts");
    let (titles, balances, first) = shelf(&deployment.uri()).expect("the program runs");
    assert_eq!(titles, ["Emma", "Dune", "Ubik"]);
    assert_eq!(balances, [10, 10]);
    assert_eq!(first, "Dune");
    server_runtime.block_on(async move { drop(deployment) });
}
