//! The fields the executor adds to every command: `$db`, `lsid`, `txnNumber`, `$clusterTime`,
//! `readConcern` (with `afterClusterTime` for causally consistent sessions), `writeConcern`,
//! `$readPreference`, `maxTimeMS` and the Stable API fields.

use std::time::Duration;

use bson::raw::cstr;
use bson::{Bson, Document, RawDocument, RawDocumentBuf, Timestamp, doc};
use steadfast_core::TopologyType;
use steadfast_core::description::ServerType;
use steadfast_core::options::{Acknowledgment, ReadConcern, WriteConcern};
use steadfast_core::selection::{ReadPreference, ReadPreferenceMode, SelectionCriteria};

use crate::conn::config::ServerApi;

/// Bytes reserved beyond `$db`'s value and the `lsid` for the other fields a command usually
/// gets (`$db`'s and `lsid`'s own headers, `txnNumber`, `maxTimeMS`): a guess, never a limit.
const FIELD_ROOM: usize = 64;

/// Everything the executor adds to one attempt's command.
#[derive(Debug, Default)]
pub(super) struct CommonFields<'a> {
    /// The database (`$db`).
    pub(super) database: &'a str,
    /// The session id, encoded once per server session.
    pub(super) lsid: Option<&'a RawDocument>,
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
    /// The body's own `maxTimeMS` is dropped even when none is sent (under timeoutMS).
    pub(super) without_own_max_time: bool,
}

impl CommonFields<'_> {
    /// The command: `body` (the operation's fields, command name first) with these fields
    /// appended. A field of `body` that the executor sets is replaced (it moves to the end).
    ///
    /// The fields are appended to the encoded body rather than inserted into a document: the
    /// session id arrives already encoded, and nothing is cloned into a map only to be
    /// encoded again.
    ///
    /// # Errors
    /// When `body` is not valid BSON or a document cannot be encoded (a key with a NUL byte,
    /// say).
    pub(super) fn encode(&self, body: RawDocumentBuf) -> bson::error::Result<RawDocumentBuf> {
        let mut raw = self.with_room(self.without_replaced(body)?)?;
        raw.append(cstr!("$db"), self.database);
        if let Some(lsid) = self.lsid {
            raw.append(cstr!("lsid"), lsid);
        }
        if let Some(txn_number) = self.txn_number {
            raw.append(cstr!("txnNumber"), txn_number);
        }
        if let Some(TransactionFields { first }) = self.transaction {
            if first {
                raw.append(cstr!("startTransaction"), true);
            }
            raw.append(cstr!("autocommit"), false);
        }
        let documents = [
            (cstr!("$clusterTime"), self.cluster_time),
            (cstr!("readConcern"), self.read_concern.as_ref()),
            (cstr!("writeConcern"), self.write_concern.as_ref()),
            (cstr!("$readPreference"), self.read_preference.as_ref()),
        ];
        for (key, document) in documents {
            if let Some(document) = document {
                raw.append(key, RawDocumentBuf::try_from(document)?);
            }
        }
        if let Some(max_time) = self.max_time {
            // At least 1 ms: 0 would mean "no limit" to the server.
            let millis = i64::try_from(max_time.as_millis())
                .unwrap_or(i64::MAX)
                .max(1);
            raw.append(cstr!("maxTimeMS"), millis);
        }
        if let Some(api) = self.server_api {
            api.append_raw(&mut raw);
        }
        Ok(raw)
    }

    /// `body` with room reserved for the fields most commands get (`$db`, `lsid` and a few
    /// small ones), so that appending them does not grow the buffer one field at a time.
    fn with_room(&self, body: RawDocumentBuf) -> bson::error::Result<RawDocumentBuf> {
        let lsid = self.lsid.map_or(0, |lsid| lsid.as_bytes().len());
        let mut bytes = body.into_bytes();
        bytes.reserve(self.database.len() + lsid + FIELD_ROOM);
        RawDocumentBuf::from_bytes(bytes)
    }

    /// `body` without the fields [`CommonFields::encode`] sets; copied only when it has one.
    fn without_replaced(&self, body: RawDocumentBuf) -> bson::error::Result<RawDocumentBuf> {
        let replaced = |key: &str| self.keys().any(|k| k == key);
        let mut found = false;
        for element in body.iter_elements() {
            if replaced(element?.key().as_str()) {
                found = true;
                break;
            }
        }
        if !found {
            return Ok(body);
        }
        let mut kept = RawDocumentBuf::new();
        for element in &body {
            let (key, value) = element?;
            if !replaced(key.as_str()) {
                kept.append(key, value);
            }
        }
        Ok(kept)
    }

    /// The keys [`CommonFields::encode`] sets, which replace the body's own.
    fn keys(&self) -> impl Iterator<Item = &'static str> {
        let transaction = self.transaction.map(|t| t.first);
        [
            (self.lsid.is_some(), "lsid"),
            (self.txn_number.is_some(), "txnNumber"),
            (transaction == Some(true), "startTransaction"),
            (transaction.is_some(), "autocommit"),
            (self.cluster_time.is_some(), "$clusterTime"),
            (self.read_concern.is_some(), "readConcern"),
            (self.write_concern.is_some(), "writeConcern"),
            (self.read_preference.is_some(), "$readPreference"),
            (
                self.max_time.is_some() || self.without_own_max_time,
                "maxTimeMS",
            ),
            (self.server_api.is_some(), "apiVersion"),
            (self.server_api.is_some(), "apiStrict"),
            (self.server_api.is_some(), "apiDeprecationErrors"),
        ]
        .into_iter()
        .filter_map(|(set, key)| set.then_some(key))
        .chain(std::iter::once("$db"))
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
