//! Views and document validation as the official `mongodb` driver sees them: reads through a
//! view (its pipeline first, then the request), writes refused with 166, `listCollections`'
//! view entries, `collMod` of a view; validators (`$jsonSchema` and query operators) refusing
//! writes with 121 and mongod's `errInfo`, `bypassDocumentValidation`, validation levels and
//! actions, and hidden indexes. Like `fidelity`, these run unchanged against a real replica set
//! named by `BLACKPIPE_FIDELITY_URI`.

use bson::{Bson, Document, doc};
use futures_util::TryStreamExt as _;
use mongodb::error::{Error, ErrorKind, WriteFailure};
use mongodb::options::{ValidationAction, ValidationLevel};
use mongodb::{Client, Database};

use crate::fidelity::{Target, client_options};
use crate::support::within;

async fn client(target: &Target) -> Client {
    let options = client_options(&target.uri, "views-validation").await;
    Client::with_options(options).expect("client options are valid")
}

/// A database of its own for each test (tests may share an external mongod): views and
/// `system.views` stay apart.
async fn fresh_database(client: &Client, prefix: &str) -> Database {
    let name = format!("{prefix}_{}", &bson::oid::ObjectId::new().to_hex()[12..]);
    let db = client.database(&name);
    within(db.drop()).await.expect("drop succeeds");
    db
}

fn command_code(error: &Error) -> Option<i32> {
    match error.kind.as_ref() {
        ErrorKind::Command(command) => Some(command.code),
        ErrorKind::Write(WriteFailure::WriteError(write)) => Some(write.code),
        _ => None,
    }
}

/// The `errInfo` of a write error.
fn err_info(error: &Error) -> Document {
    match error.kind.as_ref() {
        ErrorKind::Write(WriteFailure::WriteError(write)) => {
            write.details.clone().expect("errInfo is present")
        }
        _ => panic!("a write error, got {error}"),
    }
}

async fn people(db: &Database) {
    let people = db.collection::<Document>("people");
    within(people.insert_many(vec![
        doc! { "_id": 1, "name": "ann", "age": 31, "city": "Oslo" },
        doc! { "_id": 2, "name": "bob", "age": 17, "city": "Rome" },
        doc! { "_id": 3, "name": "cy", "age": 45, "city": "Oslo" },
    ]))
    .await
    .expect("insert succeeds");
    within(
        db.create_collection("adults")
            .view_on("people".to_owned())
            .pipeline(vec![
                doc! { "$match": { "age": { "$gte": 18 } } },
                doc! { "$project": { "age": 0 } },
            ]),
    )
    .await
    .expect("the view is created");
}

#[tokio::test]
async fn reads_through_a_view_run_its_pipeline_first() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let db = fresh_database(&client, "views_read").await;
    people(&db).await;
    let adults = db.collection::<Document>("adults");
    let found: Vec<Document> = within(async {
        adults
            .find(doc! { "city": "Oslo" })
            .sort(doc! { "_id": -1 })
            .projection(doc! { "name": 1 })
            .await?
            .try_collect()
            .await
    })
    .await
    .expect("find succeeds");
    assert_eq!(
        found,
        vec![
            doc! { "_id": 3, "name": "cy" },
            doc! { "_id": 1, "name": "ann" }
        ]
    );
    let counted = within(adults.count_documents(doc! { "city": "Oslo" }))
        .await
        .unwrap();
    assert_eq!(counted, 2);
    let cities = within(adults.distinct("city", doc! {})).await.unwrap();
    assert_eq!(cities, vec![Bson::from("Oslo")]);
    let grouped: Vec<Document> = within(async {
        adults
            .aggregate(vec![doc! { "$group": { "_id": null, "n": { "$sum": 1 } } }])
            .await?
            .try_collect()
            .await
    })
    .await
    .unwrap();
    assert_eq!(grouped, vec![doc! { "_id": Bson::Null, "n": 2 }]);
}

#[tokio::test]
async fn views_are_listed_refuse_writes_and_take_a_new_pipeline() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let db = fresh_database(&client, "views_admin").await;
    people(&db).await;
    let listed =
        within(db.run_command(doc! { "listCollections": 1, "filter": { "name": "adults" } }))
            .await
            .unwrap();
    let entry = listed
        .get_document("cursor")
        .and_then(|cursor| cursor.get_array("firstBatch"))
        .ok()
        .and_then(|batch| batch.first())
        .and_then(Bson::as_document)
        .cloned()
        .expect("the view is listed");
    assert_eq!(entry.get_str("type").ok(), Some("view"));
    assert_eq!(
        entry
            .get_document("options")
            .unwrap()
            .get_str("viewOn")
            .ok(),
        Some("people")
    );
    assert_eq!(
        entry
            .get_document("info")
            .unwrap()
            .get_bool("readOnly")
            .ok(),
        Some(true)
    );

    let adults = db.collection::<Document>("adults");
    let refused = within(adults.insert_one(doc! { "_id": 9 }))
        .await
        .unwrap_err();
    assert_eq!(command_code(&refused), Some(166), "{refused}");
    let refused =
        within(adults.create_index(mongodb::IndexModel::builder().keys(doc! { "x": 1 }).build()))
            .await
            .unwrap_err();
    assert_eq!(command_code(&refused), Some(166), "{refused}");

    within(
        db.run_command(
            doc! { "collMod": "adults", "pipeline": [{ "$match": { "city": "Rome" } }] },
        ),
    )
    .await
    .expect("collMod of a view succeeds");
    let names: Vec<Document> = within(async { adults.find(doc! {}).await?.try_collect().await })
        .await
        .unwrap();
    assert_eq!(names.len(), 1);
    assert_eq!(names[0].get_str("name").ok(), Some("bob"));

    let exists = within(
        db.create_collection("adults")
            .view_on("people".to_owned())
            .pipeline(vec![]),
    )
    .await
    .unwrap_err();
    assert_eq!(command_code(&exists), Some(48), "{exists}");
    within(adults.drop()).await.expect("a view drops");
    let left = within(db.list_collection_names()).await.unwrap();
    assert!(!left.contains(&"adults".to_owned()), "{left:?}");
}

fn student_schema() -> Document {
    doc! {
        "bsonType": "object",
        "required": ["name"],
        "properties": {
            "name": { "bsonType": "string" },
            "year": { "bsonType": "int", "minimum": 2017 },
        },
    }
}

#[tokio::test]
async fn a_json_schema_validator_refuses_with_121_and_mongods_details() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let db = fresh_database(&client, "validation_schema").await;
    within(
        db.create_collection("students")
            .validator(doc! { "$jsonSchema": student_schema() }),
    )
    .await
    .unwrap();
    let students = db.collection::<Document>("students");
    let error = within(students.insert_one(doc! { "_id": 1, "name": "ann", "year": 2000 }))
        .await
        .unwrap_err();
    assert_eq!(command_code(&error), Some(121), "{error}");
    assert_eq!(
        err_info(&error),
        doc! {
            "failingDocumentId": 1,
            "details": {
                "operatorName": "$jsonSchema",
                "schemaRulesNotSatisfied": [{
                    "operatorName": "properties",
                    "propertiesNotSatisfied": [{
                        "propertyName": "year",
                        "details": [{
                            "operatorName": "minimum",
                            "specifiedAs": { "minimum": 2017 },
                            "reason": "comparison failed",
                            "consideredValue": 2000,
                        }],
                    }],
                }],
            },
        }
    );
    within(
        students
            .insert_one(doc! { "_id": 1, "year": 2000 })
            .bypass_document_validation(true),
    )
    .await
    .expect("bypassDocumentValidation lets the document in");
    let update = within(students.update_one(doc! { "_id": 1 }, doc! { "$set": { "name": 5 } }))
        .await
        .unwrap_err();
    assert_eq!(command_code(&update), Some(121), "{update}");
}

#[tokio::test]
async fn levels_and_actions_decide_which_writes_are_checked() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let db = fresh_database(&client, "validation_levels").await;
    let items = db.collection::<Document>("items");
    within(items.insert_many(vec![
        doc! { "_id": 1, "qty": 5 },
        doc! { "_id": 2, "qty": -5 },
    ]))
    .await
    .unwrap();
    within(db.run_command(doc! {
        "collMod": "items",
        "validator": { "qty": { "$gte": 0 } },
        "validationLevel": "moderate",
    }))
    .await
    .unwrap();
    within(items.update_one(doc! { "_id": 2 }, doc! { "$set": { "qty": -6 } }))
        .await
        .expect("moderate leaves an already invalid document alone");
    let refused = within(items.update_one(doc! { "_id": 1 }, doc! { "$set": { "qty": -1 } }))
        .await
        .unwrap_err();
    assert_eq!(command_code(&refused), Some(121), "{refused}");
    assert_eq!(
        err_info(&refused).get_document("details").unwrap(),
        &doc! {
            "operatorName": "$gte",
            "specifiedAs": { "qty": { "$gte": 0 } },
            "reason": "comparison failed",
            "consideredValue": -1,
        }
    );

    within(
        db.create_collection("warned")
            .validator(doc! { "qty": { "$gte": 0 } })
            .validation_action(ValidationAction::Warn)
            .validation_level(ValidationLevel::Strict),
    )
    .await
    .unwrap();
    within(
        db.collection::<Document>("warned")
            .insert_one(doc! { "qty": -1 }),
    )
    .await
    .expect("warn lets the document in");
    let listed =
        within(db.run_command(doc! { "listCollections": 1, "filter": { "name": "warned" } }))
            .await
            .unwrap();
    let options = listed
        .get_document("cursor")
        .and_then(|cursor| cursor.get_array("firstBatch"))
        .ok()
        .and_then(|batch| batch.first())
        .and_then(Bson::as_document)
        .and_then(|entry| entry.get_document("options").ok())
        .cloned()
        .expect("the collection is listed");
    assert_eq!(
        options.get_document("validator").ok(),
        Some(&doc! { "qty": { "$gte": 0 } })
    );
    assert_eq!(options.get_str("validationAction").ok(), Some("warn"));
}

#[tokio::test]
async fn coll_mod_hides_an_index() {
    let target = Target::replica_set().await;
    let client = client(&target).await;
    let db = fresh_database(&client, "hidden_index").await;
    let items = db.collection::<Document>("items");
    within(items.create_index(mongodb::IndexModel::builder().keys(doc! { "x": 1 }).build()))
        .await
        .unwrap();
    let reply = within(
        db.run_command(doc! { "collMod": "items", "index": { "name": "x_1", "hidden": true } }),
    )
    .await
    .unwrap();
    assert_eq!(reply.get_bool("hidden_old").ok(), Some(false), "{reply}");
    assert_eq!(reply.get_bool("hidden_new").ok(), Some(true), "{reply}");
    let indexes: Vec<mongodb::IndexModel> =
        within(async { items.list_indexes().await?.try_collect().await })
            .await
            .unwrap();
    let hidden = indexes
        .iter()
        .find(|index| index.keys == doc! { "x": 1 })
        .and_then(|index| index.options.as_ref())
        .and_then(|options| options.hidden);
    assert_eq!(hidden, Some(true));
}
