//! Integration tests of the steadfast driver against blackpipe's scripted server on 127.0.0.1.
#![allow(
    clippy::disallowed_methods,
    reason = "tests drive the clock, tasks and randomness themselves"
)]

mod adaptive;
mod auth;
mod auth_x509_plain;
mod aws;
mod change_stream;
mod client_bulk;
mod command_logging;
mod commands;
mod conformance;
mod crud;
mod crud_cursor;
mod crud_wire;
mod evil;
mod executor;
mod faults;
mod gridfs;
mod handshake;
mod late_reply;
mod load_balanced;
mod oidc;
mod otel;
mod partial_writes;
mod pool;
mod pool_clear;
mod pool_concurrency;
mod pool_maintenance;
mod prose;
mod query_language;
mod raw_batch;
mod recipes;
mod recipes_counter;
mod replication;
mod retry;
mod retry_policy;
mod retry_support;
mod retry_timeout;
mod session;
mod socks5;
mod spans;
mod sync;
mod tailable;
mod timeout_api;
mod tls;
mod transactions;
mod transactions_spec;
mod uri;

use blackpipe::scripted::{HandledBy, RecordedRequest, ScriptedConfig, ScriptedServer};
use steadfast::Client;

/// A scripted server with the default responders (hello, ping, buildInfo, endSessions).
pub(crate) async fn server() -> ScriptedServer {
    ScriptedServer::start()
        .await
        .expect("scripted server starts")
}

/// A scripted server started with `config`.
pub(crate) async fn server_with(config: ScriptedConfig) -> ScriptedServer {
    ScriptedServer::start_with(config)
        .await
        .expect("scripted server starts")
}

/// `mongodb://127.0.0.1:PORT/?<query>` for `server`.
pub(crate) fn uri(server: &ScriptedServer, query: &str) -> String {
    format!("mongodb://127.0.0.1:{}/?{query}", server.port())
}

/// A client for `server` with extra URI options.
pub(crate) async fn client(server: &ScriptedServer, query: &str) -> Client {
    Client::with_uri_str(&uri(server, query))
        .await
        .expect("valid connection string")
}

/// Whether `request` is a hello (handshake or monitoring check).
fn is_hello(request: &RecordedRequest) -> bool {
    matches!(request.command_name(), "hello" | "isMaster" | "ismaster")
}

/// The requests of each application connection (one that carried anything but hellos), in
/// arrival order. Monitoring connections, which only ever send hellos, are left out.
fn application_connections(server: &ScriptedServer) -> Vec<Vec<RecordedRequest>> {
    let mut connections: Vec<Vec<RecordedRequest>> = Vec::new();
    for request in server.requests() {
        match connections
            .iter_mut()
            .find(|c| c[0].connection_id() == request.connection_id())
        {
            Some(connection) => connection.push(request),
            None => connections.push(vec![request]),
        }
    }
    connections.retain(|requests| !requests.iter().all(is_hello));
    connections
}

/// The handshakes that opened application connections, in arrival order.
pub(crate) fn handshakes(server: &ScriptedServer) -> Vec<RecordedRequest> {
    application_connections(server)
        .into_iter()
        .filter_map(|requests| requests.into_iter().next().filter(is_hello))
        .collect()
}

/// How many application connections the server saw.
pub(crate) fn app_connections(server: &ScriptedServer) -> usize {
    application_connections(server).len()
}

/// Requests answered by the test or a rule (not by default responders).
#[allow(dead_code)]
pub(crate) fn scripted_requests(server: &ScriptedServer) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.handled_by() != HandledBy::DefaultResponder)
        .collect()
}
