//! Application-error handling (SDAM "Error handling"): which failures mark a server Unknown,
//! clear its pool, or request a check, and which are stale and must change nothing.

use bson::oid::ObjectId;
use bson::{Bson, Document};

use crate::address::ServerAddress;
use crate::description::{
    ServerDescription, TopologyDescription, TopologyType, TopologyVersion, topology_version_of,
};
use crate::reply::reply_is_ok;

pub use crate::codes::{
    NODE_IS_RECOVERING_CODES, NOT_WRITABLE_PRIMARY_CODES, SHUTDOWN_CODES, StateChangeKind,
    classify_state_change, is_shutdown_code,
};

/// The parts of a server error reply that SDAM looks at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerErrorReply {
    /// The numeric error code, if the reply had one.
    pub code: Option<i32>,
    /// The error message (`errmsg`).
    pub message: String,
    /// The reply's `topologyVersion`, if any.
    pub topology_version: Option<TopologyVersion>,
}

/// What went wrong in an application operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplicationErrorKind {
    /// A network error other than a timeout (reset, EOF, refused...).
    Network,
    /// A network timeout.
    NetworkTimeout,
    /// A command reply with `ok: 0`.
    Command(ServerErrorReply),
    /// A `writeConcernError` in an otherwise successful reply.
    WriteConcern(ServerErrorReply),
}

fn error_code(document: &Document) -> Option<i32> {
    match document.get("code") {
        Some(Bson::Int32(n)) => Some(*n),
        Some(Bson::Int64(n)) => i32::try_from(*n).ok(),
        // Integral doubles are exact in i32 range after the bounds check.
        Some(Bson::Double(f)) if f.fract() == 0.0 && f.abs() <= f64::from(i32::MAX) => {
            Some(*f as i32)
        }
        _ => None,
    }
}

impl ApplicationErrorKind {
    /// Reads the SDAM-relevant error out of a command reply: `ok: 0` is a command error, a
    /// `writeConcernError` in an ok reply is a write-concern error, and anything else (including
    /// `writeErrors`, which SDAM must not inspect) is no error.
    pub fn from_command_reply(reply: &Document) -> Option<Self> {
        let topology_version = topology_version_of(reply);
        if !reply_is_ok(reply) {
            return Some(ApplicationErrorKind::Command(ServerErrorReply {
                code: error_code(reply),
                message: reply.get_str("errmsg").unwrap_or_default().to_string(),
                topology_version,
            }));
        }
        let concern = reply.get_document("writeConcernError").ok()?;
        Some(ApplicationErrorKind::WriteConcern(ServerErrorReply {
            code: error_code(concern),
            message: concern.get_str("errmsg").unwrap_or_default().to_string(),
            topology_version,
        }))
    }

    fn server_reply(&self) -> Option<&ServerErrorReply> {
        match self {
            ApplicationErrorKind::Command(reply) | ApplicationErrorKind::WriteConcern(reply) => {
                Some(reply)
            }
            ApplicationErrorKind::Network | ApplicationErrorKind::NetworkTimeout => None,
        }
    }

    fn describe(&self) -> String {
        match self {
            ApplicationErrorKind::Network => "network error".to_string(),
            ApplicationErrorKind::NetworkTimeout => "network timeout".to_string(),
            ApplicationErrorKind::Command(r) | ApplicationErrorKind::WriteConcern(r) => {
                match r.code {
                    Some(code) => format!("server error {code}: {}", r.message),
                    None => format!("server error: {}", r.message),
                }
            }
        }
    }
}

/// Where in a connection's life the error happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorPhase {
    /// Opening the connection (TCP, TLS) or running the initial hello.
    Hello,
    /// After hello, during authentication: the handshake is not complete yet.
    Authentication,
    /// On an established connection, after the handshake completed.
    AfterHandshake,
}

/// Everything SDAM needs to know about one application error.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ErrorContext {
    /// The server the connection was to.
    pub address: ServerAddress,
    /// The pool generation the connection was created in.
    pub connection_generation: u32,
    /// The pool's current generation (for the connection's `serviceId` when load balanced).
    pub pool_generation: u32,
    /// When the error happened.
    pub phase: ErrorPhase,
    /// What happened.
    pub kind: ApplicationErrorKind,
    /// Whether the error carries the `SystemOverloadedError` label (the pool adds it to
    /// network errors during connection establishment and hello).
    pub system_overloaded: bool,
    /// The connection's `serviceId` in load-balanced mode.
    pub service_id: Option<ObjectId>,
}

impl ErrorContext {
    /// A context with no backpressure label and no service id.
    pub fn new(
        address: ServerAddress,
        connection_generation: u32,
        pool_generation: u32,
        phase: ErrorPhase,
        kind: ApplicationErrorKind,
    ) -> Self {
        ErrorContext {
            address,
            connection_generation,
            pool_generation,
            phase,
            kind,
            system_overloaded: false,
            service_id: None,
        }
    }
}

/// Why an error changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IgnoreReason {
    /// The connection belongs to an older pool generation: the pool was already cleared.
    StaleGeneration,
    /// The error's topologyVersion is not newer than what the client already knows.
    StaleTopologyVersion,
    /// The error carries `SystemOverloadedError`: the server is busy, not gone.
    Overloaded,
    /// The server is no longer part of the topology.
    NotInTopology,
    /// Errors before the hello completes never affect a load-balanced topology.
    LoadBalancedHandshake,
    /// The error says nothing about the server's state (a timeout on an established
    /// connection, an ordinary command error).
    NoTopologyImpact,
}

/// A pool clear the worker must perform, synchronised with publishing the new description.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolClear {
    /// The generation being cleared: if the pool has moved past it, the clear already happened.
    pub generation: u32,
    /// Clear only this service's connections (load-balanced mode).
    pub service_id: Option<ObjectId>,
    /// Also interrupt connections that are checked out.
    pub interrupt_in_use: bool,
}

/// The verdict on one application error.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct SdamActions {
    /// Why nothing is to be done, when that is the verdict.
    pub ignored: Option<IgnoreReason>,
    /// The Unknown description to pass through `TopologyDescription::apply`.
    pub mark_unknown: Option<ServerDescription>,
    /// The pool clear to perform after marking the server Unknown.
    pub clear_pool: Option<PoolClear>,
    /// Ask the server's monitor for an immediate check.
    pub request_check: bool,
    /// Cancel the monitor's in-progress check (its connection is likely dead too).
    pub cancel_check: bool,
}

impl SdamActions {
    fn ignore(reason: IgnoreReason) -> Self {
        SdamActions {
            ignored: Some(reason),
            mark_unknown: None,
            clear_pool: None,
            request_check: false,
            cancel_check: false,
        }
    }
}

/// Decides what an application error does to SDAM state (the specification's handleError):
/// stale errors (older generation, or a topologyVersion not newer than the server's) change
/// nothing; State Change Errors mark the server Unknown, request a check, and clear the pool
/// only for shutdown codes; non-timeout network errors, and any error before the handshake
/// completes, mark the server Unknown, clear the pool and cancel the in-progress check unless
/// the error carries `SystemOverloadedError`. Load-balanced topologies are never marked Unknown
/// and clear only the connection's service.
pub fn on_application_error(topology: &TopologyDescription, error: &ErrorContext) -> SdamActions {
    let Some(server) = topology.servers.get(&error.address) else {
        return SdamActions::ignore(IgnoreReason::NotInTopology);
    };
    if error.connection_generation < error.pool_generation {
        return SdamActions::ignore(IgnoreReason::StaleGeneration);
    }
    let reply = error.kind.server_reply();
    if TopologyVersion::is_not_newer(
        reply.and_then(|r| r.topology_version.as_ref()),
        server.topology_version.as_ref(),
    ) {
        return SdamActions::ignore(IgnoreReason::StaleTopologyVersion);
    }
    let load_balanced = topology.topology_type == TopologyType::LoadBalanced;
    if load_balanced && error.phase == ErrorPhase::Hello {
        return SdamActions::ignore(IgnoreReason::LoadBalancedHandshake);
    }
    let clear = PoolClear {
        generation: error.pool_generation,
        service_id: if load_balanced {
            error.service_id
        } else {
            None
        },
        interrupt_in_use: false,
    };
    let unknown = || {
        ServerDescription::from_error(
            error.address.clone(),
            error.kind.describe(),
            reply.and_then(|r| r.topology_version),
        )
    };

    if let Some(reply) = reply
        && classify_state_change(reply.code, &reply.message).is_some()
    {
        return SdamActions {
            ignored: None,
            mark_unknown: (!load_balanced).then(unknown),
            clear_pool: is_shutdown_code(reply.code).then_some(clear),
            request_check: !load_balanced,
            cancel_check: false,
        };
    }
    let network = error.kind == ApplicationErrorKind::Network;
    if network || error.phase != ErrorPhase::AfterHandshake {
        if error.system_overloaded {
            return SdamActions::ignore(IgnoreReason::Overloaded);
        }
        if load_balanced {
            return SdamActions {
                ignored: None,
                mark_unknown: None,
                clear_pool: error.service_id.is_some().then_some(clear),
                request_check: false,
                cancel_check: false,
            };
        }
        return SdamActions {
            ignored: None,
            mark_unknown: Some(unknown()),
            clear_pool: Some(clear),
            request_check: false,
            cancel_check: true,
        };
    }
    SdamActions::ignore(IgnoreReason::NoTopologyImpact)
}
