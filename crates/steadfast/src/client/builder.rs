//! [`ClientBuilder`]: what a client needs beyond [`ClientOptions`] — values the connection
//! string cannot carry, such as event handlers and a retry policy.

use std::sync::Arc;

use steadfast_core::options::ClientOptions;
use steadfast_core::retry::{RetryBudgetConfig, RetryPolicy, SpecPolicy};

use super::Client;
use crate::conn::config::{ConnectionConfig, ServerApi};
use crate::error::{Error, Result};
use crate::event::{EventEmitter, EventHandler};
use crate::executor::{Executor, ExecutorParts};
use crate::handshake::metadata::Environment;
use crate::runtime::TaskTracker;
use crate::sdam::Topology;

/// Builds a [`Client`] with settings that are not connection-string options.
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
///     .event_handler(events.clone())
///     .build()?;
/// # Ok(())
/// # }
/// ```
#[must_use]
pub struct ClientBuilder {
    options: ClientOptions,
    server_api: Option<ServerApi>,
    handlers: Vec<Arc<dyn EventHandler>>,
    retry_policy: Option<Arc<dyn RetryPolicy>>,
    retry_budget: Option<RetryBudgetConfig>,
}

impl std::fmt::Debug for ClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("options", &self.options)
            .field("server_api", &self.server_api)
            .field("handlers", &self.handlers.len())
            .field("retry_policy", &self.retry_policy)
            .field("retry_budget", &self.retry_budget)
            .finish()
    }
}

impl ClientBuilder {
    /// A builder for a client with `options` and otherwise the defaults: no event handler,
    /// [`SpecPolicy`], no retry budget, no Stable API version.
    pub fn new(options: ClientOptions) -> Self {
        ClientBuilder {
            options,
            server_api: None,
            handlers: Vec::new(),
            retry_policy: None,
            retry_budget: None,
        }
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
        Ok(ClientBuilder::new(super::options_from_uri(uri).await?))
    }

    /// Declares a Stable API version on every command.
    pub fn server_api(mut self, api: ServerApi) -> Self {
        self.server_api = Some(api);
        self
    }

    /// Adds an event handler (CMAP, SDAM, command and retry events). Handlers run on the
    /// driver's tasks, in the order added.
    pub fn event_handler(mut self, handler: Arc<dyn EventHandler>) -> Self {
        self.handlers.push(handler);
        self
    }

    /// The retry policy of every operation that does not set its own (nor inherit one from
    /// its database or collection). The default is [`SpecPolicy`]: exactly what the MongoDB
    /// specifications require. Whatever the policy, the driver never retries what is unsafe;
    /// see the crate's `retries` documentation.
    pub fn retry_policy(mut self, policy: Arc<dyn RetryPolicy>) -> Self {
        self.retry_policy = Some(policy);
        self
    }

    /// Turns on a retry budget shared by every operation of the client: retries beyond the
    /// specifications (by a policy such as `BestEffort`) and overload retries may then add at
    /// most this share of the traffic, so that a fleet of clients cannot multiply an overload.
    /// Off by default: without it the client makes every retry the specifications allow.
    /// [`RetryBudgetConfig::default`] is a reasonable start (10% of the traffic plus 10
    /// retries a second over 10 seconds).
    pub fn retry_budget(mut self, config: RetryBudgetConfig) -> Self {
        self.retry_budget = Some(config);
        self
    }

    /// Creates the client: validates the options, resolves the connection settings and starts
    /// monitoring in the background. Must run inside a tokio runtime.
    ///
    /// # Errors
    /// `InvalidArgument` for invalid options, an unsupported authentication mechanism, an
    /// over-long appName, or outside a tokio runtime; TLS and I/O errors when certificate
    /// files cannot be used.
    pub fn build(self) -> Result<Client> {
        self.options.validate().map_err(|e| {
            Error::configuration(format!("invalid client options: {e}")).with_source(e)
        })?;
        let environment = Environment::current();
        let config = Arc::new(ConnectionConfig::from_options_in(
            &self.options,
            self.server_api,
            &environment,
        )?);
        let tasks = TaskTracker::new()?;
        let events = EventEmitter::new(self.handlers);
        let topology = Topology::new(&self.options, Arc::clone(&config), events.clone())?;
        Ok(Client::from_executor(Executor::new(ExecutorParts {
            options: self.options,
            environment,
            config,
            topology,
            events,
            retry_policy: self.retry_policy.unwrap_or_else(|| Arc::new(SpecPolicy)),
            budget: self.retry_budget,
            tasks,
        })))
    }
}
