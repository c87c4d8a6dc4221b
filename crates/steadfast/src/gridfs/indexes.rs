//! The two indexes GridFS needs, made sure of before a bucket's first write: when the files
//! collection is empty (one `find` on the primary), each index is listed and created only if
//! missing, so that a read-only user can still write to a bucket whose indexes exist.

use bson::{Bson, Document, doc};
use steadfast_core::Deadline;

use super::GridFsBucket;
use crate::coll::Collection;
use crate::error::Result;
use crate::options::{IndexModel, IndexOptions, ReadPreference, SelectionCriteria};

/// The server's code for a collection that does not exist (listIndexes on it).
const NAMESPACE_NOT_FOUND: i32 = 26;

/// Creates the files index `{filename: 1, uploadDate: 1}` and the unique chunks index
/// `{files_id: 1, n: 1}` if the files collection is empty and they are missing.
///
/// # Errors
/// Any error of the commands sent (the specification requires failing the write when the
/// indexes cannot be created).
pub(super) async fn ensure(bucket: &GridFsBucket, deadline: Deadline) -> Result<()> {
    let files = bucket.files_raw();
    let primary = SelectionCriteria::ReadPreference(ReadPreference::Primary);
    let first = within!(
        files
            .find_one(doc! {})
            .projection(doc! { "_id": 1 })
            .selection_criteria(primary),
        deadline
    )
    .await?;
    if first.is_some() {
        return Ok(());
    }
    ensure_index(
        files,
        doc! { "filename": 1, "uploadDate": 1 },
        false,
        deadline,
    )
    .await?;
    ensure_index(
        bucket.chunks(),
        doc! { "files_id": 1, "n": 1 },
        true,
        deadline,
    )
    .await
}

/// Creates the index on `keys` unless `coll` has one with the same keys.
async fn ensure_index(
    coll: &Collection<Document>,
    keys: Document,
    unique: bool,
    deadline: Deadline,
) -> Result<()> {
    if has_index(coll, &keys, deadline).await? {
        return Ok(());
    }
    let options = unique.then(|| IndexOptions::builder().unique(true).build());
    let model = IndexModel::builder().keys(keys).options(options).build();
    within!(coll.create_index(model), deadline).await?;
    Ok(())
}

/// Whether `coll` has an index on `keys` (a missing collection has none).
async fn has_index(
    coll: &Collection<Document>,
    keys: &Document,
    deadline: Deadline,
) -> Result<bool> {
    let listed = within!(coll.list_indexes(), deadline).await;
    let mut cursor = match listed {
        Ok(cursor) => cursor,
        Err(error) if error.code() == Some(NAMESPACE_NOT_FOUND) => return Ok(false),
        Err(error) => return Err(error),
    };
    while cursor.advance().await? {
        let index = cursor.deserialize_current()?;
        if same_keys(&index.keys, keys) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether two key patterns name the same fields in the same order with numerically equal
/// directions (`1`, `1i64` and `1.0` are the same: the shell creates indexes with doubles).
fn same_keys(listed: &Document, wanted: &Document) -> bool {
    listed.len() == wanted.len()
        && listed
            .iter()
            .zip(wanted.iter())
            .all(|((k1, v1), (k2, v2))| {
                k1 == k2 && number(v1).is_some() && number(v1) == number(v2)
            })
}

/// A numeric BSON value as a double.
fn number(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(v) => Some(f64::from(*v)),
        #[allow(clippy::cast_precision_loss, reason = "index directions are small")]
        Bson::Int64(v) => Some(*v as f64),
        Bson::Double(v) => Some(*v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_patterns_compare_numbers_by_value() {
        let wanted = doc! { "filename": 1, "uploadDate": 1 };
        assert!(same_keys(
            &doc! { "filename": 1.0, "uploadDate": 1_i64 },
            &wanted
        ));
        assert!(!same_keys(
            &doc! { "uploadDate": 1, "filename": 1 },
            &wanted
        ));
        assert!(!same_keys(
            &doc! { "filename": 1, "uploadDate": -1 },
            &wanted
        ));
        assert!(!same_keys(
            &doc! { "filename": "text", "uploadDate": 1 },
            &wanted
        ));
        assert!(!same_keys(&doc! { "filename": 1 }, &wanted));
    }
}
