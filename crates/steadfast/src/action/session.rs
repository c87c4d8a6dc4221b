//! `Client::start_session`: [`StartSession`], the action that starts an explicit session.

use std::future::{IntoFuture, Ready, ready};
use std::time::Duration;

use crate::client::Client;
use crate::error::Result;
use crate::options::TransactionOptions;
use crate::session::{ClientSession, SessionOptions};

impl Client {
    /// Starts an explicit session, causally consistent unless its options say otherwise.
    /// Await the returned action, after setting options on it if needed:
    /// `client.start_session().causal_consistency(false).await?`.
    pub fn start_session(&self) -> StartSession<'_> {
        StartSession::new(self)
    }
}

/// Starts an explicit session when awaited; options may be set first.
///
/// ```no_run
/// # async fn demo(client: steadfast::Client) -> steadfast::Result<()> {
/// use steadfast::options::SessionOptions;
///
/// let session = client.start_session().causal_consistency(false).await?;
/// let options = SessionOptions::builder().causal_consistency(true).build();
/// let other = client.start_session().with_options(options).await?;
/// # Ok(())
/// # }
/// ```
///
/// Awaiting it fails with `InvalidArgument` once the client has been shut down.
#[must_use = "a session is started only when the action is awaited"]
#[derive(Debug)]
pub struct StartSession<'a> {
    client: &'a Client,
    options: SessionOptions,
}

impl<'a> StartSession<'a> {
    fn new(client: &'a Client) -> Self {
        StartSession {
            client,
            options: SessionOptions::default(),
        }
    }

    /// Replaces every option with `options` (`None`: the defaults).
    pub fn with_options(mut self, options: impl Into<Option<SessionOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }

    /// Sets [`SessionOptions::causal_consistency`].
    pub fn causal_consistency(mut self, on: bool) -> Self {
        self.options.causal_consistency = Some(on);
        self
    }

    /// Sets [`SessionOptions::default_timeout`].
    pub fn default_timeout(mut self, timeout: Duration) -> Self {
        self.options.default_timeout = Some(timeout);
        self
    }

    /// Sets [`SessionOptions::default_transaction_options`].
    pub fn default_transaction_options(mut self, options: TransactionOptions) -> Self {
        self.options.default_transaction_options = Some(options);
        self
    }

    /// Sets [`SessionOptions::snapshot`].
    pub fn snapshot(mut self, on: bool) -> Self {
        self.options.snapshot = Some(on);
        self
    }

    /// Sets [`SessionOptions::snapshot_time`] (a snapshot session reads at that time).
    pub fn snapshot_time(mut self, time: bson::Timestamp) -> Self {
        self.options.snapshot_time = Some(time);
        self
    }
}

impl IntoFuture for StartSession<'_> {
    type Output = Result<ClientSession>;
    // Starting a session does no I/O, so the future is ready at once.
    type IntoFuture = Ready<Result<ClientSession>>;

    fn into_future(self) -> Self::IntoFuture {
        ready(self.client.open_session(self.options))
    }
}
