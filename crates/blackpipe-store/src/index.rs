//! Secondary indexes. Only uniqueness is enforced (queries always scan, apart from the `_id`
//! fast path), but every index is kept so that `listIndexes` reports what was created. An index
//! with a collation holds its strings' comparison keys, so a unique one refuses two strings the
//! collation calls equal.

use std::collections::{BTreeSet, HashMap};

use bson::{Bson, Document};

use super::collation::Collation;
use super::errors::{CommandError, StoreResult, format_document};
use super::key::encode_compound_key;
use super::path::{Leaf, collect_leaves, split_path};
use super::query::Filter;
use super::value_order::{Number, compare_documents};
use crate::code;

/// One secondary index and, if unique, its key table.
#[derive(Debug, Clone)]
pub(crate) struct SecondaryIndex {
    pub(crate) name: String,
    pub(crate) key: Document,
    /// The specification as `listIndexes` reports it.
    pub(crate) spec: Document,
    pub(crate) unique: bool,
    sparse: bool,
    partial: Option<Filter>,
    collation: Option<Collation>,
    fields: Vec<(String, Vec<String>)>,
    /// Encoded key -> record id, for unique indexes only.
    entries: HashMap<Vec<u8>, u64>,
    /// Encoded key -> every record holding it, for a `prepareUnique` index only: it refuses
    /// new duplicates but may still hold old ones, which `collMod` reports before making it
    /// unique.
    prepared: Option<HashMap<Vec<u8>, BTreeSet<u64>>>,
}

/// One key an index holds for a document, with the readable form used in duplicate key errors.
pub(crate) struct IndexKey {
    pub(crate) encoded: Vec<u8>,
    pub(crate) value: Document,
}

impl SecondaryIndex {
    /// Validates an index specification from `createIndexes`.
    pub(crate) fn from_spec(spec: &Document) -> StoreResult<SecondaryIndex> {
        let failure = |reason: String| {
            CommandError::new(
                code::CANNOT_CREATE_INDEX,
                format!(
                    "Error in specification {} :: caused by :: {reason}",
                    format_document(spec)
                ),
            )
        };
        let key = match spec.get("key") {
            Some(Bson::Document(key)) if !key.is_empty() => key.clone(),
            Some(Bson::Document(_)) => {
                return Err(failure("Index keys cannot be empty.".to_owned()));
            }
            _ => {
                return Err(failure(
                    "The 'key' field is a required property of an index specification".to_owned(),
                ));
            }
        };
        let name = match spec.get("name") {
            Some(Bson::String(name)) if !name.is_empty() => name.clone(),
            _ => {
                return Err(CommandError::failed_to_parse(format!(
                    "Error in specification {} :: caused by :: The 'name' field is a required property of an index specification",
                    format_document(spec)
                )));
            }
        };
        for (field, direction) in &key {
            let valid = match direction {
                Bson::String(kind) => {
                    matches!(kind.as_str(), "hashed" | "text" | "2dsphere" | "2d")
                }
                other => Number::of(other).is_some_and(|number| number.as_f64() != 0.0),
            };
            if !valid || field.is_empty() {
                return Err(failure(format!(
                    "Values in the index key pattern can't be 0 or an unknown type: {field}"
                )));
            }
        }
        let flag = |name: &str| {
            matches!(spec.get(name), Some(Bson::Boolean(true)))
                || spec
                    .get(name)
                    .and_then(Number::of)
                    .is_some_and(|number| number.as_f64() != 0.0)
        };
        let collation = index_collation(spec)?;
        let partial = match spec.get("partialFilterExpression") {
            Some(Bson::Document(filter)) => {
                Some(Filter::parse(filter)?.with_collation(collation.as_ref()))
            }
            Some(_) => {
                return Err(failure(
                    "partialFilterExpression must be an object".to_owned(),
                ));
            }
            None => None,
        };
        let mut listed = Document::new();
        listed.insert("v", 2);
        listed.insert("key", key.clone());
        listed.insert("name", name.clone());
        for (option, value) in spec {
            match option.as_str() {
                "key" | "name" | "v" | "ns" => {}
                // Listed resolved, and not at all when simple.
                "collation" => {
                    if let Some(collation) = &collation {
                        listed.insert("collation", collation.spec().clone());
                    }
                }
                _ => {
                    listed.insert(option.clone(), value.clone());
                }
            }
        }
        if key.values().any(|kind| kind.as_str() == Some("text")) {
            list_as_text_index(&key, &mut listed);
        }
        let fields = key
            .keys()
            .map(|field| (field.clone(), split_path(field)))
            .collect();
        Ok(SecondaryIndex {
            name,
            unique: flag("unique"),
            sparse: flag("sparse"),
            key,
            spec: listed,
            partial,
            collation,
            fields,
            entries: HashMap::new(),
            prepared: None,
        })
    }

    /// The order a scan of the index returns documents in (its key pattern under its
    /// collation); `None` for an index with a non-numeric key (hashed, text, geo), whose order
    /// blackpipe does not model.
    pub(crate) fn scan_order(&self) -> Option<crate::sort::SortSpec> {
        let order = crate::sort::SortSpec::parse(&self.key).ok()?;
        Some(order.with_collation(self.collation.as_ref()))
    }

    /// Whether the index holds an entry for `document` (a sparse index leaves out documents
    /// without its fields, a partial index those outside its filter).
    pub(crate) fn holds(&self, document: &Document) -> bool {
        !self.keys_for(document).is_empty()
    }

    /// Whether the index is hidden from the query planner (`hidden: true` in its specification).
    pub(crate) fn is_hidden(&self) -> bool {
        matches!(self.spec.get("hidden"), Some(Bson::Boolean(true)))
    }

    /// Hides or unhides the index; as mongod lists it, an unhidden index has no `hidden` field.
    pub(crate) fn set_hidden(&mut self, hidden: bool) {
        if hidden {
            self.spec.insert("hidden", true);
        } else {
            self.spec.remove("hidden");
        }
    }

    /// Whether two specifications describe the same index (same key and uniqueness options).
    pub(crate) fn same_definition(&self, other: &SecondaryIndex) -> bool {
        same_key_pattern(&self.key, &other.key)
            && self.unique == other.unique
            && self.sparse == other.sparse
            && self.collation == other.collation
    }

    /// The distinct keys this index holds for a document (several for array values); empty if
    /// the document is not indexed (sparse with all fields missing, or outside the partial filter).
    pub(crate) fn keys_for(&self, document: &Document) -> Vec<IndexKey> {
        if self
            .partial
            .as_ref()
            .is_some_and(|filter| !filter.matches(document))
        {
            return Vec::new();
        }
        let mut per_field: Vec<Vec<Bson>> = Vec::with_capacity(self.fields.len());
        let mut any_present = false;
        for (_, parts) in &self.fields {
            let mut leaves = Vec::new();
            collect_leaves(document, parts, &mut leaves);
            let mut values = Vec::new();
            for leaf in leaves {
                match leaf {
                    Leaf::Missing => values.push(Bson::Null),
                    Leaf::Present(Bson::Array(items)) if items.is_empty() => {
                        any_present = true;
                        values.push(Bson::Undefined);
                    }
                    Leaf::Present(Bson::Array(items)) => {
                        any_present = true;
                        values.extend(items.iter().cloned());
                    }
                    Leaf::Present(value) => {
                        any_present = true;
                        values.push(value.clone());
                    }
                }
            }
            per_field.push(values);
        }
        if self.sparse && !any_present {
            return Vec::new();
        }
        let mut combinations: Vec<Vec<Bson>> = vec![Vec::new()];
        for values in per_field {
            combinations = combinations
                .into_iter()
                .flat_map(|prefix| {
                    values.iter().map(move |value| {
                        let mut next = prefix.clone();
                        next.push(value.clone());
                        next
                    })
                })
                .collect();
        }
        let mut keys: Vec<IndexKey> = Vec::with_capacity(combinations.len());
        for combination in combinations {
            let encoded = match &self.collation {
                Some(collation) => {
                    let folded: Vec<Bson> = combination
                        .iter()
                        .map(|value| collation.fold(value).into_owned())
                        .collect();
                    encode_compound_key(&folded)
                }
                None => encode_compound_key(&combination),
            };
            if keys.iter().any(|key| key.encoded == encoded) {
                continue;
            }
            let mut value = Document::new();
            for ((field, _), item) in self.fields.iter().zip(combination) {
                // mongod shows a collated string by its comparison key.
                let shown = match (&self.collation, item) {
                    (Some(collation), Bson::String(text)) => Bson::String(collation.key_hex(&text)),
                    (_, item) => item,
                };
                value.insert(field.clone(), shown);
            }
            keys.push(IndexKey { encoded, value });
        }
        keys
    }

    /// The first key that another record already holds, if this unique index would be violated.
    /// A `prepareUnique` index refuses a key another record holds unless this record already
    /// held it (old duplicates stay).
    pub(crate) fn conflict<'k>(&self, keys: &'k [IndexKey], record: u64) -> Option<&'k IndexKey> {
        if let Some(prepared) = &self.prepared {
            return keys.iter().find(|key| {
                prepared
                    .get(&key.encoded)
                    .is_some_and(|owners| !owners.contains(&record))
            });
        }
        if !self.unique {
            return None;
        }
        keys.iter().find(|key| {
            self.entries
                .get(&key.encoded)
                .is_some_and(|owner| *owner != record)
        })
    }

    pub(crate) fn add(&mut self, keys: Vec<IndexKey>, record: u64) {
        if let Some(prepared) = &mut self.prepared {
            for key in &keys {
                prepared
                    .entry(key.encoded.clone())
                    .or_default()
                    .insert(record);
            }
        }
        if self.unique {
            for key in keys {
                self.entries.insert(key.encoded, record);
            }
        }
    }

    pub(crate) fn remove(&mut self, keys: &[IndexKey], record: u64) {
        if let Some(prepared) = &mut self.prepared {
            for key in keys {
                if let Some(owners) = prepared.get_mut(&key.encoded) {
                    owners.remove(&record);
                    if owners.is_empty() {
                        prepared.remove(&key.encoded);
                    }
                }
            }
        }
        if self.unique {
            for key in keys {
                if self.entries.get(&key.encoded) == Some(&record) {
                    self.entries.remove(&key.encoded);
                }
            }
        }
    }

    /// Whether the index refuses new duplicate keys without being unique yet.
    pub(crate) fn is_prepared_unique(&self) -> bool {
        self.prepared.is_some()
    }

    /// Sets or clears `prepareUnique` over the collection's current `documents` (record id,
    /// document); a unique index is already unique and does not change.
    pub(crate) fn set_prepare_unique<'d>(
        &mut self,
        on: bool,
        documents: impl Iterator<Item = (u64, &'d Document)>,
    ) {
        if self.unique {
            return;
        }
        self.prepared = on.then(|| {
            let mut prepared: HashMap<Vec<u8>, BTreeSet<u64>> = HashMap::new();
            for (record, document) in documents {
                for key in self.keys_for(document) {
                    prepared.entry(key.encoded).or_default().insert(record);
                }
            }
            prepared
        });
        if on {
            self.spec.insert("prepareUnique", true);
        } else {
            self.spec.remove("prepareUnique");
        }
    }

    /// Makes a `prepareUnique` index unique.
    ///
    /// # Errors
    /// The record ids of each key held by several records, when there are any (the index is
    /// left unchanged).
    pub(crate) fn make_unique(&mut self) -> Result<(), Vec<Vec<u64>>> {
        let Some(prepared) = &self.prepared else {
            return Ok(());
        };
        let duplicates: Vec<Vec<u64>> = prepared
            .values()
            .filter(|owners| owners.len() > 1)
            .map(|owners| owners.iter().copied().collect())
            .collect();
        if !duplicates.is_empty() {
            return Err(duplicates);
        }
        self.entries = prepared
            .iter()
            .filter_map(|(key, owners)| owners.first().map(|owner| (key.clone(), *owner)))
            .collect();
        self.prepared = None;
        self.unique = true;
        self.spec.remove("prepareUnique");
        self.spec.insert("unique", true);
        Ok(())
    }
}

/// Key patterns are equal when they list the same fields in the same order with equal directions.
/// A text index as mongod lists it: the text fields become `_fts: "text", _ftsx: 1` in the key
/// (other fields keep their places), with `weights` (1 for a field without one),
/// `default_language`, `language_override` and `textIndexVersion` filled in. blackpipe keeps
/// no text index entries: `$text` is refused (see FIDELITY.md).
fn list_as_text_index(key: &Document, listed: &mut Document) {
    let mut weights = match listed.get("weights") {
        Some(Bson::Document(weights)) => weights.clone(),
        _ => Document::new(),
    };
    let mut listed_key = Document::new();
    for (field, kind) in key {
        if kind.as_str() == Some("text") {
            if !listed_key.contains_key("_fts") {
                listed_key.insert("_fts", "text");
                listed_key.insert("_ftsx", 1);
            }
            if !weights.contains_key(field) {
                weights.insert(field.clone(), 1);
            }
        } else {
            listed_key.insert(field.clone(), kind.clone());
        }
    }
    listed.insert("key", listed_key);
    listed.insert("weights", weights);
    for (option, default) in [
        ("default_language", Bson::String("english".to_owned())),
        ("language_override", Bson::String("language".to_owned())),
        ("textIndexVersion", Bson::Int32(3)),
    ] {
        if !listed.contains_key(option) {
            listed.insert(option, default);
        }
    }
}

/// The index's `collation`, as mongod reads it from an index specification.
fn index_collation(spec: &Document) -> StoreResult<Option<Collation>> {
    if matches!(spec.get("collation"), Some(Bson::Document(collation)) if collation.is_empty()) {
        return Err(CommandError::bad_value(format!(
            "Error in specification {} :: caused by :: The field 'collation' cannot be an empty object.",
            format_document(spec)
        )));
    }
    crate::collation::of(spec).map_err(|error| {
        CommandError::new(
            error.code,
            format!(
                "failed to add collation information to index spec for index creation: {} :: caused by :: {}",
                format_document(spec),
                error.message
            ),
        )
    })
}

pub(crate) fn same_key_pattern(left: &Document, right: &Document) -> bool {
    compare_documents(left, right) == std::cmp::Ordering::Equal
}
