//! Topology (SDAM) events as delivered to an [`EventHandler<SdamEvent>`](super::EventHandler)
//! set as `sdam_event_handler`: one struct per event, named as in the official driver, each
//! stamped with the id of the client's topology.
//!
//! They are made from steadfast's own [`SdamEvent`](super::SdamEvent) values by
//! `SdamEvent::from_core`, the only conversion between the two.
//!
//! The events serialize in the official driver's shape: camel-case field names
//! (`serverAddress`, `driverConnectionId`, ...), addresses as `{"Tcp": {"host", "port"}}`
//! (read back from that object or from a `"host:port"` string), durations in serde's
//! `{"secs", "nanos"}` shape, a failure as its message, and [`SdamEvent`] as the event it holds
//! (untagged). The opening and closing events leave the topology id out (a deserialized one
//! gets a fresh id).

use std::time::Duration;

use bson::Document;
use bson::oid::ObjectId;
use serde::{Deserialize, Serialize};
use steadfast_core::ServerAddress;
use steadfast_core::sdam::SdamEvent as CoreSdamEvent;

pub use steadfast_core::{ServerDescription, TopologyDescription, TopologyType};

use super::shapes;
use crate::error::Error;

/// Defines a `#[non_exhaustive]` event struct with public fields.
macro_rules! event_struct {
    ($(#[$meta:meta])* $name:ident { $($(#[$field_meta:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        #[derive(Clone, Debug, Serialize)]
        #[serde(rename_all = "camelCase")]
        #[non_exhaustive]
        $(#[$meta])*
        pub struct $name {
            $($(#[$field_meta])* pub $field: $ty,)*
        }
    };
}

event_struct!(
    /// A server's description changed.
    ServerDescriptionChangedEvent {
        /// The server.
        #[serde(serialize_with = "shapes::serialize_address")]
        address: ServerAddress,
        /// The client's topology.
        topology_id: ObjectId,
        /// The description before.
        #[serde(serialize_with = "shapes::serialize_server_description")]
        previous_description: ServerDescription,
        /// The description after.
        #[serde(serialize_with = "shapes::serialize_server_description")]
        new_description: ServerDescription,
    }
);
event_struct!(
    /// A server joined the topology and is being monitored.
    #[derive(PartialEq, Deserialize)]
    ServerOpeningEvent {
        /// The server.
        #[serde(serialize_with = "shapes::serialize_address", deserialize_with = "shapes::deserialize_address")]
        address: ServerAddress,
        /// The client's topology (neither serialized nor read back: a deserialized event gets a
        /// fresh id).
        #[serde(skip, default = "ObjectId::new")]
        topology_id: ObjectId,
    }
);
event_struct!(
    /// A server left the topology.
    #[derive(PartialEq, Deserialize)]
    ServerClosedEvent {
        /// The server.
        #[serde(serialize_with = "shapes::serialize_address", deserialize_with = "shapes::deserialize_address")]
        address: ServerAddress,
        /// The client's topology (neither serialized nor read back: a deserialized event gets a
        /// fresh id).
        #[serde(skip, default = "ObjectId::new")]
        topology_id: ObjectId,
    }
);
event_struct!(
    /// The topology's description changed.
    TopologyDescriptionChangedEvent {
        /// The client's topology.
        topology_id: ObjectId,
        /// The description before.
        previous_description: TopologyDescription,
        /// The description after.
        new_description: TopologyDescription,
    }
);
event_struct!(
    /// The topology was created; the first SDAM event of a client.
    #[derive(Deserialize)]
    TopologyOpeningEvent {
        /// The client's topology (neither serialized nor read back: a deserialized event gets a
        /// fresh id).
        #[serde(skip, default = "ObjectId::new")]
        topology_id: ObjectId,
    }
);
event_struct!(
    /// The topology was closed; the last SDAM event of a client.
    #[derive(Deserialize)]
    TopologyClosedEvent {
        /// The client's topology (neither serialized nor read back: a deserialized event gets a
        /// fresh id).
        #[serde(skip, default = "ObjectId::new")]
        topology_id: ObjectId,
    }
);
event_struct!(
    /// A monitor sent hello.
    #[derive(Deserialize)]
    ServerHeartbeatStartedEvent {
        /// The server.
        #[serde(serialize_with = "shapes::serialize_address", deserialize_with = "shapes::deserialize_address")]
        server_address: ServerAddress,
        /// Whether it is an awaitable (streaming) hello.
        awaited: bool,
        /// The driver's id for the monitoring connection used.
        driver_connection_id: u64,
        /// The server's id for that connection (`connectionId` of its hello); `None` until a
        /// reply on a new monitoring connection has named it.
        server_connection_id: Option<i64>,
    }
);
event_struct!(
    /// A monitor's hello succeeded.
    ServerHeartbeatSucceededEvent {
        /// Time from sending hello to its reply.
        duration: Duration,
        /// The hello reply.
        reply: Document,
        /// The server.
        #[serde(serialize_with = "shapes::serialize_address")]
        server_address: ServerAddress,
        /// Whether it was an awaitable (streaming) hello.
        awaited: bool,
        /// The driver's id for the monitoring connection used.
        driver_connection_id: u64,
        /// The server's id for that connection (`connectionId` of its hello); `None` until a
        /// reply on a new monitoring connection has named it.
        server_connection_id: Option<i64>,
    }
);
event_struct!(
    /// A monitor's hello failed.
    ServerHeartbeatFailedEvent {
        /// Time from sending hello to the failure.
        duration: Duration,
        /// What went wrong.
        #[serde(serialize_with = "shapes::serialize_error")]
        failure: Error,
        /// The server.
        #[serde(serialize_with = "shapes::serialize_address")]
        server_address: ServerAddress,
        /// Whether it was an awaitable (streaming) hello.
        awaited: bool,
        /// The driver's id for the monitoring connection used.
        driver_connection_id: u64,
        /// The server's id for that connection (`connectionId` of its hello); `None` until a
        /// reply on a new monitoring connection has named it.
        server_connection_id: Option<i64>,
    }
);

/// One topology event.
#[derive(Clone, Debug, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
#[allow(
    missing_docs,
    reason = "each variant is documented by the struct it holds"
)]
pub enum SdamEvent {
    ServerDescriptionChanged(Box<ServerDescriptionChangedEvent>),
    ServerOpening(ServerOpeningEvent),
    ServerClosed(ServerClosedEvent),
    TopologyDescriptionChanged(Box<TopologyDescriptionChangedEvent>),
    TopologyOpening(TopologyOpeningEvent),
    TopologyClosed(TopologyClosedEvent),
    ServerHeartbeatStarted(ServerHeartbeatStartedEvent),
    ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent),
    ServerHeartbeatFailed(ServerHeartbeatFailedEvent),
}

impl SdamEvent {
    /// The event for steadfast's `event` in the topology `topology_id`; `None` for a kind this
    /// shape has no struct for.
    pub(crate) fn from_core(event: &CoreSdamEvent, topology_id: ObjectId) -> Option<Self> {
        let event = match event {
            CoreSdamEvent::TopologyOpening => {
                SdamEvent::TopologyOpening(TopologyOpeningEvent { topology_id })
            }
            CoreSdamEvent::TopologyClosed => {
                SdamEvent::TopologyClosed(TopologyClosedEvent { topology_id })
            }
            CoreSdamEvent::TopologyDescriptionChanged { previous, new } => {
                SdamEvent::TopologyDescriptionChanged(Box::new(TopologyDescriptionChangedEvent {
                    topology_id,
                    previous_description: TopologyDescription::clone(previous),
                    new_description: TopologyDescription::clone(new),
                }))
            }
            CoreSdamEvent::ServerOpening { address } => {
                SdamEvent::ServerOpening(ServerOpeningEvent {
                    address: address.clone(),
                    topology_id,
                })
            }
            CoreSdamEvent::ServerClosed { address } => SdamEvent::ServerClosed(ServerClosedEvent {
                address: address.clone(),
                topology_id,
            }),
            CoreSdamEvent::ServerDescriptionChanged {
                address,
                previous,
                new,
            } => SdamEvent::ServerDescriptionChanged(Box::new(ServerDescriptionChangedEvent {
                address: address.clone(),
                topology_id,
                previous_description: ServerDescription::clone(previous),
                new_description: ServerDescription::clone(new),
            })),
            CoreSdamEvent::ServerHeartbeatStarted {
                address,
                awaited,
                driver_connection_id,
                server_connection_id,
            } => SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent {
                server_address: address.clone(),
                awaited: *awaited,
                driver_connection_id: *driver_connection_id,
                server_connection_id: *server_connection_id,
            }),
            CoreSdamEvent::ServerHeartbeatSucceeded {
                address,
                duration,
                reply,
                awaited,
                driver_connection_id,
                server_connection_id,
            } => SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
                duration: *duration,
                reply: reply.clone(),
                server_address: address.clone(),
                awaited: *awaited,
                driver_connection_id: *driver_connection_id,
                server_connection_id: *server_connection_id,
            }),
            CoreSdamEvent::ServerHeartbeatFailed {
                address,
                duration,
                failure,
                awaited,
                driver_connection_id,
                server_connection_id,
            } => SdamEvent::ServerHeartbeatFailed(ServerHeartbeatFailedEvent {
                duration: *duration,
                failure: Error::network(failure.clone()).with_address(address),
                server_address: address.clone(),
                awaited: *awaited,
                driver_connection_id: *driver_connection_id,
                server_connection_id: *server_connection_id,
            }),
            // steadfast's SDAM events are non-exhaustive: a kind added later is not delivered
            // here until it has a struct.
            _ => return None,
        };
        Some(event)
    }
}

/// The pre-[`EventHandler`](super::EventHandler) way to receive topology events, kept so that
/// code written for it still works: implement the methods for the events wanted (each defaults
/// to ignoring its event) and pass an `Arc` of the handler as `sdam_event_handler`, which
/// turns it into an [`EventHandler<SdamEvent>`](super::EventHandler) calling the method
/// matching each event on the driver's task (so keep them quick).
///
/// ```
/// # #![allow(deprecated)]
/// use std::sync::Arc;
/// use steadfast::event::sdam::{SdamEventHandler, ServerHeartbeatFailedEvent};
/// use steadfast::options::ClientOptions;
///
/// struct FailedHeartbeats;
///
/// impl SdamEventHandler for FailedHeartbeats {
///     fn handle_server_heartbeat_failed_event(&self, event: ServerHeartbeatFailedEvent) {
///         eprintln!("{} did not answer: {}", event.server_address, event.failure);
///     }
/// }
///
/// let options = ClientOptions::builder()
///     .sdam_event_handler(Arc::new(FailedHeartbeats))
///     .build();
/// # let _ = options;
/// ```
#[deprecated = "use the EventHandler API"]
pub trait SdamEventHandler: Send + Sync {
    /// Receives each [`ServerDescriptionChangedEvent`].
    fn handle_server_description_changed_event(&self, _event: ServerDescriptionChangedEvent) {}
    /// Receives each [`ServerOpeningEvent`].
    fn handle_server_opening_event(&self, _event: ServerOpeningEvent) {}
    /// Receives each [`ServerClosedEvent`].
    fn handle_server_closed_event(&self, _event: ServerClosedEvent) {}
    /// Receives each [`TopologyDescriptionChangedEvent`].
    fn handle_topology_description_changed_event(&self, _event: TopologyDescriptionChangedEvent) {}
    /// Receives the [`TopologyOpeningEvent`].
    fn handle_topology_opening_event(&self, _event: TopologyOpeningEvent) {}
    /// Receives the [`TopologyClosedEvent`], sent when the client shuts down.
    fn handle_topology_closed_event(&self, _event: TopologyClosedEvent) {}
    /// Receives each [`ServerHeartbeatStartedEvent`].
    fn handle_server_heartbeat_started_event(&self, _event: ServerHeartbeatStartedEvent) {}
    /// Receives each [`ServerHeartbeatSucceededEvent`].
    fn handle_server_heartbeat_succeeded_event(&self, _event: ServerHeartbeatSucceededEvent) {}
    /// Receives each [`ServerHeartbeatFailedEvent`].
    fn handle_server_heartbeat_failed_event(&self, _event: ServerHeartbeatFailedEvent) {}
}

#[allow(deprecated, reason = "the legacy trait is still delivered to")]
impl SdamEvent {
    /// Calls the method of `handler` that matches this event.
    pub(crate) fn deliver_to<H: SdamEventHandler + ?Sized>(self, handler: &H) {
        match self {
            SdamEvent::ServerDescriptionChanged(e) => {
                handler.handle_server_description_changed_event(*e);
            }
            SdamEvent::ServerOpening(e) => handler.handle_server_opening_event(e),
            SdamEvent::ServerClosed(e) => handler.handle_server_closed_event(e),
            SdamEvent::TopologyDescriptionChanged(e) => {
                handler.handle_topology_description_changed_event(*e);
            }
            SdamEvent::TopologyOpening(e) => handler.handle_topology_opening_event(e),
            SdamEvent::TopologyClosed(e) => handler.handle_topology_closed_event(e),
            SdamEvent::ServerHeartbeatStarted(e) => {
                handler.handle_server_heartbeat_started_event(e)
            }
            SdamEvent::ServerHeartbeatSucceeded(e) => {
                handler.handle_server_heartbeat_succeeded_event(e);
            }
            SdamEvent::ServerHeartbeatFailed(e) => handler.handle_server_heartbeat_failed_event(e),
        }
    }
}
