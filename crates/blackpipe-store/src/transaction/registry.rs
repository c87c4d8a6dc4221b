//! The open transactions of a store: which one holds which document, and which were aborted
//! from outside (a non-transactional write, their lifetime, a stepdown) while idle.
//!
//! An open transaction's state lives in its session's record, locked only by the commands of
//! that session. Others must not wait for that lock (a non-transactional write holding a
//! collection lock would deadlock against a transaction statement reading that collection), so
//! they reach an open transaction only through this registry: one short mutex, never held while
//! another lock is taken.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use crate::catalog::lock;
use crate::code;
use crate::errors::{CommandError, StoreResult};

/// At most this many transactions are open at once (blackpipe's own bound: each holds private
/// copies of the collections it touched). Past it, starting one fails with ExceededMemoryLimit.
pub(crate) const MAX_OPEN_TRANSACTIONS: usize = 10_000;

/// At most this many documents are referenced by the private collection copies of all
/// transactions together (each costs its share of a copy's maps, about 100 bytes, the documents
/// themselves being shared). Past it, a transaction's first touch of a collection fails with
/// ExceededMemoryLimit.
pub(crate) const MAX_COPIED_DOCUMENTS: usize = 10_000_000;

/// A document: its namespace and encoded `_id`.
pub(crate) type DocumentKey = (String, Vec<u8>);

/// Why an open transaction was aborted by someone else than its own session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AbortReason {
    /// A non-transactional write changed a document the transaction had written.
    Displaced = 1,
    /// It outlived `transactionLifetimeLimitSeconds`.
    Expired = 2,
    /// Its primary stepped down or was killed.
    SteppedDown = 3,
}

impl AbortReason {
    fn from_code(code: u8) -> Option<AbortReason> {
        match code {
            1 => Some(AbortReason::Displaced),
            2 => Some(AbortReason::Expired),
            3 => Some(AbortReason::SteppedDown),
            _ => None,
        }
    }

    /// Wording for the NoSuchTransaction a later statement or commit gets.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            AbortReason::Displaced => "a write outside the transaction changed a document it wrote",
            AbortReason::Expired => "it exceeded transactionLifetimeLimitSeconds",
            AbortReason::SteppedDown => "the primary stepped down",
        }
    }
}

#[derive(Debug)]
struct OpenEntry {
    aborted: Arc<AtomicU8>,
    expires_millis: i64,
    holds: Vec<DocumentKey>,
    /// Documents in the transaction's private copies (see [`MAX_COPIED_DOCUMENTS`]).
    copied: usize,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    open: HashMap<u64, OpenEntry>,
    holders: HashMap<DocumentKey, u64>,
    /// The sum of the entries' `copied`.
    copied: usize,
    /// Since the store started (serverStatus's `transactions` section).
    counts: TransactionCounts,
}

/// How many transactions a store started, committed and aborted since it started.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct TransactionCounts {
    /// Transactions started.
    pub started: u64,
    /// Transactions committed.
    pub committed: u64,
    /// Transactions aborted: by `abortTransaction`, a failed commit, a newer transaction on
    /// the session, or from outside (a conflicting write, their lifetime, a stepdown).
    pub aborted: u64,
}

impl OpenEntry {
    fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::SeqCst) != 0
    }
}

impl Inner {
    /// Marks transaction `id` aborted and releases its documents. Its entry stays until its
    /// state is dropped, so that aborted transactions still count against
    /// [`MAX_OPEN_TRANSACTIONS`] while they hold memory.
    fn abort(&mut self, id: u64, reason: AbortReason) {
        let Some(entry) = self.open.get_mut(&id) else {
            return;
        };
        if entry.is_aborted() {
            return;
        }
        entry.aborted.store(reason as u8, Ordering::SeqCst);
        self.counts.aborted += 1;
        for key in std::mem::take(&mut entry.holds) {
            self.holders.remove(&key);
        }
    }
}

/// See the module documentation.
#[derive(Debug)]
pub(crate) struct TransactionRegistry {
    inner: Mutex<Inner>,
    /// [`MAX_COPIED_DOCUMENTS`] outside tests.
    max_copied: usize,
}

impl Default for TransactionRegistry {
    fn default() -> Self {
        TransactionRegistry {
            inner: Mutex::default(),
            max_copied: MAX_COPIED_DOCUMENTS,
        }
    }
}

/// One open transaction's place in the registry; dropping it (commit, abort, a newer
/// txnNumber, session expiry) releases the transaction's documents.
#[derive(Debug)]
pub(crate) struct Registration {
    id: u64,
    aborted: Arc<AtomicU8>,
    registry: Arc<TransactionRegistry>,
    /// Set when the transaction committed: dropped without it, it was aborted.
    committed: bool,
}

impl Registration {
    /// Records that the transaction committed (it is counted when the registration drops).
    pub(crate) fn mark_committed(&mut self) {
        self.committed = true;
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        let mut inner = lock(&self.registry.inner);
        if let Some(entry) = inner.open.remove(&self.id) {
            if self.committed {
                inner.counts.committed += 1;
            } else if !entry.is_aborted() {
                // Aborted from outside was counted when it happened.
                inner.counts.aborted += 1;
            }
            inner.copied = inner.copied.saturating_sub(entry.copied);
            for key in entry.holds {
                inner.holders.remove(&key);
            }
        }
    }
}

impl Registration {
    /// Why the transaction was aborted from outside, if it was.
    pub(crate) fn aborted(&self) -> Option<AbortReason> {
        AbortReason::from_code(self.aborted.load(Ordering::SeqCst))
    }

    /// Accounts for a private copy of `documents` documents.
    ///
    /// # Errors
    ///
    /// ExceededMemoryLimit (146) when all transactions' copies would pass
    /// [`MAX_COPIED_DOCUMENTS`].
    pub(crate) fn charge_copy(&self, documents: usize) -> StoreResult<()> {
        let max = self.registry.max_copied;
        let mut inner = lock(&self.registry.inner);
        let total = inner.copied.saturating_add(documents);
        if total > max {
            return Err(CommandError::new(
                code::EXCEEDED_MEMORY_LIMIT,
                format!("blackpipe's open transactions may copy at most {max} documents in all"),
            ));
        }
        inner.copied = total;
        if let Some(entry) = inner.open.get_mut(&self.id) {
            entry.copied = entry.copied.saturating_add(documents);
        }
        Ok(())
    }

    /// Takes document `key` for this transaction (first writer wins).
    ///
    /// # Errors
    ///
    /// The WriteConflict to report when another open transaction holds it, or when this one
    /// was aborted meanwhile.
    pub(crate) fn hold(&self, key: DocumentKey) -> StoreResult<()> {
        let mut inner = lock(&self.registry.inner);
        match inner.holders.get(&key) {
            Some(holder) if *holder == self.id => return Ok(()),
            Some(_) => return Err(write_conflict()),
            None => {}
        }
        let Some(entry) = inner
            .open
            .get_mut(&self.id)
            .filter(|entry| !entry.is_aborted())
        else {
            return Err(write_conflict());
        };
        entry.holds.push(key.clone());
        inner.holders.insert(key, self.id);
        Ok(())
    }
}

/// WriteConflict (112), which a transaction statement reports with TransientTransactionError.
pub(crate) fn write_conflict() -> CommandError {
    CommandError::new(
        code::WRITE_CONFLICT,
        "Write conflict during plan execution and yielding is disabled. :: Please retry your operation or \
         multi-document transaction.",
    )
}

impl TransactionRegistry {
    /// Registers a new open transaction that expires at `expires_millis` (callers' clock).
    ///
    /// # Errors
    ///
    /// ExceededMemoryLimit (146) past [`MAX_OPEN_TRANSACTIONS`].
    pub(crate) fn open(self: &Arc<Self>, expires_millis: i64) -> StoreResult<Registration> {
        let mut inner = lock(&self.inner);
        if inner.open.len() >= MAX_OPEN_TRANSACTIONS {
            return Err(CommandError::new(
                code::EXCEEDED_MEMORY_LIMIT,
                format!("blackpipe keeps at most {MAX_OPEN_TRANSACTIONS} transactions open"),
            ));
        }
        inner.next_id = inner.next_id.wrapping_add(1);
        inner.counts.started += 1;
        let id = inner.next_id;
        let aborted = Arc::new(AtomicU8::new(0));
        inner.open.insert(
            id,
            OpenEntry {
                aborted: aborted.clone(),
                expires_millis,
                holds: Vec::new(),
                copied: 0,
            },
        );
        Ok(Registration {
            id,
            aborted,
            registry: self.clone(),
            committed: false,
        })
    }

    /// A non-transactional write changed document `key`: the open transaction holding it, if
    /// any, is aborted (it could otherwise commit over the write). Called after the write is in
    /// the op log, so a transaction taking the document later sees the write there instead.
    pub(crate) fn displace(&self, key: &DocumentKey) {
        let mut inner = lock(&self.inner);
        if let Some(holder) = inner.holders.get(key).copied() {
            inner.abort(holder, AbortReason::Displaced);
        }
    }

    /// Aborts every open transaction whose lifetime ended at `now_millis`; returns how many.
    pub(crate) fn abort_expired(&self, now_millis: i64) -> usize {
        let mut inner = lock(&self.inner);
        let expired: Vec<u64> = inner
            .open
            .iter()
            .filter(|(_, entry)| !entry.is_aborted() && entry.expires_millis <= now_millis)
            .map(|(id, _)| *id)
            .collect();
        for id in &expired {
            inner.abort(*id, AbortReason::Expired);
        }
        expired.len()
    }

    /// Aborts every open transaction (a stepdown or kill of the primary); returns how many.
    pub(crate) fn abort_all(&self, reason: AbortReason) -> usize {
        let mut inner = lock(&self.inner);
        let ids: Vec<u64> = inner
            .open
            .iter()
            .filter(|(_, entry)| !entry.is_aborted())
            .map(|(id, _)| *id)
            .collect();
        for id in &ids {
            inner.abort(*id, reason);
        }
        ids.len()
    }

    /// A registry with another copy bound than [`MAX_COPIED_DOCUMENTS`].
    #[cfg(test)]
    pub(crate) fn with_copy_limit(max_copied: usize) -> TransactionRegistry {
        TransactionRegistry {
            inner: Mutex::default(),
            max_copied,
        }
    }

    /// How many transactions hold state, aborted ones included.
    #[cfg(test)]
    pub(crate) fn held_count(&self) -> usize {
        lock(&self.inner).open.len()
    }

    /// How many transactions are open and not aborted.
    /// Transactions started, committed and aborted so far.
    pub(crate) fn counts(&self) -> TransactionCounts {
        lock(&self.inner).counts
    }

    pub(crate) fn open_count(&self) -> usize {
        lock(&self.inner)
            .open
            .values()
            .filter(|entry| !entry.is_aborted())
            .count()
    }
}
