//! A blocking program written as for the official driver's `mongodb::sync` (crate renamed):
//! options parsed with `.run()`, a typed collection, an index, inserts, a sorted find iterated
//! with `for` and with `advance`/`deserialize_current`, an upsert, a transaction through
//! `and_run` and one committed by hand, a change stream, a duplicate-key error matched through
//! `*e.kind`, and `shutdown().run()`. It runs from a plain `#[test]`, with no runtime of its
//! own; the embedded deployment runs on a runtime the test keeps for it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use fast_socks5::server::{DnsResolveHelper as _, Socks5ServerProtocol, run_tcp_proxy};
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

/// A SOCKS5 proxy on 127.0.0.1 that requires `app`/`secret` and tunnels to any target,
/// counting the tunnels it opened.
async fn start_proxy() -> (u16, Arc<AtomicUsize>, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let port = listener.local_addr().expect("bound").port();
    let tunnels = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&tunnels);
    let task = tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            let counted = Arc::clone(&counted);
            tokio::spawn(async move {
                // A refused handshake or a dropped client ends this connection only.
                let _ = tunnel(socket, &counted).await;
            });
        }
    });
    (port, tunnels, task)
}

async fn tunnel(
    socket: tokio::net::TcpStream,
    tunnels: &AtomicUsize,
) -> std::result::Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let (protocol, _) = Socks5ServerProtocol::accept_password_auth(socket, |user, password| {
        user == "app" && password == "secret"
    })
    .await?;
    let (protocol, _, target) = protocol.read_command().await?.resolve_dns().await?;
    tunnels.fetch_add(1, Ordering::SeqCst);
    run_tcp_proxy(protocol, &target, Duration::from_secs(10), true).await?;
    Ok(())
}

/// The same blocking program with a SOCKS5 connection string: every connection, application
/// and monitoring alike, goes through an authenticating proxy. The test binary builds steadfast
/// with the features line a program moving from the official crate would have
/// (`features = ["sync", "socks5-proxy", "zstd-compression", ...]`, this crate's
/// dev-dependency on itself).
#[test]
fn the_blocking_program_runs_through_a_socks5_proxy_uri() {
    let server_runtime = tokio::runtime::Runtime::new().expect("the deployment's runtime");
    let deployment = server_runtime
        .block_on(Deployment::start(DeploymentConfig::replica_set(3)))
        .expect("the replica set starts");
    let (port, tunnels, proxy) = server_runtime.block_on(start_proxy());
    let uri = format!(
        "{}&proxyHost=127.0.0.1&proxyPort={port}&proxyUsername=app&proxyPassword=secret",
        deployment.uri()
    );
    let (titles, balances, first) = shelf(&uri).expect("the program runs through the proxy");
    assert_eq!(titles, ["Emma", "Dune", "Ubik"]);
    assert_eq!(balances, [10, 10]);
    assert_eq!(first, "Dune");
    assert!(
        tunnels.load(Ordering::SeqCst) >= 3,
        "at least one tunnel per member: {}",
        tunnels.load(Ordering::SeqCst)
    );
    proxy.abort();
    server_runtime.block_on(async move { drop(deployment) });
}
