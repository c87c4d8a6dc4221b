//! Serde shapes of the monitoring events (field names and round trips as the official driver
//! has them), the topology description's accessors, and the legacy handler traits receiving
//! a real client's events.

#![allow(deprecated, reason = "the legacy handler traits are under test")]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bson::doc;
use bson::oid::ObjectId;
use serde_json::{Value, json};
use steadfast_core::description::TopologyConfig;
use steadfast_core::{ServerAddress, TopologyDescription};

use super::EventHandler;
use super::cmap::{
    CmapEvent, CmapEventHandler, ConnectionCheckedOutEvent, ConnectionCheckoutFailedReason,
    ConnectionClosedReason, ConnectionPoolOptions, PoolClearedEvent,
};
use super::command::{CommandEvent, CommandEventHandler, CommandStartedEvent, ConnectionInfo};
use super::sdam::{
    SdamEvent, SdamEventHandler, ServerHeartbeatFailedEvent, ServerHeartbeatStartedEvent,
    ServerHeartbeatSucceededEvent, ServerOpeningEvent, TopologyOpeningEvent, TopologyType,
};
use crate::error::Error;

fn address() -> ServerAddress {
    ServerAddress::tcp("db.example", 27018)
}

fn to_json(value: &impl serde::Serialize) -> Value {
    serde_json::to_value(value).expect("serializes")
}

#[test]
fn cmap_events_use_the_official_field_names() {
    let event = ConnectionCheckedOutEvent {
        address: address(),
        connection_id: 3,
        duration: Duration::from_millis(5),
    };
    assert_eq!(
        to_json(&event),
        json!({
            "address": { "Tcp": { "host": "db.example", "port": 27018 } },
            "connectionId": 3,
            "duration": { "secs": 0, "nanos": 5_000_000 },
        })
    );
    // Read back as the specification's test files write events: no address, no duration.
    let read: ConnectionCheckedOutEvent =
        serde_json::from_value(json!({ "connectionId": 3 })).expect("deserializes");
    assert_eq!(read.connection_id, 3);
    assert_eq!(read.duration, Duration::ZERO);
    assert_eq!(
        read.address,
        ServerAddress::Tcp {
            host: String::new(),
            port: None
        }
    );

    let cleared = PoolClearedEvent {
        address: address(),
        service_id: None,
        interrupt_in_use_connections: true,
    };
    let value = to_json(&cleared);
    assert_eq!(value["interrupt_in_use_connections"], json!(true));
    assert_eq!(value["service_id"], Value::Null);
    let back: PoolClearedEvent = serde_json::from_value(value).expect("deserializes");
    assert!(back.interrupt_in_use_connections);
}

#[test]
fn reasons_serialize_as_the_specification_names_them() {
    for (reason, name) in [
        (ConnectionClosedReason::Stale, "stale"),
        (ConnectionClosedReason::Idle, "idle"),
        (ConnectionClosedReason::Error, "error"),
        (ConnectionClosedReason::Dropped, "dropped"),
        (ConnectionClosedReason::PoolClosed, "poolClosed"),
    ] {
        assert_eq!(to_json(&reason), json!(name));
        assert_eq!(reason.as_str(), name);
        let back: ConnectionClosedReason = serde_json::from_value(json!(name)).expect("reads");
        assert_eq!(back, reason);
    }
    let reason = ConnectionCheckoutFailedReason::ConnectionError;
    assert_eq!(to_json(&reason), json!("connectionError"));
    let back: ConnectionCheckoutFailedReason =
        serde_json::from_value(json!("timeout")).expect("reads");
    assert_eq!(back, ConnectionCheckoutFailedReason::Timeout);
}

#[test]
fn pool_options_round_trip_and_read_milliseconds() {
    let options = ConnectionPoolOptions {
        max_idle_time: Some(Duration::from_millis(1500)),
        max_pool_size: Some(7),
        min_pool_size: Some(1),
    };
    let value = to_json(&options);
    assert_eq!(
        value["maxIdleTimeMS"],
        json!({ "secs": 1, "nanos": 500_000_000 })
    );
    assert_eq!(value["maxPoolSize"], json!(7));
    assert_eq!(value["minPoolSize"], json!(1));
    let back: ConnectionPoolOptions = serde_json::from_value(value).expect("round trips");
    assert_eq!(back, options);
    let from_test_file: ConnectionPoolOptions =
        serde_json::from_value(json!({ "maxIdleTimeMS": 1500, "maxPoolSize": 7 })).expect("reads");
    assert_eq!(
        from_test_file.max_idle_time,
        Some(Duration::from_millis(1500))
    );
    assert_eq!(from_test_file.min_pool_size, None);
}

#[test]
fn cmap_event_converts_from_each_event() {
    let event = ConnectionCheckedOutEvent {
        address: address(),
        connection_id: 1,
        duration: Duration::ZERO,
    };
    assert!(matches!(
        CmapEvent::from(event),
        CmapEvent::ConnectionCheckedOut(e) if e.connection_id == 1
    ));
}

#[test]
fn sdam_events_use_the_official_field_names() {
    let started = ServerHeartbeatStartedEvent {
        server_address: address(),
        awaited: true,
        driver_connection_id: 4,
        server_connection_id: Some(99),
    };
    let value = to_json(&started);
    assert_eq!(
        value,
        json!({
            "serverAddress": { "Tcp": { "host": "db.example", "port": 27018 } },
            "awaited": true,
            "driverConnectionId": 4,
            "serverConnectionId": 99,
        })
    );
    // The address reads back from the object (host and port) or from a string.
    let back: ServerHeartbeatStartedEvent = serde_json::from_value(json!({
        "serverAddress": { "host": "db.example", "port": 27018 },
        "awaited": true, "driverConnectionId": 4, "serverConnectionId": 99,
    }))
    .expect("reads an object address");
    assert_eq!(back.server_address, address());
    assert_eq!(back.server_connection_id, Some(99));

    let opening: ServerOpeningEvent =
        serde_json::from_value(json!({ "address": "DB.example:27018" })).expect("reads");
    assert_eq!(opening.address, address());
    // The topology id is left out both ways.
    assert_eq!(to_json(&opening).as_object().map(|o| o.len()), Some(1));
    assert_eq!(opening.clone(), opening);

    let succeeded = ServerHeartbeatSucceededEvent {
        duration: Duration::from_secs(1),
        reply: doc! { "ok": 1 },
        server_address: address(),
        awaited: false,
        driver_connection_id: 4,
        server_connection_id: None,
    };
    let value = to_json(&SdamEvent::ServerHeartbeatSucceeded(succeeded));
    assert_eq!(value["reply"], json!({ "ok": 1 }));
    assert_eq!(value["serverConnectionId"], Value::Null);

    let failed = ServerHeartbeatFailedEvent {
        duration: Duration::ZERO,
        failure: Error::network("connection refused"),
        server_address: address(),
        awaited: false,
        driver_connection_id: 5,
        server_connection_id: None,
    };
    let failure = to_json(&failed)["failure"].clone();
    assert!(
        failure
            .as_str()
            .is_some_and(|m| m.contains("connection refused")),
        "{failure}"
    );
    let opening = SdamEvent::TopologyOpening(TopologyOpeningEvent {
        topology_id: ObjectId::new(),
    });
    assert_eq!(to_json(&opening), json!({}));
}

#[test]
fn topology_type_round_trips_by_name() {
    for name in [
        "Single",
        "ReplicaSetNoPrimary",
        "ReplicaSetWithPrimary",
        "Sharded",
    ] {
        let kind: TopologyType = serde_json::from_value(json!(name)).expect("reads");
        assert_eq!(to_json(&kind), json!(name));
        assert_eq!(kind.to_string(), name);
    }
    assert_eq!(TopologyType::default(), TopologyType::Unknown);
}

fn replica_set_description() -> TopologyDescription {
    let mut config = TopologyConfig::new([address(), ServerAddress::tcp("b", 27017)]);
    config.replica_set = Some("rs0".into());
    TopologyDescription::new(&config).expect("valid configuration")
}

#[test]
fn topology_description_accessors_and_shape() {
    let description = replica_set_description();
    assert_eq!(
        description.topology_type(),
        TopologyType::ReplicaSetNoPrimary
    );
    assert_eq!(description.set_name().map(String::as_str), Some("rs0"));
    assert_eq!(description.max_set_version(), None);
    assert_eq!(description.max_election_id(), None);
    assert_eq!(description.compatibility_error(), None);
    assert_eq!(description.servers().len(), 2);
    assert!(description.servers().contains_key(&address()));
    // Nothing has been checked: neither reads nor writes can be served.
    assert!(!description.has_writable_server());
    assert!(!description.has_readable_server(None));

    let text = description.to_string();
    assert!(
        text.starts_with("{ Type: ReplicaSetNoPrimary, Set Name: rs0"),
        "{text}"
    );
    assert!(
        text.contains("Address: db.example:27018, Type: Unknown"),
        "{text}"
    );

    let value = to_json(&description);
    assert_eq!(value["topology_type"], json!("ReplicaSetNoPrimary"));
    assert_eq!(value["set_name"], json!("rs0"));
    let server = &value["servers"]["db.example:27018"];
    assert_eq!(server["server_type"], json!("Unknown"));
    assert_eq!(
        server["address"],
        json!({ "Tcp": { "host": "db.example", "port": 27018 } })
    );
    assert_eq!(server["reply"], json!({ "Ok": null }));
}

#[test]
fn command_events_use_the_official_field_names() {
    let started = CommandStartedEvent {
        command: doc! { "ping": 1 },
        db: "admin".into(),
        command_name: "ping".into(),
        request_id: 12,
        operation_id: 12,
        connection: ConnectionInfo {
            address: address(),
            id: 2,
            server_id: Some(40),
        },
        service_id: None,
    };
    let value = to_json(&CommandEvent::Started(started));
    assert_eq!(value["commandName"], json!("ping"));
    assert_eq!(value["requestId"], json!(12));
    assert_eq!(value["command"], json!({ "ping": 1 }));
    assert_eq!(
        value["connection"],
        json!({
            "address": { "Tcp": { "host": "db.example", "port": 27018 } },
            "id": 2,
            "serverId": 40,
        })
    );
}

/// Records which `handle_*` methods were called, and the heartbeats' connection ids.
#[derive(Default)]
struct Recorder {
    calls: Mutex<Vec<String>>,
    heartbeat_ids: Mutex<Vec<(u64, Option<i64>)>>,
}

impl Recorder {
    fn record(&self, call: impl Into<String>) {
        self.calls.lock().expect("not poisoned").push(call.into());
    }

    fn called(&self, call: &str) -> bool {
        self.calls
            .lock()
            .expect("not poisoned")
            .iter()
            .any(|c| c == call)
    }
}

impl CommandEventHandler for Recorder {
    fn handle_command_started_event(&self, event: CommandStartedEvent) {
        self.record(format!("started {}", event.command_name));
    }

    fn handle_command_succeeded_event(&self, event: super::command::CommandSucceededEvent) {
        self.record(format!("succeeded {}", event.command_name));
    }
}

impl CmapEventHandler for Recorder {
    fn handle_pool_created_event(&self, _event: super::cmap::PoolCreatedEvent) {
        self.record("pool created");
    }

    fn handle_connection_checked_out_event(&self, _event: ConnectionCheckedOutEvent) {
        self.record("checked out");
    }
}

impl SdamEventHandler for Recorder {
    fn handle_topology_opening_event(&self, _event: TopologyOpeningEvent) {
        self.record("topology opening");
    }

    fn handle_server_heartbeat_succeeded_event(&self, event: ServerHeartbeatSucceededEvent) {
        self.record("heartbeat succeeded");
        self.heartbeat_ids
            .lock()
            .expect("not poisoned")
            .push((event.driver_connection_id, event.server_connection_id));
    }
}

#[test]
fn an_arc_of_a_legacy_handler_becomes_an_event_handler() {
    let recorder = Arc::new(Recorder::default());
    let handler: EventHandler<CommandEvent> = Arc::clone(&recorder).into();
    let EventHandler::Callback(callback) = handler else {
        panic!("a legacy handler is called synchronously");
    };
    let started = CommandStartedEvent {
        command: doc! {},
        db: "admin".into(),
        command_name: "ping".into(),
        request_id: 1,
        operation_id: 1,
        connection: ConnectionInfo {
            address: address(),
            id: 1,
            server_id: None,
        },
        service_id: None,
    };
    callback(CommandEvent::Started(started));
    assert!(recorder.called("started ping"));
}

#[tokio::test]
async fn legacy_handlers_receive_a_clients_events() {
    use blackpipe::deployment::{Deployment, DeploymentConfig};

    let deployment = Deployment::start(DeploymentConfig::standalone())
        .await
        .expect("standalone starts");
    let host = deployment.host(0).expect("node");
    let recorder = Arc::new(Recorder::default());
    let options = crate::ClientOptions::builder()
        .hosts(vec![ServerAddress::parse(&host).expect("address")])
        .direct_connection(true)
        .command_event_handler(Arc::clone(&recorder))
        .cmap_event_handler(Arc::clone(&recorder))
        .sdam_event_handler(Arc::clone(&recorder))
        .build();
    let client = crate::Client::with_options(options).expect("client");
    client
        .database("admin")
        .run_command(doc! { "ping": 1 })
        .await
        .expect("ping");
    client.shutdown().await;
    for call in [
        "started ping",
        "succeeded ping",
        "pool created",
        "checked out",
        "topology opening",
        "heartbeat succeeded",
    ] {
        assert!(recorder.called(call), "{call} missing");
    }
    // The monitor's handshake reply names the server's id for its connection.
    let ids = recorder.heartbeat_ids.lock().expect("not poisoned").clone();
    assert!(ids.iter().all(|(_, server)| server.is_some()), "{ids:?}");
}

/// The closing reasons of the connections `recorder` saw closed.
fn closed_reasons(recorder: &super::EventRecorder) -> Vec<ConnectionClosedReason> {
    recorder
        .events()
        .into_iter()
        .filter_map(|event| match event {
            super::Event::Cmap(super::CmapEvent::ConnectionClosed { reason, .. }) => Some(reason),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_connection_abandoned_mid_command_closes_as_dropped() {
    use blackpipe::scripted::{Matcher, ScriptedServer};
    use blackpipe::server::Reaction;
    use steadfast_core::options::{ClientOptions as UriOptions, ParsedUri};

    let server = ScriptedServer::start().await.expect("server starts");
    server
        .rule(Matcher::command("probe"), Reaction::no_reply())
        .always();
    let uri = format!("mongodb://127.0.0.1:{}/", server.port());
    let ParsedUri::Complete { options, .. } = UriOptions::parse(&uri).expect("valid URI") else {
        panic!("not an SRV URI")
    };
    let recorder = Arc::new(super::EventRecorder::new());
    let listener: Arc<dyn super::EventListener> = recorder.clone();
    let pool = crate::pool::standalone::StandalonePool::new(
        options.hosts[0].clone(),
        &options,
        vec![listener],
        None,
    )
    .expect("pool options are valid");
    pool.ready();
    let mut connection = pool.check_out().await.expect("checked out");
    // The operation is cancelled while it awaits the reply.
    let abandoned = tokio::time::timeout(
        Duration::from_millis(50),
        connection.run_command("db", doc! { "probe": 1 }),
    )
    .await;
    assert!(abandoned.is_err(), "the server never answers");
    drop(connection);
    assert_eq!(closed_reasons(&recorder), [ConnectionClosedReason::Dropped]);
}
