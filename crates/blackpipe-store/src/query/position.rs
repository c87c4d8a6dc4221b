//! The array position a query matched: what mongod's positional `$` stands for in an update
//! path (`{$set: {"items.$.qty": 2}}`) and a find projection (`{"items.$": 1}`).
//!
//! mongod records, while matching, the position in the first array a predicate's path went
//! through of the element that satisfied it: within `$and` the last predicate that recorded
//! one wins, within `$or` the first branch that matches, and negations (`$not`, `$nor`, `$ne`,
//! `$nin`) record nothing.

use bson::{Bson, Document};

use super::{
    Filter, Node, PathPredicate, Predicate, element_matches, missing_matches, node_matches,
    predicate_matches, value_matches,
};
use crate::path::{Leaf, for_each_leaf};

impl Filter {
    /// The array position the filter matched in `document`: `None` when it does not match, or
    /// matches without going through an array element.
    pub(crate) fn matched_position(&self, document: &Document) -> Option<usize> {
        let mut position = None;
        if node_records(&self.root, document, &mut position) {
            position
        } else {
            None
        }
    }

    /// Whether a predicate of the filter (outside `$expr`) names a path whose first component
    /// is `field`: mongod's condition for a positional projection on `field`.
    pub(crate) fn names_field(&self, field: &str) -> bool {
        names_field(&self.root, field)
    }
}

fn names_field(node: &Node, field: &str) -> bool {
    match node {
        Node::And(nodes) | Node::Or(nodes) | Node::Nor(nodes) => {
            nodes.iter().any(|node| names_field(node, field))
        }
        Node::Path(PathPredicate { parts, .. }) => {
            parts.first().is_some_and(|first| first == field)
        }
        Node::Expr(_) | Node::Schema(_) => false,
    }
}

fn node_records(node: &Node, document: &Document, position: &mut Option<usize>) -> bool {
    match node {
        Node::And(nodes) => {
            let before = *position;
            let all = nodes
                .iter()
                .all(|node| node_records(node, document, position));
            if !all {
                *position = before;
            }
            all
        }
        Node::Or(nodes) => nodes
            .iter()
            .any(|node| node_records(node, document, position)),
        Node::Path(PathPredicate { parts, predicate }) => {
            let mut leaves = Vec::new();
            for_each_leaf(document, parts, &mut |leaf, at| leaves.push((leaf, at)));
            predicate_records(predicate, &leaves, position)
        }
        Node::Nor(_) | Node::Expr(_) | Node::Schema(_) => node_matches(node, document),
    }
}

type PositionedLeaf<'a> = (Leaf<'a>, Option<usize>);

fn predicate_records(
    predicate: &Predicate,
    leaves: &[PositionedLeaf<'_>],
    position: &mut Option<usize>,
) -> bool {
    match predicate {
        Predicate::All(predicates) => {
            let before = *position;
            let all = predicates
                .iter()
                .all(|predicate| predicate_records(predicate, leaves, position));
            if !all {
                *position = before;
            }
            all
        }
        Predicate::ElemMatchObject(_) | Predicate::ElemMatchValue(_) => {
            for (leaf, at) in leaves {
                if let Leaf::Present(Bson::Array(items)) = leaf {
                    if let Some(index) = items
                        .iter()
                        .position(|item| element_matches(predicate, item))
                    {
                        *position = at.or(Some(index));
                        return true;
                    }
                }
            }
            false
        }
        Predicate::Not(_) | Predicate::Never | Predicate::Exists(_) | Predicate::Size(_) => {
            let plain: Vec<Leaf<'_>> = leaves.iter().map(|(leaf, _)| *leaf).collect();
            predicate_matches(predicate, &plain)
        }
        _ => leaves
            .iter()
            .any(|(leaf, at)| leaf_records(predicate, *leaf, *at, position)),
    }
}

fn leaf_records(
    predicate: &Predicate,
    leaf: Leaf<'_>,
    at: Option<usize>,
    position: &mut Option<usize>,
) -> bool {
    let Leaf::Present(value) = leaf else {
        return missing_matches(predicate);
    };
    if value_matches(predicate, value) {
        if at.is_some() {
            *position = at;
        }
        return true;
    }
    let Bson::Array(items) = value else {
        return false;
    };
    match items.iter().position(|item| value_matches(predicate, item)) {
        Some(index) => {
            *position = at.or(Some(index));
            true
        }
        None => false,
    }
}
