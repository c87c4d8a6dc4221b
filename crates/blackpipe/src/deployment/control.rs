//! Running control commands on a node: blackpipe's `{blackpipe: ...}` admin command, mongod's
//! replica set commands (`replSetStepDown`, `replSetFreeze`, `replSetStepUp`,
//! `replSetGetStatus`, `replSetGetConfig`, `replSetReconfig`, `shutdown`) and the trivial
//! commands every server answers (`ping`, `buildInfo`, session commands...).

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use bson::{Bson, Document, doc};

use super::admin::{self, AdminRequest, MemberRef};
use super::control_error::ControlError;
use super::errors::SessionFacts;
use super::member::{NodeContext, ok, ok_reply};
use super::model::{DeploymentKind, NodeIndex};
use super::state::{Inner, lock};
use crate::codes;
use crate::server::{ConnectionContext, Outcome, Reaction, ReplyStream, Request};

fn error(node: &NodeContext, error: &ControlError) -> Outcome {
    node.finish(error.to_reply(), SessionFacts::default(), None)
}

fn resolve(node: &NodeContext, member: &MemberRef) -> Result<NodeIndex, ControlError> {
    let state = lock(&node.inner.state);
    member.resolve(&state.topology, node.index)
}

/// Runs `operation` on its own task, so that the client hanging up cannot cancel it halfway,
/// and waits for it.
async fn detached<F>(operation: F) -> Result<(), ControlError>
where
    F: Future<Output = Result<(), ControlError>> + Send + 'static,
{
    tokio::spawn(operation)
        .await
        .unwrap_or_else(|join| Err(ControlError::Listen(format!("control task failed: {join}"))))
}

/// Replies `{ok: 1}` first, then runs `operation` (which will close this very connection):
/// the stream's receiver is dropped only once the reply has been written.
fn reply_then<F>(operation: F) -> Outcome
where
    F: Future<Output = Result<(), ControlError>> + Send + 'static,
{
    let (sender, stream) = ReplyStream::channel(1);
    tokio::spawn(async move {
        if sender.send(doc! { "ok": 1.0 }).await.is_ok() {
            sender.closed().await;
        }
        if let Err(error) = operation.await {
            tracing::warn!(%error, "control operation failed after replying");
        }
    });
    Outcome::Stream(stream)
}

/// Runs `{blackpipe: <action>, ...}`.
pub(crate) async fn run_admin(node: &NodeContext, command: &Document) -> Outcome {
    if command.get_str("blackpipe").ok() == Some("lbBackend") {
        return lb_backend(node, command);
    }
    if let Some(outcome) = super::oidc_gate::run_admin(node, command) {
        return outcome;
    }
    let request = match admin::parse_admin(command) {
        Ok(request) => request,
        Err(failure) => return error(node, &failure),
    };
    match execute(node, request).await {
        Ok(outcome) => outcome,
        Err(failure) => error(node, &failure),
    }
}

async fn execute(node: &NodeContext, request: AdminRequest) -> Result<Outcome, ControlError> {
    let inner: &Arc<Inner> = &node.inner;
    match request {
        AdminRequest::Status => {
            let reply = admin::blackpipe_status(&inner.topology(), Instant::now());
            return Ok(ok_reply(node, reply));
        }
        AdminRequest::StepDown {
            member,
            freeze_for,
            force,
        } => {
            let index = match member {
                Some(member) => Some(resolve(node, &member)?),
                None => None,
            };
            inner.step_down(index, freeze_for, force)?;
        }
        AdminRequest::Elect { member, after } => {
            let index = resolve(node, &member)?;
            if after.is_zero() {
                inner.elect(index)?;
            } else {
                inner.elect_later(index, after);
            }
        }
        AdminRequest::Freeze { member, duration } => {
            inner.freeze(resolve(node, &member)?, duration)?;
        }
        AdminRequest::Kill { member } => {
            let index = resolve(node, &member)?;
            let killer = Arc::clone(inner);
            if index == node.index {
                return Ok(reply_then(async move { killer.kill(index).await }));
            }
            detached(async move { killer.kill(index).await }).await?;
        }
        AdminRequest::Restart { member } => {
            let index = resolve(node, &member)?;
            let restarter = Arc::clone(inner);
            detached(async move { restarter.restart(index).await }).await?;
        }
        AdminRequest::Partition { member } => inner.partition(resolve(node, &member)?)?,
        AdminRequest::Heal { member } => inner.heal(resolve(node, &member)?)?,
        AdminRequest::Shutdown { member, quiesce } => {
            let index = resolve(node, &member)?;
            let stopper = Arc::clone(inner);
            return Ok(reply_then(
                async move { stopper.shutdown(index, quiesce).await },
            ));
        }
        AdminRequest::Slow { member, delay } => inner.slow(resolve(node, &member)?, delay)?,
        AdminRequest::SlowCommands { member, delay } => {
            inner.slow_commands(resolve(node, &member)?, delay)?;
        }
        AdminRequest::Overload { member, overload } => {
            inner.overload(resolve(node, &member)?, Some(overload))?;
        }
        AdminRequest::Capacity { member, change } => {
            let targets = capacity_targets(node, member.as_ref())?;
            for &index in &targets {
                inner.set_capacity(index, change)?;
            }
            let members: Vec<i64> = targets
                .iter()
                .map(|&index| i64::try_from(index).unwrap_or(i64::MAX))
                .collect();
            return Ok(ok_reply(node, doc! { "members": members }));
        }
        AdminRequest::CapacityStats { member } => {
            let targets = capacity_targets(node, member.as_ref())?;
            let reply = inner.capacity_report(&targets)?;
            return Ok(ok_reply(node, reply));
        }
        AdminRequest::ReplicationLag { lag } => inner.set_replication_lag(lag),
        AdminRequest::TransactionLifetime { lifetime } => {
            inner.store.set_transaction_lifetime(lifetime);
        }
        AdminRequest::AutoFailover {
            enabled,
            election_delay,
        } => inner.set_auto_failover(enabled, election_delay),
        AdminRequest::AddMember { options } => {
            let adder = Arc::clone(inner);
            let (index, host) = tokio::spawn(async move { adder.add_member(options).await })
                .await
                .unwrap_or_else(|join| {
                    Err(ControlError::Listen(format!("control task failed: {join}")))
                })?;
            let index = i64::try_from(index).unwrap_or(i64::MAX);
            return Ok(ok_reply(node, doc! { "member": index, "host": host }));
        }
    }
    Ok(ok(node))
}

/// The member a capacity command names, or every data-bearing member.
fn capacity_targets(
    node: &NodeContext,
    member: Option<&MemberRef>,
) -> Result<Vec<NodeIndex>, ControlError> {
    match member {
        Some(member) => Ok(vec![resolve(node, member)?]),
        None => Ok(node.inner.data_bearing_members()),
    }
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
    );
    if admin_command && request.database() != "admin" {
        let reply = super::errors::error_reply(
            codes::UNAUTHORIZED,
            format!("{name} may only be run against the admin database."),
        );
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
                "version": "8.0.0",
                "gitVersion": "blackpipe",
                "versionArray": [8, 0, 0, 0],
                "bits": 64,
                "maxBsonObjectSize": super::hello::MAX_BSON_OBJECT_SIZE,
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
        "getParameter" => Ok(ok_reply(
            node,
            super::stable_api::get_parameter(request.command()),
        )),
        test if super::stable_api::is_test_command(test) => Ok(ok(node)),
        // A router's sharding catalog is always consistent in blackpipe: an exhausted cursor
        // with no inconsistency (mongod shards have the command too, but blackpipe's shards
        // are never addressed directly).
        "checkMetadataConsistency" if super::router_txn::is_router(node) => Ok(ok_reply(
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
            let reply = admin::status_reply(&node.inner.topology(), node.index);
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

/// Runs `{blackpipe: "lbBackend", backend, down}` (see
/// [`load_balancer`](crate::deployment::load_balancer)).
fn lb_backend(node: &NodeContext, command: &Document) -> Outcome {
    let result = parse_backend_command(command)
        .and_then(|(backend, down)| node.inner.set_backend_down(backend, down));
    let reply = match result {
        Ok(closed) => doc! { "ok": 1.0, "closed": i64::try_from(closed).unwrap_or(i64::MAX) },
        Err(error) => error.to_reply(),
    };
    node.finish(reply, SessionFacts::default(), None)
}

/// Reads `backend` (a non-negative integer) and `down` (a boolean).
fn parse_backend_command(command: &Document) -> Result<(NodeIndex, bool), ControlError> {
    let bad = |message: &str| ControlError::BadArgument(message.to_owned());
    let backend = match command.get("backend") {
        Some(Bson::Int32(index)) => i64::from(*index),
        Some(Bson::Int64(index)) => *index,
        _ => return Err(bad("'backend' must be an integer router index")),
    };
    let backend =
        NodeIndex::try_from(backend).map_err(|_| bad("'backend' must not be negative"))?;
    let Some(Bson::Boolean(down)) = command.get("down") else {
        return Err(bad("'down' must be a boolean"));
    };
    Ok((backend, *down))
}
