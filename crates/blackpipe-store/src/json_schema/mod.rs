//! `$jsonSchema`: the JSON Schema draft 4 subset mongod supports, parsed once into a [`Schema`]
//! and checked against values. [`check`] answers both "does it match" (for queries and
//! validators) and, on request, mongod's `schemaRulesNotSatisfied` details (for error 121).
//!
//! `pattern` and `patternProperties` use the filters' regular expression engine (and share a
//! compiled-size budget per schema); the encryption keywords are refused with an error that
//! says so, never ignored.

mod check;

use bson::{Bson, Document};

use crate::errors::{CommandError, StoreResult, type_name};
use crate::query::{compile_regex, type_code_from_alias};
use crate::regex::{MongoRegex, RegexBudget};

use crate::value_order::Number;

pub(crate) use check::Explain;

/// How deep schemas may nest (`properties` inside `properties`, `items`, `anyOf`, ...): the
/// depth mongod's query parser allows a filter tree, so a hostile schema stays bounded.
pub(crate) const MAX_SCHEMA_DEPTH: usize = 100;

/// A parsed schema: its keywords, each checked on its own.
#[derive(Debug, Clone)]
pub(crate) struct Schema {
    keywords: Vec<Keyword>,
    /// `title`, reported with the details of the root schema.
    title: Option<String>,
    /// `description`, reported with a property's details.
    description: Option<String>,
}

/// One BSON type a `bsonType` or `type` keyword accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeRule {
    /// A BSON type code.
    Code(i32),
    /// `number` (any numeric type).
    Number,
}

/// What `additionalProperties` or `additionalItems` allows beyond the named ones.
#[derive(Debug, Clone)]
enum Additional {
    Allowed(bool),
    Schema(Box<Schema>),
}

#[derive(Debug, Clone)]
enum Items {
    /// Every item matches one schema.
    Each(Box<Schema>),
    /// Item `i` matches schema `i`; `additionalItems` governs the rest.
    Tuple(Vec<Schema>),
}

#[derive(Debug, Clone)]
enum Dependency {
    Properties(Vec<String>),
    Schema(Schema),
}

#[derive(Debug, Clone)]
enum Keyword {
    /// `bsonType` (`json: false`) or `type` (`json: true`), with the spec as given.
    Type {
        json: bool,
        rules: Vec<TypeRule>,
        spec: Bson,
    },
    Required(Vec<String>),
    Properties(Vec<(String, Schema)>),
    AdditionalProperties {
        named: Vec<String>,
        /// The `patternProperties` regexes: a property one matches is not additional.
        patterns: Vec<MongoRegex>,
        additional: Additional,
        spec: Bson,
    },
    /// `pattern`: a string must match the regex (the pattern as given beside it).
    Pattern {
        regex: MongoRegex,
        spec: String,
    },
    /// `patternProperties`: each property whose name a regex matches satisfies its schema.
    PatternProperties(Vec<(String, MongoRegex, Schema)>),
    Enum(Vec<Bson>),
    /// `minimum` (`lower: true`) or `maximum`, with `exclusiveMinimum`/`exclusiveMaximum`.
    Bound {
        lower: bool,
        limit: Bson,
        exclusive: bool,
    },
    /// `minLength`/`maxLength`, in code points.
    Length {
        lower: bool,
        limit: i64,
    },
    Items(Items),
    AdditionalItems {
        tuple_len: usize,
        additional: Additional,
        spec: Bson,
    },
    /// `minItems`/`maxItems`.
    ItemCount {
        lower: bool,
        limit: i64,
    },
    UniqueItems,
    /// `minProperties`/`maxProperties`.
    PropertyCount {
        lower: bool,
        limit: i64,
    },
    AllOf(Vec<Schema>),
    AnyOf(Vec<Schema>),
    OneOf(Vec<Schema>),
    Not(Box<Schema>),
    Dependencies(Vec<(String, Dependency)>),
}

impl Schema {
    /// Parses the argument of `$jsonSchema`.
    ///
    /// # Errors
    /// mongod's parse errors: TypeMismatch for a keyword of the wrong type, FailedToParse for
    /// an unknown or unsupported keyword, BadValue for a value out of range or a schema nested
    /// deeper than [`MAX_SCHEMA_DEPTH`].
    pub(crate) fn parse(value: &Bson) -> StoreResult<Schema> {
        let Bson::Document(schema) = value else {
            return Err(CommandError::type_mismatch("$jsonSchema must be an object"));
        };
        parse_schema(schema, 0, &mut RegexBudget::per_filter())
    }

    /// Whether `document` satisfies the schema.
    pub(crate) fn matches(&self, document: &Document) -> bool {
        check::violations(self, check::Subject::Document(document), Explain::No).is_empty()
    }

    /// mongod's details for a document the schema refuses:
    /// `{operatorName: "$jsonSchema", schemaRulesNotSatisfied: [...]}` (with the root `title`).
    pub(crate) fn details(&self, document: &Document) -> Document {
        let rules = check::violations(self, check::Subject::Document(document), Explain::Yes);
        let mut details = bson::doc! { "operatorName": "$jsonSchema" };
        if let Some(title) = &self.title {
            details.insert("title", title.clone());
        }
        details.insert("schemaRulesNotSatisfied", rules);
        details
    }
}

fn keyword_error(keyword: &str, expected: &str) -> CommandError {
    CommandError::type_mismatch(format!(
        "$jsonSchema keyword '{keyword}' must be {expected}"
    ))
}

fn parse_schema(schema: &Document, depth: usize, budget: &mut RegexBudget) -> StoreResult<Schema> {
    if depth >= MAX_SCHEMA_DEPTH {
        return Err(CommandError::bad_value(format!(
            "exceeded depth limit of {MAX_SCHEMA_DEPTH} when parsing $jsonSchema"
        )));
    }
    if schema.contains_key("type") && schema.contains_key("bsonType") {
        return Err(CommandError::failed_to_parse(
            "Cannot specify both $jsonSchema keywords 'type' and 'bsonType'",
        ));
    }
    let mut parsed = Schema {
        keywords: Vec::new(),
        title: None,
        description: None,
    };
    for (keyword, value) in schema {
        match keyword.as_str() {
            "title" => parsed.title = Some(string_keyword(keyword, value)?),
            "description" => parsed.description = Some(string_keyword(keyword, value)?),
            "exclusiveMinimum" | "exclusiveMaximum" => {
                exclusive_flag(schema, keyword)?;
            }
            "additionalItems" if !matches!(schema.get("items"), Some(Bson::Array(_))) => {
                // Without a tuple `items`, additionalItems has nothing to apply to.
                additional(keyword, value, depth, budget)?;
            }
            other => parsed
                .keywords
                .push(parse_keyword(other, value, schema, depth, budget)?),
        }
    }
    Ok(parsed)
}

fn string_keyword(keyword: &str, value: &Bson) -> StoreResult<String> {
    match value {
        Bson::String(text) => Ok(text.clone()),
        _ => Err(keyword_error(keyword, "a string")),
    }
}

/// `exclusiveMinimum`/`exclusiveMaximum`: a boolean that needs its `minimum`/`maximum`.
fn exclusive_flag(schema: &Document, keyword: &str) -> StoreResult<bool> {
    let bound = if keyword == "exclusiveMinimum" {
        "minimum"
    } else {
        "maximum"
    };
    match schema.get(keyword) {
        None => Ok(false),
        Some(Bson::Boolean(flag)) => {
            if !schema.contains_key(bound) {
                return Err(CommandError::failed_to_parse(format!(
                    "$jsonSchema keyword '{bound}' must be a present if {keyword} is present"
                )));
            }
            Ok(*flag)
        }
        Some(_) => Err(keyword_error(keyword, "a boolean")),
    }
}

fn parse_keyword(
    keyword: &str,
    value: &Bson,
    schema: &Document,
    depth: usize,
    budget: &mut RegexBudget,
) -> StoreResult<Keyword> {
    let keyword = match keyword {
        "bsonType" | "type" => parse_type(keyword, value)?,
        "required" => Keyword::Required(string_list(keyword, value, false)?),
        "properties" => Keyword::Properties(subschemas_by_name(keyword, value, depth, budget)?),
        "additionalProperties" => Keyword::AdditionalProperties {
            named: match schema.get("properties") {
                Some(Bson::Document(properties)) => properties.keys().cloned().collect(),
                _ => Vec::new(),
            },
            patterns: match schema.get("patternProperties") {
                Some(Bson::Document(patterns)) => patterns
                    .keys()
                    .map(|pattern| compile_regex(pattern, "", budget))
                    .collect::<StoreResult<_>>()?,
                _ => Vec::new(),
            },
            additional: additional(keyword, value, depth, budget)?,
            spec: value.clone(),
        },
        "enum" => match value {
            Bson::Array(values) if !values.is_empty() => Keyword::Enum(values.clone()),
            Bson::Array(_) => {
                return Err(CommandError::failed_to_parse(
                    "$jsonSchema keyword 'enum' cannot be an empty array",
                ));
            }
            _ => return Err(keyword_error(keyword, "an array")),
        },
        "minimum" | "maximum" => {
            if Number::of(value).is_none() {
                return Err(keyword_error(keyword, "a number"));
            }
            let lower = keyword == "minimum";
            let flag = if lower {
                "exclusiveMinimum"
            } else {
                "exclusiveMaximum"
            };
            Keyword::Bound {
                lower,
                limit: value.clone(),
                exclusive: exclusive_flag(schema, flag)?,
            }
        }
        "minLength" | "maxLength" => Keyword::Length {
            lower: keyword == "minLength",
            limit: count(keyword, value)?,
        },
        "minItems" | "maxItems" => Keyword::ItemCount {
            lower: keyword == "minItems",
            limit: count(keyword, value)?,
        },
        "minProperties" | "maxProperties" => Keyword::PropertyCount {
            lower: keyword == "minProperties",
            limit: count(keyword, value)?,
        },
        "uniqueItems" => match value {
            Bson::Boolean(true) => Keyword::UniqueItems,
            // `uniqueItems: false` requires nothing.
            Bson::Boolean(false) => Keyword::AllOf(Vec::new()),
            _ => return Err(keyword_error(keyword, "a boolean")),
        },
        "items" => Keyword::Items(match value {
            Bson::Document(item) => Items::Each(Box::new(parse_schema(item, depth + 1, budget)?)),
            Bson::Array(_) => Items::Tuple(subschema_list(keyword, value, depth, budget)?),
            _ => return Err(keyword_error(keyword, "an array or an object")),
        }),
        "additionalItems" => Keyword::AdditionalItems {
            tuple_len: schema.get_array("items").map_or(0, Vec::len),
            additional: additional(keyword, value, depth, budget)?,
            spec: value.clone(),
        },
        "allOf" => Keyword::AllOf(subschema_list(keyword, value, depth, budget)?),
        "anyOf" => Keyword::AnyOf(subschema_list(keyword, value, depth, budget)?),
        "oneOf" => Keyword::OneOf(subschema_list(keyword, value, depth, budget)?),
        "not" => match value {
            Bson::Document(inner) => {
                Keyword::Not(Box::new(parse_schema(inner, depth + 1, budget)?))
            }
            _ => return Err(keyword_error(keyword, "an object")),
        },
        "dependencies" => Keyword::Dependencies(dependencies(value, depth, budget)?),
        "pattern" => {
            let spec = string_keyword(keyword, value)?;
            Keyword::Pattern {
                regex: compile_regex(&spec, "", budget)?,
                spec,
            }
        }
        "patternProperties" => {
            let Bson::Document(patterns) = value else {
                return Err(keyword_error(keyword, "an object"));
            };
            let mut parsed = Vec::with_capacity(patterns.len());
            for (pattern, schema) in patterns {
                let Bson::Document(schema) = schema else {
                    return Err(CommandError::type_mismatch(format!(
                        "Nested schema for $jsonSchema property '{pattern}' must be an object"
                    )));
                };
                let regex = compile_regex(pattern, "", budget)?;
                parsed.push((
                    pattern.clone(),
                    regex,
                    parse_schema(schema, depth + 1, budget)?,
                ));
            }
            Keyword::PatternProperties(parsed)
        }
        "$ref" | "$schema" | "default" | "definitions" | "format" | "id" => {
            return Err(CommandError::failed_to_parse(format!(
                "$jsonSchema keyword '{keyword}' is not currently supported"
            )));
        }
        "encrypt" | "encryptMetadata" => {
            return Err(CommandError::failed_to_parse(format!(
                "blackpipe does not model client-side field level encryption: $jsonSchema keyword '{keyword}'"
            )));
        }
        other => {
            return Err(CommandError::failed_to_parse(format!(
                "Unknown $jsonSchema keyword: {other}"
            )));
        }
    };
    Ok(keyword)
}

fn parse_type(keyword: &str, value: &Bson) -> StoreResult<Keyword> {
    let json = keyword == "type";
    let names: Vec<&str> = match value {
        Bson::String(name) => vec![name.as_str()],
        Bson::Array(names) if !names.is_empty() => names
            .iter()
            .map(|name| {
                name.as_str()
                    .ok_or_else(|| keyword_error(keyword, "a string or an array of strings"))
            })
            .collect::<StoreResult<_>>()?,
        Bson::Array(_) => {
            return Err(CommandError::failed_to_parse(format!(
                "$jsonSchema keyword '{keyword}' must name at least one type"
            )));
        }
        _ => return Err(keyword_error(keyword, "a string or an array of strings")),
    };
    let rules = names
        .into_iter()
        .map(|name| type_rule(json, name))
        .collect::<StoreResult<Vec<_>>>()?;
    Ok(Keyword::Type {
        json,
        rules,
        spec: value.clone(),
    })
}

fn type_rule(json: bool, name: &str) -> StoreResult<TypeRule> {
    if json {
        return match name {
            "object" => Ok(TypeRule::Code(3)),
            "array" => Ok(TypeRule::Code(4)),
            "number" => Ok(TypeRule::Number),
            "boolean" => Ok(TypeRule::Code(8)),
            "string" => Ok(TypeRule::Code(2)),
            "null" => Ok(TypeRule::Code(10)),
            "integer" => Err(CommandError::bad_value(
                "$jsonSchema type 'integer' is not currently supported.",
            )),
            other => Err(CommandError::bad_value(format!(
                "Unknown type name alias: {other}"
            ))),
        };
    }
    match name {
        "number" => Ok(TypeRule::Number),
        other => type_code_from_alias(other)
            .map(TypeRule::Code)
            .ok_or_else(|| CommandError::bad_value(format!("Unknown type name alias: {other}"))),
    }
}

fn string_list(keyword: &str, value: &Bson, allow_empty: bool) -> StoreResult<Vec<String>> {
    let Bson::Array(items) = value else {
        return Err(keyword_error(keyword, "an array"));
    };
    if items.is_empty() && !allow_empty {
        return Err(CommandError::bad_value(format!(
            "$jsonSchema keyword '{keyword}' cannot be an empty array"
        )));
    }
    let mut names: Vec<String> = Vec::with_capacity(items.len());
    for item in items {
        let Bson::String(name) = item else {
            return Err(keyword_error(keyword, "an array of strings"));
        };
        if names.contains(name) {
            return Err(CommandError::failed_to_parse(format!(
                "$jsonSchema keyword '{keyword}' array cannot contain duplicate values"
            )));
        }
        names.push(name.clone());
    }
    Ok(names)
}

fn subschemas_by_name(
    keyword: &str,
    value: &Bson,
    depth: usize,
    budget: &mut RegexBudget,
) -> StoreResult<Vec<(String, Schema)>> {
    let Bson::Document(properties) = value else {
        return Err(keyword_error(keyword, "an object"));
    };
    properties
        .iter()
        .map(|(name, schema)| match schema {
            Bson::Document(schema) => Ok((name.clone(), parse_schema(schema, depth + 1, budget)?)),
            _ => Err(CommandError::type_mismatch(format!(
                "Nested schema for $jsonSchema property '{name}' must be an object"
            ))),
        })
        .collect()
}

fn subschema_list(
    keyword: &str,
    value: &Bson,
    depth: usize,
    budget: &mut RegexBudget,
) -> StoreResult<Vec<Schema>> {
    let Bson::Array(items) = value else {
        return Err(keyword_error(keyword, "an array"));
    };
    if items.is_empty() && keyword != "items" {
        return Err(CommandError::bad_value(format!(
            "$jsonSchema keyword '{keyword}' must be a non-empty array"
        )));
    }
    items
        .iter()
        .map(|item| match item {
            Bson::Document(schema) => parse_schema(schema, depth + 1, budget),
            _ => Err(CommandError::type_mismatch(format!(
                "$jsonSchema keyword '{keyword}' must be an array of objects, but found an element of type {}",
                type_name(item)
            ))),
        })
        .collect()
}

fn additional(
    keyword: &str,
    value: &Bson,
    depth: usize,
    budget: &mut RegexBudget,
) -> StoreResult<Additional> {
    match value {
        Bson::Boolean(allowed) => Ok(Additional::Allowed(*allowed)),
        Bson::Document(schema) => Ok(Additional::Schema(Box::new(parse_schema(
            schema,
            depth + 1,
            budget,
        )?))),
        _ => Err(keyword_error(keyword, "either an object or a boolean")),
    }
}

fn count(keyword: &str, value: &Bson) -> StoreResult<i64> {
    let number = Number::of(value).ok_or_else(|| keyword_error(keyword, "a number"))?;
    let count = number.as_f64();
    if count < 0.0 || count.fract() != 0.0 {
        return Err(CommandError::failed_to_parse(format!(
            "$jsonSchema keyword '{keyword}' must be representable as a non-negative integer"
        )));
    }
    // A non-negative whole number; past i64 it saturates, which no count reaches.
    #[allow(clippy::cast_possible_truncation)]
    Ok(count as i64)
}

fn dependencies(
    value: &Bson,
    depth: usize,
    budget: &mut RegexBudget,
) -> StoreResult<Vec<(String, Dependency)>> {
    let Bson::Document(dependencies) = value else {
        return Err(keyword_error("dependencies", "an object"));
    };
    dependencies
        .iter()
        .map(|(property, dependency)| {
            let parsed = match dependency {
                Bson::Document(schema) => Dependency::Schema(parse_schema(schema, depth + 1, budget)?),
                Bson::Array(_) => {
                    Dependency::Properties(string_list("dependencies", dependency, false)?)
                }
                _ => {
                    return Err(CommandError::type_mismatch(format!(
                        "property '{property}' in $jsonSchema keyword 'dependencies' must be either an object or an array"
                    )));
                }
            };
            Ok((property.clone(), parsed))
        })
        .collect()
}
