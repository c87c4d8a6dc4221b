//! Multi-document transactions.
//!
//! A command with `lsid`, `txnNumber` and `autocommit: false` belongs to a transaction of its
//! session; `startTransaction: true` on the first command opens it, `commitTransaction` and
//! `abortTransaction` (keyed by `lsid` + `txnNumber`) end it. The transaction lives in its
//! session's record next to the retryable-write history (they share the txnNumber sequence),
//! so it survives the stepdown of a member but not the end of its session.
//!
//! # Snapshot isolation with private copies
//!
//! A transaction reads as of its snapshot: the `atClusterTime` of a snapshot read concern, else
//! the op log position when it first touches a collection. Each collection it touches is copied
//! privately at first touch (`Collection::snapshot_copy`: the documents are shared `Arc`s, so
//! a copy costs the maps, not the documents) and rewound to the snapshot through the store's
//! recent versions ([`crate::history`]; SnapshotTooOld, labelled
//! TransientTransactionError, when they no longer reach back that far). Every statement then
//! runs unchanged through the ordinary command code against those copies. Copies are cheap to
//! take and need no change to the collection storage; persistent maps would make them O(1)
//! instead of O(documents), at the cost of rewriting that storage.
//!
//! Writes go to the private copies; the transaction remembers which documents it wrote, in
//! first-write order. Conflicts are found when the transaction writes, as mongod does (first
//! writer wins): a document another open transaction wrote, or one written by anyone since the
//! snapshot (the op log tells; if it no longer reaches back that far, that counts as a conflict)
//! fails the statement with WriteConflict + TransientTransactionError and aborts the
//! transaction. A non-transactional write to a document an open transaction wrote goes ahead and
//! aborts that transaction (mongod would make the write wait; blackpipe's store never waits), so
//! a transaction never commits over a write it did not see: its next statement or its commit
//! gets NoSuchTransaction + TransientTransactionError.
//!
//! `commitTransaction` takes the store's commit gate exclusively (every other command holds it
//! shared), so no reader sees part of a transaction. It applies each written document's final
//! state to the shared collections through their ordinary insert, replace and remove, then
//! records one op log entry per document write of each statement, in statement order (as
//! mongod's `applyOps` lists each operation: a document inserted then updated shows an insert
//! and an update), stamped with the transaction's `lsid` and `txnNumber`. All of them, and the
//! history versions the commit replaced,
//! carry one optime (as mongod's single `applyOps` entry does), so a read at any cluster time
//! sees the whole transaction or none of it, and its change events share one `clusterTime`,
//! told apart in their resume tokens by the entry's index. If a shared collection refuses a write (a unique
//! secondary key taken since the snapshot), the writes already applied are undone and the commit
//! fails with WriteConflict: never half applied.
//!
//! # Bounds
//!
//! At most [`MAX_TRANSACTION_DOCUMENTS`] documents written, as many statement writes kept for
//! the op log, and [`MAX_TRANSACTION_BYTES`] of written documents (their final states), as many
//! of statement writes, per transaction (TransactionTooLarge, 334);
//! [`registry::MAX_OPEN_TRANSACTIONS`] holding state at once (aborted ones count until the
//! reaper or their session drops them) and [`registry::MAX_COPIED_DOCUMENTS`] documents in all
//! their private copies (ExceededMemoryLimit, 146). A transaction older than the store's
//! `transactionLifetimeLimitSeconds` (60 s by default) is aborted.

pub(crate) mod blocking;
mod commit;
mod fields;
mod private;
pub(crate) mod registry;
mod statement;

pub(crate) use self::fields::transaction_fields;
pub(crate) use self::private::OpenTransaction;
pub(crate) use self::registry::{AbortReason, TransactionRegistry};

/// The most documents one transaction may write (TransactionTooLarge past it).
pub(crate) const MAX_TRANSACTION_DOCUMENTS: usize = 100_000;

/// The most bytes of written documents (their final states) one transaction may hold.
pub(crate) const MAX_TRANSACTION_BYTES: usize = 64 * 1024 * 1024;

/// The transaction state of a session, for its current txnNumber.
#[derive(Debug, Default)]
pub(crate) enum TransactionState {
    /// No transaction with the current txnNumber (none yet, or a retryable write).
    #[default]
    None,
    /// Open, with its private state.
    Open(Box<OpenTransaction>),
    /// Committed: a retried commit answers ok again.
    Committed,
    /// Aborted, by the client or by the store.
    Aborted,
}

impl TransactionState {
    /// Drops the state of a transaction aborted from outside (its private copies), leaving
    /// it aborted; the store's reaper calls this so aborted transactions do not hold memory
    /// until their session's next command.
    pub(crate) fn release_if_aborted(&mut self) {
        if let TransactionState::Open(txn) = self {
            if txn.registration.aborted().is_some() {
                *self = TransactionState::Aborted;
            }
        }
    }
}

/// Which commands may run inside a transaction (mongod's list; `create` and `createIndexes`
/// only for collections the transaction creates).
pub(crate) fn allowed_in_transaction(name: &str) -> bool {
    matches!(
        name,
        "find"
            | "getMore"
            | "killCursors"
            | "insert"
            | "update"
            | "delete"
            | "bulkWrite"
            | "findAndModify"
            | "findandmodify"
            | "aggregate"
            | "distinct"
            | "create"
            | "createIndexes"
            | "commitTransaction"
            | "abortTransaction"
    )
}
