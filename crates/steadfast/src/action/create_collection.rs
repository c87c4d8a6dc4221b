//! `Database::create_collection`: a collection or a view, created explicitly.

use std::time::Duration;

use bson::{Bson, Document, doc};
use steadfast_core::options::WriteConcern;

use super::run::execute;
use crate::db::Database;
use crate::error::Result;
use crate::operation::admin::CatalogCommand;
use crate::operation::fields::put;
use crate::operation::settings::OperationOverrides;
use crate::options::CreateCollectionOptions;
use crate::session::ClientSession;

impl Database {
    /// Creates a collection (or a view, with `view_on` and `pipeline`) explicitly.
    pub fn create_collection(&self, name: impl AsRef<str>) -> CreateCollection<'_> {
        CreateCollection {
            db: self,
            name: name.as_ref().to_string(),
            options: CreateCollectionOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }
}

/// The action of [`Database::create_collection`].
#[must_use = "an action does nothing until awaited"]
pub struct CreateCollection<'a> {
    db: &'a Database,
    name: String,
    options: CreateCollectionOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a> CreateCollection<'a> {
    options_and_session!(CreateCollectionOptions);
    option_setters!(CreateCollectionOptions;
        capped: bool,
        size: u64,
        max: u64,
        storage_engine: #[into] Document,
        validator: #[into] Document,
        validation_level: crate::options::ValidationLevel,
        validation_action: crate::options::ValidationAction,
        view_on: #[into] String,
        pipeline: #[iter] Document,
        collation: crate::options::Collation,
        write_concern: WriteConcern,
        index_option_defaults: crate::options::IndexOptionDefaults,
        timeseries: crate::options::TimeseriesOptions,
        expire_after_seconds: Duration,
        change_stream_pre_and_post_images: crate::options::ChangeStreamPreAndPostImages,
        clustered_index: crate::options::ClusteredIndex,
        comment: #[into] Bson,
    );

    async fn execute(self) -> Result<()> {
        let o = self.options;
        let as_i64 = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        let mut body = doc! { "create": self.name };
        put(&mut body, "capped", o.capped);
        put(&mut body, "size", o.size.map(as_i64));
        put(&mut body, "max", o.max.map(as_i64));
        put(&mut body, "storageEngine", o.storage_engine);
        put(&mut body, "validator", o.validator);
        put(&mut body, "validationLevel", o.validation_level);
        put(&mut body, "validationAction", o.validation_action);
        put(&mut body, "collation", o.collation);
        put(&mut body, "viewOn", o.view_on);
        put(
            &mut body,
            "pipeline",
            o.pipeline
                .map(|stages| stages.into_iter().map(Bson::Document).collect::<Vec<_>>()),
        );
        put(&mut body, "timeseries", o.timeseries);
        put(
            &mut body,
            "expireAfterSeconds",
            o.expire_after_seconds.map(|d| as_i64(d.as_secs())),
        );
        put(&mut body, "indexOptionDefaults", o.index_option_defaults);
        put(
            &mut body,
            "changeStreamPreAndPostImages",
            o.change_stream_pre_and_post_images,
        );
        put(&mut body, "clusteredIndex", o.clustered_index);
        put(&mut body, "comment", o.comment);
        let inherited = self.db.inherited();
        let write_concern = inherited.write_concern(o.write_concern);
        let op = CatalogCommand::new("create", self.db.name(), body, write_concern)?;
        execute(
            self.db.client(),
            op,
            self.session,
            &inherited.settings.overridden_by(&self.overrides),
        )
        .await
    }
}

action_future!(CreateCollection<'a> => ());
