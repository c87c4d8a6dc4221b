//! The operator constructors, their marker types and their optional fields.
//!
//! Each constructor takes the operator's required fields; the methods on
//! `SearchOperator<Marker>` set its optional ones. Field names are those of the Atlas Search
//! operator reference (<https://www.mongodb.com/docs/atlas/atlas-search/operators-and-collectors/>).

use bson::{Bson, Document, doc};

use super::params::Parameter;
use super::{
    BsonNumber, DocumentOrArray, MatchCriteria, NearOrigin, RangeValue, Relation, SearchOperator,
    SearchOperatorParam, StringOrArray, TokenOrder,
};

/// Adds `score`, the field every scoring operator shares, to the listed operators.
macro_rules! score_option {
    ($($marker:ident),+ $(,)?) => {$(
        impl SearchOperator<$marker> {
            /// Sets `score`: how this operator's matches are scored, as a `boost`,
            /// `constant`, `embedded` or `function` document (for example
            /// `{ "boost": { "value": 2 } }`).
            pub fn score(self, score: Document) -> Self {
                self.with("score", score)
            }
        }
    )+};
}

score_option!(
    Autocomplete,
    Compound,
    EmbeddedDocument,
    Equals,
    Exists,
    GeoShape,
    GeoWithin,
    SearchIn,
    MoreLikeThis,
    Near,
    Phrase,
    Range,
    Regex,
    Text,
    Wildcard,
);

/// Collects operator parameters into a BSON array (the clauses of `compound`).
fn operator_list(ops: impl IntoIterator<Item = impl SearchOperatorParam>) -> Vec<Bson> {
    ops.into_iter().map(Parameter::into_bson).collect()
}

/// Marker for the `autocomplete` operator; built by [`autocomplete`](autocomplete()).
pub struct Autocomplete;

/// `autocomplete`: matches documents whose `path` holds words beginning with (or, depending on
/// the index's tokenization, containing) the characters typed so far in `query`. The fields
/// must be indexed with the `autocomplete` type.
///
/// ```
/// use bson::doc;
/// use steadfast::atlas_search::{autocomplete, TokenOrder};
///
/// let op = autocomplete("title", "the gre").token_order(TokenOrder::Sequential);
/// assert_eq!(
///     op.into_stage(),
///     doc! { "$search": { "autocomplete": {
///         "path": "title", "query": "the gre", "tokenOrder": "sequential",
///     } } }
/// );
/// ```
pub fn autocomplete(
    path: impl StringOrArray,
    query: impl StringOrArray,
) -> SearchOperator<Autocomplete> {
    SearchOperator::new(
        "autocomplete",
        doc! { "path": path.into_bson(), "query": query.into_bson() },
    )
}

impl SearchOperator<Autocomplete> {
    /// Sets `tokenOrder`: whether the query's tokens may match in any order or only in
    /// sequence.
    pub fn token_order(self, token_order: TokenOrder) -> Self {
        self.with("tokenOrder", token_order.as_str())
    }

    /// Sets `fuzzy`: typo tolerance, as a document of `maxEdits`, `prefixLength` and
    /// `maxExpansions`.
    pub fn fuzzy(self, fuzzy: Document) -> Self {
        self.with("fuzzy", fuzzy)
    }
}

/// Marker for the `compound` operator; built by [`compound`](compound()).
pub struct Compound;

/// `compound`: combines other operators in clauses: `must` (all must match), `mustNot` (none
/// may match), `should` (matches raise the score; see
/// [`minimum_should_match`](SearchOperator::minimum_should_match)) and `filter` (must match,
/// without affecting the score). Each clause takes one operator or a list of them.
///
/// ```
/// use bson::doc;
/// use steadfast::atlas_search::{compound, equals, text};
///
/// let op = compound()
///     .must(text("description", "apple"))
///     .must_not(vec![equals("organic", false)]);
/// assert_eq!(
///     op.into_stage(),
///     doc! { "$search": { "compound": {
///         "must": [{ "text": { "path": "description", "query": "apple" } }],
///         "mustNot": [{ "equals": { "path": "organic", "value": false } }],
///     } } }
/// );
/// ```
pub fn compound() -> SearchOperator<Compound> {
    SearchOperator::new("compound", Document::new())
}

impl SearchOperator<Compound> {
    /// Sets `must`: operators every result has to match.
    pub fn must(self, must: impl IntoIterator<Item = impl SearchOperatorParam>) -> Self {
        self.with("must", operator_list(must))
    }

    /// Sets `mustNot`: operators no result may match.
    pub fn must_not(self, must_not: impl IntoIterator<Item = impl SearchOperatorParam>) -> Self {
        self.with("mustNot", operator_list(must_not))
    }

    /// Sets `should`: operators whose matches raise a result's score.
    pub fn should(self, should: impl IntoIterator<Item = impl SearchOperatorParam>) -> Self {
        self.with("should", operator_list(should))
    }

    /// Sets `filter`: operators every result has to match, without any effect on its score.
    pub fn filter(self, filter: impl IntoIterator<Item = impl SearchOperatorParam>) -> Self {
        self.with("filter", operator_list(filter))
    }

    /// Sets `minimumShouldMatch`: how many of the `should` clauses a result has to match.
    pub fn minimum_should_match(self, minimum_should_match: i32) -> Self {
        self.with("minimumShouldMatch", minimum_should_match)
    }
}

/// Marker for the `embeddedDocument` operator; built by
/// [`embedded_document`](embedded_document()).
pub struct EmbeddedDocument;

/// `embeddedDocument`: requires `operator` to be satisfied by one single element of the array
/// of documents at `path` (in the manner of `$elemMatch`). The field must be indexed with the
/// `embeddedDocuments` type.
pub fn embedded_document(
    path: impl StringOrArray,
    operator: impl SearchOperatorParam,
) -> SearchOperator<EmbeddedDocument> {
    SearchOperator::new(
        "embeddedDocument",
        doc! { "path": path.into_bson(), "operator": operator.into_bson() },
    )
}

/// Marker for the `equals` operator; built by [`equals`](equals()).
pub struct Equals;

/// `equals`: matches documents whose `path` holds exactly `value` (a boolean, number, date,
/// ObjectId, UUID, string or null).
pub fn equals(path: impl StringOrArray, value: impl Into<Bson>) -> SearchOperator<Equals> {
    SearchOperator::new(
        "equals",
        doc! { "path": path.into_bson(), "value": value.into() },
    )
}

/// Marker for the `exists` operator; built by [`exists`](exists()).
pub struct Exists;

/// `exists`: matches documents in which the indexed field at `path` is present.
pub fn exists(path: impl StringOrArray) -> SearchOperator<Exists> {
    SearchOperator::new("exists", doc! { "path": path.into_bson() })
}

/// Marker for the `facet` collector; built by [`facet`](facet()).
pub struct Facet;

/// `facet`: a collector for `$searchMeta` that counts the results per value or range of each
/// facet in `facets`, a document mapping facet names to definitions built with the
/// [`facet`](mod@super::facet) module's functions. The results counted are those of the
/// [`operator`](SearchOperator::operator), or all indexed documents without one.
///
/// ```
/// use bson::doc;
/// use steadfast::atlas_search::{exists, facet};
///
/// let op = facet(doc! { "byYear": facet::number("year", [1990, 2000, 2010]) })
///     .operator(exists("title"));
/// assert_eq!(
///     op.into_stage_meta(),
///     doc! { "$searchMeta": { "facet": {
///         "facets": { "byYear": { "type": "number", "path": "year", "boundaries": [1990, 2000, 2010] } },
///         "operator": { "exists": { "path": "title" } },
///     } } }
/// );
/// ```
pub fn facet(facets: Document) -> SearchOperator<Facet> {
    SearchOperator::new("facet", doc! { "facets": facets })
}

impl SearchOperator<Facet> {
    /// Sets `operator`: the search whose results are counted.
    pub fn operator(self, operator: impl SearchOperatorParam) -> Self {
        self.with("operator", operator.into_bson())
    }
}

/// Marker for the `geoShape` operator; built by [`geo_shape`](geo_shape()).
pub struct GeoShape;

/// `geoShape`: matches documents whose shape at `path` stands in `relation` to `geometry` (a
/// GeoJSON `Polygon`, `MultiPolygon`, `LineString` or `Point`). The field must be indexed
/// with `indexShapes: true`.
pub fn geo_shape(
    path: impl StringOrArray,
    relation: Relation,
    geometry: Document,
) -> SearchOperator<GeoShape> {
    SearchOperator::new(
        "geoShape",
        doc! {
            "path": path.into_bson(),
            "relation": relation.as_str(),
            "geometry": geometry,
        },
    )
}

/// Marker for the `geoWithin` operator; built by [`geo_within`](geo_within()).
pub struct GeoWithin;

/// `geoWithin`: matches documents whose point at `path` lies inside an area, given by exactly
/// one of [`geo_box`](SearchOperator::geo_box), [`circle`](SearchOperator::circle) or
/// [`geometry`](SearchOperator::geometry). Only points match, even where shapes are indexed.
///
/// ```
/// use bson::doc;
/// use steadfast::atlas_search::geo_within;
///
/// let centre = doc! { "type": "Point", "coordinates": [-73.98, 40.75] };
/// let op = geo_within("address.location").circle(doc! { "center": centre, "radius": 1600 });
/// let spec = op.into_stage();
/// let within = spec.get_document("$search").unwrap().get_document("geoWithin").unwrap();
/// assert_eq!(within.get_document("circle").unwrap().get_i32("radius").unwrap(), 1600);
/// ```
pub fn geo_within(path: impl StringOrArray) -> SearchOperator<GeoWithin> {
    SearchOperator::new("geoWithin", doc! { "path": path.into_bson() })
}

impl SearchOperator<GeoWithin> {
    /// Sets `box`: the area is the rectangle between the GeoJSON points `bottomLeft` and
    /// `topRight`.
    pub fn geo_box(self, geo_box: Document) -> Self {
        self.with("box", geo_box)
    }

    /// Sets `circle`: the area is the disc of `radius` metres around the GeoJSON point
    /// `center`.
    pub fn circle(self, circle: Document) -> Self {
        self.with("circle", circle)
    }

    /// Sets `geometry`: the area is a GeoJSON `Polygon` or `MultiPolygon`.
    pub fn geometry(self, geometry: Document) -> Self {
        self.with("geometry", geometry)
    }
}

/// Marker for the `in` operator; built by [`search_in`](search_in()).
pub struct SearchIn;

/// `in`: matches documents whose `path` holds any of the values in `value` (one value or an
/// array of values of one type).
pub fn search_in(path: impl StringOrArray, value: impl Into<Bson>) -> SearchOperator<SearchIn> {
    SearchOperator::new(
        "in",
        doc! { "path": path.into_bson(), "value": value.into() },
    )
}

/// Marker for the `moreLikeThis` operator; built by [`more_like_this`](more_like_this()).
pub struct MoreLikeThis;

/// `moreLikeThis`: matches documents similar to the example document(s) in `like`, judged by
/// the example's indexed string fields.
pub fn more_like_this(like: impl DocumentOrArray) -> SearchOperator<MoreLikeThis> {
    SearchOperator::new("moreLikeThis", doc! { "like": like.into_bson() })
}

/// Marker for the `near` operator; built by [`near`](near()).
pub struct Near;

/// `near`: scores documents by how close the number, date or point at `path` is to `origin`;
/// a document at distance `pivot` from it scores half of one at `origin` itself (for dates the
/// pivot is in milliseconds, for points in metres).
///
/// ```
/// use bson::doc;
/// use steadfast::atlas_search::near;
///
/// assert_eq!(
///     near("runtime", 120, 15).into_stage(),
///     doc! { "$search": { "near": { "path": "runtime", "origin": 120, "pivot": 15 } } }
/// );
/// ```
pub fn near(
    path: impl StringOrArray,
    origin: impl NearOrigin,
    pivot: impl BsonNumber,
) -> SearchOperator<Near> {
    SearchOperator::new(
        "near",
        doc! {
            "path": path.into_bson(),
            "origin": origin.into_bson(),
            "pivot": pivot.into_bson(),
        },
    )
}

/// Marker for the `phrase` operator; built by [`phrase`](phrase()).
pub struct Phrase;

/// `phrase`: matches documents in which the terms of `query` appear in order in `path`
/// (analyzed with the index's analyzer), optionally with up to
/// [`slop`](SearchOperator::slop) other words between them.
pub fn phrase(path: impl StringOrArray, query: impl StringOrArray) -> SearchOperator<Phrase> {
    SearchOperator::new(
        "phrase",
        doc! { "path": path.into_bson(), "query": query.into_bson() },
    )
}

impl SearchOperator<Phrase> {
    /// Sets `slop`: how many words may stand between the phrase's terms.
    pub fn slop(self, slop: i32) -> Self {
        self.with("slop", slop)
    }

    /// Sets `synonyms`: the name of the index's synonym mapping to expand the query with.
    pub fn synonyms(self, synonyms: impl AsRef<str>) -> Self {
        self.with("synonyms", synonyms.as_ref())
    }
}

/// Marker for the `queryString` operator; built by [`query_string`](query_string()).
pub struct QueryString;

/// `queryString`: matches documents against `query`, a Lucene-style expression with `AND`,
/// `OR`, `NOT`, field prefixes, wildcards and ranges; terms without a field prefix are looked
/// up in `default_path`.
pub fn query_string(
    default_path: impl StringOrArray,
    query: impl AsRef<str>,
) -> SearchOperator<QueryString> {
    SearchOperator::new(
        "queryString",
        doc! { "defaultPath": default_path.into_bson(), "query": query.as_ref() },
    )
}

/// Marker for the `range` operator; built by [`range`](range()).
pub struct Range;

/// `range`: matches documents whose number, date, string or ObjectId at `path` lies within
/// the bounds set by [`gt`](SearchOperator::gt) or [`gte`](SearchOperator::gte) and
/// [`lt`](SearchOperator::lt) or [`lte`](SearchOperator::lte).
pub fn range(path: impl StringOrArray) -> SearchOperator<Range> {
    SearchOperator::new("range", doc! { "path": path.into_bson() })
}

impl SearchOperator<Range> {
    /// Sets `gt`: values must be greater than this.
    pub fn gt(self, gt: impl RangeValue) -> Self {
        self.with("gt", gt.into_bson())
    }

    /// Sets `gte`: values must be greater than or equal to this.
    pub fn gte(self, gte: impl RangeValue) -> Self {
        self.with("gte", gte.into_bson())
    }

    /// Sets `lt`: values must be less than this.
    pub fn lt(self, lt: impl RangeValue) -> Self {
        self.with("lt", lt.into_bson())
    }

    /// Sets `lte`: values must be less than or equal to this.
    pub fn lte(self, lte: impl RangeValue) -> Self {
        self.with("lte", lte.into_bson())
    }
}

/// Marker for the `regex` operator; built by [`regex`](regex()).
pub struct Regex;

/// `regex`: matches documents whose `path` holds a term matching the (Lucene syntax) regular
/// expression `query`. The query is not analyzed.
pub fn regex(path: impl StringOrArray, query: impl AsRef<str>) -> SearchOperator<Regex> {
    SearchOperator::new(
        "regex",
        doc! { "path": path.into_bson(), "query": query.as_ref() },
    )
}

impl SearchOperator<Regex> {
    /// Sets `allowAnalyzedField`: whether the operator may run against a field indexed with an
    /// analyzer (the server refuses it otherwise).
    pub fn allow_analyzed_field(self, allow_analyzed_field: bool) -> Self {
        self.with("allowAnalyzedField", allow_analyzed_field)
    }
}

/// Marker for the `text` operator; built by [`text`](text()).
pub struct Text;

/// `text`: full-text search for the terms of `query` in `path`, analyzed with the index's
/// analyzer (the standard analyzer if the index names none).
///
/// ```
/// use bson::doc;
/// use steadfast::atlas_search::text;
///
/// let op = text(["title", "plot"], "space").fuzzy(doc! { "maxEdits": 1 }).synonyms("genres");
/// assert_eq!(
///     op.into_stage(),
///     doc! { "$search": { "text": {
///         "path": ["title", "plot"], "query": "space",
///         "fuzzy": { "maxEdits": 1 }, "synonyms": "genres",
///     } } }
/// );
/// ```
pub fn text(path: impl StringOrArray, query: impl StringOrArray) -> SearchOperator<Text> {
    SearchOperator::new(
        "text",
        doc! { "path": path.into_bson(), "query": query.into_bson() },
    )
}

impl SearchOperator<Text> {
    /// Sets `fuzzy`: typo tolerance, as a document of `maxEdits`, `prefixLength` and
    /// `maxExpansions`. Cannot be combined with [`synonyms`](Self::synonyms).
    pub fn fuzzy(self, fuzzy: Document) -> Self {
        self.with("fuzzy", fuzzy)
    }

    /// Sets `matchCriteria`: whether a result needs any or all of the query's terms.
    pub fn match_criteria(self, match_criteria: MatchCriteria) -> Self {
        self.with("matchCriteria", match_criteria.as_str())
    }

    /// Sets `synonyms`: the name of the index's synonym mapping to expand the query with.
    pub fn synonyms(self, synonyms: impl AsRef<str>) -> Self {
        self.with("synonyms", synonyms.as_ref())
    }
}

/// Marker for the `wildcard` operator; built by [`wildcard`](wildcard()).
pub struct Wildcard;

/// `wildcard`: matches documents whose `path` holds a term matching `query`, in which `?`
/// stands for any one character and `*` for any sequence (`\` escapes them). The query is not
/// analyzed.
pub fn wildcard(path: impl StringOrArray, query: impl AsRef<str>) -> SearchOperator<Wildcard> {
    SearchOperator::new(
        "wildcard",
        doc! { "path": path.into_bson(), "query": query.as_ref() },
    )
}

impl SearchOperator<Wildcard> {
    /// Sets `allowAnalyzedField`: whether the operator may run against a field indexed with an
    /// analyzer (the server refuses it otherwise).
    pub fn allow_analyzed_field(self, allow_analyzed_field: bool) -> Self {
        self.with("allowAnalyzedField", allow_analyzed_field)
    }
}
