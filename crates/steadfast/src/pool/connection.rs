//! A checked-out connection, and the token that lets a pool clear interrupt it.

use std::ops::{Deref, DerefMut};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bson::RawDocumentBuf;
use steadfast_core::IoLimit;
use steadfast_wire::OpMsg;
use tokio::sync::Notify;

use super::Shared;
use super::errors;
use crate::conn::Connection;
use crate::error::Result;

/// Set by a clear with `interruptInUseConnections`; the connection's holder observes it.
#[derive(Clone, Debug, Default)]
pub(super) struct InterruptToken(Arc<InterruptState>);

#[derive(Debug, Default)]
struct InterruptState {
    interrupted: AtomicBool,
    notify: Notify,
}

impl InterruptToken {
    /// Interrupts the connection: an exchange under way fails at once, later ones refuse.
    pub(super) fn interrupt(&self) {
        self.0.interrupted.store(true, Ordering::SeqCst);
        self.0.notify.notify_waiters();
    }

    /// Whether the connection was interrupted.
    pub(super) fn is_interrupted(&self) -> bool {
        self.0.interrupted.load(Ordering::SeqCst)
    }

    /// Resolves once the connection is interrupted.
    pub(super) async fn interrupted(&self) {
        loop {
            // Register before checking, so an interrupt in between still wakes us.
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if self.is_interrupted() {
                return;
            }
            notified.await;
        }
    }
}

/// A connection's pool generation and, in load-balanced mode, the service (`serviceId` from
/// its handshake) that generation belongs to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct ConnectionGeneration {
    /// The generation the connection was created in (its service's, when load balanced).
    pub(crate) number: u32,
    /// The service behind the load balancer the connection reaches.
    pub(crate) service_id: Option<bson::oid::ObjectId>,
}

/// A connection checked out of a [`super::ConnectionPool`]. Dereferences to the
/// [`Connection`]; it is checked back in when dropped (closed instead if it is broken, stale,
/// or the pool is closed).
///
/// Use its own [`PooledConnection::send_command`] and [`PooledConnection::send_message`]
/// (which shadow the connection's): they fail promptly with a retryable PoolClearedError when
/// a clear interrupts the connection.
pub(crate) struct PooledConnection {
    /// `Some` until `drop` hands it back.
    connection: Option<Connection>,
    generation: u32,
    interrupt: InterruptToken,
    pool: Arc<Shared>,
}

impl std::fmt::Debug for PooledConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PooledConnection")
            .field("connection", &self.connection)
            .field("generation", &self.generation)
            .field("interrupted", &self.interrupt.is_interrupted())
            .finish()
    }
}

impl PooledConnection {
    pub(super) fn new(
        connection: Connection,
        generation: u32,
        interrupt: InterruptToken,
        pool: Arc<Shared>,
    ) -> Self {
        PooledConnection {
            connection: Some(connection),
            generation,
            interrupt,
            pool,
        }
    }

    /// The pool generation the connection belongs to (its service's, when load balanced): SDAM
    /// error handling compares it with the pool's.
    pub(crate) fn generation(&self) -> u32 {
        self.generation
    }

    /// The generation and service of the connection, for SDAM error handling: in
    /// load-balanced mode a clear concerns only the connection's service.
    pub(crate) fn service_generation(&self) -> ConnectionGeneration {
        ConnectionGeneration {
            number: self.generation,
            service_id: self
                .connection
                .as_ref()
                .and_then(|c| c.description())
                .and_then(|d| d.service_id),
        }
    }

    /// The pool the connection belongs to.
    pub(super) fn shared(&self) -> &Arc<Shared> {
        &self.pool
    }

    /// Whether a pool clear interrupted this connection.
    pub(crate) fn is_interrupted(&self) -> bool {
        self.interrupt.is_interrupted()
    }

    /// [`Connection::send_command`], failing promptly if a clear interrupts the connection.
    ///
    /// # Errors
    /// As [`Connection::send_command`]; a retryable PoolClearedError (a network error) when
    /// the connection was interrupted (it is then broken and closed at check-in).
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future midway leaves the connection broken.
    pub(crate) async fn send_command(
        &mut self,
        command: RawDocumentBuf,
        limit: IoLimit,
    ) -> Result<RawDocumentBuf> {
        let reply = self.send_message(OpMsg::new(command), limit).await?;
        Ok(reply.body)
    }

    /// [`Connection::send_message`], failing promptly if a clear interrupts the connection.
    ///
    /// # Errors
    /// As [`PooledConnection::send_command`].
    ///
    /// # Cancel safety
    /// Not cancel safe: dropping the future midway leaves the connection broken.
    pub(crate) async fn send_message(&mut self, message: OpMsg, limit: IoLimit) -> Result<OpMsg> {
        // Borrowed field by field: nothing is cloned for the exchange.
        let PooledConnection {
            connection,
            interrupt,
            pool,
            ..
        } = self;
        if interrupt.is_interrupted() {
            return Err(errors::interrupted(&pool.address));
        }
        let connection = connection
            .as_mut()
            .expect("a pooled connection holds its connection until dropped");
        tokio::select! {
            biased;
            () = interrupt.interrupted() => {
                // The exchange's future is dropped here, which leaves the connection writing
                // or awaiting a reply, hence not reusable: it is closed when checked in.
                Err(errors::interrupted(&pool.address))
            }
            reply = connection.send_message(message, limit) => reply,
        }
    }

    fn connection_ref(&self) -> &Connection {
        self.connection
            .as_ref()
            .expect("a pooled connection holds its connection until dropped")
    }

    fn connection_mut(&mut self) -> &mut Connection {
        self.connection
            .as_mut()
            .expect("a pooled connection holds its connection until dropped")
    }
}

impl Deref for PooledConnection {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.connection_ref()
    }
}

impl DerefMut for PooledConnection {
    fn deref_mut(&mut self) -> &mut Connection {
        self.connection_mut()
    }
}

impl Drop for PooledConnection {
    fn drop(&mut self) {
        if let Some(mut connection) = self.connection.take() {
            if self.interrupt.is_interrupted() {
                // An exchange cut short by a clear failed with an error: the connection is
                // closed as broken, not as dropped by a cancelled operation.
                connection.mark_broken();
            }
            if connection.has_late_reply() && !self.interrupt.is_interrupted() {
                // The reply timeoutMS left unread is read off the stream in the background,
                // and the connection checked in after it, instead of being closed.
                self.pool
                    .check_in_after_late_reply(connection, self.interrupt.clone());
                return;
            }
            let healthy = connection.is_reusable() && !self.interrupt.is_interrupted();
            self.pool.check_in(connection, healthy);
        }
    }
}
