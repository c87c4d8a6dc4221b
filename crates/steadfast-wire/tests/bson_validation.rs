//! Deep BSON validation must accept exactly what bson 3's own parsers accept.
//!
//! The oracle below walks a document with bson's raw iterators, parsing every value and
//! descending into documents, arrays and code-with-scope scopes, under the same depth limit.
//! `check_bson` (a hand-written single pass) must agree with it on valid documents, on targeted
//! malformations of every element type, and on randomly mutated documents.

use bson::raw::{RawBsonRef, RawDocument, RawIter};
use bson::spec::BinarySubtype;
use bson::{Binary, Bson, JavaScriptCodeWithScope, Regex, Timestamp, doc, oid::ObjectId};
use proptest::prelude::*;
use steadfast_wire::{BsonValidation, MAX_BSON_NESTING_DEPTH, WireError, check_bson};

mod support;
use support::{apply, cases, edit};

/// `PROPTEST_CASES` from the environment if set, else `default`.
fn oracle_accepts(bytes: &[u8]) -> bool {
    let Ok(document) = RawDocument::from_bytes(bytes) else {
        return false;
    };
    let mut stack: Vec<RawIter<'_>> = vec![document.iter_elements()];
    while let Some(iter) = stack.last_mut() {
        let Some(element) = iter.next() else {
            stack.pop();
            continue;
        };
        let nested = match element.and_then(|element| element.value()) {
            Err(_) => return false,
            Ok(RawBsonRef::Document(inner)) => inner.iter_elements(),
            Ok(RawBsonRef::Array(inner)) => inner.iter_elements(),
            Ok(RawBsonRef::JavaScriptCodeWithScope(code)) => code.scope.iter_elements(),
            Ok(_) => continue,
        };
        if stack.len() >= MAX_BSON_NESTING_DEPTH {
            return false;
        }
        stack.push(nested);
    }
    true
}

fn ours_accepts(bytes: &[u8]) -> bool {
    match check_bson(bytes, BsonValidation::Deep) {
        Ok(_) => true,
        Err(WireError::InvalidBson(_)) => false,
        Err(other) => panic!("unexpected error kind {other:?}"),
    }
}

fn agree(bytes: &[u8]) -> bool {
    let oracle = oracle_accepts(bytes);
    assert_eq!(ours_accepts(bytes), oracle, "disagreement on {bytes:?}");
    oracle
}

/// Wraps raw element bytes (type, key, value) into a document with a correct frame.
fn with_elements(elements: &[u8]) -> Vec<u8> {
    let len = i32::try_from(4 + elements.len() + 1).expect("small");
    let mut out = len.to_le_bytes().to_vec();
    out.extend_from_slice(elements);
    out.push(0);
    out
}

fn element(kind: u8, value: &[u8]) -> Vec<u8> {
    let mut out = vec![kind, b'k', 0];
    out.extend_from_slice(value);
    out
}

fn bson_string(text: &[u8]) -> Vec<u8> {
    let len = i32::try_from(text.len() + 1).expect("small");
    let mut out = len.to_le_bytes().to_vec();
    out.extend_from_slice(text);
    out.push(0);
    out
}

fn every_type() -> Vec<u8> {
    let scope = doc! { "x": 1, "inner": { "y": [1, 2] } };
    let document = doc! {
        "double": 1.5,
        "string": "héllo",
        "document": { "a": { "b": "c" } },
        "array": [1, "two", { "three": 3 }, [4]],
        "binary": Binary { subtype: BinarySubtype::Generic, bytes: vec![1, 2, 3] },
        "uuid": Binary { subtype: BinarySubtype::Uuid, bytes: vec![7; 16] },
        "old_binary": Binary { subtype: BinarySubtype::BinaryOld, bytes: vec![9, 9] },
        "undefined": Bson::Undefined,
        "oid": ObjectId::from_bytes([3; 12]),
        "bool": true,
        "date": bson::DateTime::from_millis(1_700_000_000_000),
        "null": Bson::Null,
        "regex": Regex {
            pattern: "^a.*b$".to_owned().try_into().expect("no NUL"),
            options: "i".to_owned().try_into().expect("no NUL"),
        },
        "code": Bson::JavaScriptCode("function() {}".to_owned()),
        "symbol": Bson::Symbol("sym".to_owned()),
        "code_with_scope": JavaScriptCodeWithScope { code: "x + 1".to_owned(), scope },
        "int32": 32,
        "timestamp": Timestamp { time: 5, increment: 6 },
        "int64": 64_i64,
        "decimal": Bson::Decimal128(bson::Decimal128::from_bytes([1; 16])),
        "max": Bson::MaxKey,
        "min": Bson::MinKey,
    };
    let mut bytes = document.to_vec().expect("serializes");
    // A DbPointer cannot be built through the public API: append one by hand.
    let mut pointer = bson_string(b"db.coll");
    pointer.extend_from_slice(&[4; 12]);
    let extra = element(0x0C, &pointer);
    bytes.pop();
    bytes.extend_from_slice(&extra);
    bytes.push(0);
    let len = i32::try_from(bytes.len()).expect("small");
    bytes[..4].copy_from_slice(&len.to_le_bytes());
    bytes
}

#[test]
fn a_document_with_every_element_type_is_accepted() {
    assert!(agree(&every_type()));
    assert!(agree(&[5, 0, 0, 0, 0]));
}

#[test]
fn targeted_malformations_are_rejected_like_bson_does() {
    let mut code_with_scope = Vec::new();
    let code = bson_string(b"c");
    let scope = [5u8, 0, 0, 0, 0];
    let total = i32::try_from(4 + code.len() + scope.len()).expect("small");
    code_with_scope.extend_from_slice(&total.to_le_bytes());
    code_with_scope.extend_from_slice(&code);
    code_with_scope.extend_from_slice(&scope);

    let mut cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("unknown type", with_elements(&element(0x14, &[])), false),
        ("type zero", with_elements(&element(0x00, &[])), false),
        ("min key", with_elements(&element(0xFF, &[])), true),
        ("bool 1", with_elements(&element(0x08, &[1])), true),
        ("bool 2", with_elements(&element(0x08, &[2])), false),
        ("int32 short", with_elements(&element(0x10, &[1, 2])), false),
        (
            "string ok",
            with_elements(&element(0x02, &bson_string(b"abc"))),
            true,
        ),
        (
            "string empty",
            with_elements(&element(0x02, &bson_string(b""))),
            true,
        ),
        (
            "string zero length",
            with_elements(&element(0x02, &[0, 0, 0, 0, 0])),
            false,
        ),
        (
            "string negative",
            with_elements(&element(0x02, &[255, 255, 255, 255, 0])),
            false,
        ),
        (
            "string no nul",
            with_elements(&element(0x02, &[2, 0, 0, 0, b'a', b'b'])),
            false,
        ),
        (
            "string bad utf8",
            with_elements(&element(0x02, &bson_string(&[0xC3, 0x28]))),
            false,
        ),
        (
            "string interior nul",
            with_elements(&element(0x02, &bson_string(b"a\0b"))),
            true,
        ),
        (
            "binary ok",
            with_elements(&element(0x05, &[1, 0, 0, 0, 0x80, 7])),
            true,
        ),
        (
            "binary negative",
            with_elements(&element(0x05, &[255, 255, 255, 255, 0])),
            false,
        ),
        (
            "old binary ok",
            with_elements(&element(0x05, &[6, 0, 0, 0, 2, 2, 0, 0, 0, 1, 2])),
            true,
        ),
        (
            "old binary mismatch",
            with_elements(&element(0x05, &[6, 0, 0, 0, 2, 3, 0, 0, 0, 1, 2])),
            false,
        ),
        (
            "old binary short",
            with_elements(&element(0x05, &[2, 0, 0, 0, 2, 1, 2])),
            false,
        ),
        ("regex ok", with_elements(&element(0x0B, b"ab\0i\0")), true),
        (
            "regex bad utf8",
            with_elements(&element(0x0B, b"\xFF\0i\0")),
            false,
        ),
        (
            "regex unterminated",
            with_elements(&element(0x0B, b"ab\0i")),
            false,
        ),
        (
            "code with scope ok",
            with_elements(&element(0x0F, &code_with_scope)),
            true,
        ),
        (
            "nested short",
            with_elements(&element(0x03, &[4, 0, 0, 0])),
            false,
        ),
        (
            "nested not nul terminated",
            with_elements(&element(0x03, &[5, 0, 0, 0, 1])),
            false,
        ),
        (
            "nested overrun",
            with_elements(&element(0x03, &[9, 0, 0, 0, 0])),
            false,
        ),
        ("key bad utf8", with_elements(&[0x0A, 0xFF, 0]), false),
        ("key unterminated", vec![7, 0, 0, 0, 0x0A, b'k', 0], false),
        (
            "element eats terminator",
            vec![8, 0, 0, 0, 0x08, b'k', 0, 0],
            false,
        ),
        ("trailing garbage", vec![7, 0, 0, 0, 0x0A, 0, 0], true),
    ];
    // Code with scope whose scope is one byte shorter than the space left for it.
    let mut bad_scope = code_with_scope.clone();
    bad_scope[4 + code.len()] = 4;
    cases.push((
        "code with scope mismatch",
        with_elements(&element(0x0F, &bad_scope)),
        false,
    ));
    let mut too_short = code_with_scope.clone();
    too_short[0] = 13;
    cases.push((
        "code with scope short",
        with_elements(&element(0x0F, &too_short)),
        false,
    ));
    for (name, bytes, expected) in cases {
        assert_eq!(oracle_accepts(&bytes), expected, "oracle on {name}");
        assert_eq!(ours_accepts(&bytes), expected, "check_bson on {name}");
    }
}

#[test]
fn depth_limit_matches() {
    for depth in [
        MAX_BSON_NESTING_DEPTH - 1,
        MAX_BSON_NESTING_DEPTH,
        MAX_BSON_NESTING_DEPTH + 1,
    ] {
        // Mix documents (one level each) and arrays holding a document (two levels).
        let mut document = bson::rawdoc! {};
        let mut actual = 1;
        while actual < depth {
            if actual % 3 == 0 && actual + 2 <= depth {
                let mut array = bson::RawArrayBuf::new();
                array.push(document);
                document = bson::rawdoc! { "a": array };
                actual += 2;
            } else {
                document = bson::rawdoc! { "d": document };
                actual += 1;
            }
        }
        assert_eq!(
            agree(document.as_bytes()),
            depth <= MAX_BSON_NESTING_DEPTH,
            "depth {depth}"
        );
    }
}

#[test]
fn framing_validation_checks_only_the_frame() {
    let bytes = with_elements(&element(0x14, &[]));
    assert!(check_bson(&bytes, BsonValidation::Framing).is_ok());
    assert!(check_bson(&bytes[1..], BsonValidation::Framing).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(4000), ..ProptestConfig::default() })]

    /// Random edits, with the outer frame repaired half of the time so that the element walk
    /// itself is exercised rather than only the frame check.
    #[test]
    fn mutated_documents_get_the_same_verdict(
        edits in proptest::collection::vec(edit(), 1..4),
        repair_frame in any::<bool>(),
    ) {
        let mut bytes = every_type();
        for edit in &edits {
            if bytes.len() < 8 {
                break;
            }
            apply(&mut bytes, edit);
        }
        if repair_frame && bytes.len() >= 5 {
            let len = i32::try_from(bytes.len()).expect("small");
            bytes[..4].copy_from_slice(&len.to_le_bytes());
            let last = bytes.len() - 1;
            bytes[last] = 0;
        }
        agree(&bytes);
    }
}
