//! Hello, awaitable hello (`topologyVersion` + `maxAwaitTimeMS`) and streaming hello
//! (`exhaustAllowed`): the reply waits for the node's topologyVersion to move or for
//! `maxAwaitTimeMS`, whichever comes first; with exhaust, replies keep coming with
//! `moreToCome`, each after the next change or timeout, until the client goes away.

use std::time::Duration;

use bson::Document;
use tokio::sync::watch;

use super::context::NodeContext;
use super::context::request::{namespace_of, wants_hello_ok};
use crate::deployment::balanced::connection_number;
use crate::deployment::errors::{self, SHUTDOWN_IN_PROGRESS, SessionFacts};
use crate::deployment::hello::{
    AwaitDecision, AwaitRequest, await_decision, future_counter_error, parse_await,
    version_document,
};
use crate::deployment::model::{Health, TopologyVersion};
use crate::failpoint::{CommandFacts, FailOutcome};
use crate::server::{
    ConnectionContext, Outcome, Reaction, ReplyStream, ReplyStreamSender, Request, RequestKind,
};

/// Waits until the version differs from `seen` (another process, or a higher counter) or
/// `max_await` passes.
async fn wait_for_change(
    changes: &mut watch::Receiver<TopologyVersion>,
    seen: TopologyVersion,
    max_await: Duration,
) {
    let deadline = tokio::time::Instant::now() + max_await;
    loop {
        let current = *changes.borrow_and_update();
        if await_decision(current, seen) != AwaitDecision::Wait {
            return;
        }
        match tokio::time::timeout_at(deadline, changes.changed()).await {
            Ok(Ok(())) => {}
            // Timed out, or the node is gone: reply with what there is.
            Ok(Err(_)) | Err(_) => return,
        }
    }
}

/// Answers a hello-family command.
pub(crate) async fn hello(
    node: &NodeContext,
    request: &Request,
    connection: &ConnectionContext,
    legacy: bool,
) -> Outcome {
    let command = request.command();
    let hello_ok = wants_hello_ok(command);
    let connection_id = connection_number(connection);
    let awaited = match parse_await(command) {
        Ok(awaited) => awaited,
        Err(error) => return Reaction::reply(error.to_reply()).into(),
    };
    let Some(AwaitRequest { seen, max_await_ms }) = awaited else {
        return reply_when_reachable(node, legacy, hello_ok, connection_id).await;
    };
    let mut changes = node.version.subscribe();
    let current = *changes.borrow_and_update();
    if await_decision(current, seen) == AwaitDecision::FutureCounter {
        return Reaction::reply(future_counter_error().to_reply()).into();
    }
    let max_await = Duration::from_millis(max_await_ms);
    if request.kind() == RequestKind::Msg && request.exhaust_allowed() {
        let (sender, stream) = ReplyStream::channel(1);
        let node = node.clone();
        let fail_facts = HelloFailFacts {
            name: if legacy { "isMaster" } else { "hello" },
            namespace: namespace_of(request),
            app_name: connection.app_name().map(str::to_owned),
        };
        tokio::spawn(async move {
            stream_hellos(
                node,
                sender,
                changes,
                seen,
                max_await,
                legacy,
                hello_ok,
                connection_id,
                fail_facts,
            )
            .await;
        });
        return Outcome::Stream(stream);
    }
    wait_for_change(&mut changes, seen, max_await).await;
    reply_when_reachable(node, legacy, hello_ok, connection_id).await
}

/// The reply as the node stands once it is reachable: a partition that began while the hello
/// waited holds it until the partition heals (it then describes the healed node), a shutdown
/// that began turns it into `ShutdownInProgress`.
async fn reply_when_reachable(
    node: &NodeContext,
    legacy: bool,
    hello_ok: bool,
    connection_id: i64,
) -> Outcome {
    loop {
        if node.reachable_view().await.is_none() {
            return Reaction::HangUp.into();
        }
        let Some((reply, view)) = node.hello_reply(legacy, hello_ok, connection_id) else {
            return Reaction::HangUp.into();
        };
        return match view.health {
            Health::Up => Reaction::Reply(reply).into(),
            // Partitioned again between the two reads: wait for that partition too.
            Health::Partitioned => continue,
            Health::ShuttingDown => Reaction::Reply(shutdown_error(node, view.version)).into(),
            Health::Down => Reaction::HangUp.into(),
        };
    }
}

/// Feeds an exhaust stream: one reply per change or `max_await`, until the connection closes
/// or the node goes down. A reply due while the node is partitioned is held until it heals and
/// then describes the healed node.
#[allow(clippy::too_many_arguments)]
async fn stream_hellos(
    node: NodeContext,
    sender: ReplyStreamSender,
    mut changes: watch::Receiver<TopologyVersion>,
    mut seen: TopologyVersion,
    max_await: Duration,
    legacy: bool,
    hello_ok: bool,
    connection_id: i64,
    fail_facts: HelloFailFacts,
) {
    let mut first = true;
    loop {
        // mongod runs each turn of an exhaust stream as the command again, `failCommand`
        // included (the first turn was evaluated with the request itself).
        if !std::mem::take(&mut first) {
            match fail_facts.apply(&node, &sender).await {
                StreamTurn::Continue => {}
                StreamTurn::End(reaction) => {
                    let _ = sender.finish_with(reaction).await;
                    return;
                }
                StreamTurn::Closed => return,
            }
        }
        tokio::select! {
            () = sender.closed() => return,
            () = wait_for_change(&mut changes, seen, max_await) => {}
        }
        tokio::select! {
            () = sender.closed() => return,
            reachable = node.reachable_view() => if reachable.is_none() { return },
        }
        let Some((reply, view)) = node.hello_reply(legacy, hello_ok, connection_id) else {
            return;
        };
        match view.health {
            // The connections of a killed node are being closed; dropping the sender closes
            // this one too.
            Health::Down => return,
            // Partitioned again since the heal: the next turn holds the reply again.
            Health::Partitioned => continue,
            Health::ShuttingDown => {
                let _ = sender
                    .finish_with(Reaction::Reply(shutdown_error(&node, view.version)))
                    .await;
                return;
            }
            Health::Up => {}
        }
        seen = view.version;
        if sender.send(reply).await.is_err() {
            return;
        }
    }
}

/// What `failCommand` is evaluated against on each turn of a streaming hello.
struct HelloFailFacts {
    /// `hello` or `isMaster`, as the request named it.
    name: &'static str,
    /// The request's namespace (`admin.$cmd`).
    namespace: String,
    /// The connection's application name, from its handshake.
    app_name: Option<String>,
}

/// How a turn of a streaming hello goes after `failCommand`.
enum StreamTurn {
    /// Reply as usual.
    Continue,
    /// End the stream with this (an error reply, or hanging up).
    End(Reaction),
    /// The client went away while the fail point blocked the turn.
    Closed,
}

impl HelloFailFacts {
    /// Evaluates `failCommand` for one turn: blocks first if it says so, then ends the stream
    /// with its error or by closing the connection.
    async fn apply(&self, node: &NodeContext, sender: &ReplyStreamSender) -> StreamTurn {
        let facts = CommandFacts {
            name: self.name,
            namespace: &self.namespace,
            app_name: self.app_name.as_deref(),
            supports_write_concern: false,
        };
        let Some(action) = node.fail_command_action(&facts) else {
            return StreamTurn::Continue;
        };
        if let Some(block) = action.block_for {
            tokio::select! {
                () = sender.closed() => return StreamTurn::Closed,
                () = tokio::time::sleep(block) => {}
            }
        }
        match action.outcome {
            FailOutcome::Proceed => StreamTurn::Continue,
            FailOutcome::CloseConnection => StreamTurn::End(Reaction::HangUp),
            FailOutcome::Error { code, labels } => {
                let mut reply =
                    errors::error_reply(code, "Failing command via 'failCommand' failpoint");
                // As for any command: topologyVersion, $clusterTime and the labels.
                if let Some(view) = node.view() {
                    errors::finish_reply(
                        &mut reply,
                        SessionFacts::default(),
                        labels.as_deref(),
                        view.version,
                    );
                    node.append_cluster_time(&view, &mut reply);
                }
                StreamTurn::End(Reaction::Reply(reply))
            }
        }
    }
}

fn shutdown_error(node: &NodeContext, version: TopologyVersion) -> Document {
    let mut reply = errors::error_reply(
        SHUTDOWN_IN_PROGRESS,
        "The server is in quiesce mode and will shut down",
    );
    reply.insert("topologyVersion", version_document(version));
    if let Some(view) = node.view() {
        node.append_cluster_time(&view, &mut reply);
    }
    reply
}
