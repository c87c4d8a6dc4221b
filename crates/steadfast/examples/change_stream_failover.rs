//! A change-stream consumer that survives a failover: one task inserts orders while the
//! primary of a 3-member replica set steps down and is then killed; the consumer's stream
//! resumes by itself (on the new primary, from its cached resume token) and sees every
//! insert exactly once, in order.
//!
//! Run with `cargo run -p steadfast --example change_stream_failover`.

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use futures_util::TryStreamExt;
use steadfast::Client;
use steadfast::change_stream::event::OperationType;

const ORDERS: i32 = 40;
/// The failover starts once the consumer has seen this many orders.
const FAIL_OVER_AFTER: i32 = 15;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3).with_port(0)).await?;
    let client = Client::with_uri_str(deployment.uri()).await?;
    let orders = client.database("shop").collection::<Document>("orders");

    // Open the stream before writing: it sees everything written after it opened.
    let mut stream = orders
        .watch()
        .pipeline([doc! { "$match": { "operationType": "insert" } }])
        .max_await_time(Duration::from_millis(50))
        .await?;

    let writer = async {
        for id in 0..ORDERS {
            // Retryable writes carry each insert across the failover, exactly once.
            orders.insert_one(doc! { "_id": id }).await?;
        }
        Ok::<_, Box<dyn std::error::Error>>(())
    };
    let consumer = async {
        let mut seen = Vec::new();
        while seen.len() < ORDERS as usize {
            let Some(event) = stream.try_next().await? else {
                break;
            };
            assert_eq!(event.operation_type, OperationType::Insert);
            let id = event
                .document_key
                .as_ref()
                .and_then(|key| key.get_i32("_id").ok())
                .ok_or("an insert event names its document")?;
            seen.push(id);
            if id == FAIL_OVER_AFTER {
                let old = deployment.wait_for_primary().await;
                deployment.step_down(Duration::from_secs(60))?;
                // The old primary could keep serving the cursor as a secondary: kill it, so
                // the stream's next getMore fails and it must resume elsewhere.
                deployment.kill(old).await?;
                println!("member {old} stepped down and killed after order {id}");
            }
        }
        Ok::<_, Box<dyn std::error::Error>>(seen)
    };
    let ((), seen) = futures_util::future::try_join(writer, consumer).await?;

    let in_order: Vec<i32> = (0..ORDERS).collect();
    println!(
        "consumer saw {} orders, {}; resume token cached: {}",
        seen.len(),
        if seen == in_order {
            "each once, in order"
        } else {
            "NOT each once in order"
        },
        stream.resume_token().is_some()
    );
    drop(stream);
    client.shutdown().await;
    deployment.stop().await;
    Ok(())
}
