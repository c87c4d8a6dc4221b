//! Applying a replicated transaction as its commit applied it: each document it wrote goes
//! straight to the transaction's final state of it. Replaying its statements one by one could
//! pass through states the primary never held (a unique key taken meanwhile by a write outside
//! the transaction, then freed by a later statement), and refuse a commit the primary made.

use std::collections::HashMap;
use std::sync::Arc;

use bson::Document;

use super::ApplyError;
use super::apply::DocumentWrite;
use crate::Store;
use crate::catalog::{lock, write};
use crate::key::encode_key;
use crate::oplog::OplogEntry;

/// One document a transaction wrote, and its final state (none: deleted).
struct FinalState<'a> {
    /// The first entry that wrote it (its namespace and collection UUID).
    entry: &'a OplogEntry,
    key: Vec<u8>,
    document: Option<&'a Arc<Document>>,
}

impl Store {
    /// Applies the entries of one committed transaction (all at one optime): its catalog
    /// changes in order, then each document it wrote at its final state; then logs the
    /// entries, keeps the versions the commit replaced and marks the session's transaction
    /// committed.
    pub(super) fn apply_transaction(&self, entries: &[&OplogEntry]) -> Result<(), ApplyError> {
        let mut finals: Vec<FinalState<'_>> = Vec::new();
        let mut positions: HashMap<(&str, Vec<u8>), usize> = HashMap::new();
        for entry in entries {
            let Some(document_write) = DocumentWrite::of(entry)? else {
                self.apply_catalog_change(entry)?;
                continue;
            };
            let Some(id) = &entry.id else {
                return Err(ApplyError::new(entry, "the document write has no _id"));
            };
            let key = encode_key(id);
            let document = document_write.document();
            match positions.get(&(entry.ns.as_str(), key.clone())) {
                Some(position) => {
                    if let Some(state) = finals.get_mut(*position) {
                        state.document = document;
                    }
                }
                None => {
                    positions.insert((entry.ns.as_str(), key.clone()), finals.len());
                    finals.push(FinalState {
                        entry,
                        key,
                        document,
                    });
                }
            }
        }
        let mut replaced = Vec::with_capacity(finals.len());
        for state in &finals {
            if let Some(previous) = self.apply_final_state(state)? {
                replaced.push((state, previous));
            }
        }
        let mut oplog = lock(&self.oplog);
        entries
            .iter()
            .for_each(|entry| oplog.append((*entry).clone()));
        drop(oplog);
        let mut history = lock(&self.history);
        for (state, previous) in replaced {
            history.push(
                state.entry.op_time,
                &state.entry.ns,
                state.key.clone(),
                previous,
            );
        }
        drop(history);
        for state in &finals {
            self.transaction_registry
                .displace(&(state.entry.ns.clone(), state.key.clone()));
        }
        if let Some((entry, session)) = entries
            .iter()
            .find_map(|entry| entry.session.as_ref().map(|session| (*entry, session)))
        {
            self.apply_session(entry, session);
        }
        Ok(())
    }

    /// Brings one document to its final state; returns the version it replaced (`Some(None)`
    /// for an insert), or `None` when nothing changed (inserted then deleted).
    fn apply_final_state(
        &self,
        state: &FinalState<'_>,
    ) -> Result<Option<Option<Arc<Document>>>, ApplyError> {
        let entry = state.entry;
        let handle = self.entry_collection(entry)?;
        let mut collection = write(&handle);
        let current = collection
            .document_by_key(&state.key)
            .map(|(record, document)| (record, document.clone()));
        let refused = |error: crate::errors::CommandError| ApplyError::new(entry, error.message);
        Ok(match (current, state.document) {
            (None, Some(document)) => {
                collection.insert((**document).clone()).map_err(refused)?;
                Some(None)
            }
            (Some((record, previous)), Some(document)) => {
                collection
                    .replace(record, (**document).clone())
                    .map_err(refused)?;
                Some(Some(previous))
            }
            (Some((record, _)), None) => collection.remove(record).map(Some),
            (None, None) => None,
        })
    }
}
