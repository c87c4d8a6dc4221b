//! Server-side cursors: results are computed when the cursor opens and handed out in batches
//! with mongod's batching rules.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, DateTime, Document, doc};

use super::change_signal::ChangeSubscription;
use super::change_stream::StreamCursor;
use super::projection::Projection;
use super::query::Filter;
use super::value_order::document_size;

/// mongod's limit on the documents of one reply batch.
pub(crate) const MAX_BATCH_BYTES: usize = 16 * 1024 * 1024;

/// The first batch's default document count when the client sets no batchSize.
pub(crate) const DEFAULT_FIRST_BATCH: usize = 101;

/// One open cursor.
#[derive(Debug)]
pub(crate) struct OpenCursor {
    pub(crate) ns: String,
    pub(crate) remaining: VecDeque<Arc<Document>>,
    /// When the cursor was opened or last served a getMore (the caller's clock).
    pub(crate) last_used: DateTime,
    /// `noCursorTimeout`: the cursor never times out.
    pub(crate) no_timeout: bool,
    /// Set for a tailable cursor: where it resumes once `remaining` runs out.
    pub(crate) tail: Option<Tail>,
    /// Set for a change stream: its position in the op log and how it shapes events.
    pub(crate) stream: Option<Box<StreamCursor>>,
    /// Opened by a command with `maxTimeMS`: its getMores run under what is left of that
    /// limit (blackpipe keeps no clock here, so only `maxTimeAlwaysTimeOut` can end one).
    pub(crate) time_limited: bool,
}

/// What a tailable cursor on a capped collection returns after its first results: the
/// documents inserted since, that match its filter.
#[derive(Debug, Clone)]
pub(crate) struct Tail {
    pub(crate) db: String,
    pub(crate) collection: String,
    /// The collection's identity: one dropped and created again is not the one tailed.
    pub(crate) uuid: [u8; 16],
    pub(crate) filter: Filter,
    pub(crate) projection: Option<Projection>,
    /// The newest record the cursor has scanned past (matching or not).
    pub(crate) last_record: u64,
    /// `awaitData`: a getMore that finds nothing new waits for an insert.
    pub(crate) await_data: bool,
}

/// A tailable `awaitData` getMore that found nothing new. Its reply (an empty batch) stands
/// if nothing is inserted into the collection (for a change stream: nothing is written
/// anywhere) within [`InsertWait::max_wait`]; otherwise the caller runs the same getMore
/// again, as mongod wakes a waiting getMore on insert. The store itself never blocks: the
/// caller waits, holding no lock.
#[derive(Debug, Clone)]
pub struct InsertWait {
    changes: ChangeSubscription,
    max_wait: Duration,
}

impl PartialEq for InsertWait {
    fn eq(&self, other: &Self) -> bool {
        self.max_wait == other.max_wait && self.changes.same_signal(&other.changes)
    }
}

impl InsertWait {
    pub(crate) fn new(changes: ChangeSubscription, max_wait: Duration) -> InsertWait {
        InsertWait { changes, max_wait }
    }

    /// How long the getMore may wait: its `maxTimeMS`, or mongod's default of one second.
    pub fn max_wait(&self) -> Duration {
        self.max_wait
    }

    /// Completes once a document is inserted into the collection after the getMore looked
    /// (at once if one already was), or once the collection is dropped; for a change stream,
    /// once any write is applied after it looked.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: an insert seen by a cancelled call is still reported by the next one.
    pub async fn inserted(&mut self) {
        // Woken by a dropped collection too: the getMore run again reports it.
        self.changes.changed().await;
    }
}

/// Bytes of results that open cursors may hold on their own (documents a command built, not
/// those shared with a collection). Past it, opening a cursor closes the least recently used
/// ones, which then answer CursorNotFound as if killed: many cursors over large aggregation
/// results cannot exhaust memory.
pub(crate) const MAX_CURSOR_BYTES: usize = 1024 * 1024 * 1024;

/// The store's open cursors, shared by every simulated member.
#[derive(Debug)]
pub(crate) struct CursorRegistry {
    cursors: HashMap<i64, (OpenCursor, usize)>,
    /// Sum of the owned bytes of the open cursors.
    owned_bytes: usize,
    max_bytes: usize,
}

impl Default for CursorRegistry {
    fn default() -> Self {
        CursorRegistry::with_max_bytes(MAX_CURSOR_BYTES)
    }
}

/// Bytes of the documents only `remaining` holds (a document shared with a collection costs
/// nothing more while the cursor is open).
fn owned_bytes<'a>(documents: impl IntoIterator<Item = &'a Arc<Document>>) -> usize {
    documents
        .into_iter()
        .filter(|document| Arc::strong_count(document) == 1)
        .map(|document| document_size(document))
        .fold(0, usize::saturating_add)
}

impl CursorRegistry {
    /// A registry holding at most `max_bytes` of owned results.
    pub(crate) fn with_max_bytes(max_bytes: usize) -> CursorRegistry {
        CursorRegistry {
            cursors: HashMap::new(),
            owned_bytes: 0,
            max_bytes,
        }
    }

    /// Registers a cursor, first closing the least recently used ones if its results would
    /// pass the byte bound.
    pub(crate) fn insert(&mut self, id: i64, cursor: OpenCursor) {
        let size = owned_bytes(&cursor.remaining);
        while self.owned_bytes.saturating_add(size) > self.max_bytes {
            let oldest = self
                .cursors
                .iter()
                .min_by_key(|(_, (cursor, _))| cursor.last_used)
                .map(|(id, _)| *id);
            match oldest {
                Some(oldest) => {
                    self.remove(oldest);
                }
                None => break,
            }
        }
        self.owned_bytes = self.owned_bytes.saturating_add(size);
        self.cursors.insert(id, (cursor, size));
    }

    pub(crate) fn contains(&self, id: i64) -> bool {
        self.cursors.contains_key(&id)
    }

    pub(crate) fn is_time_limited(&self, id: i64) -> bool {
        self.cursors
            .get(&id)
            .is_some_and(|(cursor, _)| cursor.time_limited)
    }

    pub(crate) fn get_mut(&mut self, id: i64) -> Option<&mut OpenCursor> {
        self.cursors.get_mut(&id).map(|(cursor, _)| cursor)
    }

    pub(crate) fn remove(&mut self, id: i64) -> Option<OpenCursor> {
        let (cursor, size) = self.cursors.remove(&id)?;
        self.owned_bytes = self.owned_bytes.saturating_sub(size);
        Some(cursor)
    }

    pub(crate) fn len(&self) -> usize {
        self.cursors.len()
    }

    /// Appends results to an open cursor (a tailable cursor's new documents), counting the
    /// bytes only it holds; false if the cursor is gone.
    pub(crate) fn append(&mut self, id: i64, documents: Vec<Arc<Document>>) -> bool {
        let Some((cursor, size)) = self.cursors.get_mut(&id) else {
            return false;
        };
        let added = owned_bytes(&documents);
        cursor.remaining.extend(documents);
        *size = size.saturating_add(added);
        self.owned_bytes = self.owned_bytes.saturating_add(added);
        true
    }

    /// Removes every cursor idle for `timeout_millis` or longer at `now`, except `noCursorTimeout`
    /// ones, as mongod's cursor monitor does; returns how many were removed.
    pub(crate) fn reap_idle(&mut self, now: DateTime, timeout_millis: i64) -> usize {
        let idle: Vec<i64> = self
            .cursors
            .iter()
            .filter(|(_, (cursor, _))| {
                let idle = now
                    .timestamp_millis()
                    .saturating_sub(cursor.last_used.timestamp_millis());
                !cursor.no_timeout && idle >= timeout_millis
            })
            .map(|(id, _)| *id)
            .collect();
        for id in &idle {
            self.remove(*id);
        }
        idle.len()
    }
}

/// A batch taken from a cursor's remaining results.
pub(crate) struct Batch {
    pub(crate) documents: Vec<Arc<Document>>,
    /// The batch stopped because it reached its document count or byte limit, so (like mongod,
    /// which does not look ahead) the cursor stays open even if nothing remains.
    pub(crate) stopped_early: bool,
}

/// Takes up to `max_count` documents (and at most 16 MiB, but always one document if any).
pub(crate) fn take_batch(
    remaining: &mut VecDeque<Arc<Document>>,
    max_count: Option<usize>,
) -> Batch {
    let max_count = max_count.unwrap_or(usize::MAX);
    let mut documents = Vec::new();
    let mut bytes = 0;
    while documents.len() < max_count {
        let Some(next) = remaining.front() else {
            return Batch {
                documents,
                stopped_early: false,
            };
        };
        let size = document_size(next);
        if !documents.is_empty() && bytes + size > MAX_BATCH_BYTES {
            return Batch {
                documents,
                stopped_early: true,
            };
        }
        bytes += size;
        if let Some(next) = remaining.pop_front() {
            documents.push(next);
        }
    }
    Batch {
        documents,
        stopped_early: true,
    }
}

/// `{cursor: {firstBatch|nextBatch: [...], id, ns}, ok: 1.0}`.
pub(crate) fn cursor_reply(
    batch_field: &str,
    documents: Vec<Arc<Document>>,
    id: i64,
    ns: &str,
) -> Document {
    let batch: Vec<Bson> = documents
        .into_iter()
        .map(|document| Bson::Document(Arc::unwrap_or_clone(document)))
        .collect();
    let mut cursor = Document::new();
    cursor.insert(batch_field, batch);
    cursor.insert("id", Bson::Int64(id));
    cursor.insert("ns", ns);
    doc! { "cursor": cursor, "ok": 1.0 }
}
