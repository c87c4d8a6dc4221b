//! Index and collection management written as for the official driver: listings and
//! `run_cursor_command` in an explicit session (their cursors are session cursors), the
//! Stable API on the client, and the search index helpers (which a deployment without Atlas
//! Search refuses).

use blackpipe::deployment::{Deployment, DeploymentConfig};
use futures_util::TryStreamExt;
use steadfast::bson::{Document, doc};
use steadfast::options::{AggregateOptions, ClientOptions, ServerApi, ServerApiVersion};
use steadfast::{Client, SearchIndexModel, SearchIndexType};

async fn replica_set() -> (Deployment, Client) {
    let deployment = Deployment::start(DeploymentConfig::replica_set(3))
        .await
        .expect("the deployment starts");
    let client = Client::with_uri_str(deployment.uri())
        .await
        .expect("valid uri");
    (deployment, client)
}

#[tokio::test]
async fn listings_and_cursor_commands_run_in_an_explicit_session() {
    let (_deployment, client) = replica_set().await;
    let db = client.database("port_management");
    let coll = db.collection::<Document>("items");
    coll.insert_many((0..5).map(|i| doc! { "_id": i }))
        .await
        .expect("inserted");
    let mut session = client.start_session().await.expect("a session");

    let mut collections = db
        .list_collections()
        .session(&mut session)
        .await
        .expect("listed");
    let first = collections
        .next(&mut session)
        .await
        .expect("one")
        .expect("decoded");
    assert_eq!(first.name, "items");
    let names = db
        .list_collection_names()
        .session(&mut session)
        .await
        .expect("listed");
    assert_eq!(names, vec!["items".to_string()]);

    let mut indexes = coll
        .list_indexes()
        .session(&mut session)
        .await
        .expect("listed");
    let id_index = indexes
        .next(&mut session)
        .await
        .expect("one")
        .expect("decoded");
    assert_eq!(id_index.keys, doc! { "_id": 1 });

    let mut cursor = db
        .run_cursor_command(doc! { "find": "items", "batchSize": 2 })
        .batch_size(2)
        .comment("port")
        .session(&mut session)
        .await
        .expect("opened");
    let found: Vec<Document> = cursor
        .stream(&mut session)
        .try_collect()
        .await
        .expect("every batch");
    assert_eq!(found.len(), 5);
}

#[tokio::test]
async fn a_strict_stable_api_client_is_refused_commands_outside_version_1() {
    let deployment = Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("the deployment starts");
    let mut options = ClientOptions::parse(deployment.uri())
        .await
        .expect("valid uri");
    options.server_api = Some(
        ServerApi::builder()
            .version(ServerApiVersion::V1)
            .strict(true)
            .build(),
    );
    let client = Client::with_options(options).expect("valid options");
    let coll = client.database("port_api").collection::<Document>("c");
    coll.insert_one(doc! { "x": 1 })
        .await
        .expect("insert is in version 1");
    let error = coll
        .distinct("x", doc! {})
        .await
        .expect_err("distinct is not in version 1");
    assert_eq!(error.code(), Some(323), "{error}");
}

#[tokio::test]
async fn search_index_helpers_reach_the_server() {
    let (_deployment, client) = replica_set().await;
    let coll = client.database("port_search").collection::<Document>("c");
    let model = SearchIndexModel::builder()
        .definition(doc! { "mappings": { "dynamic": true } })
        .name("everything".to_string())
        .index_type(SearchIndexType::Search)
        .build();
    let refused = coll
        .create_search_index(model)
        .await
        .expect_err("no Atlas Search");
    assert!(refused.to_string().contains("Atlas"), "{refused}");
    let listing = coll
        .list_search_indexes()
        .name("everything")
        .aggregate_options(AggregateOptions::builder().batch_size(10).build())
        .await;
    assert!(listing.is_err(), "no Atlas Search");
    assert!(
        coll.update_search_index("everything", doc! {})
            .await
            .is_err()
    );
    assert!(coll.drop_search_index("everything").await.is_err());
}
