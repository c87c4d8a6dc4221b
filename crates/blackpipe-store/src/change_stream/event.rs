//! Change events: what a stream shows of one op log entry.

use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Document, doc};

use super::options::{BeforeChange, FullDocument, Scope, StreamSpec};
use super::token::{Position, ResumeToken, STEP_EVENT, STEP_INVALIDATE};
use crate::code;
use crate::errors::{CommandError, StoreResult};
use crate::oplog::{Change, OplogEntry};

/// Looks up a collection's current document by `_id` (for `fullDocument: updateLookup`).
pub(crate) type Lookup<'a> = dyn Fn(&str, &str, &Bson) -> Option<Document> + 'a;

/// One event and where it sits in the stream.
pub(crate) struct Event {
    pub(crate) position: Position,
    pub(crate) document: Document,
    pub(crate) invalidates: bool,
}

fn uuid_value(uuid: [u8; 16]) -> Bson {
    Bson::Binary(Binary {
        subtype: BinarySubtype::Uuid,
        bytes: uuid.to_vec(),
    })
}

/// `{db, coll}` of a `db.collection` namespace.
fn namespace(ns: &str) -> Document {
    match ns.split_once('.') {
        Some((db, collection)) => doc! { "db": db, "coll": collection },
        None => doc! { "db": ns },
    }
}

/// Whether the stream watches the entry's namespace. Internal databases and `system.*`
/// collections are never shown.
fn watches(scope: &Scope, entry: &OplogEntry) -> bool {
    let (db, collection) = entry.db_and_collection();
    if matches!(db, "admin" | "config" | "local") || collection.starts_with("system.") {
        return false;
    }
    match scope {
        Scope::Collection {
            db: watched_db,
            collection: watched,
        } => db == watched_db && collection == watched,
        Scope::Database { db: watched_db } => db == watched_db,
        Scope::Cluster => true,
    }
}

/// Whether the entry ends a stream of this scope: a collection's drop or rename for a
/// collection stream, a database's drop for a database stream.
fn invalidates(scope: &Scope, change: &Change) -> bool {
    match scope {
        Scope::Collection { .. } => matches!(change, Change::Drop | Change::Rename { .. }),
        Scope::Database { .. } => matches!(change, Change::DropDatabase),
        Scope::Cluster => false,
    }
}

/// Builds the events of `entry` for a stream with `spec`: none if it does not watch the
/// entry's namespace (or the entry is an expanded event not asked for), else its event and,
/// if the entry ends the stream, the invalidate.
///
/// # Errors
///
/// NoMatchingDocument (47) when `required` asks for an image that is not available.
pub(crate) fn events_of(
    entry: &OplogEntry,
    spec: &StreamSpec,
    lookup: &Lookup<'_>,
) -> StoreResult<Vec<Event>> {
    if let Some(event) = view_creation(entry, spec) {
        return Ok(vec![event]);
    }
    if !watches(&spec.scope, entry) {
        return Ok(Vec::new());
    }
    let Some(event) = event_of(entry, spec, lookup)? else {
        return Ok(Vec::new());
    };
    let mut events = vec![event];
    if invalidates(&spec.scope, &entry.change) {
        let position = Position::of(entry.op_time.ts, entry.txn_op_index, STEP_INVALIDATE);
        let token = ResumeToken {
            position,
            uuid: entry.uuid,
        };
        events.push(Event {
            position,
            document: doc! {
                "_id": token.to_document(),
                "operationType": "invalidate",
                "clusterTime": Bson::Timestamp(entry.op_time.ts),
                "wallTime": entry.op_time.wall,
            },
            invalidates: true,
        });
    }
    Ok(events)
}

/// A view's creation, which is an insert into `<db>.system.views`, shown as mongod shows it
/// with expanded events: a `create` event of the view with `nsType: "view"` and the view's
/// `viewOn` and `pipeline` as its `operationDescription`. `None` for any other entry.
fn view_creation(entry: &OplogEntry, spec: &StreamSpec) -> Option<Event> {
    let (db, collection) = entry.db_and_collection();
    if collection != crate::commands::views::SYSTEM_VIEWS || !spec.show_expanded {
        return None;
    }
    let Change::Insert(definition) = &entry.change else {
        return None;
    };
    let view_ns = definition.get_str("_id").ok()?;
    let (_, view) = view_ns.split_once('.')?;
    let watched = match &spec.scope {
        Scope::Collection {
            db: watched_db,
            collection: watched,
        } => db == watched_db && view == watched,
        Scope::Database { db: watched_db } => db == watched_db,
        Scope::Cluster => !matches!(db, "admin" | "config" | "local"),
    };
    if !watched {
        return None;
    }
    let position = Position::of(entry.op_time.ts, entry.txn_op_index, STEP_EVENT);
    // The token carries the entry's UUID (of `system.views`), as every token of the entry does.
    let token = ResumeToken {
        position,
        uuid: entry.uuid,
    };
    let mut description = Document::new();
    for field in ["viewOn", "pipeline"] {
        if let Some(value) = definition.get(field) {
            description.insert(field, value.clone());
        }
    }
    Some(Event {
        position,
        document: doc! {
            "_id": token.to_document(),
            "operationType": "create",
            "clusterTime": Bson::Timestamp(entry.op_time.ts),
            "wallTime": entry.op_time.wall,
            "ns": namespace(view_ns),
            "operationDescription": description,
            "nsType": "view",
        },
        invalidates: false,
    })
}

fn event_of(
    entry: &OplogEntry,
    spec: &StreamSpec,
    lookup: &Lookup<'_>,
) -> StoreResult<Option<Event>> {
    let Some(operation_type) = operation_type(&entry.change, spec.show_expanded) else {
        return Ok(None);
    };
    let position = Position::of(entry.op_time.ts, entry.txn_op_index, STEP_EVENT);
    let token = ResumeToken {
        position,
        uuid: entry.uuid,
    };
    let mut event = doc! {
        "_id": token.to_document(),
        "operationType": operation_type,
        "clusterTime": Bson::Timestamp(entry.op_time.ts),
        "wallTime": entry.op_time.wall,
    };
    if spec.show_expanded
        && let Some(uuid) = entry.uuid
    {
        event.insert("collectionUUID", uuid_value(uuid));
    }
    match &entry.change {
        Change::DropDatabase => {
            let (db, _) = entry.db_and_collection();
            event.insert("ns", doc! { "db": db });
        }
        _ => {
            event.insert("ns", namespace(&entry.ns));
        }
    }
    if let Some(id) = &entry.id {
        event.insert("documentKey", doc! { "_id": id.clone() });
    }
    add_change_fields(&mut event, entry, spec, lookup)?;
    if let Some(session) = entry
        .session
        .as_ref()
        .filter(|session| session.in_transaction)
    {
        event.insert("lsid", (*session.lsid).clone());
        event.insert("txnNumber", session.txn_number);
    }
    Ok(Some(Event {
        position,
        document: event,
        invalidates: false,
    }))
}

/// The `operationType` of a change; `None` for the expanded events when not asked for.
fn operation_type(change: &Change, show_expanded: bool) -> Option<&'static str> {
    let name = match change {
        Change::Insert(_) => "insert",
        Change::Update { .. } => "update",
        Change::Replace(_) => "replace",
        Change::Delete => "delete",
        Change::Drop => "drop",
        Change::Rename { .. } => "rename",
        Change::DropDatabase => "dropDatabase",
        Change::Create(_) if show_expanded => "create",
        Change::CreateIndexes(_) if show_expanded => "createIndexes",
        Change::DropIndexes(_) if show_expanded => "dropIndexes",
        Change::Modify(_) if show_expanded => "modify",
        Change::Create(_)
        | Change::CreateIndexes(_)
        | Change::DropIndexes(_)
        | Change::Modify(_)
        | Change::Noop(_) => {
            return None;
        }
    };
    Some(name)
}

fn add_change_fields(
    event: &mut Document,
    entry: &OplogEntry,
    spec: &StreamSpec,
    lookup: &Lookup<'_>,
) -> StoreResult<()> {
    match &entry.change {
        Change::Insert(document) | Change::Replace(document) => {
            event.insert("fullDocument", (**document).clone());
        }
        Change::Update {
            description,
            post_image,
        } => {
            let mut description = (**description).clone();
            if !spec.show_expanded {
                description.remove("disambiguatedPaths");
            }
            event.insert("updateDescription", description);
            if let Some(full) = post_image_of(entry, post_image.as_deref(), spec, lookup)? {
                event.insert("fullDocument", full);
            }
        }
        Change::Rename { to, .. } => {
            event.insert("to", namespace(to));
        }
        _ => {}
    }
    if spec.show_expanded
        && let Some(description) = operation_description(&entry.change)
    {
        event.insert("operationDescription", description);
        if matches!(entry.change, Change::Create(_)) {
            event.insert("nsType", "collection");
        }
    }
    if matches!(
        entry.change,
        Change::Update { .. } | Change::Replace(_) | Change::Delete
    ) {
        add_pre_image(event, entry, spec.before_change)?;
    }
    Ok(())
}

/// The `operationDescription` of a catalog change's expanded event.
fn operation_description(change: &Change) -> Option<Document> {
    let description = match change {
        Change::Rename { to, dropped_target } => {
            let mut description = doc! { "to": namespace(to) };
            if let Some(uuid) = dropped_target {
                description.insert("dropTarget", uuid_value(*uuid));
            }
            description
        }
        Change::Create(options) => {
            let mut description = doc! {
                "idIndex": { "v": 2, "key": { "_id": 1 }, "name": "_id_" },
            };
            description.extend((**options).clone());
            description
        }
        Change::CreateIndexes(specs) => {
            let indexes: Vec<Bson> = specs.iter().cloned().map(Bson::Document).collect();
            doc! { "indexes": indexes }
        }
        Change::DropIndexes(names) => {
            let indexes: Vec<Bson> = names
                .iter()
                .map(|name| Bson::Document(doc! { "name": name }))
                .collect();
            doc! { "indexes": indexes }
        }
        Change::Modify(options) => doc! { "collectionOptions": (**options).clone() },
        _ => return None,
    };
    Some(description)
}

/// An update event's `fullDocument`, as the stream's `fullDocument` option asks.
fn post_image_of(
    entry: &OplogEntry,
    post_image: Option<&Document>,
    spec: &StreamSpec,
    lookup: &Lookup<'_>,
) -> StoreResult<Option<Bson>> {
    let (db, collection) = entry.db_and_collection();
    match spec.full_document {
        FullDocument::Default => Ok(None),
        FullDocument::UpdateLookup => Ok(Some(
            entry
                .id
                .as_ref()
                .and_then(|id| lookup(db, collection, id))
                .map_or(Bson::Null, Bson::Document),
        )),
        FullDocument::WhenAvailable => {
            Ok(Some(post_image.cloned().map_or(Bson::Null, Bson::Document)))
        }
        FullDocument::Required => match post_image {
            Some(image) => Ok(Some(Bson::Document(image.clone()))),
            None => Err(image_missing("post-image", entry)),
        },
    }
}

fn add_pre_image(
    event: &mut Document,
    entry: &OplogEntry,
    before_change: BeforeChange,
) -> StoreResult<()> {
    let image = entry.pre_image.as_deref();
    match (before_change, image) {
        (BeforeChange::Off, _) => {}
        (_, Some(image)) => {
            event.insert("fullDocumentBeforeChange", image.clone());
        }
        (BeforeChange::WhenAvailable, None) => {
            event.insert("fullDocumentBeforeChange", Bson::Null);
        }
        (BeforeChange::Required, None) => return Err(image_missing("pre-image", entry)),
    }
    Ok(())
}

fn image_missing(image: &str, entry: &OplogEntry) -> CommandError {
    CommandError::new(
        code::NO_MATCHING_DOCUMENT,
        format!(
            "Change stream was configured to require a {image} for all update, delete and replace events, but the {image} was not available for the event at {} in {}",
            entry.op_time.ts, entry.ns
        ),
    )
}
