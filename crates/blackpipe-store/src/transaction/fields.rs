//! The session fields that put a command inside a multi-document transaction.

use bson::{Bson, Document};

use crate::code;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::oplog::WriteSession;
use crate::retryable_writes::{SessionKey, retryable_write_of};

/// `lsid`, `txnNumber` and `startTransaction` of a command with `autocommit: false`.
#[derive(Debug, Clone)]
pub(crate) struct TransactionFields {
    pub(crate) session: SessionKey,
    pub(crate) txn_number: i64,
    /// `startTransaction: true`: the command opens the transaction.
    pub(crate) start: bool,
    /// The `lsid` as sent, for the op log entries of the commit.
    pub(crate) lsid: Document,
}

impl TransactionFields {
    /// The session the commit's op log entries carry.
    pub(crate) fn stamp(&self) -> WriteSession {
        WriteSession {
            lsid: std::sync::Arc::new(self.lsid.clone()),
            txn_number: self.txn_number,
            in_transaction: true,
        }
    }
}

fn invalid(message: &str) -> CommandError {
    CommandError::new(code::INVALID_OPTIONS, message)
}

/// Reads the transaction fields of a command: `Ok(None)` when it carries no `autocommit`
/// (not part of a transaction). Errors mirror mongod's checks of these fields.
pub(crate) fn transaction_fields(command: &Document) -> StoreResult<Option<TransactionFields>> {
    let start = match command.get("startTransaction") {
        None => false,
        Some(Bson::Boolean(true)) => true,
        Some(Bson::Boolean(false)) => {
            return Err(invalid("Specifying startTransaction=false is not allowed."));
        }
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'OperationSessionInfo.startTransaction' is the wrong type '{}', expected type 'bool'",
                type_name(other)
            )));
        }
    };
    match command.get("autocommit") {
        None if start => Err(invalid(
            "txnNumber may only be provided for multi-document transactions and retryable write commands. \
             autocommit:false was not provided, and startTransaction was set",
        )),
        None => Ok(None),
        Some(Bson::Boolean(false)) => {
            let Some(retryable) = retryable_write_of(command)? else {
                return Err(invalid(
                    "'autocommit' field requires a transaction number to also be specified",
                ));
            };
            let lsid = command.get_document("lsid").cloned().unwrap_or_default();
            Ok(Some(TransactionFields {
                session: retryable.session,
                txn_number: retryable.txn_number,
                start,
                lsid,
            }))
        }
        Some(Bson::Boolean(true)) => Err(invalid("Specifying autocommit=true is not allowed.")),
        Some(other) => Err(CommandError::type_mismatch(format!(
            "BSON field 'OperationSessionInfo.autocommit' is the wrong type '{}', expected type 'bool'",
            type_name(other)
        ))),
    }
}
