//! Hello, awaitable hello (`topologyVersion` + `maxAwaitTimeMS`) and streaming hello
//! (`exhaustAllowed`): the reply waits for the node's topologyVersion to move or for
//! `maxAwaitTimeMS`, whichever comes first; with exhaust, replies keep coming with
//! `moreToCome`, each after the next change or timeout, until the client goes away.

use std::time::Duration;

use bson::Document;
use tokio::sync::watch;

use super::hello::{
    AwaitDecision, AwaitRequest, await_decision, future_counter_error, parse_await,
};
use super::member::{NodeContext, wants_hello_ok};
use super::model::{Health, TopologyVersion};
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
    let connection_id = i64::try_from(connection.id().get()).unwrap_or(i64::MAX);
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
) {
    loop {
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

fn shutdown_error(node: &NodeContext, version: TopologyVersion) -> Document {
    let mut reply = super::errors::error_reply(
        super::errors::SHUTDOWN_IN_PROGRESS,
        "The server is in quiesce mode and will shut down",
    );
    reply.insert("topologyVersion", super::hello::version_document(version));
    if let Some(view) = node.view() {
        node.append_cluster_time(&view, &mut reply);
    }
    reply
}
