//! Applying a committed transaction to the shared collections, all or nothing.

use std::sync::Arc;

use bson::{DateTime, Document};

use super::private::OpenTransaction;
use super::registry::write_conflict;
use crate::store::Store;
use crate::store::catalog::{CollectionHandle, lock, read, write};
use crate::store::errors::StoreResult;
use crate::store::oplog::{Change, OpTime, OplogWrite};

/// How to take back one applied write if a later one fails.
enum Undo {
    Remove(CollectionHandle, Vec<u8>),
    Restore(CollectionHandle, Vec<u8>, Arc<Document>),
    Reinsert(CollectionHandle, Arc<Document>),
}

impl Undo {
    /// Undoing runs in reverse order over writes that all succeeded, so it restores states
    /// the collection held a moment ago and cannot conflict; an error is not possible here.
    fn run(self) {
        match self {
            Undo::Remove(handle, key) => {
                let mut collection = write(&handle);
                if let Some((record, _)) = collection.document_by_key(&key) {
                    collection.remove(record);
                }
            }
            Undo::Restore(handle, key, previous) => {
                let mut collection = write(&handle);
                if let Some((record, _)) = collection.document_by_key(&key) {
                    let _restored = collection.replace(record, (*previous).clone());
                }
            }
            Undo::Reinsert(handle, previous) => {
                let _restored = write(&handle).insert((*previous).clone());
            }
        }
    }
}

/// One write of the commit, for the op log (its `previous` is the version the write replaced,
/// for the store's history).
struct Applied {
    key: Vec<u8>,
    write: OplogWrite,
}

/// Applies the transaction's written documents to the shared collections and records them in
/// the op log (one entry per document, first-write order, stamped with the transaction).
/// The caller holds the commit gate exclusively. Returns the optime of the last entry.
///
/// # Errors
///
/// WriteConflict when a shared collection refuses a write (a unique key taken meanwhile); the
/// writes applied before it are undone first.
pub(super) fn apply_commit(
    store: &Store,
    now: DateTime,
    txn: &OpenTransaction,
) -> StoreResult<Option<OpTime>> {
    let mut created = Vec::new();
    for private in txn.collections.values().flatten() {
        if private.created {
            let (_, was_created) =
                store
                    .catalog
                    .collection_or_create(&private.db, &private.name, || store.random_uuid());
            if was_created
                && let Some(handle) = store.catalog.collection(&private.db, &private.name)
            {
                created.push(OplogWrite::catalog(
                    format!("{}.{}", private.db, private.name),
                    Some(read(&handle).uuid),
                    Change::Create(Arc::new(Document::new())),
                ));
            }
        }
    }
    let mut undo: Vec<Undo> = Vec::new();
    let mut applied: Vec<Applied> = Vec::new();
    for written in &txn.written {
        let step = txn
            .collections
            .get(&written.ns)
            .and_then(Option::as_ref)
            .and_then(|private| {
                let shared = store.catalog.collection(&private.db, &private.name)?;
                let final_state = read(&private.handle)
                    .document_by_key(&written.key)
                    .map(|(_, document)| document.clone());
                Some((shared, final_state))
            });
        let Some((shared, final_state)) = step else {
            // The collection was dropped since the snapshot.
            undo.into_iter().rev().for_each(Undo::run);
            return Err(write_conflict());
        };
        match apply_one(&shared, &written.key, final_state) {
            Ok(Some((write, step_undo))) => {
                undo.push(step_undo);
                applied.push(Applied {
                    key: written.key.clone(),
                    write,
                });
            }
            Ok(None) => {}
            Err(error) => {
                undo.into_iter().rev().for_each(Undo::run);
                return Err(error);
            }
        }
    }
    let mut oplog = lock(&store.oplog);
    let mut last = None;
    for write in created {
        last = Some(oplog.record(now, write, Some(txn.stamp.clone())));
    }
    let mut history = lock(&store.history);
    for Applied { key, write } in applied {
        let (ns, previous) = (write.ns.clone(), write.previous.clone());
        let op_time = oplog.record(now, write, Some(txn.stamp.clone()));
        history.push(op_time, &ns, key, previous);
        last = Some(op_time);
    }
    Ok(last)
}

/// Brings one shared document to the transaction's final state of it, returning its op log
/// write (a net change: an insert, an update described from the two versions, or a delete);
/// `None` when nothing changes (inserted then deleted, or written back unchanged).
fn apply_one(
    shared: &CollectionHandle,
    key: &[u8],
    final_state: Option<Arc<Document>>,
) -> StoreResult<Option<(OplogWrite, Undo)>> {
    let mut collection = write(shared);
    let current = collection
        .document_by_key(key)
        .map(|(record, document)| (record, document.clone()));
    let step = match (current, final_state) {
        (None, Some(document)) => {
            collection
                .insert((*document).clone())
                .map_err(|_| write_conflict())?;
            let inserted = collection.newest().cloned().unwrap_or(document);
            Some((
                OplogWrite::insert(&collection, inserted),
                Undo::Remove(shared.clone(), key.to_vec()),
            ))
        }
        (Some((_, previous)), Some(document)) if Arc::ptr_eq(&previous, &document) => None,
        (Some((record, previous)), Some(document)) => {
            collection
                .replace(record, (*document).clone())
                .map_err(|_| write_conflict())?;
            let updated = collection.get(record).cloned().unwrap_or(document);
            Some((
                OplogWrite::update(&collection, &previous, updated, false),
                Undo::Restore(shared.clone(), key.to_vec(), previous),
            ))
        }
        (Some((record, _)), None) => collection.remove(record).map(|previous| {
            (
                OplogWrite::delete(&collection, &previous),
                Undo::Reinsert(shared.clone(), previous),
            )
        }),
        (None, None) => None,
    };
    Ok(step)
}
