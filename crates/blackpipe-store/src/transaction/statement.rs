//! Running a command inside a transaction, and `commitTransaction` / `abortTransaction`.

use bson::{Document, Timestamp, doc};

use super::commit::apply_commit;
use super::fields::TransactionFields;
use super::private::OpenTransaction;
use super::{TransactionState, allowed_in_transaction};
use crate::Store;
use crate::catalog::lock;
use crate::code;
use crate::commands::Exec;
use crate::errors::{CommandError, StoreResult};
use crate::retryable_writes::SessionRecord;
use crate::snapshot_read::read_concern;

fn no_such_transaction(fields: &TransactionFields, why: &str) -> CommandError {
    CommandError::new(
        code::NO_SUCH_TRANSACTION,
        format!(
            "Transaction with {{ txnNumber: {} }} on session {} {why}",
            fields.txn_number, fields.session.display
        ),
    )
    .transient()
}

fn too_old(fields: &TransactionFields, current: i64) -> CommandError {
    CommandError::new(
        code::TRANSACTION_TOO_OLD,
        format!(
            "Cannot start transaction {} on session {} because a newer transaction with txnNumber {current} has \
             started.",
            fields.txn_number, fields.session.display
        ),
    )
}

/// Checks that a commit or abort names the session's current transaction.
///
/// # Errors
/// TransactionTooOld for an older txnNumber than the session's, NoSuchTransaction for any other
/// that is not the session's.
fn check_current(record: &SessionRecord, fields: &TransactionFields) -> StoreResult<()> {
    if let Some(current) = record
        .txn_number
        .filter(|current| fields.txn_number < *current)
    {
        return Err(too_old(fields, current));
    }
    if record.txn_number != Some(fields.txn_number) {
        return Err(no_such_transaction(
            fields,
            "does not match any in-progress transaction",
        ));
    }
    Ok(())
}

/// Why the open transaction can no longer go on (aborted from outside, or expired).
fn ended_outside(txn: &OpenTransaction, now: bson::DateTime) -> Option<&'static str> {
    if let Some(reason) = txn.registration.aborted() {
        return Some(reason.describe());
    }
    txn.expired(now)
        .then_some("exceeded transactionLifetimeLimitSeconds")
}

/// Validates a `readConcern` on the first statement (levels local, majority and snapshot only)
/// and returns its `atClusterTime`, if any.
fn transaction_read_time(store: &Store, command: &Document) -> StoreResult<Option<Timestamp>> {
    let Some(concern) = read_concern(store, command)? else {
        return Ok(None);
    };
    match concern.level {
        "local" | "majority" | "snapshot" => Ok(concern.at_cluster_time),
        other => Err(CommandError::new(
            code::INVALID_OPTIONS,
            format!(
                "The readConcern level must be either 'local' (default), 'majority' or 'snapshot' in order to run \
                 in a transaction (got '{other}')"
            ),
        )),
    }
}

impl Store {
    /// Runs a command whose session fields put it inside a transaction.
    pub(crate) fn run_in_transaction(
        &self,
        exec: &mut Exec<'_>,
        command: &Document,
        name: &str,
        fields: &TransactionFields,
    ) -> StoreResult<Document> {
        if !allowed_in_transaction(name) {
            return Err(CommandError::new(
                code::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
                format!("Cannot run '{name}' in a multi-document transaction."),
            ));
        }
        let record = self.retryable_writes.session(&fields.session, exec.now)?;
        let mut record = lock(&record);
        match name {
            "commitTransaction" => return self.commit(exec, &mut record, fields),
            "abortTransaction" => return abort(&mut record, fields),
            _ => {}
        }
        if command.contains_key("writeConcern") {
            return Err(CommandError::new(
                code::INVALID_OPTIONS,
                "Cannot set write concern after starting a transaction.",
            ));
        }
        self.begin_or_continue(exec, &mut record, fields, command)?;
        let TransactionState::Open(txn) = &mut record.transaction else {
            return Err(no_such_transaction(fields, "is not open"));
        };
        let mut inner = Exec {
            store: self,
            db: exec.db,
            now: exec.now,
            last_write: None,
            awaiting_inserts: None,
            session: None,
            txn: Some(txn),
            read_at: None,
            statement: None,
            majority_committed: None,
            host: exec.host,
            router: exec.router,
            bypass_validation: false,
        };
        let result = self.dispatch(&mut inner, command);
        drop(inner);
        let outcome = finish_statement(txn, fields, result, exec.now);
        if outcome.as_ref().map_or(true, has_write_errors) {
            // mongod aborts a transaction whose statement failed.
            record.transaction = TransactionState::Aborted;
        }
        outcome
    }

    /// Opens the transaction (`startTransaction`) or checks that it is open and may go on.
    fn begin_or_continue(
        &self,
        exec: &Exec<'_>,
        record: &mut SessionRecord,
        fields: &TransactionFields,
        command: &Document,
    ) -> StoreResult<()> {
        let current = record.txn_number;
        if let Some(current) = current.filter(|current| fields.txn_number < *current) {
            return Err(too_old(fields, current));
        }
        if fields.start {
            if current == Some(fields.txn_number) {
                return Err(CommandError::new(
                    code::CONFLICTING_OPERATION_IN_PROGRESS,
                    format!(
                        "Cannot start transaction {} on session {}: the txnNumber is already in use",
                        fields.txn_number, fields.session.display
                    ),
                ));
            }
            let at_cluster_time = transaction_read_time(self, command)?;
            let expires = exec
                .now
                .timestamp_millis()
                .saturating_add(self.transaction_lifetime_millis());
            let registration = self.transaction_registry.open(expires)?;
            record.begin(fields.txn_number, &fields.session)?;
            record.transaction = TransactionState::Open(Box::new(OpenTransaction::new(
                fields.stamp(),
                registration,
                expires,
                at_cluster_time,
            )));
            return Ok(());
        }
        let same_number = current == Some(fields.txn_number);
        match &record.transaction {
            TransactionState::Open(txn) if same_number => {
                if let Some(why) = ended_outside(txn, exec.now) {
                    record.transaction = TransactionState::Aborted;
                    return Err(no_such_transaction(
                        fields,
                        &format!("has been aborted because {why}"),
                    ));
                }
                if command.contains_key("readConcern") {
                    return Err(CommandError::new(
                        code::INVALID_OPTIONS,
                        "Only the first command in a transaction may specify a readConcern",
                    ));
                }
                Ok(())
            }
            TransactionState::Committed if same_number => Err(CommandError::new(
                code::TRANSACTION_COMMITTED,
                format!(
                    "Transaction with {{ txnNumber: {} }} has been committed.",
                    fields.txn_number
                ),
            )),
            TransactionState::Aborted if same_number => {
                Err(no_such_transaction(fields, "has been aborted."))
            }
            _ => Err(no_such_transaction(
                fields,
                "does not match any in-progress transaction",
            )),
        }
    }

    /// `commitTransaction`: applies the open transaction, or answers a retry as the first commit.
    fn commit(
        &self,
        exec: &mut Exec<'_>,
        record: &mut SessionRecord,
        fields: &TransactionFields,
    ) -> StoreResult<Document> {
        check_current(record, fields)?;
        let state = std::mem::take(&mut record.transaction);
        match state {
            TransactionState::Committed => {
                record.transaction = TransactionState::Committed;
                Ok(doc! { "ok": 1.0 })
            }
            TransactionState::Open(mut txn) => {
                if let Some(why) = ended_outside(&txn, exec.now) {
                    record.transaction = TransactionState::Aborted;
                    return Err(no_such_transaction(
                        fields,
                        &format!("has been aborted because {why}"),
                    ));
                }
                match apply_commit(self, exec.now, &txn) {
                    Ok(last_write) => {
                        txn.registration.mark_committed();
                        exec.last_write = last_write.or(exec.last_write);
                        record.transaction = TransactionState::Committed;
                        Ok(doc! { "ok": 1.0 })
                    }
                    Err(error) => {
                        record.transaction = TransactionState::Aborted;
                        Err(error.transient())
                    }
                }
            }
            TransactionState::Aborted | TransactionState::None => {
                record.transaction = state;
                Err(no_such_transaction(fields, "has been aborted."))
            }
        }
    }
}

/// `abortTransaction`.
fn abort(record: &mut SessionRecord, fields: &TransactionFields) -> StoreResult<Document> {
    check_current(record, fields)?;
    match record.transaction {
        TransactionState::Open(_) => {
            record.transaction = TransactionState::Aborted;
            Ok(doc! { "ok": 1.0 })
        }
        TransactionState::Committed => Err(CommandError::new(
            code::TRANSACTION_COMMITTED,
            format!(
                "Transaction with {{ txnNumber: {} }} has been committed.",
                fields.txn_number
            ),
        )),
        TransactionState::Aborted | TransactionState::None => {
            Err(no_such_transaction(fields, "has been aborted."))
        }
    }
}

/// Whether an ok reply reports write errors (which, in a transaction, end it).
fn has_write_errors(reply: &Document) -> bool {
    reply.contains_key("writeErrors")
}

/// Turns a statement's result into the reply: a conflict found while writing, an abort from
/// outside during the statement, or a transaction grown past its bounds replace it.
fn finish_statement(
    txn: &mut OpenTransaction,
    fields: &TransactionFields,
    result: StoreResult<Document>,
    now: bson::DateTime,
) -> StoreResult<Document> {
    if let Some(failure) = txn.failure.take() {
        return Err(failure.transient());
    }
    if let Some(why) = ended_outside(txn, now) {
        return Err(no_such_transaction(
            fields,
            &format!("has been aborted because {why}"),
        ));
    }
    txn.check_size()?;
    result
}

impl Store {
    /// Whether the transaction named by `command`'s `lsid` and `txnNumber` committed: what a
    /// router that did not route the transaction learns from its recovery token.
    pub fn transaction_committed(&self, command: &Document) -> bool {
        let Ok(Some(fields)) = super::fields::transaction_fields(command) else {
            return false;
        };
        let Some(record) = self.retryable_writes.existing(&fields.session) else {
            return false;
        };
        let record = lock(&record);
        record.txn_number == Some(fields.txn_number)
            && matches!(record.transaction, TransactionState::Committed)
    }
}
