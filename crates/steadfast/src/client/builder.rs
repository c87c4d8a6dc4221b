//! [`ClientBuilder`]: a [`Client`] made from [`ClientOptions`] plus steadfast's settings, set
//! by chained calls.

use std::sync::Arc;

use steadfast_core::retry::{RetryBudgetConfig, RetryPolicy};

use super::Client;
use super::options::ClientOptions;
use crate::conn::config::ServerApi;
use crate::error::Result;
use crate::event::EventListener;

/// Builds a [`Client`]: a shorthand for setting steadfast's own fields of [`ClientOptions`]
/// and calling [`Client::with_options`].
///
/// ```no_run
/// # async fn demo() -> steadfast::Result<()> {
/// use std::sync::Arc;
/// use steadfast::retries::BestEffort;
/// use steadfast::event::EventRecorder;
///
/// let events = Arc::new(EventRecorder::new());
/// let client = steadfast::ClientBuilder::from_uri_str("mongodb://127.0.0.1/?replicaSet=rs0")
///     .await?
///     .retry_policy(Arc::new(BestEffort::default()))
///     .event_listener(events.clone())
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[must_use]
#[derive(Debug)]
pub struct ClientBuilder {
    options: ClientOptions,
}

impl ClientBuilder {
    /// A builder for a client with `options`.
    pub fn new(options: ClientOptions) -> Self {
        ClientBuilder { options }
    }

    /// A builder for the options of a connection string (`mongodb+srv://` strings are
    /// resolved through DNS now).
    ///
    /// # Errors
    /// `InvalidArgument` for an invalid string, `DnsResolve` for unusable DNS records.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn from_uri_str(uri: &str) -> Result<Self> {
        Ok(ClientBuilder::new(ClientOptions::parse(uri).await?))
    }

    /// Declares a Stable API version on every command ([`ClientOptions::server_api`]).
    pub fn server_api(mut self, api: ServerApi) -> Self {
        self.options.server_api = Some(api);
        self
    }

    /// Adds an event listener ([`ClientOptions::event_listeners`]).
    pub fn event_listener(mut self, listener: Arc<dyn EventListener>) -> Self {
        self.options.event_listeners.push(listener);
        self
    }

    /// Sets the client's default retry policy ([`ClientOptions::retry_policy`]).
    pub fn retry_policy(mut self, policy: Arc<dyn RetryPolicy>) -> Self {
        self.options.retry_policy = Some(policy);
        self
    }

    /// Turns on a retry budget ([`ClientOptions::retry_budget`]);
    /// [`RetryBudgetConfig::default`] is a reasonable start (10% of the traffic plus 10
    /// retries a second over 10 seconds).
    pub fn retry_budget(mut self, config: RetryBudgetConfig) -> Self {
        self.options.retry_budget = Some(config);
        self
    }

    /// Creates the client, as [`Client::with_options`].
    ///
    /// # Errors
    /// As [`Client::with_options`].
    pub fn build(self) -> Result<Client> {
        Client::with_options(self.options)
    }
}
