//! Runs the `read-write-concern` suite's `document` and `connection-string` folders.
//!
//! `document`: each case's `writeConcern` / `readConcern` (the specification's option names)
//! is read into `WriteConcern` / `ReadConcern` and validated; `valid` must match, and a valid
//! one must serialise as `writeConcernDocument` / `readConcernDocument` (what goes on the
//! wire), be the server default exactly when `isServerDefault`, and (write concerns) be
//! acknowledged exactly when `isAcknowledged`. `connection-string`: each URI goes through
//! `ClientOptions::parse` (which validates); `valid` must match, and the concerns it yields must
//! have the fields the case lists under `writeConcern` / `readConcern`.

use std::path::Path;

use bson::{Bson, Document};
use serde_json::Value;
use steadfast_core::options::{ClientOptions, ParsedUri, ReadConcern, WriteConcern};

use crate::harness::{self, Outcome, SuiteReport};

pub(crate) fn run(suites: &mut harness::Suites) {
    suites.run("read-write-concern", "document", |file, report| {
        run_cases(file, report, document_case);
    });
    suites.run("read-write-concern", "connection-string", |file, report| {
        run_cases(file, report, uri_case);
    });
}

fn run_cases(file: &Path, report: &mut SuiteReport, run_case: fn(&Value) -> Outcome) {
    let json = match harness::read_json(file) {
        Ok(json) => json,
        Err(why) => return report.record(file, "<file>", Outcome::Fail(why)),
    };
    let Some(cases) = json["tests"].as_array() else {
        return report.record(file, "<file>", Outcome::Fail("no `tests` array".into()));
    };
    for case in cases {
        let name = case["description"].as_str().unwrap_or("<unnamed>");
        report.record(file, name, run_case(case));
    }
}

/// A JSON value as BSON (integers as Int32 when they fit, else Int64), as the suites mean it.
fn bson(value: &Value) -> Result<Bson, String> {
    Ok(match value {
        Value::Null => Bson::Null,
        Value::Bool(b) => Bson::Boolean(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i32::try_from(i).map_or(Bson::Int64(i), Bson::Int32),
            (None, Some(f)) => Bson::Double(f),
            (None, None) => return Err(format!("number {n} is not representable")),
        },
        Value::String(s) => Bson::String(s.clone()),
        Value::Array(items) => Bson::Array(items.iter().map(bson).collect::<Result<_, _>>()?),
        Value::Object(map) => {
            let mut document = Document::new();
            for (key, item) in map {
                document.insert(key.clone(), bson(item)?);
            }
            Bson::Document(document)
        }
    })
}

fn document_case(case: &Value) -> Outcome {
    match check_document_case(case) {
        Ok(()) => Outcome::Pass,
        Err(why) => Outcome::Fail(why),
    }
}

fn check_document_case(case: &Value) -> Result<(), String> {
    let expect_valid = case["valid"].as_bool().unwrap_or(true);
    if case.get("writeConcern").is_some() {
        let parsed = parse_write_concern(&case["writeConcern"]);
        return match (parsed, expect_valid) {
            (Ok(concern), true) => check_write_document(case, &concern),
            (Err(_), false) => Ok(()),
            (Ok(concern), false) => Err(format!("field valid: {concern:?} must be rejected")),
            (Err(why), true) => Err(format!("field valid: rejected: {why}")),
        };
    }
    let concern = parse_read_concern(&case["readConcern"])?;
    let sent = match &concern {
        Some(concern) => bson::serialize_to_document(concern).map_err(|e| e.to_string())?,
        None => Document::new(),
    };
    compare("readConcernDocument", &sent, &case["readConcernDocument"])?;
    expect_flag(case, "isServerDefault", concern.is_none())
}

/// The specification's `writeConcern` object (`w`, `wtimeoutMS`, `journal`), validated.
fn parse_write_concern(spec: &Value) -> Result<WriteConcern, String> {
    let document = match bson(spec)? {
        Bson::Document(document) => document,
        other => return Err(format!("writeConcern is not a document: {other}")),
    };
    let concern: WriteConcern =
        bson::deserialize_from_document(document).map_err(|e| e.to_string())?;
    concern.validate().map_err(|e| e.to_string())?;
    Ok(concern)
}

/// The specification's `readConcern` object: `None` for `{}` (the server default).
fn parse_read_concern(spec: &Value) -> Result<Option<ReadConcern>, String> {
    let document = match bson(spec)? {
        Bson::Document(document) => document,
        other => return Err(format!("readConcern is not a document: {other}")),
    };
    if document.is_empty() {
        return Ok(None);
    }
    bson::deserialize_from_document(document)
        .map(Some)
        .map_err(|e| format!("readConcern: {e}"))
}

fn check_write_document(case: &Value, concern: &WriteConcern) -> Result<(), String> {
    let sent = bson::serialize_to_document(concern).map_err(|e| e.to_string())?;
    compare("writeConcernDocument", &sent, &case["writeConcernDocument"])?;
    expect_flag(case, "isServerDefault", concern.is_empty())?;
    expect_flag(case, "isAcknowledged", !concern.is_unacknowledged())
}

fn compare(field: &str, actual: &Document, expected: &Value) -> Result<(), String> {
    let expected = match bson(expected)? {
        Bson::Document(expected) => expected,
        other => return Err(format!("field {field}: not a document: {other}")),
    };
    // Numbers compare by value: the suites' integers may come back Int32 or Int64.
    let same = actual.len() == expected.len()
        && expected
            .iter()
            .all(|(key, want)| actual.get(key).is_some_and(|got| same_value(got, want)));
    if same {
        Ok(())
    } else {
        Err(format!("field {field}: expected {expected}, got {actual}"))
    }
}

fn same_value(actual: &Bson, expected: &Bson) -> bool {
    let number = |value: &Bson| match value {
        Bson::Int32(n) => Some(i64::from(*n)),
        Bson::Int64(n) => Some(*n),
        _ => None,
    };
    match (number(actual), number(expected)) {
        (Some(a), Some(e)) => a == e,
        _ => actual == expected,
    }
}

fn expect_flag(case: &Value, field: &str, actual: bool) -> Result<(), String> {
    match case[field].as_bool() {
        Some(want) if want != actual => {
            Err(format!("field {field}: expected {want}, got {actual}"))
        }
        _ => Ok(()),
    }
}

/// Connection-string cases the official suites contradict each other on, with the reason.
const CONTRADICTED: &[(&str, &str)] = &[(
    "wtimeoutMS as an invalid number",
    "uri-options' \"Too low wTimeoutMS causes a warning\" requires a negative wtimeoutMS to be \
     accepted with a warning, this case requires it to be rejected; steadfast follows \
     uri-options",
)];

fn uri_case(case: &Value) -> Outcome {
    let name = case["description"].as_str().unwrap_or_default();
    if let Some((_, reason)) = CONTRADICTED
        .iter()
        .find(|(description, _)| *description == name)
    {
        return Outcome::Skip((*reason).to_string());
    }
    match check_uri_case(case) {
        Ok(()) => Outcome::Pass,
        Err(why) => Outcome::Fail(why),
    }
}

fn check_uri_case(case: &Value) -> Result<(), String> {
    let uri = case["uri"].as_str().ok_or("field uri: missing")?;
    let expect_valid = case["valid"].as_bool().unwrap_or(true);
    let options = match (ClientOptions::parse(uri), expect_valid) {
        (Ok(ParsedUri::Complete { options, .. }), true) => options,
        (Ok(ParsedUri::NeedsSrv(_)), _) => return Err("the URI needs SRV resolution".into()),
        (Err(_), false) => return Ok(()),
        (Ok(_), false) => return Err("field valid: parsed, but must be rejected".into()),
        (Err(e), true) => return Err(format!("field valid: rejected: {e}")),
    };
    if let Some(expected) = case.get("writeConcern") {
        let expected = parse_write_concern(expected)?;
        if options.write_concern != expected {
            return Err(format!(
                "field writeConcern: expected {expected:?}, got {:?}",
                options.write_concern
            ));
        }
    }
    if let Some(expected) = case.get("readConcern") {
        let expected = parse_read_concern(expected)?;
        if options.read_concern != expected {
            return Err(format!(
                "field readConcern: expected {expected:?}, got {:?}",
                options.read_concern
            ));
        }
    }
    Ok(())
}
