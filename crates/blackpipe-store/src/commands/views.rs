//! Views, kept as mongod keeps them: one document per view in the database's `system.views`
//! collection (`{_id: "<db>.<view>", viewOn, pipeline, collation?}`), written and replicated
//! like any other document. A read of a view runs the view's pipeline (and those of the views
//! under it) over the backing collection, then the request; writes and index commands are
//! refused with CommandNotSupportedOnView (166).

use bson::{Bson, Document, doc};

use super::Exec;
use super::write;
use crate::catalog::{CollectionHandle, read};
use crate::code;
use crate::errors::{CommandError, StoreResult, type_name};

/// The collection holding a database's view definitions.
pub(crate) const SYSTEM_VIEWS: &str = "system.views";

/// mongod's `ViewGraph::kMaxViewDepth`: views on views at most this deep.
const MAX_VIEW_DEPTH: usize = 20;

/// Stages a view's pipeline may not hold (they write).
const WRITING_STAGES: &[&str] = &["$out", "$merge"];

/// One view as `system.views` stores it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ViewDefinition {
    pub(crate) view_on: String,
    pub(crate) pipeline: Vec<Bson>,
    pub(crate) collation: Option<Document>,
}

impl ViewDefinition {
    fn from_stored(stored: &Document) -> Option<ViewDefinition> {
        Some(ViewDefinition {
            view_on: stored.get_str("viewOn").ok()?.to_owned(),
            pipeline: stored.get_array("pipeline").ok()?.clone(),
            collation: stored.get_document("collation").ok().cloned(),
        })
    }

    fn to_stored(&self, id: String) -> Document {
        let mut stored =
            doc! { "_id": id, "viewOn": &self.view_on, "pipeline": self.pipeline.clone() };
        if let Some(collation) = &self.collation {
            stored.insert("collation", collation.clone());
        }
        stored
    }

    /// The `options` listCollections reports for the view.
    pub(crate) fn options(&self) -> Document {
        let mut options = doc! { "viewOn": &self.view_on, "pipeline": self.pipeline.clone() };
        if let Some(collation) = &self.collation {
            options.insert("collation", collation.clone());
        }
        options
    }
}

/// A view resolved down to its backing collection: the pipelines of every view on the way,
/// the innermost first, and the view's default collation.
#[derive(Debug, Clone)]
pub(crate) struct ResolvedView {
    pub(crate) collection: String,
    pub(crate) pipeline: Vec<Bson>,
    pub(crate) collation: Option<Document>,
}

/// The database's `system.views`. Views are catalog data, read as they are now even inside a
/// transaction or a snapshot read (as mongod's view catalog is), so a transaction never meets a
/// write conflict on a `system.views` created after its snapshot.
fn views_collection(exec: &Exec<'_>) -> Option<CollectionHandle> {
    exec.store.catalog.collection(exec.db, SYSTEM_VIEWS)
}

/// Whether `db.name` is a view (for commands that name a namespace in another database).
pub(crate) fn exists_in(store: &crate::Store, db: &str, name: &str) -> bool {
    store
        .catalog
        .collection(db, SYSTEM_VIEWS)
        .is_some_and(|handle| {
            read(&handle)
                .record_by_id(&Bson::String(format!("{db}.{name}")))
                .is_some()
        })
}

/// Every view of the command's database, by name, in name order.
pub(crate) fn all(exec: &mut Exec<'_>) -> StoreResult<Vec<(String, ViewDefinition)>> {
    let Some(handle) = views_collection(exec) else {
        return Ok(Vec::new());
    };
    let prefix = format!("{}.", exec.db);
    let mut views: Vec<(String, ViewDefinition)> = read(&handle)
        .documents()
        .filter_map(|stored| {
            let name = stored
                .get_str("_id")
                .ok()?
                .strip_prefix(&prefix)?
                .to_owned();
            Some((name, ViewDefinition::from_stored(stored)?))
        })
        .collect();
    views.sort_by(|(a, _), (b, _)| a.cmp(b));
    Ok(views)
}

/// The definition of view `name`, if `name` is a view.
pub(crate) fn definition(exec: &mut Exec<'_>, name: &str) -> StoreResult<Option<ViewDefinition>> {
    let Some(handle) = views_collection(exec) else {
        return Ok(None);
    };
    let guard = read(&handle);
    let Some(record) = guard.record_by_id(&Bson::String(exec.ns(name))) else {
        return Ok(None);
    };
    Ok(guard
        .get(record)
        .and_then(|stored| ViewDefinition::from_stored(stored)))
}

/// Resolves `name` if it is a view (None for a collection or nothing).
///
/// # Errors
/// ViewDepthLimitExceeded (165) past mongod's depth (a cycle written behind mongod's back).
pub(crate) fn resolve(exec: &mut Exec<'_>, name: &str) -> StoreResult<Option<ResolvedView>> {
    let Some(first) = definition(exec, name)? else {
        return Ok(None);
    };
    let collation = first.collation.clone();
    let mut pipeline = first.pipeline;
    let mut underlying = first.view_on;
    for _ in 0..MAX_VIEW_DEPTH {
        let Some(next) = definition(exec, &underlying)? else {
            return Ok(Some(ResolvedView {
                collection: underlying,
                pipeline,
                collation,
            }));
        };
        let mut combined = next.pipeline;
        combined.extend(pipeline);
        pipeline = combined;
        underlying = next.view_on;
    }
    Err(CommandError::new(
        code::VIEW_DEPTH_LIMIT_EXCEEDED,
        format!("View depth too deep or view cycle detected; maximum depth is {MAX_VIEW_DEPTH}"),
    ))
}

/// The error mongod gives a write or an index command aimed at a view.
pub(crate) fn not_a_collection(exec: &Exec<'_>, name: &str) -> CommandError {
    CommandError::new(
        code::COMMAND_NOT_SUPPORTED_ON_VIEW,
        format!("Namespace {} is a view, not a collection", exec.ns(name)),
    )
}

/// Refuses a command that needs a collection when `name` is a view.
///
/// # Errors
/// CommandNotSupportedOnView (166).
pub(crate) fn refuse_view(exec: &mut Exec<'_>, name: &str) -> StoreResult<()> {
    if definition(exec, name)?.is_some() {
        return Err(not_a_collection(exec, name));
    }
    Ok(())
}

/// The collation a read of a view runs with: the view's; a request may only repeat it.
///
/// # Errors
/// OptionNotSupportedOnView (167) for a request with another collation.
pub(crate) fn collation_for(view: &ResolvedView, command: &Document) -> StoreResult<Option<Bson>> {
    let requested = match command.get("collation") {
        // `{}` names no collation, as in mongod's CRUD commands.
        Some(Bson::Document(requested)) if requested.is_empty() => None,
        Some(Bson::Document(requested)) => Some(requested),
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'collation' is the wrong type '{}', expected type 'object'",
                type_name(other)
            )));
        }
        None => None,
    };
    // Two collations are the same when they resolve to the same specification.
    let resolved = match requested {
        Some(requested) => crate::collation::parse(requested)?.map(|c| c.spec().clone()),
        None => None,
    };
    match (requested, &view.collation) {
        (Some(_), Some(own)) if resolved.as_ref() == Some(own) => {
            Ok(Some(Bson::Document(own.clone())))
        }
        (None, own) => Ok(own.clone().map(Bson::Document)),
        (Some(requested), None) if simple_collation(requested) => Ok(None),
        _ => Err(CommandError::new(
            code::OPTION_NOT_SUPPORTED_ON_VIEW,
            "Cannot override a view's default collation",
        )),
    }
}

fn simple_collation(collation: &Document) -> bool {
    collation.get_str("locale").ok() == Some("simple") && collation.len() == 1
}

/// Parses `create`'s `viewOn`, `pipeline` and `collation` into a definition.
fn parse_definition(command: &Document) -> StoreResult<ViewDefinition> {
    let view_on = match command.get("viewOn") {
        Some(Bson::String(view_on)) if !view_on.is_empty() => view_on.clone(),
        Some(Bson::String(_)) => {
            return Err(CommandError::bad_value("'viewOn' cannot be empty"));
        }
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'create.viewOn' is the wrong type '{}', expected type 'string'",
                type_name(other)
            )));
        }
        None => {
            return Err(CommandError::new(
                code::INVALID_OPTIONS,
                "'pipeline' requires 'viewOn' to also be specified",
            ));
        }
    };
    let pipeline = parse_pipeline(command.get("pipeline"), "create")?;
    let collation = match command.get("collation") {
        None => None,
        Some(Bson::Document(collation)) if simple_collation(collation) => None,
        Some(Bson::Document(_)) => crate::collation::of_create(command)?.map(|c| c.spec().clone()),
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field 'create.collation' is the wrong type '{}', expected type 'object'",
                type_name(other)
            )));
        }
    };
    Ok(ViewDefinition {
        view_on,
        pipeline,
        collation,
    })
}

/// A view pipeline: an array of stage documents, none of them writing, that parses.
fn parse_pipeline(value: Option<&Bson>, command: &str) -> StoreResult<Vec<Bson>> {
    let stages = match value {
        None => Vec::new(),
        Some(Bson::Array(stages)) => stages.clone(),
        Some(other) => {
            return Err(CommandError::type_mismatch(format!(
                "BSON field '{command}.pipeline' is the wrong type '{}', expected type 'array'",
                type_name(other)
            )));
        }
    };
    for stage in &stages {
        let Bson::Document(stage) = stage else {
            return Err(CommandError::new(
                code::INVALID_VIEW_DEFINITION,
                "View pipeline must be an array of objects",
            ));
        };
        if let Some(name) = stage
            .keys()
            .next()
            .filter(|name| WRITING_STAGES.contains(&name.as_str()))
        {
            return Err(CommandError::new(
                code::OPTION_NOT_SUPPORTED_ON_VIEW,
                format!("{name} cannot be used in a view definition"),
            ));
        }
    }
    crate::aggregate::Pipeline::parse(&stages)?;
    Ok(stages)
}

/// Checks that `name` defined as `definition` makes no cycle and no chain deeper than mongod's.
///
/// # Errors
/// GraphContainsCycle (5) naming the cycle, ViewDepthLimitExceeded (165).
fn check_graph(exec: &mut Exec<'_>, name: &str, proposed: &ViewDefinition) -> StoreResult<()> {
    let mut chain = vec![name.to_owned()];
    let mut next = proposed.view_on.clone();
    loop {
        if next == name {
            let mut cycle: Vec<String> = chain.iter().map(|view| exec.ns(view)).collect();
            cycle.push(exec.ns(name));
            return Err(CommandError::new(
                code::GRAPH_CONTAINS_CYCLE,
                format!("View cycle detected: {}", cycle.join(" => ")),
            ));
        }
        let Some(view) = definition(exec, &next)? else {
            return Ok(());
        };
        chain.push(next);
        if chain.len() > MAX_VIEW_DEPTH {
            return Err(CommandError::new(
                code::VIEW_DEPTH_LIMIT_EXCEEDED,
                format!("View depth limit exceeded; maximum depth is {MAX_VIEW_DEPTH}"),
            ));
        }
        next = view.view_on;
    }
}

/// `create` with `viewOn`/`pipeline`: stores the view in `system.views`. Creating the same
/// view again is fine, as mongod's create is for an identical collection.
///
/// # Errors
/// NamespaceExists (48) for a name taken by a collection or another view; the definition's
/// errors; OperationNotSupportedInTransaction (263) inside a transaction.
pub(crate) fn create(exec: &mut Exec<'_>, name: &str, command: &Document) -> StoreResult<Document> {
    if exec.txn.is_some() {
        return Err(CommandError::new(
            code::OPERATION_NOT_SUPPORTED_IN_TRANSACTION,
            "Cannot create a view in a multi-document transaction.",
        ));
    }
    if let Some(option) = command.keys().skip(1).find(|field| {
        !super::args::is_generic_field(field)
            && !matches!(field.as_str(), "viewOn" | "pipeline" | "collation")
    }) {
        return Err(CommandError::new(
            code::INVALID_OPTIONS,
            format!("option not supported on a view: {option}"),
        ));
    }
    let proposed = parse_definition(command)?;
    if let Some(existing) = definition(exec, name)? {
        if existing == proposed {
            return Ok(doc! { "ok": 1.0 });
        }
        return Err(namespace_exists(exec, name));
    }
    if exec.collection(name)?.is_some() {
        return Err(namespace_exists(exec, name));
    }
    check_graph(exec, name, &proposed)?;
    let stored = proposed.to_stored(exec.ns(name));
    let reply = write::insert(
        exec,
        &doc! { "insert": SYSTEM_VIEWS, "documents": [stored] },
    )?;
    first_write_error(reply)?;
    Ok(doc! { "ok": 1.0 })
}

pub(crate) fn namespace_exists(exec: &Exec<'_>, name: &str) -> CommandError {
    CommandError::new(
        code::NAMESPACE_EXISTS,
        format!("Namespace {} already exists", exec.ns(name)),
    )
}

/// `drop` of a view: removes its definition. `None` when `name` is no view.
pub(crate) fn drop(exec: &mut Exec<'_>, name: &str) -> StoreResult<Option<Document>> {
    if definition(exec, name)?.is_none() {
        return Ok(None);
    }
    let delete = doc! {
        "delete": SYSTEM_VIEWS,
        "deletes": [{ "q": { "_id": exec.ns(name) }, "limit": 1 }],
    };
    first_write_error(write::delete(exec, &delete)?)?;
    Ok(Some(doc! { "ns": exec.ns(name), "ok": 1.0 }))
}

/// `collMod` of a view: `viewOn` and `pipeline` (either or both) replace the stored ones.
/// `None` when `name` is no view.
///
/// # Errors
/// InvalidOptions (72) for an option a view does not take; the definition's and the graph's
/// errors.
pub(crate) fn modify(
    exec: &mut Exec<'_>,
    name: &str,
    command: &Document,
) -> StoreResult<Option<Document>> {
    let Some(mut changed) = definition(exec, name)? else {
        return Ok(None);
    };
    for (field, value) in command.iter().skip(1) {
        match field.as_str() {
            "viewOn" => match value {
                Bson::String(view_on) if !view_on.is_empty() => changed.view_on.clone_from(view_on),
                Bson::String(_) => return Err(CommandError::bad_value("'viewOn' cannot be empty")),
                other => {
                    return Err(CommandError::type_mismatch(format!(
                        "BSON field 'collMod.viewOn' is the wrong type '{}', expected type 'string'",
                        type_name(other)
                    )));
                }
            },
            "pipeline" => changed.pipeline = parse_pipeline(Some(value), "collMod")?,
            generic if super::args::is_generic_field(generic) => {}
            other => {
                return Err(CommandError::new(
                    code::INVALID_OPTIONS,
                    format!("option not supported on a view: {other}"),
                ));
            }
        }
    }
    check_graph(exec, name, &changed)?;
    let stored = changed.to_stored(exec.ns(name));
    let update = doc! {
        "update": SYSTEM_VIEWS,
        "updates": [{ "q": { "_id": exec.ns(name) }, "u": stored }],
    };
    first_write_error(write::update(exec, &update)?)?;
    Ok(Some(doc! { "ok": 1.0 }))
}

/// The first write error of a reply from the write commands `system.views` is kept with.
fn first_write_error(reply: Document) -> StoreResult<()> {
    let Some(Bson::Document(entry)) = reply
        .get_array("writeErrors")
        .ok()
        .and_then(|errors| errors.first())
    else {
        return Ok(());
    };
    Err(CommandError::new(
        entry.get_i32("code").unwrap_or(code::INTERNAL_ERROR),
        entry
            .get_str("errmsg")
            .unwrap_or("system.views write failed"),
    ))
}
