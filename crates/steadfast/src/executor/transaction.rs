//! What a transaction (or a snapshot session) changes in an operation: its place in the
//! transaction, decided once when the operation starts; the fields its commands carry
//! (`txnNumber`, `autocommit`, `startTransaction`, the read concern on the first command only);
//! the mongos pin; the recovery token and snapshot time read from replies; the refusal of an
//! operation's own read or write concern; and the labels and unpinning when it fails or, for a
//! commit or abort, is retried.

use bson::{Bson, Document, Timestamp};
use steadfast_core::options::{ReadConcern, ReadConcernLevel};
use steadfast_core::retry::Execution;
use steadfast_core::selection::{ReadPreferenceMode, SelectionCriteria};
use steadfast_core::session::transaction::{
    OperationRole, TransactionCommand, TransactionFailure, transaction_labels, unpins_session,
};
use steadfast_core::{Deadline, ServerAddress, TopologyType};

use crate::error::{Error, ErrorKind, Result};
use crate::operation::Operation;
use crate::runtime;
use crate::sdam::SelectedServer;
use crate::session::ClientSession;

/// An operation's place in its session's transaction.
#[derive(Clone, Debug)]
pub(crate) struct TransactionPlan {
    /// Which command of a transaction it is, for the labels of its failure.
    pub(crate) command: TransactionCommand,
    /// The transaction's first command: `startTransaction` and the read concern.
    pub(crate) first: bool,
    /// commitTransaction or abortTransaction: retried whatever retryWrites says, and a retry
    /// may go to another mongos.
    pub(crate) ends: bool,
    /// The transaction's read concern (first command only).
    pub(crate) read_concern: Option<ReadConcern>,
    /// The transaction's read preference, for a read.
    pub(crate) criteria: Option<SelectionCriteria>,
    /// The mongos the session is pinned to.
    pub(crate) pinned: Option<ServerAddress>,
}

/// The transaction plan of `op` run in `session`, moving the session's state as the
/// operation starts (a finished transaction is left behind, and its pin dropped).
///
/// # Errors
/// `Transaction` for a read in a transaction whose read preference is not primary;
/// `InvalidArgument` for an operation in a transaction with its own read or write concern.
pub(crate) fn plan_transaction<O: Operation>(
    session: &mut ClientSession,
    op: &O,
) -> Result<Option<TransactionPlan>> {
    let pinned = session.transaction().pinned.clone();
    if let Some(command) = op.ends_transaction() {
        return Ok(Some(TransactionPlan {
            command,
            first: false,
            ends: true,
            read_concern: None,
            criteria: None,
            pinned,
        }));
    }
    let is_read = matches!(
        op.selection_criteria(),
        SelectionCriteria::ReadPreference(_)
    );
    let options = &session.transaction().options;
    // A read uses the transaction's read preference, unless the application gave the
    // operation its own; either must be primary (transactions, "readPreference").
    let transaction_criteria = if op.has_own_read_preference() {
        op.selection_criteria()
    } else {
        options
            .selection_criteria
            .clone()
            .unwrap_or(SelectionCriteria::ReadPreference(Default::default()))
    };
    let primary = match &transaction_criteria {
        SelectionCriteria::ReadPreference(preference) => {
            preference.mode() == ReadPreferenceMode::Primary
        }
        _ => false,
    };
    if is_read && session.in_transaction() && !primary {
        return Err(Error::transaction(
            "read preference in a transaction must be primary",
        ));
    }
    if session.in_transaction() {
        refuse_own_concerns(op)?;
    }
    let read_concern = options.read_concern.clone();
    let first = match session.transaction_mut().state.begin_operation() {
        OperationRole::Outside { unpin } => {
            if unpin {
                session.unpin();
            }
            return Ok(None);
        }
        OperationRole::First => true,
        OperationRole::Inside => false,
    };
    Ok(Some(TransactionPlan {
        command: TransactionCommand::Statement,
        first,
        ends: false,
        read_concern: read_concern.filter(|_| first),
        criteria: is_read.then_some(transaction_criteria),
        pinned,
    }))
}

/// Refuses an operation of a transaction that carries its own read or write concern: the
/// transaction's read concern goes on its first command and its write concern on the commit,
/// so a per-operation one could only be dropped silently (transactions, "Users cannot pass
/// readConcern or writeConcern to operations in transactions"). Checked before the
/// transaction's state moves, so a refused first operation leaves it starting.
///
/// # Errors
/// `InvalidArgument` with the specification's message.
fn refuse_own_concerns<O: Operation>(op: &O) -> Result<()> {
    if op.has_own_read_concern() {
        return Err(Error::invalid_argument(
            "Cannot set read concern after starting a transaction.",
        ));
    }
    if op.has_own_write_concern() {
        return Err(Error::invalid_argument(
            "Cannot set write concern after starting a transaction.",
        ));
    }
    Ok(())
}

/// A snapshot session's read concern for a read: snapshot, at the session's read time once
/// its first read has set one.
pub(crate) fn snapshot_read_concern(session: &ClientSession) -> Document {
    let mut document = Document::new();
    document.insert("level", ReadConcernLevel::Snapshot.as_str());
    if let Some(time) = session.snapshot_time() {
        document.insert("atClusterTime", Bson::Timestamp(time));
    }
    document
}

/// The read concern of a transaction's first command: the transaction's level and, in a
/// causally consistent session, `afterClusterTime` (even for a write).
pub(crate) fn first_command_read_concern(
    plan: &TransactionPlan,
    after_cluster_time: Option<Timestamp>,
) -> Option<Document> {
    let mut document = Document::new();
    if let Some(concern) = &plan.read_concern {
        document.insert("level", concern.level.as_str());
    }
    if let Some(time) = after_cluster_time {
        document.insert("afterClusterTime", Bson::Timestamp(time));
    }
    (!document.is_empty()).then_some(document)
}

/// Pins the session to the mongos its transaction's first command was sent to.
pub(crate) fn pin_if_sharded(session: &mut ClientSession, selected: &SelectedServer) {
    if selected.topology_type == TopologyType::Sharded {
        session.transaction_mut().pinned = Some(selected.address.clone());
    }
}

/// Unpins the session before a commitTransaction or abortTransaction is retried
/// (transactions, "When to unpin", 1 and 3): the retry may go to another mongos, and a
/// session left pinned to the one that failed would send the next commit (or the next
/// transaction's abort) to a mongos that may be gone, even after the retry succeeded.
pub(crate) fn unpin_before_retry(
    plan: Option<&TransactionPlan>,
    session: Option<&mut ClientSession>,
) {
    if let (Some(plan), Some(session)) = (plan, session) {
        if plan.ends {
            session.unpin();
        }
    }
}

/// Adds the transaction's labels to the error an operation ends with, and unpins the session
/// when the error says the transaction (or its mongos) is gone, or a commit's fate is unknown.
pub(crate) fn label_failure(
    error: Error,
    plan: &TransactionPlan,
    deadline: Deadline,
    session: Option<&mut ClientSession>,
) -> Error {
    let failure = if deadline.is_csot() && deadline.is_expired(runtime::now()) && error.is_timeout()
    {
        TransactionFailure::DeadlineExpired
    } else if error.is_network_error() || matches!(*error.kind, ErrorKind::ServerSelection { .. }) {
        TransactionFailure::NoReply
    } else if let Some(wce) = error.kind.write_concern_error() {
        TransactionFailure::WriteConcern { code: wce.code }
    } else if let ErrorKind::Command(command) = &*error.kind {
        TransactionFailure::Command { code: command.code }
    } else {
        TransactionFailure::Other
    };
    // Every attempt but the last: did one of them possibly run the command?
    let earlier_attempt_ran = error
        .retry_history()
        .split_last()
        .is_some_and(|(_, earlier)| {
            earlier.iter().any(|attempt| {
                matches!(
                    attempt.execution,
                    Execution::Executed | Execution::MayHaveExecuted | Execution::Deduplicated
                )
            })
        });
    let added = transaction_labels(plan.command, failure, error.labels(), earlier_attempt_ran);
    let error = error.with_label_set(&added);
    if let Some(session) = session {
        if unpins_session(plan.command, error.labels()) {
            session.unpin();
        }
    }
    error
}
