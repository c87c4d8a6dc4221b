//! `aggregate` on a collection or a database: a pipeline whose results come back in a cursor.

use std::future::IntoFuture;
use std::marker::PhantomData;
use std::time::Duration;

use bson::{Bson, Document};
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use steadfast_core::options::{ReadConcern, WriteConcern};

use super::run::{open_cursor, open_session_cursor};
use super::{ExplicitSession, ImplicitSession};
use crate::client::Client;
use crate::coll::Collection;
use crate::cursor::{Cursor, CursorSettings, SessionCursor};
use crate::db::Database;
use crate::error::Result;
use crate::operation::aggregate::{self, AggregateTarget};
use crate::operation::inherited::Inherited;
use crate::operation::settings::OperationOverrides;
use crate::options::{AggregateOptions, Hint};
use crate::session::ClientSession;

impl<T: Send + Sync> Collection<T> {
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

impl Database {
    /// Runs a collection-less aggregation (`$currentOp`, `$listLocalSessions`, ...).
    pub fn aggregate(&self, pipeline: impl IntoIterator<Item = Document>) -> Aggregate<'_> {
        Aggregate::new(
            self.client(),
            AggregateTarget::Database(self.name().to_string()),
            pipeline.into_iter().collect(),
            self.inherited(),
        )
    }
}

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
        let own_concerns = (
            options.read_concern.is_some(),
            options
                .write_concern
                .as_ref()
                .is_some_and(|wc| !wc.is_empty()),
        );
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
        )
        .with_own_concerns(own_concerns.0, own_concerns.1);
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

impl<'a, T> Aggregate<'a, ImplicitSession, T> {
    /// Runs the pipeline and returns a [`RawBatchCursor`](crate::raw_batch_cursor::RawBatchCursor): the same cursor
    /// awaiting the action opens, handing out whole server batches, unparsed, instead of
    /// documents.
    ///
    /// # Errors
    /// As awaiting the action.
    pub async fn batch(self) -> Result<crate::raw_batch_cursor::RawBatchCursor> {
        let overrides = self.overrides.clone();
        let (client, op, cursor_settings, inherited, _) = self.prepare();
        let settings = inherited.settings.overridden_by(&overrides);
        super::run::open_raw_batch_cursor(client, Box::new(op), settings, cursor_settings).await
    }
}

impl<'a, T> Aggregate<'a, ExplicitSession<'a>, T> {
    /// Runs the pipeline in the explicit session and returns a
    /// [`SessionRawBatchCursor`](crate::raw_batch_cursor::SessionRawBatchCursor): the same cursor awaiting the
    /// action opens, handing out whole server batches, unparsed, instead of documents.
    ///
    /// # Errors
    /// As awaiting the action.
    pub async fn batch(self) -> Result<crate::raw_batch_cursor::SessionRawBatchCursor> {
        let overrides = self.overrides.clone();
        let (client, op, cursor_settings, inherited, ExplicitSession(session)) = self.prepare();
        let settings = inherited.settings.overridden_by(&overrides);
        super::run::open_raw_batch_session_cursor(
            client,
            Box::new(op),
            session,
            settings,
            cursor_settings,
        )
        .await
    }
}
