//! The contract between the server layer and whatever decides the replies: the [`Handler`]
//! trait and the per-connection state it receives.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use bson::{Bson, Document};

use super::reaction::Outcome;
use super::request::Request;

/// A boxed, sendable future. Returning it is what keeps [`Handler`] object-safe.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Decides how the server reacts to each request.
///
/// The server calls [`Handler::handle`] once per decoded request, one request at a time per
/// connection, from that connection's own task: a handler that takes its time (waiting for a
/// test to answer, for a topology change, for a timer) holds up only the connection it serves.
/// If the client disconnects or the server shuts down while the future is pending, the future
/// is dropped, so it must not leave shared state half-updated across an `.await`.
pub trait Handler: Send + Sync + 'static {
    /// Returns how to react to `request`, received on `connection`.
    fn handle<'a>(
        &'a self,
        request: Arc<Request>,
        connection: &'a mut ConnectionContext,
    ) -> BoxFuture<'a, Outcome>;

    /// Called when a connection is accepted, before its first request.
    fn connection_opened(&self, _connection: &ConnectionInfo) {}

    /// Called when a connection has closed, whoever closed it.
    fn connection_closed(&self, _connection: &ConnectionInfo) {}
}

/// Identifies one accepted connection for the life of a server. Ids start at 1 and are never
/// reused, so a test can tell "the same connection" from "a new connection to the same server".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId(u64);

impl ConnectionId {
    /// Wraps a raw id (useful to build a [`ConnectionContext`] in a handler's unit test).
    pub const fn new(id: u64) -> Self {
        Self(id)
    }

    /// The raw id.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A cheap snapshot of what identifies a connection, kept with recorded requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// The connection's id.
    pub id: ConnectionId,
    /// The client's address.
    pub peer: SocketAddr,
    /// `client.application.name` from the connection's handshake, if it sent one.
    pub app_name: Option<String>,
}

/// Per-connection state handed to the [`Handler`] with every request.
///
/// The server layer fills in what it learns from the handshake (client metadata, application
/// name, negotiated compressors) before calling the handler; handlers keep their own state in
/// [`ConnectionContext::extensions_mut`].
#[derive(Debug)]
pub struct ConnectionContext {
    id: ConnectionId,
    peer: SocketAddr,
    client_metadata: Option<Document>,
    app_name: Option<String>,
    compressors: Vec<String>,
    requests_received: u64,
    client_certificate: Option<Vec<u8>>,
    extensions: Extensions,
}

impl ConnectionContext {
    /// A fresh context for a connection that has sent nothing yet.
    pub fn new(id: ConnectionId, peer: SocketAddr) -> Self {
        Self {
            id,
            peer,
            client_metadata: None,
            app_name: None,
            compressors: Vec::new(),
            requests_received: 0,
            client_certificate: None,
            extensions: Extensions::default(),
        }
    }

    /// The connection's id.
    pub fn id(&self) -> ConnectionId {
        self.id
    }

    /// The client's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// `client.application.name` from the handshake (fail points filter on it).
    pub fn app_name(&self) -> Option<&str> {
        self.app_name.as_deref()
    }

    /// The whole `client` document of the handshake, if one was sent.
    pub fn client_metadata(&self) -> Option<&Document> {
        self.client_metadata.as_ref()
    }

    /// The compressors negotiated in the handshake, in the client's order of preference.
    pub fn negotiated_compressors(&self) -> &[String] {
        &self.compressors
    }

    /// The DER of the certificate the client presented in the TLS handshake, verified against
    /// the server's client CA; `None` without TLS or without a client certificate.
    pub fn client_certificate(&self) -> Option<&[u8]> {
        self.client_certificate.as_deref()
    }

    pub(crate) fn set_client_certificate(&mut self, der: Option<Vec<u8>>) {
        self.client_certificate = der;
    }

    /// How many requests this connection has sent, the current one included.
    pub fn requests_received(&self) -> u64 {
        self.requests_received
    }

    /// A snapshot of the connection's identity.
    pub fn info(&self) -> ConnectionInfo {
        ConnectionInfo {
            id: self.id,
            peer: self.peer,
            app_name: self.app_name.clone(),
        }
    }

    /// The handler's own per-connection state.
    pub fn extensions(&self) -> &Extensions {
        &self.extensions
    }

    /// The handler's own per-connection state, mutably.
    pub fn extensions_mut(&mut self) -> &mut Extensions {
        &mut self.extensions
    }

    /// Counts a request; called by the server before the handler sees it.
    pub(crate) fn note_request(&mut self) {
        self.requests_received += 1;
    }

    /// Remembers what a hello-family request said about the client. Returns the compressors to
    /// announce in the reply when the request carried a `compression` array: the server's
    /// `supported` list intersected with the client's, in the client's order.
    pub(crate) fn note_hello(
        &mut self,
        command: &Document,
        supported: &[String],
    ) -> Option<Vec<String>> {
        if let Ok(client) = command.get_document("client") {
            self.app_name = client
                .get_document("application")
                .ok()
                .and_then(|application| application.get_str("name").ok())
                .map(str::to_owned);
            self.client_metadata = Some(client.clone());
        }
        let requested = command.get_array("compression").ok()?;
        let negotiated: Vec<String> = requested
            .iter()
            .filter_map(Bson::as_str)
            .filter(|name| supported.iter().any(|s| s == name))
            .fold(Vec::new(), |mut acc, name| {
                if !acc.iter().any(|n: &String| n == name) {
                    acc.push(name.to_owned());
                }
                acc
            });
        self.compressors = negotiated.clone();
        Some(negotiated)
    }
}

/// A type-keyed map where handlers keep per-connection state of their own.
#[derive(Default)]
pub struct Extensions {
    values: HashMap<TypeId, Box<dyn Any + Send + Sync>>,
}

impl Extensions {
    /// Stores `value`, returning the previous value of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: T) -> Option<T> {
        self.values
            .insert(TypeId::of::<T>(), Box::new(value))
            .and_then(|old| old.downcast::<T>().ok())
            .map(|old| *old)
    }

    /// The stored value of type `T`.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.values.get(&TypeId::of::<T>())?.downcast_ref()
    }

    /// The stored value of type `T`, mutably.
    pub fn get_mut<T: Any + Send + Sync>(&mut self) -> Option<&mut T> {
        self.values.get_mut(&TypeId::of::<T>())?.downcast_mut()
    }

    /// Removes and returns the stored value of type `T`.
    pub fn remove<T: Any + Send + Sync>(&mut self) -> Option<T> {
        self.values
            .remove(&TypeId::of::<T>())
            .and_then(|old| old.downcast::<T>().ok())
            .map(|old| *old)
    }
}

impl fmt::Debug for Extensions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Extensions")
            .field("len", &self.values.len())
            .finish()
    }
}
