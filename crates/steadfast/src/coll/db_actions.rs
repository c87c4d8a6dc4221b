//! Database- and client-level CRUD methods (listings, drops, database aggregation), kept
//! beside the collection code rather than in `db.rs`/`client.rs`.

use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document, doc};
use futures_util::TryStreamExt;
use futures_util::future::{BoxFuture, Either};
use steadfast_core::options::WriteConcern;

use super::action::{Aggregate, ExplicitSession, ImplicitSession};
use super::exec::{OperationSettings, execute, open_cursor, open_session_cursor};
use super::inherit::Inherited;
use crate::client::Client;
use crate::coll::exec::OperationOverrides;
use crate::cursor::{Cursor, CursorSettings, SessionCursor, deserialize};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::executor::run_command::RunCommand as RunCommandOp;
use crate::operation::admin::CatalogCommand;
use crate::operation::aggregate::AggregateTarget;
use crate::operation::fields::put;
use crate::operation::list::{ListCursor, ListDatabases as ListDatabasesOp};
use crate::options::{
    CollectionOptions, CreateCollectionOptions, DropDatabaseOptions, ListCollectionsOptions,
    ListDatabasesOptions,
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
            session: ImplicitSession,
        }
    }

    /// The names of the database's collections and views (`nameOnly: true`): the action of
    /// [`Database::list_collections`] that yields names; it takes the same options.
    pub fn list_collection_names(&self) -> ListCollections<'_, true> {
        ListCollections {
            db: self,
            options: ListCollectionsOptions::default(),
            overrides: OperationOverrides::default(),
            session: ImplicitSession,
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
/// specifications) and [`Database::list_collection_names`] (`NAMES = true`: the names). After
/// `.session(..)` the listing runs in that session and the cursor is a [`SessionCursor`].
#[must_use = "an action does nothing until awaited"]
pub struct ListCollections<'a, const NAMES: bool = false, S = ImplicitSession> {
    db: &'a Database,
    options: ListCollectionsOptions,
    overrides: OperationOverrides,
    session: S,
}

impl<'a, const NAMES: bool, S> ListCollections<'a, NAMES, S> {
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

    /// The command, the cursor's settings and the operation's settings.
    fn prepare(self, name_only: bool) -> (ListCursor, CursorSettings, OperationSettings, S) {
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
        (op, cursor_settings, settings, self.session)
    }
}

impl<'a, const NAMES: bool> ListCollections<'a, NAMES, ImplicitSession> {
    /// Lists the collections in an explicit session; awaiting then returns a
    /// [`SessionCursor`] (or the names, for [`Database::list_collection_names`]).
    pub fn session(
        self,
        session: &'a mut ClientSession,
    ) -> ListCollections<'a, NAMES, ExplicitSession<'a>> {
        ListCollections {
            db: self.db,
            options: self.options,
            overrides: self.overrides,
            session: ExplicitSession(session),
        }
    }

    async fn open<U>(self, name_only: bool) -> Result<Cursor<U>> {
        let client = self.db.client();
        let (op, cursor_settings, settings, _) = self.prepare(name_only);
        open_cursor(client, Box::new(op), settings, cursor_settings).await
    }
}

impl<'a, const NAMES: bool> ListCollections<'a, NAMES, ExplicitSession<'a>> {
    async fn open_in_session<U>(
        self,
        name_only: bool,
    ) -> Result<(SessionCursor<U>, &'a mut ClientSession)> {
        let client = self.db.client();
        let (op, cursor_settings, settings, ExplicitSession(session)) = self.prepare(name_only);
        let cursor =
            open_session_cursor(client, Box::new(op), session, settings, cursor_settings).await?;
        Ok((cursor, session))
    }
}

impl<'a> IntoFuture for ListCollections<'a, false> {
    type Output = Result<Cursor<CollectionSpecification>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.open(false))
    }
}

impl<'a> IntoFuture for ListCollections<'a, false, ExplicitSession<'a>> {
    type Output = Result<SessionCursor<CollectionSpecification>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { Ok(self.open_in_session(false).await?.0) })
    }
}

impl<'a> IntoFuture for ListCollections<'a, true> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let cursor: Cursor<Document> = self.open(true).await?;
            let entries: Vec<Document> = cursor.try_collect().await?;
            names_of(&entries, "listCollections")
        })
    }
}

impl<'a> IntoFuture for ListCollections<'a, true, ExplicitSession<'a>> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (cursor, session) = self.open_in_session::<Document>(true).await?;
            let entries = drain_session_cursor(cursor, session).await?;
            names_of(&entries, "listCollections")
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

/// The `name` of every entry of a listing.
///
/// # Errors
/// `InvalidResponse` when an entry has none.
pub(crate) fn names_of(entries: &[Document], listing: &str) -> Result<Vec<String>> {
    entries
        .iter()
        .map(|entry| name_of(entry, listing))
        .collect()
}

/// Every document left in a session cursor, iterated in `session`.
///
/// # Errors
/// The first error a `getMore` or a document's decoding returns.
pub(crate) async fn drain_session_cursor(
    mut cursor: SessionCursor<Document>,
    session: &mut ClientSession,
) -> Result<Vec<Document>> {
    let mut documents = Vec::new();
    while let Some(document) = cursor.next(session).await {
        documents.push(document?);
    }
    Ok(documents)
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

    /// Builds the operation before the future is made, so that the future is the executor's
    /// alone (holding the operation boxed), not the action's, the operation's and the settings'
    /// around it: every call copies its future once, into a box.
    fn run(self) -> impl Future<Output = Result<Document>> + 'a {
        let RunCommand {
            db,
            command,
            overrides,
            session,
            criteria,
        } = self;
        let explicit = criteria.is_some();
        let criteria = criteria.unwrap_or_else(SelectionCriteria::primary_read);
        let op = match RunCommandOp::new(db.name(), command, criteria) {
            Ok(op) => op.with_explicit_criteria(explicit),
            Err(error) => return Either::Left(std::future::ready(Err(error))),
        };
        let settings = db.inherited().settings.overridden_by(&overrides);
        Either::Right(execute(db.client(), op, session, &settings))
    }
}

action_future!(RunCommand<'a> => Document);
