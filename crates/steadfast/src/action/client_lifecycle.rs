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

#[cfg(feature = "sync")]
impl WarmConnectionPool<'_> {
    /// Warms the pools, blocking until they are ready (the [`sync`](crate::sync) API).
    /// Returns nothing, as the official driver's: inside an async runtime, where it may not
    /// block, it leaves the pools to fill in the background as they always do.
    pub fn run(self) {
        let client = self.client;
        let warmed = crate::sync::runtime::block_on(async {
            client.warm_pools().await;
            Ok(())
        });
        if let Err(refused) = warmed {
            tracing::debug!(%refused, "warm_connection_pool: not waiting inside an async runtime");
        }
    }
}

#[cfg(feature = "sync")]
impl Shutdown {
    /// Shuts the client down, blocking until it is done (the [`sync`](crate::sync) API).
    /// Returns nothing, as the official driver's: inside an async runtime, where it may not
    /// block, it requests the shutdown and returns at once; the shutdown completes in the
    /// background (see the cancel safety of [`Client::shutdown`]).
    pub fn run(self) {
        let Shutdown { client, immediate } = self;
        let attempt = Shutdown {
            client: client.clone(),
            immediate,
        };
        let waited = crate::sync::runtime::block_on(async move {
            attempt.await;
            Ok(())
        });
        if waited.is_err() {
            // Polled once, the future requests the shutdown before it first waits.
            let _context = crate::sync::runtime::enter().ok();
            let _ =
                futures_util::FutureExt::now_or_never(Shutdown { client, immediate }.into_future());
        }
    }
}
