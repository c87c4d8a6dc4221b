//! The topology against blackpipe on 127.0.0.1: simulated replica sets (elections, stepdowns,
//! kills, reconfigs) and scripted servers, with small heartbeat intervals. Every wait awaits an
//! event; the durations given to `wait_for` only keep a broken test from hanging.

mod discovery;
mod errors;
mod lifecycle;
mod monitoring;
mod pools;
mod selection;
mod srv_polling;

use std::sync::Arc;
use std::time::Duration;

use blackpipe::deployment::{Deployment, DeploymentConfig};
use steadfast_core::options::{ClientOptions, ParsedUri};
use steadfast_core::sdam::SdamEvent;
use steadfast_core::{ServerAddress, ServerType, TopologyDescription, TopologyType};

use super::Topology;
use crate::conn::config::ConnectionConfig;
use crate::event::{CmapEvent, Event, EventEmitter, EventListener, EventRecorder};

/// Generous: only a broken test ever waits this long.
const PATIENCE: Duration = Duration::from_secs(20);

/// A topology with a recorder attached.
struct Harness {
    topology: Topology,
    events: Arc<EventRecorder>,
}

impl Harness {
    /// Opens a topology for `uri` (a `mongodb://` string).
    fn open(uri: &str) -> Harness {
        let options = match ClientOptions::parse(uri).expect("valid connection string") {
            ParsedUri::Complete { options, .. } => options,
            ParsedUri::NeedsSrv(_) => panic!("tests use mongodb:// strings"),
        };
        Harness::open_with(&options)
    }

    fn open_with(options: &ClientOptions) -> Harness {
        let events = Arc::new(EventRecorder::new());
        let handler: Arc<dyn EventListener> = events.clone();
        let config = ConnectionConfig::from_options(options, None).expect("connection config");
        let topology = Topology::new(options, Arc::new(config), EventEmitter::new(vec![handler]))
            .expect("topology opens");
        Harness { topology, events }
    }

    /// Waits for an SDAM event at or after `from` matching `predicate`; returns its index.
    async fn sdam(&self, from: usize, what: &str, predicate: impl Fn(&SdamEvent) -> bool) -> usize {
        self.events
            .wait_for(
                from,
                PATIENCE,
                |e| matches!(e, Event::Sdam(s) if predicate(s)),
            )
            .await
            .unwrap_or_else(|| panic!("no SDAM event: {what}; events: {:#?}", self.summary()))
            .0
    }

    /// Waits until a published description (at or after event `from`) satisfies `predicate`.
    async fn topology_where(
        &self,
        from: usize,
        what: &str,
        predicate: impl Fn(&TopologyDescription) -> bool,
    ) -> usize {
        // The current snapshot may already satisfy it.
        if predicate(&self.topology.snapshot()) {
            return self.events.len();
        }
        self.sdam(
            from,
            what,
            |e| matches!(e, SdamEvent::TopologyDescriptionChanged { new, .. } if predicate(new)),
        )
        .await
    }

    /// Waits for a CMAP event at or after `from` matching `predicate`; returns its index.
    async fn cmap(&self, from: usize, what: &str, predicate: impl Fn(&CmapEvent) -> bool) -> usize {
        self.events
            .wait_for(
                from,
                PATIENCE,
                |e| matches!(e, Event::Cmap(c) if predicate(c)),
            )
            .await
            .unwrap_or_else(|| panic!("no CMAP event: {what}; events: {:#?}", self.summary()))
            .0
    }

    fn sdam_events(&self) -> Vec<SdamEvent> {
        self.events
            .events()
            .into_iter()
            .filter_map(|e| match e {
                Event::Sdam(s) => Some(s),
                _ => None,
            })
            .collect()
    }

    /// One line per event, for failure messages.
    fn summary(&self) -> Vec<String> {
        self.events
            .events()
            .iter()
            .map(|e| match e {
                Event::Sdam(s) => describe_sdam(s),
                Event::Cmap(c) => format!("cmap {c:?}"),
                other => format!("{other:?}"),
            })
            .collect()
    }
}

fn describe_sdam(event: &SdamEvent) -> String {
    match event {
        SdamEvent::TopologyDescriptionChanged { new, .. } => {
            format!("topology changed -> {}", super::select::describe(new))
        }
        SdamEvent::ServerDescriptionChanged { address, new, .. } => {
            format!("server {address} -> {}", new.server_type)
        }
        other => match other.address() {
            Some(address) => format!("{} {address}", other.spec_name()),
            None => other.spec_name().to_string(),
        },
    }
}

/// The address blackpipe reports for node `index`.
fn address_of(deployment: &Deployment, index: usize) -> ServerAddress {
    ServerAddress::parse(&deployment.host(index).expect("node exists")).expect("valid host")
}

/// A replica set of `members` electable members; node 0 starts as primary.
async fn replica_set(members: usize) -> Deployment {
    let deployment = Deployment::start(DeploymentConfig::replica_set(members))
        .await
        .expect("deployment starts");
    deployment.wait_for_primary().await;
    deployment
}

/// Whether every server of a replica set with a primary is known and there are `members`.
fn fully_discovered(topology: &TopologyDescription, members: usize) -> bool {
    topology.topology_type == TopologyType::ReplicaSetWithPrimary
        && topology.servers.len() == members
        && topology.servers.values().all(|s| {
            matches!(
                s.server_type,
                ServerType::RsPrimary | ServerType::RsSecondary
            )
        })
}

/// The primary's address in a description.
fn primary_of(topology: &TopologyDescription) -> Option<ServerAddress> {
    topology.primary().map(|p| p.address.clone())
}
