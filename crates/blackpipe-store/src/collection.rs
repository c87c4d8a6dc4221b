//! One collection: documents in insertion order, the unique `_id` index and secondary indexes.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use bson::{Bson, Document, doc};

use super::capped::CappedLimits;
use super::change_signal::{ChangeSignal, ChangeSubscription};
use super::errors::{CommandError, StoreResult};
use super::index::{IndexKey, SecondaryIndex, same_key_pattern};
use super::key::encode_key;
use super::query::Filter;
use super::validation::{Validator, Write as ValidatedWrite};
use super::value_order::document_size;
use crate::code;

/// What an index entry's record id takes, in [`Collection::index_sizes`].
const RECORD_ID_BYTES: usize = 8;

/// A collection's documents and indexes. Documents are shared (`Arc`) so that queries and
/// cursors never copy a whole collection.
#[derive(Debug)]
pub(crate) struct Collection {
    pub(crate) ns: String,
    pub(crate) uuid: [u8; 16],
    pub(crate) options: Document,
    next_record: u64,
    /// Record id -> document; record ids grow, so iteration is insertion order.
    records: BTreeMap<u64, Arc<Document>>,
    /// Encoded `_id` -> record id.
    id_index: HashMap<Vec<u8>, u64>,
    secondary: Vec<SecondaryIndex>,
    data_size: usize,
    /// Set for a capped collection: the oldest documents go when an insert exceeds these.
    capped: Option<CappedLimits>,
    /// The validator the options set up, parsed once (see [`crate::validation`]).
    validator: Option<Arc<Validator>>,
    /// Signalled on every insert, so that tailable awaitData cursors wake on inserts instead of
    /// polling; dropped with the collection, which wakes them too.
    inserts: ChangeSignal,
}

impl Collection {
    pub(crate) fn new(ns: String, uuid: [u8; 16], options: Document) -> Collection {
        Collection {
            ns,
            uuid,
            capped: CappedLimits::of(&options),
            validator: Validator::of(&options).map(Arc::new),
            inserts: ChangeSignal::default(),
            options,
            next_record: 1,
            records: BTreeMap::new(),
            id_index: HashMap::new(),
            secondary: Vec::new(),
            data_size: 0,
        }
    }

    /// A private copy for a multi-document transaction: the same documents (shared, not
    /// copied) and indexes, with its own insert notifications (nobody tails a private copy).
    pub(crate) fn snapshot_copy(&self) -> Collection {
        Collection {
            ns: self.ns.clone(),
            uuid: self.uuid,
            options: self.options.clone(),
            next_record: self.next_record,
            records: self.records.clone(),
            id_index: self.id_index.clone(),
            secondary: self.secondary.clone(),
            data_size: self.data_size,
            capped: self.capped,
            validator: self.validator.clone(),
            inserts: ChangeSignal::default(),
        }
    }

    /// Sets the options `collMod` changes, and the validator they set up.
    pub(crate) fn modify_options(&mut self, changes: Document) {
        self.options.extend(changes);
        self.validator = Validator::of(&self.options).map(Arc::new);
    }

    /// Checks a document about to be written against the collection's validator, unless the
    /// write bypasses validation.
    ///
    /// # Errors
    /// DocumentValidationFailure (121), as [`Validator::check`].
    pub(crate) fn validate(
        &self,
        document: &Document,
        write: ValidatedWrite<'_>,
        bypass: bool,
    ) -> StoreResult<()> {
        match &self.validator {
            Some(validator) if !bypass => validator.check(document, write),
            _ => Ok(()),
        }
    }

    /// The document whose `_id` encodes to `key`, if any.
    pub(crate) fn document_by_key(&self, key: &[u8]) -> Option<(u64, &Arc<Document>)> {
        let record = *self.id_index.get(key)?;
        self.records.get(&record).map(|document| (record, document))
    }

    /// Puts document `key` back to `previous` (absent for `None`): rewinding a private copy
    /// to an earlier version (see [`crate::history`]). Restoring a state the collection
    /// held cannot break a unique index, so a refusal (impossible) leaves the copy unchanged.
    pub(crate) fn restore(&mut self, key: &[u8], previous: Option<&Document>) {
        let current = self.id_index.get(key).copied();
        match (current, previous) {
            (Some(record), Some(previous)) => {
                let _restored = self.replace(record, previous.clone());
            }
            (Some(record), None) => {
                self.remove(record);
            }
            (None, Some(previous)) => {
                let _restored = self.insert(previous.clone());
            }
            (None, None) => {}
        }
    }

    /// Whether the collection is capped (only those take tailable cursors).
    pub(crate) fn is_capped(&self) -> bool {
        self.capped.is_some()
    }

    /// The record id of the newest document (0 when empty): where a tailable cursor resumes.
    pub(crate) fn last_record(&self) -> u64 {
        self.records.keys().next_back().copied().unwrap_or(0)
    }

    /// The documents inserted after record `after` that match `filter`, in insertion order,
    /// with their record ids.
    pub(crate) fn matching_after(&self, after: u64, filter: &Filter) -> Vec<(u64, Arc<Document>)> {
        self.records
            .range(after.saturating_add(1)..)
            .filter(|(_, document)| filter.matches(document))
            .map(|(record, document)| (*record, document.clone()))
            .collect()
    }

    /// The newest document (the one just inserted, which capping never removes).
    pub(crate) fn newest(&self) -> Option<&Arc<Document>> {
        self.records.values().next_back()
    }

    /// A subscription that sees every later insert (the current one counts as seen).
    pub(crate) fn subscribe_inserts(&self) -> ChangeSubscription {
        self.inserts.subscribe()
    }

    pub(crate) fn len(&self) -> usize {
        self.records.len()
    }

    /// The sum of the documents' BSON sizes.
    pub(crate) fn data_size(&self) -> usize {
        self.data_size
    }

    pub(crate) fn index_count(&self) -> usize {
        1 + self.secondary.len()
    }

    /// The capped collection's limits, if it is capped.
    pub(crate) fn capped_limits(&self) -> Option<CappedLimits> {
        self.capped
    }

    /// Each index's name and size as blackpipe holds it in memory: the bytes of its encoded
    /// keys plus [`RECORD_ID_BYTES`] per entry; `_id_` first, then the others in creation order.
    pub(crate) fn index_sizes(&self) -> Vec<(String, usize)> {
        let entry = |key: &[u8]| key.len() + RECORD_ID_BYTES;
        let id_size = self.id_index.keys().map(|key| entry(key)).sum();
        let mut sizes = vec![("_id_".to_owned(), id_size)];
        for index in &self.secondary {
            let size = self
                .records
                .values()
                .flat_map(|document| index.keys_for(document))
                .map(|key| entry(&key.encoded))
                .sum();
            sizes.push((index.name.clone(), size));
        }
        sizes
    }

    pub(crate) fn get(&self, record: u64) -> Option<&Arc<Document>> {
        self.records.get(&record)
    }

    /// Looks a document up by `_id` through the index.
    pub(crate) fn record_by_id(&self, id: &Bson) -> Option<u64> {
        self.id_index.get(&encode_key(id)).copied()
    }

    /// Every document, in insertion order.
    pub(crate) fn documents(&self) -> impl Iterator<Item = &Arc<Document>> {
        self.records.values()
    }

    /// Record ids of the documents matching `filter`, in insertion order, at most `limit` of them.
    /// Filters that pin `_id` use the index instead of scanning.
    pub(crate) fn matching_records(&self, filter: &Filter, limit: Option<usize>) -> Vec<u64> {
        let limit = limit.unwrap_or(usize::MAX);
        if let Some(ids) = filter.id_candidates() {
            let mut records: Vec<u64> = ids.iter().filter_map(|id| self.record_by_id(id)).collect();
            records.sort_unstable();
            records.dedup();
            records.retain(|record| {
                self.records
                    .get(record)
                    .is_some_and(|document| filter.matches(document))
            });
            records.truncate(limit);
            return records;
        }
        self.records
            .iter()
            .filter(|(_, document)| filter.matches(document))
            .map(|(record, _)| *record)
            .take(limit)
            .collect()
    }

    /// The matching documents themselves (shared, not copied).
    pub(crate) fn matching_documents(
        &self,
        filter: &Filter,
        limit: Option<usize>,
    ) -> Vec<Arc<Document>> {
        self.matching_records(filter, limit)
            .into_iter()
            .filter_map(|record| self.records.get(&record).cloned())
            .collect()
    }

    fn id_conflict(&self, id: &Bson) -> CommandError {
        CommandError::duplicate_key(
            &self.ns,
            "_id_",
            &doc! { "_id": 1 },
            doc! { "_id": id.clone() },
        )
    }

    /// Inserts a document that already carries its `_id`.
    /// Appends a document to a collection that has no `_id` index and no other index (the
    /// op log, which mongod keeps without an `_id` index): no key is checked or recorded.
    pub(crate) fn append_unindexed(&mut self, document: Document) {
        let record = self.next_record;
        self.next_record += 1;
        self.data_size = self.data_size.saturating_add(document_size(&document));
        self.records.insert(record, Arc::new(document));
    }

    pub(crate) fn insert(&mut self, document: Document) -> StoreResult<()> {
        let size = document_size(&document);
        if self.capped.is_some_and(|limits| size > limits.max_bytes) {
            return Err(CommandError::bad_value(
                "object to insert exceeds cappedMaxSize",
            ));
        }
        let id = document.get("_id").cloned().unwrap_or(Bson::Null);
        let id_key = encode_key(&id);
        if self.id_index.contains_key(&id_key) {
            return Err(self.id_conflict(&id));
        }
        let record = self.next_record;
        let keys_per_index = self.secondary_keys(&document, record)?;
        for (index, keys) in self.secondary.iter_mut().zip(keys_per_index) {
            index.add(keys, record);
        }
        self.next_record += 1;
        self.data_size = self.data_size.saturating_add(size);
        self.id_index.insert(id_key, record);
        self.records.insert(record, Arc::new(document));
        self.cap();
        self.inserts.notify();
        Ok(())
    }

    /// The keys `document` has in each secondary index, in index order, checked against the
    /// unique indexes for `record`.
    ///
    /// # Errors
    /// A duplicate key error naming the first unique index where another record holds one of
    /// the keys.
    fn secondary_keys(&self, document: &Document, record: u64) -> StoreResult<Vec<Vec<IndexKey>>> {
        let mut keys_per_index = Vec::with_capacity(self.secondary.len());
        for index in &self.secondary {
            let keys = index.keys_for(document);
            if let Some(conflict) = index.conflict(&keys, record) {
                return Err(CommandError::duplicate_key(
                    &self.ns,
                    &index.name,
                    &index.key,
                    conflict.value.clone(),
                ));
            }
            keys_per_index.push(keys);
        }
        Ok(keys_per_index)
    }

    /// Removes the oldest documents of a capped collection until it is within its limits (the
    /// newest document always stays: it was checked to fit alone).
    fn cap(&mut self) {
        let Some(limits) = self.capped else {
            return;
        };
        while self.records.len() > 1 && limits.exceeded_by(self.records.len(), self.data_size) {
            let Some(oldest) = self.records.keys().next().copied() else {
                return;
            };
            self.remove(oldest);
        }
    }

    /// Replaces the document of a record (its `_id` is unchanged, checked by the caller).
    pub(crate) fn replace(&mut self, record: u64, document: Document) -> StoreResult<()> {
        let Some(old) = self.records.get(&record).cloned() else {
            return Ok(());
        };
        let new_keys = self.secondary_keys(&document, record)?;
        for (index, keys) in self.secondary.iter_mut().zip(new_keys) {
            let old_keys = index.keys_for(&old);
            index.remove(&old_keys, record);
            index.add(keys, record);
        }
        self.data_size =
            self.data_size.saturating_sub(document_size(&old)) + document_size(&document);
        self.records.insert(record, Arc::new(document));
        Ok(())
    }

    /// Removes a record, returning its document.
    pub(crate) fn remove(&mut self, record: u64) -> Option<Arc<Document>> {
        let document = self.records.remove(&record)?;
        if let Some(id) = document.get("_id") {
            self.id_index.remove(&encode_key(id));
        }
        for index in &mut self.secondary {
            let keys = index.keys_for(&document);
            index.remove(&keys, record);
        }
        self.data_size = self.data_size.saturating_sub(document_size(&document));
        Some(document)
    }

    /// The `listIndexes` entries, the `_id` index (or the clustered index) first.
    pub(crate) fn index_specs(&self) -> Vec<Document> {
        let mut specs = vec![super::clustered::id_index_spec(&self.options)];
        specs.extend(self.secondary.iter().map(|index| index.spec.clone()));
        specs
    }

    /// Adds an index; `Ok(false)` if an identical index already exists.
    pub(crate) fn create_index(&mut self, mut index: SecondaryIndex) -> StoreResult<bool> {
        if index.name == "_id_" || same_key_pattern(&index.key, &doc! { "_id": 1 }) {
            return Ok(false);
        }
        if let Some(existing) = self
            .secondary
            .iter()
            .find(|existing| existing.name == index.name)
        {
            if existing.same_definition(&index) {
                return Ok(false);
            }
            let code = if same_key_pattern(&existing.key, &index.key) {
                code::INDEX_OPTIONS_CONFLICT
            } else {
                code::INDEX_KEY_SPECS_CONFLICT
            };
            return Err(CommandError::new(
                code,
                format!(
                    "An existing index has the same name as the requested index. When index names are not specified, \
                     they are auto generated and can cause conflicts. Please refer to our documentation. Requested \
                     index: {}, existing index: {}",
                    super::errors::format_document(&index.spec),
                    super::errors::format_document(&existing.spec)
                ),
            ));
        }
        if let Some(existing) = self
            .secondary
            .iter()
            .find(|existing| same_key_pattern(&existing.key, &index.key))
        {
            if existing.same_definition(&index) {
                return Err(CommandError::new(
                    code::INDEX_OPTIONS_CONFLICT,
                    format!(
                        "Index already exists with a different name: {}",
                        existing.name
                    ),
                ));
            }
        }
        for (record, document) in &self.records {
            let keys = index.keys_for(document);
            if let Some(conflict) = index.conflict(&keys, *record) {
                let error = CommandError::duplicate_key(
                    &self.ns,
                    &index.name,
                    &index.key,
                    conflict.value.clone(),
                );
                return Err(CommandError {
                    message: format!(
                        "Index build failed: {} :: caused by :: {}",
                        self.ns, error.message
                    ),
                    ..error
                });
            }
            index.add(keys, *record);
        }
        self.secondary.push(index);
        Ok(true)
    }

    /// The secondary index with key pattern `key` (the first, when indexes differ only by
    /// collation).
    pub(crate) fn secondary_index(&self, key: &Document) -> Option<&SecondaryIndex> {
        self.secondary
            .iter()
            .find(|index| same_key_pattern(&index.key, key))
    }

    /// The secondary index named `name` or with key pattern `key`, with the documents (by
    /// record id) it indexes, for `collMod` to change.
    pub(crate) fn index_and_documents(
        &mut self,
        name: Option<&str>,
        key: Option<&Document>,
    ) -> Option<(&mut SecondaryIndex, &BTreeMap<u64, Arc<Document>>)> {
        let index = self.secondary.iter_mut().find(|index| {
            name.is_some_and(|name| index.name == name)
                || key.is_some_and(|key| same_key_pattern(&index.key, key))
        })?;
        Some((index, &self.records))
    }

    /// Drops a secondary index by name.
    pub(crate) fn drop_index(&mut self, name: &str) -> bool {
        let before = self.secondary.len();
        self.secondary.retain(|index| index.name != name);
        self.secondary.len() != before
    }

    /// The name of the index with this key pattern, if any.
    pub(crate) fn index_name_for_key(&self, key: &Document) -> Option<String> {
        if same_key_pattern(key, &doc! { "_id": 1 }) {
            return Some("_id_".to_owned());
        }
        self.secondary
            .iter()
            .find(|index| same_key_pattern(&index.key, key))
            .map(|index| index.name.clone())
    }

    /// Drops every secondary index.
    /// The names of the secondary indexes.
    pub(crate) fn secondary_index_names(&self) -> Vec<String> {
        self.secondary
            .iter()
            .map(|index| index.name.clone())
            .collect()
    }

    pub(crate) fn drop_all_indexes(&mut self) {
        self.secondary.clear();
    }
}
