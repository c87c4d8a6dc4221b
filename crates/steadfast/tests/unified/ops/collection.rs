//! Collection operations.

use bson::{Bson, Document, doc};
use steadfast::options::{CursorType, FindOptions, ReturnDocument, TimeoutMode};
use steadfast::{ClientSession, Collection, DeleteModel, ReplaceOneModel, UpdateModel, WriteModel};

use super::crud_options;
use super::timed::{InSession, Timed};
use super::{
    OpResult, Outcome, bulk_write_result, delete_result, drain, insert_many_result, update_result,
};
use crate::args::Args;

/// Runs collection operation `name`, in `session` when the test named one (the cursor-returning
/// operations in a session are `sessions::run_on_collection`'s).
pub(super) async fn run(
    name: &str,
    mut args: Args,
    coll: &Collection<Document>,
    mut session: Option<&mut ClientSession>,
) -> OpResult {
    let timeout = args.optional_duration("timeoutMS")?;
    // The caller resolved the `session` argument (a session cursor entity keeps its id).
    let session_id = args.take("session");
    if super::search_index::handles(name) {
        no_session(name, session.as_deref())?;
        return super::search_index::run(name, args, coll, timeout).await;
    }
    if super::indexes::handles(name) {
        return super::indexes::run(name, args, coll, timeout, session).await;
    }
    let result = match name {
        "insertOne" => {
            let document = args.document("document")?;
            let options = crud_options::insert_one(&mut args)?;
            args.finish()?;
            coll.insert_one(document)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options)
                .await
                .map(|r| Outcome::Value(Bson::Document(doc! { "insertedId": r.inserted_id })))
        }
        "insertMany" => {
            let documents = args.documents("documents")?;
            let options = crud_options::insert_many(&mut args)?;
            args.finish()?;
            let action = coll
                .insert_many(documents)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options);
            action.await.map(|r| Outcome::Value(insert_many_result(&r)))
        }
        "updateOne" | "updateMany" => {
            let filter = args.document("filter")?;
            let update = args.update("update")?;
            let options = crud_options::update(&mut args)?;
            args.finish()?;
            let action = if name == "updateOne" {
                coll.update_one(filter, update)
                    .timed(timeout)
                    .in_session(session.take())
            } else {
                coll.update_many(filter, update)
                    .timed(timeout)
                    .in_session(session.take())
            };
            action
                .with_options(options)
                .await
                .map(|r| Outcome::Value(update_result(&r)))
        }
        "replaceOne" => {
            let filter = args.document("filter")?;
            let replacement = args.document("replacement")?;
            let options = crud_options::replace(&mut args)?;
            args.finish()?;
            let action = coll
                .replace_one(filter, replacement)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options);
            action.await.map(|r| Outcome::Value(update_result(&r)))
        }
        "deleteOne" | "deleteMany" => {
            let filter = args.document("filter")?;
            let options = crud_options::delete(&mut args)?;
            args.finish()?;
            let action = if name == "deleteOne" {
                coll.delete_one(filter)
                    .timed(timeout)
                    .in_session(session.take())
            } else {
                coll.delete_many(filter)
                    .timed(timeout)
                    .in_session(session.take())
            };
            action
                .with_options(options)
                .await
                .map(|r| Outcome::Value(delete_result(&r)))
        }
        "findOneAndDelete" => {
            let filter = args.document("filter")?;
            let options = crud_options::find_one_and_delete(&mut args)?;
            args.finish()?;
            let found = coll
                .find_one_and_delete(filter)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options)
                .await;
            found.map(optional_document)
        }
        "findOneAndUpdate" => {
            let filter = args.document("filter")?;
            let update = args.update("update")?;
            let options = crud_options::find_one_and_update(&mut args)?;
            args.finish()?;
            let found = coll
                .find_one_and_update(filter, update)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options)
                .await;
            found.map(optional_document)
        }
        "findOneAndReplace" => {
            let filter = args.document("filter")?;
            let replacement = args.document("replacement")?;
            let options = crud_options::find_one_and_replace(&mut args)?;
            args.finish()?;
            let found = coll
                .find_one_and_replace(filter, replacement)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options)
                .await;
            found.map(optional_document)
        }
        "bulkWrite" => {
            let requests = args.documents("requests")?;
            let options = crud_options::bulk_write(&mut args)?;
            args.finish()?;
            let models = requests
                .iter()
                .map(write_model)
                .collect::<Result<Vec<_>, _>>()?;
            let action = coll
                .bulk_write(models)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options);
            action.await.map(|r| Outcome::Value(bulk_write_result(&r)))
        }
        "find" => {
            // Required, as the CRUD specification's find takes it.
            let filter = args.document("filter")?;
            let options = find_options(&mut args)?;
            let mode = timeout_mode(&mut args)?;
            args.finish()?;
            let mut action = coll.find(filter).timed(timeout).with_options(options);
            if let Some(mode) = mode {
                action = action.timeout_mode(mode);
            }
            match action.await {
                Ok(cursor) => drain(cursor).await.map(Outcome::Documents),
                Err(e) => Err(e),
            }
        }
        "createFindCursor" => {
            // Required, as the CRUD specification's find takes it.
            let filter = args.document("filter")?;
            let options = find_options(&mut args)?;
            let mode = timeout_mode(&mut args)?;
            args.finish()?;
            let mut action = coll.find(filter).timed(timeout).with_options(options);
            if let Some(mode) = mode {
                action = action.timeout_mode(mode);
            }
            match (session.take(), session_id) {
                (Some(session), Some(Bson::String(id))) => {
                    let opened = action.session(session).await;
                    opened.map(|cursor| Outcome::SessionCursor {
                        cursor: Box::new(cursor),
                        session: id,
                    })
                }
                (Some(_), other) => return Err(format!("{name}: session {other:?}")),
                (None, _) => action.await.map(Outcome::Cursor),
            }
        }
        "findOne" => {
            // Required, as the CRUD specification's find takes it.
            let filter = args.document("filter")?;
            let options = crud_options::find_one(&mut args)?;
            args.finish()?;
            let action = coll
                .find_one(filter)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options);
            action.await.map(optional_document)
        }
        "aggregate" => {
            let pipeline = args.documents("pipeline")?;
            let options = crud_options::aggregate(&mut args)?;
            let mode = timeout_mode(&mut args)?;
            args.finish()?;
            let mut action = coll
                .aggregate(pipeline)
                .timed(timeout)
                .with_options(options);
            if let Some(mode) = mode {
                action = action.timeout_mode(mode);
            }
            match action.await {
                Ok(cursor) => drain(cursor).await.map(Outcome::Documents),
                Err(e) => Err(e),
            }
        }
        "countDocuments" => {
            let filter = args.optional_document("filter")?.unwrap_or_default();
            let options = crud_options::count_documents(&mut args)?;
            args.finish()?;
            let counted = coll
                .count_documents(filter)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options)
                .await;
            counted.map(|n| Outcome::Value(super::count(n)))
        }
        "count" => {
            let filter = args.optional_document("filter")?.unwrap_or_default();
            let options = crud_options::count_documents(&mut args)?;
            args.finish()?;
            #[allow(deprecated, reason = "the suites test the deprecated count helper")]
            let counted = coll
                .count(filter)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options)
                .await;
            counted.map(|n| Outcome::Value(super::count(n)))
        }
        "estimatedDocumentCount" => {
            // steadfast's estimated_document_count takes no session.
            no_session(name, session.as_deref())?;
            let options = crud_options::estimated_document_count(&mut args)?;
            args.finish()?;
            let counted = coll
                .estimated_document_count()
                .timed(timeout)
                .with_options(options)
                .await;
            counted.map(|n| Outcome::Value(super::count(n)))
        }
        "distinct" => {
            let field = args.string("fieldName")?;
            let filter = args.optional_document("filter")?.unwrap_or_default();
            let options = crud_options::distinct(&mut args)?;
            args.finish()?;
            let values = coll
                .distinct(field, filter)
                .timed(timeout)
                .in_session(session.take())
                .with_options(options)
                .await;
            values.map(|v| Outcome::Value(Bson::Array(v)))
        }
        "rename" => {
            // No rename helper in the official API: `renameCollection` on `admin`.
            let to = args.string("to")?;
            let drop_target = args.optional_bool("dropTarget")?;
            args.finish()?;
            let ns = coll.namespace();
            let mut command = bson::doc! {
                "renameCollection": ns.to_string(),
                "to": format!("{}.{to}", ns.db),
            };
            if let Some(drop_target) = drop_target {
                command.insert("dropTarget", drop_target);
            }
            let admin = coll.database().client().database("admin");
            admin
                .run_command(command)
                .timed(timeout)
                .in_session(session.take())
                .await
                .map(|_| Outcome::Nothing)
        }
        other => {
            return Err(format!(
                "collection operation {other:?} is not supported by this runner"
            ));
        }
    };
    Ok(result)
}

/// Fails, naming the `session` argument, for an operation whose steadfast API takes none.
fn no_session(name: &str, session: Option<&ClientSession>) -> Result<(), String> {
    match session {
        Some(_) => Err(format!(
            "{name}: argument `session`: steadfast's API for it takes no session"
        )),
        None => Ok(()),
    }
}

fn optional_document(found: Option<Document>) -> Outcome {
    found.map_or(Outcome::Value(Bson::Null), |d| {
        Outcome::Value(Bson::Document(d))
    })
}

pub(super) fn return_document(args: &mut Args) -> Result<Option<ReturnDocument>, String> {
    match args.take("returnDocument") {
        None => Ok(None),
        Some(Bson::String(value)) if value.eq_ignore_ascii_case("before") => {
            Ok(Some(ReturnDocument::Before))
        }
        Some(Bson::String(value)) if value.eq_ignore_ascii_case("after") => {
            Ok(Some(ReturnDocument::After))
        }
        Some(other) => Err(format!(
            "returnDocument must be Before or After, found {other}"
        )),
    }
}

pub(super) fn find_options(args: &mut Args) -> Result<FindOptions, String> {
    let mut options = FindOptions::default();
    options.sort = args.optional_document("sort")?;
    options.projection = args.optional_document("projection")?;
    options.limit = args.optional_integer("limit")?;
    options.skip = args.optional_count("skip")?;
    options.batch_size = args.optional_count("batchSize")?;
    options.hint = args.optional_hint()?;
    options.max_time = args.optional_duration("maxTimeMS")?;
    options.max_await_time = args.optional_duration("maxAwaitTimeMS")?;
    options.cursor_type = cursor_type(args)?;
    super::crud_options::find_extras(args, &mut options)?;
    Ok(options)
}

/// The `cursorType` argument.
pub(super) fn cursor_type(args: &mut Args) -> Result<Option<CursorType>, String> {
    Ok(match args.take("cursorType") {
        None => None,
        Some(Bson::String(kind)) => Some(match kind.as_str() {
            "tailable" => CursorType::Tailable,
            "tailableAwait" => CursorType::TailableAwait,
            "nonTailable" => CursorType::NonTailable,
            other => return Err(format!("cursorType {other:?} is unknown")),
        }),
        Some(other) => return Err(format!("cursorType must be a string, found {other}")),
    })
}

/// The `timeoutMode` argument.
pub(super) fn timeout_mode(args: &mut Args) -> Result<Option<TimeoutMode>, String> {
    match args.take("timeoutMode") {
        None => Ok(None),
        Some(Bson::String(mode)) if mode == "cursorLifetime" => {
            Ok(Some(TimeoutMode::CursorLifetime))
        }
        Some(Bson::String(mode)) if mode == "iteration" => Ok(Some(TimeoutMode::Iteration)),
        Some(other) => Err(format!("timeoutMode {other} is unknown")),
    }
}

/// A `bulkWrite` request: `{insertOne: {...}}`, `{updateOne: {...}}`...
fn write_model(request: &Document) -> Result<WriteModel<Document>, String> {
    let mut entries = request.iter();
    let (Some((kind, Bson::Document(spec))), None) = (entries.next(), entries.next()) else {
        return Err(format!(
            "a bulkWrite request must have exactly one key: {request}"
        ));
    };
    let mut args = Args::new(kind, Some(spec));
    let model = match kind.as_str() {
        "insertOne" => {
            WriteModel::InsertOne(steadfast::InsertOneModel::new(args.document("document")?))
        }
        "updateOne" | "updateMany" => {
            let mut model = UpdateModel::new(args.document("filter")?, args.update("update")?);
            if let Some(upsert) = args.optional_bool("upsert")? {
                model = model.upsert(upsert);
            }
            let o = crud_options::model_options(&mut args)?;
            model.collation = o.collation;
            model.hint = o.hint;
            model.array_filters = o.array_filters;
            model.sort = o.sort;
            if kind == "updateOne" {
                WriteModel::UpdateOne(model)
            } else {
                WriteModel::UpdateMany(model)
            }
        }
        "replaceOne" => {
            let mut model =
                ReplaceOneModel::new(args.document("filter")?, args.document("replacement")?);
            if let Some(upsert) = args.optional_bool("upsert")? {
                model = model.upsert(upsert);
            }
            let o = crud_options::model_options(&mut args)?;
            model.collation = o.collation;
            model.hint = o.hint;
            model.sort = o.sort;
            WriteModel::ReplaceOne(model)
        }
        "deleteOne" | "deleteMany" => {
            let mut model = DeleteModel::new(args.document("filter")?);
            let o = crud_options::model_options(&mut args)?;
            model.collation = o.collation;
            model.hint = o.hint;
            if kind == "deleteOne" {
                WriteModel::DeleteOne(model)
            } else {
                WriteModel::DeleteMany(model)
            }
        }
        other => {
            return Err(format!(
                "bulkWrite request {other:?} is not supported by this runner"
            ));
        }
    };
    args.finish()?;
    Ok(model)
}
