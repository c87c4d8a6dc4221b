//! Typed documents: a collection of a serde type instead of raw `Document`s, against an
//! embedded blackpipe replica set.
//!
//! Run with `cargo run -p steadfast --example typed_documents`.

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use futures_util::TryStreamExt;
use serde::{Deserialize, Serialize};

/// One order, stored as `{ _id, item, qty, tags }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Order {
    #[serde(rename = "_id")]
    id: u32,
    item: String,
    qty: i32,
    /// Absent in the stored document when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    tags: Vec<String>,
}

/// A projection: only the fields a report needs.
#[derive(Debug, Deserialize)]
struct ItemQty {
    item: String,
    qty: i32,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3).with_port(0)).await?;
    let client = steadfast::Client::with_uri_str(&deployment.uri()).await?;
    // The type parameter decides what is serialized on writes and deserialized on reads.
    let orders = client.database("shop").collection::<Order>("orders");

    let new_orders = vec![
        Order {
            id: 1,
            item: "tea".into(),
            qty: 2,
            tags: vec!["hot".into()],
        },
        Order {
            id: 2,
            item: "scone".into(),
            qty: 6,
            tags: Vec::new(),
        },
        Order {
            id: 3,
            item: "jam".into(),
            qty: 1,
            tags: vec!["sweet".into()],
        },
    ];
    orders.insert_many(&new_orders).await?;

    // Filters and updates stay documents; results come back as `Order`s.
    let big: Vec<Order> = orders
        .find(doc! { "qty": { "$gt": 1 } })
        .sort(doc! { "_id": 1 })
        .await?
        .try_collect()
        .await?;
    println!("orders with qty > 1: {big:?}");
    assert_eq!(big, new_orders[..2].to_vec());

    orders
        .update_one(doc! { "_id": 3 }, doc! { "$set": { "qty": 4 } })
        .await?;
    let jam = orders.find_one(doc! { "_id": 3 }).await?;
    println!("after the update: {jam:?}");

    // The same collection seen through another type: a projection, or raw documents.
    let report: Vec<ItemQty> = orders
        .clone_with_type::<ItemQty>()
        .find(doc! {})
        .projection(doc! { "_id": 0, "item": 1, "qty": 1 })
        .await?
        .try_collect()
        .await?;
    for line in &report {
        println!("{:>6} x {}", line.qty, line.item);
    }
    let raw = orders
        .clone_with_type::<Document>()
        .find_one(doc! { "_id": 2 })
        .await?;
    println!("as a raw document (no `tags` field): {raw:?}");

    client.shutdown().await;
    deployment.stop().await;
    Ok(())
}
