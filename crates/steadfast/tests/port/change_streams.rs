//! A change-stream consumer written as for the official driver: `watch()` with options and a
//! pipeline, the `Stream` loop, `resume_token()` kept as a checkpoint, a new stream started
//! from it, `next_if_any` polling, and raw events through `with_type::<Document>()`.

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use futures_util::stream::StreamExt;
use steadfast::Client;
use steadfast::bson::{Document, doc};
use steadfast::change_stream::event::{ChangeStreamEvent, OperationType, ResumeToken};
use steadfast::options::{ChangeStreamOptions, FullDocumentType};

#[tokio::test]
async fn a_consumer_checkpoints_and_restarts_from_its_resume_token() {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3))
        .await
        .expect("the deployment starts");
    let client = Client::with_uri_str(deployment.uri())
        .await
        .expect("a valid connection string");
    let orders = client.database("shop").collection::<Document>("orders");

    let options = ChangeStreamOptions::builder()
        .full_document(Some(FullDocumentType::UpdateLookup))
        .max_await_time(Duration::from_millis(10))
        .build();
    let mut stream = orders
        .watch()
        .pipeline(vec![
            doc! { "$match": { "operationType": { "$in": ["insert", "update"] } } },
        ])
        .with_options(options)
        .await
        .expect("watch");
    orders.insert_one(doc! { "_id": 1, "n": 0 }).await.unwrap();
    orders
        .update_one(doc! { "_id": 1 }, doc! { "$set": { "n": 1 } })
        .await
        .unwrap();

    let mut checkpoint: Option<ResumeToken> = None;
    let mut seen = Vec::new();
    while let Some(event) = stream.next().await {
        let event: ChangeStreamEvent<Document> = event.expect("an event");
        seen.push(event.operation_type.clone());
        checkpoint = stream.resume_token();
        if event.operation_type == OperationType::Update {
            let full = event
                .full_document
                .expect("updateLookup fills the document");
            assert_eq!(full.get_i32("n").ok(), Some(1));
            break;
        }
    }
    assert_eq!(seen, vec![OperationType::Insert, OperationType::Update]);
    drop(stream);

    // The application restarts from its checkpoint: only what came after it arrives.
    orders.insert_one(doc! { "_id": 2 }).await.unwrap();
    let mut resumed = orders
        .watch()
        .resume_after(checkpoint)
        .max_await_time(Duration::from_millis(10))
        .await
        .expect("watch from the checkpoint")
        .with_type::<Document>();
    let raw = loop {
        if let Some(raw) = resumed.next_if_any().await.expect("polling") {
            break raw;
        }
        assert!(resumed.is_alive());
    };
    assert_eq!(raw.get_str("operationType").ok(), Some("insert"));
    assert_eq!(
        raw.get_document("documentKey")
            .ok()
            .and_then(|k| k.get_i32("_id").ok()),
        Some(2)
    );
    drop(resumed);
    client.shutdown().await;
}
