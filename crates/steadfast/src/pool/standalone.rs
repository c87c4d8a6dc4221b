//! A connection pool used on its own, outside a client: for the CMAP conformance suite, pool
//! tests, benchmarks and diagnostic tools. Applications use [`crate::Client`], whose topology
//! owns one pool per server.

use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use bson::oid::ObjectId;
use bson::{Document, RawDocumentBuf};
use steadfast_core::options::ClientOptions;
use steadfast_core::pool::PoolOptions;
use steadfast_core::{Deadline, IoLimit, ServerAddress};

use super::{
    ConnectionPool, EstablishmentFailure, PoolCounts, PoolErrorSink, PoolFailure, PoolSettings,
    PooledConnection, ReportApplied, Shared, failure_of,
};
use crate::conn::config::ConnectionConfig;
use crate::error::{CommandError, Error, Result, reply_is_ok};
use crate::event::{EventEmitter, EventListener};

/// One server's connection pool, without a topology. See the [module documentation](self).
///
/// Without SDAM, the pool stands in for it on one point: a connection establishment error
/// clears the pool (as SDAM does for a server whose handshake fails), unless backpressure
/// applies to it (a network error or timeout while connecting or in the hello, which SDAM
/// leaves to the retry layer).
#[derive(Debug)]
pub struct StandalonePool {
    pool: ConnectionPool,
}

/// A connection checked out of a [`StandalonePool`]; checked back in when dropped.
#[derive(Debug)]
pub struct StandaloneConnection {
    inner: PooledConnection,
}

/// What a pool error is, in the CMAP specification's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PoolErrorDetails {
    /// `PoolClosedError`, `PoolClearedError`, `WaitQueueTimeoutError`, or
    /// `ConnectionEstablishmentError`.
    pub spec_type: &'static str,
    /// The specification's message for the error.
    pub message: String,
    /// For an establishment error: whether backpressure applies (it deserves the
    /// `SystemOverloadedError` and `RetryableError` labels).
    pub system_overloaded: bool,
}

/// The CMAP view of `error`, when a pool produced it.
pub fn pool_error_details(error: &Error) -> Option<PoolErrorDetails> {
    let failure = failure_of(error)?;
    Some(PoolErrorDetails {
        spec_type: failure.spec_name(),
        message: failure.to_string(),
        system_overloaded: matches!(
            failure,
            PoolFailure::Establishment {
                system_overloaded: true,
                ..
            }
        ),
    })
}

impl StandalonePool {
    /// Creates a paused pool for `address` with the pool options (`maxPoolSize`,
    /// `minPoolSize`, `maxConnecting`, `maxIdleTimeMS`, `waitQueueTimeoutMS`) and connection
    /// options (timeouts, TLS, credential, appName, compressors) of `options`, reporting CMAP
    /// events to `handlers`. The background task runs every `maintenance_interval`, or only
    /// when asked (after `ready`, a clear, or a connection leaving a pool with a minPoolSize)
    /// when it is `None`. Emits PoolCreated.
    ///
    /// # Errors
    /// As [`crate::Client::with_options`] for options that cannot be honoured (TLS files, an
    /// unsupported authentication mechanism, an over-long appName).
    pub fn new(
        address: ServerAddress,
        options: &ClientOptions,
        handlers: Vec<Arc<dyn EventListener>>,
        maintenance_interval: Option<Duration>,
    ) -> Result<Self> {
        let config = Arc::new(ConnectionConfig::from_options(options, None)?);
        let sink = Arc::new(ClearingSink::default());
        let pool = ConnectionPool::with_settings(
            address,
            PoolOptions::from(options),
            config,
            EventEmitter::new(handlers),
            Some(Arc::clone(&sink) as Arc<dyn PoolErrorSink>),
            PoolSettings {
                tasks: None,
                maintenance_interval,
            },
        );
        let _ = sink.pool.set(Arc::downgrade(&pool.shared));
        Ok(StandalonePool { pool })
    }

    /// The server the pool connects to.
    pub fn address(&self) -> &ServerAddress {
        self.pool.address()
    }

    /// Checks out a connection, waiting at most `waitQueueTimeoutMS` in the queue.
    ///
    /// # Errors
    /// As [`StandalonePool::check_out_until`].
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn check_out(&self) -> Result<StandaloneConnection> {
        self.check_out_until(Deadline::None).await
    }

    /// Checks out a connection before `deadline`'s instant, if it has one (and within
    /// `waitQueueTimeoutMS` in the queue).
    ///
    /// # Errors
    /// PoolClosedError, PoolClearedError (also while the pool is paused), WaitQueueTimeoutError,
    /// or the establishment error of a new connection; [`pool_error_details`] names them.
    ///
    /// # Cancel safety
    /// Cancel safe: dropping the future leaves the wait queue, and a connection delivered to it
    /// or being established for it goes back to the pool.
    pub async fn check_out_until(&self, deadline: Deadline) -> Result<StandaloneConnection> {
        let inner = self.pool.check_out(deadline).await?;
        Ok(StandaloneConnection { inner })
    }

    /// Marks the pool ready (emits PoolReady if it was paused).
    pub fn ready(&self) {
        self.pool.ready();
    }

    /// Clears the pool (emits PoolCleared unless it was already paused), optionally
    /// interrupting in-use connections and cancelling pending ones.
    pub fn clear(&self, interrupt_in_use: bool) {
        let cause = Error::network("the pool was cleared by its owner");
        self.pool.clear(&cause, None, interrupt_in_use);
    }

    /// Clears the connections of one service behind a load balancer (load-balanced pools).
    pub fn clear_service(&self, service_id: ObjectId) {
        let cause = Error::network("the service's connections were cleared by the pool's owner");
        self.pool.clear(&cause, Some(service_id), false);
    }

    /// Closes the pool for good (emits PoolClosed once).
    pub fn close(&self) {
        self.pool.close();
    }

    /// The pool's generation.
    pub fn generation(&self) -> u32 {
        self.pool.generation()
    }

    /// Connections and waiters right now.
    pub fn counts(&self) -> PoolCounts {
        self.pool.counts()
    }

    /// How many of the pool's background tasks (establishments, maintenance) are alive.
    pub fn live_tasks(&self) -> usize {
        self.pool.live_tasks()
    }

    /// Waits until none of the pool's background tasks is alive: after [`StandalonePool::close`],
    /// they all end (pending establishments are cancelled, the maintenance task stops).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_for_tasks(&self) {
        self.pool.wait_for_tasks().await;
    }
}

impl StandaloneConnection {
    /// The connection's id in its pool (from 1, in order of creation).
    pub fn id(&self) -> u64 {
        self.inner.id()
    }

    /// The pool generation the connection belongs to.
    pub fn generation(&self) -> u32 {
        self.inner.generation()
    }

    /// The server's id for this connection, from the handshake.
    pub fn server_connection_id(&self) -> Option<i64> {
        self.inner
            .description()
            .and_then(|d| d.server_connection_id)
    }

    /// Whether a pool clear interrupted the connection.
    pub fn is_interrupted(&self) -> bool {
        self.inner.is_interrupted()
    }

    /// Whether the connection is broken (it will be closed at check-in).
    pub fn is_broken(&self) -> bool {
        self.inner.is_broken()
    }

    /// Runs `command` against database `db` and returns the reply.
    ///
    /// # Errors
    /// A command error when the reply has `ok: 0`; network, timeout and protocol errors; a
    /// retryable PoolClearedError when a clear interrupts the connection.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future midway leaves the connection broken (it is closed
    /// at check-in).
    pub async fn run_command(&mut self, db: &str, mut command: Document) -> Result<Document> {
        command.insert("$db", db);
        let raw = RawDocumentBuf::try_from(&command).map_err(|e| {
            Error::invalid_argument("the command cannot be encoded as BSON").with_source(e)
        })?;
        let reply = self
            .inner
            .send_command(raw, IoLimit::SocketTimeout(None))
            .await?;
        let reply = Document::try_from(reply)
            .map_err(|e| Error::protocol("the reply is not valid BSON").with_source(e))?;
        if reply_is_ok(&reply) {
            Ok(reply)
        } else {
            Err(CommandError::from_reply(&reply).into())
        }
    }

    /// Checks the connection in (the same as dropping it).
    pub fn check_in(self) {
        drop(self);
    }
}

/// Clears the pool after an establishment error of its current generation, as SDAM would.
#[derive(Default)]
struct ClearingSink {
    pool: OnceLock<Weak<Shared>>,
}

impl PoolErrorSink for ClearingSink {
    fn establishment_failed(&self, failure: &EstablishmentFailure<'_>) -> ReportApplied {
        // The clear, if any, happens here and now.
        let shared = self.pool.get().and_then(Weak::upgrade);
        if let Some(shared) = shared.filter(|_| !failure.system_overloaded) {
            let current = shared.lock().state.generation();
            if current == failure.generation {
                shared.clear(failure.error, None, false);
            }
        }
        Box::pin(std::future::ready(()))
    }
}
