//! `validate`: blackpipe's collections live in memory, where no record or index entry can be
//! corrupt, so the answer is mongod's for a healthy collection, with the real counts: records,
//! and each index's keys (a sparse or partial index holds fewer, a multikey one more).

use bson::{Document, doc};

use super::Exec;
use super::args::{collection_name, optional_bool};
use crate::catalog::{read, validate_namespace};
use crate::code;
use crate::errors::{CommandError, StoreResult};

/// `validate`.
///
/// # Errors
/// NamespaceNotFound for a collection that does not exist; InvalidOptions for `full` with
/// `background`; CommandNotSupported for `background` (blackpipe's engine, like mongod's
/// inMemory one, keeps no checkpoint to validate in the background).
pub(crate) fn validate(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "validate")?;
    validate_namespace(exec.db, collection)?;
    let full = optional_bool(command, "validate", "full")?.unwrap_or(false);
    let background = optional_bool(command, "validate", "background")?.unwrap_or(false);
    let ns = exec.ns(collection);
    if full && background {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            "Running the validate command with both { background: true } and { full: true } is not supported.",
        ));
    }
    if background {
        return Err(CommandError::new(
            code::COMMAND_NOT_SUPPORTED,
            format!(
                "Running validate on collection {ns} with {{ background: true }} is not supported on the inMemory storage engine"
            ),
        ));
    }
    let Some(handle) = exec.collection(collection)? else {
        return Err(CommandError::new(
            code::NAMESPACE_NOT_FOUND,
            format!("Collection '{ns}' does not exist to validate."),
        ));
    };
    let collection = read(&handle);
    let records = collection.len();
    let mut keys_per_index = Document::new();
    let mut index_details = Document::new();
    for spec in collection.index_specs() {
        let name = spec.get_str("name").unwrap_or_default().to_owned();
        let key = spec.get_document("key").cloned().unwrap_or_default();
        let keys = match collection.secondary_index(&key) {
            Some(index) => collection
                .documents()
                .map(|document| index.keys_for(document).len())
                .sum(),
            // The `_id` (or clustered) index: one key per record.
            None => records,
        };
        keys_per_index.insert(&name, i64::try_from(keys).unwrap_or(i64::MAX));
        index_details.insert(&name, doc! { "valid": true });
    }
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    Ok(doc! {
        "ns": &ns,
        "nInvalidDocuments": 0_i64,
        "nNonCompliantDocuments": 0_i64,
        "nrecords": count(records),
        "nIndexes": count(keys_per_index.len()),
        "keysPerIndex": keys_per_index,
        "indexDetails": index_details,
        "valid": true,
        "repaired": false,
        "warnings": [],
        "errors": [],
        "extraIndexEntries": [],
        "missingIndexEntries": [],
        "corruptRecords": [],
        "ok": 1.0,
    })
}
