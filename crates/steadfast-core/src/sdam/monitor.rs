//! The monitor's rule for failed checks (Server Monitoring "Network or command error during
//! server check").

use super::errors::{PoolClear, ServerErrorReply};
use crate::description::ServerDescription;

/// How a monitor's hello failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeartbeatFailure {
    /// A network error other than a timeout; the text says what happened.
    Network(String),
    /// The check timed out.
    NetworkTimeout(String),
    /// The server answered hello with `ok: 0`.
    Command(ServerErrorReply),
}

/// When the monitor should run its next check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextCheck {
    /// At once, without sleeping: the server was known, so a network failure is retried once
    /// in case it was a glitch or a restart.
    Immediately,
    /// After heartbeatFrequencyMS, or minHeartbeatFrequencyMS if a check is requested.
    AfterInterval,
}

/// What a failed check requires.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct HeartbeatFailureActions {
    /// The Unknown description to pass through `TopologyDescription::apply`.
    pub description: ServerDescription,
    /// The pool clear to perform after the description is applied; a timeout also interrupts
    /// connections in use.
    pub clear_pool: PoolClear,
    /// When to check again.
    pub next_check: NextCheck,
}

/// Decides what a failed check does: the server becomes Unknown (keeping a command error's
/// topologyVersion), its pool is cleared (interrupting in-use connections after a timeout),
/// and a network failure of a previously known server is retried at once.
/// `pool_generation` is the pool's generation when the check failed.
pub fn on_heartbeat_failure(
    previous: &ServerDescription,
    failure: &HeartbeatFailure,
    pool_generation: u32,
) -> HeartbeatFailureActions {
    let address = previous.address.clone();
    let (description, network, timeout) = match failure {
        HeartbeatFailure::Network(text) => (
            ServerDescription::from_error(address, format!("network error: {text}"), None),
            true,
            false,
        ),
        HeartbeatFailure::NetworkTimeout(text) => (
            ServerDescription::from_error(address, format!("network timeout: {text}"), None),
            true,
            true,
        ),
        HeartbeatFailure::Command(reply) => {
            let text = match reply.code {
                Some(code) => format!("hello failed with error {code}: {}", reply.message),
                None => format!("hello failed: {}", reply.message),
            };
            (
                ServerDescription::from_error(address, text, reply.topology_version),
                false,
                false,
            )
        }
    };
    let next_check = if network && previous.server_type.is_known() {
        NextCheck::Immediately
    } else {
        NextCheck::AfterInterval
    };
    HeartbeatFailureActions {
        description,
        clear_pool: PoolClear {
            generation: pool_generation,
            service_id: None,
            interrupt_in_use: timeout,
        },
        next_check,
    }
}
