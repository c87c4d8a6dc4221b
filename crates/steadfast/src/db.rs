//! A database handle.

use std::sync::Arc;

use crate::client::Client;
use crate::options::{DatabaseOptions, ReadConcern, SelectionCriteria, WriteConcern};

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
}
