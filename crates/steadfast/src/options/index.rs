//! Index descriptions: what `create_index` sends and what `list_indexes` returns.

use std::time::Duration;

use bson::{Bson, Document};
use serde::Deserialize;

/// One index: its key pattern and options.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(from = "IndexSpec")]
#[non_exhaustive]
pub struct IndexModel {
    /// The key pattern, e.g. `{ "age": 1, "name": -1 }`.
    pub keys: Document,
    /// The options (name, uniqueness, ...), if any.
    pub options: Option<IndexOptions>,
}

impl IndexModel {
    /// An index on `keys` with default options (its name is derived from the keys).
    pub fn new(keys: Document) -> Self {
        IndexModel {
            keys,
            options: None,
        }
    }

    /// A builder, like the official driver's: `IndexModel::builder().keys(..).options(..).build()`.
    pub fn builder() -> IndexModelBuilder {
        IndexModelBuilder::default()
    }

    /// The index name: the one set in the options, else the server's default derived from the
    /// keys (`a_1_b_-1`).
    pub fn name(&self) -> String {
        if let Some(name) = self.options.as_ref().and_then(|o| o.name.clone()) {
            return name;
        }
        self.keys
            .iter()
            .map(|(field, direction)| {
                let direction = match direction {
                    Bson::Int32(v) => v.to_string(),
                    Bson::Int64(v) => v.to_string(),
                    Bson::Double(v) if v.fract() == 0.0 => format!("{v:.0}"),
                    Bson::String(s) => s.clone(),
                    other => other.to_string(),
                };
                format!("{field}_{direction}")
            })
            .collect::<Vec<_>>()
            .join("_")
    }

    /// The index specification sent in `createIndexes.indexes`.
    pub(crate) fn to_spec(&self) -> Document {
        let mut spec = Document::new();
        spec.insert("key", self.keys.clone());
        spec.insert("name", self.name());
        if let Some(options) = &self.options {
            options.append_to(&mut spec);
        }
        spec
    }
}

/// Builds an [`IndexModel`].
#[derive(Clone, Debug, Default)]
pub struct IndexModelBuilder {
    model: IndexModel,
}

impl IndexModelBuilder {
    /// Sets the key pattern.
    #[must_use]
    pub fn keys(mut self, keys: Document) -> Self {
        self.model.keys = keys;
        self
    }

    /// Sets the options.
    #[must_use]
    pub fn options(mut self, options: impl Into<Option<IndexOptions>>) -> Self {
        self.model.options = options.into();
        self
    }

    /// The model.
    pub fn build(self) -> IndexModel {
        self.model
    }
}

options_struct! {
    /// Options of one index.
    pub struct IndexOptions {
        /// The index name (derived from the keys when unset).
        [into] name: String,
        /// Rejects documents whose indexed values duplicate another document's.
        unique: bool,
        /// Indexes only documents that have the indexed fields.
        sparse: bool,
        /// Deletes documents this long after the date in the indexed field (TTL index).
        expire_after: Duration,
        /// Indexes only documents matching this filter.
        [into] partial_filter_expression: Document,
        /// Hides the index from the query planner.
        hidden: bool,
        /// The index's collation.
        [into] collation: Document,
        /// Field weights of a text index.
        [into] weights: Document,
        /// The default language of a text index.
        [into] default_language: String,
        /// The field holding each document's language in a text index.
        [into] language_override: String,
        /// Which fields a wildcard index covers.
        [into] wildcard_projection: Document,
        /// The index version (`v`).
        version: i32,
    }
}

impl IndexOptions {
    fn append_to(&self, spec: &mut Document) {
        if let Some(v) = self.unique {
            spec.insert("unique", v);
        }
        if let Some(v) = self.sparse {
            spec.insert("sparse", v);
        }
        if let Some(v) = self.expire_after {
            spec.insert(
                "expireAfterSeconds",
                i64::try_from(v.as_secs()).unwrap_or(i64::MAX),
            );
        }
        if let Some(v) = &self.partial_filter_expression {
            spec.insert("partialFilterExpression", v.clone());
        }
        if let Some(v) = self.hidden {
            spec.insert("hidden", v);
        }
        if let Some(v) = &self.collation {
            spec.insert("collation", v.clone());
        }
        if let Some(v) = &self.weights {
            spec.insert("weights", v.clone());
        }
        if let Some(v) = &self.default_language {
            spec.insert("default_language", v.clone());
        }
        if let Some(v) = &self.language_override {
            spec.insert("language_override", v.clone());
        }
        if let Some(v) = &self.wildcard_projection {
            spec.insert("wildcardProjection", v.clone());
        }
        if let Some(v) = self.version {
            spec.insert("v", v);
        }
    }
}

/// An index description as `listIndexes` returns it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexSpec {
    key: Document,
    name: Option<String>,
    unique: Option<bool>,
    sparse: Option<bool>,
    expire_after_seconds: Option<Bson>,
    partial_filter_expression: Option<Document>,
    hidden: Option<bool>,
    collation: Option<Document>,
    weights: Option<Document>,
    #[serde(rename = "default_language")]
    default_language: Option<String>,
    #[serde(rename = "language_override")]
    language_override: Option<String>,
    wildcard_projection: Option<Document>,
    v: Option<Bson>,
}

fn bson_as_u64(value: &Bson) -> Option<u64> {
    match value {
        Bson::Int32(v) => u64::try_from(*v).ok(),
        Bson::Int64(v) => u64::try_from(*v).ok(),
        // Servers store some numbers as doubles; only whole non-negative ones are meaningful.
        Bson::Double(v) if v.fract() == 0.0 && *v >= 0.0 && *v <= u64::MAX as f64 => {
            Some(*v as u64)
        }
        _ => None,
    }
}

impl From<IndexSpec> for IndexModel {
    fn from(spec: IndexSpec) -> Self {
        let options = IndexOptions {
            name: spec.name,
            unique: spec.unique,
            sparse: spec.sparse,
            expire_after: spec
                .expire_after_seconds
                .as_ref()
                .and_then(bson_as_u64)
                .map(Duration::from_secs),
            partial_filter_expression: spec.partial_filter_expression,
            hidden: spec.hidden,
            collation: spec.collation,
            weights: spec.weights,
            default_language: spec.default_language,
            language_override: spec.language_override,
            wildcard_projection: spec.wildcard_projection,
            version: spec
                .v
                .as_ref()
                .and_then(bson_as_u64)
                .and_then(|v| i32::try_from(v).ok()),
        };
        IndexModel {
            keys: spec.key,
            options: Some(options),
        }
    }
}
