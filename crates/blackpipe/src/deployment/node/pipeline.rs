//! One node's [`Handler`]: the command pipeline of a mongod (or mongos) process. A request
//! runs through the gates in mongod's order, each answering "go on" or the request's outcome:
//! arrival (partition, death, slowness, shutdown) -> authentication (OIDC token expiry
//! first) -> Stable API and Atlas Search refusals -> the control commands (`configureFailPoint`,
//! `{blackpipe: ...}`, run by the control room) -> admission (overload fault, capacity) ->
//! `failCommand` -> `maxTimeMS` -> hello (awaitable, load-balanced, with authentication's
//! additions) -> SASL -> the mongod commands the node answers itself -> replication state,
//! change-stream and standalone refusals -> the command's execution time -> the store ->
//! router transactions, change-stream labels and the write concern -> error labels,
//! `topologyVersion` and `$clusterTime`. While the node is partitioned, requests wait at
//! arrival and replies wait before leaving, until it heals.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Instant;

use blackpipe_store::code;
use bson::Document;
use tokio::sync::watch;

use super::context::request::{self, CommandClass, canonical_name, classify};
use super::context::{Gate, NodeContext, NodeView, stop_with};
use super::{
    auth, awaitable, change_streams, fail_points, ingress, load_balanced, max_time, oidc,
    read_concern, role, router_txn, search, stable_api, standalone, write_concern, write_wait,
};
use crate::deployment::backend;
use crate::deployment::control::{blackpipe, mongod};
use crate::deployment::errors::{self, SessionFacts};
use crate::deployment::in_progress::Client;
use crate::deployment::model::{DeploymentKind, NodeIndex, TopologyVersion};
use crate::deployment::state::{Inner, NodeCounters, Process};
use crate::failpoint::{CommandFacts, TransactionalWriteAction};
use crate::server::{BoxFuture, ConnectionContext, Handler, Outcome, Reaction, Request};

/// The [`Handler`] of one node process.
pub(crate) struct MemberHandler {
    node: NodeContext,
    counters: Arc<NodeCounters>,
}

impl MemberHandler {
    pub(crate) fn new(
        inner: Arc<Inner>,
        index: NodeIndex,
        process: Arc<Process>,
        version: Arc<watch::Sender<TopologyVersion>>,
        counters: Arc<NodeCounters>,
    ) -> Self {
        Self {
            node: NodeContext {
                inner,
                index,
                process,
                version,
            },
            counters,
        }
    }
}

impl Handler for MemberHandler {
    fn handle<'a>(
        &'a self,
        request: Arc<Request>,
        connection: &'a mut ConnectionContext,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let client = Client {
                connection_id: connection.id().get(),
                address: connection.peer(),
                app_name: connection.app_name().map(str::to_owned),
            };
            let mut operation = self
                .node
                .process
                .in_progress
                .begin(client, Arc::clone(&request));
            let outcome = tokio::select! {
                biased;
                flow = run(&self.node, &self.counters, &request, connection) => {
                    let (ControlFlow::Break(outcome) | ControlFlow::Continue(outcome)) = flow;
                    outcome
                }
                () = operation.killed() => {
                    self.node.finish(interrupted(), SessionFacts::of(request.command_name(), request.command()), None)
                }
            };
            drop(operation);
            self.node.deliver(outcome).await
        })
    }
}

/// mongod's answer to an operation `killOp` ended.
fn interrupted() -> Document {
    errors::error_reply(code::INTERRUPTED, "operation was interrupted")
}

/// Runs `request` through the gates, then the store.
async fn run(
    node: &NodeContext,
    counters: &NodeCounters,
    request: &Request,
    connection: &mut ConnectionContext,
) -> Gate<Outcome> {
    let name = canonical_name(request.command_name()).to_owned();
    let is_hello = matches!(name.as_str(), "hello" | "isMaster");
    counters.count(is_hello);
    let command = request.command();
    node.process.opcounters.count(&name, command);
    let session = SessionFacts::of(&name, command);
    let class = classify(&name);
    let write_on_primary = ingress::arrive(node, request, &name, class, session).await?;
    stop_with(auth::refusal(node, &name, connection, session, || {
        oidc::expired(node, connection, session)
    }))?;
    let refusal = stable_api::refusal(&name, command).or_else(|| search::refusal(&name, command));
    node.refuse(refusal, session)?;
    control_command(node, request, &name, session).await?;
    // Held until the reply is built: the command's place under the capacity.
    let _admission = ingress::admit(node, &name, is_hello, session)?;
    let namespace = request::namespace_of(request);
    let app_name = connection.app_name().map(str::to_owned);
    let facts = CommandFacts {
        name: &name,
        namespace: &namespace,
        app_name: app_name.as_deref(),
        supports_write_concern: class == CommandClass::Write
            || request::aggregate_writes(&name, command),
    };
    fail_points::fail_command(node, &facts, write_on_primary, session).await?;
    let limit = max_time::limit(node, command, session)?;
    max_time::always_time_out(node, &name, command, limit, session)?;
    if is_hello {
        return ControlFlow::Break(hello(node, request, connection, &name, session).await);
    }
    let db = request.database();
    stop_with(oidc::run_sasl(node, &name, command, connection))?;
    stop_with(auth::run_sasl(node, &name, db, command, connection))?;
    stop_with(mongod::run_builtin(node, &name, request, connection).await)?;
    let Some(view) = node.view() else {
        return ControlFlow::Break(Reaction::HangUp.into());
    };
    let stream_get_more = node.is_stream_get_more(&name, command);
    if let Some(mut error) = role::refusal(&view, class, request)
        .or_else(|| change_streams::standalone_refusal(view.kind, &name, command))
        .or_else(|| standalone::refusal(&view, command))
        .or_else(|| change_streams::fail_after_checkout(node, &name, command))
    {
        if stream_get_more {
            errors::label_resumable_change_stream_error(&mut error);
        }
        return ControlFlow::Break(node.finish(error, session, None));
    }
    max_time::execution(node, &view, &name, limit, write_on_primary, session).await?;
    if class == CommandClass::Write {
        write_wait::wait_for_transactions(node, request.database(), command, limit, session)
            .await?;
    }
    read_concern::before(node, &view, command, limit, session).await?;
    store(node, request, &facts, session, class, limit, &view).await
}

/// `configureFailPoint` and `{blackpipe: ...}`, on the admin database only: the control room
/// runs them.
async fn control_command(
    node: &NodeContext,
    request: &Request,
    name: &str,
    session: SessionFacts,
) -> Gate {
    if !matches!(name, "configureFailPoint" | "blackpipe") {
        return ControlFlow::Continue(());
    }
    if let Some(error) = mongod::admin_only(request, name) {
        return ControlFlow::Break(node.finish(error, session, None));
    }
    ControlFlow::Break(match name {
        "configureFailPoint" => mongod::configure_fail_point(node, request),
        _ => blackpipe::run_admin(node, request.command()).await,
    })
}

/// Hello and legacy hello: the load balancer's refusal, the (awaitable) reply, then what the
/// load balancer and authentication add to it.
async fn hello(
    node: &NodeContext,
    request: &Request,
    connection: &mut ConnectionContext,
    name: &str,
    session: SessionFacts,
) -> Outcome {
    let command = request.command();
    if let Some(refusal) = load_balanced::hello_refusal(command, connection) {
        return node.finish(refusal, session, None);
    }
    let outcome = awaitable::hello(node, request, connection, name == "isMaster").await;
    let outcome = load_balanced::decorate_hello(node, connection, outcome);
    auth::decorate_hello(node, command, connection, outcome, |connection| {
        oidc::speculative(node, command, connection)
    })
}

/// The store, and what a member does around it: `onPrimaryTransactionalWrite`, a router's
/// transaction recovery and recovery tokens, change-stream labels, replication of what a
/// primary wrote, a linearizable read's confirmation, and the write concern.
async fn store(
    node: &NodeContext,
    request: &Request,
    facts: &CommandFacts<'_>,
    session: SessionFacts,
    class: CommandClass,
    limit: Option<std::time::Duration>,
    view: &NodeView,
) -> Gate<Outcome> {
    let command = request.command();
    let transactional = fail_points::transactional_write(node, request, session, class)?;
    let store = node.store();
    if request.database() == "local" && view.kind == DeploymentKind::ReplicaSet {
        // `local.system.replset` shows the configuration as it is now.
        let config = crate::deployment::control::admin::config_reply(&node.inner.topology());
        if let Ok(config) = config.get_document("config") {
            store.set_replica_set_config(config.clone());
        }
    }
    if request.database() == "config" && node.is_router() {
        // The sharding catalog, as it is now.
        let topology = node.inner.topology();
        let cluster_id = topology
            .nodes()
            .first()
            .map(|first| first.topology_version().process_id)
            .unwrap_or_default();
        store.set_config_catalog(crate::deployment::control::config_catalog::catalog(
            &topology,
            &store.database_names(),
            cluster_id,
            bson::DateTime::now(),
        ));
    }
    let rewritten = match crate::deployment::control::diagnostics::current_op_stage(
        node,
        request.database(),
        command,
    ) {
        Some(Ok(rewritten)) => Some(rewritten),
        Some(Err(error)) => return ControlFlow::Break(node.finish(error, session, None)),
        None => None,
    };
    let command = rewritten.as_ref().unwrap_or(command);
    let recovered = router_txn::recover_commit(node, facts.name, command, &store);
    node.refuse(recovered, session)?;
    let stream_get_more = node.is_stream_get_more(facts.name, command);
    let started = Instant::now();
    let written_before = store.op_time();
    let majority = || node.majority_committed();
    // Only an aggregate's `$collStats` reports the host: other commands skip the lookup
    // (it takes the deployment's lock).
    let host = (facts.name == "aggregate").then(|| node.host()).flatten();
    let router = node.is_router();
    let mut reply = backend::execute(
        &store,
        request.database(),
        command,
        &majority,
        host.as_deref(),
        if router {
            backend::ServedAs::Router
        } else if view.kind == DeploymentKind::Standalone {
            backend::ServedAs::Standalone
        } else {
            backend::ServedAs::Member
        },
    )
    .await;
    if store.op_time() != written_before {
        // The secondaries pull what this write added (at once where they have no lag).
        node.inner.replicate();
    }
    read_concern::confirm_linearizable(node, view, command, limit, session).await?;
    router_txn::note_statement(node, session, command, &mut reply);
    if stream_get_more {
        errors::label_resumable_change_stream_error(&mut reply);
    }
    let elapsed = started.elapsed();
    tracing::trace!(command = facts.name, ?elapsed, "store executed");
    if !facts.namespace.ends_with(".$cmd") {
        store.record_latency(
            facts.namespace,
            blackpipe_store::LatencyClass::of(facts.name),
            elapsed,
        );
    }
    if transactional == TransactionalWriteAction::CloseAfterCommit {
        return ControlFlow::Break(Reaction::HangUp.into());
    }
    let mut labels = None;
    if facts.supports_write_concern && errors::reply_is_ok(&reply) {
        labels = write_concern::after_write(node, facts, command, &mut reply, limit).await;
    }
    ControlFlow::Continue(node.finish(reply, session, labels.as_deref()))
}
