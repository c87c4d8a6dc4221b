//! The blocking handles: [`Client`], [`Database`] and [`Collection`]. Each wraps the async
//! handle and dereferences to it, so the async handle's methods that build actions
//! (`find`, `insert_one`, `list_database_names`, `run_command`, `watch`, ...) are theirs too
//! and return the same action types, which `.run()` finishes. The async handle's `async fn`s
//! are shadowed here by blocking ones.

use std::ops::Deref;

use crate::client::ClientOptions;
use crate::error::Result;
use crate::options::{CollectionOptions, DatabaseOptions};
use crate::session::SessionOptions;

use super::ClientSession;
use super::runtime::{self, InRuntime};

/// A blocking handle to a MongoDB deployment, as [`crate::Client`]: cheap to clone (clones
/// share the topology, the pools and the sessions); its monitors and pools run on the sync
/// API's own runtime, so the program needs none. Dereferences to the async [`crate::Client`],
/// whose action builders it shares (`client.list_database_names().run()?`).
#[derive(Clone, Debug)]
pub struct Client {
    inner: InRuntime<crate::Client>,
}

impl From<crate::Client> for Client {
    fn from(client: crate::Client) -> Self {
        Client {
            inner: InRuntime::new(client),
        }
    }
}

impl Deref for Client {
    type Target = crate::Client;

    fn deref(&self) -> &crate::Client {
        &self.inner
    }
}

impl Client {
    /// Parses a connection string and creates a client, as [`crate::Client::with_uri_str`];
    /// blocks while a `mongodb+srv://` string is resolved.
    ///
    /// # Errors
    /// As [`crate::Client::with_uri_str`]; `InvalidArgument` inside an async runtime.
    pub fn with_uri_str(uri: impl AsRef<str>) -> Result<Self> {
        let uri = uri.as_ref();
        runtime::block_on(crate::Client::with_uri_str(uri)).map(Client::from)
    }

    /// Creates a client from options, as [`crate::Client::with_options`], its tasks on the
    /// sync API's runtime.
    ///
    /// # Errors
    /// As [`crate::Client::with_options`].
    pub fn with_options(options: ClientOptions) -> Result<Self> {
        let _context = runtime::enter()?;
        crate::Client::with_options(options).map(Client::from)
    }

    /// A handle to the database `name`; no I/O.
    pub fn database(&self, name: &str) -> Database {
        Database::from(self.inner.database(name))
    }

    /// As [`Client::database`], with settings that override the client's.
    pub fn database_with_options(&self, name: &str, options: DatabaseOptions) -> Database {
        Database::from(self.inner.database_with_options(name, options))
    }

    /// The database named in the connection string, if it names one.
    pub fn default_database(&self) -> Option<Database> {
        self.inner.default_database().map(Database::from)
    }

    /// Starts an explicit session with `options`, as
    /// `client.start_session().with_options(options).run()`.
    ///
    /// # Errors
    /// `Shutdown` once the client has been shut down.
    pub fn start_session_with_options(&self, options: SessionOptions) -> Result<ClientSession> {
        self.inner.open_session(options).map(ClientSession::from)
    }

    /// Establishes connections up to `min_pool_size` in every usable server's pool (see
    /// [`crate::Client::warm_connection_pool`]); `.run()` blocks until they are ready.
    /// Reports no error, as the official driver's.
    pub fn warm_connection_pool(&self) -> WarmConnectionPool<'_> {
        WarmConnectionPool { client: self }
    }

    /// Shuts the client down (see [`crate::Client::shutdown`]); `.run()` blocks until every
    /// task of the client has ended and every socket is closed.
    pub fn shutdown(self) -> Shutdown {
        Shutdown { client: self }
    }
}

/// The action of [`Client::warm_connection_pool`].
#[must_use = "an action does nothing until run"]
pub struct WarmConnectionPool<'a> {
    client: &'a Client,
}

impl WarmConnectionPool<'_> {
    /// Warms the pools, blocking until they are ready. Returns nothing, as the official
    /// driver's: inside an async runtime, where it may not block, it leaves the pools to fill
    /// in the background as they always do.
    pub fn run(self) {
        let warmed = runtime::block_on(async {
            self.client.inner.warm_connection_pool().await;
            Ok(())
        });
        if let Err(refused) = warmed {
            tracing::debug!(%refused, "warm_connection_pool: not waiting inside an async runtime");
        }
    }
}

/// The action of [`Client::shutdown`].
#[must_use = "an action does nothing until run"]
pub struct Shutdown {
    client: Client,
}

impl Shutdown {
    /// Shuts the client down, blocking until it is done. Returns nothing, as the official
    /// driver's: inside an async runtime, where it may not block, it requests the shutdown
    /// and returns at once; the shutdown completes in the background (see the cancel safety
    /// of [`crate::Client::shutdown`]).
    pub fn run(self) {
        let client = crate::Client::clone(&self.client);
        let waited = runtime::block_on(async {
            client.shutdown().await;
            Ok(())
        });
        if waited.is_err() {
            // Polled once, the future requests the shutdown before it first waits.
            let _context = runtime::enter().ok();
            let _ = futures_util::FutureExt::now_or_never(std::future::IntoFuture::into_future(
                crate::Client::clone(&self.client).shutdown(),
            ));
        }
    }
}

/// A blocking handle to a database, as [`crate::Database`]; dereferences to it, whose action
/// builders it shares (`db.run_command(doc! { "ping": 1 }).run()?`).
#[derive(Clone, Debug)]
pub struct Database {
    inner: InRuntime<crate::Database>,
}

impl From<crate::Database> for Database {
    fn from(database: crate::Database) -> Self {
        Database {
            inner: InRuntime::new(database),
        }
    }
}

impl Deref for Database {
    type Target = crate::Database;

    fn deref(&self) -> &crate::Database {
        &self.inner
    }
}

impl Database {
    /// A GridFS bucket in this database (see [`crate::Database::gridfs_bucket`]); no I/O.
    pub fn gridfs_bucket(
        &self,
        options: impl Into<Option<crate::options::GridFsBucketOptions>>,
    ) -> super::gridfs::GridFsBucket {
        super::gridfs::GridFsBucket::from(self.inner.gridfs_bucket(options))
    }

    /// A handle to the collection `name`, (de)serialising documents as `T`; no I/O.
    pub fn collection<T: Send + Sync>(&self, name: &str) -> Collection<T> {
        Collection::from(self.inner.collection(name))
    }

    /// As [`Database::collection`], with settings that override the database's.
    pub fn collection_with_options<T: Send + Sync>(
        &self,
        name: &str,
        options: CollectionOptions,
    ) -> Collection<T> {
        Collection::from(self.inner.collection_with_options(name, options))
    }
}

/// A blocking handle to a collection, as [`crate::Collection`]; dereferences to it, whose
/// action builders it shares (`coll.insert_one(doc).run()?`, `coll.find(filter).run()?`
/// returning a [`Cursor`](super::Cursor)).
pub struct Collection<T: Send + Sync> {
    inner: InRuntime<crate::Collection<T>>,
}

impl<T: Send + Sync> Clone for Collection<T> {
    fn clone(&self) -> Self {
        Collection {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Send + Sync> std::fmt::Debug for Collection<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.inner.fmt(f)
    }
}

impl<T: Send + Sync> From<crate::Collection<T>> for Collection<T> {
    fn from(collection: crate::Collection<T>) -> Self {
        Collection {
            inner: InRuntime::new(collection),
        }
    }
}

impl<T: Send + Sync> Deref for Collection<T> {
    type Target = crate::Collection<T>;

    fn deref(&self) -> &crate::Collection<T> {
        &self.inner
    }
}

impl<T: Send + Sync> Collection<T> {
    /// The same collection, (de)serialising documents as `U`.
    pub fn clone_with_type<U: Send + Sync>(&self) -> Collection<U> {
        Collection::from(self.inner.clone_with_type())
    }
}
