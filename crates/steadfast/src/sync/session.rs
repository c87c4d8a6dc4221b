//! The blocking [`ClientSession`].

use std::ops::{Deref, DerefMut};

use crate::session::StartTransaction;

use super::Client;
use super::runtime::InRuntime;

/// A blocking handle to an explicit session (see [`crate::session::ClientSession`]), from
/// `client.start_session().run()`. Dereferences (mutably too) to the async session, so that
/// `.session(&mut session)` on any action takes it and its accessors (`id`,
/// `in_transaction`, `cluster_time`, ...) are there; `commit_transaction().run()` and
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

    /// Starts a transaction: `.run()` starts it, `.and_run(context, callback)` runs a whole
    /// transaction with retries (see
    /// [`crate::session::ClientSession::start_transaction`]).
    pub fn start_transaction(&mut self) -> StartTransaction<&mut ClientSession> {
        StartTransaction::new(self)
    }
}
