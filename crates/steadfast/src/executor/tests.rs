//! Unit tests of the executor's pure parts: the common fields, `$readPreference` routing, and
//! the classification of failures.

use std::collections::BTreeMap;
use std::time::Duration;

use bson::{Bson, Document, Timestamp, doc};
use steadfast_core::description::ServerType;
use steadfast_core::options::{Acknowledgment, ReadConcern, ReadConcernLevel, WriteConcern};
use steadfast_core::retry::{FailureKind, OperationKind, Sent, labels};
use steadfast_core::selection::{ReadPreference, ReadPreferenceMode, SelectionCriteria};
use steadfast_core::{Deadline, TopologyType};

use super::classify::{Circumstances, DeadlineStatus, classify};
use super::fields::{
    CommonFields, read_concern_document, read_preference_document, write_concern_document,
};
use super::monitoring::is_sensitive;
use crate::conn::config::{ServerApi, ServerApiVersion};
use crate::error::{CommandError, Error};

fn circumstances(kind: OperationKind) -> Circumstances {
    Circumstances {
        kind,
        max_wire_version: 25,
        mongos: false,
        deadline: DeadlineStatus::NotSet,
        sent: Sent::Yes,
        base_backoff: None,
    }
}

#[test]
fn common_fields_are_added_after_the_body_and_replace_duplicates() {
    let lsid = bson::rawdoc! { "id": 1 };
    let cluster_time = doc! { "clusterTime": Timestamp { time: 5, increment: 1 } };
    let fields = CommonFields {
        database: "app",
        lsid: Some(&lsid),
        txn_number: Some(7),
        transaction: None,
        cluster_time: Some(&cluster_time),
        read_concern: Some(doc! { "level": "majority" }),
        write_concern: Some(doc! { "w": "majority" }),
        read_preference: Some(doc! { "mode": "secondary" }),
        max_time: Some(Duration::from_micros(300)),
        server_api: None,
        without_own_max_time: false,
    };
    let body = doc! { "insert": "c", "$db": "other", "maxTimeMS": 99_i64, "lsid": 0 };
    let body = Document::try_from(fields.encode(raw(&body)).unwrap()).unwrap();
    let keys: Vec<&str> = body.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "insert",
            "$db",
            "lsid",
            "txnNumber",
            "$clusterTime",
            "readConcern",
            "writeConcern",
            "$readPreference",
            "maxTimeMS",
        ]
    );
    assert_eq!(body.get_str("$db").ok(), Some("app"));
    assert_eq!(body.get_document("lsid").ok(), Some(&doc! { "id": 1 }));
    assert_eq!(body.get("txnNumber"), Some(&Bson::Int64(7)));
    assert_eq!(body.get_document("$clusterTime").ok(), Some(&cluster_time));
    // Under a millisecond left still sends 1: 0 would mean "no limit" to the server.
    assert_eq!(body.get_i64("maxTimeMS").ok(), Some(1));
}

fn raw(body: &Document) -> bson::RawDocumentBuf {
    bson::RawDocumentBuf::try_from(body).expect("encodable")
}

#[test]
fn the_bodys_own_max_time_is_dropped_when_asked_even_without_one_to_send() {
    let fields = CommonFields {
        database: "app",
        without_own_max_time: true,
        ..CommonFields::default()
    };
    let body = doc! { "find": "c", "maxTimeMS": 99_i64, "limit": 1 };
    let encoded = Document::try_from(fields.encode(raw(&body)).unwrap()).unwrap();
    assert_eq!(encoded, doc! { "find": "c", "limit": 1, "$db": "app" });
}

#[test]
fn nothing_optional_is_added_by_default() {
    let body = doc! { "ping": 1, "maxTimeMS": 5, "readConcern": { "level": "local" } };
    let fields = CommonFields {
        database: "admin",
        ..CommonFields::default()
    };
    let encoded = Document::try_from(fields.encode(raw(&body)).unwrap()).unwrap();
    // The operation's own fields stay when the executor sets none of the same name.
    let mut expected = body;
    expected.insert("$db", "admin");
    assert_eq!(encoded, expected);
}

#[test]
fn stable_api_fields_replace_the_bodys_own() {
    let api = ServerApi::builder()
        .version(ServerApiVersion::V1)
        .strict(true)
        .build();
    let fields = CommonFields {
        database: "admin",
        server_api: Some(&api),
        ..CommonFields::default()
    };
    let body = doc! { "ping": 1, "apiVersion": "0", "apiStrict": false };
    let encoded = Document::try_from(fields.encode(raw(&body)).unwrap()).unwrap();
    assert_eq!(
        encoded,
        doc! { "ping": 1, "$db": "admin", "apiVersion": "1", "apiStrict": true }
    );
}

#[test]
fn read_concern_carries_the_level_and_after_cluster_time() {
    let time = Timestamp {
        time: 10,
        increment: 2,
    };
    let majority = ReadConcern::new(ReadConcernLevel::Majority);
    assert_eq!(read_concern_document(None, None), None);
    assert_eq!(
        read_concern_document(Some(&majority), None),
        Some(doc! { "level": "majority" })
    );
    assert_eq!(
        read_concern_document(None, Some(time)),
        Some(doc! { "afterClusterTime": time })
    );
    assert_eq!(
        read_concern_document(Some(&majority), Some(time)),
        Some(doc! { "level": "majority", "afterClusterTime": time })
    );
}

#[test]
fn write_concern_drops_wtimeout_under_timeout_ms() {
    let mut concern = WriteConcern::default();
    assert_eq!(write_concern_document(&concern, false), None);
    concern.w = Some(Acknowledgment::Majority);
    concern.journal = Some(true);
    concern.w_timeout = Some(Duration::from_millis(250));
    assert_eq!(
        write_concern_document(&concern, false),
        Some(doc! { "w": "majority", "j": true, "wtimeout": 250_i64 })
    );
    assert_eq!(
        write_concern_document(&concern, true),
        Some(doc! { "w": "majority", "j": true })
    );
    concern.w = Some(Acknowledgment::Nodes(0));
    concern.journal = None;
    assert_eq!(
        write_concern_document(&concern, true),
        Some(doc! { "w": 0_i64 })
    );
}

fn read(mode: ReadPreferenceMode) -> SelectionCriteria {
    SelectionCriteria::ReadPreference(ReadPreference::with_mode(mode))
}

#[test]
fn a_predicate_lets_members_serve_the_read_and_tells_routers_nothing() {
    let predicate = SelectionCriteria::Predicate(std::sync::Arc::new(|_| true));
    let primary_preferred = Some(doc! { "mode": "primaryPreferred" });
    for (topology, server) in [
        (TopologyType::ReplicaSetWithPrimary, ServerType::RsSecondary),
        (TopologyType::ReplicaSetNoPrimary, ServerType::RsSecondary),
        (TopologyType::Single, ServerType::RsSecondary),
    ] {
        assert_eq!(
            read_preference_document(&predicate, topology, server),
            primary_preferred,
            "{topology:?} {server:?}"
        );
    }
    for (topology, server) in [
        (TopologyType::Sharded, ServerType::Mongos),
        (TopologyType::Single, ServerType::Mongos),
        (TopologyType::LoadBalanced, ServerType::LoadBalancer),
        (TopologyType::Single, ServerType::Standalone),
    ] {
        assert_eq!(
            read_preference_document(&predicate, topology, server),
            None,
            "{topology:?} {server:?}"
        );
    }
}

#[test]
fn hedging_is_passed_to_mongos() {
    use steadfast_core::selection::{HedgedReadOptions, ReadPreferenceOptions};
    let options = ReadPreferenceOptions::builder()
        .hedge(HedgedReadOptions::new(true))
        .build();
    let nearest = ReadPreference::Nearest {
        options: Some(options),
    };
    assert_eq!(
        read_preference_document(
            &SelectionCriteria::ReadPreference(nearest),
            TopologyType::Sharded,
            ServerType::Mongos
        ),
        Some(doc! { "mode": "nearest", "hedge": { "enabled": true } })
    );
}

#[test]
fn read_preference_follows_topology_and_server_type() {
    use ReadPreferenceMode::{Primary, Secondary};
    let primary = read(Primary);
    let secondary = read(Secondary);
    let doc_secondary = Some(doc! { "mode": "secondary" });
    // Writes never carry one.
    assert_eq!(
        read_preference_document(
            &SelectionCriteria::Write,
            TopologyType::Sharded,
            ServerType::Mongos
        ),
        None
    );
    // mongos: everything but primary is passed through.
    for topology in [TopologyType::Sharded, TopologyType::Single] {
        assert_eq!(
            read_preference_document(&primary, topology, ServerType::Mongos),
            None
        );
        assert_eq!(
            read_preference_document(&secondary, topology, ServerType::Mongos),
            doc_secondary
        );
    }
    // A standalone never sees one.
    assert_eq!(
        read_preference_document(&secondary, TopologyType::Single, ServerType::Standalone),
        None
    );
    // A replica set member reached directly accepts reads only with secondaryOk semantics.
    assert_eq!(
        read_preference_document(&primary, TopologyType::Single, ServerType::RsSecondary),
        Some(doc! { "mode": "primaryPreferred" })
    );
    assert_eq!(
        read_preference_document(&secondary, TopologyType::Single, ServerType::RsSecondary),
        doc_secondary
    );
    // Replica sets: primary is implied.
    assert_eq!(
        read_preference_document(
            &primary,
            TopologyType::ReplicaSetWithPrimary,
            ServerType::RsPrimary
        ),
        None
    );
    let tagged = ReadPreference::from_parts(
        ReadPreferenceMode::Nearest,
        vec![BTreeMap::from([("dc".to_string(), "east".to_string())])],
        Some(Duration::from_secs(120)),
    )
    .unwrap();
    assert_eq!(
        read_preference_document(
            &SelectionCriteria::ReadPreference(tagged),
            TopologyType::ReplicaSetWithPrimary,
            ServerType::RsSecondary
        ),
        Some(
            doc! { "mode": "nearest", "tags": [{ "dc": "east" }], "maxStalenessSeconds": 120_i64 }
        )
    );
}

#[test]
fn network_errors_of_retryable_writes_get_the_retryable_write_label() {
    let (facts, error) = classify(
        Error::network("reset"),
        &circumstances(OperationKind::RetryableWrite),
    );
    assert_eq!(facts.kind, FailureKind::Network);
    assert!(error.has_label(labels::RETRYABLE_WRITE_ERROR));
    assert!(facts.is_retryable_write_error());

    // Not for reads, not for writes that retryWrites (off) leaves non-retryable.
    let (_, error) = classify(
        Error::network("reset"),
        &circumstances(OperationKind::RetryableRead),
    );
    assert!(!error.has_label(labels::RETRYABLE_WRITE_ERROR));
    let (_, error) = classify(
        Error::network("reset"),
        &circumstances(OperationKind::NonRetryableWrite),
    );
    assert!(!error.has_label(labels::RETRYABLE_WRITE_ERROR));
}

#[test]
fn only_old_servers_get_the_label_from_the_code_list() {
    let not_primary = || Error::from(CommandError::new(10107, "NotWritablePrimary", "no"));
    let (facts, error) = classify(not_primary(), &circumstances(OperationKind::RetryableWrite));
    assert_eq!(facts.kind, FailureKind::Command { code: 10107 });
    assert!(
        !error.has_label(labels::RETRYABLE_WRITE_ERROR),
        "4.4+ labels itself"
    );
    let mut old = circumstances(OperationKind::RetryableWrite);
    old.max_wire_version = 8;
    let (_, error) = classify(not_primary(), &old);
    assert!(error.has_label(labels::RETRYABLE_WRITE_ERROR));

    // A mongos write concern error is never labelled by the driver.
    let wce = || {
        Error::from_write_reply(&doc! {
            "ok": 1, "n": 1, "writeConcernError": { "code": 91, "errmsg": "shutting down" }
        })
        .unwrap()
    };
    let (facts, error) = classify(wce(), &old);
    assert_eq!(facts.kind, FailureKind::WriteConcern { code: 91 });
    assert!(error.has_label(labels::RETRYABLE_WRITE_ERROR));
    old.mongos = true;
    let (_, error) = classify(wce(), &old);
    assert!(!error.has_label(labels::RETRYABLE_WRITE_ERROR));
}

#[test]
fn timeouts_become_deadline_expiries_only_under_timeout_ms_once_it_passed() {
    let mut c = circumstances(OperationKind::RetryableRead);
    let (facts, _) = classify(Error::timeout("reading"), &c);
    assert_eq!(facts.kind, FailureKind::NetworkTimeout);
    c.deadline = DeadlineStatus::Expired;
    let (facts, _) = classify(Error::timeout("reading"), &c);
    assert_eq!(facts.kind, FailureKind::DeadlineExpired);
    // MaxTimeMSExpired under timeoutMS is the deadline too, whatever the clock says.
    c.deadline = DeadlineStatus::Running;
    let (facts, _) = classify(
        Error::from(CommandError::new(50, "MaxTimeMSExpired", "time limit")),
        &c,
    );
    assert_eq!(facts.kind, FailureKind::DeadlineExpired);
}

#[test]
fn the_deadline_status_reads_timeout_ms_and_the_clock() {
    let start = crate::runtime::now();
    let later = start + Duration::from_secs(60);
    assert_eq!(
        DeadlineStatus::of(Deadline::None, later),
        DeadlineStatus::NotSet
    );
    assert_eq!(
        DeadlineStatus::of(Deadline::Unbounded, later),
        DeadlineStatus::Running
    );
    let deadline = Deadline::from_timeout(Some(Duration::from_millis(10)), start);
    assert_eq!(DeadlineStatus::of(deadline, start), DeadlineStatus::Running);
    let end = start + Duration::from_millis(10);
    assert_eq!(DeadlineStatus::of(deadline, end), DeadlineStatus::Expired);
}

#[test]
fn overload_facts_carry_labels_and_base_backoff() {
    let mut c = circumstances(OperationKind::NonRetryableWrite);
    c.base_backoff = Some(Duration::from_millis(40));
    let error = Error::from(CommandError::new(
        462,
        "IngressRequestRateLimitExceeded",
        "busy",
    ))
    .with_labels([
        labels::SYSTEM_OVERLOADED_ERROR.to_string(),
        labels::RETRYABLE_ERROR.to_string(),
    ]);
    let (facts, _) = classify(error, &c);
    assert!(facts.is_retryable_overload());
    assert_eq!(facts.base_backoff, Some(Duration::from_millis(40)));
    assert_eq!(facts.sent, Sent::Yes);
}

#[test]
fn credential_commands_and_speculative_hellos_are_sensitive() {
    assert!(is_sensitive("saslStart", &doc! {}));
    assert!(is_sensitive("createUser", &doc! {}));
    assert!(is_sensitive(
        "hello",
        &doc! { "hello": 1, "speculativeAuthenticate": {} }
    ));
    assert!(!is_sensitive("hello", &doc! { "hello": 1 }));
    assert!(!is_sensitive("insert", &doc! {}));
}
