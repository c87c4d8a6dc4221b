//! Reading duplicate-key errors: which unique index refused the write.

use crate::error::{Error, ErrorKind};

/// The server's code for a unique index violation.
pub(crate) const DUPLICATE_KEY: i32 = 11000;

/// The name of the index MongoDB builds on `_id`.
const ID_INDEX: &str = "_id_";

/// Which index a duplicate-key error names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum DuplicateIndex {
    /// The `_id` index.
    Id,
    /// Another unique index, by name.
    Other(String),
    /// A duplicate-key error whose index could not be read; treated as "not `_id`" so that a
    /// doubt never turns into a reported success.
    Unknown,
}

/// The index a duplicate-key error (code 11000, as a write error or a command error) names,
/// or `None` when `error` is something else.
pub(crate) fn duplicate_index(error: &Error) -> Option<DuplicateIndex> {
    let (message, key_pattern) = match error.kind() {
        ErrorKind::Command(command) if command.code_if_present() == Some(DUPLICATE_KEY) => {
            (command.message.as_str(), None)
        }
        kind => {
            let (message, details) = kind.write_error_with_code(DUPLICATE_KEY)?;
            let pattern = details.and_then(|details| details.get_document("keyPattern").ok());
            (message, pattern)
        }
    };
    if let Some(pattern) = key_pattern {
        let only_id = pattern.len() == 1 && pattern.contains_key("_id");
        return Some(if only_id {
            DuplicateIndex::Id
        } else {
            DuplicateIndex::Other(index_name_in(message).unwrap_or_default().to_owned())
        });
    }
    Some(match index_name_in(message) {
        Some(ID_INDEX) => DuplicateIndex::Id,
        Some(name) => DuplicateIndex::Other(name.to_owned()),
        None => DuplicateIndex::Unknown,
    })
}

/// The index name in mongod's message, "E11000 duplicate key error collection: db.c index:
/// NAME dup key: { ... }".
fn index_name_in(message: &str) -> Option<&str> {
    let (_, after) = message.split_once(" index: ")?;
    after
        .split_whitespace()
        .next()
        .filter(|name| !name.is_empty())
}
