//! The connection pool's monitoring events, as plain data.
//!
//! The async pool worker builds these (it knows the durations, which need a clock) and hands them
//! to subscribers; they live here so that tests and tools can match on them without a runtime.

use std::time::Duration;

use bson::oid::ObjectId;

use super::{ConnectionId, PoolOptions};
use crate::address::ServerAddress;

/// Why a connection was closed. Serializes as the specification's camel-case name
/// (`"stale"`, `"poolClosed"`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConnectionClosedReason {
    /// The pool was cleared after the connection was created.
    Stale,
    /// It stayed available longer than `maxIdleTimeMS`.
    Idle,
    /// It hit an error (network, timeout, protocol) and is no longer trusted.
    Error,
    /// It was checked back in while a request was being written or its reply read: the
    /// operation using it was cancelled (its future dropped) midway.
    Dropped,
    /// The pool was closed.
    PoolClosed,
}

impl ConnectionClosedReason {
    /// The specification's name for the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            ConnectionClosedReason::Stale => "stale",
            ConnectionClosedReason::Idle => "idle",
            ConnectionClosedReason::Error => "error",
            ConnectionClosedReason::Dropped => "dropped",
            ConnectionClosedReason::PoolClosed => "poolClosed",
        }
    }
}

/// Why a check-out failed. Serializes as the specification's camel-case name (`"timeout"`,
/// `"connectionError"`, `"poolClosed"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CheckOutFailedReason {
    /// The pool is closed.
    PoolClosed,
    /// The wait queue timeout or the operation's deadline expired.
    Timeout,
    /// Establishing a connection failed, or the pool was paused or cleared.
    ConnectionError,
}

impl CheckOutFailedReason {
    /// The specification's name for the reason.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckOutFailedReason::PoolClosed => "poolClosed",
            CheckOutFailedReason::Timeout => "timeout",
            CheckOutFailedReason::ConnectionError => "connectionError",
        }
    }
}

/// One CMAP event.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PoolEvent {
    /// A pool was created (paused).
    PoolCreated {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The options the pool was created with.
        options: PoolOptions,
    },
    /// The pool became ready.
    PoolReady {
        /// The server the pool connects to.
        address: ServerAddress,
    },
    /// The pool was cleared.
    PoolCleared {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The service cleared, in load-balanced mode.
        service_id: Option<ObjectId>,
        /// Whether in-use connections were interrupted.
        interrupt_in_use_connections: bool,
    },
    /// The pool was closed.
    PoolClosed {
        /// The server the pool connects to.
        address: ServerAddress,
    },
    /// A connection object was created (not yet established).
    ConnectionCreated {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The connection's id.
        connection_id: ConnectionId,
    },
    /// A connection finished its handshake and authentication.
    ConnectionReady {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The connection's id.
        connection_id: ConnectionId,
        /// Time from creation to ready.
        duration: Duration,
    },
    /// A connection was closed.
    ConnectionClosed {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The connection's id.
        connection_id: ConnectionId,
        /// Why.
        reason: ConnectionClosedReason,
    },
    /// A check-out started.
    ConnectionCheckOutStarted {
        /// The server the pool connects to.
        address: ServerAddress,
    },
    /// A check-out failed.
    ConnectionCheckOutFailed {
        /// The server the pool connects to.
        address: ServerAddress,
        /// Why.
        reason: CheckOutFailedReason,
        /// Time since the check-out started.
        duration: Duration,
    },
    /// A connection was checked out.
    ConnectionCheckedOut {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The connection's id.
        connection_id: ConnectionId,
        /// Time since the check-out started.
        duration: Duration,
    },
    /// A connection was checked in.
    ConnectionCheckedIn {
        /// The server the pool connects to.
        address: ServerAddress,
        /// The connection's id.
        connection_id: ConnectionId,
    },
}

impl PoolEvent {
    /// The specification's event name (`ConnectionCheckedOutEvent`, ...), as the spec tests use.
    pub fn name(&self) -> &'static str {
        match self {
            PoolEvent::PoolCreated { .. } => "ConnectionPoolCreated",
            PoolEvent::PoolReady { .. } => "ConnectionPoolReady",
            PoolEvent::PoolCleared { .. } => "ConnectionPoolCleared",
            PoolEvent::PoolClosed { .. } => "ConnectionPoolClosed",
            PoolEvent::ConnectionCreated { .. } => "ConnectionCreated",
            PoolEvent::ConnectionReady { .. } => "ConnectionReady",
            PoolEvent::ConnectionClosed { .. } => "ConnectionClosed",
            PoolEvent::ConnectionCheckOutStarted { .. } => "ConnectionCheckOutStarted",
            PoolEvent::ConnectionCheckOutFailed { .. } => "ConnectionCheckOutFailed",
            PoolEvent::ConnectionCheckedOut { .. } => "ConnectionCheckedOut",
            PoolEvent::ConnectionCheckedIn { .. } => "ConnectionCheckedIn",
        }
    }
}
