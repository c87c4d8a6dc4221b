//! Regular expressions as mongod reads them: a pattern and its option letters, compiled once by
//! the `regex` crate (linear-time matching, so no pattern can make a query backtrack for ever)
//! and shared by filters, `$pull` and the aggregation's `$regexMatch`/`$regexFind`/`$regexFindAll`.
//!
//! The crate's syntax is close to PCRE's but not equal: lookaround and backreferences do not
//! compile (answered as mongod answers a pattern PCRE refuses), `$` without `m` matches only at
//! the very end, and `\d`, `\w`, `\s` are Unicode-aware. FIDELITY.md lists these.

use bson::Bson;
use regex::{Regex, RegexBuilder};

/// mongod refuses patterns longer than this (PCRE's limit set by the application).
const MAX_PATTERN_BYTES: usize = 32_764;
/// The most memory one compiled pattern may take: past it the pattern is refused, so that a
/// hostile pattern (`(a{1000}){1000}`) costs an error, not memory.
const COMPILED_SIZE_LIMIT: usize = 4 << 20;
/// The lazy DFA's cache per pattern (the crate's search falls back to a slower linear engine
/// when it fills, it never grows past it).
const DFA_CACHE_LIMIT: usize = 2 << 20;

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
    /// Compiles `pattern` with mongod's option letters.
    ///
    /// # Errors
    /// [`RegexError`] for a NUL in the pattern, an unknown option letter, or a pattern that does
    /// not compile within the size limits.
    pub(crate) fn compile(pattern: &str, options: &str) -> Result<MongoRegex, RegexError> {
        let mut builder = RegexBuilder::new(pattern);
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
            .size_limit(COMPILED_SIZE_LIMIT)
            .dfa_size_limit(DFA_CACHE_LIMIT)
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

/// The crate's reason without its caret diagram: the last line, after `error: `.
fn reason(error: &regex::Error) -> String {
    match error {
        regex::Error::CompiledTooBig(_) => "regular expression is too large".to_owned(),
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

    #[test]
    fn a_huge_compiled_pattern_is_refused() {
        let error = MongoRegex::compile("(((a{100}){100}){100})", "").unwrap_err();
        assert_eq!(
            error,
            RegexError::Invalid("regular expression is too large".to_owned())
        );
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
