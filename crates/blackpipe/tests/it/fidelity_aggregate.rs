//! Aggregation answers as the official `mongodb` driver sees them: `$merge`'s duplicate key
//! error, `$rand`, `$listLocalSessions` over the sessions the server has cached, an update
//! pipeline with an unknown stage, change events' `disambiguatedPaths`, and `$collStats`. Like
//! `fidelity`, these run unchanged against a real replica set named by
//! `BLACKPIPE_FIDELITY_URI`.

use bson::{Bson, Document, doc};
use futures_util::{StreamExt as _, TryStreamExt as _};
use mongodb::Client;
use mongodb::error::ErrorKind;

use crate::fidelity::{Target, client_options};
use crate::support::within;

async fn client(target: &Target) -> Client {
    let options = client_options(&target.uri, "fidelity-aggregate").await;
    Client::with_options(options).expect("client options are valid")
}

/// A collection no other test uses (tests may share an external mongod).
fn unique_name(prefix: &str) -> String {
    format!("{prefix}_{}", bson::oid::ObjectId::new().to_hex())
}

#[tokio::test]
async fn merge_refusing_a_match_fails_with_a_duplicate_key() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let db = client.database("fidelity");
    let (source, target_name) = (unique_name("merge_source"), unique_name("merge_target"));
    let source = db.collection::<Document>(&source);
    within(source.insert_many(vec![doc! { "_id": 1 }, doc! { "_id": 2 }]))
        .await
        .unwrap();
    within(
        db.collection::<Document>(&target_name)
            .insert_one(doc! { "_id": 1 }),
    )
    .await
    .unwrap();
    let merge = doc! { "$merge": { "into": &target_name, "whenMatched": "fail" } };
    let error = within(source.aggregate(vec![merge])).await.unwrap_err();
    let ErrorKind::Command(command) = &*error.kind else {
        panic!("a command error, got {error}");
    };
    assert_eq!(command.code, 11000, "{error}");
}

#[tokio::test]
async fn rand_gives_each_document_a_double_below_one() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let docs = client
        .database("fidelity")
        .collection::<Document>(&unique_name("rand"));
    within(docs.insert_many((0..5).map(|i| doc! { "_id": i })))
        .await
        .unwrap();
    let cursor = within(docs.aggregate(vec![doc! { "$project": { "r": { "$rand": {} } } }]))
        .await
        .unwrap();
    let draws: Vec<Document> = within(cursor.try_collect()).await.unwrap();
    assert_eq!(draws.len(), 5);
    for draw in &draws {
        assert!(
            matches!(draw.get("r"), Some(Bson::Double(r)) if (0.0..1.0).contains(r)),
            "{draw}"
        );
    }
}

#[tokio::test]
async fn list_local_sessions_lists_a_session_the_server_has_seen() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let mut session = within(client.start_session()).await.unwrap();
    let session_id = session.id().get("id").cloned().expect("an lsid id");
    let db = client.database("fidelity");
    within(
        db.collection::<Document>(&unique_name("sessions"))
            .find_one(doc! {})
            .session(&mut session),
    )
    .await
    .unwrap();
    let mut cursor = within(
        db.aggregate(vec![doc! { "$listLocalSessions": { "allUsers": true } }])
            .session(&mut session),
    )
    .await
    .unwrap();
    let mut ids = Vec::new();
    while let Some(listed) = within(cursor.next(&mut session)).await {
        let listed = listed.unwrap();
        let id = listed.get_document("_id").unwrap();
        assert!(listed.get_datetime("lastUse").is_ok(), "{listed}");
        assert!(matches!(id.get("uid"), Some(Bson::Binary(_))), "{listed}");
        ids.extend(id.get("id").cloned());
    }
    assert!(ids.contains(&session_id), "{ids:?} lacks {session_id}");
}

#[tokio::test]
async fn an_update_pipeline_with_an_unknown_stage_fails_the_whole_command() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let docs = client
        .database("fidelity")
        .collection::<Document>(&unique_name("pipeline"));
    within(docs.insert_one(doc! { "x": 1 })).await.unwrap();
    let pipeline = vec![doc! { "$invalidOperator": true }];
    let error = within(docs.update_one(doc! { "x": 1 }, pipeline))
        .await
        .unwrap_err();
    // A command error (ok: 0), not one statement's write error.
    let ErrorKind::Command(command) = &*error.kind else {
        panic!("a command error, got {error}");
    };
    assert_eq!(command.code, 40324, "{error}");
}

#[tokio::test]
async fn disambiguated_paths_name_array_indexes_as_int32() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let docs = client
        .database("fidelity")
        .collection::<Document>(&unique_name("paths"));
    within(docs.insert_one(doc! { "_id": 1, "a": [{ "1": 1 }] }))
        .await
        .unwrap();
    let mut stream = within(docs.watch().show_expanded_events(true))
        .await
        .unwrap()
        .with_type::<Document>();
    within(docs.update_one(doc! { "_id": 1 }, doc! { "$set": { "a.0.1": 2 } }))
        .await
        .unwrap();
    let event = within(stream.next()).await.expect("an event").unwrap();
    let paths = event
        .get_document("updateDescription")
        .and_then(|description| description.get_document("disambiguatedPaths"))
        .unwrap_or_else(|_| panic!("{event}"));
    let expected = Bson::Array(vec!["a".into(), Bson::Int32(0), "1".into()]);
    assert_eq!(paths.get("a.0.1"), Some(&expected), "{event}");
}

#[tokio::test]
async fn coll_stats_reports_a_capped_collections_storage_and_the_member_answering() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let db = client.database("fidelity");
    let name = unique_name("coll_stats");
    within(db.create_collection(&name).capped(true).size(4096).max(5))
        .await
        .unwrap();
    let collection = db.collection::<Document>(&name);
    within(collection.insert_many((0..3).map(|i| doc! { "_id": i })))
        .await
        .unwrap();
    let stage = doc! { "$collStats": { "storageStats": {}, "count": {} } };
    let cursor = within(collection.aggregate(vec![stage])).await.unwrap();
    let output: Vec<Document> = within(cursor.try_collect()).await.unwrap();
    let [stats] = output.as_slice() else {
        panic!("one document, got {output:?}");
    };
    assert_eq!(stats.get_str("ns").unwrap(), format!("fidelity.{name}"));
    assert!(stats.get_datetime("localTime").is_ok(), "{stats}");
    assert_eq!(stats.get_i32("count").unwrap(), 3);
    let storage = stats.get_document("storageStats").unwrap();
    assert!(storage.get_bool("capped").unwrap(), "{storage}");
    assert_eq!(storage.get_i32("maxSize").unwrap(), 4096);
    assert_eq!(storage.get_i32("max").unwrap(), 5);
    assert_eq!(storage.get_i32("count").unwrap(), 3);
    let host = stats.get_str("host").unwrap();
    if target.deployment.is_some() {
        // blackpipe names the member as its hello's `me` does (mongod uses its host name).
        let hello = within(db.run_command(doc! { "hello": 1 })).await.unwrap();
        assert_eq!(host, hello.get_str("me").unwrap());
    }
}
