//! What the throughput bench runs: the workloads, the data they use, and who runs them.

use bson::oid::ObjectId;
use bson::{Document, doc};
use serde::Serialize;

/// The database every workload uses.
pub(crate) const DATABASE: &str = "bench";
/// Pre-inserted documents that `find_one` reads by `_id`.
pub(crate) const ITEMS: &str = "items";
/// Pre-inserted documents that `find` reads whole.
pub(crate) const SCAN: &str = "scan";
/// Where `insert_one` and `insert_many` write (dropped before every measured slice, so that
/// neither driver pays for the other's data).
pub(crate) const INSERTS: &str = "inserts";
/// Where the failover writer inserts.
pub(crate) const FAILOVER: &str = "failover";
/// Where the failover transfer writer keeps its accounts and transfer records.
pub(crate) const BANK: &str = "bank";
/// Accounts of the failover transfer writer, each opened with [`OPENING_BALANCE`].
pub(crate) const BANK_ACCOUNTS: u64 = 4;
/// Every account's balance before the transfers.
pub(crate) const OPENING_BALANCE: i64 = 1_000;
/// How many documents `items` holds (`_id` 0..ITEM_COUNT).
pub(crate) const ITEM_COUNT: u64 = 1_000;
/// How many documents `scan` holds, all read by each `find`.
pub(crate) const SCAN_COUNT: usize = 1_000;
/// Documents per `insert_many`.
pub(crate) const INSERT_MANY_BATCH: usize = 100;

/// One kind of operation the bench repeats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Workload {
    /// `{ping: 1}` on `admin` through `run_command`.
    Ping,
    /// `find_one` by `_id` among [`ITEM_COUNT`] documents.
    FindOne,
    /// `insert_one` of a small document with a fresh `_id`.
    InsertOne,
    /// `insert_many` of [`INSERT_MANY_BATCH`] small documents with fresh `_id`s.
    InsertMany,
    /// `find({})` over [`SCAN_COUNT`] documents, iterating the whole cursor at each driver's
    /// default batch size.
    Find,
}

impl Workload {
    /// Every workload, in report order.
    pub(crate) const ALL: [Workload; 5] = [
        Workload::Ping,
        Workload::FindOne,
        Workload::InsertOne,
        Workload::InsertMany,
        Workload::Find,
    ];

    /// The name used in reports.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Workload::Ping => "ping",
            Workload::FindOne => "find_one",
            Workload::InsertOne => "insert_one",
            Workload::InsertMany => "insert_many(100)",
            Workload::Find => "find(1000)",
        }
    }

    /// Whether the workload writes to [`INSERTS`].
    pub(crate) fn inserts(self) -> bool {
        matches!(self, Workload::InsertOne | Workload::InsertMany)
    }
}

/// Who runs a workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum ContenderKind {
    /// This repository's driver.
    Steadfast,
    /// The official `mongodb` crate.
    Official,
    /// Pre-encoded frames over plain sockets.
    Raw,
}

impl ContenderKind {
    /// The name used in reports.
    pub(crate) fn label(self) -> &'static str {
        match self {
            ContenderKind::Steadfast => "steadfast",
            ContenderKind::Official => "official",
            ContenderKind::Raw => "raw",
        }
    }
}

/// The `_id` that operation number `sequence` reads with `find_one`.
pub(crate) fn item_id(sequence: u64) -> i64 {
    // ITEM_COUNT is small, so the remainder always fits.
    i64::try_from(sequence % ITEM_COUNT).unwrap_or_default()
}

/// A small document with a fresh `_id`, as `insert_one` and `insert_many` write.
pub(crate) fn fresh_document(sequence: u64) -> Document {
    doc! {
        "_id": ObjectId::new(),
        "name": "widget",
        "qty": i64::try_from(sequence).unwrap_or(i64::MAX),
        "tags": ["red", "small"],
    }
}

/// The documents one `insert_many` writes.
pub(crate) fn fresh_batch(sequence: u64) -> Vec<Document> {
    (0..INSERT_MANY_BATCH as u64)
        .map(|offset| fresh_document(sequence.wrapping_add(offset)))
        .collect()
}

/// The `insert` commands that seed [`ITEMS`] and [`SCAN`] (sent over a raw connection).
pub(crate) fn seed_commands() -> Vec<Document> {
    let items: Vec<Document> = (0..ITEM_COUNT)
        .map(|id| {
            let id = i64::try_from(id).unwrap_or_default();
            doc! { "_id": id, "name": format!("item-{id}"), "qty": id * 3, "tags": ["a", "b"] }
        })
        .collect();
    let scan: Vec<Document> = (0..SCAN_COUNT)
        .map(|n| {
            let n = i64::try_from(n).unwrap_or_default();
            doc! { "_id": n, "name": format!("row-{n}"), "value": n as f64 * 0.5, "flag": n % 2 == 0 }
        })
        .collect();
    vec![
        doc! { "insert": ITEMS, "documents": items, "$db": DATABASE },
        doc! { "insert": SCAN, "documents": scan, "$db": DATABASE },
    ]
}

/// The raw baseline's `find` by `_id`, shaped as the official driver's `find_one` sends it.
pub(crate) fn raw_find_one_command() -> Document {
    doc! { "find": ITEMS, "filter": { "_id": 1_i64 }, "limit": 1, "singleBatch": true, "$db": DATABASE }
}

/// The raw baseline's `ping`.
pub(crate) fn raw_ping_command() -> Document {
    doc! { "ping": 1, "$db": "admin" }
}

/// Drops [`INSERTS`] (sent over a raw connection between slices).
pub(crate) fn drop_inserts_command() -> Document {
    doc! { "drop": INSERTS, "$db": DATABASE }
}

/// Transfer `sequence` of the failover writer: its record's `_id`, the accounts debited and
/// credited, and the amount.
pub(crate) fn transfer_plan(sequence: u64) -> (String, String, String, i64) {
    let from = sequence % BANK_ACCOUNTS;
    let to = (sequence + 1) % BANK_ACCOUNTS;
    let amount = i64::try_from(1 + sequence % 7).unwrap_or(1);
    (
        format!("transfer-{sequence}"),
        format!("acct-{from}"),
        format!("acct-{to}"),
        amount,
    )
}

/// The accounts of the failover transfer writer, at their opening balance.
pub(crate) fn opening_accounts() -> Vec<Document> {
    (0..BANK_ACCOUNTS)
        .map(|n| doc! { "_id": format!("acct-{n}"), "balance": OPENING_BALANCE })
        .collect()
}
