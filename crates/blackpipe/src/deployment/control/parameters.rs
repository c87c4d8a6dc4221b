//! `getParameter` and `setParameter`: mongod's fixed parameters that describe blackpipe's
//! configuration ([`stable_api::server_parameters`]) and the few a running blackpipe can change:
//! `transactionLifetimeLimitSeconds` (the node's store aborts transactions open longer),
//! `logLevel` and `logComponentVerbosity` (kept and reported, as shells set and read them;
//! blackpipe logs through `tracing`).

use std::time::Duration;

use bson::{Bson, Document, doc};

use crate::deployment::errors::error_reply;
use crate::deployment::log_verbosity::{merge_verbosity, out_of_range};
use crate::deployment::node::context::NodeContext;
use crate::deployment::node::stable_api;
use crate::deployment::state::lock;
use blackpipe_store::code;

/// Fields of a command that are not parameters.
fn is_parameter(key: &str) -> bool {
    !(key.starts_with('$') || key.starts_with("api") || matches!(key, "lsid" | "comment"))
}

/// The parameters `setParameter` changes, as they are now.
fn runtime(node: &NodeContext) -> Document {
    let lifetime = node.store().transaction_lifetime().as_secs();
    let verbosity = lock(&node.process.log_verbosity).clone();
    doc! {
        "transactionLifetimeLimitSeconds": i32::try_from(lifetime).unwrap_or(i32::MAX),
        "logLevel": verbosity.get_i32("verbosity").unwrap_or(0),
        "logComponentVerbosity": verbosity,
    }
}

/// `getParameter`.
pub(crate) fn get(node: &NodeContext, command: &Document) -> Document {
    stable_api::get_parameter(command, runtime(node))
}

/// `setParameter`: each named parameter set, the reply `{was: <the first one's old value>}`;
/// `Err` is the error reply (InvalidOptions for a parameter blackpipe does not know or cannot
/// change at run time, BadValue for a value out of range).
pub(crate) fn set(node: &NodeContext, command: &Document) -> Result<Document, Document> {
    let before = runtime(node);
    let mut was = None;
    let named: Vec<(&String, &Bson)> = command
        .iter()
        .skip(1)
        .filter(|(key, _)| is_parameter(key))
        .collect();
    if named.is_empty() {
        return Err(error_reply(
            code::INVALID_OPTIONS,
            "no option found to set, use help:true to see options ",
        ));
    }
    for (key, value) in named {
        let integer = || {
            value
                .as_i32()
                .or_else(|| value.as_i64().and_then(|n| i32::try_from(n).ok()))
        };
        match key.as_str() {
            "transactionLifetimeLimitSeconds" => match integer().filter(|seconds| *seconds >= 1) {
                Some(seconds) => node.store().set_transaction_lifetime(Duration::from_secs(
                    u64::try_from(seconds).unwrap_or(1),
                )),
                None => return Err(out_of_range(key, value, "greater than or equal to 1")),
            },
            "logLevel" => match integer().filter(|level| (0..=5).contains(level)) {
                Some(level) => {
                    lock(&node.process.log_verbosity).insert("verbosity", level);
                }
                None => return Err(out_of_range(key, value, "between 0 and 5")),
            },
            "logComponentVerbosity" => {
                let Bson::Document(changes) = value else {
                    return Err(error_reply(
                        code::TYPE_MISMATCH,
                        "logComponentVerbosity must be an object",
                    ));
                };
                let mut verbosity = lock(&node.process.log_verbosity).clone();
                merge_verbosity(&mut verbosity, changes)?;
                *lock(&node.process.log_verbosity) = verbosity;
            }
            other if stable_api::server_parameters().contains_key(other) => {
                return Err(error_reply(
                    code::INVALID_OPTIONS,
                    format!("not allowed to change [{other}] at runtime"),
                ));
            }
            other => {
                return Err(error_reply(
                    code::INVALID_OPTIONS,
                    format!(
                        "attempted to set unrecognized parameter [{other}], use help:true to see options "
                    ),
                ));
            }
        }
        if was.is_none() {
            was = before.get(key.as_str()).cloned();
        }
    }
    Ok(doc! { "was": was.unwrap_or(Bson::Null) })
}
