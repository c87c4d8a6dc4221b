//! Builders for Atlas Search aggregation stages (`$search` and `$searchMeta`).
//!
//! Each Atlas Search operator has a constructor function here ([`text`], [`compound`],
//! [`range`], [`facet`](facet()), ...) taking the operator's required fields and returning a
//! [`SearchOperator`]; its optional fields are set by chained methods. The finished operator
//! becomes a pipeline stage with [`SearchOperator::into_stage`] (`$search`) or
//! [`SearchOperator::into_stage_meta`] (`$searchMeta`), or, when stage-level options such as
//! the index name are needed, through [`search`] / [`search_meta`].
//!
//! Nothing here talks to a server: the builders only produce [`Document`]s, which are passed
//! to [`Collection::aggregate`](crate::Collection::aggregate) like any other stage. The field
//! names are those of the Atlas Search reference, so a document written by hand and one built
//! here are interchangeable.
//!
//! ```
//! use bson::doc;
//! use steadfast::atlas_search::{self, MatchCriteria};
//!
//! let stage = atlas_search::search(
//!     atlas_search::compound()
//!         .must(atlas_search::text("plot", "heist").match_criteria(MatchCriteria::All))
//!         .filter(atlas_search::range("year").gte(1990).lt(2000)),
//! )
//! .index("movies")
//! .into_stage();
//!
//! assert_eq!(
//!     stage,
//!     doc! {
//!         "$search": {
//!             "compound": {
//!                 "must": [{ "text": { "path": "plot", "query": "heist", "matchCriteria": "all" } }],
//!                 "filter": [{ "range": { "path": "year", "gte": 1990, "lt": 2000 } }],
//!             },
//!             "index": "movies",
//!         }
//!     }
//! );
//! ```
//!
//! Running it (an Atlas deployment, or a local one with `mongot`, is needed for `$search`):
//!
//! ```no_run
//! # async fn demo(movies: steadfast::Collection<bson::Document>) -> steadfast::Result<()> {
//! use bson::doc;
//! use steadfast::atlas_search;
//!
//! let mut cursor = movies
//!     .aggregate([
//!         atlas_search::autocomplete("title", "star w")
//!             .fuzzy(doc! { "maxEdits": 1 })
//!             .into_stage(),
//!         doc! { "$limit": 5 },
//!         doc! { "$project": { "_id": 0, "title": 1 } },
//!     ])
//!     .await?;
//! while cursor.advance().await? {
//!     println!("{:?}", cursor.deserialize_current()?);
//! }
//! # Ok(())
//! # }
//! ```

pub mod facet;
mod operators;
mod params;
#[cfg(test)]
mod tests;

use std::fmt;
use std::marker::PhantomData;

use bson::{Document, doc};

pub use operators::*;
pub use params::{
    BsonNumber, DocumentOrArray, MatchCriteria, NearOrigin, RangeValue, Relation,
    SearchOperatorParam, StringOrArray, TokenOrder,
};

/// One Atlas Search operator being built: its name (`"text"`, `"compound"`, ...) and its
/// specification document.
///
/// `T` is a marker type ([`Text`], [`Compound`], ...) that selects which optional-field
/// methods are available; [`unit`](Self::unit) erases it. Construct with the module's
/// constructor functions, e.g. [`text`](text()).
pub struct SearchOperator<T> {
    name: &'static str,
    spec: Document,
    _operator: PhantomData<T>,
}

impl<T> SearchOperator<T> {
    fn new(name: &'static str, spec: Document) -> Self {
        Self {
            name,
            spec,
            _operator: PhantomData,
        }
    }

    /// Sets `key` in the operator's specification, replacing any earlier value.
    fn with(mut self, key: &str, value: impl Into<bson::Bson>) -> Self {
        self.spec.insert(key, value);
        self
    }

    /// The operator as it appears inside a stage or a compound clause: `{ <name>: <spec> }`.
    fn into_document(self) -> Document {
        doc! { self.name: self.spec }
    }

    /// Makes a `$search` stage of this operator with no stage-level options:
    /// `{ "$search": { <operator>: { .. } } }`. Use [`search`] to set the index name and
    /// the other stage options.
    pub fn into_stage(self) -> Document {
        search(self).into_stage()
    }

    /// Makes a `$searchMeta` stage of this operator with no stage-level options:
    /// `{ "$searchMeta": { <operator>: { .. } } }`. Use [`search_meta`] to set the index name
    /// or the count options.
    pub fn into_stage_meta(self) -> Document {
        search_meta(self).into_stage()
    }

    /// Forgets which operator this is, so that operators of different kinds fit in one
    /// collection (for example the clauses of [`compound`](compound())).
    ///
    /// ```
    /// use steadfast::atlas_search::{compound, exists, text, SearchOperator};
    ///
    /// let clauses: Vec<SearchOperator<()>> = vec![text("title", "rust").unit(), exists("year").unit()];
    /// let stage = compound().should(clauses).minimum_should_match(1).into_stage();
    /// assert_eq!(stage.get_document("$search").unwrap().len(), 1);
    /// ```
    pub fn unit(self) -> SearchOperator<()> {
        SearchOperator::new(self.name, self.spec)
    }
}

impl<T> Clone for SearchOperator<T> {
    fn clone(&self) -> Self {
        Self::new(self.name, self.spec.clone())
    }
}

impl<T> fmt::Debug for SearchOperator<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SearchOperator")
            .field("name", &self.name)
            .field("spec", &self.spec)
            .finish()
    }
}

/// A single operator is a one-element sequence, so it can be passed wherever a list of
/// operators is taken (the clauses of [`compound`](compound())).
impl<T> IntoIterator for SearchOperator<T> {
    type Item = SearchOperator<T>;
    type IntoIter = std::iter::Once<SearchOperator<T>>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(self)
    }
}

/// Starts a `$search` stage around `op`, whose stage-level options (index name, sort,
/// highlighting, pagination tokens, ...) are then set on the returned [`AtlasSearch`].
///
/// ```
/// use bson::doc;
/// use steadfast::atlas_search::{search, text};
///
/// let stage = search(text("title", "dune")).index("movies").into_stage();
/// assert_eq!(
///     stage,
///     doc! { "$search": { "text": { "path": "title", "query": "dune" }, "index": "movies" } }
/// );
/// ```
pub fn search<T>(op: SearchOperator<T>) -> AtlasSearch {
    AtlasSearch {
        stage: op.into_document(),
    }
}

/// A `$search` stage being built; construct with [`search`] and finish with
/// [`into_stage`](Self::into_stage).
#[derive(Debug, Clone)]
pub struct AtlasSearch {
    stage: Document,
}

impl AtlasSearch {
    fn with(mut self, key: &str, value: impl Into<bson::Bson>) -> Self {
        self.stage.insert(key, value);
        self
    }

    /// Sets `concurrent`: whether the search may run in parallel across index segments (on
    /// dedicated search nodes).
    pub fn concurrent(self, value: bool) -> Self {
        self.with("concurrent", value)
    }

    /// Sets `count`: how the number of matching documents is counted (for example
    /// `{ "type": "total" }`).
    pub fn count(self, value: Document) -> Self {
        self.with("count", value)
    }

    /// Sets `highlight`: which fields to return highlighted passages from, and how.
    pub fn highlight(self, value: Document) -> Self {
        self.with("highlight", value)
    }

    /// Sets `index`: the name of the Atlas Search index to query (the server uses `default`
    /// when it is not set).
    pub fn index(self, value: impl Into<String>) -> Self {
        self.with("index", value.into())
    }

    /// Sets `returnStoredSource`: whether to return only the fields stored in the search
    /// index instead of looking up the full documents in the database.
    pub fn return_stored_source(self, value: bool) -> Self {
        self.with("returnStoredSource", value)
    }

    /// Sets `searchAfter`: the pagination token of the result after which to continue.
    pub fn search_after(self, value: impl Into<String>) -> Self {
        self.with("searchAfter", value.into())
    }

    /// Sets `searchBefore`: the pagination token of the result before which to continue.
    pub fn search_before(self, value: impl Into<String>) -> Self {
        self.with("searchBefore", value.into())
    }

    /// Sets `scoreDetails`: whether each result carries a breakdown of how its score was
    /// computed.
    pub fn score_details(self, value: bool) -> Self {
        self.with("scoreDetails", value)
    }

    /// Sets `sort`: the fields to order the results by, each `1` or `-1` (or a
    /// `{ "$meta": "searchScore" }` document).
    pub fn sort(self, value: Document) -> Self {
        self.with("sort", value)
    }

    /// The finished stage: `{ "$search": { <operator>: { .. }, <options>.. } }`.
    pub fn into_stage(self) -> Document {
        doc! { "$search": self.stage }
    }
}

/// Starts a `$searchMeta` stage around `op` (typically a [`facet`](facet()) collector), whose
/// stage-level options are then set on the returned [`AtlasSearchMeta`].
///
/// ```
/// use bson::doc;
/// use steadfast::atlas_search::{facet, search_meta};
///
/// let stage = search_meta(facet(doc! { "genres": facet::string("genres").num_buckets(5) }))
///     .index("movies")
///     .into_stage();
/// assert_eq!(
///     stage,
///     doc! { "$searchMeta": {
///         "facet": { "facets": { "genres": { "type": "string", "path": "genres", "numBuckets": 5 } } },
///         "index": "movies",
///     } }
/// );
/// ```
pub fn search_meta<T>(op: SearchOperator<T>) -> AtlasSearchMeta {
    AtlasSearchMeta {
        stage: op.into_document(),
    }
}

/// A `$searchMeta` stage being built; construct with [`search_meta`] and finish with
/// [`into_stage`](Self::into_stage).
#[derive(Debug, Clone)]
pub struct AtlasSearchMeta {
    stage: Document,
}

impl AtlasSearchMeta {
    /// Sets `count`: how the number of matching documents is counted (for example
    /// `{ "type": "lowerBound", "threshold": 1000 }`).
    pub fn count(mut self, value: Document) -> Self {
        self.stage.insert("count", value);
        self
    }

    /// Sets `index`: the name of the Atlas Search index to query.
    pub fn index(mut self, value: impl Into<String>) -> Self {
        self.stage.insert("index", value.into());
        self
    }

    /// The finished stage: `{ "$searchMeta": { <operator>: { .. }, <options>.. } }`.
    pub fn into_stage(self) -> Document {
        doc! { "$searchMeta": self.stage }
    }
}
