//! `Collection::drop_index` and `Collection::drop_indexes`.

use std::time::Duration;

use bson::{Bson, doc};
use steadfast_core::options::WriteConcern;

use super::run::execute;
use crate::coll::Collection;
use crate::error::Result;
use crate::operation::admin::CatalogCommand;
use crate::operation::fields::{put, put_max_time};
use crate::operation::settings::OperationOverrides;
use crate::options::DropIndexOptions;
use crate::session::ClientSession;

impl<T: Send + Sync> Collection<T> {
    /// Drops the index named `name`.
    pub fn drop_index(&self, name: impl AsRef<str>) -> DropIndex<'_, T> {
        DropIndex {
            coll: self,
            index: Bson::String(name.as_ref().to_string()),
            options: DropIndexOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }

    /// Drops every index except the one on `_id`.
    pub fn drop_indexes(&self) -> DropIndex<'_, T> {
        DropIndex {
            index: Bson::String("*".into()),
            ..self.drop_index("*")
        }
    }
}

/// The action of [`Collection::drop_index`] and [`Collection::drop_indexes`].
#[must_use = "an action does nothing until awaited"]
pub struct DropIndex<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    index: Bson,
    options: DropIndexOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> DropIndex<'a, T> {
    options_and_session!(DropIndexOptions);
    option_setters!(DropIndexOptions;
        max_time: Duration,
        write_concern: WriteConcern,
        comment: #[into] Bson,
    );

    async fn execute(self) -> Result<()> {
        let o = self.options;
        let mut body = doc! { "dropIndexes": self.coll.name(), "index": self.index };
        put_max_time(&mut body, o.max_time);
        put(&mut body, "comment", o.comment);
        let write_concern = self.coll.resolve_write_concern(o.write_concern);
        let op = CatalogCommand::new("dropIndexes", &self.coll.ns().db, body, write_concern)?;
        let settings = self.coll.operation_settings(&self.overrides);
        execute(self.coll.client(), op, self.session, &settings).await
    }
}

action_future!(DropIndex<'a, T> where [T: Send + Sync + 'a] => ());
