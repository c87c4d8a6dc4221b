//! Unit tests: batches built against hand-made connection descriptions, and the accumulator's
//! account of what a failed bulk write applied.

use std::sync::Arc;

use bson::{Bson, Document, doc};
use steadfast_core::retry::Outcome;

use super::accumulate::Accumulator;
use super::batch::{BatchReply, BulkFields, ClientBulkBatch};
use super::models::{EncodedOp, InsertOneModel, UpdateManyModel, WriteModel};
use super::results::{PartialBulkWriteResult, SummaryBulkWriteResult, VerboseBulkWriteResult};
use crate::cursor::CursorReply;
use crate::error::{Error, ErrorKind};
use crate::namespace::Namespace;
use crate::operation::crud_tests::description;
use crate::operation::{Operation, Retryability};

fn insert(ns: &str, document: Document) -> EncodedOp {
    let (db, coll) = ns.split_once('.').unwrap();
    WriteModel::from(
        InsertOneModel::builder()
            .namespace(Namespace::new(db, coll))
            .document(document)
            .build(),
    )
    .encode()
    .unwrap()
}

fn batch(ops: Vec<EncodedOp>, start: usize) -> ClientBulkBatch {
    let fields = BulkFields {
        ordered: true,
        errors_only: true,
        ..BulkFields::default()
    };
    ClientBulkBatch::new(ops.into(), start, Arc::new(fields), start == 0)
}

fn sequence_docs(command: &crate::operation::Command, identifier: &str) -> Vec<Document> {
    let sequence = command
        .sequences
        .iter()
        .find(|s| s.identifier == identifier)
        .unwrap();
    sequence
        .documents
        .iter()
        .map(|d| Document::try_from(d.clone()).unwrap())
        .collect()
}

#[test]
fn a_batch_names_only_its_namespaces_with_indexes_local_to_it() {
    let ops = vec![
        insert("a.x", doc! { "_id": 1 }),
        insert("b.y", doc! { "_id": 2 }),
        insert("a.x", doc! { "_id": 3 }),
    ];
    let mut op = batch(ops, 1);
    let command = op
        .build(&description(1 << 24, 48_000_000, 100_000))
        .unwrap();
    assert_eq!(command.database, "admin");
    assert_eq!(
        command.body.to_document().get_i32("bulkWrite").ok(),
        Some(1)
    );
    assert_eq!(
        command.body.to_document().get_bool("errorsOnly").ok(),
        Some(true)
    );
    let ops = sequence_docs(&command, "ops");
    assert_eq!(ops[0], doc! { "insert": 0, "document": { "_id": 2 } });
    assert_eq!(ops[1], doc! { "insert": 1, "document": { "_id": 3 } });
    let ns_info = sequence_docs(&command, "nsInfo");
    assert_eq!(ns_info, vec![doc! { "ns": "b.y" }, doc! { "ns": "a.x" }]);
}

#[test]
fn batches_split_at_max_write_batch_size_and_at_the_message_budget() {
    let ops: Vec<EncodedOp> = (0..5).map(|i| insert("d.c", doc! { "_id": i })).collect();
    let mut by_count = batch(ops.clone(), 0);
    let command = by_count
        .build(&description(1 << 24, 48_000_000, 2))
        .unwrap();
    assert_eq!(sequence_docs(&command, "ops").len(), 2);

    // Each ops document here is 41 bytes and `{ns: "d.c"}` 17: with a 200-byte message, the
    // 1000-byte allowance leaves no room for even one op.
    let mut too_small = batch(ops.clone(), 0);
    let error = too_small
        .build(&description(1 << 24, 200, 100))
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );

    let body = doc! { "bulkWrite": 1, "errorsOnly": true, "ordered": true };
    let body_len = crate::operation::write::encoded_len(&body).unwrap();
    let room_for_three = 1000 + body_len + 17 + 3 * 41;
    let mut by_size = batch(ops, 0);
    let command = by_size
        .build(&description(1 << 24, room_for_three, 100))
        .unwrap();
    assert_eq!(sequence_docs(&command, "ops").len(), 3);
}

#[test]
fn a_document_over_max_bson_object_size_fails_before_anything_is_sent() {
    let ops = vec![
        insert("d.c", doc! { "_id": 0 }),
        insert("d.c", doc! { "big": "x".repeat(100) }),
    ];
    let error = batch(ops, 0)
        .build(&description(64, 48_000_000, 100))
        .unwrap_err();
    assert!(error.to_string().contains("write 1"), "{error}");
}

#[test]
fn a_batch_that_may_hold_a_multi_write_is_not_retryable() {
    let many = WriteModel::from(
        UpdateManyModel::builder()
            .namespace(Namespace::new("d", "c"))
            .filter(doc! {})
            .update(doc! { "$set": { "x": 1 } })
            .build(),
    )
    .encode()
    .unwrap();
    let ops = vec![insert("d.c", doc! { "_id": 1 }), many];
    assert_eq!(batch(ops.clone(), 0).retryability(), Retryability::None);
    assert_eq!(
        batch(ops[..1].to_vec(), 0).retryability(),
        Retryability::Write
    );
}

fn reply(inserted: i64, n_errors: u64) -> BatchReply {
    BatchReply {
        summary: SummaryBulkWriteResult {
            inserted_count: inserted,
            ..SummaryBulkWriteResult::default()
        },
        n_errors,
        cursor: CursorReply {
            id: 0,
            ns: Namespace::new("admin", "$cmd.bulkWrite"),
            first_batch: Default::default(),
            post_batch_resume_token: None,
            raw: None,
        },
        write_concern_error: None,
        labels: Default::default(),
    }
}

#[test]
fn a_lost_batch_after_an_applied_one_is_of_unknown_outcome_never_not_applied() {
    let ops: Vec<EncodedOp> = (0..4).map(|i| insert("d.c", doc! { "_id": i })).collect();
    let mut acc = Accumulator::new(true, ops.len());
    let mut open = acc.open(0, 2, &reply(2, 0));
    acc.absorb(&mut open, &ops, Vec::new()).unwrap();
    acc.close(open, &ops);
    let lost = Error::network("the connection closed").with_outcome(Outcome::Ambiguous);
    let error = acc.fail::<VerboseBulkWriteResult>(2, Some(1), lost);
    assert_eq!(error.outcome(), Outcome::Ambiguous);
    let partial = error.partial_write().unwrap();
    assert_eq!(partial.executed, vec![0, 1]);
    assert_eq!(partial.unknown, vec![2], "the batch sent without a reply");
    assert_eq!(partial.not_executed, vec![3], "never sent");
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        panic!("results were observed, so the top-level error is wrapped: {error}");
    };
    assert!(failure.partial_result.is_some());
    assert!(std::error::Error::source(&error).is_some());
}

#[test]
fn a_first_batch_refused_as_a_whole_is_returned_as_is_and_not_applied() {
    let ops = [insert("d.c", doc! { "_id": 1 })];
    let acc = Accumulator::new(true, ops.len());
    let refused = Error::invalid_argument("refused").with_outcome(Outcome::NotApplied);
    let error = acc.fail::<SummaryBulkWriteResult>(0, Some(1), refused);
    assert!(matches!(error.kind(), ErrorKind::InvalidArgument { .. }));
    assert_eq!(error.outcome(), Outcome::NotApplied);
    assert_eq!(error.partial_write().unwrap().not_executed, vec![0]);
}

#[test]
fn write_errors_keep_the_caller_positions_and_ordered_stops_the_account() {
    let ops: Vec<EncodedOp> = (0..3).map(|i| insert("d.c", doc! { "_id": i })).collect();
    let mut acc = Accumulator::new(true, ops.len());
    let mut open = acc.open(0, 3, &reply(1, 1));
    let entry = bson::rawdoc! { "ok": 0, "idx": 1, "code": 11000, "errmsg": "dup" };
    acc.absorb(&mut open, &ops, vec![entry]).unwrap();
    acc.close(open, &ops);
    assert!(acc.must_stop());
    let error = acc.finish::<SummaryBulkWriteResult>().unwrap_err();
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        panic!("{error}");
    };
    assert_eq!(failure.write_errors[&1].code, 11000);
    let partial = error.partial_write().unwrap();
    assert_eq!(partial.executed, vec![0]);
    assert_eq!(partial.not_executed, vec![2]);
    assert_eq!(partial.applied.inserted_ids.get(&0), Some(&Bson::Int32(0)));
}

#[test]
fn a_results_entry_outside_its_batch_is_a_protocol_error() {
    let ops = vec![insert("d.c", doc! { "_id": 1 })];
    let mut acc = Accumulator::new(false, 1);
    let mut open = acc.open(0, 1, &reply(1, 0));
    let entry = bson::rawdoc! { "ok": 1, "idx": 5, "n": 1 };
    assert!(acc.absorb(&mut open, &ops, vec![entry]).is_err());
}

#[test]
fn a_cursor_lost_midway_keeps_the_results_it_read_and_the_totals() {
    let ops: Vec<EncodedOp> = (0..3).map(|i| insert("d.c", doc! { "_id": i })).collect();
    let mut acc = Accumulator::new(false, ops.len());
    // Two inserted, one error counted; the first page reports op 0 only, then getMore fails.
    let mut open = acc.open(0, 3, &reply(2, 1));
    let entry = bson::rawdoc! { "ok": 1, "idx": 0, "n": 1 };
    acc.absorb(&mut open, &ops, vec![entry]).unwrap();
    acc.close_incomplete(open, &ops);
    let lost = Error::network("getMore failed").with_outcome(Outcome::Ambiguous);
    let error = acc.fail::<VerboseBulkWriteResult>(3, Some(0), lost);
    let partial = error.partial_write().unwrap();
    assert_eq!(partial.executed, vec![0], "reported as succeeded");
    assert_eq!(
        partial.unknown,
        vec![1, 2],
        "the error not seen is one of these"
    );
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        panic!("{error}");
    };
    let Some(PartialBulkWriteResult::Verbose(result)) = &failure.partial_result else {
        panic!("the results read are kept: {error}");
    };
    assert_eq!(result.summary.inserted_count, 2);
    assert!(result.insert_results.contains_key(&0));
}
