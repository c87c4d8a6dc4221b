//! The blocking [`ClientSession`].

use std::ops::{Deref, DerefMut};

use bson::Document;

use crate::session::{AbortTransaction, ClusterTime, CommitTransaction, StartTransaction};

use super::Client;
use super::runtime::InRuntime;

/// A blocking handle to an explicit session (see [`crate::session::ClientSession`]), from
/// `client.start_session().run()`. Dereferences (mutably too) to the async session, so that
/// `.session(&mut session)` on any action takes it and the async session's accessors
/// (`in_transaction`, `options`, ...) are there; `commit_transaction().run()` and
/// `abort_transaction().run()` finish the transaction. Dropping it ends the session (and
/// aborts its transaction in the background, as the async session does).
#[derive(Debug)]
pub struct ClientSession {
    inner: InRuntime<crate::session::ClientSession>,
}

impl From<crate::session::ClientSession> for ClientSession {
    fn from(session: crate::session::ClientSession) -> Self {
        ClientSession {
            inner: InRuntime::new(session),
        }
    }
}

impl Deref for ClientSession {
    type Target = crate::session::ClientSession;

    fn deref(&self) -> &crate::session::ClientSession {
        &self.inner
    }
}

impl DerefMut for ClientSession {
    fn deref_mut(&mut self) -> &mut crate::session::ClientSession {
        &mut self.inner
    }
}

impl ClientSession {
    /// The client this session belongs to.
    pub fn client(&self) -> Client {
        Client::from(self.inner.client())
    }

    /// The session's id (its `lsid`).
    pub fn id(&self) -> &Document {
        self.inner.id()
    }

    /// The highest `$clusterTime` the session has seen, `None` before its first operation
    /// (see [`crate::session::ClientSession::cluster_time`]).
    pub fn cluster_time(&self) -> Option<&ClusterTime> {
        self.inner.cluster_time()
    }

    /// Moves the session's cluster time forward to `to` if the session has none or `to` is
    /// later (see [`crate::session::ClientSession::advance_cluster_time`]).
    pub fn advance_cluster_time(&mut self, to: &ClusterTime) {
        self.inner.advance_cluster_time(to);
    }

    /// Commits the session's transaction (see
    /// [`crate::session::ClientSession::commit_transaction`]); `.run()` blocks until the
    /// server has answered.
    pub fn commit_transaction(&mut self) -> CommitTransaction<'_> {
        self.inner.commit_transaction()
    }

    /// Aborts the session's transaction (see
    /// [`crate::session::ClientSession::abort_transaction`]); `.run()` blocks until it is
    /// done.
    pub fn abort_transaction(&mut self) -> AbortTransaction<'_> {
        self.inner.abort_transaction()
    }

    /// Starts a transaction: `.run()` starts it, `.and_run(context, callback)` runs a whole
    /// transaction with retries (see
    /// [`crate::session::ClientSession::start_transaction`]).
    pub fn start_transaction(&mut self) -> StartTransaction<&mut ClientSession> {
        StartTransaction::new(self)
    }
}
