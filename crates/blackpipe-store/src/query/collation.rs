//! Applying a collation to a parsed filter: the string targets of equality, comparison and
//! `$in` predicates are folded once into comparison keys, and the values they meet are folded
//! as they are matched (see `store::collation`). Regular expressions ignore the collation, as
//! in mongod.

use bson::Bson;

use super::{Filter, InSet, Node, Predicate};
use crate::collation::Collation;

impl Filter {
    /// The filter with its string comparisons made under `collation`.
    pub(crate) fn with_collation(self, collation: Option<&Collation>) -> Filter {
        match collation {
            None => self,
            Some(collation) => Filter {
                root: fold_node(self.root, collation),
            },
        }
    }
}

fn fold_node(node: Node, collation: &Collation) -> Node {
    let fold_all = |nodes: Vec<Node>| nodes.into_iter().map(|n| fold_node(n, collation)).collect();
    match node {
        Node::And(nodes) => Node::And(fold_all(nodes)),
        Node::Or(nodes) => Node::Or(fold_all(nodes)),
        Node::Nor(nodes) => Node::Nor(fold_all(nodes)),
        Node::Path(mut path) => {
            path.predicate = fold_predicate(path.predicate, collation);
            Node::Path(path)
        }
        other => other,
    }
}

fn fold_predicate(predicate: Predicate, collation: &Collation) -> Predicate {
    let fold = |value: &Bson| collation.fold(value).into_owned();
    let fold_each = |predicates: &[Predicate]| {
        predicates
            .iter()
            .cloned()
            .map(|p| fold_predicate(p, collation))
            .collect()
    };
    let folded = match &predicate {
        Predicate::Eq(target) => Predicate::Eq(fold(target)),
        Predicate::Compare(comparison, target) => Predicate::Compare(*comparison, fold(target)),
        // The set's regexes stay with the original: they match the value as stored.
        Predicate::In(set) => Predicate::In(InSet::new(set.values.iter().map(fold).collect())),
        Predicate::Not(inner) => {
            return Predicate::Not(Box::new(fold_predicate((**inner).clone(), collation)));
        }
        Predicate::All(inner) => return Predicate::All(fold_each(inner)),
        Predicate::ElemMatchValue(inner) => return Predicate::ElemMatchValue(fold_each(inner)),
        Predicate::ElemMatchObject(filter) => {
            return Predicate::ElemMatchObject(Box::new(
                (**filter).clone().with_collation(Some(collation)),
            ));
        }
        _ => return predicate,
    };
    Predicate::Folded {
        collation: collation.clone(),
        folded: Box::new(folded),
        original: Box::new(predicate),
    }
}
