//! Requirements of the CRUD, bulk write and command monitoring specifications that the
//! official JSON files shipped here do not exercise, each through steadfast against blackpipe.

use std::future::IntoFuture as _;

use bson::{Bson, Document, doc};
use futures_util::TryStreamExt as _;
use steadfast::event::{CommandEvent, Event};
use steadfast::{DeleteModel, InsertOneModel, WriteModel};

use crate::retry_support::{
    HANG_GUARD, fail_command, failed, harness, primary_host, replica_set, started, succeeded,
    within,
};

#[tokio::test]
async fn find_one_sends_every_find_option_it_takes() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let items = h.client.database("crud").collection::<Document>("items");
    let documents: Vec<_> = (1..=5).map(|id| doc! { "_id": id }).collect();
    within(items.insert_many(documents)).await.unwrap();

    let found = within(
        items
            .find_one(doc! {})
            .sort(doc! { "_id": 1 })
            .skip(2)
            .allow_disk_use(true),
    )
    .await
    .unwrap();

    assert_eq!(found, Some(doc! { "_id": 3 }));
    let find = &started(&h.events, "find")[0].command;
    assert_eq!(find.get_bool("allowDiskUse").ok(), Some(true));
    let skip = find
        .get("skip")
        .and_then(Bson::as_i64)
        .or(find.get_i32("skip").ok().map(i64::from));
    assert_eq!(skip, Some(2), "{find}");
    assert_eq!(find.get_bool("singleBatch").ok(), Some(true));
    assert!(!find.contains_key("batchSize"), "{find}");
    h.client.shutdown().await;
}

#[tokio::test]
async fn the_commands_of_one_bulk_write_share_an_operation_id() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let items = h.client.database("crud").collection::<Document>("items");
    let models = vec![
        WriteModel::InsertOne(InsertOneModel::new(doc! { "x": 1 })),
        WriteModel::DeleteOne(DeleteModel::new(doc! { "x": 1 })),
    ];
    within(items.bulk_write(models)).await.unwrap();
    within(items.insert_one(doc! { "x": 2 })).await.unwrap();

    let inserts = started(&h.events, "insert");
    let deletes = started(&h.events, "delete");
    assert_eq!((inserts.len(), deletes.len()), (2, 1));
    let bulk_id = inserts[0].operation_id;
    assert_eq!(deletes[0].operation_id, bulk_id, "the bulk's two commands");
    let answered: Vec<_> = succeeded(&h.events, "insert")
        .into_iter()
        .chain(succeeded(&h.events, "delete"))
        .map(|event| event.operation_id)
        .collect();
    assert_eq!(answered[0], bulk_id);
    assert_eq!(answered[2], bulk_id, "the delete's succeeded event");
    assert_ne!(
        inserts[1].operation_id, bulk_id,
        "a later operation has its own"
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_cancelled_operation_answers_its_started_event_with_a_failed_one() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let items = h.client.database("crud").collection::<Document>("items");
    within(items.insert_one(doc! { "_id": 1 })).await.unwrap();
    let blocked_for = HANG_GUARD.as_millis();
    fail_command(
        &primary_host(&deployment).await,
        doc! { "times": 1 }.into(),
        doc! { "failCommands": ["find"], "blockConnection": true, "blockTimeMS": blocked_for as i64 },
    )
    .await;
    // The find is dropped once its started event is out (the server holds the command).
    let mut find = Box::pin(items.find_one(doc! {}).into_future());
    let is_find_started = |event: &Event| matches!(event, Event::Command(CommandEvent::Started(e)) if e.command_name == "find");
    tokio::select! {
        _ = &mut find => panic!("the blocked find answered"),
        seen = h.events.wait_for(0, HANG_GUARD, is_find_started) => {
            seen.expect("the find started");
        }
    }
    drop(find);

    let finds = started(&h.events, "find");
    let answers = failed(&h.events, "find");
    assert_eq!((finds.len(), answers.len()), (1, 1));
    assert_eq!(answers[0].request_id, finds[0].request_id);
    assert_eq!(answers[0].operation_id, finds[0].operation_id);
    assert!(
        answers[0].failure.to_string().contains("cancelled"),
        "{}",
        answers[0].failure
    );
    assert!(succeeded(&h.events, "find").is_empty());
    h.client.shutdown().await;
}

#[tokio::test]
async fn blackpipe_answers_merge_rand_and_list_local_sessions_as_mongod() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let db = h.client.database("agg");
    let source = db.collection::<Document>("source");
    let target = db.collection::<Document>("target");
    within(source.insert_many(vec![doc! { "_id": 1 }, doc! { "_id": 2 }]))
        .await
        .unwrap();
    within(target.insert_one(doc! { "_id": 1 })).await.unwrap();

    // $merge refusing a match: the duplicate key error names the key, as mongod's does.
    let merge = vec![doc! { "$merge": { "into": "target", "whenMatched": "fail" } }];
    let error = within(source.aggregate(merge)).await.unwrap_err();
    assert_eq!(error.code(), Some(11000), "{error}");
    let response = Document::try_from(error.server_response().expect("a reply").clone()).unwrap();
    assert_eq!(
        response.get_document("keyPattern").ok(),
        Some(&doc! { "_id": 1 })
    );
    assert_eq!(
        response.get_document("keyValue").ok(),
        Some(&doc! { "_id": 1 })
    );

    // $rand: a double in [0, 1) per document.
    let cursor = within(source.aggregate(vec![doc! { "$project": { "r": { "$rand": {} } } }]))
        .await
        .unwrap();
    let draws: Vec<Document> = within(cursor.try_collect()).await.unwrap();
    assert_eq!(draws.len(), 2);
    assert!(
        draws
            .iter()
            .all(|d| matches!(d.get("r"), Some(Bson::Double(r)) if (0.0..1.0).contains(r)))
    );

    // $listLocalSessions: the server's session cache holds this client's sessions, the
    // listing's own included.
    let cursor = within(db.aggregate(vec![doc! { "$listLocalSessions": {} }]))
        .await
        .unwrap();
    let sessions: Vec<Document> = within(cursor.try_collect()).await.unwrap();
    let listing_lsid = started(&h.events, "aggregate")
        .last()
        .and_then(|event| event.command.get_document("lsid").ok().cloned())
        .expect("the listing ran in a session");
    let ids: Vec<&Bson> = sessions
        .iter()
        .filter_map(|s| s.get_document("_id").ok()?.get("id"))
        .collect();
    assert!(
        ids.contains(&listing_lsid.get("id").unwrap()),
        "{sessions:?}"
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn an_update_pipeline_with_an_unknown_stage_is_a_failed_command_of_the_bulk() {
    let deployment = replica_set().await;
    let h = harness(&deployment.uri(), "").await;
    let items = h.client.database("crud").collection::<Document>("items");
    within(items.insert_one(doc! { "x": 1 })).await.unwrap();
    let bad = vec![doc! { "$invalidOperator": true }];
    let models = vec![WriteModel::UpdateOne(steadfast::UpdateModel::new(
        doc! { "x": 1 },
        bad,
    ))];
    let error = within(items.bulk_write(models)).await.unwrap_err();
    assert_eq!(error.code(), Some(40324), "{error}");
    // mongod fails the whole command (not one statement): monitoring reports it failed.
    let updates = started(&h.events, "update");
    let failures = failed(&h.events, "update");
    assert_eq!((updates.len(), failures.len()), (1, 1));
    assert!(succeeded(&h.events, "update").is_empty());
    assert_eq!(failures[0].operation_id, updates[0].operation_id);
    h.client.shutdown().await;
}
