//! Rollback: a member whose op log holds entries its sync source never received (a former
//! primary that took writes while cut off from the majority) goes back to the common point
//! and takes the source's branch, as mongod's rollback does. blackpipe does it by replacing
//! the member's store with a copy of the source's (the same result as truncating to the
//! common point and catching up), after recording every discarded write with the document
//! as the member held it: [`RollbackLog`], which `{blackpipe: "rollbacks"}` lists.

use std::collections::VecDeque;
use std::sync::Arc;

use bson::{Bson, Document, doc};
use rand::Rng;

use super::MemberData;
use crate::deployment::model::NodeIndex;
use crate::deployment::state::{Inner, lock};
use blackpipe_store::{Change, OpTime, OplogEntry, OplogOp, Store};

/// The most discarded writes the log keeps (the oldest are forgotten past it and counted).
const MAX_LOGGED: usize = 100_000;

/// One write a rollback discarded: a write the member had applied (often acknowledged to a
/// client with `w: 1`) that the rest of the set never received.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct RolledBackWrite {
    /// The member that rolled back.
    pub member: NodeIndex,
    /// Its `host:port`.
    pub host: String,
    /// `db.collection` of the write.
    pub ns: String,
    /// What kind of write it was.
    pub op: OplogOp,
    /// The `_id` of the document written, for document writes.
    pub id: Option<Bson>,
    /// The document as the member held it before the rollback (`None` after a delete, and
    /// for catalog changes).
    pub document: Option<Document>,
    /// The write's optime on the member.
    pub op_time: OpTime,
}

impl RolledBackWrite {
    fn to_document(&self) -> Document {
        let op = match self.op {
            OplogOp::Insert => "i",
            OplogOp::Update => "u",
            OplogOp::Delete => "d",
            OplogOp::Command => "c",
        };
        let mut entry = doc! {
            "member": i64::try_from(self.member).unwrap_or(i64::MAX),
            "host": &self.host,
            "ns": &self.ns,
            "op": op,
            "ts": self.op_time.ts,
            "wall": self.op_time.wall,
        };
        if let Some(id) = &self.id {
            entry.insert("_id", id.clone());
        }
        entry.insert(
            "document",
            self.document.clone().map_or(Bson::Null, Bson::Document),
        );
        entry
    }
}

/// Every write rollbacks discarded, oldest first (bounded).
#[derive(Debug, Default)]
pub(crate) struct RollbackLog {
    entries: VecDeque<RolledBackWrite>,
    /// Discarded writes forgotten past [`MAX_LOGGED`].
    forgotten: u64,
    /// Rollbacks run.
    rollbacks: u64,
}

impl RollbackLog {
    fn record(&mut self, discarded: Vec<RolledBackWrite>) {
        self.rollbacks += 1;
        for entry in discarded {
            if self.entries.len() == MAX_LOGGED {
                self.entries.pop_front();
                self.forgotten += 1;
            }
            self.entries.push_back(entry);
        }
    }

    /// The discarded writes, oldest first.
    pub(crate) fn entries(&self) -> impl Iterator<Item = &RolledBackWrite> {
        self.entries.iter()
    }

    /// The `{blackpipe: "rollbacks"}` reply body.
    pub(crate) fn to_reply(&self) -> Document {
        let writes: Vec<Document> = self
            .entries
            .iter()
            .map(RolledBackWrite::to_document)
            .collect();
        doc! {
            "rollbacks": i64::try_from(self.rollbacks).unwrap_or(i64::MAX),
            "writes": writes,
            "forgotten": i64::try_from(self.forgotten).unwrap_or(i64::MAX),
        }
    }
}

/// The entries of `mine` after the newest one `theirs` also holds (an entry older than
/// `theirs` retains counts as held: it predates anything that could have diverged).
fn divergent(mine: &Store, theirs: &Store) -> Vec<OplogEntry> {
    let entries = mine.oplog_since(OpTime::ZERO);
    let common = entries
        .iter()
        .rposition(|entry| theirs.oplog_contains(entry.op_time.ts) != Some(false));
    let start = common.map_or(0, |index| index + 1);
    entries.into_iter().skip(start).collect()
}

impl Inner {
    /// Rolls member `index` back onto the branch of `theirs` (its sync source's store): the
    /// writes only it holds are logged, then its store becomes a copy of the source's.
    pub(crate) fn roll_back(
        &self,
        index: NodeIndex,
        data: &MemberData,
        mine: &Arc<Store>,
        theirs: &Arc<Store>,
    ) {
        let host = lock(&self.state)
            .topology
            .node(index)
            .map(|node| node.host().to_owned())
            .unwrap_or_default();
        let discarded: Vec<RolledBackWrite> = divergent(mine, theirs)
            .into_iter()
            // A no-op (a new primary's note) wrote nothing to discard.
            .filter(|entry| !matches!(entry.change, Change::Noop(_)))
            .map(|entry| {
                let (db, collection) = entry.db_and_collection();
                let document = match (&entry.id, entry.op) {
                    (Some(id), OplogOp::Insert | OplogOp::Update) => {
                        mine.find_by_id(db, collection, id)
                    }
                    _ => None,
                };
                RolledBackWrite {
                    member: index,
                    host: host.clone(),
                    ns: entry.ns.clone(),
                    op: entry.op,
                    id: entry.id.clone(),
                    document,
                    op_time: entry.op_time,
                }
            })
            .collect();
        let seed = lock(&self.rng).random::<u64>();
        let copy = Arc::new(theirs.fork(self.replication.store_options(seed)));
        let applied = copy.op_time().ts;
        data.replace_store(copy);
        data.forget_pending();
        lock(&self.state).topology.set_applied(index, applied);
        if !discarded.is_empty() {
            tracing::info!(member = index, writes = discarded.len(), "rolled back");
            lock(&self.replication.rollbacks).record(discarded);
        }
    }
}
