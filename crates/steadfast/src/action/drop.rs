//! `Collection::drop` and `Database::drop`.

use bson::{Bson, doc};
use steadfast_core::options::WriteConcern;

use super::run::execute;
use crate::coll::Collection;
use crate::db::Database;
use crate::error::Result;
use crate::operation::admin::CatalogCommand;
use crate::operation::fields::put;
use crate::operation::settings::OperationOverrides;
use crate::options::{DropCollectionOptions, DropDatabaseOptions};
use crate::session::ClientSession;

/// The server's code for a namespace that does not exist.
const NAMESPACE_NOT_FOUND: i32 = 26;

impl<T: Send + Sync> Collection<T> {
    /// Drops the collection (a collection that does not exist is not an error).
    pub fn drop(&self) -> DropCollection<'_, T> {
        DropCollection {
            coll: self,
            options: DropCollectionOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }
}

/// The action of [`Collection::drop`].
#[must_use = "an action does nothing until awaited"]
pub struct DropCollection<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    options: DropCollectionOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> DropCollection<'a, T> {
    options_and_session!(DropCollectionOptions);
    option_setters!(DropCollectionOptions;
        write_concern: WriteConcern,
        comment: #[into] Bson,
    );

    async fn execute(self) -> Result<()> {
        let o = self.options;
        let mut body = doc! { "drop": self.coll.name() };
        put(&mut body, "comment", o.comment);
        let write_concern = self.coll.resolve_write_concern(o.write_concern);
        let op = CatalogCommand::new("drop", &self.coll.ns().db, body, write_concern)?;
        let settings = self.coll.operation_settings(&self.overrides);
        match execute(self.coll.client(), op, self.session, &settings).await {
            Err(error) if error.code() == Some(NAMESPACE_NOT_FOUND) => Ok(()),
            other => other,
        }
    }
}

action_future!(DropCollection<'a, T> where [T: Send + Sync + 'a] => ());

impl Database {
    /// Drops the database.
    pub fn drop(&self) -> DropDatabase<'_> {
        DropDatabase {
            db: self,
            options: DropDatabaseOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }
}

/// The action of [`Database::drop`].
#[must_use = "an action does nothing until awaited"]
pub struct DropDatabase<'a> {
    db: &'a Database,
    options: DropDatabaseOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a> DropDatabase<'a> {
    options_and_session!(DropDatabaseOptions);
    option_setters!(DropDatabaseOptions;
        write_concern: WriteConcern,
        comment: #[into] Bson,
    );

    async fn execute(self) -> Result<()> {
        let o = self.options;
        let mut body = doc! { "dropDatabase": 1 };
        put(&mut body, "comment", o.comment);
        let inherited = self.db.inherited();
        let write_concern = inherited.write_concern(o.write_concern);
        let op = CatalogCommand::new("dropDatabase", self.db.name(), body, write_concern)?;
        execute(
            self.db.client(),
            op,
            self.session,
            &inherited.settings.overridden_by(&self.overrides),
        )
        .await
    }
}

action_future!(DropDatabase<'a> => ());
