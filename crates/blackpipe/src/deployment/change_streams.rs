//! What a member adds to change streams beyond the store: mongod refuses them on a
//! standalone, fails their getMores at `failGetMoreAfterCursorCheckout`, and labels their
//! resumable getMore errors `ResumableChangeStreamError` (4.4+), so drivers need no code list.

use bson::{Bson, Document};

use super::errors;
use super::member::NodeContext;
use super::model::DeploymentKind;
use super::state::lock;
use crate::codes;

/// The codes after which mongod labels a change stream's getMore error resumable: network
/// and host errors, state changes and shutdowns, stale routing, `RetryChangeStream`,
/// `FailedToSatisfyReadPreference`, `ExceededTimeLimit` and `CursorNotFound` (the
/// change-streams specification's allowlist for servers before 4.4).
const RESUMABLE_CODES: &[i32] = &[
    codes::HOST_UNREACHABLE,
    codes::HOST_NOT_FOUND,
    codes::CURSOR_NOT_FOUND,
    codes::STALE_SHARD_VERSION,
    codes::NETWORK_TIMEOUT,
    codes::SHUTDOWN_IN_PROGRESS,
    codes::FAILED_TO_SATISFY_READ_PREFERENCE,
    codes::STALE_EPOCH,
    codes::PRIMARY_STEPPED_DOWN,
    codes::RETRY_CHANGE_STREAM,
    codes::EXCEEDED_TIME_LIMIT,
    codes::SOCKET_EXCEPTION,
    codes::NOT_WRITABLE_PRIMARY,
    codes::INTERRUPTED_AT_SHUTDOWN,
    codes::INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
    codes::STALE_CONFIG,
    codes::NOT_PRIMARY_NO_SECONDARY_OK,
    codes::NOT_PRIMARY_OR_SECONDARY,
];

const RESUMABLE_LABEL: &str = "ResumableChangeStreamError";

/// Whether `command` (an `aggregate`) opens a change stream.
fn opens_change_stream(command: &Document) -> bool {
    command
        .get_array("pipeline")
        .is_ok_and(|stages| crate::store::change_stream_stage(stages).is_some())
}

/// The refusal of a change stream on a standalone (mongod has no op log to read there).
pub(crate) fn standalone_refusal(
    kind: DeploymentKind,
    name: &str,
    command: &Document,
) -> Option<Document> {
    (kind == DeploymentKind::Standalone && name == "aggregate" && opens_change_stream(command))
        .then(|| {
            errors::error_reply(
                codes::CHANGE_STREAM_ON_STANDALONE,
                "The $changeStream stage is only supported on replica sets",
            )
        })
}

/// Whether `command` is a getMore on an open change-stream cursor of this node's store.
pub(crate) fn is_stream_get_more(node: &NodeContext, name: &str, command: &Document) -> bool {
    name == "getMore"
        && matches!(command.get("getMore"), Some(Bson::Int64(id)) if node.inner.store.is_change_stream_cursor(*id))
}

/// `failGetMoreAfterCursorCheckout`'s error for a getMore whose cursor exists, if it triggers.
pub(crate) fn fail_after_checkout(
    node: &NodeContext,
    name: &str,
    command: &Document,
) -> Option<Document> {
    let Some(Bson::Int64(id)) = command.get("getMore").filter(|_| name == "getMore") else {
        return None;
    };
    if !node.inner.store.has_cursor(*id) {
        return None;
    }
    let code = {
        let mut fail_points = lock(&node.process.fail_points);
        if !fail_points.any_active() {
            return None;
        }
        fail_points.get_more_after_checkout(&mut *lock(&node.inner.rng))?
    };
    Some(errors::error_reply(
        code,
        "Failing getMore via 'failGetMoreAfterCursorCheckout' failpoint",
    ))
}

/// Adds `ResumableChangeStreamError` to a change stream getMore's error when its code is one
/// mongod resumes after.
pub(crate) fn label_resumable(reply: &mut Document) {
    let Some(code) = errors::reply_error_code(reply) else {
        return;
    };
    if !RESUMABLE_CODES.contains(&code) {
        return;
    }
    let mut labels = reply.get_array("errorLabels").cloned().unwrap_or_default();
    let label = Bson::String(RESUMABLE_LABEL.to_owned());
    if !labels.contains(&label) {
        labels.push(label);
    }
    reply.insert("errorLabels", labels);
}
