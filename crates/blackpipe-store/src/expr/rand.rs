//! `$rand`: a double drawn uniformly from [0, 1).
//!
//! Expressions are evaluated without a handle to the store, so the generator a command draws
//! from lives in a thread-local for the command's duration: [`CommandRandom::enter`] installs a
//! seed the store derives from its own seed and the command's position, and the generator is
//! made on the first draw only (a command without `$rand` pays a thread-local write). The same
//! store seed and the same commands in the same order give the same draws.

use std::cell::RefCell;

use bson::{Bson, Document};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::code;
use crate::errors::{CommandError, StoreResult};

/// The seed of draws made outside any command (none are, today; kept deterministic anyway).
const OUTSIDE_COMMANDS_SEED: u64 = 0;

thread_local! {
    static SOURCE: RefCell<Source> = const {
        RefCell::new(Source { seed: OUTSIDE_COMMANDS_SEED, generator: None })
    };
}

struct Source {
    seed: u64,
    generator: Option<SmallRng>,
}

/// The random source of one command, restored to the previous one when dropped.
#[must_use = "the command's random source is uninstalled when this is dropped"]
pub(crate) struct CommandRandom {
    previous: Option<Source>,
}

impl CommandRandom {
    /// Installs a source seeded by `seed` on this thread until the value is dropped.
    pub(crate) fn enter(seed: u64) -> CommandRandom {
        let fresh = Source {
            seed,
            generator: None,
        };
        CommandRandom {
            previous: Some(SOURCE.with_borrow_mut(|source| std::mem::replace(source, fresh))),
        }
    }
}

impl Drop for CommandRandom {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            SOURCE.set(previous);
        }
    }
}

/// The next draw of the current command's source.
pub(crate) fn draw() -> f64 {
    SOURCE.with_borrow_mut(|source| {
        let seed = source.seed;
        source
            .generator
            .get_or_insert_with(|| SmallRng::seed_from_u64(seed))
            .random::<f64>()
    })
}

/// Moves a uniformly random choice of `count` of `items` (all of them when there are fewer),
/// in random order, to the front, drawing from the current command's source: `$sample`
/// (stages-single). A partial Fisher-Yates shuffle, so the work is `count` draws.
pub(crate) fn shuffle_prefix<T>(items: &mut [T], count: usize) {
    SOURCE.with_borrow_mut(|source| {
        let seed = source.seed;
        let generator = source
            .generator
            .get_or_insert_with(|| SmallRng::seed_from_u64(seed));
        let len = items.len();
        for position in 0..count.min(len.saturating_sub(1)) {
            let chosen = generator.random_range(position..len);
            items.swap(position, chosen);
        }
    });
}

/// Checks `$rand`'s argument: an empty object, as mongod requires.
///
/// # Errors
/// 10065 for a value that is not an object, 3040501 for an object with fields.
pub(crate) fn check_argument(argument: &Bson) -> StoreResult<()> {
    match argument {
        Bson::Document(arguments) if arguments == &Document::new() => Ok(()),
        Bson::Document(_) => Err(CommandError::new(
            code::RAND_TAKES_NO_ARGUMENTS,
            "$rand does not currently accept arguments",
        )),
        _ => Err(CommandError::new(
            code::EXPECTED_AN_OBJECT,
            "invalid parameter: expected an object ($rand)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_draws_and_the_previous_source_comes_back() {
        let draws = |seed| {
            let _command = CommandRandom::enter(seed);
            [draw(), draw(), draw()]
        };
        let outside = draw();
        assert_eq!(draws(7), draws(7));
        assert_ne!(draws(7), draws(8));
        assert!(draws(9).iter().all(|x| (0.0..1.0).contains(x)));
        // The source outside the commands carried on where it was.
        assert_ne!(draw(), outside);
    }
}
