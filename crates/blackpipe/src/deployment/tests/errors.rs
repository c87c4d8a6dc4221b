use bson::doc;
use bson::oid::ObjectId;

use crate::deployment::TopologyVersion;
use crate::deployment::errors::{
    SessionFacts, code_name, default_labels, error_reply, finish_reply,
};

fn version() -> TopologyVersion {
    TopologyVersion {
        process_id: ObjectId::from_bytes([1; 12]),
        counter: 7,
    }
}

const RETRYABLE_WRITE: SessionFacts = SessionFacts {
    has_txn_number: true,
    in_transaction: false,
    commit_or_abort: false,
};

#[test]
fn code_names_fall_back_to_location() {
    assert_eq!(code_name(10107), "NotWritablePrimary");
    assert_eq!(code_name(462), "IngressRequestRateLimitExceeded");
    assert_eq!(code_name(123_456), "Location123456");
}

#[test]
fn retryable_write_gets_the_label_for_retryable_codes_only() {
    for code in [
        91, 189, 262, 10107, 11600, 11602, 13435, 13436, 6, 7, 89, 9001,
    ] {
        assert_eq!(
            default_labels(Some(code), None, RETRYABLE_WRITE),
            vec!["RetryableWriteError"],
            "code {code}"
        );
    }
    assert!(default_labels(Some(11000), None, RETRYABLE_WRITE).is_empty());
    // No txnNumber: not a retryable write, no label.
    assert!(default_labels(Some(91), None, SessionFacts::default()).is_empty());
    // Inside a transaction, only commit/abort get RetryableWriteError; other statements get
    // TransientTransactionError instead.
    let in_transaction = SessionFacts {
        in_transaction: true,
        ..RETRYABLE_WRITE
    };
    assert_eq!(
        default_labels(Some(91), None, in_transaction),
        vec!["TransientTransactionError"]
    );
    let commit = SessionFacts {
        commit_or_abort: true,
        ..in_transaction
    };
    assert_eq!(
        default_labels(Some(91), None, commit),
        vec!["RetryableWriteError"]
    );
}

#[test]
fn transaction_errors_get_the_transient_label_as_mongod_gives_it() {
    let in_transaction = SessionFacts {
        in_transaction: true,
        ..RETRYABLE_WRITE
    };
    let commit = SessionFacts {
        commit_or_abort: true,
        ..in_transaction
    };
    let transient = vec!["TransientTransactionError".to_owned()];
    for code in [112, 251, 10107, 246] {
        assert_eq!(
            default_labels(Some(code), None, in_transaction),
            transient,
            "code {code}"
        );
    }
    assert!(default_labels(Some(11000), None, in_transaction).is_empty());
    assert!(default_labels(Some(50), None, in_transaction).is_empty());
    // A writeConcernError inside a transaction statement is not transient.
    assert!(default_labels(None, Some(91), in_transaction).is_empty());
    assert_eq!(default_labels(Some(251), None, commit), transient);
    assert_eq!(default_labels(Some(112), None, commit), transient);
    assert_eq!(default_labels(Some(267), None, commit), transient);
    // NoSuchTransaction with a writeConcernError on commit: the commit may have happened.
    assert!(default_labels(Some(251), Some(64), commit).is_empty());
    // Outside a transaction, never.
    assert!(default_labels(Some(112), None, RETRYABLE_WRITE).is_empty());
}

#[test]
fn write_concern_error_codes_count_too() {
    assert_eq!(
        default_labels(None, Some(91), RETRYABLE_WRITE),
        vec!["RetryableWriteError"]
    );
    assert!(default_labels(None, Some(64), RETRYABLE_WRITE).is_empty());
}

#[test]
fn overload_is_labelled_for_every_command() {
    assert_eq!(
        default_labels(Some(462), None, SessionFacts::default()),
        vec!["SystemOverloadedError", "RetryableError"]
    );
}

#[test]
fn session_facts_read_the_command() {
    let facts = SessionFacts::of("insert", &doc! {"insert": "c", "txnNumber": 1_i64});
    assert_eq!(facts, RETRYABLE_WRITE);
}

#[test]
fn finish_adds_labels_and_topology_version_to_state_change_errors() {
    let mut reply = error_reply(10107, "not primary");
    finish_reply(&mut reply, RETRYABLE_WRITE, None, version());
    assert_eq!(reply.get_str("codeName").unwrap(), "NotWritablePrimary");
    assert_eq!(
        reply.get_array("errorLabels").unwrap(),
        &vec![bson::Bson::from("RetryableWriteError")]
    );
    assert_eq!(
        reply.get_document("topologyVersion").unwrap(),
        &doc! {"processId": version().process_id, "counter": 7_i64}
    );
}

#[test]
fn injected_shutdown_errors_carry_no_topology_version() {
    for code in [91, 11600] {
        let mut reply = error_reply(code, "Failing command via 'failCommand' failpoint");
        finish_reply(&mut reply, RETRYABLE_WRITE, None, version());
        assert!(!reply.contains_key("topologyVersion"), "{reply}");
    }
}

#[test]
fn finish_honours_an_override_even_when_empty() {
    let mut reply = error_reply(91, "shutting down");
    finish_reply(&mut reply, RETRYABLE_WRITE, Some(&[]), version());
    assert!(!reply.contains_key("errorLabels"));
    let mut reply = error_reply(2, "bad");
    finish_reply(
        &mut reply,
        SessionFacts::default(),
        Some(&["Custom".to_string()]),
        version(),
    );
    assert_eq!(
        reply.get_array("errorLabels").unwrap(),
        &vec![bson::Bson::from("Custom")]
    );
    assert!(!reply.contains_key("topologyVersion"));
}

#[test]
fn finish_labels_a_successful_write_with_a_write_concern_error() {
    let mut reply = doc! {"n": 1, "writeConcernError": {"code": 91, "errmsg": "x"}, "ok": 1.0};
    finish_reply(&mut reply, RETRYABLE_WRITE, None, version());
    assert_eq!(
        reply.get_array("errorLabels").unwrap(),
        &vec![bson::Bson::from("RetryableWriteError")]
    );
    assert!(!reply.contains_key("topologyVersion"));
    let mut plain = doc! {"n": 1, "ok": 1.0};
    finish_reply(&mut plain, RETRYABLE_WRITE, None, version());
    assert_eq!(plain, doc! {"n": 1, "ok": 1.0});
}
