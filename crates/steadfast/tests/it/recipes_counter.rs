//! The exactly-once counter against blackpipe's replica set: faults between and during its two
//! steps, application re-runs, stepdowns, crashed clients and reconciliation. Each test ends by
//! checking the stored counter document itself: the value, and that no token is left pending.

use std::cell::Cell;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Duration;

use bson::{DateTime, Document, doc};
use steadfast::event::Event;
use steadfast::recipes::{
    ExactlyOnceCounter, IncrementOutcome, RecipeOptions, ReconcileReport, Token, is_worth_retrying,
};
use steadfast::{Collection, ErrorKind};

use crate::recipes::{
    ReplicaSet, close_after_commit, commands_received, cut_first_send, cut_sends_after_the_first,
    fail_command, wait_for_commands,
};

/// A settable clock for the counter, in milliseconds since the epoch.
#[derive(Clone)]
struct TestClock(Arc<AtomicI64>);

impl TestClock {
    fn at(millis: i64) -> Self {
        TestClock(Arc::new(AtomicI64::new(millis)))
    }

    fn set(&self, millis: i64) {
        self.0.store(millis, Ordering::SeqCst);
    }

    fn counter(&self, coll: &Collection<Document>) -> ExactlyOnceCounter {
        let clock = self.0.clone();
        ExactlyOnceCounter::new(coll)
            .with_clock(move || DateTime::from_millis(clock.load(Ordering::SeqCst)))
    }
}

/// The counter document as stored.
fn stored_counter(set: &ReplicaSet, coll: &str, id: &str) -> Document {
    set.stored(coll)
        .into_iter()
        .find(|d| d.get_str("_id").ok() == Some(id))
        .expect("the counter document exists")
}

fn array_len(document: &Document, field: &str) -> usize {
    document.get_array(field).map_or(0, Vec::len)
}

/// Calls `increment` until it succeeds, as an application with its own retry loop would,
/// calling `between` after every failure (the test's "the outage ends"). Panics on an error
/// not worth retrying, or after 50 failures.
async fn increment_until_done<F, Fut>(
    counter: &ExactlyOnceCounter,
    id: &str,
    amount: i64,
    token: &Token,
    mut between: F,
) -> (IncrementOutcome, u32)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut failures = 0;
    loop {
        match counter.increment(id, amount, token).await {
            Ok(outcome) => return (outcome, failures),
            Err(error) => {
                assert!(is_worth_retrying(&error), "unexpected error: {error}");
                failures += 1;
                assert!(failures < 50, "still failing: {error}");
                between().await;
            }
        }
    }
}

/// One fault configuration applied before an increment.
#[derive(Clone, Copy, Debug)]
enum Fault {
    None,
    /// Step 1 commits, both replies lost (the first send is cut before executing, the
    /// driver's retry after committing): the recipe's own repeat settles it.
    Step1RepliesLost,
    /// Step 1's first send commits, and it and every later send lose their replies until
    /// healed: the recipe gives up, the application re-runs.
    Step1OutlastsTheRecipe,
    /// Step 1 passes; step 2 is refused (connection closed before executing) until healed.
    Step2RefusedUntilHealed,
    /// Step 1 passes; step 2's first send commits and loses its reply, and every later send
    /// is cut off until healed: step 2 is applied but the client cannot know, and its repeats
    /// after the heal are no-ops.
    Step2AppliedRepliesLostUntilHealed,
    /// Every update is refused with a retryable state-change error three times.
    NotWritablePrimaryThrice,
    /// The primary steps down before the increment.
    StepDown,
}

const FAULTS: [Fault; 7] = [
    Fault::None,
    Fault::Step1RepliesLost,
    Fault::Step1OutlastsTheRecipe,
    Fault::Step2RefusedUntilHealed,
    Fault::Step2AppliedRepliesLostUntilHealed,
    Fault::NotWritablePrimaryThrice,
    Fault::StepDown,
];

impl Fault {
    async fn inject(self, set: &ReplicaSet) {
        match self {
            Fault::None => {}
            Fault::Step1RepliesLost => {
                set.fail_point(cut_first_send("update")).await;
                set.fail_point(close_after_commit(1)).await;
            }
            Fault::Step1OutlastsTheRecipe => {
                set.fail_point(cut_sends_after_the_first("update")).await;
                set.fail_point(close_after_commit(1)).await;
            }
            Fault::Step2RefusedUntilHealed => {
                let mode = doc! { "skip": 1 }.into();
                let data = doc! { "closeConnection": true };
                set.fail_point(fail_command(mode, &["update"], data)).await;
            }
            Fault::Step2AppliedRepliesLostUntilHealed => {
                // Two updates pass `failCommand` (step 1 on the existing counter document,
                // step 2's first send); only the second reaches the commit fail point. The
                // driver's retry would be answered from the transaction table, so it is cut
                // off like every later send.
                let cut_later_sends = doc! { "skip": 2 }.into();
                let data = doc! { "closeConnection": true };
                set.fail_point(fail_command(cut_later_sends, &["update"], data))
                    .await;
                set.fail_point(doc! {
                    "configureFailPoint": "onPrimaryTransactionalWrite",
                    "mode": { "skip": 1 },
                    "data": { "closeConnection": true },
                })
                .await;
            }
            Fault::NotWritablePrimaryThrice => {
                let data = doc! { "errorCode": 10107, "errorLabels": ["RetryableWriteError"] };
                let mode = doc! { "times": 3 }.into();
                set.fail_point(fail_command(mode, &["update"], data)).await;
            }
            Fault::StepDown => {
                let old = set.primary();
                set.deployment
                    .step_down(Duration::from_secs(1))
                    .expect("the primary steps down");
                set.deployment
                    .wait_until(|t| t.primary().is_some_and(|p| p != old))
                    .await;
            }
        }
    }

    /// How many times `(failCommand, onPrimaryTransactionalWrite)` fire over the whole call,
    /// re-runs included: every driver send counts, so this pins down the fault's shape.
    fn expected_fired(self) -> (i64, i64) {
        match self {
            Fault::None | Fault::StepDown => (0, 0),
            Fault::Step1RepliesLost => (1, 1),
            // The driver's retry of the first send, then both sends of the recipe's repeat.
            Fault::Step1OutlastsTheRecipe | Fault::Step2AppliedRepliesLostUntilHealed => (3, 1),
            // Two recipe attempts of step 2, each a send and the driver's retry.
            Fault::Step2RefusedUntilHealed => (4, 0),
            Fault::NotWritablePrimaryThrice => (3, 0),
        }
    }

    /// Whether the application is expected to see at least one failed call.
    fn outlasts_the_recipe(self) -> bool {
        matches!(
            self,
            Fault::Step1OutlastsTheRecipe
                | Fault::Step2RefusedUntilHealed
                | Fault::Step2AppliedRepliesLostUntilHealed
        )
    }
}

#[tokio::test]
async fn n_increments_under_faults_and_reruns_add_exactly_n() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("daily");
    let counter = ExactlyOnceCounter::new(&coll);
    let rounds = FAULTS.len() * 2;
    let mut expected = 0;

    for round in 0..rounds {
        let fault = FAULTS[round % FAULTS.len()];
        let amount = i64::try_from(round).expect("small") + 1;
        let token = Token::new_object_id();
        fault.inject(&set).await;
        let healed = Cell::new((0, 0));
        let (set_ref, healed_ref) = (&set, &healed);
        let (outcome, failures) =
            increment_until_done(&counter, "2016-06-28", amount, &token, || async move {
                let fired = set_ref.heal().await;
                let so_far = healed_ref.get();
                healed_ref.set((so_far.0 + fired.0, so_far.1 + fired.1));
            })
            .await;
        let last = set.heal().await;
        let fired = (healed.get().0 + last.0, healed.get().1 + last.1);
        expected += amount;

        assert_eq!(
            failures > 0,
            fault.outlasts_the_recipe(),
            "round {round} ({fault:?}): {failures} failed calls"
        );
        assert_eq!(
            fired,
            fault.expected_fired(),
            "round {round} ({fault:?}): fail point triggers (failCommand, transactional)"
        );
        if matches!(fault, Fault::Step2AppliedRepliesLostUntilHealed) {
            assert_eq!(outcome, IncrementOutcome::AlreadyApplied, "{fault:?}");
        }
        // A late duplicate of the whole call changes nothing.
        let again = counter
            .increment("2016-06-28", amount, &token)
            .await
            .expect("the repeat succeeds");
        assert_eq!(again, IncrementOutcome::AlreadyApplied);
        assert_eq!(
            counter
                .value("2016-06-28")
                .await
                .expect("the value is read"),
            Some(expected),
            "round {round} ({fault:?})"
        );
    }

    let stored = stored_counter(&set, "daily", "2016-06-28");
    assert_eq!(stored.get_i64("count").ok(), Some(expected));
    assert_eq!(array_len(&stored, "pending"), 0);
    assert_eq!(array_len(&stored, "applied"), rounds);
    set.stop().await;
}

#[tokio::test]
async fn concurrent_clients_under_random_faults_add_exactly_their_sum() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("concurrent");
    // Seeded: the same requests fail on every run. Some writes are refused before executing,
    // some commit and lose their reply.
    set.fail_point(fail_command(
        doc! { "activationProbability": 0.2 }.into(),
        &["update"],
        doc! { "closeConnection": true },
    ))
    .await;
    set.fail_point(doc! {
        "configureFailPoint": "onPrimaryTransactionalWrite",
        "mode": { "activationProbability": 0.2 },
        "data": { "closeConnection": true },
    })
    .await;

    let (clients, increments) = (4, 6);
    let mut tasks = Vec::new();
    for client in 0..clients {
        let counter = ExactlyOnceCounter::new(&coll);
        tasks.push(tokio::spawn(async move {
            let mut reruns = 0;
            for _ in 0..increments {
                let token = Token::new_uuid();
                let (_, failures) =
                    increment_until_done(&counter, "shared", client + 1, &token, || async {}).await;
                reruns += failures;
            }
            reruns
        }));
    }
    let mut reruns = 0;
    for task in tasks {
        reruns += task.await.expect("the client task completes");
    }
    let fired = set.heal().await;
    assert!(fired.0 > 0 && fired.1 > 0, "both faults fired: {fired:?}");

    let expected: i64 = (1..=clients).map(|amount| amount * increments).sum();
    let stored = stored_counter(&set, "concurrent", "shared");
    assert_eq!(
        stored.get_i64("count").ok(),
        Some(expected),
        "after {reruns} re-runs"
    );
    assert_eq!(array_len(&stored, "pending"), 0);
    assert_eq!(
        array_len(&stored, "applied"),
        usize::try_from(clients * increments).expect("small")
    );
    set.stop().await;
}

#[tokio::test]
async fn a_stepdown_while_step_two_is_blocked_applies_it_once() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("stepdown");
    let counter = ExactlyOnceCounter::new(&coll);
    counter
        .increment("c", 1, &Token::new_object_id())
        .await
        .expect("the counter exists");

    let old = set.primary();
    // Step 1 passes; step 2 blocks on the primary until the stepdown interrupts it.
    set.fail_point(fail_command(
        doc! { "skip": 1 }.into(),
        &["update"],
        doc! { "blockConnection": true, "blockTimeMS": 60_000 },
    ))
    .await;
    let baseline = commands_received(&set, old);
    let token = Token::new_object_id();
    let task = {
        let counter = counter.clone();
        let token = token.clone();
        tokio::spawn(async move { counter.increment("c", 10, &token).await })
    };
    wait_for_commands(&set, old, baseline, 2).await;
    set.deployment
        .step_down(Duration::from_secs(30))
        .expect("the primary steps down");

    let outcome = task
        .await
        .expect("the task completes")
        .expect("the increment survives the stepdown");
    assert_eq!(outcome, IncrementOutcome::Applied);
    assert_ne!(set.primary(), old);
    let retried_update = set
        .events
        .count(|e| matches!(e, Event::Retry(retry) if retry.operation == "update"));
    assert!(
        retried_update > 0,
        "the driver retried the interrupted update"
    );
    set.heal().await;

    let stored = stored_counter(&set, "stepdown", "c");
    assert_eq!(stored.get_i64("count").ok(), Some(11));
    assert_eq!(array_len(&stored, "pending"), 0);
    set.stop().await;
}

#[tokio::test]
async fn a_crashed_clients_token_is_reconciled_exactly_once() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("crash");
    let clock = TestClock::at(1_000_000);
    let counter = clock.counter(&coll);

    counter
        .increment("k", 5, &Token::new_object_id())
        .await
        .expect("the first increment is complete before any fault");
    // Two clients register a token, then their step 2 never gets through: they "crash".
    let step_two_refused = || {
        fail_command(
            doc! { "skip": 1 }.into(),
            &["update"],
            doc! { "closeConnection": true },
        )
    };
    set.fail_point(step_two_refused()).await;
    let abandoned = Token::new_object_id();
    clock.set(1_060_000);
    let error = counter
        .increment("k", 7, &abandoned)
        .await
        .expect_err("step 2 is refused");
    assert!(is_worth_retrying(&error), "{error}");
    assert_eq!(
        set.heal().await,
        (4, 0),
        "two sends of step 2, each retried once"
    );
    set.fail_point(step_two_refused()).await;
    let recent = Token::from("client-b/request-9");
    clock.set(1_090_000);
    counter
        .increment("k", 100, &recent)
        .await
        .expect_err("step 2 is refused");
    assert_eq!(set.heal().await, (4, 0));
    let stored = stored_counter(&set, "crash", "k");
    assert_eq!(stored.get_i64("count").ok(), Some(5));
    assert_eq!(array_len(&stored, "pending"), 2);

    // Reconcile tokens older than 20 s at t = 1_100 s: only the token registered at 1_060 s.
    clock.set(1_100_000);
    let report = counter
        .reconcile(Duration::from_secs(20))
        .await
        .expect("reconciliation runs");
    assert_eq!(
        (
            report.documents,
            report.finished,
            report.finished_elsewhere,
            report.malformed
        ),
        (1, 1, 0, 0)
    );
    assert_eq!(counter.value("k").await.expect("read"), Some(12));
    // Again: nothing left that old.
    let again = counter
        .reconcile(Duration::from_secs(20))
        .await
        .expect("reconciliation runs");
    assert_eq!(again, ReconcileReport::default());

    // The crashed client comes back and re-runs its increment: already applied.
    assert_eq!(
        counter.increment("k", 7, &abandoned).await.expect("re-run"),
        IncrementOutcome::AlreadyApplied
    );
    // The other client re-runs too and finishes its own increment.
    assert_eq!(
        counter.increment("k", 100, &recent).await.expect("re-run"),
        IncrementOutcome::Applied
    );
    // A later reconciliation finds nothing to do.
    clock.set(2_000_000);
    let late = counter
        .reconcile(Duration::from_secs(20))
        .await
        .expect("reconciliation runs");
    assert_eq!(late, ReconcileReport::default());

    let stored = stored_counter(&set, "crash", "k");
    assert_eq!(stored.get_i64("count").ok(), Some(112));
    assert_eq!(array_len(&stored, "pending"), 0);
    assert_eq!(array_len(&stored, "applied"), 3);
    set.stop().await;
}

#[tokio::test]
async fn reconciliation_racing_a_slow_client_applies_once() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("race");
    let clock = TestClock::at(5_000);
    let counter = clock.counter(&coll);
    // Step 2 is refused once (both driver attempts), with one recipe attempt: the client
    // fails after registering.
    let counter_one_attempt = counter
        .clone()
        .with_options(RecipeOptions::default().attempts(1));
    set.fail_point(fail_command(
        doc! { "skip": 1 }.into(),
        &["update"],
        doc! { "closeConnection": true },
    ))
    .await;
    let token = Token::new_uuid();
    counter_one_attempt
        .increment("r", 3, &token)
        .await
        .expect_err("step 2 is refused");
    set.heal().await;

    // The reconciler decides the token is abandoned and applies it; the client, still alive,
    // re-runs and is told it is already applied.
    clock.set(50_000);
    let report = counter
        .reconcile_before(DateTime::from_millis(6_000))
        .await
        .expect("reconciliation runs");
    assert_eq!(report.finished, 1);
    assert_eq!(
        counter.increment("r", 3, &token).await.expect("re-run"),
        IncrementOutcome::AlreadyApplied
    );
    assert_eq!(counter.value("r").await.expect("read"), Some(3));
    set.stop().await;
}

#[tokio::test]
async fn a_token_reused_with_another_amount_is_refused_while_pending() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("amounts");
    let counter = ExactlyOnceCounter::new(&coll).with_options(RecipeOptions::default().attempts(1));
    set.fail_point(fail_command(
        doc! { "skip": 1 }.into(),
        &["update"],
        doc! { "closeConnection": true },
    ))
    .await;
    let token = Token::from("order-77");
    counter
        .increment("a", 2, &token)
        .await
        .expect_err("step 2 is refused");
    set.heal().await;

    let error = counter
        .increment("a", 3, &token)
        .await
        .expect_err("the token names an increment of 2");
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    assert_eq!(
        counter.increment("a", 2, &token).await.expect("re-run"),
        IncrementOutcome::Applied
    );
    assert_eq!(counter.value("a").await.expect("read"), Some(2));
    set.stop().await;
}

#[tokio::test]
async fn forgetting_applied_tokens_keeps_recent_ones() {
    let set = ReplicaSet::start().await;
    let coll = set.collection("forget");
    let clock = TestClock::at(10_000);
    let counter = clock.counter(&coll);
    let old = Token::new_object_id();
    counter.increment("f", 1, &old).await.expect("applied");
    clock.set(20_000);
    let recent = Token::new_object_id();
    counter.increment("f", 1, &recent).await.expect("applied");

    clock.set(25_000);
    let changed = counter
        .forget_applied(Duration::from_secs(10))
        .await
        .expect("old tokens are forgotten");
    assert_eq!(changed, 1);
    let stored = stored_counter(&set, "forget", "f");
    let applied = stored.get_array("applied").expect("the applied list");
    assert_eq!(applied.len(), 1);
    assert_eq!(
        applied[0].as_document().and_then(|d| d.get("token")),
        Some(recent.as_bson())
    );
    // The recent token is still recognised.
    assert_eq!(
        counter.increment("f", 1, &recent).await.expect("re-run"),
        IncrementOutcome::AlreadyApplied
    );
    assert_eq!(stored.get_i64("count").ok(), Some(2));
    // The documented limit: a forgotten token is a stranger, so a re-run counts again.
    assert_eq!(
        counter.increment("f", 1, &old).await.expect("re-run"),
        IncrementOutcome::Applied
    );
    assert_eq!(counter.value("f").await.expect("read"), Some(3));
    assert_eq!(counter.value("missing").await.expect("read"), None);
    set.stop().await;
}

#[tokio::test]
async fn counters_refuse_unacknowledged_writes() {
    let set = ReplicaSet::start_with_query("&w=0").await;
    let counter = ExactlyOnceCounter::new(&set.collection("w0"));
    let error = counter
        .increment("x", 1, &Token::new_object_id())
        .await
        .expect_err("w: 0 cannot be exactly-once");
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
    assert!(set.stored("w0").is_empty(), "nothing was written");
    set.stop().await;
}
