//! The Initial DNS Seedlist Discovery suite (`initial-dns-seedlist-discovery/{replica-set,
//! load-balanced,sharded}`) and its README's prose tests, with no real name server involved:
//!
//! - the SRV, TXT and A records are read from the suite's README at run time and served by an
//!   authoritative name server on 127.0.0.1 (UDP and TCP, an ephemeral port) that this test
//!   starts; the driver asks it through [`ResolverConfig`](steadfast::options::ResolverConfig),
//!   for the SRV and TXT records and for the servers' addresses alike;
//! - each folder runs against the blackpipe deployment the README's "Test Setup" describes,
//!   on the ports it names, with TLS (certificates from a throwaway CA the client trusts).
//!
//! The files run one at a time (the ports are fixed). The runner prints one `spec-suite` line
//! per folder and fails when a folder has no file or a case fails; without the spec test
//! folder it prints skip lines and passes.
#![allow(
    clippy::disallowed_methods,
    reason = "tests drive the clock, tasks and randomness themselves"
)]

mod case;
mod deployments;
mod dns_server;
mod prose;
mod records;

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use blackpipe::server::ServerTls;
use steadfast_test_support::pki::TestPki;
use steadfast_test_support::spec_tests::{self, SpecTests};

use case::{DnsCase, Environment};
use deployments::Setup;
use dns_server::DnsServer;
use records::DnsRecord;

const SPEC: &str = "initial-dns-seedlist-discovery";

/// The one table of skipped files (`folder/file`), with the reason for each.
const SKIPS: &[(&str, &str)] = &[];

/// Bounds one case, so that a hang fails it instead of the run.
const CASE_TIMEOUT: Duration = Duration::from_secs(60);

/// Passed, failed and skipped files of one folder (each file is one test on one topology).
#[derive(Default)]
struct Tally {
    passed: usize,
    failed: usize,
    skipped: usize,
}

impl Tally {
    fn line(&self, suite: &str) -> String {
        let (p, f, s) = (self.passed, self.failed, self.skipped);
        format!(
            "spec-suite {suite}: {p} passed, {f} failed, {s} skipped (tests: {p} passed, {f} failed, {s} skipped)"
        )
    }
}

fn main() -> ExitCode {
    let Some(spec) = SpecTests::from_env() else {
        for setup in Setup::ALL {
            println!("{}", spec_tests::skip_line(&suite(setup)));
        }
        return ExitCode::SUCCESS;
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("{SPEC}: cannot start a runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&spec)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("{SPEC}: {error}");
            ExitCode::FAILURE
        }
    }
}

fn suite(setup: Setup) -> String {
    format!("{SPEC}/{}", setup.folder())
}

/// Runs every folder, then the prose tests; `Ok(true)` when all passed.
async fn run(spec: &SpecTests) -> Result<bool, String> {
    let readme_path = spec.suite_dir(SPEC).join("README.md");
    let readme = std::fs::read_to_string(&readme_path)
        .map_err(|e| format!("cannot read {}: {e}", readme_path.display()))?;
    let records = records::parse_readme(&readme)?;
    let pki = TestPki::new();
    let tls = server_tls(&pki, &records)?;
    let dns = DnsServer::start(&records).await?;
    let resolver = dns.resolver_config();
    let environment = Environment {
        resolver: &resolver,
        ca_file: pki.ca_file(),
    };
    let mut all_passed = true;
    for setup in Setup::ALL {
        all_passed &= run_folder(spec, setup, tls.clone(), &environment).await?;
    }
    dns.stop().await;
    all_passed &= run_prose().await;
    Ok(all_passed)
}

/// The deployment's certificate: valid for every name the README points at 127.0.0.1, and for
/// `localhost`, the name the members report.
fn server_tls(pki: &TestPki, records: &[DnsRecord]) -> Result<ServerTls, String> {
    let mut names: Vec<&str> = records
        .iter()
        .filter_map(|record| match record {
            DnsRecord::A { name, address } if address.is_loopback() => Some(name.as_str()),
            _ => None,
        })
        .collect();
    names.push("localhost");
    ServerTls::new(&pki.server_for(&names).pem).map_err(|e| format!("server TLS: {e}"))
}

/// Runs one folder against its deployment; prints its line and whether every case passed.
async fn run_folder(
    spec: &SpecTests,
    setup: Setup,
    tls: ServerTls,
    environment: &Environment<'_>,
) -> Result<bool, String> {
    let suite = suite(setup);
    let dir = spec.suite_dir(&suite);
    let files = spec_tests::json_files(&dir)
        .map_err(|e| format!("spec-suite {suite}: cannot read {}: {e}", dir.display()))?;
    if files.is_empty() {
        return Err(format!(
            "spec-suite {suite}: no test files found in {}",
            dir.display()
        ));
    }
    let deployment = setup.start(tls).await?;
    let mut tally = Tally::default();
    for file in &files {
        let name = file_name(file);
        let key = format!("{}/{name}", setup.folder());
        if let Some((_, reason)) = SKIPS.iter().find(|(skipped, _)| *skipped == key) {
            println!("  skip {key}: {reason}");
            tally.skipped += 1;
            continue;
        }
        match run_file(file, environment).await {
            Ok(()) => tally.passed += 1,
            Err(error) => {
                println!("  FAIL {key}: {error}");
                tally.failed += 1;
            }
        }
    }
    deployment.stop().await;
    drop(deployment);
    println!("{}", tally.line(&suite));
    Ok(tally.failed == 0)
}

async fn run_file(file: &Path, environment: &Environment<'_>) -> Result<(), String> {
    let case = DnsCase::read(file)?;
    tokio::time::timeout(CASE_TIMEOUT, case.run(environment))
        .await
        .map_err(|_| format!("did not finish within {} s", CASE_TIMEOUT.as_secs()))?
}

fn file_name(file: &Path) -> String {
    file.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

/// The README's prose tests; prints one line per case and a summary.
async fn run_prose() -> bool {
    let outcomes = prose::run().await;
    let failed = outcomes
        .iter()
        .filter(|(_, outcome)| outcome.is_err())
        .count();
    for (name, outcome) in &outcomes {
        match outcome {
            Ok(()) => println!("  ok {name}"),
            Err(error) => println!("  FAIL {name}: {error}"),
        }
    }
    println!(
        "prose {SPEC}: {} passed, {failed} failed",
        outcomes.len() - failed
    );
    failed == 0
}
