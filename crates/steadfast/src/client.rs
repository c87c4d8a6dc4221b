//! The client: the application's handle to a deployment.
//!
//! # Foundation stage
//!
//! This client talks to **one server** through **one connection**, opened lazily on the first
//! command and kept behind an async mutex, so commands from concurrent tasks run one after the
//! other. A connection that hits a network or protocol error (or whose command future was
//! dropped midway) is discarded, and the next command opens a new one. There is no server
//! monitoring, server selection, pooling or retrying yet: the topology worker, the CMAP pool and
//! the executor replace `SingleServer` without changing the public API.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use bson::{Document, RawDocumentBuf};
use steadfast_core::ServerAddress;
use steadfast_core::options::{ClientOptions, ParsedUri};
use tokio::sync::Mutex;

use crate::conn::Connection;
use crate::conn::config::{ConnectionConfig, ServerApi};
use crate::db::Database;
use crate::error::{CommandError, Error, Result, reply_is_ok};
use crate::handshake::metadata::{DriverInfo, Environment, client_metadata};

/// A handle to a MongoDB deployment. Cheap to clone: clones share the connection.
#[derive(Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

struct ClientInner {
    options: ClientOptions,
    environment: Environment,
    /// Wrapping libraries appended so far, in order (no duplicates).
    wrappers: std::sync::Mutex<Vec<DriverInfo>>,
    server: SingleServer,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("options", &self.inner.options)
            .finish()
    }
}

impl Client {
    /// Parses a `mongodb://` connection string and creates a client. No I/O happens here: the
    /// connection opens on the first command.
    ///
    /// # Errors
    /// `Configuration` naming the offending part when the string is invalid, when it is a
    /// `mongodb+srv://` string (SRV resolution is not implemented yet), or when the options
    /// cannot be honoured (see [`Client::with_options`]).
    pub async fn with_uri_str(uri: &str) -> Result<Client> {
        match ClientOptions::parse(uri) {
            Ok(ParsedUri::Complete { options, warnings }) => {
                for warning in warnings {
                    tracing::warn!(%warning, "connection string option ignored");
                }
                Client::with_options(options)
            }
            Ok(ParsedUri::NeedsSrv(_)) => Err(Error::configuration(
                "mongodb+srv:// connection strings need SRV resolution, which this client does not do yet",
            )),
            Err(e) => {
                Err(Error::configuration(format!("invalid connection string: {e}")).with_source(e))
            }
        }
    }

    /// Creates a client from options. No I/O happens here beyond reading TLS files.
    ///
    /// # Errors
    /// `Configuration` when the options name more than one host (this foundation-stage client
    /// talks to a single server), an unsupported authentication mechanism, or an over-long
    /// appName; TLS and I/O errors when certificate files cannot be used.
    pub fn with_options(options: ClientOptions) -> Result<Client> {
        Client::build(options, None)
    }

    /// Like [`Client::with_options`], declaring a Stable API version on every command.
    ///
    /// # Errors
    /// As [`Client::with_options`].
    pub fn with_options_and_server_api(options: ClientOptions, api: ServerApi) -> Result<Client> {
        Client::build(options, Some(api))
    }

    fn build(options: ClientOptions, server_api: Option<ServerApi>) -> Result<Client> {
        let address = match options.hosts.as_slice() {
            [single] => single.clone(),
            [] => return Err(Error::configuration("no host to connect to")),
            several => {
                return Err(Error::configuration(format!(
                    "{} hosts given; this client connects to a single server until server discovery lands",
                    several.len()
                )));
            }
        };
        let environment = Environment::current();
        let config = ConnectionConfig::from_options_in(&options, server_api, &environment)?;
        Ok(Client {
            inner: Arc::new(ClientInner {
                options,
                environment,
                wrappers: std::sync::Mutex::new(Vec::new()),
                server: SingleServer {
                    address,
                    config: RwLock::new(Arc::new(config)),
                    connection: Mutex::new(None),
                    next_connection_id: AtomicU64::new(1),
                },
            }),
        })
    }

    /// A handle to the database `name`. No I/O.
    pub fn database(&self, name: &str) -> Database {
        Database::new(self.clone(), name)
    }

    /// Appends a wrapping library's name, version and platform to the metadata that *new*
    /// connections send in their handshake (existing connections keep theirs). Appending the
    /// same information twice has no further effect.
    ///
    /// # Errors
    /// `InvalidArgument` when a field contains the delimiter `|`.
    pub fn append_metadata(&self, info: DriverInfo) -> Result<()> {
        info.validate()?;
        let info = info.normalized();
        let mut wrappers = self
            .inner
            .wrappers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if wrappers.contains(&info) {
            return Ok(());
        }
        let mut updated = wrappers.clone();
        updated.push(info);
        let metadata = client_metadata(
            self.inner.options.app_name.as_deref(),
            &self.inner.environment,
            &updated,
        )?;
        self.inner.server.replace_metadata(metadata);
        *wrappers = updated;
        Ok(())
    }

    /// The options this client was created with.
    pub fn options(&self) -> &ClientOptions {
        &self.inner.options
    }

    /// Runs `command` against `database` and returns the reply; `ok: 0` becomes a command error.
    pub(crate) async fn run_command(&self, database: &str, command: Document) -> Result<Document> {
        if command.is_empty() {
            return Err(Error::invalid_argument("the command document is empty"));
        }
        let mut command = command;
        command.insert("$db", database);
        if let Some(api) = &self.inner.server.config().server_api {
            api.append_to(&mut command);
        }
        let command = RawDocumentBuf::try_from(&command)
            .map_err(|e| Error::invalid_argument("the command cannot be encoded").with_source(e))?;
        let deadline = self
            .inner
            .options
            .timeout
            .filter(|t| !t.is_zero())
            .map(|t| Instant::now() + t);
        let server = &self.inner.server;
        let reply = server.send(command, deadline).await?;
        let reply = Document::try_from(reply).map_err(|e| {
            Error::protocol("the reply is not valid BSON")
                .with_source(e)
                .with_address(&server.address)
        })?;
        if !reply_is_ok(&reply) {
            return Err(Error::from(CommandError::from_reply(&reply)).with_address(&server.address));
        }
        Ok(reply)
    }
}

/// The single-server path: one lazily opened connection behind an async mutex. The pool and
/// topology tasks replace it.
struct SingleServer {
    address: ServerAddress,
    /// Replaced (not mutated) when metadata is appended; connections being opened keep the
    /// snapshot they started with.
    config: RwLock<Arc<ConnectionConfig>>,
    connection: Mutex<Option<Connection>>,
    next_connection_id: AtomicU64,
}

impl SingleServer {
    fn config(&self) -> Arc<ConnectionConfig> {
        self.config
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn replace_metadata(&self, metadata: bson::Document) {
        let mut slot = self.config.write().unwrap_or_else(PoisonError::into_inner);
        let mut config = ConnectionConfig::clone(&slot);
        config.metadata = metadata;
        *slot = Arc::new(config);
    }

    /// Sends on the connection, opening one first if there is none or the last one broke.
    async fn send(
        &self,
        command: RawDocumentBuf,
        deadline: Option<Instant>,
    ) -> Result<RawDocumentBuf> {
        let mut slot = self.connection.lock().await;
        if slot.as_ref().is_some_and(Connection::is_broken) {
            tracing::debug!(address = %self.address, "discarding a broken connection");
            *slot = None;
        }
        let connection = match slot.take() {
            Some(connection) => connection,
            None => {
                let id = self.next_connection_id.fetch_add(1, Ordering::Relaxed);
                let config = self.config();
                Connection::establish(id, &self.address, &config, deadline).await?
            }
        };
        // The connection goes back into the slot before awaiting the exchange, so that a
        // dropped future leaves it there marked in-flight (broken) rather than lost.
        let connection = slot.insert(connection);
        connection.send_command(command, deadline).await
    }
}
