//! The node room's context: what one member knows when a request arrives. [`NodeContext`]
//! is the view of the deployment a request needs (the shared state, this member's index,
//! its server process and its `topologyVersion` channel); [`NodeView`] is what the member knows
//! about itself at one instant; the reply helpers finish every reply as mongod does (labels,
//! `topologyVersion`, `$clusterTime`). [`Gate`] is what each gate of the pipeline answers.
//! The gates import this module and the foot of `deployment/`, never each other.

pub(crate) mod request;
pub(crate) mod time;

use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, DateTime, Document, doc};
use tokio::sync::watch;

use crate::deployment::backend::{self, WriteTime};
use crate::deployment::errors::{self, SessionFacts};
use crate::deployment::hello::{self, HelloFacts, OpTime};
use crate::deployment::model::{DeploymentKind, Health, NodeIndex, Role, TopologyVersion};
use crate::deployment::state::{Inner, Process, lock};
use crate::failpoint::{CommandFacts, FailCommandAction};
use crate::server::{Outcome, Reaction};

/// What a gate decides: [`ControlFlow::Continue`] lets the request go on, with what the gate
/// found out; [`ControlFlow::Break`] ends it with this outcome.
pub(crate) type Gate<T = ()> = ControlFlow<Outcome, T>;

/// A gate's answer from an optional outcome: `Some` ends the request.
pub(crate) fn stop_with(outcome: Option<Outcome>) -> Gate {
    match outcome {
        Some(outcome) => ControlFlow::Break(outcome),
        None => ControlFlow::Continue(()),
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
    /// How long each of the store's commands takes to run (see [`time::spend`]).
    pub(crate) command_time: Duration,
}

impl NodeView {
    /// The term of a write that starts now on this node if it is primary: a stepdown
    /// meanwhile interrupts the write.
    pub(crate) fn write_on_primary(&self, class: request::CommandClass) -> Option<i64> {
        (class == request::CommandClass::Write && self.role == Role::Primary).then_some(self.term)
    }
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
        })
    }

    /// This node's `host:port`, as its hello's `me` names it.
    pub(crate) fn host(&self) -> Option<String> {
        let state = lock(&self.inner.state);
        state
            .topology
            .node(self.index)
            .map(|node| node.host().to_owned())
    }

    /// The store this node serves.
    pub(crate) fn store(&self) -> Arc<blackpipe_store::Store> {
        self.inner.store_of(self.index).unwrap_or_default()
    }

    /// The optimes this node reports in hello: what it has applied (its store's latest write)
    /// and the majority commit point it knows; a baseline (the deployment's start) before any
    /// write.
    fn op_times(&self, view: &NodeView) -> (OpTime, OpTime) {
        let store = self.store();
        let to_op_time = |write: Option<WriteTime>| {
            let write = write.unwrap_or(self.inner.baseline);
            OpTime {
                ts: write.ts,
                term: view.term.max(1),
                wall: write.wall,
            }
        };
        let applied = backend::last_write(&store);
        let majority = match self.majority_committed() {
            Some(commit) => backend::write_at(&store, commit),
            None => applied,
        };
        (to_op_time(applied), to_op_time(majority))
    }

    /// The majority commit point this replica set member knows (`None` outside replica sets,
    /// where every write is as committed as it will ever be).
    pub(crate) fn majority_committed(&self) -> Option<bson::Timestamp> {
        let data = {
            let state = lock(&self.inner.state);
            if state.topology.kind() != DeploymentKind::ReplicaSet {
                return None;
            }
            Arc::clone(&state.slots.get(self.index)?.data)
        };
        Some(data.known_commit())
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
        let (last_write, majority) = self.op_times(&view);
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

    /// Appends `$clusterTime` (the newest optime any member has written: members gossip it)
    /// and `operationTime` (what this member has applied).
    pub(crate) fn append_cluster_time(&self, view: &NodeView, reply: &mut Document) {
        if view.kind != DeploymentKind::Standalone {
            let baseline = self.inner.baseline.ts;
            let applied = backend::last_write(&self.store()).map_or(baseline, |write| write.ts);
            let cluster_time = self
                .inner
                .replication
                .clock
                .latest()
                .max(applied)
                .max(baseline);
            hello::append_cluster_time(reply, cluster_time);
            reply.insert("operationTime", applied.max(baseline));
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
    pub(crate) async fn deliver(&self, outcome: Outcome) -> Outcome {
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
    pub(crate) async fn pause(
        &self,
        duration: Duration,
        write_on_primary: Option<i64>,
    ) -> Result<(), ()> {
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

    /// A gate's answer from an optional refusal: `Some` ends the request with that reply,
    /// finished.
    pub(crate) fn refuse(&self, refusal: Option<Document>, session: SessionFacts) -> Gate {
        match refusal {
            Some(reply) => ControlFlow::Break(self.finish(reply, session, None)),
            None => ControlFlow::Continue(()),
        }
    }

    /// Whether this node is a router (mongos).
    pub(crate) fn is_router(&self) -> bool {
        self.view().is_some_and(|view| view.role == Role::Router)
    }

    /// Whether `command` is a getMore on an open change-stream cursor of this node's store.
    pub(crate) fn is_stream_get_more(&self, name: &str, command: &Document) -> bool {
        name == "getMore"
            && matches!(command.get("getMore"), Some(Bson::Int64(id)) if self.store().is_change_stream_cursor(*id))
    }

    /// What `failCommand` does to a command with these facts before it runs, if it triggers.
    pub(crate) fn fail_command_action(
        &self,
        facts: &CommandFacts<'_>,
    ) -> Option<FailCommandAction> {
        let mut fail_points = lock(&self.process.fail_points);
        if fail_points.any_active() {
            fail_points.before_command(facts, &mut *lock(&self.inner.rng))
        } else {
            None
        }
    }
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
