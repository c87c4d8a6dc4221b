//! The all-positional (`$[]`) and filtered positional (`$[<identifier>]`) update paths, with the
//! statement's `arrayFilters`.
//!
//! A modifier whose path holds such a part is expanded, per document, into one modifier per
//! array element it selects (every element for `$[]`, those matching the identifier's filter
//! for `$[<identifier>]`), which then applies like any other. The number of expanded paths is
//! at most the number of elements in the document, so it is bounded by the document's size.
//! The plain positional `$` stands for the array position the query matched
//! ([`resolve_dollar`]), resolved before the expansion.

use std::borrow::Cow;

use bson::{Bson, Document};

use super::Modifier;
use crate::errors::{CommandError, StoreResult, format_document};
use crate::query::Filter;

/// The parsed `arrayFilters` of one statement: each identifier with its filter.
#[derive(Debug, Clone, Default)]
pub(crate) struct ArrayFilters(Vec<(String, Filter)>);

impl ArrayFilters {
    /// Parses `arrayFilters` (absent is none).
    ///
    /// # Errors
    /// TypeMismatch when it is not an array of documents, FailedToParse for a filter without
    /// one top-level identifier, or two filters naming the same identifier.
    pub(crate) fn parse(value: Option<&Bson>) -> StoreResult<ArrayFilters> {
        let items = match value {
            None => return Ok(ArrayFilters::default()),
            Some(Bson::Array(items)) => items,
            Some(_) => {
                return Err(CommandError::type_mismatch(
                    "BSON field 'arrayFilters' is the wrong type, expected type 'array'",
                ));
            }
        };
        let mut filters: Vec<(String, Filter)> = Vec::with_capacity(items.len());
        for item in items {
            let Bson::Document(filter) = item else {
                return Err(CommandError::type_mismatch(
                    "Each array filter must be an object",
                ));
            };
            let identifier = identifier_of(filter)?;
            if filters.iter().any(|(existing, _)| *existing == identifier) {
                return Err(CommandError::failed_to_parse(format!(
                    "Found multiple array filters with the same top-level field name {identifier}"
                )));
            }
            filters.push((identifier, Filter::parse(filter)?));
        }
        Ok(ArrayFilters(filters))
    }

    /// Checks that every identifier the modifiers use has a filter and every filter is used.
    ///
    /// # Errors
    /// BadValue for an identifier without a filter, FailedToParse for an unused filter.
    pub(super) fn check_against(
        &self,
        modifiers: &[Modifier],
        update: &Document,
    ) -> StoreResult<()> {
        let mut used = vec![false; self.0.len()];
        for modifier in modifiers {
            for part in &modifier.parts {
                let Some(identifier) = identifier(part).filter(|id| !id.is_empty()) else {
                    continue;
                };
                match self.0.iter().position(|(id, _)| id == identifier) {
                    Some(index) => used[index] = true,
                    None => {
                        return Err(CommandError::bad_value(format!(
                            "No array filter found for identifier '{identifier}' in path '{}'",
                            modifier.path
                        )));
                    }
                }
            }
        }
        if let Some(index) = used.iter().position(|used| !used) {
            return Err(CommandError::failed_to_parse(format!(
                "The array filter for identifier '{}' was not used in the update {}",
                self.0[index].0,
                format_document(update)
            )));
        }
        Ok(())
    }

    /// Whether there are no filters.
    pub(super) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn filter(&self, identifier: &str) -> Option<&Filter> {
        self.0
            .iter()
            .find(|(id, _)| id == identifier)
            .map(|(_, filter)| filter)
    }
}

/// The identifier of a positional part: `Some("")` for `$[]`, `Some("i")` for `$[i]`, `None`
/// for any other part.
pub(super) fn identifier(part: &str) -> Option<&str> {
    part.strip_prefix("$[")?.strip_suffix(']')
}

/// Whether `part` is a valid positional part (`$[]`, or `$[` identifier `]`).
pub(super) fn is_valid_positional(part: &str) -> bool {
    identifier(part).is_some_and(|id| id.is_empty() || is_identifier(id))
}

/// mongod's identifier rule: a lowercase letter, then letters and digits.
fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase()) && chars.all(|c| c.is_ascii_alphanumeric())
}

/// The identifier all of a filter's top-level fields start with.
fn identifier_of(filter: &Document) -> StoreResult<String> {
    let mut found: Option<&str> = None;
    for key in filter.keys() {
        let first = key.split('.').next().unwrap_or_default();
        match found {
            None => found = Some(first),
            Some(existing) if existing == first => {}
            Some(existing) => {
                return Err(CommandError::failed_to_parse(format!(
                    "Error parsing array filter :: caused by :: Expected a single top-level field name, found '{existing}' and '{first}'"
                )));
            }
        }
    }
    match found {
        Some(identifier) if is_identifier(identifier) => Ok(identifier.to_owned()),
        Some(identifier) => Err(CommandError::bad_value(format!(
            "Error parsing array filter :: caused by :: The top-level field name must be an alphanumeric string beginning with a lowercase letter, found '{identifier}'"
        ))),
        None => Err(CommandError::failed_to_parse(
            "Cannot use an expression without a top-level field name in arrayFilters",
        )),
    }
}

/// The modifiers with each positional `$` component replaced by the position the query matched.
///
/// # Errors
/// BadValue when a path has `$` but the query matched no array position (or the update builds
/// an upsert's document).
pub(super) fn resolve_dollar(
    modifiers: &[Modifier],
    matched_position: Option<usize>,
) -> StoreResult<Cow<'_, [Modifier]>> {
    let has_dollar = |m: &Modifier| m.parts.iter().any(|part| part == "$");
    if !modifiers.iter().any(has_dollar) {
        return Ok(Cow::Borrowed(modifiers));
    }
    let Some(position) = matched_position else {
        return Err(CommandError::bad_value(
            "The positional operator did not find the match needed from the query.",
        ));
    };
    let position = position.to_string();
    Ok(Cow::Owned(
        modifiers
            .iter()
            .map(|modifier| {
                if !has_dollar(modifier) {
                    return modifier.clone();
                }
                let parts: Vec<String> = modifier
                    .parts
                    .iter()
                    .map(|part| {
                        if part == "$" {
                            position.clone()
                        } else {
                            part.clone()
                        }
                    })
                    .collect();
                Modifier {
                    path: parts.join("."),
                    parts,
                    action: modifier.action.clone(),
                }
            })
            .collect(),
    ))
}

/// The modifiers with every positional path expanded against `document`.
///
/// # Errors
/// BadValue when a positional part meets a missing or non-array value.
pub(super) fn expand<'m>(
    document: &Document,
    modifiers: &'m [Modifier],
    filters: &ArrayFilters,
) -> StoreResult<Cow<'m, [Modifier]>> {
    let positional = |m: &Modifier| m.parts.iter().any(|p| identifier(p).is_some());
    if !modifiers.iter().any(positional) {
        return Ok(Cow::Borrowed(modifiers));
    }
    let mut out = Vec::with_capacity(modifiers.len());
    for modifier in modifiers {
        if !positional(modifier) {
            out.push(modifier.clone());
            continue;
        }
        let mut paths = Vec::new();
        let mut walker = Walker {
            filters,
            path: &modifier.path,
            done: Vec::with_capacity(modifier.parts.len()),
            out: &mut paths,
        };
        walker.in_document(document, &modifier.parts)?;
        out.extend(paths.into_iter().map(|parts| Modifier {
            path: parts.join("."),
            parts,
            action: modifier.action.clone(),
        }));
    }
    Ok(Cow::Owned(out))
}

/// Collects the concrete paths one positional modifier path selects.
struct Walker<'a> {
    filters: &'a ArrayFilters,
    path: &'a str,
    done: Vec<String>,
    out: &'a mut Vec<Vec<String>>,
}

impl Walker<'_> {
    fn in_document(&mut self, document: &Document, parts: &[String]) -> StoreResult<()> {
        let Some((first, rest)) = parts.split_first() else {
            self.out.push(self.done.clone());
            return Ok(());
        };
        if identifier(first).is_some() {
            return Err(self.not_an_array(&Bson::Document(Document::new())));
        }
        self.step(first, document.get(first), rest)
    }

    fn in_value(&mut self, value: Option<&Bson>, parts: &[String]) -> StoreResult<()> {
        let Some((first, rest)) = parts.split_first() else {
            self.out.push(self.done.clone());
            return Ok(());
        };
        let Some(id) = identifier(first) else {
            let child = match value {
                Some(Bson::Document(document)) => document.get(first),
                Some(Bson::Array(items)) => first.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            return self.step(first, child, rest);
        };
        let items = match value {
            Some(Bson::Array(items)) => items,
            Some(other) => return Err(self.not_an_array(other)),
            None => {
                return Err(CommandError::bad_value(format!(
                    "The path '{}' must exist in the document in order to apply array updates.",
                    self.done.join(".")
                )));
            }
        };
        let filter = match id {
            "" => None,
            id => Some((
                id,
                self.filters.filter(id).ok_or_else(|| {
                    CommandError::bad_value(format!(
                        "No array filter found for identifier '{id}' in path '{}'",
                        self.path
                    ))
                })?,
            )),
        };
        for (index, item) in items.iter().enumerate() {
            if let Some((id, filter)) = filter {
                let mut probe = Document::new();
                probe.insert(id, item.clone());
                if !filter.matches(&probe) {
                    continue;
                }
            }
            self.done.push(index.to_string());
            let walked = self.in_value(Some(item), rest);
            self.done.pop();
            walked?;
        }
        Ok(())
    }

    /// Descends into `first`: a missing value with no positional part left is a path the
    /// modifier creates (or ignores) as usual.
    fn step(&mut self, first: &str, child: Option<&Bson>, rest: &[String]) -> StoreResult<()> {
        self.done.push(first.to_owned());
        let walked = if child.is_none() && !rest.iter().any(|p| identifier(p).is_some()) {
            let mut parts = self.done.clone();
            parts.extend(rest.iter().cloned());
            self.out.push(parts);
            Ok(())
        } else {
            self.in_value(child, rest)
        };
        self.done.pop();
        walked
    }

    fn not_an_array(&self, found: &Bson) -> CommandError {
        CommandError::bad_value(format!(
            "Cannot apply array updates to non-array element {}: {}",
            self.done.join("."),
            crate::errors::format_value(found)
        ))
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;
    use crate::update::{ApplyContext, Update};

    fn apply(update: Document, filters: Option<Bson>, document: Document) -> StoreResult<Document> {
        let update = Update::parse_with_array_filters(&Bson::Document(update), filters.as_ref())?;
        let context = ApplyContext {
            is_insert: false,
            now: bson::DateTime::from_millis(0),
            matched_position: None,
        };
        update.apply(&document, context)
    }

    #[test]
    fn filtered_positional_updates_the_matching_elements_only() {
        let updated = apply(
            doc! {"$set": {"y.$[i].b": 2}},
            Some(bson::bson!([{"i.b": 3}])),
            doc! {"_id": 1, "y": [{"b": 3}, {"b": 1}, {"b": 3}]},
        )
        .unwrap();
        assert_eq!(
            updated,
            doc! {"_id": 1, "y": [{"b": 2}, {"b": 1}, {"b": 2}]}
        );
    }

    #[test]
    fn nested_filters_and_all_positional() {
        let updated = apply(
            doc! {"$set": {"y.$[i].c.$[j].d": 0}, "$inc": {"z.$[]": 1}},
            Some(bson::bson!([{"i.b": 5}, {"j.d": 3}])),
            doc! {"_id": 1, "y": [{"b": 5, "c": [{"d": 2}, {"d": 3}]}, {"b": 1, "c": [{"d": 3}]}], "z": [1, 2]},
        )
        .unwrap();
        assert_eq!(
            updated,
            doc! {"_id": 1, "y": [{"b": 5, "c": [{"d": 2}, {"d": 0}]}, {"b": 1, "c": [{"d": 3}]}], "z": [2, 3]}
        );
    }

    #[test]
    fn filters_are_checked_against_the_update() {
        let missing = apply(
            doc! {"$set": {"y.$[i].b": 2}},
            None,
            doc! {"_id": 1, "y": []},
        );
        assert_eq!(missing.unwrap_err().code, crate::code::BAD_VALUE);
        let unused = apply(
            doc! {"$set": {"y.$[i].b": 2}},
            Some(bson::bson!([{"i.b": 1}, {"k": 2}])),
            doc! {"_id": 1, "y": []},
        );
        assert_eq!(unused.unwrap_err().code, crate::code::FAILED_TO_PARSE);
        let not_array = apply(doc! {"$set": {"y.$[].b": 2}}, None, doc! {"_id": 1, "y": 5});
        assert_eq!(not_array.unwrap_err().code, crate::code::BAD_VALUE);
    }
}
