//! The search index helpers: `createSearchIndex(es)`, `updateSearchIndex`, `dropSearchIndex`,
//! `listSearchIndexes`.

use std::time::Duration;

use bson::{Bson, Document};
use steadfast::options::AggregateOptions;
use steadfast::{Collection, SearchIndexModel};

use super::{OpResult, Outcome, drain};
use crate::args::Args;

/// Whether collection operation `name` is one of this file's.
pub(super) fn handles(name: &str) -> bool {
    matches!(
        name,
        "createSearchIndex"
            | "createSearchIndexes"
            | "updateSearchIndex"
            | "dropSearchIndex"
            | "listSearchIndexes"
    )
}

/// Runs search index operation `name` on `coll`.
pub(super) async fn run(
    name: &str,
    mut args: Args,
    coll: &Collection<Document>,
    timeout: Option<Duration>,
) -> OpResult {
    let result = match name {
        "createSearchIndex" => {
            let model = model(args.document("model")?)?;
            args.finish()?;
            let mut action = coll.create_search_index(model);
            if let Some(t) = timeout {
                action = action.timeout(t);
            }
            action.await.map(|name| Outcome::Value(Bson::String(name)))
        }
        "createSearchIndexes" => {
            let models = args
                .documents("models")?
                .into_iter()
                .map(model)
                .collect::<Result<Vec<_>, _>>()?;
            args.finish()?;
            let mut action = coll.create_search_indexes(models);
            if let Some(t) = timeout {
                action = action.timeout(t);
            }
            action.await.map(|names| {
                Outcome::Value(Bson::Array(names.into_iter().map(Bson::String).collect()))
            })
        }
        "updateSearchIndex" => {
            let index = args.string("name")?;
            let definition = args.document("definition")?;
            args.finish()?;
            let mut action = coll.update_search_index(index, definition);
            if let Some(t) = timeout {
                action = action.timeout(t);
            }
            action.await.map(|()| Outcome::Nothing)
        }
        "dropSearchIndex" => {
            let index = args.string("name")?;
            args.finish()?;
            let mut action = coll.drop_search_index(index);
            if let Some(t) = timeout {
                action = action.timeout(t);
            }
            action.await.map(|()| Outcome::Nothing)
        }
        _ => {
            let index = match args.take("name") {
                Some(Bson::String(index)) => Some(index),
                Some(other) => return Err(format!("{name}: name {other}")),
                None => None,
            };
            let options = match args.optional_document("aggregationOptions")? {
                Some(options) => aggregate_options(&options)?,
                None => None,
            };
            args.finish()?;
            let mut action = coll.list_search_indexes();
            if let Some(index) = index {
                action = action.name(index);
            }
            if let Some(options) = options {
                action = action.aggregate_options(options);
            }
            if let Some(t) = timeout {
                action = action.timeout(t);
            }
            match action.await {
                Ok(cursor) => drain(cursor).await.map(Outcome::Documents),
                Err(e) => Err(e),
            }
        }
    };
    Ok(result)
}

fn model(document: Document) -> Result<SearchIndexModel, String> {
    bson::deserialize_from_document(document).map_err(|e| format!("search index model: {e}"))
}

/// `aggregationOptions`: every option of `aggregate`.
fn aggregate_options(options: &Document) -> Result<Option<AggregateOptions>, String> {
    let mut args = Args::new("listSearchIndexes.aggregationOptions", Some(options));
    let parsed = super::crud_options::aggregate(&mut args)?;
    args.finish()?;
    Ok(Some(parsed))
}
