//! The optional roles beside the counter workers, for `torture` and `demo`: transfers in
//! transactions and a change stream consumer.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use blackpipe::deployment::{Deployment, RolledBackWrite};
use bson::Document;
use clap::ValueEnum;
use steadfast::{Client, Collection};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use super::consumer::{self, ConsumerLog, LogEnd, OplogTap, StoreSource, rolled_back_changes};
use super::ledger::Ledger;
use super::progress::LiveCounters;
use super::setup::DATABASE;
use super::stream_check::{Change, ChangeOp, StreamCheck, check_stream};
use super::transfer_worker::{BANK, Bank, stored_transfers};
use super::transfers::{TransferCheck, TransferFate, check_transfers};
use super::worker::OpMix;

/// Accounts the transfer workload moves money between: few, so transfers conflict.
const ACCOUNTS: usize = 10;

/// What the writers do.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum WorkloadKind {
    /// The article's counters, reads of them, and inserts.
    Counters,
    /// Mostly transfers between accounts in transactions (the convenient API), with a few
    /// counter operations so that every other invariant is still exercised.
    Transfer,
}

impl WorkloadKind {
    /// The operation mix.
    pub(crate) fn mix(self) -> OpMix {
        match self {
            WorkloadKind::Counters => OpMix {
                increments: 5,
                reads: 3,
                inserts: 2,
                transfers: 0,
            },
            WorkloadKind::Transfer => OpMix {
                increments: 1,
                reads: 1,
                inserts: 1,
                transfers: 7,
            },
        }
    }

    /// The collection a consumer watches: the one most of the writes go to.
    pub(crate) fn watched(self, inserts: &'static str) -> &'static str {
        match self {
            WorkloadKind::Counters => inserts,
            WorkloadKind::Transfer => BANK,
        }
    }
}

/// The transfer role: its bank and the balances it opened with.
pub(crate) struct Transfers {
    pub(crate) bank: Arc<Bank>,
    opening: BTreeMap<String, i64>,
}

impl Transfers {
    /// Opens the accounts through `client` and reads their opening balances from the store.
    ///
    /// # Errors
    ///
    /// If the accounts cannot be created or read back.
    pub(crate) async fn open(client: &Client, deployment: &Deployment) -> Result<Self, String> {
        let bank = Bank::new(client, ACCOUNTS);
        bank.open_accounts().await?;
        let opening = stored_transfers(deployment)?.balances;
        Ok(Transfers {
            bank: Arc::new(bank),
            opening,
        })
    }

    /// The ledger's transfers against the store.
    ///
    /// # Errors
    ///
    /// If the store holds a bank document of an unexpected shape.
    pub(crate) fn check(
        &self,
        ledger: &Ledger,
        deployment: &Deployment,
    ) -> Result<TransferCheck, String> {
        let stored = stored_transfers(deployment)?;
        let mut check = check_transfers(&ledger.transfers, &self.opening, &stored);
        check.reapplied = ledger.transfers.reapplied;
        check.callback_runs = ledger.transfers.callback_runs;
        Ok(check)
    }
}

/// The consumer role while it runs: its task and the op log tap beside it.
pub(crate) struct Consumer {
    task: JoinHandle<ConsumerLog>,
    tap: JoinHandle<OplogTap>,
    stop_tap: watch::Sender<bool>,
    end: watch::Sender<Option<LogEnd>>,
}

impl Consumer {
    /// Opens a change stream on `collection` and starts tapping the op log once it is open.
    ///
    /// # Errors
    ///
    /// If the stream cannot be opened.
    pub(crate) async fn start(
        deployment: Arc<Deployment>,
        collection: Collection<Document>,
        live: Arc<LiveCounters>,
    ) -> Result<Self, String> {
        let ns = format!("{DATABASE}.{}", collection.name());
        let (opened, is_open) = oneshot::channel();
        let (end, end_seen) = watch::channel(None);
        let task = tokio::spawn(consumer::consume(collection, live, opened, end_seen));
        match is_open.await {
            Ok(Ok(())) => {}
            Ok(Err(error)) => return Err(error),
            Err(_) => return Err("the consumer stopped before its stream opened".to_owned()),
        }
        let (stop_tap, tap_stopped) = watch::channel(false);
        // Weak: the tap must not keep the deployment (and its stores) alive past the run.
        let primary = Arc::downgrade(&deployment);
        // While no member is primary, `store()` is member 0's, which may lag: keep the
        // current one until a primary is elected.
        let source: StoreSource = Box::new(move || {
            let deployment = primary.upgrade()?;
            deployment.primary().map(|_| deployment.store())
        });
        let tap = OplogTap::new(deployment.store(), source, ns);
        let tap = tokio::spawn(consumer::run_tap(tap, tap_stopped));
        Ok(Consumer {
            task,
            tap,
            stop_tap,
            end,
        })
    }

    /// Once the writers stopped and every member caught up: tells the consumer where the op
    /// log ends, waits for it to get there, and checks what it received against the
    /// surviving branch of the op log and the writes `rollbacks` discarded. `Err` carries a
    /// panic of the consumer or tap.
    pub(crate) async fn finish(
        self,
        ledger: &Ledger,
        watched: &str,
        rollbacks: &[RolledBackWrite],
    ) -> Result<StreamCheck, String> {
        let _ = self.stop_tap.send(true);
        let mut tap = self.tap.await.map_err(|e| format!("op log tap: {e}"))?;
        tap.collect();
        let _ = self.end.send(Some(tap.end()));
        let log = self
            .task
            .await
            .map_err(|e| format!("change stream consumer: {e}"))?;
        let mut rolled_back = rolled_back_changes(rollbacks, &format!("{DATABASE}.{watched}"));
        let listed: BTreeSet<Change> = rolled_back.iter().cloned().collect();
        rolled_back.append(&mut tap.abandoned);
        let mut acknowledged: Vec<String> = if watched == BANK {
            ledger
                .transfers
                .transfers
                .iter()
                .filter(|(_, fate)| *fate == TransferFate::Committed)
                .map(|(transfer, _)| transfer.id.clone())
                .collect()
        } else {
            ledger.inserts.acknowledged.clone()
        };
        // An acknowledged (w: 1) insert a rollback discarded has no event to expect, unless a
        // retry applied it again on the surviving branch.
        let surviving: BTreeSet<&str> = tap
            .changes
            .iter()
            .filter(|change| change.op == ChangeOp::Insert)
            .map(|change| change.id.as_str())
            .collect();
        let discarded: BTreeSet<&str> = rolled_back
            .iter()
            .filter(|change| change.op == ChangeOp::Insert)
            .map(|change| change.id.as_str())
            .collect();
        acknowledged
            .retain(|id| !discarded.contains(id.as_str()) || surviving.contains(id.as_str()));
        let mut check = check_stream(&tap.changes, &log.received, &acknowledged, &rolled_back);
        if let Some(sentence) = check.rolled_back.first_mut() {
            sentence.push_str(&where_discarded(&tap.changes, &log.received, &listed));
        }
        check.restarts = log.restarts;
        check.stalled = log.stalled.or_else(|| tap.incomplete());
        if !log.malformed.is_empty() {
            check.phantom.push(format!(
                "{} events could not be placed: {}",
                log.malformed.len(),
                log.malformed.first().cloned().unwrap_or_default()
            ));
        }
        check.errors = log.errors;
        Ok(check)
    }
}

/// Of the events `received` that the surviving log lacks, how many the deployment's
/// rollbacks list (`listed`) and how many only the tap set aside at a change of primary.
fn where_discarded(log: &[Change], received: &[Change], listed: &BTreeSet<Change>) -> String {
    let surviving: BTreeSet<&Change> = log.iter().collect();
    let off_log: Vec<&Change> = received
        .iter()
        .filter(|event| !surviving.contains(event))
        .collect();
    let by_rollbacks = off_log
        .iter()
        .filter(|event| listed.contains(**event))
        .count();
    format!(
        " ({by_rollbacks} listed by the deployment's rollbacks, {} set aside by the op log tap only)",
        off_log.len() - by_rollbacks
    )
}
