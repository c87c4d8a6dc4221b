//! Sort specifications (`{a: 1, b: -1}`) and sort keys with MongoDB's array semantics: an
//! ascending sort uses an array's smallest element, a descending sort its largest. Under a
//! collation, strings sort by their comparison keys.

use std::borrow::Cow;
use std::cmp::Ordering;

use bson::{Bson, Document};

use super::collation::Collation;
use super::errors::{CommandError, StoreResult};
use super::path::{Leaf, collect_leaves, split_path};
use super::value_order::{Number, compare_values};
use crate::code;

/// A parsed sort specification.
#[derive(Debug, Clone)]
pub(crate) struct SortSpec {
    keys: Vec<(Vec<String>, bool)>,
    collation: Option<Collation>,
}

impl SortSpec {
    /// Parses a sort document; an empty document sorts nothing.
    pub(crate) fn parse(spec: &Document) -> StoreResult<SortSpec> {
        let mut keys = Vec::with_capacity(spec.len());
        for (path, direction) in spec {
            if path.is_empty() || path.split('.').any(str::is_empty) {
                return Err(CommandError::new(
                    code::EMPTY_FIELD_PATH,
                    "FieldPath cannot be constructed with empty string",
                ));
            }
            let ascending = match sort_direction(direction) {
                Some(ascending) => ascending,
                None => {
                    if matches!(direction, Bson::Document(meta) if meta.contains_key("$meta")) {
                        return Err(CommandError::bad_value(
                            "blackpipe does not support $meta sort keys",
                        ));
                    }
                    return Err(CommandError::new(
                        code::SORT_BAD_DIRECTION,
                        "$sort key ordering must be 1 (for ascending) or -1 (for descending)",
                    ));
                }
            };
            keys.push((split_path(path), ascending));
        }
        Ok(SortSpec {
            keys,
            collation: None,
        })
    }

    /// The specification sorting strings under `collation`.
    pub(crate) fn with_collation(mut self, collation: Option<&Collation>) -> SortSpec {
        self.collation = collation.cloned();
        self
    }

    /// The keys: each path and whether it sorts ascending.
    pub(crate) fn keys(&self) -> &[(Vec<String>, bool)] {
        &self.keys
    }

    /// Whether the specification sorts nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Sorts items stably by the documents `document_of` gives for them.
    /// Items without a document (`None`) sort as an empty document.
    pub(crate) fn sort<T>(
        &self,
        items: Vec<T>,
        document_of: impl Fn(&T) -> Option<&Document>,
    ) -> Vec<T> {
        if self.keys.is_empty() {
            return items;
        }
        let empty = Document::new();
        let mut keyed: Vec<(Vec<Bson>, T)> = items
            .into_iter()
            .map(|item| {
                let key = self.sort_key(document_of(&item).unwrap_or(&empty));
                (key, item)
            })
            .collect();
        keyed.sort_by(|(left, _), (right, _)| self.compare_keys(left, right));
        keyed.into_iter().map(|(_, item)| item).collect()
    }

    /// Compares two keys [`SortSpec::sort_key`] made (used by `$top`/`$bottom` and windows).
    pub(crate) fn compare_keys(&self, left: &[Bson], right: &[Bson]) -> Ordering {
        for ((left, right), (_, ascending)) in left.iter().zip(right).zip(&self.keys) {
            let order = compare_values(left, right);
            let order = if *ascending { order } else { order.reverse() };
            if order != Ordering::Equal {
                return order;
            }
        }
        Ordering::Equal
    }

    /// The values `document` sorts by, one per key (used by `$top`/`$bottom` and windows).
    pub(crate) fn sort_key(&self, document: &Document) -> Vec<Bson> {
        self.keys
            .iter()
            .map(|(parts, ascending)| {
                sort_key_for_path(document, parts, *ascending, self.collation.as_ref())
            })
            .collect()
    }
}

/// `Some(true)` for 1, `Some(false)` for -1 (any numeric type), `None` otherwise.
pub(crate) fn sort_direction(value: &Bson) -> Option<bool> {
    let number = Number::of(value)?.as_f64();
    if number == 1.0 {
        Some(true)
    } else if number == -1.0 {
        Some(false)
    } else {
        None
    }
}

/// The value a document sorts by on one path (already folded under a collation).
fn sort_key_for_path(
    document: &Document,
    parts: &[String],
    ascending: bool,
    collation: Option<&Collation>,
) -> Bson {
    const NULL: Bson = Bson::Null;
    // An empty array sorts below null, like mongod's `undefined` sort key.
    const UNDEFINED: Bson = Bson::Undefined;
    let mut leaves = Vec::new();
    collect_leaves(document, parts, &mut leaves);
    let mut best: Option<Cow<'_, Bson>> = None;
    for leaf in &leaves {
        match leaf {
            Leaf::Missing => consider(&mut best, Cow::Borrowed(&NULL), ascending),
            Leaf::Present(Bson::Array(items)) if items.is_empty() => {
                consider(&mut best, Cow::Borrowed(&UNDEFINED), ascending);
            }
            Leaf::Present(Bson::Array(items)) => items
                .iter()
                .for_each(|item| consider(&mut best, fold(collation, item), ascending)),
            Leaf::Present(value) => consider(&mut best, fold(collation, value), ascending),
        }
    }
    best.map_or(Bson::Null, Cow::into_owned)
}

fn fold<'v>(collation: Option<&Collation>, value: &'v Bson) -> Cow<'v, Bson> {
    collation.map_or(Cow::Borrowed(value), |collation| collation.fold(value))
}

fn consider<'a>(best: &mut Option<Cow<'a, Bson>>, candidate: Cow<'a, Bson>, ascending: bool) {
    let better = best.as_ref().is_none_or(|current| {
        let order = compare_values(&candidate, current);
        if ascending {
            order == Ordering::Less
        } else {
            order == Ordering::Greater
        }
    });
    if better {
        *best = Some(candidate);
    }
}
