//! The mongod commands a node answers itself rather than its store: `configureFailPoint`,
//! the replica set commands (`replSetStepDown`, `replSetFreeze`, `replSetStepUp`,
//! `replSetGetStatus`, `replSetGetConfig`, `replSetReconfig`, `shutdown`, `getParameter`), and
//! the trivial commands every server answers (`ping`, `buildInfo`, session commands...). Each
//! is parsed (see [`admin`] for the parsers), then applied.

use std::sync::Arc;

use bson::{Document, doc};

use super::blackpipe::{detached, error};
use super::{admin, diagnostics, parameters};
use crate::deployment::control_error::ControlError;
use crate::deployment::errors::{self, SessionFacts};
use crate::deployment::hello::MAX_BSON_OBJECT_SIZE;
use crate::deployment::model::DeploymentKind;
use crate::deployment::node::context::{NodeContext, ok, ok_reply};
use crate::deployment::node::stable_api;
use crate::deployment::state::{Effects, lock};
use crate::server::{ConnectionContext, Outcome, Reaction, Request};
use blackpipe_store::code;

/// The refusal of a command that runs on the admin database only, sent elsewhere.
pub(crate) fn admin_only(request: &Request, name: &str) -> Option<Document> {
    (request.database() != "admin").then(|| {
        errors::error_reply(
            code::UNAUTHORIZED,
            format!("{name} may only be run against the admin database."),
        )
    })
}

/// Runs `configureFailPoint` on this node's server process.
pub(crate) fn configure_fail_point(node: &NodeContext, request: &Request) -> Outcome {
    let result = lock(&node.process.fail_points).configure(request.command());
    let reply = result.unwrap_or_else(|error| error.to_reply());
    node.finish(reply, SessionFacts::default(), None)
}

fn require_replica_set(node: &NodeContext) -> Result<(), ControlError> {
    if lock(&node.inner.state).topology.kind() == DeploymentKind::ReplicaSet {
        Ok(())
    } else {
        Err(ControlError::NotReplicaSet)
    }
}

/// Answers the commands the node handles itself; `None` for everything else (the store's).
pub(crate) async fn run_builtin(
    node: &NodeContext,
    name: &str,
    request: &Request,
    connection: &ConnectionContext,
) -> Option<Outcome> {
    let admin_command = matches!(
        name,
        "replSetStepDown"
            | "replSetFreeze"
            | "replSetStepUp"
            | "replSetGetStatus"
            | "replSetGetConfig"
            | "replSetReconfig"
            | "shutdown"
            | "getParameter"
            | "setParameter"
            | "getCmdLineOpts"
            | "getLog"
            | "currentOp"
            | "killOp"
    );
    if let Some(reply) = admin_only(request, name).filter(|_| admin_command) {
        return Some(node.finish(reply, SessionFacts::default(), None));
    }
    let result = match name {
        "ping"
        | "endSessions"
        | "killSessions"
        | "killAllSessions"
        | "killAllSessionsByPattern"
        | "refreshSessions" => Ok(ok(node)),
        "buildInfo" => Ok(ok_reply(
            node,
            doc! {
                "version": crate::deployment::hello::SERVER_VERSION,
                "gitVersion": "blackpipe",
                "versionArray": [8, 0, 0, 0],
                "bits": 64,
                "maxBsonObjectSize": MAX_BSON_OBJECT_SIZE,
            },
        )),
        "connectionStatus" => {
            let users: Vec<Document> = connection
                .extensions()
                .get::<crate::auth::ConnectionAuth>()
                .and_then(crate::auth::ConnectionAuth::user)
                .map(|(db, user)| doc! { "user": user, "db": db })
                .into_iter()
                .collect();
            Ok(ok_reply(
                node,
                doc! { "authInfo": { "authenticatedUsers": users, "authenticatedUserRoles": [] } },
            ))
        }
        "getParameter" => Ok(ok_reply(node, parameters::get(node, request.command()))),
        "setParameter" => Ok(match parameters::set(node, request.command()) {
            Ok(reply) => ok_reply(node, reply),
            Err(error) => node.finish(error, SessionFacts::default(), None),
        }),
        "serverStatus" => Ok(ok_reply(
            node,
            diagnostics::server_status(node, request.command()),
        )),
        "hostInfo" => Ok(ok_reply(node, diagnostics::host_info())),
        "balancerStatus" if node.is_router() => {
            Ok(ok_reply(node, super::config_catalog::balancer_status()))
        }
        "profile" => Ok(match diagnostics::profile(request.command()) {
            Ok(reply) => ok_reply(node, reply),
            Err(error) => node.finish(error, SessionFacts::default(), None),
        }),
        "currentOp" | "killOp" => {
            let answer = if name == "currentOp" {
                diagnostics::current_op(node, request.command())
            } else {
                diagnostics::kill_op(node, request.command())
            };
            Ok(match answer {
                Ok(reply) => ok_reply(node, reply),
                Err(error) => node.finish(error, SessionFacts::default(), None),
            })
        }
        "usersInfo" => Ok(
            match node.inner.users.info(
                request.database(),
                request
                    .command()
                    .get("usersInfo")
                    .unwrap_or(&bson::Bson::Int32(1)),
            ) {
                Ok(users) => ok_reply(node, doc! { "users": users }),
                Err((code, message)) => node.finish(
                    errors::error_reply(code, message),
                    SessionFacts::default(),
                    None,
                ),
            },
        ),
        "getCmdLineOpts" => Ok(ok_reply(node, diagnostics::cmd_line_opts(node))),
        "getLog" => Ok(match diagnostics::get_log(request.command()) {
            Ok(reply) => ok_reply(node, reply),
            Err(error) => node.finish(error, SessionFacts::default(), None),
        }),
        test if stable_api::is_test_command(test) => Ok(ok(node)),
        // A router's sharding catalog is always consistent in blackpipe: an exhausted cursor
        // with no inconsistency (mongod shards have the command too, but blackpipe's shards
        // are never addressed directly).
        "checkMetadataConsistency" if node.is_router() => Ok(ok_reply(
            node,
            doc! { "cursor": {
                "id": 0_i64,
                "ns": format!("{}.$cmd.checkMetadataConsistency", request.database()),
                "firstBatch": [],
            } },
        )),
        "whatsmyuri" => Ok(ok_reply(
            node,
            doc! { "you": connection.peer().to_string() },
        )),
        "replSetStepDown" => {
            admin::parse_step_down(request.command()).and_then(|(freeze_for, force)| {
                require_replica_set(node)?;
                node.inner
                    .step_down(Some(node.index), freeze_for, force)
                    .map(|()| ok(node))
            })
        }
        "replSetFreeze" => admin::parse_freeze(request.command())
            .and_then(|duration| node.inner.freeze(node.index, duration).map(|()| ok(node))),
        "replSetStepUp" => node.inner.elect(node.index).map(|()| ok(node)),
        "replSetGetStatus" => require_replica_set(node).map(|()| {
            let committed = node.majority_committed().unwrap_or(bson::Timestamp {
                time: 0,
                increment: 0,
            });
            let reply = admin::status_reply(
                &node.inner.topology(),
                node.index,
                committed,
                bson::DateTime::now(),
            );
            ok_reply(node, reply)
        }),
        "replSetGetConfig" => require_replica_set(node).map(|()| {
            let reply = admin::config_reply(&node.inner.topology());
            ok_reply(node, reply)
        }),
        "replSetReconfig" => {
            let set_name = node.inner.topology().set_name().to_owned();
            match require_replica_set(node)
                .and_then(|()| admin::parse_reconfig(request.command(), &set_name))
            {
                Ok((members, version)) => {
                    let inner = Arc::clone(&node.inner);
                    detached(async move { inner.reconfigure(members, version).await })
                        .await
                        .map(|()| ok(node))
                }
                Err(failure) => Err(failure),
            }
        }
        "shutdown" => {
            // mongod does not answer `shutdown`: the connection just closes.
            let inner = Arc::clone(&node.inner);
            let index = node.index;
            tokio::spawn(async move { inner.kill(index).await });
            Ok(Reaction::NoReply.into())
        }
        _ => return None,
    };
    Some(result.unwrap_or_else(|failure| error(node, &failure)))
}
