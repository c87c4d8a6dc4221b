//! The options of the CRUD operations, read from a test's arguments into steadfast's option
//! structs (the crud suite passes every option the CRUD specification lists).

use bson::{Bson, Document};
use steadfast::options::{
    AggregateOptions, BulkWriteOptions, Collation, CountOptions, DeleteOptions, DistinctOptions,
    EstimatedDocumentCountOptions, FindOneAndDeleteOptions, FindOneAndReplaceOptions,
    FindOneAndUpdateOptions, FindOneOptions, FindOptions, InsertManyOptions, InsertOneOptions,
    ReplaceOptions, UpdateOptions,
};

use super::collection::return_document;
use crate::args::Args;

/// The optional `collation` argument.
pub(super) fn collation(args: &mut Args) -> Result<Option<Collation>, String> {
    args.optional_document("collation")?
        .map(|d| bson::deserialize_from_document(d).map_err(|e| format!("collation: {e}")))
        .transpose()
}

/// The optional `arrayFilters` argument: an array of documents.
pub(super) fn array_filters(args: &mut Args) -> Result<Option<Vec<Document>>, String> {
    match args.take("arrayFilters") {
        None => Ok(None),
        Some(Bson::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Bson::Document(d) => Ok(d),
                other => Err(format!("arrayFilters must hold documents, found {other}")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(other) => Err(format!("arrayFilters must be an array, found {other}")),
    }
}

/// The optional `writeConcern` argument.
fn concern(args: &mut Args) -> Result<Option<steadfast::options::WriteConcern>, String> {
    args.optional_write_concern()
}

/// `insertOne`'s options.
pub(super) fn insert_one(args: &mut Args) -> Result<InsertOneOptions, String> {
    let mut o = InsertOneOptions::default();
    o.bypass_document_validation = args.optional_bool("bypassDocumentValidation")?;
    o.comment = args.take("comment");
    o.write_concern = concern(args)?;
    Ok(o)
}

/// `insertMany`'s options.
pub(super) fn insert_many(args: &mut Args) -> Result<InsertManyOptions, String> {
    let mut o = InsertManyOptions::default();
    o.bypass_document_validation = args.optional_bool("bypassDocumentValidation")?;
    o.ordered = args.optional_bool("ordered")?;
    o.comment = args.take("comment");
    o.write_concern = concern(args)?;
    Ok(o)
}

/// `updateOne`'s and `updateMany`'s options.
pub(super) fn update(args: &mut Args) -> Result<UpdateOptions, String> {
    let mut o = UpdateOptions::default();
    o.array_filters = array_filters(args)?;
    o.bypass_document_validation = args.optional_bool("bypassDocumentValidation")?;
    o.collation = collation(args)?;
    o.hint = args.optional_hint()?;
    o.upsert = args.optional_bool("upsert")?;
    o.let_vars = args.optional_document("let")?;
    o.comment = args.take("comment");
    o.sort = args.optional_document("sort")?;
    o.write_concern = concern(args)?;
    Ok(o)
}

/// `replaceOne`'s options.
pub(super) fn replace(args: &mut Args) -> Result<ReplaceOptions, String> {
    let mut o = ReplaceOptions::default();
    o.bypass_document_validation = args.optional_bool("bypassDocumentValidation")?;
    o.collation = collation(args)?;
    o.hint = args.optional_hint()?;
    o.upsert = args.optional_bool("upsert")?;
    o.let_vars = args.optional_document("let")?;
    o.comment = args.take("comment");
    o.sort = args.optional_document("sort")?;
    o.write_concern = concern(args)?;
    Ok(o)
}

/// `deleteOne`'s and `deleteMany`'s options.
pub(super) fn delete(args: &mut Args) -> Result<DeleteOptions, String> {
    let mut o = DeleteOptions::default();
    o.collation = collation(args)?;
    o.hint = args.optional_hint()?;
    o.let_vars = args.optional_document("let")?;
    o.comment = args.take("comment");
    o.write_concern = concern(args)?;
    Ok(o)
}

/// `findOneAndDelete`'s options.
pub(super) fn find_one_and_delete(args: &mut Args) -> Result<FindOneAndDeleteOptions, String> {
    let mut o = FindOneAndDeleteOptions::default();
    o.sort = args.optional_document("sort")?;
    o.projection = args.optional_document("projection")?;
    o.collation = collation(args)?;
    o.hint = args.optional_hint()?;
    o.let_vars = args.optional_document("let")?;
    o.comment = args.take("comment");
    o.max_time = args.optional_duration("maxTimeMS")?;
    o.write_concern = concern(args)?;
    Ok(o)
}

/// `findOneAndUpdate`'s options.
pub(super) fn find_one_and_update(args: &mut Args) -> Result<FindOneAndUpdateOptions, String> {
    let mut o = FindOneAndUpdateOptions::default();
    o.array_filters = array_filters(args)?;
    o.bypass_document_validation = args.optional_bool("bypassDocumentValidation")?;
    o.sort = args.optional_document("sort")?;
    o.projection = args.optional_document("projection")?;
    o.upsert = args.optional_bool("upsert")?;
    o.return_document = return_document(args)?;
    o.collation = collation(args)?;
    o.hint = args.optional_hint()?;
    o.let_vars = args.optional_document("let")?;
    o.comment = args.take("comment");
    o.max_time = args.optional_duration("maxTimeMS")?;
    o.write_concern = concern(args)?;
    Ok(o)
}

/// `findOneAndReplace`'s options.
pub(super) fn find_one_and_replace(args: &mut Args) -> Result<FindOneAndReplaceOptions, String> {
    let mut o = FindOneAndReplaceOptions::default();
    o.bypass_document_validation = args.optional_bool("bypassDocumentValidation")?;
    o.sort = args.optional_document("sort")?;
    o.projection = args.optional_document("projection")?;
    o.upsert = args.optional_bool("upsert")?;
    o.return_document = return_document(args)?;
    o.collation = collation(args)?;
    o.hint = args.optional_hint()?;
    o.let_vars = args.optional_document("let")?;
    o.comment = args.take("comment");
    o.max_time = args.optional_duration("maxTimeMS")?;
    o.write_concern = concern(args)?;
    Ok(o)
}

/// `bulkWrite`'s options (the models are read by the caller).
pub(super) fn bulk_write(args: &mut Args) -> Result<BulkWriteOptions, String> {
    let mut o = BulkWriteOptions::default();
    o.ordered = args.optional_bool("ordered")?;
    o.bypass_document_validation = args.optional_bool("bypassDocumentValidation")?;
    o.let_vars = args.optional_document("let")?;
    o.comment = args.take("comment");
    o.write_concern = concern(args)?;
    Ok(o)
}

/// The options of `find` beyond those `collection::find_options` reads.
pub(super) fn find_extras(args: &mut Args, o: &mut FindOptions) -> Result<(), String> {
    o.allow_disk_use = args.optional_bool("allowDiskUse")?;
    o.allow_partial_results = args.optional_bool("allowPartialResults")?;
    o.collation = collation(args)?;
    o.comment = args.take("comment");
    o.let_vars = args.optional_document("let")?;
    o.max = args.optional_document("max")?;
    o.min = args.optional_document("min")?;
    o.no_cursor_timeout = args.optional_bool("noCursorTimeout")?;
    o.return_key = args.optional_bool("returnKey")?;
    o.show_record_id = args.optional_bool("showRecordId")?;
    Ok(())
}

/// `findOne`'s options: every one of `find`'s but those of a cursor (`batchSize`, `limit`,
/// `cursorType`, `noCursorTimeout`, `maxAwaitTimeMS`), which stay unread so that `finish`
/// reports them.
pub(super) fn find_one(args: &mut Args) -> Result<FindOneOptions, String> {
    let mut o = FindOneOptions::default();
    o.allow_disk_use = args.optional_bool("allowDiskUse")?;
    o.allow_partial_results = args.optional_bool("allowPartialResults")?;
    o.collation = collation(args)?;
    o.comment = args.take("comment");
    o.hint = args.optional_hint()?;
    o.let_vars = args.optional_document("let")?;
    o.max = args.optional_document("max")?;
    o.max_time = args.optional_duration("maxTimeMS")?;
    o.min = args.optional_document("min")?;
    o.projection = args.optional_document("projection")?;
    o.return_key = args.optional_bool("returnKey")?;
    o.show_record_id = args.optional_bool("showRecordId")?;
    o.skip = args.optional_count("skip")?;
    o.sort = args.optional_document("sort")?;
    Ok(o)
}

/// Every option of `aggregate` (on a collection or a database).
pub(super) fn aggregate(args: &mut Args) -> Result<AggregateOptions, String> {
    let mut o = AggregateOptions::default();
    o.batch_size = args.optional_count("batchSize")?;
    o.max_time = args.optional_duration("maxTimeMS")?;
    o.max_await_time = args.optional_duration("maxAwaitTimeMS")?;
    o.allow_disk_use = args.optional_bool("allowDiskUse")?;
    o.bypass_document_validation = args.optional_bool("bypassDocumentValidation")?;
    o.collation = collation(args)?;
    o.comment = args.take("comment");
    o.hint = args.optional_hint()?;
    o.let_vars = args.optional_document("let")?;
    o.write_concern = concern(args)?;
    Ok(o)
}

/// `countDocuments`'s options (and the deprecated `count`'s, which are the same).
pub(super) fn count_documents(args: &mut Args) -> Result<CountOptions, String> {
    let mut o = CountOptions::default();
    o.limit = args.optional_count("limit")?;
    o.skip = args.optional_count("skip")?;
    o.collation = collation(args)?;
    o.comment = args.take("comment");
    o.hint = args.optional_hint()?;
    o.max_time = args.optional_duration("maxTimeMS")?;
    Ok(o)
}

/// `estimatedDocumentCount`'s options.
pub(super) fn estimated_document_count(
    args: &mut Args,
) -> Result<EstimatedDocumentCountOptions, String> {
    let mut o = EstimatedDocumentCountOptions::default();
    o.comment = args.take("comment");
    o.max_time = args.optional_duration("maxTimeMS")?;
    Ok(o)
}

/// `distinct`'s options.
pub(super) fn distinct(args: &mut Args) -> Result<DistinctOptions, String> {
    let mut o = DistinctOptions::default();
    o.collation = collation(args)?;
    o.comment = args.take("comment");
    o.hint = args.optional_hint()?;
    o.max_time = args.optional_duration("maxTimeMS")?;
    Ok(o)
}

/// The per-model options of a `bulkWrite` request: `collation`, `hint`, `arrayFilters`, `sort`.
pub(super) struct ModelOptions {
    pub(super) collation: Option<Collation>,
    pub(super) hint: Option<steadfast::options::Hint>,
    pub(super) array_filters: Option<Vec<Document>>,
    pub(super) sort: Option<Document>,
}

/// Reads a bulkWrite request's per-model options.
pub(super) fn model_options(args: &mut Args) -> Result<ModelOptions, String> {
    Ok(ModelOptions {
        collation: collation(args)?,
        hint: args.optional_hint()?,
        array_filters: array_filters(args)?,
        sort: args.optional_document("sort")?,
    })
}
