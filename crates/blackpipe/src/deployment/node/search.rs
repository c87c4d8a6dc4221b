//! Atlas Search on a deployment without it: mongod (outside Atlas and the Atlas CLI's local
//! deployments) refuses the search index commands and the `$listSearchIndexes` stage with
//! SearchNotEnabled, and so does blackpipe, which has no search engine.

use bson::{Bson, Document};

use crate::deployment::errors;
use blackpipe_store::code;

/// The commands that manage search indexes.
const SEARCH_INDEX_COMMANDS: &[&str] = &[
    "createSearchIndexes",
    "updateSearchIndex",
    "dropSearchIndex",
];

/// The SearchNotEnabled reply for a search index command or an aggregation using
/// `$listSearchIndexes`; `None` for any other command.
pub(crate) fn refusal(name: &str, command: &Document) -> Option<Document> {
    let uses_search = SEARCH_INDEX_COMMANDS.contains(&name)
        || (name == "aggregate" && lists_search_indexes(command));
    uses_search.then(|| {
        errors::error_reply(
            code::SEARCH_NOT_ENABLED,
            "Search index commands and the $listSearchIndexes stage need Atlas Search: \
             connect to an Atlas deployment or an Atlas CLI local deployment",
        )
    })
}

fn lists_search_indexes(command: &Document) -> bool {
    command.get_array("pipeline").is_ok_and(|stages| {
        stages
            .iter()
            .filter_map(Bson::as_document)
            .any(|stage| stage.contains_key("$listSearchIndexes"))
    })
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn search_commands_and_the_listing_stage_are_refused() {
        let create = doc! { "createSearchIndexes": "c", "indexes": [] };
        assert!(refusal("createSearchIndexes", &create).is_some());
        let list = doc! { "aggregate": "c", "pipeline": [{ "$listSearchIndexes": {} }] };
        let reply = refusal("aggregate", &list).expect("refused");
        assert_eq!(reply.get_i32("code").ok(), Some(code::SEARCH_NOT_ENABLED));
        assert_eq!(reply.get_str("codeName").ok(), Some("SearchNotEnabled"));
        let ordinary = doc! { "aggregate": "c", "pipeline": [{ "$match": {} }] };
        assert!(refusal("aggregate", &ordinary).is_none());
    }
}
