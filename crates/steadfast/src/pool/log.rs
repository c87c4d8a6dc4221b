//! The connection-logging specification's messages, as structured `tracing` debug events.

use steadfast_core::pool::PoolEvent;

use super::LOG_TARGET;

/// Writes a CMAP event as a debug log message (the connection-logging specification's
/// messages, in structured form).
pub(super) fn event(event: &PoolEvent) {
    match event {
        PoolEvent::PoolCreated { address, options } => tracing::debug!(
            target: LOG_TARGET, %address, max_pool_size = ?options.max_pool_size,
            min_pool_size = options.min_pool_size, max_connecting = options.max_connecting,
            max_idle_time_ms = options.max_idle_time.map(|t| t.as_millis() as u64),
            wait_queue_timeout_ms = options.wait_queue_timeout.map(|t| t.as_millis() as u64),
            "Connection pool created"),
        PoolEvent::PoolReady { address } => {
            tracing::debug!(target: LOG_TARGET, %address, "Connection pool ready");
        }
        PoolEvent::PoolCleared {
            address,
            service_id,
            interrupt_in_use_connections,
        } => tracing::debug!(target: LOG_TARGET, %address,
            service_id = service_id.map(|id| id.to_hex()),
            interrupt_in_use_connections = *interrupt_in_use_connections,
            "Connection pool cleared"),
        PoolEvent::PoolClosed { address } => {
            tracing::debug!(target: LOG_TARGET, %address, "Connection pool closed");
        }
        PoolEvent::ConnectionCreated {
            address,
            connection_id,
        } => tracing::debug!(target: LOG_TARGET, %address, driver_connection_id = connection_id,
            "Connection created"),
        PoolEvent::ConnectionReady {
            address,
            connection_id,
            duration,
        } => tracing::debug!(target: LOG_TARGET, %address, driver_connection_id = connection_id,
            duration_ms = duration.as_secs_f64() * 1000.0, "Connection ready"),
        PoolEvent::ConnectionClosed {
            address,
            connection_id,
            reason,
        } => tracing::debug!(target: LOG_TARGET, %address, driver_connection_id = connection_id,
            reason = reason.as_str(), "Connection closed"),
        PoolEvent::ConnectionCheckOutStarted { address } => {
            tracing::debug!(target: LOG_TARGET, %address, "Connection checkout started");
        }
        PoolEvent::ConnectionCheckOutFailed {
            address,
            reason,
            duration,
        } => tracing::debug!(target: LOG_TARGET, %address, reason = reason.as_str(),
            duration_ms = duration.as_secs_f64() * 1000.0, "Connection checkout failed"),
        PoolEvent::ConnectionCheckedOut {
            address,
            connection_id,
            duration,
        } => tracing::debug!(target: LOG_TARGET, %address, driver_connection_id = connection_id,
            duration_ms = duration.as_secs_f64() * 1000.0, "Connection checked out"),
        PoolEvent::ConnectionCheckedIn {
            address,
            connection_id,
        } => tracing::debug!(target: LOG_TARGET, %address, driver_connection_id = connection_id,
            "Connection checked in"),
        _ => tracing::debug!(target: LOG_TARGET, event = event.name(), "connection pool event"),
    }
}
