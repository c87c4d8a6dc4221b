//! Reading a `collation` document as mongod does (its field types, enumerations and error
//! codes) and building the ICU4X collator it describes.

use bson::{Bson, Document, doc};
use icu_collator::options::{AlternateHandling, CaseLevel, CollatorOptions, MaxVariable, Strength};
use icu_collator::preferences::{CollationCaseFirst, CollationNumericOrdering};
use icu_collator::{CollatorBorrowed, CollatorPreferences};

use super::locales::{Lookup, lookup};
use crate::code;
use crate::errors::{CommandError, StoreResult, format_document, type_name};
use crate::value_order::Number;

/// The ICU version mongod 8.0 reports in every collation.
const ICU_VERSION: &str = "57.1";

/// The fields as given; absent ones take the locale's defaults.
#[derive(Default)]
struct Given<'c> {
    locale: Option<&'c str>,
    case_level: Option<bool>,
    case_first: Option<&'c str>,
    strength: Option<i64>,
    numeric_ordering: Option<bool>,
    alternate: Option<&'c str>,
    max_variable: Option<&'c str>,
    normalization: Option<bool>,
    backwards: Option<bool>,
}

/// The resolved specification and its collator, or `None` for the simple collation.
pub(super) fn resolve(
    collation: &Document,
) -> StoreResult<Option<(Document, CollatorBorrowed<'static>)>> {
    let given = read_fields(collation)?;
    let Some(name) = given.locale else {
        return Err(CommandError::new(
            code::IDL_MISSING_FIELD,
            "BSON field 'collation.locale' is missing but a required field",
        ));
    };
    if name == "simple" {
        return Ok(None);
    }
    let locale = match lookup(name) {
        Lookup::Known(locale) => locale,
        Lookup::Unknown => {
            return Err(CommandError::bad_value(format!(
                "Field 'locale' is invalid in: {}",
                format_document(collation)
            )));
        }
        Lookup::WithoutData => {
            return Err(CommandError::bad_value(format!(
                "blackpipe has no collation data for locale '{name}' (mongod has it; see FIDELITY.md)"
            )));
        }
    };
    let locale_backwards = name == "fr_CA";
    if given
        .backwards
        .is_some_and(|backwards| backwards != locale_backwards)
    {
        return Err(CommandError::bad_value(format!(
            "blackpipe cannot set collation option 'backwards' against locale '{name}''s default (see FIDELITY.md)"
        )));
    }
    let mut preferences = CollatorPreferences::from(&locale);
    if let Some(case_first) = given.case_first {
        preferences.case_first = Some(match case_first {
            "upper" => CollationCaseFirst::Upper,
            "lower" => CollationCaseFirst::Lower,
            _ => CollationCaseFirst::False,
        });
    }
    if let Some(numeric) = given.numeric_ordering {
        preferences.numeric_ordering = Some(if numeric {
            CollationNumericOrdering::True
        } else {
            CollationNumericOrdering::False
        });
    }
    let collator = CollatorBorrowed::try_new(preferences, options(&given)).map_err(|error| {
        CommandError::bad_value(format!(
            "collation for locale '{name}' failed to load: {error}"
        ))
    })?;
    let spec = resolved_spec(name, &given, &collator, locale_backwards);
    Ok(Some((spec, collator)))
}

fn options(given: &Given<'_>) -> CollatorOptions {
    let mut options = CollatorOptions::default();
    options.strength = given.strength.map(|strength| match strength {
        1 => Strength::Primary,
        2 => Strength::Secondary,
        3 => Strength::Tertiary,
        4 => Strength::Quaternary,
        _ => Strength::Identical,
    });
    options.case_level = given
        .case_level
        .map(|on| if on { CaseLevel::On } else { CaseLevel::Off });
    options.alternate_handling = given.alternate.map(|alternate| match alternate {
        "shifted" => AlternateHandling::Shifted,
        _ => AlternateHandling::NonIgnorable,
    });
    options.max_variable = given.max_variable.map(|max| match max {
        "space" => MaxVariable::Space,
        _ => MaxVariable::Punctuation,
    });
    options
}

/// The specification as mongod lists it: every field, in mongod's order.
fn resolved_spec(
    name: &str,
    given: &Given<'_>,
    collator: &CollatorBorrowed<'static>,
    backwards: bool,
) -> Document {
    let resolved = collator.resolved_options();
    let strength = match resolved.strength {
        Strength::Primary => 1,
        Strength::Secondary => 2,
        Strength::Tertiary => 3,
        Strength::Quaternary => 4,
        _ => 5,
    };
    doc! {
        "locale": name,
        "caseLevel": resolved.case_level == CaseLevel::On,
        "caseFirst": match resolved.case_first {
            CollationCaseFirst::Upper => "upper",
            CollationCaseFirst::Lower => "lower",
            _ => "off",
        },
        "strength": strength,
        "numericOrdering": resolved.numeric == CollationNumericOrdering::True,
        "alternate": match resolved.alternate_handling {
            AlternateHandling::Shifted => "shifted",
            _ => "non-ignorable",
        },
        "maxVariable": match resolved.max_variable {
            MaxVariable::Space => "space",
            MaxVariable::Symbol => "symbol",
            MaxVariable::Currency => "currency",
            _ => "punct",
        },
        "normalization": given.normalization.unwrap_or(false),
        "backwards": backwards,
        "version": ICU_VERSION,
    }
}

fn read_fields(collation: &Document) -> StoreResult<Given<'_>> {
    let mut given = Given::default();
    for (field, value) in collation {
        match field.as_str() {
            "locale" => given.locale = Some(string(field, value)?),
            "caseLevel" => given.case_level = Some(boolean(field, value)?),
            "caseFirst" => {
                given.case_first = Some(one_of(field, value, &["upper", "lower", "off"])?)
            }
            "strength" => given.strength = Some(strength(value)?),
            "numericOrdering" => given.numeric_ordering = Some(boolean(field, value)?),
            "alternate" => {
                given.alternate = Some(one_of(field, value, &["non-ignorable", "shifted"])?);
            }
            "maxVariable" => given.max_variable = Some(one_of(field, value, &["punct", "space"])?),
            "normalization" => given.normalization = Some(boolean(field, value)?),
            "backwards" => given.backwards = Some(boolean(field, value)?),
            // Informational: mongod lists the ICU version it used.
            "version" => {
                string(field, value)?;
            }
            other => {
                return Err(CommandError::new(
                    code::IDL_UNKNOWN_FIELD,
                    format!("BSON field 'collation.{other}' is an unknown field."),
                ));
            }
        }
    }
    Ok(given)
}

fn wrong_type(field: &str, value: &Bson, expected: &str) -> CommandError {
    CommandError::type_mismatch(format!(
        "BSON field 'collation.{field}' is the wrong type '{}', expected type '{expected}'",
        type_name(value)
    ))
}

fn string<'v>(field: &str, value: &'v Bson) -> StoreResult<&'v str> {
    match value {
        Bson::String(text) => Ok(text),
        other => Err(wrong_type(field, other, "string")),
    }
}

fn boolean(field: &str, value: &Bson) -> StoreResult<bool> {
    match value {
        Bson::Boolean(flag) => Ok(*flag),
        other => Err(wrong_type(field, other, "bool")),
    }
}

fn one_of<'v>(field: &str, value: &'v Bson, allowed: &[&str]) -> StoreResult<&'v str> {
    let text = string(field, value)?;
    if allowed.contains(&text) {
        return Ok(text);
    }
    Err(CommandError::bad_value(format!(
        "Enumeration value '{text}' for field 'collation.{field}' is not a valid value."
    )))
}

fn strength(value: &Bson) -> StoreResult<i64> {
    let whole = Number::of(value)
        .map(|number| number.as_f64())
        .filter(|number| number.fract() == 0.0 && number.abs() < 1e15);
    let Some(whole) = whole else {
        return Err(CommandError::type_mismatch(format!(
            "BSON field 'collation.strength' is the wrong type '{}', expected types '[long, int, decimal, double]'",
            type_name(value)
        )));
    };
    // In range: the cast is exact.
    #[allow(clippy::cast_possible_truncation)]
    let strength = whole as i64;
    if strength > 5 {
        return Err(CommandError::new(
            code::NON_NEGATIVE,
            format!("BSON field 'strength' value must be <= 5, actual value '{strength}'"),
        ));
    }
    if strength < 1 {
        return Err(CommandError::new(
            code::NON_NEGATIVE,
            format!("BSON field 'strength' value must be >= 1, actual value '{strength}'"),
        ));
    }
    Ok(strength)
}
