//! The event listener of a client entity: converts steadfast's events into the runner's
//! neutral [`Observed`] form and keeps those the entity's `observeEvents` asks for.

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bson::doc;
use steadfast::event::{CmapEvent, CommandEvent, EventHandler};
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
    /// Connections that became ready, observed or not (for `awaitMinPoolSizeMS`).
    ready: Mutex<usize>,
    /// Signalled whenever an event is kept, and when a connection becomes ready.
    arrived: Notify,
}

impl EntityListener {
    /// A listener applying `observation`.
    pub(crate) fn new(observation: Observation) -> Self {
        EntityListener {
            observation,
            events: Mutex::default(),
            checked_out: Mutex::default(),
            ready: Mutex::default(),
            arrived: Notify::new(),
        }
    }

    /// Waits until `enough` holds for the events kept so far, or `limit` passes (a bound that
    /// only keeps a broken test from hanging: the wait ends as soon as the events are there).
    /// Events such as `killCursors` for a dropped cursor are sent by a background task and may
    /// arrive after the operation returned.
    pub(crate) async fn wait_until(&self, enough: impl Fn(&[Observed]) -> bool, limit: Duration) {
        let wait = async {
            loop {
                let notified = self.arrived.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if enough(&self.events()) {
                    return;
                }
                notified.await;
            }
        };
        // On timeout the caller's check reports what is missing.
        let _ = tokio::time::timeout(limit, wait).await;
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

impl EventHandler for EntityListener {
    fn on_command(&self, event: &CommandEvent) {
        let observed = match event {
            CommandEvent::Started(e) => CommandObserved {
                stage: CommandStage::Started,
                command_name: e.command_name.clone(),
                database_name: e.database_name.clone(),
                document: e.command.clone(),
                has_service_id: e.service_id.is_some(),
                has_server_connection_id: e.connection.server_id.is_some(),
            },
            CommandEvent::Succeeded(e) => CommandObserved {
                stage: CommandStage::Succeeded,
                command_name: e.command_name.clone(),
                database_name: e.database_name.clone(),
                document: e.reply.clone(),
                has_service_id: e.service_id.is_some(),
                has_server_connection_id: e.connection.server_id.is_some(),
            },
            CommandEvent::Failed(e) => CommandObserved {
                stage: CommandStage::Failed,
                command_name: e.command_name.clone(),
                database_name: e.database_name.clone(),
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
}
