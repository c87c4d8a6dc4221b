//! A router's `config` database, as shells and tools read it (`sh.status()`): blackpipe's
//! sharded deployment is its routers over one store, with no shard servers and no sharded
//! collections, so the catalog says exactly that: one shard (the store, reached through the
//! routers), every router in `mongos`, every database with that shard as its primary, no
//! sharded collection, no chunk. `balancerStatus` answers a balancer with nothing to balance.

use bson::oid::ObjectId;
use bson::spec::BinarySubtype;
use bson::{Binary, DateTime, Document, doc};

use crate::deployment::hello::SERVER_VERSION;
use crate::deployment::model::{Role, Topology};

/// The one shard blackpipe's routers read and write.
pub(crate) const SHARD_NAME: &str = "blackpipe-shard";

/// The catalog's collections for `topology`'s routers and the store's `databases`, at `now`;
/// `cluster_id` names the cluster (`config.version`).
pub(crate) fn catalog(
    topology: &Topology,
    databases: &[String],
    cluster_id: ObjectId,
    now: DateTime,
) -> Vec<(String, Vec<Document>)> {
    let routers: Vec<&str> = topology
        .nodes()
        .iter()
        .filter(|node| node.role() == Role::Router)
        .map(|node| node.host())
        .collect();
    let version = vec![doc! { "_id": 1, "clusterId": cluster_id }];
    let shards = vec![doc! {
        "_id": SHARD_NAME,
        "host": format!("{SHARD_NAME}/{}", routers.join(",")),
        "state": 1,
        "topologyTime": bson::Timestamp { time: 1, increment: 1 },
    }];
    let mongos = routers
        .iter()
        .map(|host| {
            doc! {
                "_id": *host,
                "advisoryHostFQDNs": [],
                "mongoVersion": SERVER_VERSION,
                "ping": now,
                "up": 0_i64,
                "waiting": true,
            }
        })
        .collect();
    let databases = databases
        .iter()
        .filter(|name| !matches!(name.as_str(), "admin" | "config" | "local"))
        .map(|name| {
            doc! {
                "_id": name,
                "primary": SHARD_NAME,
                "version": {
                    "uuid": Binary { subtype: BinarySubtype::Uuid, bytes: name_uuid(name).to_vec() },
                    "timestamp": bson::Timestamp { time: 1, increment: 1 },
                    "lastMod": 1,
                },
            }
        })
        .collect();
    vec![
        ("version".to_owned(), version),
        ("shards".to_owned(), shards),
        ("mongos".to_owned(), mongos),
        ("databases".to_owned(), databases),
        ("collections".to_owned(), Vec::new()),
        ("chunks".to_owned(), Vec::new()),
        ("settings".to_owned(), Vec::new()),
        ("tags".to_owned(), Vec::new()),
    ]
}

/// A database's version UUID, the same for the same name (the catalog is rebuilt on reads).
fn name_uuid(name: &str) -> [u8; 16] {
    // FNV-1a over the name, spread over 16 bytes: stable and distinct enough for a catalog.
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes() {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&hash.to_be_bytes());
    bytes[8..].copy_from_slice(&hash.rotate_left(29).to_be_bytes());
    bytes
}

/// `balancerStatus` on a router: nothing to balance.
pub(crate) fn balancer_status() -> Document {
    doc! { "mode": "full", "inBalancerRound": false, "numBalancerRounds": 0_i64 }
}
