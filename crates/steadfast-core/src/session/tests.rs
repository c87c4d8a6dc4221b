use std::time::{Duration, Instant};

use bson::{Timestamp, doc};
use rand::SeedableRng;
use rand::rngs::StdRng;

use super::*;

const THIRTY_MIN: Option<Duration> = Some(Duration::from_secs(30 * 60));

#[test]
fn session_ids_are_version_4_uuids() {
    let mut rng = StdRng::seed_from_u64(7);
    let s = ServerSession::new(&mut rng, Instant::now());
    assert_eq!(s.id_bytes()[6] >> 4, 4);
    assert_eq!(s.id_bytes()[8] >> 6, 0b10);
    let lsid = s.lsid();
    let Some(bson::Bson::Binary(id)) = lsid.get("id") else {
        panic!("lsid.id is not binary")
    };
    assert_eq!(id.subtype, bson::spec::BinarySubtype::Uuid);
    assert_eq!(id.bytes.len(), 16);
}

#[test]
fn the_encoded_lsid_is_the_lsid_document() {
    let mut rng = StdRng::seed_from_u64(9);
    let s = ServerSession::new(&mut rng, Instant::now());
    let decoded = Document::try_from(s.encoded_lsid()).expect("valid BSON");
    assert_eq!(decoded, s.lsid());
}

#[test]
fn pool_reuses_most_recent_first() {
    let mut rng = StdRng::seed_from_u64(1);
    let now = Instant::now();
    let mut pool = SessionPool::new();
    let a = pool.acquire(THIRTY_MIN, false, &mut rng, now);
    let b = pool.acquire(THIRTY_MIN, false, &mut rng, now);
    assert_ne!(a.id_bytes(), b.id_bytes());
    let (a_id, b_id) = (*a.id_bytes(), *b.id_bytes());
    pool.release(a, THIRTY_MIN, now);
    pool.release(b, THIRTY_MIN, now);
    assert_eq!(
        *pool.acquire(THIRTY_MIN, false, &mut rng, now).id_bytes(),
        b_id
    );
    assert_eq!(
        *pool.acquire(THIRTY_MIN, false, &mut rng, now).id_bytes(),
        a_id
    );
}

#[test]
fn dirty_and_expiring_sessions_are_discarded() {
    let mut rng = StdRng::seed_from_u64(2);
    let t0 = Instant::now();
    let mut pool = SessionPool::new();
    let mut dirty = pool.acquire(THIRTY_MIN, false, &mut rng, t0);
    dirty.mark_dirty();
    pool.release(dirty, THIRTY_MIN, t0);
    assert!(pool.is_empty());

    let old = pool.acquire(THIRTY_MIN, false, &mut rng, t0);
    let old_id = *old.id_bytes();
    pool.release(old, THIRTY_MIN, t0);
    // 29 minutes later the session has less than a minute left: acquire skips it.
    let later = t0 + Duration::from_secs(29 * 60);
    let fresh = pool.acquire(THIRTY_MIN, false, &mut rng, later);
    assert_ne!(*fresh.id_bytes(), old_id);
    assert!(pool.is_empty());
}

#[test]
fn release_prunes_expiring_sessions_from_the_back() {
    let mut rng = StdRng::seed_from_u64(3);
    let t0 = Instant::now();
    let mut pool = SessionPool::new();
    let old = ServerSession::new(&mut rng, t0);
    pool.release(old, THIRTY_MIN, t0);
    let later = t0 + Duration::from_secs(29 * 60 + 30);
    let fresh = ServerSession::new(&mut rng, later);
    pool.release(fresh, THIRTY_MIN, later);
    assert_eq!(pool.len(), 1);
}

#[test]
fn unknown_timeout_never_pools_and_load_balanced_ignores_expiry() {
    let mut rng = StdRng::seed_from_u64(4);
    let now = Instant::now();
    let mut pool = SessionPool::new();
    let s = ServerSession::new(&mut rng, now);
    pool.release(s, None, now);
    assert!(
        pool.is_empty(),
        "sessions unsupported or unknown: nothing pooled"
    );
    let s = ServerSession::new(&mut rng, now);
    let id = *s.id_bytes();
    pool.release(s, THIRTY_MIN, now);
    let later = now + Duration::from_secs(3600);
    assert_eq!(*pool.acquire(None, true, &mut rng, later).id_bytes(), id);
}

#[test]
fn txn_numbers_increase_per_session() {
    let mut rng = StdRng::seed_from_u64(5);
    let mut s = ServerSession::new(&mut rng, Instant::now());
    assert_eq!(s.txn_number(), 0);
    assert_eq!(s.next_txn_number(), 1);
    assert_eq!(s.next_txn_number(), 2);
}

#[test]
fn end_sessions_batches_ids() {
    let mut rng = StdRng::seed_from_u64(6);
    let now = Instant::now();
    let mut pool = SessionPool::new();
    for _ in 0..3 {
        pool.release(ServerSession::new(&mut rng, now), THIRTY_MIN, now);
    }
    let batches = pool.drain_for_end_sessions();
    assert_eq!(batches.len(), 1);
    assert_eq!(batches[0].len(), 3);
    assert!(pool.is_empty());
}

fn ct(time: u32, increment: u32) -> ClusterTime {
    ClusterTime::from_document(doc! {
        "clusterTime": Timestamp { time, increment },
        "signature": { "hash": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![time as u8; 20] }, "keyId": 7_i64 },
    })
    .unwrap()
}

#[test]
fn cluster_time_advances_only_forward() {
    let mut current = None;
    assert!(advance_cluster_time(&mut current, &ct(10, 1)));
    assert!(!advance_cluster_time(&mut current, &ct(9, 100)));
    assert!(advance_cluster_time(&mut current, &ct(10, 2)));
    assert_eq!(current.as_ref().unwrap().timestamp().increment, 2);
    let reply = doc! { "ok": 1, "$clusterTime": { "clusterTime": Timestamp { time: 5, increment: 1 }, "signature": {} } };
    let parsed = ClusterTime::from_reply(&reply).unwrap();
    assert_eq!(parsed.timestamp().time, 5);
    let bigger = ct(20, 0);
    assert_eq!(
        newest_cluster_time(Some(&parsed), Some(&bigger)),
        Some(&bigger)
    );
    assert_eq!(newest_cluster_time(None, Some(&parsed)), Some(&parsed));
}

#[test]
fn cluster_times_compare_by_timestamp_only() {
    let a = ct(10, 1);
    let mut other_signature = a.as_document().clone();
    other_signature.insert("signature", doc! { "keyId": 1_i64 });
    let b = ClusterTime::from_document(other_signature).unwrap();
    assert_eq!(a, b);
    assert_eq!(a.cmp(&b), std::cmp::Ordering::Equal);
    assert!(ct(10, 2) > a);
    assert!(ct(9, 100) < a);
    assert!(ct(11, 0) > ct(10, u32::MAX));
    assert_eq!(
        std::cmp::max(ct(3, 1), ct(2, 9)).timestamp(),
        Timestamp {
            time: 3,
            increment: 1
        }
    );
}

#[test]
fn cluster_time_serde_is_the_server_document() {
    let time = ct(42, 3);
    let serialized = bson::serialize_to_document(&time).unwrap();
    assert_eq!(&serialized, time.as_document());
    assert_eq!(
        serialized.get_timestamp("clusterTime").unwrap(),
        Timestamp {
            time: 42,
            increment: 3
        }
    );
    assert_eq!(
        serialized
            .get_document("signature")
            .unwrap()
            .get_i64("keyId")
            .unwrap(),
        7
    );
    let back: ClusterTime = bson::deserialize_from_document(serialized).unwrap();
    assert_eq!(back.timestamp(), time.timestamp());
    assert_eq!(back.signature(), time.signature());
    assert_eq!(back.as_document(), time.as_document());
    let no_signature = doc! { "clusterTime": Timestamp { time: 1, increment: 1 } };
    assert!(bson::deserialize_from_document::<ClusterTime>(no_signature).is_err());
    let no_time = doc! { "clusterTime": 5, "signature": {} };
    assert!(bson::deserialize_from_document::<ClusterTime>(no_time).is_err());
}

#[test]
fn load_balanced_release_keeps_clean_sessions_without_a_timeout() {
    let mut rng = StdRng::seed_from_u64(5);
    let now = Instant::now();
    let mut pool = SessionPool::new();
    let kept = ServerSession::new(&mut rng, now);
    let id = *kept.id_bytes();
    pool.release_load_balanced(kept);
    let mut dirty = ServerSession::new(&mut rng, now);
    dirty.mark_dirty();
    pool.release_load_balanced(dirty);
    assert_eq!(pool.len(), 1, "the dirty session is discarded");
    let later = now + Duration::from_secs(24 * 60 * 60);
    assert_eq!(*pool.acquire(None, true, &mut rng, later).id_bytes(), id);
}
