//! What a write concern promises once every member owns its data: the `--write-concern` of
//! a run, the writes rollbacks discarded (by namespace and `_id`), and whether the members
//! converged to the same documents.
//!
//! A primary cut off from its secondaries keeps acknowledging `w: 1` writes until the others
//! elect; when it rejoins it rolls them back. `w: "majority"` waits until a majority holds the
//! write, and any member that can win an election then holds it too, so such a write is never
//! rolled back. The checks in [`super::verify`] allow exactly the losses these promises allow.

use std::collections::BTreeMap;

use bson::Document;
use clap::ValueEnum;
use serde::Serialize;
use steadfast::options::WriteConcern;

use super::consumer::id_text;

/// The write concern of the workers' increments and inserts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum, Serialize)]
pub(crate) enum Durability {
    /// `w: 1`: the primary alone acknowledges; a write an isolated primary acknowledged may
    /// be rolled back.
    #[value(name = "1")]
    #[serde(rename = "1")]
    W1,
    /// `w: "majority"` (also the server's implicit default): never rolled back once
    /// acknowledged.
    #[default]
    #[serde(rename = "majority")]
    Majority,
}

impl Durability {
    /// The write concern to send.
    pub(crate) fn write_concern(self) -> WriteConcern {
        match self {
            Durability::W1 => WriteConcern::nodes(1),
            Durability::Majority => WriteConcern::majority(),
        }
    }

    /// As the command line spells it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Durability::W1 => "1",
            Durability::Majority => "majority",
        }
    }

    /// Whether an acknowledged write may be lost to a rollback.
    pub(crate) fn acknowledged_may_roll_back(self) -> bool {
        self == Durability::W1
    }
}

/// One document write a rollback discarded: where, and which document.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Discarded {
    /// `db.collection`.
    pub(crate) ns: String,
    /// The document's `_id`, as text.
    pub(crate) id: String,
}

impl Discarded {
    /// The discarded document writes among `writes` (catalog changes carry no `_id`).
    pub(crate) fn from_rollbacks(
        writes: &[blackpipe::deployment::RolledBackWrite],
    ) -> Vec<Discarded> {
        writes
            .iter()
            .filter_map(|write| {
                Some(Discarded {
                    ns: write.ns.clone(),
                    id: id_text(write.id.as_ref()?),
                })
            })
            .collect()
    }
}

/// How many discarded writes each `_id` of namespace `ns` had.
pub(crate) fn discarded_in(discarded: &[Discarded], ns: &str) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    for write in discarded.iter().filter(|write| write.ns == ns) {
        *counts.entry(write.id.clone()).or_default() += 1;
    }
    counts
}

/// Whether every data-bearing member holds the same documents in the workload's collections.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub(crate) struct ConvergenceCheck {
    /// Members compared.
    pub(crate) members: usize,
    /// Documents each member holds in the compared collections (the first member's count).
    pub(crate) documents: usize,
    /// One sentence per member and collection that differs from the first member.
    pub(crate) differences: Vec<String>,
}

/// One member's documents: its host and, per collection, its documents.
pub(crate) struct MemberData {
    pub(crate) host: String,
    pub(crate) collections: BTreeMap<String, Vec<Document>>,
}

/// How many differing `_id`s one sentence names.
const NAMED: usize = 5;

/// Compares every member's documents with the first member's, by `_id` and content.
pub(crate) fn check_convergence(members: &[MemberData]) -> ConvergenceCheck {
    let mut check = ConvergenceCheck {
        members: members.len(),
        ..ConvergenceCheck::default()
    };
    let Some((first, rest)) = members.split_first() else {
        return check;
    };
    check.documents = first.collections.values().map(Vec::len).sum();
    for other in rest {
        for (collection, documents) in &first.collections {
            let empty = Vec::new();
            let theirs = other.collections.get(collection).unwrap_or(&empty);
            let differing = differing_ids(documents, theirs);
            if !differing.is_empty() {
                let named: Vec<&str> = differing.iter().take(NAMED).map(String::as_str).collect();
                check.differences.push(format!(
                    "{collection}: {} holds {} documents, {} holds {}; {} _ids differ: {}",
                    first.host,
                    documents.len(),
                    other.host,
                    theirs.len(),
                    differing.len(),
                    named.join(", ")
                ));
            }
        }
    }
    check
}

/// The `_id`s whose document one side lacks or holds differently.
fn differing_ids(mine: &[Document], theirs: &[Document]) -> Vec<String> {
    let by_id = |documents: &[Document]| -> BTreeMap<String, Document> {
        documents
            .iter()
            .map(|document| {
                let id = document.get("_id").map_or_else(String::new, id_text);
                (id, document.clone())
            })
            .collect()
    };
    let (mine, theirs) = (by_id(mine), by_id(theirs));
    let mut differing: Vec<String> = mine
        .iter()
        .filter(|(id, document)| theirs.get(*id) != Some(document))
        .map(|(id, _)| id.clone())
        .collect();
    differing.extend(theirs.keys().filter(|id| !mine.contains_key(*id)).cloned());
    differing
}

#[cfg(test)]
mod tests {
    use bson::doc;

    use super::*;

    fn member(host: &str, counters: Vec<Document>) -> MemberData {
        MemberData {
            host: host.to_owned(),
            collections: BTreeMap::from([("counters".to_owned(), counters)]),
        }
    }

    #[test]
    fn identical_members_converged() {
        let documents = vec![doc! { "_id": "a", "counter": 2 }, doc! { "_id": "b" }];
        let check = check_convergence(&[
            member("m0", documents.clone()),
            member("m1", documents.iter().rev().cloned().collect()),
        ]);
        assert!(check.differences.is_empty(), "{check:?}");
        assert_eq!((check.members, check.documents), (2, 2));
    }

    #[test]
    fn a_missing_extra_or_different_document_is_a_difference() {
        let check = check_convergence(&[
            member(
                "m0",
                vec![doc! { "_id": "a", "counter": 2 }, doc! { "_id": "b" }],
            ),
            member(
                "m1",
                vec![doc! { "_id": "a", "counter": 3 }, doc! { "_id": "c" }],
            ),
        ]);
        assert_eq!(check.differences.len(), 1, "{check:?}");
        assert!(
            check.differences[0].contains("3 _ids differ: a, b, c"),
            "{check:?}"
        );
    }

    #[test]
    fn the_write_concern_is_spelled_as_on_the_command_line() {
        assert_eq!(Durability::default(), Durability::Majority);
        assert_eq!(Durability::from_str("1", false).ok(), Some(Durability::W1));
        assert!(Durability::W1.acknowledged_may_roll_back());
        assert!(!Durability::Majority.acknowledged_may_roll_back());
    }

    #[test]
    fn discarded_writes_are_counted_per_id_of_one_namespace() {
        let discarded = [
            Discarded {
                ns: "d.c".into(),
                id: "k".into(),
            },
            Discarded {
                ns: "d.c".into(),
                id: "k".into(),
            },
            Discarded {
                ns: "d.i".into(),
                id: "k".into(),
            },
        ];
        assert_eq!(
            discarded_in(&discarded, "d.c"),
            BTreeMap::from([("k".to_owned(), 2)])
        );
    }
}
