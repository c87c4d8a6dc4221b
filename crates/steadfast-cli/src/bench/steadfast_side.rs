//! steadfast as a contender.

use std::time::{Duration, Instant};

use bson::doc;
use steadfast::{Client, Database};

use super::BenchError;
use super::workload::Workload;

/// A connected steadfast client and the handles the workloads use. Cheap to clone (the handles
/// share the client), so every task gets its own clone.
#[derive(Clone)]
pub(crate) struct SteadfastSide {
    admin: Database,
}

impl SteadfastSide {
    /// Creates a client with default options for `uri` and waits until a `ping` succeeds.
    pub(crate) async fn connect(uri: &str) -> Result<Self, BenchError> {
        let client = Client::with_uri_str(uri).await?;
        let side = Self {
            admin: client.database("admin"),
        };
        side.admin.run_command(doc! { "ping": 1 }).await?;
        Ok(side)
    }

    /// Why steadfast cannot run `workload` yet, if it cannot.
    pub(crate) fn unsupported(workload: Workload) -> Option<&'static str> {
        match workload {
            Workload::Ping => None,
            Workload::FindOne | Workload::InsertOne | Workload::InsertMany | Workload::Find => {
                Some("steadfast's Collection CRUD API has not landed yet")
            }
        }
    }

    /// Runs one operation of `workload` and returns its latency.
    pub(crate) async fn execute(
        &self,
        workload: Workload,
        _sequence: u64,
    ) -> Result<Duration, BenchError> {
        if let Some(reason) = Self::unsupported(workload) {
            return Err(reason.into());
        }
        let started = Instant::now();
        self.admin.run_command(doc! { "ping": 1 }).await?;
        Ok(started.elapsed())
    }

    /// One `insert_one` of the failover writer.
    pub(crate) async fn failover_insert(&self, _sequence: u64) -> Result<(), BenchError> {
        Err(Self::unsupported(Workload::InsertOne)
            .unwrap_or("unsupported")
            .into())
    }

    /// Lets go of the client (this foundation-stage client has no shutdown of its own; its one
    /// connection closes when the last handle is dropped).
    pub(crate) async fn shutdown(self) {
        drop(self);
    }
}
