//! Applying a committed transaction to the shared collections, all or nothing.

use std::sync::Arc;

use bson::{DateTime, Document};

use super::private::OpenTransaction;
use super::registry::write_conflict;
use crate::Store;
use crate::catalog::{CollectionHandle, lock, read, write};
use crate::collection::Collection;
use crate::errors::StoreResult;
use crate::index::SecondaryIndex;
use crate::oplog::{Change, OpTime, OplogWrite};

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

/// One document the commit changed, and its version before, for the store's history.
struct Applied {
    key: Vec<u8>,
    ns: String,
    previous: Option<Arc<Document>>,
}

/// Applies the transaction's written documents to the shared collections and records the
/// transaction in the op log (its statements' writes, stamped with the transaction, all at
/// one optime). The caller holds the commit gate exclusively. Returns the commit's optime.
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
    let created = create_collections(store, txn)?;
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
            drop_created(store, &created);
            return Err(write_conflict());
        };
        match apply_one(&shared, &written.key, final_state) {
            Ok(Some((previous, step_undo))) => {
                undo.push(step_undo);
                applied.push(Applied {
                    key: written.key.clone(),
                    ns: written.ns.clone(),
                    previous,
                });
            }
            Ok(None) => {}
            Err(error) => {
                undo.into_iter().rev().for_each(Undo::run);
                drop_created(store, &created);
                return Err(error);
            }
        }
    }
    Ok(record(store, now, txn, created, applied))
}

/// Records the commit in the op log at one optime: the collections it created first, then
/// each document write of each statement, in order (as mongod's `applyOps`: a document
/// inserted then updated shows both); and the versions its documents had before it in the
/// history at that same optime. A read at any timestamp sees the whole transaction or none of
/// it. Returns the commit's optime.
fn record(
    store: &Store,
    now: DateTime,
    txn: &OpenTransaction,
    created: Vec<Created>,
    applied: Vec<Applied>,
) -> Option<OpTime> {
    let writes: Vec<OplogWrite> = created
        .into_iter()
        .flat_map(|created| created.writes)
        .chain(txn.statements.iter().cloned())
        .collect();
    let mut oplog = lock(&store.oplog);
    let op_time = oplog.record_transaction(now, writes, &txn.stamp)?;
    let mut history = lock(&store.history);
    for Applied { key, ns, previous } in applied {
        history.push(op_time, &ns, key, previous);
    }
    Some(op_time)
}

/// A collection the commit created, and the op log writes that say so.
struct Created {
    db: String,
    name: String,
    writes: Vec<OplogWrite>,
}

fn catalog_write(ns: &str, uuid: [u8; 16], change: Change) -> OplogWrite {
    OplogWrite {
        ns: ns.to_owned(),
        uuid: Some(uuid),
        id: None,
        change,
        pre_image: None,
        previous: None,
        apply: crate::replication::entry::ApplyInfo::default(),
    }
}

/// Creates the collections the transaction created (empty, with their options and indexes).
///
/// # Errors
///
/// WriteConflict when one of them was created by someone else since the snapshot (none is
/// left created then).
fn create_collections(store: &Store, txn: &OpenTransaction) -> StoreResult<Vec<Created>> {
    let mut created = Vec::new();
    for private in txn
        .collections
        .values()
        .flatten()
        .filter(|private| private.created)
    {
        let (fresh, writes) = {
            let source = read(&private.handle);
            let mut fresh = Collection::new(source.ns.clone(), source.uuid, source.options.clone());
            let specs: Vec<Document> = source.index_specs().into_iter().skip(1).collect();
            for spec in &specs {
                if let Ok(index) = SecondaryIndex::from_spec(spec) {
                    // The index was accepted on the private collection, so it is again here.
                    let _created = fresh.create_index(index);
                }
            }
            let mut writes = vec![catalog_write(
                &source.ns,
                source.uuid,
                Change::Create(Arc::new(source.options.clone())),
            )];
            if !specs.is_empty() {
                writes.push(catalog_write(
                    &source.ns,
                    source.uuid,
                    Change::CreateIndexes(Arc::new(specs)),
                ));
            }
            (fresh, writes)
        };
        if !store.catalog.install(&private.db, &private.name, fresh) {
            drop_created(store, &created);
            return Err(write_conflict());
        }
        created.push(Created {
            db: private.db.clone(),
            name: private.name.clone(),
            writes,
        });
    }
    Ok(created)
}

/// Drops the collections a failed commit created.
fn drop_created(store: &Store, created: &[Created]) {
    for collection in created {
        store
            .catalog
            .drop_collection(&collection.db, &collection.name);
    }
}

/// Brings one shared document to the transaction's final state of it, returning the version
/// it replaced (none for an insert) and how to undo it; `None` when nothing changes (inserted
/// then deleted, or written back unchanged).
fn apply_one(
    shared: &CollectionHandle,
    key: &[u8],
    final_state: Option<Arc<Document>>,
) -> StoreResult<Option<(Option<Arc<Document>>, Undo)>> {
    let mut collection = write(shared);
    let current = collection
        .document_by_key(key)
        .map(|(record, document)| (record, document.clone()));
    let step = match (current, final_state) {
        (None, Some(document)) => {
            collection
                .insert((*document).clone())
                .map_err(|_| write_conflict())?;
            Some((None, Undo::Remove(shared.clone(), key.to_vec())))
        }
        (Some((_, previous)), Some(document)) if Arc::ptr_eq(&previous, &document) => None,
        (Some((record, previous)), Some(document)) => {
            collection
                .replace(record, (*document).clone())
                .map_err(|_| write_conflict())?;
            Some((
                Some(previous.clone()),
                Undo::Restore(shared.clone(), key.to_vec(), previous),
            ))
        }
        (Some((record, _)), None) => collection.remove(record).map(|removed| {
            (
                Some(removed.clone()),
                Undo::Reinsert(shared.clone(), removed),
            )
        }),
        (None, None) => None,
    };
    Ok(step)
}
