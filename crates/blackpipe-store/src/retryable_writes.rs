//! The retryable-write table (mongod's "transaction table", `config.transactions`), keyed by
//! `(lsid, txnNumber)`. Each session's record also carries the state of its multi-document
//! transaction (the `transaction` module), as mongod keeps both with the session.
//!
//! Keyed by the session id (`lsid.id`, a UUID); each session remembers its highest `txnNumber`
//! and, for that number, the outcome of every statement that succeeded, by statement id (like
//! mongod, which records each statement in its oplog entry). A retried command replays the
//! recorded statements without applying them again and executes the others; a command with an
//! older `txnNumber` fails with TransactionTooOld. Failed statements are not recorded, so a retry
//! executes them again, as mongod does.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::{Arc, Mutex, OnceLock};

use bson::{Bson, DateTime, Document, spec::BinarySubtype};

use super::catalog::lock;
use super::errors::{CommandError, StoreResult, type_name};
use super::value_order::{document_size, value_size};
use crate::code;

/// What a statement did, as replayed on retry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum StatementOutcome {
    Inserted,
    Updated {
        matched: i64,
        modified: i64,
        upserted_id: Option<Bson>,
    },
    Deleted {
        count: i64,
    },
    /// The fields of a findAndModify reply (`lastErrorObject`, `value`).
    FindAndModify(Document),
    /// A statement applied on another member and replicated here: its outcome is the one that
    /// member's command puts in the cell (see [`crate::replication`]).
    Replicated(Arc<OnceLock<StatementOutcome>>),
}

impl StatementOutcome {
    /// The oplog op type mongod would have recorded for the statement (`i`, `u` or `d`).
    pub(crate) fn op_type(&self) -> &'static str {
        match self {
            StatementOutcome::Inserted
            | StatementOutcome::Updated {
                upserted_id: Some(_),
                ..
            } => "i",
            StatementOutcome::Updated { .. } => "u",
            StatementOutcome::Deleted { .. } => "d",
            StatementOutcome::Replicated(cell) => cell.get().map_or("u", StatementOutcome::op_type),
            StatementOutcome::FindAndModify(reply) => {
                let last_error = reply.get_document("lastErrorObject").ok();
                if last_error.is_some_and(|last_error| last_error.contains_key("upserted")) {
                    "i"
                } else if last_error
                    .is_some_and(|last_error| last_error.contains_key("updatedExisting"))
                {
                    "u"
                } else {
                    "d"
                }
            }
        }
    }
}

/// Bytes of the statement outcomes one session may hold for its current txnNumber. Past it
/// the history is dropped and marked incomplete: a retry of that txnNumber then fails with
/// IncompleteTransactionHistory (217) instead of applying anything twice.
pub(crate) const MAX_SESSION_HISTORY_BYTES: usize = 32 * 1024 * 1024;

/// Bytes of statement outcomes the whole table may hold. Past it, the histories of the least
/// recently used sessions are dropped (and marked incomplete) until a quarter is freed.
pub(crate) const MAX_TABLE_HISTORY_BYTES: usize = 128 * 1024 * 1024;

/// mongod's `maxSessions`: how many logical sessions may be remembered at once.
pub(crate) const MAX_SESSIONS: usize = 1_000_000;

/// Approximate bytes one recorded statement costs besides what its outcome holds.
const STATEMENT_OVERHEAD_BYTES: usize = 64;

/// One session's retryable-write history.
#[derive(Debug)]
pub(crate) struct SessionRecord {
    pub(crate) txn_number: Option<i64>,
    /// The multi-document transaction of `txn_number`, if it is one.
    pub(crate) transaction: super::transaction::TransactionState,
    statements: HashMap<i32, StatementOutcome>,
    /// Bytes held by `statements`, also counted in the table's shared total.
    bytes: usize,
    table_bytes: Arc<AtomicUsize>,
    /// The history of `txn_number` was dropped to bound memory.
    history_incomplete: bool,
    /// The most bytes `statements` may hold ([`MAX_SESSION_HISTORY_BYTES`] outside tests).
    max_bytes: usize,
}

impl Drop for SessionRecord {
    fn drop(&mut self) {
        self.table_bytes
            .fetch_sub(self.bytes, AtomicOrdering::Relaxed);
    }
}

impl SessionRecord {
    fn new(table_bytes: Arc<AtomicUsize>, max_bytes: usize) -> SessionRecord {
        SessionRecord {
            txn_number: None,
            transaction: super::transaction::TransactionState::None,
            statements: HashMap::new(),
            bytes: 0,
            table_bytes,
            history_incomplete: false,
            max_bytes,
        }
    }

    /// Starts or resumes `txn_number`: a newer number forgets the previous history, an older one
    /// is rejected, and the current one is refused if its history was dropped (a retry could
    /// otherwise apply a statement twice).
    pub(crate) fn begin(&mut self, txn_number: i64, session: &SessionKey) -> StoreResult<()> {
        match self.txn_number {
            Some(current) if txn_number < current => Err(CommandError::new(
                code::TRANSACTION_TOO_OLD,
                format!(
                    "Retryable write with txnNumber {txn_number} is prohibited on session {} because a newer retryable \
                     write with txnNumber {current} has already started on this session.",
                    session.display
                ),
            )),
            Some(current) if txn_number == current && self.history_incomplete => {
                Err(CommandError::new(
                    code::INCOMPLETE_TRANSACTION_HISTORY,
                    format!(
                        "Incomplete history detected for transaction {txn_number} on session {}",
                        session.display
                    ),
                ))
            }
            Some(current) if txn_number == current => Ok(()),
            _ => {
                self.txn_number = Some(txn_number);
                // A newer txnNumber implicitly aborts the open transaction, if any.
                self.transaction = super::transaction::TransactionState::None;
                self.forget_statements();
                self.history_incomplete = false;
                Ok(())
            }
        }
    }

    pub(crate) fn executed(&self, statement: i32) -> Option<&StatementOutcome> {
        match self.statements.get(&statement)? {
            // Not filled yet: the statement's command has not replied, so nobody retries it.
            StatementOutcome::Replicated(cell) => cell.get(),
            outcome => Some(outcome),
        }
    }

    /// Records a statement's outcome; past the session's byte bound the history is dropped
    /// instead and marked incomplete.
    pub(crate) fn record(&mut self, statement: i32, outcome: StatementOutcome) {
        if self.history_incomplete {
            return;
        }
        let size = outcome.size();
        if self.bytes.saturating_add(size) > self.max_bytes {
            self.drop_history();
            return;
        }
        self.bytes += size;
        self.table_bytes.fetch_add(size, AtomicOrdering::Relaxed);
        if let Some(replaced) = self.statements.insert(statement, outcome) {
            self.release(replaced.size());
        }
    }

    /// A copy for another store's table (a fork): the txnNumber, its recorded statements and
    /// a finished transaction's state; an open transaction is not copied (it was never
    /// replicated, so the fork knows nothing of it).
    fn copy(&self, table_bytes: Arc<AtomicUsize>) -> SessionRecord {
        use super::transaction::TransactionState;
        let transaction = match self.transaction {
            TransactionState::Committed => TransactionState::Committed,
            TransactionState::Aborted => TransactionState::Aborted,
            TransactionState::None | TransactionState::Open(_) => TransactionState::None,
        };
        table_bytes.fetch_add(self.bytes, AtomicOrdering::Relaxed);
        SessionRecord {
            txn_number: self.txn_number,
            transaction,
            statements: self.statements.clone(),
            bytes: self.bytes,
            table_bytes,
            history_incomplete: self.history_incomplete,
            max_bytes: self.max_bytes,
        }
    }

    /// Forgets the current txnNumber's outcomes and marks its history incomplete.
    fn drop_history(&mut self) {
        self.forget_statements();
        self.history_incomplete = true;
    }

    fn forget_statements(&mut self) {
        self.statements = HashMap::new();
        let bytes = self.bytes;
        self.release(bytes);
    }

    fn release(&mut self, size: usize) {
        self.bytes = self.bytes.saturating_sub(size);
        self.table_bytes.fetch_sub(size, AtomicOrdering::Relaxed);
    }
}

impl StatementOutcome {
    /// Approximate bytes the outcome holds in the table.
    fn size(&self) -> usize {
        let held = match self {
            // A replicated outcome is counted as the cell alone, at a size that cannot change
            // once recorded; the applier records the outcome itself whenever it is known.
            StatementOutcome::Inserted
            | StatementOutcome::Deleted { .. }
            | StatementOutcome::Replicated(_) => 0,
            StatementOutcome::Updated { upserted_id, .. } => {
                upserted_id.as_ref().map_or(0, value_size)
            }
            StatementOutcome::FindAndModify(reply) => document_size(reply),
        };
        STATEMENT_OVERHEAD_BYTES + held
    }
}

/// The identity of a logical session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SessionKey {
    /// `lsid.id`'s 16 bytes, then `lsid.uid`'s when the command gave one.
    bytes: Vec<u8>,
    pub(crate) display: String,
}

/// SHA-256 of the empty string: the `uid` mongod gives the sessions of an unauthenticated
/// client (the digest of the user name, which is empty).
const UNAUTHENTICATED_UID: [u8; 32] = [
    0xe3, 0xb0, 0xc4, 0x42, 0x98, 0xfc, 0x1c, 0x14, 0x9a, 0xfb, 0xf4, 0xc8, 0x99, 0x6f, 0xb9, 0x24,
    0x27, 0xae, 0x41, 0xe4, 0x64, 0x9b, 0x93, 0x4c, 0xa4, 0x95, 0x99, 0x1b, 0x78, 0x52, 0xb8, 0x55,
];

impl SessionKey {
    /// The session's `_id` as mongod's session cache lists it: `{id: UUID, uid: BinData}`.
    pub(crate) fn cache_id(&self) -> Document {
        let (id, uid) = self.bytes.split_at(self.bytes.len().min(16));
        let uid = if uid.is_empty() {
            &UNAUTHENTICATED_UID[..]
        } else {
            uid
        };
        bson::doc! {
            "id": bson::Binary { subtype: BinarySubtype::Uuid, bytes: id.to_vec() },
            "uid": bson::Binary { subtype: BinarySubtype::Generic, bytes: uid.to_vec() },
        }
    }
}

/// The `lsid` and `txnNumber` of a retryable write.
#[derive(Debug, Clone)]
pub(crate) struct RetryableWrite {
    pub(crate) session: SessionKey,
    pub(crate) txn_number: i64,
}

/// Reads `lsid`/`txnNumber` from a command. `Ok(None)` when the command is not a retryable
/// write (no txnNumber); errors mirror mongod's parsing of these fields.
pub(crate) fn retryable_write_of(command: &Document) -> StoreResult<Option<RetryableWrite>> {
    let Some(txn_number) = command.get("txnNumber") else {
        return Ok(None);
    };
    let Bson::Int64(txn_number) = txn_number else {
        return Err(CommandError::type_mismatch(format!(
            "BSON field 'OperationSessionInfo.txnNumber' is the wrong type '{}', expected type 'long'",
            type_name(txn_number)
        )));
    };
    if *txn_number < 0 {
        return Err(CommandError::bad_value(format!(
            "Transaction number cannot be negative: {txn_number}"
        )));
    }
    let Some(lsid) = command.get("lsid") else {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            "Transaction number requires a session ID to also be specified",
        ));
    };
    let Bson::Document(lsid) = lsid else {
        return Err(CommandError::type_mismatch(format!(
            "BSON field 'OperationSessionInfo.lsid' is the wrong type '{}', expected type 'object'",
            type_name(lsid)
        )));
    };
    let session = session_key(lsid)?;
    Ok(Some(RetryableWrite {
        session,
        txn_number: *txn_number,
    }))
}

/// The identity of the session `lsid` names; errors mirror mongod's parsing of `lsid.id`.
pub(crate) fn session_key(lsid: &Document) -> StoreResult<SessionKey> {
    match lsid.get("id") {
        Some(Bson::Binary(binary))
            if binary.subtype == BinarySubtype::Uuid && binary.bytes.len() == 16 =>
        {
            let mut bytes = binary.bytes.clone();
            // Authenticated sessions are also keyed by user; blackpipe has no users but keeps
            // the field in the key so distinct `uid`s never share a history.
            if let Some(Bson::Binary(uid)) = lsid.get("uid") {
                bytes.extend_from_slice(&uid.bytes);
            }
            Ok(SessionKey {
                display: uuid_text(&binary.bytes),
                bytes,
            })
        }
        Some(other) => Err(CommandError::type_mismatch(format!(
            "BSON field 'OperationSessionInfo.lsid.id' is the wrong type '{}', expected type 'uuid'",
            type_name(other)
        ))),
        None => Err(CommandError::new(
            code::IDL_MISSING_FIELD,
            "BSON field 'OperationSessionInfo.lsid.id' is missing but a required field",
        )),
    }
}

fn uuid_text(bytes: &[u8]) -> String {
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    if hex.len() != 32 {
        return hex;
    }
    format!(
        "{}-{}-{}-{}-{}",
        &hex[..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..]
    )
}

/// A session's record and when it was last checked out (callers' clock, ms).
#[derive(Debug)]
struct SessionEntry {
    record: Arc<Mutex<SessionRecord>>,
    last_used_millis: i64,
}

/// Every session's record; each record has its own lock, held for the whole write so that two
/// attempts of the same statement cannot both apply it (mongod checks sessions out the same way).
///
/// Bounded: at most [`MAX_SESSIONS`] sessions, [`MAX_SESSION_HISTORY_BYTES`] of outcomes per
/// session and [`MAX_TABLE_HISTORY_BYTES`] in all; sessions idle past the session timeout are
/// forgotten by [`RetryableWriteTable::expire_idle`].
#[derive(Debug)]
pub(crate) struct RetryableWriteTable {
    sessions: Mutex<HashMap<SessionKey, SessionEntry>>,
    history_bytes: Arc<AtomicUsize>,
    limits: HistoryLimits,
}

/// Byte bounds of the recorded outcomes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HistoryLimits {
    pub(crate) per_session: usize,
    pub(crate) total: usize,
}

impl Default for RetryableWriteTable {
    fn default() -> Self {
        RetryableWriteTable::with_limits(HistoryLimits {
            per_session: MAX_SESSION_HISTORY_BYTES,
            total: MAX_TABLE_HISTORY_BYTES,
        })
    }
}

impl RetryableWriteTable {
    /// A table with other byte bounds than mongod-sized defaults (for tests).
    pub(crate) fn with_limits(limits: HistoryLimits) -> RetryableWriteTable {
        RetryableWriteTable {
            sessions: Mutex::new(HashMap::new()),
            history_bytes: Arc::new(AtomicUsize::new(0)),
            limits,
        }
    }

    /// Bytes of outcomes the table holds.
    pub(crate) fn history_bytes(&self) -> usize {
        self.history_bytes.load(AtomicOrdering::Relaxed)
    }

    /// Checks out the record of session `key` at wall time `now` (creating it if new).
    ///
    /// # Errors
    ///
    /// TooManyLogicalSessions (261) when a new session would pass [`MAX_SESSIONS`].
    pub(crate) fn session(
        &self,
        key: &SessionKey,
        now: DateTime,
    ) -> StoreResult<Arc<Mutex<SessionRecord>>> {
        let mut sessions = lock(&self.sessions);
        if self.history_bytes() > self.limits.total {
            self.drop_oldest_histories(&sessions);
        }
        if !sessions.contains_key(key) && sessions.len() >= MAX_SESSIONS {
            return Err(CommandError::new(
                code::TOO_MANY_LOGICAL_SESSIONS,
                format!(
                    "Unable to add session {} into the cache because the number of active sessions is too \
                     high",
                    key.display
                ),
            ));
        }
        let entry = sessions.entry(key.clone()).or_insert_with(|| SessionEntry {
            record: Arc::new(Mutex::new(SessionRecord::new(
                self.history_bytes.clone(),
                self.limits.per_session,
            ))),
            last_used_millis: now.timestamp_millis(),
        });
        entry.last_used_millis = entry.last_used_millis.max(now.timestamp_millis());
        Ok(entry.record.clone())
    }

    /// Drops the histories of the least recently used sessions that are not checked out until
    /// the table holds at most three quarters of its byte bound.
    fn drop_oldest_histories(&self, sessions: &HashMap<SessionKey, SessionEntry>) {
        let mut by_age: Vec<&SessionEntry> = sessions.values().collect();
        by_age.sort_by_key(|entry| entry.last_used_millis);
        for entry in by_age {
            if self.history_bytes() <= self.limits.total / 4 * 3 {
                return;
            }
            // A record locked by a write in progress is skipped, never waited for.
            if let Ok(mut record) = entry.record.try_lock() {
                if record.bytes > 0 {
                    record.drop_history();
                }
            }
        }
    }

    /// Forgets the sessions idle for `timeout_millis` or longer at `now`, except those checked
    /// out by a write in progress; returns how many were forgotten.
    pub(crate) fn expire_idle(&self, now: DateTime, timeout_millis: i64) -> usize {
        let mut sessions = lock(&self.sessions);
        let before = sessions.len();
        sessions.retain(|_, entry| {
            let idle = now
                .timestamp_millis()
                .saturating_sub(entry.last_used_millis);
            Arc::strong_count(&entry.record) > 1 || idle < timeout_millis
        });
        before - sessions.len()
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Every cached session with its last use (ms), oldest use first (ties by id), as
    /// `$listLocalSessions` lists them.
    pub(crate) fn cached_sessions(&self) -> Vec<(SessionKey, i64)> {
        let mut sessions: Vec<_> = lock(&self.sessions)
            .iter()
            .map(|(key, entry)| (key.clone(), entry.last_used_millis))
            .collect();
        sessions.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| a.0.bytes.cmp(&b.0.bytes)));
        sessions
    }

    /// Drops the state of every transaction aborted from outside whose session is not running
    /// a command (those are dropped by that command).
    pub(crate) fn release_aborted_transactions(&self) {
        for entry in lock(&self.sessions).values() {
            if let Ok(mut record) = entry.record.try_lock() {
                record.transaction.release_if_aborted();
            }
        }
    }

    /// The record of session `key` if it has one (nothing is created).
    pub(crate) fn existing(&self, key: &SessionKey) -> Option<Arc<Mutex<SessionRecord>>> {
        lock(&self.sessions)
            .get(key)
            .map(|entry| entry.record.clone())
    }

    /// Copies every session's record into `target` (an empty table of a forked store).
    pub(crate) fn copy_into(&self, target: &RetryableWriteTable) {
        let entries: Vec<(SessionKey, Arc<Mutex<SessionRecord>>, i64)> = lock(&self.sessions)
            .iter()
            .map(|(key, entry)| (key.clone(), entry.record.clone(), entry.last_used_millis))
            .collect();
        let mut copies = lock(&target.sessions);
        for (key, record, last_used_millis) in entries {
            let copy = lock(&record).copy(target.history_bytes.clone());
            copies.insert(
                key,
                SessionEntry {
                    record: Arc::new(Mutex::new(copy)),
                    last_used_millis,
                },
            );
        }
    }

    /// Whether `command` is a retryable write every statement of which is already recorded
    /// under its `lsid` and `txnNumber`: executing it would replay outcomes and apply nothing.
    /// Looks without creating a session record.
    pub(crate) fn replays_entirely(&self, command: &Document) -> bool {
        let Ok(Some(retryable)) = retryable_write_of(command) else {
            return false;
        };
        let Some(record) = lock(&self.sessions)
            .get(&retryable.session)
            .map(|entry| entry.record.clone())
        else {
            return false;
        };
        let record = lock(&record);
        if record.txn_number != Some(retryable.txn_number) || record.history_incomplete {
            return false;
        }
        let batch = |field: &str| match command.get(field) {
            Some(Bson::Array(items)) => statement_ids(command, items.len()).ok(),
            _ => None,
        };
        let statements = match command.keys().next().map(String::as_str) {
            Some("insert") => batch("documents"),
            Some("update") => batch("updates"),
            Some("delete") => batch("deletes"),
            Some("bulkWrite") => batch("ops"),
            Some("findAndModify" | "findandmodify") => match command.get("stmtId") {
                Some(Bson::Int32(id)) => Some(vec![*id]),
                _ => Some(vec![0]),
            },
            _ => None,
        };
        statements.is_some_and(|statements| {
            !statements.is_empty()
                && statements
                    .iter()
                    .all(|statement| record.executed(*statement).is_some())
        })
    }
}

/// Statement ids of a batch: the command's `stmtIds` array if given, else positions.
pub(crate) fn statement_ids(command: &Document, count: usize) -> StoreResult<Vec<i32>> {
    match command.get("stmtIds") {
        Some(Bson::Array(ids)) => {
            if ids.len() != count {
                return Err(CommandError::bad_value(format!(
                    "The size of stmtIds ({}) must be equal to the number of statements ({count})",
                    ids.len()
                )));
            }
            ids.iter()
                .map(|id| match id {
                    Bson::Int32(id) => Ok(*id),
                    other => Err(CommandError::type_mismatch(format!(
                        "stmtIds entries must be int, found {}",
                        type_name(other)
                    ))),
                })
                .collect()
        }
        _ => {
            let first = match command.get("stmtId") {
                Some(Bson::Int32(first)) => *first,
                _ => 0,
            };
            Ok((0..count)
                .map(|position| first.saturating_add(i32::try_from(position).unwrap_or(i32::MAX)))
                .collect())
        }
    }
}
