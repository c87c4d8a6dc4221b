//! The [`ForeignSource`] of an aggregate: the collections of the command's database as the
//! command sees them (`Exec::collection`: the shared collections, a transaction's private
//! copies, or the collections as of a snapshot or majority read's time) and its views, for
//! the stages that read other collections (`$lookup`, `$graphLookup`, `$unionWith`).
//!
//! Each name is resolved once per command: a snapshot read rebuilds a collection as of its
//! time, which a `$lookup` must not redo for every input document.

use std::collections::HashMap;

use super::Exec;
use super::views::{self, ResolvedView};
use crate::aggregate::{ForeignSource, Scan};
use crate::catalog::{CollectionHandle, read};
use crate::errors::StoreResult;
use crate::query::Filter;

/// The collections and views one command reads, through its [`Exec`].
pub(crate) struct ExecSource<'e, 'a> {
    exec: &'e mut Exec<'a>,
    collections: HashMap<String, Option<CollectionHandle>>,
    views: HashMap<String, Option<ResolvedView>>,
}

impl<'e, 'a> ExecSource<'e, 'a> {
    pub(crate) fn new(exec: &'e mut Exec<'a>) -> Self {
        ExecSource {
            exec,
            collections: HashMap::new(),
            views: HashMap::new(),
        }
    }
}

impl ForeignSource for ExecSource<'_, '_> {
    fn db(&self) -> &str {
        self.exec.db
    }

    fn scan(&mut self, name: &str, filter: &Filter) -> StoreResult<Option<Scan>> {
        if !self.collections.contains_key(name) {
            let handle = self.exec.collection(name)?;
            self.collections.insert(name.to_owned(), handle);
        }
        let Some(handle) = self.collections.get(name).and_then(Option::as_ref) else {
            return Ok(None);
        };
        let collection = read(handle);
        // The `_id` index finds pinned `_id`s; anything else is a full scan.
        let examined = filter
            .id_candidates()
            .map_or_else(|| collection.len(), |ids| ids.len());
        Ok(Some(Scan {
            documents: collection.matching_documents(filter, None),
            examined,
        }))
    }

    fn view(&mut self, name: &str) -> StoreResult<Option<ResolvedView>> {
        if !self.views.contains_key(name) {
            let view = views::resolve(self.exec, name)?;
            self.views.insert(name.to_owned(), view);
        }
        Ok(self.views.get(name).cloned().flatten())
    }
}
