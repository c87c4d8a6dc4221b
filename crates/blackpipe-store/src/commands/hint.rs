//! `hint` (an index by name or key pattern, or `{$natural: 1 | -1}`), natural order, and the
//! `min`/`max` index bounds of `find`, as mongod's query planner checks them: a hint naming no
//! index of an existing collection fails with BadValue; a collection that does not exist has
//! no plan to choose and answers as an empty one.

use std::cmp::Ordering;
use std::sync::Arc;

use bson::{Bson, Document};

use crate::collection::Collection;
use crate::errors::{CommandError, StoreResult};
use crate::index::same_key_pattern;
use crate::path::{Leaf, collect_leaves, split_path};
use crate::sort::{SortSpec, sort_direction};
use crate::value_order::compare_values;

/// mongod's message for a hint that matches no index.
const NO_SUCH_INDEX: &str = "hint provided does not correspond to an existing index";

/// A hint checked against a collection's indexes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Hint {
    /// A collection scan: forward (`1`) or reverse (`-1`) insertion order.
    Natural { forward: bool },
    /// An existing index, by its key pattern.
    Index(Document),
}

impl Hint {
    /// Whether the hint reads the collection in reverse natural order.
    pub(crate) fn is_reverse_natural(hint: Option<&Hint>) -> bool {
        matches!(hint, Some(Hint::Natural { forward: false }))
    }
}

/// The `hint` of `spec` (a command or a write statement) checked against `collection`: `None`
/// without a hint (or with an empty one, which mongod ignores) and when the collection does not
/// exist.
///
/// # Errors
/// BadValue for a hint naming no index, a malformed `$natural` direction or a hint that is
/// neither a string nor an object.
pub(crate) fn resolve(
    spec: &Document,
    collection: Option<&Collection>,
) -> StoreResult<Option<Hint>> {
    let hint = match spec.get("hint") {
        None | Some(Bson::Null) => return Ok(None),
        Some(Bson::String(name)) if name.is_empty() => return Ok(None),
        Some(Bson::Document(key)) if key.is_empty() => return Ok(None),
        Some(hint) => hint,
    };
    if let Bson::Document(key) = hint {
        if let Some(direction) = key.get("$natural") {
            return natural(key, direction).map(Some);
        }
    }
    let Some(collection) = collection else {
        return Ok(None);
    };
    let specs = collection.index_specs();
    // A hidden index is invisible to the planner, hints included, as in mongod.
    let found = specs
        .iter()
        .filter(|index| !index.get_bool("hidden").unwrap_or(false))
        .find(|index| match hint {
            Bson::String(name) => index.get_str("name").is_ok_and(|own| own == name),
            Bson::Document(key) => index
                .get_document("key")
                .is_ok_and(|own| same_key_pattern(own, key)),
            _ => false,
        });
    match (hint, found) {
        (Bson::String(_) | Bson::Document(_), Some(index)) => Ok(Some(Hint::Index(
            index.get_document("key").cloned().unwrap_or_default(),
        ))),
        (Bson::String(_) | Bson::Document(_), None) => Err(CommandError::bad_value(NO_SUCH_INDEX)),
        _ => Err(CommandError::bad_value(
            "hint must be a string or an object",
        )),
    }
}

/// A find through a hinted index, as mongod's index scan answers it: only the documents the
/// index holds (a sparse or partial index leaves some out), and the order to return them in
/// when the find has no sort of its own (the index's key order).
pub(crate) fn index_scan(
    collection: &Collection,
    key: &Document,
    documents: &mut Vec<Arc<Document>>,
) -> Option<SortSpec> {
    match collection.secondary_index(key) {
        Some(index) => {
            documents.retain(|document| index.holds(document));
            index.scan_order()
        }
        // The `_id` index holds every document.
        None => SortSpec::parse(key).ok(),
    }
}

fn natural(key: &Document, direction: &Bson) -> StoreResult<Hint> {
    match sort_direction(direction) {
        Some(forward) if key.len() == 1 => Ok(Hint::Natural { forward }),
        _ => Err(CommandError::bad_value(
            "$natural hint must be {$natural: 1} or {$natural: -1}",
        )),
    }
}

/// The natural direction a sort asks for with its `$natural` field (`Some(forward)`), and the
/// sort without it: a scan in that direction feeds the (stable) sort by the other fields.
///
/// # Errors
/// BadValue for a `$natural` direction other than 1 or -1.
pub(crate) fn natural_sort(sort: &Document) -> StoreResult<(Option<bool>, Document)> {
    let Some(direction) = sort.get("$natural") else {
        return Ok((None, sort.clone()));
    };
    let Some(forward) = sort_direction(direction) else {
        return Err(CommandError::bad_value(
            "$natural sort cannot be set to a value other than -1 or 1",
        ));
    };
    let mut rest = sort.clone();
    rest.remove("$natural");
    Ok((Some(forward), rest))
}

/// `find`'s `min` (inclusive) and `max` (exclusive) index bounds, over the hinted index.
#[derive(Debug, Clone)]
pub(crate) struct IndexBounds {
    /// The hinted index's fields and directions (`true` ascending).
    fields: Vec<(Vec<String>, bool)>,
    min: Option<Vec<Bson>>,
    max: Option<Vec<Bson>>,
}

/// Code 51173: `min` or `max` without a hint.
const MIN_MAX_WITHOUT_HINT: i32 = 51173;
/// Code 51174: bounds whose fields are not the hinted index's.
const MIN_MAX_INCOMPATIBLE: i32 = 51174;

impl IndexBounds {
    /// Reads `min`/`max` of a find command; `None` when neither is given.
    ///
    /// # Errors
    /// 51173 without a hint; 51174 when the bounds' fields differ from the hinted index's
    /// key pattern (or the hint is `$natural`).
    pub(crate) fn parse(command: &Document, hint: Option<&Hint>) -> StoreResult<Option<Self>> {
        let min = command
            .get_document("min")
            .ok()
            .filter(|min| !min.is_empty());
        let max = command
            .get_document("max")
            .ok()
            .filter(|max| !max.is_empty());
        if min.is_none() && max.is_none() {
            return Ok(None);
        }
        let has_hint = command.get("hint").is_some_and(|hint| match hint {
            Bson::String(name) => !name.is_empty(),
            Bson::Document(key) => !key.is_empty(),
            _ => false,
        });
        if !has_hint {
            return Err(CommandError::new(
                MIN_MAX_WITHOUT_HINT,
                "When using min()/max() a hint of which index to use must be provided",
            ));
        }
        let Some(Hint::Index(key)) = hint else {
            // A hint on a collection that does not exist: there is nothing to bound.
            return match hint {
                None => Ok(None),
                Some(_) => Err(incompatible()),
            };
        };
        let fields: Vec<(Vec<String>, bool)> = key
            .iter()
            .map(|(path, direction)| (split_path(path), sort_direction(direction).unwrap_or(true)))
            .collect();
        let values = |bound: Option<&Document>| -> StoreResult<Option<Vec<Bson>>> {
            let Some(bound) = bound else {
                return Ok(None);
            };
            let same_fields = bound.len() == key.len()
                && bound
                    .keys()
                    .zip(key.keys())
                    .all(|(own, index)| own == index);
            if !same_fields {
                return Err(incompatible());
            }
            Ok(Some(bound.values().cloned().collect()))
        };
        Ok(Some(IndexBounds {
            min: values(min)?,
            max: values(max)?,
            fields,
        }))
    }

    /// Whether a document's key in the hinted index lies in `[min, max)`.
    pub(crate) fn contains(&self, document: &Document) -> bool {
        let key: Vec<Bson> = self
            .fields
            .iter()
            .map(|(parts, _)| first_value(document, parts))
            .collect();
        let at_or_above_min = self
            .min
            .as_ref()
            .is_none_or(|min| self.compare(&key, min) != Ordering::Less);
        let below_max = self
            .max
            .as_ref()
            .is_none_or(|max| self.compare(&key, max) == Ordering::Less);
        at_or_above_min && below_max
    }

    /// Index order: field by field, each in its index direction.
    fn compare(&self, key: &[Bson], bound: &[Bson]) -> Ordering {
        for ((value, limit), (_, ascending)) in key.iter().zip(bound).zip(&self.fields) {
            let order = compare_values(value, limit);
            let order = if *ascending { order } else { order.reverse() };
            if order != Ordering::Equal {
                return order;
            }
        }
        Ordering::Equal
    }
}

fn incompatible() -> CommandError {
    CommandError::new(
        MIN_MAX_INCOMPATIBLE,
        "The index chosen is not compatible with min/max",
    )
}

/// The value an index key takes for a path: the first value found, null when missing.
fn first_value(document: &Document, parts: &[String]) -> Bson {
    let mut leaves = Vec::new();
    collect_leaves(document, parts, &mut leaves);
    leaves
        .into_iter()
        .find_map(|leaf| match leaf {
            Leaf::Present(value) => Some(value.clone()),
            _ => None,
        })
        .unwrap_or(Bson::Null)
}
