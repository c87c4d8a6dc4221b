//! Atlas Search and Vector Search index descriptions, for
//! [`Collection::create_search_index`](crate::Collection::create_search_index) and its
//! siblings.

use bson::Document;
use serde::{Deserialize, Serialize};
use typed_builder::TypedBuilder;

/// One search index to create: its definition, and optionally its name (the server's default
/// is `default`) and type.
///
/// ```
/// use steadfast::bson::doc;
/// use steadfast::{SearchIndexModel, SearchIndexType};
///
/// let model = SearchIndexModel::builder()
///     .definition(doc! { "mappings": { "dynamic": true } })
///     .name("by_everything".to_string())
///     .index_type(SearchIndexType::Search)
///     .build();
/// assert_eq!(model.name.as_deref(), Some("by_everything"));
/// ```
#[derive(Clone, Debug, Default, PartialEq, TypedBuilder, Serialize, Deserialize)]
#[builder(field_defaults(default, setter(into)))]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SearchIndexModel {
    /// The index definition (mappings, analyzers, or vector fields).
    pub definition: Document,
    /// The index name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The kind of index.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub index_type: Option<SearchIndexType>,
}

/// The kind of a search index.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum SearchIndexType {
    /// A full-text Atlas Search index (`search`).
    Search,
    /// A vector search index (`vectorSearch`).
    VectorSearch,
    /// A type this driver does not know, sent as written.
    #[serde(untagged)]
    Other(String),
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    #[test]
    fn a_model_serializes_as_the_command_expects() {
        let model = SearchIndexModel::builder()
            .definition(doc! { "mappings": { "dynamic": true } })
            .index_type(SearchIndexType::VectorSearch)
            .build();
        let sent = bson::serialize_to_document(&model).expect("serializes");
        assert_eq!(
            sent,
            doc! { "definition": { "mappings": { "dynamic": true } }, "type": "vectorSearch" }
        );
        let other = SearchIndexModel::builder()
            .name("n".to_string())
            .index_type(SearchIndexType::Other("future".into()))
            .build();
        let sent = bson::serialize_to_document(&other).expect("serializes");
        assert_eq!(
            sent,
            doc! { "definition": {}, "name": "n", "type": "future" }
        );
    }
}
