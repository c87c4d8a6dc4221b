//! The client's own actions: [`WarmConnectionPool`] and [`Shutdown`].

use std::future::IntoFuture;

use futures_util::future::BoxFuture;

use crate::Client;

/// The action of [`Client::warm_connection_pool`]: await it (or `run()` it in the blocking API)
/// to have every usable server's pool hold `min_pool_size` connections.
#[must_use = "an action does nothing until awaited"]
pub struct WarmConnectionPool<'a> {
    pub(crate) client: &'a Client,
}

impl<'a> IntoFuture for WarmConnectionPool<'a> {
    type Output = ();
    type IntoFuture = BoxFuture<'a, ()>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.client.warm_pools())
    }
}

/// The action of [`Client::shutdown`]: await it (or `run()` it in the blocking API) to shut
/// the client down.
#[must_use = "an action does nothing until awaited"]
pub struct Shutdown {
    pub(crate) client: Client,
    pub(crate) immediate: bool,
}

impl Shutdown {
    /// With `true`, the shutdown neither ends the pooled server sessions (`endSessions`) nor
    /// waits for the client's own background tasks (a dropped cursor's `killCursors`); the
    /// monitors and pools still stop and the sockets close. The server then times the sessions
    /// and cursors out itself. Defaults to `false`.
    pub fn immediate(mut self, immediate: bool) -> Self {
        self.immediate = immediate;
        self
    }
}

impl IntoFuture for Shutdown {
    type Output = ();
    type IntoFuture = BoxFuture<'static, ()>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            self.client.executor().shutdown_with(self.immediate).await;
        })
    }
}
