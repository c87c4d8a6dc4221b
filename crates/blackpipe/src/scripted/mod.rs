//! The scripted server: a test receives requests and decides each reply, like MockupDB, but
//! safe under concurrency.
//!
//! Each request is routed on arrival, in this order:
//! 1. the test's rules ([`ScriptedServer::rule`]), in installation order;
//! 2. the default responders for hello, ping, buildInfo and endSessions ([`DefaultResponders`]);
//! 3. the test: a pending [`ScriptedServer::next_request`] whose matcher fits, or else a queue
//!    that later `next_request` calls draw from, oldest first.
//!
//! Every request is recorded on arrival ([`ScriptedServer::requests`]). A request the test
//! never answers leaves its client waiting, which is the point of a hang test; the server
//! closes every connection when dropped.

mod defaults;
mod error;
mod matcher;
mod pending;
mod record;
mod rules;
mod state;

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bson::Document;

pub use defaults::{DefaultResponders, standalone_hello};
pub use error::ScriptError;
pub use matcher::Matcher;
pub use pending::{HeldReply, PendingRequest};
pub use record::{HandledBy, RecordedRequest};
pub use rules::{Responder, RuleBuilder, RuleHandle};

use crate::server::{ConnectionId, Server, ServerConfig};
use state::{Claim, Script, ScriptHandler};

/// How a [`ScriptedServer`] starts.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ScriptedConfig {
    /// Listener settings: port, maximum message size, supported compressors.
    pub server: ServerConfig,
    /// The hello document the default responder answers with ([`standalone_hello`]).
    pub hello: Document,
    /// Which default responders are on.
    pub defaults: DefaultResponders,
    /// How long [`ScriptedServer::next_request`] and [`ScriptedServer::wait_for_requests`] wait.
    pub receive_timeout: Duration,
}

impl Default for ScriptedConfig {
    fn default() -> Self {
        Self {
            server: ServerConfig::default(),
            hello: standalone_hello(),
            defaults: DefaultResponders::default(),
            receive_timeout: Duration::from_secs(10),
        }
    }
}

impl ScriptedConfig {
    /// Listens on `port` (0 for an ephemeral port).
    #[must_use]
    pub fn with_port(mut self, port: u16) -> Self {
        self.server.port = port;
        self
    }

    /// Replaces the listener settings.
    #[must_use]
    pub fn with_server(mut self, server: ServerConfig) -> Self {
        self.server = server;
        self
    }

    /// Replaces the hello document.
    #[must_use]
    pub fn with_hello(mut self, hello: Document) -> Self {
        self.hello = hello;
        self
    }

    /// Chooses the default responders.
    #[must_use]
    pub fn with_defaults(mut self, defaults: DefaultResponders) -> Self {
        self.defaults = defaults;
        self
    }

    /// Sets how long the server waits for requests on the test's behalf.
    #[must_use]
    pub fn with_receive_timeout(mut self, timeout: Duration) -> Self {
        self.receive_timeout = timeout;
        self
    }
}

/// A wire-protocol server driven by the test. See the [module documentation](self).
#[derive(Debug)]
pub struct ScriptedServer {
    server: Server,
    script: Arc<Script>,
}

impl ScriptedServer {
    /// Starts on an ephemeral port of 127.0.0.1 with the default configuration.
    ///
    /// # Errors
    /// The I/O error if the listener cannot be bound.
    pub async fn start() -> io::Result<Self> {
        Self::start_with(ScriptedConfig::default()).await
    }

    /// Starts on `port` of 127.0.0.1.
    ///
    /// # Errors
    /// The I/O error if the port cannot be bound.
    pub async fn start_on(port: u16) -> io::Result<Self> {
        Self::start_with(ScriptedConfig::default().with_port(port)).await
    }

    /// Starts with `config`.
    ///
    /// # Errors
    /// The I/O error if the listener cannot be bound.
    pub async fn start_with(config: ScriptedConfig) -> io::Result<Self> {
        let script = Arc::new(Script::new(
            config.hello,
            config.defaults,
            config.receive_timeout,
        ));
        let handler = Arc::new(ScriptHandler {
            script: Arc::clone(&script),
        });
        let server = Server::bind(config.server, handler).await?;
        Ok(Self { server, script })
    }

    /// The listening address.
    pub fn address(&self) -> SocketAddr {
        self.server.local_addr()
    }

    /// The listening port.
    pub fn port(&self) -> u16 {
        self.address().port()
    }

    /// `mongodb://127.0.0.1:PORT/?directConnection=true`.
    pub fn uri(&self) -> String {
        format!("mongodb://{}/?directConnection=true", self.address())
    }

    /// The underlying server (connection counts, shutdown handle).
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The next request matching `matcher` that no rule or default responder answered: the
    /// oldest queued one, or the next to arrive. Waits at most the configured receive timeout.
    ///
    /// # Errors
    /// [`ScriptError::Timeout`] (listing the unclaimed requests) if none arrives in time.
    ///
    /// # Cancel safety
    /// Cancel safe: a request delivered to a cancelled call is kept for the next one.
    pub async fn next_request(
        &self,
        matcher: impl Into<Matcher>,
    ) -> Result<PendingRequest, ScriptError> {
        let timeout = self.script.lock().receive_timeout;
        self.next_request_within(matcher, timeout).await
    }

    /// Like [`ScriptedServer::next_request`], waiting at most `timeout`.
    ///
    /// # Errors
    /// [`ScriptError::Timeout`] if no matching request arrives in time.
    ///
    /// # Cancel safety
    /// Cancel safe: a request delivered to a cancelled call is kept for the next one.
    pub async fn next_request_within(
        &self,
        matcher: impl Into<Matcher>,
        timeout: Duration,
    ) -> Result<PendingRequest, ScriptError> {
        let matcher = matcher.into();
        let (waiter_id, mut receiver) = match self.script.claim(&matcher) {
            Claim::Ready(pending) => return Ok(pending),
            Claim::Waiting(waiter_id, receiver) => (waiter_id, receiver),
        };
        // If this future is dropped, the receiver goes with it and the server hands the request
        // to the next waiter or the queue (see `State::deliver`).
        match tokio::time::timeout(timeout, &mut receiver).await {
            Ok(Ok(pending)) => Ok(pending),
            Ok(Err(_)) => Err(ScriptError::ServerClosed),
            Err(_) => {
                self.script.withdraw(waiter_id);
                // A request may have been delivered between the timeout and the withdrawal.
                if let Ok(pending) = receiver.try_recv() {
                    return Ok(pending);
                }
                Err(ScriptError::Timeout {
                    matcher: matcher.to_string(),
                    waited: timeout,
                    unclaimed: self.script.unclaimed(),
                })
            }
        }
    }

    /// A queued request matching `matcher`, without waiting.
    pub fn try_next_request(&self, matcher: impl Into<Matcher>) -> Option<PendingRequest> {
        self.script.try_claim(&matcher.into())
    }

    /// Starts a rule answering requests that match `matcher`; install it with `.times(n)`,
    /// `.once()` or `.always()`. `responder` is a [`crate::server::Reaction`], a reply
    /// [`Document`], a [`crate::server::CommandError`], or [`Responder::from_fn`].
    pub fn rule(
        &self,
        matcher: impl Into<Matcher>,
        responder: impl Into<Responder>,
    ) -> RuleBuilder {
        RuleBuilder::new(Arc::clone(&self.script), matcher.into(), responder.into())
    }

    /// Removes every rule.
    pub fn clear_rules(&self) {
        self.script.lock().rules.clear();
    }

    /// The hello document the default responder uses.
    pub fn hello_document(&self) -> Document {
        self.script.lock().hello.clone()
    }

    /// Replaces the hello document.
    pub fn set_hello(&self, hello: Document) {
        self.script.lock().hello = hello;
    }

    /// Sets fields of the hello document, keeping the others.
    pub fn patch_hello(&self, fields: Document) {
        let mut state = self.script.lock();
        for (key, value) in fields {
            state.hello.insert(key, value);
        }
    }

    /// Removes a field from the hello document.
    pub fn remove_hello_field(&self, key: &str) {
        self.script.lock().hello.remove(key);
    }

    /// Chooses which default responders are on.
    pub fn set_default_responders(&self, defaults: DefaultResponders) {
        self.script.lock().defaults = defaults;
    }

    /// Sets how long the server waits for requests on the test's behalf.
    pub fn set_receive_timeout(&self, timeout: Duration) {
        self.script.lock().receive_timeout = timeout;
    }

    /// Every request received so far, in arrival order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.script.lock().records.clone()
    }

    /// The requests received so far that match `matcher`, in arrival order.
    pub fn requests_matching(&self, matcher: &Matcher) -> Vec<RecordedRequest> {
        let state = self.script.lock();
        matching(&state.records, matcher)
    }

    fn count_matching(&self, matcher: &Matcher) -> usize {
        let state = self.script.lock();
        state
            .records
            .iter()
            .filter(|record| matcher.matches(record.request(), record.connection()))
            .count()
    }

    /// Waits until at least `count` received requests match `matcher` (whoever answered them)
    /// and returns all that do. Waits at most the configured receive timeout.
    ///
    /// # Errors
    /// [`ScriptError::NotEnoughRequests`] if fewer arrive in time.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_for_requests(
        &self,
        matcher: impl Into<Matcher>,
        count: usize,
    ) -> Result<Vec<RecordedRequest>, ScriptError> {
        let matcher = matcher.into();
        let timeout = self.script.lock().receive_timeout;
        let mut recorded = self.script.subscribe_records();
        let enough = recorded.wait_for(|_| self.count_matching(&matcher) >= count);
        match tokio::time::timeout(timeout, enough).await {
            Ok(_) => Ok(self.requests_matching(&matcher)),
            Err(_) => Err(ScriptError::NotEnoughRequests {
                matcher: matcher.to_string(),
                expected: count,
                found: self.count_matching(&matcher),
                waited: timeout,
            }),
        }
    }

    /// Summaries of the requests queued for the test and not claimed yet.
    pub fn unclaimed_requests(&self) -> Vec<String> {
        self.script.unclaimed()
    }

    /// Closes one client connection, leaving the others open. Returns false if it is not open.
    pub fn close_connection(&self, id: ConnectionId) -> bool {
        self.server.close_connection(id)
    }

    /// Closes every client connection but keeps accepting new ones (a stepdown, a network
    /// blip). Returns how many were told to close.
    pub fn close_all_connections(&self) -> usize {
        self.server.close_all_connections()
    }

    /// How many connections are open right now.
    pub fn open_connections(&self) -> usize {
        self.server.open_connections()
    }

    /// Resolves once exactly `count` connections are open.
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_for_open_connections(&self, count: usize) {
        self.server.wait_for_open_connections(count).await;
    }

    /// Stops accepting, closes every connection and waits until all are closed.
    ///
    /// # Cancel safety
    /// Cancel safe: shutdown is requested before the first `.await`.
    pub async fn shutdown(&self) {
        self.server.shutdown().await;
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        let unclaimed = self.script.unclaimed();
        if !unclaimed.is_empty() {
            tracing::warn!(
                ?unclaimed,
                "scripted server dropped with requests the test never claimed; their clients saw a hang"
            );
        }
    }
}

fn matching(records: &[RecordedRequest], matcher: &Matcher) -> Vec<RecordedRequest> {
    records
        .iter()
        .filter(|record| matcher.matches(record.request(), record.connection()))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests;
