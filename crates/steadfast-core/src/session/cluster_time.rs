//! The `$clusterTime` a deployment gossips: a timestamp and the signature that proves it.

use std::cmp::Ordering;

use bson::{Document, Timestamp};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A cluster time reported by a server: the `$clusterTime` of a reply, that is the logical time
/// of the deployment (`clusterTime`) and the `signature` that lets servers trust it.
///
/// Sessions and the client keep the greatest one they have seen and send it back with every
/// command (cluster-time gossip). Values are ordered, and compared for equality, by their
/// timestamp alone: two cluster times with the same timestamp are equal whatever their
/// signatures.
///
/// Serializes as the document the server sent, `{clusterTime: <timestamp>, signature: {...}}`,
/// and deserializes from such a document.
#[derive(Clone, Debug)]
pub struct ClusterTime {
    /// The ordering key: `clusterTime` (seconds, then increment).
    timestamp: Timestamp,
    /// The whole document as the server sent it (with its signature), sent back unchanged.
    document: Document,
}

impl ClusterTime {
    /// Reads a `$clusterTime` document: `None` unless it has a `clusterTime` timestamp.
    pub fn from_document(document: Document) -> Option<Self> {
        let timestamp = document.get_timestamp("clusterTime").ok()?;
        Some(ClusterTime {
            timestamp,
            document,
        })
    }

    /// Reads `$clusterTime` from a server reply, if it carries a well-formed one.
    pub fn from_reply(reply: &Document) -> Option<Self> {
        Self::from_document(reply.get_document("$clusterTime").ok()?.clone())
    }

    /// The cluster time itself (the `clusterTime` field).
    pub fn timestamp(&self) -> Timestamp {
        self.timestamp
    }

    /// The `signature` document, when the server sent one.
    pub fn signature(&self) -> Option<&Document> {
        self.document.get_document("signature").ok()
    }

    /// The whole `$clusterTime` document, as sent to servers.
    pub fn as_document(&self) -> &Document {
        &self.document
    }
}

impl PartialEq for ClusterTime {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for ClusterTime {}

impl PartialOrd for ClusterTime {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ClusterTime {
    fn cmp(&self, other: &Self) -> Ordering {
        self.timestamp.cmp(&other.timestamp)
    }
}

impl Serialize for ClusterTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.document.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ClusterTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let document = Document::deserialize(deserializer)?;
        if document.get_document("signature").is_err() {
            return Err(D::Error::missing_field("signature"));
        }
        Self::from_document(document).ok_or_else(|| D::Error::missing_field("clusterTime"))
    }
}

/// The greater of two optional cluster times; on a tie, `a`.
pub fn newest_cluster_time<'a>(
    a: Option<&'a ClusterTime>,
    b: Option<&'a ClusterTime>,
) -> Option<&'a ClusterTime> {
    match (a, b) {
        (Some(x), Some(y)) => Some(if y > x { y } else { x }),
        (x, None) => x,
        (None, y) => y,
    }
}

/// Replaces `current` with `candidate` if the candidate is newer. Returns whether it advanced.
pub fn advance_cluster_time(current: &mut Option<ClusterTime>, candidate: &ClusterTime) -> bool {
    let newer = current.as_ref().is_none_or(|c| candidate > c);
    if newer {
        *current = Some(candidate.clone());
    }
    newer
}
