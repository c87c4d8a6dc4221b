//! Load-balanced mode: a sharded cluster's mongoses behind a layer-4 load balancer, as the
//! load-balancer specification's test environments set it up.
//!
//! [`DeploymentConfig::load_balanced`] starts two extra listeners besides the routers' own ports:
//!
//! - the *multi-backend* balancer, fronting every router
//!   ([`Deployment::load_balanced_uri`]; the unified format's `MULTI_MONGOS_LB_URI`);
//! - the *single-backend* balancer, fronting router 0 only
//!   ([`Deployment::single_backend_load_balanced_uri`]; `SINGLE_MONGOS_LB_URI`).
//!
//! Each accepted connection is bound to one backend for its whole life, chosen round robin
//! among the backends that are up, as an L4 balancer does; its requests are served by that
//! router's process, so fail points set through the connection apply to that router, and
//! `{blackpipe: "kill", ...}` sent through it targets that router.
//!
//! What the routers do with connections that arrive through a balancer is what a mongos
//! started with `loadBalancerPort` does:
//!
//! - the first successful `hello` / legacy hello of the connection must carry
//!   `loadBalanced: true`; its reply adds `serviceId`, an `ObjectId` that identifies the
//!   router process (stable while it runs, new after a restart). Later hellos on the
//!   connection are ordinary (no `serviceId`, `loadBalanced` ignored).
//! - a first hello without `loadBalanced: true` fails with `LoadBalancerSupportMismatch`
//!   (354), as mongos refuses a driver that is not in load-balanced mode.
//! - `connectionId` in hello numbers the connections each router received through the
//!   balancers (1, 2, ... per router).
//!
//! On a router's own port, `loadBalanced: true` is accepted and ignored (no `serviceId`), as
//! mongos does; a driver in load-balanced mode then fails its handshake because the reply has
//! no `serviceId`. On every port, a `loadBalanced` that is neither a boolean nor null is a
//! `TypeMismatch` (14), as mongos's command parser rejects it.
//!
//! # Backend failure
//!
//! `{blackpipe: "lbBackend", backend: <router index>, down: true}` (admin database, any node or
//! balancer connection), or [`Deployment::set_backend_down`], takes a router out of both
//! balancers: its balancer connections are closed, and new connections skip it (with no
//! backend left, a new connection is closed at once). `down: false` puts it back. The router's
//! own port is unaffected. The reply's `closed` counts the connections closed.
//!
//! A router killed with `{blackpipe: "kill"}` is skipped too until it restarts, and its
//! balancer connections see the router's connections drop.
//!
//! This module runs the balancers (their ports, the round robin, closing a backend's
//! connections); the routers' side of the hello is a gate of the node room, and the
//! `lbBackend` command is parsed and run in the control room.
//!
//! [`DeploymentConfig::load_balanced`]: crate::deployment::DeploymentConfig::load_balanced
//! [`Deployment::load_balanced_uri`]: crate::deployment::Deployment::load_balanced_uri
//! [`Deployment::single_backend_load_balanced_uri`]: crate::deployment::Deployment::single_backend_load_balanced_uri
//! [`Deployment::set_backend_down`]: crate::deployment::Deployment::set_backend_down

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use bson::oid::ObjectId;

use crate::deployment::balanced::{BalancedConnection, Balancers, Binding};
use crate::deployment::config::DeploymentConfig;
use crate::deployment::control_error::ControlError;
use crate::deployment::model::{DeploymentKind, Health, NodeIndex};
use crate::deployment::state::{Inner, lock};
use crate::server::{
    BoxFuture, ConnectionContext, ConnectionId, ConnectionInfo, Handler, Outcome, Reaction,
    Request, Server,
};
use blackpipe_store::code;

/// mongos's `LoadBalancerSupportMismatch`.
pub const LOAD_BALANCER_SUPPORT_MISMATCH: i32 = code::LOAD_BALANCER_SUPPORT_MISMATCH;

/// The balancers of a load-balanced deployment and the state they share.
pub(crate) struct Balancer {
    /// The multi-backend balancer, then the single-backend one.
    listeners: Vec<Listener>,
    backends: Arc<Backends>,
}

struct Listener {
    server: Server,
    handler: Arc<BalancerHandler>,
}

/// Per-router state shared by both balancers.
struct Backends {
    state: Mutex<Vec<Backend>>,
}

#[derive(Default)]
struct Backend {
    /// Taken out of the balancers by `lbBackend`.
    down: bool,
    /// The number the next balancer connection of this router gets in `connectionId`.
    next_number: i64,
    /// The router process this `serviceId` belongs to, and the `serviceId`.
    service: Option<(ObjectId, ObjectId)>,
}

impl Backends {
    fn is_down(&self, backend: NodeIndex) -> bool {
        lock(&self.state).get(backend).is_none_or(|b| b.down)
    }

    /// The `serviceId` of `backend` while it runs as `process`: a new one for a new process.
    fn service_id(&self, backend: NodeIndex, process: ObjectId) -> Option<ObjectId> {
        let mut state = lock(&self.state);
        let entry = state.get_mut(backend)?;
        match entry.service {
            Some((known, service)) if known == process => Some(service),
            _ => {
                let service = ObjectId::new();
                entry.service = Some((process, service));
                Some(service)
            }
        }
    }
}

/// The [`Handler`] of one balancer port: binds each connection to a router and passes its
/// requests to that router's handler.
struct BalancerHandler {
    /// Weak: the deployment owns the balancer, not the other way round.
    inner: Weak<Inner>,
    backends: Arc<Backends>,
    /// The routers this balancer fronts.
    fronts: Vec<NodeIndex>,
    next: AtomicUsize,
    bound: Mutex<HashMap<ConnectionId, Binding>>,
}

impl BalancerHandler {
    /// The next router up, round robin from the last choice.
    fn choose(&self, inner: &Inner, state: &mut [Backend]) -> Option<NodeIndex> {
        let running: Vec<bool> = {
            let deployment = lock(&inner.state);
            self.fronts
                .iter()
                .map(|&index| {
                    deployment
                        .topology
                        .node(index)
                        .is_some_and(|node| node.health() != Health::Down)
                })
                .collect()
        };
        let count = self.fronts.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..count)
            .map(|offset| start.wrapping_add(offset) % count)
            .find(|&slot| {
                let index = self.fronts[slot];
                running[slot] && state.get(index).is_some_and(|b| !b.down)
            })
            .map(|slot| self.fronts[slot])
    }

    /// The binding of `connection`, recorded in its extensions on first use.
    fn binding(&self, connection: &mut ConnectionContext) -> Option<Binding> {
        if let Some(balanced) = connection.extensions().get::<BalancedConnection>() {
            return Some(balanced.binding);
        }
        let binding = *lock(&self.bound).get(&connection.id())?;
        connection.extensions_mut().insert(BalancedConnection {
            binding,
            greeted: false,
        });
        Some(binding)
    }

    /// The handler of the process `backend` runs now (`None` while it is down).
    fn backend_handler(&self, backend: NodeIndex) -> Option<Arc<dyn Handler>> {
        let inner = self.inner.upgrade()?;
        let state = lock(&inner.state);
        state
            .slots
            .get(backend)?
            .server
            .as_ref()
            .map(Server::handler)
    }

    /// The connections bound to `backend`.
    fn bound_to(&self, backend: NodeIndex) -> Vec<ConnectionId> {
        lock(&self.bound)
            .iter()
            .filter(|(_, binding)| binding.backend == backend)
            .map(|(&id, _)| id)
            .collect()
    }
}

impl Handler for BalancerHandler {
    fn handle<'a>(
        &'a self,
        request: Arc<Request>,
        connection: &'a mut ConnectionContext,
    ) -> BoxFuture<'a, Outcome> {
        Box::pin(async move {
            let Some(binding) = self.binding(connection) else {
                return Reaction::HangUp.into();
            };
            if self.backends.is_down(binding.backend) {
                return Reaction::HangUp.into();
            }
            let Some(handler) = self.backend_handler(binding.backend) else {
                return Reaction::HangUp.into();
            };
            handler.handle(request, connection).await
        })
    }

    fn connection_opened(&self, connection: &ConnectionInfo) {
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        // Chosen and recorded under `bound`, so that `set_down` (which closes what it finds
        // there after marking the router down) sees every connection bound to the router.
        let mut bound = lock(&self.bound);
        let mut state = lock(&self.backends.state);
        let Some(backend) = self.choose(&inner, &mut state) else {
            tracing::debug!(connection = %connection.id, "load balancer: no backend up");
            return;
        };
        let Some(entry) = state.get_mut(backend) else {
            return;
        };
        entry.next_number = entry.next_number.saturating_add(1);
        let number = entry.next_number;
        bound.insert(connection.id, Binding { backend, number });
    }

    fn connection_closed(&self, connection: &ConnectionInfo) {
        lock(&self.bound).remove(&connection.id);
    }
}

/// Refuses `config` if it asks for a balancer in front of anything but routers.
pub(crate) fn validate(config: &DeploymentConfig) -> Result<(), ControlError> {
    if config.load_balanced && config.kind != DeploymentKind::Sharded {
        return Err(ControlError::InvalidConfig(
            "a load balancer fronts mongos routers: use a sharded deployment".into(),
        ));
    }
    Ok(())
}

/// Binds the balancers of a load-balanced `config` (`None` otherwise) and hands them to the
/// members.
pub(crate) async fn start(
    inner: &Arc<Inner>,
    config: &DeploymentConfig,
) -> Result<Option<Arc<Balancer>>, ControlError> {
    if !config.load_balanced {
        return Ok(None);
    }
    let routers = lock(&inner.state).slots.len();
    let backends = Arc::new(Backends {
        state: Mutex::new((0..routers).map(|_| Backend::default()).collect()),
    });
    let mut listeners = Vec::with_capacity(2);
    for (offset, fronts) in [(0u16, (0..routers).collect()), (1, vec![0])] {
        let port = balancer_port(config, routers, offset)?;
        let handler = Arc::new(BalancerHandler {
            inner: Arc::downgrade(inner),
            backends: Arc::clone(&backends),
            fronts,
            next: AtomicUsize::new(0),
            bound: Mutex::new(HashMap::new()),
        });
        let listener = config.server.clone().with_port(port);
        let bind = listener.bind;
        let server = Server::bind(listener, Arc::clone(&handler) as Arc<dyn Handler>)
            .await
            .map_err(|error| ControlError::Listen(format!("{bind}:{port}: {error}")))?;
        listeners.push(Listener { server, handler });
    }
    let balancer = Arc::new(Balancer {
        listeners,
        backends,
    });
    // `start` runs once, right after the deployment is built: the cell is empty.
    let _ = inner
        .load_balancer
        .set(Arc::clone(&balancer) as Arc<dyn Balancers>);
    Ok(Some(balancer))
}

/// The balancers listen on the ports the configuration names; otherwise right after the
/// routers' fixed ports, or on ephemeral ones.
fn balancer_port(
    config: &DeploymentConfig,
    routers: usize,
    offset: u16,
) -> Result<u16, ControlError> {
    if let Some((multi, single)) = config.load_balancer_ports {
        return Ok(if offset == 0 { multi } else { single });
    }
    if config.port == 0 {
        return Ok(0);
    }
    u16::try_from(routers)
        .ok()
        .and_then(|routers| config.port.checked_add(routers)?.checked_add(offset))
        .ok_or_else(|| ControlError::Listen("port range overflows".into()))
}

impl Balancers for Balancer {
    fn set_down(&self, backend: NodeIndex, down: bool) -> Result<usize, ControlError> {
        {
            let mut state = lock(&self.backends.state);
            let entry = state
                .get_mut(backend)
                .ok_or_else(|| ControlError::UnknownMember(backend.to_string()))?;
            entry.down = down;
        }
        if !down {
            return Ok(0);
        }
        let mut closed = 0;
        for listener in &self.listeners {
            for id in listener.handler.bound_to(backend) {
                if listener.server.close_connection(id) {
                    closed += 1;
                }
            }
        }
        Ok(closed)
    }

    fn service_id(&self, backend: NodeIndex, process: ObjectId) -> Option<ObjectId> {
        self.backends.service_id(backend, process)
    }
}

impl Balancer {
    /// `127.0.0.1:<port>` of balancer `which` (0: multi-backend, 1: single-backend).
    pub(crate) fn host(&self, which: usize) -> Option<String> {
        let listener = self.listeners.get(which)?;
        Some(format!("127.0.0.1:{}", listener.server.local_addr().port()))
    }

    /// Stops both balancers and waits for their connections to close.
    pub(crate) async fn stop(&self) {
        for listener in &self.listeners {
            listener.server.shutdown().await;
        }
    }

    /// Tells both balancers to stop, without waiting.
    pub(crate) fn signal_stop(&self) {
        for listener in &self.listeners {
            listener.server.shutdown_handle().shutdown();
        }
    }

    /// Resolves once no connection is open on either balancer.
    pub(crate) async fn wait_for_no_connections(&self) {
        for listener in &self.listeners {
            listener.server.wait_for_open_connections(0).await;
        }
    }

    /// Balancer connections open now.
    pub(crate) fn open_connections(&self) -> usize {
        self.listeners
            .iter()
            .map(|listener| listener.server.open_connections())
            .sum()
    }
}
