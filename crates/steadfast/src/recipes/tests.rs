//! Unit tests of the recipes' pure parts: duplicate-key reading, `_id` assignment, the filters
//! and updates of the counter's steps, reconciliation's view of pending entries, and the step
//! repetition rule.

use std::cell::Cell;
use std::time::Duration;

use bson::{Bson, DateTime, doc, oid::ObjectId};

use super::counter::{
    AbandonedEntry, abandoned_entry, apply_filter, apply_update, as_integer, cutoff, pending_entry,
    register_filter,
};
use super::dup_key::{DuplicateIndex, duplicate_index};
use super::insert::with_id;
use super::{RecipeOptions, Token, is_worth_retrying, repeat_step};
use crate::error::{CommandError, Error};

fn write_error(code: i32, message: &str) -> Error {
    let reply = doc! {
        "ok": 1,
        "n": 0,
        "writeErrors": [{ "index": 0, "code": code, "errmsg": message }],
    };
    Error::from_write_reply(&reply).expect("the reply has a write error")
}

#[test]
fn duplicate_on_the_id_index_is_recognised_from_the_message() {
    let error = write_error(
        11000,
        "E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: 1 }",
    );
    assert_eq!(duplicate_index(&error), Some(DuplicateIndex::Id));
}

#[test]
fn duplicate_on_another_index_is_not_taken_for_id() {
    let error = write_error(
        11000,
        "E11000 duplicate key error collection: db.c index: email_1 dup key: { email: \"a\" }",
    );
    assert_eq!(
        duplicate_index(&error),
        Some(DuplicateIndex::Other("email_1".into()))
    );
    // An index whose name merely starts like the _id index is another index.
    let error = write_error(
        11000,
        "E11000 duplicate key error collection: db.c index: _id_1_x_1 dup key: { }",
    );
    assert_eq!(
        duplicate_index(&error),
        Some(DuplicateIndex::Other("_id_1_x_1".into()))
    );
}

#[test]
fn duplicate_without_an_index_name_is_unknown() {
    let error = write_error(11000, "duplicate key");
    assert_eq!(duplicate_index(&error), Some(DuplicateIndex::Unknown));
}

#[test]
fn key_pattern_in_the_details_decides_when_present() {
    let reply = doc! {
        "ok": 1,
        "writeErrors": [{
            "index": 0,
            "code": 11000,
            "errmsg": "duplicate key",
            "errInfo": { "keyPattern": { "_id": 1 }, "keyValue": { "_id": 7 } },
        }],
    };
    let error = Error::from_write_reply(&reply).expect("a write error");
    assert_eq!(duplicate_index(&error), Some(DuplicateIndex::Id));
}

#[test]
fn duplicate_key_as_a_command_error_is_read_too() {
    let error = Error::from(CommandError::new(
        11000,
        "DuplicateKey",
        "E11000 duplicate key error collection: db.c index: _id_ dup key: { _id: 1 }",
    ));
    assert_eq!(duplicate_index(&error), Some(DuplicateIndex::Id));
}

#[test]
fn other_errors_are_not_duplicates() {
    assert_eq!(
        duplicate_index(&write_error(121, "validation failed")),
        None
    );
    assert_eq!(duplicate_index(&Error::network("reset")), None);
    assert_eq!(
        duplicate_index(&Error::from(CommandError::new(
            2,
            "BadValue",
            "index: _id_"
        ))),
        None
    );
}

#[test]
fn an_id_is_added_first_only_when_missing() {
    let (document, id) = with_id(doc! { "a": 1 });
    assert!(matches!(id, Bson::ObjectId(_)));
    assert_eq!(document.keys().next().map(String::as_str), Some("_id"));
    assert_eq!(document.get("_id"), Some(&id));
    assert_eq!(document.get_i32("a").ok(), Some(1));

    let (document, id) = with_id(doc! { "a": 1, "_id": "mine" });
    assert_eq!(id, Bson::String("mine".into()));
    assert_eq!(document, doc! { "a": 1, "_id": "mine" });
}

#[test]
fn register_filter_excludes_known_tokens() {
    let token = Bson::String("t1".into());
    assert_eq!(
        register_filter(&Bson::Int32(5), &token),
        doc! {
            "_id": 5,
            "pending.token": { "$ne": "t1" },
            "applied.token": { "$ne": "t1" },
        }
    );
}

#[test]
fn apply_step_requires_the_pending_token_and_moves_it() {
    let token = Bson::ObjectId(ObjectId::new());
    let at = DateTime::from_millis(1_000);
    assert_eq!(
        apply_filter(&Bson::String("day".into()), &token, 3),
        doc! { "_id": "day", "pending": { "$elemMatch": { "token": token.clone(), "amount": 3_i64 } } }
    );
    assert_eq!(
        apply_update(&token, 3, at),
        doc! {
            "$pull": { "pending": { "token": token.clone() } },
            "$inc": { "count": 3_i64 },
            "$push": { "applied": { "token": token.clone(), "at": at } },
        }
    );
}

#[test]
fn reconciliation_only_takes_entries_older_than_the_cutoff() {
    let token = Bson::String("t".into());
    let cut = DateTime::from_millis(10_000);
    let old = Bson::Document(pending_entry(&token, 2, DateTime::from_millis(9_999)));
    let recent = Bson::Document(pending_entry(&token, 2, cut));
    assert_eq!(
        abandoned_entry(&old, cut),
        AbandonedEntry::Abandoned {
            token: &token,
            amount: 2
        }
    );
    assert_eq!(abandoned_entry(&recent, cut), AbandonedEntry::Recent);
}

#[test]
fn malformed_pending_entries_are_left_alone() {
    let cut = DateTime::from_millis(10_000);
    let at = DateTime::from_millis(1);
    for entry in [
        Bson::String("t".into()),
        Bson::Document(doc! { "amount": 1, "at": at }),
        Bson::Document(doc! { "token": "t", "amount": "one", "at": at }),
        Bson::Document(doc! { "token": "t", "amount": 1.5, "at": at }),
        Bson::Document(doc! { "token": "t", "amount": 1 }),
    ] {
        assert_eq!(
            abandoned_entry(&entry, cut),
            AbandonedEntry::Malformed,
            "{entry}"
        );
    }
}

#[test]
fn cutoff_subtracts_and_saturates() {
    let now = DateTime::from_millis(5_000);
    assert_eq!(
        cutoff(now, Duration::from_secs(2)),
        DateTime::from_millis(3_000)
    );
    assert_eq!(cutoff(DateTime::MIN, Duration::from_secs(1)), DateTime::MIN);
    assert_eq!(
        cutoff(now, Duration::MAX),
        DateTime::from_millis(5_000 - i64::MAX)
    );
}

#[test]
fn integers_are_read_exactly() {
    assert_eq!(as_integer(&Bson::Int32(-4)), Some(-4));
    assert_eq!(as_integer(&Bson::Int64(1 << 40)), Some(1 << 40));
    assert_eq!(as_integer(&Bson::Double(12.0)), Some(12));
    assert_eq!(as_integer(&Bson::Double(0.5)), None);
    assert_eq!(as_integer(&Bson::Double(1e300)), None);
    assert_eq!(as_integer(&Bson::String("1".into())), None);
}

#[test]
fn tokens_keep_their_bson_kind() {
    assert!(matches!(
        Token::new_object_id().as_bson(),
        Bson::ObjectId(_)
    ));
    assert!(matches!(Token::new_uuid().into_bson(), Bson::Binary(_)));
    assert_ne!(Token::new_object_id(), Token::new_object_id());
    assert_eq!(Token::from("k").as_bson(), &Bson::String("k".into()));
}

#[test]
fn transient_errors_are_worth_retrying_and_command_errors_are_not() {
    assert!(is_worth_retrying(&Error::network("connection reset")));
    assert!(is_worth_retrying(&Error::from(CommandError::new(
        10107,
        "NotWritablePrimary",
        "not primary"
    ))));
    assert!(!is_worth_retrying(&write_error(11000, "duplicate key")));
    assert!(!is_worth_retrying(&Error::invalid_argument("bad")));
}

#[test]
fn attempts_never_go_below_one() {
    assert_eq!(RecipeOptions::default().attempts, 2);
    assert_eq!(RecipeOptions::default().attempts(0).attempts, 1);
}

#[tokio::test]
async fn a_step_is_repeated_on_transient_errors_up_to_the_limit() {
    let sent = Cell::new(0);
    let failures = Cell::new(0);
    let result: crate::error::Result<()> = repeat_step(
        3,
        |_| failures.set(failures.get() + 1),
        || {
            sent.set(sent.get() + 1);
            async { Err(Error::network("reset")) }
        },
    )
    .await;
    assert!(result.is_err());
    assert_eq!((sent.get(), failures.get()), (3, 3));
}

#[tokio::test]
async fn a_step_stops_at_the_first_success_or_command_error() {
    let sent = Cell::new(0);
    let result = repeat_step(
        5,
        |_| {},
        || {
            sent.set(sent.get() + 1);
            let n = sent.get();
            async move {
                if n < 2 {
                    Err(Error::network("reset"))
                } else {
                    Ok(n)
                }
            }
        },
    )
    .await;
    assert_eq!(result.ok(), Some(2));

    let sent = Cell::new(0);
    let result: crate::error::Result<()> = repeat_step(
        5,
        |_| {},
        || {
            sent.set(sent.get() + 1);
            async { Err(write_error(11000, "duplicate key")) }
        },
    )
    .await;
    assert!(result.is_err());
    assert_eq!(sent.get(), 1);
}
