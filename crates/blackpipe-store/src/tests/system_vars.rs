//! `$$NOW` and `$$CLUSTER_TIME`: one value per command, from the caller's clock and the op-log
//! clock, in every kind of expression a command evaluates.

use bson::{Bson, Document, Timestamp, doc};

use super::expr_vars::eval_in;
use super::{at, batch, error_code, find, insert, new_store};
use crate::{CommandContext, Store};

fn run_at(store: &Store, context: &CommandContext, command: Document) -> Document {
    store.execute("db", &command, context).reply
}

fn aggregate_at(store: &Store, context: &CommandContext, pipeline: Vec<Document>) -> Vec<Document> {
    let reply = run_at(
        store,
        context,
        doc! { "aggregate": "c", "pipeline": pipeline, "cursor": {} },
    );
    assert_eq!(reply.get_f64("ok").ok(), Some(1.0), "{reply}");
    batch(&reply)
}

fn store() -> Store {
    let store = new_store();
    insert(
        &store,
        "c",
        vec![
            doc! { "_id": 1, "due": at(50) },
            doc! { "_id": 2, "due": at(150) },
            doc! { "_id": 3, "due": at(250) },
        ],
    );
    store
}

#[test]
fn now_is_the_commands_time_in_every_document() {
    let store = store();
    let context = CommandContext::new(at(100));
    let output = aggregate_at(
        &store,
        &context,
        vec![doc! { "$project": {
            "now": "$$NOW",
            "later": { "$dateAdd": { "startDate": "$$NOW", "unit": "day", "amount": 1 } },
            "path": "$$NOW.x",
        } }],
    );
    for document in &output {
        assert_eq!(document.get_datetime("now").ok(), Some(&at(100)));
        assert_eq!(document.get_datetime("later").ok(), Some(&at(100 + 86_400)));
        assert!(
            !document.contains_key("path"),
            "a path into a date is missing"
        );
    }
    // A later command sees its own time.
    let output = aggregate_at(
        &store,
        &CommandContext::new(at(200)),
        vec![doc! { "$project": { "now": "$$NOW" } }],
    );
    assert_eq!(output[0].get_datetime("now").ok(), Some(&at(200)));
}

#[test]
fn now_in_match_expr_and_find() {
    let store = store();
    let context = CommandContext::new(at(100));
    let overdue = aggregate_at(
        &store,
        &context,
        vec![doc! { "$match": { "$expr": { "$lt": ["$due", "$$NOW"] } } }],
    );
    assert_eq!(overdue.len(), 1);
    let reply = run_at(
        &store,
        &CommandContext::new(at(200)),
        doc! { "find": "c", "filter": { "$expr": { "$lt": ["$due", "$$NOW"] } } },
    );
    assert_eq!(batch(&reply).len(), 2);
    // A command's let may read $$NOW, not set it.
    let reply = run_at(
        &store,
        &context,
        doc! { "find": "c", "filter": { "$expr": { "$gt": ["$due", "$$start"] } }, "let": { "start": "$$NOW" } },
    );
    assert_eq!(batch(&reply).len(), 2);
    let reply = run_at(
        &store,
        &context,
        doc! { "find": "c", "filter": {}, "let": { "NOW": 1 } },
    );
    assert_eq!(error_code(&reply), 4_738_901);
}

#[test]
fn now_in_an_update_pipeline() {
    let store = store();
    let reply = run_at(
        &store,
        &CommandContext::new(at(300)),
        doc! { "update": "c", "updates": [{
            "q": { "_id": { "$lte": 2 } },
            "u": [{ "$set": { "seen": "$$NOW", "late": { "$gt": ["$$NOW", "$due"] } } }],
            "multi": true,
        }] },
    );
    assert_eq!(reply.get_i32("nModified").ok(), Some(2), "{reply}");
    let updated = find(&store, "c", doc! { "seen": { "$exists": true } });
    assert_eq!(updated.len(), 2);
    for document in updated {
        assert_eq!(document.get_datetime("seen").ok(), Some(&at(300)));
        assert_eq!(document.get_bool("late").ok(), Some(true));
    }
}

#[test]
fn cluster_time_is_the_op_log_clock_and_fixed_for_the_command() {
    let store = store();
    let context = CommandContext::new(at(400));
    let output = aggregate_at(
        &store,
        &context,
        vec![doc! { "$project": { "ct": "$$CLUSTER_TIME" } }],
    );
    let times: Vec<&Bson> = output
        .iter()
        .filter_map(|document| document.get("ct"))
        .collect();
    assert_eq!(times.len(), 3);
    let Bson::Timestamp(first) = times[0] else {
        panic!("not a timestamp: {times:?}");
    };
    assert!(first.time > 0, "{first:?}");
    assert!(times.iter().all(|time| *time == times[0]));
    // A cluster time the caller knows that is later than the op log's wins.
    let known = Timestamp {
        time: first.time + 1000,
        increment: 7,
    };
    let output = aggregate_at(
        &store,
        &CommandContext::new(at(400)).with_cluster_time(known),
        vec![doc! { "$project": { "ct": "$$CLUSTER_TIME" } }],
    );
    assert_eq!(output[0].get_timestamp("ct").ok(), Some(known));
}

#[test]
fn cluster_time_is_unavailable_on_a_standalone_and_before_any_write() {
    let store = store();
    let reply = run_at(
        &store,
        &CommandContext::new(at(1)).on_standalone(),
        doc! { "aggregate": "c", "pipeline": [{ "$project": { "ct": "$$CLUSTER_TIME" } }], "cursor": {} },
    );
    assert_eq!(error_code(&reply), 51144);
    assert!(
        reply
            .get_str("errmsg")
            .unwrap_or_default()
            .contains("Builtin variable '$$CLUSTER_TIME' is not available")
    );
    // $$NOW is there on a standalone; a fresh store's clock has not started.
    let fresh = new_store();
    let reply = run_at(
        &fresh,
        &CommandContext::new(at(1)),
        doc! { "find": "none", "filter": { "$expr": { "$eq": ["$$CLUSTER_TIME", 1] } } },
    );
    assert_eq!(
        batch(&reply).len(),
        0,
        "no document, nothing evaluated: {reply}"
    );
    let reply = run_at(
        &store,
        &CommandContext::new(at(1)).on_standalone(),
        doc! { "find": "c", "filter": { "$expr": { "$lt": ["$due", "$$NOW"] } } },
    );
    assert_eq!(batch(&reply).len(), 0);
}

#[test]
fn system_variables_in_expressions_outside_a_command_are_unavailable() {
    let document = Document::new();
    let error = eval_in(&Bson::String("$$NOW".into()), &document).err();
    assert_eq!(error.map(|(code, _)| code), Some(51144));
    // Parsing accepts them; the unknown ones stay undefined.
    let error = eval_in(&Bson::String("$$NOWISH".into()), &document).err();
    assert_eq!(error.map(|(code, _)| code), Some(17276));
    // A $let may not bind them (a user variable starts with a lowercase letter).
    let error = eval_in(
        &doc! { "$let": { "vars": { "NOW": 1 }, "in": "$$NOW" } }.into(),
        &document,
    )
    .err();
    assert_eq!(error.map(|(code, _)| code), Some(9));
}
