//! The operations a server process is running, as `currentOp` lists them and `killOp` ends
//! them. Each request is registered when it arrives and removed when its reply is ready (an
//! [`OpGuard`] dropped); killing one wakes its [`OpGuard::killed`], which the member's handler
//! races against the request, answering Interrupted (11601) as mongod does.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use bson::{Bson, DateTime, Document, doc};
use tokio::sync::watch;

use crate::server::Request;

/// A command document larger than this is shown truncated, as mongod does.
const MAX_SHOWN_COMMAND_BYTES: usize = 1024;

/// Who sent an operation.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub(crate) connection_id: u64,
    pub(crate) address: std::net::SocketAddr,
    pub(crate) app_name: Option<String>,
}

/// A running request: kept as it arrived (shared, not copied: registering costs the hot path
/// no more than an insertion); `currentOp` shapes it only when asked.
#[derive(Debug)]
struct Running {
    client: Client,
    request: Arc<Request>,
    started: Instant,
    kill: watch::Sender<bool>,
}

/// The running operations of one process.
#[derive(Debug, Default)]
pub(crate) struct InProgress {
    next_id: AtomicU64,
    running: Mutex<BTreeMap<u64, Running>>,
}

impl InProgress {
    fn running(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Running>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a request until the returned guard is dropped.
    pub(crate) fn begin(self: &Arc<Self>, client: Client, request: Arc<Request>) -> OpGuard {
        let opid = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let (kill, killed) = watch::channel(false);
        self.running().insert(
            opid,
            Running {
                client,
                request,
                started: Instant::now(),
                kill,
            },
        );
        OpGuard {
            registry: Arc::clone(self),
            opid,
            killed,
        }
    }

    /// Asks operation `opid` to stop; false if no such operation is running.
    pub(crate) fn kill(&self, opid: u64) -> bool {
        self.running()
            .get(&opid)
            .map(|running| running.kill.send_replace(true))
            .is_some()
    }

    /// Every running operation as `currentOp` describes it, oldest first; `namespace` names
    /// a request's namespace as the node does.
    pub(crate) fn describe(
        &self,
        host: &str,
        namespace: impl Fn(&Request) -> String,
    ) -> Vec<Document> {
        let now = Instant::now();
        let wall = DateTime::now();
        self.running()
            .iter()
            .map(|(opid, running)| {
                let elapsed = now.saturating_duration_since(running.started);
                let command = running.request.command();
                let mut op = doc! {
                    "type": "op",
                    "host": host,
                    "desc": format!("conn{}", running.client.connection_id),
                    "connectionId": i64::try_from(running.client.connection_id).unwrap_or(i64::MAX),
                    "client": running.client.address.to_string(),
                    "active": true,
                    "currentOpTime": wall,
                    "opid": i64::try_from(*opid).unwrap_or(i64::MAX),
                    "secs_running": i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX),
                    "microsecs_running": i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX),
                    "op": op_kind(running.request.command_name()),
                    "ns": namespace(&running.request),
                    "command": shown(command),
                    "numYields": 0,
                    "waitingForLock": false,
                    "locks": {},
                };
                if let Some(app_name) = &running.client.app_name {
                    op.insert("appName", app_name);
                }
                if let Some(lsid) = command.get("lsid") {
                    op.insert("lsid", lsid.clone());
                }
                op
            })
            .collect()
    }
}

/// mongod's `op` field: the kind of operation.
fn op_kind(command: &str) -> &'static str {
    match command {
        "find" => "query",
        "insert" => "insert",
        "update" => "update",
        "delete" => "remove",
        "getMore" => "getmore",
        _ => "command",
    }
}

/// The command as `currentOp` shows it: whole, or `{$truncated: ...}` past 1 KiB.
fn shown(command: &Document) -> Document {
    let mut bytes = Vec::new();
    let size = command
        .to_writer(&mut bytes)
        .map_or(usize::MAX, |()| bytes.len());
    if size <= MAX_SHOWN_COMMAND_BYTES {
        return command.clone();
    }
    let text = Bson::Document(command.clone()).to_string();
    let cut: String = text.chars().take(MAX_SHOWN_COMMAND_BYTES).collect();
    doc! { "$truncated": cut, "comment": command.get("comment").cloned().unwrap_or(Bson::Null) }
}

/// A registered operation; dropping it removes the operation from the list.
#[derive(Debug)]
pub(crate) struct OpGuard {
    registry: Arc<InProgress>,
    opid: u64,
    killed: watch::Receiver<bool>,
}

impl OpGuard {
    /// Completes once `killOp` named this operation.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe.
    pub(crate) async fn killed(&mut self) {
        // The sender lives in the registry while this guard does: waiting cannot fail.
        let _ = self.killed.wait_for(|killed| *killed).await;
    }
}

impl Drop for OpGuard {
    fn drop(&mut self) {
        self.registry.running().remove(&self.opid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client() -> Client {
        Client {
            connection_id: 7,
            address: "127.0.0.1:5000".parse().unwrap(),
            app_name: Some("app".to_owned()),
        }
    }

    fn find() -> Arc<Request> {
        let body = bson::RawDocumentBuf::try_from(&doc! { "find": "c", "$db": "db" }).unwrap();
        let message = steadfast_wire::Message::new(1, 0, steadfast_wire::OpMsg::new(body));
        Arc::new(Request::from_message(message).unwrap())
    }

    fn namespace(_: &Request) -> String {
        "db.c".to_owned()
    }

    #[tokio::test]
    async fn operations_are_listed_while_running_and_killable() {
        let registry = Arc::new(InProgress::default());
        let mut guard = registry.begin(client(), find());
        let listed = registry.describe("h:1", namespace);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].get_str("op").unwrap(), "query");
        assert_eq!(listed[0].get_str("appName").unwrap(), "app");
        assert_eq!(listed[0].get_str("ns").unwrap(), "db.c");
        assert_eq!(listed[0].get_str("client").unwrap(), "127.0.0.1:5000");
        let opid = u64::try_from(listed[0].get_i64("opid").unwrap()).unwrap();
        assert!(registry.kill(opid));
        guard.killed().await;
        drop(guard);
        assert!(registry.describe("h:1", namespace).is_empty());
        assert!(!registry.kill(opid), "gone once finished");
    }

    #[test]
    fn a_large_command_is_shown_truncated() {
        let big = doc! { "insert": "c", "documents": [{ "x": "y".repeat(5000) }] };
        let shown = shown(&big);
        assert!(shown.get_str("$truncated").unwrap().len() <= MAX_SHOWN_COMMAND_BYTES);
    }
}
