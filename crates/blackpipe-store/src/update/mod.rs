//! Update documents: modifier updates (`$set`, `$inc`, ...), replacements and pipeline updates,
//! parsed once and applied to each matching document.

mod apply;
mod describe;
mod parse;
mod positional;

pub(crate) use positional::ArrayFilters;

use bson::{Bson, DateTime, Document};

use super::aggregate::Pipeline;
use super::errors::{CommandError, StoreResult, format_value};
use super::query::Filter;
use super::value_order::values_equal;
use crate::code;

/// A parsed update (`u` of an update statement, `update` of findAndModify).
#[derive(Debug, Clone)]
pub(crate) enum Update {
    Replacement(Document),
    /// Modifiers, with the statement's `arrayFilters` for their `$[<identifier>]` parts.
    Modifiers(Vec<Modifier>, ArrayFilters),
    Pipeline(Pipeline),
}

/// One `operator: {path: argument}` pair.
#[derive(Debug, Clone)]
pub(crate) struct Modifier {
    path: String,
    parts: Vec<String>,
    action: Action,
}

#[derive(Debug, Clone)]
enum Action {
    Set(Bson),
    SetOnInsert(Bson),
    Unset,
    Inc(Bson),
    Mul(Bson),
    Min(Bson),
    Max(Bson),
    Push(PushSpec),
    AddToSet(Vec<Bson>),
    Pull(PullCondition),
    PullAll(Vec<Bson>),
    Pop { first: bool },
    Rename { to: String, to_parts: Vec<String> },
    CurrentDate { timestamp: bool },
}

#[derive(Debug, Clone)]
struct PushSpec {
    values: Vec<Bson>,
    position: Option<i64>,
    slice: Option<i64>,
    sort: Option<PushSort>,
}

#[derive(Debug, Clone)]
enum PushSort {
    Values { ascending: bool },
    Fields(super::sort::SortSpec),
}

#[derive(Debug, Clone)]
enum PullCondition {
    Equals(Bson),
    /// Operators applied to each element's value (`{$gte: 6}`).
    ValuePredicate(Box<Filter>),
    /// A filter applied to each document element (`{b: 1}`).
    DocumentFilter(Box<Filter>),
}

/// What applying an update needs besides the document.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ApplyContext {
    /// True when the update builds a document for an upsert (`$setOnInsert` applies).
    pub(crate) is_insert: bool,
    /// The wall-clock time for `$currentDate`.
    pub(crate) now: DateTime,
    /// The array position the statement's query matched in this document (see
    /// `Filter::matched_position`), which a positional `$` path component stands for.
    pub(crate) matched_position: Option<usize>,
}

impl Update {
    /// Parses the `u`/`update` value of a statement.
    pub(crate) fn parse(update: &Bson) -> StoreResult<Update> {
        match update {
            Bson::Document(document) => parse::parse_document(document),
            Bson::Array(stages) => Ok(Update::Pipeline(Pipeline::parse_for_update(stages)?)),
            other => Err(CommandError::failed_to_parse(format!(
                "Update argument must be either an object or an array, found {}",
                super::errors::type_name(other)
            ))),
        }
    }

    /// Parses the `u`/`update` value of a statement with its `arrayFilters`, which only
    /// modifier updates take, and which must match the identifiers the paths use.
    pub(crate) fn parse_with_array_filters(
        update: &Bson,
        array_filters: Option<&Bson>,
    ) -> StoreResult<Update> {
        let parsed = Update::parse(update)?;
        let filters = ArrayFilters::parse(array_filters)?;
        match (parsed, update) {
            (Update::Modifiers(modifiers, _), Bson::Document(document)) => {
                filters.check_against(&modifiers, document)?;
                Ok(Update::Modifiers(modifiers, filters))
            }
            (Update::Pipeline(_), _) if !filters.is_empty() => Err(CommandError::failed_to_parse(
                "arrayFilters may not be specified for pipeline-style updates",
            )),
            (Update::Replacement(_), _) if !filters.is_empty() => {
                Err(CommandError::failed_to_parse(
                    "Cannot use array filters with a replacement-style update",
                ))
            }
            (parsed, _) => Ok(parsed),
        }
    }

    /// Whether a modifier path holds the positional `$`, which needs the array position the
    /// query matched (`Filter::matched_position`) in each document it updates.
    pub(crate) fn uses_matched_position(&self) -> bool {
        matches!(self, Update::Modifiers(modifiers, _)
            if modifiers.iter().any(|modifier| modifier.parts.iter().any(|part| part == "$")))
    }

    /// Whether this is a replacement document rather than modifiers or a pipeline.
    pub(crate) fn is_replacement(&self) -> bool {
        matches!(self, Update::Replacement(_))
    }

    /// Computes the updated version of `original` (whose `_id` must not change).
    pub(crate) fn apply(
        &self,
        original: &Document,
        context: ApplyContext,
    ) -> StoreResult<Document> {
        let original_id = original.get("_id");
        let updated = match self {
            Update::Replacement(replacement) => {
                if let (Some(old), Some(new)) = (original_id, replacement.get("_id")) {
                    if !values_equal(old, new) {
                        return Err(CommandError::new(
                            code::IMMUTABLE_FIELD,
                            format!(
                                "After applying the update, the (immutable) field '_id' was found to have been altered to _id: {}",
                                format_value(new)
                            ),
                        ));
                    }
                }
                with_id_first(replacement.clone(), original_id)
            }
            Update::Modifiers(modifiers, filters) => {
                let mut updated = original.clone();
                let modifiers = positional::resolve_dollar(modifiers, context.matched_position)?;
                let modifiers = positional::expand(original, &modifiers, filters)?;
                apply::apply_modifiers(&mut updated, &modifiers, context)?;
                updated
            }
            Update::Pipeline(pipeline) => {
                let updated = pipeline.apply_to_one(original.clone())?;
                match (original_id, updated.get("_id")) {
                    (Some(_), None) => with_id_first(updated, original_id),
                    _ => updated,
                }
            }
        };
        if let Some(old) = original_id {
            let unchanged = updated.get("_id").is_some_and(|new| values_equal(old, new));
            if !unchanged {
                return Err(CommandError::new(
                    code::IMMUTABLE_FIELD,
                    "Performing an update on the path '_id' would modify the immutable field '_id'",
                ));
            }
        }
        Ok(updated)
    }

    /// Builds the document an upsert inserts: the query's equality fields, then the update.
    pub(crate) fn upsert_document(
        &self,
        query: &Filter,
        context: ApplyContext,
    ) -> StoreResult<Document> {
        let mut seed = Document::new();
        if !self.is_replacement() {
            for (parts, value) in query.equality_fields() {
                super::path::set_path_creating(&mut seed, &parts, value);
            }
        }
        let query_id = query
            .equality_fields()
            .into_iter()
            .find(|(parts, _)| parts.len() == 1 && parts[0] == "_id");
        let seed_id = query_id.map(|(_, value)| value);
        let document = match self {
            Update::Replacement(replacement) => {
                if let (Some(old), Some(new)) = (&seed_id, replacement.get("_id")) {
                    if !values_equal(old, new) {
                        return Err(CommandError::new(
                            code::IMMUTABLE_FIELD,
                            format!(
                                "After applying the update, the (immutable) field '_id' was found to have been altered to _id: {}",
                                format_value(new)
                            ),
                        ));
                    }
                }
                with_id_first(replacement.clone(), seed_id.as_ref())
            }
            _ => {
                let seed = with_id_first(seed, seed_id.as_ref());
                self.apply(&seed, context)?
            }
        };
        Ok(document)
    }
}

/// Puts `_id` first (mongod always stores it as the first field).
pub(crate) fn with_id_first(mut document: Document, id: Option<&Bson>) -> Document {
    if document.keys().next().is_some_and(|key| key == "_id") {
        return document;
    }
    let id = document.remove("_id").or_else(|| id.cloned());
    match id {
        Some(id) => {
            let mut out = Document::new();
            out.insert("_id", id);
            out.extend(document);
            out
        }
        None => document,
    }
}
