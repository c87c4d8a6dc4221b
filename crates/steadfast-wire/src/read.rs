//! A bounds-checked little-endian reader over untrusted bytes.
//!
//! Every read returns [`WireError`] instead of panicking, so parsing code can be written with `?`
//! and never indexes a slice directly.

use crate::WireError;

/// A cursor over a byte slice; `what` names the structure being read, for error messages.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    what: &'static str,
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Self { bytes, what }
    }

    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The unread bytes, without consuming them.
    pub(crate) fn rest(&self) -> &'a [u8] {
        self.bytes
    }

    /// Consumes and returns the next `len` bytes.
    pub(crate) fn take(&mut self, len: usize) -> Result<&'a [u8], WireError> {
        match self.bytes.split_at_checked(len) {
            Some((head, tail)) => {
                self.bytes = tail;
                Ok(head)
            }
            None => Err(WireError::truncated(self.what, len, self.bytes.len())),
        }
    }

    fn take_array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        match self.bytes.split_first_chunk::<N>() {
            Some((head, tail)) => {
                self.bytes = tail;
                Ok(*head)
            }
            None => Err(WireError::truncated(self.what, N, self.bytes.len())),
        }
    }

    pub(crate) fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take_array::<1>()?[0])
    }

    pub(crate) fn i32(&mut self) -> Result<i32, WireError> {
        self.take_array().map(i32::from_le_bytes)
    }

    pub(crate) fn u32(&mut self) -> Result<u32, WireError> {
        self.take_array().map(u32::from_le_bytes)
    }

    pub(crate) fn i64(&mut self) -> Result<i64, WireError> {
        self.take_array().map(i64::from_le_bytes)
    }

    /// Reads a NUL-terminated UTF-8 string and consumes its terminator.
    pub(crate) fn cstr(&mut self, field: &'static str) -> Result<&'a str, WireError> {
        let nul = self
            .bytes
            .iter()
            .position(|&byte| byte == 0)
            .ok_or(WireError::InvalidCString(field))?;
        let text = self.take(nul)?;
        self.take(1)?;
        std::str::from_utf8(text).map_err(|_| WireError::InvalidCString(field))
    }

    /// Reads the int32 length prefix of the next BSON document without consuming it and
    /// returns the whole document's bytes, consuming them.
    pub(crate) fn bson_bytes(&mut self) -> Result<&'a [u8], WireError> {
        let prefix = self
            .bytes
            .first_chunk::<4>()
            .ok_or_else(|| WireError::truncated(self.what, 4, self.bytes.len()))?;
        let declared = i32::from_le_bytes(*prefix);
        let length = usize::try_from(declared)
            .ok()
            .filter(|&length| length >= crate::bson_check::MIN_DOCUMENT_LEN)
            .ok_or_else(|| WireError::invalid_length("BSON document", declared))?;
        self.take(length)
    }
}

/// Widens a `usize` for [`WireError::InvalidLength`], saturating (only reachable on >63-bit
/// sizes, which no real message has).
pub(crate) fn len_i64(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX)
}
