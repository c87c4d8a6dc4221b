//! The server layer: a TCP listener (on 127.0.0.1 unless configured otherwise) that frames the MongoDB wire protocol and
//! hands every request to a [`Handler`].
//!
//! What it takes care of so handlers need not: one task per connection (a slow reaction on one
//! connection never delays another), OP_MSG with document sequences merged into the command,
//! legacy OP_QUERY hello answered with OP_REPLY, OP_COMPRESSED in and out (a reply uses the
//! compressor its request used) and compressor negotiation in hello, `moreToCome` requests left
//! unanswered, exhaust streams, `maxMessageSizeBytes`, and shutdown. A client that sends
//! garbage, disconnects mid-message or floods loses only its own connection.

mod connection;
mod handler;
mod reaction;
mod request;

use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::{AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;

pub use handler::{
    BoxFuture, ConnectionContext, ConnectionId, ConnectionInfo, Extensions, Handler,
};
pub use reaction::{
    CommandError, Gate, Outcome, Reaction, ReplyStream, ReplyStreamSender, StreamClosed,
};
pub use request::{Request, RequestError, RequestKind, is_hello_command};

/// Default for [`ServerConfig::max_connections`].
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default for [`ServerConfig::idle_timeout`]: an hour.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(3600);
/// Default for [`ServerConfig::read_timeout`].
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How a [`Server`] listens and what it accepts.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Address to listen on; 127.0.0.1 by default. blackpipe has no access control of its
    /// own, so anything else exposes it to whoever can reach that address.
    pub bind: IpAddr,
    /// Port; 0 picks an ephemeral port.
    pub port: u16,
    /// Largest message accepted or sent (`maxMessageSizeBytes`); a client that announces a
    /// larger frame is disconnected.
    pub max_message_size: usize,
    /// Compressors the server supports, by handshake name (`snappy`, `zlib`, `zstd`).
    pub compressors: Vec<String>,
    /// Most connections open at once (mongod's `maxIncomingConnections`): a connection
    /// accepted past it is closed at once, as mongod does.
    pub max_connections: usize,
    /// How long a connection may wait for the first byte of its next request; then it is
    /// closed. Time spent on a request (a blocked fail point, an awaitable hello, an exhaust
    /// stream) does not count.
    pub idle_timeout: Duration,
    /// How long a request may take to arrive once its first byte has: a peer that holds a
    /// partial frame longer is disconnected, so a slow sender cannot hold a connection forever.
    pub read_timeout: Duration,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            bind: IpAddr::V4(Ipv4Addr::LOCALHOST),
            port: 0,
            max_message_size: steadfast_wire::DEFAULT_MAX_MESSAGE_SIZE,
            compressors: ["snappy", "zlib", "zstd"].map(String::from).to_vec(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            read_timeout: DEFAULT_READ_TIMEOUT,
        }
    }
}

impl ServerConfig {
    /// Listens on `port` (0 for an ephemeral port).
    #[must_use]
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = port;
        self
    }

    /// Listens on `bind` instead of 127.0.0.1.
    #[must_use]
    pub fn with_bind(mut self, bind: IpAddr) -> Self {
        self.bind = bind;
        self
    }

    /// Sets the largest message accepted or sent.
    #[must_use]
    pub fn with_max_message_size(mut self, max_message_size: usize) -> Self {
        self.max_message_size = max_message_size;
        self
    }

    /// Sets the compressors the server supports.
    #[must_use]
    pub fn with_compressors<I, S>(mut self, compressors: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.compressors = compressors.into_iter().map(Into::into).collect();
        self
    }

    /// Sets the most connections open at once.
    #[must_use]
    pub fn with_max_connections(mut self, max_connections: usize) -> Self {
        self.max_connections = max_connections;
        self
    }

    /// Sets how long a connection may wait between requests.
    #[must_use]
    pub fn with_idle_timeout(mut self, idle_timeout: Duration) -> Self {
        self.idle_timeout = idle_timeout;
        self
    }

    /// Sets how long a started request may take to arrive whole.
    #[must_use]
    pub fn with_read_timeout(mut self, read_timeout: Duration) -> Self {
        self.read_timeout = read_timeout;
        self
    }
}

/// State shared by the listener and every connection task.
struct Shared {
    handler: Arc<dyn Handler>,
    config: ServerConfig,
    next_connection_id: AtomicU64,
    next_reply_id: AtomicI32,
    open_connections: watch::Sender<usize>,
    /// Each open connection's own close signal.
    connections: Mutex<BTreeMap<ConnectionId, watch::Sender<bool>>>,
}

impl Shared {
    fn connections(
        &self,
    ) -> std::sync::MutexGuard<'_, BTreeMap<ConnectionId, watch::Sender<bool>>> {
        self.connections
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// A fresh positive message id for a reply.
    fn next_reply_id(&self) -> i32 {
        self.next_reply_id.fetch_add(1, Ordering::Relaxed) & i32::MAX
    }
}

/// Stops a [`Server`]: the listener and every connection close. Cloneable; also triggered when
/// the [`Server`] is dropped.
#[derive(Clone, Debug)]
pub struct ShutdownHandle {
    signal: Arc<watch::Sender<bool>>,
}

impl ShutdownHandle {
    /// Stops accepting and closes every connection (without waiting for them to finish).
    pub fn shutdown(&self) {
        self.signal.send_replace(true);
    }

    /// Whether shutdown has been requested.
    pub fn is_shut_down(&self) -> bool {
        *self.signal.borrow()
    }
}

/// A running wire-protocol server. Dropping it shuts it down.
pub struct Server {
    local_addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: ShutdownHandle,
    listener_done: watch::Receiver<bool>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("local_addr", &self.local_addr)
            .field("open_connections", &self.open_connections())
            .finish_non_exhaustive()
    }
}

impl Server {
    /// Binds the configured address and port and starts accepting connections, each served
    /// by `handler` on its own task. Must be called within a tokio runtime.
    ///
    /// # Errors
    /// The I/O error if the port cannot be bound.
    pub async fn bind(config: ServerConfig, handler: Arc<dyn Handler>) -> io::Result<Self> {
        let listener = TcpListener::bind((config.bind, config.port)).await?;
        let local_addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            handler,
            config,
            next_connection_id: AtomicU64::new(1),
            next_reply_id: AtomicI32::new(1),
            open_connections: watch::Sender::new(0),
            connections: Mutex::new(BTreeMap::new()),
        });
        let shutdown = ShutdownHandle {
            signal: Arc::new(watch::Sender::new(false)),
        };
        let (done_sender, listener_done) = watch::channel(false);
        tokio::spawn(accept_loop(
            listener,
            Arc::clone(&shared),
            shutdown.signal.subscribe(),
            done_sender,
        ));
        tracing::debug!(%local_addr, "blackpipe server listening");
        Ok(Self {
            local_addr,
            shared,
            shutdown,
            listener_done,
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The handler that serves this server's requests (a load balancer passes requests on to
    /// its backend's).
    pub(crate) fn handler(&self) -> Arc<dyn Handler> {
        Arc::clone(&self.shared.handler)
    }

    /// The configuration the server runs with.
    pub fn config(&self) -> &ServerConfig {
        &self.shared.config
    }

    /// How many connections are open right now.
    pub fn open_connections(&self) -> usize {
        *self.shared.open_connections.borrow()
    }

    /// How many connections have been accepted since the server started.
    pub fn accepted_connections(&self) -> u64 {
        self.shared.next_connection_id.load(Ordering::Relaxed) - 1
    }

    /// Resolves once exactly `count` connections are open (a leak check awaits 0).
    ///
    /// # Cancel safety
    /// Cancel safe.
    pub async fn wait_for_open_connections(&self, count: usize) {
        let mut open = self.shared.open_connections.subscribe();
        // The sender lives in `self.shared`, so waiting cannot fail while `self` is borrowed.
        let _ = open.wait_for(|open| *open == count).await;
    }

    /// The ids of the open connections, oldest first.
    pub fn connection_ids(&self) -> Vec<ConnectionId> {
        self.shared.connections().keys().copied().collect()
    }

    /// Closes one connection (as a server that drops a client does), leaving the others and
    /// the listener alone. Returns false if no such connection is open. The connection is
    /// closed once its task notices, which [`Server::wait_for_open_connections`] can await.
    pub fn close_connection(&self, id: ConnectionId) -> bool {
        self.shared
            .connections()
            .get(&id)
            .map(|close| close.send_replace(true))
            .is_some()
    }

    /// Closes every open connection but keeps accepting new ones (as mongod does on stepdown).
    /// Returns how many connections were told to close.
    pub fn close_all_connections(&self) -> usize {
        let connections = self.shared.connections();
        for close in connections.values() {
            close.send_replace(true);
        }
        connections.len()
    }

    /// A handle that can shut the server down from elsewhere.
    pub fn shutdown_handle(&self) -> ShutdownHandle {
        self.shutdown.clone()
    }

    /// Stops accepting, closes every connection, and waits until all are closed.
    ///
    /// # Cancel safety
    /// Cancel safe: shutdown is requested before the first `.await`; dropping the future only
    /// stops waiting for it to complete.
    pub async fn shutdown(&self) {
        self.shutdown.shutdown();
        let mut done = self.listener_done.clone();
        // Err means the listener task is gone, which is what we are waiting for anyway.
        let _ = done.wait_for(|done| *done).await;
        self.wait_for_open_connections(0).await;
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.shutdown.shutdown();
    }
}

/// Accepts connections until shutdown, spawning a task for each.
async fn accept_loop(
    listener: TcpListener,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
    done: watch::Sender<bool>,
) {
    loop {
        let accepted = tokio::select! {
            biased;
            _ = shutdown.wait_for(|down| *down) => break,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, peer)) => {
                if *shared.open_connections.borrow() >= shared.config.max_connections {
                    // As mongod: the connection is accepted, then closed at once.
                    tracing::warn!(%peer, "connection refused: maxIncomingConnections reached");
                    drop(stream);
                    continue;
                }
                let id =
                    ConnectionId::new(shared.next_connection_id.fetch_add(1, Ordering::Relaxed));
                let (guard, close) = OpenConnectionGuard::new(Arc::clone(&shared), id);
                let context = ConnectionContext::new(id, peer);
                shared.handler.connection_opened(&context.info());
                let task_shared = Arc::clone(&shared);
                let stop = connection::StopSignals {
                    server: shutdown.clone(),
                    connection: close,
                };
                tokio::spawn(async move {
                    connection::serve(stream, context, task_shared, stop).await;
                    drop(guard);
                });
            }
            Err(error) => {
                // Usually out of file descriptors: back off instead of spinning on the error.
                tracing::warn!(%error, "accept failed");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    // Unbind before reporting done, so that after `Server::shutdown` nothing listens any more.
    drop(listener);
    done.send_replace(true);
}

/// Counts a connection as open, and keeps its close signal registered, for as long as its
/// task lives, however the task ends.
struct OpenConnectionGuard {
    shared: Arc<Shared>,
    id: ConnectionId,
}

impl OpenConnectionGuard {
    /// Registers connection `id`; returns the guard and the connection's close signal.
    fn new(shared: Arc<Shared>, id: ConnectionId) -> (Self, watch::Receiver<bool>) {
        let (close, closed) = watch::channel(false);
        shared.connections().insert(id, close);
        shared.open_connections.send_modify(|open| *open += 1);
        (Self { shared, id }, closed)
    }
}

impl Drop for OpenConnectionGuard {
    fn drop(&mut self) {
        self.shared.connections().remove(&self.id);
        self.shared
            .open_connections
            .send_modify(|open| *open = open.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests;
