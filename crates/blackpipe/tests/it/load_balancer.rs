//! Load-balanced mode through raw wire clients and the official driver: `serviceId` in the
//! first hello, mongos's refusals, round robin, backend failure and hostile values.

use std::net::SocketAddr;

use blackpipe::deployment::load_balancer::LOAD_BALANCER_SUPPORT_MISMATCH;
use blackpipe::deployment::{ControlError, Deployment, DeploymentConfig};
use bson::oid::ObjectId;
use bson::{Bson, Document, doc};

use crate::deployment::{client, start};
use crate::support::{RawClient, within};

fn lb_address(uri: &str) -> SocketAddr {
    uri.trim_start_matches("mongodb://")
        .split('/')
        .next()
        .and_then(|host| host.parse().ok())
        .expect("a balancer URI names one socket address")
}

async fn balanced(deployment: &Deployment) -> RawClient {
    let uri = deployment.load_balanced_uri().expect("a load balancer");
    RawClient::connect(lb_address(&uri)).await
}

fn lb_hello() -> Document {
    doc! { "hello": 1, "loadBalanced": true, "$db": "admin" }
}

fn ok(reply: &Document) -> bool {
    reply.get_f64("ok").ok() == Some(1.0)
}

fn code(reply: &Document) -> i32 {
    reply
        .get_i32("code")
        .unwrap_or_else(|_| panic!("an error: {reply}"))
}

/// A balancer connection's handshake: its `serviceId` and `connectionId`.
async fn greet(connection: &mut RawClient) -> (ObjectId, i64) {
    let reply = connection.round_trip(lb_hello()).await;
    assert!(ok(&reply), "{reply}");
    let service = reply.get_object_id("serviceId").expect("serviceId");
    let number = match reply.get("connectionId") {
        Some(Bson::Int64(number)) => *number,
        Some(Bson::Int32(number)) => i64::from(*number),
        other => panic!("connectionId {other:?}"),
    };
    (service, number)
}

async fn admin(connection: &mut RawClient, mut command: Document) -> Document {
    command.insert("$db", "admin");
    connection.round_trip(command).await
}

#[tokio::test]
async fn connections_are_dealt_round_robin_each_backend_with_its_own_service_id_and_numbers() {
    let deployment = start(DeploymentConfig::load_balanced(2)).await;
    let mut greeted = Vec::new();
    let mut connections = Vec::new();
    for _ in 0..4 {
        let mut connection = balanced(&deployment).await;
        greeted.push(greet(&mut connection).await);
        connections.push(connection);
    }
    let services: Vec<ObjectId> = greeted.iter().map(|(service, _)| *service).collect();
    let first = deployment.service_id(0).unwrap();
    let second = deployment.service_id(1).unwrap();
    assert_ne!(first, second, "each router has its own serviceId");
    assert_eq!(services, [first, second, first, second]);
    let numbers: Vec<i64> = greeted.iter().map(|(_, number)| *number).collect();
    assert_eq!(
        numbers,
        [1, 1, 2, 2],
        "each router numbers its own connections"
    );
    // Only the first hello of a connection carries serviceId, as mongos does.
    let again = connections[0].round_trip(lb_hello()).await;
    assert!(ok(&again) && !again.contains_key("serviceId"), "{again}");
    let plain = connections[1]
        .round_trip(doc! { "hello": 1, "$db": "admin" })
        .await;
    assert!(ok(&plain) && !plain.contains_key("serviceId"), "{plain}");
}

#[tokio::test]
async fn a_first_hello_without_load_balanced_is_refused_as_mongos_refuses_it() {
    let deployment = start(DeploymentConfig::load_balanced(1)).await;
    let mut connection = balanced(&deployment).await;
    for refused in [
        doc! { "hello": 1, "$db": "admin" },
        doc! { "hello": 1, "loadBalanced": false, "$db": "admin" },
        doc! { "isMaster": 1, "loadBalanced": Bson::Null, "$db": "admin" },
    ] {
        let reply = connection.round_trip(refused).await;
        assert_eq!(code(&reply), LOAD_BALANCER_SUPPORT_MISMATCH, "{reply}");
        assert_eq!(
            reply.get_str("codeName").ok(),
            Some("LoadBalancerSupportMismatch")
        );
    }
    // The refusal left the connection ungreeted: declaring the mode now succeeds.
    let (service, _) = greet(&mut connection).await;
    assert_eq!(Some(service), deployment.service_id(0));
}

#[tokio::test]
async fn legacy_hello_through_the_balancer_carries_service_id() {
    let deployment = start(DeploymentConfig::load_balanced(1)).await;
    let mut connection = balanced(&deployment).await;
    connection
        .send_query("admin", doc! { "isMaster": 1, "loadBalanced": true })
        .await;
    let reply = crate::support::reply_document(&connection.expect_message().await);
    assert!(ok(&reply), "{reply}");
    assert_eq!(
        reply.get_object_id("serviceId").ok(),
        deployment.service_id(0)
    );
    assert_eq!(reply.get_str("msg").ok(), Some("isdbgrid"));
}

#[tokio::test]
async fn a_router_port_ignores_load_balanced_and_every_port_rejects_a_non_boolean() {
    let deployment = start(DeploymentConfig::load_balanced(2)).await;
    let mut direct = client(&deployment, 0).await;
    let reply = direct.round_trip(lb_hello()).await;
    assert!(ok(&reply) && !reply.contains_key("serviceId"), "{reply}");
    let mut through = balanced(&deployment).await;
    for hostile in [
        Bson::String("yes".into()),
        Bson::Int32(1),
        Bson::Document(doc! {}),
    ] {
        for connection in [&mut direct, &mut through] {
            let command = doc! { "hello": 1, "loadBalanced": hostile.clone(), "$db": "admin" };
            let reply = connection.round_trip(command).await;
            assert_eq!(code(&reply), 14, "{reply}");
        }
    }
    greet(&mut through).await;
}

#[tokio::test]
async fn a_backend_taken_down_loses_its_connections_and_is_skipped_until_it_comes_back() {
    let deployment = start(DeploymentConfig::load_balanced(2)).await;
    let (first, second) = (deployment.service_id(0), deployment.service_id(1));
    let mut on_first = balanced(&deployment).await;
    assert_eq!(Some(greet(&mut on_first).await.0), first);
    let mut on_second = balanced(&deployment).await;
    assert_eq!(Some(greet(&mut on_second).await.0), second);

    let reply = admin(
        &mut on_second,
        doc! { "blackpipe": "lbBackend", "backend": 0, "down": true },
    )
    .await;
    assert!(ok(&reply), "{reply}");
    assert_eq!(reply.get_i64("closed").ok(), Some(1));
    on_first.expect_closed().await;
    // Kept open: they are what taking router 1 down closes below.
    let mut kept = Vec::new();
    for _ in 0..3 {
        let mut connection = balanced(&deployment).await;
        assert_eq!(
            Some(greet(&mut connection).await.0),
            second,
            "router 0 is skipped"
        );
        kept.push(connection);
    }
    // The router's own port is not affected.
    let mut direct = client(&deployment, 0).await;
    assert!(ok(&direct
        .round_trip(doc! { "ping": 1, "$db": "admin" })
        .await));

    assert_eq!(deployment.set_backend_down(1, true), Ok(4));
    for connection in &mut kept {
        connection.expect_closed().await;
    }
    let mut nowhere = balanced(&deployment).await;
    nowhere.send_command(lb_hello()).await;
    nowhere.expect_closed().await;

    assert_eq!(deployment.set_backend_down(0, false), Ok(0));
    let mut back = balanced(&deployment).await;
    assert_eq!(Some(greet(&mut back).await.0), first, "router 0 is back");
    assert_eq!(
        deployment.service_id(0),
        first,
        "serviceId is stable for the process"
    );
}

#[tokio::test]
async fn a_killed_backend_is_skipped() {
    let deployment = start(DeploymentConfig::load_balanced(2)).await;
    within(deployment.kill(1)).await.unwrap();
    for _ in 0..3 {
        let mut connection = balanced(&deployment).await;
        assert_eq!(
            Some(greet(&mut connection).await.0),
            deployment.service_id(0)
        );
    }
}

#[tokio::test]
async fn the_single_backend_balancer_fronts_router_zero_only() {
    let deployment = start(DeploymentConfig::load_balanced(2)).await;
    let uri = deployment.single_backend_load_balanced_uri().unwrap();
    assert!(uri.ends_with("/?loadBalanced=true"), "{uri}");
    for _ in 0..3 {
        let mut connection = RawClient::connect(lb_address(&uri)).await;
        assert_eq!(
            Some(greet(&mut connection).await.0),
            deployment.service_id(0)
        );
    }
}

#[tokio::test]
async fn a_fail_point_set_through_a_balancer_connection_applies_to_its_backend() {
    let deployment = start(DeploymentConfig::load_balanced(2)).await;
    let mut on_first = balanced(&deployment).await;
    greet(&mut on_first).await;
    let mut on_second = balanced(&deployment).await;
    greet(&mut on_second).await;
    let fail_point = doc! {
        "configureFailPoint": "failCommand",
        "mode": "alwaysOn",
        "data": { "failCommands": ["ping"], "errorCode": 91 },
    };
    assert!(ok(&admin(&mut on_first, fail_point).await));
    let ping = || doc! { "ping": 1, "$db": "admin" };
    assert_eq!(code(&on_first.round_trip(ping()).await), 91);
    assert!(
        ok(&on_second.round_trip(ping()).await),
        "router 1 has no fail point"
    );
    let mut direct = client(&deployment, 0).await;
    assert_eq!(
        code(&direct.round_trip(ping()).await),
        91,
        "router 0's process has it"
    );
}

#[tokio::test]
async fn hostile_lb_backend_commands_get_typed_errors() {
    let deployment = start(DeploymentConfig::load_balanced(2)).await;
    let mut connection = client(&deployment, 0).await;
    for hostile in [
        doc! { "blackpipe": "lbBackend", "backend": -1, "down": true },
        doc! { "blackpipe": "lbBackend", "backend": 99, "down": true },
        doc! { "blackpipe": "lbBackend", "backend": i64::MAX, "down": true },
        doc! { "blackpipe": "lbBackend", "backend": "0", "down": true },
        doc! { "blackpipe": "lbBackend", "backend": 0, "down": "yes" },
        doc! { "blackpipe": "lbBackend", "backend": 0 },
    ] {
        let reply = admin(&mut connection, hostile.clone()).await;
        assert_eq!(code(&reply), 2, "{hostile} -> {reply}");
    }
    let sharded = start(DeploymentConfig::sharded(1)).await;
    let mut plain = client(&sharded, 0).await;
    let reply = admin(
        &mut plain,
        doc! { "blackpipe": "lbBackend", "backend": 0, "down": true },
    )
    .await;
    assert_eq!(code(&reply), 2, "no balancer: {reply}");
    assert!(sharded.load_balanced_uri().is_none());
}

#[tokio::test]
async fn only_a_sharded_deployment_can_be_load_balanced() {
    let refused =
        Deployment::start(DeploymentConfig::replica_set(1).with_load_balancer(true)).await;
    assert!(
        matches!(refused, Err(ControlError::InvalidConfig(_))),
        "{refused:?}"
    );
}

#[tokio::test]
async fn the_official_driver_works_in_load_balanced_mode_and_leaves_no_connection() {
    let deployment = start(DeploymentConfig::load_balanced(2)).await;
    let uri = deployment.load_balanced_uri().unwrap();
    let client = mongodb::Client::with_uri_str(format!("{uri}&serverSelectionTimeoutMS=5000"))
        .await
        .unwrap();
    let collection = client.database("lb").collection::<Document>("things");
    within(collection.insert_one(doc! { "_id": 1 }))
        .await
        .unwrap();
    let found = within(collection.find_one(doc! {})).await.unwrap();
    assert_eq!(found, Some(doc! { "_id": 1 }));
    within(client.shutdown()).await;
    within(deployment.wait_for_no_balanced_connections()).await;
}
