//! The blocking [`Client`]: it wraps the async client, whose actions its methods build
//! (`.run()` finishes them), and dereferences to it for what only steadfast has.

use std::ops::Deref;

use crate::action::{ClientBulkWrite, ListDatabases, StartSession, Watch};
use crate::client::ClientOptions;
use crate::error::Result;
use crate::options::{DatabaseOptions, ReadConcern, WriteConcern, WriteModel};
use crate::results::SummaryBulkWriteResult;
use crate::session::SessionOptions;

use super::runtime::{self, InRuntime};
use super::{ClientSession, Database};

/// A blocking handle to a MongoDB deployment, as [`crate::Client`]: cheap to clone (clones
/// share the topology, the pools and the sessions); its monitors and pools run on the sync
/// API's own runtime, so the program needs none. Its operation methods return the async
/// API's actions, which `.run()` finishes (`client.list_database_names().run()?`); it also
/// dereferences to the async [`crate::Client`], for what only steadfast has.
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

    /// The client's default selection criteria (its read preference), if one was set.
    pub fn selection_criteria(&self) -> Option<&crate::options::SelectionCriteria> {
        self.inner.selection_criteria()
    }

    /// The client's default read concern, if one was set.
    pub fn read_concern(&self) -> Option<&ReadConcern> {
        self.inner.read_concern()
    }

    /// The client's default write concern, if one was set.
    pub fn write_concern(&self) -> Option<&WriteConcern> {
        self.inner.write_concern()
    }

    /// Lists the deployment's databases (see [`crate::Client::list_databases`]); `.run()`
    /// returns their [`DatabaseSpecification`](crate::results::DatabaseSpecification)s.
    pub fn list_databases(&self) -> ListDatabases<'_> {
        self.inner.list_databases()
    }

    /// The names of the deployment's databases (see
    /// [`crate::Client::list_database_names`]).
    pub fn list_database_names(&self) -> ListDatabases<'_, true> {
        self.inner.list_database_names()
    }

    /// Starts an explicit session (see [`crate::Client::start_session`]); `.run()` returns a
    /// blocking [`ClientSession`].
    pub fn start_session(&self) -> StartSession<'_> {
        self.inner.start_session()
    }

    /// Opens a change stream on the whole deployment (see [`crate::Client::watch`]);
    /// `.run()` returns a blocking [`ChangeStream`](super::ChangeStream).
    pub fn watch(&self) -> Watch<'_> {
        self.inner.watch()
    }

    /// Runs writes on any number of collections in one `bulkWrite` command (MongoDB 8.0+;
    /// see [`crate::Client::bulk_write`]); `.run()` returns the summary, or the per-write
    /// results after `.verbose_results()`.
    pub fn bulk_write(
        &self,
        models: impl IntoIterator<Item = impl Into<WriteModel>>,
    ) -> ClientBulkWrite<'_, SummaryBulkWriteResult> {
        self.inner.bulk_write(models)
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
    pub fn warm_connection_pool(&self) -> crate::action::WarmConnectionPool<'_> {
        self.inner.warm_connection_pool()
    }

    /// Shuts the client down (see [`crate::Client::shutdown`]); `.run()` blocks until every
    /// task of the client has ended and every socket is closed.
    pub fn shutdown(self) -> crate::action::Shutdown {
        crate::Client::clone(&self.inner).shutdown()
    }
}
