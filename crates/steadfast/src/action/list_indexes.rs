//! `Collection::list_indexes` and `Collection::list_index_names`.

use std::future::IntoFuture;
use std::time::Duration;

use bson::{Bson, Document};
use futures_util::TryStreamExt;
use futures_util::future::BoxFuture;

use super::list_collections::{drain_session_cursor, names_of};
use super::run::{open_cursor, open_session_cursor};
use super::{ExplicitSession, ImplicitSession};
use crate::coll::Collection;
use crate::cursor::{Cursor, CursorSettings, SessionCursor};
use crate::error::Result;
use crate::operation::list::ListCursor;
use crate::operation::settings::{OperationOverrides, OperationSettings};
use crate::options::{IndexModel, ListIndexesOptions};
use crate::session::ClientSession;

impl<T: Send + Sync> Collection<T> {
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
}

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

impl<T: Send + Sync> ListIndexes<'_, T, false, ImplicitSession> {
    /// Runs the listing and returns a [`RawBatchCursor`](crate::raw_batch_cursor::RawBatchCursor): the same cursor
    /// awaiting the action opens, handing out whole server batches, unparsed, instead of
    /// documents.
    ///
    /// # Errors
    /// As awaiting the action.
    pub async fn batch(self) -> Result<crate::raw_batch_cursor::RawBatchCursor> {
        let client = self.coll.client();
        let (op, cursor_settings, settings, _) = self.prepare();
        super::run::open_raw_batch_cursor(client, Box::new(op), settings, cursor_settings).await
    }
}

impl<'a, T: Send + Sync> ListIndexes<'a, T, false, ExplicitSession<'a>> {
    /// Runs the listing in the explicit session and returns a
    /// [`SessionRawBatchCursor`](crate::raw_batch_cursor::SessionRawBatchCursor): the same cursor awaiting the
    /// action opens, handing out whole server batches, unparsed, instead of documents.
    ///
    /// # Errors
    /// As awaiting the action.
    pub async fn batch(self) -> Result<crate::raw_batch_cursor::SessionRawBatchCursor> {
        let client = self.coll.client();
        let (op, cursor_settings, settings, ExplicitSession(session)) = self.prepare();
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
