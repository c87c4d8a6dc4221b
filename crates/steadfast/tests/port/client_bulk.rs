//! `Client::bulk_write` written as for the official driver: models built with `::builder()`
//! and converted with `.into()`, `Collection::insert_one_model`, the summary and verbose
//! results, and the `BulkWrite` error's write errors and partial result.

use std::collections::HashMap;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use steadfast::error::{ErrorKind, PartialBulkWriteResult};
use steadfast::options::{
    DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel,
    UpdateOneModel, WriteModel,
};
use steadfast::results::{SummaryBulkWriteResult, VerboseBulkWriteResult};
use steadfast::{Client, Namespace};

async fn standalone() -> (Deployment, Client) {
    let deployment = Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("the deployment starts");
    let client = Client::with_uri_str(deployment.uri())
        .await
        .expect("valid connection string");
    (deployment, client)
}

#[tokio::test]
async fn mixed_models_across_namespaces_give_summary_and_verbose_results() {
    let (_deployment, client) = standalone().await;
    let people = client.database("port").collection::<Document>("people");
    let audit = Namespace::new("port_log", "audit");
    let models: Vec<WriteModel> = vec![
        people
            .insert_one_model(doc! { "_id": 1, "n": 1 })
            .unwrap()
            .into(),
        InsertOneModel::builder()
            .namespace(audit.clone())
            .document(doc! { "_id": "a" })
            .build()
            .into(),
        UpdateOneModel::builder()
            .namespace(people.namespace())
            .filter(doc! { "_id": 1 })
            .update(doc! { "$inc": { "n": 1 } })
            .build()
            .into(),
        UpdateManyModel::builder()
            .namespace(people.namespace())
            .filter(doc! { "_id": 2 })
            .update(doc! { "$set": { "n": 0 } })
            .upsert(true)
            .build()
            .into(),
        ReplaceOneModel::builder()
            .namespace(audit.clone())
            .filter(doc! { "_id": "a" })
            .replacement(doc! { "seen": true })
            .build()
            .into(),
        DeleteOneModel::builder()
            .namespace(people.namespace())
            .filter(doc! { "_id": 2 })
            .build()
            .into(),
        DeleteManyModel::builder()
            .namespace(audit)
            .filter(doc! { "none": true })
            .build()
            .into(),
    ];
    let verbose: VerboseBulkWriteResult = client
        .bulk_write(models.clone())
        .verbose_results()
        .await
        .unwrap();
    assert_eq!(verbose.summary.inserted_count, 2);
    assert_eq!(verbose.summary.upserted_count, 1);
    assert_eq!(verbose.summary.matched_count, 2);
    assert_eq!(verbose.summary.deleted_count, 1);
    assert_eq!(
        verbose.insert_results[&1].inserted_id,
        bson::Bson::String("a".into())
    );
    assert_eq!(
        verbose.update_results[&3].upserted_id,
        Some(bson::Bson::Int32(2))
    );
    assert_eq!(verbose.delete_results[&6].deleted_count, 0);
    let doc = people.find_one(doc! { "_id": 1 }).await.unwrap().unwrap();
    assert_eq!(doc.get_i32("n").unwrap(), 2);

    // The same models again, unordered: the two inserts now collide, the rest still runs.
    let error = client
        .bulk_write(models)
        .ordered(false)
        .await
        .expect_err("duplicate keys");
    match *error.kind {
        ErrorKind::BulkWrite(ref failure) => {
            let codes: HashMap<usize, i32> = failure
                .write_errors
                .iter()
                .map(|(index, e)| (*index, e.code))
                .collect();
            assert_eq!(codes, HashMap::from([(0, 11000), (1, 11000)]));
            let Some(PartialBulkWriteResult::Summary(ref summary)) = failure.partial_result else {
                panic!("updates and deletes ran: {:?}", failure.partial_result);
            };
            let _: &SummaryBulkWriteResult = summary;
            assert_eq!(summary.inserted_count, 0);
            assert_eq!(summary.upserted_count, 1);
        }
        ref other => panic!("expected a bulk write failure, got {other:?}"),
    }
}
