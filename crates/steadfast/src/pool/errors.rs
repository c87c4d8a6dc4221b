//! The errors a pool returns, and how callers recognise them.
//!
//! Every error the pool produces carries a [`PoolFailure`] as its source, which
//! [`failure_of`] reads back: the executor uses it to classify a failed check-out
//! (`PoolCleared` is retryable and must never mark the server Unknown; an establishment error
//! says whether backpressure applies) without parsing messages.
//!
//! The error's kind is the closest existing one: a paused or cleared pool and an interrupted
//! connection are non-timeout network errors (as the CMAP specification calls them), a
//! closed pool too (the server left the topology: another server may serve a retry), the
//! wait-queue timeout is a timeout, and an establishment error keeps the kind and labels of
//! what went wrong.

use std::fmt;

use steadfast_core::{Label, ServerAddress};

use crate::error::Error;

/// What the pool says about an error it returned.
#[derive(Clone, Debug)]
pub(crate) enum PoolFailure {
    /// Check-out from a closed pool (PoolClosedError).
    Closed,
    /// Check-out from a paused pool, or a waiter evicted by a clear (PoolClearedError).
    Cleared {
        /// The server whose pool was cleared.
        address: ServerAddress,
        /// The error that cleared the pool.
        cause: String,
    },
    /// The wait-queue timeout or the operation's deadline passed while checking out
    /// (WaitQueueTimeoutError).
    WaitQueueTimeout,
    /// An in-use connection was interrupted by a clear with `interruptInUseConnections` (a
    /// PoolClearedError too: retryable).
    Interrupted {
        /// The server whose pool was cleared.
        address: ServerAddress,
    },
    /// Establishing a new connection failed.
    Establishment {
        /// Whether the failure may be due to server overload: a network error or timeout while
        /// connecting or during the initial hello (never during authentication, never a TLS
        /// certificate problem). Such errors deserve the `SystemOverloadedError` and
        /// `RetryableError` labels.
        system_overloaded: bool,
        /// What went wrong.
        cause: Error,
    },
}

impl PoolFailure {
    /// The CMAP specification's name for the error type.
    pub(crate) fn spec_name(&self) -> &'static str {
        match self {
            PoolFailure::Closed => "PoolClosedError",
            PoolFailure::Cleared { .. } | PoolFailure::Interrupted { .. } => "PoolClearedError",
            PoolFailure::WaitQueueTimeout => "WaitQueueTimeoutError",
            PoolFailure::Establishment { .. } => "ConnectionEstablishmentError",
        }
    }
}

impl fmt::Display for PoolFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The messages are the ones the CMAP specification gives for each error.
        match self {
            PoolFailure::Closed => {
                f.write_str("Attempted to check out a connection from closed connection pool")
            }
            PoolFailure::Cleared { address, cause } => write!(
                f,
                "Connection pool for {address} was cleared because another operation failed with: {cause}"
            ),
            PoolFailure::WaitQueueTimeout => {
                f.write_str("Timed out while checking out a connection from connection pool")
            }
            PoolFailure::Interrupted { address } => write!(
                f,
                "Connection to {address} interrupted due to server monitor timeout"
            ),
            PoolFailure::Establishment { cause, .. } => {
                write!(f, "establishing a connection failed: {cause}")
            }
        }
    }
}

impl std::error::Error for PoolFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PoolFailure::Establishment { cause, .. } => Some(cause),
            _ => None,
        }
    }
}

/// The pool's verdict on `error`, if the pool produced it.
pub(crate) fn failure_of(error: &Error) -> Option<&PoolFailure> {
    std::error::Error::source(error)?.downcast_ref::<PoolFailure>()
}

pub(super) fn pool_closed(address: &ServerAddress) -> Error {
    Error::network("the connection pool is closed")
        .with_address(address)
        .with_source(PoolFailure::Closed)
}

pub(super) fn pool_cleared(address: &ServerAddress, cause: &str) -> Error {
    Error::pool_cleared("the connection pool was cleared")
        .with_address(address)
        .with_source(PoolFailure::Cleared {
            address: address.clone(),
            cause: cause.to_string(),
        })
}

/// `detail` replaces the default message (a load-balanced pool's counts of pinned
/// connections).
pub(super) fn wait_queue_timeout(address: &ServerAddress, detail: Option<String>) -> Error {
    let message =
        detail.unwrap_or_else(|| "while checking out a connection from the pool".to_string());
    Error::timeout(message)
        .with_address(address)
        .with_source(PoolFailure::WaitQueueTimeout)
}

pub(super) fn interrupted(address: &ServerAddress) -> Error {
    Error::pool_cleared("the connection was interrupted by a pool clear")
        .with_address(address)
        .with_source(PoolFailure::Interrupted {
            address: address.clone(),
        })
}

/// Wraps an establishment error, keeping its kind and labels, with the pool's verdict; when
/// backpressure applies, adds the `SystemOverloadedError` and `RetryableError` labels (CMAP
/// "backpressure-enabled").
pub(super) fn establishment(
    address: &ServerAddress,
    cause: Error,
    system_overloaded: bool,
) -> Error {
    let mut labels = cause.label_set().clone();
    if system_overloaded {
        labels.insert(Label::SystemOverloadedError);
        labels.insert(Label::RetryableError);
    }
    Error::new(cause.kind().clone())
        .with_label_set(&labels)
        .with_address(address)
        .with_source(PoolFailure::Establishment {
            system_overloaded,
            cause,
        })
}
