//! `$regexMatch`, `$regexFind` and `$regexFindAll`: the filters' regular expression engine
//! ([`crate::regex`]) behind the aggregation's named-argument operators.
//!
//! A missing `options` is null. Constant patterns are compiled when the expression is parsed,
//! as mongod checks them there (a bad pattern fails even on an empty collection), and then
//! serve every document.

use bson::{Bson, Document};

use super::vars::{Defined, Scope};
use super::{Expr, is_nullish};
use crate::code;
use crate::errors::{CommandError, StoreResult, check_bson_size};
use crate::regex::{MongoRegex, RegexError};
use crate::value_order::value_size;

/// Which of the three operators.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Operator {
    Match,
    Find,
    FindAll,
}

impl Operator {
    fn from_name(name: &str) -> Option<Operator> {
        Some(match name {
            "$regexMatch" => Operator::Match,
            "$regexFind" => Operator::Find,
            "$regexFindAll" => Operator::FindAll,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Operator::Match => "$regexMatch",
            Operator::Find => "$regexFind",
            Operator::FindAll => "$regexFindAll",
        }
    }
}

/// A parsed `$regexMatch`/`$regexFind`/`$regexFindAll`.
#[derive(Debug, Clone)]
pub(crate) struct RegexCall {
    operator: Operator,
    input: Expr,
    regex: Expr,
    options: Expr,
    /// The compiled pattern when `regex` and `options` are constants (`None` inside for a
    /// null pattern); compiled for each document otherwise.
    constant: Option<Option<MongoRegex>>,
}

impl RegexCall {
    /// Parses `{name: {input, regex, options}}`; `None` when `name` is not one of the three.
    pub(super) fn parse(
        name: &str,
        argument: &Bson,
        defined: &Defined,
    ) -> StoreResult<Option<RegexCall>> {
        let Some(operator) = Operator::from_name(name) else {
            return Ok(None);
        };
        let Bson::Document(spec) = argument else {
            return Err(CommandError::new(
                code::REGEX_EXPR_NOT_OBJECT,
                format!(
                    "{name} expects an object of named arguments but found: {}",
                    crate::errors::type_name(argument)
                ),
            ));
        };
        let (mut input, mut regex, mut options) = (None, None, None);
        for (key, value) in spec {
            let slot = match key.as_str() {
                "input" => &mut input,
                "regex" => &mut regex,
                "options" => &mut options,
                _ => {
                    return Err(CommandError::new(
                        code::REGEX_EXPR_UNKNOWN_ARGUMENT,
                        format!("{name} found an unknown argument: {key}"),
                    ));
                }
            };
            *slot = Some(Expr::parse_in(value, defined)?);
        }
        let input = input.ok_or_else(|| {
            CommandError::new(
                code::REGEX_EXPR_WITHOUT_INPUT,
                format!("{name} requires 'input' parameter"),
            )
        })?;
        let regex = regex.ok_or_else(|| {
            CommandError::new(
                code::REGEX_EXPR_WITHOUT_REGEX,
                format!("{name} requires 'regex' parameter"),
            )
        })?;
        let options = options.unwrap_or(Expr::Literal(Bson::Null));
        // Constant patterns are checked (and compiled) now, as mongod checks them at parse.
        let constant = match (&regex, &options) {
            (Expr::Literal(pattern), Expr::Literal(flags)) => {
                Some(compile(operator, Some(pattern), Some(flags))?)
            }
            _ => None,
        };
        Ok(Some(RegexCall {
            operator,
            input,
            regex,
            options,
            constant,
        }))
    }

    /// Evaluates the call against a document.
    pub(super) fn evaluate(&self, scope: &Scope) -> StoreResult<Option<Bson>> {
        let operator = self.operator;
        let compiled;
        let regex = match &self.constant {
            Some(constant) => constant.as_ref(),
            None => {
                let pattern = self.regex.eval(scope)?;
                let flags = self.options.eval(scope)?;
                compiled = compile(operator, pattern.as_ref(), flags.as_ref())?;
                compiled.as_ref()
            }
        };
        let input = self.input.eval(scope)?;
        let input = match input.as_ref() {
            value if is_nullish(value) => None,
            Some(Bson::String(text)) => Some(text.as_str()),
            Some(_) => {
                return Err(CommandError::new(
                    code::REGEX_EXPR_INPUT_NOT_STRING,
                    format!("{} needs 'input' to be of type string", operator.name()),
                ));
            }
            None => None,
        };
        let found = input.zip(regex);
        Ok(Some(match operator {
            Operator::Match => {
                Bson::Boolean(found.is_some_and(|(input, regex)| regex.is_match(input)))
            }
            Operator::Find => found
                .and_then(|(input, regex)| match_at(regex, input, 0))
                .map_or(Bson::Null, |(document, _)| Bson::Document(document)),
            Operator::FindAll => Bson::Array(match found {
                Some((input, regex)) => find_all(regex, input)?,
                None => Vec::new(),
            }),
        }))
    }
}

/// The compiled pattern, `None` when the pattern is null or missing.
fn compile(
    operator: Operator,
    pattern: Option<&Bson>,
    options: Option<&Bson>,
) -> StoreResult<Option<MongoRegex>> {
    let name = operator.name();
    let flags = match options {
        value if is_nullish(value) => "",
        Some(Bson::String(flags)) => flags.as_str(),
        _ => {
            return Err(CommandError::new(
                code::REGEX_EXPR_OPTIONS_NOT_STRING,
                format!("{name} needs 'options' to be of type string"),
            ));
        }
    };
    if flags.contains('\0') {
        return Err(CommandError::new(
            code::REGEX_EXPR_NULL_IN_OPTIONS,
            format!("{name}: regular expression options cannot contain an embedded null byte"),
        ));
    }
    let (pattern, flags) = match pattern {
        value if is_nullish(value) => return Ok(None),
        Some(Bson::String(pattern)) => (pattern.as_str(), flags),
        Some(Bson::RegularExpression(regex)) => {
            let own = regex.options.as_str();
            if !own.is_empty() && !flags.is_empty() {
                return Err(CommandError::new(
                    code::REGEX_EXPR_OPTIONS_TWICE,
                    format!(
                        "{name}: regex option(s) specified in both 'regex' and 'option' fields"
                    ),
                ));
            }
            (
                regex.pattern.as_str(),
                if own.is_empty() { flags } else { own },
            )
        }
        _ => {
            return Err(CommandError::new(
                code::REGEX_EXPR_REGEX_NOT_STRING,
                format!("{name} needs 'regex' to be of type string or regex"),
            ));
        }
    };
    MongoRegex::compile(pattern, flags)
        .map(Some)
        .map_err(|error| match error {
            RegexError::NullInPattern => CommandError::new(
                code::REGEX_EXPR_NULL_IN_PATTERN,
                format!("{name}: regular expression cannot contain an embedded null byte"),
            ),
            RegexError::InvalidFlag(flag) => CommandError::new(
                code::REGEX_INVALID_FLAG,
                format!("{name} invalid flag in regex options: {flag}"),
            ),
            RegexError::Invalid(reason) => CommandError::new(
                code::REGEX_EXPR_INVALID,
                format!("Invalid Regex in {name}: {reason}"),
            ),
        })
}

/// The first match at or after byte `start`: `{match, idx, captures}` (`idx` in code points,
/// unmatched groups null) and the byte range it covered.
fn match_at(
    regex: &MongoRegex,
    input: &str,
    start: usize,
) -> Option<(Document, std::ops::Range<usize>)> {
    let captures = regex.compiled().captures_at(input, start)?;
    let whole = captures.get(0)?;
    let groups: Vec<Bson> = captures
        .iter()
        .skip(1)
        .map(|group| group.map_or(Bson::Null, |group| Bson::String(group.as_str().to_owned())))
        .collect();
    let index = input[..whole.start()].chars().count();
    let mut document = Document::new();
    document.insert("match", whole.as_str());
    document.insert("idx", i32::try_from(index).unwrap_or(i32::MAX));
    document.insert("captures", groups);
    Some((document, whole.range()))
}

/// Every match from left to right; after an empty match the search moves on one code point,
/// as mongod's does. The result is bounded by the document size limit.
fn find_all(regex: &MongoRegex, input: &str) -> StoreResult<Vec<Bson>> {
    let mut out = Vec::new();
    let mut size = 0usize;
    let mut start = 0;
    while start <= input.len() {
        let Some((document, range)) = match_at(regex, input, start) else {
            break;
        };
        let found = Bson::Document(document);
        size = size.saturating_add(value_size(&found) + 8);
        check_bson_size(size)?;
        out.push(found);
        start = if range.is_empty() {
            match input[range.end..].chars().next() {
                Some(next) => range.end + next.len_utf8(),
                None => break,
            }
        } else {
            range.end
        };
    }
    Ok(out)
}
