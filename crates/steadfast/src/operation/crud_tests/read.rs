//! Reads, cursors, find-and-modify and catalog commands.

use std::time::Duration;

use bson::{Bson, Document, doc, rawdoc};
use steadfast_core::ServerAddress;
use steadfast_core::options::{Acknowledgment, ReadConcern, ReadConcernLevel, WriteConcern};
use steadfast_core::selection::{ReadPreference, ReadPreferenceMode, SelectionCriteria};

use super::{default_description, description, with_context};
use crate::error::ErrorKind;
use crate::namespace::Namespace;
use crate::operation::admin::CatalogCommand;
use crate::operation::aggregate::{Aggregate, AggregateTarget, CountDocuments};
use crate::operation::count::{CountCommand, Distinct};
use crate::operation::find::Find;
use crate::operation::find_and_modify::{FindAndModify, FindAndModifyFields, Modification};
use crate::operation::get_more::{GetMore, KillCursors};
use crate::operation::list::{ListCursor, ListDatabases};
use crate::operation::{Operation, Retryability};
use crate::options::{
    AggregateOptions, Collation, CollationStrength, CountOptions, CursorType, FindOptions,
    ReturnDocument,
};

fn ns() -> Namespace {
    Namespace::new("shop", "orders")
}

fn secondary() -> SelectionCriteria {
    SelectionCriteria::ReadPreference(ReadPreference::with_mode(ReadPreferenceMode::Secondary))
}

fn find_body(options: FindOptions) -> Document {
    let mut op = Find::new(ns(), doc! { "a": 1 }, options, None, secondary());
    op.build(&default_description())
        .expect("builds")
        .body
        .to_document()
}

#[test]
fn find_sends_only_the_options_set() {
    let body = find_body(FindOptions::default());
    assert_eq!(body, doc! { "find": "orders", "filter": { "a": 1 } });

    let options = FindOptions::default()
        .sort(doc! { "a": -1 })
        .projection(doc! { "_id": 0 })
        .hint("a_-1")
        .skip(5)
        .limit(10)
        .batch_size(3)
        .comment("report")
        .max_time(Duration::from_millis(1500))
        .cursor_type(CursorType::TailableAwait)
        .allow_disk_use(true)
        .let_vars(doc! { "x": 1 })
        .max_scan(100)
        .collation(
            Collation::builder()
                .locale("de")
                .strength(CollationStrength::Primary)
                .build(),
        );
    let body = find_body(options);
    assert_eq!(
        body,
        doc! {
            "find": "orders", "filter": { "a": 1 }, "sort": { "a": -1 }, "projection": { "_id": 0 },
            "hint": "a_-1", "skip": 5_i64, "limit": 10_i64, "batchSize": 3_i64, "comment": "report",
            "maxTimeMS": 1500_i64, "maxScan": 100_i64, "tailable": true, "awaitData": true,
            "collation": { "locale": "de", "strength": 1 }, "allowDiskUse": true,
            "let": { "x": 1 },
        }
    );
}

#[test]
fn find_maps_limit_and_batch_size() {
    let fields = |options: FindOptions| {
        let body = find_body(options);
        (
            body.get_i64("limit").ok(),
            body.get_i64("batchSize").ok(),
            body.get_bool("singleBatch").ok(),
        )
    };
    // A negative limit asks for one batch of that many.
    assert_eq!(
        fields(FindOptions::default().limit(-5)),
        (Some(5), Some(5), Some(true))
    );
    // A batch size equal to the limit is sent as limit + 1 so no cursor is left open.
    assert_eq!(
        fields(FindOptions::default().limit(4).batch_size(4)),
        (Some(4), Some(5), None)
    );
    assert_eq!(
        fields(FindOptions::default().limit(4).batch_size(3)),
        (Some(4), Some(3), None)
    );
    assert_eq!(
        fields(FindOptions::default().batch_size(0)),
        (None, None, None)
    );

    let mut one = Find::new(
        ns(),
        doc! {},
        FindOptions::default().batch_size(50),
        None,
        secondary(),
    )
    .single();
    let body = one
        .build(&default_description())
        .expect("builds")
        .body
        .to_document();
    assert_eq!(body.get_i64("limit").ok(), Some(1));
    assert_eq!(body.get_bool("singleBatch").ok(), Some(true));
    assert!(
        body.get("batchSize").is_none(),
        "find_one never sends a batch size"
    );
}

#[test]
fn find_is_a_retryable_read_with_the_resolved_concern_and_preference() {
    let rc = ReadConcern::new(ReadConcernLevel::Majority);
    let mut op = Find::new(
        ns(),
        doc! {},
        FindOptions::default(),
        Some(rc.clone()),
        secondary(),
    );
    assert_eq!(op.retryability(), Retryability::Read);
    assert!(op.idempotent());
    assert_eq!(op.read_concern(), Some(&rc));
    assert_eq!(op.selection_criteria(), secondary());
    let reply = rawdoc! { "cursor": { "id": 7_i64, "ns": "shop.orders", "firstBatch": [ { "a": 1 } ] }, "ok": 1 };
    let cursor = with_context(&default_description(), |cx| op.handle_reply(reply, cx)).expect("ok");
    assert_eq!((cursor.id, cursor.first_batch.len()), (7, 1));
}

#[test]
fn get_more_targets_the_cursor_server_and_is_never_a_retryable_read() {
    let address = ServerAddress::tcp("10.0.0.7", 27018);
    let mut op = GetMore::new(
        ns(),
        77,
        address.clone(),
        Some(20),
        Some(Duration::from_millis(250)),
        Some(Bson::String("c".into())),
    );
    assert_eq!(op.target(), Some(&address));
    assert_eq!(op.retryability(), Retryability::GetMore);
    let body = op
        .build(&default_description())
        .expect("builds")
        .body
        .to_document();
    assert_eq!(
        body,
        doc! { "getMore": 77_i64, "collection": "orders", "batchSize": 20_i64, "maxTimeMS": 250_i64, "comment": "c" }
    );
    // Servers before 4.4 reject a comment on getMore.
    let mut old = description(16 * 1024 * 1024, 48_000_000, 100_000);
    old.max_wire_version = 8;
    let body = op.build(&old).expect("builds").body.to_document();
    assert!(body.get("comment").is_none());

    let reply = rawdoc! { "cursor": { "id": 77_i64, "ns": "shop.orders", "nextBatch": [ {}, {} ] }, "ok": 1 };
    let next = with_context(&default_description(), |cx| op.handle_reply(reply, cx)).expect("ok");
    assert_eq!(next.first_batch.len(), 2);
    let wrong =
        rawdoc! { "cursor": { "id": 78_i64, "ns": "shop.orders", "nextBatch": [] }, "ok": 1 };
    let error = with_context(&default_description(), |cx| op.handle_reply(wrong, cx))
        .expect_err("wrong id");
    assert!(error.is_protocol_error());
}

#[test]
fn kill_cursors_names_the_collection_and_ids() {
    let address = ServerAddress::tcp("127.0.0.1", 27017);
    let mut op = KillCursors::new(ns(), vec![5, 6], address.clone());
    assert_eq!(op.target(), Some(&address));
    let command = op.build(&default_description()).expect("builds");
    assert_eq!(command.database, "shop");
    assert_eq!(
        command.body.to_document(),
        doc! { "killCursors": "orders", "cursors": [5_i64, 6_i64] }
    );
}

#[test]
fn aggregate_reads_unless_it_writes() {
    let target = AggregateTarget::Collection {
        db: "shop".into(),
        coll: "orders".into(),
    };
    let mut wc = WriteConcern::default();
    wc.w = Some(Acknowledgment::Majority);
    let options = AggregateOptions::default()
        .batch_size(10)
        .allow_disk_use(true);
    let mut read = Aggregate::new(
        target.clone(),
        vec![doc! { "$match": { "a": 1 } }],
        options.clone(),
        None,
        Some(wc.clone()),
        secondary(),
    );
    assert_eq!(read.retryability(), Retryability::Read);
    assert_eq!(read.selection_criteria(), secondary());
    assert_eq!(read.write_concern(), None, "a read sends no write concern");
    let body = read
        .build(&default_description())
        .expect("builds")
        .body
        .to_document();
    assert_eq!(
        body,
        doc! { "aggregate": "orders", "pipeline": [ { "$match": { "a": 1 } } ], "cursor": { "batchSize": 10_i64 }, "allowDiskUse": true }
    );

    let mut out = Aggregate::new(
        target,
        vec![doc! { "$match": {} }, doc! { "$out": "archive" }],
        options,
        None,
        Some(wc.clone()),
        secondary(),
    );
    assert_eq!(out.retryability(), Retryability::None);
    assert!(!out.idempotent());
    // The read preference stays; selection replaces it by primary before 5.0.
    assert_eq!(out.selection_criteria(), secondary());
    assert!(out.has_write_stage());
    assert_eq!(out.write_concern(), Some(&wc));
    let body = out
        .build(&default_description())
        .expect("builds")
        .body
        .to_document();
    assert_eq!(
        body.get_document("cursor").ok(),
        Some(&doc! {}),
        "no batch size with $out"
    );

    let mut db_level = Aggregate::new(
        AggregateTarget::Database("admin".into()),
        vec![doc! { "$currentOp": {} }],
        AggregateOptions::default(),
        None,
        None,
        secondary(),
    );
    let command = db_level.build(&default_description()).expect("builds");
    assert_eq!(command.database, "admin");
    assert_eq!(
        command.body.to_document().get_i32("aggregate").ok(),
        Some(1)
    );
}

#[test]
fn count_documents_builds_the_group_pipeline_and_reads_n() {
    let options = CountOptions::default().skip(2).limit(5).hint("a_1");
    let mut op = CountDocuments::new(
        "shop".into(),
        "orders".into(),
        doc! { "a": 1 },
        options,
        None,
        secondary(),
    );
    let body = op
        .build(&default_description())
        .expect("builds")
        .body
        .to_document();
    assert_eq!(
        body.get_array("pipeline").ok(),
        Some(&vec![
            Bson::Document(doc! { "$match": { "a": 1 } }),
            Bson::Document(doc! { "$skip": 2_i64 }),
            Bson::Document(doc! { "$limit": 5_i64 }),
            Bson::Document(doc! { "$group": { "_id": 1, "n": { "$sum": 1 } } }),
        ])
    );
    assert_eq!(body.get_str("hint").ok(), Some("a_1"));
    assert_eq!(op.retryability(), Retryability::Read);
    let d = default_description();
    let reply = rawdoc! { "cursor": { "id": 0_i64, "ns": "shop.orders", "firstBatch": [ { "_id": 1, "n": 42 } ] }, "ok": 1 };
    assert_eq!(
        with_context(&d, |cx| op.handle_reply(reply, cx)).expect("ok"),
        42
    );
    let empty =
        rawdoc! { "cursor": { "id": 0_i64, "ns": "shop.orders", "firstBatch": [] }, "ok": 1 };
    assert_eq!(
        with_context(&d, |cx| op.handle_reply(empty, cx)).expect("ok"),
        0,
        "no group means 0"
    );
}

#[test]
fn the_deprecated_count_sends_its_query_and_options_and_is_a_retryable_read() {
    let d = default_description();
    let options = CountOptions::default().skip(1).limit(3).hint("a_1");
    let mut count =
        CountCommand::filtered(ns(), doc! { "a": { "$gt": 1 } }, options, None, secondary());
    assert_eq!(
        count.build(&d).expect("builds").body.to_document(),
        doc! {
            "count": "orders",
            "query": { "a": { "$gt": 1 } },
            "limit": 3_i64,
            "skip": 1_i64,
            "hint": "a_1",
        }
    );
    assert_eq!(count.retryability(), Retryability::Read);
    assert_eq!(
        with_context(&d, |cx| count.handle_reply(rawdoc! { "n": 2, "ok": 1 }, cx)).expect("ok"),
        2
    );
}

#[test]
fn estimated_count_and_distinct() {
    let d = default_description();
    let mut count = CountCommand::estimated(ns(), Default::default(), None, secondary());
    assert_eq!(
        count.build(&d).expect("builds").body.to_document(),
        doc! { "count": "orders" }
    );
    assert_eq!(
        with_context(&d, |cx| count.handle_reply(rawdoc! { "n": 9, "ok": 1 }, cx)).expect("ok"),
        9
    );
    let error = with_context(&d, |cx| {
        count.handle_reply(rawdoc! { "n": -1, "ok": 1 }, cx)
    })
    .expect_err("negative");
    assert!(error.is_protocol_error());

    let mut distinct = Distinct::new(
        ns(),
        "sku".into(),
        doc! { "qty": { "$gt": 0 } },
        Default::default(),
        None,
        secondary(),
    );
    assert_eq!(
        distinct.build(&d).expect("builds").body.to_document(),
        doc! { "distinct": "orders", "key": "sku", "query": { "qty": { "$gt": 0 } } }
    );
    let values = with_context(&d, |cx| {
        distinct.handle_reply(rawdoc! { "values": ["a", 1], "ok": 1 }, cx)
    })
    .expect("ok");
    assert_eq!(values, vec![Bson::String("a".into()), Bson::Int32(1)]);
    assert_eq!(distinct.retryability(), Retryability::Read);
}

#[test]
fn find_and_modify_bodies_and_replies() {
    let d = default_description();
    let fields = FindAndModifyFields {
        return_document: Some(ReturnDocument::After),
        upsert: Some(true),
        projection: Some(doc! { "qty": 1 }),
        sort: Some(doc! { "qty": -1 }),
        ..FindAndModifyFields::default()
    };
    let mut update = FindAndModify::new(
        ns(),
        doc! { "sku": "pen" },
        Modification::Update(doc! { "$inc": { "qty": 1 } }.into()),
        fields.clone(),
    );
    assert_eq!(update.retryability(), Retryability::Write);
    assert_eq!(
        update.build(&d).expect("builds").body.to_document(),
        doc! {
            "findAndModify": "orders", "query": { "sku": "pen" }, "update": { "$inc": { "qty": 1 } },
            "new": true, "upsert": true, "sort": { "qty": -1 }, "fields": { "qty": 1 },
        }
    );
    let mut delete = FindAndModify::new(ns(), doc! {}, Modification::Delete, fields);
    let body = delete.build(&d).expect("builds").body.to_document();
    assert_eq!(body.get_bool("remove").ok(), Some(true));
    assert!(
        body.get("new").is_none() && body.get("upsert").is_none(),
        "{body}"
    );

    let found = rawdoc! { "value": { "sku": "pen", "qty": 2 }, "ok": 1 };
    let value = with_context(&d, |cx| update.handle_reply(found, cx))
        .expect("ok")
        .expect("a document");
    assert_eq!(value.get_i32("qty").ok(), Some(2));
    let none = rawdoc! { "value": null, "ok": 1 };
    assert!(
        with_context(&d, |cx| update.handle_reply(none, cx))
            .expect("ok")
            .is_none()
    );
    let wce = rawdoc! { "value": null, "writeConcernError": { "code": 64, "errmsg": "timed out" }, "ok": 1 };
    let error =
        with_context(&d, |cx| update.handle_reply(wce, cx)).expect_err("write concern error");
    assert!(matches!(error.kind(), ErrorKind::Write(_)), "{error}");
    assert_eq!(error.code(), Some(64));
}

#[test]
fn catalog_commands_report_write_concern_errors() {
    let d = default_description();
    let mut wc = WriteConcern::default();
    wc.w = Some(Acknowledgment::Nodes(2));
    let mut op = CatalogCommand::new("drop", "shop", doc! { "drop": "orders" }, Some(wc.clone()))
        .expect("valid");
    assert_eq!(op.retryability(), Retryability::None);
    assert_eq!(op.write_concern(), Some(&wc));
    assert!(with_context(&d, |cx| op.handle_reply(rawdoc! { "ok": 1 }, cx)).is_ok());
    let reply = rawdoc! { "writeConcernError": { "code": 100, "errmsg": "not enough data-bearing nodes" }, "ok": 1 };
    let error = with_context(&d, |cx| op.handle_reply(reply, cx)).expect_err("wce");
    assert_eq!(error.code(), Some(100));
    assert!(CatalogCommand::new("drop", "shop", doc! { "create": "x" }, None).is_err());
}

#[test]
fn listings() {
    let d = default_description();
    let mut indexes = ListCursor::indexes("shop", "orders", Some(2), None, None);
    let command = indexes.build(&d).expect("builds");
    assert_eq!(
        command.body.to_document(),
        doc! { "listIndexes": "orders", "cursor": { "batchSize": 2_i64 } }
    );
    assert_eq!(indexes.retryability(), Retryability::Read);

    let mut collections = ListCursor::collections(
        "shop",
        Some(doc! { "name": "a" }),
        true,
        Some(true),
        None,
        None,
    );
    assert_eq!(
        collections.build(&d).expect("builds").body.to_document(),
        doc! { "listCollections": 1, "filter": { "name": "a" }, "nameOnly": true, "authorizedCollections": true, "cursor": {} }
    );

    let mut databases = ListDatabases::new(None, true, None, None);
    let command = databases.build(&d).expect("builds");
    assert_eq!(
        (command.database.as_str(), command.body.to_document()),
        ("admin", doc! { "listDatabases": 1, "nameOnly": true })
    );
    let reply = rawdoc! { "databases": [ { "name": "shop", "sizeOnDisk": 8192_i64, "empty": false } ], "ok": 1 };
    let listed = with_context(&d, |cx| databases.handle_reply(reply, cx)).expect("ok");
    assert_eq!(listed[0].get_str("name").ok(), Some("shop"));
    let bad = rawdoc! { "databases": [ 1 ], "ok": 1 };
    assert!(with_context(&d, |cx| databases.handle_reply(bad, cx)).is_err());
}
