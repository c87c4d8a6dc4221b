//! Starting what a run needs: the embedded deployment, the workload's client, its collections.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use bson::{Bson, Document, doc};
use steadfast::Client;
use steadfast::event::EventListener;
use steadfast::retries::{FailFast, RetryPolicy};

use super::events::DriverWatch;
use super::worker::counter_value;

/// The database the workload uses.
pub(crate) const DATABASE: &str = "steadfast_demo";
/// How long an embedded replica set takes to elect a new primary on its own (after a kill
/// or a partition); a stepdown's election is timed by the schedule instead.
pub(crate) const ELECTION_DELAY: Duration = Duration::from_millis(300);

/// Client options for an embedded deployment, chosen so that a failure is noticed in about a
/// second: a check every 500 ms, a monitoring timeout of 1 s (a partitioned primary's
/// in-flight operations are interrupted when its monitor times out), and a server selection
/// timeout that outlasts every fault the schedules inject.
///
/// And a socket timeout, as a backstop only. A partitioned blackpipe member holds the requests
/// and replies in flight and delivers them once the partition heals (as TCP retransmission
/// would), and a partition that outlasts the monitoring timeout interrupts the operations
/// waiting on that member, so no injected fault leaves an operation waiting forever. Without
/// a socket timeout (the specifications set none by default), though, any reply that never
/// came for an unforeseen reason would hang the run instead of surfacing as a network error
/// in its report. 4 s is above the longest partition the schedules inject and far above any
/// reply delay, so in a run that behaves as designed it never fires.
const EMBEDDED_OPTIONS: &str = "heartbeatFrequencyMS=500&connectTimeoutMS=1000\
     &serverSelectionTimeoutMS=10000&socketTimeoutMS=4000";

/// A 3-member replica set on ephemeral 127.0.0.1 ports.
///
/// # Errors
///
/// If blackpipe cannot bind its ports.
pub(crate) async fn embedded_replica_set(seed: u64) -> Result<Deployment, String> {
    let config = DeploymentConfig::replica_set(3)
        .with_port(0)
        .with_election_delay(ELECTION_DELAY)
        .with_seed(seed);
    Deployment::start(config)
        .await
        .map_err(|e| format!("cannot start the embedded replica set: {e}"))
}

/// The workload's connection string for an embedded deployment.
pub(crate) fn embedded_uri(deployment: &Deployment, app_name: &str, retries: bool) -> String {
    let base = deployment.uri();
    let separator = if base.contains('?') { '&' } else { '?' };
    let mut uri = format!("{base}{separator}appName={app_name}&{EMBEDDED_OPTIONS}");
    if !retries {
        uri.push_str("&retryWrites=false&retryReads=false");
    }
    uri
}

/// Adds `appName` to a user's connection string unless it names one already.
pub(crate) fn with_app_name(uri: &str, app_name: &str) -> String {
    if uri.to_ascii_lowercase().contains("appname=") {
        return uri.to_owned();
    }
    let separator = match uri.split_once('?') {
        Some((_, "")) => "",
        Some(_) => "&",
        None => {
            let after_scheme = uri.split_once("://").map_or(uri, |(_, rest)| rest);
            if after_scheme.contains('/') {
                "?"
            } else {
                "/?"
            }
        }
    };
    format!("{uri}{separator}appName={app_name}")
}

/// Connects the workload's client: `driver` sees every event; without retries the policy is
/// `FailFast` (the connection string should then also turn retryWrites/retryReads off).
///
/// # Errors
///
/// For an invalid connection string or options.
pub(crate) async fn connect(
    uri: &str,
    driver: Arc<DriverWatch>,
    retries: bool,
) -> Result<Client, String> {
    let policy: Option<Arc<dyn RetryPolicy>> = if retries {
        None
    } else {
        Some(Arc::new(FailFast))
    };
    connect_with_policy(uri, driver, policy).await
}

/// Connects the workload's client with `policy` (`None`: the default), `driver` seeing every
/// event.
///
/// # Errors
///
/// For an invalid connection string or options.
pub(crate) async fn connect_with_policy(
    uri: &str,
    driver: Arc<DriverWatch>,
    policy: Option<Arc<dyn RetryPolicy>>,
) -> Result<Client, String> {
    let mut builder = steadfast::ClientBuilder::from_uri_str(uri)
        .await
        .map_err(|e| format!("{uri}: {e}"))?;
    let handler: Arc<dyn EventListener> = driver;
    builder = builder.event_listener(handler);
    if let Some(policy) = policy {
        builder = builder.retry_policy(policy);
    }
    builder.build().map_err(|e| format!("{uri}: {e}"))
}

/// The final value of every counter, read from blackpipe's store (not through the driver, so
/// that a driver bug cannot hide in the check).
pub(crate) fn counters_in_store(
    deployment: &Deployment,
    collection: &str,
) -> Result<BTreeMap<String, i64>, String> {
    let mut finals = BTreeMap::new();
    for document in deployment.store().documents(DATABASE, collection) {
        let (key, value) = counter_entry(&document)?;
        finals.insert(key, value);
    }
    Ok(finals)
}

/// How many stored documents carry each `_id` of the inserts collection.
pub(crate) fn ids_in_store(deployment: &Deployment, collection: &str) -> BTreeMap<String, usize> {
    let mut ids = BTreeMap::new();
    for document in deployment.store().documents(DATABASE, collection) {
        let id = match document.get("_id") {
            Some(Bson::String(id)) => id.clone(),
            Some(other) => other.to_string(),
            None => "<no _id>".to_owned(),
        };
        *ids.entry(id).or_default() += 1;
    }
    ids
}

/// The final value of every counter, read through the driver (a real deployment), after the
/// faults are off.
pub(crate) async fn counters_via_driver(
    counters: &steadfast::Collection<Document>,
    keys: &[String],
) -> Result<BTreeMap<String, i64>, String> {
    let mut finals = BTreeMap::new();
    for key in keys {
        let found = counters
            .find_one(doc! { "_id": key })
            .await
            .map_err(|e| format!("reading counter {key}: {e}"))?;
        if let Some(document) = found {
            let (key, value) = counter_entry(&document)?;
            finals.insert(key, value);
        }
    }
    Ok(finals)
}

fn counter_entry(document: &Document) -> Result<(String, i64), String> {
    let key = document
        .get_str("_id")
        .map_err(|_| format!("a counter without a string _id: {document}"))?
        .to_owned();
    let value = counter_value(document)
        .ok_or_else(|| format!("counter {key} does not hold an integer: {document}"))?;
    Ok((key, value))
}

#[cfg(test)]
mod tests {
    use super::with_app_name;

    #[test]
    fn app_name_is_added_once() {
        assert_eq!(
            with_app_name("mongodb://h:1", "x"),
            "mongodb://h:1/?appName=x"
        );
        assert_eq!(
            with_app_name("mongodb://h:1/", "x"),
            "mongodb://h:1/?appName=x"
        );
        assert_eq!(
            with_app_name("mongodb://h:1/?w=1", "x"),
            "mongodb://h:1/?w=1&appName=x"
        );
        assert_eq!(
            with_app_name("mongodb://h:1/db", "x"),
            "mongodb://h:1/db?appName=x"
        );
        assert_eq!(
            with_app_name("mongodb://h:1/?appname=mine", "x"),
            "mongodb://h:1/?appname=mine"
        );
    }
}
