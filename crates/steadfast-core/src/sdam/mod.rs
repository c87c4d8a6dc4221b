//! The SDAM state machine and application-error handling.
//!
//! [`TopologyDescription::apply`](crate::description::TopologyDescription::apply) turns a new
//! server description into a [`TopologyChange`]; [`on_application_error`] and
//! [`on_heartbeat_failure`] turn failures into [`SdamActions`] and [`HeartbeatFailureActions`].
//! Every decision is a value that the driver's topology worker carries out.

mod apply;
mod errors;
pub mod events;
mod monitor;
mod replica_set;
mod srv_poll;

pub use apply::{ApplyOutcome, TopologyChange};
pub use errors::{
    ApplicationErrorKind, ErrorContext, ErrorPhase, IgnoreReason, NODE_IS_RECOVERING_CODES,
    NOT_WRITABLE_PRIMARY_CODES, PoolClear, SHUTDOWN_CODES, SdamActions, ServerErrorReply,
    StateChangeKind, classify_state_change, is_shutdown_code, on_application_error,
};
pub use events::SdamEvent;
pub use monitor::{HeartbeatFailure, HeartbeatFailureActions, NextCheck, on_heartbeat_failure};
pub use srv_poll::{
    MIN_RESCAN_INTERVAL, VerifiedHosts, polls_srv, rescan_interval, verify_records,
};

#[cfg(test)]
mod tests;
