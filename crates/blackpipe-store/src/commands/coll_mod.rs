//! `collMod`: changes a collection's options.

use std::sync::Arc;

use bson::{Bson, Document};

use super::Exec;
use super::args::{collection_name, is_generic_field};
use crate::catalog::{validate_namespace, write};
use crate::code;
use crate::errors::{CommandError, StoreResult, type_name};
use crate::oplog::{Change, OplogWrite};

/// The options `collMod` may set, kept in the collection's options as given (only
/// `changeStreamPreAndPostImages` changes what blackpipe does).
const SETTABLE: &[&str] = &[
    "changeStreamPreAndPostImages",
    "validator",
    "validationLevel",
    "validationAction",
    "expireAfterSeconds",
];

/// Checks `changeStreamPreAndPostImages: {enabled: <bool>}`.
fn check_images_option(value: &Bson) -> StoreResult<()> {
    let Bson::Document(images) = value else {
        return Err(CommandError::type_mismatch(format!(
            "BSON field 'collMod.changeStreamPreAndPostImages' is the wrong type '{}', expected type 'object'",
            type_name(value)
        )));
    };
    match images.get("enabled") {
        Some(Bson::Boolean(_)) if images.len() == 1 => Ok(()),
        _ => Err(CommandError::failed_to_parse(
            "changeStreamPreAndPostImages takes exactly {enabled: <bool>}",
        )),
    }
}

/// Runs `collMod` on an existing collection and records a `modify` op log entry (even when
/// nothing changed, as mongod does).
///
/// # Errors
///
/// NamespaceNotFound (26) for a missing collection; 40415 for an unknown option; the errors of
/// [`super::coll_mod_index::modify_index`] for an `index` change.
pub(crate) fn coll_mod(exec: &mut Exec<'_>, command: &Document) -> StoreResult<Document> {
    let collection = collection_name(command, "collMod")?;
    validate_namespace(exec.db, collection)?;
    if let Some(reply) = super::views::modify(exec, collection, command)? {
        return Ok(reply);
    }
    let mut changes = Document::new();
    let mut index_spec = None;
    for (field, value) in command.iter().skip(1) {
        if is_generic_field(field) {
            continue;
        }
        match field.as_str() {
            "index" => {
                index_spec = Some(value);
                continue;
            }
            "changeStreamPreAndPostImages" => check_images_option(value)?,
            "viewOn" | "pipeline" => {
                return Err(CommandError::new(
                    code::INVALID_OPTIONS,
                    format!("'{field}' option only supported on a view"),
                ));
            }
            known if SETTABLE.contains(&known) => {}
            other => {
                return Err(CommandError::new(
                    code::IDL_UNKNOWN_FIELD,
                    format!("BSON field 'collMod.{other}' is an unknown field."),
                ));
            }
        }
        changes.insert(field.clone(), value.clone());
    }
    crate::validation::check_options("collMod", &changes)?;
    let Some(handle) = exec.store.catalog.collection(exec.db, collection) else {
        return Err(CommandError::new(
            code::NAMESPACE_NOT_FOUND,
            format!("ns does not exist: {}", exec.ns(collection)),
        ));
    };
    let (uuid, mut reply) = {
        let mut guard = write(&handle);
        let reply = match index_spec {
            Some(spec) => super::coll_mod_index::modify_index(&mut guard, spec)?,
            None => Document::new(),
        };
        guard.modify_options(changes.clone());
        (guard.uuid, reply)
    };
    let mut modify = OplogWrite::catalog(
        exec.ns(collection),
        Some(uuid),
        Change::Modify(Arc::new(changes)),
    );
    modify.apply.index_change = index_spec.map(|spec| Arc::new(spec.clone()));
    exec.record(modify);
    reply.insert("ok", 1.0);
    Ok(reply)
}
