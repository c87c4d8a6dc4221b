//! Topology (SDAM) events as delivered to an [`EventHandler<SdamEvent>`](super::EventHandler)
//! set as `sdam_event_handler`: one struct per event, named as in the official driver, each
//! stamped with the id of the client's topology.
//!
//! They are made from steadfast's own [`SdamEvent`](super::SdamEvent) values by
//! `SdamEvent::from_core`, the only conversion between the two.

use std::time::Duration;

use bson::Document;
use bson::oid::ObjectId;
use steadfast_core::ServerAddress;
use steadfast_core::sdam::SdamEvent as CoreSdamEvent;

pub use steadfast_core::{ServerDescription, TopologyDescription};

use crate::error::Error;

/// Defines a `#[non_exhaustive]` event struct with public fields.
macro_rules! event_struct {
    ($(#[$meta:meta])* $name:ident { $($(#[$field_meta:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug)]
        #[non_exhaustive]
        pub struct $name {
            $($(#[$field_meta])* pub $field: $ty,)*
        }
    };
}

event_struct!(
    /// A server's description changed.
    ServerDescriptionChangedEvent {
        /// The server.
        address: ServerAddress,
        /// The client's topology.
        topology_id: ObjectId,
        /// The description before.
        previous_description: ServerDescription,
        /// The description after.
        new_description: ServerDescription,
    }
);
event_struct!(
    /// A server joined the topology and is being monitored.
    ServerOpeningEvent {
        /// The server.
        address: ServerAddress,
        /// The client's topology.
        topology_id: ObjectId,
    }
);
event_struct!(
    /// A server left the topology.
    ServerClosedEvent {
        /// The server.
        address: ServerAddress,
        /// The client's topology.
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
    TopologyOpeningEvent {
        /// The client's topology.
        topology_id: ObjectId,
    }
);
event_struct!(
    /// The topology was closed; the last SDAM event of a client.
    TopologyClosedEvent {
        /// The client's topology.
        topology_id: ObjectId,
    }
);
event_struct!(
    /// A monitor sent hello.
    ServerHeartbeatStartedEvent {
        /// The server.
        server_address: ServerAddress,
        /// Whether it is an awaitable (streaming) hello.
        awaited: bool,
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
        server_address: ServerAddress,
        /// Whether it was an awaitable (streaming) hello.
        awaited: bool,
    }
);
event_struct!(
    /// A monitor's hello failed.
    ServerHeartbeatFailedEvent {
        /// Time from sending hello to the failure.
        duration: Duration,
        /// What went wrong.
        failure: Error,
        /// The server.
        server_address: ServerAddress,
        /// Whether it was an awaitable (streaming) hello.
        awaited: bool,
    }
);

/// One topology event.
#[derive(Clone, Debug)]
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
            CoreSdamEvent::ServerHeartbeatStarted { address, awaited } => {
                SdamEvent::ServerHeartbeatStarted(ServerHeartbeatStartedEvent {
                    server_address: address.clone(),
                    awaited: *awaited,
                })
            }
            CoreSdamEvent::ServerHeartbeatSucceeded {
                address,
                duration,
                reply,
                awaited,
            } => SdamEvent::ServerHeartbeatSucceeded(ServerHeartbeatSucceededEvent {
                duration: *duration,
                reply: reply.clone(),
                server_address: address.clone(),
                awaited: *awaited,
            }),
            CoreSdamEvent::ServerHeartbeatFailed {
                address,
                duration,
                failure,
                awaited,
            } => SdamEvent::ServerHeartbeatFailed(ServerHeartbeatFailedEvent {
                duration: *duration,
                failure: Error::network(failure.clone()).with_address(address),
                server_address: address.clone(),
                awaited: *awaited,
            }),
            // steadfast's SDAM events are non-exhaustive: a kind added later is not delivered
            // here until it has a struct.
            _ => return None,
        };
        Some(event)
    }
}
