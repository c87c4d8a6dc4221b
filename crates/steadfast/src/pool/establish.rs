//! Establishing connections on spawned tasks, and reporting their failures to SDAM.

use std::sync::Arc;

use bson::oid::ObjectId;
use steadfast_core::pool::{
    CheckOutFailedReason, ConnectionClosedReason, ConnectionId, EstablishedDecision, PoolEvent,
    WaiterId,
};
use steadfast_core::sdam::ErrorPhase;
use steadfast_core::{IoLimit, ServerAddress};
use tracing::Instrument as _;

use super::{DIAGNOSTIC_TARGET, Establishing, Inner, Shared, errors};
use crate::conn::Connection;
use crate::conn::config::ConnectionConfig;
use crate::error::Error;
use crate::runtime;

/// A connection establishment that failed, as the pool reports it to SDAM.
#[derive(Debug)]
#[allow(
    dead_code,
    reason = "the topology worker (src/sdam, landing in parallel) reads every field"
)]
pub(crate) struct EstablishmentFailure<'a> {
    /// The server.
    pub(crate) address: &'a ServerAddress,
    /// What went wrong (its source is a [`super::PoolFailure::Establishment`]).
    pub(crate) error: &'a Error,
    /// The pool generation the connection was created in.
    pub(crate) generation: u32,
    /// Whether it failed while connecting or in the initial hello, or during authentication.
    pub(crate) phase: ErrorPhase,
    /// Whether backpressure applies (CMAP "backpressure-enabled"): a network error or timeout
    /// while connecting or during the hello, which deserves the `SystemOverloadedError` and
    /// `RetryableError` labels and must not make SDAM clear the pool.
    pub(crate) system_overloaded: bool,
    /// The service the handshake reached (load-balanced mode, an authentication error): SDAM
    /// clears that service's connections only.
    pub(crate) service_id: Option<ObjectId>,
}

/// Where a pool reports connection-establishment errors (SDAM's application-error handling
/// for errors before the handshake completed). The topology worker implements it.
///
/// The pool reports every establishment error, for check-outs and for background population
/// alike; whoever checks out must not report a check-out error again.
pub(crate) trait PoolErrorSink: Send + Sync {
    /// A connection of `failure.generation` could not be established. Called without any pool
    /// lock held. The pool awaits the returned future before it emits the connection's
    /// ConnectionClosed event, so that the clear this error causes comes first (CMAP and SDAM:
    /// "pool is cleared before connection is closed").
    fn establishment_failed(&self, failure: &EstablishmentFailure<'_>) -> ReportApplied;
}

/// Resolves once an establishment error's report has been acted on.
pub(crate) type ReportApplied = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// An establishment error and the facts SDAM needs about it.
struct Failed {
    error: Error,
    phase: ErrorPhase,
    system_overloaded: bool,
    /// The `serviceId` of the handshake, when it completed.
    service_id: Option<ObjectId>,
}

/// Opens, handshakes and authenticates connection `id`. The whole establishment is bounded by
/// connectTimeoutMS (CMAP establishment, including the handshake).
async fn establish(
    id: ConnectionId,
    address: &ServerAddress,
    config: &ConnectionConfig,
) -> std::result::Result<Connection, Failed> {
    // The handshake and authentication are bounded by connectTimeoutMS, and each of their
    // reads and writes by socketTimeoutMS as well.
    let limit = IoLimit::SocketTimeout(config.connect_timeout.map(|t| runtime::now() + t));
    let stream = match config.open_stream(address).await {
        Ok(stream) => stream,
        Err(error) => {
            // TLS certificate problems and configuration errors are never due to overload;
            // network errors and timeouts (including I/O errors inside the TLS handshake,
            // which the stream reports as network errors) may be.
            let system_overloaded = error.is_network_error();
            return Err(Failed {
                error,
                phase: ErrorPhase::Hello,
                system_overloaded,
                service_id: None,
            });
        }
    };
    let mut connection = Connection::new(id, address.clone(), stream, config.socket_timeout);
    if let Err(error) = crate::handshake::perform(&mut connection, config, limit).await {
        // The stream description is recorded as soon as the hello succeeds: with one, the
        // error came from authentication, which backpressure does not cover.
        let phase = if connection.description().is_some() {
            ErrorPhase::Authentication
        } else {
            ErrorPhase::Hello
        };
        let system_overloaded = phase == ErrorPhase::Hello && error.is_network_error();
        return Err(Failed {
            error: error.with_address(address),
            phase,
            system_overloaded,
            service_id: connection.description().and_then(|d| d.service_id),
        });
    }
    Ok(connection)
}

/// The task establishing connection `id`, created in `generation`.
async fn run(shared: Arc<Shared>, id: ConnectionId, generation: u32) {
    match establish(id, &shared.address, &shared.config).await {
        Ok(connection) => shared.established(connection),
        Err(failed) => {
            tracing::debug!(target: DIAGNOSTIC_TARGET, address = %shared.address, connection = id,
                error = %failed.error, system_overloaded = failed.system_overloaded,
                "connection establishment failed");
            let error =
                errors::establishment(&shared.address, failed.error, failed.system_overloaded);
            if let Some(sink) = &shared.sink {
                // Once the handshake named a service, the connection belongs to that
                // service's generation (load-balancers, "Initial Handshake Errors").
                let generation = match failed.service_id {
                    Some(id) => shared.lock().state.generation_for(Some(&id)),
                    None => generation,
                };
                let applied = sink.establishment_failed(&EstablishmentFailure {
                    address: &shared.address,
                    error: &error,
                    generation,
                    phase: failed.phase,
                    system_overloaded: failed.system_overloaded,
                    service_id: failed.service_id,
                });
                // If the clear cancels this connection meanwhile, the clear closes it (and
                // this task ends here).
                applied.await;
            }
            shared.establishment_failed(id, error);
        }
    }
}

impl Shared {
    /// Emits ConnectionCreated for a connection the state machine just created (for `waiter`,
    /// or in the background) and starts establishing it.
    pub(super) fn start_establishing(
        self: &Arc<Self>,
        inner: &mut Inner,
        id: ConnectionId,
        waiter: Option<WaiterId>,
    ) {
        self.emit(|| PoolEvent::ConnectionCreated {
            address: self.address.clone(),
            connection_id: id,
        });
        let generation = inner
            .state
            .generation_of(id)
            .unwrap_or_else(|| inner.state.generation());
        let task = match self.tasks() {
            Ok(tasks) => {
                let span = tracing::debug_span!(target: DIAGNOSTIC_TARGET, "establish",
                    address = %self.address, connection = id, generation);
                let task = run(Arc::clone(self), id, generation).instrument(span);
                Some(tasks.spawn(task).abort_handle())
            }
            Err(error) => {
                // Outside a tokio runtime: fail it here. (The task would lock the pool; the
                // lock is held here, which is why the entry is recorded first.)
                inner.establishing.insert(
                    id,
                    Establishing {
                        created: runtime::now(),
                        waiter,
                        task: None,
                    },
                );
                self.establishment_failed_locked(inner, id, error);
                return;
            }
        };
        // The task cannot report before this entry exists: it needs the lock held here.
        inner.establishing.insert(
            id,
            Establishing {
                created: runtime::now(),
                waiter,
                task,
            },
        );
    }

    /// A connection finished establishing: to its check-out, to the pool, or closed.
    fn established(self: &Arc<Self>, connection: Connection) {
        let id = connection.id();
        let mut inner = self.lock();
        let Some(entry) = inner.establishing.remove(&id) else {
            // Cancelled by a clear or a close, which already reported it closed.
            return;
        };
        let service_id = connection.description().and_then(|d| d.service_id);
        let now = runtime::now();
        let decision = inner.state.established(id, service_id, now);
        if decision != EstablishedDecision::Forgotten {
            let duration = now.saturating_duration_since(entry.created);
            self.emit(|| PoolEvent::ConnectionReady {
                address: self.address.clone(),
                connection_id: id,
                duration,
            });
        }
        match decision {
            EstablishedDecision::HandToWaiter => match entry.waiter {
                Some(waiter) => self.deliver(&mut inner, waiter, connection),
                None => self.return_unclaimed(&mut inner, connection),
            },
            EstablishedDecision::MakeAvailable => {
                inner.idle.insert(id, connection);
            }
            EstablishedDecision::Close(reason) => self.emit_closed(id, reason),
            EstablishedDecision::Forgotten => {}
        }
        self.service(&mut inner);
        if self.options.min_pool_size > 0 {
            // A slot of maxConnecting is free: minPoolSize may need another connection.
            self.wake_maintenance();
        }
        self.settled.notify_waiters();
    }

    /// A connection failed to establish (already reported to SDAM).
    fn establishment_failed(self: &Arc<Self>, id: ConnectionId, error: Error) {
        let mut inner = self.lock();
        self.establishment_failed_locked(&mut inner, id, error);
    }

    fn establishment_failed_locked(
        self: &Arc<Self>,
        inner: &mut Inner,
        id: ConnectionId,
        error: Error,
    ) {
        let Some(entry) = inner.establishing.remove(&id) else {
            return;
        };
        inner.failed_establishments = inner.failed_establishments.saturating_add(1);
        self.settled.notify_waiters();
        if inner.state.establish_failed(id) {
            self.emit_with_error(
                || PoolEvent::ConnectionClosed {
                    address: self.address.clone(),
                    connection_id: id,
                    reason: ConnectionClosedReason::Error,
                },
                Some(&error),
            );
        }
        if let Some(waiter) = entry.waiter {
            self.fail_waiter(inner, waiter, error, CheckOutFailedReason::ConnectionError);
        }
        // Not waking maintenance: retrying a failing server at once would hammer it; the next
        // regular run (or SDAM, which clears the pool) decides.
        self.service(inner);
    }
}
