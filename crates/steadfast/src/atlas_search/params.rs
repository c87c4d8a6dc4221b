//! The value types the operators take: the string-valued enums and the sealed traits that say
//! which Rust values a parameter accepts.

use bson::oid::ObjectId;
use bson::{DateTime, Document};

use super::SearchOperator;

/// How [`autocomplete`](super::autocomplete()) matches the tokens of its query (`tokenOrder`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TokenOrder {
    /// `"any"`: the tokens may appear in a result in any order.
    Any,
    /// `"sequential"`: the tokens must appear next to each other, in the query's order.
    Sequential,
    /// Any other value, sent as given (for values newer servers accept).
    Other(String),
}

impl TokenOrder {
    pub(super) fn as_str(&self) -> &str {
        match self {
            Self::Any => "any",
            Self::Sequential => "sequential",
            Self::Other(other) => other,
        }
    }
}

/// Which of the query's terms a [`text`](super::text()) result must contain
/// (`matchCriteria`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum MatchCriteria {
    /// `"any"`: at least one of the terms.
    Any,
    /// `"all"`: every term.
    All,
    /// Any other value, sent as given (for values newer servers accept).
    Other(String),
}

impl MatchCriteria {
    pub(super) fn as_str(&self) -> &str {
        match self {
            Self::Any => "any",
            Self::All => "all",
            Self::Other(other) => other,
        }
    }
}

/// How the indexed shapes must relate to the query geometry of
/// [`geo_shape`](super::geo_shape()) (`relation`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Relation {
    /// `"contains"`: the indexed shape contains the query geometry.
    Contains,
    /// `"disjoint"`: the two shapes share no point.
    Disjoint,
    /// `"intersects"`: the two shapes share at least one point.
    Intersects,
    /// `"within"`: the indexed shape lies inside the query geometry (not for `Point` or
    /// `LineString` query geometries).
    Within,
    /// Any other value, sent as given (for values newer servers accept).
    Other(String),
}

impl Relation {
    pub(super) fn as_str(&self) -> &str {
        match self {
            Self::Contains => "contains",
            Self::Disjoint => "disjoint",
            Self::Intersects => "intersects",
            Self::Within => "within",
            Self::Other(other) => other,
        }
    }
}

mod sealed {
    use bson::Bson;

    /// The conversion behind every parameter trait of the module. Sealed: the set of accepted
    /// types is the module's to decide, so that the documents stay well-formed.
    pub trait Parameter {
        /// The value as it is written into the operator's specification.
        fn into_bson(self) -> Bson;
    }

    impl<T: Into<Bson>> Parameter for T {
        fn into_bson(self) -> Bson {
            self.into()
        }
    }

    impl<T> Parameter for super::SearchOperator<T> {
        fn into_bson(self) -> Bson {
            Bson::Document(self.into_document())
        }
    }
}

pub(super) use sealed::Parameter;

/// A parameter that is one string or a list of strings, such as an operator's `path` or
/// `query`: `&str`, `String`, `[&str; N]`, `&[&str]` or `&[String]`.
pub trait StringOrArray: Parameter {}
impl StringOrArray for &str {}
impl StringOrArray for String {}
impl<const N: usize> StringOrArray for [&str; N] {}
impl StringOrArray for &[&str] {}
impl StringOrArray for &[String] {}

/// A parameter that is itself an operator: a [`SearchOperator`] of any kind, or the operator
/// written as a [`Document`] (`{ "text": { .. } }`).
pub trait SearchOperatorParam: Parameter {}
impl<T> SearchOperatorParam for SearchOperator<T> {}
impl SearchOperatorParam for Document {}

/// A parameter that is one document or a list of documents (the `like` of
/// [`more_like_this`](super::more_like_this())): `Document`, `[Document; N]` or
/// `&[Document]`.
pub trait DocumentOrArray: Parameter {}
impl DocumentOrArray for Document {}
impl<const N: usize> DocumentOrArray for [Document; N] {}
impl DocumentOrArray for &[Document] {}

/// Implements a marker trait for the Rust numbers BSON stores (`i32`, `i64`, `u32`, `f32`,
/// `f64`).
macro_rules! for_numbers {
    ($marker:ident) => {
        impl $marker for i32 {}
        impl $marker for i64 {}
        impl $marker for u32 {}
        impl $marker for f32 {}
        impl $marker for f64 {}
    };
}

/// The `origin` of [`near`](super::near()): a number, a [`DateTime`], or a GeoJSON point
/// written as a [`Document`].
pub trait NearOrigin: Parameter {}
impl NearOrigin for DateTime {}
impl NearOrigin for Document {}
for_numbers!(NearOrigin);

/// A parameter that is a number (the `pivot` of [`near`](super::near())).
pub trait BsonNumber: Parameter {}
for_numbers!(BsonNumber);

/// A bound of [`range`](super::range()): a number, a [`DateTime`], a string or an
/// [`ObjectId`].
pub trait RangeValue: Parameter {}
for_numbers!(RangeValue);
impl RangeValue for DateTime {}
impl RangeValue for &str {}
impl RangeValue for &String {}
impl RangeValue for String {}
impl RangeValue for ObjectId {}
