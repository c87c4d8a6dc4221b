//! SRV polling (polling-srv-records-for-mongos-discovery.md): a task of the topology that
//! rescans the SRV records of a `mongodb+srv://` client while the topology is Sharded or
//! Unknown, and has the topology worker add and remove mongoses accordingly. The rules are
//! `steadfast_core::sdam`'s ([`verify_records`], `apply_srv_hosts`, [`rescan_interval`]).

use std::sync::Arc;
use std::time::Duration;

use steadfast_core::ServerAddress;
use steadfast_core::options::{ClientOptions, SrvHost};
use steadfast_core::sdam::{MIN_RESCAN_INTERVAL, polls_srv, rescan_interval, verify_records};
use tokio::sync::{mpsc, watch};

use super::SrvResolver;
use crate::sdam::worker::WorkerMessage;
use crate::sdam::{Snapshot, Topology};

/// What the poller needs to know.
#[derive(Clone, Debug)]
pub(crate) struct SrvPollSettings {
    /// The SRV host name (its domain checks the targets).
    srv_host: SrvHost,
    /// `_{srvServiceName}._tcp.{host}`.
    query_name: String,
    max_hosts: Option<u32>,
    /// The floor of the interval after a rescan that found hosts: [`MIN_RESCAN_INTERVAL`].
    /// Test hook: the driver's own tests lower it to rescan quickly; no option sets it.
    pub(crate) min_interval: Duration,
    /// The interval after a rescan that found none: heartbeatFrequencyMS.
    pub(crate) retry_interval: Duration,
}

impl SrvPollSettings {
    /// The settings of a `mongodb+srv://` client; `None` for any other client and in
    /// load-balanced mode, which never poll.
    pub(crate) fn from_options(options: &ClientOptions) -> Option<Self> {
        if options.load_balanced {
            return None;
        }
        let srv_host = options.srv_host.clone()?;
        let service = options
            .srv_service_name
            .as_deref()
            .unwrap_or(steadfast_core::options::srv::DEFAULT_SRV_SERVICE_NAME);
        Some(SrvPollSettings {
            query_name: srv_host.srv_query_name(service),
            srv_host,
            max_hosts: options.srv_max_hosts,
            min_interval: MIN_RESCAN_INTERVAL,
            retry_interval: options.heartbeat_frequency,
        })
    }
}

impl Topology {
    /// Starts rescanning SRV records through `resolver` as `settings` say, on the topology's
    /// task tracker: the task ends when the topology is neither Sharded nor Unknown any more,
    /// or is closed.
    pub(crate) fn start_srv_polling<R: SrvResolver + 'static>(
        &self,
        resolver: R,
        settings: SrvPollSettings,
    ) {
        let sender = self.inner.sender.clone();
        let snapshots = self.inner.snapshots.clone();
        self.inner
            .tracker
            .spawn(poll(resolver, settings, sender, snapshots));
    }
}

#[cfg(feature = "dns-resolver")]
/// Starts SRV polling for a `mongodb+srv://` client (nothing for other clients) through
/// `resolver`, the client's own name servers, or else the system resolver. Without a usable
/// system resolver configuration the client works on without polling, which is logged.
pub(crate) fn start(
    topology: &Topology,
    options: &ClientOptions,
    resolver: Option<super::HickoryResolver>,
) {
    let Some(settings) = SrvPollSettings::from_options(options) else {
        return;
    };
    let resolver = match resolver {
        Some(resolver) => Ok(resolver),
        None => super::HickoryResolver::from_system_config(),
    };
    match resolver {
        Ok(resolver) => topology.start_srv_polling(resolver, settings),
        Err(error) => tracing::warn!(target: "steadfast::topology", %error,
            "SRV records will not be polled: no DNS resolver"),
    }
}

/// Resolves once the topology is closed or of a type that does not poll (or the worker is
/// gone).
async fn stopped(snapshots: &mut watch::Receiver<Arc<Snapshot>>) {
    let _ = snapshots
        .wait_for(|snapshot| snapshot.closed || !polls_srv(snapshot.description.topology_type))
        .await;
}

/// The poller: waits the interval (from the end of the previous lookup, the first one from
/// the client's creation, just after the initial lookup), rescans, and hands verified hosts
/// to the worker.
async fn poll<R: SrvResolver>(
    resolver: R,
    settings: SrvPollSettings,
    sender: mpsc::UnboundedSender<WorkerMessage>,
    mut snapshots: watch::Receiver<Arc<Snapshot>>,
) {
    let mut interval = settings.min_interval;
    loop {
        tokio::select! {
            biased;
            () = stopped(&mut snapshots) => return,
            () = wait(interval) => {}
        }
        let answer = tokio::select! {
            biased;
            () = stopped(&mut snapshots) => return,
            answer = resolver.srv_answer(&settings.query_name) => answer,
        };
        let (hosts, lowest_ttl) = match answer {
            Ok(answer) => (
                verified_hosts(&settings, &answer.records),
                answer.lowest_ttl,
            ),
            Err(error) => {
                tracing::debug!(target: "steadfast::topology", name = %settings.query_name,
                    %error, "SRV rescan failed; the mongoses stay as they are");
                (Vec::new(), None)
            }
        };
        let found = !hosts.is_empty();
        if found
            && sender
                .send(WorkerMessage::SrvHosts(hosts, settings.max_hosts))
                .is_err()
        {
            return;
        }
        interval = rescan_interval(
            lowest_ttl,
            found,
            settings.min_interval,
            settings.retry_interval,
        );
    }
}

/// Waits `interval` (a TTL so long that the deadline cannot be represented: forever).
async fn wait(interval: Duration) {
    match crate::runtime::now().checked_add(interval) {
        Some(deadline) => crate::runtime::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The valid targets of a rescan, logging the ignored ones and an answer with none.
fn verified_hosts(
    settings: &SrvPollSettings,
    records: &[steadfast_core::options::SrvRecord],
) -> Vec<ServerAddress> {
    let verified = verify_records(&settings.srv_host, records);
    for reason in &verified.ignored {
        tracing::warn!(target: "steadfast::topology", name = %settings.query_name,
            %reason, "SRV record ignored");
    }
    if verified.hosts.is_empty() {
        tracing::debug!(target: "steadfast::topology", name = %settings.query_name,
            "SRV rescan found no valid record; the mongoses stay as they are");
    }
    verified.hosts
}
