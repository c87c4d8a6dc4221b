//! Databases and collections, with per-collection locks.
//!
//! Lock order (never reversed): a session record (retryable writes) -> the catalog maps (held only
//! long enough to clone an `Arc`) -> one collection -> the op log. The cursor registry and the
//! random generator are only ever locked alone.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use bson::Document;

use super::collection::Collection;
use super::errors::{CommandError, StoreResult};
use crate::code;

/// A collection behind its own lock.
pub(crate) type CollectionHandle = Arc<RwLock<Collection>>;

/// Reads through a lock even if a panicking thread poisoned it: the store's invariants are
/// restored before any code that could panic, and a test server must keep serving.
pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

/// Writes through a lock even if it is poisoned (see [`read`]).
pub(crate) fn write<T>(lock: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    lock.write().unwrap_or_else(PoisonError::into_inner)
}

/// Locks a mutex even if it is poisoned (see [`read`]).
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

#[derive(Debug, Default)]
struct Database {
    collections: RwLock<BTreeMap<String, CollectionHandle>>,
}

/// Every database of the store.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    databases: RwLock<BTreeMap<String, Arc<Database>>>,
}

/// Validates a database name as mongod does.
pub(crate) fn validate_database_name(db: &str) -> StoreResult<()> {
    let invalid =
        db.is_empty() || db.len() >= 64 || db.contains(['/', '\\', '.', ' ', '"', '$', '\0']);
    if invalid {
        return Err(CommandError::new(
            code::INVALID_NAMESPACE,
            format!("Invalid database name: '{db}'"),
        ));
    }
    Ok(())
}

/// Validates a collection name within a database.
pub(crate) fn validate_namespace(db: &str, collection: &str) -> StoreResult<()> {
    validate_database_name(db)?;
    let invalid =
        collection.is_empty() || collection.starts_with('.') || collection.contains(['$', '\0']);
    if invalid {
        return Err(CommandError::new(
            code::INVALID_NAMESPACE,
            format!("Invalid namespace specified '{db}.{collection}'"),
        ));
    }
    Ok(())
}

impl Catalog {
    fn database(&self, db: &str) -> Option<Arc<Database>> {
        read(&self.databases).get(db).cloned()
    }

    /// The collection, if it exists.
    pub(crate) fn collection(&self, db: &str, collection: &str) -> Option<CollectionHandle> {
        let database = self.database(db)?;
        let collections = read(&database.collections);
        collections.get(collection).cloned()
    }

    /// The collection, created (implicitly, as a write does) if missing; `true` if created.
    pub(crate) fn collection_or_create(
        &self,
        db: &str,
        collection: &str,
        uuid: impl FnOnce() -> [u8; 16],
    ) -> (CollectionHandle, bool) {
        if let Some(existing) = self.collection(db, collection) {
            return (existing, false);
        }
        let database = self.database_or_new(db);
        let mut collections = write(&database.collections);
        if let Some(existing) = collections.get(collection) {
            return (existing.clone(), false);
        }
        let handle = Arc::new(RwLock::new(Collection::new(
            format!("{db}.{collection}"),
            uuid(),
            Document::new(),
        )));
        collections.insert(collection.to_owned(), handle.clone());
        (handle, true)
    }

    /// The database `db`, created empty if it does not exist yet.
    fn database_or_new(&self, db: &str) -> Arc<Database> {
        write(&self.databases)
            .entry(db.to_owned())
            .or_default()
            .clone()
    }

    /// Adds `collection` as `db.name` unless that name is taken; `false` if it was.
    pub(crate) fn install(&self, db: &str, name: &str, collection: Collection) -> bool {
        let database = self.database_or_new(db);
        let mut collections = write(&database.collections);
        if collections.contains_key(name) {
            return false;
        }
        collections.insert(name.to_owned(), Arc::new(RwLock::new(collection)));
        true
    }

    /// Creates a collection with options; an existing one with the same options is fine.
    pub(crate) fn create(
        &self,
        db: &str,
        collection: &str,
        options: Document,
        uuid: [u8; 16],
    ) -> StoreResult<bool> {
        let database = self.database_or_new(db);
        let mut collections = write(&database.collections);
        if let Some(existing) = collections.get(collection) {
            let existing = read(existing);
            if existing.options == options {
                return Ok(false);
            }
            return Err(CommandError::new(
                code::NAMESPACE_EXISTS,
                format!("Collection {db}.{collection} already exists with different options"),
            ));
        }
        collections.insert(
            collection.to_owned(),
            Arc::new(RwLock::new(Collection::new(
                format!("{db}.{collection}"),
                uuid,
                options,
            ))),
        );
        Ok(true)
    }

    /// Drops a collection, returning it if it existed. An emptied database disappears.
    pub(crate) fn drop_collection(&self, db: &str, collection: &str) -> Option<CollectionHandle> {
        let mut databases = write(&self.databases);
        let database = databases.get(db)?.clone();
        let mut collections = write(&database.collections);
        let dropped = collections.remove(collection);
        if collections.is_empty() {
            drop(collections);
            databases.remove(db);
        }
        dropped
    }

    /// Moves a collection to another name (possibly in another database), dropping an existing
    /// target first when `drop_target` is set. Errors mirror mongod's renameCollection.
    pub(crate) fn rename(
        &self,
        (source_db, source): (&str, &str),
        (target_db, target): (&str, &str),
        drop_target: bool,
    ) -> StoreResult<Renamed> {
        // One write lock over the whole catalog makes the move atomic for every reader.
        let mut databases = write(&self.databases);
        let missing_source = || {
            CommandError::new(
                code::NAMESPACE_NOT_FOUND,
                format!("Source collection {source_db}.{source} does not exist"),
            )
        };
        let source_database = databases
            .get(source_db)
            .cloned()
            .ok_or_else(missing_source)?;
        if !read(&source_database.collections).contains_key(source) {
            return Err(missing_source());
        }
        let target_database = databases.entry(target_db.to_owned()).or_default().clone();
        if read(&target_database.collections).contains_key(target) && !drop_target {
            return Err(CommandError::new(
                code::NAMESPACE_EXISTS,
                "target namespace exists",
            ));
        }
        let handle = write(&source_database.collections)
            .remove(source)
            .ok_or_else(missing_source)?;
        let uuid = {
            let mut moved = write(&handle);
            moved.ns = format!("{target_db}.{target}");
            moved.uuid
        };
        let replaced = write(&target_database.collections).insert(target.to_owned(), handle);
        if read(&source_database.collections).is_empty() {
            databases.remove(source_db);
        }
        Ok(Renamed {
            uuid,
            dropped_target: replaced.map(|replaced| read(&replaced).uuid),
        })
    }

    /// Drops a database; `true` if it existed.
    pub(crate) fn drop_database(&self, db: &str) -> bool {
        write(&self.databases).remove(db).is_some()
    }

    /// Names of the databases that hold at least one collection.
    pub(crate) fn database_names(&self) -> Vec<String> {
        read(&self.databases)
            .iter()
            .filter(|(_, database)| !read(&database.collections).is_empty())
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// The collections of a database, sorted by name.
    pub(crate) fn collections(&self, db: &str) -> Vec<(String, CollectionHandle)> {
        let Some(database) = self.database(db) else {
            return Vec::new();
        };
        read(&database.collections)
            .iter()
            .map(|(name, handle)| (name.clone(), handle.clone()))
            .collect()
    }
}

/// What a rename did: the UUID of the collection moved, and of the one `dropTarget` replaced.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Renamed {
    pub(crate) uuid: [u8; 16],
    pub(crate) dropped_target: Option<[u8; 16]>,
}
