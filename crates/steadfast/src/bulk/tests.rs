//! Unit tests of bulk planning, result merging and model validation.

use bson::{Bson, Document, doc, rawdoc};

use super::models::{
    DeleteModel, InsertOneModel, ReplaceOneModel, UpdateModel, WriteModel, check_update,
    replacement_document,
};
use super::plan::{BulkAccumulator, BulkPlan, FailureShape};
use crate::error::{ErrorKind, Outcome, WriteFailure};
use crate::operation::write::{Statement, WriteKind};
use crate::operation::write_reply::BatchOutcome;
use crate::options::UpdateModifications;

fn mixed() -> Vec<WriteModel<Document>> {
    vec![
        WriteModel::InsertOne(InsertOneModel::new(doc! { "_id": 0 })),
        WriteModel::InsertOne(InsertOneModel::new(doc! { "_id": 1 })),
        WriteModel::UpdateOne(UpdateModel::new(
            doc! { "_id": 0 },
            doc! { "$set": { "a": 1 } },
        )),
        WriteModel::InsertOne(InsertOneModel::new(doc! { "x": 1 })),
        WriteModel::DeleteOne(DeleteModel::new(doc! { "_id": 1 })),
        WriteModel::ReplaceOne(
            ReplaceOneModel::new(doc! { "_id": 9 }, doc! { "b": 2 }).upsert(true),
        ),
    ]
}

fn kinds(plan: &BulkPlan) -> Vec<(WriteKind, Vec<usize>)> {
    plan.runs
        .iter()
        .map(|r| (r.kind, r.positions.clone()))
        .collect()
}

#[test]
fn ordered_plans_keep_order_and_split_on_kind_changes() {
    let plan = BulkPlan::new(mixed(), true).expect("valid");
    assert_eq!(
        kinds(&plan),
        [
            (WriteKind::Insert, vec![0, 1]),
            (WriteKind::Update, vec![2]),
            (WriteKind::Insert, vec![3]),
            (WriteKind::Delete, vec![4]),
            (WriteKind::Update, vec![5]),
        ]
    );
    assert_eq!(plan.runs[0].ids, [Bson::Int32(0), Bson::Int32(1)]);
    assert!(
        matches!(plan.runs[2].ids[0], Bson::ObjectId(_)),
        "generated _id"
    );
}

#[test]
fn unordered_plans_group_by_kind() {
    let plan = BulkPlan::new(mixed(), false).expect("valid");
    assert_eq!(
        kinds(&plan),
        [
            (WriteKind::Insert, vec![0, 1, 3]),
            (WriteKind::Update, vec![2, 5]),
            (WriteKind::Delete, vec![4]),
        ]
    );
}

/// Retryable-writes: eligibility is judged per command, so a multi-document statement makes
/// its own command non-retryable and leaves the others retryable.
#[test]
fn only_the_commands_holding_a_multi_statement_are_non_retryable() {
    use std::sync::Arc;

    use crate::Namespace;
    use crate::operation::write::{WriteBatch, WriteCommandFields};
    use crate::operation::{Operation, Retryability};

    let models = vec![
        WriteModel::DeleteMany(DeleteModel::new(doc! {})),
        WriteModel::InsertOne(InsertOneModel::new(doc! { "a": 1 })),
    ];
    let plan = BulkPlan::new(models, true).expect("valid");
    let fields = Arc::new(WriteCommandFields::default());
    let ns = Namespace::new("db", "coll");
    let retryability: Vec<Retryability> = plan
        .runs
        .iter()
        .map(|run| {
            WriteBatch::new(
                ns.clone(),
                run.kind,
                Arc::clone(&run.statements),
                0,
                Arc::clone(&fields),
            )
            .retryability()
        })
        .collect();
    assert_eq!(retryability, [Retryability::None, Retryability::Write]);
}

#[test]
fn invalid_models_are_rejected_with_their_position() {
    assert!(BulkPlan::new(Vec::<WriteModel<Document>>::new(), true).is_err());
    let mut models = mixed();
    models.push(WriteModel::UpdateOne(UpdateModel::new(
        doc! {},
        doc! { "a": 1 },
    )));
    let error = BulkPlan::new(models, true).expect_err("not an operator");
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { message } if message.starts_with("write 6:")),
        "{error}"
    );
    let replace = vec![WriteModel::ReplaceOne(ReplaceOneModel::new(
        doc! {},
        doc! { "$set": { "a": 1 } },
    ))];
    assert!(BulkPlan::new(replace, true).is_err());
}

#[test]
fn update_and_replacement_validation() {
    assert!(check_update(&UpdateModifications::Document(doc! { "$set": { "a": 1 } })).is_ok());
    assert!(check_update(&UpdateModifications::Document(doc! {})).is_err());
    assert!(check_update(&UpdateModifications::Document(doc! { "a": 1, "$set": {} })).is_err());
    assert!(
        check_update(&UpdateModifications::Pipeline(vec![
            doc! { "$set": { "a": 1 } }
        ]))
        .is_ok()
    );
    assert_eq!(
        replacement_document(&doc! { "a": 1 }).expect("valid"),
        doc! { "a": 1 }
    );
    assert!(replacement_document(&doc! { "$inc": { "a": 1 } }).is_err());
}

fn outcome(start: usize, count: usize, n: u64) -> BatchOutcome {
    BatchOutcome {
        start,
        count,
        n,
        ..BatchOutcome::default()
    }
}

fn write_error(index: usize, code: i32) -> crate::error::IndexedWriteError {
    let reply = bson::doc! { "writeErrors": [ { "index": index as i32, "code": code, "errmsg": format!("error {code}") } ] };
    crate::error::ReplyWriteErrors::from_reply(&reply)
        .expect("one error")
        .write_errors
        .remove(0)
}

#[test]
fn results_merge_across_runs_and_batches_with_caller_positions() {
    let plan = BulkPlan::new(mixed(), false).expect("valid");
    let mut acc = BulkAccumulator::new(&plan, false);
    // Inserts in two batches: positions 0, 1 | 3.
    acc.add(&plan.runs[0], outcome(0, 2, 2));
    acc.add(&plan.runs[0], outcome(2, 1, 1));
    // Updates: one match (position 2) and one upsert (position 5, run index 1).
    let mut updates = outcome(0, 2, 2);
    updates.n_modified = 1;
    updates.upserted = vec![(1, Bson::Int32(9))];
    acc.add(&plan.runs[1], updates);
    acc.add(&plan.runs[2], outcome(0, 1, 1));
    assert!(!acc.must_stop());
    let result = acc.finish().expect("no failure");
    assert_eq!(
        (
            result.inserted_count,
            result.matched_count,
            result.modified_count,
            result.deleted_count,
            result.upserted_count
        ),
        (3, 1, 1, 1, 1)
    );
    assert_eq!(result.upserted_ids.get(&5), Some(&Bson::Int32(9)));
    assert_eq!(result.inserted_ids.len(), 3);
    assert_eq!(result.inserted_ids.get(&1), Some(&Bson::Int32(1)));
    assert!(result.inserted_ids.contains_key(&3));
}

#[test]
fn write_errors_are_remapped_and_stop_ordered_bulks() {
    let plan = BulkPlan::new(mixed(), false).expect("valid");
    // The unordered insert run is positions [0, 1, 3]; its statement 2 (position 3) failed.
    let mut failed = outcome(0, 3, 2);
    failed.write_errors = vec![write_error(2, 11000)];
    let mut acc = BulkAccumulator::new(&plan, false);
    acc.add(&plan.runs[0], failed.clone());
    assert!(!acc.must_stop(), "unordered bulks continue");
    assert_eq!(acc.result().inserted_ids.len(), 2);
    let error = acc.finish().expect_err("a write error");
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        panic!("expected a bulk write failure, got {error}");
    };
    assert_eq!(failure.write_errors[&3].code, 11000);
    assert_eq!(failure.write_errors.len(), 1);
    assert!(failure.write_concern_errors.is_empty());
    let Some(crate::error::PartialBulkWriteResult::Summary(applied)) = &failure.partial_result
    else {
        panic!("two inserts applied: {:?}", failure.partial_result);
    };
    assert_eq!(applied.inserted_count, 2);
    assert_eq!(error.code(), Some(11000));
    // Two documents went in: the error says so, with their ids, and never "not applied".
    assert_eq!(error.outcome(), Outcome::PartlyApplied);
    let partial = error.partial_write().expect("a partial result");
    assert_eq!(partial.executed, vec![0, 1]);
    assert_eq!(partial.applied.inserted_ids.len(), 2);
    assert_eq!(partial.applied.inserted_count, 2);
    assert_eq!(partial.write_errors.len(), 1);
    assert_eq!(partial.not_executed, vec![2, 4, 5], "the runs never sent");
    assert!(partial.unknown.is_empty());

    let ordered = BulkPlan::new(mixed(), true).expect("valid");
    let mut first_fails = outcome(0, 2, 0);
    first_fails.write_errors = vec![write_error(0, 11000)];
    let mut acc = BulkAccumulator::new(&ordered, true);
    acc.add(&ordered.runs[0], first_fails);
    assert!(acc.must_stop());
    assert!(
        acc.result().inserted_ids.is_empty(),
        "nothing after the first error ran"
    );
    let error = acc.finish().expect_err("a write error");
    assert_eq!(
        error.outcome(),
        Outcome::NotApplied,
        "the first statement failed"
    );
    let partial = error.partial_write().expect("a partial result");
    assert_eq!(partial.not_executed, vec![1, 2, 3, 4, 5]);
}

#[test]
fn a_later_batch_failing_keeps_what_the_earlier_batches_applied() {
    let plan = BulkPlan::new(mixed(), true).expect("valid");
    // Ordered runs: inserts [0, 1], update [2], insert [3], delete [4], update [5].
    let mut acc = BulkAccumulator::new(&plan, true);
    acc.add(&plan.runs[0], outcome(0, 2, 2));
    // The update batch is lost after sending: its fate is unknown, the rest never ran.
    let lost = crate::error::Error::network("connection closed").with_outcome(Outcome::Ambiguous);
    let error = acc.fail(&plan.runs[1], 0, Some(1), lost);
    assert_eq!(error.outcome(), Outcome::Ambiguous);
    let partial = error.partial_write().expect("a partial result");
    assert_eq!(partial.executed, vec![0, 1]);
    assert_eq!(
        partial.applied.inserted_ids.len(),
        2,
        "the first batch's ids"
    );
    assert_eq!(partial.unknown, vec![2]);
    assert_eq!(partial.not_executed, vec![3, 4, 5]);

    // Refused before sending: nothing of that batch ran, but the first batch did.
    let mut acc = BulkAccumulator::new(&plan, true);
    acc.add(&plan.runs[0], outcome(0, 2, 2));
    let refused = crate::error::Error::network("no server");
    assert_eq!(refused.outcome(), Outcome::NotApplied);
    let error = acc.fail(&plan.runs[1], 0, None, refused);
    assert_eq!(error.outcome(), Outcome::PartlyApplied);
    let partial = error.partial_write().expect("a partial result");
    assert_eq!(partial.not_executed, vec![2, 3, 4, 5]);

    // Lost before the batch size was known: the whole rest of the run is unknown.
    let mut acc = BulkAccumulator::new(&plan, false);
    let unordered = BulkPlan::new(mixed(), false).expect("valid");
    acc.add(&unordered.runs[0], outcome(0, 1, 1));
    let lost = crate::error::Error::network("closed").with_outcome(Outcome::Ambiguous);
    let error = acc.fail(&unordered.runs[0], 1, None, lost);
    let partial = error.partial_write().expect("a partial result");
    assert_eq!(partial.executed, vec![0]);
    assert_eq!(partial.unknown, vec![1, 3]);
    assert_eq!(partial.not_executed, vec![2, 4, 5]);
}

#[test]
fn write_concern_errors_fail_the_bulk_but_keep_counting() {
    let plan = BulkPlan::new(mixed(), true).expect("valid");
    let reply = rawdoc! {
        "n": 2, "writeConcernError": { "code": 64, "errmsg": "timed out" },
        "errorLabels": ["RetryableWriteError"], "ok": 1,
    };
    let with_wce = BatchOutcome::parse(&reply, WriteKind::Insert, 0, 2).expect("parses");
    let mut acc = BulkAccumulator::new(&plan, true);
    acc.add(&plan.runs[0], with_wce.clone());
    assert!(
        !acc.must_stop(),
        "a write concern error does not stop an ordered bulk"
    );
    assert_eq!(acc.result().inserted_count, 2);
    let error = acc.finish().expect_err("write concern error");
    assert_eq!(error.code(), Some(64));
    assert!(error.has_label("RetryableWriteError"));
    assert_eq!(
        error.outcome(),
        Outcome::PartlyApplied,
        "the first run was applied, the rest of the plan was not run by this accumulator"
    );

    // Every batch's write concern error is kept; the failure names the first.
    let mut acc = BulkAccumulator::new(&plan, true);
    acc.add(&plan.runs[0], with_wce);
    let mut second = BatchOutcome::parse(
        &rawdoc! { "n": 1, "writeConcernError": { "code": 100, "errmsg": "later" }, "ok": 1 },
        WriteKind::Update,
        0,
        1,
    )
    .expect("parses");
    second.start = 0;
    acc.add(&plan.runs[1], second);
    let error = acc.finish().expect_err("write concern errors");
    let partial = error.partial_write().expect("a partial result");
    let codes: Vec<i32> = partial
        .write_concern_errors
        .iter()
        .map(|w| w.code)
        .collect();
    assert_eq!(codes, vec![64, 100]);
    assert_eq!(error.code(), Some(64));
}

/// Three inserts (`_id` 0, 1, 2) whose failure is reported as `shape`.
fn three_inserts(shape: FailureShape) -> BulkPlan {
    let (statements, ids): (Vec<Statement>, Vec<Bson>) = (0..3)
        .map(|i| Statement::insert(rawdoc! { "_id": i }).expect("encodes"))
        .unzip();
    BulkPlan::single_run(WriteKind::Insert, statements, ids).reported_as(shape)
}

/// The statement at run position 1 refused with a duplicate key, the others applied.
fn second_refused() -> BatchOutcome {
    let mut batch = outcome(0, 3, 2);
    batch.write_errors = vec![write_error(1, 11000)];
    batch
}

#[test]
fn each_write_reports_its_failure_as_the_official_kind_for_it() {
    let plan = three_inserts(FailureShape::InsertMany);
    let mut acc = BulkAccumulator::new(&plan, false);
    acc.add(&plan.runs[0], second_refused());
    let error = acc.finish().expect_err("a write error");
    let ErrorKind::InsertMany(failure) = error.kind() else {
        panic!("expected an insert_many failure, got {error:?}");
    };
    let refused: Vec<usize> = failure
        .write_errors
        .iter()
        .flatten()
        .map(|e| e.index)
        .collect();
    assert_eq!(refused, [1]);
    assert!(failure.write_concern_error.is_none());
    let mut inserted: Vec<usize> = failure.inserted_ids.keys().copied().collect();
    inserted.sort_unstable();
    assert_eq!(inserted, [0, 2]);

    let plan = three_inserts(FailureShape::Single);
    let mut acc = BulkAccumulator::new(&plan, false);
    acc.add(&plan.runs[0], second_refused());
    let error = acc.finish().expect_err("a write error");
    assert!(
        matches!(error.kind(), ErrorKind::Write(WriteFailure::WriteError(e)) if e.code == 11000),
        "{error:?}"
    );

    // Only the write concern failed: a single write reports it, and it was applied.
    let mut acc = BulkAccumulator::new(&plan, false);
    let mut batch = outcome(0, 3, 3);
    batch.write_concern_error = Some(crate::error::WriteConcernError {
        code: 64,
        code_name: "WriteConcernFailed".into(),
        message: "waiting for replication timed out".into(),
        details: None,
    });
    acc.add(&plan.runs[0], batch);
    let error = acc.finish().expect_err("a write concern error");
    assert!(
        matches!(error.kind(), ErrorKind::Write(WriteFailure::WriteConcernError(e)) if e.code == 64),
        "{error:?}"
    );
    assert_eq!(error.outcome(), Outcome::Applied);
}

#[test]
fn bulk_update_one_and_replace_one_send_their_sort_and_update_many_refuses_one() {
    let sorted = |model: WriteModel<Document>| {
        let (statement, _) = model.into_statement().expect("valid model");
        let document = Document::try_from(statement.document.as_ref()).expect("a document");
        document.get_document("sort").ok().cloned()
    };
    let update = UpdateModel::new(doc! {}, doc! { "$set": { "a": 1 } }).sort(doc! { "a": -1 });
    assert_eq!(
        sorted(WriteModel::UpdateOne(update.clone())),
        Some(doc! { "a": -1 })
    );
    let replace = ReplaceOneModel::new(doc! {}, doc! { "a": 1 }).sort(doc! { "a": 1 });
    assert_eq!(
        sorted(WriteModel::ReplaceOne(replace)),
        Some(doc! { "a": 1 })
    );
    let refused = WriteModel::<Document>::UpdateMany(update).into_statement();
    assert!(matches!(
        refused.map(|_| ()).unwrap_err().kind(),
        ErrorKind::InvalidArgument { .. }
    ));
}
