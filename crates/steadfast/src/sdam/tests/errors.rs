//! Application errors reported to the topology: which mark the server Unknown, which clear its
//! pool (in step, before the new description is published), which change nothing.

use steadfast_core::Deadline;
use steadfast_core::sdam::{ErrorPhase, SdamEvent};
use steadfast_core::selection::SelectionCriteria;
use steadfast_core::{ServerAddress, ServerType};

use super::{Harness, fully_discovered, primary_of, replica_set};
use crate::error::{CommandError, Error, RETRYABLE_ERROR, SYSTEM_OVERLOADED_ERROR};
use crate::event::CmapEvent;

fn pool_generation(harness: &Harness, address: &ServerAddress) -> u32 {
    harness
        .topology
        .inner
        .servers
        .read()
        .unwrap()
        .get(address)
        .expect("the server has a pool")
        .pool
        .generation()
}

fn went_unknown(address: &ServerAddress) -> impl Fn(&SdamEvent) -> bool + '_ {
    move |e| {
        matches!(e, SdamEvent::ServerDescriptionChanged { address: a, new, .. }
            if a == address && new.server_type == ServerType::Unknown)
    }
}

fn count_unknown(harness: &Harness, address: &ServerAddress) -> usize {
    harness
        .sdam_events()
        .iter()
        .filter(|e| went_unknown(address)(e))
        .count()
}

/// A discovered three-member set and its primary.
async fn discovered() -> (blackpipe::deployment::Deployment, Harness, ServerAddress) {
    let deployment = replica_set(3).await;
    let harness = Harness::open(&format!("{}&heartbeatFrequencyMS=500", deployment.uri()));
    harness
        .topology_where(0, "discovery", |t| fully_discovered(t, 3))
        .await;
    let primary = primary_of(&harness.topology.snapshot()).expect("primary");
    (deployment, harness, primary)
}

async fn select_primary(harness: &Harness, expected: &ServerAddress) {
    let selected = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("the primary comes back");
    assert_eq!(&selected.address, expected);
}

/// Reports `error` and returns the index of the Unknown event it caused.
async fn report_and_await_unknown(
    harness: &Harness,
    primary: &ServerAddress,
    error: &Error,
    generation: u32,
) -> usize {
    let mark = harness.events.len();
    harness.topology.handle_application_error(
        primary,
        error,
        generation,
        ErrorPhase::AfterHandshake,
    );
    harness
        .sdam(mark, "the primary marked Unknown", went_unknown(primary))
        .await
}

#[tokio::test]
async fn network_error_marks_unknown_and_clears_the_pool_first() {
    let (_deployment, harness, primary) = discovered().await;
    let generation = pool_generation(&harness, &primary);
    let mark = harness.events.len();
    let unknown = report_and_await_unknown(
        &harness,
        &primary,
        &Error::network("connection reset by peer"),
        generation,
    )
    .await;
    let cleared = harness
        .cmap(
            mark,
            "the primary's pool cleared",
            |e| matches!(e, CmapEvent::PoolCleared { address, .. } if *address == primary),
        )
        .await;
    assert!(
        cleared < unknown,
        "the pool is cleared before the Unknown description is published"
    );
    assert_eq!(pool_generation(&harness, &primary), generation + 1);
    // The monitor was told its connection is suspect; selection requests a check and the
    // primary is rediscovered.
    select_primary(&harness, &primary).await;
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn shutting_down_error_clears_the_pool() {
    let (_deployment, harness, primary) = discovered().await;
    let generation = pool_generation(&harness, &primary);
    let error = Error::from(CommandError::new(
        91,
        "ShutdownInProgress",
        "The server is in quiesce mode and will shut down",
    ));
    report_and_await_unknown(&harness, &primary, &error, generation).await;
    assert_eq!(pool_generation(&harness, &primary), generation + 1);
    select_primary(&harness, &primary).await;
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn not_writable_primary_marks_unknown_without_clearing() {
    let (_deployment, harness, primary) = discovered().await;
    let generation = pool_generation(&harness, &primary);
    let error = Error::from(CommandError::new(
        10107,
        "NotWritablePrimary",
        "not primary",
    ));
    report_and_await_unknown(&harness, &primary, &error, generation).await;
    assert_eq!(
        pool_generation(&harness, &primary),
        generation,
        "only shutdown codes clear the pool"
    );
    select_primary(&harness, &primary).await;
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn errors_from_an_older_generation_change_nothing() {
    let (_deployment, harness, primary) = discovered().await;
    let generation = pool_generation(&harness, &primary);
    report_and_await_unknown(&harness, &primary, &Error::network("reset"), generation).await;
    select_primary(&harness, &primary).await;
    let unknowns = count_unknown(&harness, &primary);

    // A connection of the cleared generation fails late: the clear already happened.
    harness.topology.handle_application_error(
        &primary,
        &Error::network("reset again"),
        generation,
        ErrorPhase::AfterHandshake,
    );
    // Selection waits until the report is applied, so what it sees includes the report.
    select_primary(&harness, &primary).await;
    assert_eq!(count_unknown(&harness, &primary), unknowns);
    assert_eq!(pool_generation(&harness, &primary), generation + 1);
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn timeouts_after_the_handshake_and_overload_change_nothing() {
    let (_deployment, harness, primary) = discovered().await;
    let generation = pool_generation(&harness, &primary);
    let overloaded = Error::network("connection refused").with_labels([
        SYSTEM_OVERLOADED_ERROR.to_string(),
        RETRYABLE_ERROR.to_string(),
    ]);
    let reports = [
        (
            Error::timeout("waiting for a reply"),
            ErrorPhase::AfterHandshake,
        ),
        (overloaded, ErrorPhase::Hello),
        (
            Error::from(CommandError::new(2, "BadValue", "not a state change")),
            ErrorPhase::AfterHandshake,
        ),
    ];
    for (error, phase) in &reports {
        harness
            .topology
            .handle_application_error(&primary, error, generation, *phase);
    }
    select_primary(&harness, &primary).await;
    assert_eq!(count_unknown(&harness, &primary), 0);
    assert_eq!(pool_generation(&harness, &primary), generation);
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn handshake_errors_mark_unknown_and_clear() {
    let (_deployment, harness, primary) = discovered().await;
    let generation = pool_generation(&harness, &primary);
    let mark = harness.events.len();
    harness.topology.handle_application_error(
        &primary,
        &Error::timeout("connecting (connectTimeoutMS 10000 ms)"),
        generation,
        ErrorPhase::Hello,
    );
    harness
        .sdam(
            mark,
            "Unknown after a handshake timeout",
            went_unknown(&primary),
        )
        .await;
    assert_eq!(pool_generation(&harness, &primary), generation + 1);
    harness.topology.shutdown().await;
}
