//! What a member adds to change streams beyond the store: mongod refuses them on a
//! standalone and fails their getMores at `failGetMoreAfterCursorCheckout`. (It also labels
//! their resumable getMore errors `ResumableChangeStreamError` (4.4+), so drivers need no code
//! list: [`errors::label_resumable_change_stream_error`], which the pipeline applies.)

use bson::{Bson, Document};

use super::context::NodeContext;
use crate::deployment::errors;
use crate::deployment::model::DeploymentKind;
use crate::deployment::state::lock;
use blackpipe_store::code;

/// Whether `command` (an `aggregate`) opens a change stream.
fn opens_change_stream(command: &Document) -> bool {
    command
        .get_array("pipeline")
        .is_ok_and(|stages| blackpipe_store::change_stream_stage(stages).is_some())
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
                code::CHANGE_STREAM_ON_STANDALONE,
                "The $changeStream stage is only supported on replica sets",
            )
        })
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
    if !node.store().has_cursor(*id) {
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
