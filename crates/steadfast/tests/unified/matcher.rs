//! The unified format's matching rules ("Evaluating Matches"): root documents may carry extra
//! fields, nested ones may not; numbers compare by value across int32/int64/double; arrays
//! must have the same length; key order is irrelevant; and the `$$` special operators.

use std::fmt;

use bson::spec::ElementType;
use bson::{Bson, Document};

use crate::ejson;

/// Values the special operators look up in the test's entity map.
pub(crate) trait EntityValues {
    /// The logical session id of session entity `id`.
    fn session_lsid(&self, id: &str) -> Option<Document>;
    /// The value of BSON entity `id` (a result saved with `saveResultAsEntity`).
    fn bson_entity(&self, id: &str) -> Option<Bson>;
}

/// An entity map with nothing in it (outcome checks, self-tests).
pub(crate) struct NoEntities;

impl EntityValues for NoEntities {
    fn session_lsid(&self, _id: &str) -> Option<Document> {
        None
    }
    fn bson_entity(&self, _id: &str) -> Option<Bson> {
        None
    }
}

/// Where and why an actual value did not match.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mismatch {
    /// The dotted path of the field that differed (`$` is the value itself).
    pub(crate) path: String,
    /// What differed.
    pub(crate) message: String,
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "field `{}`: {}", self.path, self.message)
    }
}

type MatchResult = Result<(), Mismatch>;

/// Matches `actual` against `expected` as a root-level value (extra fields allowed in the
/// top-level document only).
pub(crate) fn match_root(
    expected: &Bson,
    actual: Option<&Bson>,
    entities: &dyn EntityValues,
) -> MatchResult {
    Matcher { entities }.value(expected, actual, true, "$")
}

/// Matches a nested value: no extra fields at any level.
pub(crate) fn match_nested(
    expected: &Bson,
    actual: Option<&Bson>,
    entities: &dyn EntityValues,
) -> MatchResult {
    Matcher { entities }.value(expected, actual, false, "$")
}

/// Matches an iterated result (find, aggregate, listX) against an expected array: same length,
/// each element a root-level document.
pub(crate) fn match_root_array(
    expected: &Bson,
    actual: &[Bson],
    entities: &dyn EntityValues,
) -> MatchResult {
    let matcher = Matcher { entities };
    if let Some((name, argument)) = special_operator(expected) {
        let actual = Bson::Array(actual.to_vec());
        return matcher.operator(name, argument, Some(&actual), true, "$");
    }
    let Bson::Array(expected) = expected else {
        return Err(mismatch(
            "$",
            format!("expected {expected}, but the operation returned a list"),
        ));
    };
    if expected.len() != actual.len() {
        return Err(mismatch(
            "$",
            format!(
                "expected {} items, got {}: {}",
                expected.len(),
                actual.len(),
                Bson::Array(actual.to_vec())
            ),
        ));
    }
    for (index, (expected, actual)) in expected.iter().zip(actual).enumerate() {
        matcher.value(expected, Some(actual), true, &format!("$.{index}"))?;
    }
    Ok(())
}

/// Whether two values are equal with flexible numerics and key order ignored (no extra fields
/// anywhere): how test outcomes compare collection contents.
pub(crate) fn exactly_equal(expected: &Bson, actual: &Bson) -> MatchResult {
    exact("$", expected, actual)
}

fn exact(path: &str, expected: &Bson, actual: &Bson) -> MatchResult {
    match (expected, actual) {
        (Bson::Document(e), Bson::Document(a)) => {
            if let Some(extra) = a.keys().find(|k| !e.contains_key(k.as_str())) {
                return Err(mismatch(&join(path, extra), "unexpected field"));
            }
            for (key, value) in e {
                let inner = join(path, key);
                match a.get(key) {
                    Some(found) => exact(&inner, value, found)?,
                    None => return Err(mismatch(&inner, format!("missing (expected {value})"))),
                }
            }
            Ok(())
        }
        (Bson::Array(e), Bson::Array(a)) => {
            if e.len() != a.len() {
                return Err(mismatch(
                    path,
                    format!("expected {} items, got {}", e.len(), a.len()),
                ));
            }
            for (index, (e, a)) in e.iter().zip(a).enumerate() {
                exact(&join(path, &index.to_string()), e, a)?;
            }
            Ok(())
        }
        _ => scalar(path, expected, actual),
    }
}

struct Matcher<'a> {
    entities: &'a dyn EntityValues,
}

impl Matcher<'_> {
    fn value(&self, expected: &Bson, actual: Option<&Bson>, root: bool, path: &str) -> MatchResult {
        if let Some((name, argument)) = special_operator(expected) {
            return self.operator(name, argument, actual, root, path);
        }
        let Some(actual) = actual else {
            return Err(mismatch(path, format!("missing (expected {expected})")));
        };
        match expected {
            Bson::Document(expected) => {
                let Bson::Document(actual) = actual else {
                    return Err(mismatch(
                        path,
                        format!("expected a document {expected}, got {actual}"),
                    ));
                };
                for (key, value) in expected {
                    self.value(value, actual.get(key), false, &join(path, key))?;
                }
                if !root {
                    if let Some(extra) = actual.keys().find(|k| !expected.contains_key(k.as_str()))
                    {
                        return Err(mismatch(
                            &join(path, extra),
                            "unexpected field in a nested document",
                        ));
                    }
                }
                Ok(())
            }
            Bson::Array(expected) => {
                let Bson::Array(actual) = actual else {
                    return Err(mismatch(path, format!("expected an array, got {actual}")));
                };
                if expected.len() != actual.len() {
                    return Err(mismatch(
                        path,
                        format!(
                            "expected {} items, got {}: {}",
                            expected.len(),
                            actual.len(),
                            Bson::Array(actual.clone())
                        ),
                    ));
                }
                for (index, (e, a)) in expected.iter().zip(actual).enumerate() {
                    self.value(e, Some(a), false, &join(path, &index.to_string()))?;
                }
                Ok(())
            }
            _ => scalar(path, expected, actual),
        }
    }

    fn operator(
        &self,
        name: &str,
        argument: &Bson,
        actual: Option<&Bson>,
        root: bool,
        path: &str,
    ) -> MatchResult {
        match name {
            "$$exists" => {
                let Bson::Boolean(should_exist) = argument else {
                    return Err(mismatch(path, "$$exists takes a boolean"));
                };
                match (should_exist, actual) {
                    (true, None) => Err(mismatch(path, "expected to exist, but is absent")),
                    (false, Some(value)) => Err(mismatch(
                        path,
                        format!("expected to be absent, got {value}"),
                    )),
                    _ => Ok(()),
                }
            }
            "$$type" => {
                let Some(actual) = actual else {
                    return Err(mismatch(
                        path,
                        format!("missing (expected type {argument})"),
                    ));
                };
                let names: Vec<&str> = match argument {
                    Bson::String(name) => vec![name.as_str()],
                    Bson::Array(names) => names.iter().filter_map(Bson::as_str).collect(),
                    _ => return Err(mismatch(path, "$$type takes a string or strings")),
                };
                let actual_type = type_name(actual.element_type());
                let number = matches!(actual_type, "int" | "long" | "double" | "decimal");
                if names
                    .iter()
                    .any(|n| *n == actual_type || (*n == "number" && number))
                {
                    Ok(())
                } else {
                    Err(mismatch(
                        path,
                        format!("expected type {argument}, got {actual_type} ({actual})"),
                    ))
                }
            }
            "$$unsetOrMatches" => match actual {
                None => Ok(()),
                Some(_) => self.value(argument, actual, root, path),
            },
            "$$sessionLsid" => {
                let Some(id) = argument.as_str() else {
                    return Err(mismatch(path, "$$sessionLsid takes an entity name"));
                };
                let Some(lsid) = self.entities.session_lsid(id) else {
                    return Err(mismatch(path, format!("no session entity named {id:?}")));
                };
                self.value(&Bson::Document(lsid), actual, false, path)
            }
            "$$matchesEntity" => {
                let Some(id) = argument.as_str() else {
                    return Err(mismatch(path, "$$matchesEntity takes an entity name"));
                };
                let Some(value) = self.entities.bson_entity(id) else {
                    return Err(mismatch(path, format!("no BSON entity named {id:?}")));
                };
                self.value(&value, actual, root, path)
            }
            "$$matchesHexBytes" => {
                let Some(hex) = argument.as_str() else {
                    return Err(mismatch(path, "$$matchesHexBytes takes a hex string"));
                };
                let expected = decode_hex(hex)
                    .ok_or_else(|| mismatch(path, format!("malformed hex string {hex:?}")))?;
                let bytes = match actual {
                    Some(Bson::Binary(binary)) => binary.bytes.as_slice(),
                    Some(Bson::String(text)) => text.as_bytes(),
                    other => {
                        return Err(mismatch(path, format!("expected bytes, got {other:?}")));
                    }
                };
                if bytes == expected.as_slice() {
                    Ok(())
                } else {
                    Err(mismatch(path, format!("bytes differ from {hex}")))
                }
            }
            "$$lte" => {
                let Some(actual) = actual else {
                    return Err(mismatch(path, format!("missing (expected <= {argument})")));
                };
                match (as_f64(argument), as_f64(actual)) {
                    (Some(limit), Some(value)) if value <= limit => Ok(()),
                    (Some(_), Some(_)) => Err(mismatch(
                        path,
                        format!("{actual} is greater than {argument}"),
                    )),
                    _ => Err(mismatch(
                        path,
                        format!("$$lte compares numbers, got {actual}"),
                    )),
                }
            }
            "$$matchAsDocument" => {
                let Some(Bson::String(text)) = actual else {
                    return Err(mismatch(
                        path,
                        format!("expected an Extended JSON string, got {actual:?}"),
                    ));
                };
                let parsed = ejson::parse_document(text).map_err(|e| mismatch(path, e))?;
                self.value(argument, Some(&Bson::Document(parsed)), false, path)
            }
            "$$matchAsRoot" => self.value(argument, actual, true, path),
            other => Err(mismatch(path, format!("unknown special operator {other}"))),
        }
    }
}

/// `Some((name, argument))` when `value` is a document whose first and only key starts with `$$`.
pub(crate) fn special_operator(value: &Bson) -> Option<(&str, &Bson)> {
    let Bson::Document(document) = value else {
        return None;
    };
    if document.len() != 1 {
        return None;
    }
    let (key, argument) = document.iter().next()?;
    key.starts_with("$$").then_some((key.as_str(), argument))
}

fn scalar(path: &str, expected: &Bson, actual: &Bson) -> MatchResult {
    let equal = match (expected, actual) {
        (
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_),
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_),
        ) => numbers_equal(expected, actual),
        _ => expected == actual,
    };
    if equal {
        Ok(())
    } else {
        Err(mismatch(path, format!("expected {expected}, got {actual}")))
    }
}

fn numbers_equal(a: &Bson, b: &Bson) -> bool {
    match (as_i64(a), as_i64(b)) {
        (Some(a), Some(b)) => a == b,
        // NaN matches NaN: a test that stores NaN expects to read it back.
        _ => as_f64(a)
            .zip(as_f64(b))
            .is_some_and(|(a, b)| a == b || (a.is_nan() && b.is_nan())),
    }
}

fn as_i64(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        _ => None,
    }
}

/// Numbers as doubles; precision loss past 2^53 does not matter for the values tests use.
#[allow(clippy::cast_precision_loss)]
fn as_f64(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(v) => Some(f64::from(*v)),
        Bson::Int64(v) => Some(*v as f64),
        Bson::Double(v) => Some(*v),
        _ => None,
    }
}

/// The `$type` alias of a BSON type.
pub(crate) fn type_name(element_type: ElementType) -> &'static str {
    match element_type {
        ElementType::Double => "double",
        ElementType::String => "string",
        ElementType::EmbeddedDocument => "object",
        ElementType::Array => "array",
        ElementType::Binary => "binData",
        ElementType::Undefined => "undefined",
        ElementType::ObjectId => "objectId",
        ElementType::Boolean => "bool",
        ElementType::DateTime => "date",
        ElementType::Null => "null",
        ElementType::RegularExpression => "regex",
        ElementType::DbPointer => "dbPointer",
        ElementType::JavaScriptCode => "javascript",
        ElementType::Symbol => "symbol",
        ElementType::JavaScriptCodeWithScope => "javascriptWithScope",
        ElementType::Int32 => "int",
        ElementType::Timestamp => "timestamp",
        ElementType::Int64 => "long",
        ElementType::Decimal128 => "decimal",
        ElementType::MinKey => "minKey",
        ElementType::MaxKey => "maxKey",
    }
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

fn join(path: &str, key: &str) -> String {
    format!("{path}.{key}")
}

fn mismatch(path: &str, message: impl Into<String>) -> Mismatch {
    Mismatch {
        path: path.to_owned(),
        message: message.into(),
    }
}
