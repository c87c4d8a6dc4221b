//! Applying one replicated op log entry: the document write or catalog change it records, then
//! the entry itself, the replaced version (history) and the session state it implies.

use std::sync::Arc;

use bson::{DateTime, Document};

use super::ApplyError;
use super::entry::RetryableStatement;
use crate::Store;
use crate::catalog::{CollectionHandle, lock, read, write};
use crate::collection::Collection;
use crate::commands::coll_mod_index::modify_index;
use crate::index::SecondaryIndex;
use crate::key::encode_key;
use crate::oplog::{Change, OplogEntry, WriteSession};
use crate::retryable_writes::{StatementOutcome, session_key};
use crate::transaction::TransactionState;

/// What a document entry does to the document with its `_id`.
pub(super) enum DocumentWrite<'a> {
    Insert(&'a Arc<Document>),
    Replace(&'a Arc<Document>),
    Delete,
}

impl<'a> DocumentWrite<'a> {
    /// The document write of `entry`; `None` for a catalog change.
    pub(super) fn of(entry: &'a OplogEntry) -> Result<Option<DocumentWrite<'a>>, ApplyError> {
        Ok(match &entry.change {
            Change::Insert(document) => Some(DocumentWrite::Insert(document)),
            Change::Replace(document) => Some(DocumentWrite::Replace(document)),
            Change::Update { .. } => match &entry.apply.after {
                Some(after) => Some(DocumentWrite::Replace(after)),
                None => return Err(ApplyError::new(entry, "the update has no after-image")),
            },
            Change::Delete => Some(DocumentWrite::Delete),
            _ => None,
        })
    }

    /// The document after the write (none after a delete).
    pub(super) fn document(&self) -> Option<&'a Arc<Document>> {
        match self {
            DocumentWrite::Insert(document) | DocumentWrite::Replace(document) => Some(document),
            DocumentWrite::Delete => None,
        }
    }
}

impl Store {
    /// Applies one entry (its predecessor was checked) and appends it to the op log.
    pub(super) fn apply_entry(&self, entry: &OplogEntry) -> Result<(), ApplyError> {
        match DocumentWrite::of(entry)? {
            Some(document_write) => self.apply_document_write(entry, &document_write)?,
            None => {
                self.apply_catalog_change(entry)?;
                lock(&self.oplog).append(entry.clone());
            }
        }
        if let Some(session) = &entry.session {
            self.apply_session(entry, session);
        }
        Ok(())
    }

    /// Writes the document of `entry` by `_id`, then logs the entry and keeps the version it
    /// replaced, under the collection's lock as a local write does.
    fn apply_document_write(
        &self,
        entry: &OplogEntry,
        document_write: &DocumentWrite<'_>,
    ) -> Result<(), ApplyError> {
        let handle = self.entry_collection(entry)?;
        let Some(id) = &entry.id else {
            return Err(ApplyError::new(entry, "the document write has no _id"));
        };
        let key = encode_key(id);
        let mut collection = write(&handle);
        let current = collection
            .document_by_key(&key)
            .map(|(record, document)| (record, document.clone()));
        let refused = |error: crate::errors::CommandError| ApplyError::new(entry, error.message);
        let previous = match (document_write, current) {
            (DocumentWrite::Insert(document), None) => {
                collection.insert((***document).clone()).map_err(refused)?;
                None
            }
            (DocumentWrite::Replace(document), Some((record, previous))) => {
                collection
                    .replace(record, (***document).clone())
                    .map_err(refused)?;
                Some(previous)
            }
            (DocumentWrite::Delete, Some((record, _))) => collection.remove(record),
            (DocumentWrite::Insert(_), Some(_)) => {
                return Err(ApplyError::new(entry, "the inserted _id is already taken"));
            }
            (DocumentWrite::Replace(_) | DocumentWrite::Delete, None) => {
                return Err(ApplyError::new(entry, "the document written is missing"));
            }
        };
        lock(&self.oplog).append(entry.clone());
        lock(&self.history).push(entry.op_time, &entry.ns, key.clone(), previous);
        drop(collection);
        self.transaction_registry.displace(&(entry.ns.clone(), key));
        Ok(())
    }

    /// The collection a document write or index change names, checked against its UUID.
    pub(super) fn entry_collection(
        &self,
        entry: &OplogEntry,
    ) -> Result<CollectionHandle, ApplyError> {
        let (db, name) = entry.db_and_collection();
        let Some(handle) = self.catalog.collection(db, name) else {
            return Err(ApplyError::new(entry, "the collection does not exist"));
        };
        if entry.uuid.is_some_and(|uuid| uuid != read(&handle).uuid) {
            return Err(ApplyError::new(entry, "the collection UUID differs"));
        }
        Ok(handle)
    }

    /// Makes the catalog change of `entry`.
    pub(super) fn apply_catalog_change(&self, entry: &OplogEntry) -> Result<(), ApplyError> {
        let (db, name) = entry.db_and_collection();
        let refused = |error: crate::errors::CommandError| ApplyError::new(entry, error.message);
        match &entry.change {
            Change::Create(options) => {
                let Some(uuid) = entry.uuid else {
                    return Err(ApplyError::new(entry, "the create has no UUID"));
                };
                let collection = Collection::new(entry.ns.clone(), uuid, (**options).clone());
                if !self.catalog.install(db, name, collection) {
                    return Err(ApplyError::new(entry, "the collection already exists"));
                }
            }
            Change::CreateIndexes(specs) => {
                let handle = self.entry_collection(entry)?;
                let mut collection = write(&handle);
                for spec in specs.iter() {
                    let index = SecondaryIndex::from_spec(spec).map_err(refused)?;
                    collection.create_index(index).map_err(refused)?;
                }
            }
            Change::DropIndexes(names) => {
                let handle = self.entry_collection(entry)?;
                let mut collection = write(&handle);
                if let Some(missing) = names.iter().find(|index| !collection.drop_index(index)) {
                    return Err(ApplyError::new(entry, format!("no index {missing}")));
                }
            }
            Change::Modify(changes) => {
                let handle = self.entry_collection(entry)?;
                let mut collection = write(&handle);
                if let Some(index) = &entry.apply.index_change {
                    modify_index(&mut collection, index).map_err(refused)?;
                }
                collection.modify_options((**changes).clone());
            }
            Change::Drop => {
                self.entry_collection(entry)?;
                self.catalog.drop_collection(db, name);
            }
            Change::Rename { to, dropped_target } => {
                self.entry_collection(entry)?;
                let Some(target) = to.split_once('.') else {
                    return Err(ApplyError::new(entry, "the rename target has no database"));
                };
                self.catalog
                    .rename((db, name), target, dropped_target.is_some())
                    .map_err(refused)?;
            }
            // Its collections' drops came first; an emptied database is already gone.
            Change::DropDatabase => {
                self.catalog.drop_database(db);
            }
            Change::Insert(_)
            | Change::Update { .. }
            | Change::Replace(_)
            | Change::Delete
            | Change::Noop(_) => {}
        }
        Ok(())
    }

    /// Records what `entry` tells of its session: a retryable write's statement (a retry
    /// answered here replays it), or a committed transaction (a retried commit answers ok).
    /// A session this store cannot hold (too many, or a newer txnNumber already seen) is left
    /// as it is: a retry then fails rather than applying twice.
    pub(super) fn apply_session(&self, entry: &OplogEntry, session: &WriteSession) {
        let statement = entry.apply.statement.as_ref();
        if !session.in_transaction && statement.is_none() {
            return;
        }
        let Ok(key) = session_key(&session.lsid) else {
            return;
        };
        let wall: DateTime = entry.op_time.wall;
        let Ok(record) = self.retryable_writes.session(&key, wall) else {
            return;
        };
        let mut record = lock(&record);
        if record.begin(session.txn_number, &key).is_err() {
            return;
        }
        if session.in_transaction {
            record.transaction = TransactionState::Committed;
        } else if let Some(statement) = statement {
            record.record(statement.id, replicated_outcome(statement));
        }
    }
}

/// The outcome to record for a replicated statement: the outcome itself once its command
/// decided it (counted at its size), else the shared cell it will be in.
fn replicated_outcome(statement: &RetryableStatement) -> StatementOutcome {
    match statement.outcome.get() {
        Some(outcome) => outcome.clone(),
        None => StatementOutcome::Replicated(statement.outcome.clone()),
    }
}
