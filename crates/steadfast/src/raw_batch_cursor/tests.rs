use bson::rawdoc;

use super::RawBatch;
use crate::error::ErrorKind;

#[test]
fn doc_slices_reads_the_first_batch_in_place() {
    let reply = rawdoc! {
        "cursor": { "id": 5_i64, "ns": "shop.orders", "firstBatch": [{ "x": 1 }, { "x": 2 }] },
        "ok": 1.0,
    };
    let batch = RawBatch::new(reply.clone());
    let xs: Vec<i32> = batch
        .doc_slices()
        .expect("a batch")
        .into_iter()
        .map(|entry| {
            let entry = entry.expect("readable");
            entry
                .as_document()
                .expect("a document")
                .get_i32("x")
                .expect("x")
        })
        .collect();
    assert_eq!(xs, [1, 2]);
    assert_eq!(batch.as_raw_document(), reply.as_ref());
    let copy = batch.clone();
    assert_eq!(copy.as_raw_document(), batch.as_raw_document());
    assert!(format!("{batch:?}").contains("RawBatch"));
}

#[test]
fn doc_slices_reads_a_get_more_batch() {
    let batch = RawBatch::new(rawdoc! {
        "cursor": { "id": 0_i64, "ns": "shop.orders", "nextBatch": [] },
        "ok": 1.0,
    });
    assert_eq!(batch.doc_slices().expect("a batch").into_iter().count(), 0);
}

#[test]
fn a_reply_without_a_batch_array_is_an_invalid_response() {
    for reply in [
        rawdoc! { "ok": 1.0 },
        rawdoc! { "cursor": { "id": 0_i64, "ns": "a.b" }, "ok": 1.0 },
        rawdoc! { "cursor": { "id": 0_i64, "ns": "a.b", "firstBatch": 3 }, "ok": 1.0 },
        rawdoc! { "cursor": { "id": 0_i64, "ns": "a.b", "nextBatch": "x" }, "ok": 1.0 },
    ] {
        let error = RawBatch::new(reply).doc_slices().expect_err("no batch");
        assert!(
            matches!(*error.kind, ErrorKind::InvalidResponse { .. }),
            "{error:?}"
        );
    }
}
