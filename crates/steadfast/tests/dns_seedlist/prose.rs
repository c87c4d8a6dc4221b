//! The README's prose tests 1 to 4, each case against a name server of its own that holds
//! the one SRV record the prose describes. Names under `localhost` never reach a name server
//! (resolvers answer them locally, RFC 6761), so the `mongodb+srv://localhost` cases run
//! against the driver's resolver seam in its unit tests (`sdam::srv::tests`).

use steadfast::options::ClientOptions;
use steadfast_core::options::OptionsError;

use crate::dns_server::DnsServer;
use crate::records::DnsRecord;

/// One prose case: the SRV host, the target its SRV record names, and whether the driver must
/// accept it.
struct ProseCase {
    test: &'static str,
    srv_host: &'static str,
    target: &'static str,
    accepted: bool,
}

const CASES: &[ProseCase] = &[
    ProseCase {
        test: "prose 1: allow SRVs with fewer than 3 '.' separated parts",
        srv_host: "mongo.local",
        target: "host1.mongo.local",
        accepted: true,
    },
    ProseCase {
        test: "prose 2: throw when return address does not end with SRV domain",
        srv_host: "mongo.local",
        target: "test_1.evil.local",
        accepted: false,
    },
    ProseCase {
        test: "prose 2: throw when return address does not end with SRV domain",
        srv_host: "blogs.mongodb.com",
        target: "blogs.evil.com",
        accepted: false,
    },
    ProseCase {
        test: "prose 3: throw when return address is identical to SRV hostname",
        srv_host: "mongo.local",
        target: "mongo.local",
        accepted: false,
    },
    ProseCase {
        test: "prose 4: throw when return address does not contain '.' separating shared part of domain",
        srv_host: "mongo.local",
        target: "test_1.my_hostmongo.local",
        accepted: false,
    },
    ProseCase {
        test: "prose 4: throw when return address does not contain '.' separating shared part of domain",
        srv_host: "blogs.mongodb.com",
        target: "cluster.testmongodb.com",
        accepted: false,
    },
];

/// The port every prose SRV record names.
const PORT: u16 = 27017;

/// Runs every case; returns each case's name and outcome.
pub(crate) async fn run() -> Vec<(String, Result<(), String>)> {
    let mut outcomes = Vec::new();
    for case in CASES {
        let name = format!("{} ({} -> {})", case.test, case.srv_host, case.target);
        outcomes.push((name, run_case(case).await));
    }
    outcomes
}

async fn run_case(case: &ProseCase) -> Result<(), String> {
    let record = DnsRecord::Srv {
        name: format!("_mongodb._tcp.{}", case.srv_host),
        port: PORT,
        target: case.target.to_string(),
    };
    let server = DnsServer::start(&[record]).await?;
    let outcome = ClientOptions::parse(format!("mongodb+srv://{}/", case.srv_host))
        .resolver_config(server.resolver_config())
        .await;
    server.stop().await;
    let expected_host = format!("{}:{PORT}", case.target);
    match (case.accepted, outcome) {
        (true, Ok(options)) => {
            let hosts: Vec<String> = options.hosts.iter().map(ToString::to_string).collect();
            if hosts == [expected_host.clone()] {
                Ok(())
            } else {
                Err(format!(
                    "expected the seed list [{expected_host}], got {hosts:?}"
                ))
            }
        }
        (true, Err(error)) => Err(format!("expected the SRV record to be accepted: {error}")),
        (false, Ok(options)) => Err(format!(
            "expected an error, but the seed list is {:?}",
            options.hosts
        )),
        // The error must be the target's rejection, not a failed lookup.
        (false, Err(error)) if rejected_target(&error) == Some(case.target) => Ok(()),
        (false, Err(error)) => Err(format!(
            "expected the target {} to be rejected, got another error: {error}",
            case.target
        )),
    }
}

/// The SRV target whose domain the driver refused, found in the error's source chain.
fn rejected_target(error: &steadfast::Error) -> Option<&str> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(OptionsError::SrvTargetOutsideDomain { target, .. }) =
            current.downcast_ref::<OptionsError>()
        {
            return Some(target);
        }
        source = current.source();
    }
    None
}
