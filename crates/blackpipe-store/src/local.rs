//! The databases a server builds rather than stores, read-only: `local` as mongod's replica set
//! members have it (`oplog.rs`, this store's op log in mongod's entry format, and
//! `system.replset`, the configuration as the deployment last set it), and a router's `config`
//! catalog (the documents the deployment last set). Each read builds the collection afresh from
//! what the store holds (the op log is bounded, so the copy is too); the read commands then run
//! on it as on any collection.

use std::sync::{Arc, RwLock};

use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, doc};

use crate::Store;
use crate::catalog::{CollectionHandle, lock};
use crate::collection::Collection;
use crate::oplog::{Change, OplogEntry};

/// The `local` database's name.
pub(crate) const LOCAL: &str = "local";

/// The collections of `local` the store builds.
const LOCAL_COLLECTIONS: [&str; 2] = ["oplog.rs", "system.replset"];

/// A router's sharding catalog database.
pub(crate) const CONFIG: &str = "config";

/// Collections a deployment hands the store: each name with its documents.
pub(crate) type BuiltCollections = Vec<(String, Vec<Document>)>;

impl Store {
    /// Sets the document `local.system.replset` holds (the replica set's configuration);
    /// the deployment calls it whenever the configuration may have changed.
    pub fn set_replica_set_config(&self, config: Document) {
        *lock(&self.replica_set_config) = Some(config);
    }

    /// Sets a router's `config` catalog: each collection's documents (replacing the catalog
    /// set before); the deployment calls it whenever the catalog may have changed.
    pub fn set_config_catalog(&self, collections: BuiltCollections) {
        *lock(&self.config_catalog) = Some(collections);
    }

    /// The collections of `config` the deployment set (none on a store that serves no router).
    pub(crate) fn config_collections(&self) -> Vec<(String, CollectionHandle)> {
        lock(&self.config_catalog)
            .iter()
            .flatten()
            .map(|(name, documents)| {
                (
                    name.clone(),
                    built(CONFIG, name, Document::new(), documents.clone()),
                )
            })
            .collect()
    }

    /// `config.<name>` when the deployment set it.
    pub(crate) fn config_collection(&self, name: &str) -> Option<CollectionHandle> {
        let catalog = lock(&self.config_catalog);
        let (_, documents) = catalog.as_ref()?.iter().find(|(own, _)| own == name)?;
        Some(built(CONFIG, name, Document::new(), documents.clone()))
    }

    /// The collections of `local` the store builds, by name: none until the store is a
    /// replica set member's (a standalone mongod has no op log).
    pub(crate) fn local_collections(&self) -> Vec<(String, CollectionHandle)> {
        LOCAL_COLLECTIONS
            .iter()
            .filter_map(|name| Some(((*name).to_owned(), self.local_collection(name)?)))
            .collect()
    }

    /// `local.<name>` when it is one of the collections the store builds (`oplog.rs`,
    /// `system.replset`) and the store is a replica set member's; `None` otherwise.
    pub(crate) fn local_collection(&self, name: &str) -> Option<CollectionHandle> {
        if lock(&self.replica_set_config).is_none() {
            return None;
        }
        let documents: Vec<Document> = match name {
            "oplog.rs" => lock(&self.oplog)
                .since(crate::OpTime::ZERO)
                .iter()
                .map(entry_document)
                .collect(),
            "system.replset" => lock(&self.replica_set_config).iter().cloned().collect(),
            _ => return None,
        };
        // The op log is a capped collection bounded by the bytes its entries may hold
        // (`collStats` reports `maxSize`, which shells read).
        let options = if name == "oplog.rs" {
            doc! { "capped": true, "size": i64::try_from(crate::oplog::MAX_OPLOG_BYTES).unwrap_or(i64::MAX) }
        } else {
            Document::new()
        };
        Some(built(LOCAL, name, options, documents))
    }
}

/// A collection `db.name` holding `documents` in that (natural) order, unindexed: op log
/// entries carry no `_id`, and the catalogs are read, never written.
fn built(db: &str, name: &str, options: Document, documents: Vec<Document>) -> CollectionHandle {
    let mut collection = Collection::new(format!("{db}.{name}"), [0; 16], options);
    for document in documents {
        collection.append_unindexed(document);
    }
    Arc::new(RwLock::new(collection))
}

/// One op log entry as mongod writes it in `local.oplog.rs`: `ts`, `v`, `op` (`i`, `u`, `d`,
/// `c`, `n`), `ns`, `ui`, `o`, `o2` (an update's `_id`), `wall`, and the session fields of a
/// retryable or transactional write.
fn entry_document(entry: &OplogEntry) -> Document {
    let (op, object) = op_and_object(entry);
    let mut document = doc! {
        "ts": entry.op_time.ts,
        "v": 2_i64,
        "op": op,
        "ns": &entry.ns,
    };
    if let Some(uuid) = entry.uuid {
        document.insert(
            "ui",
            Binary {
                subtype: BinarySubtype::Uuid,
                bytes: uuid.to_vec(),
            },
        );
    }
    document.insert("o", object);
    if matches!(entry.change, Change::Update { .. } | Change::Replace(_)) {
        if let Some(id) = &entry.id {
            document.insert("o2", doc! { "_id": id.clone() });
        }
    }
    if let Some(session) = &entry.session {
        document.insert("lsid", (*session.lsid).clone());
        document.insert("txnNumber", session.txn_number);
    }
    document.insert("wall", entry.op_time.wall);
    document
}

/// The entry's `op` letter and `o` object.
fn op_and_object(entry: &OplogEntry) -> (&'static str, Document) {
    let collection = entry.db_and_collection().1.to_owned();
    let id = || doc! { "_id": entry.id.clone().unwrap_or(Bson::Null) };
    match &entry.change {
        Change::Insert(document) | Change::Replace(document) => {
            let op = if matches!(entry.change, Change::Insert(_)) {
                "i"
            } else {
                "u"
            };
            (op, (**document).clone())
        }
        Change::Update { description, .. } => {
            let removed: Document = description
                .get_array("removedFields")
                .map(|fields| {
                    fields
                        .iter()
                        .filter_map(Bson::as_str)
                        .map(|field| (field.to_owned(), Bson::Boolean(false)))
                        .collect()
                })
                .unwrap_or_default();
            let updated = description
                .get_document("updatedFields")
                .cloned()
                .unwrap_or_default();
            let mut diff = Document::new();
            if !updated.is_empty() {
                diff.insert("u", updated);
            }
            if !removed.is_empty() {
                diff.insert("d", removed);
            }
            ("u", doc! { "$v": 2, "diff": diff })
        }
        Change::Delete => ("d", id()),
        Change::Create(options) => {
            let mut object = doc! { "create": &collection };
            object.extend((**options).clone());
            ("c", object)
        }
        Change::CreateIndexes(specs) => {
            let mut object = doc! { "createIndexes": &collection };
            if let Some(spec) = specs.first() {
                object.extend(spec.clone());
            }
            ("c", object)
        }
        Change::DropIndexes(names) => (
            "c",
            doc! { "dropIndexes": &collection, "index": names.first().cloned().unwrap_or_default() },
        ),
        Change::Modify(options) => {
            let mut object = doc! { "collMod": &collection };
            object.extend((**options).clone());
            ("c", object)
        }
        Change::Drop => ("c", doc! { "drop": &collection }),
        Change::Rename { to, .. } => (
            "c",
            doc! { "renameCollection": &entry.ns, "to": to, "stayTemp": false },
        ),
        Change::DropDatabase => ("c", doc! { "dropDatabase": 1 }),
        Change::Noop(message) => ("n", (**message).clone()),
    }
}
