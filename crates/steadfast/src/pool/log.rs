//! The connection pool's log messages (connection-monitoring-and-pooling.md, "Connection Pool
//! Logging"): one debug `tracing` event per CMAP event, with the specification's message text
//! as `message` and its camelCase field names, plus `topologyId`.

use std::fmt::Display;
use std::time::Duration;

use bson::oid::ObjectId;
use steadfast_core::ServerAddress;
use steadfast_core::pool::{CheckOutFailedReason, ConnectionClosedReason, PoolEvent};

use super::LOG_TARGET;

/// Stands in for the error of a connection closed because an operation saw it fail: the pool
/// is told only that the connection is unhealthy, not why.
const CHECKED_IN_BROKEN: &str = "the connection was checked in after an error on it";

/// The specification's text for why a connection was closed.
fn closed_reason(reason: ConnectionClosedReason) -> &'static str {
    match reason {
        ConnectionClosedReason::Stale => "Connection became stale because the pool was cleared",
        ConnectionClosedReason::Idle => {
            "Connection has been available but unused for longer than the configured max idle time"
        }
        ConnectionClosedReason::Error => "An error occurred while using the connection",
        ConnectionClosedReason::Dropped => {
            "The operation using the connection was cancelled midway"
        }
        ConnectionClosedReason::PoolClosed => "Connection pool was closed",
    }
}

/// The specification's text for why a check-out failed.
fn checkout_failed_reason(reason: CheckOutFailedReason) -> &'static str {
    match reason {
        CheckOutFailedReason::Timeout => {
            "Wait queue timeout elapsed without a connection becoming available"
        }
        CheckOutFailedReason::ConnectionError => {
            "An error occurred while trying to establish a new connection"
        }
        CheckOutFailedReason::PoolClosed => "Connection pool was closed",
    }
}

/// Milliseconds as the `durationMS` field carries them (fractional, so sub-millisecond
/// check-outs do not all read 0).
fn millis(duration: &Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Whole milliseconds of an option, saturating (a `u128` of milliseconds fits no field type).
fn option_millis(duration: Option<Duration>) -> Option<u64> {
    duration.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Writes `event`, of the pool for `address`, as the specification's log message. `error` is
/// the error behind a check-out that failed to establish a connection or a connection closed
/// on error, when the pool knows it.
pub(super) fn event(
    event: &PoolEvent,
    address: &ServerAddress,
    topology_id: ObjectId,
    error: Option<&dyn Display>,
) {
    let topology_id = topology_id.to_hex();
    let topology_id = topology_id.as_str();
    let (host, port) = (address.host(), address.port());
    match event {
        PoolEvent::PoolCreated { options, .. } => tracing::debug!(
            target: LOG_TARGET, topologyId = topology_id, serverHost = host, serverPort = port,
            maxIdleTimeMS = option_millis(options.max_idle_time),
            minPoolSize = options.min_pool_size, maxPoolSize = options.max_pool_size,
            maxConnecting = options.max_connecting,
            waitQueueTimeoutMS = option_millis(options.wait_queue_timeout),
            "Connection pool created"),
        PoolEvent::PoolReady { .. } => tracing::debug!(target: LOG_TARGET,
            topologyId = topology_id, serverHost = host, serverPort = port,
            "Connection pool ready"),
        PoolEvent::PoolCleared { service_id, .. } => tracing::debug!(target: LOG_TARGET,
            topologyId = topology_id, serverHost = host, serverPort = port,
            serviceId = service_id.map(|id| id.to_hex()).as_deref(),
            "Connection pool cleared"),
        PoolEvent::PoolClosed { .. } => tracing::debug!(target: LOG_TARGET,
            topologyId = topology_id, serverHost = host, serverPort = port,
            "Connection pool closed"),
        PoolEvent::ConnectionCreated { connection_id, .. } => tracing::debug!(target: LOG_TARGET,
            topologyId = topology_id, serverHost = host, serverPort = port,
            driverConnectionId = *connection_id, "Connection created"),
        PoolEvent::ConnectionReady {
            connection_id,
            duration,
            ..
        } => tracing::debug!(target: LOG_TARGET,
            topologyId = topology_id, serverHost = host, serverPort = port,
            driverConnectionId = *connection_id, durationMS = millis(duration),
            "Connection ready"),
        PoolEvent::ConnectionClosed {
            connection_id,
            reason,
            ..
        } => {
            let error = match reason {
                ConnectionClosedReason::Error => Some(error.unwrap_or(&CHECKED_IN_BROKEN)),
                _ => None,
            };
            tracing::debug!(target: LOG_TARGET,
                topologyId = topology_id, serverHost = host, serverPort = port,
                driverConnectionId = *connection_id, reason = closed_reason(*reason),
                error = error.map(tracing::field::display), "Connection closed");
        }
        PoolEvent::ConnectionCheckOutStarted { .. } => tracing::debug!(target: LOG_TARGET,
            topologyId = topology_id, serverHost = host, serverPort = port,
            "Connection checkout started"),
        PoolEvent::ConnectionCheckOutFailed {
            reason, duration, ..
        } => tracing::debug!(target: LOG_TARGET,
            topologyId = topology_id, serverHost = host, serverPort = port,
            reason = checkout_failed_reason(*reason), error = error.map(tracing::field::display),
            durationMS = millis(duration), "Connection checkout failed"),
        PoolEvent::ConnectionCheckedOut {
            connection_id,
            duration,
            ..
        } => tracing::debug!(target: LOG_TARGET,
            topologyId = topology_id, serverHost = host, serverPort = port,
            driverConnectionId = *connection_id, durationMS = millis(duration),
            "Connection checked out"),
        PoolEvent::ConnectionCheckedIn { connection_id, .. } => tracing::debug!(target: LOG_TARGET,
            topologyId = topology_id, serverHost = host, serverPort = port,
            driverConnectionId = *connection_id, "Connection checked in"),
        // The enum is non-exhaustive: a kind the specification does not log is not logged.
        _ => {}
    }
}
