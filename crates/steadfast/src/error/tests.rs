use std::error::Error as _;

use bson::doc;
use bson::oid::ObjectId;

use super::*;

fn command_error(reply: bson::Document) -> Error {
    Error::from(CommandError::from_reply(&reply))
}

#[test]
fn command_error_carries_code_name_message_labels_and_topology_version() {
    let process_id = ObjectId::new();
    let error = command_error(doc! {
        "ok": 0,
        "code": 10107,
        "codeName": "NotWritablePrimary",
        "errmsg": "not primary",
        "errorLabels": ["RetryableWriteError"],
        "topologyVersion": { "processId": process_id, "counter": 3_i64 },
    })
    .with_address(&ServerAddress::tcp("db1", 27017));
    assert_eq!(error.code(), Some(10107));
    let command = error.command_error().expect("a command error");
    assert_eq!(command.code_name, "NotWritablePrimary");
    assert_eq!(command.message, "not primary");
    let tv = command.topology_version.expect("topology version parsed");
    assert_eq!((tv.process_id, tv.counter), (process_id, 3));
    assert!(error.has_label(RETRYABLE_WRITE_ERROR));
    assert!(
        !error.has_label("retryablewriteerror"),
        "labels are case-sensitive"
    );
    assert_eq!(
        error.labels().iter().collect::<Vec<_>>(),
        [RETRYABLE_WRITE_ERROR]
    );
    let text = error.to_string();
    for part in [
        "NotWritablePrimary",
        "10107",
        "not primary",
        "db1:27017",
        "RetryableWriteError",
    ] {
        assert!(text.contains(part), "{text:?} should mention {part}");
    }
    assert!(error.retry_history().is_empty());
}

#[test]
fn state_change_errors_are_judged_by_code_first() {
    for code in [10107, 13435, 10058] {
        let e = command_error(doc! { "ok": 0, "code": code, "errmsg": "x" });
        assert!(
            e.is_not_writable_primary() && e.is_state_change_error(),
            "{code}"
        );
        assert!(!e.is_node_recovering());
    }
    for code in [11600, 11602, 13436, 189, 91] {
        let e = command_error(doc! { "ok": 0, "code": code, "errmsg": "x" });
        assert!(
            e.is_node_recovering() && e.is_state_change_error(),
            "{code}"
        );
        assert_eq!(e.is_shutting_down(), code == 11600 || code == 91, "{code}");
    }
    // A code that is not a state change wins over a message that looks like one.
    let e = command_error(doc! { "ok": 0, "code": 2, "errmsg": "not master" });
    assert!(!e.is_state_change_error());
}

#[test]
fn message_fallback_applies_only_without_a_code() {
    let e = command_error(doc! { "ok": 0, "errmsg": "not master" });
    assert!(e.is_not_writable_primary());
    assert_eq!(e.code(), None);
    let e = command_error(doc! { "ok": 0, "errmsg": "node is recovering" });
    assert!(e.is_node_recovering() && !e.is_not_writable_primary());
    let e = command_error(doc! { "ok": 0, "errmsg": "not master or secondary; cannot read" });
    assert!(e.is_node_recovering() && !e.is_not_writable_primary());
    let e = command_error(doc! { "ok": 0, "errmsg": "something else" });
    assert!(!e.is_state_change_error());
}

#[test]
fn write_concern_errors_count_for_sdam_but_write_errors_do_not() {
    let e = Error::from_write_reply(&doc! {
        "ok": 1, "n": 0,
        "writeConcernError": { "code": 91, "errmsg": "shutting down", "errorLabels": ["RetryableWriteError"] },
    })
    .expect("a write concern error");
    assert!(e.is_shutting_down() && e.is_state_change_error());
    assert!(
        e.has_label(RETRYABLE_WRITE_ERROR),
        "labels inside writeConcernError are kept"
    );
    assert_eq!(e.code(), Some(91));

    let reply = doc! {
        "ok": 1, "n": 1,
        "writeErrors": [{ "index": 1, "code": 10107, "errmsg": "not primary" }],
    };
    let read = ReplyWriteErrors::from_reply(&reply).expect("a write error");
    assert_eq!(read.write_errors[0].index, 1);
    let e = Error::from_write_reply(&reply).expect("a write error");
    assert!(
        !e.is_state_change_error(),
        "writeErrors must not be inspected"
    );
    assert!(e.to_string().contains("not primary"));
    assert!(ReplyWriteErrors::from_reply(&doc! { "ok": 1, "n": 1 }).is_none());
}

#[test]
fn network_timeout_and_protocol_predicates() {
    let net = Error::network("reading")
        .with_source(std::io::Error::from(std::io::ErrorKind::ConnectionReset));
    assert!(net.is_network_error() && !net.is_timeout());
    assert!(net.source().is_some(), "the io error is the source");
    let timeout = Error::timeout("waiting for a reply");
    assert!(timeout.is_network_error() && timeout.is_timeout());
    let protocol = Error::protocol("bad frame");
    assert!(protocol.is_protocol_error() && !protocol.is_network_error());
    assert_eq!(protocol.code(), None);
    let overloaded = command_error(doc! {
        "ok": 0, "code": 462, "errorLabels": ["SystemOverloadedError", "RetryableError"],
    });
    assert!(overloaded.is_overload_error() && overloaded.has_label(RETRYABLE_ERROR));
}

#[test]
fn command_error_without_code_name_or_message_displays_cleanly() {
    let e = command_error(doc! { "ok": 0.0 });
    assert_eq!(e.to_string(), "command failed");
    let e = command_error(doc! { "ok": 0, "code": 8000_i64 });
    assert_eq!(e.to_string(), "command failed (code 8000)");
}

#[test]
fn address_is_kept_from_the_first_attachment() {
    let e = Error::network("x")
        .with_address(&ServerAddress::tcp("a", 1))
        .with_address(&ServerAddress::tcp("b", 2));
    assert_eq!(e.address(), Some(&ServerAddress::tcp("a", 1)));
}

#[test]
fn ok_field_accepts_every_numeric_type() {
    assert!(reply_is_ok(&doc! { "ok": 1 }));
    assert!(reply_is_ok(&doc! { "ok": 1.0 }));
    assert!(reply_is_ok(&doc! { "ok": 1_i64 }));
    assert!(reply_is_ok(&doc! { "ok": true }));
    assert!(!reply_is_ok(&doc! { "ok": 0 }));
    assert!(!reply_is_ok(&doc! { "ok": "1" }));
    assert!(!reply_is_ok(&doc! {}));
}

/// `Result<T, Error>` travels through every layer, so the error stays small: two pointers.
/// It was one until the public `kind: Box<ErrorKind>` field (the official driver's shape: code
/// written for it reads `*error.kind` and may move the payload out, which only a real `Box`
/// allows) joined the boxed rest of the error.
#[test]
fn error_is_two_pointers_wide() {
    assert_eq!(
        std::mem::size_of::<Error>(),
        2 * std::mem::size_of::<usize>()
    );
    assert_eq!(
        std::mem::size_of::<Result<()>>(),
        2 * std::mem::size_of::<usize>()
    );
}

#[test]
fn labels_from_the_server_and_the_driver_are_listed_once_sorted() {
    let error = command_error(doc! {
        "ok": 0, "code": 91, "errmsg": "x",
        "errorLabels": ["Zed", "RetryableWriteError", "Custom"],
    })
    .with_labels(["RetryableWriteError", "SystemOverloadedError"]);
    assert_eq!(
        error.labels().iter().collect::<Vec<_>>(),
        [
            "Custom",
            "RetryableWriteError",
            "SystemOverloadedError",
            "Zed"
        ]
    );
    assert!(error.has_label("Custom") && error.has_label(SYSTEM_OVERLOADED_ERROR));
    assert!(error.is_shutting_down() && error.is_node_recovering());
}

#[test]
fn facts_read_the_server_reply_once_for_retry_sdam_and_monitors() {
    let error = command_error(doc! { "ok": 0, "code": 10107, "errmsg": "not primary" });
    let ErrorFacts::Command(reply) = error.facts() else {
        panic!("{error:?}")
    };
    assert_eq!(
        (reply.code, reply.message.as_str()),
        (Some(10107), "not primary")
    );
    let no_code = command_error(doc! { "ok": 0, "errmsg": "node is recovering" });
    assert!(matches!(no_code.facts(), ErrorFacts::Command(r) if r.code.is_none()));
    assert_eq!(
        Error::timeout("late").facts(),
        ErrorFacts::Connection(ConnectionFailure::Timeout)
    );
    assert_eq!(
        Error::protocol("bad").facts(),
        ErrorFacts::Connection(ConnectionFailure::Protocol)
    );
    assert_eq!(Error::invalid_argument("x").facts(), ErrorFacts::Other);
}

#[test]
fn a_reply_with_write_errors_and_a_write_concern_error_is_judged_by_the_concern() {
    // What the executor hands SDAM and the retry rules for an acknowledged reply: the write
    // concern error, even when the reply also refused a statement.
    let reply = doc! {
        "ok": 1, "n": 0,
        "writeErrors": [{ "index": 0, "code": 11000, "errmsg": "dup" }],
        "writeConcernError": { "code": 91, "errmsg": "shutting down" },
        "errorLabels": ["RetryableWriteError"],
    };
    let read = ReplyWriteErrors::from_reply(&reply).expect("failures");
    let error = Error::from_write_concern_reply(read).expect("a write concern error");
    assert!(matches!(
        *error.kind,
        ErrorKind::Write(WriteFailure::WriteConcernError(ref wce)) if wce.code == 91
    ));
    assert!(error.is_shutting_down() && error.has_label(RETRYABLE_WRITE_ERROR));
    assert_eq!(error.outcome(), Outcome::Applied);
}

#[test]
fn contains_label_looks_through_to_the_driver_error_behind_a_timeout() {
    let cause = command_error(doc! {
        "ok": 0, "code": 91, "errmsg": "x", "errorLabels": ["RetryableWriteError"],
    });
    let timeout = Error::timeout("after 1 attempt").with_source(cause);
    assert!(
        !timeout.has_label(RETRYABLE_WRITE_ERROR),
        "not its own label"
    );
    assert!(timeout.contains_label(RETRYABLE_WRITE_ERROR));
    let owned = String::from(RETRYABLE_WRITE_ERROR);
    assert!(timeout.contains_label(&owned));
    assert!(!timeout.contains_label(TRANSIENT_TRANSACTION_ERROR));
    let io = Error::network("x").with_source(std::io::Error::other("reset"));
    assert!(!io.contains_label(RETRYABLE_WRITE_ERROR));
}

#[test]
fn a_custom_value_is_read_back_by_its_type() {
    let error = Error::custom(42_u32);
    assert_eq!(error.get_custom::<u32>(), Some(&42));
    assert_eq!(error.get_custom::<i64>(), None);
    assert_eq!(error.class(), ErrorClass::Other);
    assert_eq!(
        Error::custom(String::from("stop")).to_string(),
        "application error: stop"
    );
    assert_eq!(Error::network("x").get_custom::<u32>(), None);
}

#[test]
fn an_io_error_keeps_its_kind_the_message_and_the_cause() {
    let cause = std::io::Error::from(std::io::ErrorKind::NotFound);
    let error = Error::io("cannot read the CA file /x.pem", cause);
    let ErrorKind::Io(ref io) = *error.kind else {
        panic!("{error:?}")
    };
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert!(error.to_string().contains("/x.pem"), "{error}");
    assert!(error.source().is_some());
}

#[test]
fn connection_failures_and_timeouts_are_io_errors_told_apart_by_the_driver() {
    let reset = Error::network_io(
        "reading a reply failed",
        std::io::Error::from(std::io::ErrorKind::ConnectionReset),
    );
    let ErrorKind::Io(ref io) = *reset.kind else {
        panic!("{reset:?}")
    };
    assert_eq!(io.kind(), std::io::ErrorKind::ConnectionReset);
    assert!(reset.is_network_error() && !reset.is_timeout());
    assert_eq!(
        reset.to_string(),
        "network error: reading a reply failed: connection reset"
    );

    let late = Error::timeout("waiting for a reply");
    assert!(
        matches!(*late.kind, ErrorKind::Io(ref io) if io.kind() == std::io::ErrorKind::TimedOut)
    );
    assert!(late.is_network_error() && late.is_timeout());
    assert_eq!(late.to_string(), "timed out waiting for a reply");

    // The operating system's own TimedOut (a connect with no answer) stays a connection
    // failure for SDAM and the retry rules, as before.
    let unanswered = Error::network_io(
        "cannot connect to db1:27017",
        std::io::Error::from(std::io::ErrorKind::TimedOut),
    );
    assert!(unanswered.is_network_error() && !unanswered.is_timeout());
    assert_eq!(
        unanswered.facts(),
        ErrorFacts::Connection(ConnectionFailure::Network)
    );

    // A local file's I/O error is neither.
    let file = Error::io(
        "cannot read the CA file",
        std::io::Error::from(std::io::ErrorKind::NotFound),
    );
    assert!(!file.is_network_error() && !file.is_timeout());
    assert_eq!(file.facts(), ErrorFacts::Other);
    assert_eq!(file.class(), ErrorClass::Other);
    assert_eq!(reset.class(), ErrorClass::Transient);
}

#[test]
fn a_connection_lost_to_a_pool_clear_is_the_official_kind_and_still_a_network_error() {
    let cleared = Error::pool_cleared("the connection pool was cleared");
    assert!(matches!(
        *cleared.kind,
        ErrorKind::ConnectionPoolCleared { .. }
    ));
    // Retry rules and SDAM read it as before, when it was a network error.
    assert!(cleared.is_network_error() && !cleared.is_timeout());
    assert_eq!(
        cleared.facts(),
        ErrorFacts::Connection(ConnectionFailure::Network)
    );
    assert_eq!(cleared.class(), ErrorClass::Transient);
}

#[test]
fn a_document_that_does_not_fit_the_cursor_type_is_a_deserialization_error() {
    #[derive(Debug, serde::Deserialize)]
    struct Item {
        #[allow(dead_code, reason = "only its type matters")]
        qty: i32,
    }
    let document = bson::rawdoc! { "qty": "many" };
    let error = crate::cursor::deserialize::<Item>(Some(&document)).expect_err("a string");
    assert!(
        matches!(*error.kind, ErrorKind::BsonDeserialization(_)),
        "{error:?}"
    );
    assert_eq!(error.class(), ErrorClass::Other);
    let none = crate::cursor::deserialize::<Item>(None).expect_err("no document");
    assert!(matches!(*none.kind, ErrorKind::InvalidArgument { .. }));
}

#[test]
fn a_bulk_write_stopped_by_an_error_reports_that_error_s_code_and_timeout() {
    let refused = WriteError {
        code: 11000,
        code_name: None,
        message: "dup".to_owned(),
        details: None,
    };
    let failure = BulkWriteError {
        write_errors: [(0, refused)].into_iter().collect(),
        ..BulkWriteError::default()
    };
    // Without a stopping error: the first write error's code.
    let plain = Error::new(ErrorKind::BulkWrite(failure.clone()));
    assert_eq!(plain.code(), Some(11000));
    assert!(!plain.is_timeout());
    // Stopped by a command error: that error's code, not a write error's.
    let stopping = command_error(doc! { "ok": 0, "code": 8, "codeName": "UnknownError" });
    let stopped = Error::new(ErrorKind::BulkWrite(failure.clone())).with_source(stopping);
    assert_eq!(stopped.code(), Some(8));
    // Stopped by a timeout: a timeout.
    let timed_out =
        Error::new(ErrorKind::BulkWrite(failure)).with_source(Error::timeout("reading"));
    assert!(timed_out.is_timeout());
    assert_eq!(timed_out.code(), None);
}

#[test]
fn write_errors_serialize_with_the_servers_field_names() {
    use crate::error::{WriteConcernError, WriteError, WriteFailure};
    let reply = bson::doc! { "code": 11000, "codeName": "DuplicateKey", "errmsg": "E11000 dup", "errInfo": { "k": 1 } };
    let error: WriteError = bson::deserialize_from_document(reply.clone()).unwrap();
    assert_eq!(error.code, 11000);
    assert_eq!(error.code_name.as_deref(), Some("DuplicateKey"));
    assert_eq!(error.message, "E11000 dup");
    assert_eq!(bson::serialize_to_document(&error).unwrap(), reply);
    let concern: WriteConcernError = bson::deserialize_from_document(
        bson::doc! { "code": 64, "errmsg": "waiting", "errInfo": null },
    )
    .unwrap();
    assert_eq!(concern.message, "waiting");
    let failure = WriteFailure::WriteConcernError(concern);
    let shown = bson::serialize_to_document(&failure).unwrap();
    assert!(shown.contains_key("WriteConcernError"), "{shown}");
}

#[test]
fn a_command_error_keeps_the_servers_base_backoff_and_serializes_as_the_reply() {
    use crate::error::CommandError;
    let reply = bson::doc! { "ok": 0, "code": 462, "codeName": "IngressRequestRateLimitExceeded",
    "errmsg": "shed", "baseBackoffMS": 250, "errorLabels": ["SystemOverloadedError"] };
    let error = CommandError::from_reply(&reply);
    assert_eq!(
        error.base_backoff,
        Some(std::time::Duration::from_millis(250))
    );
    let shown = bson::serialize_to_document(&error).unwrap();
    assert_eq!(
        shown,
        bson::doc! { "code": 462, "codeName": "IngressRequestRateLimitExceeded", "errmsg": "shed", "baseBackoffMS": 250_i64 }
    );
    let back: CommandError = bson::deserialize_from_document(shown).unwrap();
    assert_eq!(back.code_if_present(), Some(462));
    assert_eq!(back.base_backoff, error.base_backoff);
    assert_eq!(
        crate::Error::from(error).base_backoff(),
        Some(std::time::Duration::from_millis(250))
    );
    let none = CommandError::from_reply(&bson::doc! { "ok": 0, "code": 1, "baseBackoffMS": -5 });
    assert_eq!(none.base_backoff, None);
}
