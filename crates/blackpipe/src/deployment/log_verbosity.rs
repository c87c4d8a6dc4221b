//! `logComponentVerbosity` (and `logLevel`, its top `verbosity`), as `setParameter` sets them
//! and `getParameter` reports them: kept per process, never read by blackpipe's own logging
//! (which is `tracing`'s).

use bson::{Bson, Document, doc};

use crate::deployment::errors::error_reply;
use blackpipe_store::code;

/// mongod 8.0's log components, each inheriting (-1) the default verbosity 0.
const LOG_COMPONENTS: &[&str] = &[
    "accessControl",
    "assert",
    "command",
    "control",
    "executor",
    "geo",
    "globalIndex",
    "index",
    "network",
    "processHealth",
    "query",
    "queryStats",
    "replication",
    "sharding",
    "storage",
    "transaction",
    "write",
];

/// `logComponentVerbosity` at start: verbosity 0, every component inheriting it.
pub(crate) fn default_log_verbosity() -> Document {
    let mut verbosity = doc! { "verbosity": 0 };
    for component in LOG_COMPONENTS {
        verbosity.insert(*component, doc! { "verbosity": -1 });
    }
    verbosity
}

/// Applies `changes` (`{verbosity: n, <component>: n | {verbosity: n, ...}}`) to `verbosity`.
pub(crate) fn merge_verbosity(
    verbosity: &mut Document,
    changes: &Document,
) -> Result<(), Document> {
    for (key, change) in changes {
        let level = change
            .as_i32()
            .or_else(|| change.as_i64().and_then(|n| i32::try_from(n).ok()));
        match (key.as_str(), change, level) {
            (_, _, Some(level)) if !(-1..=5).contains(&level) => {
                return Err(out_of_range(key, change, "between -1 and 5"));
            }
            ("verbosity", _, Some(level)) => {
                verbosity.insert("verbosity", level);
            }
            (component, _, Some(level)) if verbosity.contains_key(component) => {
                verbosity.insert(component, doc! { "verbosity": level });
            }
            (component, Bson::Document(nested), None) if verbosity.contains_key(component) => {
                let mut inner = verbosity
                    .get_document(component)
                    .cloned()
                    .unwrap_or_default();
                merge_verbosity(&mut inner, nested)?;
                verbosity.insert(component, inner);
            }
            (component, _, _) => {
                return Err(error_reply(
                    code::BAD_VALUE,
                    format!("Invalid component name {component}"),
                ));
            }
        }
    }
    Ok(())
}

/// The BadValue of a parameter value outside `bound`.
pub(crate) fn out_of_range(key: &str, value: &Bson, bound: &str) -> Document {
    error_reply(
        code::BAD_VALUE,
        format!("Invalid value for parameter {key}: {value} is not {bound}"),
    )
}
