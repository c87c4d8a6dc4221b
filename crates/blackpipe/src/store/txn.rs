//! The retryable-write ("transaction") table.
//!
//! Keyed by the session id (`lsid.id`, a UUID); each session remembers its highest `txnNumber`
//! and, for that number, the outcome of every statement that succeeded, by statement id (like
//! mongod, which records each statement in its oplog entry). A retried command replays the
//! recorded statements without applying them again and executes the others; a command with an
//! older `txnNumber` fails with TransactionTooOld. Failed statements are not recorded, so a retry
//! executes them again, as mongod does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bson::{Bson, Document, spec::BinarySubtype};

use super::catalog::lock;
use super::errors::{CommandError, StoreResult, code, type_name};

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

/// One session's retryable-write history.
#[derive(Debug, Default)]
pub(crate) struct SessionRecord {
    txn_number: Option<i64>,
    statements: HashMap<i32, StatementOutcome>,
}

impl SessionRecord {
    /// Starts or resumes `txn_number`: a newer number forgets the previous history, an older one
    /// is rejected.
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
            Some(current) if txn_number == current => Ok(()),
            _ => {
                self.txn_number = Some(txn_number);
                self.statements.clear();
                Ok(())
            }
        }
    }

    pub(crate) fn executed(&self, statement: i32) -> Option<&StatementOutcome> {
        self.statements.get(&statement)
    }

    pub(crate) fn record(&mut self, statement: i32, outcome: StatementOutcome) {
        self.statements.insert(statement, outcome);
    }
}

/// The identity of a logical session.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SessionKey {
    bytes: Vec<u8>,
    display: String,
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
    let session = match lsid.get("id") {
        Some(Bson::Binary(binary))
            if binary.subtype == BinarySubtype::Uuid && binary.bytes.len() == 16 =>
        {
            let mut bytes = binary.bytes.clone();
            // Authenticated sessions are also keyed by user; blackpipe has no users but keeps
            // the field in the key so distinct `uid`s never share a history.
            if let Some(Bson::Binary(uid)) = lsid.get("uid") {
                bytes.extend_from_slice(&uid.bytes);
            }
            SessionKey {
                display: uuid_text(&binary.bytes),
                bytes,
            }
        }
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'OperationSessionInfo.lsid.id' is the wrong type '{}', expected type 'uuid'",
                type_name(other)
            )));
        }
        None => {
            return Err(CommandError::new(
                code::IDL_MISSING_FIELD,
                "BSON field 'OperationSessionInfo.lsid.id' is missing but a required field",
            ));
        }
    };
    Ok(Some(RetryableWrite {
        session,
        txn_number: *txn_number,
    }))
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

/// Every session's record; each record has its own lock, held for the whole write so that two
/// attempts of the same statement cannot both apply it (mongod checks sessions out the same way).
#[derive(Debug, Default)]
pub(crate) struct TransactionTable {
    sessions: Mutex<HashMap<SessionKey, Arc<Mutex<SessionRecord>>>>,
}

impl TransactionTable {
    pub(crate) fn session(&self, key: &SessionKey) -> Arc<Mutex<SessionRecord>> {
        lock(&self.sessions).entry(key.clone()).or_default().clone()
    }

    pub(crate) fn len(&self) -> usize {
        lock(&self.sessions).len()
    }

    /// Whether `command` is a retryable write every statement of which is already recorded
    /// under its `lsid` and `txnNumber`: executing it would replay outcomes and apply nothing.
    /// Looks without creating a session record.
    pub(crate) fn replays_entirely(&self, command: &Document) -> bool {
        let Ok(Some(retryable)) = retryable_write_of(command) else {
            return false;
        };
        let Some(record) = lock(&self.sessions).get(&retryable.session).cloned() else {
            return false;
        };
        let record = lock(&record);
        if record.txn_number != Some(retryable.txn_number) {
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
