//! Connection pool (CMAP) events as delivered to an
//! [`EventHandler<CmapEvent>`](super::EventHandler) set as `cmap_event_handler`: one struct
//! per event, named as in the official driver.
//!
//! They are made from steadfast's own [`PoolEvent`](super::CmapEvent) values by
//! `CmapEvent::from_pool_event`, the only conversion between the two.

use std::time::Duration;

use bson::oid::ObjectId;
use steadfast_core::ServerAddress;
use steadfast_core::pool::{PoolEvent, PoolOptions};

pub use steadfast_core::pool::{
    CheckOutFailedReason as ConnectionCheckoutFailedReason, ConnectionClosedReason,
};

/// The pool settings reported by [`PoolCreatedEvent`].
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct ConnectionPoolOptions {
    /// How long an idle connection is kept; `None` means forever.
    pub max_idle_time: Option<Duration>,
    /// The most connections the pool holds; `None` means no limit.
    pub max_pool_size: Option<u32>,
    /// The connections the pool keeps open even when idle.
    pub min_pool_size: Option<u32>,
}

/// Defines a `#[non_exhaustive]` event struct with public fields.
macro_rules! event_struct {
    ($(#[$meta:meta])* $name:ident { $($(#[$field_meta:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        #[non_exhaustive]
        pub struct $name {
            $($(#[$field_meta])* pub $field: $ty,)*
        }
    };
}

event_struct!(
    /// A pool was created (paused until its server is known to be usable).
    PoolCreatedEvent {
        /// The pool's server.
        address: ServerAddress,
        /// The pool's settings.
        options: Option<ConnectionPoolOptions>,
    }
);
event_struct!(
    /// A pool became ready to create connections.
    PoolReadyEvent {
        /// The pool's server.
        address: ServerAddress,
    }
);
event_struct!(
    /// A pool was cleared: its connections are now stale.
    PoolClearedEvent {
        /// The pool's server.
        address: ServerAddress,
        /// The service cleared, in load-balanced mode.
        service_id: Option<ObjectId>,
        /// Whether connections in use were interrupted too.
        interrupt_in_use_connections: bool,
    }
);
event_struct!(
    /// A pool was closed.
    PoolClosedEvent {
        /// The pool's server.
        address: ServerAddress,
    }
);
event_struct!(
    /// A connection was created (not yet established).
    ConnectionCreatedEvent {
        /// The pool's server.
        address: ServerAddress,
        /// The connection's id within its pool.
        connection_id: u64,
    }
);
event_struct!(
    /// A connection completed its handshake and authentication.
    ConnectionReadyEvent {
        /// The pool's server.
        address: ServerAddress,
        /// The connection's id within its pool.
        connection_id: u64,
        /// Time from creation to ready.
        duration: Duration,
    }
);
event_struct!(
    /// A connection was closed.
    ConnectionClosedEvent {
        /// The pool's server.
        address: ServerAddress,
        /// The connection's id within its pool.
        connection_id: u64,
        /// Why.
        reason: ConnectionClosedReason,
    }
);
event_struct!(
    /// An operation started checking a connection out.
    ConnectionCheckoutStartedEvent {
        /// The pool's server.
        address: ServerAddress,
    }
);
event_struct!(
    /// A check-out failed.
    ConnectionCheckoutFailedEvent {
        /// The pool's server.
        address: ServerAddress,
        /// Why.
        reason: ConnectionCheckoutFailedReason,
        /// Time since the check-out started.
        duration: Duration,
    }
);
event_struct!(
    /// A connection was checked out.
    ConnectionCheckedOutEvent {
        /// The pool's server.
        address: ServerAddress,
        /// The connection's id within its pool.
        connection_id: u64,
        /// Time since the check-out started.
        duration: Duration,
    }
);
event_struct!(
    /// A connection was checked back in.
    ConnectionCheckedInEvent {
        /// The pool's server.
        address: ServerAddress,
        /// The connection's id within its pool.
        connection_id: u64,
    }
);

/// One connection pool event.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
#[allow(
    missing_docs,
    reason = "each variant is documented by the struct it holds"
)]
pub enum CmapEvent {
    PoolCreated(PoolCreatedEvent),
    PoolReady(PoolReadyEvent),
    PoolCleared(PoolClearedEvent),
    PoolClosed(PoolClosedEvent),
    ConnectionCreated(ConnectionCreatedEvent),
    ConnectionReady(ConnectionReadyEvent),
    ConnectionClosed(ConnectionClosedEvent),
    ConnectionCheckoutStarted(ConnectionCheckoutStartedEvent),
    ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent),
    ConnectionCheckedOut(ConnectionCheckedOutEvent),
    ConnectionCheckedIn(ConnectionCheckedInEvent),
}

impl From<&PoolOptions> for ConnectionPoolOptions {
    fn from(options: &PoolOptions) -> Self {
        ConnectionPoolOptions {
            max_idle_time: options.max_idle_time,
            max_pool_size: options.max_pool_size,
            min_pool_size: Some(options.min_pool_size),
        }
    }
}

impl CmapEvent {
    /// The event for steadfast's `event`; `None` for a kind this shape has no struct for.
    pub(crate) fn from_pool_event(event: &PoolEvent) -> Option<Self> {
        let event = match event.clone() {
            PoolEvent::PoolCreated { address, options } => {
                CmapEvent::PoolCreated(PoolCreatedEvent {
                    address,
                    options: Some(ConnectionPoolOptions::from(&options)),
                })
            }
            PoolEvent::PoolReady { address } => CmapEvent::PoolReady(PoolReadyEvent { address }),
            PoolEvent::PoolCleared {
                address,
                service_id,
                interrupt_in_use_connections,
            } => CmapEvent::PoolCleared(PoolClearedEvent {
                address,
                service_id,
                interrupt_in_use_connections,
            }),
            PoolEvent::PoolClosed { address } => CmapEvent::PoolClosed(PoolClosedEvent { address }),
            PoolEvent::ConnectionCreated {
                address,
                connection_id,
            } => CmapEvent::ConnectionCreated(ConnectionCreatedEvent {
                address,
                connection_id,
            }),
            PoolEvent::ConnectionReady {
                address,
                connection_id,
                duration,
            } => CmapEvent::ConnectionReady(ConnectionReadyEvent {
                address,
                connection_id,
                duration,
            }),
            PoolEvent::ConnectionClosed {
                address,
                connection_id,
                reason,
            } => CmapEvent::ConnectionClosed(ConnectionClosedEvent {
                address,
                connection_id,
                reason,
            }),
            PoolEvent::ConnectionCheckOutStarted { address } => {
                CmapEvent::ConnectionCheckoutStarted(ConnectionCheckoutStartedEvent { address })
            }
            PoolEvent::ConnectionCheckOutFailed {
                address,
                reason,
                duration,
            } => CmapEvent::ConnectionCheckoutFailed(ConnectionCheckoutFailedEvent {
                address,
                reason,
                duration,
            }),
            PoolEvent::ConnectionCheckedOut {
                address,
                connection_id,
                duration,
            } => CmapEvent::ConnectionCheckedOut(ConnectionCheckedOutEvent {
                address,
                connection_id,
                duration,
            }),
            PoolEvent::ConnectionCheckedIn {
                address,
                connection_id,
            } => CmapEvent::ConnectionCheckedIn(ConnectionCheckedInEvent {
                address,
                connection_id,
            }),
            // steadfast's pool events are non-exhaustive: a kind added later is not
            // delivered here until it has a struct.
            _ => return None,
        };
        Some(event)
    }
}
