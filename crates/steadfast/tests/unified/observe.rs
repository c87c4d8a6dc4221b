//! The event listener of a client entity: converts steadfast's events into the runner's
//! neutral [`Observed`] form and keeps those the entity's `observeEvents` asks for.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bson::doc;
use steadfast::event::{CmapEvent, CommandEvent, EventListener, SdamEvent};
use steadfast_core::TopologyDescription;
use tokio::sync::Notify;

use crate::events::{CommandObserved, CommandStage, Observation, Observed};

/// Records the events a client entity observes, in arrival order.
#[derive(Debug, Default)]
pub(crate) struct EntityListener {
    observation: Observation,
    events: Mutex<Vec<Observed>>,
    /// Checked out minus checked in, for `assertNumberConnectionsCheckedOut` (counted whether
    /// or not CMAP events are observed).
    checked_out: Mutex<i64>,
    /// The client's latest topology description (kept whether or not SDAM events are
    /// observed), for `recordTopologyDescription` and `waitForPrimaryChange`.
    topology: Mutex<Option<Arc<TopologyDescription>>>,
    /// Connections that became ready, observed or not (for `awaitMinPoolSizeMS`).
    ready: Mutex<usize>,
    /// Signalled whenever an event is kept, the topology description changes, or a
    /// connection becomes ready.
    arrived: Notify,
}

impl EntityListener {
    /// A listener applying `observation`.
    pub(crate) fn new(observation: Observation) -> Self {
        EntityListener {
            observation,
            events: Mutex::default(),
            checked_out: Mutex::default(),
            topology: Mutex::default(),
            ready: Mutex::default(),
            arrived: Notify::new(),
        }
    }

    /// Waits until `enough` holds for the events kept so far, or `limit` passes (a bound that
    /// only keeps a broken test from hanging: the wait ends as soon as the events are there).
    /// Events such as `killCursors` for a dropped cursor are sent by a background task and may
    /// arrive after the operation returned.
    pub(crate) async fn wait_until(&self, enough: impl Fn(&[Observed]) -> bool, limit: Duration) {
        // On timeout the caller's check reports what is missing.
        self.wait_for(|listener| enough(&listener.events()), limit)
            .await;
    }

    /// Waits until `done` holds for this listener (checked again whenever an event is kept or
    /// the topology changes), or `limit` passes; returns whether it holds.
    pub(crate) async fn wait_for(&self, done: impl Fn(&Self) -> bool, limit: Duration) -> bool {
        let wait = async {
            loop {
                let notified = self.arrived.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if done(self) {
                    return;
                }
                notified.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }

    /// The client's latest topology description, once it has one.
    pub(crate) fn topology(&self) -> Option<Arc<TopologyDescription>> {
        self.topology
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Every event kept so far.
    pub(crate) fn events(&self) -> Vec<Observed> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Connections checked out and not yet checked in.
    pub(crate) fn checked_out(&self) -> i64 {
        *self
            .checked_out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits until `count` connections became ready, or `limit` passed.
    pub(crate) async fn wait_for_ready_connections(&self, count: usize, limit: Duration) {
        let wait = async {
            loop {
                let notified = self.arrived.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if *self.ready.lock().unwrap_or_else(PoisonError::into_inner) >= count {
                    return;
                }
                notified.await;
            }
        };
        // On timeout the test goes on: its operations then show what a cold pool costs.
        let _ = tokio::time::timeout(limit, wait).await;
    }

    fn keep(&self, event: Observed) {
        if self.observation.keeps(&event) {
            self.events
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(event);
            self.arrived.notify_waiters();
        }
    }
}

impl EventListener for EntityListener {
    fn on_command(&self, event: &CommandEvent) {
        let observed = match event {
            CommandEvent::Started(e) => CommandObserved {
                stage: CommandStage::Started,
                command_name: e.command_name.clone(),
                database_name: e.db.clone(),
                document: e.command.clone(),
                has_service_id: e.service_id.is_some(),
                has_server_connection_id: e.connection.server_id.is_some(),
            },
            CommandEvent::Succeeded(e) => CommandObserved {
                stage: CommandStage::Succeeded,
                command_name: e.command_name.clone(),
                database_name: e.db.clone(),
                document: e.reply.clone(),
                has_service_id: e.service_id.is_some(),
                has_server_connection_id: e.connection.server_id.is_some(),
            },
            CommandEvent::Failed(e) => CommandObserved {
                stage: CommandStage::Failed,
                command_name: e.command_name.clone(),
                database_name: e.db.clone(),
                document: bson::Document::new(),
                has_service_id: e.service_id.is_some(),
                has_server_connection_id: e.connection.server_id.is_some(),
            },
            _ => return,
        };
        self.keep(Observed::Command(observed));
    }

    fn on_cmap(&self, event: &CmapEvent) {
        let (name, fields) = match event {
            CmapEvent::PoolCreated { .. } => ("poolCreatedEvent", doc! {}),
            CmapEvent::PoolReady { .. } => ("poolReadyEvent", doc! {}),
            CmapEvent::PoolCleared {
                service_id,
                interrupt_in_use_connections,
                ..
            } => (
                "poolClearedEvent",
                doc! {
                    "hasServiceId": service_id.is_some(),
                    "interruptInUseConnections": *interrupt_in_use_connections,
                },
            ),
            CmapEvent::PoolClosed { .. } => ("poolClosedEvent", doc! {}),
            CmapEvent::ConnectionCreated { .. } => ("connectionCreatedEvent", doc! {}),
            CmapEvent::ConnectionReady { .. } => {
                *self.ready.lock().unwrap_or_else(PoisonError::into_inner) += 1;
                self.arrived.notify_waiters();
                ("connectionReadyEvent", doc! {})
            }
            CmapEvent::ConnectionClosed { reason, .. } => {
                ("connectionClosedEvent", doc! { "reason": reason.as_str() })
            }
            CmapEvent::ConnectionCheckOutStarted { .. } => {
                ("connectionCheckOutStartedEvent", doc! {})
            }
            CmapEvent::ConnectionCheckOutFailed { reason, .. } => (
                "connectionCheckOutFailedEvent",
                doc! { "reason": reason.as_str() },
            ),
            CmapEvent::ConnectionCheckedOut { .. } => {
                *self
                    .checked_out
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) += 1;
                ("connectionCheckedOutEvent", doc! {})
            }
            CmapEvent::ConnectionCheckedIn { .. } => {
                *self
                    .checked_out
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) -= 1;
                ("connectionCheckedInEvent", doc! {})
            }
            _ => return,
        };
        self.keep(Observed::Cmap { name, fields });
    }

    fn on_sdam(&self, event: &SdamEvent) {
        if let SdamEvent::TopologyDescriptionChanged { new, .. } = event {
            *self.topology.lock().unwrap_or_else(PoisonError::into_inner) = Some(new.clone());
            self.arrived.notify_waiters();
        }
        if let Some((name, fields)) = sdam_observed(event) {
            self.keep(Observed::Sdam { name, fields });
        }
    }
}

/// An SDAM event's unified-format name and assertable fields.
fn sdam_observed(event: &SdamEvent) -> Option<(&'static str, bson::Document)> {
    let description = |kind: &str| doc! { "type": kind };
    Some(match event {
        SdamEvent::TopologyOpening => ("topologyOpeningEvent", doc! {}),
        SdamEvent::TopologyClosed => ("topologyClosedEvent", doc! {}),
        SdamEvent::TopologyDescriptionChanged { previous, new } => (
            "topologyDescriptionChangedEvent",
            doc! {
                "previousDescription": description(previous.topology_type.spec_name()),
                "newDescription": description(new.topology_type.spec_name()),
            },
        ),
        SdamEvent::ServerOpening { .. } => ("serverOpeningEvent", doc! {}),
        SdamEvent::ServerClosed { .. } => ("serverClosedEvent", doc! {}),
        SdamEvent::ServerDescriptionChanged { previous, new, .. } => (
            "serverDescriptionChangedEvent",
            doc! {
                "previousDescription": description(previous.server_type.spec_name()),
                "newDescription": description(new.server_type.spec_name()),
            },
        ),
        SdamEvent::ServerHeartbeatStarted { awaited, .. } => {
            ("serverHeartbeatStartedEvent", doc! { "awaited": *awaited })
        }
        SdamEvent::ServerHeartbeatSucceeded { awaited, .. } => (
            "serverHeartbeatSucceededEvent",
            doc! { "awaited": *awaited },
        ),
        SdamEvent::ServerHeartbeatFailed { awaited, .. } => {
            ("serverHeartbeatFailedEvent", doc! { "awaited": *awaited })
        }
        _ => return None,
    })
}
