//! A stand-in for mongod's no-op writes while the workload runs.
//!
//! A mongod primary asked to read after a cluster time it has not reached writes a no-op to
//! its op log to get there (and writes one every 10 s when idle anyway). blackpipe's primary
//! does not: after a rollback, a causally consistent session that saw a write of the
//! discarded branch carries a cluster time the new primary has not reached, and its next
//! read (`afterClusterTime`) waits until some other write advances the op log. With every
//! transfer worker in that state nothing writes and the run hangs. This writer advances the
//! primary's op log every [`PERIOD`] through an ordinary client, so such reads wait at most
//! that long, as they would on mongod.

use std::time::Duration;

use bson::{Document, doc};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// How often the writer writes: well under the operations' hang limit.
const PERIOD: Duration = Duration::from_millis(500);
/// Its database, outside the workload's (whose collections the checks compare).
const DATABASE: &str = "steadfast_noop";
/// Its connection string options: not retryable, so that `onPrimaryTransactionalWrite` faults
/// (which no appName filter limits) never hit it; w: 1, so that an isolated primary takes it.
const OPTIONS: &str = "appName=steadfast-noop&retryWrites=false&w=1&serverSelectionTimeoutMS=1000&heartbeatFrequencyMS=500";

/// The running writer.
pub(crate) struct NoopWriter {
    task: JoinHandle<()>,
    stop: watch::Sender<bool>,
}

impl NoopWriter {
    /// Starts writing to the deployment at `base_uri` (its replica set connection string).
    ///
    /// # Errors
    ///
    /// If the client cannot be built.
    pub(crate) async fn start(base_uri: &str) -> Result<Self, String> {
        let separator = if base_uri.contains('?') { '&' } else { '?' };
        let uri = format!("{base_uri}{separator}{OPTIONS}");
        let client = steadfast::Client::with_uri_str(&uri)
            .await
            .map_err(|e| format!("the no-op writer's client: {e}"))?;
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(write_until(client, stopped));
        Ok(NoopWriter { task, stop })
    }

    /// Stops writing and closes the writer's connections.
    pub(crate) async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

async fn write_until(client: steadfast::Client, mut stop: watch::Receiver<bool>) {
    let ticks = client.database(DATABASE).collection::<Document>("ticks");
    loop {
        if let Ok(Ok(())) | Ok(Err(_)) = tokio::time::timeout(PERIOD, stop.changed()).await {
            break;
        }
        // Failures (no primary during an election...) only delay the next no-op.
        let _ = tokio::time::timeout(
            PERIOD,
            ticks
                .update_one(doc! { "_id": 0 }, doc! { "$inc": { "n": 1 } })
                .upsert(true),
        )
        .await;
    }
    client.shutdown().await;
}
