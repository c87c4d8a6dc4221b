//! Catalog commands: indexes, collections, databases and statistics.

use std::sync::Arc;

use bson::{Binary, Bson, Document, doc, spec::BinarySubtype};

use super::args::{
    collection_name, cursor_batch_size, is_generic_field, optional_bool, optional_document,
    required_array,
};
use super::find::{CursorOptions, open_cursor};
use super::write::collection_for_write;
use super::{Exec, views};
use crate::catalog::{read, validate_namespace, write};
use crate::code;
use crate::errors::{CommandError, StoreResult, format_value};
use crate::index::SecondaryIndex;
use crate::oplog::{Change, OplogWrite};
use crate::query::Filter;

fn count_as_i32(count: usize) -> i32 {
    i32::try_from(count).unwrap_or(i32::MAX)
}

fn size_as_i64(size: usize) -> i64 {
    i64::try_from(size).unwrap_or(i64::MAX)
}

/// An index specification without a `collation` takes the collection's default, as mongod
/// records it (so secondaries and change streams see it too).
fn inherit_collation(spec: &Document, default: Option<&Document>) -> Document {
    let mut spec = spec.clone();
    if let Some(default) = default.filter(|_| !spec.contains_key("collation")) {
        spec.insert("collation", default.clone());
    }
    spec
}

pub(crate) fn create_indexes(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "createIndexes")?;
    validate_namespace(exec.db, collection)?;
    super::views::refuse_view(exec, collection)?;
    let specs = required_array(command, "createIndexes", "indexes")?;
    if specs.is_empty() {
        return Err(CommandError::bad_value(
            "Must specify at least one index to create",
        ));
    }
    let default_collation = super::default_collation::of_collection(exec, collection)?;
    let specs = specs
        .iter()
        .map(|spec| match spec {
            Bson::Document(spec) => Ok(inherit_collation(spec, default_collation.as_ref())),
            other => Err(CommandError::type_mismatch(format!(
                "The elements of the 'indexes' array must be objects, but found {}",
                format_value(other)
            ))),
        })
        .collect::<StoreResult<Vec<_>>>()?;
    let indexes = specs
        .iter()
        .map(SecondaryIndex::from_spec)
        .collect::<StoreResult<Vec<_>>>()?;
    let created_collection = match exec.txn.as_deref_mut() {
        Some(txn) => txn.index_creation_allowed(exec.store, exec.db, collection)?,
        None => exec.store.catalog.collection(exec.db, collection).is_none(),
    };
    let handle = collection_for_write(exec, collection)?;
    let mut guard = write(&handle);
    let before = guard.index_count();
    let mut created = Vec::new();
    for (index, spec) in indexes.into_iter().zip(specs) {
        if guard.create_index(index)? {
            created.push(spec);
        }
    }
    let after = guard.index_count();
    let uuid = guard.uuid;
    drop(guard);
    let created_count = created.len();
    if created_count > 0 {
        exec.record_catalog(
            collection,
            Some(uuid),
            Change::CreateIndexes(Arc::new(created)),
        );
    }
    let mut reply =
        doc! { "numIndexesBefore": count_as_i32(before), "numIndexesAfter": count_as_i32(after) };
    if created_count == 0 {
        reply.insert("note", "all indexes already exist");
    } else {
        reply.insert("createdCollectionAutomatically", created_collection);
    }
    reply.insert("ok", 1.0);
    Ok(reply)
}

pub(crate) fn list_indexes(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "listIndexes")?;
    validate_namespace(exec.db, collection)?;
    super::views::refuse_view(exec, collection)?;
    let batch_size = cursor_batch_size(command, "listIndexes")?;
    let Some(handle) = exec.store.catalog.collection(exec.db, collection) else {
        return Err(CommandError::new(
            code::NAMESPACE_NOT_FOUND,
            format!("ns does not exist: {}", exec.ns(collection)),
        ));
    };
    let specs: Vec<Arc<Document>> = read(&handle)
        .index_specs()
        .into_iter()
        .map(Arc::new)
        .collect();
    let ns = if exec.router {
        exec.ns(collection)
    } else {
        format!("{}.$cmd.listIndexes.{collection}", exec.db)
    };
    let options = CursorOptions {
        batch_size,
        ..CursorOptions::default()
    };
    Ok(open_cursor(exec, &ns, specs, options))
}

pub(crate) fn drop_indexes(
    exec: &mut Exec<'_>,
    command: &Document,
    name: &str,
) -> StoreResult<Document> {
    let collection = collection_name(command, name)?;
    validate_namespace(exec.db, collection)?;
    super::views::refuse_view(exec, collection)?;
    let Some(handle) = exec.store.catalog.collection(exec.db, collection) else {
        return Err(CommandError::new(
            code::NAMESPACE_NOT_FOUND,
            format!("ns not found {}", exec.ns(collection)),
        ));
    };
    let target = command
        .get("index")
        .ok_or_else(|| super::args::missing(name, "index"))?;
    let mut guard = write(&handle);
    let before = guard.index_count();
    let mut dropped = Vec::new();
    let names: Vec<String> = match target {
        Bson::String(all) if all == "*" => {
            dropped = guard.secondary_index_names();
            guard.drop_all_indexes();
            Vec::new()
        }
        Bson::String(index) => vec![index.clone()],
        Bson::Array(items) => items
            .iter()
            .filter_map(|item| item.as_str().map(str::to_owned))
            .collect(),
        Bson::Document(key) => match guard.index_name_for_key(key) {
            Some(index) => vec![index],
            None => {
                return Err(CommandError::new(
                    code::INDEX_NOT_FOUND,
                    format!(
                        "can't find index with key: {}",
                        crate::errors::format_document(key)
                    ),
                ));
            }
        },
        other => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field '{name}.index' is the wrong type '{}', expected types '[string, object, array]'",
                crate::errors::type_name(other)
            )));
        }
    };
    for index in &names {
        if index == "_id_" {
            return Err(CommandError::new(
                code::INVALID_OPTIONS,
                "cannot drop _id index",
            ));
        }
        if !guard.drop_index(index) {
            return Err(CommandError::new(
                code::INDEX_NOT_FOUND,
                format!("index not found with name [{index}]"),
            ));
        }
        dropped.push(index.clone());
    }
    let changed = guard.index_count() != before;
    let uuid = guard.uuid;
    drop(guard);
    if changed {
        exec.record_catalog(
            collection,
            Some(uuid),
            Change::DropIndexes(Arc::new(dropped)),
        );
    }
    Ok(doc! { "nIndexesWas": count_as_i32(before), "ok": 1.0 })
}

pub(crate) fn list_collections(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let filter = match optional_document(command, "listCollections", "filter")? {
        Some(filter) => Filter::parse(filter)?,
        None => Filter::match_all(),
    };
    let name_only = optional_bool(command, "listCollections", "nameOnly")?.unwrap_or(false);
    let batch_size = cursor_batch_size(command, "listCollections")?;
    let mut entries = Vec::new();
    let mut collections = exec.store.catalog.collections(exec.db);
    match exec.db {
        crate::local::LOCAL => collections.extend(exec.store.local_collections()),
        crate::local::CONFIG => collections.extend(exec.store.config_collections()),
        _ => {}
    }
    for (name, handle) in collections {
        let collection = read(&handle);
        let mut full = doc! {
            "name": name.clone(),
            "type": "collection",
            "options": collection.options.clone(),
            "info": {
                "readOnly": false,
                "uuid": Binary { subtype: BinarySubtype::Uuid, bytes: collection.uuid.to_vec() },
            },
        };
        if !collection.options.contains_key("clusteredIndex") {
            full.insert(
                "idIndex",
                doc! { "v": 2, "key": { "_id": 1 }, "name": "_id_" },
            );
        }
        drop(collection);
        if !filter.matches(&full) {
            continue;
        }
        let entry = if name_only {
            doc! { "name": name, "type": "collection" }
        } else {
            full
        };
        entries.push(Arc::new(entry));
    }
    // As mongod lists them: the collections, then the views.
    for (name, view) in views::all(exec)? {
        let full = doc! {
            "name": name.clone(),
            "type": "view",
            "options": view.options(),
            "info": { "readOnly": true },
        };
        if filter.matches(&full) {
            entries.push(Arc::new(if name_only {
                doc! { "name": name, "type": "view" }
            } else {
                full
            }));
        }
    }
    let ns = format!("{}.$cmd.listCollections", exec.db);
    let options = CursorOptions {
        batch_size,
        ..CursorOptions::default()
    };
    Ok(open_cursor(exec, &ns, entries, options))
}

pub(crate) fn list_databases(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    if exec.db != "admin" {
        return Err(CommandError::new(
            code::UNAUTHORIZED,
            "listDatabases may only be run against the admin database.",
        ));
    }
    let filter = match optional_document(command, "listDatabases", "filter")? {
        Some(filter) => Filter::parse(filter)?,
        None => Filter::match_all(),
    };
    let name_only = optional_bool(command, "listDatabases", "nameOnly")?.unwrap_or(false);
    let mut databases = Vec::new();
    let mut total = 0usize;
    for name in exec.store.catalog.database_names() {
        let size: usize = exec
            .store
            .catalog
            .collections(&name)
            .iter()
            .map(|(_, handle)| read(handle).data_size())
            .sum();
        let entry = doc! { "name": name.clone(), "sizeOnDisk": size_as_i64(size), "empty": false };
        if !filter.matches(&entry) {
            continue;
        }
        total += size;
        databases.push(if name_only {
            doc! { "name": name }
        } else {
            entry
        });
    }
    if name_only {
        return Ok(doc! { "databases": databases, "ok": 1.0 });
    }
    Ok(doc! {
        "databases": databases,
        "totalSize": size_as_i64(total),
        "totalSizeMb": size_as_i64(total / (1024 * 1024)),
        "ok": 1.0,
    })
}

pub(crate) fn drop_collection(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "drop")?;
    validate_namespace(exec.db, collection)?;
    if let Some(reply) = views::drop(exec, collection)? {
        return Ok(reply);
    }
    // Since MongoDB 7.0, dropping a missing collection succeeds.
    let Some(handle) = exec.store.catalog.drop_collection(exec.db, collection) else {
        return Ok(doc! { "ok": 1.0 });
    };
    let (indexes, uuid) = {
        let guard = read(&handle);
        (guard.index_count(), guard.uuid)
    };
    exec.record_catalog(collection, Some(uuid), Change::Drop);
    Ok(doc! { "nIndexesWas": count_as_i32(indexes), "ns": exec.ns(collection), "ok": 1.0 })
}

pub(crate) fn drop_database(exec: &mut Exec<'_>) -> StoreResult<Document> {
    let collections = exec.store.catalog.collections(exec.db);
    if exec.store.catalog.drop_database(exec.db) {
        // As mongod does, each collection's drop first, then the database's.
        for (name, handle) in collections {
            let uuid = read(&handle).uuid;
            exec.record_catalog(&name, Some(uuid), Change::Drop);
        }
        let ns = format!("{}.$cmd", exec.db);
        exec.record(OplogWrite::catalog(ns, None, Change::DropDatabase));
        return Ok(doc! { "dropped": exec.db, "ok": 1.0 });
    }
    Ok(doc! { "ok": 1.0 })
}

pub(crate) fn create(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "create")?;
    validate_namespace(exec.db, collection)?;
    if command.contains_key("viewOn") || command.contains_key("pipeline") {
        return views::create(exec, collection, command);
    }
    if views::definition(exec, collection)?.is_some() {
        return Err(views::namespace_exists(exec, collection));
    }
    let options: Document = command
        .iter()
        .skip(1)
        .filter(|(field, _)| !is_generic_field(field))
        .map(|(field, value)| (field.clone(), value.clone()))
        .collect();
    let options = crate::capped::normalize_options(options)?;
    let options = crate::clustered::normalize_options(options)?;
    let options = super::default_collation::normalize_option(options)?;
    crate::validation::check_options("create", &options)?;
    if let Some(txn) = exec.txn.as_deref_mut() {
        txn.create_collection(exec.store, exec.db, collection, options)?;
        return Ok(doc! { "ok": 1.0 });
    }
    let uuid = exec.store.random_uuid();
    if exec
        .store
        .catalog
        .create(exec.db, collection, options.clone(), uuid)?
    {
        exec.record_catalog(collection, Some(uuid), Change::Create(Arc::new(options)));
    }
    Ok(doc! { "ok": 1.0 })
}

fn split_namespace<'a>(command: &'a Document, field: &str) -> StoreResult<(&'a str, &'a str)> {
    let namespace = match command.get(field) {
        Some(Bson::String(namespace)) => namespace.as_str(),
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'renameCollection.{field}' is the wrong type '{}', expected type 'string'",
                crate::errors::type_name(other)
            )));
        }
        None => return Err(super::args::missing("renameCollection", field)),
    };
    let (db, collection) = namespace.split_once('.').ok_or_else(|| {
        CommandError::new(
            code::INVALID_NAMESPACE,
            format!("Invalid namespace specified '{namespace}'"),
        )
    })?;
    validate_namespace(db, collection)?;
    Ok((db, collection))
}

pub(crate) fn rename_collection(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    if exec.db != "admin" {
        return Err(CommandError::new(
            code::UNAUTHORIZED,
            "renameCollection may only be run against the admin database.",
        ));
    }
    let source = split_namespace(command, "renameCollection")?;
    let target = split_namespace(command, "to")?;
    if source == target {
        return Err(CommandError::new(
            code::ILLEGAL_OPERATION,
            "Can't rename a collection to itself",
        ));
    }
    let drop_target = optional_bool(command, "renameCollection", "dropTarget")?.unwrap_or(false);
    if views::exists_in(exec.store, source.0, source.1) {
        return Err(CommandError::new(
            code::COMMAND_NOT_SUPPORTED_ON_VIEW,
            format!("cannot rename view: {}.{}", source.0, source.1),
        ));
    }
    if views::exists_in(exec.store, target.0, target.1) {
        return Err(CommandError::new(
            code::NAMESPACE_EXISTS,
            format!(
                "a view already exists with that name: {}.{}",
                target.0, target.1
            ),
        ));
    }
    rename(exec, source, target, drop_target)?;
    Ok(doc! { "ok": 1.0 })
}

/// Renames a collection (`(db, collection)` pairs) and logs the rename.
pub(crate) fn rename(
    exec: &mut Exec<'_>,
    source: (&str, &str),
    target: (&str, &str),
    drop_target: bool,
) -> StoreResult<()> {
    let renamed = exec.store.catalog.rename(source, target, drop_target)?;
    let (source_db, source_collection) = source;
    exec.record(OplogWrite::catalog(
        format!("{source_db}.{source_collection}"),
        Some(renamed.uuid),
        Change::Rename {
            to: format!("{}.{}", target.0, target.1),
            dropped_target: renamed.dropped_target,
        },
    ));
    Ok(())
}

pub(crate) fn db_stats(exec: &mut Exec<'_>) -> StoreResult<Document> {
    let view_count = views::all(exec)?.len();
    let collections = exec.store.catalog.collections(exec.db);
    let (mut objects, mut data_size, mut indexes) = (0usize, 0usize, 0usize);
    for (_, handle) in &collections {
        let collection = read(handle);
        objects += collection.len();
        data_size += collection.data_size();
        indexes += collection.index_count();
    }
    // Document counts and sizes are far below 2^53, so the conversions are exact.
    #[allow(clippy::cast_precision_loss)]
    let average = if objects == 0 {
        0.0
    } else {
        data_size as f64 / objects as f64
    };
    #[allow(clippy::cast_precision_loss)]
    let data_size_f64 = data_size as f64;
    Ok(doc! {
        "db": exec.db,
        "collections": size_as_i64(collections.len()),
        "views": size_as_i64(view_count),
        "objects": size_as_i64(objects),
        "avgObjSize": average,
        "dataSize": data_size_f64,
        "storageSize": data_size_f64,
        "indexes": size_as_i64(indexes),
        "indexSize": 0.0,
        "totalSize": data_size_f64,
        "scaleFactor": 1_i64,
        "ok": 1.0,
    })
}
