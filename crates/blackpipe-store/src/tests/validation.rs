//! Document validation: validators with query operators and `$jsonSchema`, validation levels
//! and actions, `bypassDocumentValidation`, and error 121's `errInfo` as mongod 8.0 gives them.

use bson::{Bson, Document, doc};

use super::{batch, error_code, ids, new_store, run, run_ok};
use crate::Store;
use crate::code;

fn student_schema() -> Document {
    doc! {
        "bsonType": "object",
        "title": "Student",
        "required": ["name", "year"],
        "properties": {
            "name": { "bsonType": "string", "description": "must be a string" },
            "year": { "bsonType": "int", "minimum": 2017, "maximum": 3017 },
            "gpa": { "bsonType": ["double"], "description": "must be a double" },
        },
    }
}

fn store_with_validator(validator: Document, extra: Document) -> Store {
    let store = new_store();
    let mut create = doc! { "create": "c", "validator": validator };
    create.extend(extra);
    run_ok(&store, "db", create);
    store
}

/// The first write error of a write reply.
fn write_error(reply: &Document) -> Document {
    reply
        .get_array("writeErrors")
        .ok()
        .and_then(|errors| errors.first())
        .and_then(Bson::as_document)
        .cloned()
        .unwrap_or_else(|| panic!("no write error in {reply}"))
}

fn insert_one(store: &Store, document: Document) -> Document {
    run_ok(store, "db", doc! { "insert": "c", "documents": [document] })
}

#[test]
fn a_json_schema_failure_reports_mongods_err_info() {
    let store = store_with_validator(doc! { "$jsonSchema": student_schema() }, doc! {});
    let reply = insert_one(
        &store,
        doc! { "_id": 1, "name": "Alice", "year": 2019, "gpa": 3 },
    );
    let error = write_error(&reply);
    assert_eq!(
        error.get_i32("code").unwrap(),
        code::DOCUMENT_VALIDATION_FAILURE
    );
    assert_eq!(
        error.get_str("errmsg").unwrap(),
        "Document failed validation"
    );
    let info = error.get_document("errInfo").unwrap();
    assert_eq!(info.get_i32("failingDocumentId").unwrap(), 1);
    assert_eq!(
        info.get_document("details").unwrap(),
        &doc! {
            "operatorName": "$jsonSchema",
            "title": "Student",
            "schemaRulesNotSatisfied": [{
                "operatorName": "properties",
                "propertiesNotSatisfied": [{
                    "propertyName": "gpa",
                    "description": "must be a double",
                    "details": [{
                        "operatorName": "bsonType",
                        "specifiedAs": { "bsonType": ["double"] },
                        "reason": "type did not match",
                        "consideredValue": 3,
                        "consideredType": "int",
                    }],
                }],
            }],
        }
    );
    let ok = insert_one(
        &store,
        doc! { "_id": 2, "name": "Bea", "year": 2020, "gpa": 3.5 },
    );
    assert!(!ok.contains_key("writeErrors"), "{ok}");
}

#[test]
fn required_and_bounds_are_reported_per_rule() {
    let store = store_with_validator(doc! { "$jsonSchema": student_schema() }, doc! {});
    let reply = insert_one(&store, doc! { "_id": 1, "year": 2000 });
    let info = write_error(&reply).get_document("errInfo").unwrap().clone();
    let rules = info
        .get_document("details")
        .unwrap()
        .get_array("schemaRulesNotSatisfied")
        .unwrap()
        .clone();
    assert_eq!(
        rules,
        vec![
            Bson::Document(doc! {
                "operatorName": "required",
                "specifiedAs": { "required": ["name", "year"] },
                "missingProperties": ["name"],
            }),
            Bson::Document(doc! {
                "operatorName": "properties",
                "propertiesNotSatisfied": [{
                    "propertyName": "year",
                    "details": [{
                        "operatorName": "minimum",
                        "specifiedAs": { "minimum": 2017 },
                        "reason": "comparison failed",
                        "consideredValue": 2000,
                    }],
                }],
            }),
        ]
    );
}

#[test]
fn json_schema_keywords_match_as_mongod_reads_them() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "insert": "c", "documents": [
            { "_id": 1, "tags": ["a", "b"], "code": "xy", "kind": "A" },
            { "_id": 2, "tags": ["a", "a"], "code": "xyz", "kind": "B" },
            { "_id": 3, "tags": [], "code": "x", "kind": "C", "extra": true },
            { "_id": 4, "code": 7 },
        ] },
    );
    let cases: Vec<(Document, Vec<i32>)> = vec![
        (
            doc! { "properties": { "tags": { "uniqueItems": true } } },
            vec![1, 3, 4],
        ),
        (
            doc! { "properties": { "tags": { "minItems": 1, "maxItems": 2 } } },
            vec![1, 2, 4],
        ),
        (
            doc! { "properties": { "code": { "minLength": 2, "maxLength": 2 } } },
            vec![1, 4],
        ),
        (
            doc! { "properties": { "kind": { "enum": ["A", "C"] } } },
            vec![1, 3, 4],
        ),
        (
            doc! { "properties": { "tags": { "items": { "enum": ["a"] } } } },
            vec![2, 3, 4],
        ),
        (doc! { "maxProperties": 4 }, vec![1, 2, 4]),
        (
            doc! { "anyOf": [{ "required": ["extra"] }, { "properties": { "code": { "bsonType": "int" } } }] },
            vec![3, 4],
        ),
        (
            doc! { "oneOf": [{ "required": ["tags"] }, { "required": ["extra"] }] },
            vec![1, 2],
        ),
        (doc! { "not": { "required": ["kind"] } }, vec![4]),
        (
            doc! { "allOf": [{ "required": ["kind"] }, { "properties": { "code": { "type": "string" } } }] },
            vec![1, 2, 3],
        ),
        (
            doc! { "properties": { "_id": {}, "tags": {}, "code": {}, "kind": {} }, "additionalProperties": false },
            vec![1, 2, 4],
        ),
        (
            doc! { "dependencies": { "extra": ["tags", "nothing"] } },
            vec![1, 2, 4],
        ),
        (
            doc! { "properties": { "code": { "type": "number", "exclusiveMinimum": true, "minimum": 7 } } },
            vec![],
        ),
    ];
    for (schema, expected) in cases {
        assert_eq!(
            ids(&store, "c", doc! { "$jsonSchema": schema.clone() }),
            expected,
            "{schema}"
        );
    }
}

#[test]
fn json_schema_parse_errors_are_mongods() {
    let store = new_store();
    let cases = [
        (
            doc! { "$jsonSchema": { "unknownKeyword": 1 } },
            code::FAILED_TO_PARSE,
        ),
        (
            doc! { "$jsonSchema": { "required": "name" } },
            code::TYPE_MISMATCH,
        ),
        (
            doc! { "$jsonSchema": { "type": "object", "bsonType": "object" } },
            code::FAILED_TO_PARSE,
        ),
        (
            doc! { "$jsonSchema": { "$ref": "#/definitions/a" } },
            code::FAILED_TO_PARSE,
        ),
        (doc! { "$jsonSchema": 1 }, code::TYPE_MISMATCH),
    ];
    for (filter, expected) in cases {
        let reply = run(&store, "db", doc! { "find": "c", "filter": filter.clone() });
        assert_eq!(error_code(&reply), expected, "{filter}: {reply}");
    }
}

#[test]
fn a_query_operator_validator_reports_the_failing_clause() {
    let store = store_with_validator(
        doc! { "qty": { "$gt": 0 }, "sku": { "$exists": true } },
        doc! {},
    );
    let reply = insert_one(&store, doc! { "_id": 1, "qty": 0, "sku": "x" });
    let details = write_error(&reply)
        .get_document("errInfo")
        .unwrap()
        .get_document("details")
        .unwrap()
        .clone();
    assert_eq!(
        details,
        doc! {
            "operatorName": "$and",
            "clausesNotSatisfied": [{
                "index": 0,
                "details": {
                    "operatorName": "$gt",
                    "specifiedAs": { "qty": { "$gt": 0 } },
                    "reason": "comparison failed",
                    "consideredValue": 0,
                },
            }],
        }
    );
}

#[test]
fn updates_are_validated_and_moderate_skips_documents_already_invalid() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "insert": "c", "documents": [{ "_id": 1, "n": 5 }, { "_id": 2, "n": -5 }] },
    );
    run_ok(
        &store,
        "db",
        doc! { "collMod": "c", "validator": { "n": { "$gte": 0 } }, "validationLevel": "moderate" },
    );
    let update = |id: i32, n: i32| {
        run_ok(
            &store,
            "db",
            doc! { "update": "c", "updates": [{ "q": { "_id": id }, "u": { "$set": { "n": n } } }] },
        )
    };
    // Document 2 did not satisfy the validator before: moderate lets its update through.
    assert!(!update(2, -6).contains_key("writeErrors"));
    let refused = update(1, -1);
    assert_eq!(
        write_error(&refused).get_i32("code").unwrap(),
        code::DOCUMENT_VALIDATION_FAILURE
    );
    run_ok(
        &store,
        "db",
        doc! { "collMod": "c", "validationLevel": "strict" },
    );
    let strict = update(2, -7);
    assert_eq!(
        write_error(&strict).get_i32("code").unwrap(),
        code::DOCUMENT_VALIDATION_FAILURE
    );
    let fam = run(
        &store,
        "db",
        doc! { "findAndModify": "c", "query": { "_id": 1 }, "update": { "$set": { "n": -2 } } },
    );
    assert_eq!(error_code(&fam), code::DOCUMENT_VALIDATION_FAILURE);
    assert!(fam.get_document("errInfo").is_ok(), "{fam}");
}

#[test]
fn warn_and_off_let_invalid_documents_in_and_bypass_skips_the_check() {
    let warn = store_with_validator(doc! { "n": 1 }, doc! { "validationAction": "warn" });
    assert!(!insert_one(&warn, doc! { "_id": 1, "n": 2 }).contains_key("writeErrors"));
    let off = store_with_validator(doc! { "n": 1 }, doc! { "validationLevel": "off" });
    assert!(!insert_one(&off, doc! { "_id": 1, "n": 2 }).contains_key("writeErrors"));
    let strict = store_with_validator(doc! { "n": 1 }, doc! {});
    let bypassed = run_ok(
        &strict,
        "db",
        doc! { "insert": "c", "documents": [{ "_id": 1, "n": 2 }], "bypassDocumentValidation": true },
    );
    assert!(!bypassed.contains_key("writeErrors"), "{bypassed}");
    let upsert = run_ok(
        &strict,
        "db",
        doc! { "update": "c", "updates": [{ "q": { "_id": 2 }, "u": { "n": 3 }, "upsert": true }] },
    );
    assert_eq!(
        write_error(&upsert).get_i32("code").unwrap(),
        code::DOCUMENT_VALIDATION_FAILURE
    );
    let out = run(
        &strict,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$out": "c" }], "cursor": {} },
    );
    assert_eq!(error_code(&out), code::DOCUMENT_VALIDATION_FAILURE, "{out}");
    let bypassed_out = run_ok(
        &strict,
        "db",
        doc! { "aggregate": "c", "pipeline": [{ "$out": "c" }], "cursor": {}, "bypassDocumentValidation": true },
    );
    assert!(batch(&bypassed_out).is_empty());
}

#[test]
fn validation_options_are_checked_and_listed() {
    let store = new_store();
    let level = run(
        &store,
        "db",
        doc! { "create": "c", "validationLevel": "sometimes" },
    );
    assert_eq!(error_code(&level), code::BAD_VALUE);
    let action = run(&store, "db", doc! { "create": "c", "validationAction": 1 });
    assert_eq!(error_code(&action), code::TYPE_MISMATCH);
    let validator = run(
        &store,
        "db",
        doc! { "create": "c", "validator": { "$bogus": 1 } },
    );
    assert_eq!(error_code(&validator), code::BAD_VALUE);
    run_ok(
        &store,
        "db",
        doc! { "create": "c", "validator": { "a": 1 } },
    );
    run_ok(
        &store,
        "db",
        doc! { "collMod": "c", "validator": { "$jsonSchema": { "required": ["a"] } }, "validationAction": "warn" },
    );
    let listed = batch(&run_ok(&store, "db", doc! { "listCollections": 1 }));
    assert_eq!(
        listed[0].get_document("options").unwrap(),
        &doc! { "validator": { "$jsonSchema": { "required": ["a"] } }, "validationAction": "warn" }
    );
}

#[test]
fn coll_mod_hides_and_unhides_an_index() {
    let store = new_store();
    run_ok(
        &store,
        "db",
        doc! { "createIndexes": "c", "indexes": [{ "key": { "x": 1 }, "name": "x_1" }] },
    );
    let hidden = run_ok(
        &store,
        "db",
        doc! { "collMod": "c", "index": { "name": "x_1", "hidden": true } },
    );
    assert!(!hidden.get_bool("hidden_old").unwrap());
    assert!(hidden.get_bool("hidden_new").unwrap());
    let specs = batch(&run_ok(&store, "db", doc! { "listIndexes": "c" }));
    assert_eq!(specs[1].get_bool("hidden").ok(), Some(true), "{specs:?}");
    run_ok(
        &store,
        "db",
        doc! { "collMod": "c", "index": { "keyPattern": { "x": 1 }, "hidden": false } },
    );
    let specs = batch(&run_ok(&store, "db", doc! { "listIndexes": "c" }));
    assert!(!specs[1].contains_key("hidden"), "{specs:?}");
    let id_index = run(
        &store,
        "db",
        doc! { "collMod": "c", "index": { "name": "_id_", "hidden": true } },
    );
    assert_eq!(error_code(&id_index), code::BAD_VALUE);
}

#[test]
fn pattern_and_pattern_properties_use_the_regex_engine() {
    let schema = doc! {
        "properties": { "code": { "bsonType": "string", "pattern": "^[A-Z]{3}-\\d+$" } },
        "patternProperties": { "^n_": { "bsonType": "int" } },
        "additionalProperties": false,
        "required": ["code"],
    };
    let mut schema = schema;
    // `_id` is an ordinary property to additionalProperties.
    schema
        .get_document_mut("properties")
        .unwrap()
        .insert("_id", doc! {});
    let store = store_with_validator(doc! { "$jsonSchema": schema }, doc! {});
    let reply = insert_one(
        &store,
        doc! { "_id": 1, "code": "ABC-12", "n_a": 1, "n_b": 2 },
    );
    assert!(!reply.contains_key("writeErrors"), "{reply}");
    let reply = insert_one(&store, doc! { "_id": 2, "code": "abc-12" });
    let error = write_error(&reply);
    let details = error.get_document("errInfo").unwrap().to_string();
    assert!(
        details.contains("regular expression did not match"),
        "{details}"
    );
    let reply = insert_one(&store, doc! { "_id": 3, "code": "ABC-1", "n_a": "one" });
    let details = write_error(&reply)
        .get_document("errInfo")
        .unwrap()
        .to_string();
    assert!(
        details.contains("patternProperties") && details.contains("^n_"),
        "{details}"
    );
    let reply = insert_one(&store, doc! { "_id": 4, "code": "ABC-1", "other": 1 });
    let details = write_error(&reply)
        .get_document("errInfo")
        .unwrap()
        .to_string();
    assert!(details.contains("additionalProperties"), "{details}");
    let filter = doc! { "$jsonSchema": { "properties": { "code": { "pattern": "-12$" } } } };
    assert_eq!(ids(&store, "c", filter), vec![1]);
    let bad = run(
        &store,
        "db",
        doc! { "find": "c", "filter": { "$jsonSchema": { "properties": { "code": { "pattern": "(" } } } } },
    );
    assert_eq!(error_code(&bad), code::REGEX_INVALID);
    let bad = run(
        &store,
        "db",
        doc! { "find": "c", "filter": { "$jsonSchema": { "properties": { "code": { "pattern": 1 } } } } },
    );
    assert_eq!(error_code(&bad), code::TYPE_MISMATCH);
}
