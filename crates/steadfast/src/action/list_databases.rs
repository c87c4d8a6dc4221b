//! `Client::list_databases` and `Client::list_database_names`.

use std::future::IntoFuture;

use bson::{Bson, Document};
use futures_util::future::BoxFuture;

use super::list_collections::name_of;
use super::run::execute;
use crate::client::Client;
use crate::cursor::deserialize;
use crate::error::{Error, Result};
use crate::operation::inherited::Inherited;
use crate::operation::list::ListDatabases as ListDatabasesOp;
use crate::operation::settings::OperationOverrides;
use crate::options::{CollectionOptions, ListDatabasesOptions};
use crate::results::DatabaseSpecification;
use crate::session::ClientSession;

impl Client {
    /// Lists the deployment's databases with their sizes.
    pub fn list_databases(&self) -> ListDatabases<'_> {
        ListDatabases {
            client: self,
            options: ListDatabasesOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }

    /// The names of the deployment's databases (`nameOnly: true`): the action of
    /// [`Client::list_databases`] that yields names; it takes the same options.
    pub fn list_database_names(&self) -> ListDatabases<'_, true> {
        ListDatabases {
            client: self,
            options: ListDatabasesOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }
}

/// The action of [`Client::list_databases`] (`NAMES = false`: database specifications) and
/// [`Client::list_database_names`] (`NAMES = true`: the names).
#[must_use = "an action does nothing until awaited"]
pub struct ListDatabases<'a, const NAMES: bool = false> {
    client: &'a Client,
    options: ListDatabasesOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, const NAMES: bool> ListDatabases<'a, NAMES> {
    operation_overrides!();

    /// Replaces every option at once.
    pub fn with_options(mut self, options: impl Into<Option<ListDatabasesOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }

    option_setters!(ListDatabasesOptions;
        filter: #[into] Document,
        authorized_databases: bool,
        comment: #[into] Bson,
    );

    /// Runs the listing in an explicit session.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }

    async fn fetch(self, name_only: bool) -> Result<Vec<bson::RawDocumentBuf>> {
        let o = self.options;
        let op = ListDatabasesOp::new(o.filter, name_only, o.authorized_databases, o.comment);
        let settings = Inherited::new(self.client, &CollectionOptions::default())
            .settings
            .overridden_by(&self.overrides);
        execute(self.client, op, self.session, &settings).await
    }
}

impl<'a> IntoFuture for ListDatabases<'a, false> {
    type Output = Result<Vec<DatabaseSpecification>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let entries = self.fetch(false).await?;
            entries
                .iter()
                .map(|entry| deserialize(Some(entry)))
                .collect()
        })
    }
}

impl<'a> IntoFuture for ListDatabases<'a, true> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let entries = self.fetch(true).await?;
            entries
                .into_iter()
                .map(|entry| {
                    let entry = Document::try_from(entry).map_err(|e| {
                        Error::protocol("a listDatabases entry is not valid BSON").with_source(e)
                    })?;
                    name_of(&entry, "listDatabases")
                })
                .collect()
        })
    }
}
