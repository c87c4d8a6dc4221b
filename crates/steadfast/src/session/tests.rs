//! Session bookkeeping without a server: ids, time advancement, pooling.

use crate::options::ClientOptions;
use bson::{Timestamp, doc};
use steadfast_core::ServerAddress;

use super::*;

/// A client whose only seed refuses connections: nothing here talks to a server.
fn offline_client() -> Client {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let mut options = ClientOptions::default();
    options.hosts = vec![ServerAddress::tcp("127.0.0.1", port)];
    Client::with_options(options).unwrap()
}

fn ts(time: u32, increment: u32) -> Timestamp {
    Timestamp { time, increment }
}

#[tokio::test]
async fn a_session_has_a_uuid_lsid_and_starts_without_times() {
    let client = offline_client();
    let session = client.start_session().await.unwrap();
    let id = session.id().get_binary_generic("id");
    assert!(
        id.is_err(),
        "the id is a UUID (subtype 4), not generic binary"
    );
    let bson::Bson::Binary(binary) = session.id().get("id").unwrap() else {
        panic!("lsid.id is binary");
    };
    assert_eq!(binary.subtype, bson::spec::BinarySubtype::Uuid);
    assert_eq!(binary.bytes.len(), 16);
    assert!(session.cluster_time().is_none());
    assert!(session.operation_time().is_none());
    assert!(session.is_causally_consistent());
    assert!(!session.is_dirty());
    let other = client
        .start_session_with_options(SessionOptions::default().causal_consistency(false))
        .await
        .unwrap();
    assert_ne!(
        session.id(),
        other.id(),
        "two live sessions never share an id"
    );
    assert!(!other.is_causally_consistent());
}

#[tokio::test]
async fn times_only_move_forward() {
    let client = offline_client();
    let mut session = client.start_session().await.unwrap();
    session.advance_operation_time(ts(10, 1));
    session.advance_operation_time(ts(9, 5));
    assert_eq!(session.operation_time(), Some(ts(10, 1)));
    session.advance_operation_time(ts(10, 2));
    assert_eq!(session.operation_time(), Some(ts(10, 2)));

    let time = |document| bson::deserialize_from_document::<ClusterTime>(document).unwrap();
    let newer = time(doc! { "clusterTime": ts(20, 1), "signature": { "keyId": 1_i64 } });
    let older = time(doc! { "clusterTime": ts(19, 9), "signature": { "keyId": 2_i64 } });
    session.advance_cluster_time(&newer);
    session.advance_cluster_time(&older);
    assert_eq!(session.cluster_time(), Some(&newer));
    let sent = session.cluster_time().unwrap().as_document();
    assert_eq!(
        sent.get_document("signature")
            .unwrap()
            .get_i64("keyId")
            .unwrap(),
        1
    );
    // The client's own cluster time is never advanced by a session.
    assert!(client.executor().topology().cluster_time().is_none());
}

#[tokio::test]
async fn ended_sessions_are_reused_unless_dirty() {
    let client = offline_client();
    // The server's session timeout is unknown until a server is discovered, so nothing can be
    // known not to expire: released sessions are dropped rather than pooled.
    let session = client.start_session().await.unwrap();
    drop(session);
    assert_eq!(client.executor().pooled_sessions(), 0);

    let mut dirty = client.start_session().await.unwrap();
    dirty.mark_dirty();
    assert!(dirty.is_dirty());
    drop(dirty);
    assert_eq!(client.executor().pooled_sessions(), 0);
}

#[tokio::test]
async fn transaction_numbers_increase_per_server_session() {
    let client = offline_client();
    let mut session = client.start_session().await.unwrap();
    assert_eq!(session.next_txn_number(), Some(1));
    assert_eq!(session.next_txn_number(), Some(2));
}

#[tokio::test]
async fn no_session_after_shutdown() {
    let client = offline_client();
    let handle = client.clone();
    client.shutdown().await;
    let error = handle.start_session().await.unwrap_err();
    assert!(error.to_string().contains("shut down"), "{error}");
    assert!(
        matches!(*error.kind, crate::ErrorKind::Shutdown),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_session_belongs_to_the_executor_of_its_client_and_of_its_clones_only() {
    let client = offline_client();
    let other = offline_client();
    let session = client.start_session().await.unwrap();
    assert!(session.belongs_to(client.clone().executor()));
    assert!(!session.belongs_to(other.executor()));
    // The handle the session gives back runs on the same executor.
    assert!(std::sync::Arc::ptr_eq(
        session.client().executor(),
        client.executor()
    ));
}
