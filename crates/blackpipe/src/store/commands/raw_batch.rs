//! The statement count of a write command, checked on the raw request so that an oversized batch
//! is refused before its statements are turned into documents (a 48 MB message of empty
//! documents is millions of statements: gigabytes once materialised).

use std::fmt;

use bson::RawDocument;

use super::write::MAX_WRITE_BATCH;

/// A write command whose batch holds more than mongod's `maxWriteBatchSize` (100,000)
/// statements. mongod answers it with InvalidLength ([`WriteBatchTooLarge::CODE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteBatchTooLarge {
    /// How many statements the batch holds.
    pub count: usize,
}

impl WriteBatchTooLarge {
    /// mongod's InvalidLength.
    pub const CODE: i32 = 16;
    /// The code name of [`WriteBatchTooLarge::CODE`].
    pub const CODE_NAME: &'static str = "InvalidLength";
}

impl fmt::Display for WriteBatchTooLarge {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "Write batch sizes must be between 1 and {MAX_WRITE_BATCH}. Got {} operations.",
            self.count
        )
    }
}

impl std::error::Error for WriteBatchTooLarge {}

/// Checks the batch of an `insert`, `update` or `delete` command on its raw encoding: `body` is
/// the command document and `sequences` the OP_MSG document sequences as (identifier, document
/// count). Other commands, and malformed bodies (reported later by the normal parsing), pass.
/// Counting walks the raw elements without allocating, so its cost is linear in the request.
///
/// # Errors
///
/// [`WriteBatchTooLarge`] when the batch holds more than 100,000 statements.
pub fn check_raw_write_batch<'a>(
    body: &RawDocument,
    sequences: impl IntoIterator<Item = (&'a str, usize)>,
) -> Result<(), WriteBatchTooLarge> {
    let Some(Ok((name, _))) = body.iter().next() else {
        return Ok(());
    };
    let field = match name.as_str() {
        "insert" => "documents",
        "update" => "updates",
        "delete" => "deletes",
        _ => return Ok(()),
    };
    let from_sequence = sequences
        .into_iter()
        .find(|(identifier, _)| *identifier == field)
        .map(|(_, count)| count);
    let count = from_sequence.unwrap_or_else(|| match body.get_array(field) {
        Ok(items) => items.into_iter().count(),
        Err(_) => 0,
    });
    if count > MAX_WRITE_BATCH {
        return Err(WriteBatchTooLarge { count });
    }
    Ok(())
}
