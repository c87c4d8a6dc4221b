//! Regular expressions as mongod reads them: a pattern and its option letters, compiled once by
//! the `regex` crate (linear-time matching, so no pattern can make a query backtrack for ever)
//! and shared by filters, `$pull` and the aggregation's `$regexMatch`/`$regexFind`/`$regexFindAll`.
//!
//! The crate's syntax is close to PCRE2's; [`translate`] rewrites what the two spell
//! differently. What remains differs: lookaround and backreferences do not compile (answered
//! as mongod answers a pattern PCRE2 refuses), and `$` without `m` matches only at the very
//! end. FIDELITY.md lists these.

mod translate;

use bson::Bson;
use regex::{Regex, RegexBuilder};

/// mongod refuses patterns longer than this (PCRE's limit set by the application).
const MAX_PATTERN_BYTES: usize = 32_764;

/// How large a compiled pattern may be, in steps: the compiled program's size limit (past the
/// largest the pattern is refused, so that `(a{1000}){1000}` costs an error, not memory), the
/// lazy DFA's cache limit (searches fall back to a slower linear engine rather than grow it),
/// and what a pattern compiled at that step is charged against its filter's [`RegexBudget`]
/// (the program, its reverse twin and a one-pass DFA, plus the cache).
struct Tier {
    program: usize,
    cache: usize,
    charge: usize,
}

const TIERS: [Tier; 3] = [
    Tier {
        program: 16 << 10,
        cache: 64 << 10,
        charge: 128 << 10,
    },
    Tier {
        program: 256 << 10,
        cache: 1 << 20,
        charge: 2 << 20,
    },
    Tier {
        program: 4 << 20,
        cache: 2 << 20,
        charge: 16 << 20,
    },
];

/// What the regular expressions one filter keeps compiled may take together: a filter of a
/// million small patterns (16 MiB of `$in`) must not hold gigabytes.
const FILTER_BUDGET: usize = 128 << 20;

/// The memory the regular expressions of one filter may still take.
#[derive(Debug)]
pub(crate) struct RegexBudget {
    remaining: usize,
}

impl RegexBudget {
    /// The budget of one filter.
    pub(crate) fn per_filter() -> RegexBudget {
        RegexBudget {
            remaining: FILTER_BUDGET,
        }
    }
}

/// A compiled regular expression with the pattern and options it came from.
#[derive(Debug, Clone)]
pub(crate) struct MongoRegex {
    pattern: String,
    options: String,
    compiled: Regex,
}

/// Why a pattern or its options were refused; each caller words it as mongod does there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RegexError {
    /// The pattern holds a NUL byte.
    NullInPattern,
    /// An option letter other than `i`, `m`, `s`, `x`, `u`.
    InvalidFlag(char),
    /// The pattern does not compile (syntax the engine lacks, too long, too large).
    Invalid(String),
}

impl MongoRegex {
    /// Compiles `pattern` with mongod's option letters, at the largest [`Tier`]: for a pattern
    /// used and dropped (an expression's), which no filter keeps.
    ///
    /// # Errors
    /// [`RegexError`] for a NUL in the pattern, an unknown option letter, or a pattern that does
    /// not compile within the size limits.
    pub(crate) fn compile(pattern: &str, options: &str) -> Result<MongoRegex, RegexError> {
        let largest = &TIERS[TIERS.len() - 1];
        MongoRegex::compile_tier(pattern, options, largest)
    }

    /// Compiles `pattern` for a filter, charging `budget` for the memory it keeps: the pattern
    /// is compiled at the smallest [`Tier`] it fits.
    ///
    /// # Errors
    /// As [`MongoRegex::compile`], and [`RegexError::Invalid`] when the filter's patterns
    /// together would pass the budget.
    pub(crate) fn compile_within(
        pattern: &str,
        options: &str,
        budget: &mut RegexBudget,
    ) -> Result<MongoRegex, RegexError> {
        for tier in &TIERS {
            if tier.charge > budget.remaining {
                break;
            }
            match MongoRegex::compile_tier(pattern, options, tier) {
                Err(RegexError::Invalid(reason)) if reason == TOO_LARGE => continue,
                Ok(regex) => {
                    budget.remaining -= tier.charge;
                    return Ok(regex);
                }
                Err(other) => return Err(other),
            }
        }
        // Past the budget, or past the largest tier: either way the pattern is refused; the
        // message says which.
        let largest = &TIERS[TIERS.len() - 1];
        MongoRegex::compile_tier(pattern, options, largest)?;
        Err(RegexError::Invalid(format!(
            "the regular expressions of one query may not take more than {} MiB compiled",
            FILTER_BUDGET >> 20
        )))
    }

    fn compile_tier(pattern: &str, options: &str, tier: &Tier) -> Result<MongoRegex, RegexError> {
        let mut builder = RegexBuilder::new(&translate::translate(pattern, options.contains('x')));
        for flag in options.chars() {
            match flag {
                'i' => builder.case_insensitive(true),
                'm' => builder.multi_line(true),
                's' => builder.dot_matches_new_line(true),
                'x' => builder.ignore_whitespace(true),
                // PCRE's UTF mode, which mongod always uses: accepted and implied.
                'u' => &mut builder,
                other => return Err(RegexError::InvalidFlag(other)),
            };
        }
        if pattern.contains('\0') {
            return Err(RegexError::NullInPattern);
        }
        if pattern.len() > MAX_PATTERN_BYTES {
            return Err(RegexError::Invalid(
                "pattern string is longer than the limit set by the application".to_owned(),
            ));
        }
        let compiled = builder
            .size_limit(tier.program)
            .dfa_size_limit(tier.cache)
            .build()
            .map_err(|error| RegexError::Invalid(reason(&error)))?;
        Ok(MongoRegex {
            pattern: pattern.to_owned(),
            options: options.to_owned(),
            compiled,
        })
    }

    /// Whether the expression matches somewhere in `text`.
    pub(crate) fn is_match(&self, text: &str) -> bool {
        self.compiled.is_match(text)
    }

    /// The compiled expression, for searches that need captures.
    pub(crate) fn compiled(&self) -> &Regex {
        &self.compiled
    }

    /// mongod's rule for a regex in a filter: strings and symbols match by search, and a stored
    /// regular expression matches when its pattern and options are the same.
    pub(crate) fn matches_value(&self, value: &Bson) -> bool {
        match value {
            Bson::String(text) | Bson::Symbol(text) => self.is_match(text),
            Bson::RegularExpression(stored) => {
                stored.pattern.as_str() == self.pattern && stored.options.as_str() == self.options
            }
            _ => false,
        }
    }
}

/// The reason given for a pattern whose compiled form passes the largest [`Tier`].
const TOO_LARGE: &str = "regular expression is too large";

/// The crate's reason without its caret diagram: the last line, after `error: `.
fn reason(error: &regex::Error) -> String {
    match error {
        regex::Error::CompiledTooBig(_) => TOO_LARGE.to_owned(),
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix("error: "))
            .unwrap_or(text)
            .to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_map_to_the_engine() {
        let insensitive = MongoRegex::compile("^ann", "i").unwrap();
        assert!(insensitive.is_match("Anna"));
        let multi_line = MongoRegex::compile("^b", "m").unwrap();
        assert!(multi_line.is_match("a\nb"));
        assert!(!MongoRegex::compile("^b", "").unwrap().is_match("a\nb"));
        let dot_all = MongoRegex::compile("a.b", "s").unwrap();
        assert!(dot_all.is_match("a\nb"));
        let extended = MongoRegex::compile("a b # comment", "x").unwrap();
        assert!(extended.is_match("ab"));
        assert!(MongoRegex::compile("a", "u").is_ok());
    }

    #[test]
    fn refusals_say_why() {
        assert_eq!(
            MongoRegex::compile("a", "g").unwrap_err(),
            RegexError::InvalidFlag('g')
        );
        assert_eq!(
            MongoRegex::compile("a\0b", "").unwrap_err(),
            RegexError::NullInPattern
        );
        let RegexError::Invalid(unclosed) = MongoRegex::compile("[)", "").unwrap_err() else {
            panic!("an unclosed class must be invalid");
        };
        assert!(unclosed.contains("unclosed character class"), "{unclosed}");
        let RegexError::Invalid(lookahead) = MongoRegex::compile("a(?=b)", "").unwrap_err() else {
            panic!("lookahead must be invalid");
        };
        assert!(lookahead.contains("look-around"), "{lookahead}");
        let long = "c".repeat(MAX_PATTERN_BYTES + 1);
        assert!(matches!(
            MongoRegex::compile(&long, ""),
            Err(RegexError::Invalid(_))
        ));
    }

    /// The PCRE syntax FIDELITY.md lists as refused, and the differences it lists as kept.
    #[test]
    fn the_listed_differences_from_pcre_hold() {
        for pattern in [
            "a(?=b)",
            "a(?!b)",
            "(?<=a)b",
            "(?<!a)b",
            "(a)\\1",
            "(?<n>a)\\k<n>",
            "(?>a)",
            "a\\Z",
            "\\Ga",
            "(*UTF)a",
            "(a)(?1)",
        ] {
            assert!(
                matches!(
                    MongoRegex::compile(pattern, ""),
                    Err(RegexError::Invalid(_))
                ),
                "{pattern} should be refused"
            );
        }
        // `$` without `m` only at the very end.
        assert!(!MongoRegex::compile("abc$", "").unwrap().is_match("abc\n"));
        // A possessive quantifier is read as a greedy one that may give back.
        assert!(MongoRegex::compile("^a++a$", "").unwrap().is_match("aa"));
    }

    /// What the translation makes mean what it means to mongod.
    #[test]
    fn pcre_spellings_mean_what_they_mean_to_mongod() {
        let matches = |pattern: &str, options: &str, text: &str| {
            MongoRegex::compile(pattern, options)
                .unwrap_or_else(|error| panic!("{pattern}: {error:?}"))
                .is_match(text)
        };
        // ASCII classes and boundaries, as PCRE2 without UCP has them.
        assert!(!matches("^\\d$", "", "\u{663}"));
        assert!(matches("^\\d$", "", "7"));
        assert!(!matches("^\\w$", "", "é"));
        assert!(matches("^\\W$", "", "é"));
        assert!(matches("^[\\w-]+$", "", "a-b_c"));
        assert!(matches("\\bé", "", "aé"));
        assert!(matches("^\\s$", "", "\u{B}"));
        // Whitespace in a class is kept under `x`; `[[]`, `&&` are literals.
        assert!(matches("^[a b]$", "x", " "));
        assert!(matches("^[[]$", "", "["));
        assert!(matches("^[a&&b]$", "", "&"));
        // PCRE-only escapes.
        assert!(matches("^a\\hb$", "", "a\u{A0}b"));
        assert!(matches("^a\\Rb$", "", "a\r\nb"));
        assert!(matches("^\\Qa.b\\E$", "", "a.b"));
        assert!(!matches("^\\Qa.b\\E$", "", "axb"));
        assert!(matches("^\\e$", "", "\u{1B}"));
        assert!(matches("^\\<a\\>$", "", "<a>"));
        assert!(matches("^a\\/b\\-c\\:$", "", "a/b-c:"));
        // Case-insensitive matching stays Unicode, as PCRE2's UTF mode has it.
        assert!(matches("^é$", "i", "É"));
    }

    #[test]
    fn a_huge_compiled_pattern_is_refused() {
        let error = MongoRegex::compile("(((a{100}){100}){100})", "").unwrap_err();
        assert_eq!(
            error,
            RegexError::Invalid("regular expression is too large".to_owned())
        );
    }

    #[test]
    fn a_filter_budget_bounds_what_its_patterns_keep() {
        let mut budget = RegexBudget::per_filter();
        let small = FILTER_BUDGET / TIERS[0].charge;
        for _ in 0..small {
            MongoRegex::compile_within("^ab+c", "", &mut budget).expect("within the budget");
        }
        let RegexError::Invalid(reason) =
            MongoRegex::compile_within("^ab+c", "", &mut budget).unwrap_err()
        else {
            panic!("past the budget must be refused");
        };
        assert!(reason.contains("may not take more than"), "{reason}");
        // A pattern too large for any tier says so, budget or not.
        let mut budget = RegexBudget::per_filter();
        let error = MongoRegex::compile_within("(((a{100}){100}){100})", "", &mut budget);
        assert_eq!(
            error.unwrap_err(),
            RegexError::Invalid(TOO_LARGE.to_owned())
        );
        // A mid-sized pattern takes a larger step of the budget.
        MongoRegex::compile_within("[a-z]{2000}", "", &mut budget).expect("fits a larger tier");
        assert!(budget.remaining <= FILTER_BUDGET - TIERS[1].charge);
    }

    #[test]
    fn stored_regexes_match_by_pattern_and_options() {
        let regex = MongoRegex::compile("^a", "i").unwrap();
        let stored = |pattern: &str, options: &str| {
            Bson::RegularExpression(bson::Regex {
                pattern: pattern.to_owned().try_into().unwrap(),
                options: options.to_owned().try_into().unwrap(),
            })
        };
        let same = stored("^a", "i");
        let other = stored("^a", "");
        assert!(regex.matches_value(&same));
        assert!(!regex.matches_value(&other));
        assert!(regex.matches_value(&Bson::Symbol("Abc".into())));
        assert!(!regex.matches_value(&Bson::Int32(1)));
    }
}
