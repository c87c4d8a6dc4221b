//! `$sample`: `size` documents of the input chosen uniformly at random without repetition, in
//! random order (all of them, shuffled, when there are fewer). The randomness is the command's
//! seeded source (`expr/rand.rs`), as for `$rand`: the same store seed and the same commands
//! give the same samples.

use std::sync::Arc;

use bson::{Bson, Document};

use crate::code;
use crate::errors::{CommandError, StoreResult};
use crate::expr::rand::shuffle_prefix;
use crate::value_order::Number;

/// A parsed `$sample`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    size: usize,
}

impl Sample {
    pub(crate) fn parse(spec: &Bson) -> StoreResult<Sample> {
        let Bson::Document(spec) = spec else {
            return Err(CommandError::new(
                code::SAMPLE_NOT_OBJECT,
                "the $sample stage specification must be an object",
            ));
        };
        let mut size = None;
        for (name, value) in spec {
            if name != "size" {
                return Err(CommandError::new(
                    code::SAMPLE_UNKNOWN_OPTION,
                    format!("unrecognized option to $sample: {name}"),
                ));
            }
            let Some(number) = Number::of(value) else {
                return Err(CommandError::new(
                    code::SAMPLE_SIZE_NOT_NUMBER,
                    "size argument to $sample must be a number",
                ));
            };
            size = Some(safe_number_long(number));
        }
        let Some(size) = size else {
            return Err(CommandError::new(
                code::SAMPLE_WITHOUT_SIZE,
                "$sample stage must specify a size",
            ));
        };
        if size <= 0 {
            return Err(CommandError::new(
                code::SAMPLE_SIZE_NOT_POSITIVE,
                "size argument to $sample must be a positive integer",
            ));
        }
        Ok(Sample {
            size: usize::try_from(size).unwrap_or(usize::MAX),
        })
    }

    pub(super) fn run(&self, mut documents: Vec<Arc<Document>>) -> Vec<Arc<Document>> {
        shuffle_prefix(&mut documents, self.size);
        documents.truncate(self.size);
        documents
    }
}

/// mongod's `safeNumberLong`: a fraction truncated toward zero, NaN as 0, out-of-range values
/// saturated.
#[allow(clippy::cast_possible_truncation)]
fn safe_number_long(number: Number) -> i64 {
    match number {
        Number::Int(whole) => whole,
        // `as` truncates toward zero, maps NaN to 0 and saturates, as safeNumberLong does.
        other => other.as_f64() as i64,
    }
}
