//! The transfer workload: money moved between accounts by the convenient transaction API,
//! as an application written for the official driver would do it, recording how each
//! transfer ended. The checks are in [`super::transfers`].
//!
//! Accounts (`{_id: "acct-07", balance}`) and transfer records (`{_id, from, to, amount}`)
//! share one collection, so that a change stream on it sees every write of every transfer.

use std::time::Instant;

use blackpipe::deployment::Deployment;
use bson::{Bson, Document, doc};
use rand::Rng;
use steadfast::error::UNKNOWN_TRANSACTION_COMMIT_RESULT;
use steadfast::{Client, Collection};

use super::ledger::{OpKind, WorkerLog, WriteSpan};
use super::setup::DATABASE;
use super::transfers::{StoredTransfers, Transfer, TransferFate};
use super::worker::{Workload, class_of, describe, guard, is_duplicate_key};

/// The collection holding the accounts and the transfer records.
pub(crate) const BANK: &str = "bank";
/// Every account's balance before the run.
pub(crate) const OPENING_BALANCE: i64 = 1_000;
/// The largest amount one transfer moves.
const MOST_MOVED: i64 = 50;

/// What the transfer workers share.
pub(crate) struct Bank {
    /// The client, for sessions.
    pub(crate) client: Client,
    /// The bank collection.
    pub(crate) collection: Collection<Document>,
    /// The accounts' `_id`s.
    pub(crate) accounts: Vec<String>,
}

impl Bank {
    /// A bank of `accounts` accounts in the workload's database.
    pub(crate) fn new(client: &Client, accounts: usize) -> Bank {
        Bank {
            client: client.clone(),
            collection: client.database(DATABASE).collection(BANK),
            accounts: (0..accounts).map(|n| format!("acct-{n:02}")).collect(),
        }
    }

    /// Creates every account with [`OPENING_BALANCE`], before any fault plays.
    ///
    /// # Errors
    ///
    /// If the insert fails.
    pub(crate) async fn open_accounts(&self) -> Result<(), String> {
        let accounts = self
            .accounts
            .iter()
            .map(|id| doc! { "_id": id, "balance": OPENING_BALANCE });
        self.collection
            .insert_many(accounts)
            .await
            .map(drop)
            .map_err(|e| format!("opening the accounts: {e}"))
    }

    /// A random transfer between two different accounts.
    fn plan(&self, id: String, rng: &mut impl Rng) -> Transfer {
        let count = self.accounts.len().max(2);
        let from = rng.random_range(0..count);
        let to = (from + rng.random_range(1..count)) % count;
        let name = |index: usize| self.accounts.get(index).cloned().unwrap_or_default();
        Transfer {
            id,
            from: name(from),
            to: name(to),
            amount: rng.random_range(1..=MOST_MOVED),
        }
    }
}

/// One transfer, through `session.start_transaction().and_run(..)`: the record first (so that
/// a transfer already applied fails on its `_id` before touching a balance), then the debit
/// and the credit.
pub(crate) async fn transfer(
    workload: &Workload,
    bank: &Bank,
    id: String,
    rng: &mut impl Rng,
    log: &mut WorkerLog,
) {
    let plan = bank.plan(id, rng);
    let sent = Instant::now();
    let mut callback_runs = 0u64;
    let run = run_transaction(bank, &plan, &mut callback_runs);
    let result = guard(run, OpKind::Transfer, log).await;
    log.transfers.callback_runs += callback_runs;
    let Some(result) = result else {
        log.transfers.record(plan, TransferFate::Unknown);
        return;
    };
    let acknowledged = Instant::now();
    let latency = acknowledged - sent;
    workload.live.completed(result.is_err());
    match result {
        Ok(()) => {
            workload.writes.acknowledged(sent);
            log.acknowledged_writes
                .push(WriteSpan { sent, acknowledged });
            log.success(OpKind::Transfer, latency);
            log.transfers.record(plan, TransferFate::Committed);
        }
        Err(error) => {
            let fate = fate_of_transfer(&error);
            if is_duplicate_key(&error) {
                log.transfers.reapplied += 1;
            }
            log.failure(OpKind::Transfer, class_of(&error), latency, || {
                describe(&error)
            });
            log.transfers
                .errors
                .insert(plan.id.clone(), describe(&error));
            log.transfers.record(plan, fate);
        }
    }
}

/// Runs the transfer's transaction; `callback_runs` counts how often the convenient API ran
/// the callback (more than once after a `TransientTransactionError`).
async fn run_transaction(
    bank: &Bank,
    plan: &Transfer,
    callback_runs: &mut u64,
) -> steadfast::error::Result<()> {
    let mut session = bank.client.start_session().await?;
    session
        .start_transaction()
        .and_run(
            (&bank.collection, plan, callback_runs),
            |session, (collection, plan, runs)| {
                **runs += 1;
                Box::pin(async move {
                    collection
                        .insert_one(record(plan))
                        .session(&mut *session)
                        .await?;
                    collection
                        .update_one(
                            doc! { "_id": &plan.from },
                            doc! { "$inc": { "balance": -plan.amount } },
                        )
                        .session(&mut *session)
                        .await?;
                    collection
                        .update_one(
                            doc! { "_id": &plan.to },
                            doc! { "$inc": { "balance": plan.amount } },
                        )
                        .session(&mut *session)
                        .await?;
                    Ok(())
                })
            },
        )
        .await
}

/// The transfer record a transaction inserts.
fn record(plan: &Transfer) -> Document {
    doc! { "_id": &plan.id, "from": &plan.from, "to": &plan.to, "amount": plan.amount }
}

/// What the driver's error says about a transfer's commit. The convenient API retries the
/// callback after `TransientTransactionError` and the commit after
/// `UnknownTransactionCommitResult`; an error it returns carries the second label when the
/// commit's outcome is unknown, and means the transaction did not commit otherwise, except for
/// a duplicate key on the record, which only an earlier attempt that did commit can cause.
fn fate_of_transfer(error: &steadfast::Error) -> TransferFate {
    if is_duplicate_key(error) {
        TransferFate::Committed
    } else if error.contains_label(UNKNOWN_TRANSACTION_COMMIT_RESULT) {
        TransferFate::Unknown
    } else {
        TransferFate::NotCommitted
    }
}

/// The accounts' balances and the transfer records, read from blackpipe's store (not through
/// the driver, so that a driver bug cannot hide in the check).
///
/// # Errors
///
/// For a document that is neither an account nor a record of the expected shape.
pub(crate) fn stored_transfers(deployment: &Deployment) -> Result<StoredTransfers, String> {
    let mut stored = StoredTransfers::default();
    for document in deployment.store().documents(DATABASE, BANK) {
        let id = document
            .get_str("_id")
            .map_err(|_| format!("a bank document without a string _id: {document}"))?
            .to_owned();
        if document.contains_key("balance") {
            let balance = integer(&document, "balance")?;
            stored.balances.insert(id, balance);
        } else {
            let text = |field: &str| {
                document
                    .get_str(field)
                    .map(str::to_owned)
                    .map_err(|_| format!("transfer record without {field}: {document}"))
            };
            stored.records.push(Transfer {
                from: text("from")?,
                to: text("to")?,
                amount: integer(&document, "amount")?,
                id,
            });
        }
    }
    Ok(stored)
}

fn integer(document: &Document, field: &str) -> Result<i64, String> {
    match document.get(field) {
        Some(Bson::Int32(n)) => Ok(i64::from(*n)),
        Some(Bson::Int64(n)) => Ok(*n),
        _ => Err(format!("{field} is not an integer: {document}")),
    }
}
