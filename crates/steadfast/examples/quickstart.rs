//! Quickstart: connect, write, read, update and delete, against a 3-member replica set that
//! blackpipe (the repository's MongoDB wire-protocol test server) runs inside this process.
//!
//! Run with `cargo run -p steadfast --example quickstart`. Against a real deployment, replace
//! the embedded server's URI with yours, e.g. `mongodb://localhost:27017/?replicaSet=rs0`.

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use futures_util::TryStreamExt;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // An in-process replica set on ephemeral ports; `uri()` names its members and set name.
    let deployment = Deployment::start(DeploymentConfig::replica_set(3).with_port(0)).await?;
    println!("blackpipe replica set at {}", deployment.uri());

    // The client discovers the members, finds the primary and keeps monitoring them.
    let client = steadfast::Client::with_uri_str(&deployment.uri()).await?;
    let visits = client.database("app").collection::<Document>("visits");

    // Writes go to the primary and are retried once if it fails over mid-way.
    visits
        .insert_many([
            doc! { "_id": "home", "n": 3 },
            doc! { "_id": "about", "n": 1 },
            doc! { "_id": "blog", "n": 7 },
        ])
        .await?;
    let update = visits
        .update_one(doc! { "_id": "about" }, doc! { "$inc": { "n": 1 } })
        .await?;
    println!("update matched {} document(s)", update.matched_count);
    // An upsert creates the document the filter names when there is none.
    let upsert = visits
        .update_one(doc! { "_id": "shop" }, doc! { "$inc": { "n": 1 } })
        .upsert(true)
        .await?;
    println!("upsert inserted {:?}", upsert.upserted_id);

    // A find is a stream of documents, fetched from the server batch by batch.
    let mut busiest = visits
        .find(doc! { "n": { "$gte": 2 } })
        .sort(doc! { "n": -1 })
        .limit(2)
        .await?;
    while let Some(page) = busiest.try_next().await? {
        println!("busy page: {page}");
    }
    let one = visits.find_one(doc! { "_id": "home" }).await?;
    println!("find_one: {one:?}");

    let deleted = visits.delete_many(doc! { "n": { "$lt": 2 } }).await?;
    let left = visits.count_documents(doc! {}).await?;
    println!("deleted {}, {left} left", deleted.deleted_count);

    // Shutting down ends the monitors and closes the pooled connections.
    client.shutdown().await;
    deployment.stop().await;
    Ok(())
}
