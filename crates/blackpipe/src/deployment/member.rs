//! One node's [`Handler`]: the command pipeline of a mongod (or mongos) process, in mongod's
//! order: ingress (partition, slowness, shutdown) -> overload fault, then capacity (see
//! [`super::ingress`]) -> `failCommand` -> `maxTimeMS`
//! -> hello -> control and trivial commands -> primary/secondary checks -> the command's
//! execution time -> the store -> write-concern
//! error injection -> error labels, `topologyVersion` and `$clusterTime`. While the node is
//! partitioned, requests wait at ingress and replies wait before leaving, until it heals.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bson::{Bson, DateTime, Document, doc};
use tokio::sync::watch;

use super::change_streams;
use super::control;
use super::errors::{
    self, INTERRUPTED_DUE_TO_REPL_STATE_CHANGE, NOT_PRIMARY_NO_SECONDARY_OK,
    NOT_PRIMARY_OR_SECONDARY, NOT_WRITABLE_PRIMARY, SHUTDOWN_IN_PROGRESS, SessionFacts,
};
use super::hello::{self, HelloFacts, OpTime};
use super::max_time::{self, Run};
use super::model::{DeploymentKind, Health, NodeIndex, Role, TopologyVersion};
use super::state::{Inner, NodeCounters, Process, lock};
use crate::codes;
use crate::failpoint::{CommandFacts, FailCommandAction, FailOutcome, TransactionalWriteAction};
use crate::server::{
    BoxFuture, ConnectionContext, Handler, Outcome, Reaction, Request, RequestKind,
};

/// OP_QUERY flag bit 2: the legacy secondaryOk bit.
const QUERY_SECONDARY_OK: u32 = 1 << 2;

/// How mongod lets a command run on a node that is not primary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CommandClass {
    /// Runs anywhere (hello, ping, getMore, admin commands...).
    Always,
    /// A read: on a secondary only with secondaryOk (`kOptIn`).
    Read,
    /// A write: primary only (`kNever`).
    Write,
}

/// The canonical name mongod gives a command (aliases resolved).
pub(crate) fn canonical_name(name: &str) -> &str {
    match name {
        "ismaster" => "isMaster",
        "findandmodify" => "findAndModify",
        "buildinfo" => "buildInfo",
        other => other,
    }
}

pub(crate) fn classify(name: &str) -> CommandClass {
    match name {
        "insert" | "update" | "delete" | "findAndModify" | "create" | "drop" | "dropDatabase"
        | "createIndexes" | "dropIndexes" | "renameCollection" | "collMod" | "bulkWrite"
        | "commitTransaction" | "abortTransaction" => CommandClass::Write,
        "find" | "aggregate" | "count" | "distinct" | "listCollections" | "listIndexes"
        | "listDatabases" | "dbStats" | "collStats" | "dataSize" => CommandClass::Read,
        _ => CommandClass::Always,
    }
}

/// What a node knows about itself at one instant (read under the state lock).
#[derive(Debug, Clone, Copy)]
pub(crate) struct NodeView {
    pub(crate) kind: DeploymentKind,
    pub(crate) role: Role,
    pub(crate) health: Health,
    pub(crate) term: i64,
    pub(crate) version: TopologyVersion,
    pub(crate) slow: Duration,
    /// How long each of the store's commands takes to run (see [`spend`]).
    pub(crate) command_time: Duration,
    pub(crate) replication_lag: Duration,
}

/// Everything one node's tasks share; cheap to clone into spawned tasks.
#[derive(Clone)]
pub(crate) struct NodeContext {
    pub(crate) inner: Arc<Inner>,
    pub(crate) index: NodeIndex,
    pub(crate) process: Arc<Process>,
    pub(crate) version: Arc<watch::Sender<TopologyVersion>>,
}

impl NodeContext {
    pub(crate) fn view(&self) -> Option<NodeView> {
        let state = lock(&self.inner.state);
        let node = state.topology.node(self.index)?;
        let slot = state.slots.get(self.index)?;
        Some(NodeView {
            kind: state.topology.kind(),
            role: node.role(),
            health: node.health(),
            term: state.topology.term(),
            version: node.topology_version(),
            slow: slot.slow,
            command_time: slot.command_time,
            replication_lag: state.replication_lag,
        })
    }

    /// The optime this node reports: the store's latest write on a primary, a lagging one on
    /// a secondary; a baseline (the deployment's start) before any write.
    fn op_times(&self, view: &NodeView, now: DateTime) -> (OpTime, OpTime) {
        let latest = super::backend::last_write(&self.inner.store);
        let lagging = if view.replication_lag.is_zero() {
            latest
        } else {
            let lag_ms = i64::try_from(view.replication_lag.as_millis()).unwrap_or(i64::MAX);
            let cutoff = DateTime::from_millis(now.timestamp_millis().saturating_sub(lag_ms));
            super::backend::last_write_before(&self.inner.store, cutoff)
        };
        let to_op_time = |write: Option<super::backend::WriteTime>| {
            let write = write.unwrap_or(self.inner.baseline);
            OpTime {
                ts: write.ts,
                term: view.term.max(1),
                wall: write.wall,
            }
        };
        let mine = if view.role == Role::Primary {
            to_op_time(latest)
        } else {
            to_op_time(lagging)
        };
        (mine, to_op_time(lagging))
    }

    /// Builds this node's hello reply, `$clusterTime` included where mongod adds it.
    pub(crate) fn hello_reply(
        &self,
        legacy: bool,
        hello_ok: bool,
        connection_id: i64,
    ) -> Option<(Document, NodeView)> {
        let view = self.view()?;
        let now = DateTime::now();
        let (last_write, majority) = self.op_times(&view, now);
        let facts = HelloFacts {
            legacy,
            hello_ok,
            connection_id,
            local_time: now,
            last_write: Some(last_write),
            majority_write: Some(majority),
        };
        let mut reply = {
            let state = lock(&self.inner.state);
            hello::hello_reply(&state.topology, self.index, &facts)
        };
        self.append_cluster_time(&view, &mut reply);
        Some((reply, view))
    }

    pub(crate) fn append_cluster_time(&self, view: &NodeView, reply: &mut Document) {
        if view.kind != DeploymentKind::Standalone {
            let latest =
                super::backend::last_write(&self.inner.store).unwrap_or(self.inner.baseline);
            hello::append_cluster_time(reply, latest.ts.max(self.inner.baseline.ts));
        }
    }

    /// Finishes a reply: labels, `topologyVersion` on state-change errors, `$clusterTime`.
    pub(crate) fn finish(
        &self,
        mut reply: Document,
        session: SessionFacts,
        labels: Option<&[String]>,
    ) -> Outcome {
        if let Some(view) = self.view() {
            errors::finish_reply(&mut reply, session, labels, view.version);
            self.append_cluster_time(&view, &mut reply);
        }
        Reaction::Reply(reply).into()
    }

    /// Resolves once this node is no longer partitioned, with its view then (`None` if it is
    /// gone). A partition drops packets and TCP retransmits them: what a partitioned node
    /// received or was about to send gets through once the partition heals, if the connection
    /// is still open (closing it drops this future along with the connection's task).
    pub(crate) async fn reachable_view(&self) -> Option<NodeView> {
        // Subscribe before reading the state so that a heal in between still wakes us: every
        // health change moves this node's topologyVersion.
        let mut changes = self.version.subscribe();
        loop {
            let view = self.view()?;
            if view.health != Health::Partitioned {
                return Some(view);
            }
            if changes.changed().await.is_err() {
                return self.view();
            }
        }
    }

    /// Holds a single reply while the node is partitioned; hang-ups and silences go at once,
    /// and streams hold their own replies.
    async fn deliver(&self, outcome: Outcome) -> Outcome {
        let holds = matches!(
            &outcome,
            Outcome::React(reaction) if !matches!(reaction, Reaction::HangUp | Reaction::NoReply)
        );
        if holds {
            let _ = self.reachable_view().await;
        }
        outcome
    }

    /// Waits `duration`. For a write that started on the primary, a stepdown meanwhile
    /// interrupts the wait (`Err`), as mongod kills in-flight writes when it steps down.
    async fn pause(&self, duration: Duration, write_on_primary: Option<i64>) -> Result<(), ()> {
        let deadline = tokio::time::Instant::now() + duration;
        let Some(term) = write_on_primary else {
            tokio::time::sleep_until(deadline).await;
            return Ok(());
        };
        let mut changes = self.version.subscribe();
        loop {
            tokio::select! {
                () = tokio::time::sleep_until(deadline) => return Ok(()),
                changed = changes.changed() => {
                    if changed.is_err() {
                        tokio::time::sleep_until(deadline).await;
                        return Ok(());
                    }
                    let still_primary = self
                        .view()
                        .is_some_and(|view| view.role == Role::Primary && view.term == term);
                    if !still_primary {
                        return Err(());
                    }
                }
            }
        }
    }
}

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
            let outcome = dispatch(&self.node, &self.counters, request, connection).await;
            self.node.deliver(outcome).await
        })
    }
}

/// Spends `work` of modelled server time on a command limited to `limit` (its maxTimeMS).
/// `Some` answer when the command ends there: interrupted at its maxTimeMS, or, for a write on
/// the primary, by a stepdown. `None` when the work is done and the command goes on.
async fn spend(
    node: &NodeContext,
    work: Duration,
    limit: Option<Duration>,
    write_on_primary: Option<i64>,
    session: SessionFacts,
) -> Option<Outcome> {
    if work.is_zero() {
        return None;
    }
    let run = Run::of(work, limit);
    if node.pause(run.duration(), write_on_primary).await.is_err() {
        return Some(interrupted(node, session));
    }
    match run {
        Run::Completes(_) => None,
        Run::Expires(_) => Some(node.finish(max_time::expired_reply(), session, None)),
    }
}

fn interrupted(node: &NodeContext, session: SessionFacts) -> Outcome {
    node.finish(
        errors::error_reply(
            INTERRUPTED_DUE_TO_REPL_STATE_CHANGE,
            "operation was interrupted because a replica set state change occurred",
        ),
        session,
        None,
    )
}

/// `db.coll` when the command's first value names a collection (for `getMore`, its
/// `collection` field), `db.$cmd` otherwise.
pub(crate) fn namespace_of(request: &Request) -> String {
    let command = request.command();
    if request.command_name() == "getMore" {
        if let Ok(collection) = command.get_str("collection") {
            return format!("{}.{collection}", request.database());
        }
    }
    match command.values().next() {
        Some(Bson::String(collection)) => format!("{}.{collection}", request.database()),
        _ => format!("{}.$cmd", request.database()),
    }
}

/// OP_MSG: a `$readPreference` other than primary; OP_QUERY: the secondaryOk bit.
fn secondary_ok(request: &Request) -> bool {
    match request.kind() {
        RequestKind::Msg => request
            .command()
            .get_document("$readPreference")
            .ok()
            .and_then(|preference| preference.get_str("mode").ok())
            .is_some_and(|mode| mode != "primary"),
        RequestKind::Query => match &request.message().body {
            steadfast_wire::Body::Query(query) => query.flags & QUERY_SECONDARY_OK != 0,
            _ => false,
        },
    }
}

fn role_check(view: &NodeView, class: CommandClass, request: &Request) -> Option<Document> {
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

/// What `failCommand` does to a command with these facts before it runs, if it triggers.
pub(crate) fn fail_command_action(
    node: &NodeContext,
    facts: &CommandFacts<'_>,
) -> Option<FailCommandAction> {
    let mut fail_points = lock(&node.process.fail_points);
    if fail_points.any_active() {
        fail_points.before_command(facts, &mut *lock(&node.inner.rng))
    } else {
        None
    }
}

async fn dispatch(
    node: &NodeContext,
    counters: &NodeCounters,
    request: Arc<Request>,
    connection: &mut ConnectionContext,
) -> Outcome {
    let name = canonical_name(request.command_name()).to_owned();
    let is_hello = matches!(name.as_str(), "hello" | "isMaster");
    counters.count(is_hello);
    let session = SessionFacts::of(&name, request.command());
    let class = classify(&name);
    let Some(mut view) = node.view() else {
        return Reaction::reply(errors::error_reply(
            codes::SHUTDOWN_IN_PROGRESS,
            "this node is not running",
        ))
        .into();
    };
    if view.health == Health::Partitioned {
        // Not delivered yet: the request is processed when the partition heals, as TCP would
        // deliver it late. Later requests on this connection wait behind it, in order.
        match node.reachable_view().await {
            Some(fresh) => view = fresh,
            None => return Reaction::HangUp.into(),
        }
    }
    match view.health {
        Health::Down => return Reaction::HangUp.into(),
        Health::Up | Health::ShuttingDown | Health::Partitioned => {}
    }
    let write_on_primary =
        (class == CommandClass::Write && view.role == Role::Primary).then_some(view.term);
    if !view.slow.is_zero() {
        // A slow node's delay is time the command spends on the server, so it ends at a valid
        // maxTimeMS too (an invalid one is refused once the command is read, below).
        let limit = max_time::parse(request.command()).ok().flatten();
        if let Some(answer) = spend(node, view.slow, limit, write_on_primary, session).await {
            return answer;
        }
        // The request was delivered before any partition that began meanwhile: it runs now,
        // and its reply is held until the partition heals.
        match node.view() {
            Some(fresh) => view = fresh,
            None => return Reaction::HangUp.into(),
        }
    }
    if view.health == Health::ShuttingDown {
        let mut reply = errors::error_reply(
            SHUTDOWN_IN_PROGRESS,
            "The server is in quiesce mode and will shut down",
        );
        // In quiesce mode, mongod's shutdown errors carry its topologyVersion.
        reply.insert("topologyVersion", hello::version_document(view.version));
        if change_streams::is_stream_get_more(node, &name, request.command()) {
            change_streams::label_resumable(&mut reply);
        }
        return node.finish(reply, session, None);
    }
    if let Some(refusal) = super::auth_gate::refusal(node, &name, connection, session) {
        return refusal;
    }
    let refusal = super::stable_api::refusal(&name, request.command())
        .or_else(|| super::search_gate::refusal(&name, request.command()));
    if let Some(reply) = refusal {
        return node.finish(reply, session, None);
    }
    if matches!(name.as_str(), "configureFailPoint" | "blackpipe") {
        if let Some(error) = control::mongod::admin_only(&request, &name) {
            return node.finish(error, session, None);
        }
        return match name.as_str() {
            "configureFailPoint" => control::mongod::configure_fail_point(node, &request),
            _ => control::blackpipe::run_admin(node, request.command()).await,
        };
    }
    // Held until the reply is built: the command's place under the capacity.
    let _admission = match super::ingress::admit(node, &name, is_hello) {
        Ok(admission) => admission,
        Err(rejection) => return node.finish(rejection.to_reply(), session, None),
    };
    let namespace = namespace_of(&request);
    let app_name = connection.app_name().map(str::to_owned);
    let facts = CommandFacts {
        name: &name,
        namespace: &namespace,
        app_name: app_name.as_deref(),
        supports_write_concern: class == CommandClass::Write,
    };
    if let Some(action) = fail_command_action(node, &facts) {
        if let Some(block) = action.block_for {
            // A partition that begins during the block holds the reply, not the command.
            if node.pause(block, write_on_primary).await.is_err() {
                return interrupted(node, session);
            }
        }
        match action.outcome {
            FailOutcome::Proceed => {}
            FailOutcome::CloseConnection => return Reaction::HangUp.into(),
            FailOutcome::Error { code, labels } => {
                return node.finish(
                    errors::error_reply(code, "Failing command via 'failCommand' failpoint"),
                    session,
                    labels.as_deref(),
                );
            }
        }
    }
    // mongod reads maxTimeMS after failCommand: a blocked connection's wait does not count.
    let limit = match max_time::parse(request.command()) {
        Ok(limit) => limit,
        Err(reply) => return node.finish(reply, session, None),
    };
    if is_hello {
        if let Some(refusal) = super::load_balanced::hello_refusal(request.command(), connection) {
            return node.finish(refusal, session, None);
        }
        let outcome = super::awaitable::hello(node, &request, connection, name == "isMaster").await;
        let outcome = super::load_balanced::decorate_hello(node, connection, outcome);
        return super::auth_gate::decorate_hello(node, request.command(), connection, outcome);
    }
    let (db, command) = (request.database(), request.command());
    if let Some(outcome) = super::auth_gate::run_sasl(node, &name, db, command, connection) {
        return outcome;
    }
    if let Some(outcome) = control::mongod::run_builtin(node, &name, &request, connection).await {
        return outcome;
    }
    let view = match node.view() {
        Some(view) => view,
        None => return Reaction::HangUp.into(),
    };
    let stream_get_more = change_streams::is_stream_get_more(node, &name, command);
    if let Some(mut error) = role_check(&view, class, &request)
        .or_else(|| change_streams::standalone_refusal(view.kind, &name, command))
        .or_else(|| super::standalone::refusal(&view, command))
        .or_else(|| change_streams::fail_after_checkout(node, &name, command))
    {
        if stream_get_more {
            change_streams::label_resumable(&mut error);
        }
        return node.finish(error, session, None);
    }
    // A getMore's maxTimeMS is how long an awaitData cursor waits for new data (the store
    // refuses it on other cursors), not a limit on the command: mongod never answers a getMore
    // with MaxTimeMSExpired for it, so a slow node's delay is not cut short by it either.
    let work_limit = if name == "getMore" { None } else { limit };
    if let Some(answer) = spend(
        node,
        view.command_time,
        work_limit,
        write_on_primary,
        session,
    )
    .await
    {
        return answer;
    }
    execute_in_store(node, &request, &facts, session, class).await
}

async fn execute_in_store(
    node: &NodeContext,
    request: &Request,
    facts: &CommandFacts<'_>,
    session: SessionFacts,
    class: CommandClass,
) -> Outcome {
    // mongod's fail point sits where a retryable write is applied; a retry that the
    // transaction table answers from its stored outcomes applies nothing and never reaches it.
    let retryable_write = class == CommandClass::Write
        && session.has_txn_number
        && !session.in_transaction
        && request.command().contains_key("lsid")
        && !node.inner.store.replays_entirely(request.command());
    let transactional = if retryable_write {
        lock(&node.process.fail_points).transactional_write(&mut *lock(&node.inner.rng))
    } else {
        TransactionalWriteAction::Proceed
    };
    if transactional == TransactionalWriteAction::CloseBeforeCommit {
        return Reaction::HangUp.into();
    }
    if let TransactionalWriteAction::FailBeforeCommit { code } = transactional {
        return node.finish(
            errors::error_reply(
                code,
                "Failing write via 'onPrimaryTransactionalWrite' failpoint",
            ),
            session,
            None,
        );
    }
    if let Some(reply) =
        super::router_txn::recover_commit(node, facts.name, request.command(), &node.inner.store)
    {
        return node.finish(reply, session, None);
    }
    let stream_get_more = change_streams::is_stream_get_more(node, facts.name, request.command());
    let started = Instant::now();
    let mut reply =
        super::backend::execute(&node.inner.store, request.database(), request.command()).await;
    super::router_txn::note_statement(node, session, request.command(), &mut reply);
    if stream_get_more {
        change_streams::label_resumable(&mut reply);
    }
    tracing::trace!(command = facts.name, elapsed = ?started.elapsed(), "store executed");
    if transactional == TransactionalWriteAction::CloseAfterCommit {
        return Reaction::HangUp.into();
    }
    let mut labels = None;
    if class == CommandClass::Write && errors::reply_is_ok(&reply) {
        let injection = {
            let mut fail_points = lock(&node.process.fail_points);
            if fail_points.any_active() {
                fail_points.after_write(facts, &mut *lock(&node.inner.rng))
            } else {
                None
            }
        };
        if let Some(injection) = injection {
            reply.insert("writeConcernError", injection.error);
            labels = injection.labels;
        }
        if !reply.contains_key("writeConcernError") {
            if let Some(error) = super::write_concern::unsatisfiable(node, request.command()) {
                reply.insert("writeConcernError", error);
            }
        }
    }
    node.finish(reply, session, labels.as_deref())
}

/// Reads `helloOk: true`.
pub(crate) fn wants_hello_ok(command: &Document) -> bool {
    matches!(command.get("helloOk"), Some(Bson::Boolean(true)))
}

/// A plain `{ok: 1}` reply with `$clusterTime` where the node adds it.
pub(crate) fn ok_reply(node: &NodeContext, mut reply: Document) -> Outcome {
    if !reply.contains_key("ok") {
        reply.insert("ok", 1.0);
    }
    node.finish(reply, SessionFacts::default(), None)
}

/// Shorthand for an empty success.
pub(crate) fn ok(node: &NodeContext) -> Outcome {
    ok_reply(node, doc! {})
}
