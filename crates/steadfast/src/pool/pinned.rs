//! A connection held out of its pool across operations: load-balanced mode pins a cursor's
//! `getMore`s and `killCursors`, and every command of a transaction, to the connection that
//! began them, since only that connection reaches the same service behind the load balancer.

use super::PooledConnection;

/// A connection pinned to a cursor or a transaction. It stays checked out (one
/// ConnectionCheckedOut, one ConnectionCheckedIn for the pin's whole life) and is checked back
/// in when the handle is dropped, closed instead if it is broken or stale.
///
/// The executor leases the connection for each exchange and restores it afterwards; between
/// the two the handle is empty, so a future dropped mid-exchange leaves it empty for good (the
/// connection, broken mid-exchange, was closed) and later users fail instead of reaching
/// another service.
#[derive(Debug)]
pub(crate) struct PinnedConnection {
    connection: Option<PooledConnection>,
}

impl PinnedConnection {
    /// Pins `connection`.
    pub(crate) fn new(connection: PooledConnection) -> Self {
        PinnedConnection {
            connection: Some(connection),
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
}
