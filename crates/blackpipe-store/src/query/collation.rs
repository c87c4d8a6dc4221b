//! Applying a collation to a parsed filter: the string targets of equality, comparison and
//! `$in` predicates are folded once, and the values they meet are folded as they are matched
//! (see `store::collation` for what is modelled).

use bson::Bson;

use super::{Filter, InSet, Node, Predicate};
use crate::collation::Folding;

impl Filter {
    /// The filter with its string comparisons made under `folding`.
    pub(crate) fn with_collation(self, folding: Option<Folding>) -> Filter {
        match folding {
            None => self,
            Some(folding) => Filter {
                root: fold_node(self.root, folding),
            },
        }
    }
}

fn fold_node(node: Node, folding: Folding) -> Node {
    match node {
        Node::And(nodes) => Node::And(nodes.into_iter().map(|n| fold_node(n, folding)).collect()),
        Node::Or(nodes) => Node::Or(nodes.into_iter().map(|n| fold_node(n, folding)).collect()),
        Node::Nor(nodes) => Node::Nor(nodes.into_iter().map(|n| fold_node(n, folding)).collect()),
        Node::Path(mut path) => {
            path.predicate = fold_predicate(path.predicate, folding);
            Node::Path(path)
        }
        other => other,
    }
}

fn fold_predicate(predicate: Predicate, folding: Folding) -> Predicate {
    let fold = |value: &Bson| folding.fold(value).into_owned();
    let folded = match &predicate {
        Predicate::Eq(target) => Predicate::Eq(fold(target)),
        Predicate::Compare(comparison, target) => Predicate::Compare(*comparison, fold(target)),
        Predicate::In(set) => Predicate::In(
            InSet::new(set.values.iter().map(fold).collect()).with_regexes(set.regexes.clone()),
        ),
        Predicate::Not(inner) => {
            return Predicate::Not(Box::new(fold_predicate((**inner).clone(), folding)));
        }
        Predicate::All(inner) => {
            return Predicate::All(
                inner
                    .iter()
                    .cloned()
                    .map(|p| fold_predicate(p, folding))
                    .collect(),
            );
        }
        Predicate::ElemMatchValue(inner) => {
            return Predicate::ElemMatchValue(
                inner
                    .iter()
                    .cloned()
                    .map(|p| fold_predicate(p, folding))
                    .collect(),
            );
        }
        Predicate::ElemMatchObject(filter) => {
            return Predicate::ElemMatchObject(Box::new(
                (**filter).clone().with_collation(Some(folding)),
            ));
        }
        _ => return predicate,
    };
    Predicate::Folded {
        folding,
        folded: Box::new(folded),
        original: Box::new(predicate),
    }
}
