//! A database handle.

use bson::Document;

use crate::client::Client;
use crate::error::Result;

/// A handle to one database of a deployment. Cheap to clone; creating one does no I/O.
#[derive(Clone, Debug)]
pub struct Database {
    client: Client,
    name: String,
}

impl Database {
    pub(crate) fn new(client: Client, name: &str) -> Self {
        Database {
            client,
            name: name.to_string(),
        }
    }

    /// The database name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The client this handle belongs to.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Runs a database command and returns the server's reply document.
    ///
    /// `$db` is set to this database (replacing any `$db` in `command`), and the Stable API
    /// fields are added when the client declared a version. The command is sent once: no
    /// retry happens at this stage.
    ///
    /// # Errors
    /// `InvalidArgument` for an empty or unencodable command; a command error
    /// ([`ErrorKind::Command`](crate::ErrorKind::Command), with code, codeName, errmsg and the
    /// server's labels) when the reply has `ok: 0`; network, timeout, protocol, TLS and
    /// authentication errors from (re)connecting or the exchange.
    ///
    /// # Cancel safety
    /// Dropping the future midway abandons the exchange: the connection it used is discarded
    /// and the next command opens a new one. The command may or may not have run.
    pub async fn run_command(&self, command: Document) -> Result<Document> {
        self.client.run_command(&self.name, command).await
    }
}
