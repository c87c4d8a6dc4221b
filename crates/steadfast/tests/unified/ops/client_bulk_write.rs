//! `clientBulkWrite`: `Client::bulk_write` with the test's models and options, and its results
//! and partial results shaped as the unified format's `BulkWriteResult`.

use std::collections::HashMap;
use std::time::Duration;

use bson::{Bson, Document, doc};
use steadfast::error::PartialBulkWriteResult;
use steadfast::options::{
    DeleteManyModel, DeleteOneModel, InsertOneModel, ReplaceOneModel, UpdateManyModel,
    UpdateOneModel, WriteModel,
};
use steadfast::results::{SummaryBulkWriteResult, VerboseBulkWriteResult};
use steadfast::{Client, ErrorKind, Namespace};

use super::{OpResult, Outcome};
use crate::args::{Args, write_concern};

/// Runs `clientBulkWrite` on `client`.
pub(crate) async fn run(
    mut args: Args,
    client: &Client,
    session: Option<&mut steadfast::ClientSession>,
    timeout: Option<Duration>,
) -> OpResult {
    let models = args
        .documents("models")?
        .iter()
        .map(model)
        .collect::<Result<Vec<_>, _>>()?;
    let verbose = args.optional_bool("verboseResults")?.unwrap_or(false);
    let mut action = client.bulk_write(models);
    if let Some(ordered) = args.optional_bool("ordered")? {
        action = action.ordered(ordered);
    }
    if let Some(bypass) = args.optional_bool("bypassDocumentValidation")? {
        action = action.bypass_document_validation(bypass);
    }
    if let Some(comment) = args.take("comment") {
        action = action.comment(comment);
    }
    if let Some(let_vars) = args.optional_document("let")? {
        action = action.let_vars(let_vars);
    }
    if let Some(concern) = args.optional_document("writeConcern")? {
        action = action.write_concern(write_concern(&concern)?);
    }
    args.finish()?;
    if let Some(timeout) = timeout {
        action = action.timeout(timeout);
    }
    if let Some(session) = session {
        action = action.session(session);
    }
    let result = if verbose {
        action.verbose_results().await.map(|r| verbose_document(&r))
    } else {
        action.await.map(|r| summary_document(&r))
    };
    Ok(result.map(|d| Outcome::Value(Bson::Document(d))))
}

/// The partial result a failed `clientBulkWrite` carries, as `expectError.expectResult` matches it.
pub(crate) fn partial_result(error: &steadfast::Error) -> Option<Bson> {
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        return None;
    };
    let document = match failure.partial_result.as_ref()? {
        PartialBulkWriteResult::Summary(summary) => summary_document(summary),
        PartialBulkWriteResult::Verbose(verbose) => verbose_document(verbose),
    };
    Some(Bson::Document(document))
}

/// `writeConcernErrors` (`[{code, message}]`) or `writeErrors` (`{"<index>": {code, message}}`)
/// of a client bulk write's error, as `expectError` matches them.
pub(crate) fn error_field(error: &steadfast::Error, key: &str) -> Option<Bson> {
    let ErrorKind::BulkWrite(failure) = error.kind() else {
        return None;
    };
    if key == "writeConcernErrors" {
        let errors = failure.write_concern_errors.iter().map(|e| {
            let mut d = doc! { "code": e.code, "message": e.message.clone() };
            if let Some(details) = &e.details {
                d.insert("details", details.clone());
            }
            Bson::Document(d)
        });
        return Some(Bson::Array(errors.collect()));
    }
    Some(Bson::Document(indexed(&failure.write_errors, |e| {
        let mut d = doc! { "code": e.code, "message": e.message.clone() };
        if let Some(details) = &e.details {
            d.insert("details", details.clone());
        }
        d
    })))
}

fn model(request: &Document) -> Result<WriteModel, String> {
    let mut entries = request.iter();
    let (Some((kind, Bson::Document(spec))), None) = (entries.next(), entries.next()) else {
        return Err(format!(
            "a clientBulkWrite model must have exactly one key: {request}"
        ));
    };
    let mut args = Args::new(kind, Some(spec));
    let namespace = namespace(&args.string("namespace")?)?;
    let collation = args.optional_document("collation")?;
    let hint = args.take("hint");
    let model: WriteModel = match kind.as_str() {
        "insertOne" => InsertOneModel::builder()
            .namespace(namespace)
            .document(args.document("document")?)
            .build()
            .into(),
        "updateOne" => UpdateOneModel::builder()
            .namespace(namespace)
            .filter(args.document("filter")?)
            .update(args.update("update")?)
            .array_filters(array_filters(&mut args)?)
            .collation(collation)
            .hint(hint)
            .upsert(args.optional_bool("upsert")?)
            .sort(args.optional_document("sort")?)
            .build()
            .into(),
        "updateMany" => UpdateManyModel::builder()
            .namespace(namespace)
            .filter(args.document("filter")?)
            .update(args.update("update")?)
            .array_filters(array_filters(&mut args)?)
            .collation(collation)
            .hint(hint)
            .upsert(args.optional_bool("upsert")?)
            .build()
            .into(),
        "replaceOne" => ReplaceOneModel::builder()
            .namespace(namespace)
            .filter(args.document("filter")?)
            .replacement(args.document("replacement")?)
            .collation(collation)
            .hint(hint)
            .upsert(args.optional_bool("upsert")?)
            .sort(args.optional_document("sort")?)
            .build()
            .into(),
        "deleteOne" => DeleteOneModel::builder()
            .namespace(namespace)
            .filter(args.document("filter")?)
            .collation(collation)
            .hint(hint)
            .build()
            .into(),
        "deleteMany" => DeleteManyModel::builder()
            .namespace(namespace)
            .filter(args.document("filter")?)
            .collation(collation)
            .hint(hint)
            .build()
            .into(),
        other => return Err(format!("clientBulkWrite model {other:?} is not supported")),
    };
    args.finish()?;
    Ok(model)
}

fn namespace(ns: &str) -> Result<Namespace, String> {
    let (db, coll) = ns
        .split_once('.')
        .ok_or_else(|| format!("namespace {ns:?} is not db.collection"))?;
    Ok(Namespace::new(db, coll))
}

fn array_filters(args: &mut Args) -> Result<Option<Vec<Bson>>, String> {
    match args.take("arrayFilters") {
        Some(Bson::Array(filters)) => Ok(Some(filters)),
        Some(other) => Err(format!("arrayFilters must be an array, found {other}")),
        None => Ok(None),
    }
}

fn summary_document(summary: &SummaryBulkWriteResult) -> Document {
    doc! {
        "acknowledged": summary.acknowledged,
        "insertedCount": summary.inserted_count,
        "upsertedCount": summary.upserted_count,
        "matchedCount": summary.matched_count,
        "modifiedCount": summary.modified_count,
        "deletedCount": summary.deleted_count,
    }
}

fn verbose_document(result: &VerboseBulkWriteResult) -> Document {
    let mut document = summary_document(&result.summary);
    document.insert(
        "insertResults",
        indexed(
            &result.insert_results,
            |r| doc! { "insertedId": r.inserted_id.clone() },
        ),
    );
    document.insert(
        "updateResults",
        indexed(&result.update_results, |r| {
            let mut d = doc! {
                "matchedCount": i64::try_from(r.matched_count).unwrap_or(i64::MAX),
                "modifiedCount": i64::try_from(r.modified_count).unwrap_or(i64::MAX),
            };
            if let Some(id) = &r.upserted_id {
                d.insert("upsertedId", id.clone());
            }
            d
        }),
    );
    document.insert(
        "deleteResults",
        indexed(&result.delete_results, |r| {
            doc! { "deletedCount": i64::try_from(r.deleted_count).unwrap_or(i64::MAX) }
        }),
    );
    document
}

fn indexed<T>(map: &HashMap<usize, T>, to_document: impl Fn(&T) -> Document) -> Document {
    let mut positions: Vec<&usize> = map.keys().collect();
    positions.sort();
    positions
        .into_iter()
        .filter_map(|p| {
            map.get(p)
                .map(|r| (p.to_string(), Bson::Document(to_document(r))))
        })
        .collect()
}
