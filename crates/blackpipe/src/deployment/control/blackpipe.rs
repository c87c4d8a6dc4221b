//! Running `{blackpipe: <action>, ...}` on a node: the command is parsed into an
//! [`AdminRequest`] (see [`admin`]), then applied to the deployment; `lbBackend`
//! and `mintOidcToken` are parsed and applied here too.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{Bson, Document, doc};

use super::admin::{self, AdminRequest, MemberRef};
use crate::deployment::control_error::ControlError;
use crate::deployment::errors::{self, SessionFacts};
use crate::deployment::model::{DeploymentKind, NodeIndex};
use crate::deployment::node::context::{NodeContext, ok, ok_reply};
use crate::deployment::state::{Effects, Inner, lock};
use crate::server::{Outcome, ReplyStream};
use blackpipe_store::code;

pub(super) fn error(node: &NodeContext, error: &ControlError) -> Outcome {
    node.finish(error.to_reply(), SessionFacts::default(), None)
}

pub(super) fn resolve(node: &NodeContext, member: &MemberRef) -> Result<NodeIndex, ControlError> {
    let state = lock(&node.inner.state);
    member.resolve(&state.topology, node.index)
}

/// Runs `operation` on its own task, so that the client hanging up cannot cancel it halfway,
/// and waits for it.
pub(super) async fn detached<F>(operation: F) -> Result<(), ControlError>
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
    match command.get_str("blackpipe").ok() {
        Some("lbBackend") => return lb_backend(node, command),
        Some("mintOidcToken") => return mint_oidc_token(node, command),
        _ => {}
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
            let topology = inner.topology();
            let mut reply = admin::blackpipe_status(&topology, Instant::now());
            if topology.kind() == DeploymentKind::ReplicaSet {
                reply.insert(
                    "replication",
                    doc! {
                        "majorityCommitPoint": inner.replication.commit_point(),
                        "members": inner.replication_status(),
                    },
                );
            }
            return Ok(ok_reply(node, reply));
        }
        AdminRequest::Rollbacks => {
            let reply = lock(&inner.replication.rollbacks).to_reply();
            return Ok(ok_reply(node, reply));
        }
        AdminRequest::PauseReplication { member, paused } => {
            let index = member.map(|member| resolve(node, &member)).transpose()?;
            inner.set_replication_paused(index, paused)?;
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
        AdminRequest::Partition { member, from: None } => {
            inner.partition(resolve(node, &member)?)?;
        }
        AdminRequest::Partition {
            member,
            from: Some(from),
        } => {
            let index = resolve(node, &member)?;
            let from = from
                .iter()
                .map(|other| resolve(node, other))
                .collect::<Result<Vec<_>, _>>()?;
            inner.cut(index, &from)?;
        }
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
        AdminRequest::ReplicationLag { lag, member } => {
            let index = member.map(|member| resolve(node, &member)).transpose()?;
            inner.set_replication_lag(index, lag)?;
        }
        AdminRequest::TransactionLifetime { lifetime } => inner.set_transaction_lifetime(lifetime),
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

/// The lifetime of a token minted by `mintOidcToken` when it names none.
const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(3600);

/// `{blackpipe: "mintOidcToken", principal: <string>, lifetimeSecs: <n>}` on the admin
/// database: `{ok: 1, token}`.
fn mint_oidc_token(node: &NodeContext, command: &Document) -> Outcome {
    let reply = match mint(node, command) {
        Ok(token) => doc! { "ok": 1, "token": token },
        Err(message) => errors::error_reply(code::BAD_VALUE, message),
    };
    node.finish(reply, SessionFacts::default(), None)
}

fn mint(node: &NodeContext, command: &Document) -> Result<String, String> {
    let issuer = node
        .inner
        .oidc
        .as_deref()
        .ok_or("this deployment has no OIDC issuer")?;
    let principal = command
        .get_str("principal")
        .map_err(|_| "mintOidcToken needs a string principal")?;
    let lifetime = match command.get("lifetimeSecs") {
        None => DEFAULT_TOKEN_LIFETIME,
        Some(Bson::Int32(secs)) if *secs > 0 => Duration::from_secs(secs.unsigned_abs().into()),
        Some(Bson::Int64(secs)) if *secs > 0 => Duration::from_secs(secs.unsigned_abs()),
        Some(_) => return Err("lifetimeSecs must be a positive integer".into()),
    };
    Ok(issuer.mint(principal, lifetime))
}
