//! Error replies as an 8.0 server shapes them: code names, the error labels it attaches, and
//! `topologyVersion` on state-change errors.

use std::borrow::Cow;

use bson::{Bson, Document, doc};

use super::hello::version_document;
use super::model::TopologyVersion;
use blackpipe_store::code;

/// Codes the server labels `RetryableWriteError` on a retryable write (the list of the
/// retryable writes specification).
pub const RETRYABLE_WRITE_CODES: [i32; 12] = [
    code::INTERRUPTED_AT_SHUTDOWN,
    code::INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
    code::NOT_WRITABLE_PRIMARY,
    code::NOT_PRIMARY_NO_SECONDARY_OK,
    code::NOT_PRIMARY_OR_SECONDARY,
    code::PRIMARY_STEPPED_DOWN,
    code::SHUTDOWN_IN_PROGRESS,
    code::HOST_NOT_FOUND,
    code::HOST_UNREACHABLE,
    code::NETWORK_TIMEOUT,
    code::SOCKET_EXCEPTION,
    code::EXCEEDED_TIME_LIMIT,
];

/// `NotWritablePrimary`.
pub const NOT_WRITABLE_PRIMARY: i32 = code::NOT_WRITABLE_PRIMARY;
/// `NotPrimaryNoSecondaryOk`.
pub const NOT_PRIMARY_NO_SECONDARY_OK: i32 = code::NOT_PRIMARY_NO_SECONDARY_OK;
/// `NotPrimaryOrSecondary`.
pub const NOT_PRIMARY_OR_SECONDARY: i32 = code::NOT_PRIMARY_OR_SECONDARY;
/// `InterruptedDueToReplStateChange`.
pub const INTERRUPTED_DUE_TO_REPL_STATE_CHANGE: i32 = code::INTERRUPTED_DUE_TO_REPL_STATE_CHANGE;
/// `ShutdownInProgress`.
pub const SHUTDOWN_IN_PROGRESS: i32 = code::SHUTDOWN_IN_PROGRESS;

/// The name mongod gives `code` (`Location<code>` for codes it has no name for), from the
/// store's one table of codes.
pub fn code_name(code: i32) -> Cow<'static, str> {
    match code::name(code) {
        Some(name) => Cow::Borrowed(name),
        None => Cow::Owned(format!("Location{code}")),
    }
}

/// Codes of mongod's NotPrimaryError and ShutdownError categories: replies carrying them also
/// carry the node's `topologyVersion`.
pub fn is_state_change_code(code: i32) -> bool {
    matches!(
        code,
        code::NOT_WRITABLE_PRIMARY
            | code::NOT_PRIMARY_NO_SECONDARY_OK
            | code::NOT_PRIMARY_OR_SECONDARY
            | code::INTERRUPTED_DUE_TO_REPL_STATE_CHANGE
            | code::PRIMARY_STEPPED_DOWN
            | code::SHUTDOWN_IN_PROGRESS
            | code::INTERRUPTED_AT_SHUTDOWN
    )
}

/// `{ok: 0, errmsg, code, codeName}`.
pub fn error_reply(code: i32, errmsg: impl Into<String>) -> Document {
    doc! {
        "ok": 0.0,
        "errmsg": errmsg.into(),
        "code": code,
        "codeName": code_name(code).into_owned(),
    }
}

/// What the server knows about the session of a command when it picks error labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionFacts {
    /// The command carried a `txnNumber`.
    pub has_txn_number: bool,
    /// The command carried `autocommit` (it is part of a multi-document transaction).
    pub in_transaction: bool,
    /// The command is `commitTransaction` or `abortTransaction`.
    pub commit_or_abort: bool,
}

impl SessionFacts {
    /// Reads `txnNumber` and `autocommit` from a command.
    pub fn of(command_name: &str, command: &Document) -> Self {
        Self {
            has_txn_number: command.contains_key("txnNumber"),
            in_transaction: command.contains_key("autocommit"),
            commit_or_abort: matches!(command_name, "commitTransaction" | "abortTransaction"),
        }
    }
}

/// The labels an 8.0 server attaches on its own: `SystemOverloadedError` + `RetryableError` for
/// overload rejections; `RetryableWriteError` for a retryable code (top-level or in
/// `writeConcernError`) on a retryable write or a transaction's commit/abort;
/// `TransientTransactionError` for the errors inside a transaction that let the client retry
/// it whole.
pub fn default_labels(
    code: Option<i32>,
    write_concern_code: Option<i32>,
    session: SessionFacts,
) -> Vec<String> {
    if code == Some(crate::failpoint::OVERLOAD_CODE) {
        return vec!["SystemOverloadedError".into(), "RetryableError".into()];
    }
    let retryable_write = session.has_txn_number && !session.in_transaction;
    let commit_or_abort =
        session.has_txn_number && session.in_transaction && session.commit_or_abort;
    let retryable_code =
        |code: Option<i32>| code.is_some_and(|c| RETRYABLE_WRITE_CODES.contains(&c));
    if (retryable_write || commit_or_abort)
        && (retryable_code(code) || retryable_code(write_concern_code))
    {
        return vec!["RetryableWriteError".into()];
    }
    if session.in_transaction && is_transient_transaction_error(code, write_concern_code, session) {
        return vec!["TransientTransactionError".into()];
    }
    Vec::new()
}

/// mongod's rule for TransientTransactionError: a conflict, lock or snapshot error anywhere in
/// a transaction; NoSuchTransaction on commit/abort only without a writeConcernError (the data
/// may otherwise be committed); on other statements also every retryable error.
fn is_transient_transaction_error(
    code: Option<i32>,
    write_concern_code: Option<i32>,
    session: SessionFacts,
) -> bool {
    let Some(code) = code else {
        return false;
    };
    if matches!(
        code,
        code::WRITE_CONFLICT
            | code::LOCK_TIMEOUT
            | code::SNAPSHOT_TOO_OLD
            | code::SNAPSHOT_UNAVAILABLE
            | code::STALE_CHUNK_HISTORY
            | code::PREPARED_TRANSACTION_IN_PROGRESS
    ) {
        return true;
    }
    if session.commit_or_abort {
        code == code::NO_SUCH_TRANSACTION && write_concern_code.is_none()
    } else {
        code == code::NO_SUCH_TRANSACTION || RETRYABLE_WRITE_CODES.contains(&code)
    }
}

/// The top-level error code of a reply with `ok: 0`.
pub fn reply_error_code(reply: &Document) -> Option<i32> {
    if reply_is_ok(reply) {
        return None;
    }
    match reply.get("code") {
        Some(Bson::Int32(code)) => Some(*code),
        Some(Bson::Int64(code)) => i32::try_from(*code).ok(),
        _ => None,
    }
}

/// Whether a reply has `ok: 1` (or no `ok`, which the server layer turns into `ok: 1`).
pub fn reply_is_ok(reply: &Document) -> bool {
    match reply.get("ok") {
        None => true,
        Some(Bson::Double(ok)) => *ok == 1.0,
        Some(Bson::Int32(ok)) => *ok == 1,
        Some(Bson::Int64(ok)) => *ok == 1,
        Some(Bson::Boolean(ok)) => *ok,
        Some(_) => false,
    }
}

fn write_concern_error_code(reply: &Document) -> Option<i32> {
    match reply.get_document("writeConcernError").ok()?.get("code")? {
        Bson::Int32(code) => Some(*code),
        Bson::Int64(code) => i32::try_from(*code).ok(),
        _ => None,
    }
}

/// Finishes a reply the way mongod's command dispatch does: attaches error labels (the fail
/// point's `errorLabels` replace the defaults when given, `[]` removing them) and, for
/// state-change errors, the node's `topologyVersion`.
pub fn finish_reply(
    reply: &mut Document,
    session: SessionFacts,
    labels_override: Option<&[String]>,
    version: TopologyVersion,
) {
    let code = reply_error_code(reply);
    let labels: Vec<String> = match labels_override {
        Some(labels) => labels.to_vec(),
        None => {
            let mut labels: Vec<String> = reply
                .get_array("errorLabels")
                .map(|existing| {
                    existing
                        .iter()
                        .filter_map(|label| label.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default();
            for label in default_labels(code, write_concern_error_code(reply), session) {
                if !labels.contains(&label) {
                    labels.push(label);
                }
            }
            labels
        }
    };
    reply.remove("errorLabels");
    if !labels.is_empty() {
        reply.insert("errorLabels", labels);
    }
    // As mongod: not-primary errors carry the node's topologyVersion; shutdown errors only
    // while the node is in quiesce mode (its own ShutdownInProgress replies add it). A
    // failCommand-injected ShutdownInProgress therefore has none, and a driver cannot take it
    // for a stale error.
    let carries_version = code.is_some_and(|c| is_state_change_code(c) && !is_shutdown_code(c));
    if carries_version && !reply.contains_key("topologyVersion") {
        reply.insert("topologyVersion", version_document(version));
    }
}

/// `ShutdownInProgress` (91) and `InterruptedAtShutdown` (11600).
pub fn is_shutdown_code(code: i32) -> bool {
    matches!(
        code,
        code::SHUTDOWN_IN_PROGRESS | code::INTERRUPTED_AT_SHUTDOWN
    )
}

/// The codes after which mongod labels a change stream's getMore error resumable: network
/// and host errors, state changes and shutdowns, stale routing, `RetryChangeStream`,
/// `FailedToSatisfyReadPreference`, `ExceededTimeLimit` and `CursorNotFound` (the
/// change-streams specification's allowlist for servers before 4.4).
const RESUMABLE_CHANGE_STREAM_CODES: &[i32] = &[
    code::HOST_UNREACHABLE,
    code::HOST_NOT_FOUND,
    code::CURSOR_NOT_FOUND,
    code::STALE_SHARD_VERSION,
    code::NETWORK_TIMEOUT,
    code::SHUTDOWN_IN_PROGRESS,
    code::FAILED_TO_SATISFY_READ_PREFERENCE,
    code::STALE_EPOCH,
    code::PRIMARY_STEPPED_DOWN,
    code::RETRY_CHANGE_STREAM,
    code::EXCEEDED_TIME_LIMIT,
    code::SOCKET_EXCEPTION,
    code::NOT_WRITABLE_PRIMARY,
    code::INTERRUPTED_AT_SHUTDOWN,
    code::INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
    code::STALE_CONFIG,
    code::NOT_PRIMARY_NO_SECONDARY_OK,
    code::NOT_PRIMARY_OR_SECONDARY,
];

const RESUMABLE_CHANGE_STREAM_LABEL: &str = "ResumableChangeStreamError";

/// Adds `ResumableChangeStreamError` to a change stream getMore's error when its code is one
/// mongod resumes after (4.4+), so drivers need no code list.
pub(crate) fn label_resumable_change_stream_error(reply: &mut Document) {
    let Some(code) = reply_error_code(reply) else {
        return;
    };
    if !RESUMABLE_CHANGE_STREAM_CODES.contains(&code) {
        return;
    }
    let mut labels = reply.get_array("errorLabels").cloned().unwrap_or_default();
    let label = Bson::String(RESUMABLE_CHANGE_STREAM_LABEL.to_owned());
    if !labels.contains(&label) {
        labels.push(label);
    }
    reply.insert("errorLabels", labels);
}
