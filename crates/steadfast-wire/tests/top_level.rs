//! `find_top_level` must find what bson's `RawDocument::get` finds, at a fraction of its cost.
//!
//! The oracle is bson's own element iterator, stopped at the first element with the key (as
//! `RawDocument::get` does). On valid documents the two must agree exactly; on mutated ones,
//! whatever `find_top_level` reports must be what the oracle reports, and every document the
//! oracle cannot read must be refused.

use bson::raw::{RawDocument, RawDocumentBuf};
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, Regex, doc, oid::ObjectId};
use proptest::prelude::*;
use steadfast_wire::{WireError, find_top_level};

mod support;
use support::{apply, cases, edit};

/// `PROPTEST_CASES` from the environment if set, else `default`.
/// What bson's iterator says: `Ok(Some(value))` for the first element named `key` (the value
/// `None` when the element is there but its value cannot be read), `Ok(None)` when the
/// iteration ends without one, `Err` when it fails first.
fn oracle(document: &RawDocument, key: &str) -> Result<Option<Option<Bson>>, ()> {
    for element in document.iter_elements() {
        let element = element.map_err(|_| ())?;
        if element.key().as_str() == key {
            let value = element.value().ok().and_then(|v| Bson::try_from(v).ok());
            return Ok(Some(value));
        }
    }
    Ok(None)
}

/// The value of the element at `range`, read back through bson.
fn value_at(document: &RawDocument, range: std::ops::Range<usize>) -> Option<Bson> {
    let element = &document.as_bytes()[range];
    let mut framed = i32::try_from(element.len() + 5)
        .expect("small")
        .to_le_bytes()
        .to_vec();
    framed.extend_from_slice(element);
    framed.push(0);
    let single = RawDocumentBuf::from_bytes(framed).ok()?;
    let (_, value) = single.iter().next()?.ok()?;
    Bson::try_from(value).ok()
}

fn ours(document: &RawDocument, key: &str) -> Result<Option<Option<Bson>>, ()> {
    match find_top_level(document, key) {
        Ok(found) => Ok(found.map(|range| value_at(document, range))),
        Err(WireError::InvalidBson(_)) => Err(()),
        Err(other) => panic!("unexpected error kind {other:?}"),
    }
}

/// A document with a field of every common type around an `_id` in the middle, a nested `_id`
/// before it and keys that start like `_id`.
fn sample() -> Vec<u8> {
    doc! {
        "double": 1.5,
        "string": "héllo",
        "_i": 1,
        "_idx": 2,
        "nested": { "_id": "not this one", "a": [1, { "_id": 3 }] },
        "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
        "regex": Regex {
            pattern: "^a.*b$".to_owned().try_into().expect("no NUL"),
            options: "i".to_owned().try_into().expect("no NUL"),
        },
        "_id": ObjectId::from_bytes([7; 12]),
        "after": "tail",
        "int64": 64_i64,
        "null": Bson::Null,
    }
    .to_vec()
    .expect("serializes")
}

#[test]
fn finds_the_top_level_id_wherever_it_is() {
    let id = ObjectId::from_bytes([7; 12]);
    let bytes = sample();
    let document = RawDocument::from_bytes(&bytes).expect("valid");
    assert_eq!(ours(document, "_id"), Ok(Some(Some(Bson::ObjectId(id)))));
    assert_eq!(ours(document, "_id"), oracle(document, "_id"));

    for document in [
        doc! { "_id": 5, "a": 1 },
        doc! { "a": 1, "b": { "c": 2 }, "_id": "last" },
        doc! { "_id": { "nested": [1, 2] } },
    ] {
        let bytes = document.to_vec().expect("serializes");
        let raw = RawDocument::from_bytes(&bytes).expect("valid");
        let expected = document.get("_id").cloned();
        assert_eq!(ours(raw, "_id"), Ok(Some(expected)), "{document}");
    }
}

#[test]
fn reports_none_when_only_nested_or_similar_keys_exist() {
    for document in [
        doc! {},
        doc! { "a": 1 },
        doc! { "_i": 1, "_idx": 2, "id": 3, "nested": { "_id": 4 }, "list": [{ "_id": 5 }] },
    ] {
        let bytes = document.to_vec().expect("serializes");
        let raw = RawDocument::from_bytes(&bytes).expect("valid");
        assert_eq!(ours(raw, "_id"), Ok(None), "{document}");
    }
}

#[test]
fn malformed_elements_before_the_key_are_refused() {
    // Unknown type, a string longer than the document, a key without its NUL.
    let cases: [&[u8]; 3] = [
        &[0x20, b'a', 0, 1],
        &[0x02, b'a', 0, 0x40, 0, 0, 0, b'x', 0],
        &[0x10, b'a', b'b'],
    ];
    for elements in cases {
        let mut bytes = i32::try_from(elements.len() + 5)
            .expect("small")
            .to_le_bytes()
            .to_vec();
        bytes.extend_from_slice(elements);
        bytes.push(0);
        let document = RawDocument::from_bytes(&bytes).expect("frame is valid");
        assert_eq!(ours(document, "_id"), Err(()), "{elements:?}");
        assert_eq!(oracle(document, "_id"), Err(()), "{elements:?}");
    }
}

#[test]
fn a_key_that_is_not_utf8_is_refused_like_bson_does() {
    let mut bytes = vec![0, 0, 0, 0, 0x10, 0xFF, 0xFE, 0, 1, 0, 0, 0, 0];
    let len = i32::try_from(bytes.len()).expect("small");
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    let document = RawDocument::from_bytes(&bytes).expect("frame is valid");
    assert_eq!(oracle(document, "_id"), Err(()));
    assert_eq!(ours(document, "_id"), Err(()));
}

/// Keys of every length around the eight-byte steps of the key scan, ASCII, other UTF-8 and
/// not UTF-8 at every position, before an `_id`: the same answer as bson's.
#[test]
fn keys_of_every_length_and_encoding_read_like_bson_does() {
    for len in 0..=24 {
        for odd_at in std::iter::once(None).chain((0..len).map(Some)) {
            for odd in [&[0xC3, 0xA9][..], &[0xFF][..], &[0x80][..]] {
                let mut key: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
                if let Some(at) = odd_at {
                    key.splice(at..at + 1, odd.iter().copied());
                }
                let mut elements = vec![0x10];
                elements.extend_from_slice(&key);
                elements.extend_from_slice(&[0, 1, 0, 0, 0]);
                elements.extend_from_slice(&[0x10, b'_', b'i', b'd', 0, 2, 0, 0, 0]);
                let mut bytes = i32::try_from(elements.len() + 5)
                    .expect("small")
                    .to_le_bytes()
                    .to_vec();
                bytes.extend_from_slice(&elements);
                bytes.push(0);
                let document = RawDocument::from_bytes(&bytes).expect("frame is valid");
                assert_eq!(
                    ours(document, "_id"),
                    oracle(document, "_id"),
                    "key {key:?}"
                );
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(4000), ..ProptestConfig::default() })]

    /// Random edits inside a repaired frame: what `find_top_level` reports is what bson's
    /// iterator reports, and a document bson cannot iterate is refused.
    #[test]
    fn mutated_documents_get_the_same_answer(edits in proptest::collection::vec(edit(), 1..4)) {
        let mut bytes = sample();
        for edit in &edits {
            if bytes.len() < 8 {
                break;
            }
            apply(&mut bytes, edit);
        }
        let len = i32::try_from(bytes.len()).expect("small");
        bytes[..4].copy_from_slice(&len.to_le_bytes());
        let last = bytes.len() - 1;
        bytes[last] = 0;
        let document = RawDocument::from_bytes(&bytes).expect("frame repaired");
        let expected = oracle(document, "_id");
        match ours(document, "_id") {
            // Found or absent: bson says the same (and reads the same value when it can).
            Ok(answer) => prop_assert_eq!(
                format!("{:?}", Ok::<_, ()>(answer)),
                format!("{expected:?}"),
                "on {:?}", bytes
            ),
            // Refused: bson fails too, or the `_id` it finds runs into the document's NUL.
            Err(()) => prop_assert!(
                expected.is_err() || id_runs_into_nul(document),
                "refused what bson reads: {:?}", bytes
            ),
        }
    }
}

/// Whether bson's iterator, past the first `_id`, fails at once: what it does when that
/// element ran into the document's NUL (bson bounds an element by the whole buffer, the scan by
/// the NUL, so only then may the scan refuse an `_id` bson finds).
fn id_runs_into_nul(document: &RawDocument) -> bool {
    let mut elements = document.iter_elements();
    while let Some(Ok(element)) = elements.next() {
        if element.key().as_str() == "_id" {
            return matches!(elements.next(), Some(Err(_)));
        }
    }
    false
}
