//! What the proptests of this crate's test files share: the case count and random byte edits
//! of an encoded document.

use proptest::prelude::*;

/// The number of cases: `PROPTEST_CASES` when set, else `default`.
pub(crate) fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// One random change to a document's bytes.
#[derive(Debug, Clone)]
pub(crate) enum Edit {
    Set { index: usize, value: u8 },
    SetI32 { index: usize, value: i32 },
    Remove { index: usize },
    Insert { index: usize, value: u8 },
}

/// A random [`Edit`], biased towards type bytes, small lengths and lengths near the edges.
pub(crate) fn edit() -> impl Strategy<Value = Edit> {
    let i32s = prop_oneof![
        Just(-1),
        Just(0),
        Just(1),
        Just(4),
        Just(5),
        any::<i32>(),
        0i32..64
    ];
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(index, value)| Edit::Set { index, value }),
        (any::<usize>(), 0u8..0x14).prop_map(|(index, value)| Edit::Set { index, value }),
        (any::<usize>(), i32s).prop_map(|(index, value)| Edit::SetI32 { index, value }),
        any::<usize>().prop_map(|index| Edit::Remove { index }),
        (any::<usize>(), any::<u8>()).prop_map(|(index, value)| Edit::Insert { index, value }),
    ]
}

/// Applies `edit` to `bytes` (at least four bytes long), indices taken modulo the length.
pub(crate) fn apply(bytes: &mut Vec<u8>, edit: &Edit) {
    let len = bytes.len();
    match edit {
        Edit::Set { index, value } => bytes[index % len] = *value,
        Edit::SetI32 { index, value } => {
            let at = index % (len - 3);
            bytes[at..at + 4].copy_from_slice(&value.to_le_bytes());
        }
        Edit::Remove { index } => {
            bytes.remove(index % len);
        }
        Edit::Insert { index, value } => bytes.insert(index % len, *value),
    }
}
