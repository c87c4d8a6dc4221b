//! Database- and client-level CRUD methods (listings, drops, database aggregation), kept
//! beside the collection code rather than in `db.rs`/`client.rs`.

use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document, doc};
use futures_util::TryStreamExt;
use futures_util::future::BoxFuture;
use steadfast_core::options::WriteConcern;

use super::action::Aggregate;
use super::exec::{execute, open_cursor};
use super::inherit::Inherited;
use crate::client::Client;
use crate::coll::exec::OperationOverrides;
use crate::cursor::{Cursor, CursorSettings, deserialize};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::executor::run_command::RunCommand as RunCommandOp;
use crate::operation::admin::CatalogCommand;
use crate::operation::aggregate::AggregateTarget;
use crate::operation::fields::put;
use crate::operation::list::{CursorCommand, ListCursor, ListDatabases as ListDatabasesOp};
use crate::options::{
    CollectionOptions, CreateCollectionOptions, CursorType, DropDatabaseOptions,
    ListCollectionsOptions, ListDatabasesOptions,
};
use crate::results::{CollectionSpecification, DatabaseSpecification};
use crate::session::ClientSession;
use steadfast_core::selection::SelectionCriteria;

impl Database {
    /// What operations on this database inherit.
    pub(crate) fn inherited(&self) -> Inherited {
        Inherited::new(
            self.client(),
            &self.options().overridden_by(&CollectionOptions::default()),
        )
    }

    /// Runs a collection-less aggregation (`$currentOp`, `$listLocalSessions`, ...).
    pub fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_> {
        Aggregate::new(
            self.client(),
            AggregateTarget::Database(self.name().to_string()),
            pipeline.into_iter().collect(),
            self.inherited(),
        )
    }

    /// Lists the database's collections and views. Awaiting the action returns a cursor of
    /// [`CollectionSpecification`]s.
    pub fn list_collections(&self) -> ListCollections<'_> {
        ListCollections {
            db: self,
            options: ListCollectionsOptions::default(),
            overrides: OperationOverrides::default(),
        }
    }

    /// The names of the database's collections and views (`nameOnly: true`): the action of
    /// [`Database::list_collections`] that yields names; it takes the same options.
    pub fn list_collection_names(&self) -> ListCollections<'_, true> {
        ListCollections {
            db: self,
            options: ListCollectionsOptions::default(),
            overrides: OperationOverrides::default(),
        }
    }

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

/// The action of [`Database::list_collections`] (`NAMES = false`: a cursor of collection
/// specifications) and [`Database::list_collection_names`] (`NAMES = true`: the names).
#[must_use = "an action does nothing until awaited"]
pub struct ListCollections<'a, const NAMES: bool = false> {
    db: &'a Database,
    options: ListCollectionsOptions,
    overrides: OperationOverrides,
}

impl<'a, const NAMES: bool> ListCollections<'a, NAMES> {
    operation_overrides!();
    timeout_mode_setter!();

    /// Replaces every option at once.
    pub fn with_options(mut self, options: impl Into<Option<ListCollectionsOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }

    option_setters!(ListCollectionsOptions;
        filter: #[into] Document,
        authorized_collections: bool,
        batch_size: u32,
        comment: #[into] Bson,
    );

    async fn open<U>(self, name_only: bool) -> Result<Cursor<U>> {
        let o = self.options;
        let op = ListCursor::collections(
            self.db.name(),
            o.filter,
            name_only,
            o.authorized_collections,
            o.batch_size,
            o.comment.clone(),
        );
        let cursor_settings = CursorSettings {
            batch_size: o.batch_size,
            comment: o.comment,
            timeout_mode: self.overrides.timeout_mode,
            ..CursorSettings::default()
        };
        let settings = self.db.inherited().settings.overridden_by(&self.overrides);
        open_cursor(self.db.client(), op, settings, cursor_settings).await
    }
}

impl<'a> IntoFuture for ListCollections<'a, false> {
    type Output = Result<Cursor<CollectionSpecification>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.open(false))
    }
}

impl<'a> IntoFuture for ListCollections<'a, true> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let cursor: Cursor<Document> = self.open(true).await?;
            let entries: Vec<Document> = cursor.try_collect().await?;
            entries
                .iter()
                .map(|entry| name_of(entry, "listCollections"))
                .collect()
        })
    }
}

/// The `name` of a listing's entry.
///
/// # Errors
/// `InvalidResponse` when the entry has none.
pub(crate) fn name_of(entry: &Document, listing: &str) -> Result<String> {
    entry
        .get_str("name")
        .map(str::to_string)
        .map_err(|_| Error::protocol(format!("a {listing} entry has no name")))
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

    async fn run(self) -> Result<()> {
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

    async fn run(self) -> Result<()> {
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

/// The action of [`Database::run_command`].
#[must_use = "an action does nothing until awaited"]
pub struct RunCommand<'a> {
    db: &'a Database,
    command: Document,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
    criteria: Option<SelectionCriteria>,
}

impl<'a> RunCommand<'a> {
    pub(crate) fn new(db: &'a Database, command: Document) -> Self {
        RunCommand {
            db,
            command,
            overrides: OperationOverrides::default(),
            session: None,
            criteria: None,
        }
    }

    operation_overrides!();

    /// Runs the command in an explicit session.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.session = Some(session);
        self
    }

    /// Where the command runs (default: the primary). The command is sent as written: a read
    /// preference other than primary makes it eligible for secondaries, and the driver adds
    /// `$readPreference` where the topology needs it.
    pub fn selection_criteria(mut self, criteria: impl Into<SelectionCriteria>) -> Self {
        self.criteria = Some(criteria.into());
        self
    }

    async fn run(self) -> Result<Document> {
        let explicit = self.criteria.is_some();
        let criteria = self
            .criteria
            .unwrap_or_else(SelectionCriteria::primary_read);
        let op = RunCommandOp::new(self.db.name(), self.command, criteria)?
            .with_explicit_criteria(explicit);
        let settings = self.db.inherited().settings.overridden_by(&self.overrides);
        execute(self.db.client(), op, self.session, &settings).await
    }
}

action_future!(RunCommand<'a> => Document);

impl Database {
    /// Runs a command that opens a cursor (`find`, `aggregate`, `listCollections`, ... written
    /// by the application) and returns the cursor over its results. The command is sent as
    /// [`Database::run_command`] sends it; the cursor's `getMore`s use `batch_size` and, for a
    /// tailable await cursor, `max_await_time` as their `maxTimeMS`. The command itself must
    /// ask for a tailable cursor if `cursor_type` says so.
    pub fn run_cursor_command(&self, command: Document) -> RunCursorCommand<'_> {
        RunCursorCommand {
            db: self,
            command,
            batch_size: None,
            cursor_type: CursorType::NonTailable,
            max_await_time: None,
            overrides: OperationOverrides::default(),
        }
    }
}

/// The action of [`Database::run_cursor_command`].
#[must_use = "an action does nothing until awaited"]
pub struct RunCursorCommand<'a> {
    db: &'a Database,
    command: Document,
    batch_size: Option<u32>,
    cursor_type: CursorType,
    max_await_time: Option<Duration>,
    overrides: OperationOverrides,
}

impl<'a> RunCursorCommand<'a> {
    operation_overrides!();
    timeout_mode_setter!();

    /// The `batchSize` of the cursor's `getMore`s.
    pub fn batch_size(mut self, batch_size: u32) -> Self {
        self.batch_size = Some(batch_size);
        self
    }

    /// The kind of cursor the command opens (it decides which timeout modes apply and whether
    /// an empty batch ends the cursor).
    pub fn cursor_type(mut self, cursor_type: CursorType) -> Self {
        self.cursor_type = cursor_type;
        self
    }

    /// How long a tailable await cursor's `getMore` waits for data (its `maxTimeMS`).
    pub fn max_await_time(mut self, wait: Duration) -> Self {
        self.max_await_time = Some(wait);
        self
    }

    async fn run(self) -> Result<Cursor<Document>> {
        let op = CursorCommand::new(self.db.name(), self.command)?;
        let await_data = self.cursor_type == CursorType::TailableAwait;
        let cursor_settings = CursorSettings {
            batch_size: self.batch_size,
            max_await_time: self.max_await_time.filter(|_| await_data),
            tailable: self.cursor_type != CursorType::NonTailable,
            await_data,
            timeout_mode: self.overrides.timeout_mode,
            ..CursorSettings::default()
        };
        let settings = self.db.inherited().settings.overridden_by(&self.overrides);
        open_cursor(self.db.client(), op, settings, cursor_settings).await
    }
}

action_future!(RunCursorCommand<'a> => Cursor<Document>);
