//! The `watch()` action of clients, databases and collections.

use std::future::IntoFuture;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use bson::{Bson, Document, Timestamp};
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use steadfast_core::options::ReadConcern;

use super::{ExplicitSession, ImplicitSession};
use crate::change_stream::ChangeStream;
use crate::change_stream::core::StreamCore;
use crate::change_stream::event::{ChangeStreamEvent, ResumeToken};
use crate::change_stream::session::SessionChangeStream;
use crate::client::Client;
use crate::coll::Collection;
use crate::cursor::{CursorSettings, cursor_timing};
use crate::db::Database;
use crate::error::Result;
use crate::operation::aggregate::AggregateTarget;
use crate::operation::change_stream::ChangeStreamSpec;
use crate::operation::inherited::Inherited;
use crate::operation::settings::{OperationOverrides, OperationSettings};
use crate::options::{
    ChangeStreamOptions, Collation, CollectionOptions, FullDocumentBeforeChangeType,
    FullDocumentType, SelectionCriteria,
};
use crate::session::ClientSession;

impl Client {
    /// Watches every change in the deployment (a `$changeStream` with
    /// `allChangesForCluster` on `admin`, 4.0+). Awaiting the action returns a
    /// [`ChangeStream`]; see [`crate::change_stream`].
    pub fn watch(&self) -> Watch<'_> {
        let inherited = Inherited::new(self, &CollectionOptions::default());
        Watch::new(
            self,
            AggregateTarget::Database("admin".into()),
            true,
            inherited,
        )
    }
}

impl Database {
    /// Watches the changes of every collection of this database (`aggregate: 1`). Awaiting
    /// the action returns a [`ChangeStream`]; see [`crate::change_stream`].
    pub fn watch(&self) -> Watch<'_> {
        let target = AggregateTarget::Database(self.name().to_string());
        Watch::new(self.client(), target, false, self.inherited())
    }
}

impl<T: Send + Sync> Collection<T> {
    /// Watches the changes of this collection. Awaiting the action returns a
    /// [`ChangeStream`] of [`ChangeStreamEvent<T>`]; see [`crate::change_stream`].
    pub fn watch(&self) -> Watch<'_, T> {
        let ns = self.namespace();
        let target = AggregateTarget::Collection {
            db: ns.db,
            coll: ns.coll,
        };
        Watch::new(self.client(), target, false, self.inherited())
    }
}

/// The action of `watch()`: set options with its methods, then await it.
#[must_use = "an action does nothing until awaited"]
pub struct Watch<'a, T = Document, S = ImplicitSession> {
    client: &'a Client,
    target: AggregateTarget,
    all_changes_for_cluster: bool,
    pipeline: Vec<Document>,
    options: ChangeStreamOptions,
    overrides: OperationOverrides,
    inherited: Inherited,
    session: S,
    _events: PhantomData<fn() -> T>,
}

impl<'a, T> Watch<'a, T> {
    fn new(
        client: &'a Client,
        target: AggregateTarget,
        all_changes_for_cluster: bool,
        inherited: Inherited,
    ) -> Self {
        Watch {
            client,
            target,
            all_changes_for_cluster,
            pipeline: Vec::new(),
            options: ChangeStreamOptions::default(),
            overrides: OperationOverrides::default(),
            inherited,
            session: ImplicitSession,
            _events: PhantomData,
        }
    }

    /// Runs the stream in an explicit session; awaiting then returns a
    /// [`SessionChangeStream`].
    pub fn session(self, session: &'a mut ClientSession) -> Watch<'a, T, ExplicitSession<'a>> {
        Watch {
            client: self.client,
            target: self.target,
            all_changes_for_cluster: self.all_changes_for_cluster,
            pipeline: self.pipeline,
            options: self.options,
            overrides: self.overrides,
            inherited: self.inherited,
            session: ExplicitSession(session),
            _events: PhantomData,
        }
    }
}

impl<'a, T, S> Watch<'a, T, S> {
    operation_overrides!();

    /// The action without its session, and the session.
    fn split(self) -> (Watch<'a, T>, S) {
        let watch = Watch {
            client: self.client,
            target: self.target,
            all_changes_for_cluster: self.all_changes_for_cluster,
            pipeline: self.pipeline,
            options: self.options,
            overrides: self.overrides,
            inherited: self.inherited,
            session: ImplicitSession,
            _events: PhantomData,
        };
        (watch, self.session)
    }

    /// Stages applied to the events after `$changeStream`. Keep `_id`: without it the stream
    /// cannot resume, and fails with `MissingResumeToken` at the first event. A pipeline that
    /// reshapes events needs [`ChangeStream::with_type`].
    pub fn pipeline(mut self, stages: impl IntoIterator<Item = Document>) -> Self {
        self.pipeline = stages.into_iter().collect();
        self
    }

    /// Replaces every option at once.
    pub fn with_options(mut self, options: impl Into<Option<ChangeStreamOptions>>) -> Self {
        self.options = options.into().unwrap_or_default();
        self
    }

    /// Sets [`ChangeStreamOptions::resume_after`]; takes
    /// [`ChangeStream::resume_token`]'s `Option` as it is.
    pub fn resume_after(mut self, token: impl Into<Option<ResumeToken>>) -> Self {
        self.options.resume_after = token.into();
        self
    }

    option_setters!(ChangeStreamOptions;
        full_document: FullDocumentType,
        full_document_before_change: FullDocumentBeforeChangeType,
        start_at_operation_time: Timestamp,
        start_after: ResumeToken,
        max_await_time: Duration,
        batch_size: u32,
        collation: Collation,
        read_concern: ReadConcern,
        selection_criteria: #[into] SelectionCriteria,
        show_expanded_events: bool,
        comment: #[into] Bson,
    );
}

impl<T> Watch<'_, T> {
    /// Opens the stream in `session` (`None`: an implicit one, returned for the stream to
    /// keep).
    async fn open(
        self,
        session: Option<&mut ClientSession>,
    ) -> Result<(StreamCore, Option<ClientSession>)> {
        let mut options = self.options;
        let cursor_settings = CursorSettings {
            batch_size: options.batch_size,
            limit: None,
            max_await_time: options.max_await_time,
            get_more_max_time: None,
            comment: options.comment.clone(),
            tailable: true,
            await_data: true,
            writes: false,
            timeout_mode: None,
        };
        let spec = ChangeStreamSpec {
            target: self.target,
            pipeline: self.pipeline,
            read_concern: self.inherited.read_concern(options.read_concern.take()),
            criteria: self.inherited.criteria(options.selection_criteria.take()),
            options,
            all_changes_for_cluster: self.all_changes_for_cluster,
        };
        let settings = self.inherited.settings.overridden_by(&self.overrides);
        let timing = cursor_timing(settings.timeout_in(session.as_deref()), &cursor_settings)?;
        let opening = OperationSettings {
            omit_max_time: timing.omit_max_time,
            ..settings.clone()
        };
        let executor = self.client.executor();
        let op = spec.aggregate(None)?;
        let (reply, pin) = executor
            .execute_cursor(Box::new(op), opening.context(session))
            .await?;
        let core = StreamCore::opened(
            Arc::clone(executor),
            spec,
            reply,
            pin.address,
            pin.connection,
            cursor_settings,
            settings,
        );
        Ok((core, pin.session))
    }
}

impl<'a, T> IntoFuture for Watch<'a, T, ImplicitSession>
where
    T: DeserializeOwned + Send + Sync + 'a,
{
    type Output = Result<ChangeStream<ChangeStreamEvent<T>>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (core, session) = self.open(None).await?;
            Ok(ChangeStream::new(core, session))
        })
    }
}

impl<'a, T> IntoFuture for Watch<'a, T, ExplicitSession<'a>>
where
    T: DeserializeOwned + Send + Sync + 'a,
{
    type Output = Result<SessionChangeStream<ChangeStreamEvent<T>>>;
    type IntoFuture = BoxFuture<'a, Self::Output>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let (watch, ExplicitSession(session)) = self.split();
            let (core, _) = watch.open(Some(session)).await?;
            Ok(SessionChangeStream::new(core))
        })
    }
}
