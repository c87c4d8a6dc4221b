//! Server selection's log messages (server-selection.md, "Logging"): "Server selection
//! started", "Waiting for suitable server to become available" (once per selection, at info
//! level), then "Server selection succeeded" or "Server selection failed".

use std::time::Duration;

use steadfast_core::ServerAddress;
use steadfast_core::TopologyDescription;
use steadfast_core::selection::SelectionCriteria;

use super::select::describe;
use crate::error::Error;

/// The log target of server selection messages (the logging specification's
/// `serverSelection` component).
const LOG_TARGET: &str = crate::logging::SERVER_SELECTION;

/// The operation a server is selected for, as the selection messages name it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SelectionFor<'a> {
    /// The command name.
    pub(crate) operation: &'a str,
    /// The driver's id of the operation (shared with its command messages).
    pub(crate) operation_id: i64,
}

/// The messages of one selection. Created only when [`enabled`], so an unobserved selection
/// formats nothing.
pub(super) struct SelectionLog<'a> {
    operation: SelectionFor<'a>,
    selector: String,
    topology_id: String,
    /// Whether "Waiting for suitable server" was written (it is written once).
    waited: bool,
}

/// Whether a subscriber wants any selection message (the waiting message is at info level,
/// the others at debug): checked before anything is looked up or formatted.
pub(super) fn enabled() -> bool {
    tracing::enabled!(target: LOG_TARGET, tracing::Level::INFO)
}

impl<'a> SelectionLog<'a> {
    /// Writes "Server selection started". Call only when [`enabled`].
    pub(super) fn start(
        operation: SelectionFor<'a>,
        criteria: &SelectionCriteria,
        topology_id: &bson::oid::ObjectId,
        topology: &TopologyDescription,
    ) -> Self {
        let log = SelectionLog {
            operation,
            selector: criteria.to_string(),
            topology_id: topology_id.to_hex(),
            waited: false,
        };
        tracing::debug!(target: LOG_TARGET, topologyId = log.topology_id.as_str(),
            selector = log.selector.as_str(), operation = operation.operation,
            operationId = operation.operation_id, topologyDescription = %describe(topology),
            "Server selection started");
        log
    }

    /// Writes "Waiting for suitable server to become available" the first time it is called.
    pub(super) fn waiting(&mut self, topology: &TopologyDescription, remaining: Duration) {
        if std::mem::replace(&mut self.waited, true) {
            return;
        }
        let remaining = u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX);
        tracing::info!(target: LOG_TARGET, topologyId = self.topology_id.as_str(),
            selector = self.selector.as_str(), operation = self.operation.operation,
            operationId = self.operation.operation_id, topologyDescription = %describe(topology),
            remainingTimeMS = remaining, "Waiting for suitable server to become available");
    }

    /// Writes "Server selection succeeded" (with the server) or "Server selection failed"
    /// (with the error the operation will return).
    pub(super) fn finished(
        &self,
        topology: &TopologyDescription,
        outcome: Result<&ServerAddress, &Error>,
    ) {
        let (topology_id, selector) = (self.topology_id.as_str(), self.selector.as_str());
        let SelectionFor {
            operation,
            operation_id,
        } = self.operation;
        match outcome {
            Ok(address) => tracing::debug!(target: LOG_TARGET, topologyId = topology_id,
                selector, operation, operationId = operation_id,
                topologyDescription = %describe(topology), serverHost = address.host(),
                serverPort = address.port(), "Server selection succeeded"),
            Err(error) => tracing::debug!(target: LOG_TARGET, topologyId = topology_id,
                selector, operation, operationId = operation_id,
                topologyDescription = %describe(topology), failure = %error,
                "Server selection failed"),
        }
    }
}
