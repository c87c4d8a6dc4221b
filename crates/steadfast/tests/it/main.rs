//! Integration tests of the steadfast driver against blackpipe's scripted server on 127.0.0.1.

mod auth;
mod commands;
mod faults;
mod handshake;
mod pool;
mod pool_clear;
mod pool_concurrency;
mod pool_maintenance;
mod tls;
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

/// The handshakes (hello family) the server recorded, in arrival order.
pub(crate) fn handshakes(server: &ScriptedServer) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| matches!(r.command_name(), "hello" | "isMaster" | "ismaster"))
        .collect()
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
