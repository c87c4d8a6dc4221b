//! SDAM monitoring events as plain data (the SDAM Logging and Monitoring specification).
//!
//! The core produces these values; the driver stamps them with its topology id and delivers
//! them to subscribers and to tracing. Heartbeat events are built by the monitor, the others
//! come out of [`TopologyChange`](super::TopologyChange).

use std::sync::Arc;
use std::time::Duration;

use bson::Document;

use crate::address::ServerAddress;
use crate::description::{ServerDescription, TopologyDescription};

/// One SDAM event.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum SdamEvent {
    /// The topology was created; always the first event.
    TopologyOpening,
    /// The topology was closed; always the last event.
    TopologyClosed,
    /// The topology description changed (by the SDAM equality rules).
    TopologyDescriptionChanged {
        /// The description before the change.
        previous: Arc<TopologyDescription>,
        /// The description after the change.
        new: Arc<TopologyDescription>,
    },
    /// A server entered the topology: the driver starts monitoring it.
    ServerOpening {
        /// The server's address.
        address: ServerAddress,
    },
    /// A server left the topology: the driver stops monitoring it and closes its pool.
    ServerClosed {
        /// The server's address.
        address: ServerAddress,
    },
    /// A server's description changed (by "Server Description Equality"; RTT changes alone do
    /// not count).
    ServerDescriptionChanged {
        /// The server's address.
        address: ServerAddress,
        /// The description before the change.
        previous: Box<ServerDescription>,
        /// The description after the change.
        new: Box<ServerDescription>,
    },
    /// A monitor sent hello (or is about to open its connection to do so).
    ServerHeartbeatStarted {
        /// The server's address.
        address: ServerAddress,
        /// Whether this is an awaitable (streaming) hello.
        awaited: bool,
        /// The driver's id for the monitoring connection the heartbeat uses.
        driver_connection_id: u64,
        /// The server's id for that connection (`connectionId` of its hello), once a reply
        /// on it has named one.
        server_connection_id: Option<i64>,
    },
    /// A monitor's hello succeeded.
    ServerHeartbeatSucceeded {
        /// The server's address.
        address: ServerAddress,
        /// Time from sending hello to reading the reply.
        duration: Duration,
        /// The hello reply.
        reply: Document,
        /// Whether this was an awaitable (streaming) hello, whose duration is not an RTT.
        awaited: bool,
        /// The driver's id for the monitoring connection the heartbeat uses.
        driver_connection_id: u64,
        /// The server's id for that connection (`connectionId` of its hello), once a reply
        /// on it has named one.
        server_connection_id: Option<i64>,
    },
    /// A monitor's hello failed with `ok: 0` or an I/O error.
    ServerHeartbeatFailed {
        /// The server's address.
        address: ServerAddress,
        /// Time from sending hello to the failure.
        duration: Duration,
        /// What went wrong.
        failure: String,
        /// Whether this was an awaitable (streaming) hello.
        awaited: bool,
        /// The driver's id for the monitoring connection the heartbeat uses.
        driver_connection_id: u64,
        /// The server's id for that connection (`connectionId` of its hello), once a reply
        /// on it has named one.
        server_connection_id: Option<i64>,
    },
}

impl SdamEvent {
    /// The event's name in the specification's test files, e.g. `"server_opening_event"`.
    pub fn spec_name(&self) -> &'static str {
        match self {
            SdamEvent::TopologyOpening => "topology_opening_event",
            SdamEvent::TopologyClosed => "topology_closed_event",
            SdamEvent::TopologyDescriptionChanged { .. } => "topology_description_changed_event",
            SdamEvent::ServerOpening { .. } => "server_opening_event",
            SdamEvent::ServerClosed { .. } => "server_closed_event",
            SdamEvent::ServerDescriptionChanged { .. } => "server_description_changed_event",
            SdamEvent::ServerHeartbeatStarted { .. } => "server_heartbeat_started_event",
            SdamEvent::ServerHeartbeatSucceeded { .. } => "server_heartbeat_succeeded_event",
            SdamEvent::ServerHeartbeatFailed { .. } => "server_heartbeat_failed_event",
        }
    }

    /// The server the event is about, for server-level events.
    pub fn address(&self) -> Option<&ServerAddress> {
        match self {
            SdamEvent::ServerOpening { address }
            | SdamEvent::ServerClosed { address }
            | SdamEvent::ServerDescriptionChanged { address, .. }
            | SdamEvent::ServerHeartbeatStarted { address, .. }
            | SdamEvent::ServerHeartbeatSucceeded { address, .. }
            | SdamEvent::ServerHeartbeatFailed { address, .. } => Some(address),
            SdamEvent::TopologyOpening
            | SdamEvent::TopologyClosed
            | SdamEvent::TopologyDescriptionChanged { .. } => None,
        }
    }
}
