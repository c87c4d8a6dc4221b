//! A collection's default collation: the `collation` option of `create`, kept resolved in the
//! collection's options, used by every read and write on the collection that names no
//! collation of its own, and inherited by its new indexes.

use std::borrow::Cow;

use bson::{Bson, Document};

use super::Exec;
use crate::catalog::read;
use crate::errors::StoreResult;

/// `create`'s options with the `collation` resolved (every field, as `listCollections` shows
/// it), or removed when it is the simple collation.
pub(crate) fn normalize_option(mut options: Document) -> StoreResult<Document> {
    if options.contains_key("collation") {
        match crate::collation::of_create(&options)? {
            Some(collation) => {
                options.insert("collation", collation.spec().clone());
            }
            None => {
                options.remove("collation");
            }
        }
    }
    Ok(options)
}

/// The resolved default collation of `collection` in this command's database, if it has one.
pub(crate) fn of_collection(exec: &Exec<'_>, collection: &str) -> StoreResult<Option<Document>> {
    Ok(exec
        .store
        .catalog
        .collection(exec.db, collection)
        .and_then(|handle| {
            read(&handle)
                .options
                .get_document("collation")
                .ok()
                .cloned()
        }))
}

/// The command with its collection's default collation filled in where it names none: on the
/// command for reads and `findAndModify`, on each statement for `update` and `delete`.
pub(crate) fn apply<'c>(
    exec: &Exec<'_>,
    name: &str,
    command: &'c Document,
) -> StoreResult<Cow<'c, Document>> {
    let statements = match name {
        "find" | "count" | "distinct" | "aggregate" | "findAndModify" | "findandmodify" => None,
        "update" => Some("updates"),
        "delete" => Some("deletes"),
        _ => return Ok(Cow::Borrowed(command)),
    };
    let Some(Bson::String(collection)) = command.get(name) else {
        return Ok(Cow::Borrowed(command));
    };
    let Some(default) = of_collection(exec, collection)? else {
        return Ok(Cow::Borrowed(command));
    };
    let mut command = command.clone();
    match statements {
        None => {
            if names_no_collation(&command) {
                command.insert("collation", default);
            }
        }
        Some(field) => {
            if let Ok(statements) = command.get_array_mut(field) {
                for statement in statements {
                    if let Bson::Document(statement) = statement {
                        if names_no_collation(statement) {
                            statement.insert("collation", default.clone());
                        }
                    }
                }
            }
        }
    }
    Ok(Cow::Owned(command))
}

/// Whether a command or statement leaves its collation to the collection: none, or `{}`.
fn names_no_collation(spec: &Document) -> bool {
    match spec.get("collation") {
        None => true,
        Some(Bson::Document(collation)) => collation.is_empty(),
        Some(_) => false,
    }
}
