//! The replication state check: a replica set member that is not primary refuses writes
//! (NotWritablePrimary) and reads without secondaryOk (NotPrimaryNoSecondaryOk), and a member
//! neither primary nor secondary refuses reads too (NotPrimaryOrSecondary).

use bson::Document;

use super::context::NodeView;
use super::context::request::{CommandClass, secondary_ok};
use crate::deployment::errors::{
    self, NOT_PRIMARY_NO_SECONDARY_OK, NOT_PRIMARY_OR_SECONDARY, NOT_WRITABLE_PRIMARY,
};
use crate::deployment::model::{DeploymentKind, Role};
use crate::server::Request;

/// The error a member in `view` answers a command of `class` with, if it may not run here.
pub(crate) fn refusal(view: &NodeView, class: CommandClass, request: &Request) -> Option<Document> {
    if view.kind != DeploymentKind::ReplicaSet || class == CommandClass::Always {
        return None;
    }
    match (class, view.role) {
        (CommandClass::Write, Role::Primary) | (CommandClass::Read, Role::Primary) => None,
        (CommandClass::Write, _) => Some(errors::error_reply(NOT_WRITABLE_PRIMARY, "not primary")),
        (CommandClass::Read, role) => {
            if !secondary_ok(request) {
                Some(errors::error_reply(
                    NOT_PRIMARY_NO_SECONDARY_OK,
                    "not primary and secondaryOk=false",
                ))
            } else if role == Role::Secondary {
                None
            } else {
                Some(errors::error_reply(
                    NOT_PRIMARY_OR_SECONDARY,
                    "node is not in primary or recovering state",
                ))
            }
        }
        (CommandClass::Always, _) => None,
    }
}
