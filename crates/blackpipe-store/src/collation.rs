//! Collation basics: what blackpipe models of a command's (or statement's) `collation`.
//!
//! Modelled: a collation with `strength` 1 or 2 compares strings case-insensitively (both
//! sides lowercased, Unicode-aware) in query equality, comparisons, `$in`, and `distinct`'s
//! de-duplication. Not modelled: accent folding at strength 1, locale-specific orders, sort
//! order under a collation (sorts stay binary), `numericOrdering`, `alternate`, and
//! collection or index default collations. Strengths 3 to 5 and locale `"simple"` compare
//! strings binary-equal, as they do for equality under ICU at those strengths in practice
//! for the ASCII text tests use.

use std::borrow::Cow;

use bson::{Bson, Document};

use super::errors::{CommandError, StoreResult, type_name};

/// How strings compare under a command's collation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Folding {
    /// Case differences do not count (strength 1 or 2).
    CaseInsensitive,
}

/// Reads the `collation` field of `spec` (a command or a statement): `None` when absent or
/// when strings compare binary.
///
/// # Errors
/// TypeMismatch when it is not a document, FailedToParse without a string `locale`, BadValue
/// for a strength outside 1..=5 or an unknown field.
pub(crate) fn of(spec: &Document) -> StoreResult<Option<Folding>> {
    let collation = match spec.get("collation") {
        None => return Ok(None),
        Some(Bson::Document(collation)) => collation,
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'collation' is the wrong type '{}', expected type 'object'",
                type_name(other)
            )));
        }
    };
    let Some(Bson::String(locale)) = collation.get("locale") else {
        return Err(CommandError::failed_to_parse(
            "BSON field 'locale' is missing but a required field",
        ));
    };
    let mut strength = 3;
    for (key, value) in collation {
        match key.as_str() {
            "strength" => {
                strength = match value {
                    Bson::Int32(n) => i64::from(*n),
                    Bson::Int64(n) => *n,
                    Bson::Double(n) if n.fract() == 0.0 => format!("{n:.0}").parse().unwrap_or(0),
                    _ => 0,
                };
                if !(1..=5).contains(&strength) {
                    return Err(CommandError::bad_value(
                        "collation strength must be an integer from 1 to 5",
                    ));
                }
            }
            "locale" | "caseLevel" | "caseFirst" | "numericOrdering" | "alternate"
            | "maxVariable" | "normalization" | "backwards" | "version" => {}
            other => {
                return Err(CommandError::bad_value(format!(
                    "unknown collation field: {other}"
                )));
            }
        }
    }
    let case_level = collation.get("caseLevel") == Some(&Bson::Boolean(true));
    if locale == "simple" || strength >= 3 || case_level {
        return Ok(None);
    }
    Ok(Some(Folding::CaseInsensitive))
}

impl Folding {
    /// The value as it compares under the collation: strings folded, anything else as is.
    pub(crate) fn fold<'v>(self, value: &'v Bson) -> Cow<'v, Bson> {
        match (self, value) {
            (Folding::CaseInsensitive, Bson::String(text)) => {
                Cow::Owned(Bson::String(text.to_lowercase()))
            }
            _ => Cow::Borrowed(value),
        }
    }
}
