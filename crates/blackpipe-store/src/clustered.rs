//! Clustered collections (`create` with `clusteredIndex`): the options mongod accepts and
//! the index entry they stand for. A clustered collection's documents are ordered by `_id`
//! in mongod; blackpipe keeps its insertion order and its usual `_id` lookups, which answer
//! the same queries, so only what the catalog reports differs from an ordinary collection.

use bson::{Bson, Document, doc};

use super::errors::{CommandError, StoreResult};
use crate::code;

/// The `clusteredIndex` option as mongod stores it: `key` and `unique` checked, `name`
/// defaulted to `_id_`, `v` to 2. Options without it are returned unchanged.
///
/// # Errors
/// InvalidOptions (72) for a cluster key other than `{_id: 1}` or `unique` other than
/// `true`; TypeMismatch for a `clusteredIndex` that is not a document.
pub(crate) fn normalize_options(mut options: Document) -> StoreResult<Document> {
    let Some(spec) = options.get("clusteredIndex") else {
        return Ok(options);
    };
    let Bson::Document(spec) = spec else {
        return Err(CommandError::type_mismatch(
            "BSON field 'create.clusteredIndex' is the wrong type, expected type 'object'",
        ));
    };
    if spec.get_document("key").ok() != Some(&doc! { "_id": 1 }) {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            "The clusteredIndex option is only supported for key: {_id: 1}",
        ));
    }
    if spec.get("unique") != Some(&Bson::Boolean(true)) {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            "The clusteredIndex option requires unique: true",
        ));
    }
    let mut normalized = spec.clone();
    if !normalized.contains_key("name") {
        normalized.insert("name", "_id_");
    }
    if !normalized.contains_key("v") {
        normalized.insert("v", 2);
    }
    options.insert("clusteredIndex", normalized);
    Ok(options)
}

/// The `listIndexes` entry of the `_id` index of a collection with these options: the
/// clustered index (`clustered: true`) for a clustered collection, else `_id_`.
pub(crate) fn id_index_spec(options: &Document) -> Document {
    match options.get_document("clusteredIndex") {
        Ok(spec) => {
            let mut entry = spec.clone();
            entry.insert("clustered", true);
            entry
        }
        Err(_) => doc! { "v": 2, "key": { "_id": 1 }, "name": "_id_" },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clustered_index_gets_its_version_and_is_listed_as_clustered() {
        let options =
            doc! { "clusteredIndex": { "key": { "_id": 1 }, "unique": true, "name": "n" } };
        let normalized = normalize_options(options).expect("valid");
        let spec = id_index_spec(&normalized);
        assert_eq!(
            spec,
            doc! { "key": { "_id": 1 }, "unique": true, "name": "n", "v": 2, "clustered": true }
        );
        assert_eq!(
            id_index_spec(&Document::new()).get_str("name").ok(),
            Some("_id_")
        );
    }

    #[test]
    fn only_a_unique_id_key_can_cluster() {
        let other_key = doc! { "clusteredIndex": { "key": { "x": 1 }, "unique": true } };
        assert!(normalize_options(other_key).is_err());
        let not_unique = doc! { "clusteredIndex": { "key": { "_id": 1 }, "unique": false } };
        assert!(normalize_options(not_unique).is_err());
    }
}
