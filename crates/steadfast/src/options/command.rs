//! Options of `Database::run_command` and `Database::run_cursor_command`, and of the Atlas
//! Search index operations.

use std::time::Duration;

use bson::Bson;
use serde::Deserialize;
use steadfast_core::selection::SelectionCriteria;
use typed_builder::TypedBuilder;

use super::types::CursorType;

/// Options of `Database::run_command`.
///
/// ```
/// use steadfast::options::{ReadPreference, RunCommandOptions, SelectionCriteria};
/// let options = RunCommandOptions::builder()
///     .selection_criteria(SelectionCriteria::ReadPreference(ReadPreference::nearest(None)))
///     .build();
/// assert!(options.selection_criteria.is_some());
/// ```
#[derive(Clone, Debug, Default, PartialEq, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[non_exhaustive]
pub struct RunCommandOptions {
    /// Which server runs the command; `None` means the primary (the database's read
    /// preference does not apply to a command run this way).
    pub selection_criteria: Option<SelectionCriteria>,
}

/// Options of `Database::run_cursor_command`, which runs a command that opens a cursor and
/// iterates it with `getMore`.
///
/// Deserialized from `{ selectionCriteria?, cursorType?, batchSize?, maxTimeMS?, comment? }`
/// (`maxtime` is accepted for `maxTimeMS`, as the official driver names it).
#[derive(Clone, Debug, Default, PartialEq, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct RunCursorCommandOptions {
    /// Which server runs the command; `None` means the primary.
    pub selection_criteria: Option<SelectionCriteria>,
    /// Tailable cursors: whether `getMore`s wait for new documents.
    pub cursor_type: Option<CursorType>,
    /// How many documents each `getMore` asks for.
    pub batch_size: Option<u32>,
    /// The `maxTimeMS` each `getMore` carries (the opening command's own limit is part of the
    /// command document).
    #[serde(
        rename = "maxtime",
        alias = "maxTimeMS",
        with = "steadfast_core::serde_util::duration_ms"
    )]
    pub max_time: Option<Duration>,
    /// The `comment` each `getMore` carries.
    pub comment: Option<Bson>,
}

/// Defines an options struct of an Atlas Search index operation. None has a field yet: the
/// structs exist so that options can be added later without breaking callers.
macro_rules! search_index_options {
    ($($(#[$meta:meta])* $name:ident;)+) => {
        $(
            $(#[$meta])*
            #[derive(Clone, Debug, Default, PartialEq, Deserialize, TypedBuilder)]
            #[builder(field_defaults(default, setter(into)))]
            #[non_exhaustive]
            pub struct $name {}
        )+
    };
}

search_index_options! {
    /// Options of `Collection::create_search_index` and `create_search_indexes`.
    CreateSearchIndexOptions;
    /// Options of `Collection::update_search_index`.
    UpdateSearchIndexOptions;
    /// Options of `Collection::list_search_indexes`.
    ListSearchIndexOptions;
    /// Options of `Collection::drop_search_index`.
    DropSearchIndexOptions;
}
