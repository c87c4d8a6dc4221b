//! The topology and real pools together: errors on pooled connections against a simulated
//! replica set whose members are killed, restarted or shut down.
//!
//! Most tests poll with a one-minute heartbeat, so the monitor stays out of the way and every
//! change observed comes from the application error reported by the test.

use std::time::Duration;

use bson::{Document, doc};
use steadfast_core::ServerType;
use steadfast_core::sdam::{ErrorPhase, SdamEvent};
use steadfast_core::selection::SelectionCriteria;
use steadfast_core::{Deadline, IoLimit};

use super::{Harness, address_of, fully_discovered, replica_set};
use crate::error::{CommandError, Error, reply_is_ok};
use crate::event::CmapEvent;
use crate::pool::PooledConnection;

const QUIET: &str = "heartbeatFrequencyMS=60000&serverMonitoringMode=poll";

async fn ping(connection: &mut PooledConnection) -> Result<(), Error> {
    let command =
        bson::RawDocumentBuf::try_from(&doc! { "ping": 1, "$db": "admin" }).expect("encodable");
    let reply = connection
        .send_command(command, IoLimit::SocketTimeout(None))
        .await?;
    let reply = Document::try_from(reply).expect("valid reply");
    if reply_is_ok(&reply) {
        Ok(())
    } else {
        Err(CommandError::from_reply(&reply).into())
    }
}

/// A discovered set, the primary's pooled connection (working), and the harness.
async fn with_primary_connection(
    query: &str,
) -> (blackpipe::deployment::Deployment, Harness, PooledConnection) {
    let deployment = replica_set(3).await;
    let harness = Harness::open(&format!("{}&{query}", deployment.uri()));
    let primary = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("primary");
    assert_eq!(primary.address, address_of(&deployment, 0));
    let mut connection = primary
        .pool
        .check_out(Deadline::None)
        .await
        .expect("check out");
    ping(&mut connection).await.expect("ping");
    (deployment, harness, connection)
}

#[tokio::test]
async fn network_error_on_a_pooled_connection_clears_the_pool_and_marks_unknown() {
    let (deployment, harness, mut connection) = with_primary_connection(QUIET).await;
    let primary = address_of(&deployment, 0);
    let generation = connection.generation();
    let mark = harness.events.len();

    deployment.kill(0).await.expect("kill");
    let error = ping(&mut connection).await.expect_err("the server is gone");
    assert!(error.is_network_error(), "{error}");
    harness.topology.handle_application_error(
        &primary,
        &error,
        generation,
        ErrorPhase::AfterHandshake,
    );
    let cleared = harness
        .cmap(
            mark,
            "the pool cleared",
            |e| matches!(e, CmapEvent::PoolCleared { address, .. } if *address == primary),
        )
        .await;
    let unknown = harness
        .sdam(mark, "the primary Unknown", |e| {
            matches!(e, SdamEvent::ServerDescriptionChanged { address, new, .. }
                if *address == primary && new.server_type == ServerType::Unknown)
        })
        .await;
    assert!(cleared < unknown);
    drop(connection);

    // Restarted, the server is found again by the immediate check that selection requests
    // (the heartbeat alone would take a minute), and the pool serves the new generation.
    deployment.restart(0).await.expect("restart");
    let selected = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("the primary is back");
    assert_eq!(selected.address, primary);
    let mut fresh = selected
        .pool
        .check_out(Deadline::None)
        .await
        .expect("check out");
    assert!(fresh.generation() > generation);
    ping(&mut fresh).await.expect("ping");
    drop(fresh);
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn shutdown_in_progress_reply_clears_the_pool() {
    let (deployment, harness, mut connection) = with_primary_connection(QUIET).await;
    let primary = address_of(&deployment, 0);
    let generation = connection.generation();
    let mark = harness.events.len();
    let body = async {
        deployment
            .wait_until(|t| {
                t.node(0)
                    .is_some_and(|n| n.health() == blackpipe::deployment::Health::ShuttingDown)
            })
            .await;
        let error = ping(&mut connection).await.expect_err("shutting down");
        assert_eq!(error.code(), Some(91), "{error}");
        harness.topology.handle_application_error(
            &primary,
            &error,
            generation,
            ErrorPhase::AfterHandshake,
        );
        harness
            .cmap(
                mark,
                "the pool cleared",
                |e| matches!(e, CmapEvent::PoolCleared { address, .. } if *address == primary),
            )
            .await;
    };
    tokio::select! {
        // Dropped when the body is done: the node then keeps answering ShutdownInProgress.
        result = deployment.shutdown_node(0, Duration::from_secs(600)) => {
            panic!("the quiesce period ended first: {result:?}")
        }
        () = body => {}
    }
    assert!(
        harness
            .topology
            .snapshot()
            .server(&primary)
            .is_some_and(|s| s.server_type == ServerType::Unknown)
    );
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn a_killed_member_goes_unknown_and_comes_back_after_restart() {
    let deployment = replica_set(3).await;
    let harness = Harness::open(&format!("{}&heartbeatFrequencyMS=500", deployment.uri()));
    harness
        .topology_where(0, "discovery", |t| fully_discovered(t, 3))
        .await;
    let secondary = address_of(&deployment, 2);
    let mark = harness.events.len();
    deployment.kill(2).await.expect("kill");
    // The streaming monitor's connection drops: its check fails, is retried at once (the
    // server was known), fails again, and the server is Unknown with its pool cleared.
    let unknown = harness
        .sdam(mark, "the killed member Unknown", |e| {
            matches!(e, SdamEvent::ServerDescriptionChanged { address, new, .. }
                if *address == secondary && new.server_type == ServerType::Unknown)
        })
        .await;
    harness
        .cmap(
            mark,
            "its pool cleared",
            |e| matches!(e, CmapEvent::PoolCleared { address, .. } if *address == secondary),
        )
        .await;
    deployment.restart(2).await.expect("restart");
    harness
        .sdam(unknown, "the member back as a secondary", |e| {
            matches!(e, SdamEvent::ServerDescriptionChanged { address, new, .. }
                if *address == secondary && new.server_type == ServerType::RsSecondary)
        })
        .await;
    harness
        .cmap(
            unknown,
            "its pool ready again",
            |e| matches!(e, CmapEvent::PoolReady { address } if *address == secondary),
        )
        .await;
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn establishment_timeouts_are_backpressure_not_a_server_change() {
    // A partitioned member accepts connections and never answers; with a short
    // connectTimeoutMS a new pooled connection fails in its handshake. That is a network
    // timeout during the hello, which CMAP treats as backpressure: it must not clear the pool
    // nor mark the server Unknown.
    let deployment = replica_set(2).await;
    let harness = Harness::open(&format!(
        "{}&{QUIET}&connectTimeoutMS=200",
        deployment.uri()
    ));
    let selected = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("primary");
    let primary = selected.address.clone();
    let generation = selected.pool.generation();
    deployment.partition(0).expect("partition");
    let error = selected
        .pool
        .check_out(Deadline::None)
        .await
        .expect_err("the handshake times out");
    assert!(error.is_network_error(), "{error}");
    // The report the pool sent is applied before this selection looks at the topology.
    let again = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("still the primary");
    assert_eq!(again.address, primary);
    assert_eq!(selected.pool.generation(), generation);
    assert!(
        !harness.sdam_events().iter().any(|e| matches!(e,
            SdamEvent::ServerDescriptionChanged { address, new, .. }
                if *address == primary && new.server_type == ServerType::Unknown)),
        "backpressure never marks the server Unknown"
    );
    deployment.heal(0).expect("heal");
    drop((selected, again));
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn authentication_failure_while_establishing_marks_unknown_and_clears() {
    // Monitors never authenticate, so the server looks healthy to them; the pool's
    // connections fail SCRAM, and the pool's report makes SDAM mark the server Unknown and
    // clear its pool (errors before the handshake completes).
    let server = blackpipe::scripted::ScriptedServer::start()
        .await
        .expect("scripted server");
    let refused = server
        .rule(
            blackpipe::scripted::Matcher::command("saslStart"),
            blackpipe::server::CommandError::new(18, "AuthenticationFailed", "bad credentials"),
        )
        .always();
    let harness = Harness::open(&format!(
        "mongodb://user:secret@127.0.0.1:{}/?directConnection=true&{QUIET}",
        server.port()
    ));
    let selected = harness
        .topology
        .select_server(&SelectionCriteria::Write, &[], Deadline::None)
        .await
        .expect("the monitor finds the standalone");
    let address = selected.address.clone();
    let monitor_handshake = server
        .requests()
        .into_iter()
        .find(|r| matches!(r.command_name(), "hello" | "isMaster"))
        .expect("the monitor's handshake");
    assert!(
        !monitor_handshake
            .command()
            .contains_key("speculativeAuthenticate")
            && !monitor_handshake
                .command()
                .contains_key("saslSupportedMechs"),
        "monitors never authenticate: {:?}",
        monitor_handshake.command()
    );
    let mark = harness.events.len();
    let error = selected
        .pool
        .check_out(Deadline::None)
        .await
        .expect_err("authentication fails");
    assert!(refused.hits() >= 1, "{error}");
    harness
        .sdam(mark, "the server Unknown", |e| {
            matches!(e, SdamEvent::ServerDescriptionChanged { address: a, new, .. }
                if *a == address && new.server_type == ServerType::Unknown)
        })
        .await;
    harness
        .cmap(
            mark,
            "the pool cleared",
            |e| matches!(e, CmapEvent::PoolCleared { address: a, .. } if *a == address),
        )
        .await;
    drop(selected);
    harness.topology.shutdown().await;
}
