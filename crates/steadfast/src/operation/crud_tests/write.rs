//! Write batches: statements, splitting, reply parsing, retryability.

use std::sync::Arc;

use bson::{Bson, doc, rawdoc};
use steadfast_core::options::{Acknowledgment, WriteConcern};

use super::{default_description, description, with_context};
use crate::error::ErrorKind;
use crate::namespace::Namespace;
use crate::operation::write::{
    COMMAND_OVERHEAD, SizeCheck, Statement, UpdateStatementFields, WriteBatch, WriteCommandFields,
    WriteKind,
};
use crate::operation::write_reply::BatchOutcome;
use crate::operation::{Operation, Retryability};
use crate::options::{Collation, Hint, UpdateModifications};

fn ns() -> Namespace {
    Namespace::new("shop", "orders")
}

fn inserts(count: usize, padding: usize) -> Arc<[Statement]> {
    (0..count)
        .map(|i| {
            let doc = rawdoc! { "_id": i as i64, "pad": "x".repeat(padding) };
            Statement::insert(doc).expect("valid document").0
        })
        .collect()
}

fn batch(statements: Arc<[Statement]>, start: usize) -> WriteBatch {
    WriteBatch::new(
        ns(),
        WriteKind::Insert,
        statements,
        start,
        Arc::new(WriteCommandFields {
            ordered: true,
            ..WriteCommandFields::default()
        }),
    )
}

#[test]
fn insert_generates_an_object_id_first_and_keeps_an_existing_one() {
    let (statement, id) = Statement::insert(rawdoc! { "a": 1, "b": "two" }).expect("valid");
    let Bson::ObjectId(oid) = id else {
        panic!("expected a generated ObjectId, got {id:?}");
    };
    let keys: Vec<&str> = statement
        .document
        .iter()
        .map(|e| e.expect("valid element").0.as_str())
        .collect();
    assert_eq!(keys, ["_id", "a", "b"]);
    assert_eq!(statement.document.get_object_id("_id").ok(), Some(oid));
    assert_eq!(statement.document.get_str("b").ok(), Some("two"));

    let (statement, id) = Statement::insert(rawdoc! { "a": 1, "_id": "mine" }).expect("valid");
    assert_eq!(id, Bson::String("mine".into()));
    assert_eq!(statement.document.get_str("_id").ok(), Some("mine"));

    let (_, first) = Statement::insert(rawdoc! {}).expect("valid");
    let (_, second) = Statement::insert(rawdoc! {}).expect("valid");
    assert_ne!(first, second, "every generated _id is distinct");
}

#[test]
fn insert_reads_only_a_top_level_id_and_refuses_a_malformed_document() {
    // A nested `_id` and keys that start like it are not the document's `_id`.
    let nested = rawdoc! { "_idx": 1, "a": { "_id": 2 }, "list": [{ "_id": 3 }] };
    let (statement, id) = Statement::insert(nested.clone()).expect("valid");
    assert!(matches!(id, Bson::ObjectId(_)), "generated, got {id:?}");
    assert_eq!(
        statement.document.as_bytes().len(),
        nested.as_bytes().len() + 17
    );
    assert_eq!(
        statement.document.get_document("a").ok(),
        nested.get_document("a").ok()
    );

    // An `_id` after many fields is kept as it is, the document unchanged.
    let mut many = bson::Document::new();
    for n in 0..1000 {
        many.insert(format!("f{n}"), n);
    }
    many.insert("_id", doc! { "k": [1, "two"] });
    let raw = bson::RawDocumentBuf::try_from(&many).expect("encodes");
    let (statement, id) = Statement::insert(raw.clone()).expect("valid");
    assert_eq!(id, Bson::Document(doc! { "k": [1, "two"] }));
    assert_eq!(statement.document, raw);

    // An element of unknown type before any `_id`: refused before anything is sent.
    let malformed = bson::RawDocumentBuf::from_bytes(vec![9, 0, 0, 0, 0x20, b'a', 0, 1, 0])
        .expect("the frame is valid");
    let error = Statement::insert(malformed).expect_err("malformed");
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error:?}"
    );
}

#[test]
fn a_batch_is_one_insert_command_with_a_document_sequence() {
    let mut op = batch(inserts(3, 1), 0);
    let command = op.build(&default_description()).expect("builds");
    assert_eq!(command.name, "insert");
    assert_eq!(command.database, "shop");
    assert_eq!(
        command.body.to_document().get_str("insert").ok(),
        Some("orders")
    );
    assert_eq!(
        command.body.to_document().get_bool("ordered").ok(),
        Some(true)
    );
    assert!(
        command.body.to_document().get("documents").is_none(),
        "documents travel in a sequence"
    );
    assert_eq!(command.sequences.len(), 1);
    assert_eq!(command.sequences[0].identifier, "documents");
    assert_eq!(command.sequences[0].documents.len(), 3);
    assert_eq!(op.retryability(), Retryability::Write);
}

#[test]
fn batches_are_bounded_by_max_write_batch_size() {
    let statements = inserts(10, 1);
    let limits = description(16 * 1024 * 1024, 48_000_000, 4);
    let mut sizes = Vec::new();
    let mut start = 0;
    while start < statements.len() {
        let mut op = batch(statements.clone(), start);
        let command = op.build(&limits).expect("builds");
        let n = command.sequences[0].documents.len();
        sizes.push(n);
        start += n;
    }
    assert_eq!(sizes, [4, 4, 2]);
}

#[test]
fn batches_are_bounded_by_max_message_size_minus_overhead() {
    // Documents of about 1 KiB and room for three of them besides the body and the reserve.
    let statements = inserts(7, 1000);
    let doc_len = statements[0].document.as_bytes().len();
    let max_message = COMMAND_OVERHEAD + 200 + 3 * doc_len + doc_len / 2;
    let limits = description(16 * 1024 * 1024, max_message, 100_000);
    let mut sizes = Vec::new();
    let mut start = 0;
    while start < statements.len() {
        let mut op = batch(statements.clone(), start);
        let command = op.build(&limits).expect("builds");
        let n = command.sequences[0].documents.len();
        let bytes: usize = command.sequences[0]
            .documents
            .iter()
            .map(|d| d.as_bytes().len())
            .sum();
        assert!(
            bytes + COMMAND_OVERHEAD <= max_message,
            "batch of {bytes} bytes too large"
        );
        sizes.push(n);
        start += n;
    }
    assert_eq!(sizes, [3, 3, 1]);
}

#[test]
fn a_retry_resends_the_same_statements_even_if_limits_differ() {
    let statements = inserts(10, 1);
    let mut op = batch(statements, 0);
    let first = op
        .build(&description(16 * 1024 * 1024, 48_000_000, 6))
        .expect("builds");
    let retry = op
        .build(&description(16 * 1024 * 1024, 48_000_000, 100))
        .expect("builds");
    assert_eq!(first.sequences[0].documents, retry.sequences[0].documents);
    assert_eq!(retry.sequences[0].documents.len(), 6);
}

#[test]
fn an_oversized_document_anywhere_fails_before_the_first_batch() {
    let mut statements: Vec<Statement> = inserts(3, 10).to_vec();
    statements.push(
        Statement::insert(rawdoc! { "big": "y".repeat(2000) })
            .expect("valid")
            .0,
    );
    let limits = description(1024, 48_000_000, 2);
    let sizes: Arc<[SizeCheck]> = statements
        .iter()
        .enumerate()
        .map(|(i, s)| SizeCheck {
            position: 10 + i,
            len: s.checked_len,
        })
        .collect();
    let statements: Arc<[Statement]> = statements.into();
    // Without the check (later batches), nothing is rejected client-side.
    assert!(batch(statements.clone(), 0).build(&limits).is_ok());
    let mut op = batch(statements, 0).with_size_check(sizes);
    let error = op.build(&limits).expect_err("too large");
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { message } if message.contains("write 13 ")),
        "{error}"
    );
}

#[test]
fn update_and_delete_statements() {
    let filter = doc! { "sku": "pen" };
    let update = UpdateModifications::from(doc! { "$inc": { "qty": 1 } });
    let filters = [doc! { "e.x": 1 }];
    let collation = Collation::builder().locale("fr").build();
    let hint = Hint::Name("sku_1".into());
    let sort = doc! { "qty": -1 };
    let statement = Statement::update(
        &filter,
        &update,
        true,
        UpdateStatementFields {
            upsert: Some(true),
            array_filters: Some(&filters),
            collation: Some(&collation),
            hint: Some(&hint),
            sort: Some(&sort),
        },
    )
    .expect("encodes");
    let doc = bson::Document::try_from(statement.document).expect("valid");
    assert_eq!(
        doc,
        doc! {
            "q": { "sku": "pen" }, "u": { "$inc": { "qty": 1 } }, "multi": true, "upsert": true,
            "arrayFilters": [ { "e.x": 1 } ], "collation": { "locale": "fr" }, "hint": "sku_1",
            "sort": { "qty": -1 },
        }
    );
    assert!(statement.multi);

    let pipeline = UpdateModifications::from(vec![doc! { "$set": { "a": 1 } }]);
    let statement =
        Statement::update(&filter, &pipeline, false, UpdateStatementFields::default()).expect("ok");
    let doc = bson::Document::try_from(statement.document).expect("valid");
    assert_eq!(
        doc,
        doc! { "q": { "sku": "pen" }, "u": [ { "$set": { "a": 1 } } ] }
    );

    let one = Statement::delete(&filter, false, None, None).expect("encodes");
    let many = Statement::delete(&filter, true, None, None).expect("encodes");
    assert_eq!(one.document.get_i32("limit").ok(), Some(1));
    assert_eq!(many.document.get_i32("limit").ok(), Some(0));
    assert!(many.multi && !one.multi);
}

#[test]
fn multi_statement_runs_are_not_retryable_and_carry_the_write_concern() {
    let filter = doc! {};
    let statements: Arc<[Statement]> =
        vec![Statement::delete(&filter, true, None, None).expect("ok")].into();
    let mut wc = WriteConcern::default();
    wc.w = Some(Acknowledgment::Majority);
    let mut op = WriteBatch::new(
        ns(),
        WriteKind::Delete,
        statements,
        0,
        Arc::new(WriteCommandFields {
            ordered: false,
            write_concern: Some(wc.clone()),
            comment: Some(Bson::String("why".into())),
            ..WriteCommandFields::default()
        }),
    );
    assert_eq!(op.retryability(), Retryability::None);
    assert_eq!(op.write_concern(), Some(&wc));
    let command = op.build(&default_description()).expect("builds");
    assert_eq!(
        command.body.to_document().get_str("delete").ok(),
        Some("orders")
    );
    assert_eq!(
        command.body.to_document().get_bool("ordered").ok(),
        Some(false)
    );
    assert_eq!(
        command.body.to_document().get_str("comment").ok(),
        Some("why")
    );
    assert_eq!(command.sequences[0].identifier, "deletes");
}

#[test]
fn replies_are_read_with_indexes_shifted_to_run_positions() {
    let statements = inserts(10, 1);
    let mut op = batch(statements, 4);
    let limits = description(16 * 1024 * 1024, 48_000_000, 3);
    op.build(&limits).expect("builds");
    let reply = rawdoc! {
        "n": 2,
        "writeErrors": [ { "index": 1, "code": 11000, "errmsg": "E11000 duplicate key" } ],
        "writeConcernError": { "code": 64, "errmsg": "waiting for replication timed out",
                               "errInfo": { "wtimeout": true } },
        "errorLabels": ["RetryableWriteError"],
        "ok": 1,
    };
    let outcome = with_context(&limits, |cx| op.handle_reply(reply, cx)).expect("parses");
    assert_eq!(outcome.start, 4);
    assert_eq!(outcome.count, 3);
    assert_eq!(outcome.n, 2);
    assert_eq!(outcome.write_errors.len(), 1);
    assert_eq!(outcome.write_errors[0].index, 5);
    assert_eq!(outcome.write_errors[0].code, 11000);
    assert_eq!(outcome.write_errors[0].message, "E11000 duplicate key");
    let wce = outcome
        .write_concern_error
        .expect("write concern error kept");
    assert_eq!(wce.code, 64);
    assert_eq!(wce.details, Some(doc! { "wtimeout": true }));
    assert!(outcome.labels.contains("RetryableWriteError"));
}

#[test]
fn update_replies_report_matches_modifications_and_upserts() {
    let reply = rawdoc! {
        "n": 3_i64, "nModified": 1.0,
        "upserted": [ { "index": 2, "_id": "new" } ],
        "ok": 1.0,
    };
    let outcome = BatchOutcome::parse(&reply, WriteKind::Update, 10, 3).expect("parses");
    assert_eq!((outcome.n, outcome.n_modified), (3, 1));
    assert_eq!(outcome.upserted, [(12, Bson::String("new".into()))]);
    assert!(outcome.write_errors.is_empty() && outcome.write_concern_error.is_none());
}

#[test]
fn an_unacknowledged_reply_counts_nothing() {
    let outcome = BatchOutcome::parse(&rawdoc! { "ok": 1 }, WriteKind::Insert, 0, 5).expect("ok");
    assert_eq!(outcome.n, 0);
    assert_eq!(outcome.count, 5);
}

#[test]
fn a_write_error_outside_the_batch_is_a_protocol_error() {
    let reply =
        rawdoc! { "n": 0, "writeErrors": [ { "index": 7, "code": 2, "errmsg": "x" } ], "ok": 1 };
    let error = BatchOutcome::parse(&reply, WriteKind::Insert, 0, 2).expect_err("index 7 of 2");
    assert!(error.is_protocol_error(), "{error}");
}
