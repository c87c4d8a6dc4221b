//! Collations: a command's, a statement's, an index's or a collection's `collation`, compared
//! as mongod compares them, with ICU (here the ICU4X collator and its CLDR data).
//!
//! As mongod does, strings are compared through their ICU sort keys ("comparison keys"): a
//! collation folds every string (and symbol) inside a value into a string whose binary order is
//! the collation's order, and the ordinary binary comparisons then do the rest. A folded string
//! holds one character per sort key byte (U+0000 to U+00FF, whose UTF-8 order is the bytes'
//! order); it is only ever compared with other folded values and is never returned to a client.

mod locales;
mod spec;

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use bson::{Bson, Document};
use icu_collator::CollatorBorrowed;

use super::errors::{CommandError, StoreResult, type_name};

/// A collation other than the simple (binary) one: cheap to clone.
#[derive(Clone)]
pub(crate) struct Collation(Arc<Resolved>);

struct Resolved {
    /// The collation with every field filled in, as `listIndexes` and `listCollections` show it.
    spec: Document,
    collator: CollatorBorrowed<'static>,
}

impl fmt::Debug for Collation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Collation").field(&self.0.spec).finish()
    }
}

impl PartialEq for Collation {
    fn eq(&self, other: &Collation) -> bool {
        self.0.spec == other.0.spec
    }
}

/// Reads the `collation` field of `spec` (a command, a statement or an index specification):
/// `None` when absent, empty (mongod's CRUD commands read `collation: {}` as none given) or
/// the simple collation.
///
/// # Errors
/// TypeMismatch when it is not a document; otherwise as [`parse`].
pub(crate) fn of(spec: &Document) -> StoreResult<Option<Collation>> {
    match spec.get("collation") {
        None => Ok(None),
        Some(Bson::Document(collation)) if collation.is_empty() => Ok(None),
        Some(Bson::Document(collation)) => parse(collation),
        Some(other) => Err(CommandError::type_mismatch(format!(
            "BSON field 'collation' is the wrong type '{}', expected type 'object'",
            type_name(other)
        ))),
    }
}

/// `create`'s `collation` (a collection's or a view's default), which unlike a CRUD command's
/// may not be empty.
///
/// # Errors
/// 40414 for an empty document; otherwise as [`of`].
pub(crate) fn of_create(command: &Document) -> StoreResult<Option<Collation>> {
    if matches!(command.get("collation"), Some(Bson::Document(collation)) if collation.is_empty()) {
        return Err(CommandError::new(
            crate::code::IDL_MISSING_FIELD,
            "BSON field 'create.collation.locale' is missing but a required field",
        ));
    }
    of(command)
}

/// Parses a collation document: `None` for `{locale: "simple"}`.
///
/// # Errors
/// mongod's: 40414 without `locale`, 40415 for an unknown field, TypeMismatch for a field of
/// the wrong type, 51024 for a strength outside 1 to 5, BadValue for a locale or an enumerated
/// value mongod does not know; and BadValue for what blackpipe cannot model (a locale without
/// ICU4X data, `backwards` against the locale's default).
pub(crate) fn parse(collation: &Document) -> StoreResult<Option<Collation>> {
    Ok(spec::resolve(collation)?
        .map(|(spec, collator)| Collation(Arc::new(Resolved { spec, collator }))))
}

impl Collation {
    /// The collation with every field filled in.
    pub(crate) fn spec(&self) -> &Document {
        &self.0.spec
    }

    /// The value as it compares under the collation: every string and symbol in it (at any
    /// depth) replaced by its comparison key; anything else as is.
    pub(crate) fn fold<'v>(&self, value: &'v Bson) -> Cow<'v, Bson> {
        if has_strings(value) {
            Cow::Owned(self.fold_owned(value))
        } else {
            Cow::Borrowed(value)
        }
    }

    /// The comparison key of one string, as mongod shows it in duplicate key errors
    /// (`CollationKey(0x...)`).
    pub(crate) fn key_hex(&self, text: &str) -> String {
        let mut hex = String::from("CollationKey(0x");
        for byte in self.sort_key(text) {
            hex.push_str(&format!("{byte:02x}"));
        }
        hex.push(')');
        hex
    }

    fn sort_key(&self, text: &str) -> Vec<u8> {
        let mut key = Vec::with_capacity(text.len() * 2);
        let Ok(()) = self.0.collator.write_sort_key_to(text, &mut key);
        key
    }

    fn folded_string(&self, text: &str) -> String {
        self.sort_key(text).into_iter().map(char::from).collect()
    }

    fn fold_owned(&self, value: &Bson) -> Bson {
        match value {
            Bson::String(text) => Bson::String(self.folded_string(text)),
            Bson::Symbol(text) => Bson::Symbol(self.folded_string(text)),
            Bson::Array(items) => {
                Bson::Array(items.iter().map(|item| self.fold_owned(item)).collect())
            }
            Bson::Document(document) => Bson::Document(self.fold_document(document)),
            other => other.clone(),
        }
    }

    /// The document with every string value folded (field names are never collated).
    pub(crate) fn fold_document(&self, document: &Document) -> Document {
        document
            .iter()
            .map(|(field, value)| (field.clone(), self.fold_owned(value)))
            .collect()
    }
}

fn has_strings(value: &Bson) -> bool {
    match value {
        Bson::String(_) | Bson::Symbol(_) => true,
        Bson::Array(items) => items.iter().any(has_strings),
        Bson::Document(document) => document.values().any(has_strings),
        _ => false,
    }
}

#[cfg(test)]
mod tests;
