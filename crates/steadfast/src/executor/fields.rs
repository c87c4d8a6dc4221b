//! The fields the executor adds to every command: `$db`, `lsid`, `txnNumber`, `$clusterTime`,
//! `readConcern` (with `afterClusterTime` for causally consistent sessions), `writeConcern`,
//! `$readPreference`, `maxTimeMS` and the Stable API fields.

use std::time::Duration;

use bson::{Bson, Document, Timestamp, doc};
use steadfast_core::TopologyType;
use steadfast_core::description::ServerType;
use steadfast_core::options::{Acknowledgment, ReadConcern, WriteConcern};
use steadfast_core::selection::{ReadPreference, ReadPreferenceMode, SelectionCriteria};

use crate::conn::config::ServerApi;

/// Everything the executor adds to one attempt's command.
#[derive(Debug, Default)]
pub(super) struct CommonFields<'a> {
    /// The database (`$db`).
    pub(super) database: &'a str,
    /// The session id.
    pub(super) lsid: Option<&'a Document>,
    /// The retryable write's or the transaction's number.
    pub(super) txn_number: Option<i64>,
    /// In a transaction: `autocommit: false`, and `startTransaction: true` on its first
    /// command.
    pub(super) transaction: Option<TransactionFields>,
    /// The highest cluster time known to the client and the session.
    pub(super) cluster_time: Option<&'a Document>,
    /// The read concern, when the command takes one.
    pub(super) read_concern: Option<Document>,
    /// The write concern, when the command takes one.
    pub(super) write_concern: Option<Document>,
    /// `$readPreference`, when the topology and the server call for it.
    pub(super) read_preference: Option<Document>,
    /// The server-side time limit under timeoutMS.
    pub(super) max_time: Option<Duration>,
    /// The declared Stable API version.
    pub(super) server_api: Option<&'a ServerApi>,
}

impl CommonFields<'_> {
    /// Adds the fields to `body` (replacing any of the same name).
    pub(super) fn apply(&self, body: &mut Document) {
        body.insert("$db", self.database);
        if let Some(lsid) = self.lsid {
            body.insert("lsid", lsid.clone());
        }
        if let Some(txn_number) = self.txn_number {
            body.insert("txnNumber", Bson::Int64(txn_number));
        }
        if let Some(TransactionFields { first }) = self.transaction {
            if first {
                body.insert("startTransaction", true);
            }
            body.insert("autocommit", false);
        }
        if let Some(cluster_time) = self.cluster_time {
            body.insert("$clusterTime", cluster_time.clone());
        }
        if let Some(read_concern) = &self.read_concern {
            body.insert("readConcern", read_concern.clone());
        }
        if let Some(write_concern) = &self.write_concern {
            body.insert("writeConcern", write_concern.clone());
        }
        if let Some(read_preference) = &self.read_preference {
            body.insert("$readPreference", read_preference.clone());
        }
        if let Some(max_time) = self.max_time {
            // At least 1 ms: 0 would mean "no limit" to the server.
            let millis = i64::try_from(max_time.as_millis())
                .unwrap_or(i64::MAX)
                .max(1);
            body.insert("maxTimeMS", millis);
        }
        if let Some(api) = self.server_api {
            api.append_to(body);
        }
    }
}

/// The transaction fields of a command run in a transaction.
#[derive(Clone, Copy, Debug)]
pub(super) struct TransactionFields {
    /// The transaction's first command.
    pub(super) first: bool,
}

/// The `readConcern` document: the operation's level, plus `afterClusterTime` for a causally
/// consistent session that has an operation time. `None` when there is nothing to send.
pub(super) fn read_concern_document(
    concern: Option<&ReadConcern>,
    after_cluster_time: Option<Timestamp>,
) -> Option<Document> {
    let mut document = Document::new();
    if let Some(concern) = concern {
        document.insert("level", concern.level.as_str());
    }
    if let Some(time) = after_cluster_time {
        document.insert("afterClusterTime", Bson::Timestamp(time));
    }
    (!document.is_empty()).then_some(document)
}

/// The `writeConcern` document, or `None` for an empty concern. Under timeoutMS, `wtimeout`
/// is left out: the operation's deadline bounds the wait instead (CSOT).
pub(super) fn write_concern_document(concern: &WriteConcern, csot: bool) -> Option<Document> {
    let mut document = Document::new();
    match &concern.w {
        Some(Acknowledgment::Nodes(n)) => {
            document.insert("w", i64::from(*n));
        }
        Some(Acknowledgment::Majority) => {
            document.insert("w", "majority");
        }
        Some(Acknowledgment::Custom(name)) => {
            document.insert("w", name.as_str());
        }
        None => {}
    }
    if let Some(journal) = concern.journal {
        document.insert("j", journal);
    }
    if let Some(wtimeout) = concern.w_timeout.filter(|_| !csot) {
        document.insert(
            "wtimeout",
            i64::try_from(wtimeout.as_millis()).unwrap_or(i64::MAX),
        );
    }
    (!document.is_empty()).then_some(document)
}

/// `$readPreference` for a read sent to `server_type` in `topology_type`, as server-selection
/// specifies for OP_MSG: passed to mongos (and load balancers) for every mode but primary; for
/// replica set members, sent for every mode but primary; in a Single topology to a replica set
/// member, always sent, with primary turned into primaryPreferred so the member accepts it;
/// never to a standalone. Writes carry none. A server chosen by a predicate may be any member,
/// so a replica set member (or a direct connection's server) is sent primaryPreferred, which
/// every member accepts; routers are sent none.
pub(super) fn read_preference_document(
    criteria: &SelectionCriteria,
    topology_type: TopologyType,
    server_type: ServerType,
) -> Option<Document> {
    let any_member;
    let preference = match criteria {
        SelectionCriteria::ReadPreference(preference) => preference,
        SelectionCriteria::Predicate(_) => {
            let router = server_type == ServerType::Mongos
                || matches!(
                    topology_type,
                    TopologyType::Sharded | TopologyType::LoadBalanced
                );
            if router {
                return None;
            }
            any_member = ReadPreference::with_mode(ReadPreferenceMode::PrimaryPreferred);
            &any_member
        }
        _ => return None,
    };
    let primary = preference.mode() == ReadPreferenceMode::Primary;
    match (topology_type, server_type) {
        (_, ServerType::Standalone) => None,
        (TopologyType::Single, ServerType::Mongos)
        | (TopologyType::Sharded, _)
        | (TopologyType::LoadBalanced, _) => (!primary).then(|| preference_document(preference)),
        (TopologyType::Single, _) if primary => Some(doc! { "mode": "primaryPreferred" }),
        (TopologyType::Single, _) => Some(preference_document(preference)),
        _ => (!primary).then(|| preference_document(preference)),
    }
}

fn preference_document(preference: &ReadPreference) -> Document {
    let mut document = doc! { "mode": preference.mode().as_str() };
    if !preference.tag_sets().is_empty() {
        let tags: Vec<Bson> = preference
            .tag_sets()
            .iter()
            .map(|set| {
                Bson::Document(
                    set.iter()
                        .map(|(k, v)| (k.clone(), Bson::String(v.clone())))
                        .collect(),
                )
            })
            .collect();
        document.insert("tags", tags);
    }
    if let Some(staleness) = preference.max_staleness() {
        document.insert(
            "maxStalenessSeconds",
            i64::try_from(staleness.as_secs()).unwrap_or(i64::MAX),
        );
    }
    if let Some(hedge) = preference.hedge() {
        document.insert("hedge", doc! { "enabled": hedge.enabled });
    }
    document
}
