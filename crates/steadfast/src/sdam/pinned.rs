//! Selecting one particular server: the one a cursor lives on (getMore, killCursors).
//! (Added by the executor, which needs it; kept apart from the selection loop.)

use std::sync::Arc;

use steadfast_core::ServerAddress;

use super::{OperationInFlight, SelectedServer, Topology};
use crate::error::{Error, ErrorKind, Result};
use crate::runtime::TaskTracker;

impl Topology {
    /// The server at `address` with its pool, whatever its current type: a cursor's getMore
    /// must go where the cursor lives, and if that server is unusable its pool (paused or
    /// closed) says so at check-out.
    ///
    /// # Errors
    /// `ServerSelection` when the server is no longer part of the topology, or the topology
    /// is closed.
    pub(crate) fn select_address(&self, address: &ServerAddress) -> Result<SelectedServer> {
        let snapshot = Arc::clone(&self.inner.snapshots.borrow());
        if snapshot.closed {
            return Err(Error::new(ErrorKind::ServerSelection {
                message: "the client has been closed".to_string(),
            }));
        }
        let servers = self.inner.servers.read().unwrap_or_else(|p| p.into_inner());
        let (Some(server), Some(description)) = (
            servers.get(address),
            snapshot.description.servers.get(address),
        ) else {
            return Err(Error::new(ErrorKind::ServerSelection {
                message: format!("{address} is no longer part of the topology"),
            }));
        };
        Ok(SelectedServer {
            address: address.clone(),
            pool: server.pool.clone(),
            description: Arc::clone(description),
            topology_type: snapshot.description.topology_type,
            _operation: OperationInFlight::start(&server.operations),
        })
    }

    /// The tracker of the topology's tasks (worker, monitors, RTT tasks, pools), for proving
    /// that none outlives the client.
    pub(crate) fn tasks(&self) -> TaskTracker {
        self.inner.tracker.clone()
    }
}
