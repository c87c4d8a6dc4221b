//! Shared setup of the executor, retry and session tests: deployments, clients that record
//! every event, fail points, and readers of the recorded events.

use std::future::IntoFuture;
use std::sync::Arc;
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Document, doc};
use steadfast::event::{
    CommandEvent, CommandFailedEvent, CommandStartedEvent, CommandSucceededEvent, Event,
    EventRecorder, RetryEvent,
};
use steadfast::{Client, ClientBuilder};

/// The appName of every client under test; fail points filter on it, so the helper clients
/// that configure them are never affected.
pub(crate) const APP: &str = "under-test";

/// Generous bound that only keeps a broken test from hanging; never a timing assertion.
pub(crate) const HANG_GUARD: Duration = Duration::from_secs(60);

/// Awaits `future`, failing the test if it hangs.
pub(crate) async fn within<F: IntoFuture>(future: F) -> F::Output {
    tokio::time::timeout(HANG_GUARD, future.into_future())
        .await
        .expect("the test hung")
}

/// A replica set of three electable members (the first one primary).
pub(crate) async fn replica_set() -> Deployment {
    Deployment::start(DeploymentConfig::replica_set(3).with_seed(7))
        .await
        .expect("the replica set starts")
}

/// A client under test with its recorder.
pub(crate) struct Harness {
    pub(crate) client: Client,
    pub(crate) events: Arc<EventRecorder>,
}

/// A client for `uri` with `query` appended (`&`-separated options), [`APP`] as its appName,
/// quick heartbeats and a recorder; `configure` adjusts the builder.
pub(crate) async fn harness_with(
    uri: &str,
    query: &str,
    configure: impl FnOnce(ClientBuilder) -> ClientBuilder,
) -> Harness {
    let separator = if uri.contains('?') { '&' } else { '?' };
    let uri = format!("{uri}{separator}appName={APP}&heartbeatFrequencyMS=500{query}");
    let events = Arc::new(EventRecorder::new());
    let builder = ClientBuilder::from_uri_str(&uri)
        .await
        .expect("valid connection string")
        .event_listener(events.clone());
    Harness {
        client: configure(builder).build().expect("the client builds"),
        events,
    }
}

/// [`harness_with`] without builder adjustments.
pub(crate) async fn harness(uri: &str, query: &str) -> Harness {
    harness_with(uri, query, |builder| builder).await
}

/// Runs an admin command on `host` alone, through a client of its own.
pub(crate) async fn admin_command(host: &str, command: Document) -> Document {
    let admin = Client::with_uri_str(&format!("mongodb://{host}/?directConnection=true"))
        .await
        .expect("valid connection string");
    let reply = within(admin.database("admin").run_command(command))
        .await
        .expect("the admin command succeeds");
    admin.shutdown().await;
    reply
}

/// Configures mongod's `failCommand` on `host` for the client under test: `mode` (e.g.
/// `{times: 1}`), and `data` to which `appName` is added.
pub(crate) async fn fail_command(host: &str, mode: bson::Bson, mut data: Document) {
    data.insert("appName", APP);
    admin_command(
        host,
        doc! { "configureFailPoint": "failCommand", "mode": mode, "data": data },
    )
    .await;
}

/// The host of the deployment's current primary.
pub(crate) async fn primary_host(deployment: &Deployment) -> String {
    let index = within(deployment.wait_for_primary()).await;
    deployment.host(index).expect("the primary has a host")
}

/// Every command-started event of `name`, in order.
pub(crate) fn started(events: &EventRecorder, name: &str) -> Vec<CommandStartedEvent> {
    events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Command(CommandEvent::Started(e)) if e.command_name == name => Some(e),
            _ => None,
        })
        .collect()
}

/// Every command-failed event of `name`, in order.
pub(crate) fn failed(events: &EventRecorder, name: &str) -> Vec<CommandFailedEvent> {
    events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Command(CommandEvent::Failed(e)) if e.command_name == name => Some(e),
            _ => None,
        })
        .collect()
}

/// Every command-succeeded event of `name`, in order.
pub(crate) fn succeeded(events: &EventRecorder, name: &str) -> Vec<CommandSucceededEvent> {
    events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Command(CommandEvent::Succeeded(e)) if e.command_name == name => Some(e),
            _ => None,
        })
        .collect()
}

/// Every retry event, in order.
pub(crate) fn retries(events: &EventRecorder) -> Vec<RetryEvent> {
    events
        .events()
        .into_iter()
        .filter_map(|event| match event {
            Event::Retry(e) => Some(e),
            _ => None,
        })
        .collect()
}

/// The `txnNumber` a started event carried.
pub(crate) fn txn_number(event: &CommandStartedEvent) -> Option<i64> {
    event.command.get_i64("txnNumber").ok()
}

/// The `lsid` a started event carried.
pub(crate) fn lsid(event: &CommandStartedEvent) -> Option<Document> {
    event.command.get_document("lsid").ok().cloned()
}
