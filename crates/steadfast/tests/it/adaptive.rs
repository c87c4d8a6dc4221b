//! The adaptive policy against blackpipe: it refuses locally only once the server sheds load,
//! a refusal is never sent and says so, and it never refuses a server that sheds nothing.

use std::sync::Arc;

use blackpipe::deployment::Capacity;
use blackpipe::failpoint::{FailPointMode, Overload};
use bson::{Document, doc};
use steadfast::error::{ErrorClass, Outcome};
use steadfast::retries::{AdaptiveConfig, AdaptivePolicy};
use steadfast::{ErrorKind, ServerAddress};

use crate::retry_support::{harness_with, primary_host, replica_set, started, within};

/// An adaptive policy that refuses as soon as rejections outnumber accepts (`K` = 1).
fn strict_policy() -> AdaptivePolicy {
    let mut config = AdaptiveConfig::default();
    config.accept_multiplier = 1.0;
    AdaptivePolicy::new(config)
}

#[tokio::test]
async fn a_server_shedding_everything_gets_local_refusals_that_were_never_sent() {
    let deployment = replica_set().await;
    let policy = strict_policy();
    let shared = Arc::new(policy.clone());
    let h = harness_with(&deployment.uri(), "", |b| b.retry_policy(shared)).await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    within(orders.insert_one(doc! { "_id": -1 })).await.unwrap();
    let primary = within(deployment.wait_for_primary()).await;
    deployment
        .overload(primary, Some(Overload::new(FailPointMode::AlwaysOn, None)))
        .unwrap();

    let operations = 100;
    let mut refused = 0;
    for id in 0..operations {
        let error = within(orders.insert_one(doc! { "_id": id }))
            .await
            .expect_err("the server sheds every insert");
        if let ErrorKind::Throttled { message, .. } = error.kind() {
            refused += 1;
            assert_eq!(error.outcome(), Outcome::NotApplied);
            assert_eq!(error.class(), ErrorClass::Overload);
            assert!(error.retry_history().is_empty(), "nothing was attempted");
            assert!(message.contains("insert"), "{message}");
            assert!(error.to_string().contains("never sent"), "{error}");
        } else {
            assert!(error.is_overload_error(), "{error}");
        }
    }
    // Without throttling every operation would be sent (three times, with its two overload
    // retries); once the server sheds everything, most are refused before sending.
    let sent = started(&h.events, "insert").len() - 1;
    assert!(refused > operations / 2, "only {refused} refused");
    // Each operation sent at most its first attempt: the retry budget (10% of first attempts
    // over the window) grants a handful of retries at most.
    let first_attempts = usize::try_from(operations - refused).unwrap();
    assert!(
        sent <= first_attempts + first_attempts / 10 + 1,
        "{sent} attempts for {first_attempts} operations sent"
    );
    let address = ServerAddress::parse(&primary_host(&deployment).await).unwrap();
    assert!(policy.refusal_probability(&address) > 0.5);
    h.client.shutdown().await;
}

#[tokio::test]
async fn a_server_that_sheds_nothing_is_never_refused() {
    let deployment = replica_set().await;
    let policy = strict_policy();
    let shared = Arc::new(policy.clone());
    let h = harness_with(&deployment.uri(), "", |b| b.retry_policy(shared)).await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    // Many operations in flight at once: in-flight requests must not look like rejections.
    let tasks: Vec<_> = (0..20)
        .map(|task| {
            let orders = orders.clone();
            tokio::spawn(async move {
                for i in 0..25 {
                    orders.insert_one(doc! { "_id": task * 100 + i }).await?;
                }
                Ok::<_, steadfast::Error>(())
            })
        })
        .collect();
    for task in tasks {
        within(task).await.unwrap().expect("no insert fails");
    }
    assert_eq!(started(&h.events, "insert").len(), 500);
    let address = ServerAddress::parse(&primary_host(&deployment).await).unwrap();
    assert_eq!(policy.refusal_probability(&address), 0.0);
    h.client.shutdown().await;
}

#[tokio::test]
async fn command_errors_count_as_work_done_not_as_shedding() {
    let deployment = replica_set().await;
    let policy = strict_policy();
    let shared = Arc::new(policy.clone());
    let h = harness_with(&deployment.uri(), "", |b| b.retry_policy(shared)).await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    within(orders.insert_one(doc! { "_id": 0 })).await.unwrap();
    for _ in 0..50 {
        let error = within(orders.insert_one(doc! { "_id": 0 }))
            .await
            .expect_err("duplicate key");
        assert_eq!(error.code(), Some(11000), "{error}");
    }
    let address = ServerAddress::parse(&primary_host(&deployment).await).unwrap();
    assert_eq!(policy.refusal_probability(&address), 0.0);
    h.client.shutdown().await;
}

/// Unique `_id`s for [`insert_until`]'s inserts.
static NEXT_ID: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(1);

/// Runs `workers` closed-loop inserters until `successes` inserts succeeded; returns the local
/// refusals and the successes. Every other outcome must be an overload error.
async fn insert_until(
    orders: &steadfast::Collection<Document>,
    workers: usize,
    successes: usize,
) -> (usize, usize) {
    let overloaded = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    insert_counting(orders, workers, successes, &overloaded).await
}

/// As [`insert_until`], adding the overload errors that reached the application to `overloaded`.
async fn insert_counting(
    orders: &steadfast::Collection<Document>,
    workers: usize,
    successes: usize,
    overloaded: &Arc<std::sync::atomic::AtomicUsize>,
) -> (usize, usize) {
    let done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let refused = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let tasks: Vec<_> = (0..workers)
        .map(|_| {
            let (orders, done, refused) = (orders.clone(), done.clone(), refused.clone());
            let overloaded = overloaded.clone();
            tokio::spawn(async move {
                while done.load(std::sync::atomic::Ordering::SeqCst) < successes {
                    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    match orders.insert_one(doc! { "_id": id }).await {
                        Ok(_) => {
                            done.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        Err(error) if matches!(error.kind(), ErrorKind::Throttled { .. }) => {
                            refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                            // A refusal is instant: let the other workers run.
                            tokio::task::yield_now().await;
                        }
                        Err(error) => {
                            assert!(error.is_overload_error(), "{error}");
                            overloaded.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        within(task).await.unwrap();
    }
    (
        refused.load(std::sync::atomic::Ordering::SeqCst),
        done.load(std::sync::atomic::Ordering::SeqCst),
    )
}

#[tokio::test]
async fn under_a_capacity_far_below_demand_refusals_are_never_sent_and_retries_stay_in_budget() {
    let deployment = replica_set().await;
    let policy = AdaptivePolicy::new(AdaptiveConfig::default());
    let h = harness_with(&deployment.uri(), "", |b| b.retry_policy(Arc::new(policy))).await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    within(orders.insert_one(doc! { "_id": -1 })).await.unwrap();
    let primary = within(deployment.wait_for_primary()).await;
    // 30 inserts a second, while 8 workers ask for as many as they can get (hundreds a
    // second, even in a debug build on a busy machine).
    let capacity = Capacity::unlimited().with_ops_per_sec(30.0).unwrap();
    deployment.set_capacity(primary, Some(capacity)).unwrap();

    // The throttle learns from the first rejections; what it saves shows once it has.
    let (warm_up_refused, _) = insert_until(&orders, 8, 60).await;
    let before = deployment.capacity_stats(primary).unwrap();
    let overloaded = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let (refused, successes) = insert_counting(&orders, 8, 150, &overloaded).await;
    let after = deployment.capacity_stats(primary).unwrap();
    let overloaded = overloaded.load(std::sync::atomic::Ordering::SeqCst);
    let attempts = (after.admitted + after.rejected) - (before.admitted + before.rejected);
    assert!(
        warm_up_refused + refused > 0,
        "no refusal for {successes} successes"
    );
    // Counts, not timing: a refused operation reached no server, so the server saw one first
    // attempt per operation that was sent (a success or a surfaced overload error) plus the
    // overload retries, which the budget holds to 5% of the first attempts over the window
    // (the window also counts the warm-up's first attempts: the slack). How low attempts per
    // success go is the bench's figure (`steadfast-bench --only overload`), not a test's.
    let first_attempts = (successes + overloaded) as u64;
    let retries = attempts.saturating_sub(first_attempts);
    assert!(
        attempts >= first_attempts && retries <= first_attempts / 10 + 10,
        "{attempts} attempts ({before:?} -> {after:?}) for {successes} successes, \
         {overloaded} overload errors and {refused} local refusals"
    );
    h.client.shutdown().await;
}

#[tokio::test]
async fn under_a_capacity_above_demand_nothing_is_refused() {
    let deployment = replica_set().await;
    let policy = strict_policy();
    let h = harness_with(&deployment.uri(), "", |b| b.retry_policy(Arc::new(policy))).await;
    let orders = h.client.database("shop").collection::<Document>("orders");
    let primary = within(deployment.wait_for_primary()).await;
    let capacity = Capacity::unlimited().with_ops_per_sec(1.0e6).unwrap();
    deployment.set_capacity(primary, Some(capacity)).unwrap();
    let (refused, successes) = insert_until(&orders, 8, 400).await;
    assert_eq!(refused, 0);
    let stats = deployment.capacity_stats(primary).unwrap();
    assert_eq!(stats.rejected, 0);
    assert_eq!(stats.admitted, u64::try_from(successes).unwrap());
    h.client.shutdown().await;
}
