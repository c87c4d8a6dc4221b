//! Index descriptions: what `create_index` sends and what `list_indexes` returns.

use std::time::Duration;

use bson::{Bson, Document};
use serde::Deserialize;
use typed_builder::TypedBuilder;

use super::collation::Collation;
use super::collection::u32_bson;

/// One index: its key pattern and options.
///
/// ```
/// use bson::doc;
/// use steadfast::options::{IndexModel, IndexOptions};
/// let model = IndexModel::builder()
///     .keys(doc! { "email": 1 })
///     .options(IndexOptions::builder().unique(true).build())
///     .build();
/// assert_eq!(model.name(), "email_1");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Deserialize, TypedBuilder)]
#[builder(field_defaults(default, setter(into)))]
#[serde(from = "IndexSpec")]
#[non_exhaustive]
pub struct IndexModel {
    /// The key pattern, e.g. `{ "age": 1, "name": -1 }`.
    pub keys: Document,
    /// The options (name, uniqueness, ...), if any.
    pub options: Option<IndexOptions>,
}

/// `{key, ...options}`, the shape of an index specification (the official driver's).
impl serde::Serialize for IndexModel {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(serde::Serialize)]
        struct Shape<'m> {
            key: &'m Document,
            #[serde(flatten)]
            options: &'m Option<IndexOptions>,
        }
        Shape {
            key: &self.keys,
            options: &self.options,
        }
        .serialize(serializer)
    }
}

impl IndexModel {
    /// An index on `keys` with default options (its name is derived from the keys).
    pub fn new(keys: Document) -> Self {
        IndexModel {
            keys,
            options: None,
        }
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

options_struct! {
    /// Options of one index.
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct IndexOptions {
        /// Builds the index in the background (ignored by servers 4.2+).
        background: bool,
        /// Deletes documents this long after the date in the indexed field (TTL index), whole
        /// seconds (`expireAfterSeconds`).
        #[serde(rename = "expireAfterSeconds", with = "steadfast_core::serde_util::duration_secs")]
        expire_after: Duration,
        /// The index name (derived from the keys when unset).
        [into] name: String,
        /// Indexes only documents that have the indexed fields.
        sparse: bool,
        /// Storage engine settings of this index.
        [into] storage_engine: Document,
        /// Rejects documents whose indexed values duplicate another document's.
        unique: bool,
        /// The index version (`v`).
        #[serde(rename = "v")]
        version: IndexVersion,
        /// The default language of a text index.
        #[serde(rename = "default_language")]
        [into] default_language: String,
        /// The field holding each document's language in a text index.
        #[serde(rename = "language_override")]
        [into] language_override: String,
        /// The text index version (`textIndexVersion`).
        text_index_version: TextIndexVersion,
        /// Field weights of a text index.
        [into] weights: Document,
        /// The 2dsphere index version (`2dsphereIndexVersion`).
        #[serde(rename = "2dsphereIndexVersion")]
        sphere_2d_index_version: Sphere2DIndexVersion,
        /// The precision of a 2d index's geohash, in bits.
        #[serde(serialize_with = "steadfast_core::serde_util::u32_as_i32")]
        bits: u32,
        /// The upper bound of a 2d index's coordinates.
        max: f64,
        /// The lower bound of a 2d index's coordinates.
        min: f64,
        /// The grouping distance of a geoHaystack index (removed in servers 5.0).
        #[serde(serialize_with = "steadfast_core::serde_util::u32_as_i32")]
        bucket_size: u32,
        /// Indexes only documents matching this filter.
        [into] partial_filter_expression: Document,
        /// The index's collation.
        collation: Collation,
        /// Which fields a wildcard index covers.
        [into] wildcard_projection: Document,
        /// Hides the index from the query planner.
        hidden: bool,
        /// Marks the index as the clustered index of a collection (sent as `clustered`; the
        /// server allows it only when creating a collection's clustered index).
        clustered: bool,
    }
}

impl IndexOptions {
    fn append_to(&self, spec: &mut Document) {
        let mut put = |key: &str, value: Option<Bson>| {
            if let Some(value) = value {
                spec.insert(key, value);
            }
        };
        put("background", self.background.map(Bson::Boolean));
        put(
            "expireAfterSeconds",
            self.expire_after
                .map(|v| Bson::Int64(i64::try_from(v.as_secs()).unwrap_or(i64::MAX))),
        );
        put("sparse", self.sparse.map(Bson::Boolean));
        put("storageEngine", self.storage_engine.clone().map(Bson::from));
        put("unique", self.unique.map(Bson::Boolean));
        put("v", self.version.clone().map(Bson::from));
        put(
            "default_language",
            self.default_language.clone().map(Bson::from),
        );
        put(
            "language_override",
            self.language_override.clone().map(Bson::from),
        );
        put(
            "textIndexVersion",
            self.text_index_version.clone().map(Bson::from),
        );
        put("weights", self.weights.clone().map(Bson::from));
        put(
            "2dsphereIndexVersion",
            self.sphere_2d_index_version.clone().map(Bson::from),
        );
        put("bits", self.bits.map(u32_bson));
        put("max", self.max.map(Bson::Double));
        put("min", self.min.map(Bson::Double));
        put("bucketSize", self.bucket_size.map(u32_bson));
        put(
            "partialFilterExpression",
            self.partial_filter_expression.clone().map(Bson::from),
        );
        put("collation", self.collation.clone().map(Bson::from));
        put(
            "wildcardProjection",
            self.wildcard_projection.clone().map(Bson::from),
        );
        put("hidden", self.hidden.map(Bson::Boolean));
        put("clustered", self.clustered.map(Bson::Boolean));
    }
}

/// Defines an index-version enum: named versions plus `Custom(u32)` for any other, sent as an
/// `Int32` and read back from any whole non-negative number.
macro_rules! index_version {
    (
        $(#[$meta:meta])*
        $name:ident { $($(#[$variant_meta:meta])* $variant:ident = $number:literal),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$variant_meta])* $variant,)+
            /// A version this crate does not name.
            Custom(u32),
        }

        #[allow(deprecated)]
        impl From<$name> for Bson {
            fn from(version: $name) -> Self {
                match version {
                    $($name::$variant => Bson::Int32($number),)+
                    $name::Custom(number) => u32_bson(number),
                }
            }
        }

        impl $name {
            /// The version a listed index reports, if it is a whole non-negative number.
            #[allow(deprecated)]
            pub(super) fn from_bson(value: &Bson) -> Option<Self> {
                let number = u32::try_from(bson_as_u64(value)?).ok()?;
                Some(match number {
                    $($number => $name::$variant,)+
                    other => $name::Custom(other),
                })
            }
        }
    };
}

index_version! {
    /// The version of an index (`v`).
    IndexVersion {
        /// Version 0, from servers before 2.0.
        #[deprecated = "servers 3.2+ cannot build version 0 indexes"]
        V0 = 0,
        /// Version 1.
        V1 = 1,
        /// Version 2, the default since server 3.4.
        V2 = 2,
    }
}

index_version! {
    /// The version of a text index (`textIndexVersion`).
    TextIndexVersion {
        /// Version 1.
        V1 = 1,
        /// Version 2.
        V2 = 2,
        /// Version 3, the default since server 3.2.
        V3 = 3,
    }
}

index_version! {
    /// The version of a 2dsphere index (`2dsphereIndexVersion`).
    Sphere2DIndexVersion {
        /// Version 2.
        V2 = 2,
        /// Version 3, the default since server 3.2.
        V3 = 3,
    }
}

/// An index description as `listIndexes` returns it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct IndexSpec {
    key: Document,
    name: Option<String>,
    background: Option<bool>,
    unique: Option<bool>,
    sparse: Option<bool>,
    storage_engine: Option<Document>,
    expire_after_seconds: Option<Bson>,
    partial_filter_expression: Option<Document>,
    hidden: Option<bool>,
    clustered: Option<bool>,
    collation: Option<Collation>,
    weights: Option<Document>,
    #[serde(rename = "default_language")]
    default_language: Option<String>,
    #[serde(rename = "language_override")]
    language_override: Option<String>,
    text_index_version: Option<Bson>,
    #[serde(rename = "2dsphereIndexVersion")]
    sphere_2d_index_version: Option<Bson>,
    bits: Option<Bson>,
    max: Option<f64>,
    min: Option<f64>,
    bucket_size: Option<Bson>,
    wildcard_projection: Option<Document>,
    v: Option<Bson>,
}

/// A listed number as a `u64`, whatever its BSON width; `None` for a negative, fractional or
/// non-numeric value.
pub(super) fn bson_as_u64(value: &Bson) -> Option<u64> {
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

fn bson_as_u32(value: &Bson) -> Option<u32> {
    bson_as_u64(value).and_then(|v| u32::try_from(v).ok())
}

impl From<IndexSpec> for IndexModel {
    fn from(spec: IndexSpec) -> Self {
        let options = IndexOptions {
            name: spec.name,
            background: spec.background,
            unique: spec.unique,
            sparse: spec.sparse,
            storage_engine: spec.storage_engine,
            expire_after: spec
                .expire_after_seconds
                .as_ref()
                .and_then(bson_as_u64)
                .map(Duration::from_secs),
            partial_filter_expression: spec.partial_filter_expression,
            hidden: spec.hidden,
            clustered: spec.clustered,
            collation: spec.collation,
            weights: spec.weights,
            default_language: spec.default_language,
            language_override: spec.language_override,
            text_index_version: spec
                .text_index_version
                .as_ref()
                .and_then(TextIndexVersion::from_bson),
            sphere_2d_index_version: spec
                .sphere_2d_index_version
                .as_ref()
                .and_then(Sphere2DIndexVersion::from_bson),
            bits: spec.bits.as_ref().and_then(bson_as_u32),
            max: spec.max,
            min: spec.min,
            bucket_size: spec.bucket_size.as_ref().and_then(bson_as_u32),
            wildcard_projection: spec.wildcard_projection,
            version: spec.v.as_ref().and_then(IndexVersion::from_bson),
        };
        IndexModel {
            keys: spec.key,
            options: Some(options),
        }
    }
}
