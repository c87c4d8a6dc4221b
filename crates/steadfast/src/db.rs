//! A database handle.

use std::sync::Arc;
use std::time::Duration;

use bson::Document;
use steadfast_core::retry::RetryPolicy;
use steadfast_core::selection::SelectionCriteria;

use crate::client::Client;
use crate::error::Result;
use crate::executor::ExecutionContext;
use crate::executor::run_command::RunCommand;
use crate::options::DatabaseOptions;
use crate::session::ClientSession;

/// A handle to one database of a deployment. Cheap to clone; creating one does no I/O. Its
/// settings (see [`Client::database_with_options`]) apply to its commands and are inherited by
/// its collections; unset ones come from the client.
#[derive(Clone, Debug)]
pub struct Database {
    inner: Arc<DatabaseInner>,
}

#[derive(Debug)]
struct DatabaseInner {
    client: Client,
    name: String,
    options: DatabaseOptions,
}

impl Database {
    pub(crate) fn new(client: Client, name: &str, options: DatabaseOptions) -> Self {
        Database {
            inner: Arc::new(DatabaseInner {
                client,
                name: name.to_string(),
                options,
            }),
        }
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The client this handle belongs to.
    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The settings this handle was created with (unset fields inherit the client's).
    pub fn options(&self) -> &DatabaseOptions {
        &self.inner.options
    }

    /// timeoutMS for this database's commands: its own, else the client's (`None`: unset).
    pub(crate) fn timeout(&self) -> Option<Duration> {
        self.inner
            .options
            .timeout
            .or(self.inner.client.options().timeout)
    }

    /// The retry policy of this database's commands (`None`: the client's).
    pub(crate) fn retry_policy(&self) -> Option<Arc<dyn RetryPolicy>> {
        self.inner.options.retry_policy.clone()
    }

    /// Runs a database command and returns the server's reply document.
    ///
    /// The command is sent as given, on the primary (or, in a Single topology, on the one
    /// server), with `$db` set to this database (replacing any `$db` in `command`) and the
    /// fields every command carries: `lsid` of an implicit session, `$clusterTime`, the
    /// Stable API fields when the client declared a version, and `maxTimeMS` under timeoutMS
    /// (the database's, else the client's; a `maxTimeMS` in `command` is then replaced). It
    /// is never given a `txnNumber`, and it is retried only after an overload error
    /// (`SystemOverloadedError` + `RetryableError`), and only with both retryReads and
    /// retryWrites on (client-backpressure specification).
    ///
    /// # Errors
    /// `InvalidArgument` for an empty or unencodable command; a command error
    /// ([`ErrorKind::Command`](crate::ErrorKind::Command), with code, codeName, errmsg and the
    /// server's labels) when the reply has `ok: 0`; server selection, network, timeout,
    /// protocol, TLS and authentication errors. The error carries the retry history.
    ///
    /// # Cancel safety
    /// Dropping the future midway abandons the command: the connection it used is closed, and
    /// the command may or may not have run.
    pub async fn run_command(&self, command: Document) -> Result<Document> {
        self.run_command_in(command, None).await
    }

    /// [`Database::run_command`] in an explicit session: the command carries the session's
    /// `lsid`, and its `$clusterTime` and `operationTime` advance the session's.
    ///
    /// # Errors
    /// As [`Database::run_command`]; `InvalidArgument` when the session belongs to another
    /// client, or the deployment does not support sessions.
    ///
    /// # Cancel safety
    /// As [`Database::run_command`].
    pub async fn run_command_with_session(
        &self,
        command: Document,
        session: &mut ClientSession,
    ) -> Result<Document> {
        self.run_command_in(command, Some(session)).await
    }

    async fn run_command_in(
        &self,
        command: Document,
        session: Option<&mut ClientSession>,
    ) -> Result<Document> {
        let op = RunCommand::new(&self.inner.name, command, SelectionCriteria::primary_read())?;
        let context = ExecutionContext {
            session,
            timeout: self.timeout(),
            retry_policy: self.retry_policy(),
        };
        self.inner.client.executor().execute(op, context).await
    }
}
