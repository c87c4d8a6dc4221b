//! Checking values against a [`Schema`]: each keyword applies to the values it is about (`minimum`
//! to numbers, `minLength` to strings, `properties` to documents...) and is satisfied by the
//! others, as JSON Schema says. With [`Explain::Yes`] every failing keyword is described as
//! mongod describes it in `schemaRulesNotSatisfied`; with [`Explain::No`] the first failure
//! ends the check.

use std::cmp::Ordering;

use bson::{Bson, Document, doc};

use super::{Additional, Dependency, Items, Keyword, Schema, TypeRule};
use crate::errors::type_name;
use crate::regex::MongoRegex;
use crate::value_order::{compare_values, values_equal};

/// Whether to describe the failures or only find one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Explain {
    Yes,
    No,
}

/// A value being checked: the root document is borrowed as it is, without wrapping it in a
/// `Bson` (which would copy it).
#[derive(Clone, Copy)]
pub(super) enum Subject<'a> {
    Document(&'a Document),
    Value(&'a Bson),
}

impl<'a> Subject<'a> {
    fn document(self) -> Option<&'a Document> {
        match self {
            Subject::Document(document) | Subject::Value(Bson::Document(document)) => {
                Some(document)
            }
            Subject::Value(_) => None,
        }
    }

    fn array(self) -> Option<&'a Vec<Bson>> {
        match self {
            Subject::Value(Bson::Array(items)) => Some(items),
            _ => None,
        }
    }

    fn value(self) -> Option<&'a Bson> {
        match self {
            Subject::Value(value) => Some(value),
            Subject::Document(_) => None,
        }
    }

    /// The value as mongod reports it in `consideredValue`.
    fn considered(self) -> Bson {
        match self {
            Subject::Document(document) => Bson::Document(document.clone()),
            Subject::Value(value) => value.clone(),
        }
    }

    fn type_name(self) -> &'static str {
        match self {
            Subject::Document(_) => "object",
            Subject::Value(value) => type_name(value),
        }
    }
}

/// The failures of `subject` against `schema`: empty when it satisfies the schema.
pub(super) fn violations(schema: &Schema, subject: Subject<'_>, explain: Explain) -> Vec<Bson> {
    let mut failures = Vec::new();
    for keyword in &schema.keywords {
        if let Some(failure) = keyword_failure(keyword, subject, explain) {
            failures.push(Bson::Document(failure));
            if explain == Explain::No {
                break;
            }
        }
    }
    failures
}

fn satisfied(schema: &Schema, subject: Subject<'_>) -> bool {
    violations(schema, subject, Explain::No).is_empty()
}

fn keyword_failure(keyword: &Keyword, subject: Subject<'_>, explain: Explain) -> Option<Document> {
    match keyword {
        Keyword::Type { json, rules, spec } => type_failure(*json, rules, spec, subject),
        Keyword::Required(names) => required_failure(names, subject),
        Keyword::Properties(properties) => properties_failure(properties, subject, explain),
        Keyword::AdditionalProperties {
            named,
            patterns,
            additional,
            spec,
        } => additional_properties_failure(named, patterns, additional, spec, subject, explain),
        Keyword::Pattern { regex, spec } => match subject.value() {
            Some(Bson::String(text)) if !regex.is_match(text) => Some(doc! {
                "operatorName": "pattern",
                "specifiedAs": { "pattern": spec.clone() },
                "reason": "regular expression did not match",
                "consideredValue": text.clone(),
            }),
            _ => None,
        },
        Keyword::PatternProperties(patterns) => {
            pattern_properties_failure(patterns, subject, explain)
        }
        Keyword::Enum(values) => {
            let value = subject.considered();
            (!values
                .iter()
                .any(|candidate| values_equal(candidate, &value)))
            .then(|| {
                doc! {
                    "operatorName": "enum",
                    "specifiedAs": { "enum": values.clone() },
                    "reason": "value was not found in enum",
                    "consideredValue": value,
                }
            })
        }
        Keyword::Bound {
            lower,
            limit,
            exclusive,
        } => bound_failure(*lower, limit, *exclusive, subject),
        Keyword::Length { lower, limit } => {
            let Some(Bson::String(text)) = subject.value() else {
                return None;
            };
            let length = i64::try_from(text.chars().count()).unwrap_or(i64::MAX);
            outside(*lower, length, *limit).then(|| {
                let name = if *lower { "minLength" } else { "maxLength" };
                doc! {
                    "operatorName": name,
                    "specifiedAs": { name: *limit },
                    "reason": "specified string length was not satisfied",
                    "consideredValue": text.clone(),
                }
            })
        }
        Keyword::ItemCount { lower, limit } => {
            let items = subject.array()?;
            let length = i64::try_from(items.len()).unwrap_or(i64::MAX);
            outside(*lower, length, *limit).then(|| {
                let name = if *lower { "minItems" } else { "maxItems" };
                doc! {
                    "operatorName": name,
                    "specifiedAs": { name: *limit },
                    "reason": "array did not match specified length",
                    "consideredValue": items.clone(),
                }
            })
        }
        Keyword::PropertyCount { lower, limit } => {
            let document = subject.document()?;
            let count = i64::try_from(document.len()).unwrap_or(i64::MAX);
            outside(*lower, count, *limit).then(|| {
                let name = if *lower {
                    "minProperties"
                } else {
                    "maxProperties"
                };
                doc! {
                    "operatorName": name,
                    "specifiedAs": { name: *limit },
                    "reason": "specified number of properties was not satisfied",
                    "numberOfProperties": count,
                }
            })
        }
        Keyword::UniqueItems => unique_items_failure(subject),
        Keyword::Items(items) => items_failure(items, subject, explain),
        Keyword::AdditionalItems {
            tuple_len,
            additional,
            spec,
        } => additional_items_failure(*tuple_len, additional, spec, subject, explain),
        Keyword::AllOf(schemas) => {
            (!schemas.iter().all(|schema| satisfied(schema, subject))).then(|| {
                doc! {
                    "operatorName": "allOf",
                    "schemasNotSatisfied": failing_schemas(schemas, subject, explain),
                }
            })
        }
        Keyword::AnyOf(schemas) => {
            (!schemas.iter().any(|schema| satisfied(schema, subject))).then(|| {
                doc! {
                    "operatorName": "anyOf",
                    "schemasNotSatisfied": failing_schemas(schemas, subject, explain),
                }
            })
        }
        Keyword::OneOf(schemas) => one_of_failure(schemas, subject, explain),
        Keyword::Not(schema) => satisfied(schema, subject)
            .then(|| doc! { "operatorName": "not", "reason": "child expression matched" }),
        Keyword::Dependencies(dependencies) => dependencies_failure(dependencies, subject, explain),
    }
}

fn outside(lower: bool, actual: i64, limit: i64) -> bool {
    if lower {
        actual < limit
    } else {
        actual > limit
    }
}

fn type_matches(rule: TypeRule, subject: Subject<'_>) -> bool {
    match (rule, subject) {
        (TypeRule::Code(code), Subject::Document(_)) => code == 3,
        (TypeRule::Number, Subject::Document(_)) => false,
        (TypeRule::Number, Subject::Value(value)) => matches!(
            value,
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
        ),
        (TypeRule::Code(code), Subject::Value(value)) => {
            i32::from(value.element_type() as u8) == code
                || (code == -1 && matches!(value, Bson::MinKey))
                || (code == 127 && matches!(value, Bson::MaxKey))
        }
    }
}

fn type_failure(
    json: bool,
    rules: &[TypeRule],
    spec: &Bson,
    subject: Subject<'_>,
) -> Option<Document> {
    if rules.iter().any(|rule| type_matches(*rule, subject)) {
        return None;
    }
    let name = if json { "type" } else { "bsonType" };
    Some(doc! {
        "operatorName": name,
        "specifiedAs": { name: spec.clone() },
        "reason": "type did not match",
        "consideredValue": subject.considered(),
        "consideredType": subject.type_name(),
    })
}

fn required_failure(names: &[String], subject: Subject<'_>) -> Option<Document> {
    let document = subject.document()?;
    let missing: Vec<Bson> = names
        .iter()
        .filter(|name| !document.contains_key(name.as_str()))
        .map(|name| Bson::String(name.clone()))
        .collect();
    (!missing.is_empty()).then(|| {
        doc! {
            "operatorName": "required",
            "specifiedAs": { "required": names.to_vec() },
            "missingProperties": missing,
        }
    })
}

fn properties_failure(
    properties: &[(String, Schema)],
    subject: Subject<'_>,
    explain: Explain,
) -> Option<Document> {
    let document = subject.document()?;
    let mut failing = Vec::new();
    for (name, schema) in properties {
        let Some(value) = document.get(name) else {
            continue;
        };
        let details = violations(schema, Subject::Value(value), explain);
        if details.is_empty() {
            continue;
        }
        let mut entry = doc! { "propertyName": name.clone() };
        if let Some(description) = &schema.description {
            entry.insert("description", description.clone());
        }
        entry.insert("details", details);
        failing.push(Bson::Document(entry));
        if explain == Explain::No {
            break;
        }
    }
    (!failing.is_empty())
        .then(|| doc! { "operatorName": "properties", "propertiesNotSatisfied": failing })
}

fn pattern_properties_failure(
    patterns: &[(String, MongoRegex, Schema)],
    subject: Subject<'_>,
    explain: Explain,
) -> Option<Document> {
    let document = subject.document()?;
    let mut failing = Vec::new();
    for (name, value) in document {
        for (pattern, regex, schema) in patterns {
            if !regex.is_match(name) {
                continue;
            }
            let details = violations(schema, Subject::Value(value), explain);
            if details.is_empty() {
                continue;
            }
            failing.push(Bson::Document(doc! {
                "propertyName": name.clone(),
                "regexMatched": pattern.clone(),
                "details": details,
            }));
            if explain == Explain::No {
                return Some(doc! { "operatorName": "patternProperties", "details": failing });
            }
        }
    }
    (!failing.is_empty()).then(|| doc! { "operatorName": "patternProperties", "details": failing })
}

fn additional_properties_failure(
    named: &[String],
    patterns: &[MongoRegex],
    additional: &Additional,
    spec: &Bson,
    subject: Subject<'_>,
    explain: Explain,
) -> Option<Document> {
    let document = subject.document()?;
    let extra = document.iter().filter(|(name, _)| {
        !named.iter().any(|named| named == *name)
            && !patterns.iter().any(|regex| regex.is_match(name))
    });
    match additional {
        Additional::Allowed(true) => None,
        Additional::Allowed(false) => {
            let names: Vec<Bson> = extra.map(|(name, _)| Bson::String(name.clone())).collect();
            (!names.is_empty()).then(|| {
                doc! {
                    "operatorName": "additionalProperties",
                    "specifiedAs": { "additionalProperties": spec.clone() },
                    "additionalProperties": names,
                }
            })
        }
        Additional::Schema(schema) => extra.into_iter().find_map(|(name, value)| {
            let details = violations(schema, Subject::Value(value), explain);
            (!details.is_empty()).then(|| {
                doc! {
                    "operatorName": "additionalProperties",
                    "reason": "at least one additional property did not match the subschema",
                    "failingProperty": name.clone(),
                    "details": details,
                }
            })
        }),
    }
}

fn bound_failure(
    lower: bool,
    limit: &Bson,
    exclusive: bool,
    subject: Subject<'_>,
) -> Option<Document> {
    let value = subject.value()?;
    if !matches!(
        value,
        Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
    ) {
        return None;
    }
    let order = compare_values(value, limit);
    let fails = match (lower, exclusive) {
        (true, false) => order == Ordering::Less,
        (true, true) => order != Ordering::Greater,
        (false, false) => order == Ordering::Greater,
        (false, true) => order != Ordering::Less,
    };
    if !fails {
        return None;
    }
    let (name, flag) = if lower {
        ("minimum", "exclusiveMinimum")
    } else {
        ("maximum", "exclusiveMaximum")
    };
    let mut specified = doc! { name: limit.clone() };
    if exclusive {
        specified.insert(flag, true);
    }
    Some(doc! {
        "operatorName": name,
        "specifiedAs": specified,
        "reason": "comparison failed",
        "consideredValue": value.clone(),
    })
}

fn unique_items_failure(subject: Subject<'_>) -> Option<Document> {
    let items = subject.array()?;
    // Sorted, equal items are neighbours: n log n, not n squared, on a hostile array.
    let mut sorted: Vec<&Bson> = items.iter().collect();
    sorted.sort_by(|a, b| compare_values(a, b));
    let duplicate = sorted
        .windows(2)
        .find(|pair| values_equal(pair[0], pair[1]))
        .map(|pair| pair[0].clone())?;
    Some(doc! {
        "operatorName": "uniqueItems",
        "specifiedAs": { "uniqueItems": true },
        "reason": "found a duplicate item",
        "consideredValue": items.clone(),
        "duplicatedValue": duplicate,
    })
}

fn item_failure(index: usize, schema: &Schema, item: &Bson, explain: Explain) -> Option<Document> {
    let details = violations(schema, Subject::Value(item), explain);
    (!details.is_empty()).then(|| {
        doc! {
            "operatorName": "items",
            "reason": "At least one item did not match the sub-schema",
            "itemIndex": i64::try_from(index).unwrap_or(i64::MAX),
            "details": details,
        }
    })
}

fn items_failure(items: &Items, subject: Subject<'_>, explain: Explain) -> Option<Document> {
    let values = subject.array()?;
    match items {
        Items::Each(schema) => values
            .iter()
            .enumerate()
            .find_map(|(index, item)| item_failure(index, schema, item, explain)),
        Items::Tuple(schemas) => values
            .iter()
            .zip(schemas)
            .enumerate()
            .find_map(|(index, (item, schema))| item_failure(index, schema, item, explain)),
    }
}

fn additional_items_failure(
    tuple_len: usize,
    additional: &Additional,
    spec: &Bson,
    subject: Subject<'_>,
    explain: Explain,
) -> Option<Document> {
    let values = subject.array()?;
    let extra = values.get(tuple_len..).unwrap_or_default();
    match additional {
        Additional::Allowed(true) => None,
        Additional::Allowed(false) => (!extra.is_empty()).then(|| {
            doc! {
                "operatorName": "additionalItems",
                "specifiedAs": { "additionalItems": spec.clone() },
                "reason": "found additional items",
                "additionalItems": extra.to_vec(),
            }
        }),
        Additional::Schema(schema) => extra.iter().enumerate().find_map(|(offset, item)| {
            let details = violations(schema, Subject::Value(item), explain);
            (!details.is_empty()).then(|| {
                doc! {
                    "operatorName": "additionalItems",
                    "reason": "At least one additional item did not match the sub-schema",
                    "itemIndex": i64::try_from(tuple_len + offset).unwrap_or(i64::MAX),
                    "details": details,
                }
            })
        }),
    }
}

/// The subschemas `subject` fails, described. Only asked for with [`Explain::Yes`] once the
/// keyword is known to fail: a check that only needs the verdict never evaluates a subschema
/// twice, so nested `anyOf`/`oneOf` stay linear.
fn failing_schemas(schemas: &[Schema], subject: Subject<'_>, explain: Explain) -> Vec<Bson> {
    if explain == Explain::No {
        return Vec::new();
    }
    schemas
        .iter()
        .enumerate()
        .filter_map(|(index, schema)| {
            let details = violations(schema, subject, explain);
            (!details.is_empty()).then(|| {
                Bson::Document(doc! {
                    "index": i64::try_from(index).unwrap_or(i64::MAX),
                    "details": details,
                })
            })
        })
        .collect()
}

fn one_of_failure(schemas: &[Schema], subject: Subject<'_>, explain: Explain) -> Option<Document> {
    let matching: Vec<Bson> = schemas
        .iter()
        .enumerate()
        .filter(|(_, schema)| satisfied(schema, subject))
        .map(|(index, _)| Bson::Int64(i64::try_from(index).unwrap_or(i64::MAX)))
        .collect();
    match matching.len() {
        1 => None,
        0 => Some(doc! {
            "operatorName": "oneOf",
            "schemasNotSatisfied": failing_schemas(schemas, subject, explain),
        }),
        _ => Some(doc! {
            "operatorName": "oneOf",
            "reason": "more than one subschema matched",
            "matchingSchemaIndexes": matching,
        }),
    }
}

fn dependencies_failure(
    dependencies: &[(String, Dependency)],
    subject: Subject<'_>,
    explain: Explain,
) -> Option<Document> {
    let document = subject.document()?;
    let mut failing = Vec::new();
    for (property, dependency) in dependencies {
        if !document.contains_key(property) {
            continue;
        }
        let mut entry = doc! { "conditionalProperty": property.clone() };
        match dependency {
            Dependency::Properties(names) => {
                let missing: Vec<Bson> = names
                    .iter()
                    .filter(|name| !document.contains_key(name.as_str()))
                    .map(|name| Bson::String(name.clone()))
                    .collect();
                if missing.is_empty() {
                    continue;
                }
                entry.insert("missingProperties", missing);
            }
            Dependency::Schema(schema) => {
                let details = violations(schema, subject, explain);
                if details.is_empty() {
                    continue;
                }
                entry.insert("details", details);
            }
        }
        failing.push(Bson::Document(entry));
        if explain == Explain::No {
            break;
        }
    }
    (!failing.is_empty())
        .then(|| doc! { "operatorName": "dependencies", "failingDependencies": failing })
}
