//! The arithmetic of a stored file's chunks and the checks a downloaded chunk must pass. Pure:
//! no I/O, so every corrupt-file case is a unit test.

use crate::error::GridFsErrorKind;

/// The chunks a stored file must have, from its files document's `length` and `chunkSize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ChunkLayout {
    length: u64,
    chunk_size: u32,
    count: u32,
}

impl ChunkLayout {
    /// The layout of a file of `length` bytes cut into `chunk_size`-byte chunks.
    ///
    /// # Errors
    /// `CorruptFile` for a zero chunk size with a non-zero length, or a chunk count that does
    /// not fit in 32 bits (a chunk's `n` is a 32-bit integer).
    pub(crate) fn new(length: u64, chunk_size: u32) -> Result<Self, GridFsErrorKind> {
        if length == 0 {
            return Ok(ChunkLayout {
                length,
                chunk_size,
                count: 0,
            });
        }
        if chunk_size == 0 {
            return Err(corrupt(format!(
                "a chunk size of 0 for a file of {length} bytes"
            )));
        }
        let size = u64::from(chunk_size);
        let count = length / size + u64::from(length % size != 0);
        let count = u32::try_from(count).map_err(|_| {
            corrupt(format!(
                "{length} bytes in chunks of {chunk_size} make more than 2^32 chunks"
            ))
        })?;
        Ok(ChunkLayout {
            length,
            chunk_size,
            count,
        })
    }

    /// How many chunks the file has.
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// The bytes chunk `n` holds: the chunk size, except for a shorter last chunk.
    pub(crate) fn expected_len(&self, n: u32) -> u32 {
        let last = self.count.saturating_sub(1);
        let remainder = self.length % u64::from(self.chunk_size.max(1));
        if n == last && remainder != 0 {
            // The remainder of a division by a u32 fits in a u32.
            u32::try_from(remainder).unwrap_or(self.chunk_size)
        } else {
            self.chunk_size
        }
    }

    /// Checks that the chunk read as the `expected`-th (numbered `found`, holding `data_len`
    /// bytes) is the one that must come next.
    ///
    /// # Errors
    /// `WrongNumberOfChunks` for a chunk past the last one, `MissingChunk` when `found` is not
    /// `expected` (or not an integer), `WrongSizeChunk` for a chunk of the wrong size.
    pub(crate) fn check(
        &self,
        expected: u32,
        found: Option<i64>,
        data_len: usize,
    ) -> Result<(), GridFsErrorKind> {
        if expected >= self.count {
            return Err(self.extra_chunk());
        }
        if found != Some(i64::from(expected)) {
            return Err(GridFsErrorKind::MissingChunk { n: expected });
        }
        let expected_size = self.expected_len(expected);
        if u64::try_from(data_len).ok() != Some(u64::from(expected_size)) {
            return Err(GridFsErrorKind::WrongSizeChunk {
                actual_size: data_len,
                expected_size,
                n: expected,
            });
        }
        Ok(())
    }

    /// The error for a chunk found after the last one.
    pub(crate) fn extra_chunk(&self) -> GridFsErrorKind {
        GridFsErrorKind::WrongNumberOfChunks {
            actual_number: self.count.saturating_add(1),
            expected_number: self.count,
        }
    }
}

/// A `CorruptFile` error.
pub(crate) fn corrupt(message: impl Into<String>) -> GridFsErrorKind {
    GridFsErrorKind::CorruptFile {
        message: message.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_chunks_and_sizes_the_last_one() {
        let layout = ChunkLayout::new(10, 4).unwrap();
        assert_eq!(layout.count(), 3);
        assert_eq!(
            (0..3).map(|n| layout.expected_len(n)).collect::<Vec<_>>(),
            [4, 4, 2]
        );
        let exact = ChunkLayout::new(8, 4).unwrap();
        assert_eq!((exact.count(), exact.expected_len(1)), (2, 4));
        assert_eq!(ChunkLayout::new(0, 0).unwrap().count(), 0);
    }

    #[test]
    fn hostile_files_documents_are_corrupt_not_a_panic() {
        assert!(matches!(
            ChunkLayout::new(1, 0),
            Err(GridFsErrorKind::CorruptFile { .. })
        ));
        assert!(matches!(
            ChunkLayout::new(u64::MAX, 1),
            Err(GridFsErrorKind::CorruptFile { .. })
        ));
    }

    #[test]
    fn a_chunk_out_of_place_or_of_the_wrong_size_is_reported() {
        let layout = ChunkLayout::new(10, 4).unwrap();
        assert!(layout.check(0, Some(0), 4).is_ok());
        assert!(layout.check(2, Some(2), 2).is_ok());
        assert!(matches!(
            layout.check(1, Some(2), 4),
            Err(GridFsErrorKind::MissingChunk { n: 1 })
        ));
        assert!(matches!(
            layout.check(1, None, 4),
            Err(GridFsErrorKind::MissingChunk { n: 1 })
        ));
        assert!(matches!(
            layout.check(2, Some(2), 4),
            Err(GridFsErrorKind::WrongSizeChunk {
                actual_size: 4,
                expected_size: 2,
                n: 2
            })
        ));
        assert!(matches!(
            layout.check(3, Some(3), 0),
            Err(GridFsErrorKind::WrongNumberOfChunks {
                actual_number: 4,
                expected_number: 3
            })
        ));
    }
}
