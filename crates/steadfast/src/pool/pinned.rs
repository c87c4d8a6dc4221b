//! A connection held out of its pool across operations: load-balanced mode pins a cursor's
//! `getMore`s and `killCursors`, and every command of a transaction, to the connection that
//! began them, since only that connection reaches the same service behind the load balancer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use steadfast_core::Deadline;

use super::{Inner, PooledConnection, Shared};

/// A connection pinned to a cursor or a transaction. It stays checked out (one
/// ConnectionCheckedOut, one ConnectionCheckedIn for the pin's whole life) and is checked back
/// in when the handle is dropped, closed instead if it is broken or stale.
///
/// The executor leases the connection for each exchange and restores it afterwards; between
/// the two the handle is empty, so a future dropped mid-exchange leaves it empty for good (the
/// connection, broken mid-exchange, was closed) and later users fail instead of reaching
/// another service.
pub(crate) struct PinnedConnection {
    connection: Option<PooledConnection>,
    purpose: PinPurpose,
    /// The pool whose pin counts include this pin (kept even once the connection is lost).
    pool: Arc<Shared>,
}

impl std::fmt::Debug for PinnedConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PinnedConnection")
            .field("connection", &self.connection)
            .field("purpose", &self.purpose)
            .finish()
    }
}

impl PinnedConnection {
    /// Pins `connection` for `purpose`.
    pub(crate) fn new(connection: PooledConnection, purpose: PinPurpose) -> Self {
        let pool = Arc::clone(connection.shared());
        pool.pinned.counter(purpose).fetch_add(1, Ordering::SeqCst);
        PinnedConnection {
            connection: Some(connection),
            purpose,
            pool,
        }
    }

    /// Takes the connection out for one exchange; [`PinnedConnection::restore`] puts it back.
    /// `None` when it was lost (see the type's documentation).
    pub(crate) fn lease(&mut self) -> Option<PooledConnection> {
        self.connection.take()
    }

    /// Puts back a leased connection, even a broken one: the pin's owner decides when to
    /// release it (a cursor keeps a broken connection until it is closed).
    pub(crate) fn restore(&mut self, connection: PooledConnection) {
        self.connection = Some(connection);
    }

    /// Whether it holds a connection that can carry another command: false once a network
    /// error broke it, a pool clear interrupted it, or it was lost.
    pub(crate) fn is_usable(&self) -> bool {
        self.connection
            .as_ref()
            .is_some_and(|c| c.is_reusable() && !c.is_interrupted())
    }

    /// Whether it is usable, or only owes the reply of a command that timeoutMS left unread
    /// (the connection is otherwise intact: see [`PinnedConnection::recover`]).
    pub(crate) fn is_recoverable(&self) -> bool {
        self.is_usable()
            || self
                .connection
                .as_ref()
                .is_some_and(|c| c.has_late_reply() && !c.is_interrupted())
    }

    /// Reads and discards the reply a timed-out command left unread on the connection (until
    /// `deadline`), so that it can carry another command: a cursor whose `getMore` timed out
    /// can still be killed on its pinned connection, the only one that reaches its service.
    /// Returns whether the connection is usable now.
    ///
    /// # Cancel safety
    /// Not cancel safe: dropped midway, the drain leaves the connection broken.
    pub(crate) async fn recover(&mut self, deadline: Deadline) -> bool {
        if let Some(connection) = self.connection.as_mut() {
            if connection.has_late_reply() && !connection.is_interrupted() {
                connection.drain_late_reply(deadline).await;
            }
        }
        self.is_usable()
    }
}

/// Why a connection is pinned (load-balancers, "Connection Tracking").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PinPurpose {
    /// A cursor's `getMore`s and `killCursors`.
    Cursor,
    /// A transaction's commands.
    Transaction,
}

/// How many of a pool's checked-out connections are pinned, by purpose; the rest serve other
/// operations. A wait-queue timeout reports them.
#[derive(Debug, Default)]
pub(super) struct PinCounts {
    cursors: AtomicUsize,
    transactions: AtomicUsize,
}

impl PinCounts {
    fn counter(&self, purpose: PinPurpose) -> &AtomicUsize {
        match purpose {
            PinPurpose::Cursor => &self.cursors,
            PinPurpose::Transaction => &self.transactions,
        }
    }
}

impl Shared {
    /// The WaitQueueTimeoutError message of a load-balanced pool (load-balancers, "Connection
    /// Tracking"); `None` for other pools, whose message says nothing of pins.
    pub(super) fn pinned_detail(&self, inner: &Inner) -> Option<String> {
        if !self.options.load_balanced {
            return None;
        }
        let cursors = self.pinned.cursors.load(Ordering::SeqCst);
        let transactions = self.pinned.transactions.load(Ordering::SeqCst);
        let others = inner
            .in_use
            .len()
            .saturating_sub(cursors)
            .saturating_sub(transactions);
        let max = self
            .options
            .max_pool_size
            .map_or_else(|| "unlimited".to_string(), |n| n.to_string());
        Some(format!(
            "Timeout waiting for connection from the connection pool. maxPoolSize: {max}, connections in use by cursors: {cursors}, connections in use by transactions: {transactions}, connections in use by other operations: {others}"
        ))
    }
}

impl Drop for PinnedConnection {
    fn drop(&mut self) {
        // Uncounted before the connection is checked in, so a waiter served by that check-in
        // never sees it counted twice.
        self.pool
            .pinned
            .counter(self.purpose)
            .fetch_sub(1, Ordering::SeqCst);
        drop(self.connection.take());
    }
}
