//! Getting collection handles from a database, kept beside the collection code rather than in
//! `db.rs`.

use super::Collection;
use crate::db::Database;
use crate::options::CollectionOptions;

impl Database {
    /// A handle to the collection `name` of this database, (de)serialising documents as `T`.
    /// No I/O: the collection need not exist yet.
    pub fn collection<T: Send + Sync>(&self, name: &str) -> Collection<T> {
        self.collection_with_options(name, CollectionOptions::default())
    }

    /// Like [`Database::collection`], with settings that override the database's.
    pub fn collection_with_options<T: Send + Sync>(
        &self,
        name: &str,
        options: CollectionOptions,
    ) -> Collection<T> {
        let settings = self.options().overridden_by(&options);
        Collection::new(self.clone(), name, settings)
    }
}
