//! Index management (create_index(es), drop_index(es), list_indexes, list_index_names) and
//! dropping the collection.

use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document, doc};
use futures_util::TryStreamExt;
use futures_util::future::BoxFuture;
use steadfast_core::options::WriteConcern;

use crate::coll::Collection;
use crate::coll::action::{ExplicitSession, ImplicitSession};
use crate::coll::db_actions::{drain_session_cursor, names_of};
use crate::coll::exec::{OperationOverrides, OperationSettings};
use crate::coll::exec::{execute, open_cursor, open_session_cursor};
use crate::cursor::{Cursor, CursorSettings, SessionCursor};
use crate::error::{Error, Result};
use crate::operation::admin::CatalogCommand;
use crate::operation::fields::{put, put_max_time};
use crate::operation::list::ListCursor;
use crate::options::{
    CreateIndexOptions, DropCollectionOptions, DropIndexOptions, IndexModel, ListIndexesOptions,
};
use crate::results::{CreateIndexResult, CreateIndexesResult};
use crate::session::ClientSession;

/// The server's code for a namespace that does not exist.
const NAMESPACE_NOT_FOUND: i32 = 26;

impl<T: Send + Sync> Collection<T> {
    /// Creates one index (nothing happens if an identical one exists).
    pub fn create_index(&self, index: IndexModel) -> CreateIndex<'_, T> {
        CreateIndex {
            inner: self.create_indexes([index]),
        }
    }

    /// Creates several indexes with one `createIndexes` command.
    pub fn create_indexes(
        &self,
        indexes: impl IntoIterator<Item = IndexModel>,
    ) -> CreateIndexes<'_, T> {
        CreateIndexes {
            coll: self,
            indexes: indexes.into_iter().collect(),
            options: CreateIndexOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }

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

    /// Lists the collection's indexes. Awaiting the action returns a cursor of
    /// [`IndexModel`]s.
    pub fn list_indexes(&self) -> ListIndexes<'_, T> {
        ListIndexes {
            coll: self,
            options: ListIndexesOptions::default(),
            overrides: OperationOverrides::default(),
            session: ImplicitSession,
        }
    }

    /// The names of the collection's indexes: the action of [`Collection::list_indexes`] that
    /// yields names; it takes the same options.
    pub fn list_index_names(&self) -> ListIndexes<'_, T, true> {
        ListIndexes {
            coll: self,
            options: ListIndexesOptions::default(),
            overrides: OperationOverrides::default(),
            session: ImplicitSession,
        }
    }

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

/// The action of [`Collection::create_index`].
#[must_use = "an action does nothing until awaited"]
pub struct CreateIndex<'a, T: Send + Sync> {
    inner: CreateIndexes<'a, T>,
}

impl<'a, T: Send + Sync> CreateIndex<'a, T> {
    /// Replaces every option at once.
    pub fn with_options(mut self, options: impl Into<Option<CreateIndexOptions>>) -> Self {
        self.inner = self.inner.with_options(options);
        self
    }

    /// Runs the operation in an explicit session.
    pub fn session(mut self, session: &'a mut ClientSession) -> Self {
        self.inner = self.inner.session(session);
        self
    }

    /// Sets timeoutMS for this operation alone (see [`CreateIndexes::timeout`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.inner = self.inner.timeout(timeout);
        self
    }

    /// Sets the retry policy for this operation alone (see [`CreateIndexes::retry_policy`]).
    pub fn retry_policy(mut self, policy: std::sync::Arc<dyn crate::retries::RetryPolicy>) -> Self {
        self.inner = self.inner.retry_policy(policy);
        self
    }

    /// Runs the operation within a deadline started by another (see [`CreateIndexes::within`]).
    pub(crate) fn within(mut self, deadline: steadfast_core::Deadline) -> Self {
        self.inner = self.inner.within(deadline);
        self
    }

    async fn run(self) -> Result<CreateIndexResult> {
        let mut names = self.inner.run().await?.index_names;
        let index_name = names
            .pop()
            .ok_or_else(|| Error::invalid_argument("no index to create"))?;
        Ok(CreateIndexResult { index_name })
    }
}

action_future!(CreateIndex<'a, T> where [T: Send + Sync + 'a] => CreateIndexResult);

/// The action of [`Collection::create_indexes`].
#[must_use = "an action does nothing until awaited"]
pub struct CreateIndexes<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    indexes: Vec<IndexModel>,
    options: CreateIndexOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> CreateIndexes<'a, T> {
    options_and_session!(CreateIndexOptions);
    option_setters!(CreateIndexOptions;
        commit_quorum: crate::options::CommitQuorum,
        max_time: Duration,
        write_concern: WriteConcern,
        comment: #[into] Bson,
    );

    async fn run(self) -> Result<CreateIndexesResult> {
        if self.indexes.is_empty() {
            return Err(Error::invalid_argument(
                "create_indexes needs at least one index",
            ));
        }
        if let Some(position) = self.indexes.iter().position(|i| i.keys.is_empty()) {
            return Err(Error::invalid_argument(format!(
                "index {position} has no keys"
            )));
        }
        let index_names: Vec<String> = self.indexes.iter().map(IndexModel::name).collect();
        let o = self.options;
        let mut body = doc! {
            "createIndexes": self.coll.name(),
            "indexes": self.indexes.iter().map(|i| Bson::Document(i.to_spec())).collect::<Vec<_>>(),
        };
        put(&mut body, "commitQuorum", o.commit_quorum);
        put_max_time(&mut body, o.max_time);
        put(&mut body, "comment", o.comment);
        let write_concern = self.coll.resolve_write_concern(o.write_concern);
        let op = CatalogCommand::new("createIndexes", &self.coll.ns().db, body, write_concern)?;
        let settings = self.coll.operation_settings(&self.overrides);
        execute(self.coll.client(), op, self.session, &settings).await?;
        Ok(CreateIndexesResult { index_names })
    }
}

action_future!(CreateIndexes<'a, T> where [T: Send + Sync + 'a] => CreateIndexesResult);

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

    async fn run(self) -> Result<()> {
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

/// The action of [`Collection::list_indexes`] (`NAMES = false`: a cursor of index models) and
/// [`Collection::list_index_names`] (`NAMES = true`: the names). After `.session(..)` the
/// listing runs in that session and the cursor is a [`SessionCursor`].
#[must_use = "an action does nothing until awaited"]
pub struct ListIndexes<'a, T: Send + Sync, const NAMES: bool = false, S = ImplicitSession> {
    coll: &'a Collection<T>,
    options: ListIndexesOptions,
    overrides: OperationOverrides,
    session: S,
}

impl<'a, T: Send + Sync, const NAMES: bool, S> ListIndexes<'a, T, NAMES, S> {
    operation_overrides!();
    timeout_mode_setter!();

    /// Replaces every option at once.
    pub fn with_options(mut self, options: impl Into<Option<ListIndexesOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }

    option_setters!(ListIndexesOptions;
        batch_size: u32,
        max_time: Duration,
        comment: #[into] Bson,
    );

    /// The command, the cursor's settings and the operation's settings.
    fn prepare(self) -> (ListCursor, CursorSettings, OperationSettings, S) {
        let o = self.options;
        let ns = self.coll.ns();
        let op = ListCursor::indexes(
            &ns.db,
            &ns.coll,
            o.batch_size,
            o.max_time,
            o.comment.clone(),
        );
        let cursor_settings = CursorSettings {
            batch_size: o.batch_size,
            comment: o.comment,
            timeout_mode: self.overrides.timeout_mode,
            ..CursorSettings::default()
        };
        let settings = self.coll.operation_settings(&self.overrides);
        (op, cursor_settings, settings, self.session)
    }
}

impl<'a, T: Send + Sync, const NAMES: bool> ListIndexes<'a, T, NAMES, ImplicitSession> {
    /// Lists the indexes in an explicit session; awaiting then returns a [`SessionCursor`]
    /// (or the names, for [`Collection::list_index_names`]).
    pub fn session(
        self,
        session: &'a mut ClientSession,
    ) -> ListIndexes<'a, T, NAMES, ExplicitSession<'a>> {
        ListIndexes {
            coll: self.coll,
            options: self.options,
            overrides: self.overrides,
            session: ExplicitSession(session),
        }
    }

    async fn documents<U>(self) -> Result<Cursor<U>> {
        let client = self.coll.client();
        let (op, cursor_settings, settings, _) = self.prepare();
        open_cursor(client, Box::new(op), settings, cursor_settings).await
    }
}

impl<'a, T: Send + Sync, const NAMES: bool> ListIndexes<'a, T, NAMES, ExplicitSession<'a>> {
    async fn session_documents<U>(self) -> Result<(SessionCursor<U>, &'a mut ClientSession)> {
        let client = self.coll.client();
        let (op, cursor_settings, settings, ExplicitSession(session)) = self.prepare();
        let cursor =
            open_session_cursor(client, Box::new(op), session, settings, cursor_settings).await?;
        Ok((cursor, session))
    }
}

impl<'a, T: Send + Sync + 'a> IntoFuture for ListIndexes<'a, T, false> {
    type Output = Result<Cursor<IndexModel>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.documents())
    }
}

impl<'a, T: Send + Sync + 'a> IntoFuture for ListIndexes<'a, T, false, ExplicitSession<'a>> {
    type Output = Result<SessionCursor<IndexModel>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { Ok(self.session_documents().await?.0) })
    }
}

impl<'a, T: Send + Sync + 'a> IntoFuture for ListIndexes<'a, T, true> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let cursor: Cursor<Document> = self.documents().await?;
            let specs: Vec<Document> = cursor.try_collect().await?;
            names_of(&specs, "listIndexes")
        })
    }
}

impl<'a, T: Send + Sync + 'a> IntoFuture for ListIndexes<'a, T, true, ExplicitSession<'a>> {
    type Output = Result<Vec<String>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (cursor, session) = self.session_documents::<Document>().await?;
            let specs = drain_session_cursor(cursor, session).await?;
            names_of(&specs, "listIndexes")
        })
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

    async fn run(self) -> Result<()> {
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
