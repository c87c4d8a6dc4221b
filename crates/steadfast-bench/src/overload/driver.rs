//! The three contenders of the overload cell, each behind one call: a point read by `_id`.

use std::sync::Arc;

use bson::{Document, doc};
use steadfast::retries::{AdaptiveConfig, AdaptivePolicy};

use super::super::BenchError;
use super::super::workload::DATABASE;

/// The collection the cell reads from.
pub(super) const COLLECTION: &str = "overload";

/// Which client runs a cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Policy {
    /// steadfast with its default retry policy (the specifications).
    SteadfastDefault,
    /// steadfast with [`AdaptivePolicy`].
    SteadfastAdaptive,
    /// The official `mongodb` crate.
    Official,
}

impl Policy {
    /// Every contender, in the order of the first load level (rotated after).
    pub(crate) const ALL: [Policy; 3] = [
        Policy::SteadfastDefault,
        Policy::SteadfastAdaptive,
        Policy::Official,
    ];

    /// The label in tables and the plot.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Policy::SteadfastDefault => "steadfast (default policy)",
            Policy::SteadfastAdaptive => "steadfast (adaptive policy)",
            Policy::Official => "mongodb 3.x (official)",
        }
    }
}

/// The adaptive policy's settings in the cell: the defaults (`K` = 1.05, overload retries held
/// to 5% of first attempts, a 2 s window), so that the cell measures what a user gets.
pub(super) fn adaptive_config() -> AdaptiveConfig {
    AdaptiveConfig::default()
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// A result.
    Success,
    /// Refused by the adaptive policy before sending.
    Refused,
    /// Any other error the application saw.
    Error,
}

/// A connected client of one contender. Cheap to clone.
#[derive(Clone)]
pub(super) enum Driver {
    Steadfast(steadfast::Collection<Document>),
    Official(mongodb::Collection<Document>),
}

impl Driver {
    /// A fresh client (its own pool and, for the adaptive policy, its own counts).
    pub(super) async fn connect(policy: Policy, uri: &str) -> Result<(Driver, Closer), BenchError> {
        match policy {
            Policy::SteadfastDefault | Policy::SteadfastAdaptive => {
                let mut builder = steadfast::ClientBuilder::from_uri_str(uri).await?;
                if policy == Policy::SteadfastAdaptive {
                    builder =
                        builder.retry_policy(Arc::new(AdaptivePolicy::new(adaptive_config())));
                }
                let client = builder.build()?;
                let collection = client.database(DATABASE).collection(COLLECTION);
                Ok((Driver::Steadfast(collection), Closer::Steadfast(client)))
            }
            Policy::Official => {
                let client = mongodb::Client::with_uri_str(uri).await?;
                let collection = client.database(DATABASE).collection(COLLECTION);
                Ok((Driver::Official(collection), Closer::Official(client)))
            }
        }
    }

    /// One request: reads the seeded document.
    pub(super) async fn request(&self) -> Outcome {
        match self {
            Driver::Steadfast(collection) => match collection.find_one(doc! { "_id": 1 }).await {
                Ok(_) => Outcome::Success,
                Err(error) if matches!(error.kind(), steadfast::ErrorKind::Throttled { .. }) => {
                    Outcome::Refused
                }
                Err(_) => Outcome::Error,
            },
            Driver::Official(collection) => match collection.find_one(doc! { "_id": 1 }).await {
                Ok(_) => Outcome::Success,
                Err(_) => Outcome::Error,
            },
        }
    }
}

/// Shuts a cell's client down.
pub(super) enum Closer {
    Steadfast(steadfast::Client),
    Official(mongodb::Client),
}

impl Closer {
    pub(super) async fn close(self) {
        match self {
            Closer::Steadfast(client) => client.shutdown().await,
            Closer::Official(client) => client.shutdown().await,
        }
    }
}
