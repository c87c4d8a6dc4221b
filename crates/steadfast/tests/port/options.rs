//! Option structs, typed option values and concerns, used the way code written for the official
//! crate uses them: `Options::builder()...build()`, `.with_options(..)` on actions, chained
//! setters, `WriteConcern::majority()`. Each program runs against an embedded blackpipe and
//! checks what the server received or did.

use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use futures_util::TryStreamExt;
use steadfast::options::{
    Acknowledgment, AggregateOptions, ChangeStreamPreAndPostImages, ClusteredIndex, Collation,
    CollationAlternate, CollationCaseFirst, CollationMaxVariable, CollationStrength,
    CollectionOptions, CommitQuorum, CountOptions, CreateCollectionOptions, CreateIndexOptions,
    DatabaseOptions, DeleteOptions, FindOneAndUpdateOptions, FindOneOptions, FindOptions,
    IndexModel, IndexOptionDefaults, IndexOptions, IndexVersion, InsertManyOptions,
    InsertOneOptions, ReadConcern, ReadConcernLevel, ReplaceOptions, ReturnDocument,
    Sphere2DIndexVersion, TextIndexVersion, TimeseriesGranularity, TimeseriesOptions,
    UpdateOptions, ValidationAction, ValidationLevel, WriteConcern,
};
use steadfast::{Client, Collection, Database};

async fn standalone() -> (Deployment, Client) {
    let deployment = Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("the deployment starts");
    let client = Client::with_uri_str(&deployment.uri())
        .await
        .expect("valid connection string");
    (deployment, client)
}

/// The `options` a collection was created with, exactly as `listCollections` reports them.
async fn created_options(db: &Database, name: &str) -> Document {
    let reply = db
        .run_command(doc! { "listCollections": 1, "filter": { "name": name } })
        .await
        .expect("listCollections runs");
    let batch = reply
        .get_document("cursor")
        .and_then(|cursor| cursor.get_array("firstBatch"))
        .expect("a cursor reply");
    assert_eq!(batch.len(), 1, "one collection named {name}");
    batch[0]
        .as_document()
        .and_then(|spec| spec.get_document("options").ok())
        .cloned()
        .expect("the entry has options")
}

/// The same options read back through the typed listing.
async fn listed_options(db: &Database, name: &str) -> CreateCollectionOptions {
    let mut specs: Vec<_> = db
        .list_collections()
        .filter(doc! { "name": name })
        .await
        .expect("listCollections runs")
        .try_collect()
        .await
        .expect("listCollections iterates");
    assert_eq!(specs.len(), 1, "one collection named {name}");
    specs.remove(0).options
}

#[test]
fn builders_and_constructors_read_like_the_official_crate() {
    let find = FindOptions::builder()
        .limit(5)
        .batch_size(2)
        .sort(doc! { "n": -1 })
        .max_time(Duration::from_secs(1))
        .build();
    assert_eq!(
        (find.limit, find.batch_size, find.sort),
        (Some(5), Some(2), Some(doc! { "n": -1 }))
    );
    let insert = InsertManyOptions::builder().ordered(false).build();
    assert_eq!(insert.ordered, Some(false));
    let update = UpdateOptions::builder()
        .upsert(true)
        .sort(doc! { "n": 1 })
        .build();
    assert_eq!(
        (update.upsert, update.sort),
        (Some(true), Some(doc! { "n": 1 }))
    );
    let modify = FindOneAndUpdateOptions::builder()
        .return_document(ReturnDocument::After)
        .build();
    assert_eq!(modify.return_document, Some(ReturnDocument::After));

    let journaled = WriteConcern::builder()
        .w(Acknowledgment::Majority)
        .journal(true)
        .w_timeout(Duration::from_millis(500))
        .build();
    assert_eq!(journaled.w, WriteConcern::majority().w);
    assert_eq!(journaled.journal, Some(true));
    assert_eq!(WriteConcern::nodes(2).w, Some(Acknowledgment::Nodes(2)));
    assert_eq!(
        WriteConcern::custom("dc").w,
        Some(Acknowledgment::from("dc"))
    );
    assert_eq!(
        Acknowledgment::from("majority"),
        Acknowledgment::Majority,
        "the name majority is the majority acknowledgment, not a tag set"
    );
    for (concern, level) in [
        (ReadConcern::majority(), ReadConcernLevel::Majority),
        (ReadConcern::local(), ReadConcernLevel::Local),
        (ReadConcern::available(), ReadConcernLevel::Available),
        (ReadConcern::linearizable(), ReadConcernLevel::Linearizable),
        (ReadConcern::snapshot(), ReadConcernLevel::Snapshot),
    ] {
        assert_eq!(concern.level, level);
    }

    let handle = DatabaseOptions::builder()
        .write_concern(WriteConcern::majority())
        .build();
    assert_eq!(handle.write_concern, Some(WriteConcern::majority()));
    let handle = CollectionOptions::builder()
        .write_concern(WriteConcern::majority())
        .read_concern(ReadConcern::local())
        .build();
    assert_eq!(handle.write_concern, Some(WriteConcern::majority()));
    assert!(handle.selection_criteria.is_none());

    let strength = CollationStrength::try_from(2).expect("level 2 exists");
    assert_eq!(strength, CollationStrength::Secondary);
    assert!(CollationStrength::try_from(6).is_err());
    assert_eq!(
        "shifted".parse::<CollationAlternate>().ok(),
        Some(CollationAlternate::Shifted)
    );
    assert!("sideways".parse::<CollationCaseFirst>().is_err());
}

#[tokio::test]
async fn find_and_find_one_take_official_option_structs() {
    let (_deployment, client) = standalone().await;
    let coll: Collection<Document> = client.database("port").collection("numbers");
    let docs: Vec<Document> = (1..=6).map(|n| doc! { "_id": n, "n": n }).collect();
    coll.insert_many(docs)
        .with_options(InsertManyOptions::builder().ordered(true).build())
        .await
        .expect("inserted");

    let options = FindOptions::builder()
        .sort(doc! { "n": -1 })
        .skip(1)
        .limit(3)
        .batch_size(2)
        .projection(doc! { "_id": 0, "n": 1 })
        .build();
    let found: Vec<Document> = coll
        .find(doc! {})
        .with_options(options)
        .await
        .expect("find runs")
        .try_collect()
        .await
        .expect("cursor iterates");
    assert_eq!(
        found,
        vec![doc! { "n": 5 }, doc! { "n": 4 }, doc! { "n": 3 }]
    );

    // The action's own setters and a later `with_options(None)` behave as the official's.
    let first = coll
        .find_one(doc! { "n": { "$gt": 2 } })
        .with_options(FindOneOptions::builder().sort(doc! { "n": 1 }).build())
        .await
        .expect("findOne runs");
    assert_eq!(first, Some(doc! { "_id": 3, "n": 3 }));
    let counted = coll
        .count_documents(doc! {})
        .with_options(CountOptions::builder().skip(2).limit(3).build())
        .await
        .expect("count runs");
    assert_eq!(counted, 3);
    let summed: Vec<Document> = coll
        .aggregate([doc! { "$group": { "_id": null, "total": { "$sum": "$n" } } }])
        .with_options(AggregateOptions::builder().batch_size(1).build())
        .await
        .expect("aggregate runs")
        .try_collect()
        .await
        .expect("cursor iterates");
    assert_eq!(summed, vec![doc! { "_id": null, "total": 21 }]);
}

#[tokio::test]
async fn update_one_and_replace_one_honour_sort() {
    let (_deployment, client) = standalone().await;
    let coll: Collection<Document> = client.database("port").collection("queue");
    coll.insert_many([
        doc! { "_id": 1, "state": "ready", "priority": 3 },
        doc! { "_id": 2, "state": "ready", "priority": 7 },
        doc! { "_id": 3, "state": "ready", "priority": 5 },
    ])
    .await
    .expect("inserted");

    let claimed = coll
        .update_one(
            doc! { "state": "ready" },
            doc! { "$set": { "state": "claimed" } },
        )
        .with_options(
            UpdateOptions::builder()
                .sort(doc! { "priority": -1 })
                .build(),
        )
        .await
        .expect("updateOne runs");
    assert_eq!(claimed.modified_count, 1);
    let state_of = |id: i32| {
        let coll = coll.clone();
        async move {
            coll.find_one(doc! { "_id": id })
                .await
                .expect("findOne runs")
                .and_then(|d| d.get_str("state").ok().map(str::to_string))
        }
    };
    assert_eq!(state_of(2).await.as_deref(), Some("claimed"));
    assert_eq!(state_of(1).await.as_deref(), Some("ready"));

    coll.replace_one(
        doc! { "state": "ready" },
        doc! { "state": "done", "priority": 0 },
    )
    .with_options(
        ReplaceOptions::builder()
            .sort(doc! { "priority": 1 })
            .build(),
    )
    .await
    .expect("replaceOne runs");
    assert_eq!(state_of(1).await.as_deref(), Some("done"));
    assert_eq!(state_of(3).await.as_deref(), Some("ready"));

    // The action's own setter sends the same field.
    coll.update_one(
        doc! { "state": "ready" },
        doc! { "$set": { "state": "claimed" } },
    )
    .sort(doc! { "priority": -1 })
    .await
    .expect("updateOne runs");
    assert_eq!(state_of(3).await.as_deref(), Some("claimed"));

    let refused = coll
        .update_many(doc! {}, doc! { "$set": { "x": 1 } })
        .sort(doc! { "priority": 1 })
        .await;
    assert!(
        refused.is_err(),
        "the server refuses sort with multi: {refused:?}"
    );
}

#[tokio::test]
async fn create_collection_sends_typed_options_as_the_server_expects() {
    let (_deployment, client) = standalone().await;
    let db = client.database("port");

    let options = CreateCollectionOptions::builder()
        .capped(true)
        .size(1 << 20)
        .max(1000)
        .validator(doc! { "qty": { "$gte": 0 } })
        .validation_level(ValidationLevel::Moderate)
        .validation_action(ValidationAction::Warn)
        .collation(
            Collation::builder()
                .locale("fr")
                .strength(CollationStrength::Secondary)
                .case_first(CollationCaseFirst::Upper)
                .alternate(CollationAlternate::Shifted)
                .max_variable(CollationMaxVariable::Space)
                .numeric_ordering(true)
                .build(),
        )
        .index_option_defaults(
            IndexOptionDefaults::builder()
                .storage_engine(doc! { "wiredTiger": {} })
                .build(),
        )
        .change_stream_pre_and_post_images(
            ChangeStreamPreAndPostImages::builder()
                .enabled(true)
                .build(),
        )
        .write_concern(WriteConcern::majority())
        .build();
    db.create_collection("orders")
        .with_options(options.clone())
        .await
        .expect("create runs");
    assert_eq!(
        created_options(&db, "orders").await,
        doc! {
            "capped": true, "size": 1_048_576_i64, "max": 1000_i64,
            "validator": { "qty": { "$gte": 0 } },
            "validationLevel": "moderate", "validationAction": "warn",
            // As mongod, the server lists the collation with every field resolved.
            "collation": {
                "locale": "fr", "caseLevel": false, "caseFirst": "upper", "strength": 2,
                "numericOrdering": true, "alternate": "shifted", "maxVariable": "space",
                "normalization": false, "backwards": false, "version": "57.1",
            },
            "indexOptionDefaults": { "storageEngine": { "wiredTiger": {} } },
            "changeStreamPreAndPostImages": { "enabled": true },
        }
    );
    // Read back typed, the options are the ones sent (a write concern is not stored), with the
    // collation's fields the server resolved filled in.
    let mut expected = options;
    expected.write_concern = None;
    if let Some(collation) = expected.collation.as_mut() {
        collation.case_level = Some(false);
        collation.normalization = Some(false);
        collation.backwards = Some(false);
    }
    assert_eq!(listed_options(&db, "orders").await, expected);

    // The official's chained setters on the action.
    db.create_collection("readings")
        .timeseries(
            TimeseriesOptions::builder()
                .time_field("ts")
                .meta_field(Some("sensor".to_string()))
                .granularity(TimeseriesGranularity::Minutes)
                .build(),
        )
        .expire_after_seconds(Duration::from_secs(3600))
        .await
        .expect("create runs");
    assert_eq!(
        created_options(&db, "readings").await,
        doc! {
            "timeseries": { "timeField": "ts", "metaField": "sensor", "granularity": "minutes" },
            "expireAfterSeconds": 3600_i64,
        }
    );
    let listed = listed_options(&db, "readings").await;
    assert_eq!(
        listed.timeseries.map(|t| (t.time_field, t.granularity)),
        Some(("ts".to_string(), Some(TimeseriesGranularity::Minutes)))
    );
    assert_eq!(listed.expire_after_seconds, Some(Duration::from_secs(3600)));
    db.create_collection("clustered")
        .clustered_index(ClusteredIndex::default())
        .await
        .expect("create runs");
    assert_eq!(
        created_options(&db, "clustered").await,
        // As mongod lists it: the server adds the index's name and version.
        doc! { "clusteredIndex": { "key": { "_id": 1 }, "unique": true, "name": "_id_", "v": 2 } }
    );
    let mut listed = ClusteredIndex::default();
    listed.name = Some("_id_".to_string());
    listed.v = Some(2);
    assert_eq!(
        listed_options(&db, "clustered").await.clustered_index,
        Some(listed)
    );
}

#[tokio::test]
async fn create_index_options_round_trip_through_list_indexes() {
    let (_deployment, client) = standalone().await;
    let coll: Collection<Document> = client.database("port").collection("users");
    let model = IndexModel::builder()
        .keys(doc! { "email": 1 })
        .options(
            IndexOptions::builder()
                .name("by_email".to_string())
                .unique(true)
                .sparse(true)
                .expire_after(Duration::from_secs(86_400))
                .version(IndexVersion::V2)
                .collation(Collation::builder().locale("en").build())
                .partial_filter_expression(doc! { "active": true })
                .build(),
        )
        .build();
    let created = coll
        .create_index(model)
        .with_options(
            CreateIndexOptions::builder()
                .write_concern(WriteConcern::nodes(1))
                .build(),
        )
        .await
        .expect("createIndexes runs");
    assert_eq!(created.index_name, "by_email");

    let listed: Vec<IndexModel> = coll
        .list_indexes()
        .await
        .expect("listIndexes runs")
        .try_collect()
        .await
        .expect("cursor iterates");
    let by_email = listed
        .iter()
        .find(|model| model.name() == "by_email")
        .and_then(|model| model.options.clone())
        .expect("the index is listed");
    assert_eq!(by_email.unique, Some(true));
    assert_eq!(by_email.sparse, Some(true));
    assert_eq!(by_email.expire_after, Some(Duration::from_secs(86_400)));
    assert_eq!(by_email.version, Some(IndexVersion::V2));
    assert_eq!(by_email.collation.map(|c| c.locale), Some("en".to_string()));
    assert_eq!(
        by_email.partial_filter_expression,
        Some(doc! { "active": true })
    );

    // The unique option is enforced.
    coll.insert_one(doc! { "email": "a@example.com", "active": true })
        .with_options(InsertOneOptions::builder().build())
        .await
        .expect("first insert");
    let duplicate = coll
        .insert_one(doc! { "email": "a@example.com", "active": true })
        .await;
    assert!(duplicate.is_err(), "a duplicate email is refused");
    let deleted = coll
        .delete_many(doc! {})
        .with_options(DeleteOptions::builder().build())
        .await
        .expect("delete runs");
    assert_eq!(deleted.deleted_count, 1);
}

#[test]
fn index_and_quorum_values_compile_in_the_official_shapes() {
    // Values the server is never asked about in these tests but that user code names.
    let text = IndexOptions::builder()
        .text_index_version(TextIndexVersion::V3)
        .weights(doc! { "title": 10 })
        .default_language("english".to_string())
        .build();
    assert_eq!(text.text_index_version, Some(TextIndexVersion::V3));
    let geo = IndexOptions::builder()
        .sphere_2d_index_version(Sphere2DIndexVersion::V3)
        .bits(26)
        .min(-180.0)
        .max(180.0)
        .build();
    assert_eq!(geo.bits, Some(26));
    let quorum = CreateIndexOptions::builder()
        .commit_quorum(CommitQuorum::VotingMembers)
        .build();
    assert_eq!(quorum.commit_quorum, Some(CommitQuorum::VotingMembers));
}

#[tokio::test]
async fn handles_report_the_concerns_they_were_given() {
    let (_deployment, client) = standalone().await;
    let db = client.database_with_options(
        "port",
        DatabaseOptions::builder()
            .write_concern(WriteConcern::majority())
            .read_concern(ReadConcern::majority())
            .build(),
    );
    assert_eq!(db.write_concern(), Some(&WriteConcern::majority()));
    assert_eq!(db.read_concern(), Some(&ReadConcern::majority()));
    assert!(db.selection_criteria().is_none());
    // A collection inherits them unless its own options set them.
    let inherited: Collection<Document> = db.collection("a");
    assert_eq!(inherited.write_concern(), Some(&WriteConcern::majority()));
    let own: Collection<Document> = db.collection_with_options(
        "b",
        CollectionOptions::builder()
            .write_concern(WriteConcern::nodes(1))
            .build(),
    );
    assert_eq!(own.write_concern(), Some(&WriteConcern::nodes(1)));
    assert_eq!(own.read_concern(), Some(&ReadConcern::majority()));
    // And the server accepts what they send.
    own.insert_one(doc! { "x": 1 })
        .await
        .expect("insert with w:1");
    inherited
        .insert_one(doc! { "x": 1 })
        .await
        .expect("insert with w:majority");
}

/// Setters the official crate's actions take lists through: arrays and iterators work as well
/// as vectors. Built only (blackpipe has no `arrayFilters` or views).
#[allow(dead_code)]
fn list_setters_take_any_iterator(coll: &Collection<Document>, db: &Database) {
    let _update = coll
        .update_many(doc! {}, doc! { "$set": { "items.$[i].seen": true } })
        .array_filters([doc! { "i.seen": false }]);
    let _modify = coll
        .find_one_and_update(doc! {}, doc! { "$set": { "items.$[i].seen": true } })
        .array_filters(vec![doc! { "i.seen": false }]);
    let _view = db
        .create_collection("recent")
        .view_on("events".to_string())
        .pipeline((0..1).map(|_| doc! { "$limit": 10 }));
}
