//! Helpers for the expression tests: evaluate one expression against one document through the
//! aggregate command, as a client would.

use bson::{Bson, Document, doc};

use super::{insert, new_store, run};

/// The reply of projecting `v: expression` from `document`.
fn project(document: Document, expression: Bson) -> Document {
    let store = new_store();
    let mut document = document;
    document.insert("_id", 1);
    insert(&store, "c", vec![document]);
    run(
        &store,
        "db",
        doc! {
            "aggregate": "c",
            "pipeline": [{ "$project": { "_id": 0, "v": expression } }],
            "cursor": {},
        },
    )
}

/// The value of `expression` against `document`; `None` when it is missing.
pub(super) fn eval_in(document: Document, expression: Bson) -> Option<Bson> {
    let reply = project(document, expression.clone());
    assert_eq!(
        reply.get("ok"),
        Some(&Bson::Double(1.0)),
        "{expression} failed: {reply}"
    );
    let batch = super::batch(&reply);
    batch[0].get("v").cloned()
}

/// The value of a document-free expression (it must not be missing).
pub(super) fn eval(expression: Bson) -> Bson {
    eval_in(Document::new(), expression.clone())
        .unwrap_or_else(|| panic!("{expression} evaluated to missing"))
}

/// The value of `{operator: argument}`.
pub(super) fn op(operator: &str, argument: Bson) -> Bson {
    let mut expression = Document::new();
    expression.insert(operator, argument);
    eval(Bson::Document(expression))
}

/// The code and message of an expression that must fail.
pub(super) fn failure_in(document: Document, expression: Bson) -> (i32, String) {
    let reply = project(document, expression.clone());
    assert_eq!(
        reply.get("ok"),
        Some(&Bson::Double(0.0)),
        "{expression} should fail: {reply}"
    );
    (
        reply.get_i32("code").unwrap_or_default(),
        reply.get_str("errmsg").unwrap_or_default().to_owned(),
    )
}

/// The code and message of `{operator: argument}`, which must fail.
pub(super) fn op_failure(operator: &str, argument: Bson) -> (i32, String) {
    let mut expression = Document::new();
    expression.insert(operator, argument);
    failure_in(Document::new(), Bson::Document(expression))
}

/// The code of `{operator: argument}`, which must fail.
pub(super) fn op_code(operator: &str, argument: Bson) -> i32 {
    op_failure(operator, argument).0
}

/// A BSON date from milliseconds.
pub(super) fn date(millis: i64) -> Bson {
    Bson::DateTime(bson::DateTime::from_millis(millis))
}

/// A BSON decimal from its text.
pub(super) fn decimal(text: &str) -> Bson {
    Bson::Decimal128(text.parse().expect("a decimal literal"))
}

/// Evaluates an expression that may succeed or fail, and checks only that the reply is an
/// orderly one (no panic, a code on failure).
pub(super) fn settles(expression: Bson) {
    let reply = project(Document::new(), expression.clone());
    let ok = reply.get("ok").cloned();
    assert!(
        ok == Some(Bson::Double(1.0)) || reply.get_i32("code").is_ok(),
        "{expression}: {reply}"
    );
}
