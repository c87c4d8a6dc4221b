//! The topology's log messages (server-discovery-and-monitoring-logging-and-monitoring.md, "Log
//! Messages"): one debug `tracing` event per SDAM event, except ServerDescriptionChanged, which
//! the specification leaves out as redundant with "Topology description changed".

use bson::{Bson, Document};
use steadfast_core::ServerAddress;
use steadfast_core::sdam::SdamEvent;

use crate::logging::LogContext;

/// The log target of topology messages (the logging specification's `topology` component).
const LOG_TARGET: &str = crate::logging::TOPOLOGY;

/// The monitoring connection a heartbeat ran on, as its log messages name it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct HeartbeatConnection {
    /// The driver's id for the monitoring connection.
    pub(super) driver: u64,
    /// The server's id for it (`connectionId` of its hello reply), once known.
    pub(super) server: Option<i64>,
}

impl HeartbeatConnection {
    /// A fresh monitoring connection: the server's id is known after its first reply.
    pub(super) fn new(driver: u64) -> Self {
        HeartbeatConnection {
            driver,
            server: None,
        }
    }

    /// Takes the server's id from a hello reply (`connectionId`, any numeric type), keeping the
    /// one known when the reply has none.
    pub(super) fn learn(&mut self, reply: &Document) {
        let id = match reply.get("connectionId") {
            Some(Bson::Int32(id)) => Some(i64::from(*id)),
            Some(Bson::Int64(id)) => Some(*id),
            // A double that is not a whole number (or out of range) names no connection.
            Some(Bson::Double(id)) if id.fract() == 0.0 && id.abs() < 9.0e15 => Some(*id as i64),
            _ => None,
        };
        if id.is_some() {
            self.server = id;
        }
    }
}

/// Whether topology messages are wanted at all; checked before anything is formatted.
fn enabled() -> bool {
    tracing::enabled!(target: LOG_TARGET, tracing::Level::DEBUG)
}

/// Writes `event` as the specification's log message. `connection` is the monitoring
/// connection of a heartbeat event.
pub(super) fn event(
    event: &SdamEvent,
    context: &LogContext,
    connection: Option<HeartbeatConnection>,
) {
    if !enabled() {
        return;
    }
    let topology_id = context.topology_id.to_hex();
    let topology_id = topology_id.as_str();
    match event {
        SdamEvent::TopologyOpening => tracing::debug!(target: LOG_TARGET,
            topologyId = topology_id, "Starting topology monitoring"),
        SdamEvent::TopologyClosed => tracing::debug!(target: LOG_TARGET,
            topologyId = topology_id, "Stopped topology monitoring"),
        SdamEvent::TopologyDescriptionChanged { previous, new } => tracing::debug!(
            target: LOG_TARGET, topologyId = topology_id,
            previousDescription = %super::select::describe(previous),
            newDescription = %super::select::describe(new),
            "Topology description changed"),
        SdamEvent::ServerOpening { address } => server_message(address, topology_id, true),
        SdamEvent::ServerClosed { address } => server_message(address, topology_id, false),
        SdamEvent::ServerHeartbeatStarted { .. }
        | SdamEvent::ServerHeartbeatSucceeded { .. }
        | SdamEvent::ServerHeartbeatFailed { .. } => {
            heartbeat(event, context, topology_id, connection.unwrap_or_default());
        }
        // ServerDescriptionChanged is left out on purpose (see the module's documentation),
        // and the enum is non-exhaustive.
        _ => {}
    }
}

/// "Starting server monitoring" or "Stopped server monitoring".
fn server_message(address: &ServerAddress, topology_id: &str, starting: bool) {
    let (host, port) = (address.host(), address.port());
    if starting {
        tracing::debug!(target: LOG_TARGET, topologyId = topology_id, serverHost = host,
            serverPort = port, "Starting server monitoring");
    } else {
        tracing::debug!(target: LOG_TARGET, topologyId = topology_id, serverHost = host,
            serverPort = port, "Stopped server monitoring");
    }
}

/// The three heartbeat messages.
fn heartbeat(
    event: &SdamEvent,
    context: &LogContext,
    topology_id: &str,
    connection: HeartbeatConnection,
) {
    let driver_id = connection.driver;
    let server_id = connection.server;
    match event {
        SdamEvent::ServerHeartbeatStarted {
            address, awaited, ..
        } => tracing::debug!(
            target: LOG_TARGET, topologyId = topology_id, serverHost = address.host(),
            serverPort = address.port(), driverConnectionId = driver_id,
            serverConnectionId = server_id, awaited = *awaited, "Server heartbeat started"),
        SdamEvent::ServerHeartbeatSucceeded {
            address,
            duration,
            reply,
            awaited,
            ..
        } => tracing::debug!(
            target: LOG_TARGET, topologyId = topology_id, serverHost = address.host(),
            serverPort = address.port(), driverConnectionId = driver_id,
            serverConnectionId = server_id, awaited = *awaited,
            durationMS = duration.as_secs_f64() * 1000.0, reply = context.render_document(reply).as_str(),
            "Server heartbeat succeeded"),
        SdamEvent::ServerHeartbeatFailed {
            address,
            duration,
            failure,
            awaited,
            ..
        } => tracing::debug!(
            target: LOG_TARGET, topologyId = topology_id, serverHost = address.host(),
            serverPort = address.port(), driverConnectionId = driver_id,
            serverConnectionId = server_id, awaited = *awaited,
            durationMS = duration.as_secs_f64() * 1000.0, failure = failure.as_str(),
            "Server heartbeat failed"),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::HeartbeatConnection;

    #[test]
    fn the_server_connection_id_is_read_from_any_numeric_type_and_kept_when_absent() {
        let mut connection = HeartbeatConnection::new(7);
        assert_eq!(connection.server, None);
        connection.learn(&doc! { "ok": 1, "connectionId": 12_i32 });
        assert_eq!(connection.server, Some(12));
        connection.learn(&doc! { "ok": 1, "connectionId": 13_i64 });
        assert_eq!(connection.server, Some(13));
        connection.learn(&doc! { "ok": 1, "connectionId": 14.0 });
        assert_eq!(connection.server, Some(14));
        // No id, or one that names no connection: the last known one stays.
        connection.learn(&doc! { "ok": 1 });
        connection.learn(&doc! { "ok": 1, "connectionId": 1.5 });
        connection.learn(&doc! { "ok": 1, "connectionId": f64::INFINITY });
        connection.learn(&doc! { "ok": 1, "connectionId": "15" });
        assert_eq!(
            connection,
            HeartbeatConnection {
                driver: 7,
                server: Some(14)
            }
        );
    }
}
