//! The query language: filters are parsed once into a [`Filter`] and then matched against many
//! documents.

mod collation;
mod integral;
mod parse;
mod position;

pub(crate) use parse::{compile_regex, type_code_from_alias};

use std::cmp::Ordering;

use bson::{Bson, Document};

use super::errors::StoreResult;
use super::expr::Expr;
use super::path::{Leaf, collect_leaves};
use super::regex::MongoRegex;
use super::value_order::{canonical_rank, compare_values, values_equal};

/// A parsed query filter.
#[derive(Debug, Clone)]
pub(crate) struct Filter {
    root: Node,
}

#[derive(Debug, Clone)]
enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    Nor(Vec<Node>),
    Path(PathPredicate),
    Expr(Expr),
    /// `$jsonSchema`, checked against the whole document.
    Schema(std::sync::Arc<crate::json_schema::Schema>),
}

#[derive(Debug, Clone)]
struct PathPredicate {
    parts: Vec<String>,
    predicate: Predicate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comparison {
    Gt,
    Gte,
    Lt,
    Lte,
}

/// The values of an `$in`, also kept sorted so that matching a value is a binary search: a
/// million-value `$in` over a large collection must not cost a comparison per pair.
#[derive(Debug, Clone)]
pub(crate) struct InSet {
    /// In the order given (the order `_id` lookups use).
    values: Vec<Bson>,
    /// Sorted by [`compare_values`], whose `Equal` is query equality.
    sorted: Vec<Bson>,
    /// Whether null is among the values (it also matches undefined and missing fields).
    has_null: bool,
    /// The regular expressions among the values, matched as `{field: /re/}` matches.
    regexes: Vec<MongoRegex>,
}

impl InSet {
    pub(crate) fn new(values: Vec<Bson>) -> InSet {
        let mut sorted = values.clone();
        sorted.sort_by(compare_values);
        let has_null = values.iter().any(|value| matches!(value, Bson::Null));
        InSet {
            values,
            sorted,
            has_null,
            regexes: Vec::new(),
        }
    }

    /// The set with regular expressions besides its values.
    fn with_regexes(mut self, regexes: Vec<MongoRegex>) -> InSet {
        self.regexes = regexes;
        self
    }

    fn contains(&self, value: &Bson) -> bool {
        (self.has_null && matches!(value, Bson::Null | Bson::Undefined))
            || self
                .sorted
                .binary_search_by(|target| compare_values(target, value))
                .is_ok()
            || self.regex_matches(value)
    }

    /// Whether one of the set's regular expressions matches the value.
    fn regex_matches(&self, value: &Bson) -> bool {
        self.regexes.iter().any(|regex| regex.matches_value(value))
    }
}

#[derive(Debug, Clone)]
enum Predicate {
    Eq(Bson),
    Compare(Comparison, Bson),
    In(InSet),
    Exists(bool),
    /// A regular expression (`{a: /re/}`, `$regex`): strings matching it, or an equal regex.
    Regex(MongoRegex),
    Mod(integral::Modulo),
    Bits(integral::BitTest),
    Type(Vec<TypeSelector>),
    Size(usize),
    /// `$elemMatch` over documents: the element must be a document matching the filter.
    ElemMatchObject(Box<Filter>),
    /// `$elemMatch` over values: the element itself must satisfy every predicate.
    ElemMatchValue(Vec<Predicate>),
    Not(Box<Predicate>),
    All(Vec<Predicate>),
    /// Matches nothing (`$all: []`, `$in: []` are expressed this way).
    Never,
    /// A predicate under a collation: `folded` (string targets folded) is matched against
    /// folded values; `original` keeps the targets as given (an upsert's seed fields).
    Folded {
        collation: crate::collation::Collation,
        folded: Box<Predicate>,
        original: Box<Predicate>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeSelector {
    /// One BSON type by its numeric code.
    Code(i32),
    /// The `"number"` alias: any numeric type.
    Number,
}

impl Filter {
    /// Parses a filter document.
    pub(crate) fn parse(filter: &Document) -> StoreResult<Filter> {
        // One budget for the regular expressions the whole filter keeps compiled.
        let mut budget = super::regex::RegexBudget::per_filter();
        Ok(Filter {
            root: parse::parse_document(filter, &mut budget)?,
        })
    }

    /// A filter that matches every document.
    pub(crate) fn match_all() -> Filter {
        Filter {
            root: Node::And(Vec::new()),
        }
    }

    /// Whether the document satisfies the filter.
    pub(crate) fn matches(&self, document: &Document) -> bool {
        node_matches(&self.root, document)
    }

    /// When the filter pins `_id` to one or more values (`{_id: v}`, `{_id: {$eq: v}}`,
    /// `{_id: {$in: [...]}}`) at the top level, those values: a lookup in the `_id` index then
    /// finds every candidate, and the full filter is still applied to each.
    pub(crate) fn id_candidates(&self) -> Option<Vec<&Bson>> {
        let conjuncts: &[Node] = match &self.root {
            Node::And(nodes) => nodes,
            other => std::slice::from_ref(other),
        };
        conjuncts.iter().find_map(|node| match node {
            Node::Path(PathPredicate { parts, predicate })
                if parts.len() == 1 && parts[0] == "_id" =>
            {
                match predicate {
                    Predicate::Eq(value) if !matches!(value, Bson::Null | Bson::Array(_)) => {
                        Some(vec![value])
                    }
                    Predicate::In(InSet {
                        values, regexes, ..
                    }) if regexes.is_empty()
                        && values
                            .iter()
                            .all(|value| !matches!(value, Bson::Null | Bson::Array(_))) =>
                    {
                        Some(values.iter().collect())
                    }
                    _ => None,
                }
            }
            _ => None,
        })
    }

    /// The `path = value` equalities an upsert copies into the document it inserts
    /// (top-level fields and `$and` branches; `$eq` counts, other operators do not).
    pub(crate) fn equality_fields(&self) -> Vec<(Vec<String>, Bson)> {
        let mut out = Vec::new();
        collect_equalities(&self.root, &mut out);
        out
    }
}

fn collect_equalities(node: &Node, out: &mut Vec<(Vec<String>, Bson)>) {
    match node {
        Node::And(nodes) => nodes.iter().for_each(|node| collect_equalities(node, out)),
        Node::Or(nodes) if nodes.len() == 1 => collect_equalities(&nodes[0], out),
        Node::Path(PathPredicate { parts, predicate }) => match predicate {
            Predicate::Eq(value) => out.push((parts.clone(), value.clone())),
            Predicate::Folded { original, .. } => {
                if let Predicate::Eq(value) = &**original {
                    out.push((parts.clone(), value.clone()));
                }
            }
            Predicate::All(predicates) => {
                for predicate in predicates {
                    if let Predicate::Eq(value) = predicate {
                        out.push((parts.clone(), value.clone()));
                    }
                }
            }
            _ => {}
        },
        _ => {}
    }
}

fn node_matches(node: &Node, document: &Document) -> bool {
    match node {
        Node::And(nodes) => nodes.iter().all(|node| node_matches(node, document)),
        Node::Or(nodes) => nodes.iter().any(|node| node_matches(node, document)),
        Node::Nor(nodes) => !nodes.iter().any(|node| node_matches(node, document)),
        Node::Path(PathPredicate { parts, predicate }) => {
            let mut leaves = Vec::new();
            collect_leaves(document, parts, &mut leaves);
            predicate_matches(predicate, &leaves)
        }
        Node::Expr(expr) => expr.evaluate_truthy(document),
        Node::Schema(schema) => schema.matches(document),
    }
}

/// Whether a predicate holds for the values a path reached.
fn predicate_matches(predicate: &Predicate, leaves: &[Leaf<'_>]) -> bool {
    match predicate {
        Predicate::Not(inner) => !predicate_matches(inner, leaves),
        Predicate::All(predicates) => predicates
            .iter()
            .all(|predicate| predicate_matches(predicate, leaves)),
        Predicate::Never => false,
        Predicate::Exists(wanted) => {
            leaves.iter().any(|leaf| matches!(leaf, Leaf::Present(_))) == *wanted
        }
        Predicate::Size(size) => leaves
            .iter()
            .any(|leaf| matches!(leaf, Leaf::Present(Bson::Array(items)) if items.len() == *size)),
        Predicate::ElemMatchObject(_) | Predicate::ElemMatchValue(_) => {
            leaves.iter().any(|leaf| match leaf {
                Leaf::Present(Bson::Array(items)) => {
                    items.iter().any(|item| element_matches(predicate, item))
                }
                _ => false,
            })
        }
        _ => leaves.iter().any(|leaf| leaf_matches(predicate, *leaf)),
    }
}

/// Whether one array element satisfies an `$elemMatch` predicate.
fn element_matches(predicate: &Predicate, item: &Bson) -> bool {
    match predicate {
        Predicate::ElemMatchObject(filter) => {
            matches!(item, Bson::Document(document) if filter.matches(document))
        }
        Predicate::ElemMatchValue(predicates) => {
            let element = [Leaf::Present(item)];
            predicates
                .iter()
                .all(|predicate| predicate_matches(predicate, &element))
        }
        _ => false,
    }
}

/// A leaf satisfies a simple predicate if its value does or, for an array, if one element does.
fn leaf_matches(predicate: &Predicate, leaf: Leaf<'_>) -> bool {
    match leaf {
        Leaf::Missing => missing_matches(predicate),
        Leaf::Present(value) => {
            value_matches(predicate, value)
                || matches!(value, Bson::Array(items) if items.iter().any(|item| value_matches(predicate, item)))
        }
    }
}

/// A missing field compares equal to null.
fn missing_matches(predicate: &Predicate) -> bool {
    match predicate {
        Predicate::Eq(Bson::Null) => true,
        Predicate::Compare(Comparison::Gte | Comparison::Lte, Bson::Null) => true,
        Predicate::In(set) => set.has_null,
        Predicate::Folded { folded, .. } => missing_matches(folded),
        _ => false,
    }
}

fn value_matches(predicate: &Predicate, value: &Bson) -> bool {
    match predicate {
        Predicate::Eq(target) => equals_for_query(value, target),
        Predicate::Compare(comparison, target) => compare_for_query(*comparison, value, target),
        Predicate::In(set) => set.contains(value),
        Predicate::Regex(regex) => regex.matches_value(value),
        Predicate::Mod(modulo) => modulo.matches(value),
        Predicate::Bits(test) => test.matches(value),
        Predicate::Type(selectors) => selectors
            .iter()
            .any(|selector| type_matches(*selector, value)),
        Predicate::Folded {
            collation,
            folded,
            original,
        } => {
            value_matches(folded, &collation.fold(value))
                || matches!(&**original, Predicate::In(set) if set.regex_matches(value))
        }
        _ => false,
    }
}

fn equals_for_query(value: &Bson, target: &Bson) -> bool {
    match target {
        // `{a: null}` also matches the deprecated undefined.
        Bson::Null => matches!(value, Bson::Null | Bson::Undefined),
        _ => values_equal(value, target),
    }
}

/// Comparisons only match values of the same canonical type ("type bracketing"), except that
/// MinKey and MaxKey bound everything.
fn compare_for_query(comparison: Comparison, value: &Bson, target: &Bson) -> bool {
    let bracketed = matches!(target, Bson::MinKey | Bson::MaxKey)
        || canonical_rank(value) == canonical_rank(target)
        || (matches!(target, Bson::Null) && matches!(value, Bson::Undefined));
    if !bracketed {
        return false;
    }
    let order = compare_values(value, target);
    match comparison {
        Comparison::Gt => order == Ordering::Greater,
        Comparison::Gte => order != Ordering::Less,
        Comparison::Lt => order == Ordering::Less,
        Comparison::Lte => order != Ordering::Greater,
    }
}

fn type_matches(selector: TypeSelector, value: &Bson) -> bool {
    match selector {
        TypeSelector::Number => {
            matches!(
                value,
                Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
            )
        }
        TypeSelector::Code(code) => {
            i32::from(value.element_type() as u8) == code
                || (code == -1 && matches!(value, Bson::MinKey))
                || (code == 127 && matches!(value, Bson::MaxKey))
        }
    }
}

/// Whether `document` matches the query `filter` (mongod's query language, as `find` reads
/// it), for documents that live outside the store (`currentOp`'s operations). `Err` is the
/// error reply of a malformed filter.
pub fn filter_matches(filter: &Document, document: &Document) -> Result<bool, Document> {
    Filter::parse(filter)
        .map(|filter| filter.matches(document))
        .map_err(|error| error.to_reply())
}
