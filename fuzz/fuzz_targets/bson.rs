//! Differential fuzzing of deep BSON validation: `check_bson` must accept exactly the documents
//! that bson 3's own iterators and value parsers accept (under the same nesting limit).
//!
//! Run with `cargo +nightly fuzz run bson`.

#![no_main]

use bson::raw::{RawBsonRef, RawDocument, RawIter};
use libfuzzer_sys::fuzz_target;
use steadfast_wire::{BsonValidation, MAX_BSON_NESTING_DEPTH, check_bson};

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

fuzz_target!(|data: &[u8]| {
    // Repair the outer frame so that most inputs reach the element walk.
    let mut bytes = data.to_vec();
    if bytes.len() >= 5 {
        let len = i32::try_from(bytes.len()).unwrap_or(i32::MAX);
        bytes[..4].copy_from_slice(&len.to_le_bytes());
        let last = bytes.len() - 1;
        bytes[last] = 0;
    }
    let ours = check_bson(&bytes, BsonValidation::Deep).is_ok();
    assert_eq!(ours, oracle_accepts(&bytes), "verdicts differ on {bytes:?}");
});
