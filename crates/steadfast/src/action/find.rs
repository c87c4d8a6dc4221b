//! `Collection::find` and `Collection::find_one`.

use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document};
use futures_util::future::BoxFuture;
use serde::de::DeserializeOwned;
use steadfast_core::options::ReadConcern;

use super::run::{open_cursor, open_session_cursor};
use super::{ExplicitSession, ImplicitSession};
use crate::coll::Collection;
use crate::cursor::{Cursor, CursorSettings, SessionCursor};
use crate::error::Result;
use crate::operation::find;
use crate::operation::settings::OperationOverrides;
use crate::options::{CursorType, FindOneOptions, FindOptions, Hint};
use crate::session::ClientSession;

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
        let own_read_concern = options.read_concern.is_some();
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
        )
        .with_own_read_concern(own_read_concern);
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
        allow_disk_use: bool,
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
    fn execute(self) -> impl Future<Output = Result<Option<T>>> + 'a
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

impl<'a, T: Send + Sync> Find<'a, T, ImplicitSession> {
    /// Runs the query and returns a [`RawBatchCursor`](crate::raw_batch_cursor::RawBatchCursor): the same cursor
    /// awaiting the action opens, handing out whole server batches, unparsed, instead of
    /// documents.
    ///
    /// # Errors
    /// As awaiting the action.
    pub async fn batch(self) -> Result<crate::raw_batch_cursor::RawBatchCursor> {
        let coll = self.coll;
        let (op, cursor_settings, overrides, _) = self.prepare();
        let settings = coll.operation_settings(&overrides);
        super::run::open_raw_batch_cursor(coll.client(), Box::new(op), settings, cursor_settings)
            .await
    }
}

impl<'a, T: Send + Sync> Find<'a, T, ExplicitSession<'a>> {
    /// Runs the query in the explicit session and returns a
    /// [`SessionRawBatchCursor`](crate::raw_batch_cursor::SessionRawBatchCursor): the same cursor awaiting the
    /// action opens, handing out whole server batches, unparsed, instead of documents.
    ///
    /// # Errors
    /// As awaiting the action.
    pub async fn batch(self) -> Result<crate::raw_batch_cursor::SessionRawBatchCursor> {
        let coll = self.coll;
        let (op, cursor_settings, overrides, ExplicitSession(session)) = self.prepare();
        let settings = coll.operation_settings(&overrides);
        super::run::open_raw_batch_session_cursor(
            coll.client(),
            Box::new(op),
            session,
            settings,
            cursor_settings,
        )
        .await
    }
}
