//! find, find_one and aggregate: the actions that open cursors.

use std::future::IntoFuture;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use steadfast_core::options::{ReadConcern, WriteConcern};

use crate::client::Client;
use crate::coll::Collection;
use crate::coll::exec::OperationOverrides;
use crate::coll::exec::{open_cursor, open_session_cursor};
use crate::coll::inherit::Inherited;
use crate::cursor::{Cursor, CursorSettings, SessionCursor};
use crate::error::Result;
use crate::operation::aggregate::{self, AggregateTarget};
use crate::operation::find;
use crate::options::{AggregateOptions, CursorType, FindOneOptions, FindOptions, Hint};
use crate::session::ClientSession;

/// Marker: the action runs on an implicit session (the default).
#[derive(Clone, Copy, Debug, Default)]
pub struct ImplicitSession;

/// Marker: the action runs in the caller's session.
#[derive(Debug)]
pub struct ExplicitSession<'a>(pub(crate) &'a mut ClientSession);

impl<T: Send + Sync> Collection<T> {
    /// Finds the documents matching `filter`. Awaiting the action returns a [`Cursor`]
    /// (a [`SessionCursor`] after `.session(..)`).
    pub fn find(&self, filter: Document) -> Find<'_, T> {
        Find {
            coll: self,
            filter,
            options: FindOptions::default(),
            overrides: OperationOverrides::default(),
            session: ImplicitSession,
        }
    }

    /// Finds the first document matching `filter` (with `limit: 1` and `singleBatch`).
    pub fn find_one(&self, filter: Document) -> FindOne<'_, T> {
        FindOne {
            coll: self,
            filter,
            options: FindOneOptions::default(),
            overrides: OperationOverrides::default(),
            session: None,
        }
    }

    /// Runs an aggregation pipeline on this collection. Awaiting the action returns a cursor
    /// of documents (see `with_type` to deserialise them as another type). A pipeline ending
    /// in `$out` or `$merge` runs on the primary and is not retried as a read.
    pub fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_> {
        Aggregate::new(
            self.client(),
            AggregateTarget::Collection {
                db: self.ns().db.clone(),
                coll: self.ns().coll.clone(),
            },
            pipeline.into_iter().collect(),
            self.inherited(),
        )
    }
}

/// The action of [`Collection::find`].
#[must_use = "an action does nothing until awaited"]
pub struct Find<'a, T: Send + Sync, S = ImplicitSession> {
    coll: &'a Collection<T>,
    filter: Document,
    options: FindOptions,
    overrides: OperationOverrides,
    session: S,
}

impl<'a, T: Send + Sync, S> Find<'a, T, S> {
    operation_overrides!();
    timeout_mode_setter!();

    /// Replaces every option at once.
    pub fn with_options(mut self, options: impl Into<Option<FindOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }

    option_setters!(FindOptions;
        allow_disk_use: bool,
        allow_partial_results: bool,
        batch_size: u32,
        collation: crate::options::Collation,
        comment: #[into] Bson,
        cursor_type: CursorType,
        hint: #[into] Hint,
        limit: i64,
        max: #[into] Document,
        max_await_time: Duration,
        max_scan: u64,
        max_time: Duration,
        min: #[into] Document,
        no_cursor_timeout: bool,
        projection: #[into] Document,
        return_key: bool,
        show_record_id: bool,
        skip: u64,
        sort: #[into] Document,
        let_vars: #[into] Document,
        read_concern: ReadConcern,
        selection_criteria: #[into] crate::options::SelectionCriteria,
    );

    /// The operation and how its cursor fetches.
    fn prepare(self) -> (find::Find, CursorSettings, OperationOverrides, S) {
        let mut options = self.options;
        let tailable = matches!(
            options.cursor_type,
            Some(CursorType::Tailable | CursorType::TailableAwait)
        );
        let cursor_settings = CursorSettings {
            batch_size: options.batch_size,
            limit: options
                .limit
                .map(i64::unsigned_abs)
                .filter(|limit| *limit > 0),
            max_await_time: options
                .max_await_time
                .filter(|_| options.cursor_type == Some(CursorType::TailableAwait)),
            get_more_max_time: None,
            comment: options.comment.clone(),
            tailable,
            await_data: options.cursor_type == Some(CursorType::TailableAwait),
            writes: false,
            timeout_mode: self.overrides.timeout_mode,
        };
        let read_concern = self.coll.resolve_read_concern(options.read_concern.take());
        let criteria = self
            .coll
            .resolve_criteria(options.selection_criteria.take());
        let op = find::Find::new(
            self.coll.ns().clone(),
            self.filter,
            options,
            read_concern,
            criteria,
        );
        (op, cursor_settings, self.overrides, self.session)
    }
}

impl<'a, T: Send + Sync> Find<'a, T, ImplicitSession> {
    /// Runs the query in an explicit session; awaiting then returns a [`SessionCursor`].
    pub fn session(self, session: &'a mut ClientSession) -> Find<'a, T, ExplicitSession<'a>> {
        Find {
            coll: self.coll,
            filter: self.filter,
            options: self.options,
            overrides: self.overrides,
            session: ExplicitSession(session),
        }
    }
}

impl<'a, T> IntoFuture for Find<'a, T, ImplicitSession>
where
    T: DeserializeOwned + Send + Sync + 'a,
{
    type Output = Result<Cursor<T>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let coll = self.coll;
            let (op, cursor_settings, overrides, _) = self.prepare();
            let settings = coll.operation_settings(&overrides);
            open_cursor(coll.client(), Box::new(op), settings, cursor_settings).await
        })
    }
}

impl<'a, T> IntoFuture for Find<'a, T, ExplicitSession<'a>>
where
    T: DeserializeOwned + Send + Sync + 'a,
{
    type Output = Result<SessionCursor<T>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let coll = self.coll;
            let (op, cursor_settings, overrides, ExplicitSession(session)) = self.prepare();
            let settings = coll.operation_settings(&overrides);
            open_session_cursor(
                coll.client(),
                Box::new(op),
                session,
                settings,
                cursor_settings,
            )
            .await
        })
    }
}

/// The action of [`Collection::find_one`].
#[must_use = "an action does nothing until awaited"]
pub struct FindOne<'a, T: Send + Sync> {
    coll: &'a Collection<T>,
    filter: Document,
    options: FindOneOptions,
    overrides: OperationOverrides,
    session: Option<&'a mut ClientSession>,
}

impl<'a, T: Send + Sync> FindOne<'a, T> {
    options_and_session!(FindOneOptions);
    option_setters!(FindOneOptions;
        allow_partial_results: bool,
        collation: crate::options::Collation,
        comment: #[into] Bson,
        hint: #[into] Hint,
        max: #[into] Document,
        max_scan: u64,
        max_time: Duration,
        min: #[into] Document,
        projection: #[into] Document,
        return_key: bool,
        show_record_id: bool,
        skip: u64,
        sort: #[into] Document,
        let_vars: #[into] Document,
        read_concern: ReadConcern,
        selection_criteria: #[into] crate::options::SelectionCriteria,
    );

    /// Builds the operation before the future is made, so that the future holds it boxed,
    /// not the options it was built from (every call copies its future once, into a box).
    fn run(self) -> impl Future<Output = Result<Option<T>>> + 'a
    where
        T: DeserializeOwned + 'a,
    {
        let find = Find {
            coll: self.coll,
            filter: self.filter,
            options: FindOptions::from(self.options),
            overrides: self.overrides,
            session: ImplicitSession,
        };
        let (op, cursor_settings, find_overrides, _) = find.prepare();
        let op = Box::new(op.single());
        let client = self.coll.client();
        let settings = self.coll.operation_settings(&find_overrides);
        let session = self.session;
        async move {
            match session {
                Some(session) => {
                    let mut cursor: SessionCursor<T> =
                        open_session_cursor(client, op, session, settings, cursor_settings).await?;
                    if cursor.advance(session).await? {
                        cursor.deserialize_current().map(Some)
                    } else {
                        Ok(None)
                    }
                }
                None => {
                    let mut cursor: Cursor<T> =
                        open_cursor(client, op, settings, cursor_settings).await?;
                    if cursor.advance().await? {
                        cursor.deserialize_current().map(Some)
                    } else {
                        Ok(None)
                    }
                }
            }
        }
    }
}

action_future!(FindOne<'a, T> where [T: DeserializeOwned + Send + Sync + 'a] => Option<T>);

/// The action of `aggregate` on a collection or a database.
#[must_use = "an action does nothing until awaited"]
pub struct Aggregate<'a, S = ImplicitSession, T = Document> {
    client: &'a Client,
    target: AggregateTarget,
    pipeline: Vec<Document>,
    options: AggregateOptions,
    overrides: OperationOverrides,
    inherited: Inherited,
    session: S,
    _documents: PhantomData<fn() -> T>,
}

impl<'a> Aggregate<'a> {
    pub(crate) fn new(
        client: &'a Client,
        target: AggregateTarget,
        pipeline: Vec<Document>,
        inherited: Inherited,
    ) -> Self {
        Aggregate {
            client,
            target,
            pipeline,
            options: AggregateOptions::default(),
            overrides: OperationOverrides::default(),
            inherited,
            session: ImplicitSession,
            _documents: PhantomData,
        }
    }
}

impl<'a, S, T> Aggregate<'a, S, T> {
    operation_overrides!();
    timeout_mode_setter!();

    /// Replaces every option at once.
    pub fn with_options(mut self, options: impl Into<Option<AggregateOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }

    option_setters!(AggregateOptions;
        allow_disk_use: bool,
        batch_size: u32,
        bypass_document_validation: bool,
        collation: crate::options::Collation,
        comment: #[into] Bson,
        hint: #[into] Hint,
        let_vars: #[into] Document,
        max_await_time: Duration,
        max_time: Duration,
        read_concern: ReadConcern,
        selection_criteria: #[into] crate::options::SelectionCriteria,
        write_concern: WriteConcern,
    );

    /// Deserialises the results as `U` instead.
    pub fn with_type<U>(self) -> Aggregate<'a, S, U> {
        Aggregate {
            client: self.client,
            target: self.target,
            pipeline: self.pipeline,
            options: self.options,
            overrides: self.overrides,
            inherited: self.inherited,
            session: self.session,
            _documents: PhantomData,
        }
    }

    fn prepare(
        self,
    ) -> (
        &'a Client,
        aggregate::Aggregate,
        CursorSettings,
        Inherited,
        S,
    ) {
        let mut options = self.options;
        let cursor_settings = CursorSettings {
            batch_size: options.batch_size,
            limit: None,
            max_await_time: options.max_await_time,
            get_more_max_time: None,
            comment: options.comment.clone(),
            tailable: false,
            await_data: false,
            writes: crate::operation::fields::pipeline_writes(&self.pipeline),
            timeout_mode: self.overrides.timeout_mode,
        };
        let inherited = self.inherited;
        let read_concern = inherited.read_concern(options.read_concern.take());
        let write_concern = inherited.write_concern(options.write_concern.take());
        let criteria = inherited.criteria(options.selection_criteria.take());
        let op = aggregate::Aggregate::new(
            self.target,
            self.pipeline,
            options,
            read_concern,
            write_concern,
            criteria,
        );
        (self.client, op, cursor_settings, inherited, self.session)
    }
}

impl<'a, T> Aggregate<'a, ImplicitSession, T> {
    /// Runs the pipeline in an explicit session; awaiting then returns a [`SessionCursor`].
    pub fn session(self, session: &'a mut ClientSession) -> Aggregate<'a, ExplicitSession<'a>, T> {
        Aggregate {
            client: self.client,
            target: self.target,
            pipeline: self.pipeline,
            options: self.options,
            overrides: self.overrides,
            inherited: self.inherited,
            session: ExplicitSession(session),
            _documents: PhantomData,
        }
    }
}

impl<'a, T> IntoFuture for Aggregate<'a, ImplicitSession, T>
where
    T: DeserializeOwned + Send + Sync + 'a,
{
    type Output = Result<Cursor<T>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let overrides = self.overrides.clone();
            let (client, op, cursor_settings, inherited, _) = self.prepare();
            let settings = inherited.settings.overridden_by(&overrides);
            open_cursor(client, Box::new(op), settings, cursor_settings).await
        })
    }
}

impl<'a, T> IntoFuture for Aggregate<'a, ExplicitSession<'a>, T>
where
    T: DeserializeOwned + Send + Sync + 'a,
{
    type Output = Result<SessionCursor<T>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let overrides = self.overrides.clone();
            let (client, op, cursor_settings, inherited, ExplicitSession(session)) = self.prepare();
            let settings = inherited.settings.overridden_by(&overrides);
            open_session_cursor(client, Box::new(op), session, settings, cursor_settings).await
        })
    }
}
