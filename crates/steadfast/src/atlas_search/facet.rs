//! Facet definitions for the [`facet`](super::facet()) collector: each function here builds
//! one, and a definition converts into [`Bson`], so it can be written straight into the
//! `doc!` of facets.
//!
//! ```
//! use bson::{doc, DateTime};
//! use steadfast::atlas_search::facet;
//!
//! let from = DateTime::from_millis(0);
//! let to = DateTime::from_millis(86_400_000);
//! let collector = facet(doc! {
//!     "genres": facet::string("genres").num_buckets(10),
//!     "runtime": facet::number("runtime", [0, 90, 120]).default_bucket("longer"),
//!     "released": facet::date("released", [from, to]),
//! });
//! let stage = collector.into_stage_meta();
//! let facets = stage
//!     .get_document("$searchMeta").unwrap()
//!     .get_document("facet").unwrap()
//!     .get_document("facets").unwrap();
//! assert_eq!(facets.get_document("runtime").unwrap().get_str("default").unwrap(), "longer");
//! ```
//!
//! See the [facet reference](https://www.mongodb.com/docs/atlas/atlas-search/facet/) for what
//! the server does with each kind.

use std::fmt;
use std::marker::PhantomData;

use bson::{Bson, DateTime, Document, doc};

/// One facet definition, of the kind `T` ([`String`], [`Number`] or [`Date`]); becomes its
/// definition document through `From<Facet<T>> for Bson`.
pub struct Facet<T> {
    definition: Document,
    _kind: PhantomData<T>,
}

impl<T> Facet<T> {
    fn new(definition: Document) -> Self {
        Self {
            definition,
            _kind: PhantomData,
        }
    }

    fn with(mut self, key: &str, value: impl Into<Bson>) -> Self {
        self.definition.insert(key, value);
        self
    }
}

impl<T> Clone for Facet<T> {
    fn clone(&self) -> Self {
        Self::new(self.definition.clone())
    }
}

impl<T> fmt::Debug for Facet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Facet").field(&self.definition).finish()
    }
}

impl<T> From<Facet<T>> for Bson {
    fn from(facet: Facet<T>) -> Self {
        Bson::Document(facet.definition)
    }
}

/// Marker for string facets; built by [`string`].
pub struct String;

/// A string facet: counts results per distinct string value at `path` (most frequent first).
/// The field must be indexed with the `stringFacet` (or `token`) type.
pub fn string(path: impl AsRef<str>) -> Facet<String> {
    Facet::new(doc! { "type": "string", "path": path.as_ref() })
}

impl Facet<String> {
    /// Sets `numBuckets`: how many values to report at most (the server allows up to 1000).
    pub fn num_buckets(self, num: i32) -> Self {
        self.with("numBuckets", num)
    }
}

/// Marker for number facets; built by [`number`].
pub struct Number;

/// A number facet: counts results per range of the number at `path`, the ranges lying between
/// consecutive `boundaries` (each range includes its lower boundary and excludes its upper
/// one; the boundaries must be in increasing order).
pub fn number(
    path: impl AsRef<str>,
    boundaries: impl IntoIterator<Item = impl Into<Bson>>,
) -> Facet<Number> {
    let boundaries: Vec<Bson> = boundaries.into_iter().map(Into::into).collect();
    Facet::new(doc! { "type": "number", "path": path.as_ref(), "boundaries": boundaries })
}

impl Facet<Number> {
    /// Sets `default`: the name of an extra bucket counting the results outside every range
    /// (without it, those results are not counted).
    pub fn default_bucket(self, bucket: impl AsRef<str>) -> Self {
        self.with("default", bucket.as_ref())
    }
}

/// Marker for date facets; built by [`date`].
pub struct Date;

/// A date facet: counts results per range of the date at `path`, the ranges lying between
/// consecutive `boundaries` (each range includes its lower boundary and excludes its upper
/// one; the boundaries must be in increasing order).
pub fn date(path: impl AsRef<str>, boundaries: impl IntoIterator<Item = DateTime>) -> Facet<Date> {
    let boundaries: Vec<DateTime> = boundaries.into_iter().collect();
    Facet::new(doc! { "type": "date", "path": path.as_ref(), "boundaries": boundaries })
}

impl Facet<Date> {
    /// Sets `default`: the name of an extra bucket counting the results outside every range
    /// (without it, those results are not counted).
    pub fn default_bucket(self, bucket: impl AsRef<str>) -> Self {
        self.with("default", bucket.as_ref())
    }
}
