//! What a standalone mongod refuses because it has no replication: snapshot reads.

use bson::{Bson, Document};

use super::context::NodeView;
use crate::deployment::errors;
use crate::deployment::model::DeploymentKind;
use blackpipe_store::code;

/// The error a standalone answers a command with `readConcern: {level: "snapshot"}`; `None`
/// elsewhere (a replica set member or a router reads at a cluster time).
pub(crate) fn refusal(view: &NodeView, command: &Document) -> Option<Document> {
    if view.kind != DeploymentKind::Standalone {
        return None;
    }
    let level = command.get_document("readConcern").ok()?.get("level")?;
    (level == &Bson::from("snapshot")).then(|| {
        errors::error_reply(
            code::NOT_A_REPLICA_SET,
            "node needs to be a replica set member to use readConcern: snapshot",
        )
    })
}
