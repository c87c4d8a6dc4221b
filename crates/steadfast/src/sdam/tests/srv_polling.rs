//! SRV polling (the polling specification's test plan) with DNS answers the test scripts: every
//! lookup is signalled on a channel the test awaits. The mongoses are names that do not
//! resolve, so the topology stays Unknown (which polls) while monitors fail fast.

use std::collections::{BTreeSet, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use steadfast_core::ServerAddress;
use steadfast_core::options::{ClientOptions, ParsedUri, SrvHost, SrvRecord};
use steadfast_core::sdam::SdamEvent;
use steadfast_core::{TopologyDescription, TopologyType};
use tokio::sync::mpsc;

use super::{Harness, PATIENCE, replica_set};
use crate::error::{Error, Result};
use crate::sdam::srv::poll::SrvPollSettings;
use crate::sdam::srv::{SrvAnswer, SrvResolver};

const HOST: &str = "localhost.test.build.10gen.cc";

/// One scripted SRV answer.
enum Reply {
    Ports(Vec<u16>),
    Outside,
    Failure,
}

/// Answers SRV lookups from a script (then never again) and signals each lookup.
struct ScriptedDns {
    replies: Mutex<VecDeque<Reply>>,
    lookups: mpsc::UnboundedSender<String>,
}

impl SrvResolver for ScriptedDns {
    async fn srv_records(&self, name: &str) -> Result<Vec<SrvRecord>> {
        Ok(self.srv_answer(name).await?.records)
    }

    async fn txt_records(&self, _name: &str) -> Result<Vec<Vec<String>>> {
        Ok(Vec::new())
    }

    async fn srv_answer(&self, name: &str) -> Result<SrvAnswer> {
        let _ = self.lookups.send(name.to_owned());
        let next = self.replies.lock().unwrap().pop_front();
        let records = match next {
            None => std::future::pending().await,
            Some(Reply::Failure) => return Err(Error::dns("scripted DNS failure")),
            Some(Reply::Outside) => vec![SrvRecord {
                target: "mongos.evil.example.com".into(),
                port: 27017,
            }],
            Some(Reply::Ports(ports)) => ports
                .into_iter()
                .map(|port| SrvRecord {
                    target: format!("{HOST}."),
                    port,
                })
                .collect(),
        };
        Ok(SrvAnswer {
            records,
            lowest_ttl: None,
        })
    }
}

fn parse(uri: &str) -> ClientOptions {
    match ClientOptions::parse(uri).expect("valid connection string") {
        ParsedUri::Complete { options, .. } => options,
        ParsedUri::NeedsSrv(_) => panic!("tests build mongodb:// options"),
    }
}

/// The options a `mongodb+srv://test1.test.build.10gen.cc` client would have after its initial
/// lookup found `ports`.
fn srv_options(ports: &[u16], max_hosts: Option<u32>) -> ClientOptions {
    let hosts: Vec<String> = ports.iter().map(|port| format!("{HOST}:{port}")).collect();
    let mut options = parse(&format!(
        "mongodb://{}/?heartbeatFrequencyMS=500",
        hosts.join(",")
    ));
    options.srv_host = Some(SrvHost::parse("test1.test.build.10gen.cc").unwrap());
    options.srv_max_hosts = max_hosts;
    options
}

/// Opens the topology and starts polling with rescans back to back (the test hook).
fn start(
    options: &ClientOptions,
    replies: Vec<Reply>,
) -> (Harness, mpsc::UnboundedReceiver<String>) {
    let harness = Harness::open_with(options);
    let (lookups, signals) = mpsc::unbounded_channel();
    let dns = ScriptedDns {
        replies: Mutex::new(replies.into()),
        lookups,
    };
    let mut settings = SrvPollSettings::from_options(options).expect("an SRV client polls");
    settings.min_interval = Duration::from_millis(1);
    settings.retry_interval = Duration::from_millis(1);
    harness.topology.start_srv_polling(dns, settings);
    (harness, signals)
}

fn ports(topology: &TopologyDescription) -> Vec<u16> {
    topology
        .servers
        .keys()
        .filter_map(ServerAddress::port)
        .collect()
}

/// Waits until the topology's mongoses are exactly `expected`.
async fn mongoses(harness: &Harness, expected: &[u16]) {
    harness
        .topology_where(0, &format!("mongoses {expected:?}"), |t| {
            ports(t) == expected
        })
        .await;
}

async fn next_lookup(signals: &mut mpsc::UnboundedReceiver<String>) -> String {
    tokio::time::timeout(PATIENCE, signals.recv())
        .await
        .expect("a lookup")
        .expect("the poller is running")
}

#[tokio::test]
async fn a_new_record_adds_a_mongos_with_its_own_monitor() {
    let (harness, mut signals) = start(
        &srv_options(&[27017, 27018], None),
        vec![Reply::Ports(vec![27017, 27018, 27019])],
    );
    assert_eq!(
        next_lookup(&mut signals).await,
        "_mongodb._tcp.test1.test.build.10gen.cc"
    );
    mongoses(&harness, &[27017, 27018, 27019]).await;
    let added = ServerAddress::tcp(HOST, 27019);
    harness
        .sdam(
            0,
            "the added mongos is monitored",
            |e| matches!(e, SdamEvent::ServerHeartbeatStarted { address, .. } if *address == added),
        )
        .await;
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn a_record_no_longer_listed_removes_its_mongos() {
    let (harness, _signals) = start(
        &srv_options(&[27017, 27018], None),
        vec![Reply::Ports(vec![27018])],
    );
    mongoses(&harness, &[27018]).await;
    let removed = ServerAddress::tcp(HOST, 27017);
    harness
        .sdam(
            0,
            "the removed mongos is closed",
            |e| matches!(e, SdamEvent::ServerClosed { address } if *address == removed),
        )
        .await;
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn replaced_records_replace_the_mongoses() {
    for (answer, expected) in [
        (vec![27018, 27019], vec![27018, 27019]),
        (vec![27019], vec![27019]),
        (vec![27019, 27020], vec![27019, 27020]),
    ] {
        let (harness, _signals) = start(
            &srv_options(&[27017, 27018], None),
            vec![Reply::Ports(answer)],
        );
        mongoses(&harness, &expected).await;
        harness.topology.shutdown().await;
    }
}

#[tokio::test]
async fn failed_empty_or_foreign_answers_leave_the_mongoses_alone() {
    let replies = vec![
        Reply::Failure,
        Reply::Ports(Vec::new()),
        Reply::Outside,
        Reply::Ports(vec![27017, 27019]),
    ];
    let (harness, mut signals) = start(&srv_options(&[27017, 27018], None), replies);
    for _ in 0..4 {
        next_lookup(&mut signals).await;
    }
    mongoses(&harness, &[27017, 27019]).await;
    let sets: BTreeSet<Vec<u16>> = harness
        .sdam_events()
        .iter()
        .filter_map(|event| match event {
            SdamEvent::TopologyDescriptionChanged { new, .. } if !new.servers.is_empty() => {
                Some(ports(new))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        sets,
        BTreeSet::from([vec![27017, 27018], vec![27017, 27019]]),
        "only the valid answer changed the mongoses"
    );
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn srv_max_hosts_caps_what_a_rescan_adds() {
    for (max, expected_count) in [(Some(0), 3), (Some(4), 3), (Some(2), 2)] {
        let (harness, _signals) = start(
            &srv_options(&[27017, 27018], max),
            vec![Reply::Ports(vec![27017, 27019, 27020])],
        );
        harness
            .topology_where(0, "the rescan applied", |t| {
                !t.servers.contains_key(&ServerAddress::tcp(HOST, 27018))
            })
            .await;
        let now = ports(&harness.topology.snapshot());
        assert_eq!(now.len(), expected_count, "srvMaxHosts {max:?}: {now:?}");
        assert!(now.contains(&27017), "a listed mongos stays");
        harness.topology.shutdown().await;
    }
}

#[tokio::test]
async fn polling_stops_once_the_topology_is_not_sharded() {
    let deployment = replica_set(1).await;
    let host = deployment.host(0).expect("a member");
    let mut options = parse(&format!("mongodb://{host}/?heartbeatFrequencyMS=500"));
    options.srv_host = Some(SrvHost::parse("test1.test.build.10gen.cc").unwrap());
    let (harness, mut signals) = start(&options, Vec::new());
    harness
        .topology_where(0, "a replica set", |t| {
            t.topology_type == TopologyType::ReplicaSetWithPrimary
        })
        .await;
    // The poller drops the resolver (and with it the lookup channel) when it ends.
    let ended =
        tokio::time::timeout(PATIENCE, async { while signals.recv().await.is_some() {} }).await;
    assert!(ended.is_ok(), "the poller ended");
    harness.topology.shutdown().await;
}

#[tokio::test]
async fn shutdown_ends_the_poller() {
    let (harness, mut signals) = start(&srv_options(&[27017], None), Vec::new());
    next_lookup(&mut signals).await;
    harness.topology.shutdown().await;
    assert_eq!(harness.topology.live_tasks(), 0, "no task left");
    let next = tokio::time::timeout(PATIENCE, signals.recv()).await;
    assert!(matches!(next, Ok(None)), "the resolver was dropped");
}

#[test]
fn only_srv_clients_outside_load_balanced_mode_poll() {
    assert!(SrvPollSettings::from_options(&parse("mongodb://a.example.com/")).is_none());
    let mut balanced = srv_options(&[27017], None);
    balanced.load_balanced = true;
    assert!(SrvPollSettings::from_options(&balanced).is_none());
    let settings = SrvPollSettings::from_options(&srv_options(&[27017], None)).unwrap();
    assert_eq!(settings.min_interval, Duration::from_secs(60));
    assert_eq!(settings.retry_interval, Duration::from_millis(500));
}
