//! Deep validation of BSON documents received from the network.
//!
//! bson 3's `RawDocument::from_bytes` checks only the outer frame (length prefix and trailing
//! NUL); its raw accessors report malformed elements as errors when they are read. To give the
//! rest of the program documents it can read without errors, every received document is walked
//! once here, element by element, including nested documents, arrays and code-with-scope scopes.
//! The walk accepts exactly what bson 3's own element parsers accept (a differential test checks
//! this against a walk built on bson's iterators), but runs in one tight pass over the bytes,
//! about twice as fast as asking bson to parse every value. It keeps an explicit stack
//! instead of recursing, and bounds the nesting depth, so that neither it nor later recursive
//! readers (serde, `Document::try_from`) can exhaust the stack.

use std::ops::Range;

use bson::raw::RawDocument;

use crate::WireError;

/// Smallest valid BSON document: int32 length plus the terminating NUL.
pub(crate) const MIN_DOCUMENT_LEN: usize = 5;

/// Deepest nesting of documents and arrays accepted in a received document (the top level is
/// depth 1).
///
/// MongoDB itself refuses documents nested deeper than 200 levels, so any reply a real server
/// sends fits comfortably; the limit exists so that a hostile peer cannot make later recursive
/// readers overflow the stack.
pub const MAX_BSON_NESTING_DEPTH: usize = 512;

/// How thoroughly received BSON documents are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum BsonValidation {
    /// Every element of every document is checked once, nested ones included, and nesting is
    /// limited to [`MAX_BSON_NESTING_DEPTH`]: reading any value later cannot fail. The default.
    #[default]
    Deep,
    /// Only each document's frame is checked (length prefix and trailing NUL), as bson's
    /// `RawDocument::from_bytes` does. Faster; bson's raw accessors then report malformed
    /// elements as errors when they are read.
    Framing,
}

/// Checks `bytes` as exactly one BSON document, as thoroughly as `validation` says; this is the
/// check the decoder applies to every document it receives.
///
/// # Errors
///
/// [`WireError::InvalidBson`] describing the first problem found.
pub fn check_bson(bytes: &[u8], validation: BsonValidation) -> Result<&RawDocument, WireError> {
    let document = RawDocument::from_bytes(bytes)
        .map_err(|error| WireError::InvalidBson(error.to_string()))?;
    if validation == BsonValidation::Deep {
        walk(bytes).map_err(|problem| WireError::InvalidBson(problem.to_owned()))?;
    }
    Ok(document)
}

/// Where the top-level element named `key` lies in `document`, from its type byte to the end
/// of its value, or `None` when the document has no such element.
///
/// Only element headers and lengths are read, and nested documents are stepped over whole: the
/// same checks bson's element iterator makes (keys are UTF-8, every length fits its document),
/// at a small fraction of the cost, which matters for documents with many fields (finding
/// whether a 2.7 MB document of 94,000 fields has an `_id` took longer than encoding it).
/// Values other than the one found are not checked further, as with bson's `RawDocument::get`.
///
/// # Errors
///
/// [`WireError::InvalidBson`] when an element before the one found (or any element, when none
/// is found) is malformed.
pub fn find_top_level(
    document: &RawDocument,
    key: &str,
) -> Result<Option<Range<usize>>, WireError> {
    let bytes = document.as_bytes();
    // A `RawDocument` is at least 5 bytes long and ends with its NUL.
    let end = bytes.len().saturating_sub(1);
    let mut pos = 4;
    while pos < end {
        let problem = |problem: &str| WireError::InvalidBson(problem.to_owned());
        let element = bytes
            .get(pos..end)
            .ok_or_else(|| problem("element overruns its document"))?;
        let (&kind, rest) = element
            .split_first()
            .ok_or_else(|| problem("element overruns its document"))?;
        let (name_len, ascii) =
            key_len(rest).ok_or_else(|| problem("key is not NUL-terminated"))?;
        let name = rest.get(..name_len).unwrap_or_default();
        if !ascii {
            check_utf8(name).map_err(problem)?;
        }
        let value_start = pos + 2 + name_len;
        let value = bytes
            .get(value_start..end)
            .ok_or_else(|| problem("element overruns its document"))?;
        let value_end = value_start + value_len(kind, value).map_err(problem)?;
        if name == key.as_bytes() {
            return Ok(Some(pos..value_end));
        }
        pos = value_end;
    }
    Ok(None)
}

/// The length of the NUL-terminated key at the start of `bytes` (None without a NUL) and
/// whether it is ASCII, read eight bytes at a time: the scan of a document of many short fields
/// is mostly this.
fn key_len(bytes: &[u8]) -> Option<(usize, bool)> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut high_bits = 0u64;
    let mut offset = 0;
    while let Some(chunk) = bytes.get(offset..).and_then(<[u8]>::first_chunk::<8>) {
        let word = u64::from_le_bytes(*chunk);
        // The lowest set bit of `zeros` marks the first zero byte exactly (bits above it may
        // be false alarms from the borrow, which are never read).
        let zeros = word.wrapping_sub(ONES) & !word & HIGH;
        if zeros != 0 {
            let nul = zeros.trailing_zeros() / 8;
            // The bytes before the NUL (none when it is the first byte); `nul` is below 8.
            let before = !(u64::MAX << (8 * nul));
            high_bits |= word & before;
            return Some((offset + nul as usize, high_bits & HIGH == 0));
        }
        high_bits |= word;
        offset += 8;
    }
    let tail = bytes.get(offset..).unwrap_or_default();
    let nul = tail.iter().position(|&byte| byte == 0)?;
    let ascii = high_bits & HIGH == 0 && tail.get(..nul).is_some_and(<[u8]>::is_ascii);
    Some((offset + nul, ascii))
}

/// The length of a value of type `kind` at the start of `value` (which runs to its document's
/// NUL), nested documents stepped over whole and texts unchecked. Never more than `value.len()`.
fn value_len(kind: u8, value: &[u8]) -> Walk<usize> {
    let len = match kind {
        tag::DOUBLE | tag::DATE_TIME | tag::TIMESTAMP | tag::INT64 => fixed(value, 8)?,
        tag::INT32 => fixed(value, 4)?,
        tag::OBJECT_ID => fixed(value, 12)?,
        tag::DECIMAL128 => fixed(value, 16)?,
        tag::BOOLEAN => fixed(value, 1)?,
        tag::UNDEFINED | tag::NULL | tag::MAX_KEY | tag::MIN_KEY => 0,
        tag::STRING | tag::CODE | tag::SYMBOL => string_frame(value)?,
        tag::DB_POINTER => {
            let len = string_frame(value)?;
            len + fixed(value.get(len..).unwrap_or_default(), 12)?
        }
        tag::REGEX => {
            let pattern =
                utf8_cstring_len(value).ok_or("regex pattern is not NUL-terminated")??;
            let after = value.get(pattern + 1..).unwrap_or_default();
            let options =
                utf8_cstring_len(after).ok_or("regex options are not NUL-terminated")??;
            pattern + 1 + options + 1
        }
        tag::BINARY => {
            let data = usize::try_from(read_i32(value)?).map_err(|_| "negative binary length")?;
            data.checked_add(5).ok_or("binary too long")?
        }
        tag::DOCUMENT | tag::ARRAY => document_len(value)?,
        tag::CODE_WITH_SCOPE => {
            usize::try_from(read_i32(value)?).map_err(|_| "negative code-with-scope length")?
        }
        _ => return Err("unknown element type"),
    };
    if len > value.len() {
        return Err("element overruns its document");
    }
    Ok(len)
}

/// Element type tags.
mod tag {
    pub(super) const DOUBLE: u8 = 0x01;
    pub(super) const STRING: u8 = 0x02;
    pub(super) const DOCUMENT: u8 = 0x03;
    pub(super) const ARRAY: u8 = 0x04;
    pub(super) const BINARY: u8 = 0x05;
    pub(super) const UNDEFINED: u8 = 0x06;
    pub(super) const OBJECT_ID: u8 = 0x07;
    pub(super) const BOOLEAN: u8 = 0x08;
    pub(super) const DATE_TIME: u8 = 0x09;
    pub(super) const NULL: u8 = 0x0A;
    pub(super) const REGEX: u8 = 0x0B;
    pub(super) const DB_POINTER: u8 = 0x0C;
    pub(super) const CODE: u8 = 0x0D;
    pub(super) const SYMBOL: u8 = 0x0E;
    pub(super) const CODE_WITH_SCOPE: u8 = 0x0F;
    pub(super) const INT32: u8 = 0x10;
    pub(super) const TIMESTAMP: u8 = 0x11;
    pub(super) const INT64: u8 = 0x12;
    pub(super) const DECIMAL128: u8 = 0x13;
    pub(super) const MAX_KEY: u8 = 0x7F;
    pub(super) const MIN_KEY: u8 = 0xFF;
}

/// Binary subtype 2, which repeats the length inside the payload.
const BINARY_OLD: u8 = 0x02;
/// Code-with-scope: int32 total, a string of at least 5 bytes, a document of at least 5 bytes.
const MIN_CODE_WITH_SCOPE_LEN: usize = 4 + 5 + MIN_DOCUMENT_LEN;

type Walk<T> = Result<T, &'static str>;

/// Walks a document whose outer frame is already checked (length prefix equals the slice
/// length, at least 5 bytes, last byte NUL).
fn walk(bytes: &[u8]) -> Walk<()> {
    // Index of the terminating NUL of each enclosing document.
    let mut parents = EndStack::default();
    let mut end = bytes.len() - 1;
    let mut pos = 4;
    loop {
        if pos == end {
            match parents.pop() {
                Some(parent_end) => {
                    pos = end + 1;
                    end = parent_end;
                    continue;
                }
                None => return Ok(()),
            }
        }
        // Everything of an element, key included, lies strictly before its document's NUL.
        let element = bytes.get(pos..end).ok_or("element overruns its document")?;
        let (&kind, rest) = element
            .split_first()
            .ok_or("element overruns its document")?;
        let key_len = utf8_cstring_len(rest).ok_or("key is not NUL-terminated")??;
        let value_start = pos + 2 + key_len;
        let value = bytes
            .get(value_start..end)
            .ok_or("element overruns its document")?;
        let value_len = match kind {
            tag::DOUBLE | tag::DATE_TIME | tag::TIMESTAMP | tag::INT64 => fixed(value, 8)?,
            tag::INT32 => fixed(value, 4)?,
            tag::OBJECT_ID => fixed(value, 12)?,
            tag::DECIMAL128 => fixed(value, 16)?,
            tag::UNDEFINED | tag::NULL | tag::MAX_KEY | tag::MIN_KEY => 0,
            tag::BOOLEAN => match value.first() {
                Some(0 | 1) => 1,
                Some(_) => return Err("boolean is neither 0 nor 1"),
                None => return Err("element overruns its document"),
            },
            tag::STRING | tag::CODE | tag::SYMBOL => string(value)?,
            tag::DB_POINTER => {
                let len = string(value)?;
                len + fixed(value.get(len..).unwrap_or_default(), 12)?
            }
            tag::REGEX => {
                let pattern = cstring_len(value).ok_or("regex pattern is not NUL-terminated")?;
                let after = value.get(pattern + 1..).unwrap_or_default();
                let options = cstring_len(after).ok_or("regex options are not NUL-terminated")?;
                check_utf8(&value[..pattern])?;
                check_utf8(&after[..options])?;
                pattern + 1 + options + 1
            }
            tag::BINARY => binary(value)?,
            tag::DOCUMENT | tag::ARRAY => {
                let len = document_len(value)?;
                descend(&mut parents, &mut end, value_start + len - 1)?;
                pos = value_start + 4;
                continue;
            }
            tag::CODE_WITH_SCOPE => {
                let (len, scope_start) = code_with_scope(value)?;
                descend(&mut parents, &mut end, value_start + len - 1)?;
                pos = value_start + scope_start + 4;
                continue;
            }
            _ => return Err("unknown element type"),
        };
        pos = value_start + value_len;
    }
}

/// Ends of the enclosing documents: the first levels live inline, so that ordinary documents
/// are walked without allocating.
#[derive(Default)]
struct EndStack {
    inline: [usize; 16],
    inline_len: usize,
    spilled: Vec<usize>,
}

impl EndStack {
    fn len(&self) -> usize {
        self.inline_len + self.spilled.len()
    }

    fn push(&mut self, end: usize) {
        match self.inline.get_mut(self.inline_len) {
            Some(slot) => {
                *slot = end;
                self.inline_len += 1;
            }
            None => self.spilled.push(end),
        }
    }

    fn pop(&mut self) -> Option<usize> {
        if let Some(end) = self.spilled.pop() {
            return Some(end);
        }
        self.inline_len = self.inline_len.checked_sub(1)?;
        self.inline.get(self.inline_len).copied()
    }
}

/// Enters a nested document whose terminating NUL is at `nested_end`.
fn descend(parents: &mut EndStack, end: &mut usize, nested_end: usize) -> Walk<()> {
    // The current document is at depth parents.len() + 1; the nested one is one deeper.
    if parents.len() + 2 > MAX_BSON_NESTING_DEPTH {
        return Err("documents nested too deeply");
    }
    parents.push(*end);
    *end = nested_end;
    Ok(())
}

fn cstring_len(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|&byte| byte == 0)
}

/// Length of the NUL-terminated string at the start of `bytes` (None without a NUL), checking
/// it is UTF-8. Keys are almost always ASCII: one pass finds the NUL and notes whether any byte
/// has its high bit set, and only then is the full UTF-8 check run.
fn utf8_cstring_len(bytes: &[u8]) -> Option<Walk<usize>> {
    let mut high_bits = 0u8;
    for (index, &byte) in bytes.iter().enumerate() {
        if byte == 0 {
            if high_bits & 0x80 != 0 {
                if let Err(error) = check_utf8(&bytes[..index]) {
                    return Some(Err(error));
                }
            }
            return Some(Ok(index));
        }
        high_bits |= byte;
    }
    None
}

fn check_utf8(text: &[u8]) -> Walk<()> {
    if text.is_ascii() || std::str::from_utf8(text).is_ok() {
        Ok(())
    } else {
        Err("text is not UTF-8")
    }
}

fn fixed(value: &[u8], len: usize) -> Walk<usize> {
    if value.len() >= len {
        Ok(len)
    } else {
        Err("element overruns its document")
    }
}

fn read_i32(value: &[u8]) -> Walk<i32> {
    value
        .first_chunk::<4>()
        .map(|prefix| i32::from_le_bytes(*prefix))
        .ok_or("element overruns its document")
}

/// A length-prefixed, NUL-terminated UTF-8 string; returns its total length.
fn string(value: &[u8]) -> Walk<usize> {
    let total = string_frame(value)?;
    check_utf8(value.get(4..total - 1).unwrap_or_default())?;
    Ok(total)
}

/// A length-prefixed, NUL-terminated string's frame, its text unchecked; returns its total
/// length (at least 5).
fn string_frame(value: &[u8]) -> Walk<usize> {
    let declared = usize::try_from(read_i32(value)?).map_err(|_| "negative string length")?;
    if declared < 1 {
        return Err("string length below 1");
    }
    let total = declared + 4;
    let bytes = value.get(4..total).ok_or("string overruns its document")?;
    match bytes.last() {
        Some(0) => Ok(total),
        Some(_) => Err("string is not NUL-terminated"),
        None => Err("string overruns its document"),
    }
}

/// A nested document's frame; returns its length.
fn document_len(value: &[u8]) -> Walk<usize> {
    let len = usize::try_from(read_i32(value)?)
        .ok()
        .filter(|&len| len >= MIN_DOCUMENT_LEN)
        .ok_or("nested document length below 5")?;
    match value.get(len - 1) {
        Some(0) => Ok(len),
        Some(_) => Err("nested document is not NUL-terminated"),
        None => Err("nested document overruns its parent"),
    }
}

/// Binary data; returns its total length.
fn binary(value: &[u8]) -> Walk<usize> {
    let data_len = usize::try_from(read_i32(value)?).map_err(|_| "negative binary length")?;
    let total = data_len + 5;
    if total >= i32::MAX as usize {
        return Err("binary too long");
    }
    let body = value.get(..total).ok_or("binary overruns its document")?;
    if body.get(4) == Some(&BINARY_OLD) {
        // The old subtype repeats the length inside the payload; the two must agree.
        let data = body.get(5..).unwrap_or_default();
        let inner = usize::try_from(read_i32(data).map_err(|_| "old binary lacks inner length")?)
            .map_err(|_| "old binary inner length mismatch")?;
        if inner.checked_add(4) != Some(data_len) {
            return Err("old binary inner length mismatch");
        }
    }
    Ok(total)
}

/// Code with scope; returns its total length and the offset of its scope document.
fn code_with_scope(value: &[u8]) -> Walk<(usize, usize)> {
    let len = usize::try_from(read_i32(value)?).map_err(|_| "negative code-with-scope length")?;
    let element = value
        .get(..len)
        .ok_or("code with scope overruns its document")?;
    if len < MIN_CODE_WITH_SCOPE_LEN {
        return Err("code with scope too short");
    }
    let code_len = string(element.get(4..).unwrap_or_default())?;
    let scope_start = 4 + code_len;
    let scope = element.get(scope_start..).unwrap_or_default();
    // The scope must fill the rest of the element exactly.
    if document_len(scope)? != scope.len() {
        return Err("code-with-scope scope length mismatch");
    }
    Ok((len, scope_start))
}
