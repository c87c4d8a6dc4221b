//! `errInfo.details` of a validation failure, in mongod's shape: the failing clause's
//! `operatorName`, `specifiedAs` and `reason` with the value considered; several top-level
//! clauses as `{operatorName: "$and", clausesNotSatisfied: [{index, details}]}`; `$jsonSchema`
//! as `{operatorName: "$jsonSchema", schemaRulesNotSatisfied: [...]}`.

use bson::{Bson, Document, doc};

use crate::json_schema::Schema;
use crate::path::{Leaf, collect_leaves, split_path};
use crate::query::Filter;

/// The details of `document` failing the validator `rules`.
pub(super) fn of_rules(rules: &Document, document: &Document) -> Document {
    if rules.len() == 1 {
        if let Some((key, value)) = rules.iter().next() {
            return of_clause(key, value, document);
        }
    }
    let failing = rules
        .iter()
        .enumerate()
        .filter(|(_, (key, value))| !clause_matches(key, value, document))
        .map(|(index, (key, value))| {
            Bson::Document(doc! {
                "index": i32::try_from(index).unwrap_or(i32::MAX),
                "details": of_clause(key, value, document),
            })
        })
        .collect::<Vec<_>>();
    doc! { "operatorName": "$and", "clausesNotSatisfied": failing }
}

fn clause_matches(key: &str, value: &Bson, document: &Document) -> bool {
    Filter::parse(&doc! { key: value.clone() }).is_ok_and(|filter| filter.matches(document))
}

fn of_clause(key: &str, value: &Bson, document: &Document) -> Document {
    match key {
        "$jsonSchema" => match Schema::parse(value) {
            Ok(schema) => schema.details(document),
            Err(_) => doc! { "operatorName": "$jsonSchema" },
        },
        "$and" | "$or" | "$nor" => of_branches(key, value, document),
        "$expr" => doc! {
            "operatorName": "$expr",
            "specifiedAs": { "$expr": value.clone() },
            "reason": "expression did not match",
            "expressionResult": false,
        },
        field => of_field(field, value, document),
    }
}

/// `$and` lists its failing branches; `$or` all of them (none matched); `$nor` the ones that
/// matched.
fn of_branches(operator: &str, value: &Bson, document: &Document) -> Document {
    let branches: Vec<&Document> = match value {
        Bson::Array(items) => items.iter().filter_map(Bson::as_document).collect(),
        _ => Vec::new(),
    };
    let listed = branches
        .iter()
        .enumerate()
        .filter(|(_, branch)| {
            let matched = Filter::parse(branch).is_ok_and(|filter| filter.matches(document));
            if operator == "$nor" {
                matched
            } else {
                !matched
            }
        })
        .map(|(index, branch)| {
            let details = if operator == "$nor" {
                doc! { "operatorName": "$nor", "reason": "child expression matched" }
            } else {
                of_rules(branch, document)
            };
            Bson::Document(doc! {
                "index": i32::try_from(index).unwrap_or(i32::MAX),
                "details": details,
            })
        })
        .collect::<Vec<_>>();
    doc! { "operatorName": operator, "clausesNotSatisfied": listed }
}

/// A field clause: `{field: value}` (an equality) or `{field: {$op: argument, ...}}`.
fn of_field(field: &str, value: &Bson, document: &Document) -> Document {
    let operators: Vec<(String, Bson)> = match value {
        Bson::Document(operators)
            if operators
                .keys()
                .next()
                .is_some_and(|key| key.starts_with('$')) =>
        {
            operators
                .iter()
                .map(|(operator, argument)| (operator.clone(), argument.clone()))
                .collect()
        }
        other => vec![("$eq".to_owned(), other.clone())],
    };
    if operators.len() == 1 {
        return of_operator(field, &operators[0].0, value, document);
    }
    let failing = operators
        .iter()
        .enumerate()
        .filter(|(_, (operator, argument))| {
            let single = doc! { field: { operator.clone(): argument.clone() } };
            !Filter::parse(&single).is_ok_and(|filter| filter.matches(document))
        })
        .map(|(index, (operator, argument))| {
            let single = Bson::Document(doc! { operator.clone(): argument.clone() });
            Bson::Document(doc! {
                "index": i32::try_from(index).unwrap_or(i32::MAX),
                "details": of_operator(field, operator, &single, document),
            })
        })
        .collect::<Vec<_>>();
    doc! { "operatorName": "$and", "clausesNotSatisfied": failing }
}

fn of_operator(field: &str, operator: &str, specified: &Bson, document: &Document) -> Document {
    let mut leaves = Vec::new();
    collect_leaves(document, &split_path(field), &mut leaves);
    let present: Vec<Bson> = leaves
        .iter()
        .filter_map(|leaf| match leaf {
            Leaf::Present(value) => Some((*value).clone()),
            Leaf::Missing => None,
        })
        .collect();
    let mut details = doc! {
        "operatorName": operator,
        "specifiedAs": { field: specified.clone() },
    };
    let reason = match operator {
        "$exists" if present.is_empty() => "path does not exist",
        "$exists" => "path does exist",
        _ if present.is_empty() => "field was missing",
        "$eq" | "$gt" | "$gte" | "$lt" | "$lte" => "comparison failed",
        "$ne" => "comparison succeeded",
        "$in" => "no matching value found in array",
        "$nin" => "matching value found in array",
        "$type" => "type did not match",
        "$size" => "array length was not equal to given size",
        "$all" => "array did not contain all specified values",
        "$elemMatch" => "array did not satisfy the child predicate",
        "$not" => "child expression matched",
        _ => "expression did not match",
    };
    details.insert("reason", reason);
    match present.as_slice() {
        [] => {}
        [value] => {
            details.insert("consideredValue", value.clone());
            if operator == "$type" {
                details.insert("consideredType", crate::errors::type_name(value));
            }
        }
        values => {
            details.insert("consideredValues", values.to_vec());
        }
    }
    details
}
