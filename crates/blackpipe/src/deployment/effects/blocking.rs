//! [`BlockingDeployment`]: a simulated deployment for tests that have no async runtime of their
//! own (a plain `#[test]` with a blocking client).

use std::future::Future;

use tokio::runtime::Runtime;

use super::handle::Deployment;
use crate::deployment::config::DeploymentConfig;
use crate::deployment::control_error::ControlError;

/// A [`Deployment`] running on a tokio runtime of its own (two worker threads), so that a
/// blocking test needs no runtime: start it, point a blocking client at [`uri`](Self::uri),
/// script faults through [`deployment`](Self::deployment) (and [`block_on`](Self::block_on)
/// for the asynchronous controls). Dropping it stops every node, then the runtime.
///
/// ```
/// use std::time::Duration;
///
/// use blackpipe::deployment::{BlockingDeployment, DeploymentConfig};
///
/// let running = BlockingDeployment::start(DeploymentConfig::replica_set(3))?;
/// let uri = running.uri(); // give this to a blocking client
/// assert!(uri.ends_with("?replicaSet=rs0"));
/// running.deployment().step_down(Duration::from_secs(10))?;
/// let primary = running.block_on(running.deployment().wait_for_primary());
/// assert_ne!(primary, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BlockingDeployment {
    // Dropped before the runtime (see `Drop`): the nodes stop on the runtime's threads.
    deployment: Option<Deployment>,
    runtime: Runtime,
}

impl std::fmt::Debug for BlockingDeployment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlockingDeployment")
            .field("deployment", &self.deployment)
            .finish_non_exhaustive()
    }
}

impl BlockingDeployment {
    /// Starts a runtime and the nodes `config` describes on it. Call it from a thread that is
    /// not running async code (a plain `#[test]`, `main`).
    ///
    /// # Errors
    ///
    /// [`ControlError::Listen`] if the runtime cannot start or a port cannot be bound;
    /// otherwise as [`Deployment::start`].
    ///
    /// # Panics
    ///
    /// When called from within an async runtime (tokio forbids blocking there): use
    /// [`Deployment::start`] in async code.
    pub fn start(config: DeploymentConfig) -> Result<Self, ControlError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("blackpipe")
            .enable_all()
            .build()
            .map_err(|error| ControlError::Listen(format!("the runtime did not start: {error}")))?;
        let deployment = runtime.block_on(Deployment::start(config))?;
        Ok(Self {
            deployment: Some(deployment),
            runtime,
        })
    }

    /// A connection string naming every node (see [`Deployment::uri`]).
    pub fn uri(&self) -> String {
        self.deployment().uri()
    }

    /// The deployment, for its controls (`step_down`, `partition`, fail points, ...).
    pub fn deployment(&self) -> &Deployment {
        self.deployment
            .as_ref()
            .expect("the deployment lives until the handle is dropped")
    }

    /// Runs an asynchronous control (`kill`, `restart`, `wait_for_primary`, ...) to its end on
    /// the deployment's runtime.
    ///
    /// # Panics
    ///
    /// When called from within an async runtime, as tokio's `Runtime::block_on`.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.runtime.block_on(future)
    }
}

impl Drop for BlockingDeployment {
    fn drop(&mut self) {
        // The listeners' shutdown runs on the runtime, so the runtime must outlive it.
        let _entered = self.runtime.enter();
        drop(self.deployment.take());
    }
}
