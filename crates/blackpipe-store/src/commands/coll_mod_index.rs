//! `collMod`'s `index` option: `prepareUnique` (refuse new duplicate keys) and the conversion
//! of a prepared index to `unique`, which mongod refuses with the conflicting documents' `_id`s
//! while duplicates remain; `expireAfterSeconds`, which the TTL monitor reads at its next pass;
//! and `hidden` (kept in the index's listed specification; a hinted hidden index is refused as
//! a missing one).

use bson::{Bson, Document, doc};

use crate::code;
use crate::collection::Collection;
use crate::errors::{CommandError, StoreResult, type_name};

/// Applies `index` (`{keyPattern | name, prepareUnique?, unique?}`) to `collection` and returns
/// the reply fields mongod adds (`prepareUnique_old`/`_new`, `unique_new`).
///
/// # Errors
/// IndexNotFound (27) for no such index; InvalidOptions (72) for an option blackpipe does not
/// model, for `unique: false`, or for `unique: true` on an index not prepared first;
/// CannotConvertIndexToUnique (359) with `violations` while duplicate keys remain.
pub(crate) fn modify_index(collection: &mut Collection, spec: &Bson) -> StoreResult<Document> {
    let Bson::Document(spec) = spec else {
        return Err(CommandError::type_mismatch(format!(
            "BSON field 'collMod.index' is the wrong type '{}', expected type 'object'",
            type_name(spec)
        )));
    };
    let name = spec.get_str("name").ok();
    let key = spec.get_document("keyPattern").ok();
    if name.is_none() && key.is_none() {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            "collMod.index needs a keyPattern or a name",
        ));
    }
    if let Some(other) = spec.keys().find(|k| {
        !matches!(
            k.as_str(),
            "name" | "keyPattern" | "prepareUnique" | "unique" | "hidden" | "expireAfterSeconds"
        )
    }) {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            format!("blackpipe does not model collMod.index.{other}"),
        ));
    }
    let ids_of = |records: &std::collections::BTreeMap<u64, std::sync::Arc<Document>>,
                  group: &[u64]| {
        group
            .iter()
            .filter_map(|record| records.get(record)?.get("_id").cloned())
            .collect::<Vec<Bson>>()
    };
    let id_index = name == Some("_id_")
        || key.is_some_and(|key| crate::index::same_key_pattern(key, &doc! { "_id": 1 }));
    if id_index && spec.contains_key("hidden") {
        return Err(CommandError::bad_value("can't hide _id index"));
    }
    let Some((index, records)) = collection.index_and_documents(name, key) else {
        return Err(CommandError::new(
            code::INDEX_NOT_FOUND,
            "cannot find index for collMod",
        ));
    };
    let mut reply = Document::new();
    if let Some(hidden) = spec.get("hidden") {
        let hidden = hidden
            .as_bool()
            .ok_or_else(|| CommandError::type_mismatch("collMod.index.hidden must be a boolean"))?;
        reply.insert("hidden_old", index.is_hidden());
        index.set_hidden(hidden);
        reply.insert("hidden_new", hidden);
    }
    if let Some(seconds) = spec.get("expireAfterSeconds") {
        set_expire_after_seconds(&mut index.spec, seconds, &mut reply)?;
    }
    if let Some(prepare) = spec.get("prepareUnique") {
        let on = prepare.as_bool().ok_or_else(|| {
            CommandError::type_mismatch("collMod.index.prepareUnique must be a boolean")
        })?;
        reply.insert("prepareUnique_old", index.is_prepared_unique());
        index.set_prepare_unique(on, records.iter().map(|(record, doc)| (*record, &**doc)));
        reply.insert("prepareUnique_new", on);
    }
    match spec.get("unique") {
        None => {}
        Some(Bson::Boolean(true)) if index.is_prepared_unique() => {
            if let Err(groups) = index.make_unique() {
                let violations: Vec<Bson> = groups
                    .iter()
                    .map(|group| Bson::Document(doc! { "ids": ids_of(records, group) }))
                    .collect();
                let mut error = CommandError::new(
                    code::CANNOT_CONVERT_INDEX_TO_UNIQUE,
                    "Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.",
                );
                error.extra.insert("violations", violations);
                return Err(error);
            }
            reply.insert("unique_new", true);
        }
        Some(Bson::Boolean(true)) => {
            return Err(CommandError::new(
                code::INVALID_OPTIONS,
                "Cannot make index unique with 'unique: true' unless 'prepareUnique' is set to true first",
            ));
        }
        Some(_) => {
            return Err(CommandError::new(
                code::INVALID_OPTIONS,
                "collMod.index.unique can only be set to true",
            ));
        }
    }
    Ok(reply)
}

/// mongod's bounds on `expireAfterSeconds`: 0 to 2^31 - 1.
const MAX_EXPIRE_AFTER_SECONDS: i64 = i32::MAX as i64;

/// Sets (or adds: mongod converts a single-field index to TTL) an index's expiry and reports
/// `expireAfterSeconds_old` (when it had one) and `expireAfterSeconds_new`.
fn set_expire_after_seconds(
    spec: &mut Document,
    seconds: &Bson,
    reply: &mut Document,
) -> StoreResult<()> {
    let Some(value) = crate::integer::integral(seconds) else {
        return Err(CommandError::type_mismatch(format!(
            "BSON field 'collMod.index.expireAfterSeconds' is the wrong type '{}', expected types '[long, int, decimal, double]'",
            type_name(seconds)
        )));
    };
    if !(0..=MAX_EXPIRE_AFTER_SECONDS).contains(&value) {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            format!(
                "expireAfterSeconds must be within [0, {MAX_EXPIRE_AFTER_SECONDS}], got {value}"
            ),
        ));
    }
    let single_field = spec.get_document("key").is_ok_and(|key| key.len() == 1);
    if !single_field {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            "TTL indexes are single-field indexes, compound indexes do not support TTL",
        ));
    }
    if let Some(old) = spec.get("expireAfterSeconds") {
        reply.insert("expireAfterSeconds_old", old.clone());
    }
    let value = i32::try_from(value).map_or(Bson::Int64(value), Bson::Int32);
    spec.insert("expireAfterSeconds", value.clone());
    reply.insert("expireAfterSeconds_new", value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::SecondaryIndex;

    fn collection_with_duplicates() -> Collection {
        let mut collection = Collection::new("db.c".into(), [0; 16], Document::new());
        let index = SecondaryIndex::from_spec(&doc! { "key": { "x": 1 }, "name": "x_1" })
            .expect("valid index");
        collection.create_index(index).expect("created");
        for id in [1, 2] {
            collection
                .insert(doc! { "_id": id, "x": 1 })
                .expect("inserted");
        }
        collection
    }

    #[test]
    fn prepare_unique_refuses_new_duplicates_and_unique_reports_old_ones() {
        let mut collection = collection_with_duplicates();
        let prepare = Bson::Document(doc! { "keyPattern": { "x": 1 }, "prepareUnique": true });
        modify_index(&mut collection, &prepare).expect("prepared");
        let refused = collection.insert(doc! { "_id": 3, "x": 1 });
        assert_eq!(refused.map_err(|e| e.code), Err(11000));
        collection
            .insert(doc! { "_id": 4, "x": 2 })
            .expect("a new key is fine");

        let unique = Bson::Document(doc! { "keyPattern": { "x": 1 }, "unique": true });
        let error = modify_index(&mut collection, &unique).expect_err("duplicates remain");
        assert_eq!(error.code, code::CANNOT_CONVERT_INDEX_TO_UNIQUE);
        assert_eq!(
            error.extra.get_array("violations").ok(),
            Some(&vec![Bson::Document(doc! { "ids": [1, 2] })])
        );
    }

    #[test]
    fn unique_requires_prepare_unique_first() {
        let mut collection = collection_with_duplicates();
        let unique = Bson::Document(doc! { "name": "x_1", "unique": true });
        let error = modify_index(&mut collection, &unique).expect_err("not prepared");
        assert_eq!(error.code, code::INVALID_OPTIONS);
    }
}
