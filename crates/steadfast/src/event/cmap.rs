//! Connection pool (CMAP) events as delivered to an
//! [`EventHandler<CmapEvent>`](super::EventHandler) set as `cmap_event_handler`: one struct
//! per event, named as in the official driver.
//!
//! They are made from steadfast's own [`PoolEvent`](super::CmapEvent) values by
//! `CmapEvent::from_pool_event`, the only conversion between the two.
//!
//! Every event serializes (and deserializes, as the specification's test files write them) in
//! the official driver's shape: the address as `{"Tcp": {"host", "port"}}` (left out when
//! reading, which fills in an empty host), durations in serde's `{"secs", "nanos"}` shape
//! (not read back), connection events' fields in camel case (`connectionId`).

use std::time::Duration;

use bson::oid::ObjectId;
use serde::{Deserialize, Serialize};
use steadfast_core::ServerAddress;
use steadfast_core::pool::{PoolEvent, PoolOptions};

use super::shapes;

pub use steadfast_core::pool::{
    CheckOutFailedReason as ConnectionCheckoutFailedReason, ConnectionClosedReason,
};

/// The pool settings reported by [`PoolCreatedEvent`]. Serialized with camel-case names
/// (`maxIdleTimeMS`, `maxPoolSize`, `minPoolSize`); `maxIdleTimeMS` is written in serde's
/// `Duration` shape and read either so or as whole milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ConnectionPoolOptions {
    /// How long an idle connection is kept; `None` means forever.
    #[serde(rename = "maxIdleTimeMS", default)]
    #[serde(deserialize_with = "shapes::deserialize_optional_millis")]
    pub max_idle_time: Option<Duration>,
    /// The most connections the pool holds; `None` means no limit.
    pub max_pool_size: Option<u32>,
    /// The connections the pool keeps open even when idle.
    pub min_pool_size: Option<u32>,
}

/// Defines a `#[non_exhaustive]` event struct with public fields.
macro_rules! event_struct {
    ($(#[$meta:meta])* $name:ident { $($(#[$field_meta:meta])* $field:ident : $ty:ty),* $(,)? }) => {
        #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
        #[non_exhaustive]
        $(#[$meta])*
        pub struct $name {
            $($(#[$field_meta])* pub $field: $ty,)*
        }
    };
}

event_struct!(
    /// A pool was created (paused until its server is known to be usable).
    PoolCreatedEvent {
        #[serde(serialize_with = "shapes::serialize_address", skip_deserializing, default = "shapes::empty_address")]
        /// The pool's server.
        address: ServerAddress,
        /// The pool's settings.
        options: Option<ConnectionPoolOptions>,
    }
);
event_struct!(
    /// A pool became ready to create connections.
    PoolReadyEvent {
        #[serde(serialize_with = "shapes::serialize_address", skip_deserializing, default = "shapes::empty_address")]
        /// The pool's server.
        address: ServerAddress,
    }
);
event_struct!(
    /// A pool was cleared: its connections are now stale.
    PoolClearedEvent {
        #[serde(serialize_with = "shapes::serialize_address", skip_deserializing, default = "shapes::empty_address")]
        /// The pool's server.
        address: ServerAddress,
        /// The service cleared, in load-balanced mode.
        service_id: Option<ObjectId>,
        /// Whether connections in use were interrupted too.
        #[serde(default)]
        interrupt_in_use_connections: bool,
    }
);
event_struct!(
    /// A pool was closed.
    PoolClosedEvent {
        #[serde(serialize_with = "shapes::serialize_address", skip_deserializing, default = "shapes::empty_address")]
        /// The pool's server.
        address: ServerAddress,
    }
);
event_struct!(
    #[serde(rename_all = "camelCase")]
    /// A connection was created (not yet established).
    ConnectionCreatedEvent {
        #[serde(
            serialize_with = "shapes::serialize_address",
            skip_deserializing,
            default = "shapes::empty_address"
        )]
        /// The pool's server.
        address: ServerAddress,
        /// The connection's id within its pool.
        #[serde(default)]
        connection_id: u64,
    }
);
event_struct!(
    #[serde(rename_all = "camelCase")]
    /// A connection completed its handshake and authentication.
    ConnectionReadyEvent {
        #[serde(
            serialize_with = "shapes::serialize_address",
            skip_deserializing,
            default = "shapes::empty_address"
        )]
        /// The pool's server.
        address: ServerAddress,
        /// The connection's id within its pool.
        #[serde(default)]
        connection_id: u64,
        /// Time from creation to ready (not read back by `Deserialize`).
        #[serde(skip_deserializing)]
        duration: Duration,
    }
);
event_struct!(
    #[serde(rename_all = "camelCase")]
    /// A connection was closed.
    ConnectionClosedEvent {
        #[serde(
            serialize_with = "shapes::serialize_address",
            skip_deserializing,
            default = "shapes::empty_address"
        )]
        /// The pool's server.
        address: ServerAddress,
        /// The connection's id within its pool.
        #[serde(default)]
        connection_id: u64,
        /// Why.
        reason: ConnectionClosedReason,
    }
);
event_struct!(
    /// An operation started checking a connection out.
    ConnectionCheckoutStartedEvent {
        #[serde(serialize_with = "shapes::serialize_address", skip_deserializing, default = "shapes::empty_address")]
        /// The pool's server.
        address: ServerAddress,
    }
);
event_struct!(
    /// A check-out failed.
    ConnectionCheckoutFailedEvent {
        #[serde(serialize_with = "shapes::serialize_address", skip_deserializing, default = "shapes::empty_address")]
        /// The pool's server.
        address: ServerAddress,
        /// Why.
        reason: ConnectionCheckoutFailedReason,
        /// Time since the check-out started (not read back by `Deserialize`).
        #[serde(skip_deserializing)]
        duration: Duration,
    }
);
event_struct!(
    #[serde(rename_all = "camelCase")]
    /// A connection was checked out.
    ConnectionCheckedOutEvent {
        #[serde(
            serialize_with = "shapes::serialize_address",
            skip_deserializing,
            default = "shapes::empty_address"
        )]
        /// The pool's server.
        address: ServerAddress,
        /// The connection's id within its pool.
        #[serde(default)]
        connection_id: u64,
        /// Time since the check-out started (not read back by `Deserialize`).
        #[serde(skip_deserializing)]
        duration: Duration,
    }
);
event_struct!(
    #[serde(rename_all = "camelCase")]
    /// A connection was checked back in.
    ConnectionCheckedInEvent {
        #[serde(
            serialize_with = "shapes::serialize_address",
            skip_deserializing,
            default = "shapes::empty_address"
        )]
        /// The pool's server.
        address: ServerAddress,
        /// The connection's id within its pool.
        #[serde(default)]
        connection_id: u64,
    }
);

/// [`CmapEvent`], one variant per event struct, and each struct's conversion into its
/// variant: the list is written once.
macro_rules! cmap_events {
    ($($variant:ident($event:ident)),* $(,)?) => {
        /// One connection pool event.
        #[derive(Clone, Debug, PartialEq)]
        #[non_exhaustive]
        #[allow(
            missing_docs,
            reason = "each variant is documented by the struct it holds"
        )]
        pub enum CmapEvent {
            $($variant($event),)*
        }

        $(impl From<$event> for CmapEvent {
            fn from(event: $event) -> Self {
                CmapEvent::$variant(event)
            }
        })*
    };
}

cmap_events!(
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
);

/// The pre-[`EventHandler`](super::EventHandler) way to receive connection pool events, kept
/// so that code written for it still works: implement the methods for the events wanted (each
/// defaults to ignoring its event) and pass an `Arc` of the handler as `cmap_event_handler`,
/// which turns it into an [`EventHandler<CmapEvent>`](super::EventHandler) calling the method
/// matching each event on the driver's task (so keep them quick).
///
/// ```
/// # #![allow(deprecated)]
/// use std::sync::Arc;
/// use steadfast::event::cmap::{CmapEventHandler, ConnectionClosedEvent};
/// use steadfast::options::ClientOptions;
///
/// struct ClosedConnections;
///
/// impl CmapEventHandler for ClosedConnections {
///     fn handle_connection_closed_event(&self, event: ConnectionClosedEvent) {
///         println!("connection {} closed: {:?}", event.connection_id, event.reason);
///     }
/// }
///
/// let options = ClientOptions::builder()
///     .cmap_event_handler(Arc::new(ClosedConnections))
///     .build();
/// # let _ = options;
/// ```
#[deprecated = "use the EventHandler API"]
pub trait CmapEventHandler: Send + Sync {
    /// Receives each [`PoolCreatedEvent`].
    fn handle_pool_created_event(&self, _event: PoolCreatedEvent) {}
    /// Receives each [`PoolReadyEvent`].
    fn handle_pool_ready_event(&self, _event: PoolReadyEvent) {}
    /// Receives each [`PoolClearedEvent`].
    fn handle_pool_cleared_event(&self, _event: PoolClearedEvent) {}
    /// Receives each [`PoolClosedEvent`].
    fn handle_pool_closed_event(&self, _event: PoolClosedEvent) {}
    /// Receives each [`ConnectionCreatedEvent`].
    fn handle_connection_created_event(&self, _event: ConnectionCreatedEvent) {}
    /// Receives each [`ConnectionReadyEvent`].
    fn handle_connection_ready_event(&self, _event: ConnectionReadyEvent) {}
    /// Receives each [`ConnectionClosedEvent`].
    fn handle_connection_closed_event(&self, _event: ConnectionClosedEvent) {}
    /// Receives each [`ConnectionCheckoutStartedEvent`].
    fn handle_connection_checkout_started_event(&self, _event: ConnectionCheckoutStartedEvent) {}
    /// Receives each [`ConnectionCheckoutFailedEvent`].
    fn handle_connection_checkout_failed_event(&self, _event: ConnectionCheckoutFailedEvent) {}
    /// Receives each [`ConnectionCheckedOutEvent`].
    fn handle_connection_checked_out_event(&self, _event: ConnectionCheckedOutEvent) {}
    /// Receives each [`ConnectionCheckedInEvent`].
    fn handle_connection_checked_in_event(&self, _event: ConnectionCheckedInEvent) {}
}

#[allow(deprecated, reason = "the legacy trait is still delivered to")]
impl CmapEvent {
    /// Calls the method of `handler` that matches this event.
    pub(crate) fn deliver_to<H: CmapEventHandler + ?Sized>(self, handler: &H) {
        match self {
            CmapEvent::PoolCreated(e) => handler.handle_pool_created_event(e),
            CmapEvent::PoolReady(e) => handler.handle_pool_ready_event(e),
            CmapEvent::PoolCleared(e) => handler.handle_pool_cleared_event(e),
            CmapEvent::PoolClosed(e) => handler.handle_pool_closed_event(e),
            CmapEvent::ConnectionCreated(e) => handler.handle_connection_created_event(e),
            CmapEvent::ConnectionReady(e) => handler.handle_connection_ready_event(e),
            CmapEvent::ConnectionClosed(e) => handler.handle_connection_closed_event(e),
            CmapEvent::ConnectionCheckoutStarted(e) => {
                handler.handle_connection_checkout_started_event(e);
            }
            CmapEvent::ConnectionCheckoutFailed(e) => {
                handler.handle_connection_checkout_failed_event(e);
            }
            CmapEvent::ConnectionCheckedOut(e) => handler.handle_connection_checked_out_event(e),
            CmapEvent::ConnectionCheckedIn(e) => handler.handle_connection_checked_in_event(e),
        }
    }
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
