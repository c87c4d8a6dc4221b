//! A database handle.

use std::sync::Arc;

use bson::Document;

use crate::client::Client;
use crate::error::Result;
use crate::options::{DatabaseOptions, ReadConcern, SelectionCriteria, WriteConcern};
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

    /// The selection criteria this handle sets for its reads (`None`: the client's read
    /// preference applies).
    pub fn selection_criteria(&self) -> Option<&SelectionCriteria> {
        self.inner.options.selection_criteria.as_ref()
    }

    /// The read concern this handle's operations use unless they set one (`None`: the
    /// server's default).
    pub fn read_concern(&self) -> Option<&ReadConcern> {
        self.inner
            .options
            .read_concern
            .as_ref()
            .or(self.client().options().read_concern.as_ref())
    }

    /// The write concern this handle's operations use unless they set one (`None`: the
    /// server's default).
    pub fn write_concern(&self) -> Option<&WriteConcern> {
        self.inner
            .options
            .write_concern
            .as_ref()
            .or(Some(&self.client().options().write_concern))
            .filter(|wc| !wc.is_empty())
    }

    /// Runs a database command; awaiting the action returns the server's reply document.
    ///
    /// The command is sent as given, on the primary (or, in a Single topology, on the one
    /// server), with `$db` set to this database (replacing any `$db` in `command`) and the
    /// fields every command carries: `lsid` of an implicit session (or the explicit one given
    /// with `.session(..)`), `$clusterTime`, the Stable API fields when the client declared a
    /// version, and `maxTimeMS` under timeoutMS (the operation's `.timeout(..)`, else the
    /// session's default, else the database's, else the client's). Under timeoutMS a
    /// `maxTimeMS` in `command` is replaced by the one the deadline leaves (or removed when
    /// timeoutMS is zero). It is never given a `txnNumber`, and it is retried only after an
    /// overload error (`SystemOverloadedError` + `RetryableError`), and only with both
    /// retryReads and retryWrites on (client-backpressure specification).
    ///
    /// # Errors
    /// `InvalidArgument` for an empty or unencodable command, or a session of another client;
    /// a command error ([`ErrorKind::Command`](crate::ErrorKind::Command), with code,
    /// codeName, errmsg and the server's labels) when the reply has `ok: 0`; server
    /// selection, network, timeout, protocol, TLS and authentication errors. The error carries
    /// the retry history.
    ///
    /// # Cancel safety
    /// Dropping the future midway abandons the command: the connection it used is closed, and
    /// the command may or may not have run.
    pub fn run_command(&self, command: Document) -> crate::action::RunCommand<'_> {
        crate::action::RunCommand::new(self, command)
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
        self.run_command(command).session(session).await
    }
}
