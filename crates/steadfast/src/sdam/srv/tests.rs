use std::sync::Mutex;

use steadfast_core::ServerAddress;
use steadfast_core::options::{ClientOptions, ParsedUri};

use super::*;
use crate::error::ErrorKind;

/// Canned DNS answers, recording the names asked for.
#[derive(Default)]
struct CannedDns {
    srv: Vec<SrvRecord>,
    txt: Vec<Vec<String>>,
    srv_failure: Option<String>,
    asked: Mutex<Vec<String>>,
}

impl SrvResolver for CannedDns {
    async fn srv_records(&self, name: &str) -> Result<Vec<SrvRecord>> {
        self.asked.lock().unwrap().push(format!("SRV {name}"));
        match &self.srv_failure {
            Some(why) => Err(Error::dns(why.clone())),
            None => Ok(self.srv.clone()),
        }
    }

    async fn txt_records(&self, name: &str) -> Result<Vec<Vec<String>>> {
        self.asked.lock().unwrap().push(format!("TXT {name}"));
        Ok(self.txt.clone())
    }
}

fn record(target: &str, port: u16) -> SrvRecord {
    SrvRecord {
        target: target.to_string(),
        port,
    }
}

fn srv_string(uri: &str) -> ConnectionString {
    match ClientOptions::parse(uri).expect("valid connection string") {
        ParsedUri::NeedsSrv(connection_string) => connection_string,
        ParsedUri::Complete { .. } => panic!("{uri} is not an SRV string"),
    }
}

#[tokio::test]
async fn queries_srv_and_txt_then_applies_the_rules() {
    let dns = CannedDns {
        srv: vec![
            record("a.example.com.", 27017),
            record("b.example.com", 27018),
        ],
        txt: vec![vec!["replicaSet=rs0&auth".into(), "Source=admin".into()]],
        ..CannedDns::default()
    };
    let resolution = resolve(&srv_string("mongodb+srv://cluster.example.com/"), &dns)
        .await
        .expect("resolves");
    let options = resolution.options;
    assert_eq!(
        options.hosts,
        vec![
            ServerAddress::tcp("a.example.com", 27017),
            ServerAddress::tcp("b.example.com", 27018)
        ]
    );
    assert_eq!(options.replica_set.as_deref(), Some("rs0"));
    assert!(options.tls.enabled, "mongodb+srv turns TLS on");
    let mut asked = dns.asked.lock().unwrap().clone();
    asked.sort();
    assert_eq!(
        asked,
        vec![
            "SRV _mongodb._tcp.cluster.example.com".to_string(),
            "TXT cluster.example.com".to_string()
        ]
    );
}

#[tokio::test]
async fn custom_service_name_is_queried() {
    let dns = CannedDns {
        srv: vec![record("a.example.com", 27017)],
        ..CannedDns::default()
    };
    resolve(
        &srv_string("mongodb+srv://cluster.example.com/?srvServiceName=custom"),
        &dns,
    )
    .await
    .expect("resolves");
    assert!(
        dns.asked
            .lock()
            .unwrap()
            .contains(&"SRV _custom._tcp.cluster.example.com".to_string())
    );
}

#[tokio::test]
async fn target_outside_the_domain_is_refused() {
    let dns = CannedDns {
        srv: vec![
            record("a.example.com", 27017),
            record("evil.example.org", 1),
        ],
        ..CannedDns::default()
    };
    let error = resolve(&srv_string("mongodb+srv://cluster.example.com/"), &dns)
        .await
        .expect_err("a foreign target must be refused");
    assert!(matches!(error.kind(), ErrorKind::DnsResolve { .. }));
    assert!(error.to_string().contains("evil.example.org"), "{error}");
}

#[tokio::test]
async fn no_records_and_dns_failures_are_errors() {
    let empty = CannedDns::default();
    let error = resolve(&srv_string("mongodb+srv://cluster.example.com/"), &empty)
        .await
        .expect_err("no SRV records");
    assert!(error.to_string().contains("cluster.example.com"), "{error}");

    let failing = CannedDns {
        srv_failure: Some("SERVFAIL from the resolver".into()),
        ..CannedDns::default()
    };
    let error = resolve(&srv_string("mongodb+srv://cluster.example.com/"), &failing)
        .await
        .expect_err("DNS failure");
    assert!(error.to_string().contains("SERVFAIL"), "{error}");
}

#[tokio::test]
async fn forbidden_txt_option_is_an_error() {
    let dns = CannedDns {
        srv: vec![record("a.example.com", 27017)],
        txt: vec![vec!["tls=false".into()]],
        ..CannedDns::default()
    };
    let error = resolve(&srv_string("mongodb+srv://cluster.example.com/"), &dns)
        .await
        .expect_err("TXT cannot set tls");
    assert!(error.to_string().to_lowercase().contains("tls"), "{error}");
}

#[tokio::test]
async fn srv_max_hosts_keeps_that_many_targets() {
    let dns = CannedDns {
        srv: (1..=5)
            .map(|i| record(&format!("h{i}.example.com"), 27017))
            .collect(),
        ..CannedDns::default()
    };
    let resolution = resolve(
        &srv_string("mongodb+srv://cluster.example.com/?srvMaxHosts=2"),
        &dns,
    )
    .await
    .expect("resolves");
    assert_eq!(resolution.options.hosts.len(), 2);
    let all: Vec<_> = dns
        .srv
        .iter()
        .map(|r| ServerAddress::tcp(&r.target, r.port))
        .collect();
    assert!(resolution.options.hosts.iter().all(|h| all.contains(h)));
}

#[tokio::test]
async fn a_plain_connection_string_is_refused() {
    let plain = steadfast_core::ConnectionString::parse("mongodb://localhost/").unwrap();
    let error = resolve(&plain, &CannedDns::default())
        .await
        .expect_err("not SRV");
    assert!(error.to_string().contains("mongodb+srv"), "{error}");
}

#[tokio::test]
async fn options_from_uri_resolves_only_srv_strings() {
    let dns = CannedDns {
        srv: vec![record("a.example.com", 27017)],
        ..CannedDns::default()
    };
    let (options, _) = options_from_uri("mongodb://h1:1,h2:2/?replicaSet=rs", &dns)
        .await
        .expect("plain string");
    assert_eq!(options.hosts.len(), 2);
    assert!(
        dns.asked.lock().unwrap().is_empty(),
        "no DNS for mongodb://"
    );

    let (options, _) = options_from_uri("mongodb+srv://cluster.example.com/", &dns)
        .await
        .expect("SRV string");
    assert_eq!(
        options.hosts,
        vec![ServerAddress::tcp("a.example.com", 27017)]
    );
    assert!(options.srv_host.is_some());

    let error = options_from_uri("mongodb://h1:99999/", &dns)
        .await
        .expect_err("bad port");
    assert!(
        matches!(error.kind(), ErrorKind::InvalidArgument { .. }),
        "{error}"
    );
}

/// The README's prose tests for `mongodb+srv://localhost`, whose SRV records no resolver asks a
/// name server for (RFC 6761): run here against canned answers. The `mongo.local` and
/// `blogs.mongodb.com` cases run against a local name server in the `dns_seedlist` test.
async fn resolve_localhost_to(target: &str) -> Result<SrvResolution> {
    let dns = CannedDns {
        srv: vec![record(target, 27017)],
        ..CannedDns::default()
    };
    resolve(&srv_string("mongodb+srv://localhost"), &dns).await
}

/// The target the error says lies outside the SRV domain.
fn rejected_target(error: &Error) -> Option<String> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(steadfast_core::options::OptionsError::SrvTargetOutsideDomain {
            target, ..
        }) = current.downcast_ref()
        {
            return Some(target.clone());
        }
        source = current.source();
    }
    None
}

#[tokio::test]
async fn prose_1_srv_names_with_fewer_than_three_parts_are_allowed() {
    let resolution = resolve_localhost_to("test.localhost")
        .await
        .expect("one-part SRV names are valid");
    assert_eq!(
        resolution.options.hosts,
        vec![ServerAddress::tcp("test.localhost", 27017)]
    );
}

#[tokio::test]
async fn prose_2_a_target_outside_the_srv_domain_is_refused() {
    let error = resolve_localhost_to("localhost.mongodb")
        .await
        .expect_err("localhost.mongodb is not under localhost");
    assert_eq!(
        rejected_target(&error).as_deref(),
        Some("localhost.mongodb")
    );
}

#[tokio::test]
async fn prose_3_a_target_identical_to_a_short_srv_name_is_refused() {
    let error = resolve_localhost_to("localhost")
        .await
        .expect_err("the target must be one level deeper");
    assert_eq!(rejected_target(&error).as_deref(), Some("localhost"));
}

#[tokio::test]
async fn prose_4_a_target_without_the_separating_dot_is_refused() {
    let error = resolve_localhost_to("test_1.cluster_1localhost")
        .await
        .expect_err("cluster_1localhost does not end with .localhost");
    assert_eq!(
        rejected_target(&error).as_deref(),
        Some("test_1.cluster_1localhost")
    );
}
