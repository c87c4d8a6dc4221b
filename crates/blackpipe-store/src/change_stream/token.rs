//! Resume tokens: `{_data: "<hex>"}` naming a position in the op log.
//!
//! Layout of the hex string (blackpipe's own, opaque to drivers as mongod's is): a version
//! byte (2); the op log timestamp as 8 bytes (seconds, then increment, big-endian); the
//! entry's index among the entries of that timestamp as 4 big-endian bytes (a committed
//! transaction's writes share one timestamp: this is mongod's `txnOpIndex`; 0 for a lone
//! write); the step within the entry (0: the entry's event, 1: the invalidate that follows it,
//! 255: a high-water mark past everything up to that index); a flag byte, 1 if the 16 bytes of
//! the collection's UUID follow. Positions order by timestamp, then index, then step, which is
//! the order events are returned in, so "resume after" is "the next position greater than the
//! token's".

use std::fmt::Write as _;

use bson::{Bson, Document, Timestamp, doc};

use crate::errors::{CommandError, StoreResult, type_name};
use crate::oplog::{packed, unpacked};

const VERSION: u8 = 2;
/// Bytes before the UUID flag: version, timestamp, index, step.
const HEADER_BYTES: usize = 14;

/// The step of an entry's own event.
pub(crate) const STEP_EVENT: u8 = 0;
/// The step of the invalidate event following a drop, rename or database drop.
pub(crate) const STEP_INVALIDATE: u8 = 1;
/// The step of a high-water mark: after everything at its timestamp.
pub(crate) const STEP_HIGH_WATER: u8 = u8::MAX;

/// A point between events: a stream positioned here returns the events after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Position {
    /// The op log timestamp, [`packed`].
    pub(crate) ts: u64,
    /// The entry's index among those of its timestamp ([`OplogEntry::txn_op_index`]).
    ///
    /// [`OplogEntry::txn_op_index`]: crate::OplogEntry::txn_op_index
    pub(crate) index: u32,
    pub(crate) step: u8,
}

impl Position {
    /// The position of event `step` of the entry at (`ts`, `index`).
    pub(crate) fn of(ts: Timestamp, index: u32, step: u8) -> Position {
        Position {
            ts: packed(ts),
            index,
            step,
        }
    }

    /// After everything at `ts` (and before).
    pub(crate) fn after_all_at(ts: Timestamp) -> Position {
        Position::of(ts, u32::MAX, STEP_HIGH_WATER)
    }

    /// After every event of the entry at (`ts`, `index`) and the entries before it.
    pub(crate) fn after_entry(ts: Timestamp, index: u32) -> Position {
        Position::of(ts, index, STEP_HIGH_WATER)
    }

    /// Just before the first event at `ts`: where `startAtOperationTime` starts.
    pub(crate) fn before(ts: Timestamp) -> Position {
        match packed(ts).checked_sub(1) {
            Some(earlier) => Position {
                ts: earlier,
                index: u32::MAX,
                step: STEP_HIGH_WATER,
            },
            None => Position {
                ts: 0,
                index: 0,
                step: STEP_EVENT,
            },
        }
    }

    pub(crate) fn timestamp(self) -> Timestamp {
        unpacked(self.ts)
    }
}

/// A decoded resume token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ResumeToken {
    pub(crate) position: Position,
    pub(crate) uuid: Option<[u8; 16]>,
}

impl ResumeToken {
    pub(crate) fn is_invalidate(&self) -> bool {
        self.position.step == STEP_INVALIDATE
    }

    /// The token as an event's `_id` (or a `postBatchResumeToken`).
    pub(crate) fn to_document(self) -> Document {
        let mut bytes = Vec::with_capacity(HEADER_BYTES + 17);
        bytes.push(VERSION);
        bytes.extend_from_slice(&self.position.ts.to_be_bytes());
        bytes.extend_from_slice(&self.position.index.to_be_bytes());
        bytes.push(self.position.step);
        match self.uuid {
            Some(uuid) => {
                bytes.push(1);
                bytes.extend_from_slice(&uuid);
            }
            None => bytes.push(0),
        }
        let mut hex = String::with_capacity(bytes.len() * 2);
        for byte in bytes {
            // Writing to a String cannot fail.
            let _ = write!(hex, "{byte:02X}");
        }
        doc! { "_data": hex }
    }

    /// Decodes a token given as `resumeAfter` / `startAfter`.
    ///
    /// # Errors
    ///
    /// BadValue (2) for anything that is not a token this format produced.
    pub(crate) fn parse(option: &str, value: &Bson) -> StoreResult<ResumeToken> {
        let malformed = || {
            CommandError::bad_value(format!(
                "$changeStream.{option} is not a valid resume token"
            ))
        };
        let Bson::Document(token) = value else {
            return Err(CommandError::type_mismatch(format!(
                "BSON field '$changeStream.{option}' is the wrong type '{}', expected type 'object'",
                type_name(value)
            )));
        };
        let hex = match token.get("_data") {
            Some(Bson::String(hex)) if token.len() == 1 => hex,
            _ => return Err(malformed()),
        };
        let bytes = decode_hex(hex).ok_or_else(malformed)?;
        let (header, rest) = bytes.split_at_checked(HEADER_BYTES).ok_or_else(malformed)?;
        let (version, position) = header.split_first().ok_or_else(malformed)?;
        let (ts_bytes, index_and_step) = position.split_at_checked(8).ok_or_else(malformed)?;
        let (index_bytes, step) = index_and_step.split_at_checked(4).ok_or_else(malformed)?;
        if *version != VERSION {
            return Err(malformed());
        }
        let ts = u64::from_be_bytes(ts_bytes.try_into().map_err(|_| malformed())?);
        let index = u32::from_be_bytes(index_bytes.try_into().map_err(|_| malformed())?);
        let step = step.first().copied().ok_or_else(malformed)?;
        let uuid = match rest {
            [0] => None,
            [1, uuid @ ..] => Some(<[u8; 16]>::try_from(uuid).map_err(|_| malformed())?),
            _ => return Err(malformed()),
        };
        if ![STEP_EVENT, STEP_INVALIDATE, STEP_HIGH_WATER].contains(&step) {
            return Err(malformed());
        }
        Ok(ResumeToken {
            position: Position { ts, index, step },
            uuid,
        })
    }
}

/// The bytes of an even-length hexadecimal string (either case); `None` if it is not one.
/// Tokens are short: anything longer than any token is refused before decoding.
fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if hex.len() % 2 != 0 || hex.len() > 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    hex.as_bytes()
        .chunks(2)
        .map(|pair| {
            let digits = std::str::from_utf8(pair).ok()?;
            u8::from_str_radix(digits, 16).ok()
        })
        .collect()
}
