//! Runs the `auth/legacy` connection-string suite against `ClientOptions::parse`: each case's
//! URI must parse (with its credential validated) exactly when `valid` says, and the parsed
//! credential must match the case's `credential` field by field (`null` meaning absent, or no
//! credential at all).

use std::path::Path;

use serde_json::Value;
use steadfast_core::options::{ClientOptions, Credential, ParsedUri};

use crate::harness::{self, Outcome, SuiteReport};

/// Cases not run, by description, each with the reason.
const SKIPPED: &[(&str, &str)] = &[
    (
        "should throw an exception if username and password provided (MONGODB-AWS)",
        "contradicts this file's own 'should use username and password if specified' and \
         'should use username, password and session token if specified' cases (the same URI \
         shape, valid there): steadfast accepts an access key pair in the URI, as the official \
         crate 3.x does, although auth.md's 2025-09-30 revision removed \
         it",
    ),
    (
        "should throw an exception if neither environment nor callbacks specified (MONGODB-OIDC)",
        "a callback can only be given in code, after the URI is parsed (as the official crate's \
         Credential::oidc_callback): parsing cannot know it will be missing, so the check is \
         made when the client is built",
    ),
];

pub(crate) fn run(suites: &mut harness::Suites) {
    suites.run("auth", "legacy", run_file);
}

fn run_file(file: &Path, report: &mut SuiteReport) {
    let json = match harness::read_json(file) {
        Ok(json) => json,
        Err(why) => return report.record(file, "<file>", Outcome::Fail(why)),
    };
    let Some(cases) = json["tests"].as_array() else {
        return report.record(file, "<file>", Outcome::Fail("no `tests` array".into()));
    };
    for case in cases {
        let name = case["description"].as_str().unwrap_or("<unnamed>");
        report.record(file, name, run_case(name, case));
    }
}

fn run_case(name: &str, case: &Value) -> Outcome {
    if let Some((_, reason)) = SKIPPED.iter().find(|(skipped, _)| *skipped == name) {
        return Outcome::Skip((*reason).to_owned());
    }
    let Some(uri) = case["uri"].as_str() else {
        return Outcome::Fail("field uri: missing".into());
    };
    let expect_valid = case["valid"].as_bool().unwrap_or(true);
    let options = match (ClientOptions::parse(uri), expect_valid) {
        (Ok(ParsedUri::Complete { options, .. }), true) => options,
        (Ok(ParsedUri::NeedsSrv(_)), _) => {
            return Outcome::Fail("field uri: an SRV URI needs a resolver".into());
        }
        (Err(_), false) => return Outcome::Pass,
        (Ok(_), false) => return Outcome::Fail("field valid: parsed, but must be rejected".into()),
        (Err(e), true) => return Outcome::Fail(format!("field valid: rejected: {e}")),
    };
    match check_credential(&case["credential"], options.credential.as_ref()) {
        Ok(()) => Outcome::Pass,
        Err(why) => Outcome::Fail(why),
    }
}

fn check_credential(expected: &Value, actual: Option<&Credential>) -> Result<(), String> {
    let (expected, actual) = match (expected.is_null(), actual) {
        (true, None) => return Ok(()),
        (true, Some(c)) => return Err(format!("field credential: expected none, got {c:?}")),
        (false, None) => return Err("field credential: expected one, got none".into()),
        (false, Some(actual)) => (expected, actual),
    };
    let mechanism = actual.mechanism.map(|m| m.as_str().to_owned());
    let source = Some(actual.resolved_source());
    for (field, got) in [
        ("username", actual.username.clone()),
        ("password", actual.password.clone()),
        ("source", source),
        ("mechanism", mechanism),
    ] {
        let want = expected[field].as_str().map(str::to_owned);
        if want != got {
            // Test data, never a real secret: the password may be shown.
            return Err(format!(
                "field credential.{field}: expected {want:?}, got {got:?}"
            ));
        }
    }
    let want: Vec<(String, String)> = expected["mechanism_properties"]
        .as_object()
        .map(|properties| {
            properties
                .iter()
                .map(|(k, v)| (k.to_ascii_uppercase(), v.as_str().unwrap_or("").to_owned()))
                .collect()
        })
        .unwrap_or_default();
    let mut want = want;
    want.sort();
    let got: Vec<(String, String)> = actual
        .mechanism_properties
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if want != got {
        return Err(format!(
            "field credential.mechanism_properties: expected {want:?}, got {got:?}"
        ));
    }
    Ok(())
}
