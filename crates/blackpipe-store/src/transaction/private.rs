//! An open transaction: its snapshot, private collection copies and written documents.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use bson::{DateTime, Timestamp};

use super::registry::{DocumentKey, Registration, write_conflict};
use super::{MAX_TRANSACTION_BYTES, MAX_TRANSACTION_DOCUMENTS};
use crate::Store;
use crate::catalog::{CollectionHandle, lock, read};
use crate::code;
use crate::collection::Collection;
use crate::errors::{CommandError, StoreResult};
use crate::key::encode_key;
use crate::oplog::{OpTime, OplogWrite, WriteSession};
use crate::value_order::document_size;

/// A collection as the transaction sees it.
#[derive(Debug)]
pub(super) struct PrivateCollection {
    pub(super) db: String,
    pub(super) name: String,
    pub(super) handle: CollectionHandle,
    /// The collection did not exist at the snapshot; the transaction creates it.
    pub(super) created: bool,
}

/// One document the transaction wrote (first write only; later writes change its final state).
#[derive(Debug)]
pub(super) struct Written {
    pub(super) ns: String,
    pub(super) key: Vec<u8>,
}

/// See the module documentation of [`crate::transaction`].
#[derive(Debug)]
pub(crate) struct OpenTransaction {
    pub(super) stamp: WriteSession,
    pub(super) registration: Registration,
    pub(super) expires_millis: i64,
    /// What the transaction reads as of: the `atClusterTime` of a snapshot read concern, else
    /// the op log position when it first touched a collection.
    snapshot: Option<Timestamp>,
    /// By namespace; `None` for a collection absent at the snapshot that the transaction only
    /// read.
    pub(super) collections: HashMap<String, Option<PrivateCollection>>,
    pub(super) written: Vec<Written>,
    written_keys: HashSet<DocumentKey>,
    /// Every document write of every statement, in order, as the op log records them at the
    /// commit (mongod's `applyOps` holds each statement's operation, so a document inserted
    /// then updated shows both events). Bounded with `statement_bytes` by
    /// [`MAX_TRANSACTION_DOCUMENTS`] and [`MAX_TRANSACTION_BYTES`].
    pub(super) statements: Vec<OplogWrite>,
    statement_bytes: usize,
    /// The error that ends the transaction, found while a write was applied (reported once the
    /// statement returns).
    pub(super) failure: Option<CommandError>,
}

impl OpenTransaction {
    pub(super) fn new(
        stamp: WriteSession,
        registration: Registration,
        expires_millis: i64,
        at_cluster_time: Option<Timestamp>,
    ) -> OpenTransaction {
        OpenTransaction {
            stamp,
            registration,
            expires_millis,
            snapshot: at_cluster_time,
            collections: HashMap::new(),
            written: Vec::new(),
            written_keys: HashSet::new(),
            statements: Vec::new(),
            statement_bytes: 0,
            failure: None,
        }
    }

    /// Fixes the snapshot now, if not yet fixed.
    fn ensure_snapshot(&mut self, store: &Store) -> Timestamp {
        *self
            .snapshot
            .get_or_insert_with(|| lock(&store.oplog).last().ts)
    }

    /// The transaction's view of collection `db.name`, copied from the shared one at first touch.
    ///
    /// # Errors
    ///
    /// SnapshotTooOld (239) when the store's history no longer reaches back to the snapshot.
    pub(crate) fn collection(
        &mut self,
        store: &Store,
        db: &str,
        name: &str,
    ) -> StoreResult<Option<CollectionHandle>> {
        let ns = format!("{db}.{name}");
        if let Some(known) = self.collections.get(&ns) {
            return Ok(known.as_ref().map(|private| private.handle.clone()));
        }
        let Some(shared) = store.catalog.collection(db, name) else {
            self.ensure_snapshot(store);
            self.collections.insert(ns, None);
            return Ok(None);
        };
        // Copied and rewound under the shared collection's lock: no write slips in between.
        let guard = read(&shared);
        let at = self.ensure_snapshot(store);
        self.registration.charge_copy(guard.len())?;
        let mut copy = guard.snapshot_copy();
        lock(&store.history).rewind(&mut copy, &ns, at)?;
        drop(guard);
        let copy = Arc::new(RwLock::new(copy));
        self.collections.insert(
            ns,
            Some(PrivateCollection {
                db: db.to_owned(),
                name: name.to_owned(),
                handle: copy.clone(),
                created: false,
            }),
        );
        Ok(Some(copy))
    }

    /// The transaction's view of `db.name`, created privately if it does not exist.
    ///
    /// # Errors
    ///
    /// As [`OpenTransaction::collection`].
    pub(crate) fn collection_or_create(
        &mut self,
        store: &Store,
        db: &str,
        name: &str,
    ) -> StoreResult<CollectionHandle> {
        if let Some(handle) = self.collection(store, db, name)? {
            return Ok(handle);
        }
        let ns = format!("{db}.{name}");
        let handle = Arc::new(RwLock::new(Collection::new(
            ns.clone(),
            store.random_uuid(),
            bson::Document::new(),
        )));
        self.collections.insert(
            ns,
            Some(PrivateCollection {
                db: db.to_owned(),
                name: name.to_owned(),
                handle: handle.clone(),
                created: true,
            }),
        );
        Ok(handle)
    }

    /// `create` inside the transaction: a private collection that appears at commit.
    ///
    /// # Errors
    ///
    /// NamespaceExists (48) when the transaction already sees the collection.
    pub(crate) fn create_collection(
        &mut self,
        store: &Store,
        db: &str,
        name: &str,
        options: bson::Document,
    ) -> StoreResult<()> {
        if self.collection(store, db, name)?.is_some() {
            return Err(CommandError::new(
                code::NAMESPACE_EXISTS,
                format!("Collection {db}.{name} already exists."),
            ));
        }
        let ns = format!("{db}.{name}");
        let handle = Arc::new(RwLock::new(Collection::new(
            ns.clone(),
            store.random_uuid(),
            options,
        )));
        self.collections.insert(
            ns,
            Some(PrivateCollection {
                db: db.to_owned(),
                name: name.to_owned(),
                handle,
                created: true,
            }),
        );
        Ok(())
    }

    /// Whether `createIndexes` may run on `db.name` inside the transaction (as mongod: only on
    /// a collection the transaction creates); `Ok(true)` when the command will create it.
    ///
    /// # Errors
    ///
    /// OperationNotSupportedInTransaction (263) for a collection that existed before.
    pub(crate) fn index_creation_allowed(
        &mut self,
        store: &Store,
        db: &str,
        name: &str,
    ) -> StoreResult<bool> {
        if self.collection(store, db, name)?.is_none() {
            return Ok(true);
        }
        let ns = format!("{db}.{name}");
        match self.collections.get(&ns) {
            Some(Some(private)) if private.created => Ok(false),
            _ => Err(CommandError::new(
                code::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
                format!(
                    "Cannot create new indexes on existing collection {ns} in a multi-document transaction."
                ),
            )),
        }
    }

    /// Notes that a statement made document write `write` (already applied to the private
    /// copy, whose lock the caller holds), keeping it for the commit's op log entries. The
    /// first write of a document takes it for the transaction and checks that nobody wrote it
    /// since the snapshot; a conflict, or a transaction past its bounds, is kept in `failure`.
    pub(crate) fn note_write(&mut self, store: &Store, mut write: OplogWrite) {
        let Some(id) = write.id.as_ref() else {
            return;
        };
        if self.failure.is_some() {
            return;
        }
        let key = (write.ns.clone(), encode_key(id));
        if !self.written_keys.contains(&key) && !self.take(store, key) {
            return;
        }
        // The commit's history keeps the version each document had before the transaction;
        // the statement's own previous version is not needed.
        write.previous = None;
        self.statement_bytes = self.statement_bytes.saturating_add(write.size());
        if self.statements.len() >= MAX_TRANSACTION_DOCUMENTS
            || self.statement_bytes > MAX_TRANSACTION_BYTES
        {
            self.failure = Some(too_large());
            return;
        }
        self.statements.push(write);
    }

    /// Takes document `key` for the transaction at its first write; `false`, with the reason
    /// in `failure`, when it cannot.
    fn take(&mut self, store: &Store, key: DocumentKey) -> bool {
        if self.written.len() >= MAX_TRANSACTION_DOCUMENTS {
            self.failure = Some(too_large());
            return false;
        }
        if let Err(conflict) = self.registration.hold(key.clone()) {
            self.failure = Some(conflict);
            return false;
        }
        // Taken before looking at the op log: a write outside the transaction is either there
        // already or will find the document held and abort this transaction.
        let since = self.snapshot.unwrap_or(OpTime::ZERO.ts);
        if lock(&store.oplog).wrote_since(since, &key.0, &key.1) != Some(false) {
            self.failure = Some(write_conflict());
            return false;
        }
        self.written.push(Written {
            ns: key.0.clone(),
            key: key.1.clone(),
        });
        self.written_keys.insert(key);
        true
    }

    /// Checks the bytes of the written documents' current states against
    /// [`MAX_TRANSACTION_BYTES`].
    ///
    /// # Errors
    ///
    /// TransactionTooLarge (334) past the bound.
    pub(super) fn check_size(&self) -> StoreResult<()> {
        let mut total: usize = 0;
        for written in &self.written {
            let Some(Some(private)) = self.collections.get(&written.ns) else {
                continue;
            };
            let collection = read(&private.handle);
            if let Some((_, document)) = collection.document_by_key(&written.key) {
                total = total.saturating_add(document_size(document));
            }
            if total > MAX_TRANSACTION_BYTES {
                return Err(too_large());
            }
        }
        Ok(())
    }

    /// Whether the transaction's lifetime ended at `now`.
    pub(super) fn expired(&self, now: DateTime) -> bool {
        now.timestamp_millis() >= self.expires_millis
    }
}

fn too_large() -> CommandError {
    CommandError::new(
        code::TRANSACTION_TOO_LARGE,
        format!(
            "Total size of the transaction exceeds blackpipe's limit of {MAX_TRANSACTION_DOCUMENTS} documents \
             or {MAX_TRANSACTION_BYTES} bytes"
        ),
    )
}
