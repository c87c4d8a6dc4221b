//! `Database::list_collections` and `Database::list_collection_names`, and the helpers the
//! listings share (entry names, draining a session cursor).

use std::future::IntoFuture;

use bson::{Bson, Document};
use futures_util::TryStreamExt;
use futures_util::future::BoxFuture;

use super::run::{open_cursor, open_session_cursor};
use super::{ExplicitSession, ImplicitSession};
use crate::cursor::{Cursor, CursorSettings, SessionCursor};
use crate::db::Database;
use crate::error::{Error, Result};
use crate::operation::list::ListCursor;
use crate::operation::settings::{OperationOverrides, OperationSettings};
use crate::options::ListCollectionsOptions;
use crate::results::CollectionSpecification;
use crate::session::ClientSession;

impl Database {
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
pub(super) fn name_of(entry: &Document, listing: &str) -> Result<String> {
    entry
        .get_str("name")
        .map(str::to_string)
        .map_err(|_| Error::protocol(format!("a {listing} entry has no name")))
}

/// The `name` of every entry of a listing.
///
/// # Errors
/// `InvalidResponse` when an entry has none.
pub(super) fn names_of(entries: &[Document], listing: &str) -> Result<Vec<String>> {
    entries
        .iter()
        .map(|entry| name_of(entry, listing))
        .collect()
}

/// Every document left in a session cursor, iterated in `session`.
///
/// # Errors
/// The first error a `getMore` or a document's decoding returns.
pub(super) async fn drain_session_cursor(
    mut cursor: SessionCursor<Document>,
    session: &mut ClientSession,
) -> Result<Vec<Document>> {
    let mut documents = Vec::new();
    while let Some(document) = cursor.next(session).await {
        documents.push(document?);
    }
    Ok(documents)
}

impl ListCollections<'_, false, ImplicitSession> {
    /// Runs the listing and returns a [`RawBatchCursor`](crate::raw_batch_cursor::RawBatchCursor): the same cursor
    /// awaiting the action opens, handing out whole server batches, unparsed, instead of
    /// documents.
    ///
    /// # Errors
    /// As awaiting the action.
    pub async fn batch(self) -> Result<crate::raw_batch_cursor::RawBatchCursor> {
        let client = self.db.client();
        let (op, cursor_settings, settings, _) = self.prepare(false);
        super::run::open_raw_batch_cursor(client, Box::new(op), settings, cursor_settings).await
    }
}

impl<'a> ListCollections<'a, false, ExplicitSession<'a>> {
    /// Runs the listing in the explicit session and returns a
    /// [`SessionRawBatchCursor`](crate::raw_batch_cursor::SessionRawBatchCursor): the same cursor awaiting the
    /// action opens, handing out whole server batches, unparsed, instead of documents.
    ///
    /// # Errors
    /// As awaiting the action.
    pub async fn batch(self) -> Result<crate::raw_batch_cursor::SessionRawBatchCursor> {
        let client = self.db.client();
        let (op, cursor_settings, settings, ExplicitSession(session)) = self.prepare(false);
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
