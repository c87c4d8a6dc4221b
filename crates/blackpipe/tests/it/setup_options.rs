//! Deployment settings a test environment relies on: the name nodes report, the balancers'
//! own ports, and TLS that also serves plain clients (mongod's `--tlsMode preferTLS`).

use std::net::SocketAddr;

use blackpipe::deployment::{ControlError, Deployment, DeploymentConfig};
use blackpipe::server::ServerTls;
use bson::doc;
use steadfast_test_support::pki::TestPki;

use crate::deployment::start;
use crate::support::{RawClient, within};

/// The loopback address of node `index`, whatever name the deployment reports it under.
fn loopback(deployment: &Deployment, index: usize) -> SocketAddr {
    let host = deployment.host(index).expect("node exists");
    let port = host
        .rsplit_once(':')
        .and_then(|(_, port)| port.parse().ok())
        .expect("hosts end with a port");
    SocketAddr::from(([127, 0, 0, 1], port))
}

#[tokio::test]
async fn members_report_the_configured_host_name() {
    let deployment = start(DeploymentConfig::replica_set(2).with_host_name("localhost")).await;
    let mut connection = RawClient::connect(loopback(&deployment, 0)).await;
    let reply = within(connection.round_trip(doc! { "hello": 1, "$db": "admin" })).await;
    let me = reply.get_str("me").expect("me");
    assert_eq!(me, deployment.host(0).unwrap());
    assert!(me.starts_with("localhost:"), "{reply}");
    let hosts = reply.get_array("hosts").expect("hosts");
    assert_eq!(hosts.len(), 2);
    assert!(
        hosts
            .iter()
            .all(|h| h.as_str().is_some_and(|h| h.starts_with("localhost:"))),
        "{reply}"
    );
    assert!(deployment.uri().starts_with("mongodb://localhost:"));
    deployment.stop().await;
}

#[tokio::test]
async fn a_host_name_other_than_loopback_is_refused() {
    let Err(refused) =
        Deployment::start(DeploymentConfig::standalone().with_host_name("db.example")).await
    else {
        panic!("nodes listen on 127.0.0.1 only: another host name must be refused");
    };
    assert!(
        matches!(refused, ControlError::InvalidConfig(_)),
        "{refused}"
    );
}

#[tokio::test]
async fn balancers_listen_on_the_ports_they_are_given() {
    // Ports no other test of this binary binds (the others use ephemeral ports).
    let (multi, single) = (28951, 28952);
    let config = DeploymentConfig::load_balanced(2).with_load_balancer_ports(multi, single);
    let deployment = start(config).await;
    assert_eq!(
        deployment.load_balanced_uri().as_deref(),
        Some(format!("mongodb://127.0.0.1:{multi}/?loadBalanced=true").as_str())
    );
    assert_eq!(
        deployment.single_backend_load_balanced_uri().as_deref(),
        Some(format!("mongodb://127.0.0.1:{single}/?loadBalanced=true").as_str())
    );
    let mut connection = RawClient::connect(SocketAddr::from(([127, 0, 0, 1], single))).await;
    let reply = within(connection.round_trip(doc! {
        "hello": 1, "loadBalanced": true, "$db": "admin"
    }))
    .await;
    assert!(reply.get_object_id("serviceId").is_ok(), "{reply}");
    deployment.stop().await;
}

#[tokio::test]
async fn tls_allowing_plaintext_serves_both_kinds_of_client() {
    let pki = TestPki::new();
    let tls = ServerTls::new(&pki.server("localhost").pem).unwrap();
    assert!(!tls.allows_plaintext());
    let strict = start(DeploymentConfig::standalone().with_tls(tls.clone())).await;
    let both = start(DeploymentConfig::standalone().with_tls(tls.allowing_plaintext())).await;

    // A plain client: refused by the strict server (its bytes are no TLS handshake), served
    // by the other.
    let mut plain = RawClient::connect(loopback(&strict, 0)).await;
    plain
        .send_command(doc! { "hello": 1, "$db": "admin" })
        .await;
    assert!(
        within(plain.receive()).await.is_none(),
        "closed without a reply"
    );
    let mut plain = RawClient::connect(loopback(&both, 0)).await;
    let reply = within(plain.round_trip(doc! { "hello": 1, "$db": "admin" })).await;
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{reply}");

    // A TLS client (the official driver) is served by both.
    for deployment in [&strict, &both] {
        let port = loopback(deployment, 0).port();
        let uri = format!(
            "mongodb://localhost:{port}/?directConnection=true&tls=true&tlsCAFile={}",
            pki.ca_file().display()
        );
        let client = mongodb::Client::with_uri_str(&uri).await.unwrap();
        let reply = within(client.database("admin").run_command(doc! { "ping": 1 }))
            .await
            .expect("ping over TLS");
        assert_eq!(reply.get_f64("ok").ok(), Some(1.0));
        client.shutdown().await;
    }
    strict.stop().await;
    both.stop().await;
}
